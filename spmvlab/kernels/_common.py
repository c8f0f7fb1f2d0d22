"""Shared plumbing of the kernel wrappers: the checked path from an encoded matrix to the
device (:func:`checked_to_device`), host/device arrays, launch geometry, results, and the
list of (kernel, signature) pairs the PTX compile check walks.
"""
from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import functools
from typing import Callable, Iterable

import numpy as np

from reference._common import (
    DTypeError, FormatError, IndexOverflowError, OptionError, VALUE_DTYPES, accumulator_dtype,
    check_operand, check_out, describe, problem, require_encoded, value_dtype,
)

from .._cuda import SIMULATOR, cuda, inline_device

WARP = 32
FULL_MASK = 0xFFFFFFFF


#: where the kernel wrappers launch and allocate: (stream, allocator of temporaries or None)
_LAUNCH = contextvars.ContextVar("spmvlab_launch", default=(0, None))


@contextlib.contextmanager
def launching(stream=0, alloc: Callable | None = None):
    """Inside the block, every kernel the wrappers launch goes to ``stream`` (a numba stream,
    e.g. ``cuda.external_stream(torch.cuda.current_stream().cuda_stream)``; 0: the default
    stream) and every temporary array they need comes from ``alloc(shape, dtype)`` (a device
    array; None: ``cuda.device_array``), so a caller such as ``spmvlab.torch`` keeps its
    work on its own stream and in its own allocator (and CUDA-graph capture sees no
    allocation of numba's)."""
    token = _LAUNCH.set((stream, alloc))
    try:
        yield
    finally:
        _LAUNCH.reset(token)


def launch_stream():
    """The stream of :func:`launching` (0 outside it)."""
    return _LAUNCH.get()[0]


def scratch(shape, dtype):
    """A temporary device array: from :func:`launching`'s allocator, else numba's."""
    alloc = _LAUNCH.get()[1]
    if alloc is None:
        return cuda.device_array(shape, dtype=np.dtype(dtype))
    return alloc(shape, np.dtype(dtype))


def is_device_array(a) -> bool:
    """A CUDA array (numba, CuPy, torch, ...) or, on the simulator, a simulated one."""
    if isinstance(a, np.ndarray):
        return False
    if SIMULATOR:
        from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray
        return isinstance(a, FakeCUDAArray)
    return cuda.is_cuda_array(a)


def to_dev(a):
    """A device view of ``a``: numba's device arrays pass through, other CUDA arrays (CuPy,
    torch) are viewed, host arrays are copied. (Viewing a numba array again cost a context
    lookup per operand of every launch, a visible share of an eager layer's host time.)"""
    if isinstance(a, np.ndarray):
        return cuda.to_device(np.ascontiguousarray(a))
    if getattr(a, "__cuda_ndarray__", False):
        return a
    if is_device_array(a):
        return a if SIMULATOR else cuda.as_cuda_array(a)
    raise DTypeError(problem("array", "a NumPy or CUDA array", type(a).__name__))


# ---------------------------------------------------------------------------------------------
# from an encoded matrix to the device: the one checked path
# ---------------------------------------------------------------------------------------------

#: ``to_device(check="auto")`` checks every entry on the host (NumPy) for matrices with fewer
#: stored entries (``values.size``) than this, and with the format's check kernel on the
#: device from here on (always on the host in the simulator). The host check is a NumPy
#: pass over the entries (MACKO's also decodes them), so its cost grows with the entries;
#: this size is about where it stops being cheap next to one launch of the check kernel
#: (``tools/time_device_check.py`` times both; docs/performance.md, "Device checks").
DEVICE_CHECK_MIN_ENTRIES = 1 << 20
CHECK_SITES = ("auto", "host", "device")
CHECK_THREADS = 128       # threads per block of the check kernels


def checked_to_device(M, matrix_cls: type, device_cls: type, upload: Callable, device_check: Callable,
                      check: str = "auto", host_entries: Callable | None = None):
    """The body of every kernel module's ``to_device``; returns the device matrix.

    1. A ``device_cls`` passes through (``to_device`` made it, and checked it then); anything
       but a ``matrix_cls`` (a scipy matrix, a dense array, another format's matrix) raises
       :class:`~reference._common.NotEncodedError` saying how to encode it.
    2. The cheap checks and the checksum, on the host (``M.validate()``).
    3. ``upload(M)`` makes the device copy (and runs the kernels' own limits: dtype, int32).
    4. Every entry is checked for what the kernels need to stay in bounds: the predicates of
       ``M.validate(expensive=True, canonical=False)`` (every index in range; COO: rows in
       order). On the host with ``check="host"``, or with "auto" below
       :data:`DEVICE_CHECK_MIN_ENTRIES` stored entries or in the simulator; else
       ``device_check(D)`` runs the format's check kernel and returns the fields it flagged.
       A flag re-runs the host check, whose error names the field and the bad value.

    ``host_entries(M)``: the work of the host check in entries of a NumPy check, for formats
    whose ``values`` are not one entry per stored element or whose host check is slower per
    element (CSR-dtANS: ``values`` is the table, and its host check is the reference's
    Python decoder, two symbols per nonzero decoded in Python).
    Default ``M.values.size``.
    """
    if isinstance(M, device_cls):
        return M
    require_encoded(M, matrix_cls, (device_cls,))
    if check not in CHECK_SITES:
        raise OptionError(problem("check", f"one of {CHECK_SITES}", repr(check)))
    M.validate()
    D = upload(M)
    entries = M.values.size if host_entries is None else int(host_entries(M))
    host_is_cheaper = SIMULATOR or entries < DEVICE_CHECK_MIN_ENTRIES
    if check == "host" or (check == "auto" and host_is_cheaper):
        M.validate(expensive=True, canonical=False, checksum=False)
        return D
    flagged = device_check(D)
    if flagged:
        M.validate(expensive=True, canonical=False, checksum=False)
        raise FormatError(problem(
            f"{type(M).__name__}.{flagged[0]}", "entries the kernels read in bounds",
            "entries the device check rejected although the host check accepts them",
            "report it: the device check and validate(expensive=True) disagree"))
    return D


def run_device_check(fields: tuple, launch: Callable, D) -> list[str]:
    """``launch(D, flags)`` launches a format's check kernel, which sets ``flags[i]`` when
    ``fields[i]`` has an entry out of bounds; returns the flagged fields (waits for it)."""
    flags = cuda.to_device(np.zeros(len(fields), np.int32))
    launch(D, flags)
    return [f for f, v in zip(fields, flags.copy_to_host()) if v]


#: entries each thread of a strided check kernel reads per step (one 16-byte load of int32)
CHECK_VEC = 4


def launch_strided(kernel, n: int, *args):
    """Launch ``kernel(*args)`` for ``n`` entries read :data:`CHECK_VEC` at a time in a
    grid-stride loop: enough blocks to fill the device (16 per SM) and no more, so every
    thread keeps a vector load in flight (one thread per 4-byte entry issued too few bytes
    per load to keep the memory system busy). Nothing is launched for ``n == 0``."""
    if n:
        try:
            sms = int(cuda.get_current_device().MULTIPROCESSOR_COUNT)
        except Exception:  # the simulator
            sms = 1
        blocks = min(blocks_for(-(-n // CHECK_VEC), CHECK_THREADS), 16 * sms)
        kernel[blocks, CHECK_THREADS](*args)


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
    d_out = to_dev(out) if out is not None else scratch(out_shape, dtype)
    return Operands(x=to_dev(x), out=d_out, host=host)


def prepare_spmm(D, X, out, out_t: bool = False) -> tuple[Operands, int]:
    """``prepare`` for Y = D @ X (X of shape (n_cols, k)); also returns k. ``out_t``: the
    result is Y's transpose, of shape (k, n_rows)."""
    n_rows, n_cols = D.shape
    k_cols = int(X.shape[1]) if getattr(X, "ndim", 0) == 2 else 0
    shape = (k_cols, n_rows) if out_t else (n_rows, k_cols)
    return prepare(X, out, n_cols, shape, D.dtype, name="X", ndim=2), k_cols


def finish(ops: Operands, out):
    """Return the result in the caller's space, writing a host ``out`` in place."""
    if isinstance(out, np.ndarray):
        ops.out.copy_to_host(out)
        return out
    if out is not None:
        return out
    return ops.out.copy_to_host() if ops.host else ops.out


def check_config(config, cls: type):
    """``config`` if it is a ``cls`` (the kernel module's own frozen config), else
    :class:`OptionError`: another format's config would give an AttributeError deep in a
    kernel factory, or worse be taken for this one's."""
    if not isinstance(config, cls):
        raise OptionError(problem("config", f"a {cls.__name__}", describe(config),
                                  f"pass {cls.__name__}(...) (spmvlab.formats.get(name)."
                                  "make_config(**settings) builds the right one)"))
    return config


def launch_spmv(D, x, out, kernel: Callable, arrays: tuple, threads: int, rows_per_block: int):
    """The body every kernel module's ``spmv`` shares: check and place ``x``/``out``, build
    the kernel (``kernel()``, only when there is work) and launch it over
    ceil(rows / rows_per_block) blocks of ``threads`` with ``(*arrays, x, y)``; return y
    where the caller wants it (see :func:`finish`)."""
    n_rows, n_cols = D.shape
    ops = prepare(x, out, n_cols, (n_rows,), D.dtype)
    if n_rows:
        kernel()[blocks_for(n_rows, rows_per_block), threads, launch_stream()](*arrays, ops.x, ops.out)
    return finish(ops, out)


def launch_spmm(D, X, out, kernel: Callable, arrays: tuple, threads: int, rows_per_block: int,
                cols_per_block: int, out_t: bool = False):
    """:func:`launch_spmv` for Y = D @ X: the grid's second dimension covers the k columns
    of X in tiles of ``cols_per_block`` (``out_t``: the kernel writes Y's transpose)."""
    ops, k_cols = prepare_spmm(D, X, out, out_t)
    if D.shape[0] and k_cols:
        grid = (blocks_for(D.shape[0], rows_per_block), blocks_for(k_cols, cols_per_block))
        kernel()[grid, threads, launch_stream()](*arrays, ops.x, ops.out)
    return finish(ops, out)


def check_threads_per_block(owner: str, value: int) -> None:
    """The launch-size rule every kernel config shares: whole warps, at most 1024 threads."""
    if not isinstance(value, int) or value % WARP or not WARP <= value <= 1024:
        raise OptionError(problem(f"{owner}.threads_per_block", "a multiple of 32 in [32, 1024]",
                                  value))


@inline_device
def warp_sum(s):
    """Sum of ``s`` over the 32 lanes of a full warp, returned in every lane (butterfly)."""
    off = 16
    while off > 0:
        s += cuda.shfl_xor_sync(FULL_MASK, s, off)
        off //= 2
    return s


def _reduce_levels(ws: int, m: int) -> list[tuple[int, int]]:
    """(lane offset, values halved) per butterfly level of :func:`reduce_scatter`."""
    levels, size, off = [], m, ws // 2
    while off > 0:
        levels.append((off, size // 2))
        size = max(size // 2, 1)
        off //= 2
    return levels


def scatter_layout(ws: int, m: int) -> tuple[int, int]:
    """(R, D) of :func:`reduce_scatter` ``(ws, m)``: lane t holds the totals of accumulators
    ``(t // D) * R + i`` for i < R, and D lanes hold each total (the lanes with t % D == 0
    are the first of them)."""
    return max(1, m // ws), max(1, ws // m)


@functools.lru_cache(maxsize=None)
def reduce_scatter(ws: int, m: int):
    """``scatter(accs, t, mask)``: the group of ``ws`` lanes sums its ``m`` accumulators
    (``accs[0:m]``, m and ws powers of two) so that lane t ends with the totals of
    accumulators ``(t // D) * R + i`` in ``accs[i]``, i < R, where (R, D) =
    :func:`scatter_layout` ``(ws, m)``: D lanes hold each total. At each butterfly level a lane keeps half of
    its values and sends the partner the other half (halving the values until one is
    left, then plain butterfly adds): m - 1 + log2(ws / m) shuffles for m <= ws, against
    m log2(ws) when every lane forms every total."""
    def level(off: int, h: int):
        if h == 0:
            @inline_device
            def add(accs, t, mask):
                accs[0] += cuda.shfl_xor_sync(mask, accs[0], off)
            return add

        @inline_device
        def halve(accs, t, mask):
            up = (t & off) != 0
            for i in range(h):
                lo = accs[i]
                hi = accs[i + h]
                accs[i] = (hi if up else lo) + cuda.shfl_xor_sync(mask, lo if up else hi, off)
        return halve

    def then(first, rest):
        @inline_device
        def both(accs, t, mask):
            first(accs, t, mask)
            rest(accs, t, mask)
        return both

    @inline_device
    def none(accs, t, mask):
        pass

    fn = none
    for off, h in reversed(_reduce_levels(ws, m)):
        fn = then(level(off, h), fn)
    return fn


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
    return value_dtype(dtype, "values.dtype", allowed=supported, what=what)


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
