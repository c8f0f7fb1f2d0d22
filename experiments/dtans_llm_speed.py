"""Beyond the papers: SpMV speed of entropy-coded pruned LLM weights. CSR-dtANS against cuBLAS
GEMV (the dense fp16 layer), MACKO and cuSPARSE CSR on the LLM shapes of fig7_macko, in the
paper's layout (a lane per row) and the long-row one (``lanes_per_row=32``: a warp per row),
(4096x11008, 12288x12288, 4096x4096, 11008x4096) at 50 / 70 / 90 % sparsity, fp16 values,
cold L2. The byte counts on the real weights are ``dtans_llm.py`` (CPU).

Matrices: a uniform random mask (``datasets.uniform``; per-row magnitude pruning of the real
weights gives masks statistically like a uniform one, ``../shared/data/README.md``) whose
values are drawn (with replacement, seeded) from the values the real mpnet weights keep
after per-row magnitude pruning at the same sparsity: the value distribution of the real
weights at the LLM's size. Needs ``SPMVLAB_DATA`` with ``weights/``. Every method is checked on
the GPU against the float64 product, then timed (median of ``reps`` calls, L2 read-flushed).
Rows add ``bytes_per_weight`` (format bytes / rows x cols). Runtime: minutes on an H200, mostly
encoding the 12288x12288 matrices on the host (docs/experiments.md lists each saved run's
duration).

    python experiments/dtans_llm_speed.py [--quick] [--plot-only]
"""
from __future__ import annotations

import sys

import numpy as np

from experiments import _dtans as D
from spmvlab import experiment as X
from spmvlab import plotting as P

NAME = "dtans_llm_speed"
NEEDS_GPU = True
METHODS = ["cublas", "macko", "csr_dtans", "csr_dtans[lanes_per_row=32]", "cusparse"]
FULL = dict(shapes=[[4096, 11008], [12288, 12288], [4096, 4096], [11008, 4096]],
            sparsities=[0.5, 0.7, 0.9], dtype="float16", methods=METHODS, weights=None,
            reps=30, warmup=5, seed=0)
QUICK = dict(shapes=[[1024, 2048]], sparsities=[0.5, 0.9], reps=5)


def config(quick: bool = False, **overrides) -> dict:
    """``weights`` None: every weight matrix in the data directory (the value pool)."""
    return X.make_config(NAME, FULL, QUICK, quick, overrides)


def cli(p):
    p.add_argument("--shapes", type=X.shapes, help="matrix shapes, e.g. 4096x11008,12288x12288")
    p.add_argument("--sparsities", type=X.floats, help="sparsities, e.g. 0.5,0.9")


def value_pool(names, sparsity: float) -> np.ndarray:
    """The values the real weights keep after per-row magnitude pruning at ``sparsity``."""
    from spmvlab import datasets
    out = []
    for w in names:
        A = datasets.prune(datasets.weights(w), sparsity, method="magnitude", per_row=True)
        out.append(A[A != 0].ravel())
    return np.concatenate(out)


def matrix(shape, sparsity: float, pool: np.ndarray, dtype, seed: int):
    """Uniform mask with values drawn from ``pool`` (none zero in ``dtype``)."""
    from spmvlab import datasets
    A = datasets.uniform(tuple(shape), sparsity, dtype=np.float32, seed=seed)
    rng = np.random.default_rng(seed + 1)
    v = rng.choice(pool, size=A.nnz).astype(np.dtype(dtype)).astype(np.float32)
    zero = v == 0
    v[zero] = np.float32(pool[np.argmax(np.abs(pool))])    # fp16 underflow: never in practice
    A.data = v
    return A


def measure(cfg: dict) -> dict:
    from spmvlab import datasets
    names = cfg["weights"] if cfg["weights"] is not None else datasets.weights_names()
    jobs = [(tuple(sh), s) for s in cfg["sparsities"] for sh in cfg["shapes"]]
    rows, pools = [], {}
    for shape, s in X.progress(jobs, total=len(jobs), desc=NAME):
        if s not in pools:
            pools[s] = value_pool(names, s)
        A = matrix(shape, s, pools[s], cfg["dtype"], cfg["seed"])
        rs = D.time_matrix(A, cfg["dtype"], cfg["methods"], reps=cfg["reps"], warmup=cfg["warmup"],
                           caches=("cold",), extra=dict(sparsity=s))
        base = next((r["median_us"] for r in rs if r["method"] == "cublas" and "median_us" in r), None)
        for r in rs:
            if "format_bytes" in r:
                r["bytes_per_weight"] = r["format_bytes"] / (shape[0] * shape[1])
            if base and "median_us" in r:
                r["speedup_vs_cublas"] = base / r["median_us"]
        rows += rs
        del A
        X.checkpoint(dict(rows=rows, weights_found=list(names)))   # a stopped run keeps these
    return dict(rows=rows, weights_found=list(names))


def plot(results: dict, fig_path: str) -> list[str]:
    plt = P.pyplot()
    cfg = results["config"]
    shapes = [tuple(s) for s in cfg["shapes"]]
    fig, axes = plt.subplots(1, len(shapes), figsize=(P.PAGE_WIDTH, 2.6), squeeze=False, sharey=True)
    for ax, sh in zip(axes[0], shapes):
        rs = [r for r in results["rows"] if tuple(r["shape"]) == sh and "speedup_vs_cublas" in r]
        P.method_lines(ax, rs, "speedup_vs_cublas", methods=[m for m in cfg["methods"] if m != "cublas"])
        ax.set(title=f"{sh[0]}x{sh[1]}", xlabel="sparsity (%)")
    P.ratio_axis(axes[0][0], [r["speedup_vs_cublas"] for r in results["rows"]
                              if r.get("speedup_vs_cublas")])          # shared by every panel
    for ax in axes[0][1:]:
        ax.axhline(1.0, color="black", lw=0.9, ls="--", zorder=1)
    axes[0][0].set_ylabel(f"speedup over cuBLAS GEMV ({cfg['dtype']})")
    fig.suptitle(f"SpMV with values drawn from pruned mpnet weights, cold L2, {P.device_name(results)}")
    P.legend_below(fig, axes[0], room=0.1)
    return P.savefig(fig, fig_path, tight=False)


def report(results: dict):
    P.print_table(results["rows"], [("shape", "shape", ""), ("sparsity", "sparsity", ".2f"),
                                    ("method", "method", ""), ("median_us", "us", ".1f"),
                                    ("bytes_per_weight", "B/weight", ".3f"),
                                    ("speedup_vs_cublas", "x cuBLAS", ".2f"), ("tb_s", "TB/s", ".2f"),
                                    ("check_passed", "ok", "")])
    for r in results["rows"]:
        if "error" in r:
            print(f"error: {r['shape']} {r['sparsity']} {r['method']}: {r['error']}")


if __name__ == "__main__":
    sys.exit(X.main(sys.modules[__name__]))
