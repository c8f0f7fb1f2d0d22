"""Split 2:4 SpMV/SpMM kernels (numba.cuda), paired with ``reference/split24.py``.

The 2:4 part goes through the sparse tensor cores (``mma.sp.m16n8k32``: the hardware picks
each group's two kept values out of four columns, so a tile costs one 16-byte load of
values, one metadata word and one instruction per 8 columns of X), the residual through
CUDA cores. Float16 values only (float32 sums).

1. ``pack``: X (n_cols x k, float16) is rewritten once per call into the B operands of the
   mma, ``Xp``: for column block c (32 rows of X) and 8-column tile j, the 32 lanes' four
   words (lane (g, t): rows 32c + 2t + 8i, + 1 of column 8j + g, i = 0..3, zero past X),
   512 bytes a lane reads with one 16-byte load.
2. ``spmm``: block (bx, by) owns band bx (16 rows) and ``cols_per_warp`` columns of Y (by);
   its ``warps_per_band`` warps share the band's tiles (warp w: tiles w, w + W, ...). For
   each: lane (g, t) loads its 8 kept values (16 bytes), its metadata word and, for each
   8-column tile, its B operand (16 bytes of Xp, at the tile's column block, read a tile
   earlier, so no load waits on another), a tile ahead of their
   mma.sp into float32 accumulators (rows g and g + 8, columns 2t, 2t + 1 of each 8-column
   tile). Then the residual: the four lanes of a quad take the entries w, w + W, ... of rows
   g and g + 8, four entries at a time (their loads together, the next four's indices
   loaded meanwhile), each lane for its own columns (4 bytes of X each for even k). The
   warps' sums meet in shared memory and are added in warp order (deterministic).

The hardware multiplies both kept slots of every group: a zero kept beside a lone nonzero
meets an Inf or NaN of X as 0 * Inf = NaN, where CSR skips it. So a block with a sum that is
not finite does its outputs again on CUDA cores from the nonzeros alone (a thread per
output), and NaN/Inf propagate as in CSR; finite sums are exact products either way. (That
pass is a scalar loop apart from the warps' accumulators: done as a second pass of the
fragment code it raised the kernel from 76 to 121 registers in ptxas for sm_90.) SpMV is
the same with k = 1 (one 8-column tile, seven of its columns zero). Measured times:
docs/performance.md.
"""
from __future__ import annotations

import dataclasses
import functools
import math

import numpy as np

from reference.split24 import META_PER_TILE, TILE_COLS, TILE_ROWS, Split24Matrix

from .. import formats
from .._cuda import cuda, inline_device
from ._common import (
    WARP, PTXTarget, array_sig, blocks_for, check_config, check_int32,
    check_value_dtype, checked_to_device, finish, jit_options, launch_stream, launch_strided,
    prepare, prepare_spmm, scratch, to_dev,
)
from ._intrinsics import mma_sp16832, pack_half2, vload2, vload4, vwords4
from ._spmm import tile_parts

__all__ = ["Split24Config", "DeviceSplit24", "to_device", "device_check", "spmv", "spmm",
           "ptx_targets", "CHECK_FIELDS", "resolved"]

LANE_WORDS = 4                 # B operand words per lane
TILE_WORDS = WARP * LANE_WORDS  # Xp words per (column block, 8-column tile)
PACK_THREADS = 256


@dataclasses.dataclass(frozen=True)
class Split24Config:
    """Launch settings: ``warps_per_band`` (1 to 32: the warps of a block, which share one
    band's tiles and residual entries and add their sums in shared memory; enough warps in
    flight to keep the loads coming even for matrices of few bands; None: 4 once the grid
    has ``FULL_GRID_BLOCKS`` blocks, 8 for smaller grids) and ``cols_per_warp`` (columns of
    Y per block: 8, 16 or 32, eight float32 registers per lane for each 8, half for the
    sums, half for the next tile's B operands; each tile's values loaded once for all of
    them; None: the fewest of these that cover X's columns, 32 beyond)."""

    warps_per_band: int | None = None
    cols_per_warp: int | None = None

    def __post_init__(self):
        from reference._common import OptionError, problem
        w = self.warps_per_band
        if w is not None and (not isinstance(w, int) or not 1 <= w <= 32):
            raise OptionError(problem("Split24Config.warps_per_band", "None or an int in [1, 32]",
                                      w))
        if self.cols_per_warp not in (None, 8, 16, 32):
            raise OptionError(problem("Split24Config.cols_per_warp", "None, 8, 16 or 32",
                                      self.cols_per_warp))


@dataclasses.dataclass(frozen=True, eq=False)
class DeviceSplit24:
    """A :class:`Split24Matrix` whose arrays live on the device."""

    tile_ptr: object
    tile_col: object
    values: object
    meta: object
    res_ptr: object
    res_cols: object
    res_values: object
    shape: tuple
    dtype: np.dtype
    nbytes: int


def to_device(M: Split24Matrix, check: str = "auto") -> DeviceSplit24:
    """``M`` on the device, checked by ``kernels._common.checked_to_device`` (every column
    block and residual column in range, every metadata nibble valid, no nonzero outside
    the shape; ``check``: "auto", "host" or "device")."""
    return checked_to_device(M, Split24Matrix, DeviceSplit24, _upload, device_check, check)


def _upload(M: Split24Matrix) -> DeviceSplit24:
    check_value_dtype(M.dtype, formats.get("split24").kernel_dtypes, "split24 kernel")
    for name in ("tile_ptr", "res_ptr"):
        check_int32(f"{name}[-1]", int(getattr(M, name)[-1]))
    return DeviceSplit24(**{n: to_dev(a) for n, a in M.arrays()}, shape=M.shape, dtype=M.dtype,
                         nbytes=M.nbytes)


# ---------------------------------------------------------------------------------------------
# the device check, the same predicates as Split24Matrix._check_entries(canonical=False)
# ---------------------------------------------------------------------------------------------

CHECK_FIELDS = ("tile_col", "meta", "values", "res_cols")


@functools.lru_cache(maxsize=None)
def _check_kernel():
    @cuda.jit
    def split24_check(tile_ptr, tile_col, values, meta, res_cols, n_rows, n_cols, flags):
        """Grid-stride loop over the metadata words (tile p, word w = 2g + h): the tile's
        column block in range (else flag 0 and nothing more for it); each nibble's positions
        increasing (else flag 1 and not its values); each value of rows g, g + 8 in groups
        4h .. 4h + 3 zero unless inside the shape (flag 2). Then over the residual: every
        column in range (flag 3)."""
        n_words = meta.shape[0]
        blocks = (n_cols + TILE_COLS - 1) // TILE_COLS
        q = cuda.grid(1)
        step = cuda.gridsize(1)
        while q < n_words:
            p = q // META_PER_TILE
            w = q % META_PER_TILE
            kt = tile_col[p]
            if kt < 0 or kt >= blocks:
                flags[0] = 1
            else:
                lo = 0                                  # the band of tile p
                hi = tile_ptr.shape[0] - 1
                while hi - lo > 1:
                    mid = (lo + hi) // 2
                    if tile_ptr[mid] <= p:
                        lo = mid
                    else:
                        hi = mid
                g = w // 2
                h = w % 2
                word = meta[q]
                for up in range(2):
                    row = lo * TILE_ROWS + g + 8 * up
                    for j in range(4):
                        nib = (word >> (16 * up + 4 * j)) & 15
                        p0 = nib & 3
                        p1 = nib >> 2
                        if p0 >= p1:
                            flags[1] = 1
                            continue
                        grp = 4 * h + j
                        v0 = (p * WARP + 4 * g + j) * 8 + (up + 2 * h) * 2
                        c0 = kt * TILE_COLS + 4 * grp + p0
                        c1 = kt * TILE_COLS + 4 * grp + p1
                        if values[v0] != 0 and (row >= n_rows or c0 >= n_cols):
                            flags[2] = 1
                        if values[v0 + 1] != 0 and (row >= n_rows or c1 >= n_cols):
                            flags[2] = 1
            q += step
        q = cuda.grid(1)
        while q < res_cols.shape[0]:
            c = res_cols[q]
            if c < 0 or c >= n_cols:
                flags[3] = 1
            q += step

    return split24_check


def launch_check(D: DeviceSplit24, flags):
    """Launch the check kernel (no wait): a grid-stride loop over metadata and residual."""
    n = max(D.meta.shape[0], D.res_cols.shape[0])
    launch_strided(_check_kernel(), n, D.tile_ptr, D.tile_col, D.values, D.meta, D.res_cols,
                   D.shape[0], D.shape[1], flags)


def device_check(D: DeviceSplit24) -> list[str]:
    """The first of :data:`CHECK_FIELDS` the device check flags, as a list (empty: none):
    the host check stops at its first failure in the same order, so both name one field."""
    flags = cuda.to_device(np.zeros(len(CHECK_FIELDS), np.int32))
    launch_check(D, flags)
    return [f for f, v in zip(CHECK_FIELDS, flags.copy_to_host()) if v][:1]


# ---------------------------------------------------------------------------------------------
# the kernels
# ---------------------------------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def _pack_kernel():
    f16 = np.float16

    @cuda.jit
    def split24_pack(X, Xp):
        """Thread q writes word q of Xp: (block c, tile j, lane (g, t), i) -> X rows
        32c + 2t + 8i and the next one of column 8j + g, packed (zero past X)."""
        q = cuda.grid(1)
        if q >= Xp.shape[0]:
            return
        n, k = X.shape
        jt_n = (k + 7) // 8
        i = q % LANE_WORDS
        lane = (q // LANE_WORDS) % WARP
        jt = (q // TILE_WORDS) % jt_n
        c = q // (TILE_WORDS * jt_n)
        r = c * TILE_COLS + 2 * (lane % 4) + 8 * i
        col = jt * 8 + lane // 4
        lo = f16(0)
        hi = f16(0)
        if col < k:
            if r < n:
                lo = X[r, col]
            if r + 1 < n:
                hi = X[r + 1, col]
        Xp[q] = pack_half2(lo, hi)

    return split24_pack


@functools.lru_cache(maxsize=None)
def _spmm_kernel(cfg: Split24Config, out_t: bool = False):
    """The SpMM kernel for ``cfg``; ``out_t``: Y is the product's transpose, (k, rows)."""
    W = cfg.warps_per_band
    C = cfg.cols_per_warp
    u32 = np.uint32
    NW = C // 8
    ND = 4 * NW
    THREADS = W * WARP
    RED = W * TILE_ROWS * C             # the warps' sums (a shared array's shape: a constant)
    f32 = np.float32
    f16 = np.float16

    # the product's (rows, columns) and its (row, col) := v, whichever way Y holds it
    dims, put = (tile_parts("float16", 1, 1, out_t=out_t)[k] for k in ("dims", "put_at"))

    @inline_device
    def load_tile(values, meta, Xp, p, c, lane, g, t, jt0, jt_n, av, ev, bv):
        """The slot := tile p's kept values (16 bytes), metadata word and B operands (column
        block c, already loaded; past Y's last 8-column tile, that block's last, unused).
        No branch around the loads: the caller keeps p in range instead, so that ptxas can
        count them on one scoreboard and an mma waits only for its own tile's loads (with a
        branch it waited for every load in flight, the next tile's too)."""
        a0, a1, a2, a3 = vwords4(values, (p * WARP + lane) * 8)
        av[0] = a0
        av[1] = a1
        av[2] = a2
        av[3] = a3
        ev[0] = meta[p * META_PER_TILE + 2 * g + (t & 1)]
        for j in range(NW):
            jt = min(jt0 + j, jt_n - 1)
            b0, b1, b2, b3 = vload4(Xp, (c * jt_n + jt) * TILE_WORDS + lane * LANE_WORDS)
            bv[4 * j] = b0
            bv[4 * j + 1] = b1
            bv[4 * j + 2] = b2
            bv[4 * j + 3] = b3

    @inline_device
    def add_entries4(X, Xf, c0, c1, c2, c3, v0, v1, v2, v3, up, t, jt0, k, d):
        """d += the four entries' v * X[c, this lane's columns] for row g + 8 up of the
        lane's quad, their loads of X issued together: for even k a lane's two columns of an
        8-column tile are one 4-byte load (``Xf``: X flat; column 2t of an even row length
        starts a 4-byte word), for odd k two 2-byte loads. Each 8-column tile's loads sit
        under its own bounds check: clamping the columns past k instead, so that every
        tile's loads go out together, was slower at 32 columns (docs/performance.md,
        "Split 2:4 kernels", step 8)."""
        for j in range(NW):
            col = (jt0 + j) * 8 + 2 * t
            if col < k:
                if k % 2 == 0:                      # (the same in every thread)
                    a0, b0 = vload2(Xf, c0 * k + col)
                    a1, b1 = vload2(Xf, c1 * k + col)
                    a2, b2 = vload2(Xf, c2 * k + col)
                    a3, b3 = vload2(Xf, c3 * k + col)
                    d[4 * j + 2 * up] += (v0 * f32(a0) + v1 * f32(a1) + v2 * f32(a2)
                                          + v3 * f32(a3))
                    d[4 * j + 2 * up + 1] += (v0 * f32(b0) + v1 * f32(b1) + v2 * f32(b2)
                                              + v3 * f32(b3))
                else:
                    for h in range(2):
                        if col + h < k:
                            d[4 * j + 2 * up + h] += (
                                v0 * f32(X[c0, col + h]) + v1 * f32(X[c1, col + h])
                                + v2 * f32(X[c2, col + h]) + v3 * f32(X[c3, col + h]))

    @inline_device
    def careful(tile_ptr, tile_col, values, meta, res_ptr, res_cols, res_values, X, Y, band,
                rl, col):
        """Y[row, col] for row ``rl`` of the band on CUDA cores from its nonzeros alone (the
        stored zeros skipped, so an Inf or NaN of X meets only what CSR would multiply it
        by): the row's kept values tile by tile, then its residual."""
        n_rows, k = dims(Y)
        row = band * TILE_ROWS + rl
        if row >= n_rows or col >= k:
            return
        g = rl % 8
        up = rl // 8
        s = f32(0)
        for p in range(tile_ptr[band], tile_ptr[band + 1]):
            c0 = tile_col[p] * TILE_COLS
            for grp in range(8):
                word = meta[p * META_PER_TILE + 2 * g + grp // 4]
                at = (p * WARP + 4 * g + grp % 4) * 8 + (up + 2 * (grp // 4)) * 2
                for half in range(2):
                    v = f32(values[at + half])
                    if v != 0:
                        pos = (word >> (16 * up + 4 * (grp % 4) + 2 * half)) & 3
                        s += v * f32(X[c0 + 4 * grp + pos, col])
        for q in range(res_ptr[row], res_ptr[row + 1]):
            s += f32(res_values[q]) * f32(X[res_cols[q], col])
        put(Y, row, col, f16(s))

    @inline_device
    def batch(res_cols, res_values, q, last):
        """The columns and values of residual entries q, q + W, q + 2 W, q + 3 W, indices
        past ``last`` (the row's last entry) clamped to it."""
        return (res_cols[min(q, last)], res_cols[min(q + W, last)],
                res_cols[min(q + 2 * W, last)], res_cols[min(q + 3 * W, last)],
                res_values[min(q, last)], res_values[min(q + W, last)],
                res_values[min(q + 2 * W, last)], res_values[min(q + 3 * W, last)])

    @inline_device
    def finish(res_ptr, res_cols, res_values, X, Xf, Y, red, flag, band, warp, g, t, jt0, d):
        """Add the residual of rows g, g + 8 (entries w, w + W, ...), then the warps' sums in
        warp order into Y; ``flag`` set if one is not finite. Two barriers."""
        # The entries go four at a time, the next four's columns and values loaded before
        # this four's rows of X, so a batch waits for one latency, not two. Indices past the
        # row's last entry are clamped to it with value 0: no branch around the loads (as
        # in load_tile), and a product 0 * X that is not finite only comes with the same
        # column's real entry, whose sum then takes the careful path anyway.
        n_rows, k = dims(Y)
        for up in range(2):
            row = band * TILE_ROWS + g + 8 * up
            if row < n_rows:
                q = res_ptr[row] + warp
                qe = res_ptr[row + 1]
                last = qe - 1
                if q < qe:                  # (last is then a real entry: no wrap-around)
                    c0, c1, c2, c3, u0, u1, u2, u3 = batch(res_cols, res_values, q, last)
                    while q < qe:
                        v0 = f32(u0)
                        v1 = f32(u1) if q + W < qe else f32(0)
                        v2 = f32(u2) if q + 2 * W < qe else f32(0)
                        v3 = f32(u3) if q + 3 * W < qe else f32(0)
                        nq = q + 4 * W
                        n0, n1, n2, n3, u0, u1, u2, u3 = batch(res_cols, res_values, nq, last)
                        add_entries4(X, Xf, c0, c1, c2, c3, v0, v1, v2, v3, up, t, jt0, k, d)
                        c0, c1, c2, c3 = n0, n1, n2, n3
                        q = nq
            for j in range(NW):
                at = (warp * TILE_ROWS + g + 8 * up) * C + 8 * j + 2 * t
                red[at] = d[4 * j + 2 * up]
                red[at + 1] = d[4 * j + 2 * up + 1]
        cuda.syncthreads()
        i = cuda.threadIdx.x
        while i < TILE_ROWS * C:
            row = band * TILE_ROWS + i // C
            col = jt0 * 8 + i % C
            if row < n_rows and col < k:
                s = red[i]
                for w in range(1, W):
                    s += red[w * TILE_ROWS * C + i]
                if math.isinf(s) or math.isnan(s):
                    flag[0] = 1
                put(Y, row, col, f16(s))
            i += THREADS
        cuda.syncthreads()

    @inline_device
    def tile_loop(tile_ptr, tile_col, values, meta, Xp, band, warp, lane, g, t, jt0, jt_n, d):
        """d += this warp's tiles of the band, each tile's loads issued a tile ahead."""
        # One slot of (values, metadata, B operands) in registers holds the warp's next tile
        # and is refilled with the one after right after that tile's mma, so one tile's loads
        # are in flight while the warp multiplies (two slots timed alike at 8 columns and
        # cost occupancy at 32: docs/performance.md). The B operands' address needs the
        # tile's column block: kn holds it for the slot's next tile, loaded a tile earlier,
        # kept as the int32 it is stored as (widened at its use: a widening right after the
        # load would wait for it).
        av = cuda.local.array(4, u32)
        ev = cuda.local.array(1, u32)
        bv = cuda.local.array(ND, u32)
        end = tile_ptr[band + 1]
        last = end - 1                              # tiles past it load this one, unused
        p = tile_ptr[band] + warp
        kn = np.int32(0)
        if p < end:
            load_tile(values, meta, Xp, p, tile_col[p], lane, g, t, jt0, jt_n, av, ev, bv)
            kn = tile_col[min(p + W, last)]
        while p < end:                              # the same in every lane
            for j in range(NW):
                e0, e1, e2, e3 = mma_sp16832(
                    av[0], av[1], av[2], av[3], bv[4 * j], bv[4 * j + 1], bv[4 * j + 2],
                    bv[4 * j + 3], d[4 * j], d[4 * j + 1], d[4 * j + 2], d[4 * j + 3], ev[0])
                d[4 * j] = e0                       # (columns past k: summed, never stored)
                d[4 * j + 1] = e1
                d[4 * j + 2] = e2
                d[4 * j + 3] = e3
            load_tile(values, meta, Xp, min(p + W, last), kn, lane, g, t, jt0, jt_n, av, ev,
                      bv)
            kn = tile_col[min(p + 2 * W, last)]
            p += W

    # a block of W warps must fit the register file: at 16 and 32 warps the cap spills
    # rather than leaving the launch without resources
    @cuda.jit(**jit_options(max_registers=min(255, 65536 // THREADS)))
    def split24_spmm(tile_ptr, tile_col, values, meta, res_ptr, res_cols, res_values, Xp, X, Xf,
                     Y):
        """Block (bx, by): band bx, columns [by * C, by * C + C) of Y; warp w takes the
        band's tiles w, w + W, ... and its residual entries w, w + W, ... of every row."""
        warp = cuda.threadIdx.x // WARP
        lane = cuda.threadIdx.x % WARP
        band = cuda.blockIdx.x
        n_rows, k = dims(Y)
        jt_n = (k + 7) // 8
        jt0 = cuda.blockIdx.y * NW
        g = lane // 4
        t = lane % 4
        flag = cuda.shared.array(1, np.int32)
        if cuda.threadIdx.x == 0:
            flag[0] = 0                             # read after the first barrier
        d = cuda.local.array(ND, f32)
        for i in range(ND):
            d[i] = f32(0)
        tile_loop(tile_ptr, tile_col, values, meta, Xp, band, warp, lane, g, t, jt0, jt_n, d)
        red = cuda.shared.array(RED, f32)
        finish(res_ptr, res_cols, res_values, X, Xf, Y, red, flag, band, warp, g, t, jt0, d)
        if flag[0] != 0:                            # the same in every thread
            i = cuda.threadIdx.x
            while i < TILE_ROWS * C:
                careful(tile_ptr, tile_col, values, meta, res_ptr, res_cols, res_values, X, Y,
                        band, i // C, jt0 * 8 + i % C)
                i += THREADS

    return split24_spmm


#: grids of at least this many blocks (bands x column blocks of Y) get 4 warps per band by
#: default, smaller ones 8 (about three blocks per SM of an H100 or H200; measured in
#: docs/performance.md, split24)
FULL_GRID_BLOCKS = 384


def _grid(n_rows: int, k: int, cols: int) -> tuple[int, int]:
    """(bands, column blocks of Y): the SpMM's grid for ``cols`` columns per block."""
    return -(-n_rows // TILE_ROWS), -(-k // cols)


def resolved(config: Split24Config, k: int, n_rows: int) -> Split24Config:
    """``config`` with its None fields chosen for X of k columns and a matrix of n_rows rows
    (see Split24Config)."""
    cols = config.cols_per_warp or next(c for c in (8, 16, 32) if c >= k or c == 32)
    bands, col_blocks = _grid(n_rows, k, cols)
    blocks = bands * col_blocks
    warps = config.warps_per_band or (4 if blocks >= FULL_GRID_BLOCKS else 8)
    return dataclasses.replace(config, cols_per_warp=cols, warps_per_band=warps)


def _launch(D: DeviceSplit24, X, Y, config: Split24Config, out_t: bool = False):
    """Pack X into the B operands, then the SpMM, both on the launch stream (``out_t``: Y
    is the product's transpose)."""
    n_rows, n_cols = D.shape
    k = int(X.shape[1])
    if not (n_rows and k):
        return
    config = resolved(config, k, n_rows)
    jt_n = -(-k // 8)
    n_words = -(-n_cols // TILE_COLS) * jt_n * TILE_WORDS
    Xp = scratch((max(n_words, 1),), np.uint32)
    stream = launch_stream()
    if n_words:
        _pack_kernel()[blocks_for(n_words, PACK_THREADS), PACK_THREADS, stream](X, Xp)
    grid = _grid(n_rows, k, config.cols_per_warp)
    _spmm_kernel(config, out_t)[grid, config.warps_per_band * WARP, stream](
        D.tile_ptr, D.tile_col, D.values, D.meta, D.res_ptr, D.res_cols, D.res_values, Xp, X,
        X.reshape(X.size), Y)


def spmv(D, x, out=None, config: Split24Config = Split24Config()):
    """y = D @ x. ``D`` a :class:`Split24Matrix` or :class:`DeviceSplit24`; ``x`` host or
    device (the SpMM of one column)."""
    check_config(config, Split24Config)
    D = to_device(D)
    n_rows, n_cols = D.shape
    ops = prepare(x, out, n_cols, (n_rows,), D.dtype)
    _launch(D, ops.x.reshape(n_cols, 1), ops.out.reshape(n_rows, 1), config)
    return finish(ops, out)


def spmm(D, X, out=None, config: Split24Config = Split24Config(), out_t: bool = False):
    """Y = D @ X for X of shape (n_cols, k); ``out_t``: return Y's transpose, (k, n_rows),
    written by the kernel."""
    check_config(config, Split24Config)
    D = to_device(D)
    ops, _ = prepare_spmm(D, X, out, out_t)
    _launch(D, ops.x, ops.out, config, out_t)
    return finish(ops, out)


def ptx_targets():
    """The SpMM (the SpMV is the same kernel) at 8 and 32 columns per block (at 8 also into
    Y's transpose), the packing and the check, int32 indices."""
    it, dt = "int32", "float16"
    head = (f"void({array_sig(it)}, {array_sig(it)}, {array_sig(dt)}, {array_sig('uint32')}, "
            f"{array_sig(it)}, {array_sig(it)}, {array_sig(dt)}, {array_sig('uint32')}, "
            f"{array_sig(dt, 2)}, {array_sig(dt)}, {array_sig(dt, 2)})")
    spmm = [PTXTarget(f"split24.spmm[float16,int32,c{c.cols_per_warp},w{c.warps_per_band}]",
                      functools.partial(_spmm_kernel, c), head,
                      expects=(r"mma\.sp\.sync\.aligned\.m16n8k32",))
            for c in (resolved(Split24Config(), 32, 4096), resolved(Split24Config(), 8, 4096))]
    c8 = resolved(Split24Config(), 8, 4096)                 # as SparseLinear runs it
    spmm.append(PTXTarget(f"split24.spmm[float16,int32,c{c8.cols_per_warp},w{c8.warps_per_band},out_t]",
                          functools.partial(_spmm_kernel, c8, True), head,
                          expects=(r"mma\.sp\.sync\.aligned\.m16n8k32",)))
    return spmm + [
        PTXTarget("split24.pack[float16]", _pack_kernel,
                  f"void({array_sig(dt, 2)}, {array_sig('uint32')})"),
        PTXTarget("split24.check[int32]", _check_kernel,
                  f"void({array_sig(it)}, {array_sig(it)}, {array_sig(dt)}, {array_sig('uint32')}, "
                  f"{array_sig(it)}, int64, int64, {array_sig('int32')})"),
    ]
