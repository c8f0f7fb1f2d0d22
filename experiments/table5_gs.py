"""GeneralSparse paper, Table 5: pruning granularity. Random pruning of (1,1), (4,4) and (8,8)
blocks of the weights at 70 and 90 %, N = 8 and 32 (fp16, cold L2, median): the average
speedup of the tuned GeneralSparse kernel over cuSPARSE SpMM, cuBLAS GEMM fp16 and our CSR
SpMM (the paper's tensor-core baselines are not run here). Weights as in Fig. 14
(``experiments/_gs.py``); two of its shapes by default. The paper ran on an A100.

    python experiments/table5_gs.py [--quick] [--shapes 7168x7168] [--blocks 1x1,8x8] [--merge]

Runtime on an H200 (06dd8fa): 124 s for 7168x7168 (3 blocks x 2 sparsities x 2 N), 79 s
for 7168x28672 at 90 % and about 4 min at 70 % (drawing, pruning, encoding and the search
take most of it): run it in parts with ``--shapes``/``--sparsities``/``--blocks`` and
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
    """Mean speedup per block size, a panel per base, bars per (N, sparsity)."""
    plt = P.pyplot()
    cfg = results["config"]
    t = table(results)
    fig, axes = plt.subplots(1, len(BASES), figsize=(4.2 * len(BASES), 3.4), squeeze=False)
    combos = [(n, s) for n in cfg["ns"] for s in cfg["sparsities"]]
    width = 0.8 / len(combos)
    blocks = [f"({b[0]},{b[1]})" for b in cfg["blocks"]]
    for ax, base in zip(axes[0], BASES):
        for j, (n, s) in enumerate(combos):
            by = {r["block"]: r["mean"] for r in t if r["base"] == base and r["n"] == n and r["sparsity"] == s}
            ax.bar([i + j * width for i in range(len(blocks))], [by.get(b, float("nan")) for b in blocks],
                   width, label=f"col={n}, {100 * s:.0f} %")
        ax.axhline(1.0, color="black", lw=1, ls="--")
        ax.set_yscale("log", base=2)
        ax.set_xticks([i + 0.4 - width / 2 for i in range(len(blocks))], blocks)
        ax.set(title=f"over {base}", xlabel="pruned block (rows, cols)", ylabel="mean speedup")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(combos), fontsize=8, frameon=False)
    fig.suptitle(f"GeneralSparse, random block pruning, fp16, {P.device_name(results)} (paper: A100)",
                 fontsize=10)
    fig.tight_layout(rect=(0, 0.08, 1, 1))                  # the legend below, off the bars
    return P.savefig(fig, fig_path, tight=False)


def report(results: dict):
    P.print_table(table(results), [("base", "over", ""), ("block", "pruned size", ""),
                                   ("sparsity", "sparsity", ".2f"), ("n", "col", ""),
                                   ("shapes", "shapes", ""), ("mean", "mean x", ".2f"),
                                   ("geomean", "geomean x", ".2f")])


if __name__ == "__main__":
    sys.exit(X.main(sys.modules[__name__]))
