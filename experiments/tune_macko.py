"""MACKO kernel configuration sweep (threads per block x prefetch x register cap, and warps
per row) beside the baselines.

Chooses the default ``MackoConfig``: for each shape and sparsity, fp16, cold L2, every
variant is checked on the GPU and timed; the figure shows speedup over cuBLAS per variant.
``methods`` are the one-warp-per-row variants (and baselines); ``split_methods`` the
several-warps-per-row ones (:data:`SPLIT_VARIANTS`, ``MackoConfig.warps_per_row``; their
rows' ``format_bytes`` and ``tb_s`` count the split columns, ``layout_bytes``), a key the
runs before them lack. The macko variants of one matrix share one encoding.

    python experiments/tune_macko.py [--quick] [--plot-only] [--methods a,b,...]
                                     [--split-methods a,b,...] [--shapes 4096x11008,...]
                                     [--sparsities 0.3,0.5,...]
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
#: several warps per row (the default's other settings); kept apart from VARIANTS so that the
#: committed runs' ``methods`` (built from VARIANTS) stay what they were
SPLIT_VARIANTS = {
    "macko_w2": dict(threads_per_block=256, prefetch=1, max_registers=40, warps_per_row=2),
    "macko_w4": dict(threads_per_block=256, prefetch=1, max_registers=40, warps_per_row=4),
    "macko_w2_t512": dict(threads_per_block=512, prefetch=1, max_registers=40, warps_per_row=2),
    "macko_w4_t512": dict(threads_per_block=512, prefetch=1, max_registers=40, warps_per_row=4),
    "macko_w2_p2": dict(threads_per_block=256, prefetch=2, max_registers=None, warps_per_row=2),
}
#: the variants of the H100 sweep (results/h100/tune_macko.json, before the int32 rewrite)
H100_METHODS = ["cublas", "cusparse", "csr_vector"] + list(VARIANTS)[:6]
FULL = dict(shapes=[[4096, 11008], [12288, 12288]], sparsities=[0.3, 0.5, 0.7, 0.9],
            dtype="float16",
            methods=["cublas", "cusparse", "csr_vector", "macko_t512_p1_r48", "macko_t256_p2_r0"]
            + list(VARIANTS)[6:],
            reps=60, warmup=10, seed=0, split_methods=["macko_w2", "macko_w4"])
QUICK = dict(shapes=[[4096, 11008]], sparsities=[0.5, 0.9], reps=30)
#: the warps-per-row comparison (W = 1, 2, 4 beside cuBLAS), saved as tune_macko_split:
#: ``python experiments/tune_macko.py --methods cublas,macko_t256_p1_r40
#: --split-methods macko_w2,macko_w4``
SPLIT_RUN = dict(methods=["cublas", "macko_t256_p1_r40"], split_methods=["macko_w2", "macko_w4"])
RUNS = [{}, SPLIT_RUN]


def config(quick: bool = False, **overrides) -> dict:
    return X.make_config(NAME, FULL, QUICK, quick, overrides)


def results_name(cfg: dict) -> str:
    """``tune_macko_split`` for :data:`SPLIT_RUN`'s methods, else ``tune_macko``."""
    return NAME + "_split" if list(cfg["methods"]) == SPLIT_RUN["methods"] else NAME


def cli(p):
    p.add_argument("--methods", type=X.words,
                   help=f"comma-separated: cublas, cusparse, csr_vector, {', '.join(VARIANTS)} "
                        "(or any spmvlab.methods name)")
    p.add_argument("--split-methods", dest="split_methods", type=X.words,
                   help=f"comma-separated, several warps per row: {', '.join(SPLIT_VARIANTS)} "
                        "('none': no such variants)")
    p.add_argument("--shapes", type=X.shapes, help="ROWSxCOLS,...")
    p.add_argument("--sparsities", type=X.floats, help="comma-separated fractions")


def method_names(cfg: dict) -> list[str]:
    """The methods a run times: ``methods`` then ``split_methods`` (absent in older runs)."""
    split = [m for m in cfg.get("split_methods", []) if m != "none"]
    return list(cfg["methods"]) + [m for m in split if m not in cfg["methods"]]


def measure(cfg: dict) -> dict:
    from spmvlab import datasets, methods
    from spmvlab.encoders import macko as E
    variants = {**VARIANTS, **SPLIT_VARIANTS}
    rows = []
    jobs = [(s, p) for s in cfg["shapes"] for p in cfg["sparsities"]]
    for shape, sparsity in X.progress(jobs, total=len(jobs), desc=NAME):
        A = datasets.uniform(tuple(shape), sparsity, dtype=cfg["dtype"], seed=cfg["seed"])
        enc = {}

        def encoded(p, enc=enc):          # one encoding shared by the macko variants
            if "M" not in enc:
                enc["M"] = E.encode(p.A, dtype=p.dtype)
            return enc["M"]

        specs = [methods.format_method("macko", m, variants[m], encoded=encoded)
                 if m in variants else m for m in method_names(cfg)]
        rows += methods.measure(A, cfg["dtype"], specs, reps=cfg["reps"],
                                warmup=cfg["warmup"], extra=dict(sparsity=sparsity))
    return dict(rows=rows)


def plot(results: dict, fig_path: str) -> list[str]:
    plt = P.pyplot()
    rows = [r for r in results["rows"] if "median_us" in r]
    shapes = sorted({tuple(r["shape"]) for r in rows})
    fig, axes = plt.subplots(1, len(shapes), figsize=(6 * len(shapes), 4.2), squeeze=False)
    for ax, shape in zip(axes[0], shapes):
        sub = [r for r in rows if tuple(r["shape"]) == shape]
        P.method_lines(ax, sub, "speedup_vs_cublas", methods=sorted({r["method"] for r in sub}),
                       label=str)
        P.speedup_axis(ax, title=f"{shape[0]}x{shape[1]} fp16, cold L2",
                       ylabel="speedup over cuBLAS GEMV", legend_size=7)
    return P.savefig(fig, fig_path)


def report(results: dict):
    P.print_table(results["rows"], [("shape", "shape", "")] + P.TIMING_COLUMNS)


if __name__ == "__main__":
    sys.exit(X.main(sys.modules[__name__]))
