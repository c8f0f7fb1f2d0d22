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

import sys

from experiments.paper_values import MACKO_TABLE1 as PAPER
from spmvlab import experiment as X
from spmvlab import plotting as P

NAME = "table1_macko"
NEEDS_GPU = True
QUICK = dict(sparsities=[0.5, 0.9], reps=30)


def config(quick: bool = False, **overrides) -> dict:
    from spmvlab.datasets import LLAMA2_7B_LAYERS
    counts: dict = {}
    for shape in LLAMA2_7B_LAYERS["layers"].values():
        key = f"{shape[0]}x{shape[1]}"
        counts[key] = counts.get(key, 0) + 1
    full = dict(sparsities=sorted(PAPER), n_blocks=LLAMA2_7B_LAYERS["n_blocks"],
                layer_shapes=counts, dtype="float16", reps=60, warmup=10, seed=0)
    return X.make_config(NAME, full, QUICK, quick, overrides)


def measure(cfg: dict) -> dict:
    from spmvlab import methods
    layers = {tuple(int(v) for v in k.split("x")): n for k, n in cfg["layer_shapes"].items()}
    rows = []
    jobs = [dict(shape=list(sh), sparsity=s, dtype=cfg["dtype"], seed=cfg["seed"], encode=["macko"])
            for s in cfg["sparsities"] for sh in layers]
    for job, p in X.progress(X.problems(jobs, dense=True), total=len(jobs), desc=NAME):
        rows += methods.measure_problem(p, ["cublas", "macko"], reps=cfg["reps"], warmup=cfg["warmup"],
                                        extra=dict(sparsity=job["sparsity"],
                                                   layers_per_block=layers[tuple(job["shape"])]))
    return dict(rows=rows)


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


def layers(results: dict) -> list[dict]:
    """One line per sparsity and layer shape: ``speedup`` (cuBLAS time / MACKO time of one
    layer) and the shape's share of the block's time (``macko_share``, ``dense_share``: its
    layers' time / the 7 layers' time)."""
    out = []
    for s in results["config"]["sparsities"]:
        rs = [r for r in results["rows"] if r["sparsity"] == s and "median_us" in r]
        t = {(tuple(r["shape"]), r["method"]): r["median_us"] * r["layers_per_block"] for r in rs}
        total = {m: sum(v for (_, mm), v in t.items() if mm == m) for m in ("cublas", "macko")}
        for r in rs:
            if r["method"] != "macko":
                continue
            sh = tuple(r["shape"])
            out.append(dict(sparsity=s, shape=list(sh), layers_per_block=r["layers_per_block"],
                            speedup=t[sh, "cublas"] / t[sh, "macko"],
                            macko_share=t[sh, "macko"] / total["macko"],
                            dense_share=t[sh, "cublas"] / total["cublas"]))
    return out


def plot(results: dict, fig_path: str) -> list[str]:
    """Sizes, decode tokens/s and speedup over dense, ours beside the paper's Table 1. Ours
    counts the linear layers only (isolated cold-L2 kernel times on our GPU); the paper's are
    whole-model, end-to-end numbers on an RTX 4090, so only the speedups share a scale."""
    plt = P.pyplot()
    rows = table(results)
    gpu = P.device_name(results)
    sp = [100 * r["sparsity"] for r in rows]
    paper = [r for r in rows if r["paper_dense_tok_s"] is not None]
    pp = [100 * r["sparsity"] for r in paper]
    ours = P.line_style("macko", label="MACKO (ours: linear layers only)")
    dense = P.line_style("cublas", label="dense, cuBLAS (ours: linear layers only)", linestyle="--")
    paper_kw = dict(color="gray", lw=1.1, ms=4.5)
    p_dense = dict(paper_kw, ls="--", label="dense (paper, RTX 4090: whole model, end to end)")
    p_macko = dict(paper_kw, ls=":", marker="x", label="MACKO (paper, RTX 4090: whole model, end to end)")
    fig, (a1, a2, a3) = plt.subplots(1, 3, figsize=(P.PAGE_WIDTH, 2.9))
    a1.plot(sp, [r["dense_gb"] for r in rows], **dict(dense, marker=None))
    a1.plot(sp, [r["macko_gb"] for r in rows], **ours)
    a1.plot(pp, [r["paper_dense_gb"] for r in paper], **p_dense)
    a1.plot(pp, [r["paper_macko_gb"] for r in paper], **p_macko)
    a1.set(xlabel="sparsity (%)", ylabel="size (GB)", title="Llama2-7B fp16: size", ylim=(0, None))
    a2.plot(sp, [r["dense_tok_s"] for r in rows], **dict(dense, marker=None))
    a2.plot(sp, [r["macko_tok_s"] for r in rows], **ours)
    a2.plot(pp, [r["paper_dense_tok_s"] for r in paper], **p_dense)
    a2.plot(pp, [r["paper_macko_tok_s"] for r in paper], **p_macko)
    a2.set(xlabel="sparsity (%)", ylabel="decode tokens/s", ylim=(0, None),
           title="decode speed")
    a3.plot(sp, [r["speedup"] for r in rows], **ours)
    a3.plot(pp, [r["paper_macko_tok_s"] / r["paper_dense_tok_s"] for r in paper], **p_macko)
    P.ratio_axis(a3, [r["speedup"] for r in rows]
                 + [r["paper_macko_tok_s"] / r["paper_dense_tok_s"] for r in paper])
    P.ratio_ticks(a3)
    a3.set(xlabel="sparsity (%)", ylabel="MACKO over dense (tokens/s)", title="decode speedup")
    fig.suptitle(f"ours: {gpu}, isolated cold-L2 times of the 7 linear layers x 32 blocks, sizes "
                 "of those layers;\npaper: RTX 4090, whole model, end to end")
    P.legend_below(fig, (a1,), ncol=2, room=0.16)
    return P.savefig(fig, fig_path, tight=False)


def report(results: dict):
    cols = [("sparsity", "sparsity", ".1f"), ("dense_gb", "dense GB", ".2f"), ("macko_gb", "MACKO GB", ".2f"),
            ("paper_macko_gb", "paper GB", ".2f"), ("dense_tok_s", "dense tok/s", ".0f"),
            ("macko_tok_s", "MACKO tok/s", ".0f"), ("speedup", "speedup", ".2f"),
            ("paper_macko_tok_s", "paper tok/s", ".1f")]
    P.print_table(table(results), cols)


if __name__ == "__main__":
    sys.exit(X.main(sys.modules[__name__]))
