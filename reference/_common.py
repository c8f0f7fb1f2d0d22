"""Pieces shared by every reference format: typed errors, input canonicalisation,
argument checks and the base class of the format dataclasses.

Plain NumPy/SciPy only: nothing under ``reference/`` imports numba.
"""
from __future__ import annotations

import dataclasses
import functools
import math
import os
import sys
import typing
import warnings
import zlib
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
    """An encoded stream or a saved file is truncated, corrupt, of another layout version or
    not what was asked for."""


class DecodeError(StreamError):
    """An entropy-coded stream (``reference.tans``, ``reference.dtans``, the words of
    ``reference.csr_dtans``) cannot be decoded: it ends early, has words left over, holds a
    word out of range, names an unused slot or an escape that does not fit."""


class ChecksumError(FormatError):
    """A matrix's format name, shape, options or arrays no longer match the checksum computed
    when it was built (a corrupted or replaced array, shape or option)."""


class NotEncodedError(SpmvlabError, TypeError):
    """A raw matrix (scipy.sparse, a dense array) or another format's matrix was passed where
    an encoded matrix of one format is expected."""


class IndexOverflowError(SpmvlabError, OverflowError):
    """A dimension or count does not fit the index type a format or kernel uses."""


class OptionError(SpmvlabError, ValueError):
    """An encoding or kernel option has an unsupported value."""


class InputError(SpmvlabError, ValueError):
    """A matrix handed in by a user is malformed in a way scipy.sparse does not check when it
    builds one from arrays: row pointers that do not start at 0, end at the entry count or
    never decrease; an index outside the matrix; arrays of different lengths. Raised by
    :func:`check_input` before any encoder, scipy routine or kernel reads the arrays."""


class SizeLimitError(SpmvlabError, MemoryError):
    """Honouring a size that came from outside (a matrix's shape, a file's header, an
    encoding option that inserts entries) would allocate more than :func:`memory_limit`
    bytes. Nothing was allocated; the message says what asked for how much."""


class LossyConversionError(SpmvlabError, ValueError):
    """Converting the values to the value dtype loses more than rounding: a finite value
    overflows to +-inf, or a nonzero underflows to zero or to a subnormal (see
    :func:`check_conversion`). ``loss`` is the :class:`ConversionLoss` (counts, first entry)."""

    def __init__(self, message: str, loss: "ConversionLoss | None" = None):
        super().__init__(message)
        self.loss = loss


class SizeWarning(UserWarning):
    """An encoding option the caller chose explicitly makes a matrix store more bytes than
    plain CSR would (e.g. MACKO's narrow column steps on a matrix with long gaps); the message
    gives both sizes and the option that avoids it. Issued once per encode."""


class LossyConversionWarning(UserWarning):
    """A lossy conversion was accepted (``lossy=True``): issued once per encode, with the counts;
    ``loss`` is the :class:`ConversionLoss`."""

    def __init__(self, message: str, loss: "ConversionLoss | None" = None):
        super().__init__(message)
        self.loss = loss


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
#: the index dtypes formats store (native byte order)
INDEX_DTYPES = (np.dtype(np.int32), np.dtype(np.int64))


def value_dtype(dtype, field: str = "dtype", allowed=None, what: str | None = None) -> np.dtype:
    """Normalise a value dtype and check it is one the formats store (or one of ``allowed``,
    e.g. a kernel's dtypes; ``what`` names that kernel in the message). The one dtype check."""
    ok = VALUE_DTYPES if allowed is None else tuple(np.dtype(a) for a in allowed)
    expected = ("float16, float32 or float64" if allowed is None
                else f"one of {', '.join(d.name for d in ok)}" + (f" for this {what}" if what else ""))
    try:
        dt = np.dtype(dtype)
    except TypeError as exc:
        raise DTypeError(problem(field, expected, repr(dtype))) from exc
    if dt not in ok:
        raise DTypeError(problem(field, expected, dt,
                                 None if allowed is not None else "pass dtype=np.float32 (or float16/float64)"))
    return dt


def accumulator_dtype(dtype) -> np.dtype:
    """Type the sums are accumulated in: float32 for float16/float32, float64 for float64."""
    dt = np.dtype(dtype)
    return np.dtype(np.float64) if dt == np.float64 else np.dtype(np.float32)


def triplet_product(rows, cols, vals, n_rows: int, B, dtype) -> np.ndarray:
    """A @ B for A given as (row, column, value) triplets in row-major order and B a vector
    or a (n_cols, k) matrix: products and sums in the accumulator type of ``dtype`` (each
    row's sum in triplet order), the result in ``dtype``. The formats' reference products
    once they have decoded their nonzeros."""
    acc = accumulator_dtype(dtype)
    B = np.asarray(B).astype(acc)
    out = np.zeros((n_rows,) + B.shape[1:], dtype=acc)
    v = np.asarray(vals).astype(acc)
    np.add.at(out, rows, (v if B.ndim == 1 else v[:, None]) * B[cols])
    return out.astype(dtype)


def index_dtype_for(*counts: int) -> np.dtype:
    """int32 unless one of the counts (nnz, rows, cols) needs int64."""
    return np.dtype(np.int64) if max(counts, default=0) > INT32_MAX else np.dtype(np.int32)


# --------------------------------------------------------------------------------------
# Lossy value conversion
# --------------------------------------------------------------------------------------

#: what ``lossy=True`` does with each kind of loss (said once: errors, warnings, docs)
LOSSY_EFFECT = ("finite values that overflow are stored as +-inf, nonzeros that underflow to "
                "zero are dropped, nonzeros that underflow to a subnormal are kept as rounded")


@dataclasses.dataclass(frozen=True)
class ConversionLoss:
    """What converting a matrix's stored values from ``source`` to ``dtype`` lost beyond
    rounding: how many entries of each kind, and the first one in row-major order as
    (row, column, value before, value after)."""

    source: np.dtype
    dtype: np.dtype
    overflow: int        # finite -> +-inf
    to_zero: int         # nonzero -> 0 (the entry disappears)
    to_subnormal: int    # nonzero -> a subnormal (fewer significant bits than the dtype has)
    first: tuple

    @property
    def counts(self) -> dict:
        return {"overflow": self.overflow, "underflow to zero": self.to_zero,
                "underflow to subnormal": self.to_subnormal}

    def describe(self) -> str:
        """'converting X to Y: N entries overflowing to +-inf, ... (first: row r, column c,
        v -> w)'."""
        row, col, before, after = self.first
        return (f"converting {self.source.name} to {self.dtype.name}: {self.overflow} "
                f"{'entry' if self.overflow == 1 else 'entries'} overflowing to +-inf, "
                f"{self.to_zero} underflowing to zero, {self.to_subnormal} underflowing to a "
                f"subnormal (first: row {row}, column {col}, {before!s} -> {after!s})")

    def error(self, field: str = "A", accept: str = "pass lossy=True") -> LossyConversionError:
        """The :class:`LossyConversionError` for this loss; ``accept`` says how a caller accepts
        it (the CLI: ``pass --lossy``)."""
        fi = np.finfo(self.dtype)
        return LossyConversionError(problem(
            field, f"values that convert to {self.dtype.name} without overflow or underflow "
                   f"(finite magnitudes up to {fi.max:g}, nonzero ones from {fi.smallest_normal:g})",
            self.describe(),
            f"{accept} to accept the loss ({LOSSY_EFFECT}), or scale the matrix into that "
            "range, or choose a wider dtype"), self)

    def accepted(self, field: str = "A", by: str = "lossy=True") -> str:
        """The warning's text when ``by`` accepted the loss."""
        return f"{field}: accepted ({by}): {self.describe()}; {LOSSY_EFFECT}"


def cast_values(src: np.ndarray, dtype) -> np.ndarray:
    """``src.astype(dtype)`` (no copy if it already has it) without NumPy's overflow warning:
    :func:`check_conversion` reports what a cast loses."""
    with np.errstate(over="ignore", under="ignore"):
        return src.astype(np.dtype(dtype), copy=False)


def check_conversion(src: np.ndarray, dst: np.ndarray, indptr: np.ndarray, indices: np.ndarray,
                     lossy: bool = False, field: str = "A") -> ConversionLoss | None:
    """Check ``dst = src.astype(dtype)`` (the stored values of a CSR matrix with ``indptr`` and
    ``indices``, duplicates already summed) for loss beyond rounding. The one such rule.

    Lossy: a finite value that becomes +-inf (overflow), and a nonzero value that becomes zero
    or a subnormal and is not exactly representable there (underflow, as IEEE 754 defines it:
    tiny and inexact). Not lossy: ordinary rounding of the mantissa to the dtype's precision,
    NaN and +-inf (they stay as they are), exact subnormals, and any conversion to the same
    dtype or a wider float. Returns None if nothing was lost; otherwise raises
    :class:`LossyConversionError` naming the counts and the first entry, or with ``lossy=True``
    issues one :class:`LossyConversionWarning` and returns the :class:`ConversionLoss`.
    """
    src, dst = np.asarray(src), np.asarray(dst)
    if src.dtype == dst.dtype or (src.dtype.kind in "fb" and src.dtype.itemsize <= dst.dtype.itemsize):
        return None
    # rounding is monotone, so only a value beyond the dtype's largest finite one can overflow
    # and only one below its smallest normal can underflow (compared in the source dtype: fast)
    fi = np.finfo(dst.dtype)
    big = np.flatnonzero((src > fi.max) | (src < -fi.max))
    over = big[np.isfinite(src[big]) & np.isinf(dst[big])]
    if src.dtype.kind == "f":
        small = np.flatnonzero((src < fi.smallest_normal) & (src > -fi.smallest_normal))
        under = small[(np.abs(dst[small]) < fi.smallest_normal)    # zero or subnormal ...
                      & (dst[small] != src[small])]              # ... and inexact
    else:                                           # integers: nonzeros are at least 1
        under = big[:0]
    if not (over.size or under.size):
        return None
    k = int(min(over[:1].tolist() + under[:1].tolist()))
    row = int(np.searchsorted(indptr, k, side="right")) - 1
    to_zero = int(np.count_nonzero(dst[under] == 0))
    loss = ConversionLoss(source=src.dtype, dtype=dst.dtype, overflow=int(over.size),
                          to_zero=to_zero, to_subnormal=int(under.size) - to_zero,
                          first=(row, int(indices[k]), src[k], dst[k]))
    if not lossy:
        raise loss.error(field)
    warnings.warn(LossyConversionWarning(loss.accepted(field), loss),
                  stacklevel=_caller_stacklevel())
    return loss


_OWN_DIRS = tuple(os.path.dirname(os.path.abspath(__file__)).rsplit(os.sep, 1)[0] + os.sep + d + os.sep
                  for d in ("reference", "spmvlab"))


def _caller_stacklevel() -> int:
    """``stacklevel`` that points a warning at the first frame outside reference/ and spmvlab/."""
    frame, level = sys._getframe(1), 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_OWN_DIRS):
        frame, level = frame.f_back, level + 1
    return level


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
    src = np.dtype(A.dtype) if hasattr(A, "dtype") else check_input(A).dtype
    return _source_dtype_check(src, dtype)


# --------------------------------------------------------------------------------------
# The memory limit: sizes from outside are compared with it before anything is allocated
# --------------------------------------------------------------------------------------

#: environment variable that sets the limit: bytes, or a number followed by K, M, G or T
#: (powers of 1024)
MEMORY_LIMIT_ENV = "SPMVLAB_MEMORY_LIMIT"
#: the default limit, as a fraction of the machine's physical memory
MEMORY_FRACTION = 0.5
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def parse_bytes(text: str, field: str = MEMORY_LIMIT_ENV) -> int:
    """'4096', '512M', '1.5G', '2T' -> bytes (K, M, G, T are powers of 1024; a trailing 'B'
    or 'iB' is allowed). :class:`OptionError` naming ``field`` otherwise."""
    t = str(text).strip().upper().removesuffix("IB").removesuffix("B")
    unit = t[-1:] if t[-1:] in _UNITS and t[-1:] else ""
    try:
        value = float(t[:len(t) - len(unit)])
    except ValueError:
        value = -1.0
    if not (value >= 0 and math.isfinite(value)):
        raise OptionError(problem(field, "a size in bytes such as 8000000000, 512M, 16G or 1T",
                                  repr(text)))
    return int(value * _UNITS[unit])


def format_bytes(n: int) -> str:
    """A byte count for people: '16.0 GiB', '78 B'."""
    n = int(n)
    for unit, scale in (("EiB", 1 << 60), ("PiB", 1 << 50), ("TiB", 1 << 40), ("GiB", 1 << 30),
                        ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


def physical_memory() -> int | None:
    """The machine's physical memory in bytes, or None where the OS does not say."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, ValueError, OSError):
        return None


def memory_limit() -> int:
    """Bytes that one input may make spmvlab allocate (a matrix's shape, a file's header):
    ``$SPMVLAB_MEMORY_LIMIT`` if set, else :data:`MEMORY_FRACTION` of the machine's memory
    (16 GiB where the OS does not say). Read at each call, so it can be changed at run time."""
    text = os.environ.get(MEMORY_LIMIT_ENV, "").strip()
    if text:
        return parse_bytes(text)
    mem = physical_memory()
    return int((mem if mem else 32 << 30) * MEMORY_FRACTION)


def check_size(nbytes: int, field: str, asks: str, fix: str) -> None:
    """Raise :class:`SizeLimitError` if ``nbytes`` (what ``field`` asks for: ``asks`` says
    how) exceeds :func:`memory_limit`; allocate nothing. The one such check."""
    limit = memory_limit()
    if nbytes > limit:
        source = (f"${MEMORY_LIMIT_ENV}" if os.environ.get(MEMORY_LIMIT_ENV, "").strip()
                  else f"{MEMORY_FRACTION:.0%} of this machine's memory")
        raise SizeLimitError(problem(
            field, f"at most {format_bytes(limit)} of memory (the limit: {source})",
            f"{asks}, which needs {format_bytes(nbytes)}",
            f"{fix}; or raise the limit with {MEMORY_LIMIT_ENV}=<bytes, e.g. 64G>"))


# --------------------------------------------------------------------------------------
# The input boundary: a user's matrix is checked once, before anything reads its arrays
# --------------------------------------------------------------------------------------

INT64_MAX = np.iinfo(np.int64).max
_SCIPY_FIX = ("scipy.sparse does not check index arrays passed to its constructors "
              "(A.check_format(full_check=True) does): rebuild A from valid arrays")


def _index_array(a, field: str, size: int | None) -> np.ndarray:
    """``a`` as a 1-D integer array (of ``size`` entries when given), else InputError."""
    if not (isinstance(a, np.ndarray) and a.ndim == 1 and a.dtype.kind in "iu"):
        raise InputError(problem(field, "a 1-D integer array", describe(a) if not isinstance(
            a, np.ndarray) else f"a {a.ndim}-D {a.dtype} array", _SCIPY_FIX))
    if size is not None and a.size != size:
        raise InputError(problem(field, f"{size} entries", a.size, _SCIPY_FIX))
    return a


def _check_range(a: np.ndarray, n: int, field: str, what: str, where) -> None:
    """Every entry of ``a`` in [0, n); ``where(k)`` names entry k for the message."""
    if not a.size:
        return
    lo, hi = int(a.min()), int(a.max())
    if lo >= 0 and hi < n:
        return
    bad = np.flatnonzero((a < 0) | (a >= n))
    k = int(bad[0])
    raise InputError(problem(
        field, f"{what} in [0, {n})", f"{int(a[k])} at {where(k)} ({bad.size} of {a.size} "
        f"out of range, from {lo} to {hi})", _SCIPY_FIX))


def _check_compressed(A, field: str) -> None:
    """CSR, CSC and BSR: row (column, block-row) pointers and indices."""
    fmt = A.format
    n_rows, n_cols = (int(s) for s in A.shape)
    R, C = A.blocksize if fmt == "bsr" else (1, 1)
    major, minor = (n_cols, n_rows) if fmt == "csc" else (n_rows // R, n_cols // C)
    lines, what = {"csr": ("row", "column indices"), "csc": ("column", "row indices"),
                   "bsr": ("block row", "block column indices")}[fmt]
    indptr = _index_array(A.indptr, f"{field}.indptr", major + 1)
    indices = _index_array(A.indices, f"{field}.indices", None)
    data = np.asarray(A.data)
    want = (indices.size,) if fmt != "bsr" else (indices.size, R, C)
    if data.shape != want:
        raise InputError(problem(f"{field}.data", f"shape {want} (one value per index)",
                                 f"shape {data.shape}", _SCIPY_FIX))
    if int(indptr[0]) != 0:
        raise InputError(problem(f"{field}.indptr[0]", "0", int(indptr[0]), _SCIPY_FIX))
    if int(indptr[-1]) != indices.size:
        raise InputError(problem(f"{field}.indptr[-1]", f"{indices.size} (the length of indices)",
                                 int(indptr[-1]), "call A.prune() if indices and data are "
                                 f"longer than the stored entries; else {_SCIPY_FIX}"))
    step = np.flatnonzero(indptr[1:] < indptr[:-1])
    if step.size:
        k = int(step[0])
        raise InputError(problem(f"{field}.indptr", f"non-decreasing {lines} pointers",
                                 f"indptr[{k}] = {int(indptr[k])} > indptr[{k + 1}] = "
                                 f"{int(indptr[k + 1])}", _SCIPY_FIX))
    _check_range(indices, minor, f"{field}.indices", what,
                 lambda k: f"entry {k} ({lines} {int(np.searchsorted(indptr, k, 'right')) - 1})")


def _check_coo(A, field: str) -> None:
    n = np.asarray(A.data).shape
    if len(n) != 1:
        raise InputError(problem(f"{field}.data", "a 1-D array", f"shape {n}", _SCIPY_FIX))
    for name, a, dim in (("row", A.row, A.shape[0]), ("col", A.col, A.shape[1])):
        a = _index_array(a, f"{field}.{name}", n[0])
        _check_range(a, int(dim), f"{field}.{name}", f"{name} indices", lambda k: f"entry {k}")


def check_input(A, field: str = "A"):
    """The one boundary check of a matrix a user hands in; returns what is safe to use.

    A scipy.sparse matrix or array: 2-D; CSR/CSC/BSR pointers of the right length, starting
    at 0, ending at the entry count and never decreasing, data one value per index; COO
    coordinates as long as the data; every index inside the shape (scipy builds matrices
    from arrays without checking, and its C routines then read out of bounds); row pointers
    of a CSR form within :func:`memory_limit` where building them allocates (COO, CSC, BSR).
    DIA, LIL and DOK are converted to COO (scipy's conversions only read in bounds) and
    checked as such. Anything else goes through ``np.asarray``: a ragged nested list raises
    :class:`ShapeError`. Returned: the sparse matrix (COO for DIA/LIL/DOK) or the array.
    Vectorised, O(entries + rows); raises :class:`InputError` naming the field, what was
    expected, what was found and where.
    """
    if sp.issparse(A):
        if len(A.shape) != 2:
            raise ShapeError(problem(field, "a 2-D matrix", f"shape {A.shape}"))
        if A.format in ("dia", "lil", "dok"):
            A = A.tocoo()
        if A.format in ("csr", "csc", "bsr"):
            _check_compressed(A, field)
        elif A.format == "coo":
            _check_coo(A, field)
        else:
            raise InputError(problem(field, "a CSR, CSC, COO, BSR, DIA, LIL or DOK matrix",
                                     f"scipy format {A.format!r}", "convert it with A.tocsr()"))
        if A.format != "csr":
            n_rows = int(A.shape[0])
            check_size(8 * (n_rows + 1), f"{field}.shape", f"a CSR form with {n_rows} rows",
                       "pass a matrix with fewer rows (every format stores a pointer per row)")
        return A
    try:
        arr = np.asarray(A)
    except ValueError as exc:        # numpy: "setting an array element with a sequence", ...
        raise ShapeError(problem(field, "a rectangular 2-D array or a scipy.sparse matrix",
                                 f"{type(A).__name__} that numpy cannot make an array of ({exc})",
                                 "give every row the same length")) from exc
    return arr


def rowmajor_increasing(rows: np.ndarray, cols: np.ndarray) -> bool:
    """Whether (row, column) pairs strictly increase in row-major order, compared pair by
    pair (a ``row * n_cols + col`` key overflows int64 for a valid matrix of 4 x 2**62)."""
    r0, r1, c0, c1 = rows[:-1], rows[1:], cols[:-1], cols[1:]
    return bool(np.all((r1 > r0) | ((r1 == r0) & (c1 > c0))))


def canonical_csr(A, dtype=None, lossy: bool = False) -> sp.csr_matrix:
    """Any scipy.sparse matrix or dense 2-D array -> canonical CSR, after :func:`check_input`.

    Canonical means: sorted column indices, duplicates summed (in the input's precision,
    then cast), explicit zeros dropped, values of ``dtype`` (default: the input's), and
    indices int32 unless nnz or a dimension needs int64. float16 is returned as a float32
    matrix holding exactly the float16 values (scipy.sparse has no float16); callers that
    need the float16 array take ``.data.astype(np.float16)``, which is exact.

    A cast that overflows or underflows (:func:`check_conversion`; rounding does not count)
    raises :class:`LossyConversionError`; with ``lossy=True`` it warns once
    (:class:`LossyConversionWarning`) and keeps the cast values: overflows become +-inf,
    values that underflow to zero are dropped like any zero, subnormals are kept.
    """
    A = check_input(A)     # the boundary: nothing below reads an unchecked index
    if sp.issparse(A):
        dt = _source_dtype_check(np.dtype(A.dtype), dtype)
        csr = sp.csr_matrix(A, copy=True)  # also converts COO, keeps duplicates
        csr.sum_duplicates()
    else:
        arr = A
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
    data = cast_values(csr.data, dt)
    check_conversion(csr.data, data, csr.indptr, csr.indices, lossy)
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
    if isinstance(out, np.ndarray) and not out.flags.writeable:
        raise LayoutError(problem(name, "a writeable array", "a read-only one",
                                  f"pass a writeable array, e.g. {name}=np.empty_like({name})"))
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


def describe(obj) -> str:
    """A short description of what was passed, for error messages."""
    if sp.issparse(obj):
        return f"scipy {type(obj).__name__} of shape {obj.shape}"
    if isinstance(obj, np.ndarray):
        return f"a {obj.ndim}-D NumPy array of shape {obj.shape}"
    return type(obj).__name__


def require_encoded(M, cls: type, also: tuple = (), fix: str | None = None):
    """``M`` if it is a ``cls`` (or one of ``also``, e.g. the device class), else
    :class:`NotEncodedError` saying how to encode it. The one rule for every function that
    takes an encoded matrix (references, kernel modules, ``spmvlab.io``)."""
    if isinstance(M, (cls, *also)):
        return M
    if fix is None:
        arg = "A.to_csr()" if isinstance(M, SparseFormat) else "A"
        fix = f"encode it first: M = {cls.__module__}.encode({arg})"
    names = " or ".join(c.__name__ for c in (cls, *also))
    raise NotEncodedError(problem("matrix", f"a {names}", describe(M), fix))


@functools.lru_cache(maxsize=None)
def _array_field_names(cls) -> tuple[str, ...]:
    """The fields a format class declares as ``np.ndarray``."""
    hints = typing.get_type_hints(cls)
    return tuple(f.name for f in dataclasses.fields(cls) if hints.get(f.name) is np.ndarray)


def _plain(v):
    """``v`` with NumPy scalars as Python ones (tuples, lists and dicts walked), so the
    checksum of a shape or option does not depend on the integer type holding it."""
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, (tuple, list)):
        return type(v)(_plain(e) for e in v)
    if isinstance(v, dict):
        return {k: _plain(e) for k, e in v.items()}
    return v


@dataclasses.dataclass(frozen=True, eq=False)
class Checksummed:
    """Frozen dataclasses whose arrays are read-only and whose content is checksummed: the
    encoded formats (:class:`SparseFormat`) and GeneralSparse's plans.

    The arrays are made read-only on creation, and ``checksum`` (keyword-only, not
    compared) is computed then: a CRC-32 over :meth:`_checksum_head` (what the class names
    besides its arrays) and every array's name, dtype, shape and bytes
    (:meth:`compute_checksum`). ``dataclasses.replace`` carries the old value, so an object
    whose arrays or other fields were replaced or corrupted no longer matches it and
    :meth:`verify_checksum` raises :class:`ChecksumError`. To build one from modified arrays
    on purpose, pass ``checksum=None`` (it is then computed over the new arrays).
    """

    checksum: int | None = dataclasses.field(default=None, kw_only=True, compare=False)
    #: how to make a sound object again (the fix of a ChecksumError)
    rebuild_fix: ClassVar[str] = "build it again from its source"

    def __post_init__(self):
        for name, arr in self.arrays():
            if arr.flags.writeable:
                arr.setflags(write=False)
        if self.checksum is None:
            object.__setattr__(self, "checksum", self.compute_checksum())

    def arrays(self) -> Iterator[tuple[str, np.ndarray]]:
        """(name, array) for every field that holds an array."""
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if isinstance(v, np.ndarray):
                yield f.name, v

    def _checksum_head(self) -> tuple:
        """What the checksum covers besides the arrays (a tuple with a stable repr)."""
        raise NotImplementedError

    def compute_checksum(self) -> int:
        """CRC-32 over :meth:`_checksum_head` and every array's name, dtype, shape and bytes
        (zlib's streaming CRC-32, one pass over the bytes; it detects every flip of up to 32
        adjacent bits)."""
        arrays = list(self.arrays())
        head = repr(self._checksum_head() + ([(n, a.dtype.str, a.shape) for n, a in arrays],))
        crc = zlib.crc32(head.encode())
        for _, a in arrays:
            data = np.ascontiguousarray(a)
            crc = zlib.crc32(repr(a.tolist()).encode() if a.dtype.hasobject else data, crc)
        return crc

    def verify_checksum(self):
        """Raise :class:`ChecksumError` unless ``checksum`` matches the object as it is now."""
        now = self.compute_checksum()
        if self.checksum != now:
            stored = f"{self.checksum:#010x}" if isinstance(self.checksum, int) else repr(self.checksum)
            raise ChecksumError(problem(
                f"{type(self).__name__}.checksum",
                f"{stored} (computed when it was built) to match it",
                f"{now:#010x} computed over its fields and arrays now",
                f"its arrays or fields changed after it was built (a corrupted or replaced "
                f"array): {self.rebuild_fix}; to build one from modified arrays on purpose, "
                "pass checksum=None"))
        return self

    def _require(self, ok: bool, field: str, expected: str, received, fix: str | None = None):
        if not ok:
            raise FormatError(problem(f"{type(self).__name__}.{field}", expected, received,
                                      fix or self.rebuild_fix))

    def _check_index_array(self, name: str, a: np.ndarray, size: int):
        self._require(a.dtype in INDEX_DTYPES, f"{name}.dtype", "int32 or int64", a.dtype)
        self._require(a.ndim == 1 and a.size == size, name, f"a 1-D array of {size} entries",
                      f"{a.ndim}-D, {a.size} entries" if a.ndim != 1 else f"{a.size} entries")

    def _check_indptr(self, name: str, ptr: np.ndarray, n_rows: int, total: int):
        self._check_index_array(name, ptr, n_rows + 1)
        self._require(int(ptr[0]) == 0, f"{name}[0]", "0", int(ptr[0]))
        self._require(int(ptr[-1]) == total, f"{name}[-1]", f"{total} (stored entries)",
                      int(ptr[-1]))
        self._require(bool(np.all(ptr[1:] >= ptr[:-1])), name, "non-decreasing row pointers",
                      "a decreasing step")


@dataclasses.dataclass(frozen=True, eq=False)
class SparseFormat(Checksummed):
    """Shared behaviour of the frozen format dataclasses.

    Subclasses are frozen dataclasses whose ``np.ndarray`` fields are the stored arrays (the
    values in one named ``values``), plus ``shape`` and their encoding options, and set
    ``format_name`` to their registry name. They implement ``_check_arrays()`` (the cheap
    checks) and ``_check_entries(canonical)`` (every entry); :meth:`validate` runs them.
    The arrays are read-only and checksummed (:class:`Checksummed`: the checksum covers the
    format name, the shape, the options and every array).
    """

    format_name: ClassVar[str] = "?"
    rebuild_fix: ClassVar[str] = "re-encode it from the source matrix"

    def arrays(self) -> Iterator[tuple[str, np.ndarray]]:
        """(name, array) for every array the format stores."""
        for name in self.array_names():
            v = getattr(self, name)
            if isinstance(v, np.ndarray):
                yield name, v

    def _checksum_head(self) -> tuple:
        return (self.format_name, _plain(self.shape), _plain(self.options()))

    @property
    def nbytes(self) -> int:
        """Every byte of every array the format stores."""
        return int(sum(a.nbytes for _, a in self.arrays()))

    @property
    def dtype(self) -> np.dtype:
        """The value dtype (every format keeps its values in an array named ``values``)."""
        return self.values.dtype

    @property
    def n_rows(self) -> int:
        return int(self.shape[0])

    @property
    def n_cols(self) -> int:
        return int(self.shape[1])

    @classmethod
    def array_names(cls) -> tuple[str, ...]:
        """The names of the arrays the format stores (its ``np.ndarray`` fields)."""
        return _array_field_names(cls)

    @classmethod
    def option_names(cls) -> tuple[str, ...]:
        """The names of the encoding options (every field but the arrays, ``shape`` and
        ``checksum``)."""
        skip = set(cls.array_names()) | {"shape", "checksum"}
        return tuple(f.name for f in dataclasses.fields(cls) if f.name not in skip)

    def options(self) -> dict:
        """The encoding options, by name."""
        return {name: getattr(self, name) for name in self.option_names()}

    def summary(self) -> str:
        parts = ", ".join(f"{n}: {a.dtype}[{a.size}]" for n, a in self.arrays())
        return f"{type(self).__name__}(shape={self.shape}, {parts}, nbytes={self.nbytes})"

    __repr__ = summary

    # validation -------------------------------------------------------------------------
    def validate(self, expensive: bool = False, *, canonical: bool = True,
                 checksum: bool = True) -> "SparseFormat":
        """Check the matrix is consistent; raise :class:`FormatError` (naming the field) if
        not, else return it.

        Cheap (always): the shape, every array's type, dtype and length, row pointers (the
        format's ``_check_arrays``). ``expensive=True`` also reads every entry
        (``_check_entries``): first what a kernel relies on to stay in bounds (every index in
        range; COO: rows in order), then, unless ``canonical=False``, the canonical form
        ``encode`` produces (sorted, no explicit zeros; MACKO: zeros inserted only where
        needed). ``checksum=True`` (default) also verifies the checksum, last, so that a
        structural error names its field (:class:`ChecksumError` otherwise).
        """
        self._check_common()
        self._check_arrays()
        if expensive:
            self._check_entries(canonical)
        if checksum:
            self.verify_checksum()
        return self

    @classmethod
    def checked(cls, M) -> "SparseFormat":
        """``M`` fully validated (expensive, canonical, checksum): what every function that
        reads a matrix it was handed calls first. :class:`NotEncodedError` if ``M`` is not a
        ``cls``."""
        return require_encoded(M, cls).validate(expensive=True)

    def _check_arrays(self):
        raise NotImplementedError

    def _check_entries(self, canonical: bool):
        raise NotImplementedError

    # helpers for validate() -------------------------------------------------------------
    def _check_common(self):
        """Shape, every array field an ndarray, values a 1-D array of a value dtype."""
        s = self.shape
        self._require(isinstance(s, tuple) and len(s) == 2 and all(
            isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)) and v >= 0
            for v in s), "shape", "a tuple of two non-negative ints", repr(s))
        for name in self.array_names():
            v = getattr(self, name)
            self._require(isinstance(v, np.ndarray), name, "a NumPy array", describe(v))
        v = self.values
        self._require(v.ndim == 1 and v.dtype in VALUE_DTYPES, "values",
                      "a 1-D float16/float32/float64 array", f"{v.ndim}-D {v.dtype}")

