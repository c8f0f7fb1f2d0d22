"""MACKO SpMM on tensor cores (numba.cuda); kernels/macko.py chooses it.

SpMM on tensor cores (``MackoConfig.spmm_mma``, float16 values, N >= 2): the gather
kernels of kernels/macko.py read a 16-byte row of X from shared memory per stored entry at a
random column, so the 8 lanes of a quarter-warp fall on random rows and share banks (several
shared-memory wavefronts where one would do), and each entry costs 8 conversions and 8 FMAs per 8 columns.
This kernel instead decodes the matrix into dense float16 tiles and multiplies them by X
with ``mma.sync.m16n8k16`` (float32 accumulation, exact float16 products: the check's
float32 bound holds). A block of 16 warps owns 16 consecutive rows (warp w: row
16 blockIdx.x + w) and ``ct`` = 8, 16 or 32 columns of X (blockIdx.y); it walks the columns
in windows of ``spmm_mma_window`` (KW) columns:

1. warp w walks its row's 256-entry chunks exactly as the SpMV does (lane l: entries
   [base + 8l, base + 8l + 8), values in one 16-byte load, columns from the warp scan) and
   stores each entry whose column c lies in [k0, k0 + KW) at row w, column c - k0 of the
   dense tile (16 x (KW + 8) float16; the padding puts consecutive rows 4 banks apart); a
   chunk whose last column is past the window is kept for the next one (its entries are
   tested again there; a chunk wholly inside the row and the window stores without tests);
   all 512 threads copy X[k0:k0 + KW, ct columns] into the X window (16 bytes per copy when
   N is a multiple of 8; zero past K rows and N columns); block barrier;
2. warp w takes the window's 16-column k-steps w, w + 16, ...: lane (g, t) = (l // 4, l % 4)
   reads its A fragment (4 words of the tile: rows g and g + 8, columns 2t, 2t + 1, 2t + 8,
   2t + 9), its B fragments (X window rows 2t, 2t + 1, 2t + 8, 2t + 9 at column 8j + g for each
   8-column group j), issues ct / 8 mma into its float32 D fragments (D[g, 8j + 2t + {0, 1}],
   D[g + 8, ...]), then zeroes the k-step's 16 x 16 part of the tile (lane: row l // 2,
   8 columns); block barrier.

At the end the 16 warps' D fragments go to shared memory and thread i < 16 ct sums them in
warp order for row i // ct, column i % ct (deterministic) and writes Y. Inserted zeros (and
the tile's zeros) are multiplied by X like values, exact unless X holds Inf/NaN in the window:
a block with a result that is not finite redoes its 16 rows on the careful gather path
(stored zeros skipped), so NaN/Inf propagate as in CSR. N = 1 runs the SpMV kernel.
Per entry of a chunk wholly inside a window the scatter loop does a code extract, an add and
one 2-byte shared-memory store, and unlike the gather kernels its work per entry does not
grow with N; the shared-memory traffic per entry is that store plus the dense tile's zeroing
and A-fragment reads (2 + 2 bytes per dense element) and the X window.

Measured times and profiles: docs/performance.md.
"""

from __future__ import annotations

import functools
import math

from typing import TYPE_CHECKING

import numpy as np

from reference._common import OptionError, problem

from .._cuda import cuda, inline_device
from ._common import WARP, blocks_for, finish, jit_options, launch_stream, prepare_spmm
from ._intrinsics import mma16816, pack_half2, sget, sput, sstore4, sword, vwords4
from ._macko_device import CHUNK, _parts, _row_tile
from ._spmm import accumulator_np, group_for, launch_smem, tile_parts

if TYPE_CHECKING:
    from .macko import DeviceMacko, MackoConfig

MMA_ROWS = 16               # rows per block of the tensor-core SpMM (the mma's M), a warp each
MMA_THREADS = MMA_ROWS * WARP
MMA_WINDOWS = (64, 128, 256, 512, 1024)   # columns per window of the tensor-core SpMM
MMA_TILES = (8, 16, 32)     # its columns of X per block (8 per mma: N of m16n8k16)


def mma_tile(k_cols: int) -> int:
    """Columns of X one block of the tensor-core SpMM covers for N = ``k_cols``: 8, 16 or 32
    (one, two or four m16n8k16 products per 16 columns of the window); N > 32 takes several
    column tiles (grid y), each decoding the matrix again."""
    ct = MMA_TILES[0]
    while ct < k_cols and ct < MMA_TILES[-1]:
        ct *= 2
    return ct


def mma_smem_bytes(window: int, ct: int) -> int:
    """Dynamic shared memory of one tensor-core SpMM block: the dense tile (16 rows of
    ``window + 8`` float16, the 8 of padding put consecutive rows 16 bytes apart in the
    banks) and the X window (``window`` rows of ``ct`` float16), or, at the end, the 16
    warps' partial sums (16 x 16 x ct float32) in the same bytes; then 16 bytes for the
    block's flag."""
    main = max(MMA_ROWS * (window + 8) * 2 + window * ct * 2, MMA_ROWS * MMA_ROWS * ct * 4)
    return main + 16


@functools.lru_cache(maxsize=None)
def _spmm_mma_kernel(dtype_name: str, delta_bits: int, cfg: MackoConfig, ct: int, g: int,
                     out_t: bool = False):
    """The tensor-core SpMM for float16 values, ``ct`` columns of X per block (8, 16, 32), X
    rows copied ``g`` values at a time (8 when N is a multiple of 8, else 1)."""
    if dtype_name != "float16" or ct not in MMA_TILES:
        raise OptionError(problem("tensor-core SpMM", f"float16 values and ct in {MMA_TILES}",
                                  f"{dtype_name}, ct={ct}"))
    KW = cfg.spmm_mma_window
    STRIDE = KW + 8                  # halves per dense-tile row
    XOFF = MMA_ROWS * STRIDE         # halves: the X window's start
    BUF = XOFF + KW * ct             # halves of the tile and the X window
    FLAG = mma_smem_bytes(KW, ct) // 4 - 4   # int32 index of the block's flag
    KSTEPS = KW // 16
    NT = ct // 8
    ND = 4 * NT                      # D fragment floats per lane
    GPR = ct // 8                    # 16-byte groups per X row
    P = _parts(dtype_name, delta_bits)
    load_values, load_word, chunk_columns, word_code = (
        P["load_values"], P["load_word"], P["chunk_columns"], P["word_code"])
    T = tile_parts(dtype_name, ct, g, out_t=out_t)   # the careful pass gathers X from global memory
    store, put_at = T["store"], T["put_at"]
    row_tile = _row_tile(dtype_name, delta_bits, T)
    accnp = accumulator_np(dtype_name)
    b = delta_bits
    int32 = np.int32
    u32 = np.uint32
    f16 = np.float16
    f32 = np.float32
    zero32 = u32(0)
    HALF, SINGLE, INT = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.int32)

    @inline_device
    def put_inside(sA, rbase, w, k, v, col):
        """Entry k of a lane whose chunk lies wholly inside the row and the window: its
        column, and its value into the dense tile at ``rbase + column`` (no tests)."""
        col = int32(col + word_code(w, k, b) + 1)
        sput(sA, u32(rbase + col), v)
        return col

    @inline_device
    def put_full(sA, row0, w, k, v, col, k0):
        """Entry k of a lane whose 8 entries lie inside the row: its column, and its value
        into the dense tile when the column is in the window [k0, k0 + KW)."""
        col = int32(col + word_code(w, k, b) + 1)
        d = u32(col - k0)
        if d < u32(KW):
            sput(sA, row0 + d, v)
        return col

    @inline_device
    def put_masked(sA, row0, w, k, v, q, start, end, col, k0):
        """The same for entry k at position q, which may lie outside the row [start, end)."""
        if q >= start and q < end:
            col = int32(col + word_code(w, k, b) + 1)
            d = u32(col - k0)
            if d < u32(KW):
                sput(sA, row0 + d, v)
        return col

    @inline_device
    def scatter(sA, row0, w, vals, interior, inside, col, p, start, end, k0):
        """This lane's 8 entries of the current chunk (``col``: the column before its first)
        that fall in the window, into the warp's row of the dense tile. ``inside`` (warp-
        uniform): the chunk lies wholly inside the row and the window."""
        v0, v1, v2, v3, v4, v5, v6, v7 = vals
        if inside:
            rbase = u32(row0 - k0)
            col = put_inside(sA, rbase, w, 0, v0, col)
            col = put_inside(sA, rbase, w, 1, v1, col)
            col = put_inside(sA, rbase, w, 2, v2, col)
            col = put_inside(sA, rbase, w, 3, v3, col)
            col = put_inside(sA, rbase, w, 4, v4, col)
            col = put_inside(sA, rbase, w, 5, v5, col)
            col = put_inside(sA, rbase, w, 6, v6, col)
            col = put_inside(sA, rbase, w, 7, v7, col)
        elif interior:
            col = put_full(sA, row0, w, 0, v0, col, k0)
            col = put_full(sA, row0, w, 1, v1, col, k0)
            col = put_full(sA, row0, w, 2, v2, col, k0)
            col = put_full(sA, row0, w, 3, v3, col, k0)
            col = put_full(sA, row0, w, 4, v4, col, k0)
            col = put_full(sA, row0, w, 5, v5, col, k0)
            col = put_full(sA, row0, w, 6, v6, col, k0)
            col = put_full(sA, row0, w, 7, v7, col, k0)
        else:
            col = put_masked(sA, row0, w, 0, v0, p, start, end, col, k0)
            col = put_masked(sA, row0, w, 1, v1, p + 1, start, end, col, k0)
            col = put_masked(sA, row0, w, 2, v2, p + 2, start, end, col, k0)
            col = put_masked(sA, row0, w, 3, v3, p + 3, start, end, col, k0)
            col = put_masked(sA, row0, w, 4, v4, p + 4, start, end, col, k0)
            col = put_masked(sA, row0, w, 5, v5, p + 5, start, end, col, k0)
            col = put_masked(sA, row0, w, 6, v6, p + 6, start, end, col, k0)
            col = put_masked(sA, row0, w, 7, v7, p + 7, start, end, col, k0)

    @inline_device
    def fill_x(Xf, n, K, j0, k0, sm, tid):
        """The block's threads copy X[k0:k0 + KW, j0:j0 + ct] into the X window (row kk at
        XOFF + kk * ct), zero past K rows and N columns; 16 bytes per copy when g == 8."""
        if g == 8:
            q = tid
            while q < KW * GPR:
                kk = q // GPR
                jj = j0 + 8 * (q % GPR)
                w0 = w1 = w2 = w3 = zero32
                if k0 + kk < K and jj < n:
                    w0, w1, w2, w3 = vwords4(Xf, np.int64(k0 + kk) * n + jj)
                sstore4(sm, u32(XOFF + 8 * q), w0, w1, w2, w3)
                q += MMA_THREADS
        else:
            q = tid
            while q < KW * ct:
                kk = q // ct
                j = j0 + q % ct
                v = f16(0)
                if k0 + kk < K and j < n:
                    v = Xf[np.int64(k0 + kk) * n + j]
                sm[XOFF + q] = v
                q += MMA_THREADS

    @cuda.jit(**jit_options(max_registers=64))
    def macko_spmm_mma(row_ptr, words, values, Xf, Y, n):
        """Block (bx, by) computes Y[16 bx:16 bx + 16, ct by:ct by + ct]; warp w owns row
        16 bx + w. For each window of KW columns: (1) warp w walks its row's chunks as the
        SpMV does (lane l: entries [base + 8l, base + 8l + 8), columns from the warp scan)
        and writes the values whose column lies in the window into row w of the dense tile,
        stopping at the first chunk that reaches past the window (kept for the next one);
        the block's threads copy the X window; barrier; (2) warp w takes the window's
        16-column k-steps w, w + 16, ...: lane (g, t) = (lane // 4, lane % 4) loads its A
        fragment (4 words of the tile), its B fragments from the X window, does ct / 8
        mma.sync into its float32 D fragments, and zeroes the k-step's 16 x 16 tile part
        (lane: row lane // 2, 8 columns); barrier. At the end the 16 warps' D fragments are
        summed in warp order (thread i < 16 ct: row i // ct, column i % ct) and written; a
        tile with a result that is not finite is redone by its warps on the careful path
        (gather from global X, stored zeros skipped: CSR semantics). ``out_t``: Y is the
        product's transpose."""
        sm = cuda.shared.array(0, HALF)
        red = cuda.shared.array(0, SINGLE)
        flag = cuda.shared.array(0, INT)
        tid = int32(cuda.threadIdx.x)
        warp = int32(tid // WARP)
        lane = int32(tid % WARP)
        gq = lane >> 2
        tq = lane & 3
        n_rows = row_ptr.shape[0] - 1
        r = cuda.blockIdx.x * MMA_ROWS + warp
        j0 = cuda.blockIdx.y * ct
        nvalid = min(ct, n - j0)
        K = Xf.shape[0] // n
        if tid == 0:
            flag[FLAG] = 0
        q = tid
        while q < BUF // 8:                         # zero the dense tile (and X window)
            sstore4(sm, 8 * q, zero32, zero32, zero32, zero32)
            q += MMA_THREADS
        cuda.syncthreads()                          # before any warp writes its row
        start = int32(0)
        end = int32(0)
        if r < n_rows:
            start = int32(row_ptr[r])
            end = int32(row_ptr[r + 1])
        last = int32(values.shape[0] - 8)
        base = int32(start & -8)
        p = int32(base + lane * 8)
        pl = min(p, last)
        vals = load_values(values, pl)
        w = load_word(words, pl)
        pn = min(int32(p + CHUNK), last)
        vals_n = load_values(values, pn)
        w_n = load_word(words, pn)
        running = int32(0)
        live = start < end
        interior = False
        col = int32(0)
        total = int32(0)
        if live:
            interior, col, total = chunk_columns(w, base, p, start, end, running, lane, False)
        row0 = u32(warp * STRIDE)
        d = cuda.local.array(ND, accnp)
        for i in range(ND):
            d[i] = f32(0)
        n_win = (K + KW - 1) // KW
        for win in range(n_win):
            k0 = int32(win * KW)
            fill_x(Xf, n, K, j0, k0, sm, tid)
            while live:                             # warp-uniform
                # the chunk's columns are [running, running + total) at most
                past = int32(running + total) > int32(k0 + KW)
                inside = interior and running >= k0 and not past
                scatter(sm, row0, w, vals, interior, inside, col, p, start, end, k0)
                if past:                            # it goes on in the next window
                    break
                running = int32(running + total)
                base = int32(base + CHUNK)
                p = int32(p + CHUNK)
                vals = vals_n
                w = w_n
                pn = min(int32(p + CHUNK), last)
                vals_n = load_values(values, pn)
                w_n = load_word(words, pn)
                live = base < end
                if live:
                    interior, col, total = chunk_columns(w, base, p, start, end, running, lane,
                                                         False)
            cuda.syncthreads()
            ks = warp
            while ks < KSTEPS:
                kc = u32(ks * 16 + 2 * tq)
                ar = u32(gq * STRIDE) + kc
                a0 = sword(sm, ar)
                a1 = sword(sm, ar + 8 * STRIDE)
                a2 = sword(sm, ar + 8)
                a3 = sword(sm, ar + (8 * STRIDE + 8))
                for nt in range(NT):
                    xb = u32(XOFF + kc * ct + nt * 8 + gq)
                    b0 = pack_half2(sget(sm, xb), sget(sm, xb + ct))
                    b1 = pack_half2(sget(sm, xb + 8 * ct), sget(sm, xb + 9 * ct))
                    e0, e1, e2, e3 = mma16816(a0, a1, a2, a3, b0, b1,
                                              d[4 * nt], d[4 * nt + 1], d[4 * nt + 2], d[4 * nt + 3])
                    d[4 * nt] = e0
                    d[4 * nt + 1] = e1
                    d[4 * nt + 2] = e2
                    d[4 * nt + 3] = e3
                sstore4(sm, u32((lane >> 1) * STRIDE + ks * 16 + 8 * (lane & 1)),
                        zero32, zero32, zero32, zero32)
                ks += MMA_ROWS
            cuda.syncthreads()
        for nt in range(NT):                        # the warps' partial sums, then their total
            c = nt * 8 + 2 * tq
            red[(warp * MMA_ROWS + gq) * ct + c] = d[4 * nt]
            red[(warp * MMA_ROWS + gq) * ct + c + 1] = d[4 * nt + 1]
            red[(warp * MMA_ROWS + gq + 8) * ct + c] = d[4 * nt + 2]
            red[(warp * MMA_ROWS + gq + 8) * ct + c + 1] = d[4 * nt + 3]
        cuda.syncthreads()
        if tid < MMA_ROWS * ct:
            row = tid // ct
            c = tid % ct
            s = f32(0)
            for wi in range(MMA_ROWS):
                s += red[(wi * MMA_ROWS + row) * ct + c]
            rr = cuda.blockIdx.x * MMA_ROWS + row
            if rr < n_rows and c < nvalid:
                if math.isinf(s) or math.isnan(s):
                    flag[FLAG] = 1
                put_at(Y, rr, j0 + c, s)
        cuda.syncthreads()
        if flag[FLAG] != 0 and r < n_rows:         # block-uniform: redo the rows carefully
            accs = cuda.local.array(ct, accnp)
            row_tile(words, values, Xf, start, end, last, lane, j0, nvalid, n, accs, True)
            store(Y, r, j0, nvalid, accs, lane)

    return macko_spmm_mma


def launch_mma(D: DeviceMacko, X, out, config: MackoConfig, spmv_kernel, out_t: bool = False):
    """Y = D @ X (``out_t``: its transpose) with the tensor-core SpMM (float16 values): N = 1
    runs ``spmv_kernel()`` (kernels/macko.py's SpMV for ``config``); otherwise a grid of
    (ceil(rows / 16), ceil(N / ct)) blocks of 512 threads (:func:`mma_tile`,
    :func:`mma_smem_bytes`)."""
    ops, k_cols = prepare_spmm(D, X, out, out_t)
    n_rows = D.shape[0]
    arrays = (D.row_ptr, D.words, D.values)
    if n_rows and k_cols == 1:
        spmv_kernel()[
            blocks_for(n_rows, config.threads_per_block // WARP), config.threads_per_block,
            launch_stream()](
            *arrays, ops.x.reshape(ops.x.shape[0]), ops.out.reshape(n_rows))
    elif n_rows and k_cols:
        ct = mma_tile(k_cols)
        g = group_for(D.dtype, k_cols, ct)
        kernel = _spmm_mma_kernel(D.dtype.name, D.delta_bits, config, ct, g, out_t)
        grid = (blocks_for(n_rows, MMA_ROWS), blocks_for(k_cols, ct))
        flat = ops.x.reshape(ops.x.shape[0] * k_cols)
        launch_smem(kernel, grid, MMA_THREADS,
                    mma_smem_bytes(config.spmm_mma_window, ct),
                    (*arrays, flat, ops.out, np.int64(k_cols)))
    return finish(ops, out)
