"""Baseline CSR SpMV vs cuSPARSE vs cuBLAS dense GEMV on LLM-sized uniform random matrices.

For every shape x sparsity x dtype: a ``spmvlab.datasets.uniform`` matrix, encoded with
``reference.csr.encode``; every method is first checked on the GPU against the float64
scipy product (worst |y - exact| / sum_j |a_ij x_j| <= 1e-2 for float16, 1e-5 for float32),
then timed with CUDA events, L2 flushed before every call (``spmvlab.bench.time_fn``).

Methods: numba CSR scalar (thread per row), numba CSR vector (warp per row, vec=4 and
vec=1), cuSPARSE CSR (cupyx for float32, torch sparse CSR for float16), cuBLAS dense GEMV
(``cupy.dot`` -> cublasGemmEx, fp32 compute; plus cublasSgemv for float32), numba dense GEMV.

Bytes moved: CSR methods count the format's bytes (indptr + indices + values) + x + y;
dense methods rows*cols*itemsize + x + y. Speedups are t_reference / t_method for the same
shape, sparsity and dtype (> 1: faster than the reference).

    python experiments/baseline_csr.py [--quick] [--plot-only] [--out ...] [--fig ...]
"""
from __future__ import annotations

import gc
import sys

import numpy as np

from spmvlab import experiment as X
from spmvlab import plotting as P

NAME = "baseline_csr"
NEEDS_GPU = True
SPLIT_KEYS = ("shapes", "sparsities", "dtypes")   # measure in parts with --merge

FULL = dict(
    shapes=[[4096, 11008], [11008, 4096], [12288, 12288], [36864, 12288]],
    sparsities=[0.0, 0.5, 0.7, 0.9],
    dtypes=["float16", "float32"],
    reps=60, warmup=10, cold=True, flush="read", seed=0,
    # CSR methods are skipped above this many stored entries (None: never). 36864x12288 at
    # 0 % is 453M entries (3.6 GB of fp32 CSR, several times that in host memory while
    # building): the H100 machine handles it, so nothing is skipped by default.
    csr_max_nnz=None,
)
QUICK = dict(shapes=[[4096, 11008]], sparsities=[0.5, 0.9], dtypes=["float32"], reps=20, warmup=5)

CSR_METHODS = ["csr_scalar", "csr_vector", "csr_vector1", "cusparse"]
#: the methods timed, in this order (names, colours and markers: ``plotting.METHODS``)
TIMED = ["csr_scalar", "csr_vector", "csr_vector1", "cusparse", "cublas", "cublas_sgemv", "numba_dense"]
#: float16 solid with filled markers, float32 dashed with hollow ones
DTYPE_STYLE = {"float16": dict(ls="-"), "float32": dict(ls="--", mfc="none")}


# ---------------------------------------------------------------------------------------------
# measurement
# ---------------------------------------------------------------------------------------------

def config(quick: bool = False, **overrides) -> dict:
    """``csr_max_nnz`` 0 means never skip (as None)."""
    cfg = X.make_config(NAME, FULL, QUICK, quick, overrides)
    cfg["csr_max_nnz"] = cfg["csr_max_nnz"] or None
    return cfg


def cli(p):
    p.add_argument("--reps", type=int, help="timed calls per method")
    p.add_argument("--shapes", type=X.shapes, help="comma-separated RxC list, e.g. 4096x11008,12288x12288")
    p.add_argument("--sparsities", type=X.floats, help="comma-separated fractions, e.g. 0,0.5,0.9")
    p.add_argument("--dtypes", type=X.words, help="comma-separated, e.g. float16,float32")
    p.add_argument("--flush", choices=("write", "read"),
                   help="L2 flush before each timed call: read, or overwrite a 2xL2 buffer")
    p.add_argument("--csr-max-nnz", type=int, help="skip CSR methods above this many nonzeros (0: never skip)")


def measure(cfg: dict) -> dict:
    import warnings

    from numba.core.errors import NumbaPerformanceWarning

    from spmvlab import bench, datasets, methods, runinfo
    warnings.simplefilter("ignore", NumbaPerformanceWarning)  # small grids are intended here
    warnings.filterwarnings("ignore", message=".*Grid size")   # (numba-cuda's own class of it)
    cases = [(tuple(s), sp_, dt) for s in cfg["shapes"] for sp_ in cfg["sparsities"] for dt in cfg["dtypes"]]
    print(f"{NAME}: {len(cases)} cases on {runinfo.device_info().get('name')}", file=sys.stderr)
    copy = bench.copy_bandwidth()
    print(f"device-to-device copy: {copy['tb_s']:.2f} TB/s", file=sys.stderr)

    rows, skipped = [], []
    for shape, sparsity, dt in X.progress(cases, desc=NAME):
        A = datasets.uniform(shape, sparsity, dtype=np.dtype(dt), seed=cfg["seed"])
        p = methods.Problem.make(A, dt, seed=cfg["seed"] + 1, dist="uniform")
        skip_csr = cfg["csr_max_nnz"] is not None and A.nnz > cfg["csr_max_nnz"]
        names = [m for m in TIMED if not (skip_csr and m in CSR_METHODS)
                 and not (m == "cublas_sgemv" and dt != "float32")]
        if skip_csr:
            skipped.append(dict(shape=list(shape), sparsity=sparsity, dtype=dt, methods=CSR_METHODS,
                                reason=f"nnz {A.nnz} > csr_max_nnz {cfg['csr_max_nnz']} (host encode "
                                       "time/memory); dense methods cover this case"))
        rows += methods.measure_problem(p, names, reps=cfg["reps"], warmup=cfg["warmup"],
                                        cold=cfg["cold"], flush=cfg["flush"], keep_going=True,
                                        extra=dict(sparsity=sparsity))
        del A, p
        _free_gpu()
        X.checkpoint(dict(rows=rows, copy_bandwidth=copy, skipped=skipped))  # kept if stopped
    unavailable = {r["method"]: r["error"] for r in rows if "BackendUnavailable" in r.get("error", "")}
    rows = [r for r in rows if "BackendUnavailable" not in r.get("error", "")]
    return dict(rows=rows, copy_bandwidth=copy, skipped=skipped,
                unavailable=unavailable, matrix_source=["spmvlab.datasets.uniform"],
                notes=["speedup_vs_X = median_us(X) / median_us(method), same shape/sparsity/dtype",
                       "cusparse: cupyx.cusparse.spmv for float32, torch sparse CSR torch.mv for float16",
                       "cublas: cupy.dot -> cublasGemmEx (n=1, CUBLAS_COMPUTE_32F); "
                       "cublas_sgemv: cublasSgemv (float32 only)",
                       f"L2 flush mode {cfg['flush']!r}: 'write' leaves ~L2-size of dirty lines whose "
                       "write-back lands in the timed call (on the H100 +6..10 us vs 'read', which "
                       "matched warm timings for matrices larger than L2)"])


def _free_gpu():
    gc.collect()
    for mod in ("cupy", "torch"):
        if mod in sys.modules:
            try:
                if mod == "cupy":
                    sys.modules["cupy"].get_default_memory_pool().free_all_blocks()
                else:
                    sys.modules["torch"].cuda.empty_cache()
            except Exception:
                pass


# ---------------------------------------------------------------------------------------------
# plot and report (never measure)
# ---------------------------------------------------------------------------------------------

def _shape(r) -> str:
    return "x".join(str(v) for v in r["shape"])


#: the dense methods take the same time: larger markers first, so each shows around the next
_SIZE = {"cublas": 6.0, "cublas_sgemv": 4.8}


def plot(results: dict, fig_path: str):
    """Per shape a column: time per product (top) and speedup over cuBLAS of the same dtype
    (bottom, one ratio axis for the row); colour and marker the method, line the dtype."""
    plt = P.pyplot()
    from matplotlib.lines import Line2D
    rows = [r for r in results["rows"] if r.get("median_us")]
    shapes = list(dict.fromkeys(_shape(r) for r in results["rows"]))
    methods = [m for m in TIMED if any(r["method"] == m for r in rows)]
    dtypes = [d for d in ("float16", "float32") if any(r["dtype"] == d for r in rows)]
    ncol = max(1, len(shapes))
    fig, axes = plt.subplots(2, ncol, figsize=(P.PAGE_WIDTH, 5.0), squeeze=False, sharey="row",
                             sharex=True)
    failed = []
    for j, shape in enumerate(shapes):
        ax_t, ax_s = axes[0, j], axes[1, j]
        for m in methods:
            for d in dtypes:
                pts = sorted((r["sparsity"], r["median_us"], r.get("speedup_vs_cublas"), r.get("check_passed", True))
                             for r in rows if _shape(r) == shape and r["method"] == m and r["dtype"] == d)
                if not pts:
                    continue
                xs = [100 * p[0] for p in pts]
                st = P.line_style(m, **DTYPE_STYLE[d], linewidth=1.1, markersize=_SIZE.get(m, 3.5))
                ax_t.plot(xs, [p[1] for p in pts], **st)
                sp_pts = [(x_, p[2]) for x_, p in zip(xs, pts) if p[2] is not None]
                if sp_pts and m != "cublas":                  # cuBLAS is the 1x line
                    ax_s.plot([a for a, _ in sp_pts], [b for _, b in sp_pts], **st)
                for x_, p in zip(xs, pts):
                    if p[3] is False:
                        failed.append(f"{shape} {m} {d} {x_:.0f}%")
                        ax_t.plot([x_], [p[1]], "x", color="red", ms=7, mew=1.5, zorder=5)
        rows_, cols_ = shape.split("x")
        ax_t.set_title(f"W {rows_} × {cols_}")
        ax_t.set_yscale("log")
        ax_s.set_xlabel("sparsity (%)")
        if j:
            ax_s.axhline(1.0, color="black", lw=0.9, ls="--", zorder=1)
        sps = sorted({100 * r["sparsity"] for r in results["rows"] if _shape(r) == shape})
        ax_s.set_xticks(sps, [f"{v:g}" for v in sps])
    P.ratio_axis(axes[1, 0], [l_.get_ydata()[i] for ax in axes[1] for l_ in ax.get_lines()
                              for i in range(len(l_.get_ydata()))])
    axes[0, 0].set_ylabel("time per product (µs)")
    axes[1, 0].set_ylabel("speedup over cuBLAS\n(same dtype)")
    dev = P.device_name(results)
    date = results.get("meta", {}).get("date_utc", "")[:10]
    cb = results.get("copy_bandwidth") or {}
    extra = f"; D2D copy {cb['tb_s']:.2f} TB/s" if cb.get("tb_s") else ""
    fig.suptitle(f"CSR SpMV baselines, uniform random sparsity, {dev} ({date}),\n"
                 f"median of {results.get('config', {}).get('reps', '?')}, L2 flushed{extra}; "
                 "cuBLAS: GemmEx with n = 1")
    handles = [Line2D([], [], **P.line_style(m, markersize=_SIZE.get(m, 3.5))) for m in methods]
    handles += [Line2D([], [], color="0.3", marker="o", ms=3.5, label=d, **DTYPE_STYLE[d]) for d in dtypes]
    if failed:
        handles.append(Line2D([], [], ls="", marker="x", color="red", ms=6, mew=1.5,
                              label="correctness check failed"))
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    fig.legend(handles=handles, loc="lower center", ncol=min(5, len(handles)), frameon=False,
               bbox_to_anchor=(0.5, 0.0))
    return P.savefig(fig, fig_path, tight=False)


def report(results: dict):
    """Short table: per shape/dtype/method, median µs and TB/s at each sparsity."""
    rows = results["rows"]
    sps = sorted({r["sparsity"] for r in rows})
    table = []
    for shape in dict.fromkeys(_shape(r) for r in rows):
        for d in dict.fromkeys(r["dtype"] for r in rows):
            for m in TIMED:
                sel = {r["sparsity"]: r for r in rows if _shape(r) == shape and r["dtype"] == d and r["method"] == m}
                if not sel:
                    continue
                t = dict(shape=shape, dtype=d, method=m)
                for s in sps:
                    r = sel.get(s)
                    if r is None:
                        t[f"{s:.0%}"] = "-"
                    elif r.get("error"):
                        t[f"{s:.0%}"] = "error"
                    else:
                        ok = "" if r.get("check_passed", True) else " FAIL"
                        t[f"{s:.0%}"] = f"{r['median_us']:.1f} / {r['tb_s']:.2f}{ok}"
                table.append(t)
    cols = [("shape", "shape", ""), ("dtype", "dtype", ""), ("method", "method", "")]
    cols += [(f"{s:.0%}", f"{s:.0%}: µs / TB/s", "") for s in sps]
    cb = results.get("copy_bandwidth") or {}
    if cb.get("tb_s"):
        print(f"device-to-device copy: {cb['tb_s']:.2f} TB/s")
    for s in results.get("skipped", []):
        print(f"skipped {s['shape']} {s['sparsity']:.0%} {s['dtype']}: {s['reason']}")
    for m, why in (results.get("unavailable") or {}).items():
        print(f"unavailable {m}: {why}")
    errs = [r for r in rows if r.get("error")]
    for r in errs:
        print(f"error {r['shape']} {r['sparsity']:.0%} {r['dtype']} {r['method']}: {r['error']}")
    bad = [r for r in rows if r.get("check_passed") is False]
    print(f"correctness: {sum(1 for r in rows if r.get('check_passed'))} passed, {len(bad)} failed")
    print(P.format_table(table, cols))


if __name__ == "__main__":
    sys.exit(X.main(sys.modules[__name__]))
