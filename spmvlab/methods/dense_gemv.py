"""Dense GEMV kernel (numba.cuda): the fallback dense baseline when CuPy/cuBLAS is missing.

``gemv``    one warp per row. W is stored row-major as one flat array; lane l of the warp
            for row r reads columns [c, c + vec) for c = l*vec, l*vec + 32*vec, ... of row r
            and the same columns of x, with one vector load per array (``vload2/4/8``: 16
            bytes per load, i.e. 8 float16, 4 float32 or 2 float64 values) when the column
            count is a multiple of ``vec``, otherwise one element at a time (``vec = 1``:
            columns l, l + 32, ...). Lanes reduce with ``warp_sum`` (butterfly); lane 0 writes y[r].

Sums are in float32 for float16/float32 values and float64 for float64; y has W's dtype.
"""
from __future__ import annotations

import dataclasses
import functools

import numpy as np

from reference._common import VALUE_DTYPES, DTypeError, LayoutError, OptionError, ShapeError, problem

from .._cuda import cuda
from ..kernels._common import (
    WARP, PTXTarget, acc_type, array_sig, check_threads_per_block, check_value_dtype,
    is_device_array, launch_spmv, to_dev, warp_sum,
)
from ..kernels._intrinsics import vload1, vload2, vload4, vload8

__all__ = ["DenseConfig", "DeviceDense", "to_device", "gemv", "vector_width", "ptx_targets"]

VEC_BYTES = 16


@dataclasses.dataclass(frozen=True)
class DenseConfig:
    """Launch settings. ``vec``: values per lane per vector load; 0 = automatic (16 bytes per
    load when the column count allows it, else 1); 1, 2, 4 or 8 force a width (a width
    the column count is not a multiple of falls back to 1)."""

    threads_per_block: int = 256
    vec: int = 0

    def __post_init__(self):
        check_threads_per_block("DenseConfig", self.threads_per_block)
        if self.vec not in (0, 1, 2, 4, 8):
            raise OptionError(problem("DenseConfig.vec", "0 (automatic), 1, 2, 4 or 8", self.vec))


@dataclasses.dataclass(frozen=True, eq=False)
class DeviceDense:
    """A row-major dense matrix on the device, stored as one flat array of rows*cols values."""

    values: object
    shape: tuple
    dtype: np.dtype
    nbytes: int


def to_device(W) -> DeviceDense:
    """Upload a 2-D C-contiguous NumPy array (or wrap a 2-D contiguous device array)."""
    if isinstance(W, DeviceDense):
        return W
    shape = tuple(int(s) for s in getattr(W, "shape", ()))
    if len(shape) != 2:
        raise ShapeError(problem("W", "a 2-D array", f"shape {shape}"))
    if not hasattr(W, "dtype"):
        raise DTypeError(problem("W", "a NumPy or CUDA array", type(W).__name__))
    dt = check_value_dtype(W.dtype, what="dense GEMV kernel")
    if isinstance(W, np.ndarray):
        flat = to_dev(np.ascontiguousarray(W).reshape(-1))
    elif is_device_array(W):
        d = cuda.as_cuda_array(W)
        if not d.is_c_contiguous():
            raise LayoutError(problem("W", "a C-contiguous device array", "a non-contiguous view"))
        flat = d.reshape(shape[0] * shape[1])
    else:
        raise DTypeError(problem("W", "a NumPy or CUDA array", type(W).__name__))
    return DeviceDense(values=flat, shape=shape, dtype=dt, nbytes=shape[0] * shape[1] * dt.itemsize)


def vector_width(dtype, n_cols: int, config: "DenseConfig" = None) -> int:
    """Values per lane per load the kernel will use for ``n_cols`` columns of ``dtype``."""
    config = config or DenseConfig()
    itemsize = np.dtype(dtype).itemsize
    vec = config.vec or VEC_BYTES // itemsize
    return vec if vec > 1 and n_cols % vec == 0 else 1


# ---------------------------------------------------------------------------------------------
# kernel factory, cached on (dtype, config, vector width)
# ---------------------------------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def _gemv_kernel(dtype_name: str, cfg: DenseConfig, vec: int):
    acc = acc_type(dtype_name)
    warps_per_block = cfg.threads_per_block // WARP
    load = {1: vload1, 2: vload2, 4: vload4, 8: vload8}[vec]

    @cuda.jit
    def dense_gemv(W, x, y):
        """Warp ``w`` computes y[w]; lane l loads columns [c, c+vec) of row w and of x for
        c = l*vec, l*vec + 32*vec, ... with one (vector) load each (cols % vec == 0, so
        every load is aligned and inside the row; vec = 1: columns l, l + 32, ...)."""
        lane = cuda.threadIdx.x % WARP
        r = cuda.blockIdx.x * warps_per_block + cuda.threadIdx.x // WARP
        if r >= y.shape[0]:
            return
        n = x.shape[0]
        base = r * n
        s = acc(0)
        for c in range(lane * vec, n, WARP * vec):
            w = load(W, base + c)
            xv = load(x, c)
            for k in range(vec):
                s += acc(w[k]) * acc(xv[k])
        s = warp_sum(s)
        if lane == 0:
            y[r] = s

    return dense_gemv


# ---------------------------------------------------------------------------------------------
# public wrapper
# ---------------------------------------------------------------------------------------------

def gemv(D, x, out=None, config: DenseConfig = DenseConfig()):
    """y = W @ x. ``D`` a 2-D NumPy array or :class:`DeviceDense`; ``x`` host or device.

    A host ``x`` gives a host result; a device ``x`` a device result; ``out`` (host or
    device) is written in place."""
    D = to_device(D)
    vec = vector_width(D.dtype, D.shape[1], config)
    return launch_spmv(D, x, out, lambda: _gemv_kernel(D.dtype.name, config, vec), (D.values,),
                       config.threads_per_block, config.threads_per_block // WARP)


@dataclasses.dataclass(frozen=True)
class _Target(PTXTarget):
    expects: tuple = ()


def ptx_targets():
    """The dense GEMV kernel for every value dtype, scalar and vector-load versions."""
    out = []
    for dt in (d.name for d in VALUE_DTYPES):
        sig = f"void({array_sig(dt)}, {array_sig(dt)}, {array_sig(dt)})"
        cfg = DenseConfig()
        vec = VEC_BYTES // np.dtype(dt).itemsize
        out.append(_Target(f"dense.gemv1[{dt}]", functools.partial(_gemv_kernel, dt, cfg, 1), sig))
        out.append(_Target(f"dense.gemv{vec}[{dt}]", functools.partial(_gemv_kernel, dt, cfg, vec), sig,
                           expects=(r"ld\.global(\.nc)?\.v\d",)))
    return out
