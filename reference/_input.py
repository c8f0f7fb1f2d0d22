"""Input into the formats: value dtypes, the lossy-conversion rule, the memory limit, the
boundary check of a user's matrix (:func:`check_input`), canonical CSR, and the checks of
SpMV/SpMM operands. Plain NumPy/SciPy.
"""
from __future__ import annotations

import dataclasses
import math
import os
import sys
import warnings

import numpy as np
import scipy.sparse as sp

from ._errors import (
    DTypeError, InputError, LayoutError, LossyConversionError, LossyConversionWarning,
    OptionError, ShapeError, SizeLimitError, describe, problem,
)

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
    if allow_device:
        off = device_offset(x)
        if off:
            raise LayoutError(problem(
                f"{name}'s device address", f"a multiple of {DEVICE_ALIGN} bytes, where CUDA "
                f"allocations start (the kernels read {name} in vectors of up to {DEVICE_ALIGN} "
                "bytes, which fault on a misaligned address)", f"{off} bytes past one (a view "
                "into a larger array?)", f"pass a copy: {name}.copy() (CuPy, numba) or "
                f"{name}.clone() (torch)"))
    return x


#: the boundary a device operand's data must start on (see :func:`check_operand`)
DEVICE_ALIGN = 16


def device_offset(a) -> int:
    """How many bytes past a :data:`DEVICE_ALIGN` boundary the data of CUDA array ``a``
    starts (0 for host arrays and arrays without an address, e.g. the simulator's)."""
    cai = getattr(a, "__cuda_array_interface__", None) if not isinstance(a, np.ndarray) else None
    if not isinstance(cai, dict) or not cai.get("data"):
        return 0
    return int(cai["data"][0] or 0) % DEVICE_ALIGN


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
