"""Time every SpMV method on one matrix: the building block of the speedup experiments.

``measure_matrix(A, dtype, methods, ...)`` checks each method's result on the GPU against
the float64 product of the stored values, then times it with CUDA events (L2 flushed before
every call when ``cold``), and returns one row per method. Methods are named:

``cublas``        dense GEMV through cuBLAS (``cupy.dot`` -> GemmEx, fp32 compute)
``cusparse``      CSR SpMV through cuSPARSE (CuPy for float32/64, torch for float16)
``csr_vector``    numba CSR, warp per row, 4-entry vector loads
``csr_scalar``    numba CSR, thread per row
``numba_dense``   numba dense GEMV (fallback when CuPy is missing)
``macko``         numba MACKO, default config; ``macko_t{128,256,512}_p{0,1,2}_r{0,40,48}`` variants

Bytes moved per call = bytes the format stores + x + y (dense: rows*cols*itemsize + x + y).
"""
from __future__ import annotations

import gc

import numpy as np

from reference._common import OptionError, problem

CHECK_TOL = {"float16": 2e-3, "float32": 1e-5, "float64": 1e-12}


def _relative_error(y, exact, S) -> float:
    """max |y - exact| / (sum |a||x| + tiny): the per-row error relative to the row's scale."""
    y = np.asarray(y, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        err = np.abs(y - exact) / (S + 1e-30)
    return float(np.nanmax(err)) if err.size else 0.0


def _macko_config(name: str):
    """``macko`` -> default config; ``macko_t128_p0_r40`` -> 128 threads per block, no
    prefetch, at most 40 registers (``r0``: no cap)."""
    from spmvlab.kernels.macko import MackoConfig
    opts = {}
    for part in name.split("_")[1:]:
        if part[0] == "t":
            opts["threads_per_block"] = int(part[1:])
        elif part[0] == "p":
            opts["prefetch"] = int(part[1:])
        elif part[0] == "r":
            opts["max_registers"] = int(part[1:]) or None
        else:
            raise OptionError(problem("method", "macko[_t<threads>][_p<0|1|2>][_r<regs>]", repr(name)))
    return MackoConfig(**opts)


def build_method(name: str, A, dtype, x, W_dense=None):
    """(run callable, events kind, bytes moved, format bytes, result getter) for one method."""
    from spmvlab import baselines
    from spmvlab._cuda import cuda
    dt = np.dtype(dtype)
    n_rows, n_cols = A.shape
    xy_bytes = (n_rows + n_cols) * dt.itemsize
    if name == "cublas":
        b = baselines.DenseGemv(W_dense if W_dense is not None else A.toarray(), dtype=dt, x=x)
        return b.run, b.events, b.nbytes, b.nbytes - xy_bytes, b.result
    if name == "cusparse":
        b = baselines.CusparseCSR(A, dtype=dt, x=x)
        return b.run, b.events, b.nbytes, b.nbytes - xy_bytes, b.result
    if name == "numba_dense":
        from spmvlab.kernels import dense
        D = dense.to_device(W_dense if W_dense is not None else A.toarray().astype(dt))
        d_x = cuda.to_device(x)
        d_y = cuda.device_array(n_rows, dtype=dt)
        fmt = n_rows * n_cols * dt.itemsize
        return (lambda: dense.gemv(D, d_x, out=d_y)), "numba", fmt + xy_bytes, fmt, d_y.copy_to_host
    if name.startswith("csr_"):
        import reference.csr as R
        from spmvlab.kernels import csr as K
        M = R.encode(A, dtype=dt)
        D = K.to_device(M)
        variant = name.split("_")[1]
        d_x = cuda.to_device(x)
        d_y = cuda.device_array(n_rows, dtype=dt)
        return ((lambda: K.spmv(D, d_x, out=d_y, variant=variant)), "numba", M.nbytes + xy_bytes,
                M.nbytes, d_y.copy_to_host)
    if name.startswith("macko"):
        from spmvlab.encoders import macko as E
        from spmvlab.kernels import macko as K
        M = E.encode(A, delta_bits=4, dtype=dt)
        D = K.to_device(M)
        cfg = _macko_config(name)
        d_x = cuda.to_device(x)
        d_y = cuda.device_array(n_rows, dtype=dt)
        return ((lambda: K.spmv(D, d_x, out=d_y, config=cfg)), "numba", M.nbytes + xy_bytes,
                M.nbytes, d_y.copy_to_host)
    raise OptionError(problem("method", "cublas, cusparse, csr_vector, csr_scalar, numba_dense, macko*",
                              repr(name)))


def measure_matrix(A, dtype, methods, *, reps=60, warmup=10, cold=True, seed=1, W_dense=None,
                   extra: dict | None = None) -> list[dict]:
    """One row per method: check on the GPU, then time. A method whose backend is missing
    gets a row with ``error`` set instead of numbers."""
    from spmvlab import bench
    from spmvlab.errors import BackendUnavailable
    dt = np.dtype(dtype)
    x = np.random.default_rng(seed).standard_normal(A.shape[1]).astype(dt)
    stored = A.astype(np.float64)
    if dt == np.float16:
        stored.data = A.data.astype(np.float16).astype(np.float64)
    exact = stored @ x.astype(np.float64)
    S = abs(stored) @ np.abs(x.astype(np.float64))
    rows = []
    for name in methods:
        row = dict(extra or {}, method=name, dtype=dt.name, shape=list(A.shape), nnz=int(A.nnz))
        try:
            run, events, moved, fmt_bytes, result = build_method(name, A, dt, x, W_dense)
        except (BackendUnavailable, MemoryError) as exc:
            row["error"] = f"{type(exc).__name__}: {exc}"
            rows.append(row)
            continue
        run()
        err = _relative_error(result(), exact, S)
        row.update(rel_error=err, correct=bool(err <= CHECK_TOL[dt.name]))
        t = bench.time_fn(run, reps=reps, warmup=warmup, cold=cold, events=events)
        row.update(median_us=t.median_us, p10_us=t.p10_us, p90_us=t.p90_us, bytes=int(moved),
                   format_bytes=int(fmt_bytes), tbps=bench.effective_bandwidth(moved, t.median_us))
        rows.append(row)
        del run, result
        gc.collect()
    by = {r["method"]: r for r in rows if "median_us" in r}
    for r in rows:
        if "median_us" not in r:
            continue
        for ref in ("cublas", "cusparse"):
            if ref in by:
                r[f"speedup_vs_{ref}"] = by[ref]["median_us"] / r["median_us"]
    return rows
