"""Register-tile SpMM pieces shared by the format kernels: Y = A @ X for X of shape (K, N).

Every format's SpMM kernel decodes each stored entry (row r, column c, value v) once per
column tile and multiplies it by the tile's ``ct`` consecutive values of row c of X, kept in
``ct`` accumulators per lane; a warp owns a row and its lanes split the row's entries, so
each decoded entry is reused across the ``ct`` columns (instead of being decoded once per
column). The grid's second dimension covers the N columns in tiles of ``ct``: N <= ct
reads A once.

Row c of the tile is gathered with vector loads of ``g`` values (16 bytes: 8 float16,
4 float32) when N is a multiple of ``g`` (every group is then aligned and either wholly
inside the tile's valid columns or wholly outside), else one value at a time. X is passed
flat (row-major, N values per row). At the end each accumulator is summed over the warp and
lane j writes column j0 + j, of Y or (``out_t``) row j0 + j of Y's transpose: the (N, rows)
layout of torch's linear layers, written without a copy after the product.
"""
from __future__ import annotations

import functools
import math

import numpy as np

from .._cuda import SIMULATOR, cuda, inline_device
from ._common import (
    FULL_MASK, WARP, acc_type, blocks_for, finish, launch_stream, numba_type, prepare_spmm,
    reduce_scatter, scatter_layout,
)
from ._intrinsics import (
    sload1, sload2, sload4, sload8, sstore4, vload1, vload2, vload4, vload8, vwords4,
)

#: the column-tile widths the SpMM kernels are built for
TILE_COLS = (1, 2, 4, 8, 16, 32)


def tile_for(n_cols: int, max_tile: int) -> int:
    """The tile width for N = ``n_cols`` columns: the next power of two, at most ``max_tile``."""
    ct = 1
    while ct < n_cols and ct < max_tile:
        ct *= 2
    return ct


def group_for(dtype, n_cols: int, ct: int) -> int:
    """Values per gather load: 16 bytes' worth, at most the tile, 1 unless N is a multiple."""
    g = min(ct, 16 // np.dtype(dtype).itemsize)
    return g if n_cols % g == 0 else 1


@functools.lru_cache(maxsize=None)
def tile_parts(dtype_name: str, ct: int, g: int, shared: bool = False, out_t: bool = False):
    """Device functions for a tile of ``ct`` columns gathered ``g`` at a time (from shared
    memory with ``shared``, see :func:`launch_tiles`; ``out_t``: ``put`` writes Y's
    transpose, Y[j0 + column, r]):

    ``zero(accs)``                          clear the accumulators (a local array of ct)
    ``fma_row(Xf, off, nvalid, v, accs)``   accs[j] += v * Xf[off + j] (j < nvalid matter)
    ``reduce(accs, lane)``                  sum the accumulators over the warp, the totals
                                            scattered over the lanes (``reduce_scatter``):
                                            lane l holds column (l // D) * R + i in accs[i]
    ``finite(accs, nvalid, lane)``          after ``reduce``: every valid column's total is
                                            finite (a vote: the same in every lane)
    ``put(Y, r, j0, nvalid, accs, lane)``   after ``reduce``: the first lane holding a
                                            column's total writes Y[r, j0 + column]
    ``put_at(Y, r, j, v)``                  Y[r, j] = v (``out_t``: Y[j, r])
    ``dims(Y)``                             (rows, columns) of the product Y holds; with
                                            ``put_at`` the one place that knows Y's layout
    ``store(Y, r, j0, nvalid, accs, lane)`` ``reduce`` then ``put``

    The scattered reduction takes ct - 1 + log2(32 / ct) shuffles for ct <= 32 columns
    where a butterfly per accumulator takes 5 ct.
    """
    acc = acc_type(dtype_name)
    load = ({1: sload1, 2: sload2, 4: sload4, 8: sload8} if shared
            else {1: vload1, 2: vload2, 4: vload4, 8: vload8})[g]
    n_groups = ct // g

    @inline_device
    def zero(accs):
        for j in range(ct):
            accs[j] = acc(0)

    @inline_device
    def fma_row(Xf, off, nvalid, v, accs):
        """No branches, so the gathers of consecutive entries can all be in flight: a group
        past the tile's valid columns (the last tile only) reloads the last valid group, and
        its accumulators are never stored."""
        for gi in range(n_groups):
            j = gi * g
            xs = load(Xf, off + min(j, nvalid - g))
            for t in range(g):
                accs[j + t] += v * acc(xs[t])

    scatter = reduce_scatter(WARP, ct)
    R, D = scatter_layout(WARP, ct)     # totals per lane after reduce, lanes holding each

    @inline_device
    def reduce(accs, lane):
        scatter(accs, lane, FULL_MASK)

    @inline_device
    def finite(accs, nvalid, lane):
        bad = False
        for i in range(R):
            if (lane // D) * R + i < nvalid and (math.isinf(accs[i]) or math.isnan(accs[i])):
                bad = True
        return not cuda.any_sync(FULL_MASK, bad)

    @inline_device
    def put_at(Y, r, j, v):
        if out_t:
            Y[j, r] = v
        else:
            Y[r, j] = v

    @inline_device
    def dims(Y):
        if out_t:
            return Y.shape[1], Y.shape[0]
        return Y.shape[0], Y.shape[1]

    @inline_device
    def put(Y, r, j0, nvalid, accs, lane):
        if lane % D == 0:
            for i in range(R):
                j = (lane // D) * R + i
                if j < nvalid:
                    put_at(Y, r, j0 + j, accs[i])

    @inline_device
    def store(Y, r, j0, nvalid, accs, lane):
        reduce(accs, lane)
        put(Y, r, j0, nvalid, accs, lane)

    return dict(zero=zero, fma_row=fma_row, reduce=reduce, finite=finite, put=put, store=store,
                put_at=put_at, dims=dims)


#: groups of X each thread copies per round of :func:`fill_parts`' fill (independent loads in flight)
FILL_UNROLL = 4


@functools.lru_cache(maxsize=None)
def fill_parts(dtype_name: str, ct: int, fg: int):
    """``fill(Xf, n, j0, sX)``: the block's threads copy X[:, j0:j0 + ct] (X flat, row-major
    with n columns) into the shared array sX (row c at c * ct, X's dtype), zero past column
    n, ``fg`` values per load (``fg`` from :func:`group_for`: n is then a multiple of it),
    then meet at a barrier. Each thread has FILL_UNROLL loads in flight before it stores.
    Eight float16 values go as four 32-bit words, one 16-byte load and one 16-byte store
    (``vwords4``, ``sstore4``): stored value by value, a warp's 32 consecutive 16-byte
    groups would take eight 2-byte stores, each hitting every bank four times."""
    xt = numba_type(dtype_name)
    words = dtype_name == "float16" and fg == 8
    load = vwords4 if words else {1: vload1, 2: vload2, 4: vload4, 8: vload8}[fg]
    gpr = ct // fg
    U = FILL_UNROLL
    u32 = np.uint32

    if words:
        @inline_device
        def put(sX, q, xs, ok):
            if ok:
                sstore4(sX, q * 8, xs[0], xs[1], xs[2], xs[3])
            else:
                sstore4(sX, q * 8, u32(0), u32(0), u32(0), u32(0))
    else:
        @inline_device
        def put(sX, q, xs, ok):
            for t in range(fg):
                sX[q * fg + t] = xs[t] if ok else xt(0)

    @inline_device
    def fill(Xf, n, j0, sX):
        total = (Xf.shape[0] // n) * gpr
        step = cuda.blockDim.x
        q = cuda.threadIdx.x
        while q < total:
            # U groups q, q + step, ...: their loads are issued before any store
            q1 = q + step
            q2 = q1 + step
            q3 = q2 + step
            c0, r0 = q // gpr, q % gpr
            c1, r1 = min(q1, total - 1) // gpr, min(q1, total - 1) % gpr
            c2, r2 = min(q2, total - 1) // gpr, min(q2, total - 1) % gpr
            c3, r3 = min(q3, total - 1) // gpr, min(q3, total - 1) % gpr
            j_0 = min(j0 + r0 * fg, n - fg)
            j_1 = min(j0 + r1 * fg, n - fg)
            j_2 = min(j0 + r2 * fg, n - fg)
            j_3 = min(j0 + r3 * fg, n - fg)
            x0 = load(Xf, np.int64(c0) * n + j_0)
            x1 = load(Xf, np.int64(c1) * n + j_1)
            x2 = load(Xf, np.int64(c2) * n + j_2)
            x3 = load(Xf, np.int64(c3) * n + j_3)
            put(sX, q, x0, j0 + r0 * fg < n)
            if q1 < total:
                put(sX, q1, x1, j0 + r1 * fg < n)
            if q2 < total:
                put(sX, q2, x2, j0 + r2 * fg < n)
            if q3 < total:
                put(sX, q3, x3, j0 + r3 * fg < n)
            q += U * step
        cuda.syncthreads()

    return fill


def ptx_cases(dtype_name: str) -> list[tuple[int, int]]:
    """(ct, g) pairs the PTX check compiles: scalar, one vector group, several groups."""
    gmax = 16 // np.dtype(dtype_name).itemsize
    return sorted({(1, 1), (8, 1), (8, min(8, gmax)), (16, gmax), (32, gmax)})


def accumulator_np(dtype_name: str):
    return np.float64 if dtype_name == "float64" else np.float32


#: dynamic shared memory one block may use when the device does not say (sm_90: 227 KiB)
SMEM_BLOCK_BYTES = 227 * 1024
#: shared memory per SM when the device does not say (sm_90: 228 KiB); 1 KiB of it per
#: resident block is reserved by the system
SMEM_SM_BYTES = 228 * 1024


def smem_tile(dtype, k_rows: int, n_cols: int, max_tile: int, limit: int = SMEM_BLOCK_BYTES) -> int:
    """The tile width of the shared-memory SpMM for X of shape (k_rows, n_cols): the
    register tile's width (:func:`tile_for`) halved until the tile's ``k_rows`` rows fit in
    ``limit`` bytes; 0 when not even one column fits (then the register tile is used)."""
    if k_rows < 1 or n_cols < 1:
        return 0
    item = np.dtype(dtype).itemsize
    ct = tile_for(n_cols, max_tile)
    while ct >= 1 and k_rows * ct * item > limit:
        ct //= 2
    return max(ct, 0)


_LIMITS: dict = {}


def _device_limits() -> tuple[int, int, int]:
    """(SMs, shared bytes per block, shared bytes per SM) of the current device, asked of the
    driver once per device (three attribute queries cost more than a short SpMM launch)."""
    if SIMULATOR:
        return 2, SMEM_BLOCK_BYTES, SMEM_SM_BYTES
    dev = cuda.get_current_device()
    key = dev.id
    if key not in _LIMITS:
        try:
            _LIMITS[key] = (int(dev.MULTIPROCESSOR_COUNT),
                            int(dev.MAX_SHARED_MEMORY_PER_BLOCK_OPTIN),
                            int(dev.MAX_SHARED_MEMORY_PER_MULTIPROCESSOR))
        except AttributeError:   # an older binding without the opt-in attributes
            _LIMITS[key] = int(dev.MULTIPROCESSOR_COUNT), SMEM_BLOCK_BYTES, SMEM_SM_BYTES
    return _LIMITS[key]


def persistent_grid(kernel, args: tuple, needed: int, threads: int, nbytes: int,
                    cap: int = 0, least: int = 1) -> int:
    """Blocks of a persistent grid of ``kernel`` (a CUDA dispatcher, to be launched with
    ``args`` in ``threads``-thread blocks that take ``nbytes`` of dynamic shared memory
    each): as many as are resident at once (:func:`resident_per_sm`), at most ``cap`` per SM
    where given, and no more than ``needed``; 0 when one block's limit cannot hold ``nbytes``
    or fewer than ``least`` blocks fit on an SM at once.

    A grid larger than the resident blocks would leave its last blocks to start after others
    end, each with a whole share of the grid-strided work, so the grid never exceeds them."""
    sms, block_limit, _ = _device_limits()
    if nbytes > block_limit:
        return 0
    per_sm = resident_per_sm(kernel, args, threads, nbytes)
    if per_sm < least:
        return 0
    if cap:
        per_sm = min(per_sm, cap)
    return min(needed, sms * per_sm)


_RESIDENT: dict = {}


def resident_per_sm(kernel, args: tuple, threads: int, nbytes: int) -> int:
    """Blocks of ``kernel`` one SM holds at once in ``threads``-thread blocks with ``nbytes``
    of dynamic shared memory: the driver's occupancy calculator on the kernel compiled for
    ``args``' types (compiled here when it is not yet; the launch then finds it), so the
    compiled code's registers and static shared memory count as well as ``nbytes`` (with the
    system's 1 KiB per block) and the SM's threads. The simulator, which has no driver,
    counts only shared memory and threads. Kept per kernel, block size, bytes and device."""
    if SIMULATOR:
        return min(_device_limits()[2] // (nbytes + 1024), 2048 // threads)
    key = (id(kernel), threads, nbytes, cuda.get_current_device().id)
    hit = _RESIDENT.get(key)
    if hit is None or hit[0] is not kernel:
        overload = _compiled(kernel, args, nbytes)
        per_sm = overload.max_cooperative_grid_blocks(threads, nbytes) // _device_limits()[0]
        hit = _RESIDENT[key] = (kernel, per_sm)
    return hit[1]


def _compiled(kernel, args: tuple, nbytes: int):
    """The compiled kernel of dispatcher ``kernel`` for ``args``' types (compiled here when it
    is not yet), opted in to ``nbytes`` of dynamic shared memory."""
    overload = kernel.compile(tuple(kernel.typeof_pyval(a) for a in args))
    _opt_in_smem(overload, nbytes)
    return overload


_SMEM_ALLOWED: dict = {}


def _opt_in_smem(overload, nbytes: int):
    """Let the compiled kernel ``overload`` take ``nbytes`` of dynamic shared memory beyond the
    default 48 KiB (the driver's opt-in, per function; the occupancy calculator counts no
    block above the kernel's opt-in either)."""
    if nbytes <= 48 * 1024:
        return
    from numba.cuda.cudadrv.driver import binding, driver
    cufunc = overload._codelibrary.get_cufunc()
    if _SMEM_ALLOWED.get(id(cufunc), -1) >= nbytes:
        return
    attr = binding.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
    driver.cuKernelSetAttribute(attr, nbytes, cufunc.handle, cufunc.device.id)
    _SMEM_ALLOWED[id(cufunc)] = nbytes


def _allow_dynamic_smem(kernel, launch_config):
    """Pre-launch callback: :func:`_opt_in_smem` for the launch's bytes."""
    _opt_in_smem(kernel, int(launch_config.sharedmem))


def launch_smem(kernel, grid, threads: int, nbytes: int, args: tuple, after: bool = False):
    """Launch ``kernel`` on the launch stream with ``nbytes`` of dynamic shared memory (any
    size the device allows). ``after``: where :func:`pdl_capable`, a programmatic dependent
    launch (:func:`_launch_dependent`): ``kernel`` may start before the kernel launched just
    before it on the stream has ended, so it must call ``grid_dependency_wait()`` before it
    touches anything that kernel writes (which may call ``launch_dependents()`` to let it
    start). It saves part of a launch's fixed cost between two dependent kernels."""
    if after and pdl_capable():
        _launch_dependent(kernel, grid, threads, nbytes, args)
        return
    cfg = kernel[grid, threads, launch_stream(), nbytes]
    if not SIMULATOR and nbytes > 48 * 1024:
        cfg.pre_launch_callbacks.append(_allow_dynamic_smem)
    cfg(*args)


_PDL: dict = {}


def pdl_capable() -> bool:
    """Whether the current device takes programmatic dependent launches (compute capability
    9.0 or above, and a cuda.core whose launch configuration has the attribute; the
    simulator: no): the kernel factories' ``pdl`` flag, under which kernels call
    ``_intrinsics.grid_dependency_wait`` / ``launch_dependents``."""
    if SIMULATOR:
        return False
    dev = cuda.get_current_device()
    if dev.id not in _PDL:
        try:
            from cuda.core import LaunchConfig
            LaunchConfig(grid=1, block=32, programmatic_stream_serialization=True)
            has_attribute = True
        except (ImportError, TypeError):
            has_attribute = False
        _PDL[dev.id] = has_attribute and tuple(dev.compute_capability) >= (9, 0)
    return _PDL[dev.id]


def _launch_dependent(kernel, grid, threads: int, nbytes: int, args: tuple):
    """numba's own launch (its argument marshalling and compiled function) with cuda.core's
    ``programmatic_stream_serialization`` in the launch configuration: numba-cuda's launch
    takes no launch attributes."""
    from cuda.core import LaunchConfig, launch
    from numba.cuda.cudadrv import driver
    stream = driver._to_core_stream(launch_stream())
    overload = _compiled(kernel, args, nbytes)
    marshalled, writebacks = [], []
    for ty, value in zip(overload.argument_types, args):
        overload._prepare_args(ty, value, stream, writebacks, marshalled)
    config = LaunchConfig(grid=grid, block=threads, shmem_size=nbytes,
                          programmatic_stream_serialization=True)
    launch(stream, config, overload._codelibrary.get_cufunc().kernel, *marshalled)
    for wb in writebacks:
        wb()


def launch_tiles(D, X, out, kernel, arrays: tuple, threads: int, rows_per_block: int, max_tile: int,
                 spmv=None, shared=None, out_t: bool = False):
    """Check and place X/out, pick the tile (``tile_for``) and gather width (``group_for``),
    build ``kernel(ct, g, out_t)`` and launch it over (row blocks, column tiles) with
    ``(*arrays, X flat, Y, N)``; return Y (``out_t``: its transpose, (N, rows)) where the
    caller wants it. N = 1 launches the format's SpMV kernel instead when
    ``spmv = (factory, threads, rows_per_block)`` is given (Y and its transpose are then
    the same vector).

    ``shared = (factory, threads)``: when the X tile's K rows fit in one block's shared
    memory (:func:`smem_tile`), ``factory(ct, g, fg, out_t)`` is launched instead (g: values per
    shared-memory gather, fg: per global load of the fill, :func:`fill_parts`): a persistent grid
    (as many blocks as can be resident, at most one per ``threads // 32`` rows; at most one
    warp per row of the matrix in all) whose blocks
    first copy X's column tile into shared memory (zero past N) and then take rows
    ``blockIdx.x * warps + warp``, stepping by the grid's warps; the gathers of X then hit
    shared memory instead of L1/L2."""
    ops, k_cols = prepare_spmm(D, X, out, out_t)
    n_rows, n_k = D.shape
    block_limit = _device_limits()[1] if shared is not None else 0
    sct = smem_tile(D.dtype, n_k, k_cols, max_tile, block_limit) if shared is not None else 0
    if n_rows and k_cols == 1 and spmv is not None:
        factory, sthreads, srows = spmv
        factory()[blocks_for(n_rows, srows), sthreads, launch_stream()](
            *arrays, ops.x.reshape(ops.x.shape[0]), ops.out.reshape(n_rows))
    elif n_rows and sct:
        factory, sthreads = shared
        sthreads = min(sthreads, WARP * n_rows)    # no block of idle warps for a short matrix
        item = np.dtype(D.dtype).itemsize
        nbytes = n_k * sct * item
        flat = ops.x.reshape(ops.x.shape[0] * k_cols)
        g = min(sct, 16 // item)
        kernel = factory(sct, g, group_for(D.dtype, k_cols, sct), out_t)
        args = (*arrays, flat, ops.out, np.int64(k_cols))
        blocks = persistent_grid(kernel, args, blocks_for(n_rows, sthreads // WARP), sthreads,
                                 nbytes)
        grid = (blocks, blocks_for(k_cols, sct))
        launch_smem(kernel, grid, sthreads, nbytes, args)
    elif n_rows and k_cols:
        ct = tile_for(k_cols, max_tile)
        g = group_for(D.dtype, k_cols, ct)
        grid = (blocks_for(D.shape[0], rows_per_block), blocks_for(k_cols, ct))
        flat = ops.x.reshape(ops.x.shape[0] * k_cols)
        kernel(ct, g, out_t)[grid, threads, launch_stream()](*arrays, flat, ops.out,
                                                             np.int64(k_cols))
    return finish(ops, out)


__all__ = ["TILE_COLS", "tile_for", "group_for", "tile_parts", "ptx_cases", "accumulator_np",
           "smem_tile", "fill_parts", "launch_smem", "launch_tiles", "persistent_grid",
           "resident_per_sm", "pdl_capable"]
