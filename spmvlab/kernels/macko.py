"""MACKO SpMV/SpMM kernels (numba.cuda), paired with ``reference/macko.py``.

SpMV: one warp per row, so the loads of a row stay coalesced and a row needs no
synchronisation beyond the warp. The row is walked in chunks of 256 stored entries starting
at ``row_ptr[r]`` rounded down to a multiple of 8 (entries of the previous row in the first
chunk are masked). Lane ``l`` owns entries ``[base + 8l, base + 8l + 8)`` of a chunk: it
loads their 8 values with one 16-byte load (two for float32) and their 8 codes with one
naturally aligned word load (8 x delta_bits bits). Columns come from an inclusive warp
scan (``shfl_up_sync``, 5 steps) of each lane's sum of steps; lane 31's total is broadcast
and carried to the next chunk. Products and sums are float32; lanes reduce with
``shfl_xor_sync`` and lane 0 writes y[r] in the value dtype.

Positions and the chunk bookkeeping are int32 and the scan's lane tests 32-bit, because
64-bit compares and adds take two instructions each; ``_upload`` checks that every position
(the prefetch look-ahead included) fits in int32.

Each warp's work is a serial chain (load, scan, gathers of x), so the kernel is limited by
latency rather than by bandwidth; what hides it:
* software pipelining (``prefetch=1`` or ``2``): the loads of the chunk 1 (or 2) ahead are
  issued before the current chunk is computed, so every warp always has chunks in flight;
* a register cap (``MackoConfig.max_registers``) that lets more warps share an SM;
* chunks lying wholly inside the row (warp-uniform test) take a path with no masks and no
  zero tests: per entry a nibble extract, one add for the column, the x gather, two
  conversions and an FMA;
* that fast path multiplies the zeros MACKO inserts by x like any value, which is exact
  unless x is Inf/NaN at such a column (0 * Inf = NaN). So when a row's fast result is not
  finite the warp recomputes the row on the careful path, which skips stored zeros: NaN/Inf
  propagate exactly as in CSR, at no cost for finite results.

SpMM (Y = M @ X, X of shape (cols, k)): one warp per row again, its chunks walked and their
columns scanned as in SpMV; each decoded entry multiplies its row of a tile of X's columns
(``spmm_tile``; kernels/_spmm.py) into the lane's accumulators, X read from global memory or,
with ``spmm_smem``, from a copy of the tile in shared memory. As in SpMV, chunks wholly inside
the row skip the masks and zero tests, and a row whose result is not finite is redone on the
careful path.

SpMM on tensor cores (``MackoConfig.spmm_mma``, float16 values, N >= 2): the gather kernels
above read a 16-byte row of X from shared memory per stored entry at a random column, so the
8 lanes of a quarter-warp fall on random rows and share banks (several shared-memory
wavefronts where one would do), and each entry costs 8 conversions and 8 FMAs per 8 columns.
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
   8 columns); block barrier. With ``spmm_mma_double`` alternate windows use two copies of
   the tile and the X window and this barrier goes: a warp's stores for window i + 1 go to
   the stage that every warp finished reading before the barrier of window i.

At the end the 16 warps' D fragments go to shared memory and thread i < 16 ct sums them in
warp order for row i // ct, column i % ct (deterministic) and writes Y. Inserted zeros (and
the tile's zeros) are multiplied by X like values, exact unless X holds Inf/NaN in the window:
a block with a result that is not finite redoes its 16 rows on the careful gather path
(stored zeros skipped), so NaN/Inf propagate as in CSR. N = 1 runs the SpMV kernel.
Per entry of a chunk wholly inside a window the scatter loop does a code extract, an add and
one 2-byte shared-memory store, and unlike the gather kernels its work per entry does not
grow with N; the shared-memory traffic per entry is that store plus the dense tile's zeroing
and A-fragment reads (2 + 2 bytes per dense element) and the X window.

Device copies: codes are uploaded as bytes and viewed as unsigned words of 8 x delta_bits
bits (one word per 8 entries), so the code load is one aligned scalar load.

Measured times, profiles and instruction counts of these kernels: docs/performance.md.
"""
from __future__ import annotations

import dataclasses
import functools
import math

import numpy as np

from reference._common import OptionError, problem
from reference.codec import packing
from reference.macko import DELTA_BITS, MackoMatrix

from .. import codec
from .. import formats
from .._cuda import cuda, inline_device
from ._common import (
    CHECK_THREADS, FULL_MASK, WARP, PTXTarget, acc_type, array_sig, blocks_for, check_int32,
    check_threads_per_block, check_value_dtype, checked_to_device, jit_options,
    launch_spmv, run_device_check, to_dev, warp_sum,
    check_config,
)
from ._intrinsics import (
    mma16816, pack_half2, sget, sput, sstore4, sword, vload4, vload8, vwords4,
)
from ._spmm import (
    TILE_COLS, accumulator_np, fill_parts, group_for, launch_smem, launch_tiles, ptx_cases, tile_parts,
)

__all__ = ["MackoConfig", "DeviceMacko", "to_device", "device_check", "spmv", "spmm", "ptx_targets",
           "MMA_WINDOWS", "mma_tile", "mma_smem_bytes"]

KERNEL_DTYPES = formats.get("macko").kernel_dtypes
CHUNK = 8 * WARP          # stored entries a warp handles per chunk
_WORD = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
MMA_ROWS = 16               # rows per block of the tensor-core SpMM (the mma's M), a warp each
MMA_THREADS = MMA_ROWS * WARP
MMA_WINDOWS = (64, 128, 256, 512, 1024)   # columns per window of the tensor-core SpMM
MMA_TILES = (8, 16, 32)     # its columns of X per block (8 per mma: N of m16n8k16)


@dataclasses.dataclass(frozen=True)
class MackoConfig:
    """Launch settings.

    threads_per_block  multiple of 32 in [32, 1024]
    prefetch           chunks whose loads are issued before the current chunk is computed
                       (0, 1 or 2)
    max_registers      register cap per thread for the SpMV kernel (None: the compiler's
                       choice); fewer registers let more warps share an SM
    spmm_tile          SpMM: columns of X per pass (kernels/_spmm.py), one of 1, 2, 4, 8,
                       16, 32; N <= spmm_tile decodes the matrix once
    spmm_smem          SpMM: copy X's column tile into shared memory when its K rows fit
                       (the tile is halved until they do; kernels/_spmm.launch_tiles), else
                       gather X from global memory
    spmm_smem_fp32     SpMM: the shared tile holds X converted to float32 once, when it is
                       copied (float16 values: no convert per product; twice the bytes, so
                       the tile is halved sooner); results identical
    spmm_smem_threads  threads per block of the shared-memory SpMM (one block per SM when
                       the tile is large, so more threads hide more latency); its register
                       cap is 65536 / threads
    spmm_mma           SpMM with float16 values and N >= 2: the dense-tile tensor-core
                       kernel (module docstring, "SpMM on tensor cores") instead of the
                       gather kernels above; float32 values ignore it
    spmm_mma_window    that kernel's columns per window (64, 128, 256, 512 or 1024): the
                       16 x window dense tile a block decodes before each round of mma
    spmm_mma_double    that kernel with two stages (tile and X window) in shared memory, used
                       by alternate windows: one block barrier per window instead of two, so
                       a warp stores window i + 1 while others multiply window i; twice the
                       shared memory (mma_smem_bytes)

    The SpMV defaults (256 threads, prefetch 1, 40 registers) come from the tuning sweep
    (experiments/tune_macko.py; the numbers are in docs/performance.md): a 40-register cap
    lets 48 warps share an SM, which a matrix with many rows per SM needs to hide the
    latency of its gathers; one chunk of prefetch keeps loads in flight without the
    registers a second one costs; a lower cap makes the kernel spill.
    """

    threads_per_block: int = 256
    prefetch: int = 1
    max_registers: int | None = 40
    spmm_tile: int = 16
    spmm_smem: bool = True
    spmm_smem_threads: int = 1024
    spmm_smem_fp32: bool = False
    spmm_mma: bool = False
    spmm_mma_window: int = 1024
    spmm_mma_double: bool = False

    def __post_init__(self):
        check_threads_per_block("MackoConfig", self.threads_per_block)
        if self.prefetch not in (0, 1, 2) or isinstance(self.prefetch, bool):
            raise OptionError(problem("MackoConfig.prefetch", "0, 1 or 2", repr(self.prefetch)))
        if self.spmm_tile not in TILE_COLS:
            raise OptionError(problem("MackoConfig.spmm_tile", f"one of {TILE_COLS}", self.spmm_tile))
        if self.spmm_mma_window not in MMA_WINDOWS or isinstance(self.spmm_mma_window, bool):
            raise OptionError(problem("MackoConfig.spmm_mma_window", f"one of {MMA_WINDOWS}",
                                      repr(self.spmm_mma_window)))
        for name in ("spmm_smem", "spmm_smem_fp32", "spmm_mma", "spmm_mma_double"):
            if not isinstance(getattr(self, name), bool):
                raise OptionError(problem(f"MackoConfig.{name}", "True or False",
                                          repr(getattr(self, name))))
        t = self.spmm_smem_threads
        if not isinstance(t, int) or t % WARP or not WARP <= t <= 1024:
            raise OptionError(problem("MackoConfig.spmm_smem_threads",
                                      "a multiple of 32 in [32, 1024]", t))
        if self.max_registers is not None and not 16 <= self.max_registers <= 255:
            raise OptionError(problem("MackoConfig.max_registers", "None or an int in [16, 255]",
                                      self.max_registers))


@dataclasses.dataclass(frozen=True, eq=False)
class DeviceMacko:
    """A :class:`MackoMatrix` on the device; ``codes`` are the packed bytes."""

    row_ptr: object
    codes: object
    values: object
    shape: tuple
    dtype: np.dtype
    delta_bits: int
    nbytes: int


def to_device(M: MackoMatrix, check: str = "auto") -> DeviceMacko:
    """``M`` on the device once ``kernels._common.checked_to_device`` has checked it: every
    decoded column in range, on the host or the device (``check``: "auto", "host", "device")."""
    return checked_to_device(M, MackoMatrix, DeviceMacko, _upload, device_check, check)


def _upload(M: MackoMatrix) -> DeviceMacko:
    check_value_dtype(M.dtype, KERNEL_DTYPES, "MACKO kernel")
    check_int32("shape[1] (columns)", M.n_cols)           # columns are decoded in int32
    # entry positions, the prefetch look-ahead (up to 3 chunks) included, are int32
    check_int32("stored entries + 768 (prefetch look-ahead)", int(M.values.size) + 3 * CHUNK)
    codes = np.ascontiguousarray(M.deltas)
    vals = M.values
    if vals.size == 0:  # keep a non-empty buffer so loads are always in bounds
        vals = np.zeros(8, vals.dtype)
        codes = np.zeros(M.delta_bits, np.uint8)
    return DeviceMacko(row_ptr=to_dev(M.row_ptr), codes=to_dev(codes), values=to_dev(vals),
                       shape=M.shape, dtype=M.dtype, delta_bits=M.delta_bits, nbytes=M.nbytes)


def _words(D: DeviceMacko):
    """The packed codes as one word of 8 x delta_bits bits per 8 entries."""
    return D.codes.view(_WORD[D.delta_bits])


# ---------------------------------------------------------------------------------------------
# device-side building blocks
# ---------------------------------------------------------------------------------------------

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


@functools.lru_cache(maxsize=None)
def _spmv_kernel(dtype_name: str, delta_bits: int, cfg: MackoConfig):
    row_dot = _row_dot(dtype_name, delta_bits, cfg.prefetch)
    wpb = cfg.threads_per_block // WARP
    int32 = np.int32

    @cuda.jit(**jit_options(max_registers=cfg.max_registers))
    def macko_spmv(row_ptr, words, values, x, y):
        """Warp w of block b computes y[b * warps_per_block + w]; see the module docstring."""
        lane = int32(cuda.threadIdx.x % WARP)
        r = cuda.blockIdx.x * wpb + cuda.threadIdx.x // WARP
        if r >= y.shape[0]:
            return
        start = int32(row_ptr[r])             # entry positions are int32 (checked at upload)
        end = int32(row_ptr[r + 1])
        last = int32(values.shape[0] - 8)     # last aligned load position (clamp)
        careful = False
        while True:   # one copy of the row loop: a second pass only for non-finite rows
            s = row_dot(values, words, x, start, end, last, lane, careful)
            if careful or not (math.isinf(s) or math.isnan(s)):   # warp-uniform
                break
            careful = True                    # redo the row skipping stored zeros
        if lane == 0:
            y[r] = s

    return macko_spmv


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


@functools.lru_cache(maxsize=None)
def _spmm_kernel(dtype_name: str, delta_bits: int, cfg: MackoConfig, ct: int, g: int):
    T = tile_parts(dtype_name, ct, g)
    store, finite = T["store"], T["finite"]
    row_tile = _row_tile(dtype_name, delta_bits, T)
    accnp = accumulator_np(dtype_name)
    wpb = cfg.threads_per_block // WARP

    @cuda.jit
    def macko_spmm(row_ptr, words, values, Xf, Y, n):
        """Warp w of block b: row b * warps_per_block + w, columns [ct * blockIdx.y, + ct).
        The row is walked in 256-entry chunks as in SpMV (lane l: entries [base + 8l,
        base + 8l + 8), columns from a warp scan of the step sums, the next chunk's loads in
        flight); each decoded entry multiplies its row of the X tile into the lane's ct
        accumulators (kernels/_spmm.py). A row whose result is not finite is redone on the
        careful path."""
        lane = cuda.threadIdx.x % WARP
        r = cuda.blockIdx.x * wpb + cuda.threadIdx.x // WARP
        if r >= Y.shape[0]:
            return
        j0 = cuda.blockIdx.y * ct
        nvalid = min(ct, n - j0)
        accs = cuda.local.array(ct, accnp)
        start = row_ptr[r]
        end = row_ptr[r + 1]
        last = values.shape[0] - 8
        row_tile(words, values, Xf, start, end, last, lane, j0, nvalid, n, accs, False)
        if not finite(accs, nvalid):
            row_tile(words, values, Xf, start, end, last, lane, j0, nvalid, n, accs, True)
        store(Y, r, j0, nvalid, accs, lane)

    return macko_spmm


@functools.lru_cache(maxsize=None)
def _spmm_smem_kernel(dtype_name: str, delta_bits: int, cfg: MackoConfig, ct: int, g: int,
                      fg: int):
    T = tile_parts(dtype_name, ct, g, shared=True)
    store, finite = T["store"], T["finite"]
    row_tile = _row_tile(dtype_name, delta_bits, T)
    fill = fill_parts(dtype_name, ct, fg)
    accnp = accumulator_np(dtype_name)
    xnp = np.dtype(np.float32) if cfg.spmm_smem_fp32 else np.dtype(dtype_name)

    @cuda.jit(**jit_options(max_registers=min(255, 65536 // cfg.spmm_smem_threads)))
    def macko_spmm_smem(row_ptr, words, values, Xf, Y, n):
        """Block b first copies X's columns [ct * blockIdx.y, + ct) into shared memory (all
        K rows, zero past N); then its warp w takes rows b * warps + w, stepping by the
        grid's warps (a persistent grid), each row walked as in ``macko_spmm`` with the
        gathers of X from shared memory."""
        sX = cuda.shared.array(0, xnp)
        wpb = cuda.blockDim.x // WARP
        j0 = cuda.blockIdx.y * ct
        nvalid = min(ct, n - j0)
        fill(Xf, n, j0, sX)
        lane = cuda.threadIdx.x % WARP
        r = cuda.blockIdx.x * wpb + cuda.threadIdx.x // WARP
        accs = cuda.local.array(ct, accnp)
        last = values.shape[0] - 8
        while r < Y.shape[0]:
            start = row_ptr[r]
            end = row_ptr[r + 1]
            row_tile(words, values, sX, start, end, last, lane, 0, ct, ct, accs, False)
            if not finite(accs, nvalid):
                row_tile(words, values, sX, start, end, last, lane, 0, ct, ct, accs, True)
            store(Y, r, j0, nvalid, accs, lane)
            r += cuda.gridDim.x * wpb

    return macko_spmm_smem


# ---------------------------------------------------------------------------------------------
# SpMM on tensor cores: decode into a dense 16-row tile, multiply it with mma.sync
# ---------------------------------------------------------------------------------------------

def mma_tile(k_cols: int) -> int:
    """Columns of X one block of the tensor-core SpMM covers for N = ``k_cols``: 8, 16 or 32
    (one, two or four m16n8k16 products per 16 columns of the window); N > 32 takes several
    column tiles (grid y), each decoding the matrix again."""
    ct = MMA_TILES[0]
    while ct < k_cols and ct < MMA_TILES[-1]:
        ct *= 2
    return ct


def mma_smem_bytes(window: int, ct: int, stages: int = 1) -> int:
    """Dynamic shared memory of one tensor-core SpMM block: per stage (2 with
    ``spmm_mma_double``) the dense tile (16 rows of ``window + 8`` float16, the 8 of padding
    put consecutive rows 16 bytes apart in the banks) and the X window (``window`` rows of
    ``ct`` float16), or, at the end, the 16 warps' partial sums (16 x 16 x ct float32) in the
    same bytes; then 16 bytes for the block's flag."""
    main = max(stages * (MMA_ROWS * (window + 8) * 2 + window * ct * 2), MMA_ROWS * MMA_ROWS * ct * 4)
    return main + 16


@functools.lru_cache(maxsize=None)
def _spmm_mma_kernel(dtype_name: str, delta_bits: int, cfg: MackoConfig, ct: int, g: int):
    """The tensor-core SpMM for float16 values, ``ct`` columns of X per block (8, 16, 32), X
    rows copied ``g`` values at a time (8 when N is a multiple of 8, else 1)."""
    if dtype_name != "float16" or ct not in MMA_TILES:
        raise OptionError(problem("tensor-core SpMM", f"float16 values and ct in {MMA_TILES}",
                                  f"{dtype_name}, ct={ct}"))
    KW = cfg.spmm_mma_window
    STAGES = 2 if cfg.spmm_mma_double else 1
    STRIDE = KW + 8                  # halves per dense-tile row
    XOFF = MMA_ROWS * STRIDE         # halves: the X window's start in a stage
    BUF = XOFF + KW * ct             # halves per stage (tile and X window)
    FLAG = mma_smem_bytes(KW, ct, STAGES) // 4 - 4   # int32 index of the block's flag
    KSTEPS = KW // 16
    NT = ct // 8
    ND = 4 * NT                      # D fragment floats per lane
    GPR = ct // 8                    # 16-byte groups per X row
    P = _parts(dtype_name, delta_bits)
    load_values, load_word, chunk_columns, word_code = (
        P["load_values"], P["load_word"], P["chunk_columns"], P["word_code"])
    T = tile_parts(dtype_name, ct, g)            # the careful pass gathers X from global memory
    store = T["store"]
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
    def fill_x(Xf, n, K, j0, k0, sm, tid, off):
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
                sstore4(sm, u32(off + XOFF + 8 * q), w0, w1, w2, w3)
                q += MMA_THREADS
        else:
            q = tid
            while q < KW * ct:
                kk = q // ct
                j = j0 + q % ct
                v = f16(0)
                if k0 + kk < K and j < n:
                    v = Xf[np.int64(k0 + kk) * n + j]
                sm[off + XOFF + q] = v
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
        (lane: row lane // 2, 8 columns); barrier (with ``spmm_mma_double`` none: window i + 1
        uses the other stage, whose last readers passed the barrier of window i). At the end the 16 warps' D fragments are
        summed in warp order (thread i < 16 ct: row i // ct, column i % ct) and written; a
        tile with a result that is not finite is redone by its warps on the careful path
        (gather from global X, stored zeros skipped: CSR semantics)."""
        sm = cuda.shared.array(0, HALF)
        red = cuda.shared.array(0, SINGLE)
        flag = cuda.shared.array(0, INT)
        tid = int32(cuda.threadIdx.x)
        warp = int32(tid // WARP)
        lane = int32(tid % WARP)
        gq = lane >> 2
        tq = lane & 3
        n_rows = Y.shape[0]
        r = cuda.blockIdx.x * MMA_ROWS + warp
        j0 = cuda.blockIdx.y * ct
        nvalid = min(ct, n - j0)
        K = Xf.shape[0] // n
        if tid == 0:
            flag[FLAG] = 0
        q = tid
        while q < STAGES * BUF // 8:               # zero dense tiles (and X windows)
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
            off = u32((win % STAGES) * BUF)         # this window's stage
            fill_x(Xf, n, K, j0, k0, sm, tid, off)
            while live:                             # warp-uniform
                # the chunk's columns are [running, running + total) at most
                past = int32(running + total) > int32(k0 + KW)
                inside = interior and running >= k0 and not past
                scatter(sm, off + row0, w, vals, interior, inside, col, p, start, end, k0)
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
                ar = off + u32(gq * STRIDE) + kc
                a0 = sword(sm, ar)
                a1 = sword(sm, ar + 8 * STRIDE)
                a2 = sword(sm, ar + 8)
                a3 = sword(sm, ar + (8 * STRIDE + 8))
                for nt in range(NT):
                    xb = off + u32(XOFF + kc * ct + nt * 8 + gq)
                    b0 = pack_half2(sget(sm, xb), sget(sm, xb + ct))
                    b1 = pack_half2(sget(sm, xb + 8 * ct), sget(sm, xb + 9 * ct))
                    e0, e1, e2, e3 = mma16816(a0, a1, a2, a3, b0, b1,
                                              d[4 * nt], d[4 * nt + 1], d[4 * nt + 2], d[4 * nt + 3])
                    d[4 * nt] = e0
                    d[4 * nt + 1] = e1
                    d[4 * nt + 2] = e2
                    d[4 * nt + 3] = e3
                sstore4(sm, off + u32((lane >> 1) * STRIDE + ks * 16 + 8 * (lane & 1)),
                        zero32, zero32, zero32, zero32)
                ks += MMA_ROWS
            if STAGES == 1:     # with two stages the next window's stores go to the other one
                cuda.syncthreads()
        if STAGES == 2:
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
                Y[rr, j0 + c] = s
        cuda.syncthreads()
        if flag[FLAG] != 0 and r < n_rows:         # block-uniform: redo the rows carefully
            accs = cuda.local.array(ct, accnp)
            row_tile(words, values, Xf, start, end, last, lane, j0, nvalid, n, accs, True)
            store(Y, r, j0, nvalid, accs, lane)

    return macko_spmm_mma


def launch_mma(D: DeviceMacko, X, out, config: MackoConfig):
    """Y = D @ X with the tensor-core SpMM (float16 values): N = 1 runs the SpMV kernel;
    otherwise a grid of (ceil(rows / 16), ceil(N / ct)) blocks of 512 threads
    (:func:`mma_tile`, :func:`mma_smem_bytes`)."""
    from ._common import finish, prepare_spmm
    ops, k_cols = prepare_spmm(D, X, out)
    n_rows = D.shape[0]
    arrays = (D.row_ptr, _words(D), D.values)
    if n_rows and k_cols == 1:
        _spmv_kernel(D.dtype.name, D.delta_bits, config)[
            blocks_for(n_rows, config.threads_per_block // WARP), config.threads_per_block](
            *arrays, ops.x.reshape(ops.x.shape[0]), ops.out.reshape(n_rows))
    elif n_rows and k_cols:
        ct = mma_tile(k_cols)
        g = group_for(D.dtype, k_cols, ct)
        kernel = _spmm_mma_kernel(D.dtype.name, D.delta_bits, config, ct, g)
        grid = (blocks_for(n_rows, MMA_ROWS), blocks_for(k_cols, ct))
        flat = ops.x.reshape(ops.x.shape[0] * k_cols)
        launch_smem(kernel, grid, MMA_THREADS,
                    mma_smem_bytes(config.spmm_mma_window, ct, 2 if config.spmm_mma_double else 1),
                    (*arrays, flat, ops.out, np.int64(k_cols)))
    return finish(ops, out)


# ---------------------------------------------------------------------------------------------
# the device check: every decoded column in [0, cols)
# ---------------------------------------------------------------------------------------------

CHECK_FIELDS = ("deltas",)


@functools.lru_cache(maxsize=None)
def _check_kernel(delta_bits: int):
    P = _parts("float32", delta_bits)      # the code helpers do not depend on the value dtype
    load_word, lane_steps, full_steps = P["load_word"], P["lane_steps"], P["full_steps"]
    wpb = CHECK_THREADS // WARP
    int64 = np.int64

    @cuda.jit
    def macko_check(row_ptr, words, n_cols, flags):
        """Warp w of block b sums the column steps of row r = b * wpb + w, reading only the
        codes, in chunks laid out as in the SpMV. Steps are >= 1, so the row's columns
        increase and all lie in [0, n_cols) iff the last, (sum of steps) - 1, does; else
        lane 0 flags ``deltas``."""
        lane = cuda.threadIdx.x % WARP
        r = cuda.blockIdx.x * wpb + cuda.threadIdx.x // WARP
        if r >= row_ptr.shape[0] - 1:
            return
        start = row_ptr[r]
        end = row_ptr[r + 1]
        last = (words.shape[0] - 1) * 8       # last aligned word position (clamp)
        base = start - start % 8
        s = int64(0)
        while base < end:
            p = base + lane * 8
            w = load_word(words, min(p, last))
            if base >= start and base + CHUNK <= end:   # warp-uniform: no masks
                s += full_steps(w)
            else:
                s += lane_steps(w, p, start, end)
            base += CHUNK
        s = warp_sum(s)
        if lane == 0 and s > n_cols:
            flags[0] = 1

    return macko_check


def launch_check(D: DeviceMacko, flags):
    """Launch the check kernel (no wait): a warp per row."""
    n_rows = D.shape[0]
    if n_rows:
        wpb = CHECK_THREADS // WARP
        _check_kernel(D.delta_bits)[blocks_for(n_rows, wpb), CHECK_THREADS](
            D.row_ptr, _words(D), D.shape[1], flags)


def device_check(D: DeviceMacko) -> list[str]:
    """:data:`CHECK_FIELDS` with a decoded column out of range (empty: none), on the device."""
    return run_device_check(CHECK_FIELDS, launch_check, D)


# ---------------------------------------------------------------------------------------------
# public wrappers
# ---------------------------------------------------------------------------------------------

def spmv(D, x, out=None, config: MackoConfig = MackoConfig()):
    """y = D @ x. ``D`` a :class:`MackoMatrix` or :class:`DeviceMacko`; ``x`` host or device."""
    check_config(config, MackoConfig)
    D = to_device(D)
    return launch_spmv(D, x, out, lambda: _spmv_kernel(D.dtype.name, D.delta_bits, config),
                       (D.row_ptr, _words(D), D.values), config.threads_per_block,
                       config.threads_per_block // WARP)


def spmm(D, X, out=None, config: MackoConfig = MackoConfig()):
    """Y = D @ X for X of shape (n_cols, k); any k (tiles of ``config.spmm_tile`` columns,
    or of :func:`mma_tile` columns with ``config.spmm_mma`` and float16 values)."""
    check_config(config, MackoConfig)
    D = to_device(D)
    if config.spmm_mma and D.dtype == np.float16:
        return launch_mma(D, X, out, config)
    return launch_tiles(D, X, out,
                        lambda ct, g: _spmm_kernel(D.dtype.name, D.delta_bits, config, ct, g),
                        (D.row_ptr, _words(D), D.values), config.threads_per_block,
                        config.threads_per_block // WARP, config.spmm_tile,
                        spmv=(lambda: _spmv_kernel(D.dtype.name, D.delta_bits, config),
                              config.threads_per_block, config.threads_per_block // WARP),
                        shared=((lambda ct, g, fg: _spmm_smem_kernel(D.dtype.name, D.delta_bits,
                                                                     config, ct, g, fg)),
                                config.spmm_smem_threads,
                                np.float32 if config.spmm_smem_fp32 else D.dtype)
                        if config.spmm_smem else None)


def ptx_targets():
    """SpMV (every prefetch depth) and SpMM for every (dtype, delta_bits), the tensor-core
    SpMM for float16 (every tile width for 4-bit codes); the check for every delta_bits."""
    out = []
    for dt in KERNEL_DTYPES:
        for b in DELTA_BITS:
            word = np.dtype(_WORD[b]).name
            head = f"void(int32[::1], {array_sig(word)}, {array_sig(dt)}, "
            wide = (r"ld\.global(\.nc)?\.v4",)
            for pf in (0, 1, 2):
                out.append(PTXTarget(f"macko.spmv[{dt},b{b},prefetch={pf}]",
                                     functools.partial(_spmv_kernel, dt, b, MackoConfig(prefetch=pf)),
                                     head + f"{array_sig(dt)}, {array_sig(dt)})", wide))
            for ct, g in ptx_cases(dt) if b == 4 else [(8, 16 // np.dtype(dt).itemsize)]:
                out.append(PTXTarget(f"macko.spmm[{dt},b{b},tile{ct},g{g}]",
                                     functools.partial(_spmm_kernel, dt, b, MackoConfig(), ct, g),
                                     head + f"{array_sig(dt)}, {array_sig(dt, 2)}, int64)", wide))
            gs = 16 // np.dtype(dt).itemsize
            out.append(PTXTarget(f"macko.spmm_smem[{dt},b{b},tile8]",
                                 functools.partial(_spmm_smem_kernel, dt, b, MackoConfig(), 8,
                                                   min(8, gs), min(8, gs)),
                                 head + f"{array_sig(dt)}, {array_sig(dt, 2)}, int64)",
                                 wide + (r"ld\.shared\.v[24]",)))
            if dt == "float16":
                cases = ((8, 8, False), (16, 8, False), (32, 8, False), (8, 1, False),
                         (8, 8, True)) if b == 4 else ((8, 8, False),)
                for ct, g, dbl in cases:
                    out.append(PTXTarget(f"macko.spmm_mma[{dt},b{b},tile{ct},g{g}"
                                         f"{',double' if dbl else ''}]",
                                         functools.partial(_spmm_mma_kernel, dt, b,
                                                           MackoConfig(spmm_mma=True,
                                                                       spmm_mma_double=dbl), ct, g),
                                         head + f"{array_sig(dt)}, {array_sig(dt, 2)}, int64)",
                                         (r"mma\.sync\.aligned\.m16n8k16\.row\.col\.f32\.f16\.f16\.f32",
                                          r"st\.shared\.v4", r"bar\.sync|barrier\.sync")))
            if dt == "float16" and b == 4:
                out.append(PTXTarget(f"macko.spmm_smem_fp32[{dt},b{b},tile8]",
                                     functools.partial(_spmm_smem_kernel, dt, b,
                                                       MackoConfig(spmm_smem_fp32=True), 8, 4, 8),
                                     head + f"{array_sig(dt)}, {array_sig(dt, 2)}, int64)",
                                     wide + (r"ld\.shared\.v4",)))
    for b in DELTA_BITS:
        out.append(PTXTarget(f"macko.check[b{b}]", functools.partial(_check_kernel, b),
                             f"void(int32[::1], {array_sig(np.dtype(_WORD[b]).name)}, int64, "
                             f"{array_sig('int32')})"))
    return out
