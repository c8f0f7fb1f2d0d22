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

The tensor-core SpMM (``MackoConfig.spmm_mma``, float16 values, N >= 2) decodes 16-row
dense tiles and multiplies them with ``mma.sync``; it lives in kernels/_macko_mma.py. The
device functions the kernels share (code words, warp scan, row passes) are in
kernels/_macko_device.py.

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
from reference.macko import DELTA_BITS, MackoMatrix

from .. import formats
from .._cuda import cuda
from ._common import (
    CHECK_THREADS, WARP, PTXTarget, array_sig, blocks_for, check_config, check_int32,
    check_threads_per_block, check_value_dtype, checked_to_device, jit_options, launch_spmv,
    run_device_check, to_dev, warp_sum,
)
from ._macko_device import CHUNK, _WORD, _parts, _row_dot, _row_tile
from ._macko_mma import MMA_WINDOWS, _spmm_mma_kernel, launch_mma, mma_smem_bytes, mma_tile
from ._spmm import TILE_COLS, accumulator_np, fill_parts, launch_tiles, ptx_cases, tile_parts

__all__ = ["MackoConfig", "DeviceMacko", "to_device", "device_check", "spmv", "spmm", "ptx_targets",
           "MMA_WINDOWS", "mma_tile", "mma_smem_bytes"]

KERNEL_DTYPES = formats.get("macko").kernel_dtypes


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
    spmm_smem_threads  threads per block of the shared-memory SpMM (one block per SM when
                       the tile is large, so more threads hide more latency); its register
                       cap is 65536 / threads
    spmm_mma           SpMM with float16 values and N >= 2: the dense-tile tensor-core
                       kernel (kernels/_macko_mma.py) instead of the gather kernels;
                       float32 values ignore it
    spmm_mma_window    that kernel's columns per window (64, 128, 256, 512 or 1024): the
                       16 x window dense tile a block decodes before each round of mma

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
    spmm_mma: bool = False
    spmm_mma_window: int = 1024

    def __post_init__(self):
        check_threads_per_block("MackoConfig", self.threads_per_block)
        if self.prefetch not in (0, 1, 2) or isinstance(self.prefetch, bool):
            raise OptionError(problem("MackoConfig.prefetch", "0, 1 or 2", repr(self.prefetch)))
        if self.spmm_tile not in TILE_COLS:
            raise OptionError(problem("MackoConfig.spmm_tile", f"one of {TILE_COLS}", self.spmm_tile))
        if self.spmm_mma_window not in MMA_WINDOWS or isinstance(self.spmm_mma_window, bool):
            raise OptionError(problem("MackoConfig.spmm_mma_window", f"one of {MMA_WINDOWS}",
                                      repr(self.spmm_mma_window)))
        for name in ("spmm_smem", "spmm_mma"):
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

    @functools.cached_property
    def words(self):
        """The packed codes as one word of 8 x delta_bits bits per 8 entries, viewed once (a
        device view costs host time, and it was made on every launch)."""
        return self.codes.view(_WORD[self.delta_bits])


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



@functools.lru_cache(maxsize=None)
def _spmm_kernel(dtype_name: str, delta_bits: int, cfg: MackoConfig, ct: int, g: int,
                 out_t: bool = False):
    T = tile_parts(dtype_name, ct, g, out_t=out_t)
    reduce, finite, put = T["reduce"], T["finite"], T["put"]
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
        careful path. ``out_t``: Y is the product's transpose."""
        lane = cuda.threadIdx.x % WARP
        r = cuda.blockIdx.x * wpb + cuda.threadIdx.x // WARP
        if r >= row_ptr.shape[0] - 1:
            return
        j0 = cuda.blockIdx.y * ct
        nvalid = min(ct, n - j0)
        accs = cuda.local.array(ct, accnp)
        start = row_ptr[r]
        end = row_ptr[r + 1]
        last = values.shape[0] - 8
        row_tile(words, values, Xf, start, end, last, lane, j0, nvalid, n, accs, False)
        reduce(accs, lane)
        if not finite(accs, nvalid, lane):
            row_tile(words, values, Xf, start, end, last, lane, j0, nvalid, n, accs, True)
            reduce(accs, lane)
        put(Y, r, j0, nvalid, accs, lane)

    return macko_spmm


@functools.lru_cache(maxsize=None)
def _spmm_smem_kernel(dtype_name: str, delta_bits: int, cfg: MackoConfig, ct: int, g: int,
                      fg: int, out_t: bool = False):
    T = tile_parts(dtype_name, ct, g, shared=True, out_t=out_t)
    reduce, finite, put = T["reduce"], T["finite"], T["put"]
    row_tile = _row_tile(dtype_name, delta_bits, T)
    xnp = np.dtype(dtype_name)
    fill = fill_parts(dtype_name, ct, fg)
    accnp = accumulator_np(dtype_name)

    @cuda.jit(**jit_options(max_registers=min(255, 65536 // cfg.spmm_smem_threads)))
    def macko_spmm_smem(row_ptr, words, values, Xf, Y, n):
        """Block b first copies X's columns [ct * blockIdx.y, + ct) into shared memory (all
        K rows, zero past N); then its warp w takes rows b * warps + w, stepping by the
        grid's warps (a persistent grid), each row walked as in ``macko_spmm`` with the
        gathers of X from shared memory. ``out_t``: Y is the product's transpose."""
        sX = cuda.shared.array(0, xnp)
        wpb = cuda.blockDim.x // WARP
        j0 = cuda.blockIdx.y * ct
        nvalid = min(ct, n - j0)
        fill(Xf, n, j0, sX)
        lane = cuda.threadIdx.x % WARP
        r = cuda.blockIdx.x * wpb + cuda.threadIdx.x // WARP
        accs = cuda.local.array(ct, accnp)
        last = values.shape[0] - 8
        n_rows = row_ptr.shape[0] - 1
        while r < n_rows:
            start = row_ptr[r]
            end = row_ptr[r + 1]
            row_tile(words, values, sX, start, end, last, lane, 0, ct, ct, accs, False)
            reduce(accs, lane)
            if not finite(accs, nvalid, lane):
                row_tile(words, values, sX, start, end, last, lane, 0, ct, ct, accs, True)
                reduce(accs, lane)
            put(Y, r, j0, nvalid, accs, lane)
            r += cuda.gridDim.x * wpb

    return macko_spmm_smem


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
            D.row_ptr, D.words, D.shape[1], flags)


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
                       (D.row_ptr, D.words, D.values), config.threads_per_block,
                       config.threads_per_block // WARP)


def spmm(D, X, out=None, config: MackoConfig = MackoConfig(), out_t: bool = False):
    """Y = D @ X for X of shape (n_cols, k); any k (tiles of ``config.spmm_tile`` columns,
    or of :func:`mma_tile` columns with ``config.spmm_mma`` and float16 values). ``out_t``:
    return Y's transpose, (k, n_rows), written by the kernel (kernels/_spmm.py)."""
    check_config(config, MackoConfig)
    D = to_device(D)
    if config.spmm_mma and D.dtype == np.float16:
        return launch_mma(D, X, out, config,
                          lambda: _spmv_kernel(D.dtype.name, D.delta_bits, config), out_t)
    return launch_tiles(D, X, out,
                        lambda ct, g, t: _spmm_kernel(D.dtype.name, D.delta_bits, config, ct, g,
                                                      t),
                        (D.row_ptr, D.words, D.values), config.threads_per_block,
                        config.threads_per_block // WARP, config.spmm_tile,
                        spmv=(lambda: _spmv_kernel(D.dtype.name, D.delta_bits, config),
                              config.threads_per_block, config.threads_per_block // WARP),
                        shared=((lambda ct, g, fg, t: _spmm_smem_kernel(
                                    D.dtype.name, D.delta_bits, config, ct, g, fg, t)),
                                config.spmm_smem_threads)
                        if config.spmm_smem else None, out_t=out_t)


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
                cases = ((8, 8), (16, 8), (32, 8), (8, 1)) if b == 4 else ((8, 8),)
                for ct, g in cases:
                    out.append(PTXTarget(f"macko.spmm_mma[{dt},b{b},tile{ct},g{g}]",
                                         functools.partial(_spmm_mma_kernel, dt, b,
                                                           MackoConfig(spmm_mma=True), ct, g),
                                         head + f"{array_sig(dt)}, {array_sig(dt, 2)}, int64)",
                                         (r"mma\.sync\.aligned\.m16n8k16\.row\.col\.f32\.f16\.f16\.f32",
                                          r"st\.shared\.v4", r"bar\.sync|barrier\.sync")))
            if dt == "float16" and b == 4:
                out.append(PTXTarget(f"macko.spmm_smem[{dt},b{b},tile8,out_t]",
                                     functools.partial(_spmm_smem_kernel, dt, b, MackoConfig(), 8,
                                                       8, 8, True),
                                     head + f"{array_sig(dt)}, {array_sig(dt, 2)}, int64)",
                                     wide + (r"ld\.shared\.v4", r"st\.shared\.v4")))
    for b in DELTA_BITS:
        out.append(PTXTarget(f"macko.check[b{b}]", functools.partial(_check_kernel, b),
                             f"void(int32[::1], {array_sig(np.dtype(_WORD[b]).name)}, int64, "
                             f"{array_sig('int32')})"))
    return out
