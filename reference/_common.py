"""Pieces shared by every reference format: typed errors, input canonicalisation,
argument checks and the base class of the format dataclasses.

Plain NumPy/SciPy only: nothing under ``reference/`` imports numba.
"""
from __future__ import annotations

import dataclasses
from typing import Any, ClassVar, Iterator

import numpy as np
import scipy.sparse as sp

# --------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------


class SpmvlabError(Exception):
    """Base class of every error spmvlab raises on purpose."""


class ShapeError(SpmvlabError, ValueError):
    """An array or matrix has the wrong number of dimensions or the wrong size."""


class DTypeError(SpmvlabError, TypeError):
    """An array has a dtype the operation does not accept."""


class LayoutError(SpmvlabError, ValueError):
    """An array is not laid out as required (e.g. not C-contiguous)."""


class FormatError(SpmvlabError, ValueError):
    """A format's arrays are inconsistent (raised by ``validate``)."""


class StreamError(FormatError):
    """An encoded stream is truncated or corrupt."""


class IndexOverflowError(SpmvlabError, OverflowError):
    """A dimension or count does not fit the index type a format or kernel uses."""


class OptionError(SpmvlabError, ValueError):
    """An encoding or kernel option has an unsupported value."""


def problem(field: str, expected: str, received: Any, fix: str | None = None) -> str:
    """Build the one error-message shape used everywhere: field, expected, received, fix."""
    msg = f"{field}: expected {expected}, received {received}"
    if fix:
        msg += f". Fix: {fix}"
    return msg


# --------------------------------------------------------------------------------------
# Dtypes
# --------------------------------------------------------------------------------------

VALUE_DTYPES = (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64))
INT32_MAX = np.iinfo(np.int32).max


def value_dtype(dtype, field: str = "dtype") -> np.dtype:
    """Normalise a value dtype and check it is one the formats store."""
    try:
        dt = np.dtype(dtype)
    except TypeError as exc:
        raise DTypeError(problem(field, "float16, float32 or float64", repr(dtype))) from exc
    if dt not in VALUE_DTYPES:
        raise DTypeError(problem(field, "float16, float32 or float64", dt,
                                 "pass dtype=np.float32 (or float16/float64)"))
    return dt


def accumulator_dtype(dtype) -> np.dtype:
    """Type the sums are accumulated in: float32 for float16/float32, float64 for float64."""
    dt = np.dtype(dtype)
    return np.dtype(np.float64) if dt == np.float64 else np.dtype(np.float32)


def index_dtype_for(*counts: int) -> np.dtype:
    """int32 unless one of the counts (nnz, rows, cols) needs int64."""
    return np.dtype(np.int64) if max(counts, default=0) > INT32_MAX else np.dtype(np.int32)


# --------------------------------------------------------------------------------------
# Input canonicalisation
# --------------------------------------------------------------------------------------


def _source_dtype_check(src_dtype: np.dtype, requested) -> np.dtype:
    if src_dtype.kind == "c":
        raise DTypeError(problem("A", "real values", f"complex dtype {src_dtype}",
                                 "pass A.real, or encode real and imaginary parts separately"))
    if requested is None:
        if src_dtype.kind != "f":
            raise DTypeError(problem(
                "A", "floating-point values (float16/float32/float64)",
                f"dtype {src_dtype}", "pass dtype=np.float32 to convert the values"))
        return value_dtype(src_dtype, "A.dtype")
    if src_dtype.kind not in "fiub":
        raise DTypeError(problem("A", "numeric values", f"dtype {src_dtype}"))
    return value_dtype(requested)


def resolve_dtype(A, dtype=None) -> np.dtype:
    """The value dtype a format will store for input ``A``: ``dtype``, else A's own."""
    src = np.dtype(A.dtype) if hasattr(A, "dtype") else np.asarray(A).dtype
    return _source_dtype_check(src, dtype)


def canonical_csr(A, dtype=None) -> sp.csr_matrix:
    """Any scipy.sparse matrix or dense 2-D array -> canonical CSR.

    Canonical means: sorted column indices, duplicates summed (in the input's precision,
    then cast), explicit zeros dropped, values of ``dtype`` (default: the input's), and
    indices int32 unless nnz or a dimension needs int64. float16 is returned as a float32
    matrix holding exactly the float16 values (scipy.sparse has no float16); callers that
    need the float16 array take ``.data.astype(np.float16)``, which is exact.
    """
    if sp.issparse(A):
        if len(A.shape) != 2:
            raise ShapeError(problem("A", "a 2-D matrix", f"shape {A.shape}"))
        dt = _source_dtype_check(np.dtype(A.dtype), dtype)
        csr = sp.csr_matrix(A, copy=True)  # also converts COO, keeps duplicates
        csr.sum_duplicates()
    else:
        arr = np.asarray(A)
        if arr.ndim != 2:
            raise ShapeError(problem("A", "a 2-D array or scipy.sparse matrix",
                                     f"{arr.ndim}-D array of shape {arr.shape}",
                                     "reshape it, e.g. A.reshape(1, -1) for one row"))
        dt = _source_dtype_check(arr.dtype, dtype)
        rows, cols = np.nonzero(arr)  # NaN counts as nonzero
        vals = arr[rows, cols]
        if vals.dtype == np.float16 or vals.dtype.kind != "f":  # scipy.sparse has no float16
            vals = vals.astype(np.float32 if vals.dtype.itemsize <= 2 else np.float64)
        csr = sp.csr_matrix((vals, (rows, cols)), shape=arr.shape)
        csr.sum_duplicates()
    n_rows, n_cols = csr.shape
    data = csr.data.astype(dt)
    data = data.astype(np.float32) if dt == np.float16 else data
    out = sp.csr_matrix((data, csr.indices, csr.indptr), shape=(n_rows, n_cols), copy=False)
    out.eliminate_zeros()  # zeros from the input and zeros produced by the cast
    idx = index_dtype_for(out.nnz, n_rows, n_cols)
    out.indices = out.indices.astype(idx, copy=False)
    out.indptr = out.indptr.astype(idx, copy=False)
    out.has_sorted_indices = True
    return out


def csr_value_array(csr: sp.csr_matrix, dtype) -> np.ndarray:
    """The stored values of a canonical CSR matrix in the format's value dtype (exact)."""
    return np.ascontiguousarray(csr.data.astype(np.dtype(dtype)))


def csr_from_arrays(shape, indptr, indices, values) -> sp.csr_matrix:
    """Build a canonical scipy CSR from arrays, float16 values returned as float32."""
    vals = np.asarray(values)
    if vals.dtype == np.float16:
        vals = vals.astype(np.float32)
    idx = index_dtype_for(len(vals), *shape)
    out = sp.csr_matrix((vals, np.asarray(indices, dtype=idx), np.asarray(indptr, dtype=idx)),
                        shape=tuple(int(s) for s in shape))
    out.has_sorted_indices = True
    return out


# --------------------------------------------------------------------------------------
# Argument checks for spmv / spmm
# --------------------------------------------------------------------------------------


def check_operand(x, n: int, dtype, name: str = "x", ndim: int = 1, allow_device=False):
    """Check an SpMV/SpMM operand's dimensions, length, dtype and layout.

    Returns it unchanged (a host or device array). ``n`` is the required leading length.
    """
    shape = getattr(x, "shape", None)
    xdt = getattr(x, "dtype", None)
    if shape is None or xdt is None:
        raise DTypeError(problem(name, f"a NumPy{' or device' if allow_device else ''} array",
                                 type(x).__name__, f"pass np.asarray({name}, dtype=np.{np.dtype(dtype).name})"))
    if len(shape) != ndim:
        want = f"a {ndim}-D array" + (" (n_cols, k)" if ndim == 2 else "")
        raise ShapeError(problem(name, want, f"{len(shape)}-D array of shape {tuple(shape)}"))
    if shape[0] != n:
        raise ShapeError(problem(f"{name}.shape[0]", f"{n} (the matrix's column count)", shape[0]))
    if np.dtype(xdt) != np.dtype(dtype):
        raise DTypeError(problem(f"{name}.dtype", f"{np.dtype(dtype)} (the matrix's value dtype)",
                                 np.dtype(xdt), f"pass {name}.astype(np.{np.dtype(dtype).name})"))
    if not _is_c_contiguous(x):
        raise LayoutError(problem(name, "a C-contiguous array", "a non-contiguous view",
                                  f"pass np.ascontiguousarray({name})"))
    return x


def check_out(out, shape, dtype, name: str = "out"):
    if tuple(getattr(out, "shape", ())) != tuple(shape):
        raise ShapeError(problem(f"{name}.shape", tuple(shape), tuple(getattr(out, "shape", ()))))
    if np.dtype(out.dtype) != np.dtype(dtype):
        raise DTypeError(problem(f"{name}.dtype", np.dtype(dtype), np.dtype(out.dtype)))
    if not _is_c_contiguous(out):
        raise LayoutError(problem(name, "a C-contiguous array", "a non-contiguous view"))
    return out


def _is_c_contiguous(a) -> bool:
    flags = getattr(a, "flags", None)
    if flags is not None:
        try:
            return bool(flags["C_CONTIGUOUS"])
        except (KeyError, TypeError):
            return bool(getattr(flags, "c_contiguous", True))
    return bool(getattr(a, "is_c_contiguous", lambda: True)())


# --------------------------------------------------------------------------------------
# Base class of the format dataclasses
# --------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, eq=False)
class SparseFormat:
    """Shared behaviour of the frozen format dataclasses.

    Subclasses are frozen dataclasses whose ``np.ndarray`` fields are the stored arrays,
    plus ``shape`` and their encoding options. The arrays are made read-only on creation.
    """

    format_name: ClassVar[str] = "?"

    def __post_init__(self):
        for name, arr in self.arrays():
            if arr.flags.writeable:
                arr.setflags(write=False)

    def arrays(self) -> Iterator[tuple[str, np.ndarray]]:
        """(name, array) for every array the format stores."""
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if isinstance(v, np.ndarray):
                yield f.name, v

    @property
    def nbytes(self) -> int:
        """Every byte of every array the format stores."""
        return int(sum(a.nbytes for _, a in self.arrays()))

    @property
    def n_rows(self) -> int:
        return int(self.shape[0])

    @property
    def n_cols(self) -> int:
        return int(self.shape[1])

    def options(self) -> dict:
        """The encoding options (every non-array field except shape)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
                if f.name != "shape" and not isinstance(getattr(self, f.name), np.ndarray)}

    def summary(self) -> str:
        parts = ", ".join(f"{n}: {a.dtype}[{a.size}]" for n, a in self.arrays())
        return f"{type(self).__name__}(shape={self.shape}, {parts}, nbytes={self.nbytes})"

    __repr__ = summary

    # helpers for validate() -------------------------------------------------------------
    def _require(self, ok: bool, field: str, expected: str, received, fix: str | None = None):
        if not ok:
            raise FormatError(problem(f"{type(self).__name__}.{field}", expected, received, fix))

    def _check_shape_field(self):
        s = self.shape
        self._require(isinstance(s, tuple) and len(s) == 2 and all(int(v) >= 0 for v in s),
                      "shape", "a tuple of two non-negative ints", s)

    def _check_indptr(self, name: str, ptr: np.ndarray, n_rows: int, total: int):
        self._require(ptr.ndim == 1 and ptr.size == n_rows + 1, name,
                      f"{n_rows + 1} entries (rows + 1)", ptr.size)
        self._require(ptr.dtype.kind == "i", f"{name}.dtype", "a signed integer dtype", ptr.dtype)
        if ptr.size:
            self._require(int(ptr[0]) == 0, f"{name}[0]", "0", int(ptr[0]))
            self._require(int(ptr[-1]) == total, f"{name}[-1]", f"{total} (stored entries)",
                          int(ptr[-1]))
            self._require(bool(np.all(np.diff(ptr) >= 0)), name, "non-decreasing row pointers",
                          "a decreasing step")
