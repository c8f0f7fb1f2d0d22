"""Vendor baselines as :class:`~spmvlab.methods.base.Method` objects: cuBLAS and cuSPARSE
through CuPy, and float16 cuSPARSE through torch (imported on use; a missing library raises
:class:`~spmvlab.errors.BackendUnavailable` naming the pip extra).

``Cublas``        dense W @ X. SpMV: ``cupy.dot(W, x, out=y)``, which CuPy sends to
                  ``cublasGemmEx`` with n = 1, ``CUBLAS_COMPUTE_32F`` (float32 accumulation
                  also for float16) and ``CUBLAS_GEMM_DEFAULT_TENSOR_OP``; cuBLAS picks its GEMV
                  kernels for n = 1 (the MACKO paper's "cuBLAS GEMV fp16" baseline). SpMM:
                  ``cupy.matmul(W, X, out=Y)`` (GemmEx, same compute type).
``CublasGemv``    ``cublasSgemv``/``cublasDgemv`` called directly (float32/float64 SpMV).
``CusparseCSR``   cuSPARSE CSR. float32/float64 through ``cupyx.cusparse.spmv`` (generic
                  ``cusparseSpMV``, preallocated y) and ``A @ X`` for SpMM; float16 (which
                  cupyx refuses) through torch's sparse CSR tensor and ``torch.mv``/``torch.mm``,
                  which call ``cusparseSpMV``/``cusparseSpMM`` with float32 compute.
``CusparseCOO``   cuSPARSE COO SpMV through ``cupyx.cusparse.spmv`` (float32/float64).

Streams: numba launches, CuPy's ``Stream.null`` and torch's default stream are all the legacy
stream 0, so the harness's flush and pad kernels order correctly before vendor work; the
timing events are the library's own (``events``).
"""
from __future__ import annotations

import warnings

import numpy as np

from reference._common import OptionError, problem, value_dtype

from ..backends import import_cupy, import_torch, require_gpu
from .base import Method, Problem

__all__ = ["Cublas", "CublasGemv", "CusparseCSR", "CusparseCOO"]


def _cupy(what: str):
    cp = import_cupy(what)
    require_gpu(what)
    return cp


def _cupyx_fn(name: str):
    """``cupyx.cusparse.<name>`` if this CuPy build has it, else None."""
    try:
        import cupyx.cusparse as cus
        return getattr(cus, name) if cus.check_availability(name) else None
    except Exception:
        return None


class Cublas(Method):
    """cuBLAS GemmEx on the dense matrix (see the module docstring)."""

    name = "cublas"
    events = "cupy"

    def __init__(self, p: Problem):
        self.problem = p
        cp = self._cp = _cupy("cuBLAS (CuPy)")
        self._W = cp.asarray(p.dense())
        self._X = cp.asarray(p.X)
        self._Y = cp.empty(p.out_shape, dtype=p.dtype)
        self.format_bytes = self._W.nbytes
        spmv = p.kind == "spmv"
        self.impl = "cupy.dot -> cublasGemmEx (n=1)" if spmv else "cupy.matmul -> cublasGemmEx"
        self._fn = cp.dot if spmv else cp.matmul

    def run(self):
        self._fn(self._W, self._X, out=self._Y)

    def _result(self):
        return self._cp.asnumpy(self._Y)


class CublasGemv(Method):
    """``cublasSgemv``/``cublasDgemv`` (float32/float64 SpMV)."""

    name = "cublas_sgemv"
    events = "cupy"

    def __init__(self, p: Problem):
        self.problem = p
        if p.kind != "spmv" or p.dtype == np.float16:
            raise OptionError(problem("cublas_sgemv", "a float32/float64 SpMV problem",
                                      f"{p.kind} in {p.dtype.name}", "use method 'cublas' (GemmEx)"))
        cp = self._cp = _cupy("cuBLAS GEMV (CuPy)")
        from cupy_backends.cuda.libs import cublas
        self._cublas = cublas
        self._fn = cublas.sgemv if p.dtype == np.float32 else cublas.dgemv
        self._W = cp.asarray(p.dense())
        self._X = cp.asarray(p.X)
        self._Y = cp.empty(p.out_shape, dtype=p.dtype)
        self._one = np.ones(1, dtype=p.dtype)
        self._zero = np.zeros(1, dtype=p.dtype)
        self.format_bytes = self._W.nbytes
        self.impl = "cublasSgemv" if p.dtype == np.float32 else "cublasDgemv"

    def run(self):
        # row-major W (m, k) is column-major (k, m) with lda = k: y = W x is op = T
        m, k = self.problem.shape
        handle = self._cp.cuda.device.get_cublas_handle()
        self._fn(handle, self._cublas.CUBLAS_OP_T, k, m, self._one.ctypes.data, self._W.data.ptr, k,
                 self._X.data.ptr, 1, self._zero.ctypes.data, self._Y.data.ptr, 1)

    def _result(self):
        return self._cp.asnumpy(self._Y)


class CusparseCSR(Method):
    """cuSPARSE CSR SpMV/SpMM. ``backend``: "auto" (cupyx for float32/float64, torch for
    float16), "cupy" or "torch"."""

    name = "cusparse"

    def __init__(self, p: Problem, backend: str = "auto"):
        self.problem = p
        dt = p.dtype
        if backend == "auto":
            backend = "torch" if dt == np.float16 else "cupy"
        if backend not in ("cupy", "torch"):
            raise OptionError(problem("backend", "'auto', 'cupy' or 'torch'", repr(backend)))
        if backend == "cupy" and dt == np.float16:
            raise OptionError(problem("backend", "'torch' for float16 (cupyx refuses float16 CSR)",
                                      "'cupy'", "pass backend='auto' or 'torch'"))
        A = p.A
        indptr, indices = np.ascontiguousarray(A.indptr), np.ascontiguousarray(A.indices)
        values = np.ascontiguousarray(A.data.astype(dt))
        self.format_bytes = indptr.nbytes + indices.nbytes + values.nbytes
        self.backend = self.events = backend
        spmv = p.kind == "spmv"
        if backend == "cupy":
            cp = self._cp = _cupy("cuSPARSE CSR (cupyx.scipy.sparse)")
            import cupyx.scipy.sparse as csp
            self._A = csp.csr_matrix((cp.asarray(values), cp.asarray(indices), cp.asarray(indptr)),
                                     shape=p.shape)
            self._A.has_canonical_format  # noqa: B018 (computed once, not per call)
            self._X = cp.asarray(p.X)
            self._Y = cp.empty(p.out_shape, dtype=dt)
            self._spmv = _cupyx_fn("spmv") if spmv else None
            self.impl = ("cupyx.cusparse.spmv" if self._spmv else "csr_matrix @ x") if spmv \
                else "csr_matrix @ X (allocates Y)"
        else:
            torch = self._torch = import_torch("cuSPARSE float16 CSR (torch sparse CSR)")
            require_gpu("cuSPARSE (torch)")
            tdt = getattr(torch, dt.name)
            dev = torch.device("cuda")
            with warnings.catch_warnings():  # "sparse CSR support is in beta"
                warnings.simplefilter("ignore", UserWarning)
                self._A = torch.sparse_csr_tensor(
                    torch.from_numpy(indptr.copy()).to(dev), torch.from_numpy(indices.copy()).to(dev),
                    torch.from_numpy(values.copy()).to(dev), size=p.shape, dtype=tdt, device=dev,
                    check_invariants=False)  # canonical CSR from Problem.make
            self._X = torch.from_numpy(p.X.copy()).to(dev)
            self._Y = torch.empty(p.out_shape, dtype=tdt, device=dev)
            self._fn = torch.mv if spmv else torch.mm
            self.impl = "torch.mv(out=y)" if spmv else "torch.mm(out=Y)"
            try:
                self._fn(self._A, self._X, out=self._Y)
            except (RuntimeError, TypeError):
                self.impl = self.impl.replace("(out=y)", "").replace("(out=Y)", "")

    def run(self):
        if self.backend == "cupy":
            if self._spmv is not None:
                self._spmv(self._A, self._X, y=self._Y)
            else:
                self._Y = self._A @ self._X
        elif "out=" in self.impl:
            self._fn(self._A, self._X, out=self._Y)
        else:
            self._Y = self._fn(self._A, self._X)

    def _result(self):
        if self.backend == "cupy":
            return self._cp.asnumpy(self._Y)
        self._torch.cuda.synchronize()
        return self._Y.cpu().numpy()


class CusparseCOO(Method):
    """cuSPARSE COO SpMV through cupyx (float32/float64; the fallback ``coo_matrix @ x``
    converts the matrix on every call, so its times include that conversion and are far
    slower; ``impl`` says which path ran)."""

    name = "cusparse_coo"
    events = "cupy"

    def __init__(self, p: Problem):
        self.problem = p
        value_dtype(p.dtype, "cusparse_coo dtype", allowed=("float32", "float64"))
        cp = self._cp = _cupy("cuSPARSE COO (cupyx.scipy.sparse)")
        import cupyx.scipy.sparse as csp
        coo = p.A.tocoo()
        rows, cols = coo.row.astype(np.int32), coo.col.astype(np.int32)
        vals = coo.data.astype(p.dtype)
        self._A = csp.coo_matrix((cp.asarray(vals), (cp.asarray(rows), cp.asarray(cols))),
                                 shape=p.shape)
        self._A.sum_duplicates()  # cupyx.cusparse.spmv wants has_canonical_format (a no-op here)
        self._X = cp.asarray(p.X)
        self._Y = cp.empty(p.out_shape, dtype=p.dtype)
        self.format_bytes = rows.nbytes + cols.nbytes + vals.nbytes
        self._spmv = _cupyx_fn("spmv") if p.kind == "spmv" else None
        self.impl = "cupyx.cusparse.spmv" if self._spmv else "coo_matrix @ X"
        if self._spmv is not None:
            try:
                self._spmv(self._A, self._X, y=self._Y)
            except Exception:
                self._spmv, self.impl = None, "coo_matrix @ X"

    def run(self):
        if self._spmv is not None:
            self._spmv(self._A, self._X, y=self._Y)
        else:
            self._Y = self._A @ self._X

    def _result(self):
        return self._cp.asnumpy(self._Y)
