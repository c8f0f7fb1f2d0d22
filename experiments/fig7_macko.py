"""MACKO paper, Fig. 7 (and Figs. 5/6/8/9 with --shape): SpMV speedup over cuBLAS GEMV vs
sparsity, fp16 values, cold L2.

Methods: MACKO (numba kernel, delta_bits=4, fp32 accumulation), cuSPARSE CSR (torch, fp16),
numba CSR-vector, and the dense cuBLAS GEMV every speedup is relative to. Matrices are
``datasets.uniform`` masks (seeded) with Gaussian values; every method is checked on the GPU
against the float64 product before it is timed (median of ``reps`` calls, L2 flushed).

    python experiments/fig7_macko.py                    # 4096 x 11008 (paper Fig. 7)
    python experiments/fig7_macko.py --shape 12288 12288  # Figs. 5/9; 4096 4096: Fig. 6; 11008 4096: Fig. 8
"""
from __future__ import annotations

import argparse
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from spmvlab import experiment as X  # noqa: E402

DEFAULT_SHAPE = (4096, 11008)
PAPER_FIGURE = {(4096, 11008): "Fig. 7", (12288, 12288): "Figs. 5 and 9", (4096, 4096): "Fig. 6",
                (11008, 4096): "Fig. 8"}
METHODS = ["cublas", "macko", "cusparse", "csr_vector"]
STYLE = {"macko": ("tab:red", "o"), "cusparse": ("tab:blue", "s"), "csr_vector": ("tab:green", "^"),
         "cublas": ("black", None)}


def config(shape, quick: bool) -> dict:
    sparsities = [0.5, 0.9] if quick else [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95]
    return dict(shape=list(shape), sparsities=sparsities, dtype="float16", methods=METHODS,
                reps=30 if quick else 100, warmup=10, seed=0, cold=True)


def name_for(shape) -> str:
    return "fig7_macko" if tuple(shape) == DEFAULT_SHAPE else f"fig7_macko_{shape[0]}x{shape[1]}"


def measure_shape(cfg: dict) -> list[dict]:
    from spmvlab import datasets
    from spmvlab.measure import measure_matrix
    rows = []
    for sparsity in X.progress(cfg["sparsities"], total=len(cfg["sparsities"]), desc="sparsity"):
        A = datasets.uniform(tuple(cfg["shape"]), sparsity, dtype="float32", seed=cfg["seed"])
        rows += measure_matrix(A, cfg["dtype"], cfg["methods"], reps=cfg["reps"],
                               warmup=cfg["warmup"], cold=cfg["cold"], extra=dict(sparsity=sparsity))
    return rows


def plot_speedup(results: dict, fig_path: str, title_extra: str = ""):
    plt = X.pyplot()
    cfg = results["config"]
    shape = tuple(cfg["shape"])
    rows = [r for r in results["rows"] if "median_us" in r]
    gpu, _ = X._describe(results)
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    base = {r["sparsity"]: r["median_us"] for r in rows if r["method"] == "cublas"}
    for m in [m for m in cfg["methods"] if m != "cublas"]:
        pts = sorted((r["sparsity"], base[r["sparsity"]] / r["median_us"])
                     for r in rows if r["method"] == m and r["sparsity"] in base)
        if pts:
            color, marker = STYLE.get(m, (None, "o"))
            ax.plot([100 * p for p, _ in pts], [v for _, v in pts], marker=marker, color=color,
                    label=m.replace("_", " "))
    t_dense = sorted(base.values())[len(base) // 2] if base else float("nan")
    ax.axhline(1.0, color="black", lw=1, ls="--", label=f"cuBLAS GEMV ({t_dense:.0f} us)")
    ax.set(xlabel="sparsity (%)", ylabel="speedup over cuBLAS GEMV (fp16)",
           title=f"SpMV {shape[0]}x{shape[1]}, fp16, cold L2, {gpu}{title_extra}")
    ax.set_yscale("log", base=2)
    ticks = [t for t in (0.125, 0.25, 0.5, 1, 2, 4, 8) if ax.get_ylim()[0] <= t <= ax.get_ylim()[1]]
    ax.set_yticks(ticks, [f"{t:g}x" for t in ticks])
    ax.legend()
    fig.tight_layout()
    return X.savefig(fig, fig_path)


def report_speedup(results: dict):
    cols = [("sparsity", "sparsity", ".2f"), ("method", "method", ""), ("median_us", "median us", ".1f"),
            ("tbps", "TB/s", ".2f"), ("speedup_vs_cublas", "x cuBLAS", ".2f"),
            ("speedup_vs_cusparse", "x cuSPARSE", ".2f"), ("correct", "ok", "")]
    print(X.format_table([r for r in results["rows"] if "median_us" in r], cols))


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--shape", type=int, nargs=2, default=list(DEFAULT_SHAPE))
    known, rest = pre.parse_known_args(argv)
    shape = tuple(known.shape)

    def extra(p):
        p.add_argument("--shape", type=int, nargs=2, default=list(DEFAULT_SHAPE),
                       metavar=("ROWS", "COLS"), help="matrix shape (default 4096 11008)")

    def measure(args):
        cfg = config(shape, args.quick)
        return dict(rows=measure_shape(cfg), config=cfg)

    return X.main(name_for(shape), description=__doc__, measure=measure, plot=plot_speedup,
                  extra=extra, report=report_speedup, argv=argv)


if __name__ == "__main__":
    sys.exit(main())
