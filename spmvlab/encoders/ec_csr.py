"""Fast EC-CSR encoder (numba, CPU): the same bytes as ``reference.ec_csr.encode``, quicker.

The expensive part of EC-CSR preprocessing is the extraction (``reference.block_extraction``,
Algorithm 1), whose every round runs the greedy row matching (``reference.row_matching``,
Algorithm 2) on the similarity ``P @ P.T`` of the rows left. Here each level holds its rows
(``A_E``) and what is left of them (``A_R``) as bitsets over the columns that hold any
entry (``ceil(used columns / 64)`` uint64 words per row, so a wide, very sparse matrix costs
no more than its entries; the gap rule reads the true column numbers), and compiled code does:

1. **similarity** (:func:`similarity_chunk`, parallel over tiles of rows j): for a chunk of
   rows i, the shared-column counts ``popcount(R[i] & R[j])`` (over the words both rows
   use) against every row j > i still in the pool (all the greedy matching reads: rows
   before i have left the pool when i is taken);
2. **matching** (:func:`match_rows`): the reference's order and ties (rows by increasing
   index, the first maximum, no pair where the best count is 0), chunk after chunk;
3. **extraction** (:func:`_count_blocks`, :func:`_take_blocks`): each pair's shared columns
   cut into runs at gaps above ``max_gap``, each run's first multiple of ``unit`` taken as a
   block (bitset row of the next level) and cleared from both rows.

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
from llvmlite import ir
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
           "similarity_chunk", "CHUNK", "TILE"]

# the shared codec steps (reference.codec), compiled where _fill_arrays first compiles
_slot = _codec_njit(interleaved_slot)
_set_code = _codec_njit(set_code)
# unsigned integer type with the same width as each value dtype (values are copied as bits)
_BITS = {2: np.uint16, 4: np.uint32, 8: np.uint64}

#: rows whose similarities are computed together (one parallel pass) before they are matched
CHUNK = 256


@intrinsic
def _popcount(typingctx, x):
    """Set bits of a uint64 (LLVM ctpop)."""
    if x == types.uint64:
        def codegen(context, builder, sig, args):
            return builder.ctpop(args[0])
        return types.uint64(types.uint64), codegen
    return None


@intrinsic
def _trailing_zeros(typingctx, x):
    """Index of the lowest set bit of a nonzero uint64 (LLVM cttz)."""
    if x == types.uint64:
        def codegen(context, builder, sig, args):
            return builder.cttz(args[0], ir.Constant(ir.IntType(1), 1))
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


@njit(cache=True, nogil=True)
def _shared_columns(bits, i, j, buf):
    """Columns held by both rows i and j, increasing, into ``buf``; returns their count."""
    m = 0
    for w in range(bits.shape[1]):
        word = bits[i, w] & bits[j, w]
        while word:
            buf[m] = w * 64 + np.int64(_trailing_zeros(word))
            m += 1
            word &= word - np.uint64(1)
    return m


@njit(cache=True, nogil=True)
def _count_blocks(bits, colmap, pairs, unit, max_gap, buf):
    """Blocks each pair gives (runs of shared columns with steps <= ``max_gap``, at least
    ``unit`` long; ``max_gap`` < 0: no cut): int64 [pairs]."""
    out = np.zeros(pairs.shape[0], dtype=np.int64)
    for p in range(pairs.shape[0]):
        m = _shared_columns(bits, pairs[p, 0], pairs[p, 1], buf)
        a = 0
        for k in range(1, m + 1):
            if k == m or (max_gap >= 0 and colmap[buf[k]] - colmap[buf[k - 1]] > max_gap):
                if k - a >= unit:
                    out[p] += 1
                a = k
    return out


@njit(cache=True, nogil=True)
def _take_blocks(bits, colmap, rows, pairs, first, unit, max_gap, buf, out_bits, out_rows):
    """Write the blocks counted by :func:`_count_blocks` (pair p's from ``first[p]``): their
    columns as bitset rows of ``out_bits``, their 2g matrix rows (merged, increasing) into
    ``out_rows``; clear the columns taken from both rows of ``bits``."""
    g = rows.shape[1]
    for p in range(pairs.shape[0]):
        i, j = pairs[p, 0], pairs[p, 1]
        m = _shared_columns(bits, i, j, buf)
        b = first[p]
        a = 0
        for k in range(1, m + 1):
            if k == m or (max_gap >= 0 and colmap[buf[k]] - colmap[buf[k - 1]] > max_gap):
                if k - a >= unit:
                    for q in range(a, a + (k - a) // unit * unit):
                        c = buf[q]
                        mask = np.uint64(1) << np.uint64(c & 63)
                        out_bits[b, c >> 6] |= mask
                        bits[i, c >> 6] &= ~mask
                        bits[j, c >> 6] &= ~mask
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


@njit(cache=True, nogil=True)
def _bits_to_columns(bits, keep):
    """Columns of rows ``keep`` of ``bits``: (int64 indptr [len(keep) + 1], int64 columns)."""
    total = 0
    for k in range(keep.size):
        for w in range(bits.shape[1]):
            total += _popcount(bits[keep[k], w])
    ptr = np.zeros(keep.size + 1, dtype=np.int64)
    cols = np.empty(total, dtype=np.int64)
    m = 0
    for k in range(keep.size):
        for w in range(bits.shape[1]):
            word = bits[keep[k], w]
            while word:
                cols[m] = w * 64 + np.int64(_trailing_zeros(word))
                m += 1
                word &= word - np.uint64(1)
        ptr[k + 1] = m
    return ptr, cols


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
                      max_granularity: int | None = None, times: dict | None = None) -> list:
    """Algorithm 1 on the pattern of canonical CSR arrays: ``(granularity, raw blocks)`` per
    level, level 0 first, the blocks in ``A_R`` row order: the ``leftover`` of each
    ``reference.block_extraction.extract`` level, equal block for block. ``times`` (a dict)
    collects seconds under "bitsets", "matching" (similarity included), "extraction" and
    "leftovers"."""
    times = {} if times is None else times
    for k in ("bitsets", "matching", "extraction", "leftovers"):
        times.setdefault(k, 0.0)
    gap = -1 if max_gap is None else int(max_gap)
    t0 = time.perf_counter()
    indices = np.asarray(indices)
    colmap, compact = used_columns(indices, n_cols)     # bit u of a row: column colmap[u]
    n_rows = np.asarray(indptr).size - 1
    check_size(n_rows * -(-colmap.size // 64) * 8, "A",
               f"row bitsets of the fast EC-CSR encoder ({n_rows:,} rows x {colmap.size:,} "
               "columns that hold an entry, one bit each)",
               "encode with the reference encoder (fast=False), whose memory grows with the "
               "entries")
    E = to_bitsets(np.asarray(indptr), compact, colmap.size)
    rows = np.arange(E.shape[0], dtype=np.int64).reshape(-1, 1)
    buf = np.empty(max(colmap.size, 1), dtype=np.int64)
    times["bitsets"] += time.perf_counter() - t0
    out, g = [], 1
    while True:
        R = E.copy()
        cnt = np.empty(R.shape[0], dtype=np.int64)
        lo, hi = np.empty_like(cnt), np.empty_like(cnt)
        got_bits, got_rows = [], []
        if max_granularity is None or 2 * g <= max_granularity:
            while True:
                t0 = time.perf_counter()
                _counts(R, cnt, lo, hi)
                pairs = match_rows(R, cnt, lo, hi, CHUNK)
                t1 = time.perf_counter()
                per_pair = _count_blocks(R, colmap, pairs, unit, gap, buf)
                first = np.concatenate(([0], np.cumsum(per_pair)))
                n_blocks = int(first[-1])
                if n_blocks:
                    nb = np.zeros((n_blocks, R.shape[1]), dtype=np.uint64)
                    nr = np.empty((n_blocks, 2 * g), dtype=np.int64)
                    _take_blocks(R, colmap, rows, pairs, first, unit, gap, buf, nb, nr)
                    got_bits.append(nb)
                    got_rows.append(nr)
                times["matching"] += t1 - t0
                times["extraction"] += time.perf_counter() - t1
                if not n_blocks:
                    break
        t0 = time.perf_counter()
        _counts(R, cnt, lo, hi)
        keep = np.flatnonzero(cnt)
        ptr, cols = _bits_to_columns(R, keep)
        cols = colmap[cols]
        out.append((g, [Block.of(rows[k], cols[ptr[n]:ptr[n + 1]]) for n, k in enumerate(keep)]))
        times["leftovers"] += time.perf_counter() - t0
        if not got_bits:
            return out
        E = np.concatenate(got_bits)
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
