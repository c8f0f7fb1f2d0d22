"""GeneralSparse paper, Fig. 18: the gain breakdown. For each matrix and N (cold L2, median):

* ``base``      fixed allocation: one block of one warp per row, each lane one column of C
                walking the whole row (THREAD_TOTAL only; idle lanes beyond N);
* ``op1``       flexible allocation and format adjustments, thread-level reductions only
                (THREAD_TOTAL/BITMAP, atomics at block ends): the search restricted to those
                strategies;
* ``op2``       the base allocation with multi-level reduction: one row per warp, the row
                cut among thread-groups (THREAD_TOTAL + WARP_TOTAL);
* ``op1+op2``   the full search (``generalsparse_best``);
* ``op1+op2 -opt``  the same strategy with the code optimizer off (every offset loaded).

The searches use the cost model when one is fitted (its top ``search_top``), else the
default shortlist (``op1``: ``search_top`` thread-only candidates evenly spaced in the listing
of ``strategies``). Matrices: the 7168x7168 weights (magnitude/random, 70/90 %, fp16) and six
SuiteSparse matrices (fp32). The paper ran on an A100.

    python experiments/fig18_gs.py [--quick] [--ns 32] [--merge]

Runtime: minutes on an H200 (10 matrices x 2 N; docs/experiments.md lists each saved run's
duration).
"""
from __future__ import annotations

import sys

from experiments import _gs
from spmvlab import experiment as X
from spmvlab import plotting as P

NAME = "fig18_gs"
NEEDS_GPU = True
SPLIT_KEYS = ("weights", "suitesparse", "ns")
VARIANTS = ["base", "op1", "op2", "op1+op2", "op1+op2 -opt"]
#: variant -> (name, colour) in the figure: op2 is the default kernel (``generalsparse``) and
#: op1+op2 the tuned one (``generalsparse_best``), in their colours; the others not methods
STYLE = {"op1": ("op1: flexible allocation, thread reductions", "goldenrod"),
         "op2": ("op2: multi-level reduction = " + P.label("generalsparse"),
                 P.METHODS["generalsparse"][1]),
         "op1+op2": ("op1+op2 = " + P.label("generalsparse_best"), P.METHODS["generalsparse_best"][1]),
         "op1+op2 -opt": ("op1+op2, code optimizer off", "darkred")}
FULL = dict(weight_shape=[7168, 7168], weights=["magnitude:0.7", "magnitude:0.9", "random:0.7", "random:0.9"],
            suitesparse=["HB/bcsstk13", "DIMACS10/cs4", "SNAP/ego-Facebook", "vanHeukelum/cage11",
                         "SNAP/soc-Slashdot0902", "DIMACS10/luxembourg_osm"],
            ns=[8, 32], reps=20, warmup=3, search_top=6, proxy_nnz=2_000_000, seed=0)
QUICK = dict(weights=["magnitude:0.9"], suitesparse=["HB/bcsstk13"], ns=[32], reps=5, search_top=3)


config = _gs.config_for(NAME, FULL, QUICK)


cli = _gs.cli_for("weights", "suitesparse", "ns")


def base_strategy():
    import reference.generalsparse as GS
    S = GS.Division("single", False)
    return GS.Strategy(block=S, warp=S, thread=S, block_size=1, warps_per_block=1, thread_cols=1,
                       warp_cols=32, block_cols=32)


def thread_only(s) -> bool:
    """No warp- or block-level reduction (op1's sub-space)."""
    import reference.generalsparse as GS
    red = GS.select_reduction(s, 2)
    return red.warp is None and red.block is None


def _matrices(cfg):
    from spmvlab import datasets
    for w in cfg["weights"]:
        pr, s = w.split(":")
        W = _gs.opt_weights(tuple(cfg["weight_shape"]), cfg["seed"])
        yield (f"{pr} {100 * float(s):.0f} %", "float16",
               _gs.to_csr16(_gs.prune_blocks(W, float(s), pr, seed=cfg["seed"])))
        del W
    for name in cfg["suitesparse"]:
        yield name, "float32", datasets.suitesparse(name, dtype="float32", download=False, lossy=True)


def measure(cfg: dict) -> dict:
    from spmvlab import methods
    from spmvlab.generalsparse import tune
    rows = []
    jobs = len(cfg["weights"]) + len(cfg["suitesparse"])
    for label, dtype, A in X.progress(_matrices(cfg), total=jobs, desc=NAME):
        for n in cfg["ns"]:
            p = methods.Problem.make(A, dtype, k=int(n), seed=1, lossy=True)
            search = dict(top=cfg["search_top"], max_nnz=cfg["proxy_nnz"])
            full = tune.best_strategy(p.A, int(n), dtype, **search)
            op1 = tune.best_strategy(p.A, int(n), dtype, where=thread_only, **search)
            specs = [methods.generalsparse_method(base_strategy(), "base"),
                     methods.generalsparse_method(op1.strategy, "op1"),
                     methods.generalsparse_method(tune.default_shortlist(int(n))[0], "op2"),
                     methods.generalsparse_method(full.strategy, "op1+op2"),
                     methods.generalsparse_method(full.strategy, "op1+op2 -opt", optimize=False)]
            got = methods.measure_problem(p, specs, reps=cfg["reps"], warmup=cfg["warmup"],
                                          keep_going=True, extra=dict(matrix=label, n=int(n)))
            for r in got:
                r["search_source"] = (op1 if r["method"] == "op1" else full).source
                _gs.add_tflops(r)
            rows += got
        X.checkpoint(dict(rows=rows))      # a run stopped by a time limit keeps these
    return dict(rows=rows)


def plot(results: dict, fig_path: str) -> list[str]:
    """Speedup of each variant over ``base`` per matrix: bars from the 1x line (``base``), a
    panel per N, all on one axis."""
    plt = P.pyplot()
    cfg = results["config"]
    rows = [r for r in results["rows"] if r.get("median_us") and r.get("check_passed") is not False]
    mats = list(dict.fromkeys(r["matrix"] for r in rows))
    ns = list(cfg["ns"])
    fig, axes = plt.subplots(len(ns), 1, figsize=(P.PAGE_WIDTH, 1.75 * len(ns) + 1.4),
                             squeeze=False, sharex=True, sharey=True)
    width = 0.8 / (len(VARIANTS) - 1)
    ratios = []
    for ax, n in zip(axes[:, 0], ns):
        t = {(r["matrix"], r["method"]): r["median_us"] for r in rows if r["n"] == n}
        for j, v in enumerate(VARIANTS[1:]):
            pts = [(i + (j - (len(VARIANTS) - 2) / 2) * width, t[(m, "base")] / t[(m, v)])
                   for i, m in enumerate(mats) if (m, "base") in t and (m, v) in t]
            name, color = STYLE.get(v, (v, None))
            P.ratio_bars(ax, [x for x, _ in pts], [y for _, y in pts], width, label=name, zorder=2,
                         **({"color": color} if color else {}))
            for x, y in pts:                      # a bar too short to see: its value instead
                if 0.93 < y < 1.08:
                    ax.text(x, max(y, 1.0) * 1.04, f"{y:.2f}×", rotation=90, ha="center",
                            va="bottom", fontsize=6)
            ratios += [y for _, y in pts]
        ax.set(ylabel="speedup over base")
        ax.set_title(f"N = {n}", pad=3)
        ax.grid(axis="x", visible=False)
    P.ratio_axis(axes[0][0], ratios, line_label="base: one warp per row")
    for ax in axes[1:, 0]:
        ax.axhline(1.0, color="black", lw=0.9, ls="--", zorder=1)
    axes[-1][0].set_xticks(range(len(mats)), [m.split("/")[-1] for m in mats], rotation=25,
                           ha="right", rotation_mode="anchor", fontsize=6.5)
    axes[-1][0].set_xlim(-0.5, len(mats) - 0.5)
    fig.suptitle(f"GeneralSparse paper Fig. 18: the gain breakdown, cold L2, {P.device_name(results)} "
                 "(paper: A100)")
    P.legend_below(fig, axes[:, 0], ncol=2, room=0.13)
    return P.savefig(fig, fig_path, tight=False)


def summary(results: dict) -> list:
    """One row per variant (paper_values' view): the geometric-mean speedup over ``base``, its
    range, and in how many (matrix, N) cases the variant is the fastest of the five."""
    t = {}
    for r in results["rows"]:
        if r.get("median_us") and r.get("check_passed") is not False:
            t.setdefault((r["matrix"], r["n"]), {})[r["method"]] = r["median_us"]
    cases = [v for v in t.values() if all(m in v for m in VARIANTS)]
    out = []
    for m in VARIANTS:
        xs = [v["base"] / v[m] for v in cases]
        out.append(dict(variant=m, cases=len(cases),
                        geomean=_gs.geomean(xs),
                        low=min(xs, default=float("nan")), high=max(xs, default=float("nan")),
                        fastest=sum(min(v, key=v.get) == m for v in cases)))
    return out


def report(results: dict):
    P.print_table(summary(results), [("variant", "variant", ""), ("cases", "cases", ""),
                                     ("geomean", "x base (geomean)", ".2f"), ("low", "min", ".2f"),
                                     ("high", "max", ".2f"), ("fastest", "fastest in", "")])
    cols = [("matrix", "matrix", ""), ("n", "N", ""), ("method", "variant", ""),
            ("median_us", "median us", ".1f"), ("tflops", "TFLOP/s", ".3f"),
            ("reduction", "reduction", ""), ("check_passed", "ok", "")]
    P.print_table(results["rows"], cols)


if __name__ == "__main__":
    sys.exit(X.main(sys.modules[__name__]))
