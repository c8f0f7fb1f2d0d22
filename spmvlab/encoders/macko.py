"""Fast MACKO encoder (numba, CPU): the same bytes as ``reference.macko.encode``, quicker.

Two compiled passes over the canonical CSR arrays:

1. ``_count_stored``: per row, the stored entries (nonzeros + inserted zeros) at every
   width, giving ``row_ptr`` of the width ``choose_delta_bits`` takes (as the reference
   does); it also checks, for free, that columns strictly increase within each row and
   lie in ``[0, cols)`` and that no value is zero, so an already-canonical
   ``scipy.sparse`` CSR matrix can skip ``canonical_csr`` (if a check fails, the input is
   canonicalised as in the reference and encoded again);
2. ``_fill``: writes the values (copied as raw bits, so float16 needs no numba float16
   support) and packs the codes straight into the ``deltas`` bytes with the shared
   ``reference.codec.packing.set_code``.

The fast path is taken for CSR input (``csr_matrix``/``csr_array``) with
``has_canonical_format`` (sorted indices, no duplicates: scipy checks this in C and caches
it) whose values, cast to the requested dtype, contain no zero; the cast is then checked for
overflow and underflow with the reference's ``check_conversion`` (the same error, or with
``lossy=True`` the same single warning). Any other input, including values that underflow to
zero, goes through ``reference._common.canonical_csr`` exactly like the reference encoder.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from numba import njit

from reference._common import (
    FormatError, canonical_csr, cast_values, check_input, check_conversion, csr_value_array, index_dtype_for,
    problem, resolve_dtype,
)
from reference.codec.packing import set_code
from reference.macko import (
    AUTO, DELTA_BITS, MackoMatrix, check_delta_bits, choose_delta_bits, padded_length,
)

from ..codec import njit as _codec_njit

__all__ = ["encode"]

# unsigned integer type with the same width as each value dtype (values are copied as bits)
_BITS = {2: np.uint16, 4: np.uint32, 8: np.uint64}
# the shared packing step (reference.codec.packing), compiled where _fill first compiles
_set_code = _codec_njit(set_code)


@njit(cache=True, nogil=True)
def _count_stored(indptr, indices, vbits, magnitude_mask, n_cols, widths, row_ptr):
    """Fill ``row_ptr`` (int64 [len(widths), rows + 1]) with the stored-entry offsets of
    every row at each width of ``widths`` (one pass for all: ``delta_bits="auto"`` compares
    them, an explicit width is checked against CSR's size).

    ``vbits`` are the values as unsigned ints of the same width and ``magnitude_mask`` has
    every bit but the sign bit set (a value is +-0 iff its masked bits are 0). Returns False
    if a row's columns do not strictly increase, a column is outside ``[0, n_cols)`` or a
    value is +-0 (the input is then not canonical); True otherwise.
    """
    ok = True
    n_w = widths.size
    total = np.zeros(n_w, dtype=np.int64)
    row_ptr[:, 0] = 0
    for r in range(indptr.size - 1):
        prev = -1
        for k in range(indptr[r], indptr[r + 1]):
            c = np.int64(indices[k])
            if c <= prev or c >= n_cols or (vbits[k] & magnitude_mask) == 0:
                ok = False
            gap = c - prev
            for w in range(n_w):
                total[w] += ((gap - 1) >> widths[w]) + 1      # inserted zeros + the entry
            prev = c
        for w in range(n_w):
            row_ptr[w, r + 1] = total[w]
    return ok


@njit(cache=True, nogil=True)
def _fill(indptr, indices, vbits, b, out_bits, deltas):
    """Write every stored entry's value bits into ``out_bits`` and pack its code into
    ``deltas`` (both zero-initialised; padding stays zero)."""
    max_code = (1 << b) - 1
    pos = 0
    for r in range(indptr.size - 1):
        prev = -1
        for k in range(indptr[r], indptr[r + 1]):
            c = np.int64(indices[k])
            gap = c - prev
            for _ in range((gap - 1) >> b):      # inserted zeros: value 0, longest step
                _set_code(deltas, pos, max_code, b)
                pos += 1
            _set_code(deltas, pos, (gap - 1) & max_code, b)
            out_bits[pos] = vbits[k]
            pos += 1
            prev = c
    return pos


def _bits(vals: np.ndarray):
    """``vals`` viewed as unsigned ints of the same width, and the mask of all but the sign bit."""
    kind = _BITS[vals.dtype.itemsize]
    return vals.view(kind), kind((1 << (8 * vals.dtype.itemsize - 1)) - 1)


def _fast_csr_arrays(A, dt):
    """(indptr, indices, values) of ``A`` without copying, if it may already be canonical.
    The values are cast to ``dt`` but not yet checked (``check_conversion``)."""
    if not (sp.issparse(A) and A.format == "csr" and len(A.shape) == 2):
        return None
    check_input(A)                              # the boundary, before scipy's C code reads A
    if not A.has_canonical_format:              # sorted, no duplicates (checked in C, cached)
        return None
    data = cast_values(A.data, dt)
    return (np.ascontiguousarray(A.indptr), np.ascontiguousarray(A.indices),
            np.ascontiguousarray(data))


def encode(A, delta_bits: int = 4, dtype=None, lossy: bool = False) -> MackoMatrix:
    """Any scipy.sparse matrix or dense 2-D array -> :class:`MackoMatrix`, byte for byte the
    result of ``reference.macko.encode(A, delta_bits, dtype, lossy)`` (and its error, or its
    one warning, when values overflow or underflow in ``dtype``)."""
    if not (isinstance(delta_bits, str) and delta_bits == AUTO):
        check_delta_bits(delta_bits)
    dt = resolve_dtype(A, dtype)
    widths = np.array(DELTA_BITS, dtype=np.int64)
    arrays = _fast_csr_arrays(A, dt)
    if arrays is not None:
        indptr, indices, vals = arrays
        n_rows, n_cols = (int(s) for s in A.shape)
        row_ptrs = np.empty((widths.size, n_rows + 1), dtype=np.int64)
        if _count_stored(indptr, indices, *_bits(vals), n_cols, widths, row_ptrs):
            check_conversion(A.data, vals, indptr, indices, lossy)   # canonical: same entries
        else:
            arrays = None                        # not canonical after all: take the slow road
    if arrays is None:
        csr = canonical_csr(A, dt, lossy)        # raises the reference's errors on bad input
        n_rows, n_cols = (int(s) for s in csr.shape)
        indptr, indices, vals = csr.indptr, csr.indices, csr_value_array(csr, dt)
        row_ptrs = np.empty((widths.size, n_rows + 1), dtype=np.int64)
        if not _count_stored(indptr, indices, *_bits(vals), n_cols, widths, row_ptrs):
            # only possible if scipy trusted a wrong has_canonical_format flag; never write
            # past the arrays in _fill
            raise FormatError(problem(
                "A", "a valid sparse matrix (sorted, in-range column indices)",
                "indices that are unsorted or repeated after canonicalisation although "
                "A.has_canonical_format said otherwise", "call A.has_sorted_indices = False; "
                "A.sort_indices(); A.sum_duplicates(), or rebuild A"))
    b = choose_delta_bits(delta_bits, row_ptrs[:, -1], (n_rows, n_cols), int(indices.size), dt)
    row_ptr = row_ptrs[DELTA_BITS.index(b)]
    n_stored = int(row_ptr[-1])
    n_padded = padded_length(n_stored)
    values = np.zeros(n_padded, dtype=dt)
    deltas = np.zeros(n_padded * b // 8, dtype=np.uint8)
    _fill(indptr, indices, vals.view(_BITS[dt.itemsize]), b,
          values.view(_BITS[dt.itemsize]), deltas)
    return MackoMatrix(values=values, deltas=deltas,
                       row_ptr=row_ptr.astype(index_dtype_for(n_padded), copy=False),
                       shape=(n_rows, n_cols), delta_bits=b)
