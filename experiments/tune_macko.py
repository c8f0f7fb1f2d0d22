"""MACKO kernel configuration sweep (threads per block x prefetch x register cap) beside the
baselines.

Chooses the default ``MackoConfig``: for each shape and sparsity, fp16, cold L2, every
variant is checked on the GPU and timed; the figure shows speedup over cuBLAS per variant.

    python experiments/tune_macko.py [--quick] [--plot-only]
"""
from __future__ import annotations

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from spmvlab import experiment as X  # noqa: E402

NAME = "tune_macko"
VARIANTS = ["macko_t256_p0_r48", "macko_t256_p1_r48", "macko_t512_p1_r48", "macko_t256_p2_r0",
            "macko_t512_p2_r56", "macko_t512_p2_r0"]
FULL = dict(shapes=[[4096, 11008], [12288, 12288]], sparsities=[0.3, 0.5, 0.7, 0.9],
            dtype="float16", methods=["cublas", "cusparse", "csr_vector"] + VARIANTS,
            reps=60, warmup=10, seed=0)
QUICK = dict(FULL, shapes=[[4096, 11008]], sparsities=[0.5, 0.9], reps=30)


def measure(args) -> dict:
    from spmvlab import datasets
    from spmvlab.measure import measure_matrix
    cfg = QUICK if args.quick else FULL
    rows = []
    jobs = [(s, p) for s in cfg["shapes"] for p in cfg["sparsities"]]
    for shape, sparsity in X.progress(jobs, total=len(jobs), desc=NAME):
        A = datasets.uniform(tuple(shape), sparsity, dtype="float32", seed=cfg["seed"])
        rows += measure_matrix(A, cfg["dtype"], cfg["methods"], reps=cfg["reps"],
                               warmup=cfg["warmup"], extra=dict(sparsity=sparsity))
    return dict(rows=rows, config=cfg)


def plot(results: dict, fig_path: str):
    plt = X.pyplot()
    rows = [r for r in results["rows"] if "median_us" in r]
    shapes = sorted({tuple(r["shape"]) for r in rows})
    fig, axes = plt.subplots(1, len(shapes), figsize=(6 * len(shapes), 4.2), squeeze=False)
    for ax, shape in zip(axes[0], shapes):
        sub = [r for r in rows if tuple(r["shape"]) == shape]
        for m in sorted({r["method"] for r in sub}):
            pts = sorted((r["sparsity"], r.get("speedup_vs_cublas", float("nan")))
                         for r in sub if r["method"] == m)
            ax.plot([100 * p for p, _ in pts], [v for _, v in pts], marker="o", label=m)
        ax.axhline(1.0, color="grey", lw=0.8, ls="--")
        ax.set(title=f"{shape[0]}x{shape[1]} fp16, cold L2", xlabel="sparsity (%)",
               ylabel="speedup over cuBLAS GEMV")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    return X.savefig(fig, fig_path)


def report(results: dict):
    cols = [("shape", "shape", ""), ("sparsity", "sparsity", ".2f"), ("method", "method", ""),
            ("median_us", "median us", ".1f"), ("tbps", "TB/s", ".2f"),
            ("speedup_vs_cublas", "x cuBLAS", ".2f"), ("correct", "ok", "")]
    print(X.format_table([r for r in results["rows"] if "median_us" in r], cols))


if __name__ == "__main__":
    sys.exit(X.main(NAME, description=__doc__, measure=measure, plot=plot, report=report))
