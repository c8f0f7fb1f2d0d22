"""CSR SpMV/SpMM kernels (numba.cuda), paired with ``reference/csr.py``.

Variants
--------
``scalar``  one thread per row, sequential sum.
``vector``  one warp per row; with ``vec > 1`` each lane loads ``vec`` consecutive entries
            (index and value) with one vector load per array, the row's first chunk starting
            at the row start rounded down to a multiple of ``vec`` and entries outside the
            row masked; lanes reduce with ``shfl_xor_sync`` (``warp_sum``).
``spmm``    one warp per (row, 32 columns of X): every lane walks the row's entries and
            owns one column of X/Y, so reads of X and writes of Y are coalesced.

Sums are in float32 for float16/float32 values and float64 for float64; y has the
matrix's value dtype.
"""
from __future__ import annotations

import dataclasses
import functools

import numpy as np

from reference._common import OptionError, problem
from reference.csr import CSRMatrix

from .. import formats
from .._cuda import cuda, inline_device
from ._common import (
    WARP, PTXTarget, acc_type, array_sig, check_threads_per_block, checked_to_device,
    CHECK_VEC, launch_strided, launch_spmv, run_device_check, to_dev, warp_sum,
    check_config,
)
from ._intrinsics import vload2, vload4
from ._spmm import TILE_COLS, accumulator_np, launch_tiles, ptx_cases, tile_parts

__all__ = ["CSRConfig", "DeviceCSR", "to_device", "device_check", "spmv", "spmm", "ptx_targets"]

VARIANTS = ("scalar", "vector")


@dataclasses.dataclass(frozen=True)
class CSRConfig:
    """Launch settings.

    variant            "vector" (warp per row) or "scalar" (thread per row)
    spmm_tile          SpMM: columns of X per pass (kernels/_spmm.py), one of 1, 2, 4, 8,
                       16, 32; N <= spmm_tile reads the matrix once
    vec                entries per lane per vector load, 1, 2 or 4 (vector variant)
    threads_per_block  multiple of 32 in [32, 1024]
    """

    threads_per_block: int = 256
    vec: int = 4
    variant: str = "vector"
    spmm_tile: int = 16

    def __post_init__(self):
        check_threads_per_block("CSRConfig", self.threads_per_block)
        if self.vec not in (1, 2, 4):
            raise OptionError(problem("CSRConfig.vec", "1, 2 or 4", self.vec))
        if self.spmm_tile not in TILE_COLS:
            raise OptionError(problem("CSRConfig.spmm_tile", f"one of {TILE_COLS}", self.spmm_tile))
        if self.variant not in VARIANTS:
            raise OptionError(problem("CSRConfig.variant", f"one of {VARIANTS}", repr(self.variant)))


@dataclasses.dataclass(frozen=True, eq=False)
class DeviceCSR:
    """A :class:`CSRMatrix` whose arrays live on the device."""

    indptr: object
    indices: object
    values: object
    shape: tuple
    dtype: np.dtype
    nbytes: int


PAD = 4  # device copies of indices/values hold a multiple of PAD entries (for vector loads)


def to_device(M: CSRMatrix, check: str = "auto") -> DeviceCSR:
    """``M`` on the device, checked first by ``kernels._common.checked_to_device`` (every
    column index in range; ``check``: "auto", "host" or "device")."""
    return checked_to_device(M, CSRMatrix, DeviceCSR, _upload, device_check, check)


def _upload(M: CSRMatrix) -> DeviceCSR:
    """indices/values zero-padded to a multiple of :data:`PAD` entries so the vector
    kernel's last chunk stays in bounds (padding entries are never summed). ``nbytes`` stays
    the format's own size."""
    pad = -M.nnz % PAD
    idx = np.concatenate([M.indices, np.zeros(pad, M.indices.dtype)])
    val = np.concatenate([M.values, np.zeros(pad, M.values.dtype)])
    return DeviceCSR(indptr=to_dev(M.indptr), indices=to_dev(idx), values=to_dev(val),
                     shape=M.shape, dtype=M.dtype, nbytes=M.nbytes)


# ---------------------------------------------------------------------------------------------
# the device check: every column index in [0, cols)
# ---------------------------------------------------------------------------------------------

CHECK_FIELDS = ("indices",)


@functools.lru_cache(maxsize=None)
def _check_kernel():
    vec = CHECK_VEC

    @cuda.jit
    def csr_check(indices, n_cols, flags):
        """Grid-stride loop: thread t reads entries [vec*t, vec*t + vec), then the same a grid
        further on, with one vector load each (the device copy holds a multiple of vec
        entries, zero padded: in range whenever the matrix has a column), and flags
        ``indices`` once if one of them is outside [0, n_cols)."""
        n = indices.shape[0]
        p = cuda.grid(1) * vec
        step = cuda.gridsize(1) * vec
        bad = False
        while p + vec <= n:
            cols = vload4(indices, p)
            for k in range(vec):
                if cols[k] < 0 or cols[k] >= n_cols:
                    bad = True
            p += step
        if bad:
            flags[0] = 1

    return csr_check


def launch_check(D: DeviceCSR, flags):
    """Launch the check kernel (no wait): a grid-stride loop over the stored indices."""
    launch_strided(_check_kernel(), D.indices.shape[0], D.indices, D.shape[1], flags)


def device_check(D: DeviceCSR) -> list[str]:
    """:data:`CHECK_FIELDS` with a column out of range (empty: none), checked on the device."""
    return run_device_check(CHECK_FIELDS, launch_check, D)


# ---------------------------------------------------------------------------------------------
# kernel factories, cached on (dtype, config)
# ---------------------------------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def _scalar_kernel(dtype_name: str, cfg: CSRConfig):
    acc = acc_type(dtype_name)

    @cuda.jit
    def csr_scalar(indptr, indices, values, x, y):
        """Thread ``r`` computes y[r] alone."""
        r = cuda.grid(1)
        if r < y.shape[0]:
            s = acc(0)
            for p in range(indptr[r], indptr[r + 1]):
                s += acc(values[p]) * acc(x[indices[p]])
            y[r] = s

    return csr_scalar


@functools.lru_cache(maxsize=None)
def _vector_kernel(dtype_name: str, cfg: CSRConfig):
    acc = acc_type(dtype_name)
    vec = cfg.vec
    warps_per_block = cfg.threads_per_block // WARP
    load = {1: None, 2: vload2, 4: vload4}[vec]

    if vec == 1:
        @cuda.jit
        def csr_vector1(indptr, indices, values, x, y):
            """Warp ``w`` computes y[w]; lane l takes entries l, l+32, ... of the row."""
            lane = cuda.threadIdx.x % WARP
            r = cuda.blockIdx.x * warps_per_block + cuda.threadIdx.x // WARP
            if r >= y.shape[0]:
                return
            s = acc(0)
            for p in range(indptr[r] + lane, indptr[r + 1], WARP):
                s += acc(values[p]) * acc(x[indices[p]])
            s = warp_sum(s)
            if lane == 0:
                y[r] = s

        return csr_vector1

    @cuda.jit
    def csr_vector(indptr, indices, values, x, y):
        """Warp ``w`` computes y[w]. The row is read in chunks of 32*vec entries starting at
        the row start rounded down to a multiple of vec; lane l loads entries
        [base + l*vec, base + l*vec + vec) with one vector load per array and masks those
        outside [start, end). The arrays hold a multiple of 4 entries (to_device pads)."""
        lane = cuda.threadIdx.x % WARP
        r = cuda.blockIdx.x * warps_per_block + cuda.threadIdx.x // WARP
        if r >= y.shape[0]:
            return
        start = indptr[r]
        end = indptr[r + 1]
        s = acc(0)
        base = start - start % vec
        while base < end:
            p = base + lane * vec
            if p < end:
                cols = load(indices, p)
                vals = load(values, p)
                for k in range(vec):
                    q = p + k
                    if q >= start and q < end:
                        s += acc(vals[k]) * acc(x[cols[k]])
            base += WARP * vec
        s = warp_sum(s)
        if lane == 0:
            y[r] = s

    return csr_vector


@functools.lru_cache(maxsize=None)
def _spmm_kernel(dtype_name: str, cfg: CSRConfig, ct: int, g: int, out_t: bool = False):
    T = tile_parts(dtype_name, ct, g, out_t=out_t)
    zero, fma_row, store = T["zero"], T["fma_row"], T["store"]
    accnp = accumulator_np(dtype_name)
    acc = acc_type(dtype_name)
    warps_per_block = cfg.threads_per_block // WARP
    step = WARP * PAD

    @inline_device
    def masked(Xf, q, start, end, c, v, j0, nvalid, n, accs):
        if q >= start and q < end:
            fma_row(Xf, np.int64(c) * n + j0, nvalid, acc(v), accs)

    @cuda.jit
    def csr_spmm(indptr, indices, values, Xf, Y, n):
        """Warp w of block b: row b*warps+w, columns [ct*blockIdx.y, ct*blockIdx.y + ct).
        The row is read in steps of 32 x 4 entries from its start rounded down to a multiple
        of 4: lane l loads entries [base + 4l, base + 4l + 4) (one vector load per array) and
        multiplies each by its row of the X tile (ct accumulators per lane, summed over the
        warp at the end). Steps wholly inside the row take no masks, so the 4 gathers are in
        flight together; the first and last steps mask entries outside the row.
        ``out_t``: Y is the product's transpose."""
        lane = cuda.threadIdx.x % WARP
        r = cuda.blockIdx.x * warps_per_block + cuda.threadIdx.x // WARP
        if r >= indptr.shape[0] - 1:
            return
        j0 = cuda.blockIdx.y * ct
        nvalid = min(ct, n - j0)
        accs = cuda.local.array(ct, accnp)
        zero(accs)
        start = indptr[r]
        end = indptr[r + 1]
        base = start - start % PAD
        while base < end:
            p = base + lane * PAD
            if base >= start and base + step <= end:           # warp-uniform
                c0, c1, c2, c3 = vload4(indices, p)
                v0, v1, v2, v3 = vload4(values, p)
                # written out, not a loop over k: the compiler does not unroll a loop whose
                # body holds a tile of FMAs, and cols[k] would then be a branch tree
                fma_row(Xf, np.int64(c0) * n + j0, nvalid, acc(v0), accs)
                fma_row(Xf, np.int64(c1) * n + j0, nvalid, acc(v1), accs)
                fma_row(Xf, np.int64(c2) * n + j0, nvalid, acc(v2), accs)
                fma_row(Xf, np.int64(c3) * n + j0, nvalid, acc(v3), accs)
            elif p < end:
                c0, c1, c2, c3 = vload4(indices, p)
                v0, v1, v2, v3 = vload4(values, p)
                masked(Xf, p, start, end, c0, v0, j0, nvalid, n, accs)
                masked(Xf, p + 1, start, end, c1, v1, j0, nvalid, n, accs)
                masked(Xf, p + 2, start, end, c2, v2, j0, nvalid, n, accs)
                masked(Xf, p + 3, start, end, c3, v3, j0, nvalid, n, accs)
            base += step
        store(Y, r, j0, nvalid, accs, lane)

    return csr_spmm


# ---------------------------------------------------------------------------------------------
# public wrappers
# ---------------------------------------------------------------------------------------------

def spmv(D, x, out=None, config: CSRConfig = CSRConfig()):
    """y = D @ x. ``D`` a :class:`CSRMatrix` or :class:`DeviceCSR`; ``x`` host or device."""
    check_config(config, CSRConfig)
    D = to_device(D)
    scalar = config.variant == "scalar"
    factory = _scalar_kernel if scalar else _vector_kernel
    return launch_spmv(D, x, out, lambda: factory(D.dtype.name, config), (D.indptr, D.indices, D.values),
                       config.threads_per_block, config.threads_per_block // (1 if scalar else WARP))


def spmm(D, X, out=None, config: CSRConfig = CSRConfig(), out_t: bool = False):
    """Y = D @ X for X of shape (n_cols, k); ``out_t``: return Y's transpose, (k, n_rows),
    written by the kernel (kernels/_spmm.py)."""
    check_config(config, CSRConfig)
    D = to_device(D)
    return launch_tiles(D, X, out, lambda ct, g, t: _spmm_kernel(D.dtype.name, config, ct, g, t),
                        (D.indptr, D.indices, D.values), config.threads_per_block,
                        config.threads_per_block // WARP, config.spmm_tile,
                        spmv=(lambda: _vector_kernel(D.dtype.name, config), config.threads_per_block,
                              config.threads_per_block // WARP), out_t=out_t)


def ptx_targets():
    """Every kernel of this module for every value dtype and index type, and the check."""
    out = []
    for dt in formats.get("csr").kernel_dtypes:
        for it in ("int32", "int64"):
            args = f"({array_sig(it)}, {array_sig(it)}, {array_sig(dt)}, {array_sig(dt)}, {array_sig(dt)})"
            args2 = (f"({array_sig(it)}, {array_sig(it)}, {array_sig(dt)}, "
                     f"{array_sig(dt)}, {array_sig(dt, 2)}, int64)")
            cfg = CSRConfig()
            out.append(PTXTarget(f"csr.scalar[{dt},{it}]", functools.partial(_scalar_kernel, dt, cfg),
                                 "void" + args))
            for vec in (1, 4):
                c = CSRConfig(vec=vec)
                wide = (r"ld\.global(\.nc)?\.v4",) if vec == 4 and dt == "float32" and it == "int32" else ()
                out.append(PTXTarget(f"csr.vector{vec}[{dt},{it}]",
                                     functools.partial(_vector_kernel, dt, c), "void" + args, wide))
            for ct, g in ptx_cases(dt):
                out.append(PTXTarget(f"csr.spmm[{dt},{it},tile{ct},g{g}]",
                                     functools.partial(_spmm_kernel, dt, cfg, ct, g), "void" + args2,
                                     (r"ld\.global(\.nc)?\.v[24]",) if g > 1 and it == "int32" else ()))
            if it == "int32":
                out.append(PTXTarget(f"csr.spmm[{dt},{it},tile8,out_t]",
                                     functools.partial(_spmm_kernel, dt, cfg, 8,
                                                       16 // np.dtype(dt).itemsize, True),
                                     "void" + args2))
    for it in ("int32", "int64"):
        out.append(PTXTarget(f"csr.check[{it}]", _check_kernel,
                             f"void({array_sig(it)}, int64, {array_sig('int32')})"))
    return out
