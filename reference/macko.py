"""MACKO: delta-coded column steps of a few bits, with explicit zeros where a step is too long.

MACKO (Macko & Boža, "MACKO: Sparse matrix-vector multiplication for low sparsity", Sec. 4.1)
stores a matrix like CSR, but instead of a column index per value it stores the *step* from
the previous stored column of the same row, in ``b = delta_bits`` bits (b in {1, 2, 4, 8}).
A step must lie in ``[1, 2**b]``; when a gap is longer, zeros are stored ("inserted") greedily
at column ``prev + 2**b`` until the real entry is within reach.

Conventions of this implementation (the byte layout every spmvlab kernel reads):

* columns are 0-based and a row's first step counts from column -1, so
  ``column_k = column_{k-1} + step_k`` with ``column_{-1} = -1``;
* the stored *code* is ``step - 1`` (the number of zero columns skipped), so
  ``column = (position within the row) + (running sum of the row's codes, inclusive)``;
* codes are packed ``8 // b`` per byte, entry ``k`` of the whole stored array at bit offset
  ``b * (k % (8 // b))`` of byte ``k // (8 // b)`` (for b = 4, the even entry is the low nibble;
  the layout is defined once, in ``reference/codec/packing.py``);
* one row-pointer array over the stored entries (inserted zeros included); rows are *not*
  aligned individually (kernels use reverse-offset alignment instead);
* ``values`` and the codes are padded at the end with zeros to a multiple of 8 entries, so a
  warp lane can load 8 entries at a time; ``row_ptr[-1]`` excludes this end padding.

Worked example (paper Fig. 3, b = 2): one row with values 1 2 3 4 at 1-based columns
2 5 12 13 stores values 1 2 0 3 4 with steps 2 3 4 3 1 (codes 1 2 3 2 0); the zero sits at
1-based column 9. Packed: byte 0 = 1 | 2<<2 | 3<<4 | 2<<6 = 0xB9, byte 1 = 0x00 (one code and
three padding codes).

Canonical input has no explicit zeros, so *every stored zero is an inserted one*;
``to_csr`` drops them and ``spmv``/``spmm`` skip them, which gives exactly the semantics of
``reference/csr.py`` (a kernel that multiplies the inserted zeros by ``x`` differs only where
``x`` holds Inf/NaN at an inserted zero's column: ``0 * Inf = NaN``).

Plain NumPy only (no numba); the fast encoder is ``spmvlab.encoders.macko``.
"""
from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import scipy.sparse as sp

from ._common import (
    FormatError, OptionError, SizeWarning, SparseFormat, _caller_stacklevel, accumulator_dtype,
    canonical_csr, check_operand, check_size, csr_from_arrays, csr_value_array, index_dtype_for,
    problem, resolve_dtype,
)
from .codec.packing import code_mask, code_shift, codes_per_byte
from .csr import row_ids

__all__ = [
    "DELTA_BITS", "AUTO", "PAD_ENTRIES", "stored_counts", "encoded_bytes", "choose_delta_bits", "MackoMatrix", "encode", "spmv", "spmm",
    "unpack_codes", "pack_codes", "columns", "row_steps", "stored_row_ids", "check_delta_bits",
]

#: the step widths MACKO supports (8 // b codes per byte)
DELTA_BITS = (1, 2, 4, 8)
#: ``values`` and the codes are padded at the end to a multiple of this many entries
PAD_ENTRIES = 8


def _is_delta_bits(v) -> bool:
    return (isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))
            and int(v) in DELTA_BITS)


def check_delta_bits(delta_bits) -> int:
    """``delta_bits`` as an int, or :class:`OptionError` if it is not one of 1, 2, 4, 8."""
    if not _is_delta_bits(delta_bits):
        raise OptionError(problem("delta_bits", f"one of {DELTA_BITS} (encode also takes "
                                  f"{AUTO!r})", repr(delta_bits),
                                  "use delta_bits=4 (the paper's default) or 'auto'"))
    return int(delta_bits)


#: ``encode(..., delta_bits=AUTO)``: the width of :data:`DELTA_BITS` that stores the fewest bytes
AUTO = "auto"


def _gaps(indptr: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """Column steps of canonical CSR arrays, int64 [nnz]: ``col - previous col`` in the row,
    counted from column -1 at a row's start (so every step is >= 1)."""
    cols = np.asarray(cols, dtype=np.int64)
    prev = np.concatenate(([-1], cols[:-1]))
    prev[indptr[:-1][np.diff(indptr) > 0]] = -1
    return cols - prev


def stored_counts(indptr: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """Stored entries (nonzeros plus inserted zeros) of canonical CSR arrays at each width of
    :data:`DELTA_BITS`, int64 [len(DELTA_BITS)]: a step ``g`` needs ``(g - 1) >> b`` zeros."""
    gap = _gaps(np.asarray(indptr, dtype=np.int64), cols) - 1
    return np.array([gap.size + int(np.sum(gap >> b)) for b in DELTA_BITS], dtype=np.int64)


def encoded_bytes(n_stored: int, n_rows: int, delta_bits: int, dtype) -> int:
    """``MackoMatrix.nbytes`` for ``n_stored`` entries in ``n_rows`` rows: padded values and
    codes, and the row pointers."""
    n = padded_length(n_stored)
    return (n * np.dtype(dtype).itemsize + n * int(delta_bits) // 8
            + (int(n_rows) + 1) * index_dtype_for(n).itemsize)


def choose_delta_bits(delta_bits, counts: np.ndarray, shape: tuple, nnz: int, dtype) -> int:
    """The width to encode with, from the stored counts of every width (:func:`stored_counts`):
    :data:`AUTO` -> the one that stores the fewest bytes (ties: 4, the paper's, then the
    narrowest); an explicit width whose inserted zeros make it store more bytes than CSR
    warns once (:class:`SizeWarning`, both sizes; the end padding of a tiny matrix alone
    does not). Either way the arrays the encoder allocates are checked
    against the memory limit first (``check_size``: a wide matrix with long gaps can ask for
    billions of inserted zeros). Shared by the reference and the fast encoder."""
    n_rows = int(shape[0])
    sizes = {b: encoded_bytes(int(c), n_rows, b, dtype) for b, c in zip(DELTA_BITS, counts)}
    if isinstance(delta_bits, str) and delta_bits == AUTO:
        b = min(DELTA_BITS, key=lambda w: (sizes[w], w != 4, w))
    else:
        b = check_delta_bits(delta_bits)
        idx = index_dtype_for(nnz, *shape).itemsize
        csr = nnz * (np.dtype(dtype).itemsize + idx) + (n_rows + 1) * idx
        if sizes[b] > csr and int(counts[DELTA_BITS.index(b)]) > nnz:     # zeros inserted
            best = min(DELTA_BITS, key=lambda w: (sizes[w], w != 4, w))
            warnings.warn(SizeWarning(
                f"delta_bits={b}: MACKO stores {sizes[b]:,} bytes "
                f"({sizes[b] / max(nnz, 1):.1f} per nonzero, {int(counts[DELTA_BITS.index(b)]) - nnz:,} "
                f"inserted zeros) where CSR stores {csr:,}; delta_bits='auto' picks {best} "
                f"({sizes[best]:,} bytes)"), stacklevel=_caller_stacklevel())
    n = padded_length(int(counts[DELTA_BITS.index(b)]))
    check_size(n * (np.dtype(dtype).itemsize + 1), "delta_bits",
               f"delta_bits={b}: {n:,} stored entries for {nnz:,} nonzeros of a {shape[0]} x "
               f"{shape[1]} matrix", "pass delta_bits='auto' (the width that stores the fewest "
               "bytes), or use a format without inserted zeros (csr)")
    return b


def padded_length(n_stored: int) -> int:
    """``n_stored`` rounded up to a multiple of :data:`PAD_ENTRIES`."""
    return -(-int(n_stored) // PAD_ENTRIES) * PAD_ENTRIES


@dataclasses.dataclass(frozen=True, eq=False, repr=False)
class MackoMatrix(SparseFormat):
    """MACKO storage (one row-pointer array; values and codes mutually aligned).

    values     : float16/32/64 [n_padded]  the row-major stored entries: each nonzero, plus
                 a 0 for every inserted zero, plus 0..7 zeros of end padding; ``n_padded``
                 is ``n_stored`` rounded up to a multiple of 8
    deltas     : uint8 [n_padded * delta_bits / 8]  the packed codes (``step - 1``), one per
                 entry of ``values``, ``8 // delta_bits`` per byte, entry k at bit offset
                 ``delta_bits * (k % (8 // delta_bits))`` of byte ``k // (8 // delta_bits)``;
                 padding codes are 0
    row_ptr    : int32 [rows + 1] (int64 only if ``n_padded`` needs it)  start of each row in
                 ``values``/codes; ``row_ptr[-1] = n_stored`` (end padding excluded)
    shape      : (rows, cols)
    delta_bits : bits per code, one of 1, 2, 4, 8 (steps in ``[1, 2**delta_bits]``)
    """

    values: np.ndarray
    deltas: np.ndarray
    row_ptr: np.ndarray
    shape: tuple
    delta_bits: int

    format_name = "macko"

    @property
    def n_stored(self) -> int:
        """Stored entries: nonzeros plus inserted zeros, end padding excluded."""
        return int(self.row_ptr[-1]) if self.row_ptr.size else 0

    @property
    def n_padded(self) -> int:
        """Length of ``values`` (``n_stored`` rounded up to a multiple of 8)."""
        return int(self.values.size)

    @property
    def nnz(self) -> int:
        """Nonzeros of the matrix (stored entries that are not inserted zeros)."""
        return int(np.count_nonzero(self.values[:self.n_stored]))

    @property
    def n_inserted(self) -> int:
        """Zeros inserted to keep every step within ``2**delta_bits``."""
        return self.n_stored - self.nnz

    def to_csr(self) -> sp.csr_matrix:
        """The canonical CSR matrix this encodes, exactly (inserted zeros dropped)."""
        self.validate(expensive=True)
        n = self.n_stored
        vals = self.values[:n]
        real = vals != 0                     # every stored zero is an inserted one
        before = np.concatenate(([0], np.cumsum(real, dtype=np.int64)))
        indptr = before[self.row_ptr]        # nonzeros before each row start
        return csr_from_arrays(self.shape, indptr, columns(self)[real], vals[real])

    def _check_arrays(self):
        """``delta_bits``, dtypes and lengths, padding to a multiple of 8 with zeros (values
        and codes), ``row_ptr`` starting at 0, non-decreasing and ending at ``n_stored``."""
        self._require(_is_delta_bits(self.delta_bits), "delta_bits", f"one of {DELTA_BITS}",
                      repr(self.delta_bits))
        b = int(self.delta_bits)
        self._require(self.deltas.ndim == 1 and self.deltas.dtype == np.uint8, "deltas",
                      "a 1-D uint8 array", f"{self.deltas.ndim}-D {self.deltas.dtype}")
        n_padded = self.values.size
        self._require(n_padded % PAD_ENTRIES == 0, "values.size",
                      f"a multiple of {PAD_ENTRIES} (end padding)", n_padded)
        self._require(self.deltas.size * 8 == n_padded * b, "deltas.size",
                      f"{n_padded * b // 8} bytes (one {b}-bit code per value)", self.deltas.size)
        want_idx = index_dtype_for(n_padded)
        self._require(self.row_ptr.dtype == want_idx, "row_ptr.dtype",
                      f"{want_idx} (int64 only if the stored count needs it)", self.row_ptr.dtype)
        self._check_index_array("row_ptr", self.row_ptr, self.n_rows + 1)
        n = int(self.row_ptr[-1])
        self._require(0 <= n <= n_padded and padded_length(n) == n_padded, "row_ptr[-1]",
                      f"the stored count, with values.size = {n_padded} its round-up to a "
                      f"multiple of {PAD_ENTRIES}", n)
        self._check_indptr("row_ptr", self.row_ptr, self.n_rows, n)
        self._require(bool(np.all(self.values[n:] == 0)), "values",
                      "zeros in the end padding", self.values[n:])
        per_byte = codes_per_byte(b)
        tail = _unpack(self.deltas[n // per_byte:], b)[n % per_byte:]   # codes n, n + 1, ...
        self._require(bool(np.all(tail == 0)), "deltas", "zero codes in the end padding",
                      "a nonzero padding code")

    def _check_entries(self, canonical: bool):
        """Every decoded column in ``[0, cols)``; canonical: zeros inserted only where needed
        (every stored zero has the longest step ``2**delta_bits`` and is not its row's last
        entry, which is what the greedy rule produces, and the fewest zeros possible)."""
        n = self.n_stored
        if not n:
            return
        last = int(row_steps(self).max()) - 1                 # the largest column
        self._require(last < self.n_cols, "deltas", f"decoded columns in [0, {self.n_cols})",
                      f"column {last}", "re-encode the matrix; a step points past the last column")
        if canonical:
            b = int(self.delta_bits)
            codes = unpack_codes(self)
            zero_at = np.flatnonzero(self.values[:n] == 0)
            self._require(bool(np.all(codes[zero_at] == (1 << b) - 1)), "values",
                          f"inserted zeros only with the longest step {1 << b}",
                          "a zero with a shorter step (not needed)")
            row_end = self.row_ptr[1:][stored_row_ids(self)[zero_at]]
            self._require(bool(np.all(zero_at + 1 < row_end)), "values",
                          "inserted zeros only before a later entry of the same row",
                          "a zero as the last entry of its row (not needed)")


def encode(A, delta_bits: int = 4, dtype=None, lossy: bool = False) -> MackoMatrix:
    """Any scipy.sparse matrix or dense 2-D array -> :class:`MackoMatrix`.

    ``delta_bits`` in {1, 2, 4, 8}, or ``"auto"``: the one that stores the fewest bytes
    (:func:`choose_delta_bits`, which also warns where an explicit width stores more than
    CSR); ``dtype`` the value dtype (default: A's own); ``lossy``: accept values that
    overflow or underflow in ``dtype`` (see ``canonical_csr``).
    """
    if not (isinstance(delta_bits, str) and delta_bits == AUTO):
        check_delta_bits(delta_bits)
    dt = resolve_dtype(A, dtype)
    csr = canonical_csr(A, dt, lossy)
    vals = csr_value_array(csr, dt)
    indptr = csr.indptr.astype(np.int64)
    gap = _gaps(indptr, csr.indices)             # >= 1: columns strictly increase in a row
    b = choose_delta_bits(delta_bits, stored_counts(indptr, csr.indices), csr.shape, csr.nnz, dt)
    max_step = 1 << b

    # a gap g needs (g - 1) // 2**b inserted zeros (each a step of 2**b), after which the
    # remaining step (g - 1) % 2**b + 1 lies in [1, 2**b]
    n_zeros = (gap - 1) >> b
    real_code = (gap - 1) & (max_step - 1)

    stored_through = np.cumsum(n_zeros + 1)     # stored entries up to and including each nnz
    n_stored = int(stored_through[-1]) if stored_through.size else 0
    n_padded = padded_length(n_stored)
    real_pos = stored_through - 1                # where each nonzero lands in ``values``

    values = np.zeros(n_padded, dtype=dt)
    values[real_pos] = vals
    codes = np.zeros(n_padded, dtype=np.uint8)
    codes[:n_stored] = max_step - 1              # inserted zeros: the longest step
    codes[real_pos] = real_code

    row_ptr = np.concatenate(([0], stored_through))[indptr]   # stored entries before each row
    return MackoMatrix(values=values, deltas=pack_codes(codes, b),
                       row_ptr=row_ptr.astype(index_dtype_for(n_padded)),
                       shape=tuple(int(s) for s in csr.shape), delta_bits=b)


# ---------------------------------------------------------------------------------------------
# packing and decoding
# ---------------------------------------------------------------------------------------------


def _byte_shifts(b: int) -> np.ndarray:
    """``code_shift`` of a byte's entries, uint8 [8 // b]: byte i holds entries
    ``i * (8 // b) + j`` for j < 8 // b (their ``code_byte`` is i), i.e. row i of
    ``codes.reshape(-1, 8 // b)``, and every byte has the same shifts."""
    return code_shift(np.arange(codes_per_byte(b)), b).astype(np.uint8)


def pack_codes(codes: np.ndarray, delta_bits: int) -> np.ndarray:
    """Pack one ``delta_bits``-bit code per entry into bytes (layout: ``reference.codec.packing``)."""
    b = check_delta_bits(delta_bits)
    codes = np.asarray(codes, dtype=np.uint8)
    per_byte = codes_per_byte(b)
    if codes.size % per_byte:
        raise FormatError(problem("codes.size", f"a multiple of {per_byte}", codes.size))
    by_byte = codes.reshape(-1, per_byte) & np.uint8(code_mask(b))     # row i: byte i's codes
    return np.bitwise_or.reduce(by_byte << _byte_shifts(b), axis=1).astype(np.uint8)


def _unpack(packed: np.ndarray, b: int) -> np.ndarray:
    """The codes of packed bytes, ``8 // b`` per byte, uint8 [packed.size * 8 // b]."""
    shifts = _byte_shifts(b)
    codes = np.empty((packed.size, shifts.size), dtype=np.uint8)     # row i: byte i's codes
    for j, shift in enumerate(shifts):                                # one pass per code of a byte
        codes[:, j] = (packed >> shift) & np.uint8(code_mask(b))
    return codes.reshape(-1)


def unpack_codes(M: MackoMatrix, include_padding: bool = False) -> np.ndarray:
    """The code (``step - 1``) of every stored entry, uint8 [n_stored] (or [n_padded])."""
    codes = _unpack(M.deltas, int(M.delta_bits))
    return codes if include_padding else codes[:M.n_stored]


def row_steps(M: MackoMatrix) -> np.ndarray:
    """The sum of each row's column steps, int64 [rows]: its last column + 1 (0 for an empty
    row). Steps are >= 1, so a row's columns all lie in ``[0, cols)`` iff this is <= cols
    (what ``validate(expensive=True)`` and the kernel module's device check test)."""
    codes = unpack_codes(M)
    through = np.zeros(codes.size + 1, dtype=np.int64)       # codes before each entry
    np.cumsum(codes, dtype=np.int64, out=through[1:])
    start, end = M.row_ptr[:-1].astype(np.int64), M.row_ptr[1:].astype(np.int64)
    return through[end] - through[start] + (end - start)


def stored_row_ids(M: MackoMatrix) -> np.ndarray:
    """Row of every stored entry, int64 [n_stored]."""
    return row_ids(np.asarray(M.row_ptr, dtype=np.int64))


def columns(M: MackoMatrix) -> np.ndarray:
    """Decoded column of every stored entry (inserted zeros included), int64 [n_stored].

    ``column = -1 + (sum of the row's steps up to and including this entry)``.
    """
    steps = unpack_codes(M).astype(np.int64) + 1
    through = np.cumsum(steps)                                   # running sum over all rows
    before_row = np.concatenate(([0], through))[M.row_ptr[:-1]]  # steps of earlier rows
    return through - before_row[stored_row_ids(M)] - 1


# ---------------------------------------------------------------------------------------------
# products
# ---------------------------------------------------------------------------------------------


def _nonzeros(M: MackoMatrix):
    """(rows, columns, values) of the nonzeros in row-major order (inserted zeros skipped)."""
    vals = M.values[:M.n_stored]
    real = vals != 0
    return stored_row_ids(M)[real], columns(M)[real], vals[real]


def spmv(M: MackoMatrix, x: np.ndarray) -> np.ndarray:
    """y = M @ x, products and sums in the accumulator type, y in M's value type.

    Inserted zeros are skipped, so the result equals ``reference.csr.spmv`` on the same matrix.
    ``M`` is validated fully first (:class:`FormatError` if inconsistent).
    """
    M = MackoMatrix.checked(M)
    x = check_operand(np.asarray(x) if not hasattr(x, "dtype") else x, M.n_cols, M.dtype)
    acc = accumulator_dtype(M.dtype)
    rows, cols, vals = _nonzeros(M)
    products = vals.astype(acc) * np.asarray(x).astype(acc)[cols]
    y = np.zeros(M.n_rows, dtype=acc)
    np.add.at(y, rows, products)
    return y.astype(M.dtype)


def spmm(M: MackoMatrix, X: np.ndarray) -> np.ndarray:
    """Y = M @ X for X of shape (n_cols, k); Y has shape (n_rows, k)."""
    M = MackoMatrix.checked(M)
    X = check_operand(X, M.n_cols, M.dtype, name="X", ndim=2)
    acc = accumulator_dtype(M.dtype)
    rows, cols, vals = _nonzeros(M)
    products = vals.astype(acc)[:, None] * np.asarray(X).astype(acc)[cols, :]
    Y = np.zeros((M.n_rows, X.shape[1]), dtype=acc)
    np.add.at(Y, rows, products)
    return Y.astype(M.dtype)
