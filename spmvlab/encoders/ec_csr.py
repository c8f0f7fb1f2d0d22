"""Fast EC-CSR encoder (numba, CPU): the same bytes as ``reference.ec_csr.encode``, quicker.

The expensive part of EC-CSR preprocessing is the extraction (``reference.block_extraction``,
Algorithm 1), whose every round runs the greedy row matching (``reference.row_matching``,
Algorithm 2) on the similarity ``P @ P.T`` of the rows left. Here each level holds its rows
(``A_E``) and what is left of them (``A_R``) as sorted lists of columns in one array (a start
and a current length per row), the columns numbered among those that hold any entry (so a
wide, very sparse matrix costs no more than its entries; the gap rule reads the true column
numbers through ``colmap``): memory proportional to the entries and the rows. Compiled code
does, round after round:

1. **matching** (:func:`match_round`): the reference's order and ties (rows by increasing
   index, the first maximum, no pair where the best count is 0). The shared-column counts
   it reads are found one of two ways, whichever the round's pattern makes cheaper
   (:func:`use_bitsets`, a cost model on counts of the pattern, so the choice is the same on
   every run); both give the same counts, hence the same pairs:

   * **sparse** (:func:`match_sparse`): for each row i in turn, its columns are walked and,
     through a column -> rows index of the rows still in the pool, the shared columns are
     counted only for the rows that share one with i. The work is about half the sum over
     columns of (rows holding the column)^2: small for graphs and meshes, however many rows;
   * **dense** (:func:`match_rows`): the rows as bitsets over the columns the round's rows
     hold (``ceil(columns / 64)`` uint64 words per row), ``popcount(R[i] & R[j])`` over the
     words both rows use for every pair of rows still in the pool, a chunk of rows at a time
     (the parallel :func:`similarity_chunk`), then the greedy pass :func:`_pick_partners`.
     The work is rows^2 / 2 times the words: it wins where rows hold a large share of the
     columns (pruned weight matrices), and it runs only where its arrays take no more memory
     than the entries were allowed (:data:`DENSE_BYTES_PER_ENTRY`);

2. **extraction** (:func:`_count_blocks`, :func:`_take_blocks`): each pair's shared columns
   (a merge of the two sorted lists) cut into runs at gaps above ``max_gap``, each run's
   first multiple of ``unit`` taken as a block (a row of the next level) and removed from
   both rows.

The rest of the pipeline (gap padding, long/short split, clipping, reordering) is the
reference's own code (``reference.block_extraction.assemble_sets``); the storage
(:func:`store_sets`) is ``reference.ec_csr.store_sets`` compiled, its interleaving and
packing the shared ``reference.codec`` steps. Input checks, the value dtype and the canonical form
are the reference's too (``check_options``, ``resolve_dtype``, ``canonical_csr``).

:func:`encode_stages` returns the matrix with seconds per stage (for ``tools/``).
"""
from __future__ import annotations

import time

import numpy as np
from numba import njit, prange, types
from numba.extending import intrinsic

from reference._common import (
    canonical_csr, check_size, csr_value_array, index_dtype_for, resolve_dtype,
)
from reference.block_extraction import REAL, Block, assemble_sets, check_options, max_gap_for
from reference.codec.interleave import interleaved_slot
from reference.codec.packing import set_code
from reference.ec_csr import ECCSRMatrix

from ..codec import njit as _codec_njit

__all__ = ["encode", "encode_stages", "extract_leftovers", "used_columns", "to_bitsets", "match_rows",
           "match_sparse", "match_round", "use_bitsets", "similarity_chunk", "CHUNK", "TILE"]

# the shared codec steps (reference.codec), compiled where _fill_arrays first compiles
_slot = _codec_njit(interleaved_slot)
_set_code = _codec_njit(set_code)
# unsigned integer type with the same width as each value dtype (values are copied as bits)
_BITS = {2: np.uint16, 4: np.uint32, 8: np.uint64}

#: rows whose similarities are computed together (one parallel pass) before they are matched
CHUNK = 256

#: bytes the extraction may hold per entry of the matrix (the budget :func:`extract_leftovers`
#: checks against the memory limit): the level's column lists (``A_E``, ``A_R``), the column
#: -> rows index, the blocks of the next level and the leftovers (about 8 bytes each), with
#: room for ``DENSE_BYTES_PER_ENTRY`` of the dense path's arrays on top
ENTRY_BYTES = 80
#: the most bytes per entry of a round that the dense path's bitsets and chunk of similarities
#: may take (:func:`use_bitsets`): memory that grows with the entries, not with rows x columns
DENSE_BYTES_PER_ENTRY = 16
#: bytes per row (start, length and matrix rows of each row, the pool, the partners, the
#: per-pair counts) and per column in use (the column numbers, the column -> rows index)
ROW_BYTES, COLUMN_BYTES = 96, 40

#: the cost model of :func:`use_bitsets`, in units of one uint64 word of the (vectorised,
#: parallel) popcount loop: each pair the dense path compares costs ``DENSE_PAIR`` (the pool
#: and span checks, the similarity written and read back) plus the words it reads; each
#: (row, row, shared column) step of the sparse path, a read-modify-write at a scattered
#: address on one thread, costs ``SPARSE_STEP``. Rough relative costs: a wrong choice near
#: the break-even point costs little, the model only has to keep each path off the inputs
#: where it is many times slower (bitsets on large sparse graphs, column lists on weights)
DENSE_PAIR, SPARSE_STEP = 32.0, 16.0


@intrinsic
def _popcount(typingctx, x):
    """Set bits of a uint64 (LLVM ctpop)."""
    if x == types.uint64:
        def codegen(context, builder, sig, args):
            return builder.ctpop(args[0])
        return types.uint64(types.uint64), codegen
    return None


@njit(cache=True, nogil=True)
def _fill_bitsets(indptr, indices, bits):
    for r in range(indptr.size - 1):
        for k in range(indptr[r], indptr[r + 1]):
            c = np.int64(indices[k])
            bits[r, c >> 6] |= np.uint64(1) << np.uint64(c & 63)


def used_columns(indices: np.ndarray, n_cols: int) -> tuple[np.ndarray, np.ndarray]:
    """(the columns that hold an entry, increasing, int64; each index's position among them)
    in memory that grows with the entries, not the columns: a table over every column where
    there are at most 8 columns per entry, a sort of the indices otherwise."""
    if int(n_cols) <= 8 * indices.size:
        present = np.zeros(int(n_cols), dtype=np.bool_)
        present[indices] = True
        return (np.flatnonzero(present).astype(np.int64),
                (np.cumsum(present, dtype=np.int64) - 1)[indices])
    used, inverse = np.unique(indices, return_inverse=True)
    return used.astype(np.int64), inverse.reshape(-1).astype(np.int64)


def to_bitsets(indptr, indices, n_cols: int) -> np.ndarray:
    """The pattern of CSR arrays as bitsets: uint64 [rows, ceil(n_cols / 64)], bit ``c % 64``
    of word ``c // 64`` set where the row holds column ``c`` (indices sorted, in range)."""
    bits = np.zeros((indptr.size - 1, -(-int(n_cols) // 64)), dtype=np.uint64)
    _fill_bitsets(indptr, indices, bits)
    return bits


# ---------------------------------------------------------------------------------------------
# matching, dense: bitsets and popcounts over every pair of rows
# ---------------------------------------------------------------------------------------------


@njit(cache=True, nogil=True)
def _counts(bits, cnt, lo, hi):
    """``cnt[r]`` = set bits of row r; its nonzero words lie in ``[lo[r], hi[r])``."""
    for r in range(bits.shape[0]):
        acc = np.uint64(0)
        lo[r], hi[r] = 0, 0
        for w in range(bits.shape[1]):
            if bits[r, w]:
                if acc == 0:
                    lo[r] = w
                hi[r] = w + 1
                acc += _popcount(bits[r, w])
        cnt[r] = acc


#: rows j per tile of :func:`similarity_chunk` (their bitsets stay in cache while every row
#: of the chunk is compared with them)
TILE = 32


@njit(cache=True, nogil=True, parallel=True)
def similarity_chunk(bits, cnt, lo, hi, pool, start, stop, sim):
    """``sim[i - start, j]`` = columns shared by rows i and j of ``bits``, for every row i in
    ``[start, stop)`` still in ``pool`` and every j > i in ``pool`` (0 where either row is
    empty), over the words where both rows have entries (``lo``, ``hi``: :func:`_counts`);
    other entries are not written. Parallel over tiles of :data:`TILE` rows j."""
    n, n_words = bits.shape
    n_tiles = -(-(n - start - 1) // TILE) if n > start + 1 else 0
    for tile in prange(n_tiles):
        j0 = start + 1 + tile * TILE
        j1 = min(n, j0 + TILE)
        for i in range(start, stop):
            if not pool[i] or cnt[i] == 0:
                continue
            ii = i - start
            for j in range(max(j0, i + 1), j1):
                if pool[j] and cnt[j] > 0:
                    w0, w1 = max(lo[i], lo[j]), min(hi[i], hi[j])
                    acc = np.uint64(0)
                    if w0 < w1:
                        a, b = bits[i, w0:w1], bits[j, w0:w1]   # views: indices known >= 0,
                        for w in range(a.size):                 # so this loop vectorises
                            acc += _popcount(a[w] & b[w])
                    sim[ii, j] = acc
                else:
                    sim[ii, j] = 0


def match_rows(bits, cnt, lo, hi, chunk):
    """Greedy matching of the rows of ``bits`` (row set bits ``cnt``, nonzero words in
    ``[lo, hi)``: :func:`_counts`): int64 [pairs, 2], as ``reference.row_matching.match_rows``
    on the same pattern (order, ties, no-overlap rule). A Python loop over chunks of rows: the
    parallel :func:`similarity_chunk`, then the compiled greedy pass :func:`_pick_partners`
    (a cached non-parallel njit function must not call a cached parallel one: numba then
    segfaults when the pair is loaded from its cache, numba issues 4807 and 8578; seen on the
    H200's suite run)."""
    n = bits.shape[0]
    pool = np.ones(n, dtype=np.bool_)
    pairs = np.empty((n // 2, 2), dtype=np.int64)
    n_pairs = 0
    sim = np.zeros((min(chunk, max(n, 1)), n), dtype=np.int32)
    for start in range(0, n, chunk):
        stop = min(n, start + chunk)
        similarity_chunk(bits, cnt, lo, hi, pool, start, stop, sim)
        n_pairs = _pick_partners(sim, cnt, pool, start, stop, pairs, n_pairs)
    return pairs[:n_pairs]


@njit(cache=True, nogil=True)
def _pick_partners(sim, cnt, pool, start, stop, pairs, n_pairs):
    """The greedy pass of :func:`match_rows` over rows ``[start, stop)`` (their similarities in
    ``sim``): each row still in ``pool`` leaves it and takes the first row j > i of the pool
    with the most shared columns (none when that is 0); pairs appended from ``n_pairs``,
    the new count returned."""
    n = pool.size
    for i in range(start, stop):
        if not pool[i]:
            continue                    # matched by an earlier row
        pool[i] = False
        if cnt[i] == 0:
            continue
        best, partner = 0, -1
        row = sim[i - start]
        for j in range(i + 1, n):
            if pool[j] and row[j] > best:   # strictly: the first maximum wins
                best, partner = row[j], j
        if partner >= 0:
            pairs[n_pairs, 0], pairs[n_pairs, 1] = i, partner
            n_pairs += 1
            pool[partner] = False
    return n_pairs


# ---------------------------------------------------------------------------------------------
# matching, sparse: shared columns counted through a column -> rows index
# ---------------------------------------------------------------------------------------------


@njit(cache=True, nogil=True)
def _column_index(start, length, cols, n_cols):
    """Which rows hold each column: (int64 ``col_ptr`` [n_cols + 1], int64 ``col_rows``), the
    rows holding column c (increasing) at ``col_rows[col_ptr[c]:col_ptr[c + 1]]``; row r holds
    ``cols[start[r]:start[r] + length[r]]``."""
    col_ptr = np.zeros(n_cols + 1, dtype=np.int64)
    for r in range(length.size):
        for k in range(start[r], start[r] + length[r]):
            col_ptr[cols[k] + 1] += 1
    for c in range(n_cols):
        col_ptr[c + 1] += col_ptr[c]
    col_rows = np.empty(col_ptr[n_cols], dtype=np.int64)
    fill = col_ptr[:n_cols].copy()
    for r in range(length.size):
        for k in range(start[r], start[r] + length[r]):
            c = cols[k]
            col_rows[fill[c]] = r
            fill[c] += 1
    return col_ptr, col_rows


@njit(cache=True, nogil=True)
def match_sparse(start, length, cols, n_cols):
    """Greedy matching of the rows ``cols[start[r]:start[r] + length[r]]`` (sorted columns in
    ``[0, n_cols)``): int64 [pairs, 2], as ``reference.row_matching.match_rows`` on the same
    pattern (order, ties, no-overlap rule).

    Row i (in increasing order, if still in the pool) leaves the pool; for each of its
    columns, the rows of the pool that hold the column each get one more shared column in
    ``shared`` (the rows met for the first time noted in ``met``); the partner is the row of
    ``met`` with the most, the lowest index among equals: the first maximum of the
    reference's dense row, which is 0 for every row not met. The column -> rows index drops
    the rows it finds out of the pool as it is walked (every row before i has left it), so a
    column's list only shrinks."""
    n = length.size
    col_ptr, col_rows = _column_index(start, length, cols, n_cols)
    col_len = col_ptr[1:] - col_ptr[:-1]
    pool = np.ones(n, dtype=np.bool_)
    shared = np.zeros(n, dtype=np.int32)      # a row's columns fit int32 (so do the dense path's)
    met = np.empty(n, dtype=np.int64)         # distinct rows other than i: fewer than n
    pairs = np.empty((n // 2, 2), dtype=np.int64)
    n_pairs = 0
    for i in range(n):
        if not pool[i]:
            continue                          # matched by an earlier row
        pool[i] = False
        n_met = 0
        for k in range(start[i], start[i] + length[i]):
            c = cols[k]
            s = col_ptr[c]
            w = s
            for q in range(s, s + col_len[c]):
                j = col_rows[q]
                if pool[j]:
                    col_rows[w] = j           # keep it (in order) for the rows after i
                    w += 1
                    met[n_met] = j            # noted for good only if met for the first
                    n_met += shared[j] == 0   # time (no branch: which it is is hard to guess)
                    shared[j] += 1
            col_len[c] = w - s
        best, partner = 0, -1
        for t in range(n_met):
            j = met[t]
            if shared[j] > best or (shared[j] == best and j < partner):
                best, partner = shared[j], j
            shared[j] = 0
        if partner >= 0:
            pairs[n_pairs, 0], pairs[n_pairs, 1] = i, partner
            n_pairs += 1
            pool[partner] = False
    return pairs[:n_pairs]


# ---------------------------------------------------------------------------------------------
# one round's matching: the cheaper of the two
# ---------------------------------------------------------------------------------------------


@njit(cache=True, nogil=True)
def _round_counts(start, length, cols, n_cols, position):
    """What :func:`use_bitsets` weighs, in one pass over the round's rows: (columns the rows
    hold, non-empty rows, total words spanned by the non-empty rows' bitsets, sum over
    columns of h * (h - 1) / 2 for the h rows holding the column: the sparse path's steps).
    ``position[c]`` is set to column c's place among the columns the rows hold (-1: none)."""
    held = np.zeros(n_cols, dtype=np.int64)
    for r in range(length.size):
        for k in range(start[r], start[r] + length[r]):
            held[cols[k]] += 1
    n_held, steps = 0, 0
    for c in range(n_cols):
        if held[c]:
            position[c] = n_held
            n_held += 1
            steps += held[c] * (held[c] - 1) // 2
        else:
            position[c] = -1
    rows, words = 0, 0
    for r in range(length.size):
        if length[r]:
            rows += 1
            words += ((position[cols[start[r] + length[r] - 1]] >> 6)
                      - (position[cols[start[r]]] >> 6) + 1)
    return n_held, rows, words, steps


def use_bitsets(n_rows: int, n_entries: int, n_held: int, rows: int, words: int,
                steps: int) -> bool:
    """Whether the dense path (:func:`match_rows`) should match a round of ``n_rows`` rows
    holding ``n_entries`` entries in ``n_held`` columns (``rows``, ``words``, ``steps``:
    :func:`_round_counts`): where its estimated work, every pair of non-empty rows at
    :data:`DENSE_PAIR` plus the mean words a row spans, is below the sparse path's
    (``steps`` at :data:`SPARSE_STEP`, plus a pass over entries and rows), and where its
    bitsets and chunk of similarities take at most :data:`DENSE_BYTES_PER_ENTRY` bytes per
    entry. A function of the pattern only, so every run takes the same path."""
    if rows < 2:
        return False
    dense_bytes = n_rows * (8 * -(-n_held // 64) + 4 * min(CHUNK, n_rows))
    if dense_bytes > DENSE_BYTES_PER_ENTRY * n_entries:
        return False
    dense = rows * (rows - 1) / 2 * (DENSE_PAIR + words / rows)
    sparse = SPARSE_STEP * steps + n_entries + n_rows
    return dense < sparse


@njit(cache=True, nogil=True)
def _fill_round_bitsets(start, length, cols, position, bits):
    for r in range(length.size):
        for k in range(start[r], start[r] + length[r]):
            c = position[cols[k]]
            bits[r, c >> 6] |= np.uint64(1) << np.uint64(c & 63)


def match_round(start, length, cols, n_cols: int, force: str | None = None) -> np.ndarray:
    """Greedy matching of the rows ``cols[start[r]:start[r] + length[r]]`` (sorted columns in
    ``[0, n_cols)``): int64 [pairs, 2], as ``reference.row_matching.match_rows``, by the
    sparse path (:func:`match_sparse`) or the dense one (:func:`match_rows` on bitsets over
    the columns the rows hold), as :func:`use_bitsets` says; ``force`` ("sparse", "dense")
    overrides it (tests and timing)."""
    n = length.size
    position = np.empty(n_cols, dtype=np.int64)
    n_held, rows, words, steps = _round_counts(start, length, cols, n_cols, position)
    dense = (use_bitsets(n, int(length.sum()), n_held, rows, words, steps) if force is None
             else force == "dense")
    if not dense:
        return match_sparse(start, length, cols, n_cols)
    bits = np.zeros((n, -(-n_held // 64)), dtype=np.uint64)
    _fill_round_bitsets(start, length, cols, position, bits)
    cnt = np.empty(n, dtype=np.int64)
    lo, hi = np.empty_like(cnt), np.empty_like(cnt)
    _counts(bits, cnt, lo, hi)
    return match_rows(bits, cnt, lo, hi, CHUNK)


# ---------------------------------------------------------------------------------------------
# extraction: blocks from each pair's shared columns
# ---------------------------------------------------------------------------------------------


@njit(cache=True, nogil=True)
def _shared_columns(start, length, cols, i, j, buf):
    """Columns held by both rows i and j, increasing (a merge of the two sorted lists), into
    ``buf``; returns their count."""
    x, x1 = start[i], start[i] + length[i]
    y, y1 = start[j], start[j] + length[j]
    m = 0
    while x < x1 and y < y1:
        a, b = cols[x], cols[y]
        if a < b:
            x += 1
        elif b < a:
            y += 1
        else:
            buf[m] = a
            m += 1
            x += 1
            y += 1
    return m


@njit(cache=True, nogil=True)
def _count_blocks(start, length, cols, colmap, pairs, unit, max_gap, buf):
    """(blocks, columns taken) each pair gives: int64 [pairs] each. A block is a run of
    shared columns with steps <= ``max_gap`` (``max_gap`` < 0: no cut) at least ``unit``
    long; it takes the run's first multiple of ``unit`` columns."""
    n_blocks = np.zeros(pairs.shape[0], dtype=np.int64)
    n_taken = np.zeros(pairs.shape[0], dtype=np.int64)
    for p in range(pairs.shape[0]):
        m = _shared_columns(start, length, cols, pairs[p, 0], pairs[p, 1], buf)
        a = 0
        for k in range(1, m + 1):
            if k == m or (max_gap >= 0 and colmap[buf[k]] - colmap[buf[k - 1]] > max_gap):
                if k - a >= unit:
                    n_blocks[p] += 1
                    n_taken[p] += (k - a) // unit * unit
                a = k
    return n_blocks, n_taken


@njit(cache=True, nogil=True)
def _remove_columns(start, length, cols, r, gone, g0, g1):
    """Drop the columns ``gone[g0:g1]`` (increasing, all held by row r) from row r, keeping
    the rest in order."""
    w, q = start[r], g0
    for k in range(start[r], start[r] + length[r]):
        if q < g1 and cols[k] == gone[q]:
            q += 1
        else:
            cols[w] = cols[k]
            w += 1
    length[r] = w - start[r]


@njit(cache=True, nogil=True)
def _take_blocks(start, length, cols, colmap, rows, pairs, first, unit, max_gap, buf,
                 out_ptr, out_cols, out_rows):
    """Write the blocks counted by :func:`_count_blocks` (pair p's from ``first[p]``): block
    b's columns at ``out_cols[out_ptr[b]:out_ptr[b + 1]]`` (``out_ptr[0]`` set by the caller),
    its 2g matrix rows (merged, increasing) in ``out_rows[b]``; remove the columns taken from
    both rows of each pair."""
    g = rows.shape[1]
    for p in range(pairs.shape[0]):
        i, j = pairs[p, 0], pairs[p, 1]
        m = _shared_columns(start, length, cols, i, j, buf)
        b = first[p]
        taken0 = pos = out_ptr[b]
        a = 0
        for k in range(1, m + 1):
            if k == m or (max_gap >= 0 and colmap[buf[k]] - colmap[buf[k - 1]] > max_gap):
                if k - a >= unit:
                    for q in range(a, a + (k - a) // unit * unit):
                        out_cols[pos] = buf[q]
                        pos += 1
                    out_ptr[b + 1] = pos
                    x = y = 0                            # merge the two sorted row lists
                    for q in range(2 * g):
                        if y >= g or (x < g and rows[i, x] < rows[j, y]):
                            out_rows[b, q] = rows[i, x]
                            x += 1
                        else:
                            out_rows[b, q] = rows[j, y]
                            y += 1
                    b += 1
                a = k
        if pos > taken0:                     # the runs are in column order: gone is sorted
            _remove_columns(start, length, cols, i, out_cols, taken0, pos)
            _remove_columns(start, length, cols, j, out_cols, taken0, pos)


@njit(cache=True, nogil=True)
def _gather_rows(start, length, cols, keep):
    """The columns of rows ``keep``, one after the other: (int64 ptr [len(keep) + 1], int64
    columns)."""
    ptr = np.zeros(keep.size + 1, dtype=np.int64)
    for k in range(keep.size):
        ptr[k + 1] = ptr[k] + length[keep[k]]
    out = np.empty(ptr[keep.size], dtype=np.int64)
    for k in range(keep.size):
        s = start[keep[k]]
        for q in range(length[keep[k]]):
            out[ptr[k] + q] = cols[s + q]
    return ptr, out


@njit(cache=True, nogil=True)
def _fill_arrays(ws, b, gran, vec, col_ptr, cols, kind, row_ptr, rows, indptr, indices, vbits,
                 out_bits, codes, base, block_indptr, row_indices):
    """Every block's base indices, packed deltas, values (as bits) and rows, in storage
    order, as ``reference.ec_csr.store_sets`` lays them out; block k's stored columns are
    ``cols[col_ptr[k]:col_ptr[k + 1]]`` (kinds ``kind``), its rows
    ``rows[row_ptr[k]:row_ptr[k + 1]]``. A real column's value is found by binary search in
    its row of the canonical CSR arrays."""
    col = 0
    val = 0
    block_indptr[0] = 0
    for blk in range(gran.size):
        g, v = gran[blk], vec[blk]
        c0, n = col_ptr[blk], col_ptr[blk + 1] - col_ptr[blk]
        m = n // ws
        for t in range(ws):
            base[blk * ws + t] = cols[c0 + t * m]
            for k in range(m):
                src = c0 + t * m + k
                d = 0 if k == 0 else cols[src] - cols[src - 1]
                _set_code(codes, col + _slot(t, k, ws, v), d, b)
        for r in range(g):
            row = rows[row_ptr[blk] + r]
            row_indices[row_ptr[blk] + r] = row
            lo, end = indptr[row], indptr[row + 1]
            for t in range(ws):
                for k in range(m):
                    src = c0 + t * m + k
                    if kind[src] != REAL:
                        continue
                    c = cols[src]
                    hi = end
                    while lo < hi:                      # first index >= c (columns increase)
                        mid = (lo + hi) >> 1
                        if indices[mid] < c:
                            lo = mid + 1
                        else:
                            hi = mid
                    out_bits[val + _slot(t, k, ws, v) * g + r] = vbits[lo]
        col += n
        val += n * g
        block_indptr[blk + 1] = col


def store_sets(csr, sets: list, opts: dict, dt) -> ECCSRMatrix:
    """``reference.ec_csr.store_sets`` compiled: the same :class:`ECCSRMatrix`, byte for byte,
    with the per-block work in :func:`_fill_arrays`."""
    ws, b = opts["warp_size"], opts["delta_bits"]
    blocks = [(s, blk) for s in sets for blk in s.blocks]
    gran = np.array([blk.granularity for _, blk in blocks], dtype=np.int64)
    vec = np.array([s.vector_size for s, _ in blocks], dtype=np.int64)
    n_cols = np.array([blk.n_columns for _, blk in blocks], dtype=np.int64)
    col_ptr = np.concatenate(([0], np.cumsum(n_cols))).astype(np.int64)
    row_ptr = np.concatenate(([0], np.cumsum(gran))).astype(np.int64)
    n_columns, n_rows_stored = int(col_ptr[-1]), int(row_ptr[-1])
    n_values = int(np.dot(gran, n_cols)) if blocks else 0
    idx = index_dtype_for(n_values, n_columns, n_rows_stored, *csr.shape)
    cat = (lambda parts, t: np.concatenate(parts).astype(t, copy=False) if parts
           else np.zeros(0, t))
    cols = cat([blk.cols for _, blk in blocks], np.int64)
    kind = cat([blk.kind for _, blk in blocks], np.int8)
    rows = cat([blk.rows for _, blk in blocks], np.int64)
    vals = csr_value_array(csr, dt)
    bits = _BITS[vals.dtype.itemsize]
    values = np.zeros(n_values, dtype=dt)
    codes = np.zeros(-(-n_columns * b // 8), dtype=np.uint8)
    base = np.zeros(len(blocks) * ws, dtype=idx)
    block_indptr = np.zeros(len(blocks) + 1, dtype=idx)
    row_indices = np.zeros(n_rows_stored, dtype=idx)
    _fill_arrays(ws, b, gran, vec, col_ptr, cols, kind, row_ptr, rows,
                 csr.indptr.astype(np.int64), csr.indices.astype(np.int64), vals.view(bits),
                 values.view(bits), codes, base, block_indptr, row_indices)
    desc, k = [], 0
    for s in sets:
        desc.append((s.granularity, s.vector_size, k, int(row_ptr[k]),
                     int(np.dot(gran[:k], n_cols[:k])) if k else 0))
        k += len(s.blocks)
    set_desc = np.array(desc, dtype=idx).reshape(-1)
    return ECCSRMatrix(values=values, delta_indices=codes, base_indices=base,
                       block_indptr=block_indptr, row_indices=row_indices, set_desc=set_desc,
                       shape=tuple(int(v) for v in csr.shape), **opts)


def extract_leftovers(indptr, indices, n_cols: int, unit: int = 1, max_gap: int | None = None,
                      max_granularity: int | None = None, times: dict | None = None,
                      force: str | None = None) -> list:
    """Algorithm 1 on the pattern of canonical CSR arrays: ``(granularity, raw blocks)`` per
    level, level 0 first, the blocks in ``A_R`` row order: the ``leftover`` of each
    ``reference.block_extraction.extract`` level, equal block for block. ``times`` (a dict)
    collects seconds under "bitsets" (setting up the rows: the columns in use and the level-0
    lists; the key keeps the name the tools read), "matching" (similarity included),
    "extraction" and "leftovers". ``force`` picks the matching path of every round
    (:func:`match_round`).

    The memory limit is checked once, for the first level: every later level has at most
    half the entries of the one before (a block of ``n`` columns takes ``n`` from each of two
    rows) and no more rows than entries."""
    times = {} if times is None else times
    for k in ("bitsets", "matching", "extraction", "leftovers"):
        times.setdefault(k, 0.0)
    gap = -1 if max_gap is None else int(max_gap)
    t0 = time.perf_counter()
    indices = np.asarray(indices)
    colmap, cols = used_columns(indices, n_cols)        # column k of a list: colmap[k]
    n_rows, nnz = np.asarray(indptr).size - 1, int(indices.size)
    check_size(ENTRY_BYTES * nnz + ROW_BYTES * n_rows + COLUMN_BYTES * colmap.size, "A",
               f"the working arrays of the fast EC-CSR encoder ({nnz:,} entries in {n_rows:,} "
               f"rows and {colmap.size:,} columns that hold an entry)",
               "encode a matrix with fewer entries")
    start = np.asarray(indptr, dtype=np.int64)[:-1].copy()
    size = np.diff(np.asarray(indptr, dtype=np.int64))  # the A_E rows: cols[start:start + size]
    rows = np.arange(n_rows, dtype=np.int64).reshape(-1, 1)
    times["bitsets"] += time.perf_counter() - t0
    out, g = [], 1
    while True:
        left, length = cols.copy(), size.copy()         # A_R = A_E
        buf = np.empty(max(int(size.max(initial=0)), 1), dtype=np.int64)
        got_cols, got_len, got_rows = [], [], []
        if max_granularity is None or 2 * g <= max_granularity:
            while True:
                t0 = time.perf_counter()
                pairs = match_round(start, length, left, colmap.size, force)
                t1 = time.perf_counter()
                n_blk, n_taken = _count_blocks(start, length, left, colmap, pairs, unit, gap, buf)
                first = np.concatenate(([0], np.cumsum(n_blk)))
                n_blocks = int(first[-1])
                if n_blocks:
                    out_ptr = np.zeros(n_blocks + 1, dtype=np.int64)
                    out_cols = np.empty(int(n_taken.sum()), dtype=np.int64)
                    out_rows = np.empty((n_blocks, 2 * g), dtype=np.int64)
                    _take_blocks(start, length, left, colmap, rows, pairs, first, unit, gap, buf,
                                 out_ptr, out_cols, out_rows)
                    got_cols.append(out_cols)
                    got_len.append(np.diff(out_ptr))
                    got_rows.append(out_rows)
                times["matching"] += t1 - t0
                times["extraction"] += time.perf_counter() - t1
                if not n_blocks:
                    break
        t0 = time.perf_counter()
        keep = np.flatnonzero(length)
        ptr, kept = _gather_rows(start, length, left, keep)
        kept = colmap[kept]
        out.append((g, [Block.of(rows[k], kept[ptr[n]:ptr[n + 1]]) for n, k in enumerate(keep)]))
        times["leftovers"] += time.perf_counter() - t0
        if not got_cols:
            return out
        cols = np.concatenate(got_cols)                 # A_E of the next level: the blocks
        size = np.concatenate(got_len)
        start = np.concatenate(([0], np.cumsum(size)[:-1])).astype(np.int64)
        rows = np.concatenate(got_rows)
        g *= 2


def encode_stages(A, dtype=None, lossy: bool = False, delta_bits: int = 8, warp_size: int = 32,
                  vector_size: int = 4, clip: int | None = None, reorder: bool = True,
                  max_granularity: int | None = None):
    """(:class:`ECCSRMatrix`, seconds per stage): :func:`encode` timed stage by stage
    ("canonical", "bitsets", "matching", "extraction", "leftovers", "assemble", "store")."""
    times = {}
    t0 = time.perf_counter()
    opts = check_options(delta_bits, warp_size, vector_size, clip, reorder, max_granularity)
    dt = resolve_dtype(A, dtype)
    csr = canonical_csr(A, dt, lossy)
    times["canonical"] = time.perf_counter() - t0
    leftovers = extract_leftovers(csr.indptr, csr.indices, csr.shape[1],
                                  unit=opts["warp_size"] * opts["vector_size"],
                                  max_gap=max_gap_for(opts["delta_bits"]),
                                  max_granularity=opts["max_granularity"], times=times)
    t0 = time.perf_counter()
    sets = assemble_sets(leftovers, opts)
    times["assemble"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    M = store_sets(csr, sets, opts, dt)
    times["store"] = time.perf_counter() - t0
    return M, times


def encode(A, dtype=None, lossy: bool = False, delta_bits: int = 8, warp_size: int = 32,
           vector_size: int = 4, clip: int | None = None, reorder: bool = True,
           max_granularity: int | None = None) -> ECCSRMatrix:
    """Any scipy.sparse matrix or dense 2-D array -> :class:`ECCSRMatrix`, byte for byte
    ``reference.ec_csr.encode`` with the same arguments (and its errors and warnings)."""
    return encode_stages(A, dtype, lossy, delta_bits, warp_size, vector_size, clip, reorder,
                         max_granularity)[0]
