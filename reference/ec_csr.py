"""EC-CSR (EC-SpMV paper, Section 6): block sets of every granularity, delta-coded columns.

:func:`encode` runs the hierarchical block extraction (:mod:`reference.block_extraction`:
row matching, multi-round and multi-level extraction, delta-range padding, long/short split,
clipping, reordering) and stores the resulting block sets. Every block is worked on by
``warp_size`` lanes: lane ``t`` of a block of ``n`` stored columns takes the block's columns
``[t * m, (t + 1) * m)`` (``m = n // warp_size``), keeps the first of them as its *base
index* and stores one *delta* per column: 0 for its first column, then the step from the
previous one (paper Fig. 4: columns 2 4 | 5 6 on two lanes give bases 2, 5 and deltas 0 2 | 0
1; a lane decodes ``I_k = I_0 + delta_1 + ... + delta_k``). Deltas have ``delta_bits`` bits
(4 or 8: the paper's EC-CSR-4 and EC-CSR-8); the extraction keeps every step within
``2**delta_bits - 1`` by inserting zero columns where needed.

Layout: a frozen dataclass cannot hold a variable number of block sets as fields, so the
arrays of all sets are concatenated, sets in storage order (decreasing granularity, the set
of long parts of a granularity before its set of short parts), and ``set_desc`` says where
each set starts. With ``B`` blocks, ``C`` stored columns (a delta each) and ``S`` sets:

    values         value dtype [sum over blocks of g * n]  the paper's block_values: each block's
                   stored columns in interleaved order (``reference.codec.interleave``:
                   ``vector_size``-entry groups of every lane, lane 0 first, chunk after chunk;
                   paper Fig. 6), each column's g values (one per block row) together
    delta_indices  uint8 [ceil(C * delta_bits / 8)]  one delta per stored column, in the same
                   interleaved order, packed as ``reference.codec.packing`` defines (``8 //
                   delta_bits`` per byte, the first in the low bits); end padding codes 0
    base_indices   index [B * warp_size]  block b's lane t starts at column
                   ``base_indices[b * warp_size + t]``
    block_indptr   index [B + 1]  block b's deltas are ``block_indptr[b]:block_indptr[b + 1]``
                   (a multiple of ``warp_size * vector`` for the set's ``vector``)
    row_indices    index [sum over blocks of g]  the g rows of each block, increasing
    set_desc       index [S * 5]  per set: granularity g, vector (``vector_size`` for long
                   parts, 1 for short parts), first block, first entry of ``row_indices``,
                   first entry of ``values``. A set's block count and nonzeros (the paper's
                   set_desc) follow from the next set's start.

All index arrays share one dtype: int32 unless a count or dimension needs int64. A block b of
set s (granularity g) has its rows at ``first_row + (b - first_block) * g`` and its values at
``first_value + (block_indptr[b] - block_indptr[first_block]) * g``; stored column j (in
interleaved order) of block b holds row r's value at ``value_start + j * g + r``.

Every stored entry is a nonzero of the matrix or an explicit padding zero (canonical input
has no explicit zeros, so every stored zero is padding). ``to_csr`` drops them and
``spmv``/``spmm`` sum each row's products in column order, skipping them: the results equal
``reference.csr``'s bit for bit. (A kernel sums in block order and multiplies the padding
zeros, so it matches within the tolerance of ``spmvlab.check``; where ``x`` holds Inf or NaN
at a padding column, ``0 * Inf = NaN`` differs.) ``padding_overhead`` = explicit zeros /
nonzeros is the paper's Table 2 statistic.

Choices the paper leaves open (this module is the specification; the extraction's are in
:mod:`reference.block_extraction`):

* A lane's first delta is stored (always 0), so a lane's deltas and values line up one to one
  (paper Fig. 4 shows it); the base index is the lane's first column, absolute.
* A lane whose columns are all alignment padding has the block's last column as its base.
* ``set_desc`` stores start offsets rather than the paper's (blocks, nonzeros) counts: a
  kernel finds a block's set, rows and values without a prefix sum. Sets with no block are
  left out; an empty matrix has no set and no block.
* ``warp_size`` and ``vector_size`` are options of the layout: the paper uses 32 and 4 (2 and 2
  in its Fig. 4 example); ``reference.block_extraction.WARP_SIZES`` and ``VECTOR_SIZES``
  list what ``encode`` takes.

Plain NumPy only (no numba); readable, meant for small matrices (the similarity matrix of the
row matching grows as rows squared).
"""
from __future__ import annotations

import dataclasses

import numpy as np
import scipy.sparse as sp

from ._common import (
    INDEX_DTYPES, SparseFormat, triplet_product, canonical_csr, check_operand, csr_from_arrays,
    index_dtype_for, resolve_dtype, rowmajor_increasing,
)
from .block_extraction import (
    DELTA_BITS, REAL, VECTOR_SIZES, WARP_SIZES, block_sets, check_options,
)
from .codec.interleave import interleaved_slot
from .codec.packing import code_byte, code_mask, code_shift, get_code

__all__ = [
    "SET_FIELDS", "ECCSRMatrix", "StoredBlock", "encode", "spmv", "spmm", "stored_blocks",
    "pack_deltas", "unpack_deltas", "store_sets",
]

#: the fields of one set descriptor, in the order ``set_desc`` stores them
SET_FIELDS = ("granularity", "vector", "first_block", "first_row", "first_value")
_NF = len(SET_FIELDS)
#: the arrays holding indices (one dtype for all)
_INDEX_ARRAYS = ("base_indices", "block_indptr", "row_indices", "set_desc")


def pack_deltas(codes: np.ndarray, delta_bits: int) -> np.ndarray:
    """One ``delta_bits``-bit code per entry packed into bytes (``reference.codec.packing``'s
    layout), the last byte's unused codes 0."""
    b = int(delta_bits)
    codes = np.asarray(codes)
    k = np.arange(codes.size, dtype=np.int64)
    packed = np.zeros(-(-codes.size * b // 8), dtype=np.uint8)
    np.bitwise_or.at(packed, code_byte(k, b),
                     ((codes.astype(np.int64) & code_mask(b)) << code_shift(k, b)).astype(np.uint8))
    return packed


def unpack_deltas(packed: np.ndarray, n: int, delta_bits: int) -> np.ndarray:
    """The first ``n`` codes of ``packed``, int64 [n]."""
    return np.asarray(get_code(packed, np.arange(n, dtype=np.int64), int(delta_bits)), dtype=np.int64)


@dataclasses.dataclass(frozen=True, eq=False, repr=False)
class ECCSRMatrix(SparseFormat):
    """EC-CSR storage: block sets concatenated, described by ``set_desc`` (module docstring)."""

    values: np.ndarray
    delta_indices: np.ndarray
    base_indices: np.ndarray
    block_indptr: np.ndarray
    row_indices: np.ndarray
    set_desc: np.ndarray
    shape: tuple
    delta_bits: int
    warp_size: int
    vector_size: int
    clip: int | None
    reorder: bool
    max_granularity: int | None

    format_name = "ec_csr"

    # sizes and statistics ----------------------------------------------------------------
    @property
    def block_values(self) -> np.ndarray:
        """The paper's name for ``values``."""
        return self.values

    @property
    def n_sets(self) -> int:
        return int(self.set_desc.size // _NF)

    @property
    def n_blocks(self) -> int:
        return int(self.block_indptr.size - 1)

    @property
    def n_columns(self) -> int:
        """Stored columns (one delta each), padding included."""
        return int(self.block_indptr[-1]) if self.block_indptr.size else 0

    @property
    def nnz(self) -> int:
        """Nonzeros of the matrix: the stored values that are not padding zeros."""
        return int(np.count_nonzero(self.values))

    @property
    def n_padding(self) -> int:
        """Explicit zeros stored (delta-range and alignment padding)."""
        return int(self.values.size) - self.nnz

    @property
    def padding_overhead(self) -> float:
        """Explicit zeros / nonzeros (0.0 for a matrix without nonzeros): paper Table 2."""
        nnz = self.nnz
        return self.n_padding / nnz if nnz else 0.0

    def sets(self) -> list[dict]:
        """One dict per set: the ``SET_FIELDS`` plus ``n_blocks``, ``n_columns`` and ``nnz``."""
        out = []
        desc = self.set_desc.reshape(-1, _NF).astype(np.int64)
        ends = np.append(desc[1:, 2], self.n_blocks)
        for d, end in zip(desc, ends):
            s = dict(zip(SET_FIELDS, (int(v) for v in d)))
            cols = int(self.block_indptr[end] - self.block_indptr[s["first_block"]])
            vals = self.values[s["first_value"]:s["first_value"] + cols * s["granularity"]]
            s.update(n_blocks=int(end) - s["first_block"], n_columns=cols,
                     nnz=int(np.count_nonzero(vals)))
            out.append(s)
        return out

    def census(self) -> dict:
        """Nonzeros per granularity, {g: nnz} (long and short parts together)."""
        out: dict = {}
        for s in self.sets():
            out[s["granularity"]] = out.get(s["granularity"], 0) + s["nnz"]
        return out

    def to_csr(self) -> sp.csr_matrix:
        """The canonical CSR matrix this encodes, exactly (padding zeros dropped)."""
        self.validate(expensive=True)
        rows, cols, vals = _nonzeros(self)
        indptr = np.concatenate(([0], np.cumsum(np.bincount(rows, minlength=self.n_rows))))
        return csr_from_arrays(self.shape, indptr, cols, vals)

    # validation --------------------------------------------------------------------------
    def _check_options(self):
        for name, allowed in (("delta_bits", DELTA_BITS), ("warp_size", WARP_SIZES),
                              ("vector_size", VECTOR_SIZES)):
            v = getattr(self, name)
            self._require(_is_int(v) and int(v) in allowed, name, f"one of {allowed}", repr(v))
        self._require(self.clip is None or (_is_int(self.clip) and self.clip >= 0), "clip",
                      "None or an int >= 0", repr(self.clip))
        self._require(isinstance(self.reorder, (bool, np.bool_)), "reorder", "True or False",
                      repr(self.reorder))
        mg = self.max_granularity
        self._require(mg is None or (_is_int(mg) and mg >= 1 and int(mg) & (int(mg) - 1) == 0),
                      "max_granularity", "None or a power of two >= 1", repr(mg))

    def _check_arrays(self):
        """Options; dtypes and lengths; ``block_indptr`` from 0, increasing; ``set_desc``
        consistent with the other arrays (set order, starts, every block's column count a
        multiple of ``warp_size * vector``); ``delta_indices`` long enough, end padding 0."""
        self._check_options()
        ws, vs, b = int(self.warp_size), int(self.vector_size), int(self.delta_bits)
        self._require(self.delta_indices.ndim == 1 and self.delta_indices.dtype == np.uint8,
                      "delta_indices", "a 1-D uint8 array",
                      f"{self.delta_indices.ndim}-D {self.delta_indices.dtype}")
        idx = self.block_indptr.dtype
        for name in _INDEX_ARRAYS:
            a = getattr(self, name)
            self._require(a.ndim == 1 and a.dtype in INDEX_DTYPES, name,
                          "a 1-D int32 or int64 array", f"{a.ndim}-D {a.dtype}")
            self._require(a.dtype == idx, f"{name}.dtype", f"{idx} (as block_indptr)", a.dtype)
        ptr = self.block_indptr.astype(np.int64)
        self._require(ptr.size >= 1 and int(ptr[0]) == 0, "block_indptr",
                      "at least one entry, the first 0", ptr[:1].tolist())
        self._require(bool(np.all(np.diff(ptr) > 0)), "block_indptr",
                      "strictly increasing (no empty block)", "a step <= 0")
        n_blocks, n_columns = ptr.size - 1, int(ptr[-1])
        self._require(self.base_indices.size == n_blocks * ws, "base_indices.size",
                      f"{n_blocks * ws} (warp_size = {ws} per block)", self.base_indices.size)
        self._require(self.set_desc.size % _NF == 0, "set_desc.size",
                      f"a multiple of {_NF} ({', '.join(SET_FIELDS)} per set)", self.set_desc.size)
        desc = self.set_desc.reshape(-1, _NF).astype(np.int64)
        g, vec, first = desc[:, 0], desc[:, 1], desc[:, 2]
        self._require(bool(np.all((g >= 1) & (g <= max(self.n_rows, 1)) & (g & (g - 1) == 0))),
                      "set_desc granularity", f"powers of two in [1, {max(self.n_rows, 1)}]",
                      g.tolist())
        self._require(bool(np.all((vec == vs) | (vec == 1))), "set_desc vector",
                      f"{vs} (long parts) or 1 (short parts)", vec.tolist())
        order = (g[:-1] > g[1:]) | ((g[:-1] == g[1:]) & (vec[:-1] > vec[1:]))
        self._require(bool(np.all(order)), "set_desc", "sets by decreasing (granularity, vector)",
                      desc[:, :2].tolist())
        starts_ok = (desc.shape[0] == 0 and n_blocks == 0) or (
            desc.shape[0] > 0 and int(first[0]) == 0 and bool(np.all(np.diff(first) > 0))
            and int(first[-1]) < n_blocks)
        self._require(starts_ok, "set_desc first_block",
                      f"0 first, strictly increasing, below the block count {n_blocks}",
                      first.tolist())
        per_set = np.diff(np.append(first, n_blocks))
        cols = ptr[np.append(first[1:], n_blocks)] - ptr[first]
        want_rows = np.concatenate(([0], np.cumsum(g * per_set)))
        want_vals = np.concatenate(([0], np.cumsum(g * cols)))
        self._require(np.array_equal(desc[:, 3], want_rows[:-1]), "set_desc first_row",
                      f"the rows of the sets before ({want_rows[:-1].tolist()})", desc[:, 3].tolist())
        self._require(np.array_equal(desc[:, 4], want_vals[:-1]), "set_desc first_value",
                      f"the values of the sets before ({want_vals[:-1].tolist()})", desc[:, 4].tolist())
        self._require(self.row_indices.size == want_rows[-1], "row_indices.size",
                      f"{int(want_rows[-1])} (granularity x blocks, summed over the sets)",
                      self.row_indices.size)
        self._require(self.values.size == want_vals[-1], "values.size",
                      f"{int(want_vals[-1])} (granularity x stored columns, summed over the sets)",
                      self.values.size)
        step = np.repeat(ws * vec, per_set)
        self._require(bool(np.all(np.diff(ptr) % step == 0)), "block_indptr",
                      "every block's column count a multiple of warp_size x its set's vector",
                      "a block that is not")
        n_bytes = -(-n_columns * b // 8)
        self._require(self.delta_indices.size == n_bytes, "delta_indices.size",
                      f"{n_bytes} bytes ({n_columns} deltas of {b} bits)", self.delta_indices.size)
        tail = get_code(self.delta_indices, np.arange(n_columns, n_bytes * 8 // b), b)
        self._require(bool(np.all(tail == 0)), "delta_indices", "zero codes in the end padding",
                      "a nonzero padding code")
        want_idx = index_dtype_for(self.values.size, n_columns, self.row_indices.size, *self.shape)
        self._require(idx == want_idx, "block_indptr.dtype",
                      f"{want_idx} (int64 only if a count needs it)", idx)

    def _check_entries(self, canonical: bool):
        """Every row and decoded column in range; canonical: each lane's first delta 0, block
        rows increasing, every stored column all nonzero or all zero, columns increasing in
        each block (alignment zeros repeat the last), no nonzero stored twice, and with
        ``reorder`` blocks by non-increasing column count within each set."""
        for name, a, n in (("row_indices", self.row_indices, self.n_rows),
                           ("base_indices", self.base_indices, self.n_cols)):
            if a.size:
                lo, hi = int(a.min()), int(a.max())
                self._require(lo >= 0 and hi < n, name, f"indices in [0, {n})", f"range [{lo}, {hi}]")
        blocks = stored_blocks(self)
        last = max((int(blk.lane_cols.max()) for blk in blocks), default=-1)
        self._require(last < self.n_cols, "delta_indices", f"decoded columns in [0, {self.n_cols})",
                      f"column {last}", "re-encode the matrix; a delta points past the last column")
        if not canonical:
            return
        for blk in blocks:
            where = f"block {blk.index}"
            self._require(bool(np.all(blk.lane_deltas[:, 0] == 0)), "delta_indices",
                          f"0 as every lane's first delta ({where})", blk.lane_deltas[:, 0].tolist())
            self._require(bool(np.all(np.diff(blk.rows) > 0)), "row_indices",
                          f"increasing rows within a block ({where})", blk.rows.tolist())
            nonzero = blk.values != 0
            real = nonzero.all(axis=1)
            self._require(bool(np.all(real | ~nonzero.any(axis=1))), "values",
                          f"every stored column all nonzero or all zero ({where})",
                          "a column mixing both")
            step = np.diff(blk.cols)
            self._require(bool(np.all((step > 0) | ((step == 0) & ~real[1:]))), "delta_indices",
                          f"increasing columns, equal only before padding ({where})", blk.cols.tolist())
        rows, cols, _ = _nonzeros(self, validate=False)
        self._require(rowmajor_increasing(rows, cols), "values", "each nonzero stored once",
                      "a (row, column) stored twice")
        if self.reorder:
            for s in self.sets():
                counts = np.diff(self.block_indptr[s["first_block"]:s["first_block"] + s["n_blocks"] + 1])
                self._require(bool(np.all(np.diff(counts) <= 0)), "block_indptr",
                              "blocks by non-increasing column count within a set (reorder=True)",
                              counts.tolist())


def _is_int(v) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


# ---------------------------------------------------------------------------------------------
# decoding
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, eq=False)
class StoredBlock:
    """One block as stored, decoded: ``index`` (global block number), ``set`` (its set's
    number), ``granularity``, ``vector``; ``rows`` int64 [g]; ``lane_deltas`` and
    ``lane_cols`` int64 [warp_size, m] (lane t's deltas and decoded columns); ``cols`` int64
    [n] and ``values`` [n, g] in the block's column order (lane after lane)."""

    index: int
    set: int
    granularity: int
    vector: int
    rows: np.ndarray
    lane_deltas: np.ndarray
    lane_cols: np.ndarray
    cols: np.ndarray
    values: np.ndarray


def stored_blocks(M: ECCSRMatrix) -> list[StoredBlock]:
    """Every block of ``M`` decoded, in storage order (``M`` passes its cheap checks first)."""
    ws = int(M.warp_size)
    codes = unpack_deltas(M.delta_indices, M.n_columns, M.delta_bits)
    ptr = M.block_indptr.astype(np.int64)
    base = M.base_indices.astype(np.int64).reshape(-1, ws)
    out = []
    for s, d in enumerate(M.set_desc.reshape(-1, _NF).astype(np.int64)):
        g, vec, first, row0, val0 = (int(v) for v in d)
        end = int(M.set_desc[(s + 1) * _NF + 2]) if s + 1 < M.n_sets else M.n_blocks
        for blk in range(first, end):
            c0, n = int(ptr[blk]), int(ptr[blk + 1] - ptr[blk])
            m = n // ws
            t, k = np.divmod(np.arange(n, dtype=np.int64), m)
            pos = interleaved_slot(t, k, ws, vec)                    # block order -> stored
            deltas = codes[c0 + pos].reshape(ws, m)
            lane_cols = base[blk][:, None] + np.cumsum(deltas, axis=1)
            v0 = val0 + (c0 - int(ptr[first])) * g
            vals = M.values[v0 + pos[:, None] * g + np.arange(g)]
            r0 = row0 + (blk - first) * g
            out.append(StoredBlock(index=blk, set=s, granularity=g, vector=vec,
                                   rows=M.row_indices[r0:r0 + g].astype(np.int64),
                                   lane_deltas=deltas, lane_cols=lane_cols,
                                   cols=lane_cols.reshape(-1), values=vals))
    return out


def _nonzeros(M: ECCSRMatrix, validate: bool = True):
    """(rows, columns, values) of the nonzeros, sorted by row then column (padding skipped)."""
    if validate:
        M.validate(expensive=True)
    parts = [(np.broadcast_to(blk.rows, blk.values.shape), np.broadcast_to(blk.cols[:, None], blk.values.shape),
              blk.values) for blk in stored_blocks(M)]
    if not parts:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), M.values[:0]
    rows, cols, vals = (np.concatenate([p[i].reshape(-1) for p in parts]) for i in range(3))
    keep = vals != 0
    rows, cols, vals = rows[keep], cols[keep], vals[keep]
    order = np.lexsort((cols, rows))
    return rows[order], cols[order], vals[order]


# ---------------------------------------------------------------------------------------------
# encoding
# ---------------------------------------------------------------------------------------------


def _block_values(csr: sp.csr_matrix, blk, dtype) -> np.ndarray:
    """[n, g] values of block ``blk`` (a ``block_extraction.Block``) read from ``csr``, 0 in
    padding columns."""
    out = np.zeros((blk.n_columns, blk.granularity), dtype=dtype)
    real = blk.kind == REAL
    for r, row in enumerate(blk.rows):
        lo, hi = int(csr.indptr[row]), int(csr.indptr[row + 1])
        at = lo + np.searchsorted(csr.indices[lo:hi], blk.cols[real])
        out[real, r] = csr.data[at].astype(dtype)
    return out


def encode(A, dtype=None, lossy: bool = False, delta_bits: int = 8, warp_size: int = 32,
           vector_size: int = 4, clip: int | None = None, reorder: bool = True,
           max_granularity: int | None = None) -> ECCSRMatrix:
    """Any scipy.sparse matrix or dense 2-D array -> :class:`ECCSRMatrix`.

    ``delta_bits`` 4 or 8 (the precision range is ``2**delta_bits``); ``warp_size`` lanes per
    block and ``vector_size`` entries per load (blocks extracted in multiples of their
    product); ``clip`` the clipping threshold in stored entries per block (None: dynamic, 0:
    none); ``reorder`` sorts blocks within a set; ``max_granularity`` caps the aggregation
    (see :mod:`reference.block_extraction`). ``dtype`` the value dtype (default: A's own);
    ``lossy``: accept values that overflow or underflow in ``dtype`` (see ``canonical_csr``).
    """
    opts = check_options(delta_bits, warp_size, vector_size, clip, reorder, max_granularity)
    dt = resolve_dtype(A, dtype)
    csr = canonical_csr(A, dt, lossy)
    return store_sets(csr, block_sets(csr, **opts), opts, dt)


def store_sets(csr: sp.csr_matrix, sets: list, opts: dict, dt) -> ECCSRMatrix:
    """The :class:`ECCSRMatrix` of block sets ``sets`` (``block_extraction.block_sets`` of
    canonical ``csr``, value dtype ``dt``) under checked options ``opts`` (shared by the
    reference and the fast encoder)."""
    ws = opts["warp_size"]
    blocks = [(s, blk) for s in sets for blk in s.blocks]
    n_columns = sum(blk.n_columns for _, blk in blocks)
    n_values = sum(blk.work for _, blk in blocks)
    n_rows_stored = sum(blk.granularity for _, blk in blocks)
    idx = index_dtype_for(n_values, n_columns, n_rows_stored, *csr.shape)

    values = np.zeros(n_values, dtype=dt)
    codes = np.zeros(n_columns, dtype=np.int64)
    base = np.zeros(len(blocks) * ws, dtype=idx)
    block_indptr = np.zeros(len(blocks) + 1, dtype=idx)
    row_indices = np.zeros(n_rows_stored, dtype=idx)
    desc = []
    col = val = row = 0
    for b, (s, blk) in enumerate(blocks):
        if not desc or desc[-1][0] is not s:
            desc.append((s, b, row, val))
        g, n = blk.granularity, blk.n_columns
        m = n // ws
        lane_cols = blk.cols.reshape(ws, m)
        base[b * ws:(b + 1) * ws] = lane_cols[:, 0]
        deltas = np.diff(lane_cols, axis=1, prepend=lane_cols[:, :1])
        t, k = np.divmod(np.arange(n, dtype=np.int64), m)
        pos = interleaved_slot(t, k, ws, s.vector_size)              # block order -> stored
        codes[col + pos] = deltas.reshape(-1)
        values[val + pos[:, None] * g + np.arange(g)] = _block_values(csr, blk, dt)
        row_indices[row:row + g] = blk.rows
        col, val, row = col + n, val + n * g, row + g
        block_indptr[b + 1] = col
    set_desc = np.array([(s.granularity, s.vector_size, b, r, v) for s, b, r, v in desc],
                        dtype=idx).reshape(-1)
    return ECCSRMatrix(values=values, delta_indices=pack_deltas(codes, opts["delta_bits"]),
                       base_indices=base, block_indptr=block_indptr, row_indices=row_indices,
                       set_desc=set_desc, shape=tuple(int(s) for s in csr.shape), **opts)


# ---------------------------------------------------------------------------------------------
# products
# ---------------------------------------------------------------------------------------------


def spmv(M: ECCSRMatrix, x: np.ndarray) -> np.ndarray:
    """y = M @ x, products and sums in the accumulator type, y in M's value type; each row's
    products summed in column order, padding zeros skipped (= ``reference.csr.spmv`` bit for
    bit). ``M`` is validated fully first (:class:`FormatError` if inconsistent)."""
    M = ECCSRMatrix.checked(M)
    x = check_operand(np.asarray(x) if not hasattr(x, "dtype") else x, M.n_cols, M.dtype)
    return triplet_product(*_nonzeros(M, validate=False), M.n_rows, x, M.dtype)


def spmm(M: ECCSRMatrix, X: np.ndarray) -> np.ndarray:
    """Y = M @ X for X of shape (n_cols, k); Y has shape (n_rows, k)."""
    M = ECCSRMatrix.checked(M)
    X = check_operand(X, M.n_cols, M.dtype, name="X", ndim=2)
    return triplet_product(*_nonzeros(M, validate=False), M.n_rows, X, M.dtype)
