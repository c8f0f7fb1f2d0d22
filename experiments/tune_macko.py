"""MACKO kernel configuration sweep (threads per block x prefetch x register cap) beside the
baselines.

Chooses the default ``MackoConfig``: for each shape and sparsity, fp16, cold L2, every
variant is checked on the GPU and timed; the figure shows speedup over cuBLAS per variant.
The macko variants of one matrix share one encoding. A saved run of variants that have
since left the code still plots (``--plot-only --out <file> --fig <figure>``;
docs/performance.md).

    python experiments/tune_macko.py [--quick] [--plot-only] [--methods a,b,...]
                                     [--shapes 4096x11008,...] [--sparsities 0.3,0.5,...]
"""
from __future__ import annotations

import sys

from spmvlab import experiment as X
from spmvlab import plotting as P

NAME = "tune_macko"
NEEDS_GPU = True
# name -> MackoConfig fields (max_registers None: the compiler's choice)
VARIANTS = {
    "macko_t256_p0_r48": dict(threads_per_block=256, prefetch=0, max_registers=48),
    "macko_t256_p1_r48": dict(threads_per_block=256, prefetch=1, max_registers=48),
    "macko_t512_p1_r48": dict(threads_per_block=512, prefetch=1, max_registers=48),
    "macko_t256_p2_r0": dict(threads_per_block=256, prefetch=2, max_registers=None),
    "macko_t512_p2_r56": dict(threads_per_block=512, prefetch=2, max_registers=56),
    "macko_t512_p2_r0": dict(threads_per_block=512, prefetch=2, max_registers=None),
    "macko_t256_p1_r40": dict(threads_per_block=256, prefetch=1, max_registers=40),
    "macko_t128_p1_r40": dict(threads_per_block=128, prefetch=1, max_registers=40),
    "macko_t512_p1_r40": dict(threads_per_block=512, prefetch=1, max_registers=40),
    "macko_t256_p0_r40": dict(threads_per_block=256, prefetch=0, max_registers=40),
    "macko_t256_p1_r32": dict(threads_per_block=256, prefetch=1, max_registers=32),
}
#: the variants of the H100 sweep (results/h100/tune_macko.json, before the int32 rewrite)
H100_METHODS = ["cublas", "cusparse", "csr_vector"] + list(VARIANTS)[:6]
FULL = dict(shapes=[[4096, 11008], [12288, 12288]], sparsities=[0.3, 0.5, 0.7, 0.9],
            dtype="float16",
            methods=["cublas", "cusparse", "csr_vector", "macko_t512_p1_r48", "macko_t256_p2_r0"]
            + list(VARIANTS)[6:],
            reps=60, warmup=10, seed=0)
QUICK = dict(shapes=[[4096, 11008]], sparsities=[0.5, 0.9], reps=30)


def config(quick: bool = False, **overrides) -> dict:
    return X.make_config(NAME, FULL, QUICK, quick, overrides)


def cli(p):
    p.add_argument("--methods", type=X.words,
                   help=f"comma-separated: cublas, cusparse, csr_vector, {', '.join(VARIANTS)} "
                        "(or any spmvlab.methods name)")
    p.add_argument("--shapes", type=X.shapes, help="ROWSxCOLS,...")
    p.add_argument("--sparsities", type=X.floats, help="comma-separated fractions")


def measure(cfg: dict) -> dict:
    from spmvlab import datasets, methods
    from spmvlab.encoders import macko as E
    rows = []
    jobs = [(s, p) for s in cfg["shapes"] for p in cfg["sparsities"]]
    for shape, sparsity in X.progress(jobs, total=len(jobs), desc=NAME):
        A = datasets.uniform(tuple(shape), sparsity, dtype=cfg["dtype"], seed=cfg["seed"])
        enc = {}

        def encoded(p, enc=enc):          # one encoding shared by the macko variants
            if "M" not in enc:
                enc["M"] = E.encode(p.A, dtype=p.dtype)
            return enc["M"]

        specs = [methods.format_method("macko", m, VARIANTS[m], encoded=encoded)
                 if m in VARIANTS else m for m in cfg["methods"]]
        rows += methods.measure(A, cfg["dtype"], specs, reps=cfg["reps"],
                                warmup=cfg["warmup"], extra=dict(sparsity=sparsity))
    return dict(rows=rows)


def plot(results: dict, fig_path: str) -> list[str]:
    plt = P.pyplot()
    rows = [r for r in results["rows"] if "median_us" in r]
    shapes = sorted({tuple(r["shape"]) for r in rows})
    fig, axes = plt.subplots(1, len(shapes), figsize=(P.PAGE_WIDTH, 3.2), squeeze=False,
                             sharey=True)
    for ax, shape in zip(axes[0], shapes):
        sub = [r for r in rows if tuple(r["shape"]) == shape]
        P.method_lines(ax, sub, "speedup_vs_cublas", methods=sorted({r["method"] for r in sub}),
                       names=str)          # the sweep's settings, as the results name them
        P.speedup_axis(ax, title=f"{shape[0]}x{shape[1]} fp16, cold L2",
                       ylabel="speedup over cuBLAS GEMV", log2=True, legend=False)
    P.legend_below(fig, axes[0], ncol=4, room=0.22)
    return P.savefig(fig, fig_path, tight=False)


def report(results: dict):
    P.print_table(results["rows"], [("shape", "shape", "")] + P.TIMING_COLUMNS)


if __name__ == "__main__":
    sys.exit(X.main(sys.modules[__name__]))
