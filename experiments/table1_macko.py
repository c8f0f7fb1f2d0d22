"""MACKO paper, Table 1: Llama2-7B linear layers, dense vs MACKO, at 20-90 % sparsity.

Model size: the 32 blocks' q, k, v, o (4096x4096), gate, up (11008x4096) and down
(4096x11008) layers, each encoded for real (uniform random masks, fp16 values,
delta_bits=4) and summed; dense = 2 bytes per weight. Decode speed: one token needs one
SpMV (or GEMV) per layer, so tokens/s = 1 / (32 x sum of the 7 layer times), each time the
median of cold-L2 runs on the GPU. Only these linear layers are counted (no attention,
embeddings, norms), unlike the paper's end-to-end numbers.

    python experiments/table1_macko.py [--quick] [--plot-only]
"""
from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [p for p in (HERE, os.path.dirname(HERE)) if p not in sys.path]

from spmvlab import experiment as X  # noqa: E402

NAME = "table1_macko"
# the paper's Table 1 (RTX 4090, end to end, whole model): sparsity -> (dense GB, MACKO GB,
# dense tok/s, MACKO tok/s)
PAPER = {0.2: (13.59, 13.77, 66.55, 66.36), 0.3: (13.59, 12.08, 66.49, 73.88),
         0.4: (13.59, 10.53, 66.48, 85.46), 0.5: (13.59, 8.87, 66.53, 98.60),
         0.6: (13.59, 7.14, 66.51, 119.27), 0.7: (13.59, 5.61, 66.50, 150.78),
         0.8: (13.59, 4.06, 66.54, 193.79), 0.9: (13.59, 2.67, 66.48, 255.01)}


def layers():
    from spmvlab.datasets import LLAMA2_7B_LAYERS
    counts = {}
    for name, shape in LLAMA2_7B_LAYERS["layers"].items():
        counts[tuple(shape)] = counts.get(tuple(shape), 0) + 1
    return LLAMA2_7B_LAYERS["n_blocks"], counts


def measure(args) -> dict:
    from spmvlab import datasets
    from spmvlab.measure import measure_matrix
    n_blocks, counts = layers()
    sparsities = [0.5, 0.9] if args.quick else sorted(PAPER)
    cfg = dict(sparsities=sparsities, n_blocks=n_blocks,
               layer_shapes={f"{r}x{c}": n for (r, c), n in counts.items()},
               dtype="float16", reps=30 if args.quick else 60, warmup=10, seed=0)
    rows = []
    jobs = [(sh, s) for s in sparsities for sh in counts]
    for shape, sparsity in X.progress(jobs, total=len(jobs), desc=NAME):
        A = datasets.uniform(shape, sparsity, dtype="float32", seed=cfg["seed"])
        rows += measure_matrix(A, "float16", ["cublas", "macko"], reps=cfg["reps"],
                               warmup=cfg["warmup"],
                               extra=dict(sparsity=sparsity, layers_per_block=counts[shape]))
    return dict(rows=rows, config=cfg)


def table(results: dict) -> list[dict]:
    """One line per sparsity: sizes (GB) and tokens/s, ours beside the paper's."""
    cfg = results["config"]
    n_blocks = cfg["n_blocks"]
    out = []
    for s in cfg["sparsities"]:
        rs = [r for r in results["rows"] if r["sparsity"] == s and "median_us" in r]
        size = {m: n_blocks * sum(r["format_bytes"] * r["layers_per_block"] for r in rs
                                  if r["method"] == m) / 1e9 for m in ("cublas", "macko")}
        t = {m: n_blocks * sum(r["median_us"] * r["layers_per_block"] for r in rs
                               if r["method"] == m) for m in ("cublas", "macko")}
        paper = PAPER.get(s, (None,) * 4)
        out.append(dict(sparsity=s, dense_gb=size["cublas"], macko_gb=size["macko"],
                        dense_tok_s=1e6 / t["cublas"], macko_tok_s=1e6 / t["macko"],
                        speedup=t["cublas"] / t["macko"], memory_reduction=size["cublas"] / size["macko"],
                        paper_dense_gb=paper[0], paper_macko_gb=paper[1],
                        paper_dense_tok_s=paper[2], paper_macko_tok_s=paper[3]))
    return out


def plot(results: dict, fig_path: str):
    plt = X.pyplot()
    rows = table(results)
    gpu, _ = X._describe(results)
    sp = [100 * r["sparsity"] for r in rows]
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4))
    a1.plot(sp, [r["dense_gb"] for r in rows], "k--", label="dense (ours: linear layers)")
    a1.plot(sp, [r["macko_gb"] for r in rows], "o-", color="tab:red", label="MACKO (ours)")
    a1.plot(sp, [r["paper_macko_gb"] for r in rows], "x:", color="tab:red", alpha=0.6,
            label="MACKO (paper: whole model)")
    a1.set(xlabel="sparsity (%)", ylabel="size (GB)", title="Llama2-7B linear layers, fp16")
    a2.plot(sp, [r["dense_tok_s"] for r in rows], "k--", label=f"dense cuBLAS ({gpu})")
    a2.plot(sp, [r["macko_tok_s"] for r in rows], "o-", color="tab:red", label=f"MACKO ({gpu})")
    a2.plot(sp, [r["paper_macko_tok_s"] for r in rows], "x:", color="tab:red", alpha=0.6,
            label="MACKO (paper, RTX 4090, end to end)")
    a2.set(xlabel="sparsity (%)", ylabel="decode tokens/s (linear layers only)",
           title="decode speed")
    for a in (a1, a2):
        a.legend()
    fig.tight_layout()
    return X.savefig(fig, fig_path)


def report(results: dict):
    cols = [("sparsity", "sparsity", ".1f"), ("dense_gb", "dense GB", ".2f"), ("macko_gb", "MACKO GB", ".2f"),
            ("paper_macko_gb", "paper GB", ".2f"), ("dense_tok_s", "dense tok/s", ".0f"),
            ("macko_tok_s", "MACKO tok/s", ".0f"), ("speedup", "speedup", ".2f"),
            ("paper_macko_tok_s", "paper tok/s", ".1f")]
    print(X.format_table(table(results), cols))


if __name__ == "__main__":
    sys.exit(X.main(NAME, description=__doc__, measure=measure, plot=plot, report=report))
