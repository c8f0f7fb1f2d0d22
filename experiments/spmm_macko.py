"""SpMM (Y = W @ X, X of N columns, fp16, cold L2): MACKO and CSR against cuBLAS GEMM.

The batched decoding of LLM serving multiplies each weight matrix by N = 2..64 activation
columns. For each shape, sparsity and N, every method is checked on the GPU against the
float64 product and timed (median, L2 flushed before every call): MACKO SpMM (X's column
tile copied into shared memory when it fits, and ``macko[spmm_smem=False]``, gathering X
from global memory; ``macko[spmm_mma=True]``, decoding 16 rows at a time into a dense tile
multiplied on the tensor cores) and CSR SpMM (register tiles: each decoded entry is multiplied by N
columns of X at once, ``spmvlab/kernels/_spmm.py``), cuBLAS GEMM fp16 (CuPy, GemmEx with fp32 compute) and, for
N = 1, the same kernels' SpMV beside it (``spmv_*`` rows) to compare SpMM's cost with SpMV's.
``fp32_methods`` at ``fp32_ks`` add float32 rows (CSR SpMM and its SpMV, cuBLAS) on the same
matrices; the plot draws the fp16 rows.
cuSPARSE SpMM is far slower than cuBLAS at these shapes (``../shared/GPU_NOTES.md``):
it is measured at N = 8 only.

    python experiments/spmm_macko.py [--quick] [--plot-only] [--shapes ...] [--sparsities ...] [--ks ...]
                                     [--methods cublas,macko,...] [--merge]
"""
from __future__ import annotations

import sys

from spmvlab import experiment as X
from spmvlab import plotting as P

NAME = "spmm_macko"
NEEDS_GPU = True
SPLIT_KEYS = ("shapes", "sparsities", "ks")   # measure in parts with --merge
METHODS = ["cublas", "macko", "macko[spmm_smem_threads=512]", "macko[spmm_smem=False]",
           "macko[spmm_mma=True]", "csr_vector"]
#: float32 rows (the same matrices' values in float32): CSR SpMM at ``fp32_ks`` beside its own
#: SpMV and cuBLAS, for the CSR goal of issue 8 (SpMM at N = 8 within 1.5x of SpMV)
FP32_METHODS = ["cublas", "csr_vector"]
#: MACKO's SpMM settings (no methods of their own): shades of MACKO's colour, orange for the
#: shared-memory kernels, browns for the tensor-core ones; the methods as ``plotting.METHODS``.
#: Three are for saved runs only: 512-column windows lost to 1024 in every cell, and two
#: designs lost their A/B and left the code: the two-stage tensor-core kernel
#: (``spmm_mma_double``, results/h200/spmm_macko.json) and X held as float32 in shared
#: memory (``spmm_smem_fp32``); their runs and numbers are in docs/performance.md
VARIANTS = {"macko[spmm_smem_threads=512]": ("MACKO, 512 threads", "#fdae6b", "x", "--"),
            "macko[spmm_smem_fp32=True]": ("MACKO, X as float32", "#fd8d3c", "s", "-."),
            "macko[spmm_smem=False]": ("MACKO, X from global memory", "#f16913", "v", ":"),
            "macko[spmm_mma=True]": ("MACKO MMA, window 1024", "#a63603", "D", "-"),
            "macko[spmm_mma=True,spmm_mma_window=512]": ("MACKO MMA, window 512", "#d94801", "d", "--"),
            "macko[spmm_mma=True,spmm_mma_double=True,spmm_mma_window=512]":
                ("MACKO MMA, window 512, 2 stages", "#5a1e02", "P", "-.")}
#: drawn hollow and larger: it coincides with the two-stage kernel drawn over it
HOLLOW = {"macko[spmm_mma=True,spmm_mma_window=512]"}
FULL = dict(shapes=[[4096, 11008], [12288, 12288]], sparsities=[0.5, 0.7, 0.9],
            ks=[1, 2, 4, 8, 16, 32, 64], dtype="float16", methods=METHODS, cusparse_k=[8],
            reps=50, warmup=5, seed=0, fp32_methods=FP32_METHODS, fp32_ks=[8])
QUICK = dict(shapes=[[4096, 11008]], sparsities=[0.5], ks=[1, 8, 32], reps=20)


def config(quick: bool = False, **overrides) -> dict:
    return X.make_config(NAME, FULL, QUICK, quick, overrides)


def method_list(text: str) -> list[str]:
    """Comma-separated method names; commas inside a name's [...] config stay in the name."""
    out, depth, cur = [], 0, ""
    for ch in text:
        depth += (ch == "[") - (ch == "]")
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    return [m for m in out + [cur.strip()] if m]


def cli(p):
    p.add_argument("--methods", type=method_list,
                   help="fp16 methods, comma-separated (keep cublas: speedups are against it)")
    p.add_argument("--ks", type=X.ints, help="right-hand-side counts, e.g. 1,8,64")
    p.add_argument("--shapes", type=X.shapes, help="comma-separated RxC")
    p.add_argument("--sparsities", type=X.floats, help="comma-separated fractions")


def measure(cfg: dict) -> dict:
    """Per shape and sparsity one matrix (built, with its dense copy and MACKO and CSR
    encodings, in a worker process while the previous one is timed); each N gets its own X
    (``Problem.with_rhs``, seed 1 as ``methods.measure`` draws it) and shares the rest."""
    from spmvlab import methods
    rows = []
    jobs = [dict(shape=list(s), sparsity=sp, dtype=cfg["dtype"], seed=cfg["seed"], encode=["macko", "csr"])
            for s in cfg["shapes"] for sp in cfg["sparsities"]]
    for job, p1 in X.progress(X.problems(jobs, dense=True), total=len(jobs), desc=NAME):
        sparsity = job["sparsity"]
        for k in (int(v) for v in cfg["ks"]):
            names = cfg["methods"] + (["cusparse"] if k in cfg["cusparse_k"] else [])
            rows += methods.measure_problem(p1.with_rhs(k), names, reps=cfg["reps"],
                                            warmup=cfg["warmup"], extra=dict(sparsity=sparsity))
            if k == 1:   # the same kernels' SpMV, for SpMM's cost relative to SpMV
                spmv = methods.measure_problem(p1, [m for m in cfg["methods"] if m != "cublas"],
                                               reps=cfg["reps"], warmup=cfg["warmup"],
                                               extra=dict(sparsity=sparsity))
                for r in spmv:
                    r["method"] = "spmv_" + r["method"]
                rows += spmv
        f32 = cfg.get("fp32_methods") or []
        if f32 and cfg.get("fp32_ks"):
            q1 = methods.Problem.make(p1.A, "float32")
            for k in (int(v) for v in cfg["fp32_ks"]):
                rows += methods.measure_problem(q1.with_rhs(k), f32, reps=cfg["reps"],
                                                warmup=cfg["warmup"], extra=dict(sparsity=sparsity))
            spmv = methods.measure_problem(q1, [m for m in f32 if m != "cublas"], reps=cfg["reps"],
                                           warmup=cfg["warmup"], extra=dict(sparsity=sparsity))
            for r in spmv:
                r["method"] = "spmv_" + r["method"]
            rows += spmv
        del p1
        X.checkpoint(dict(rows=rows))            # a run stopped by a time limit keeps these
    return dict(rows=rows)


def plot(results: dict, fig_path: str) -> list[str]:
    plt = P.pyplot()
    cfg = results["config"]
    rows = [r for r in results["rows"] if "median_us" in r and r["kind"] == "spmm"
            and r["dtype"] == cfg["dtype"]]
    shapes = [tuple(s) for s in cfg["shapes"]]
    fig, axes = plt.subplots(len(shapes), len(cfg["sparsities"]), sharex=True, sharey=True,
                             figsize=(P.PAGE_WIDTH, 2.0 * len(shapes) + 1.3), squeeze=False)
    ratios = []
    for i, shape in enumerate(shapes):
        for j, sparsity in enumerate(cfg["sparsities"]):
            ax = axes[i][j]
            sub = [r for r in rows if tuple(r["shape"]) == shape and r["sparsity"] == sparsity]
            base = {r["k"]: r["median_us"] for r in sub if r["method"] == "cublas"}
            for m in [m for m in cfg["methods"] + ["cusparse"] if m != "cublas"]:
                pts = sorted((r["k"], base[r["k"]] / r["median_us"]) for r in sub
                             if r["method"] == m and r["k"] in base)
                if not pts:
                    continue
                if m in VARIANTS:
                    name, color, marker, ls = VARIANTS[m]
                    kw = P.line_style(m, label=name, color=color, marker=marker, linestyle=ls,
                                      markersize=3.5, linewidth=1.1)
                    if m in HOLLOW:
                        kw.update(markerfacecolor="none", markersize=5.5)
                else:
                    kw = P.line_style(m, markersize=4, linewidth=1.3, zorder=3)
                ax.plot([a for a, _ in pts], [b for _, b in pts], **kw)
                ratios += [b for _, b in pts]
            if (i, j) != (0, 0):
                ax.axhline(1.0, color="black", lw=0.9, ls="--", zorder=1)
            ax.set_xscale("log", base=2)
            ax.set_title(f"{shape[0]}x{shape[1]}, {100 * sparsity:.0f} % sparse")
            if i == len(shapes) - 1:
                ax.set_xlabel("right-hand sides N")
            if j == 0:
                ax.set_ylabel("speedup over cuBLAS GEMM")
            ks = sorted(base)
            ax.set_xticks(ks, [str(k) for k in ks])
            ax.xaxis.set_minor_locator(P._null())
    P.ratio_axis(axes[0][0], ratios, line_label="cuBLAS GEMM (fp16)")
    fig.suptitle(f"SpMM fp16, cold L2, {P.device_name(results)}")
    P.legend_below(fig, axes.flat, ncol=3, room=None)   # one legend for all panels, under them
    return P.savefig(fig, fig_path, tight=False)


def report(results: dict):
    cols = [("shape", "shape", ""), ("sparsity", "sparsity", ".2f"), ("dtype", "dtype", ""), ("k", "N", ""),
            ("method", "method", ""), ("median_us", "median us", ".1f"), ("tb_s", "TB/s", ".2f"),
            ("speedup_vs_cublas", "x cuBLAS", ".2f"), ("check_passed", "ok", "")]
    P.print_table(results["rows"], cols)


if __name__ == "__main__":
    sys.exit(X.main(sys.modules[__name__]))
