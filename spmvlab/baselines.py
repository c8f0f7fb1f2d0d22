"""Baselines every format is compared with, behind one small interface.

Every baseline is built from a host matrix and holds its operands on the device:

``run()``       launches one product y = A @ x on the default stream (no host sync, output
                preallocated where the library allows), for :func:`spmvlab.bench.time_fn`
``events``      which library's CUDA events should bracket ``run`` ("numba", "cupy", "torch")
``nbytes``      bytes one product moves at minimum: the matrix's stored bytes + x + y
``set_x(x)``    upload a new x (host NumPy array of the matrix's dtype)
``result()``    y as a host NumPy array (synchronises)
``check(x)``    run once with ``x`` (or the current x) and compare with a float64 NumPy
                product: a :class:`Check` with the worst error relative to sum_j |a_ij x_j|

Vendor libraries (imported inside functions only; missing ones raise
:class:`~spmvlab.errors.BackendUnavailable` naming the pip extra):

* :class:`DenseGemv` - cuBLAS through CuPy (``pip install -e .[gpu]``). ``impl="gemmex"``
  (default) is ``cupy.dot(W, x, out=y)``, which CuPy sends to ``cublasGemmEx`` with n = 1,
  ``CUBLAS_COMPUTE_32F`` (float32 accumulation also for float16) and
  ``CUBLAS_GEMM_DEFAULT_TENSOR_OP``; cuBLAS picks its GEMV kernels for n = 1. This is the
  "cuBLAS GEMV fp16 (GemmEx, fp32 compute)" baseline of the MACKO paper. ``impl="gemv"``
  calls ``cublasSgemv``/``cublasDgemv`` directly (float32/float64 only).
* :class:`CusparseCSR` - cuSPARSE SpMV: float32/float64 through ``cupyx.cusparse.spmv``
  (generic ``cusparseSpMV`` with a preallocated y; falls back to ``A @ x``) or, for float16
  (cupyx refuses float16 CSR), through torch's sparse CSR tensor and ``torch.mv``
  (``pip install -e .[torch]``), which also calls ``cusparseSpMV`` (float32 compute).
* :class:`CusparseCOO` - cuSPARSE COO SpMV through ``cupyx.cusparse.spmv`` (float32/float64;
  the fallback ``coo_matrix @ x`` is ~100x slower: it converts on every call).

spmvlab's own kernels in the same interface: :class:`NumbaDense` (``kernels/dense.py``, the
dense baseline when CuPy is missing) and :class:`NumbaCSR` (``kernels/csr.py``).

Streams: numba launches and CuPy's ``Stream.null`` use the legacy default stream; torch's
default stream (``torch.cuda.default_stream()``) is the same stream 0, so numba's flush and
pad kernels order correctly before torch work. Time torch baselines with
``events="torch"`` anyway (their ``events`` attribute says so), which records on
``torch.cuda.current_stream()`` whatever it is.
"""
from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import scipy.sparse as sp

from reference._common import DTypeError, OptionError, ShapeError, problem

from ._cuda import SIMULATOR
from .errors import BackendUnavailable

__all__ = ["Check", "DEFAULT_TOL", "reference_product", "import_cupy", "import_torch", "cupy_available",
           "torch_available", "relative_error", "DenseGemv", "CusparseCSR", "CusparseCOO",
           "NumbaDense", "NumbaCSR"]

# worst |y - exact| / sum_j |a_ij x_j| accepted, per value dtype
DEFAULT_TOL = {np.dtype(np.float16): 1e-2, np.dtype(np.float32): 1e-5, np.dtype(np.float64): 1e-12}


# ---------------------------------------------------------------------------------------------
# optional imports
# ---------------------------------------------------------------------------------------------

def _no_gpu(what: str):
    if SIMULATOR:
        raise BackendUnavailable(problem(what, "a real CUDA GPU",
                                         "the numba CUDA simulator (no CUDA driver or GPU found)"))


def import_cupy(what: str = "this baseline"):
    """``cupy`` (with ``cupyx.scipy.sparse``), or BackendUnavailable naming the extra."""
    try:
        import cupy
        import cupyx.scipy.sparse  # noqa: F401
    except Exception as exc:  # ImportError, or a CUDA library failing to load
        raise BackendUnavailable(problem(
            what, "CuPy (cuBLAS/cuSPARSE bindings)", f"{type(exc).__name__}: {exc}",
            "pip install -e .[gpu]   (installs cupy-cuda13x)")) from exc
    return cupy


def import_torch(what: str = "this baseline"):
    """``torch`` with CUDA, or BackendUnavailable naming the extra."""
    try:
        import torch
    except Exception as exc:
        raise BackendUnavailable(problem(
            what, "PyTorch with CUDA (cuSPARSE float16 CSR)", f"{type(exc).__name__}: {exc}",
            "pip install -e .[torch]   (a CUDA build of torch)")) from exc
    if not torch.cuda.is_available():
        raise BackendUnavailable(problem(what, "a CUDA build of torch that sees a GPU",
                                         f"torch {torch.__version__} with torch.cuda.is_available() False",
                                         "pip install -e .[torch] with a CUDA wheel, on a GPU machine"))
    return torch


def cupy_available() -> bool:
    try:
        import_cupy()
        _no_gpu("cupy")
        return True
    except BackendUnavailable:
        return False


def torch_available() -> bool:
    try:
        import_torch()
        _no_gpu("torch")
        return True
    except BackendUnavailable:
        return False


# ---------------------------------------------------------------------------------------------
# correctness check
# ---------------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Check:
    passed: bool
    max_rel_err: float      # max_i |y_i - exact_i| / sum_j |a_ij x_j|
    tol: float
    n_bad: int              # rows over the bound (NaN counts as over)

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


def _as_scipy(A):
    """scipy CSR of any host matrix we accept (scipy sparse, CSRMatrix, dense array)."""
    if sp.issparse(A):
        return sp.csr_matrix(A)
    if hasattr(A, "to_csr"):
        return A.to_csr()
    return None


def reference_product(A, x):
    """float64 ``A @ x`` and the per-row scale S_i = sum_j |a_ij x_j| (``A`` dense, scipy
    sparse or a reference CSRMatrix). Compute once, compare many results with it."""
    x64 = np.asarray(x, dtype=np.float64)
    S = _as_scipy(A)
    if S is not None:
        A64 = S.astype(np.float64)
        exact = np.asarray(A64 @ x64).ravel()
        A64.data = np.abs(A64.data)
        scale = np.asarray(A64 @ np.abs(x64)).ravel()
    else:
        A64 = np.asarray(A, dtype=np.float64)
        exact = A64 @ x64
        scale = np.abs(A64) @ np.abs(x64)
    return exact, scale


def relative_error(y, A=None, x=None, dtype=None, tol=None, ref=None) -> Check:
    """Compare ``y`` with the float64 product ``A @ x`` (or ``ref = (exact, scale)`` from
    :func:`reference_product`).

    Each row's error is divided by S_i = sum_j |a_ij x_j| (the scale of the sum's rounding
    error); rows with S_i = 0 must be exactly 0. ``tol`` defaults to DEFAULT_TOL[dtype]."""
    y = np.asarray(y, dtype=np.float64)
    dt = np.dtype(dtype) if dtype is not None else np.dtype(getattr(A, "dtype", np.float32))
    tol = DEFAULT_TOL.get(dt, 1e-5) if tol is None else float(tol)
    exact, scale = ref if ref is not None else reference_product(A, x)
    if y.shape != exact.shape:
        raise ShapeError(problem("y", f"shape {exact.shape}", y.shape))
    with np.errstate(invalid="ignore", over="ignore"):
        err = np.abs(y - exact)
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(scale > 0, err / np.where(scale > 0, scale, 1.0), np.where(err == 0, 0.0, np.inf))
    rel = np.where(np.isnan(rel), np.inf, rel)
    worst = float(rel.max()) if rel.size else 0.0
    n_bad = int(np.count_nonzero(rel > tol))
    return Check(passed=n_bad == 0, max_rel_err=worst, tol=tol, n_bad=n_bad)


def _default_x(n: int, dtype, seed: int = 1) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-1.0, 1.0, n).astype(dtype)


def _check_x(x, n: int, dtype) -> np.ndarray:
    x = np.asarray(x)
    if x.shape != (n,):
        raise ShapeError(problem("x.shape", f"({n},) (the matrix's column count)", x.shape))
    if x.dtype != np.dtype(dtype):
        raise DTypeError(problem("x.dtype", np.dtype(dtype), x.dtype, f"pass x.astype(np.{np.dtype(dtype).name})"))
    return np.ascontiguousarray(x)


class _Baseline:
    """Shared plumbing; subclasses set shape, dtype, nbytes, events, name and define
    ``_upload_x``, ``run``, ``_y_host`` and keep the host matrix in ``_host``."""

    name = "?"
    events = "numba"

    def set_x(self, x):
        x = _check_x(x, self.shape[1], self.dtype)
        self._x_host = x
        self._upload_x(x)

    def result(self) -> np.ndarray:
        return self._y_host()

    def check(self, x=None, tol=None, ref=None) -> Check:
        """Run once (with ``x`` if given) and compare with NumPy; ``ref`` = a precomputed
        :func:`reference_product` of the same matrix and x."""
        if self._host is None and ref is None:
            raise OptionError(problem(f"{type(self).__name__}.check", "a baseline built from a host matrix",
                                      "one built from device arrays", "pass host= the host matrix"))
        if x is not None:
            self.set_x(x)
        self.run()
        return relative_error(self.result(), self._host, self._x_host, self.dtype, tol, ref=ref)

    def _bytes(self, matrix_bytes: int) -> int:
        return int(matrix_bytes) + (self.shape[0] + self.shape[1]) * self.dtype.itemsize

    def __repr__(self):
        return f"{type(self).__name__}({self.name}, shape={self.shape}, dtype={self.dtype.name})"


def _value_dtype(dtype, allowed=("float16", "float32", "float64"), what="baseline"):
    dt = np.dtype(dtype)
    if dt.name not in allowed:
        raise DTypeError(problem(f"{what} dtype", " or ".join(allowed), dt))
    return dt


def _csr_parts(A, dtype):
    """(indptr, indices, values, shape) of a CSRMatrix or scipy matrix, values in ``dtype``."""
    if hasattr(A, "indptr") and hasattr(A, "values"):          # reference CSRMatrix
        return (np.ascontiguousarray(A.indptr), np.ascontiguousarray(A.indices),
                np.ascontiguousarray(A.values.astype(dtype, copy=False)), tuple(A.shape))
    if sp.issparse(A):
        c = sp.csr_matrix(A)
        c.sort_indices()
        return (np.ascontiguousarray(c.indptr), np.ascontiguousarray(c.indices),
                np.ascontiguousarray(c.data.astype(dtype)), tuple(c.shape))
    raise DTypeError(problem("A", "a reference CSRMatrix or a scipy.sparse matrix", type(A).__name__))


# ---------------------------------------------------------------------------------------------
# cuBLAS dense GEMV (CuPy)
# ---------------------------------------------------------------------------------------------

class DenseGemv(_Baseline):
    """cuBLAS y = W @ x for a dense row-major W (see the module docstring for what is called).

    ``W_host``: 2-D NumPy array (cast to ``dtype``). ``impl``: "gemmex" (``cupy.dot`` ->
    cublasGemmEx, n = 1, fp32 compute) or "gemv" (cublasSgemv/Dgemv; float32/float64)."""

    events = "cupy"

    def __init__(self, W_host, dtype=np.float32, x=None, impl: str = "gemmex"):
        cp = import_cupy("DenseGemv (cuBLAS)")
        _no_gpu("DenseGemv (cuBLAS)")
        self.dtype = _value_dtype(dtype, what="DenseGemv")
        W = np.ascontiguousarray(np.asarray(W_host), dtype=self.dtype)
        if W.ndim != 2:
            raise ShapeError(problem("W_host", "a 2-D array", f"shape {W.shape}"))
        if impl not in ("gemmex", "gemv"):
            raise OptionError(problem("impl", "'gemmex' or 'gemv'", repr(impl)))
        if impl == "gemv" and self.dtype == np.float16:
            raise OptionError(problem("impl", "'gemmex' for float16 (cuBLAS has no half GEMV)", "'gemv'"))
        self.impl = impl
        self.name = f"cublas_{impl}"
        self.shape = tuple(int(s) for s in W.shape)
        self._cp = cp
        self._host = W
        self._W = cp.asarray(W)
        self._y = cp.empty(self.shape[0], dtype=self.dtype)
        self.nbytes = self._bytes(W.nbytes)
        self.set_x(_default_x(self.shape[1], self.dtype) if x is None else x)
        if impl == "gemv":
            from cupy_backends.cuda.libs import cublas
            self._cublas = cublas
            self._fn = cublas.sgemv if self.dtype == np.float32 else cublas.dgemv
            self._one = np.ones(1, dtype=self.dtype)
            self._zero = np.zeros(1, dtype=self.dtype)

    def _upload_x(self, x):
        self._x = self._cp.asarray(x)

    def run(self):
        if self.impl == "gemmex":
            self._cp.dot(self._W, self._x, out=self._y)
        else:
            # row-major W (m, k) is column-major (k, m) with lda = k: y = op(W^T)^T x, trans=T
            m, k = self.shape
            handle = self._cp.cuda.device.get_cublas_handle()
            self._fn(handle, self._cublas.CUBLAS_OP_T, k, m, self._one.ctypes.data,
                     self._W.data.ptr, k, self._x.data.ptr, 1, self._zero.ctypes.data,
                     self._y.data.ptr, 1)
        return self._y

    def _y_host(self):
        return self._cp.asnumpy(self._y)


# ---------------------------------------------------------------------------------------------
# cuSPARSE (CuPy / torch)
# ---------------------------------------------------------------------------------------------

class CusparseCSR(_Baseline):
    """cuSPARSE CSR SpMV. ``backend``: "auto" (cupyx for float32/float64, torch for
    float16), "cupy" or "torch". ``A``: a reference CSRMatrix or scipy sparse matrix."""

    def __init__(self, A, dtype=np.float32, x=None, backend: str = "auto"):
        self.dtype = _value_dtype(dtype, what="CusparseCSR")
        if backend == "auto":
            backend = "torch" if self.dtype == np.float16 else "cupy"
        if backend not in ("cupy", "torch"):
            raise OptionError(problem("backend", "'auto', 'cupy' or 'torch'", repr(backend)))
        if backend == "cupy" and self.dtype == np.float16:
            raise OptionError(problem("backend", "'torch' for float16 (cupyx refuses float16 CSR)",
                                      "'cupy'", "pass backend='auto' or 'torch'"))
        indptr, indices, values, shape = _csr_parts(A, self.dtype)
        self.shape = tuple(int(s) for s in shape)
        self.backend = backend
        self.name = f"cusparse_csr_{backend}"
        self.events = backend
        self._host = A
        self.nbytes = self._bytes(indptr.nbytes + indices.nbytes + values.nbytes)
        if backend == "cupy":
            cp = import_cupy("CusparseCSR (cupyx.scipy.sparse)")
            _no_gpu("CusparseCSR")
            import cupyx.scipy.sparse as csp
            self._cp = cp
            self._A = csp.csr_matrix((cp.asarray(values), cp.asarray(indices), cp.asarray(indptr)),
                                     shape=self.shape)
            self._A.has_canonical_format  # noqa: B018 (computed once, not per call)
            self._y = cp.empty(self.shape[0], dtype=self.dtype)
            spmv = None
            try:
                import cupyx.cusparse as cus
                if cus.check_availability("spmv"):
                    spmv = cus.spmv
            except Exception:
                spmv = None
            self._spmv = spmv
            self.impl = "cupyx.cusparse.spmv" if spmv else "csr_matrix @ x"
        else:
            torch = import_torch("CusparseCSR float16 (torch sparse CSR)")
            _no_gpu("CusparseCSR")
            self._torch = torch
            tdt = {"float16": torch.float16, "float32": torch.float32, "float64": torch.float64}[self.dtype.name]
            dev = torch.device("cuda")
            with warnings.catch_warnings():  # "sparse CSR support is in beta"
                warnings.simplefilter("ignore", UserWarning)
                self._A = torch.sparse_csr_tensor(
                    torch.from_numpy(np.array(indptr)).to(dev), torch.from_numpy(np.array(indices)).to(dev),
                    torch.from_numpy(np.array(values)).to(dev), size=self.shape, dtype=tdt, device=dev,
                    check_invariants=False)  # canonical CSR from reference.csr.encode
            self._y = torch.empty(self.shape[0], dtype=tdt, device=dev)
            self.impl = "torch.mv(out=y)"
        self.set_x(_default_x(self.shape[1], self.dtype) if x is None else x)
        if backend == "torch":
            try:
                self._torch.mv(self._A, self._x, out=self._y)
            except (RuntimeError, TypeError):
                self.impl = "torch.mv"

    def _upload_x(self, x):
        if self.backend == "cupy":
            self._x = self._cp.asarray(x)
        else:
            self._x = self._torch.from_numpy(np.array(x)).to("cuda")

    def run(self):
        if self.backend == "cupy":
            if self._spmv is not None:
                self._spmv(self._A, self._x, y=self._y)
            else:
                self._y = self._A @ self._x
        elif self.impl == "torch.mv(out=y)":
            self._torch.mv(self._A, self._x, out=self._y)
        else:
            self._y = self._torch.mv(self._A, self._x)
        return self._y

    def _y_host(self):
        if self.backend == "cupy":
            return self._cp.asnumpy(self._y)
        self._torch.cuda.synchronize()
        return self._y.cpu().numpy()


class CusparseCOO(_Baseline):
    """cuSPARSE COO SpMV through cupyx (float32/float64; cupyx has no float16 sparse)."""

    events = "cupy"

    def __init__(self, A, dtype=np.float32, x=None):
        self.dtype = _value_dtype(dtype, ("float32", "float64"), what="CusparseCOO")
        cp = import_cupy("CusparseCOO (cupyx.scipy.sparse)")
        _no_gpu("CusparseCOO")
        import cupyx.scipy.sparse as csp
        S = _as_scipy(A)
        if S is None:
            raise DTypeError(problem("A", "a reference CSRMatrix or a scipy.sparse matrix", type(A).__name__))
        coo = S.tocoo()
        rows = coo.row.astype(np.int32)
        cols = coo.col.astype(np.int32)
        vals = coo.data.astype(self.dtype)
        self.shape = tuple(int(s) for s in coo.shape)
        self.name = "cusparse_coo_cupy"
        self._cp = cp
        self._host = A
        self._A = csp.coo_matrix((cp.asarray(vals), (cp.asarray(rows), cp.asarray(cols))), shape=self.shape)
        self._A.sum_duplicates()  # cupyx.cusparse.spmv wants has_canonical_format (a no-op sort here)
        self._y = cp.empty(self.shape[0], dtype=self.dtype)
        self.nbytes = self._bytes(rows.nbytes + cols.nbytes + vals.nbytes)
        spmv = None
        try:
            import cupyx.cusparse as cus
            if cus.check_availability("spmv"):
                spmv = cus.spmv
        except Exception:
            spmv = None
        self._spmv = spmv
        self.impl = "cupyx.cusparse.spmv" if spmv else "coo_matrix @ x"
        self.set_x(_default_x(self.shape[1], self.dtype) if x is None else x)
        if spmv is not None:
            try:
                spmv(self._A, self._x, y=self._y)
            except Exception:
                self._spmv = None
                self.impl = "coo_matrix @ x"

    def _upload_x(self, x):
        self._x = self._cp.asarray(x)

    def run(self):
        if self._spmv is not None:
            self._spmv(self._A, self._x, y=self._y)
        else:
            self._y = self._A @ self._x
        return self._y

    def _y_host(self):
        return self._cp.asnumpy(self._y)


# ---------------------------------------------------------------------------------------------
# spmvlab's numba kernels in the same interface
# ---------------------------------------------------------------------------------------------

class _NumbaBase(_Baseline):
    events = "numba"

    def _upload_x(self, x):
        from .kernels._common import to_dev
        self._x = to_dev(x)

    def _y_host(self):
        return self._y.copy_to_host()


class NumbaDense(_NumbaBase):
    """spmvlab's numba dense GEMV (``kernels/dense.py``): warp per row, 16-byte loads."""

    def __init__(self, W, dtype=np.float32, x=None, config=None):
        from ._cuda import cuda
        from .kernels import dense as K
        self.dtype = _value_dtype(dtype, what="NumbaDense")
        self.config = config or K.DenseConfig()
        if isinstance(W, K.DeviceDense):
            self._host = None
            self._D = W
        else:
            Wh = np.ascontiguousarray(np.asarray(W), dtype=self.dtype)
            self._host = Wh
            self._D = K.to_device(Wh)
        self.shape = self._D.shape
        self.vec = K.vector_width(self.dtype, self.shape[1], self.config)
        self.name = f"numba_dense_v{self.vec}"
        self._K = K
        self._y = cuda.device_array(self.shape[0], dtype=self.dtype)
        self.nbytes = self._bytes(self._D.nbytes)
        self.set_x(_default_x(self.shape[1], self.dtype) if x is None else x)

    def run(self):
        return self._K.gemv(self._D, self._x, out=self._y, config=self.config)


class NumbaCSR(_NumbaBase):
    """spmvlab's numba CSR kernel (``kernels/csr.py``). ``A``: a reference CSRMatrix (or a
    DeviceCSR plus ``host=`` the CSRMatrix for :meth:`check`)."""

    def __init__(self, A, variant: str = "vector", config=None, x=None, host=None):
        from ._cuda import cuda
        from .kernels import csr as K
        self.config = config or K.CSRConfig()
        self.variant = variant
        self._D = K.to_device(A)
        self._host = host if host is not None else (A if not isinstance(A, K.DeviceCSR) else None)
        self.dtype = np.dtype(self._D.dtype)
        self.shape = tuple(self._D.shape)
        self.name = "numba_csr_scalar" if variant == "scalar" else f"numba_csr_vector{self.config.vec}"
        self._K = K
        self._y = cuda.device_array(self.shape[0], dtype=self.dtype)
        self.nbytes = self._bytes(self._D.nbytes)
        self.set_x(_default_x(self.shape[1], self.dtype) if x is None else x)

    def run(self):
        return self._K.spmv(self._D, self._x, out=self._y, variant=self.variant, config=self.config)
