"""Shared plumbing of the kernel wrappers: host/device arrays, launch geometry, results,
and the list of (kernel, signature) pairs the PTX compile check walks.
"""
from __future__ import annotations

import dataclasses
from typing import Callable, Iterable

import numpy as np

from reference._common import (
    DTypeError, IndexOverflowError, VALUE_DTYPES, accumulator_dtype, check_operand, check_out,
    problem,
)

from .._cuda import SIMULATOR, cuda

WARP = 32
FULL_MASK = 0xFFFFFFFF


def is_device_array(a) -> bool:
    """A CUDA array (numba, CuPy, torch, ...) or, on the simulator, a simulated one."""
    if isinstance(a, np.ndarray):
        return False
    if SIMULATOR:
        from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray
        return isinstance(a, FakeCUDAArray)
    return cuda.is_cuda_array(a)


def to_dev(a):
    """A device view of ``a``: device arrays pass through, host arrays are copied."""
    if isinstance(a, np.ndarray):
        return cuda.to_device(np.ascontiguousarray(a))
    if is_device_array(a):
        return a if SIMULATOR else cuda.as_cuda_array(a)
    raise DTypeError(problem("array", "a NumPy or CUDA array", type(a).__name__))


def numba_type(dtype):
    from numba import from_dtype
    return from_dtype(np.dtype(dtype))


def acc_type(dtype):
    """The numba scalar type sums are accumulated in for values of ``dtype``."""
    return numba_type(accumulator_dtype(dtype))


@dataclasses.dataclass
class Operands:
    """Checked operands of one launch: device views, and whether to return host arrays."""

    x: object
    out: object
    host: bool


def prepare(x, out, n: int, out_shape, dtype, name="x", ndim=1) -> Operands:
    """Check ``x``/``out`` and move them to the device.

    ``out`` (host or device) is written in place; when ``x`` is a host array the result is
    returned as a host array, otherwise as a device array.
    """
    check_operand(x, n, dtype, name=name, ndim=ndim, allow_device=True)
    if out is not None:
        check_out(out, out_shape, dtype)
    host = isinstance(x, np.ndarray)
    d_out = to_dev(out) if out is not None else cuda.device_array(out_shape, dtype=np.dtype(dtype))
    return Operands(x=to_dev(x), out=d_out, host=host)


def prepare_spmm(D, X, out) -> tuple[Operands, int]:
    """``prepare`` for Y = D @ X (X of shape (n_cols, k)); also returns k."""
    n_rows, n_cols = D.shape
    k_cols = int(X.shape[1]) if getattr(X, "ndim", 0) == 2 else 0
    return prepare(X, out, n_cols, (n_rows, k_cols), D.dtype, name="X", ndim=2), k_cols


def finish(ops: Operands, out):
    """Return the result in the caller's space, writing a host ``out`` in place."""
    if isinstance(out, np.ndarray):
        ops.out.copy_to_host(out)
        return out
    if out is not None:
        return out
    return ops.out.copy_to_host() if ops.host else ops.out


def check_threads_per_block(owner: str, value: int) -> None:
    """The launch-size rule every kernel config shares: whole warps, at most 1024 threads."""
    from reference._common import OptionError
    if not isinstance(value, int) or value % WARP or not WARP <= value <= 1024:
        raise OptionError(problem(f"{owner}.threads_per_block", "a multiple of 32 in [32, 1024]",
                                  value))


@cuda.jit(device=True, inline=True)
def warp_sum(s):
    """Sum of ``s`` over the 32 lanes of a full warp, returned in every lane (butterfly)."""
    off = 16
    while off > 0:
        s += cuda.shfl_xor_sync(FULL_MASK, s, off)
        off //= 2
    return s


def jit_options(max_registers=None) -> dict:
    """Keyword arguments for ``cuda.jit``; the simulator takes no register cap."""
    return {} if SIMULATOR or max_registers is None else {"max_registers": int(max_registers)}


def blocks_for(n_items: int, per_block: int) -> int:
    return max(1, -(-int(n_items) // int(per_block)))


def check_int32(field: str, value: int):
    if value > np.iinfo(np.int32).max:
        raise IndexOverflowError(problem(field, "at most 2**31 - 1 (this kernel indexes with int32)",
                                         value, "use a kernel built for int64 indices"))


def check_value_dtype(dtype, supported: Iterable = VALUE_DTYPES, what: str = "kernel"):
    dt = np.dtype(dtype)
    if dt not in tuple(np.dtype(s) for s in supported):
        names = ", ".join(np.dtype(s).name for s in supported)
        raise DTypeError(problem("values.dtype", f"one of {names} for this {what}", dt))
    return dt


# ---------------------------------------------------------------------------------------------
# PTX compile targets
# ---------------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class PTXTarget:
    """One kernel specialisation the compile check builds for compute capability 9.0."""

    label: str
    build: Callable[[], object]          # returns the cuda.jit dispatcher
    signature: str                       # numba signature string
    expects: tuple = ()                  # regular expressions the PTX must contain


def array_sig(dtype, ndim=1) -> str:
    """Numba signature text of a C-contiguous array, e.g. ``float32[:, ::1]``."""
    dims = ", ".join([":"] * (ndim - 1) + ["::1"])
    return f"{numba_type(dtype).name}[{dims}]"
