"""Register-tile SpMM pieces shared by the format kernels: Y = A @ X for X of shape (K, N).

Every format's SpMM kernel decodes each stored entry (row r, column c, value v) once per
column tile and multiplies it by the tile's ``ct`` consecutive values of row c of X, kept in
``ct`` accumulators per lane; a warp owns a row and its lanes split the row's entries, so
each decoded entry is reused across the ``ct`` columns (instead of being decoded once per
column). The grid's second dimension covers the N columns in tiles of ``ct``: N <= ct
reads A once.

Row c of the tile is gathered with vector loads of ``g`` values (16 bytes: 8 float16,
4 float32) when N is a multiple of ``g`` (every group is then aligned and either wholly
inside the tile's valid columns or wholly outside), else one value at a time. X is passed
flat (row-major, N values per row). At the end each accumulator is summed over the warp and
lane j writes column j0 + j.
"""
from __future__ import annotations

import functools
import math

import numpy as np

from .._cuda import cuda
from ._common import (
    WARP, acc_type, blocks_for, finish, prepare_spmm, warp_sum,
)
from ._intrinsics import vload1, vload2, vload4, vload8

#: the column-tile widths the SpMM kernels are built for
TILE_COLS = (1, 2, 4, 8, 16, 32)


def tile_for(n_cols: int, max_tile: int) -> int:
    """The tile width for N = ``n_cols`` columns: the next power of two, at most ``max_tile``."""
    ct = 1
    while ct < n_cols and ct < max_tile:
        ct *= 2
    return ct


def group_for(dtype, n_cols: int, ct: int) -> int:
    """Values per gather load: 16 bytes' worth, at most the tile, 1 unless N is a multiple."""
    g = min(ct, 16 // np.dtype(dtype).itemsize)
    return g if n_cols % g == 0 else 1


@functools.lru_cache(maxsize=None)
def tile_parts(dtype_name: str, ct: int, g: int):
    """Device functions for a tile of ``ct`` columns gathered ``g`` at a time:

    ``zero(accs)``                          clear the accumulators (a local array of ct)
    ``fma_row(Xf, off, nvalid, v, accs)``   accs[j] += v * Xf[off + j] (j < nvalid matter)
    ``finite(accs, nvalid)``                every valid column's warp sum is finite
    ``store(Y, r, j0, nvalid, accs, lane)`` warp-sum each accumulator; lane j writes Y[r, j0 + j]
    """
    acc = acc_type(dtype_name)
    load = {1: vload1, 2: vload2, 4: vload4, 8: vload8}[g]
    n_groups = ct // g

    @cuda.jit(device=True, inline=True)
    def zero(accs):
        for j in range(ct):
            accs[j] = acc(0)

    @cuda.jit(device=True, inline=True)
    def fma_row(Xf, off, nvalid, v, accs):
        """No branches, so the gathers of consecutive entries can all be in flight: a group
        past the tile's valid columns (the last tile only) reloads the last valid group, and
        its accumulators are never stored."""
        for gi in range(n_groups):
            j = gi * g
            xs = load(Xf, off + min(j, nvalid - g))
            for t in range(g):
                accs[j + t] += v * acc(xs[t])

    @cuda.jit(device=True, inline=True)
    def finite(accs, nvalid):
        """True when every valid accumulator's warp sum is finite (warp-uniform)."""
        ok = True
        for j in range(ct):
            s = warp_sum(accs[j])
            if j < nvalid and (math.isinf(s) or math.isnan(s)):
                ok = False
        return ok

    @cuda.jit(device=True, inline=True)
    def store(Y, r, j0, nvalid, accs, lane):
        for j in range(ct):
            s = warp_sum(accs[j])
            if lane == j and j < nvalid:
                Y[r, j0 + j] = s

    return dict(zero=zero, fma_row=fma_row, store=store, finite=finite)


def ptx_cases(dtype_name: str) -> list[tuple[int, int]]:
    """(ct, g) pairs the PTX check compiles: scalar, one vector group, several groups."""
    gmax = 16 // np.dtype(dtype_name).itemsize
    return sorted({(1, 1), (8, 1), (8, min(8, gmax)), (16, gmax), (32, gmax)})


def accumulator_np(dtype_name: str):
    return np.float64 if dtype_name == "float64" else np.float32


def launch_tiles(D, X, out, kernel, arrays: tuple, threads: int, rows_per_block: int, max_tile: int,
                 spmv=None):
    """Check and place X/out, pick the tile (``tile_for``) and gather width (``group_for``),
    build ``kernel(ct, g)`` and launch it over (row blocks, column tiles) with
    ``(*arrays, X flat, Y, N)``; return Y where the caller wants it. N = 1 launches the
    format's SpMV kernel instead when ``spmv = (factory, threads, rows_per_block)`` is given."""
    ops, k_cols = prepare_spmm(D, X, out)
    if D.shape[0] and k_cols == 1 and spmv is not None:
        factory, sthreads, srows = spmv
        factory()[blocks_for(D.shape[0], srows), sthreads](
            *arrays, ops.x.reshape(ops.x.shape[0]), ops.out.reshape(D.shape[0]))
    elif D.shape[0] and k_cols:
        ct = tile_for(k_cols, max_tile)
        g = group_for(D.dtype, k_cols, ct)
        grid = (blocks_for(D.shape[0], rows_per_block), blocks_for(k_cols, ct))
        flat = ops.x.reshape(ops.x.shape[0] * k_cols)
        kernel(ct, g)[grid, threads](*arrays, flat, ops.out, np.int64(k_cols))
    return finish(ops, out)


__all__ = ["TILE_COLS", "tile_for", "group_for", "tile_parts", "ptx_cases", "accumulator_np", "launch_tiles"]
