"""cuSPARSE sliced ELL (SELL, slices of 32 rows) SpMV through ctypes: the CSR-dtANS paper's
third baseline, which CuPy does not bind.

The layout is built on the host by :func:`reference.sell.encode` (int32 slice offsets and
column indices, padding column -1, zero-based), uploaded with CuPy, and described to cuSPARSE's
generic API: ``cusparseCreateSlicedEll`` (matrix), ``cusparseCreateDnVec`` (x, y),
``cusparseSpMV_bufferSize`` and ``cusparseSpMV`` with ``CUSPARSE_SPMV_SELL_ALG1``, on a handle
of our own bound to CuPy's current stream at build time (the legacy stream 0 by default, as for
the other vendor methods). Values float32/float64 (compute type = value type) and float16
(A, x, y half, compute float32: cuSPARSE's mixed-precision SpMV row). SpMV only.

The library is libcusparse of the CUDA that CuPy (or torch) already loaded: found through
``/proc/self/maps`` after importing CuPy's cuSPARSE binding, then next to the NVIDIA pip
wheels (``nvidia/cusparse/lib``, ``nvidia/cu13/lib``), torch's ``lib``, ``CUDA_PATH`` and
``ctypes.util.find_library``. A missing library or a library without the sliced-ELL entry
points (cuSPARSE < 12.1) raises :class:`~spmvlab.errors.BackendUnavailable`; a non-zero
status raises :class:`CusparseError` naming the call and the status.

Enum values are those of cusparse.h / library_types.h in CUDA 12.1-13.x.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import glob
import os
import site
import sys

import numpy as np

from reference._common import OptionError, SpmvlabError, problem

from ..errors import BackendUnavailable
from .base import Method, Problem

__all__ = ["CusparseSell", "CusparseError", "load_cusparse", "value_types"]

# cudaDataType_t (library_types.h)
CUDA_R_32F = 0          # CUDA_R_32F
CUDA_R_64F = 1          # CUDA_R_64F
CUDA_R_16F = 2          # CUDA_R_16F
# cusparseIndexType_t
CUSPARSE_INDEX_32I = 2  # CUSPARSE_INDEX_32I
# cusparseIndexBase_t
CUSPARSE_INDEX_BASE_ZERO = 0
# cusparseOperation_t
CUSPARSE_OPERATION_NON_TRANSPOSE = 0
# cusparseSpMVAlg_t (CUSPARSE_SPMV_ALG_DEFAULT = 0, COO_ALG1 = 1, CSR_ALG1 = 2, CSR_ALG2 = 3,
# COO_ALG2 = 4, SELL_ALG1 = 5)
CUSPARSE_SPMV_SELL_ALG1 = 5
#: cusparseStatus_t names (cusparse.h)
STATUS_NAMES = {
    0: "CUSPARSE_STATUS_SUCCESS", 1: "CUSPARSE_STATUS_NOT_INITIALIZED",
    2: "CUSPARSE_STATUS_ALLOC_FAILED", 3: "CUSPARSE_STATUS_INVALID_VALUE",
    4: "CUSPARSE_STATUS_ARCH_MISMATCH", 5: "CUSPARSE_STATUS_MAPPING_ERROR",
    6: "CUSPARSE_STATUS_EXECUTION_FAILED", 7: "CUSPARSE_STATUS_INTERNAL_ERROR",
    8: "CUSPARSE_STATUS_MATRIX_TYPE_NOT_SUPPORTED", 9: "CUSPARSE_STATUS_ZERO_PIVOT",
    10: "CUSPARSE_STATUS_NOT_SUPPORTED", 11: "CUSPARSE_STATUS_INSUFFICIENT_RESOURCES",
}

SLICE_SIZE = 32


class CusparseError(SpmvlabError, RuntimeError):
    """A cuSPARSE call returned a status other than CUSPARSE_STATUS_SUCCESS."""

    def __init__(self, call: str, status: int):
        self.call, self.status = call, int(status)
        name = STATUS_NAMES.get(self.status, f"unknown status {self.status}")
        super().__init__(problem(call, "CUSPARSE_STATUS_SUCCESS", f"{name} (status {self.status})",
                                 "see the cuSPARSE documentation of this call for the status"))


def _check(call: str, status: int):
    if status != 0:
        raise CusparseError(call, status)


def value_types(dtype) -> tuple[int, int]:
    """(cudaDataType of A/x/y, compute cudaDataType) for a value dtype."""
    dt = np.dtype(dtype)
    table = {np.dtype(np.float32): (CUDA_R_32F, CUDA_R_32F),
             np.dtype(np.float64): (CUDA_R_64F, CUDA_R_64F),
             np.dtype(np.float16): (CUDA_R_16F, CUDA_R_32F)}
    if dt not in table:
        raise OptionError(problem("cusparse_sell dtype", "float16, float32 or float64", dt.name))
    return table[dt]


# ---- finding and binding libcusparse ------------------------------------------------------------

def _loaded_paths() -> list[str]:
    """libcusparse files already mapped into this process (CuPy's or torch's)."""
    try:
        with open("/proc/self/maps") as f:
            paths = {line.split()[-1] for line in f if "libcusparse" in line and "/" in line}
        return sorted(p for p in paths if os.path.basename(p).startswith("libcusparse.so"))
    except OSError:
        return []


def _site_dirs() -> list[str]:
    dirs = []
    for name in ("nvidia", "torch", "cupy"):
        mod = sys.modules.get(name)
        for d in (getattr(mod, "__path__", None) or []) if mod else []:
            dirs.append(os.path.dirname(d))
    dirs += [p for p in site.getsitepackages() + [site.getusersitepackages()] if os.path.isdir(p)]
    return list(dict.fromkeys(dirs))


def _default_candidates() -> list[str]:
    """Where libcusparse may be, most likely first (see the module docstring)."""
    try:        # loads CuPy's libcusparse, so /proc/self/maps then names it
        import cupy_backends.cuda.libs.cusparse  # noqa: F401
    except Exception:
        pass
    out = _loaded_paths()
    for site in _site_dirs():
        for pat in ("nvidia/cusparse/lib/libcusparse.so*", "nvidia/cu13/lib/libcusparse.so*",
                    "nvidia/cu12/lib/libcusparse.so*", "torch/lib/libcusparse.so*"):
            out += sorted(glob.glob(os.path.join(site, pat)), reverse=True)
    for env in ("CUDA_PATH", "CUDA_HOME"):
        if os.environ.get(env):
            out += sorted(glob.glob(os.path.join(os.environ[env], "lib*", "libcusparse.so*")), reverse=True)
    out += sorted(glob.glob("/usr/local/cuda/lib64/libcusparse.so*"), reverse=True)
    found = ctypes.util.find_library("cusparse")
    out += [found] if found else []
    out += ["libcusparse.so.12", "libcusparse.so"]
    return list(dict.fromkeys(out))


_CANDIDATES = _default_candidates   # monkeypatched by the tests
_LIB = None                         # the bound library, once found


def _open(path: str):
    return ctypes.CDLL(path)


_VP, _I64, _INT = ctypes.c_void_p, ctypes.c_int64, ctypes.c_int
#: name -> argtypes (every function returns cusparseStatus_t, an int)
_SIGNATURES = {
    "cusparseCreate": [ctypes.POINTER(_VP)],
    "cusparseDestroy": [_VP],
    "cusparseSetStream": [_VP, _VP],
    "cusparseCreateSlicedEll": [ctypes.POINTER(_VP), _I64, _I64, _I64, _I64, _I64, _VP, _VP, _VP,
                                _INT, _INT, _INT, _INT],
    "cusparseDestroySpMat": [_VP],
    "cusparseCreateDnVec": [ctypes.POINTER(_VP), _I64, _VP, _INT],
    "cusparseDestroyDnVec": [_VP],
    "cusparseSpMV_bufferSize": [_VP, _INT, _VP, _VP, _VP, _VP, _VP, _INT, _INT,
                                ctypes.POINTER(ctypes.c_size_t)],
    "cusparseSpMV": [_VP, _INT, _VP, _VP, _VP, _VP, _VP, _INT, _INT, _VP],
}


def load_cusparse():
    """The ctypes-bound libcusparse (argtypes and restype set on every function used), or
    :class:`BackendUnavailable`."""
    global _LIB
    if _LIB is not None:
        return _LIB
    tried, lib, path = [], None, None
    for path in _CANDIDATES():
        try:
            lib = _open(path)
            break
        except OSError as exc:
            tried.append(f"{path} ({exc})")
    if lib is None:
        raise BackendUnavailable(problem(
            "libcusparse (cuSPARSE SELL baseline)", "a loadable libcusparse.so.12 (CUDA >= 12.1)",
            f"none found; tried {tried or 'no candidates'}",
            "pip install -e .[gpu] (CuPy brings cuSPARSE) or set CUDA_PATH"))
    missing = []
    for name, argtypes in _SIGNATURES.items():
        try:
            fn = getattr(lib, name)
        except AttributeError:
            missing.append(name)
            continue
        fn.argtypes, fn.restype = argtypes, ctypes.c_int
    if missing:
        raise BackendUnavailable(problem(
            f"libcusparse at {path}", "cuSPARSE >= 12.1 (CUDA 12.1+) with the sliced-ELL API",
            f"missing {', '.join(missing)}", "use the libcusparse of CUDA 12.1 or newer"))
    try:
        lib.cusparseGetErrorName.restype = ctypes.c_char_p
        lib.cusparseGetErrorName.argtypes = [_INT]
    except AttributeError:
        pass
    _LIB = lib
    return lib


def _cupy(what: str):
    from .vendor import _cupy as get
    return get(what)


class CusparseSell(Method):
    """cuSPARSE SELL SpMV through ctypes (see the module docstring)."""

    name = "cusparse_sell"
    events = "cupy"

    def __init__(self, p: Problem, slice_size: int = SLICE_SIZE):
        self.problem = p
        self._handle = self._A = self._x = self._y = None
        if p.kind != "spmv":
            raise OptionError(problem("cusparse_sell", "an SpMV problem (k=None)", f"{p.kind} k={p.k}",
                                      "use cusparse (CSR) for SpMM"))
        vtype, ctype = value_types(p.dtype)
        cp = self._cp = _cupy("cuSPARSE SELL (CuPy for the device arrays)")
        lib = self._lib = load_cusparse()
        from reference import sell
        S = sell.encode(p.A, p.dtype, slice_size=slice_size)
        self.format_bytes = S.nbytes
        self.row_extra = dict(sell_padding=S.n_padding, sell_entries=S.n_entries)
        self._offsets, self._cols = cp.asarray(S.slice_offsets), cp.asarray(S.col_ind)
        # cuSPARSE may reject null pointers for empty arrays: keep every array >= 1 element
        self._vals = cp.asarray(S.values if S.values.size else np.zeros(1, p.dtype))
        if not S.col_ind.size:
            self._cols = cp.full(1, -1, dtype=np.int32)
        self._X = cp.asarray(p.X)
        self._Y = cp.zeros(max(p.shape[0], 1), dtype=p.dtype)
        cdt = np.float64 if ctype == CUDA_R_64F else np.float32
        self._alpha, self._beta = np.ones(1, cdt), np.zeros(1, cdt)
        h = _VP()
        _check("cusparseCreate", lib.cusparseCreate(ctypes.byref(h)))
        self._handle = h
        _check("cusparseSetStream", lib.cusparseSetStream(h, _VP(cp.cuda.get_current_stream().ptr)))
        A = _VP()
        _check("cusparseCreateSlicedEll", lib.cusparseCreateSlicedEll(
            ctypes.byref(A), p.shape[0], p.shape[1], S.nnz, S.n_entries, slice_size,
            _VP(self._offsets.data.ptr), _VP(self._cols.data.ptr), _VP(self._vals.data.ptr),
            CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, vtype))
        self._A = A
        x, y = _VP(), _VP()
        _check("cusparseCreateDnVec", lib.cusparseCreateDnVec(ctypes.byref(x), p.shape[1],
                                                              _VP(self._X.data.ptr), vtype))
        self._x = x
        _check("cusparseCreateDnVec", lib.cusparseCreateDnVec(ctypes.byref(y), p.shape[0],
                                                              _VP(self._Y.data.ptr), vtype))
        self._y = y
        size = ctypes.c_size_t(0)
        _check("cusparseSpMV_bufferSize", lib.cusparseSpMV_bufferSize(
            h, CUSPARSE_OPERATION_NON_TRANSPOSE, self._alpha.ctypes.data, A, x,
            self._beta.ctypes.data, y, ctype, CUSPARSE_SPMV_SELL_ALG1, ctypes.byref(size)))
        self._buf = cp.empty(max(int(size.value), 1), dtype=np.uint8)
        self._ctype = ctype
        self.impl = (f"ctypes cusparseSpMV (CUSPARSE_SPMV_SELL_ALG1, slice {slice_size}, "
                     f"buffer {int(size.value)} B)")
        self._args = (h, CUSPARSE_OPERATION_NON_TRANSPOSE, _VP(self._alpha.ctypes.data), A, x,
                      _VP(self._beta.ctypes.data), y, ctype, CUSPARSE_SPMV_SELL_ALG1,
                      _VP(self._buf.data.ptr))

    def run(self):
        _check("cusparseSpMV", self._lib.cusparseSpMV(*self._args))

    def _result(self):
        return self._cp.asnumpy(self._Y[:self.problem.shape[0]])

    def _destroy(self):
        lib = self.__dict__.get("_lib")
        if lib is None:
            return
        for attr, fn in (("_x", "cusparseDestroyDnVec"), ("_y", "cusparseDestroyDnVec"),
                         ("_A", "cusparseDestroySpMat"), ("_handle", "cusparseDestroy")):
            obj = self.__dict__.get(attr)
            if obj is not None:
                self.__dict__[attr] = None
                getattr(lib, fn)(obj)

    def close(self):
        """Destroy the descriptors and the handle, then drop the device buffers."""
        self._destroy()
        super().close()

    def __del__(self):
        try:
            self._destroy()
        except Exception:       # noqa: BLE001 - interpreter shutdown
            pass
