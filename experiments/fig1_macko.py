"""MACKO paper, Fig. 1: SpMV runtime vs sparsity for a 36864 x 12288 fp16 matrix, all methods
(MACKO, cuSPARSE, numba CSR-vector, dense cuBLAS GEMV), cold L2.

    python experiments/fig1_macko.py [--quick] [--plot-only]
"""
from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [p for p in (HERE, os.path.dirname(HERE)) if p not in sys.path]

import fig7_macko as F7  # noqa: E402
from spmvlab import experiment as X  # noqa: E402

NAME = "fig1_macko"
SHAPE = (36864, 12288)


def measure(args) -> dict:
    cfg = F7.config(SHAPE, args.quick)
    # each point builds a 36864 x 12288 matrix on the host: a coarse grid keeps the run short
    cfg["sparsities"] = [0.5, 0.9] if args.quick else [0.3, 0.5, 0.7, 0.9]
    cfg["reps"] = 20 if args.quick else 50
    return dict(rows=F7.measure_shape(cfg), config=cfg)


def plot(results: dict, fig_path: str):
    plt = X.pyplot()
    rows = [r for r in results["rows"] if "median_us" in r]
    gpu, _ = X._describe(results)
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for m in results["config"]["methods"]:
        pts = sorted((r["sparsity"], r["median_us"]) for r in rows if r["method"] == m)
        color, marker = F7.STYLE.get(m, (None, "o"))
        ls = "--" if m == "cublas" else "-"
        ax.plot([100 * p for p, _ in pts], [t for _, t in pts], marker=marker or "", ls=ls,
                color=color, label=m.replace("_", " ") + (" (dense)" if m == "cublas" else ""))
    ax.set(xlabel="sparsity (%)", ylabel="SpMV time (us, median, cold L2)",
           title=f"{SHAPE[0]}x{SHAPE[1]} fp16 on {gpu}")
    ax.set_ylim(bottom=0)
    ax.legend()
    fig.tight_layout()
    return X.savefig(fig, fig_path)


if __name__ == "__main__":
    sys.exit(X.main(NAME, description=__doc__, measure=measure, plot=plot, report=F7.report_speedup))
