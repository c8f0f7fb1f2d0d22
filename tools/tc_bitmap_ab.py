"""Can a tensor-core SpMM beat cuBLAS GEMM fp16 on the fig14 weights at N = 8 and 32 (issue 11's
goal, missed by the CUDA-core kernels: 0.49-0.86x at 70 %, N = 8, fig14 at cbae4a5)? A probe, not a format: the
matrix in 16 x 16 tiles stored as bitmaps, multiplied with ``mma.sync.m16n8k16``, checked
against the exact product and timed beside cuBLAS, our CSR SpMM and MACKO.

    python tools/tc_bitmap_ab.py [--cases 7168x7168:random:0.7,...] [--ns 8,32] [--layouts row,frag,stage]
                                 [--warps 4,8,16] [--bpack 0,1] [--unroll 1,2,4] [--out FILE]

Layout (host side, :func:`encode`): rows in bands of 16, columns in tiles of 16. Per band the
tiles holding a nonzero, in column order (``tile_ptr``, ``tile_col``); per tile 16 row masks
(uint16, bit c: column c present), 16 row offsets (uint8: entries of the tile's earlier rows)
and the offset of its first value (int32); the values tile by tile, row by row, in column
order (float16); the column tile and the value offset are int32. 2 bytes per nonzero plus 56
per stored tile (and 4 per band): at 70 % sparsity with every tile occupied, 0.6 + 0.22 = 0.82
bytes per weight (cuBLAS reads 2; our compact GeneralSparse picks 1.2-1.3).

Kernel (:func:`kernel`): a block of W warps owns a band (16 rows) and all N columns; warp w
takes the band's tiles w, w + W, ... For each tile, lane (g, t) = (lane // 4, lane % 4) builds
its A fragment straight from the bitmap (rows g and g + 8, columns 2t, 2t + 1, 2t + 8, 2t + 9:
present if the mask bit is set, at offset + row offset + popc of the mask below it, else 0),
loads its B fragments from global memory (rows 16 k + 2t, + 1, + 8, + 9 at column 8 j + g of
each 8-column group j: four 2-byte loads, or with ``bpack`` two 4-byte loads from a copy of B
packed in row pairs by a kernel launched first, inside the timed product) and issues N / 8 mma
into float32 D fragments. The W warps' fragments
are summed in shared memory in warp order, and 16 N threads write C. No dense tile, no block
barrier inside the loop (MACKO's tensor-core SpMM, which decodes into a dense shared tile per
column window, reached 0.20-0.23x cuBLAS at N = 32: results/h200/spmm_macko.json). Padding
rows of B (K to a multiple of 16) are zero; B must be finite (0 x Inf is NaN on the tensor
cores: a format would need MACKO's careful fallback).

Every kernel is checked on the GPU first with the project's one bound (``spmvlab.check``, fp16
values, float32 sums; the run at cbae4a5 used |C - exact| <= 1e-3 |A||B| + 1e-6); times are
medians of ``--reps`` cold-L2 runs. Runs on the simulator too (small cases, ``--cases
48x300:random:0.7`` builds a seeded random matrix of that shape instead of fig14's weights).

Second layout (``--layouts frag``, :func:`encode_frag`, :func:`kernel_frag`): the values of a
tile in the order of the mma's A fragment, lane by lane, with one uint16 per tile and lane (the
lane's 8-bit slot mask, the count of the tile's values of earlier lanes): 72 bytes per tile,
0.88 bytes per weight at 70 %, and half the instructions per tile in the SASS for sm_90 (117 vs
236 at N = 8; results/cpu/sass_tc_bitmap_ab.txt). ``--unroll U`` gives a warp U tiles per step.
Third (``--layouts stage``, :func:`kernel_stage`): the fragment layout with each tile's values
starting at a multiple of 8, copied by the warp into shared memory with one 16-byte load per
lane and read from there, unsigned 32-bit indices throughout (B packed): 122 / 130 / 140
instructions per tile at N = 8 / 32 / 64 in the SASS (frag: 117 / 179 / 257); with its two-stage
prefetch (``_pf``: the next tile's values and the words of the one after in flight while a
tile is multiplied) 146 / 149 / 166.

Measured on the H200 at cbae4a5 (results/h200/tc_bitmap_ab_cbae4a5.json, the row layout only,
every check passed): best (16 warps, B packed) on 7168x7168 at 70 %: 104 us at N = 8 and 152 at
N = 32, cuBLAS 29-30 (0.29x, 0.19x); the same 104 us at 90 % (every tile still occupied): its time
follows the tile count. The SASS: 236 instructions per tile and warp at N = 8, 45 us of issue
slots on the H200's 132 x 4 schedulers for 7168x7168's 200704 tiles.

Second round at 041ff09 (results/h200/tc_bitmap_ab.json, all three layouts, every check passed):
still no. 7168x7168 random 70 %: 69.2 us at N = 8 (stage, 16 warps; frag, 8 warps: 69.4), 85.4 at
N = 32 (stage with prefetch), 128.5 at N = 64, against cuBLAS's 29-30 (0.43x / 0.34x / 0.23x);
28672x7168 random 70 %, N = 8: 194 vs 104 (0.53x); 90 %: 66.7. The row layout: 102.8 as before.
Not issue-bound any more but latency-bound (ncu, one launch, N = 8: ncu_tc_*_7168x7168_random70_n8.txt):
frag issues 0.47 instructions per scheduler-cycle, a warp waits 14.5 cycles between two (58 % of
them on global loads) at 43 % achieved occupancy (48 registers: 2 blocks of 512 threads per SM),
and reads 12.6 % of the DRAM bandwidth; stage reaches 72 % occupancy (32 registers) but executes
42 % more instructions with 23 of 32 lanes active on average.
"""
from __future__ import annotations

import argparse
import functools
import os
import sys
import time

import numpy as np
import scipy.sparse as sp

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "experiments")]

from numba import float32, int32, uint32  # noqa: E402

from spmvlab._cuda import SIMULATOR, cuda, inline_device  # noqa: E402
from spmvlab.kernels._intrinsics import mma16816, pack_half2, sget, sstore4, vwords4  # noqa: E402

CASES = "7168x7168:random:0.7,7168x7168:magnitude:0.7,28672x7168:random:0.7,7168x7168:random:0.9"
TILE = 16
SHARED_FLOATS = 12288      # 48 KB of float32: W x 16 x N must fit (W = 16 up to N = 48)


def encode(A: sp.csr_matrix) -> dict:
    """The bitmap-tile arrays of ``A`` (module docstring), NumPy, with ``bytes`` (all of them)."""
    A = sp.csr_matrix(A)
    A.sum_duplicates()
    A.eliminate_zeros()
    m, k = A.shape
    bands, ktiles = -(-m // TILE), -(-k // TILE)
    rows = np.repeat(np.arange(m, dtype=np.int64), np.diff(A.indptr))
    cols = A.indices.astype(np.int64)
    tile = (rows // TILE) * ktiles + cols // TILE          # band-major, then column tile
    within = (rows % TILE) * TILE + cols % TILE            # row-major inside the tile
    order = np.argsort(tile * (TILE * TILE) + within, kind="stable")
    tile, within = tile[order], within[order]
    vals = A.data[order].astype(np.float16)
    new = np.r_[True, tile[1:] != tile[:-1]][:tile.size]   # an entry that opens a tile
    starts = np.flatnonzero(new)
    tid = np.cumsum(new) - 1                                 # its tile's number
    n_tiles = starts.size
    slot = tid * TILE + within // TILE                     # (tile, row inside the tile)
    masks = np.bincount(slot, weights=np.left_shift(1, within % TILE).astype(np.float64),
                        minlength=n_tiles * TILE).astype(np.uint16)
    counts = np.bincount(slot, minlength=n_tiles * TILE).reshape(n_tiles, TILE)
    roff = (np.cumsum(counts, axis=1) - counts).astype(np.uint8)
    band = tile[starts] // ktiles
    out = dict(tile_ptr=np.searchsorted(band, np.arange(bands + 1)).astype(np.int32),
               tile_col=(tile[starts] % ktiles).astype(np.int32), tile_mask=masks,
               tile_roff=roff.ravel(), tile_voff=starts.astype(np.int32), vals=vals)
    out["bytes"] = int(sum(v.nbytes for v in out.values()))
    out["shape"] = (m, k)
    return out


def decode(t: dict) -> sp.csr_matrix:
    """The matrix back from :func:`encode`'s arrays (a check of the layout, on the host)."""
    m, k = t["shape"]
    rows, cols, vals = [], [], []
    ptr, masks, roff = t["tile_ptr"], t["tile_mask"].reshape(-1, TILE), t["tile_roff"].reshape(-1, TILE)
    for b in range(ptr.size - 1):
        for ti in range(ptr[b], ptr[b + 1]):
            for r in range(TILE):
                m_r = int(masks[ti, r])
                for c in range(TILE):
                    if (m_r >> c) & 1:
                        rows.append(b * TILE + r)
                        cols.append(int(t["tile_col"][ti]) * TILE + c)
                        idx = int(t["tile_voff"][ti]) + int(roff[ti, r]) + bin(m_r & ((1 << c) - 1)).count("1")
                        vals.append(t["vals"][idx])
    return sp.csr_matrix((np.asarray(vals, np.float32), (rows, cols)), shape=(m, k))


@inline_device
def _pair(vals, m, o, c, zero):
    """The tile entries at columns ``c`` and ``c + 1`` of a row with mask ``m`` whose values
    start at ``o`` (one popc for both: the second sits one further when the first is present)."""
    p = o + cuda.popc(m & ((1 << c) - 1))
    bits = m >> c
    lo = vals[p] if bits & 1 else zero
    hi = vals[p + (bits & 1)] if bits & 2 else zero
    return lo, hi


@inline_device
def _b_plain(Bf, r, col, n):
    """This lane's B fragments (b0, b1) from B itself (float16, row-major, flattened): rows r,
    r + 1 and r + 8, r + 9 at column ``col``, four 2-byte loads."""
    q = r * n + col
    return pack_half2(Bf[q], Bf[q + n]), pack_half2(Bf[q + 8 * n], Bf[q + 9 * n])


@inline_device
def _b_packed(Bw, r, col, n):
    """The same from B packed in row pairs (:func:`pack_kernel`: word (r // 2) N + c holds rows
    r and r + 1 of column c), two 4-byte loads."""
    q = (r >> 1) * n + col
    return Bw[q], Bw[q + 4 * n]


@functools.lru_cache(maxsize=None)
def pack_kernel():
    """``pack(Bf, Bw, n)``: thread i writes word i of B in row pairs (rows 2 (i // n), + 1 of
    column i % n, the lower row in the low half)."""

    @cuda.jit
    def pack(Bf, Bw, n):
        i = cuda.grid(1)
        if i < Bw.shape[0]:
            q = (i // n) * 2 * n + i % n
            Bw[i] = pack_half2(Bf[q], Bf[q + n])

    return pack


@inline_device
def _lane_ids():
    """(thread, lane, warp, band = block, g = lane // 4, t = lane % 4): the mma fragment's
    row group and column pair of this lane."""
    tid = cuda.threadIdx.x
    lane = tid % 32
    return tid, lane, tid // 32, cuda.blockIdx.x, lane >> 2, lane & 3


@inline_device
def _zero(d):
    """Every accumulator of ``d`` (a local float32 array) set to 0."""
    for i in range(d.shape[0]):
        d[i] = float32(0.0)


@inline_device
def _step_tile(ti, u, W, end):
    """Tile u of a warp's step starting at tile ``ti`` (tiles ti, ti + W, ...): (present,
    the tile to read: itself, or the band's last tile when past the end)."""
    tu = ti + u * W
    ok = tu < end
    return ok, (tu if ok else end - 1)


@functools.lru_cache(maxsize=None)
def _band_parts(n: int, warps: int, load_b, unsigned: bool = False):
    """The two pieces every kernel here shares, for N = ``n`` and ``warps`` warps per band:
    ``mma_tile(a0, a1, a2, a3, Bx, r, g, d)`` (this lane's B fragments of the tile whose first
    B row is ``r`` - 2t, read by ``load_b``, and N / 8 mma into the accumulators ``d``) and
    ``band_sum(red, d, warp, g, t, tid, band, C)`` (each warp's fragments into shared memory,
    then 16 N threads sum the warps' in warp order and write C). ``unsigned``: column
    indices as uint32 (no wrap-around code)."""
    NJ, W = n // 8, warps
    NN = np.uint32(n) if unsigned else n

    if unsigned:
        @inline_device
        def col_of(j, g):
            return uint32(8 * j) + g
    else:
        @inline_device
        def col_of(j, g):
            return 8 * j + g

    @inline_device
    def mma_tile(a0, a1, a2, a3, Bx, r, g, d):
        for j in range(NJ):
            b0, b1 = load_b(Bx, r, col_of(j, g), NN)
            e0, e1, e2, e3 = mma16816(a0, a1, a2, a3, b0, b1, d[4 * j], d[4 * j + 1], d[4 * j + 2], d[4 * j + 3])
            d[4 * j] = e0
            d[4 * j + 1] = e1
            d[4 * j + 2] = e2
            d[4 * j + 3] = e3

    @inline_device
    def band_sum(red, d, warp, g, t, tid, band, C):
        for j in range(NJ):
            c = 8 * j + 2 * t
            red[(warp * TILE + g) * n + c] = d[4 * j]
            red[(warp * TILE + g) * n + c + 1] = d[4 * j + 1]
            red[(warp * TILE + g + 8) * n + c] = d[4 * j + 2]
            red[(warp * TILE + g + 8) * n + c + 1] = d[4 * j + 3]
        cuda.syncthreads()
        i = tid
        while i < TILE * n:
            s = float32(0.0)
            for w in range(W):
                s += red[w * TILE * n + i]
            C[band * TILE + i // n, i % n] = s
            i += 32 * W

    return mma_tile, band_sum


@functools.lru_cache(maxsize=None)
def kernel(n: int, warps: int, bpack: bool = False, unroll: int = 1):
    """``spmm(tile_ptr, tile_col, tile_mask, tile_roff, tile_voff, vals, Bf, zh, C)`` for N = ``n``
    (a multiple of 8) with ``warps`` warps per band; ``Bf`` is B (K rounded up to 16 rows, N
    columns, row-major) flattened, or with ``bpack`` B in row pairs (uint32, :func:`pack_kernel`);
    ``zh`` a one-element float16 zero, C float32 (bands x 16, N). With ``unroll`` U a warp takes U
    of its tiles per step (tiles ti, ti + W, ..., ti + (U - 1) W): first every tile's masks,
    offsets and column, then every tile's values, then the mma, so U tiles' loads are in flight
    together; a tile past the band's end reads the band's last tile with empty masks (adds 0)."""
    if n % 8 or warps * TILE * n > SHARED_FLOATS:
        raise ValueError(f"N = {n} must be a multiple of 8 and {warps} x 16 x N at most {SHARED_FLOATS}")
    if not 1 <= unroll <= 8:
        raise ValueError(f"unroll = {unroll}: expected 1 to 8 tiles per step")
    NJ, W, U = n // 8, warps, unroll
    load_b = _b_packed if bpack else _b_plain
    SH, ND, NA = W * TILE * n, 4 * NJ, 4 * U   # shared floats, accumulators and A words per lane
    mma_tile, band_sum = _band_parts(n, warps, load_b)

    @cuda.jit
    def spmm(tile_ptr, tile_col, tile_mask, tile_roff, tile_voff, vals, Bf, zh, C):
        red = cuda.shared.array(SH, float32)
        tid, lane, warp, band, g, t = _lane_ids()
        c0 = 2 * t
        zero = zh[0]
        d = cuda.local.array(ND, float32)
        _zero(d)
        mgs = cuda.local.array(U, int32)     # per tile of the step: masks of rows g, g + 8,
        mhs = cuda.local.array(U, int32)     # their value offsets and the tile's first B row
        ogs = cuda.local.array(U, int32)
        ohs = cuda.local.array(U, int32)
        rs = cuda.local.array(U, int32)
        af = cuda.local.array(NA, uint32)
        ti = tile_ptr[band] + warp
        end = tile_ptr[band + 1]
        while ti < end:
            for u in range(U):
                ok, tc = _step_tile(ti, u, W, end)
                base = tc * TILE
                vo = tile_voff[tc]
                mgs[u] = int32(tile_mask[base + g]) if ok else int32(0)
                mhs[u] = int32(tile_mask[base + g + 8]) if ok else int32(0)
                ogs[u] = vo + int32(tile_roff[base + g])
                ohs[u] = vo + int32(tile_roff[base + g + 8])
                rs[u] = tile_col[tc] * TILE + c0
            for u in range(U):
                x0, x1 = _pair(vals, mgs[u], ogs[u], c0, zero)
                af[4 * u] = pack_half2(x0, x1)
                x0, x1 = _pair(vals, mhs[u], ohs[u], c0, zero)
                af[4 * u + 1] = pack_half2(x0, x1)
                x0, x1 = _pair(vals, mgs[u], ogs[u], c0 + 8, zero)
                af[4 * u + 2] = pack_half2(x0, x1)
                x0, x1 = _pair(vals, mhs[u], ohs[u], c0 + 8, zero)
                af[4 * u + 3] = pack_half2(x0, x1)
            for u in range(U):
                mma_tile(af[4 * u], af[4 * u + 1], af[4 * u + 2], af[4 * u + 3], Bf, rs[u], g, d)
            ti += U * W
        band_sum(red, d, warp, g, t, tid, band, C)

    return spmm


# ---- the fragment-ordered layout: each lane's eight A-fragment elements stored together ----

def _frag_slot(r, c):
    """Lane and slot (0-7, the half of the lane's four A words) of tile entry (r, c) in the
    mma.m16n8k16 A fragment: lane 4 (r % 8) + (c % 8) // 2; slot 4 [c >= 8] + 2 [r >= 8] + c % 2."""
    return 4 * (r % 8) + (c % 8) // 2, 4 * (c >= 8) + 2 * (r >= 8) + c % 2


def encode_frag(A: sp.csr_matrix, pad: int = 1) -> dict:
    """The bitmap tiles of :func:`encode` with the values in fragment order: per tile, lane by
    lane, each lane's present slots in slot order, and per tile and lane one uint16 ``lane_meta``
    (low byte: the lane's slot mask; high byte: the tile's entries held by earlier lanes). With
    the tile's value offset and column tile (int32) that is 72 bytes per tile and 2 per nonzero:
    0.88 bytes per weight at 70 % with every tile occupied. A lane finds its elements with one
    2-byte load and a popc per slot, where the row layout needs two masks, two offsets and a
    popc per pair. With ``pad`` > 1 each tile's values start at a multiple of ``pad`` (zeros
    between tiles) and ``tile_voff`` has one more entry (the end of the last tile): the layout
    of :func:`kernel_stage`, which copies a tile's values with 16-byte loads (``pad`` = 8)."""
    A = sp.csr_matrix(A)
    A.sum_duplicates()
    A.eliminate_zeros()
    m, k = A.shape
    bands, ktiles = -(-m // TILE), -(-k // TILE)
    rows = np.repeat(np.arange(m, dtype=np.int64), np.diff(A.indptr))
    cols = A.indices.astype(np.int64)
    tile = (rows // TILE) * ktiles + cols // TILE
    lane, slot = _frag_slot(rows % TILE, cols % TILE)
    order = np.argsort(tile * 256 + lane * 8 + slot, kind="stable")
    tile, lane, slot = tile[order], lane[order], slot[order]
    new = np.r_[True, tile[1:] != tile[:-1]][:tile.size]
    starts = np.flatnonzero(new)
    tid = np.cumsum(new) - 1
    n_tiles = starts.size
    key = tid * 32 + lane
    mask = np.bincount(key, weights=np.left_shift(1, slot).astype(np.float64),
                       minlength=n_tiles * 32).astype(np.int64)
    counts = np.bincount(key, minlength=n_tiles * 32).reshape(n_tiles, 32)
    before = (np.cumsum(counts, axis=1) - counts).ravel()
    band = tile[starts] // ktiles
    vals, voff = A.data[order].astype(np.float16), starts
    if pad > 1:
        sizes = np.diff(np.r_[starts, tile.size])
        voff = np.r_[0, np.cumsum(-(-sizes // pad) * pad)]            # n_tiles + 1 entries
        vals = np.zeros(int(voff[-1]), np.float16)
        vals[voff[tid] + np.arange(tile.size) - starts[tid]] = A.data[order]
    out = dict(tile_ptr=np.searchsorted(band, np.arange(bands + 1)).astype(np.int32),
               tile_col=(tile[starts] % ktiles).astype(np.int32),
               lane_meta=(mask | (before << 8)).astype(np.uint16),
               tile_voff=voff.astype(np.int32), vals=vals)
    out["bytes"] = int(sum(v.nbytes for v in out.values()))
    out["shape"] = (m, k)
    return out


def decode_frag(t: dict) -> sp.csr_matrix:
    """The matrix back from :func:`encode_frag`'s arrays (host check of the layout)."""
    m, k = t["shape"]
    ptr, meta = t["tile_ptr"], t["lane_meta"].reshape(-1, 32).astype(np.int64)
    where = {}
    for r in range(TILE):
        for c in range(TILE):
            where[_frag_slot(r, c)] = (r, c)
    rows, cols, vals = [], [], []
    for b in range(ptr.size - 1):
        for ti in range(ptr[b], ptr[b + 1]):
            for ln in range(32):
                mk, p = int(meta[ti, ln] & 0xFF), int(t["tile_voff"][ti] + (meta[ti, ln] >> 8))
                for j in range(8):
                    if (mk >> j) & 1:
                        r, c = where[(ln, j)]
                        rows.append(b * TILE + r)
                        cols.append(int(t["tile_col"][ti]) * TILE + c)
                        vals.append(t["vals"][p])
                        p += 1
    return sp.csr_matrix((np.asarray(vals, np.float32), (rows, cols)), shape=(m, k))


@inline_device
def _slot(vals, m, p, j, zero):
    """Slot ``j`` of a lane with slot mask ``m`` whose values start at ``p`` (uint32 indices:
    no wrap-around code for negative indices)."""
    q = p + uint32(cuda.popc(m & ((1 << j) - 1)))
    return vals[q] if (m >> j) & 1 else zero


@functools.lru_cache(maxsize=None)
def kernel_frag(n: int, warps: int, bpack: bool = False, unroll: int = 1):
    """:func:`kernel` for :func:`encode_frag`'s layout: ``spmm(tile_ptr, tile_col, lane_meta,
    tile_voff, vals, Bf, zh, C)``. Lane l of a warp reads lane_meta[32 ti + l] and its own run of
    values (slots 0-7, the A fragment's four words), the rest as :func:`kernel`."""
    if n % 8 or warps * TILE * n > SHARED_FLOATS:
        raise ValueError(f"N = {n} must be a multiple of 8 and {warps} x 16 x N at most {SHARED_FLOATS}")
    if not 1 <= unroll <= 8:
        raise ValueError(f"unroll = {unroll}: expected 1 to 8 tiles per step")
    NJ, W, U = n // 8, warps, unroll
    load_b = _b_packed if bpack else _b_plain
    SH, ND, NA = W * TILE * n, 4 * NJ, 4 * U
    mma_tile, band_sum = _band_parts(n, warps, load_b)

    @cuda.jit
    def spmm(tile_ptr, tile_col, lane_meta, tile_voff, vals, Bf, zh, C):
        red = cuda.shared.array(SH, float32)
        tid, lane, warp, band, g, t = _lane_ids()
        c0 = 2 * t
        zero = zh[0]
        d = cuda.local.array(ND, float32)
        _zero(d)
        ms = cuda.local.array(U, uint32)
        ps = cuda.local.array(U, uint32)
        rs = cuda.local.array(U, int32)
        af = cuda.local.array(NA, uint32)
        ti = tile_ptr[band] + warp
        end = tile_ptr[band + 1]
        while ti < end:
            for u in range(U):
                ok, tc = _step_tile(ti, u, W, end)
                meta = uint32(lane_meta[uint32(tc * 32 + lane)])
                ms[u] = (meta & uint32(0xFF)) if ok else uint32(0)
                ps[u] = uint32(tile_voff[tc]) + (meta >> uint32(8))
                rs[u] = tile_col[tc] * TILE + c0
            for u in range(U):
                mk, p = ms[u], ps[u]
                af[4 * u] = pack_half2(_slot(vals, mk, p, 0, zero), _slot(vals, mk, p, 1, zero))
                af[4 * u + 1] = pack_half2(_slot(vals, mk, p, 2, zero), _slot(vals, mk, p, 3, zero))
                af[4 * u + 2] = pack_half2(_slot(vals, mk, p, 4, zero), _slot(vals, mk, p, 5, zero))
                af[4 * u + 3] = pack_half2(_slot(vals, mk, p, 6, zero), _slot(vals, mk, p, 7, zero))
            for u in range(U):
                mma_tile(af[4 * u], af[4 * u + 1], af[4 * u + 2], af[4 * u + 3], Bf, rs[u], g, d)
            ti += U * W
        band_sum(red, d, warp, g, t, tid, band, C)

    return spmm


@inline_device
def _sslot(buf, m, q, j, zero):
    """:func:`_slot` from the warp's shared buffer (``m``, ``q`` uint32)."""
    x = sget(buf, uint32(q + uint32(cuda.popc(m & uint32((1 << j) - 1)))))
    return x if (m >> uint32(j)) & uint32(1) else zero


@inline_device
def _b_pair_u(Bw, r, col, n):
    """:func:`_b_packed` with unsigned 32-bit indices (``n`` a uint32): no wrap-around code."""
    q = (r >> uint32(1)) * n + col
    return Bw[q], Bw[q + uint32(4) * n]


@functools.lru_cache(maxsize=None)
def kernel_stage(n: int, warps: int, prefetch: bool = False):
    """:func:`kernel_frag` for ``encode_frag(A, pad=8)`` with B packed in row pairs, the tile's
    values staged in shared memory: ``spmm(tile_ptr, tile_col, lane_meta, tile_voff, vals, Bw, zh,
    C)``. Per tile, lane l copies values 8 l to 8 l + 7 of the tile (one 16-byte load, if the tile
    has them) into its warp's buffer (two per warp, used in turns, so one ``syncwarp`` per tile
    orders both the copy before the reads and the reads before the copy after next), then reads
    its own slots from there (a 2-byte shared load each, 32-bit addresses); every index is an
    unsigned 32-bit integer (no wrap-around code for negative indices). With ``prefetch`` the
    loads run ahead in two stages: while a warp multiplies its tile i, the values of its next
    tile and the offsets, lane word and column of the one after are already on their way, so a
    tile waits for one memory latency instead of two."""
    if n % 8 or warps * (TILE * n + 256) > SHARED_FLOATS:
        raise ValueError(f"N = {n} must be a multiple of 8 and {warps} x (16 N + 256) at most {SHARED_FLOATS}")
    NJ, W = n // 8, warps
    SH, ND, NB = W * TILE * n, 4 * NJ, W * 512
    WU = np.uint32(warps)
    U0 = np.uint32(0)
    mma_tile, band_sum = _band_parts(n, warps, _b_pair_u, unsigned=True)

    @inline_device
    def tile_words(tile_col, lane_meta, tile_voff, ti, lane):
        """(first value, value count, this lane's word, first B row - 2t) of tile ``ti``."""
        v0 = uint32(tile_voff[ti])
        return (v0, uint32(tile_voff[ti + uint32(1)]) - v0, uint32(lane_meta[ti * uint32(32) + lane]),
                uint32(tile_col[ti]) * uint32(TILE))

    @inline_device
    def multiply(buf, sb, meta, r, Bw, zero, g, d):
        """The A fragment from the staged tile, then N / 8 mma into ``d``."""
        mk = meta & uint32(0xFF)
        q = sb + (meta >> uint32(8))
        a0 = pack_half2(_sslot(buf, mk, q, 0, zero), _sslot(buf, mk, q, 1, zero))
        a1 = pack_half2(_sslot(buf, mk, q, 2, zero), _sslot(buf, mk, q, 3, zero))
        a2 = pack_half2(_sslot(buf, mk, q, 4, zero), _sslot(buf, mk, q, 5, zero))
        a3 = pack_half2(_sslot(buf, mk, q, 6, zero), _sslot(buf, mk, q, 7, zero))
        mma_tile(a0, a1, a2, a3, Bw, r, g, d)

    @cuda.jit
    def spmm(tile_ptr, tile_col, lane_meta, tile_voff, vals, Bw, zh, C):
        red = cuda.shared.array(SH, float32)
        buf = cuda.shared.array(NB, np.float16)
        tid = uint32(cuda.threadIdx.x)
        lane, warp = tid & uint32(31), tid >> uint32(5)
        band = uint32(cuda.blockIdx.x)
        g, t = lane >> uint32(2), lane & uint32(3)
        c0 = uint32(2) * t
        l8 = lane * uint32(8)
        zero = zh[0]
        d = cuda.local.array(ND, float32)
        _zero(d)
        sb = warp * uint32(512)
        ti = uint32(tile_ptr[band]) + warp
        end = uint32(tile_ptr[band + uint32(1)])
        if not prefetch:
            while ti < end:
                v0, cnt, meta, r = tile_words(tile_col, lane_meta, tile_voff, ti, lane)
                if l8 < cnt:
                    w0, w1, w2, w3 = vwords4(vals, v0 + l8)
                    sstore4(buf, sb + l8, w0, w1, w2, w3)
                cuda.syncwarp()
                multiply(buf, sb, meta, r + c0, Bw, zero, g, d)
                sb ^= uint32(256)
                ti += WU
        elif ti < end:
            v0, cnt, meta, r = tile_words(tile_col, lane_meta, tile_voff, ti, lane)    # tile i
            w0, w1, w2, w3 = U0, U0, U0, U0
            if l8 < cnt:
                w0, w1, w2, w3 = vwords4(vals, v0 + l8)
            v0n, cntn, metan, rn = U0, U0, U0, U0                                   # tile i + 1
            if ti + WU < end:
                v0n, cntn, metan, rn = tile_words(tile_col, lane_meta, tile_voff, ti + WU, lane)
            while ti < end:
                x0, x1, x2, x3 = U0, U0, U0, U0                    # values of tile i + 1: issue
                if l8 < cntn:
                    x0, x1, x2, x3 = vwords4(vals, v0n + l8)
                v0m, cntm, metam, rm = U0, U0, U0, U0              # words of tile i + 2: issue
                if ti + uint32(2) * WU < end:
                    v0m, cntm, metam, rm = tile_words(tile_col, lane_meta, tile_voff, ti + uint32(2) * WU, lane)
                if l8 < cnt:                                       # tile i: stage and multiply
                    sstore4(buf, sb + l8, w0, w1, w2, w3)
                cuda.syncwarp()
                multiply(buf, sb, meta, r + c0, Bw, zero, g, d)
                w0, w1, w2, w3 = x0, x1, x2, x3
                cnt, meta, r = cntn, metan, rn
                v0n, cntn, metan, rn = v0m, cntm, metam, rm
                sb ^= uint32(256)
                ti += WU
        band_sum(red, d, warp, g, t, tid, band, C)

    return spmm


LAYOUTS = {"row": (encode, decode), "frag": (encode_frag, decode_frag),
           "stage": (functools.partial(encode_frag, pad=8), decode_frag)}
KERNEL_OPTIONS = {"stage": dict(prefetch=(False, True))}     # per layout: options tried besides U


def device_arrays(t: dict) -> dict:
    return {k: cuda.to_device(np.ascontiguousarray(v)) for k, v in t.items()
            if k not in ("bytes", "shape")}


def run(dt: dict, dB, dz, dC, n: int, warps: int, dW=None, unroll: int = 1, prefetch: bool = False):
    """One SpMM; with ``dW`` (a uint32 device array of K' N / 2 words) B is first packed into it
    and the kernel reads the pairs (both launches are part of the product). ``prefetch``: the
    staged kernel's two-stage prefetch (:func:`kernel_stage`)."""
    bands = dt["tile_ptr"].shape[0] - 1
    if dW is not None:
        pack_kernel()[(dW.shape[0] + 255) // 256, 256](dB, dW, n)
    Bx = dB if dW is None else dW
    if "lane_meta" in dt and dt["tile_voff"].shape[0] == dt["tile_col"].shape[0] + 1:   # padded: staged
        if dW is None:
            raise ValueError("the staged kernel reads B packed in row pairs: pass dW")
        kernel_stage(n, warps, prefetch)[bands, 32 * warps](
            dt["tile_ptr"], dt["tile_col"], dt["lane_meta"], dt["tile_voff"], dt["vals"], dW, dz, dC)
    elif "lane_meta" in dt:                 # the fragment-ordered layout
        kernel_frag(n, warps, dW is not None, unroll)[bands, 32 * warps](
            dt["tile_ptr"], dt["tile_col"], dt["lane_meta"], dt["tile_voff"], dt["vals"], Bx, dz, dC)
    else:
        kernel(n, warps, dW is not None, unroll)[bands, 32 * warps](
            dt["tile_ptr"], dt["tile_col"], dt["tile_mask"], dt["tile_roff"], dt["tile_voff"], dt["vals"], Bx, dz,
            dC)


def case_matrix(case: str):
    """fig14's weights for 'RxC:pruning:sparsity' with R, C of the OPT shapes; any other shape:
    a seeded random fp16 matrix (uniform positions, normal values) for the simulator."""
    import _gs
    dims, pruning, sparsity = case.split(":")
    shape = tuple(int(v) for v in dims.split("x"))
    if min(shape) >= 4096:
        return _gs.case_matrix(case)
    rng = np.random.default_rng(0)
    A = sp.random(*shape, density=1 - float(sparsity), format="csr", random_state=rng, dtype=np.float32)
    A.data = (A.data - np.float32(0.5)).astype(np.float16).astype(np.float32)
    A.eliminate_zeros()
    return shape, pruning, float(sparsity), A


def main(argv=None) -> int:
    from spmvlab import check, experiment, methods, runinfo
    from spmvlab.bench import time_fn
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", default=CASES, help="comma-separated RxC:pruning:sparsity")
    ap.add_argument("--ns", default="8,32")
    ap.add_argument("--warps", default="4,8,16", help="warps per band (block) to try")
    ap.add_argument("--bpack", default="0,1", help="B read as is (0) and/or packed in row pairs (1)")
    ap.add_argument("--unroll", default="1", help="tiles per warp step to try (1 to 8)")
    ap.add_argument("--layouts", default="row",
                    help="row (masks per tile row), frag (fragment order), stage (frag through shared memory)")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--baselines", default="cublas,csr_vector,macko")
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)
    rows, lines = [], []
    for case in a.cases.split(","):
        t0 = time.perf_counter()
        shape, pruning, sparsity, A = case_matrix(case)
        ts = {lay: LAYOUTS[lay][0](A) for lay in a.layouts.split(",")}
        stored = A.copy()                   # the values the layouts hold (fp16), for the check
        stored.data = stored.data.astype(np.float16).astype(np.float64)
        enc_s = time.perf_counter() - t0
        m, k = shape
        t = next(iter(ts.values()))
        bands, kp = t["tile_ptr"].size - 1, -(-k // TILE) * TILE
        print(f"{case}: nnz {A.nnz}, {t['tile_col'].size} tiles, "
              + ", ".join(f"{lay} {v['bytes'] / (m * k):.3f}" for lay, v in ts.items())
              + f" B per weight ({enc_s:.0f} s to draw and encode)", flush=True)
        dts = {lay: device_arrays(v) for lay, v in ts.items()}
        dz = cuda.to_device(np.zeros(1, np.float16))
        extra = dict(case=case, shape=list(shape), pruning=pruning, sparsity=sparsity, nnz=int(A.nnz),
                     tiles=int(t["tile_col"].size))
        fmt = {lay: dict(layout=lay, format_bytes=v["bytes"], bytes_per_weight=v["bytes"] / (m * k))
               for lay, v in ts.items()}
        for n in [int(v) for v in a.ns.split(",")]:
            B = np.random.default_rng(1).standard_normal((k, n)).astype(np.float16)
            Bp = np.zeros((kp, n), np.float16)
            Bp[:k] = B
            dB = cuda.to_device(Bp.ravel())
            dW = cuda.device_array(kp * n // 2, np.uint32)
            ref = check.reference_product(stored, B)
            variants = [(lay, w, bp, u, pf) for lay in ts for w in [int(v) for v in a.warps.split(",")]
                        for bp in [bool(int(v)) for v in a.bpack.split(",")]
                        for u in [int(v) for v in a.unroll.split(",")]
                        for pf in KERNEL_OPTIONS.get(lay, {}).get("prefetch", (False,))
                        if (w * TILE * n <= SHARED_FLOATS if lay != "stage"
                            else bp and u == 1 and w * (TILE * n + 256) <= SHARED_FLOATS)]
            for lay, w, bp, u, pf in variants:
                pw, dt = (dW if bp else None), dts[lay]
                dC = cuda.to_device(np.full((bands * TILE, n), np.nan, np.float32))
                run(dt, dB, dz, dC, n, w, pw, u, pf)
                chk = check.compare(dC.copy_to_host()[:m], ref, np.float16)
                ok = chk.passed
                name = ("tc_bitmap" if lay == "row" else f"tc_{lay}") + f"_w{w}"
                row = dict(extra, **fmt[lay], n=n, method=name + ("_bpack" if bp else "") + (f"_u{u}" if u > 1 else "")
                           + ("_pf" if pf else ""), warps=w, bpack=bp, unroll=u, prefetch=pf,
                           check_passed=ok, n_bad=chk.n_bad, max_rel_err=chk.max_rel_err)
                if not SIMULATOR:             # timed even when the check fails (the row says so)
                    tm = time_fn(lambda: run(dt, dB, dz, dC, n, w, pw, u, pf), reps=a.reps, warmup=3, cold=True)
                    row.update(median_us=tm.median_us, p10_us=tm.p10_us, p90_us=tm.p90_us)
                rows.append(row)
                lines.append(f"{case:28s} N={n:<3d} {row['method']:22s} "
                             f"{row.get('median_us', float('nan')):8.1f} us  check {ok}")
                print(lines[-1], flush=True)
            if not SIMULATOR and a.baselines:
                p = methods.Problem.make(A, "float16", k=n, seed=1, lossy=True)
                for r in methods.measure_problem(p, a.baselines.split(","), reps=a.reps, warmup=3,
                                                 keep_going=True, extra=dict(extra, n=n)):
                    rows.append(r)
                    lines.append(f"{case:28s} N={n:<3d} {r['method']:22s} "
                                 f"{r.get('median_us') or float('nan'):8.1f} us  check {r.get('check_passed')}")
                    print(lines[-1], flush=True)
                del p
        del A, dts, stored
    path = experiment.save_results(a.out or "tc_bitmap_ab", rows, vars(a), meta=runinfo.run_metadata())
    print("\n".join(["", *lines, f"wrote {path}"]))
    return 0 if all(r.get("check_passed", True) for r in rows if r["method"].startswith("tc_")) else 1


if __name__ == "__main__":
    sys.exit(main())
