"""Device functions shared by the MACKO kernels (kernels/macko.py, kernels/_macko_mma.py).

Specialised on the value dtype and the code width, cached, compiled only when a kernel that
calls them is compiled:

* ``_parts``: loading 8 values and their code word per lane, the lane's steps, the warp scan
  that turns steps into columns, and the masked and unmasked chunk products;
* ``_row_dot``: one warp's pass over a row for SpMV, with software pipelining;
* ``_row_tile``: one warp's pass over a row for SpMM, against a tile of X read through
  :func:`kernels._spmm.tile_parts` (global or shared memory).

The layout they assume (256-entry chunks, lane l owning entries [base + 8l, base + 8l + 8),
codes viewed as one word of 8 x delta_bits bits per 8 entries) is described in
kernels/macko.py.
"""

from __future__ import annotations

import functools

import numpy as np

from reference.codec import packing

from .. import codec
from .._cuda import cuda, inline_device
from ._common import FULL_MASK, WARP, acc_type, warp_sum
from ._intrinsics import vload4, vload8

CHUNK = 8 * WARP          # stored entries a warp handles per chunk
_WORD = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


@functools.lru_cache(maxsize=None)
def _parts(dtype_name: str, delta_bits: int):
    """Device functions specialised on value dtype and code width."""
    acc = acc_type(dtype_name)
    b = delta_bits
    int32 = np.int32
    f16 = dtype_name == "float16"
    word_code = codec.device(packing.word_code)   # code k of a word: (w >> (b * k)) & (2**b - 1)

    @inline_device
    def load_values(values, p):
        """The 8 values of entries [p, p + 8) (p a multiple of 8) in one or two 16-byte loads."""
        if f16:
            return vload8(values, p)
        return vload4(values, p) + vload4(values, p + 4)

    @inline_device
    def load_word(words, p):
        """The codes of entries [p, p + 8) as one integer (p >= 0, a multiple of 8)."""
        return np.int64(words[np.uint64(p >> 3)])

    @inline_device
    def lane_steps(w, p, start, end):
        """Sum of the column steps (code + 1) of this lane's entries inside [start, end)."""
        loc = int32(0)
        for k in range(8):
            q = int32(p + k)
            if q >= start and q < end:
                loc = int32(loc + word_code(w, k, b) + 1)
        return loc

    @inline_device
    def full_steps(w):
        """Sum of the 8 steps of a lane whose entries all lie inside the row.

        For b = 4 and b = 1 the sum over all 8 codes is taken arithmetically on the whole word
        (nibble pairs, popcount) rather than code by code; it relies only on the 8 codes
        filling the word's low 8 * b bits (layout: reference.codec.packing.word_code)."""
        if b == 4:  # add nibbles pairwise into bytes, then the 4 bytes with one multiply
            u = np.uint32(w)
            t = np.uint32((u & np.uint32(0x0F0F0F0F)) + ((u >> np.uint32(4)) & np.uint32(0x0F0F0F0F)))
            return int32((np.uint32(t * np.uint32(0x01010101)) >> np.uint32(24)) + 8)
        if b == 1:
            return int32(cuda.popc(np.uint32(w)) + 8)
        loc = int32(8)
        for k in range(8):
            loc = int32(loc + word_code(w, k, b))
        return loc

    @inline_device
    def warp_scan(v, lane):
        """Inclusive prefix sum of ``v`` over the warp (``lane`` and ``off`` int32: 32-bit
        compares; the loop unrolls to the same SASS as the steps written out)."""
        off = int32(1)
        while off < WARP:
            t = cuda.shfl_up_sync(FULL_MASK, v, off)
            if lane >= off:
                v = int32(v + t)
            off = int32(off * 2)
        return v

    @inline_device
    def masked_dot(w, vals, p, start, end, col, x, s):
        """Add the products of this lane's entries inside [start, end), skipping stored
        zeros; ``col`` is the column before the lane's first entry."""
        for k in range(8):
            q = int32(p + k)
            if q >= start and q < end:
                col = int32(col + word_code(w, k, b) + 1)
                v = acc(vals[k])
                if v != 0:
                    s += v * acc(x[np.uint32(col)])
        return s

    @inline_device
    def full_dot(w, vals, col, x, s):
        """Add the 8 products of a lane whose entries all lie inside the row: no masks, no
        zero tests (see the module docstring for why that is exact for finite results)."""
        for k in range(8):
            col = int32(col + word_code(w, k, b) + 1)
            s += acc(vals[k]) * acc(x[np.uint32(col)])
        return s

    @inline_device
    def chunk_columns(w, base, p, start, end, running, lane, careful):
        """The chunk's column bookkeeping, shared by SpMV and SpMM: whether the chunk lies
        wholly inside the row (warp-uniform; never on the careful pass), the column before
        this lane's first entry, and the chunk's total column step."""
        interior = (not careful) and base >= start and int32(base + CHUNK) <= end
        if interior:
            loc = full_steps(w)
        else:
            loc = lane_steps(w, p, start, end)
        incl = warp_scan(loc, lane)
        total = cuda.shfl_sync(FULL_MASK, incl, WARP - 1)
        return interior, int32(running + incl - loc - 1), total

    return dict(load_values=load_values, load_word=load_word, lane_steps=lane_steps,
                full_steps=full_steps, warp_scan=warp_scan, masked_dot=masked_dot,
                full_dot=full_dot, word_code=word_code, chunk_columns=chunk_columns)


@functools.lru_cache(maxsize=None)
def _row_dot(dtype_name: str, delta_bits: int, prefetch: int):
    """``row_dot(values, words, x, start, end, last, lane, careful)``: this lane's share of
    the row's [start, end) products, summed over the warp."""
    acc = acc_type(dtype_name)
    P = _parts(dtype_name, delta_bits)
    load_values, load_word, chunk_columns = P["load_values"], P["load_word"], P["chunk_columns"]
    masked_dot, full_dot = P["masked_dot"], P["full_dot"]
    int32 = np.int32

    @inline_device
    def chunk(w, vals, base, p, start, end, running, lane, x, s, careful):
        """One chunk: scan the lanes' step sums, accumulate; returns (s, running)."""
        interior, col, total = chunk_columns(w, base, p, start, end, running, lane, careful)
        if interior:
            s = full_dot(w, vals, col, x, s)
        else:
            s = masked_dot(w, vals, p, start, end, col, x, s)
        return s, int32(running + total)

    @inline_device
    def row_dot(values, words, x, start, end, last, lane, careful):
        """This lane's share of row [start, end); with ``prefetch`` the next chunk's loads
        are in flight while the current chunk is computed."""
        base = int32(start & -8)
        running = int32(0)
        s = acc(0)
        p = int32(base + lane * 8)
        pl = min(p, last)
        vals = load_values(values, pl)
        w = load_word(words, pl)
        if prefetch >= 2:
            pl = min(int32(p + CHUNK), last)
            vals_1 = load_values(values, pl)
            w_1 = load_word(words, pl)
        while base < end:
            if prefetch >= 1:   # loads for `prefetch` chunks ahead, issued before computing
                pn = min(int32(p + prefetch * CHUNK), last)
                vals_n = load_values(values, pn)
                w_n = load_word(words, pn)
            s, running = chunk(w, vals, base, p, start, end, running, lane, x, s, careful)
            base = int32(base + CHUNK)
            p = int32(p + CHUNK)
            if prefetch == 0:
                pl = min(p, last)
                vals = load_values(values, pl)
                w = load_word(words, pl)
            elif prefetch == 1:
                vals = vals_n
                w = w_n
            else:
                vals = vals_1
                w = w_1
                vals_1 = vals_n
                w_1 = w_n
        return warp_sum(s)

    return row_dot


def _row_tile(dtype_name: str, delta_bits: int, T: dict):
    """``row_tile(...)``: one warp's pass over a row for an X tile read through ``T``
    (:func:`kernels._spmm.tile_parts`, global or shared)."""
    acc = acc_type(dtype_name)
    P = _parts(dtype_name, delta_bits)
    load_values, load_word, chunk_columns, word_code = (
        P["load_values"], P["load_word"], P["chunk_columns"], P["word_code"])
    zero, fma_row = T["zero"], T["fma_row"]
    b = delta_bits
    int32 = np.int32

    # One stored entry, called with a literal k so that the code's shift and the value are
    # compile-time selections: a loop over k is not unrolled by the compiler once its body
    # holds a whole tile of FMAs, and a tuple indexed by a loop variable becomes a branch
    # tree per entry.
    @inline_device
    def full_entry(Xf, w, k, v, col, n, j0, nvalid, accs):
        col = int32(col + word_code(w, k, b) + 1)
        fma_row(Xf, np.int64(col) * n + j0, nvalid, acc(v), accs)
        return col

    @inline_device
    def masked_entry(Xf, w, k, v, q, start, end, col, n, j0, nvalid, accs):
        if q >= start and q < end:
            col = int32(col + word_code(w, k, b) + 1)
            a = acc(v)
            if a != 0:
                fma_row(Xf, np.int64(col) * n + j0, nvalid, a, accs)
        return col

    @inline_device
    def row_tile(words, values, Xf, start, end, last, lane, j0, nvalid, n, accs, careful):
        """This lane's share of the row's products with the X tile (row c of the tile at
        ``c * n + j0`` of ``Xf``). Chunks wholly inside the row (warp-uniform test) multiply
        all 8 entries without masks or zero tests, so the 8 gathers are in flight together;
        the inserted zeros' products are then exact unless X is Inf/NaN at their columns,
        which the caller catches (``careful`` pass: every entry masked and stored zeros
        skipped, CSR semantics)."""
        zero(accs)
        base = start - start % 8
        running = int32(0)
        p = base + lane * 8
        pl = min(p, last)
        vals = load_values(values, pl)
        w = load_word(words, pl)
        while base < end:
            pn = min(p + CHUNK, last)            # the next chunk's loads, issued first
            vals_n = load_values(values, pn)
            w_n = load_word(words, pn)
            interior, col, total = chunk_columns(w, base, p, start, end, running, lane, careful)
            v0, v1, v2, v3, v4, v5, v6, v7 = vals
            if interior:
                col = full_entry(Xf, w, 0, v0, col, n, j0, nvalid, accs)
                col = full_entry(Xf, w, 1, v1, col, n, j0, nvalid, accs)
                col = full_entry(Xf, w, 2, v2, col, n, j0, nvalid, accs)
                col = full_entry(Xf, w, 3, v3, col, n, j0, nvalid, accs)
                col = full_entry(Xf, w, 4, v4, col, n, j0, nvalid, accs)
                col = full_entry(Xf, w, 5, v5, col, n, j0, nvalid, accs)
                col = full_entry(Xf, w, 6, v6, col, n, j0, nvalid, accs)
                col = full_entry(Xf, w, 7, v7, col, n, j0, nvalid, accs)
            else:
                col = masked_entry(Xf, w, 0, v0, p, start, end, col, n, j0, nvalid, accs)
                col = masked_entry(Xf, w, 1, v1, p + 1, start, end, col, n, j0, nvalid, accs)
                col = masked_entry(Xf, w, 2, v2, p + 2, start, end, col, n, j0, nvalid, accs)
                col = masked_entry(Xf, w, 3, v3, p + 3, start, end, col, n, j0, nvalid, accs)
                col = masked_entry(Xf, w, 4, v4, p + 4, start, end, col, n, j0, nvalid, accs)
                col = masked_entry(Xf, w, 5, v5, p + 5, start, end, col, n, j0, nvalid, accs)
                col = masked_entry(Xf, w, 6, v6, p + 6, start, end, col, n, j0, nvalid, accs)
                col = masked_entry(Xf, w, 7, v7, p + 7, start, end, col, n, j0, nvalid, accs)
            running = int32(running + total)
            base += CHUNK
            p += CHUNK
            vals = vals_n
            w = w_n

    return row_tile
