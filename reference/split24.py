"""Split 2:4, a matrix cut into a 2:4-structured part for the sparse tensor cores and a CSR
residual for what does not fit.

In every group of four consecutive columns of a row (columns 4q .. 4q + 3) the first two
nonzeros go to the 2:4 part and any further ones to the residual. The 2:4 part is stored in
16 x 32 tiles, the operand of one ``mma.sp.m16n8k32`` (16 rows, 32 columns, 8 groups per
row), only the tiles that hold a nonzero, band by band (a band is 16 rows):

    tile_ptr   : int32/int64 [bands + 1]    first tile of each band
    tile_col   : int32/int64 [tiles]        the tile's column block (columns 32c .. 32c + 31),
                                            increasing within a band
    values     : float [tiles * 256]        each group's two kept values (smaller column
                                            first), tile by tile in the order the warp's
                                            lanes hold them as the A operand (below)
    meta       : uint32 [tiles * 16]        the kept values' positions in their groups, as the
                                            metadata operand (below)
    res_ptr    : int32/int64 [rows + 1]     the residual, CSR
    res_cols   : int32/int64 [residual]
    res_values : float [residual]

A group with fewer than two nonzeros keeps its nonzero and a zero beside it (positions
(i, i + 1), or (2, 3) for a nonzero at position 3; (0, 1) for an empty group): the hardware
reads exactly two positions of every group. Nothing else is padded: rows past the last band
and columns past the last block are zero.

Operand order. Lane L of the warp (g = L // 4, t = L % 4) holds 8 values, registers a0 .. a3
of two values each: a0 the two kept values of row g, group t; a1 row g + 8, group t; a2 row g,
group t + 4; a3 row g + 8, group t + 4 (the A fragment of ``mma.sp`` with 16-bit types, which
is the dense ``m16n8k16`` fragment of the 16 x 16 kept values). ``values[(tile * 32 + L) * 8:]``
holds them in that order, so a lane reads its operand with one 16-byte load. Word w = 2g + h
of a tile's metadata belongs to lane 4g + h (sparsity selector 0: two lanes of each quad
supply it): bits 0-15 describe row g, bits 16-31 row g + 8, each in four nibbles for the groups
4h .. 4h + 3 of that row (group 4h + j at bit 4j), a nibble holding the first kept position
in bits 0-1 and the second, larger one, in bits 2-3.

``encode`` is plain NumPy (vectorised, so it is also the fast path); ``spmv``/``spmm``
multiply the decoded nonzeros in row-major order, bit for bit ``reference/csr.py``.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import scipy.sparse as sp

from ._common import (
    SparseFormat, canonical_csr, check_operand, csr_from_arrays, csr_value_array, resolve_dtype,
    triplet_product,
)
from ._input import check_size, index_dtype_for
from .csr import row_ids

__all__ = ["Split24Matrix", "encode", "spmv", "spmm", "TILE_ROWS", "TILE_COLS", "decode_tiles"]

TILE_ROWS = 16                 # rows of an mma.sp.m16n8k32 A operand (a band)
TILE_COLS = 32                 # its columns (8 groups of 4)
GROUP = 4
VALUES_PER_TILE = TILE_ROWS * TILE_COLS // 2     # two of every four
META_PER_TILE = 16                               # uint32 words (two lanes of each quad)
LANES = 32


def _slot_map():
    """The tile row and group of each entry of a tile's ``values`` (lane, register, half:
    the order they are stored in) and of each (meta word, nibble)."""
    lane = np.arange(LANES)[:, None, None]
    reg = np.arange(4)[None, :, None]
    half = np.arange(2)[None, None, :]
    g, t = lane // 4, lane % 4
    row = g + 8 * (reg % 2) + 0 * half
    group = t + 4 * (reg // 2) + 0 * half
    word = np.arange(META_PER_TILE)[:, None]
    nib = np.arange(8)[None, :]
    mrow = word // 2 + 8 * (nib // 4)
    mgroup = 4 * (word % 2) + nib % 4
    return row.reshape(-1), group.reshape(-1), mrow.reshape(-1), mgroup.reshape(-1)


_VROW, _VGROUP, _MROW, _MGROUP = _slot_map()
#: which kept value (0: the first, 1: the second) each entry of a tile's ``values`` is
_VHALF = np.tile(np.arange(2), LANES * 4)


@dataclasses.dataclass(frozen=True, eq=False, repr=False)
class Split24Matrix(SparseFormat):
    """A 2:4 part in 16 x 32 tiles plus a CSR residual (see the module docstring)."""

    tile_ptr: np.ndarray
    tile_col: np.ndarray
    values: np.ndarray
    meta: np.ndarray
    res_ptr: np.ndarray
    res_cols: np.ndarray
    res_values: np.ndarray
    shape: tuple

    format_name = "split24"

    @property
    def n_bands(self) -> int:
        return -(-self.n_rows // TILE_ROWS)

    @property
    def n_blocks(self) -> int:
        """Column blocks of 32 (the range of ``tile_col``)."""
        return -(-self.n_cols // TILE_COLS)

    @property
    def n_tiles(self) -> int:
        return int(self.tile_col.size)

    @property
    def nnz(self) -> int:
        """Nonzeros of the matrix: the kept values that are not padding zeros, and the
        residual."""
        return int(np.count_nonzero(self.values)) + int(self.res_values.size)

    def to_csr(self) -> sp.csr_matrix:
        self.validate(expensive=True)
        return _to_csr(self)

    # validation ---------------------------------------------------------------------------
    def _check_arrays(self):
        """Pointers of the bands (to the tiles) and of the rows (to the residual), every
        array's length from them, one index dtype, the values' dtype twice."""
        self._check_index_array("tile_col", self.tile_col, self.tile_col.size)
        n = self.tile_col.size
        self._check_indptr("tile_ptr", self.tile_ptr, self.n_bands, n)
        self._require(self.values.size == n * VALUES_PER_TILE, "values",
                      f"{n * VALUES_PER_TILE} entries ({VALUES_PER_TILE} per tile)",
                      self.values.size)
        self._require(self.meta.dtype == np.uint32 and self.meta.ndim == 1, "meta",
                      "a 1-D uint32 array", f"{self.meta.ndim}-D {self.meta.dtype}")
        self._require(self.meta.size == n * META_PER_TILE, "meta",
                      f"{n * META_PER_TILE} words ({META_PER_TILE} per tile)", self.meta.size)
        r = self.res_values
        self._require(r.ndim == 1 and r.dtype == self.values.dtype, "res_values",
                      f"a 1-D {self.values.dtype} array (the values' dtype)", f"{r.ndim}-D {r.dtype}")
        self._check_indptr("res_ptr", self.res_ptr, self.n_rows, r.size)
        self._check_index_array("res_cols", self.res_cols, r.size)
        for name in ("tile_ptr", "res_ptr", "res_cols"):
            a = getattr(self, name)
            self._require(a.dtype == self.tile_col.dtype, f"{name}.dtype",
                          f"{self.tile_col.dtype} (same as tile_col)", a.dtype)

    def _check_entries(self, canonical: bool):
        """What the kernels need, in this order: every column block in range, every
        metadata nibble two different positions in increasing order, no nonzero of the
        2:4 part outside the shape, every residual column in range. Canonical: what
        ``encode`` makes of the matrix, array for array."""
        nb = self.n_blocks
        if self.n_tiles:
            lo, hi = int(self.tile_col.min()), int(self.tile_col.max())
            self._require(lo >= 0 and hi < nb, "tile_col", f"column blocks in [0, {nb})",
                          f"range [{lo}, {hi}]")
            i0, i1 = _positions(self.meta)
            bad = ~(i0 < i1)
            self._require(not bad.any(), "meta", "two positions in increasing order per group",
                          f"{int(bad.sum())} nibbles that are not (e.g. word "
                          f"{int(np.argmax(bad.any(axis=1)))})")
            rows, cols, vals = decode_tiles(self)
            outside = (vals != 0) & ((rows >= self.n_rows) | (cols >= self.n_cols))
            self._require(not outside.any(), "values", f"zeros outside the shape {self.shape}",
                          f"{int(outside.sum())} nonzeros there")
        if self.res_cols.size:
            lo, hi = int(self.res_cols.min()), int(self.res_cols.max())
            self._require(lo >= 0 and hi < self.n_cols, "res_cols",
                          f"columns in [0, {self.n_cols})", f"range [{lo}, {hi}]")
        if canonical:
            again = encode(_to_csr(self), dtype=self.dtype)
            for name, a in self.arrays():
                b = getattr(again, name)
                self._require(a.dtype == b.dtype and a.shape == b.shape
                              and a.tobytes() == b.tobytes(), name,
                              "what reference.split24.encode stores for this matrix",
                              "other bytes (a value kept in the wrong part, an explicit zero, "
                              "a tile out of order or without a nonzero)",
                              "re-encode with reference.split24.encode")


def _positions(meta: np.ndarray):
    """(first, second) position of every group's kept values: arrays [words, 8]."""
    nib = (meta[:, None] >> (4 * np.arange(8, dtype=np.uint32))[None, :]) & np.uint32(15)
    return (nib & 3).astype(np.int64), (nib >> 2).astype(np.int64)


def decode_tiles(M: Split24Matrix):
    """(rows, cols, values) of every stored slot of the 2:4 part (zeros included), in the
    order of ``values``; columns from the metadata. No validation."""
    n = M.n_tiles
    if not n:
        e = np.zeros(0, np.int64)
        return e, e, M.values[:0]
    band = row_ids(M.tile_ptr.astype(np.int64))                     # band of each tile
    i0, i1 = _positions(M.meta)
    pos = np.stack([i0, i1], axis=-1).reshape(n, META_PER_TILE, 8, 2)
    # position of each values entry: meta word/nibble of its (row, group), then its half
    grid = np.zeros((n, TILE_ROWS, 8, 2), np.int64)
    grid[:, _MROW, _MGROUP, :] = pos.reshape(n, -1, 2)
    p = grid[:, _VROW, _VGROUP, _VHALF]
    rows = band[:, None] * TILE_ROWS + _VROW[None, :]
    cols = (M.tile_col.astype(np.int64)[:, None] * TILE_COLS
            + _VGROUP[None, :] * GROUP + p)
    return rows.reshape(-1), cols.reshape(-1), M.values


def _to_csr(M) -> sp.csr_matrix:
    """The nonzeros of both parts as a canonical CSR (no validation)."""
    rows, cols, vals = decode_tiles(M)
    keep = vals != 0
    rr = row_ids(M.res_ptr.astype(np.int64))
    r = np.concatenate([rows[keep], rr])
    c = np.concatenate([cols[keep], M.res_cols.astype(np.int64)])
    v = np.concatenate([vals[keep], M.res_values])
    order = np.lexsort((c, r))
    r, c, v = r[order], c[order], v[order]
    idx = index_dtype_for(v.size, *M.shape)
    indptr = np.concatenate(([0], np.cumsum(np.bincount(r, minlength=M.n_rows)))).astype(idx)
    return csr_from_arrays(M.shape, indptr, c.astype(idx), v)


def encode(A, dtype=None, lossy: bool = False) -> Split24Matrix:
    """Any scipy.sparse matrix or dense 2-D array -> canonical :class:`Split24Matrix`.

    ``lossy``: accept values that overflow or underflow in ``dtype`` (see ``canonical_csr``)."""
    dt = resolve_dtype(A, dtype)
    csr = canonical_csr(A, dt, lossy)
    n_rows, n_cols = (int(s) for s in csr.shape)
    idx = csr.indices.dtype
    vals = csr_value_array(csr, dt)
    rows = row_ids(csr.indptr)
    cols = csr.indices.astype(np.int64)
    # rank of each nonzero in its group of four (entries are sorted within a row)
    key = rows * (-(-n_cols // GROUP) + 1) + cols // GROUP
    first = np.ones(key.size, bool)
    first[1:] = key[1:] != key[:-1]
    start = np.maximum.accumulate(np.where(first, np.arange(key.size), 0))
    rank = np.arange(key.size) - start
    kept, res = rank < 2, rank >= 2

    # residual: CSR of the third and fourth nonzeros of full groups
    res_ptr = np.concatenate(([0], np.cumsum(np.bincount(rows[res], minlength=n_rows)))).astype(idx)
    res_cols = cols[res].astype(idx)
    res_values = vals[res]

    # 2:4 part: one (position pair, value pair) per group that holds a kept nonzero
    kr, kc, kv, krank = rows[kept], cols[kept], vals[kept], rank[kept]
    g_first = krank == 0
    g_row, g_grp = kr[g_first], kc[g_first] // GROUP
    n_groups = int(g_first.sum())
    gid = np.cumsum(g_first) - 1                                   # group of each kept entry
    pos = np.zeros((n_groups, 2), np.int64)
    pv = np.zeros((n_groups, 2), dt)
    count = np.bincount(gid, minlength=n_groups)
    pos[gid, krank] = kc % GROUP
    pv[gid, krank] = kv
    single = count == 1
    last = single & (pos[:, 0] == GROUP - 1)
    pos[single, 1] = pos[single, 0] + 1
    pos[last] = (2, 3)
    pv[last] = np.stack([np.zeros(int(last.sum()), dt), pv[last, 0]], axis=1)

    band, block = g_row // TILE_ROWS, g_grp // (TILE_COLS // GROUP)
    n_blocks = -(-n_cols // TILE_COLS)
    tkey = band * max(n_blocks, 1) + block
    tiles, tile_of = np.unique(tkey, return_inverse=True)
    n_tiles = tiles.size
    # every occupied 16 x 32 block stores 256 values and 64 bytes of metadata, and is built
    # through two (tiles, 16, 8, 2) grids: a scattered matrix costs that per nonzero
    per_tile = VALUES_PER_TILE * dt.itemsize + META_PER_TILE * 4 + 2 * 256 * (8 + dt.itemsize)
    check_size(n_tiles * per_tile, "A", f"{n_tiles:,} occupied 16 x 32 tiles "
               f"({n_tiles * VALUES_PER_TILE:,} stored values for {vals.size:,} nonzeros)",
               "split24 suits matrices whose nonzeros fill their 16 x 32 blocks (pruned weights); "
               "use csr or macko for scattered ones")
    n_bands = -(-n_rows // TILE_ROWS)
    tile_band = tiles // max(n_blocks, 1)
    tile_ptr = np.concatenate(([0], np.cumsum(np.bincount(tile_band, minlength=n_bands)))).astype(idx)
    tile_col = (tiles % max(n_blocks, 1)).astype(idx)

    lrow, lgrp = g_row % TILE_ROWS, g_grp % (TILE_COLS // GROUP)
    grid_pos = np.zeros((n_tiles, TILE_ROWS, 8, 2), np.int64)
    grid_pos[..., 1] = 1                                           # empty groups: (0, 1)
    grid_val = np.zeros((n_tiles, TILE_ROWS, 8, 2), dt)
    grid_pos[tile_of, lrow, lgrp] = pos
    grid_val[tile_of, lrow, lgrp] = pv
    values = grid_val[:, _VROW, _VGROUP, _VHALF].reshape(-1)
    nib = (grid_pos[..., 0] | (grid_pos[..., 1] << 2)).astype(np.uint32)   # [tiles, 16, 8]
    words = nib[:, _MROW, _MGROUP].reshape(n_tiles, META_PER_TILE, 8)
    meta = np.bitwise_or.reduce(words << (4 * np.arange(8, dtype=np.uint32)), axis=2)
    return Split24Matrix(tile_ptr=tile_ptr, tile_col=tile_col, values=np.ascontiguousarray(values),
                         meta=np.ascontiguousarray(meta.reshape(-1).astype(np.uint32)),
                         res_ptr=res_ptr, res_cols=res_cols, res_values=res_values,
                         shape=(n_rows, n_cols))


def spmv(M: Split24Matrix, x: np.ndarray) -> np.ndarray:
    """y = M @ x, products and sums in the accumulator type, y in M's value type. ``M`` is
    validated fully first (:class:`FormatError` if inconsistent)."""
    M = Split24Matrix.checked(M)
    x = check_operand(np.asarray(x) if not hasattr(x, "dtype") else x, M.n_cols, M.dtype)
    return _product(M, x)


def spmm(M: Split24Matrix, X: np.ndarray) -> np.ndarray:
    """Y = M @ X for X of shape (n_cols, k); Y has shape (n_rows, k)."""
    M = Split24Matrix.checked(M)
    X = check_operand(X, M.n_cols, M.dtype, name="X", ndim=2)
    return _product(M, X)


def _product(M, B):
    """Both parts' nonzeros merged into row-major order, each row summed in column order."""
    C = _to_csr(M)
    return triplet_product(row_ids(C.indptr), C.indices, C.data, M.n_rows, B, M.dtype)
