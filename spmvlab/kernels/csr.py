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

from reference.csr import CSRMatrix

from .._cuda import cuda
from ._common import (
    WARP, PTXTarget, acc_type, array_sig, blocks_for, check_threads_per_block, finish, prepare,
    prepare_spmm, to_dev, warp_sum,
)
from ._intrinsics import vload2, vload4

__all__ = ["CSRConfig", "DeviceCSR", "to_device", "spmv", "spmm", "ptx_targets"]

VARIANTS = ("scalar", "vector")


@dataclasses.dataclass(frozen=True)
class CSRConfig:
    """Launch settings. ``vec`` in {1, 2, 4}: entries per lane per vector load (vector)."""

    threads_per_block: int = 256
    vec: int = 4

    def __post_init__(self):
        from reference._common import OptionError, problem
        check_threads_per_block("CSRConfig", self.threads_per_block)
        if self.vec not in (1, 2, 4):
            raise OptionError(problem("CSRConfig.vec", "1, 2 or 4", self.vec))


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


def to_device(M: CSRMatrix) -> DeviceCSR:
    """Upload ``M``; indices/values are zero-padded to a multiple of :data:`PAD` entries so
    the vector kernel's last chunk stays in bounds (padding entries are never summed).
    ``nbytes`` stays the format's own size."""
    if isinstance(M, DeviceCSR):
        return M
    M.validate()
    pad = -M.nnz % PAD
    idx = np.concatenate([M.indices, np.zeros(pad, M.indices.dtype)])
    val = np.concatenate([M.values, np.zeros(pad, M.values.dtype)])
    return DeviceCSR(indptr=to_dev(M.indptr), indices=to_dev(idx), values=to_dev(val),
                     shape=M.shape, dtype=M.dtype, nbytes=M.nbytes)


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
def _spmm_kernel(dtype_name: str, cfg: CSRConfig):
    acc = acc_type(dtype_name)
    warps_per_block = cfg.threads_per_block // WARP

    @cuda.jit
    def csr_spmm(indptr, indices, values, X, Y):
        """Block b, warp w: row b*warps+w; grid.y picks the 32 columns of X lane l owns."""
        lane = cuda.threadIdx.x % WARP
        r = cuda.blockIdx.x * warps_per_block + cuda.threadIdx.x // WARP
        j = cuda.blockIdx.y * WARP + lane
        if r >= Y.shape[0] or j >= Y.shape[1]:
            return
        s = acc(0)
        for p in range(indptr[r], indptr[r + 1]):
            s += acc(values[p]) * acc(X[indices[p], j])
        Y[r, j] = s

    return csr_spmm


# ---------------------------------------------------------------------------------------------
# public wrappers
# ---------------------------------------------------------------------------------------------

def spmv(D, x, out=None, variant: str = "vector", config: CSRConfig = CSRConfig()):
    """y = D @ x. ``D`` a :class:`CSRMatrix` or :class:`DeviceCSR`; ``x`` host or device."""
    from reference._common import OptionError, problem
    D = to_device(D)
    n_rows, n_cols = D.shape
    ops = prepare(x, out, n_cols, (n_rows,), D.dtype)
    if n_rows:
        if variant == "scalar":
            k = _scalar_kernel(D.dtype.name, config)
            k[blocks_for(n_rows, config.threads_per_block), config.threads_per_block](
                D.indptr, D.indices, D.values, ops.x, ops.out)
        elif variant == "vector":
            k = _vector_kernel(D.dtype.name, config)
            k[blocks_for(n_rows, config.threads_per_block // WARP), config.threads_per_block](
                D.indptr, D.indices, D.values, ops.x, ops.out)
        else:
            raise OptionError(problem("variant", f"one of {VARIANTS}", repr(variant)))
    return finish(ops, out)


def spmm(D, X, out=None, config: CSRConfig = CSRConfig()):
    """Y = D @ X for X of shape (n_cols, k)."""
    D = to_device(D)
    n_rows = D.shape[0]
    ops, k_cols = prepare_spmm(D, X, out)
    if n_rows and k_cols:
        k = _spmm_kernel(D.dtype.name, config)
        grid = (blocks_for(n_rows, config.threads_per_block // WARP), blocks_for(k_cols, WARP))
        k[grid, config.threads_per_block](D.indptr, D.indices, D.values, ops.x, ops.out)
    return finish(ops, out)


def ptx_targets():
    """Every kernel of this module for every value dtype and index type."""
    out = []
    for dt in ("float16", "float32", "float64"):
        for it in ("int32", "int64"):
            args = f"({array_sig(it)}, {array_sig(it)}, {array_sig(dt)}, {array_sig(dt)}, {array_sig(dt)})"
            args2 = (f"({array_sig(it)}, {array_sig(it)}, {array_sig(dt)}, "
                     f"{array_sig(dt, 2)}, {array_sig(dt, 2)})")
            cfg = CSRConfig()
            out.append(PTXTarget(f"csr.scalar[{dt},{it}]", functools.partial(_scalar_kernel, dt, cfg),
                                 "void" + args))
            for vec in (1, 4):
                c = CSRConfig(vec=vec)
                wide = (r"ld\.global(\.nc)?\.v4",) if vec == 4 and dt == "float32" and it == "int32" else ()
                out.append(PTXTarget(f"csr.vector{vec}[{dt},{it}]",
                                     functools.partial(_vector_kernel, dt, c), "void" + args, wide))
            out.append(PTXTarget(f"csr.spmm[{dt},{it}]", functools.partial(_spmm_kernel, dt, cfg),
                                 "void" + args2))
    return out
