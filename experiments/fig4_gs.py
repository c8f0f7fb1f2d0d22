"""GeneralSparse paper, Fig. 4: the same kernel's performance fluctuates with the sparsity
pattern. One fixed generated kernel (``generalsparse_fixed``: the first strategy of the
default shortlist, a warp-group per row; the committed results, measured before the
``generalsparse`` method took the cost model's pick, name it ``generalsparse``) and our CSR SpMM on weight matrices of the OPT shapes pruned
by magnitude (rows of unequal length) and at random (nearly equal rows), 70 and 90 %, N = 32
(fp16, cold L2, median), with the tuned kernel (``generalsparse_best``) beside them: the
best strategy differs with the pattern. Weights: ``experiments/_gs.py``. The paper ran on an
A100.

    python experiments/fig4_gs.py [--quick] [--shapes 7168x7168] [--merge]

Runtime: minutes on an H200 for the three default shapes, each matrix drawn and pruned four
times (docs/experiments.md lists each saved run's duration); split with ``--shapes`` and
``--merge``.
"""
from __future__ import annotations

import sys

from experiments import _gs
from spmvlab import experiment as X
from spmvlab import plotting as P

NAME = "fig4_gs"
NEEDS_GPU = True
SPLIT_KEYS = ("shapes", "prunings", "sparsities", "ns")
FULL = dict(shapes=[[7168, 7168], [9216, 9216], [28672, 7168]], prunings=["magnitude", "random"],
            sparsities=[0.7, 0.9], ns=[32], dtype="float16",
            methods=["generalsparse_fixed", "csr_vector", _gs.GS_BEST], reps=20, warmup=3, search_top=4,
            proxy_nnz=2_000_000, seed=0)
QUICK = dict(shapes=[[7168, 7168]], sparsities=[0.9], reps=5)


config = _gs.config_for(NAME, FULL, QUICK)


cli = _gs.cli_for("shapes", "prunings", "sparsities", "ns")


def measure(cfg: dict) -> dict:
    return dict(rows=_gs.measure_weights(cfg, NAME))


def plot(results: dict, fig_path: str) -> list[str]:
    """A panel per sparsity (and N), all on one TFLOP/s axis (log): per shape magnitude and
    random pruning side by side, a marker per method joined across the two (the slope: how
    the pattern moves that kernel); methods a little apart so that none hides another; a
    hollow marker: timed, but its result is outside the error bound."""
    plt = P.pyplot()
    cfg = results["config"]
    rows = [r for r in results["rows"] if r.get("tflops")]
    shapes, prs, ms = [tuple(sh) for sh in cfg["shapes"]], list(cfg["prunings"]), cfg["methods"]
    panels = [(s, n) for n in cfg["ns"] for s in cfg["sparsities"]]
    ncol = min(len(panels), 2)
    nrow = -(-len(panels) // ncol)
    fig, axes = plt.subplots(nrow, ncol, figsize=(P.PAGE_WIDTH if ncol > 1 else P.COLUMN_WIDTH,
                                                  2.3 * nrow + (0.7 if ncol > 1 else 1.5)),
                             squeeze=False, sharey=True)
    step = len(prs) + 0.6                                # a gap between shapes
    xs = {(sh, pr): i * step + j for i, sh in enumerate(shapes) for j, pr in enumerate(prs)}
    shift = {m: (k - (len(ms) - 1) / 2) * 0.25 for k, m in enumerate(ms)}
    bad = False
    for ax, (s, n) in zip(axes.flat, panels):
        mine = [r for r in rows if r["sparsity"] == s and r["n"] == n]
        for m in ms:
            style = P.line_style(m, linewidth=1.0)
            style["markersize"] = 6.5 if style["marker"] == "*" else 4.5
            line = {k: v for k, v in style.items() if k not in ("label", "marker")}
            dots = {k: v for k, v in style.items() if k not in ("linestyle", "linewidth", "label")}
            for sh in shapes:
                pts = sorted((xs[(sh, r["pruning"])] + shift[m], r["tflops"],
                              r.get("check_passed") is not False) for r in mine
                             if r["method"] == m and tuple(r["shape"]) == sh and r["pruning"] in prs)
                if not pts:
                    continue
                ax.plot([x for x, _, _ in pts], [y for _, y, _ in pts], **line)
                for x, y, ok in pts:
                    ax.plot([x], [y], linestyle="none", **dots,
                            markerfacecolor=None if ok else "white")
                    bad |= not ok
            ax.plot([], [], linestyle="none", label=style["label"], **dots)   # the legend's entry
        ax.set_xticks(list(xs.values()), [pr[:4] if pr == "random" else pr[:3] for _, pr in xs],
                      fontsize=6.5)
        _gs.label_groups(ax, [f"{sh[0]}x{sh[1]}" for sh in shapes], step, len(prs), y=-0.15,
                         fontsize=6.5)
        ax.set_xlim(-0.5, (len(shapes) - 1) * step + len(prs) - 0.5)
        ax.set_title(f"{100 * s:.0f} % sparse, N = {n}")
        ax.grid(axis="x", visible=False)
    _gs.finish_panels(axes, len(panels))
    P.log_axis(axes.flat[0])
    wide = ncol > 1                                      # else one column wide: text on more lines
    fig.suptitle(f"GeneralSparse paper Fig. 4: pruning by magnitude{' ' if wide else chr(10)}(mag) "
                 f"or at random (rand)\nfp16, cold L2, {P.device_name(results)} (paper: A100)")
    if bad:
        axes.flat[0].plot([], [], color="gray", marker="o", markerfacecolor="white",
                          linestyle="none", label="hollow: result outside the error bound")
    P.legend_below(fig, list(axes.flat), ncol=3 + bad if wide else 1, room=0.06 if wide else 0.15)
    return P.savefig(fig, fig_path, tight=False)


def summary(results: dict) -> list:
    """One row per method (paper_values' view): its time under random pruning over its time
    under magnitude pruning of the same matrix (shape, sparsity, N), the range and the
    geometric mean; above 1 the magnitude-pruned matrix (uneven rows) is the faster one."""
    t = {(tuple(r["shape"]), r["sparsity"], r["n"], r["method"], r["pruning"]): r["median_us"]
         for r in results["rows"] if r.get("median_us") and r.get("check_passed") is not False}
    out = []
    for m in results["config"]["methods"]:
        xs = [t[k[:4] + ("random",)] / us for k, us in t.items()
              if k[3] == m and k[4] == "magnitude" and k[:4] + ("random",) in t]
        if xs:
            out.append(dict(method=m, matrices=len(xs), low=min(xs), high=max(xs),
                            geomean=_gs.geomean(xs)))
    return out


def report(results: dict):
    P.print_table(summary(results), [("method", "method", ""), ("matrices", "matrices", ""),
                                     ("low", "random/magnitude time min", ".2f"),
                                     ("high", "max", ".2f"), ("geomean", "geomean", ".2f")])
    cols = [("shape", "shape", ""), ("sparsity", "sparsity", ".2f"), ("pruning", "pruning", ""),
            ("n", "N", ""), ("method", "method", ""), ("median_us", "median us", ".1f"),
            ("tflops", "TFLOP/s", ".2f"), ("strategy", "strategy", ""), ("check_passed", "ok", "")]
    P.print_table(results["rows"], cols)


if __name__ == "__main__":
    sys.exit(X.main(sys.modules[__name__]))
