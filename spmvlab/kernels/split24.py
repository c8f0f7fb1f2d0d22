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
   8-column tile, its B operand (16 bytes of Xp, at the tile's column block, read a round of
   tiles earlier, so no load waits on another), ``depth`` tiles ahead of their
   mma.sp into float32 accumulators (rows g and g + 8, columns 2t, 2t + 1 of each 8-column
   tile). Then the residual: the four lanes of a quad take the entries w, w + W, ... of rows
   g and g + 8, four entries' loads at a time, each lane for its own columns. The warps' sums
   meet in shared memory and are added in warp order (deterministic).

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
    FULL_MASK, WARP, PTXTarget, array_sig, blocks_for, check_config, check_int32,
    check_value_dtype, checked_to_device, finish, jit_options, launch_stream, launch_strided,
    prepare, prepare_spmm, scratch, to_dev,
)
from ._intrinsics import (
    cp_async4, cp_async16, cp_async16_l1, cp_async_commit, cp_async_waiter, mma_sp16832,
    pack_half2, sload4, vload4, vwords4,
)

__all__ = ["Split24Config", "DeviceSplit24", "to_device", "device_check", "spmv", "spmm",
           "ptx_targets", "CHECK_FIELDS", "resolved"]

LANE_WORDS = 4                 # B operand words per lane
TILE_WORDS = WARP * LANE_WORDS  # Xp words per (column block, 8-column tile)
PACK_THREADS = 256


@dataclasses.dataclass(frozen=True)
class Split24Config:
    """Launch settings: ``warps_per_band`` (1 to 32: the warps of a block, which share one
    band's tiles and residual entries and add their sums in shared memory; enough warps in
    flight to keep the loads coming even for matrices of few bands) and ``cols_per_warp``
    (columns of Y per block: 8, 16 or 32, four float32 registers per lane for each 8 and
    ``4 depth`` for each 8 of prefetched B operands; each tile's values loaded once for all
    of them; None: the fewest of these that cover X's columns, 32 beyond), ``depth`` (tiles
    per warp whose values and B operands are loaded ahead of their mma, 1 or 2: a warp
    waits for a memory latency once per ``depth`` tiles; None: 2 up to 16 columns per
    block, 1 at 32, where the second slot's B operands cost occupancy), ``stages`` (0: the
    loads go to registers as ``depth`` says; 2 or 4: instead, each warp copies its next tiles
    with cp.async into that many buffers of shared memory and waits for one tile's copies
    at a time, ``depth`` unused; the buffers, ``stages x (20 + 2 cols_per_warp)`` bytes per
    lane, must fit 48 KB per block)."""

    warps_per_band: int = 8
    cols_per_warp: int | None = None
    depth: int | None = None
    stages: int = 0

    def __post_init__(self):
        from reference._common import OptionError, problem
        if not isinstance(self.warps_per_band, int) or not 1 <= self.warps_per_band <= 32:
            raise OptionError(problem("Split24Config.warps_per_band", "an int in [1, 32]",
                                      self.warps_per_band))
        if self.cols_per_warp not in (None, 8, 16, 32):
            raise OptionError(problem("Split24Config.cols_per_warp", "None, 8, 16 or 32",
                                      self.cols_per_warp))
        if self.depth not in (None, 1, 2):
            raise OptionError(problem("Split24Config.depth", "None, 1 or 2", self.depth))
        if self.stages not in (0, 2, 4):
            raise OptionError(problem("Split24Config.stages", "0, 2 or 4", self.stages))


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
def _spmm_kernel(cfg: Split24Config):
    W = cfg.warps_per_band
    C = cfg.cols_per_warp
    S = cfg.stages
    D = cfg.depth or 1                  # (unused with stages)
    AV = 4 * D
    BV = 4 * D * (C // 8)
    STAGE = stage_words(C)
    wait_oldest = cp_async_waiter(max(S - 1, 0))
    wait_all = cp_async_waiter(0)
    RED_SHAPE = 0 if S else W * TILE_ROWS * C
    u32 = np.uint32
    NW = C // 8
    ND = 4 * NW
    THREADS = W * WARP
    f32 = np.float32
    f16 = np.float16

    @inline_device
    def load_tile(values, meta, Xp, p, c, lane, g, t, jt0, jt_n, s, av, ev, bv):
        """Slot s := tile p's kept values (16 bytes), metadata word and B operands (column
        block c, already loaded; past Y's last 8-column tile, that block's last, unused).
        No branch around the loads: the caller keeps p in range instead, so that ptxas can
        count them on one scoreboard and an mma waits only for its own slot's loads (with a
        branch it waited for every load in flight, the next slots' too)."""
        a0, a1, a2, a3 = vwords4(values, (p * WARP + lane) * 8)
        av[4 * s] = a0
        av[4 * s + 1] = a1
        av[4 * s + 2] = a2
        av[4 * s + 3] = a3
        ev[s] = meta[p * META_PER_TILE + 2 * g + (t & 1)]
        for j in range(NW):
            jt = min(jt0 + j, jt_n - 1)
            b0, b1, b2, b3 = vload4(Xp, (c * jt_n + jt) * TILE_WORDS + lane * LANE_WORDS)
            at = 4 * (NW * s + j)
            bv[at] = b0
            bv[at + 1] = b1
            bv[at + 2] = b2
            bv[at + 3] = b3

    @inline_device
    def add_entry(X, c, v, up, t, jt0, k, d):
        """d += v * X[c, this lane's columns] for row g + 8 up of the lane's quad."""
        for j in range(NW):
            col = (jt0 + j) * 8 + 2 * t
            if col < k:
                d[4 * j + 2 * up] += v * f32(X[c, col])
            if col + 1 < k:
                d[4 * j + 2 * up + 1] += v * f32(X[c, col + 1])

    @inline_device
    def add_entries4(X, c0, c1, c2, c3, v0, v1, v2, v3, up, t, jt0, k, d):
        """add_entry for four entries, their loads of X issued together."""
        for j in range(NW):
            col = (jt0 + j) * 8 + 2 * t
            for h in range(2):
                if col + h < k:
                    x0 = f32(X[c0, col + h])
                    x1 = f32(X[c1, col + h])
                    x2 = f32(X[c2, col + h])
                    x3 = f32(X[c3, col + h])
                    d[4 * j + 2 * up + h] += v0 * x0 + v1 * x1 + v2 * x2 + v3 * x3

    @inline_device
    def careful(tile_ptr, tile_col, values, meta, res_ptr, res_cols, res_values, X, Y, band,
                rl, col):
        """Y[row, col] for row ``rl`` of the band on CUDA cores from its nonzeros alone (the
        stored zeros skipped, so an Inf or NaN of X meets only what CSR would multiply it
        by): the row's kept values tile by tile, then its residual."""
        n_rows, k = Y.shape
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
        Y[row, col] = f16(s)

    @inline_device
    def finish(res_ptr, res_cols, res_values, X, Y, red, flag, band, warp, g, t, jt0, d):
        """Add the residual of rows g, g + 8 (entries w, w + W, ...), then the warps' sums in
        warp order into Y; ``flag`` set if one is not finite. Two barriers."""
        n_rows, k = Y.shape
        for up in range(2):
            row = band * TILE_ROWS + g + 8 * up
            if row < n_rows:
                q = res_ptr[row] + warp
                qe = res_ptr[row + 1]
                while q + 3 * W < qe:       # a latency per four entries, not per entry
                    add_entries4(X, res_cols[q], res_cols[q + W], res_cols[q + 2 * W],
                                 res_cols[q + 3 * W], f32(res_values[q]),
                                 f32(res_values[q + W]), f32(res_values[q + 2 * W]),
                                 f32(res_values[q + 3 * W]), up, t, jt0, k, d)
                    q += 4 * W
                while q < qe:
                    add_entry(X, res_cols[q], f32(res_values[q]), up, t, jt0, k, d)
                    q += W
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
                Y[row, col] = f16(s)
            i += THREADS
        cuda.syncthreads()

    # a block of W warps must fit the register file: at 16 and 32 warps the cap spills
    # rather than leaving the launch without resources
    @inline_device
    def loop_registers(tile_ptr, tile_col, values, meta, Xp, band, warp, lane, g, t, jt0, jt_n,
                       d):
        """d += this warp's tiles of the band, their loads ``depth`` tiles ahead in registers."""
        # D slots of (values, metadata, B operands) in registers: slot s holds the warp's
        # tile base + s W, and is refilled with tile base + (s + D) W right after its mma, so
        # D tiles' loads are in flight while the warp multiplies. The B operands' address
        # needs the tile's column block: kn[s] holds it for the slot's next tile, loaded a
        # round earlier, kept as the int32 it is stored as (widened at its use: a widening
        # right after the load would wait for it).
        av = cuda.local.array(AV, u32)
        ev = cuda.local.array(D, u32)
        bv = cuda.local.array(BV, u32)
        kn = cuda.local.array(D, np.int32)
        end = tile_ptr[band + 1]
        last = end - 1                              # tiles past it load this one, unused
        base = tile_ptr[band] + warp
        if base < end:
            for s in range(D):
                p = min(base + s * W, last)
                load_tile(values, meta, Xp, p, tile_col[p], lane, g, t, jt0, jt_n, s, av, ev,
                          bv)
                kn[s] = tile_col[min(base + (s + D) * W, last)]
        while base < end:                           # the same in every lane
            for s in range(D):
                p = base + s * W
                for j in range(NW):                 # every slot's mma, kept where live
                    at = 4 * (NW * s + j)
                    e0, e1, e2, e3 = mma_sp16832(
                        av[4 * s], av[4 * s + 1], av[4 * s + 2], av[4 * s + 3],
                        bv[at], bv[at + 1], bv[at + 2], bv[at + 3],
                        d[4 * j], d[4 * j + 1], d[4 * j + 2], d[4 * j + 3], ev[s])
                    live = p < end                  # (columns past k: summed, never stored)
                    d[4 * j] = e0 if live else d[4 * j]
                    d[4 * j + 1] = e1 if live else d[4 * j + 1]
                    d[4 * j + 2] = e2 if live else d[4 * j + 2]
                    d[4 * j + 3] = e3 if live else d[4 * j + 3]
                load_tile(values, meta, Xp, min(p + D * W, last), kn[s], lane, g, t, jt0, jt_n,
                          s, av, ev, bv)
                kn[s] = tile_col[min(p + 2 * D * W, last)]
            base += D * W

    @inline_device
    def issue(stg, sb, p, c, values, meta, Xp, lane, g, t, jt0, jt_n):
        """Start the copies of tile p (column block c) into the stage at word sb: this lane's
        16 bytes of kept values (read once: L2 only), its metadata word, its B operands
        (through L1: the other bands' blocks on the SM read the same column blocks at about
        the same time). Each lane later reads only what it copied itself, so no barrier is
        needed."""
        cp_async16(stg, sb + 4 * lane, values, (p * WARP + lane) * 8)
        cp_async4(stg, sb + 4 * WARP + lane, meta, p * META_PER_TILE + 2 * g + (t & 1))
        for j in range(NW):
            jt = min(jt0 + j, jt_n - 1)
            cp_async16_l1(stg, sb + 5 * WARP + 4 * WARP * j + 4 * lane, Xp,
                       (c * jt_n + jt) * TILE_WORDS + lane * LANE_WORDS)

    @inline_device
    def loop_async(tile_ptr, tile_col, values, meta, Xp, band, warp, lane, g, t, jt0, jt_n, d):
        """d += this warp's tiles of the band through ``stages`` buffers of shared memory
        filled by cp.async, one group of copies per tile: tile i + S - 1's copies start
        (into the stage tile i - 1 was read from, whose values the last mma consumed), then
        a wait for tile i's group alone, then tile i's mma, so S - 1 tiles' copies are in
        flight while a warp multiplies. The column blocks, needed for the B operands'
        addresses, come 32 tiles at a time (a register per lane, passed round by shuffles),
        the next 32 loaded while these are used. Ends with every copy done and a barrier:
        the stages' memory then holds the warps' sums."""
        stg = cuda.shared.array(0, u32)
        wb = warp * S * STAGE
        end = tile_ptr[band + 1]
        last = end - 1                              # stages past it copy this tile, unused
        base = tile_ptr[band] + warp
        n_i = (end - base + W - 1) // W if base < end else 0
        if n_i > 0:
            cols = tile_col[min(base + lane * W, last)]
            ncols = tile_col[min(base + (WARP + lane) * W, last)]
            for s in range(S - 1):
                c = cuda.shfl_sync(FULL_MASK, cols, s)
                issue(stg, wb + s * STAGE, min(base + s * W, last), c, values, meta, Xp, lane,
                      g, t, jt0, jt_n)
                cp_async_commit()
            for i in range(n_i):
                nxt = i + S - 1
                if nxt % WARP == 0:                 # (nxt >= 1: chunk 0 is already in cols)
                    cols = ncols
                    ncols = tile_col[min(base + (nxt + WARP + lane) * W, last)]
                c = cuda.shfl_sync(FULL_MASK, cols, nxt % WARP)
                issue(stg, wb + (nxt % S) * STAGE, min(base + nxt * W, last), c, values, meta,
                      Xp, lane, g, t, jt0, jt_n)
                cp_async_commit()
                wait_oldest()                       # tile i's group; S - 1 later ones fly
                sb = wb + (i % S) * STAGE
                a0, a1, a2, a3 = sload4(stg, sb + 4 * lane)
                e = stg[sb + 4 * WARP + lane]
                for j in range(NW):
                    b0, b1, b2, b3 = sload4(stg, sb + 5 * WARP + 4 * WARP * j + 4 * lane)
                    e0, e1, e2, e3 = mma_sp16832(a0, a1, a2, a3, b0, b1, b2, b3, d[4 * j],
                                                 d[4 * j + 1], d[4 * j + 2], d[4 * j + 3], e)
                    d[4 * j] = e0                   # (columns past k: summed, never stored)
                    d[4 * j + 1] = e1
                    d[4 * j + 2] = e2
                    d[4 * j + 3] = e3
            wait_all()
        cuda.syncthreads()

    tile_loop = loop_async if S else loop_registers

    @cuda.jit(**jit_options(max_registers=min(255, 65536 // THREADS)))
    def split24_spmm(tile_ptr, tile_col, values, meta, res_ptr, res_cols, res_values, Xp, X, Y):
        """Block (bx, by): band bx, columns [by * C, by * C + C) of Y; warp w takes the
        band's tiles w, w + W, ... and its residual entries w, w + W, ... of every row."""
        warp = cuda.threadIdx.x // WARP
        lane = cuda.threadIdx.x % WARP
        band = cuda.blockIdx.x
        n_rows, k = Y.shape
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
        red = cuda.shared.array(RED_SHAPE, f32)        # (the stages' memory, if async)
        finish(res_ptr, res_cols, res_values, X, Y, red, flag, band, warp, g, t, jt0, d)
        if flag[0] != 0:                            # the same in every thread
            i = cuda.threadIdx.x
            while i < TILE_ROWS * C:
                careful(tile_ptr, tile_col, values, meta, res_ptr, res_cols, res_values, X, Y,
                        band, i // C, jt0 * 8 + i % C)
                i += THREADS

    return split24_spmm


STATIC_SHARED_LIMIT = 48 * 1024


def stage_words(cols_per_warp: int) -> int:
    """uint32 words of one warp's stage: 32 lanes' kept values (4 words), metadata word and
    B operands (4 words per 8 columns)."""
    return WARP * (5 + 4 * (cols_per_warp // 8))


def shared_bytes(config: Split24Config) -> int:
    """Dynamic shared memory of a block with ``stages``: the stages, reused afterwards for
    the warps' sums (float32, 16 rows x cols_per_warp per warp); 0 without."""
    if not config.stages:
        return 0
    w, c = config.warps_per_band, config.cols_per_warp
    return 4 * max(w * config.stages * stage_words(c), w * TILE_ROWS * c)


def resolved(config: Split24Config, k: int) -> Split24Config:
    """``config`` with its None fields chosen for X of k columns (see Split24Config); raises
    OptionError if its stages do not fit a block's shared memory."""
    from reference._common import OptionError, problem
    cols = config.cols_per_warp or next(c for c in (8, 16, 32) if c >= k or c == 32)
    depth = config.depth or (2 if cols <= 16 else 1)
    out = dataclasses.replace(config, cols_per_warp=cols, depth=depth)
    need = shared_bytes(out)
    if need > STATIC_SHARED_LIMIT:
        raise OptionError(problem(
            "Split24Config.stages", f"buffers within {STATIC_SHARED_LIMIT} bytes per block",
            f"{need} bytes (stages {out.stages} x warps_per_band {out.warps_per_band} at "
            f"{cols} columns per block)", "use fewer stages, warps_per_band or cols_per_warp"))
    return out


def _launch(D: DeviceSplit24, X, Y, config: Split24Config):
    """Pack X into the B operands, then the SpMM, both on the launch stream."""
    n_rows, n_cols = D.shape
    k = int(X.shape[1])
    if not (n_rows and k):
        return
    config = resolved(config, k)
    jt_n = -(-k // 8)
    n_words = -(-n_cols // TILE_COLS) * jt_n * TILE_WORDS
    Xp = scratch((max(n_words, 1),), np.uint32)
    stream = launch_stream()
    if n_words:
        _pack_kernel()[blocks_for(n_words, PACK_THREADS), PACK_THREADS, stream](X, Xp)
    grid = (-(-n_rows // TILE_ROWS), blocks_for(jt_n, config.cols_per_warp // 8))
    _spmm_kernel(config)[grid, config.warps_per_band * WARP, stream, shared_bytes(config)](
        D.tile_ptr, D.tile_col, D.values, D.meta, D.res_ptr, D.res_cols, D.res_values, Xp, X, Y)


def spmv(D, x, out=None, config: Split24Config = Split24Config()):
    """y = D @ x. ``D`` a :class:`Split24Matrix` or :class:`DeviceSplit24`; ``x`` host or
    device (the SpMM of one column)."""
    check_config(config, Split24Config)
    D = to_device(D)
    n_rows, n_cols = D.shape
    ops = prepare(x, out, n_cols, (n_rows,), D.dtype)
    _launch(D, ops.x.reshape(n_cols, 1), ops.out.reshape(n_rows, 1), config)
    return finish(ops, out)


def spmm(D, X, out=None, config: Split24Config = Split24Config()):
    """Y = D @ X for X of shape (n_cols, k)."""
    check_config(config, Split24Config)
    D = to_device(D)
    ops, _ = prepare_spmm(D, X, out)
    _launch(D, ops.x, ops.out, config)
    return finish(ops, out)


def ptx_targets():
    """The SpMM (the SpMV is the same kernel) at 8 and 32 columns per block, with its loads
    in registers and through cp.async stages, the packing and the check, int32 indices."""
    it, dt = "int32", "float16"
    cfg = resolved(Split24Config(cols_per_warp=32), 32)
    head = (f"void({array_sig(it)}, {array_sig(it)}, {array_sig(dt)}, {array_sig('uint32')}, "
            f"{array_sig(it)}, {array_sig(it)}, {array_sig(dt)}, {array_sig('uint32')}, "
            f"{array_sig(dt, 2)}, {array_sig(dt, 2)})")
    spmm = [PTXTarget(f"split24.spmm[float16,int32,c{c.cols_per_warp},d{c.depth}]",
                      functools.partial(_spmm_kernel, c), head,
                      expects=(r"mma\.sp\.sync\.aligned\.m16n8k32",))
            for c in (cfg, Split24Config(cols_per_warp=8, depth=2))]
    spmm += [PTXTarget(f"split24.spmm[float16,int32,c{c.cols_per_warp},s{c.stages}]",
                       functools.partial(_spmm_kernel, c), head,
                       expects=(r"mma\.sp\.sync\.aligned\.m16n8k32", r"cp\.async\.cg",
                                rf"cp\.async\.wait_group {c.stages - 1};"))
             for c in (resolved(Split24Config(cols_per_warp=8, stages=4), 8),
                       resolved(Split24Config(cols_per_warp=32, stages=2), 32))]
    return spmm + [
        PTXTarget("split24.pack[float16]", _pack_kernel,
                  f"void({array_sig(dt, 2)}, {array_sig('uint32')})"),
        PTXTarget("split24.check[int32]", _check_kernel,
                  f"void({array_sig(it)}, {array_sig(it)}, {array_sig(dt)}, {array_sig('uint32')}, "
                  f"{array_sig(it)}, int64, int64, {array_sig('int32')})"),
    ]
