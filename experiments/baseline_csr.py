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
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from spmvlab import experiment as X  # noqa: E402
from spmvlab.errors import BackendUnavailable  # noqa: E402

NAME = "baseline_csr"

FULL = dict(
    shapes=[[4096, 11008], [11008, 4096], [12288, 12288], [36864, 12288]],
    sparsities=[0.0, 0.5, 0.7, 0.9],
    dtypes=["float16", "float32"],
    reps=60, warmup=10, cold=True, flush="read", seed=0,
    # CSR methods are skipped above this many stored entries (None: never). 36864x12288 at
    # 0 % is 453M entries (3.6 GB fp32 CSR, ~20 GB host peak while building, ~1.5 min of
    # host time): the H100 machine handles it, so nothing is skipped by default.
    csr_max_nnz=None,
    tol={"float16": 1e-2, "float32": 1e-5},
)
QUICK = dict(FULL, shapes=[[4096, 11008]], sparsities=[0.5, 0.9], dtypes=["float32"], reps=20, warmup=5)

CSR_METHODS = ["numba_csr_scalar", "numba_csr_vector4", "numba_csr_vector1", "cusparse_csr"]
DENSE_METHODS = ["cublas_gemv", "cublas_sgemv", "numba_dense"]
METHOD_LABELS = {
    "numba_csr_scalar": "numba CSR scalar (thread/row)",
    "numba_csr_vector4": "numba CSR vector, vec=4",
    "numba_csr_vector1": "numba CSR vector, vec=1",
    "cusparse_csr": "cuSPARSE CSR",
    "cublas_gemv": "cuBLAS dense (GemmEx n=1)",
    "cublas_sgemv": "cuBLAS dense (Sgemv)",
    "numba_dense": "numba dense GEMV",
}
COLORS = {
    "numba_csr_scalar": "tab:gray", "numba_csr_vector4": "tab:blue", "numba_csr_vector1": "tab:cyan",
    "cusparse_csr": "tab:red", "cublas_gemv": "black", "cublas_sgemv": "tab:brown",
    "numba_dense": "tab:green",
}
DTYPE_STYLE = {"float16": dict(ls="-", marker="o"), "float32": dict(ls="--", marker="s")}


# ---------------------------------------------------------------------------------------------
# matrices
# ---------------------------------------------------------------------------------------------

def make_matrix(shape, sparsity, dtype, seed):
    """(CSRMatrix, source name)."""
    import reference.csr as R
    from spmvlab.datasets import uniform
    A = uniform(tuple(shape), sparsity, dtype=np.dtype(dtype), seed=seed)
    M = R.encode(A, dtype=np.dtype(dtype))
    return M, "spmvlab.datasets.uniform"


# ---------------------------------------------------------------------------------------------
# measurement
# ---------------------------------------------------------------------------------------------

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


def _builders(M, W, dtype, skip_csr):
    """(method, zero-arg constructor) in timing order."""
    from spmvlab import baselines as B
    from spmvlab.kernels import csr as KC
    out = []
    if not skip_csr:
        D = KC.to_device(M)
        out += [
            ("numba_csr_scalar", lambda: B.NumbaCSR(D, "scalar", KC.CSRConfig(), host=M)),
            ("numba_csr_vector4", lambda: B.NumbaCSR(D, "vector", KC.CSRConfig(vec=4), host=M)),
            ("numba_csr_vector1", lambda: B.NumbaCSR(D, "vector", KC.CSRConfig(vec=1), host=M)),
            ("cusparse_csr", lambda: B.CusparseCSR(M, dtype)),
        ]
    out.append(("cublas_gemv", lambda: B.DenseGemv(W(), dtype, impl="gemmex")))
    if np.dtype(dtype) == np.float32:
        out.append(("cublas_sgemv", lambda: B.DenseGemv(W(), dtype, impl="gemv")))
    out.append(("numba_dense", lambda: B.NumbaDense(W(), dtype)))
    return out


def measure(args) -> dict:
    from spmvlab import bench
    from spmvlab import baselines as B

    cfg = dict(QUICK if args.quick else FULL)
    if args.reps:
        cfg["reps"] = args.reps
    if args.shapes:
        cfg["shapes"] = [[int(v) for v in s.lower().split("x")] for s in args.shapes.split(",")]
    if args.sparsities:
        cfg["sparsities"] = [float(v) for v in args.sparsities.split(",")]
    if args.dtypes:
        cfg["dtypes"] = args.dtypes.split(",")
    if args.flush:
        cfg["flush"] = args.flush
    if args.csr_max_nnz is not None:
        cfg["csr_max_nnz"] = args.csr_max_nnz or None
    cases = [(tuple(s), sp_, dt) for s in cfg["shapes"] for sp_ in cfg["sparsities"] for dt in cfg["dtypes"]]
    print(f"{NAME}: {len(cases)} cases on {bench.device_info().get('name')}", file=sys.stderr)
    copy = bench.copy_bandwidth()
    print(f"device-to-device copy: {copy['tb_s']:.2f} TB/s", file=sys.stderr)

    rows, skipped, unavailable, sources = [], [], {}, set()
    for shape, sparsity, dt in X.progress(cases, desc=NAME):
        dtype = np.dtype(dt)
        M, src = make_matrix(shape, sparsity, dtype, cfg["seed"])
        sources.add(src)
        skip_csr = cfg["csr_max_nnz"] is not None and M.nnz > cfg["csr_max_nnz"]
        if skip_csr:
            skipped.append(dict(shape=list(shape), sparsity=sparsity, dtype=dt, methods=CSR_METHODS,
                                reason=f"nnz {M.nnz} > csr_max_nnz {cfg['csr_max_nnz']} (host encode "
                                       "time/memory); dense methods cover this case"))
        x = np.random.default_rng(cfg["seed"] + 1).uniform(-1, 1, shape[1]).astype(dtype)
        ref = B.reference_product(M, x)
        dense_cache = []

        def W():
            if not dense_cache:
                dense_cache.append(M.to_csr().toarray().astype(dtype))
            return dense_cache[0]

        base = dict(shape=f"{shape[0]}x{shape[1]}", rows=shape[0], cols=shape[1], sparsity=sparsity,
                    nnz=M.nnz, dtype=dt)
        for method, build in _builders(M, W, dtype, skip_csr):
            row = dict(base, method=method)
            try:
                obj = build()
            except BackendUnavailable as exc:
                unavailable.setdefault(method, str(exc))
                continue
            except Exception as exc:  # keep a long run going; the row says what broke
                rows.append(dict(row, error=f"build: {type(exc).__name__}: {exc}"))
                continue
            try:
                row["impl"] = getattr(obj, "impl", obj.name)
                obj.set_x(x)
                chk = obj.check(tol=cfg["tol"][dt], ref=ref)
                row.update(check_passed=chk.passed, max_rel_err=chk.max_rel_err, tol=chk.tol,
                           n_bad_rows=chk.n_bad)
                t = bench.time_fn(obj.run, reps=cfg["reps"], warmup=cfg["warmup"], cold=cfg["cold"],
                                  events=obj.events, flush=cfg["flush"])
                row.update(median_us=t.median_us, p10_us=t.p10_us, p90_us=t.p90_us, mean_us=t.mean_us,
                           reps=t.reps, bytes=obj.nbytes,
                           tb_s=bench.effective_bandwidth(obj.nbytes, t.median_us))
            except Exception as exc:
                row["error"] = f"{type(exc).__name__}: {exc}"
            rows.append(row)
            del obj
        dense_cache.clear()
        del M, ref
        _free_gpu()

    add_speedups(rows)
    return dict(config=cfg, rows=rows, copy_bandwidth=copy, skipped=skipped,
                unavailable=unavailable, matrix_source=sorted(sources),
                notes=["speedup_vs_X = median_us(X) / median_us(method), same shape/sparsity/dtype",
                       "cusparse_csr: cupyx.cusparse.spmv for float32, torch sparse CSR torch.mv for float16",
                       "cublas_gemv: cupy.dot -> cublasGemmEx (n=1, CUBLAS_COMPUTE_32F); "
                       "cublas_sgemv: cublasSgemv (float32 only)",
                       f"L2 flush mode {cfg['flush']!r}: 'write' leaves ~L2-size of dirty lines whose "
                       "write-back lands in the timed call (on the H100 +6..10 us vs 'read', which "
                       "matched warm timings for matrices larger than L2)"])


def add_speedups(rows):
    """speedup_vs_cusparse / speedup_vs_cublas on every timed row (None when missing)."""
    ref = {}
    for r in rows:
        if r.get("median_us") and r["method"] in ("cusparse_csr", "cublas_gemv"):
            ref[(r["shape"], r["sparsity"], r["dtype"], r["method"])] = r["median_us"]
    for r in rows:
        for m, key in (("cusparse_csr", "speedup_vs_cusparse"), ("cublas_gemv", "speedup_vs_cublas")):
            t = ref.get((r["shape"], r["sparsity"], r["dtype"], m))
            r[key] = (t / r["median_us"]) if (t and r.get("median_us")) else None
    return rows


# ---------------------------------------------------------------------------------------------
# plot and report (never measure)
# ---------------------------------------------------------------------------------------------

def plot(results: dict, fig_path: str):
    plt = X.pyplot()
    from matplotlib.lines import Line2D
    rows = [r for r in results["rows"] if r.get("median_us")]
    shapes = list(dict.fromkeys(r["shape"] for r in results["rows"]))
    methods = [m for m in METHOD_LABELS if any(r["method"] == m for r in rows)]
    dtypes = [d for d in ("float16", "float32") if any(r["dtype"] == d for r in rows)]
    ncol = max(1, len(shapes))
    fig, axes = plt.subplots(2, ncol, figsize=(max(3.6 * ncol + 1.0, 7.5), 6.8), squeeze=False)
    failed = []
    for j, shape in enumerate(shapes):
        ax_t, ax_s = axes[0, j], axes[1, j]
        for m in methods:
            for d in dtypes:
                pts = sorted((r["sparsity"], r["median_us"], r.get("speedup_vs_cublas"), r.get("check_passed", True))
                             for r in rows if r["shape"] == shape and r["method"] == m and r["dtype"] == d)
                if not pts:
                    continue
                xs = [100 * p[0] for p in pts]
                st = DTYPE_STYLE[d]
                ax_t.plot(xs, [p[1] for p in pts], color=COLORS[m], ms=4, lw=1.3, **st)
                sp_pts = [(x_, p[2]) for x_, p in zip(xs, pts) if p[2] is not None]
                if sp_pts:
                    ax_s.plot([a for a, _ in sp_pts], [b for _, b in sp_pts], color=COLORS[m], ms=4, lw=1.3, **st)
                for x_, p in zip(xs, pts):
                    if p[3] is False:
                        failed.append(f"{shape} {m} {d} {x_:.0f}%")
                        ax_t.plot([x_], [p[1]], "x", color="red", ms=9, mew=2)
        rows_, cols_ = shape.split("x")
        ax_t.set_title(f"W {rows_} × {cols_}")
        ax_t.set_yscale("log")
        ax_t.set_xlabel("sparsity (%)")
        if j == 0:
            ax_t.set_ylabel("time per product (µs, log)")
        ax_s.axhline(1.0, color="black", lw=0.8, alpha=0.6)
        ax_s.set_xlabel("sparsity (%)")
        if j == 0:
            ax_s.set_ylabel("speedup over cuBLAS GEMV\nof the same dtype (×)")
        for ax in (ax_t, ax_s):
            sps = sorted({100 * r["sparsity"] for r in results["rows"] if r["shape"] == shape})
            ax.set_xticks(sps)
            ax.grid(True, which="both", alpha=0.3)
    dev = (results.get("meta", {}).get("device") or {}).get("name", "unknown GPU")
    date = results.get("meta", {}).get("date_utc", "")[:10]
    cb = results.get("copy_bandwidth") or {}
    extra = f"; D2D copy {cb['tb_s']:.2f} TB/s" if cb.get("tb_s") else ""
    fig.suptitle(f"CSR SpMV baselines, uniform random sparsity, {dev} ({date}), "
                 f"median of {results.get('config', {}).get('reps', '?')}, L2 flushed{extra}", fontsize=10)
    handles = [Line2D([], [], color=COLORS[m], lw=2, label=METHOD_LABELS[m]) for m in methods]
    handles += [Line2D([], [], color="0.3", label=d, ms=4, **DTYPE_STYLE[d]) for d in dtypes]
    if failed:
        handles.append(Line2D([], [], ls="", marker="x", color="red", ms=8, mew=2, label="correctness check failed"))
    fig.legend(handles=handles, loc="lower center", ncol=min(5, len(handles)), frameon=False,
               bbox_to_anchor=(0.5, -0.02))
    fig.tight_layout(rect=(0, 0.08, 1, 0.95))
    out = X.savefig(fig, fig_path)
    plt.close(fig)
    return out


def report(results: dict):
    """Short table: per shape/dtype/method, median µs and TB/s at each sparsity."""
    rows = results["rows"]
    sps = sorted({r["sparsity"] for r in rows})
    table = []
    for shape in dict.fromkeys(r["shape"] for r in rows):
        for d in dict.fromkeys(r["dtype"] for r in rows):
            for m in METHOD_LABELS:
                sel = {r["sparsity"]: r for r in rows if r["shape"] == shape and r["dtype"] == d and r["method"] == m}
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
    print(X.format_table(table, cols))


def _extra_args(p):
    p.add_argument("--reps", type=int, default=None, help="timed calls per method (default 60, quick 20)")
    p.add_argument("--shapes", default=None, help="comma-separated RxC list, e.g. 4096x11008,12288x12288")
    p.add_argument("--sparsities", default=None, help="comma-separated fractions, e.g. 0,0.5,0.9")
    p.add_argument("--dtypes", default=None, help="comma-separated, e.g. float16,float32")
    p.add_argument("--flush", choices=("write", "read"), default=None,
                   help="L2 flush before each timed call: read (default) or overwrite a 2xL2 buffer")
    p.add_argument("--csr-max-nnz", type=int, default=None,
                   help="skip CSR methods above this many nonzeros (0: never skip)")


if __name__ == "__main__":
    import warnings
    from numba.core.errors import NumbaPerformanceWarning
    warnings.simplefilter("ignore", NumbaPerformanceWarning)  # small grids are intended here
    warnings.filterwarnings("ignore", message=".*Grid size")   # (numba-cuda's own class of it)
    sys.exit(X.main(NAME, description=__doc__.splitlines()[0], measure=measure, plot=plot,
                    extra=_extra_args, report=report))
