"""MACKO paper, Fig. 4: SpMV speedup over cuBLAS GEMV for the 31 LLM layer shapes of the
paper's appendix D, at each sparsity (fp16, cold L2, uniform random masks).

    python experiments/fig4_macko.py [--quick] [--plot-only] [--sparsities 0.5,0.7]
"""
from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [p for p in (HERE, os.path.dirname(HERE)) if p not in sys.path]

from spmvlab import experiment as X  # noqa: E402

NAME = "fig4_macko"
METHODS = ["cublas", "macko"]


def extra(p):
    p.add_argument("--sparsities", default=None,
                   help="comma-separated fractions (default 0.3,0.5,0.7,0.9; quick: 0.5)")


def measure(args) -> dict:
    from spmvlab import datasets
    from spmvlab.measure import measure_matrix
    shapes = [list(s) for s in datasets.LLM_SHAPES]
    sparsities = ([float(v) for v in args.sparsities.split(",")] if args.sparsities
                  else [0.5] if args.quick else [0.3, 0.5, 0.7, 0.9])
    if args.quick:
        shapes = shapes[:4]
    cfg = dict(shapes=shapes, sparsities=sparsities, dtype="float16", methods=METHODS,
               reps=20 if args.quick else 40, warmup=5, seed=0)
    rows = []
    jobs = [(tuple(sh), s) for s in sparsities for sh in shapes]
    for shape, sparsity in X.progress(jobs, total=len(jobs), desc=NAME):
        A = datasets.uniform(shape, sparsity, dtype="float32", seed=cfg["seed"])
        rows += measure_matrix(A, "float16", METHODS, reps=cfg["reps"], warmup=cfg["warmup"],
                               extra=dict(sparsity=sparsity))
        del A
    return dict(rows=rows, config=cfg)


def plot(results: dict, fig_path: str):
    plt = X.pyplot()
    cfg = results["config"]
    gpu, _ = X._describe(results)
    rows = [r for r in results["rows"] if r["method"] == "macko" and "speedup_vs_cublas" in r]
    labels = [f"{r}x{c}" for r, c in cfg["shapes"]]
    fig, ax = plt.subplots(figsize=(13, 4.5))
    width = 0.8 / max(1, len(cfg["sparsities"]))
    for i, s in enumerate(cfg["sparsities"]):
        by = {tuple(r["shape"]): r["speedup_vs_cublas"] for r in rows if r["sparsity"] == s}
        ys = [by.get(tuple(sh), float("nan")) for sh in cfg["shapes"]]
        ax.bar([k + i * width for k in range(len(labels))], ys, width, label=f"{100 * s:.0f} %")
    ax.axhline(1.0, color="black", lw=1, ls="--")
    ax.set_xticks([k + 0.4 - width / 2 for k in range(len(labels))], labels, rotation=70, fontsize=7)
    ax.set(ylabel="MACKO speedup over cuBLAS GEMV", title=f"31 LLM layer shapes, fp16, cold L2, {gpu}")
    ax.legend(title="sparsity")
    fig.tight_layout()
    return X.savefig(fig, fig_path)


def report(results: dict):
    cols = [("shape", "shape", ""), ("sparsity", "sparsity", ".2f"), ("median_us", "MACKO us", ".1f"),
            ("tbps", "TB/s", ".2f"), ("speedup_vs_cublas", "x cuBLAS", ".2f")]
    print(X.format_table([r for r in results["rows"] if r["method"] == "macko" and "median_us" in r],
                         cols))


if __name__ == "__main__":
    sys.exit(X.main(NAME, description=__doc__, measure=measure, plot=plot, extra=extra, report=report))
