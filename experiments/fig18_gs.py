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

Runtime on an H200: about 6.5 min (10 matrices x 2 N; 383 s at 573d07c).
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
    """Speedup of each variant over ``base`` per matrix, a panel per N."""
    plt = P.pyplot()
    cfg = results["config"]
    rows = [r for r in results["rows"] if r.get("median_us") and r.get("check_passed") is not False]
    mats = list(dict.fromkeys(r["matrix"] for r in rows))
    fig, axes = plt.subplots(len(cfg["ns"]), 1, figsize=(max(7, 0.9 * len(mats) * 1.6), 3.4 * len(cfg["ns"])),
                             squeeze=False)
    width = 0.8 / (len(VARIANTS) - 1)
    for ax, n in zip(axes[:, 0], cfg["ns"]):
        t = {(r["matrix"], r["method"]): r["median_us"] for r in rows if r["n"] == n}
        for j, v in enumerate(VARIANTS[1:]):
            ys = [t[(m, "base")] / t[(m, v)] if (m, "base") in t and (m, v) in t else float("nan")
                  for m in mats]
            ax.bar([i + j * width for i in range(len(mats))], ys, width, label=v)
        ax.axhline(1.0, color="black", lw=1, ls="--", label="base")
        ax.set_yscale("log", base=2)
        ax.set_xticks([i + 0.4 - width / 2 for i in range(len(mats))], mats, rotation=30, fontsize=7,
                      ha="right")
        ax.set(ylabel="speedup over base", title=f"N = {n}")
        ax.legend(fontsize=7, ncol=len(VARIANTS))
    fig.suptitle(f"GeneralSparse gain breakdown, {P.device_name(results)} (paper: A100)", fontsize=10)
    return P.savefig(fig, fig_path)


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
