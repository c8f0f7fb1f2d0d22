"""One parity helper for every format: reference vs kernel vs scipy on the same case.

Tolerance (one table, per value dtype). With S_i = sum_j |a_ij x_j| and n_i the stored
entries of row i, a result y_i is accepted when

    |y_i - exact_i| <= OUT_EPS[dtype] * |exact_i| + 2 * (n_i + 1) * ACC_EPS[dtype] * S_i + FLOOR[dtype]

where ``exact`` is the float64 product of the *stored* values: the first term is the final
rounding to the output dtype, the second the standard bound for a sum of n products
accumulated in float32 (float16/float32) or float64, in any order. Where ``exact`` is not
finite (NaN/Inf in the data) the result must be the same NaN or the same infinity; where the
output dtype overflows, +/-Inf is accepted. Kernel outputs are pre-filled with garbage so an
element the kernel never writes fails.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

OUT_EPS = {np.dtype(np.float16): 2.0**-10, np.dtype(np.float32): 2.0**-23, np.dtype(np.float64): 2.0**-52}
ACC_EPS = {np.dtype(np.float16): 2.0**-23, np.dtype(np.float32): 2.0**-23, np.dtype(np.float64): 2.0**-52}
FLOOR = {np.dtype(np.float16): 2.0**-24, np.dtype(np.float32): 2.0**-140, np.dtype(np.float64): 2.0**-1060}

GARBAGE = 7.25e3  # pre-fill value (plus an index pattern) for kernel outputs


def garbage_like(shape, dtype) -> np.ndarray:
    g = np.full(shape, GARBAGE, dtype=np.float64) + np.arange(int(np.prod(shape))).reshape(shape) % 7
    return g.astype(dtype)


def exact_product(csr: sp.csr_matrix, X: np.ndarray):
    """float64 product of the stored values, and S = |A| @ |X| (for the bound)."""
    A64 = csr.astype(np.float64)
    X64 = np.asarray(X, dtype=np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        exact = A64 @ X64
        absA = abs(A64)
        S = absA @ np.abs(X64)
    return np.asarray(exact), np.asarray(S)


def assert_close(y, csr: sp.csr_matrix, X, dtype, what: str = "result"):
    """Check ``y`` (host array) against the exact product of ``csr`` (the stored values) and ``X``."""
    dtype = np.dtype(dtype)
    y = np.asarray(y)
    assert y.dtype == dtype, f"{what}: dtype {y.dtype}, expected {dtype}"
    exact, S = exact_product(csr, X)
    assert y.shape == exact.shape, f"{what}: shape {y.shape}, expected {exact.shape}"
    n = np.diff(csr.indptr).astype(np.float64)
    n = n.reshape((-1,) + (1,) * (exact.ndim - 1))
    yy = y.astype(np.float64)
    finite = np.isfinite(exact)
    with np.errstate(invalid="ignore", over="ignore"):
        bound = OUT_EPS[dtype] * np.abs(exact) + 2 * (n + 1) * ACC_EPS[dtype] * S + FLOOR[dtype]
        overflow = finite & ~np.isfinite(exact.astype(dtype)) if dtype != np.float64 else np.zeros_like(finite)
        near = np.abs(exact) + bound >= np.finfo(dtype).max  # rounding may still overflow
        ok_finite = finite & (np.abs(yy - exact) <= bound)
    ok_overflow = (overflow | near) & np.isinf(yy) & (np.sign(yy) == np.sign(exact))
    ok_nan = ~finite & np.isnan(exact) & np.isnan(yy)
    ok_inf = ~finite & np.isinf(exact) & (yy == exact)
    # products that overflow the accumulator only in float32: exact finite, S huge
    ok = ok_finite | ok_overflow | ok_nan | ok_inf
    if not ok.all():
        bad = np.argwhere(~ok)[:5]
        rows = [f"  at {tuple(b)}: got {yy[tuple(b)]!r}, exact {exact[tuple(b)]!r}, "
                f"bound {bound[tuple(b)]!r}" for b in bad]
        raise AssertionError(f"{what}: {int((~ok).sum())} of {ok.size} elements off\n" + "\n".join(rows))


def assert_same_csr(got: sp.csr_matrix, want: sp.csr_matrix, what="to_csr()"):
    """Same shape, same pattern, same values bit for bit (NaN == NaN)."""
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    assert np.array_equal(got.indptr, want.indptr), f"{what}: indptr differs"
    assert np.array_equal(got.indices, want.indices), f"{what}: indices differ"
    assert got.data.dtype == want.data.dtype, f"{what}: value dtype {got.data.dtype} != {want.data.dtype}"
    assert np.array_equal(got.data.view(np.uint8), want.data.view(np.uint8)), f"{what}: values differ"


def check_parity(ref_module, kernel_module, M, x, X=None, spmv_kwargs=None, spmm_kwargs=None):
    """Reference, kernel and scipy on the same encoded matrix ``M``.

    The kernel writes into garbage-filled outputs (host ``out=``), and each result must be
    within the tolerance of the exact product of the stored values. Returns (y_ref, y_kernel).
    """
    csr = M.to_csr()
    y_ref = ref_module.spmv(M, x)
    assert_close(y_ref, csr, x, M.dtype, "reference spmv")
    out = garbage_like((M.shape[0],), M.dtype)
    y_k = kernel_module.spmv(M, x, out=out, **(spmv_kwargs or {}))
    assert y_k is out
    assert_close(y_k, csr, x, M.dtype, "kernel spmv")
    if M.dtype != np.float16:  # scipy itself cannot hold float16
        with np.errstate(invalid="ignore", over="ignore"):
            y_sp = (csr @ x.astype(csr.dtype)).astype(M.dtype)
        assert_close(y_sp, csr, x, M.dtype, "scipy (sanity)")
    if X is not None:
        Y_ref = ref_module.spmm(M, X)
        assert_close(Y_ref, csr, X, M.dtype, "reference spmm")
        OUT = garbage_like((M.shape[0], X.shape[1]), M.dtype)
        Y_k = kernel_module.spmm(M, X, out=OUT, **(spmm_kwargs or {}))
        assert_close(Y_k, csr, X, M.dtype, "kernel spmm")
    return y_ref, y_k
