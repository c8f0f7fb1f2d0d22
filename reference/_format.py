"""The frozen, checksummed data of the reference: :class:`Checksummed` (read-only arrays and a
CRC-32, for the formats and GeneralSparse's plans), :class:`SparseFormat` (the template every
format's matrix class follows, with ``validate``) and :func:`require_encoded`.
"""
from __future__ import annotations

import dataclasses
import functools
import typing
import zlib
from typing import ClassVar, Iterator

import numpy as np

from ._errors import ChecksumError, FormatError, NotEncodedError, describe, problem
from ._input import INDEX_DTYPES, VALUE_DTYPES

# --------------------------------------------------------------------------------------
# Base class of the format dataclasses
# --------------------------------------------------------------------------------------


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
