"""Pieces shared by every reference format: typed errors, input canonicalisation,
argument checks and the base class of the format dataclasses.

Plain NumPy/SciPy only: nothing under ``reference/`` imports numba.
"""
from __future__ import annotations

import dataclasses
import functools
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


class LossyConversionError(SpmvlabError, ValueError):
    """Converting the values to the value dtype loses more than rounding: a finite value
    overflows to +-inf, or a nonzero underflows to zero or to a subnormal (see
    :func:`check_conversion`). ``loss`` is the :class:`ConversionLoss` (counts, first entry)."""

    def __init__(self, message: str, loss: "ConversionLoss | None" = None):
        super().__init__(message)
        self.loss = loss


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
    src = np.dtype(A.dtype) if hasattr(A, "dtype") else np.asarray(A).dtype
    return _source_dtype_check(src, dtype)


def canonical_csr(A, dtype=None, lossy: bool = False) -> sp.csr_matrix:
    """Any scipy.sparse matrix or dense 2-D array -> canonical CSR.

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
class SparseFormat:
    """Shared behaviour of the frozen format dataclasses.

    Subclasses are frozen dataclasses whose ``np.ndarray`` fields are the stored arrays (the
    values in one named ``values``), plus ``shape`` and their encoding options, and set
    ``format_name`` to their registry name. They implement ``_check_arrays()`` (the cheap
    checks) and ``_check_entries(canonical)`` (every entry); :meth:`validate` runs them.

    The arrays are made read-only on creation, and ``checksum`` (keyword-only, not an
    option, not compared) is computed then: a CRC-32 over the format name, the shape, the
    options and every array's name, dtype, shape and bytes (:meth:`compute_checksum`).
    ``dataclasses.replace`` carries the old value, so a matrix whose arrays, shape or options
    were replaced or corrupted no longer matches it and :meth:`validate` raises
    :class:`ChecksumError`. To build a matrix from modified arrays on purpose, pass
    ``checksum=None`` (it is then computed over the new arrays).
    """

    format_name: ClassVar[str] = "?"
    checksum: int | None = dataclasses.field(default=None, kw_only=True, compare=False)

    def __post_init__(self):
        for name, arr in self.arrays():
            if arr.flags.writeable:
                arr.setflags(write=False)
        if self.checksum is None:
            object.__setattr__(self, "checksum", self.compute_checksum())

    def arrays(self) -> Iterator[tuple[str, np.ndarray]]:
        """(name, array) for every array the format stores."""
        for name in self.array_names():
            v = getattr(self, name)
            if isinstance(v, np.ndarray):
                yield name, v

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

    # checksum ---------------------------------------------------------------------------
    def compute_checksum(self) -> int:
        """CRC-32 over the format name, shape, options and every array's name, dtype, shape
        and bytes (zlib, a few GB/s; it detects every flip of up to 32 adjacent bits)."""
        arrays = list(self.arrays())
        head = repr((self.format_name, _plain(self.shape), _plain(self.options()),
                     [(n, a.dtype.str, a.shape) for n, a in arrays]))
        crc = zlib.crc32(head.encode())
        for _, a in arrays:
            data = np.ascontiguousarray(a)
            crc = zlib.crc32(repr(a.tolist()).encode() if a.dtype.hasobject else data, crc)
        return crc

    def verify_checksum(self) -> "SparseFormat":
        """Raise :class:`ChecksumError` unless ``checksum`` matches the matrix as it is now."""
        now = self.compute_checksum()
        if self.checksum != now:
            stored = f"{self.checksum:#010x}" if isinstance(self.checksum, int) else repr(self.checksum)
            raise ChecksumError(problem(
                f"{type(self).__name__}.checksum",
                f"{stored} (computed when the matrix was built) to match it",
                f"{now:#010x} computed over its format name, shape, options and arrays now",
                "its arrays, shape or options changed after encoding (a corrupted or replaced "
                "array): re-encode it from the source matrix; to build a matrix from modified "
                "arrays on purpose, pass checksum=None"))
        return self

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
    def _require(self, ok: bool, field: str, expected: str, received, fix: str | None = None):
        if not ok:
            raise FormatError(problem(f"{type(self).__name__}.{field}", expected, received, fix))

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
