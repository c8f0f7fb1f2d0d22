"""One parity helper for every format: reference vs kernel vs scipy on the same case.

Every result is compared with the float64 product of the *stored* values through
:mod:`spmvlab.check` (the one tolerance table, shared with the timed methods; see its
docstring for the bound). Kernel outputs are pre-filled with garbage so an element the kernel
never writes fails, and the kernel must return the very ``out`` it was given.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from spmvlab.check import reference_product, relative_error

GARBAGE = 7.25e3  # pre-fill value (plus an index pattern) for kernel outputs


def garbage_like(shape, dtype) -> np.ndarray:
    g = np.full(shape, GARBAGE, dtype=np.float64) + np.arange(int(np.prod(shape))).reshape(shape) % 7
    return g.astype(dtype)


def assert_close(y, csr: sp.csr_matrix, X, dtype, what: str = "result"):
    """Check ``y`` (host array) against the exact product of ``csr`` (the stored values) and ``X``."""
    dtype = np.dtype(dtype)
    y = np.asarray(y)
    assert y.dtype == dtype, f"{what}: dtype {y.dtype}, expected {dtype}"
    ref = reference_product(csr, X)
    assert y.shape == ref.exact.shape, f"{what}: shape {y.shape}, expected {ref.exact.shape}"
    chk = relative_error(y, dtype=dtype, ref=ref)
    if not chk.passed:
        at, got, exact, bound = chk.worst
        raise AssertionError(f"{what}: {chk.n_bad} of {y.size} elements off; first at {tuple(at)}: "
                             f"got {got!r}, exact {exact!r}, bound {bound!r}")


def assert_same_csr(got: sp.csr_matrix, want: sp.csr_matrix, what="to_csr()"):
    """Same shape, pattern, index dtypes and values bit for bit (NaN payloads included)."""
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    assert got.indptr.dtype == want.indptr.dtype, f"{what}: indptr dtype differs"
    assert got.indices.dtype == want.indices.dtype, f"{what}: indices dtype differs"
    assert np.array_equal(got.indptr, want.indptr), f"{what}: indptr differs"
    assert np.array_equal(got.indices, want.indices), f"{what}: indices differ"
    assert got.data.dtype == want.data.dtype, f"{what}: value dtype {got.data.dtype} != {want.data.dtype}"
    assert np.array_equal(got.data.view(np.uint8), want.data.view(np.uint8)), f"{what}: values differ"


def check_parity(ref_module, kernel_module, M, x, X=None, config=None):
    """Reference, kernel and scipy on the same encoded matrix ``M``.

    The kernel writes into garbage-filled host outputs (``out=``) and must return them;
    each result must be within the tolerance of the exact product of the stored values.
    ``config``: the kernel config (None: the kernel's default). Returns (y_ref, y_kernel).
    """
    kw = {} if config is None else {"config": config}
    csr = M.to_csr()
    y_ref = ref_module.spmv(M, x)
    assert_close(y_ref, csr, x, M.dtype, "reference spmv")
    out = garbage_like((M.shape[0],), M.dtype)
    y_k = kernel_module.spmv(M, x, out=out, **kw)
    assert y_k is out, "kernel spmv did not return its out"
    assert_close(y_k, csr, x, M.dtype, "kernel spmv")
    if M.dtype != np.float16:  # scipy itself cannot hold float16
        with np.errstate(invalid="ignore", over="ignore"):
            y_sp = (csr @ x.astype(csr.dtype)).astype(M.dtype)
        assert_close(y_sp, csr, x, M.dtype, "scipy (sanity)")
    if X is not None:
        Y_ref = ref_module.spmm(M, X)
        assert_close(Y_ref, csr, X, M.dtype, "reference spmm")
        OUT = garbage_like((M.shape[0], X.shape[1]), M.dtype)
        Y_k = kernel_module.spmm(M, X, out=OUT, **kw)
        assert Y_k is OUT, "kernel spmm did not return its out"
        assert_close(Y_k, csr, X, M.dtype, "kernel spmm")
    return y_ref, y_k
