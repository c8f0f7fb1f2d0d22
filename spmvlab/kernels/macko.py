"""MACKO SpMV/SpMM kernels (numba.cuda), paired with ``reference/macko.py``.

SpMV: one warp per row. The row is walked in chunks of 256 stored entries starting at
``row_ptr[r]`` rounded down to a multiple of 8 (entries of the previous row in the first
chunk are masked). Lane ``l`` owns entries ``[base + 8l, base + 8l + 8)`` of a chunk: it
loads their 8 values with one 16-byte load (two for float32) and their 8 codes with one
naturally aligned word load (8 x delta_bits bits). Columns come from an inclusive warp
scan (``shfl_up_sync``, 5 steps) of each lane's sum of steps; lane 31's total is broadcast
and carried to the next chunk. Stored zeros (the zeros MACKO inserts) are skipped, so NaN/Inf
in x propagate exactly as in CSR. ``unroll`` chunks are loaded before the first is used, so
more bytes are in flight per warp. Products and sums are float32; lanes reduce with
``shfl_xor_sync`` and lane 0 writes y[r] in the value dtype.

SpMM (Y = M @ X, X of shape (cols, k), k <= 64 per launch column-tile): one warp per row
again; each chunk is decoded as above into shared memory (256 columns and values per warp),
then lane ``l`` owns output columns ``j0 + l`` and ``j0 + 32 + l`` and walks the 256 decoded
entries, reading rows of X (coalesced across lanes).

Device copies: codes are uploaded viewed as unsigned words of 8 x delta_bits bits (one word
per 8 entries), so the code load is a single aligned scalar load.
"""
from __future__ import annotations

import dataclasses
import functools

import numpy as np

from reference._common import OptionError, problem
from reference.macko import MackoMatrix

from .._cuda import cuda
from ._common import (
    FULL_MASK, WARP, PTXTarget, acc_type, array_sig, blocks_for, check_value_dtype, finish,
    prepare, to_dev,
)
from ._intrinsics import vload2, vload4, vload8

__all__ = ["MackoConfig", "DeviceMacko", "to_device", "spmv", "spmm", "ptx_targets"]

KERNEL_DTYPES = ("float16", "float32")
DELTA_BITS = (1, 2, 4, 8)
CHUNK = 8 * WARP          # stored entries a warp handles per chunk
SPMM_COLS = 2 * WARP      # columns of X one warp handles per launch tile
_WORD = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


@dataclasses.dataclass(frozen=True)
class MackoConfig:
    """Launch settings.

    threads_per_block  multiple of 32
    unroll             chunks of 256 entries loaded before the first is used (1, 2, 4;
                       entries_per_lane=8 only)
    entries_per_lane   8: lane l owns 8 consecutive entries of a chunk (one 16-byte load);
                       1, 2 or 4: the chunk is cut into 8/E blocks of 32E entries and lane l
                       owns E consecutive entries of each block, so the k-th x gather of the
                       warp touches 32E consecutive entries (fewer cache lines) at the price
                       of narrower loads and one warp scan per two blocks
    """

    threads_per_block: int = 256
    unroll: int = 1
    entries_per_lane: int = 8

    def __post_init__(self):
        if self.threads_per_block % WARP or not 32 <= self.threads_per_block <= 1024:
            raise OptionError(problem("MackoConfig.threads_per_block",
                                      "a multiple of 32 in [32, 1024]", self.threads_per_block))
        if self.unroll not in (1, 2, 4):
            raise OptionError(problem("MackoConfig.unroll", "1, 2 or 4", self.unroll))
        if self.entries_per_lane not in (1, 2, 4, 8):
            raise OptionError(problem("MackoConfig.entries_per_lane", "1, 2, 4 or 8",
                                      self.entries_per_lane))

    def check(self, delta_bits: int):
        """The interleaved layouts read codes as words of entries_per_lane x delta_bits bits."""
        bits = self.entries_per_lane * delta_bits
        if bits not in (8, 16, 32, 64):
            raise OptionError(problem("MackoConfig.entries_per_lane",
                                      f"a value with entries_per_lane x delta_bits in 8..64 bits "
                                      f"(delta_bits={delta_bits})", self.entries_per_lane,
                                      "use entries_per_lane=8"))


@dataclasses.dataclass(frozen=True, eq=False)
class DeviceMacko:
    """A :class:`MackoMatrix` on the device; ``codes`` are the packed bytes, viewed as words
    of entries_per_lane x delta_bits bits at launch."""

    row_ptr: object
    codes: object
    values: object
    shape: tuple
    dtype: np.dtype
    delta_bits: int
    nbytes: int


def to_device(M: MackoMatrix) -> DeviceMacko:
    if isinstance(M, DeviceMacko):
        return M
    M.validate()
    check_value_dtype(M.dtype, KERNEL_DTYPES, "MACKO kernel")
    words = np.ascontiguousarray(M.deltas)
    vals = M.values
    if vals.size == 0:  # keep a non-empty buffer so loads are always in bounds
        vals = np.zeros(8, vals.dtype)
        words = np.zeros(M.delta_bits, np.uint8)
    return DeviceMacko(row_ptr=to_dev(M.row_ptr), codes=to_dev(words), values=to_dev(vals),
                       shape=M.shape, dtype=M.dtype, delta_bits=M.delta_bits, nbytes=M.nbytes)


# ---------------------------------------------------------------------------------------------
# device-side building blocks
# ---------------------------------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def _parts(dtype_name: str, delta_bits: int):
    """Device functions specialised on value dtype and code width."""
    acc = acc_type(dtype_name)
    b = delta_bits
    cmask = (1 << b) - 1
    int32 = np.int32
    f16 = dtype_name == "float16"

    @cuda.jit(device=True, inline=True)
    def load_values(values, p):
        """The 8 values of entries [p, p + 8) (p a multiple of 8) in one or two 16-byte loads."""
        if f16:
            return vload8(values, p)
        return vload4(values, p) + vload4(values, p + 4)

    @cuda.jit(device=True, inline=True)
    def lane_steps(word, p, start, end):
        """Sum of the column steps (code + 1) of this lane's entries inside [start, end)."""
        w = np.int64(word)
        loc = int32(0)
        for k in range(8):
            q = p + k
            if q >= start and q < end:
                loc = int32(loc + ((w >> (b * k)) & cmask) + 1)
        return loc

    @cuda.jit(device=True, inline=True)
    def warp_scan(v, lane):
        """Inclusive prefix sum of ``v`` over the warp."""
        off = 1
        while off < WARP:
            t = cuda.shfl_up_sync(FULL_MASK, v, off)
            if lane >= off:
                v = int32(v + t)
            off *= 2
        return v

    @cuda.jit(device=True, inline=True)
    def chunk_dot(word, vals, p, start, end, col, x, s):
        """Add this lane's products to ``s``; ``col`` is the column before its first entry."""
        w = np.int64(word)
        for k in range(8):
            q = p + k
            if q >= start and q < end:
                col += ((w >> (b * k)) & cmask) + 1
                v = acc(vals[k])
                if v != 0:  # inserted zeros are skipped: 0 * Inf would give NaN
                    s += v * acc(x[col])
        return s

    @cuda.jit(device=True, inline=True)
    def full_steps(word):
        """Sum of the 8 steps of a lane whose entries all lie inside the row."""
        if b == 4:  # add nibbles pairwise into bytes, then the 4 bytes with one multiply
            w = np.uint32(word)
            t = np.uint32((w & np.uint32(0x0F0F0F0F)) + ((w >> np.uint32(4)) & np.uint32(0x0F0F0F0F)))
            return int32((np.uint32(t * np.uint32(0x01010101)) >> np.uint32(24)) + 8)
        if b == 1:
            return int32(cuda.popc(np.uint32(word)) + 8)
        w = np.int64(word)
        loc = int32(8)
        for k in range(8):
            loc = int32(loc + ((w >> (b * k)) & cmask))
        return loc

    @cuda.jit(device=True, inline=True)
    def full_dot(word, vals, col, x, s):
        """Add the 8 products of a lane whose entries all lie inside the row (no masks)."""
        w = np.int64(word)
        for k in range(8):
            col = int32(col + ((w >> (b * k)) & cmask) + 1)
            v = acc(vals[k])
            if v != 0:  # inserted zeros are skipped (and their x is never loaded)
                s += v * acc(x[np.uint32(col)])
        return s

    @cuda.jit(device=True, inline=True)
    def warp_sum(s):
        off = 16
        while off > 0:
            s += cuda.shfl_xor_sync(FULL_MASK, s, off)
            off //= 2
        return s

    return load_values, lane_steps, warp_scan, chunk_dot, warp_sum, full_steps, full_dot


@functools.lru_cache(maxsize=None)
def _spmv_kernel(dtype_name: str, delta_bits: int, cfg: MackoConfig):
    acc = acc_type(dtype_name)
    (load_values, lane_steps, warp_scan, chunk_dot, warp_sum, full_steps,
     full_dot) = _parts(dtype_name, delta_bits)
    wpb = cfg.threads_per_block // WARP
    unroll = cfg.unroll
    int32 = np.int32

    @cuda.jit(device=True, inline=True)
    def step(word, vals, p, start, end, running, lane, x, s, interior):
        """One chunk: scan the lanes' step sums, then accumulate; returns (s, running).
        ``interior`` (warp-uniform): the whole chunk lies inside the row, so no masks."""
        if interior:
            loc = full_steps(word)
        else:
            loc = lane_steps(word, p, start, end)
        incl = warp_scan(loc, lane)
        total = cuda.shfl_sync(FULL_MASK, incl, WARP - 1)
        col = int32(running + incl - loc - 1)
        if interior:
            s = full_dot(word, vals, col, x, s)
        else:
            s = chunk_dot(word, vals, p, start, end, col, x, s)
        return s, int32(running + total)

    @cuda.jit
    def macko_spmv(row_ptr, words, values, x, y):
        """Warp w of block b computes y[b * warps_per_block + w]; see the module docstring."""
        lane = cuda.threadIdx.x % WARP
        r = cuda.blockIdx.x * wpb + cuda.threadIdx.x // WARP
        if r >= y.shape[0]:
            return
        start = row_ptr[r]
        end = row_ptr[r + 1]
        last = values.shape[0] - 8            # last aligned load position (clamp)
        base = start - start % 8
        running = int32(0)
        s = acc(0)
        while base < end:
            p0 = base + lane * 8
            pa = min(p0, last)
            v0 = load_values(values, pa)
            w0 = words[pa // 8]
            if unroll >= 2:
                pb = min(p0 + CHUNK, last)
                v1 = load_values(values, pb)
                w1 = words[pb // 8]
            if unroll >= 4:
                pc = min(p0 + 2 * CHUNK, last)
                v2 = load_values(values, pc)
                w2 = words[pc // 8]
                pd = min(p0 + 3 * CHUNK, last)
                v3 = load_values(values, pd)
                w3 = words[pd // 8]
            s, running = step(w0, v0, p0, start, end, running, lane, x, s,
                              base >= start and base + CHUNK <= end)
            if unroll >= 2:
                s, running = step(w1, v1, p0 + CHUNK, start, end, running, lane, x, s,
                                  base + CHUNK >= start and base + 2 * CHUNK <= end)
            if unroll >= 4:
                s, running = step(w2, v2, p0 + 2 * CHUNK, start, end, running, lane, x, s,
                                  base + 2 * CHUNK >= start and base + 3 * CHUNK <= end)
                s, running = step(w3, v3, p0 + 3 * CHUNK, start, end, running, lane, x, s,
                                  base + 3 * CHUNK >= start and base + 4 * CHUNK <= end)
            base += unroll * CHUNK
        s = warp_sum(s)
        if lane == 0:
            y[r] = s

    return macko_spmv


@functools.lru_cache(maxsize=None)
def _spmm_kernel(dtype_name: str, delta_bits: int, cfg: MackoConfig):
    acc = acc_type(dtype_name)
    load_values, lane_steps, warp_scan = _parts(dtype_name, delta_bits)[:3]
    wpb = cfg.threads_per_block // WARP
    b = delta_bits
    cmask = (1 << b) - 1
    int32 = np.int32
    accnp = np.float64 if dtype_name == "float64" else np.float32

    @cuda.jit
    def macko_spmm(row_ptr, words, values, X, Y):
        """Warp w of block b handles row b * warps_per_block + w and output columns
        [64 * blockIdx.y, 64 * blockIdx.y + 64): lane l owns columns j0 + l and j0 + 32 + l.
        Each chunk is decoded into this warp's shared slice, then consumed entry by entry."""
        cols_sh = cuda.shared.array((wpb, CHUNK), dtype=np.int32)
        vals_sh = cuda.shared.array((wpb, CHUNK), dtype=accnp)
        lane = cuda.threadIdx.x % WARP
        wid = cuda.threadIdx.x // WARP
        r = cuda.blockIdx.x * wpb + wid
        if r >= Y.shape[0]:
            return
        k_cols = Y.shape[1]
        j0 = cuda.blockIdx.y * SPMM_COLS + lane
        j1 = j0 + WARP
        start = row_ptr[r]
        end = row_ptr[r + 1]
        last = values.shape[0] - 8
        base = start - start % 8
        running = int32(0)
        s0 = acc(0)
        s1 = acc(0)
        while base < end:
            p = base + lane * 8
            pl = min(p, last)
            vals = load_values(values, pl)
            w = np.int64(words[pl // 8])
            loc = lane_steps(words[pl // 8], p, start, end)
            incl = warp_scan(loc, lane)
            total = cuda.shfl_sync(FULL_MASK, incl, WARP - 1)
            col = running + incl - loc - 1
            for k in range(8):
                q = p + k
                if q >= start and q < end:
                    col += ((w >> (b * k)) & cmask) + 1
                    cols_sh[wid, lane * 8 + k] = col
                    vals_sh[wid, lane * 8 + k] = acc(vals[k])
                else:
                    cols_sh[wid, lane * 8 + k] = -1
            cuda.syncwarp(FULL_MASK)
            lo = max(start - base, 0)
            hi = min(end - base, CHUNK)
            for e in range(lo, hi):
                c = cols_sh[wid, e]
                v = vals_sh[wid, e]
                if v == 0:  # an inserted zero (same entry for the whole warp): skip
                    continue
                if j0 < k_cols:
                    s0 += v * acc(X[c, j0])
                if j1 < k_cols:
                    s1 += v * acc(X[c, j1])
            cuda.syncwarp(FULL_MASK)
            running = int32(running + total)
            base += CHUNK
        if j0 < k_cols:
            Y[r, j0] = s0
        if j1 < k_cols:
            Y[r, j1] = s1

    return macko_spmm


def _word_dtype(entries_per_lane: int, delta_bits: int):
    return {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}[entries_per_lane * delta_bits]


def _words(D: DeviceMacko, entries_per_lane: int):
    """The packed codes as one word per ``entries_per_lane`` entries."""
    return D.codes.view(_word_dtype(entries_per_lane, D.delta_bits))


@functools.lru_cache(maxsize=None)
def _spmv_kernel_interleaved(dtype_name: str, delta_bits: int, cfg: MackoConfig):
    acc = acc_type(dtype_name)
    warp_scan = _parts(dtype_name, delta_bits)[2]
    warp_sum = _parts(dtype_name, delta_bits)[4]
    wpb = cfg.threads_per_block // WARP
    E = cfg.entries_per_lane
    NB = 8 // E                  # blocks per chunk
    BLK = WARP * E               # entries per block
    b = delta_bits
    cmask = (1 << b) - 1
    int32 = np.int32
    accnp = np.float64 if dtype_name == "float64" else np.float32
    vload = {2: vload2, 4: vload4}.get(E)

    @cuda.jit(device=True, inline=True)
    def load_e(values, p):
        if E == 1:
            return (values[p],)
        return vload(values, p)

    @cuda.jit(device=True, inline=True)
    def steps(w, p, start, end, interior):
        """Sum of the steps of this lane's E entries of a block (masked outside the row)."""
        loc = int32(0)
        for t in range(E):
            q = p + t
            if interior or (q >= start and q < end):
                loc = int32(loc + ((w >> (b * t)) & cmask) + 1)
        return loc

    @cuda.jit(device=True, inline=True)
    def dot(w, vl, j, p, start, end, col, x, s, interior):
        for t in range(E):
            q = p + t
            if interior or (q >= start and q < end):
                col = int32(col + ((w >> (b * t)) & cmask) + 1)
                v = vl[j * E + t]
                if v != 0:  # inserted zeros are skipped
                    s += v * acc(x[np.uint32(col)])
        return s

    @cuda.jit
    def macko_spmv_interleaved(row_ptr, words, values, x, y):
        """Warp w of block b computes y[b * warps_per_block + w]. A chunk of 256 stored
        entries starting at ``base`` is NB blocks of 32E entries; lane l owns entries
        [base + j*32E + l*E, ... + E) of block j. All NB blocks are loaded first; then
        per pair of blocks one warp scan of the lanes' step sums packed as two 16-bit fields
        gives every entry's column."""
        lane = cuda.threadIdx.x % WARP
        r = cuda.blockIdx.x * wpb + cuda.threadIdx.x // WARP
        if r >= y.shape[0]:
            return
        start = row_ptr[r]
        end = row_ptr[r + 1]
        last = values.shape[0] - E
        base = start - start % E
        running = int32(0)
        s = acc(0)
        vl = cuda.local.array(8, accnp)
        wl = cuda.local.array(8, np.int64)
        while base < end:
            interior = base >= start and base + CHUNK <= end
            for j in range(NB):
                pl = min(base + j * BLK + lane * E, last)
                v = load_e(values, pl)
                for t in range(E):
                    vl[j * E + t] = acc(v[t])
                wl[j] = np.int64(words[pl // E])
            for jj in range(0, NB, 2):
                p0 = base + jj * BLK + lane * E
                lo = steps(wl[jj], p0, start, end, interior)
                hi = int32(0)
                if NB > 1:
                    hi = steps(wl[jj + 1], p0 + BLK, start, end, interior)
                packed = int32(lo | (hi << 16))
                incl = warp_scan(packed, lane)
                total = cuda.shfl_sync(FULL_MASK, incl, WARP - 1)
                excl = int32(incl - packed)
                s = dot(wl[jj], vl, jj, p0, start, end, int32(running + (excl & 0xFFFF) - 1),
                        x, s, interior)
                running = int32(running + (total & 0xFFFF))
                if NB > 1:
                    s = dot(wl[jj + 1], vl, jj + 1, p0 + BLK, start, end,
                            int32(running + (excl >> 16) - 1), x, s, interior)
                    running = int32(running + (total >> 16))
            base += CHUNK
        s = warp_sum(s)
        if lane == 0:
            y[r] = s

    return macko_spmv_interleaved


# ---------------------------------------------------------------------------------------------
# public wrappers
# ---------------------------------------------------------------------------------------------

def spmv(D, x, out=None, config: MackoConfig = MackoConfig()):
    """y = D @ x. ``D`` a :class:`MackoMatrix` or :class:`DeviceMacko`; ``x`` host or device."""
    D = to_device(D)
    n_rows, n_cols = D.shape
    ops = prepare(x, out, n_cols, (n_rows,), D.dtype)
    if n_rows:
        config.check(D.delta_bits)
        e = config.entries_per_lane
        build = _spmv_kernel if e == 8 else _spmv_kernel_interleaved
        k = build(D.dtype.name, D.delta_bits, config)
        k[blocks_for(n_rows, config.threads_per_block // WARP), config.threads_per_block](
            D.row_ptr, _words(D, e), D.values, ops.x, ops.out)
    return finish(ops, out)


def spmm(D, X, out=None, config: MackoConfig = MackoConfig()):
    """Y = D @ X for X of shape (n_cols, k); any k (tiles of 64 columns per launch column)."""
    D = to_device(D)
    n_rows, n_cols = D.shape
    k_cols = int(X.shape[1]) if getattr(X, "ndim", 0) == 2 else 0
    ops = prepare(X, out, n_cols, (n_rows, k_cols), D.dtype, name="X", ndim=2)
    if n_rows and k_cols:
        k = _spmm_kernel(D.dtype.name, D.delta_bits, config)
        grid = (blocks_for(n_rows, config.threads_per_block // WARP), blocks_for(k_cols, SPMM_COLS))
        k[grid, config.threads_per_block](D.row_ptr, _words(D, 8), D.values, ops.x, ops.out)
    return finish(ops, out)


def ptx_targets():
    """SpMV for every (dtype, delta_bits, unroll) and SpMM for every (dtype, delta_bits)."""
    out = []
    for dt in KERNEL_DTYPES:
        for b in DELTA_BITS:
            for e in (1, 2, 4):
                if e * b not in (8, 16, 32, 64):
                    continue
                word = np.dtype(_word_dtype(e, b)).name
                sig = f"void(int32[::1], {array_sig(word)}, {array_sig(dt)}, {array_sig(dt)}, {array_sig(dt)})"
                out.append(PTXTarget(f"macko.spmv[{dt},b{b},e{e}]",
                                     functools.partial(_spmv_kernel_interleaved, dt, b,
                                                       MackoConfig(entries_per_lane=e)), sig))
            word = np.dtype(_WORD[b]).name
            args = f"(int32[::1], {array_sig(word)}, {array_sig(dt)}, {array_sig(dt)}, {array_sig(dt)})"
            args2 = (f"(int32[::1], {array_sig(word)}, {array_sig(dt)}, "
                     f"{array_sig(dt, 2)}, {array_sig(dt, 2)})")
            for u in (1, 2, 4):
                wide = (r"ld\.global(\.nc)?\.v4",)
                out.append(PTXTarget(f"macko.spmv[{dt},b{b},u{u}]",
                                     functools.partial(_spmv_kernel, dt, b, MackoConfig(unroll=u)),
                                     "void" + args, wide))
            out.append(PTXTarget(f"macko.spmm[{dt},b{b}]",
                                 functools.partial(_spmm_kernel, dt, b, MackoConfig()),
                                 "void" + args2))
    return out
