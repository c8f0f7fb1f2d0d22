"""GeneralSparse paper, Table 5: pruning granularity. Random pruning of (1,1), (4,4) and (8,8)
blocks of the weights at 70 and 90 %, N = 8 and 32 (fp16, cold L2, median): the average
speedup of the tuned GeneralSparse kernel over cuSPARSE SpMM, cuBLAS GEMM fp16 and our CSR
SpMM (the paper's tensor-core baselines are not run here). Weights as in Fig. 14
(``experiments/_gs.py``); two of its shapes by default. The paper ran on an A100.

    python experiments/table5_gs.py [--quick] [--shapes 7168x7168] [--blocks 1x1,8x8] [--merge]

Runtime: minutes per shape on an H200 (7168x7168: 3 blocks x 2 sparsities x 2 N), most of it
drawing, pruning, encoding and the search, more at 70 % than at 90 % (docs/experiments.md lists
each saved run's duration): run it in parts with ``--shapes``/``--sparsities``/``--blocks`` and
``--merge``.
"""
from __future__ import annotations

import sys

from experiments import _gs
from spmvlab import experiment as X
from spmvlab import plotting as P

NAME = "table5_gs"
NEEDS_GPU = True
SPLIT_KEYS = ("shapes", "blocks", "sparsities", "ns")
BASES = ["cusparse", "cublas", "csr_vector"]
#: bar colours (not methods): a hue per N (in config order), light for the lower sparsity
SHADES = [("#80cdc1", "#01665e"), ("#dfc27d", "#8c510a"), ("#c2a5cf", "#762a83")]
FULL = dict(shapes=[[7168, 7168], [7168, 28672]], prunings=["random"], blocks=[[1, 1], [4, 4], [8, 8]],
            sparsities=[0.7, 0.9], ns=[8, 32], dtype="float16",
            methods=["cublas", "cusparse", "csr_vector", _gs.GS_BEST], reps=20, warmup=3,
            search_top=4, proxy_nnz=2_000_000, seed=0)
QUICK = dict(shapes=[[7168, 7168]], blocks=[[1, 1], [8, 8]], sparsities=[0.9], ns=[8], reps=5)


config = _gs.config_for(NAME, FULL, QUICK)


cli = _gs.cli_for("shapes", "blocks", "sparsities", "ns")


def measure(cfg: dict) -> dict:
    return dict(rows=_gs.measure_weights(cfg, NAME, blocks=[tuple(b) for b in cfg["blocks"]]))


def table(results: dict) -> list:
    cfg = results["config"]
    out = []
    for base in BASES:
        sp = _gs.speedup(results["rows"], _gs.GS_BEST, base, ("shape", "matrix", "sparsity", "n", "block"))
        for b in cfg["blocks"]:
            for s in cfg["sparsities"]:
                for n in cfg["ns"]:
                    xs = [v for k, v in sp if k[4] == str(list(b)) and k[2] == str(s) and k[3] == str(n)]
                    if xs:
                        out.append(dict(base=base, block=f"({b[0]},{b[1]})", sparsity=s, n=n,
                                        shapes=len(xs), mean=sum(xs) / len(xs), geomean=_gs.geomean(xs)))
    return out


def plot(results: dict, fig_path: str) -> list[str]:
    """Mean speedup per block size, a panel per base, all on one axis: bars per (N, sparsity)
    from the 1x line (the base)."""
    plt = P.pyplot()
    cfg = results["config"]
    t = table(results)
    fig, axes = plt.subplots(1, len(BASES), figsize=(P.PAGE_WIDTH, 2.7), squeeze=False, sharey=True)
    combos = [(n, s) for n in cfg["ns"] for s in cfg["sparsities"]]
    width = 0.8 / len(combos)
    blocks = [f"({b[0]},{b[1]})" for b in cfg["blocks"]]
    for ax, base in zip(axes[0], BASES):
        for j, (n, s) in enumerate(combos):
            by = {r["block"]: r["mean"] for r in t if r["base"] == base and r["n"] == n and r["sparsity"] == s}
            pts = [(i + (j - (len(combos) - 1) / 2) * width, by[b]) for i, b in enumerate(blocks) if b in by]
            shades = SHADES[cfg["ns"].index(n) % len(SHADES)]
            color = shades[min(cfg["sparsities"].index(s), len(shades) - 1)]
            P.ratio_bars(ax, [x for x, _ in pts], [y for _, y in pts], width, color=color, zorder=2,
                         label=f"N={n}, {100 * s:.0f} % sparse")
        ax.set_xticks(range(len(blocks)), blocks)
        ax.set_xlim(-0.5, len(blocks) - 0.5)
        ax.set(title=f"over {P.label(base)}", xlabel="pruned block (rows, cols)")
        ax.grid(axis="x", visible=False)
    P.ratio_axis(axes[0][0], [r["mean"] for r in t], line_label="the baseline (1×)")
    for ax in axes[0][1:]:
        ax.axhline(1.0, color="black", lw=0.9, ls="--", zorder=1)
    axes[0][0].set_ylabel("GeneralSparse tuned:\nmean speedup over the shapes")
    fig.suptitle(f"GeneralSparse paper Table 5: random block pruning, fp16, cold L2, "
                 f"{P.device_name(results)} (paper: A100)")
    P.legend_below(fig, axes[0], ncol=len(combos) + 1, room=0.09)
    return P.savefig(fig, fig_path, tight=False)


def report(results: dict):
    P.print_table(table(results), [("base", "over", ""), ("block", "pruned size", ""),
                                   ("sparsity", "sparsity", ".2f"), ("n", "col", ""),
                                   ("shapes", "shapes", ""), ("mean", "mean x", ".2f"),
                                   ("geomean", "geomean x", ".2f")])


if __name__ == "__main__":
    sys.exit(X.main(sys.modules[__name__]))
