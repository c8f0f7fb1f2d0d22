"""EC-CSR SpMV kernel (numba.cuda), one source for both position types: uint32 where every
array of the matrix fits (``ECCSRConfig.index32`` and ``DeviceECCSR.fits32``; about half the
address instructions) and int64 for the rest. Mapping, accumulation and the careful path for
Inf/NaN: kernels/ec_csr.py.
"""

from __future__ import annotations

import functools
import math
from typing import TYPE_CHECKING

import numpy as np

from .._cuda import cuda, inline_device
from ._common import WARP, acc_type, jit_options, reduce_scatter, scatter_layout
from ._ec_csr_device import _chains, _code_parts, _tuple_loader
from ._intrinsics import grid_dependency_wait
from ._spmm import fill_parts

if TYPE_CHECKING:
    from .ec_csr import ECCSRConfig


@functools.lru_cache(maxsize=None)
def _spmv_careful(dtype_name: str, delta_bits: int, ws: int, vs: int, cw: int):
    """``careful(...)``: rows [rlo, rhi) of a block one at a time, stored zeros skipped (int64
    positions); the SpMV fallback for a slice whose fast sums are not all finite."""
    acc = acc_type(dtype_name)
    C = _code_parts(delta_bits, ws, vs, cw)
    short_code, group_sum = C["short_code"], C["group_sum"]

    @inline_device
    def careful(bytes_, values, x, rows, yacc, c0, nc, v0, g, vec, row0, col0, t, mask, rlo, rhi):
        """Rows [rlo, rhi) of the block one at a time, stored zeros skipped."""
        m = nc // ws
        for r in range(rlo, rhi):
            s = acc(0)
            col = col0
            for k in range(m):
                pos = (k // vec) * (ws * vec) + t * vec + k % vec
                col += short_code(bytes_, c0 + pos)
                v = acc(values[v0 + pos * g + r])
                if v != 0:
                    s += v * acc(x[col])
            s = group_sum(s, mask)
            if t == 0:
                cuda.atomic.add(yacc, rows[row0 + r], s)

    return careful


@functools.lru_cache(maxsize=None)
def _spmv_parts(dtype_name: str, delta_bits: int, ws: int, vs: int, cw: int, lw: int,
                gmax: int, index: str):
    """``(short, long)``: one group's whole contribution of its block to y (see
    kernels/ec_csr.py's docstring), specialised on granularity below ``gmax`` and on the
    vector width, positions of type ``index``. The exact-G walkers load an iteration's code
    word and values first (one tuple of values), then decode the columns, gather x and do
    the FMAs in order."""
    acc = acc_type(dtype_name)
    C = _code_parts(delta_bits, ws, vs, cw, index)
    code = C["code"]
    careful = _spmv_careful(dtype_name, delta_bits, ws, vs, cw)
    P = 16 // np.dtype(dtype_name).itemsize
    U32 = C["index"]

    def make_block(G: int, vec: int, sliced: bool):
        load_w = C["long_codes"] if vec > 1 else C["short_word"]
        step = ws * vec

        if sliced:
            col_load = _tuple_loader(G, P)

            @inline_device
            def walk(words, bytes_, values, x, c0, nc, v0, g, r0, col0, t, accs):
                """This lane's columns, rows [r0, r0 + G) of a block of g >= G rows."""
                for k in range(G):
                    accs[k] = acc(0)
                col = col0
                p = U32(c0 + U32(t * U32(vec)))
                end = U32(c0 + nc)
                while p < end:
                    w = load_w(words, bytes_, p)
                    for j in range(vec):
                        col = U32(col + code(w, j))
                        xv = acc(x[col])
                        vals = col_load(values, U32(U32(v0 + U32(U32(U32(p - c0) + U32(j)) * g)) + r0))
                        for k in range(G):
                            accs[k] += acc(vals[k]) * xv
                    p = U32(p + U32(step))
            return _make_block_body(walk, G, vec, ws, careful, U32)

        grp_load = _tuple_loader(vec * G, lw)

        @inline_device
        def walk(words, bytes_, values, x, c0, nc, v0, g, r0, col0, t, accs):
            """This lane's columns of a block of exactly G rows, one iteration (vec columns)
            per step: the code word and the vec x G values are loaded first, then the
            columns decoded, x gathered and the FMAs done in order."""
            for k in range(G):
                accs[k] = acc(0)
            col = col0
            p = U32(c0 + U32(t * U32(vec)))
            end = U32(c0 + nc)
            while p < end:
                w = load_w(words, bytes_, p)
                vals = grp_load(values, U32(v0 + U32(U32(p - c0) * U32(G))))
                for j in range(vec):
                    col = U32(col + code(w, j))
                    xv = acc(x[col])
                    for k in range(G):
                        accs[k] += acc(vals[j * G + k]) * xv
                p = U32(p + U32(step))

        return _make_block_body(walk, G, vec, ws, careful, U32)

    def branch(G, exact, rest):
        @inline_device
        def pick(words, bytes_, values, x, rows, yacc, c0, nc, v0, g, row0, col0, t, mask, accs):
            if g == U32(G):
                exact(words, bytes_, values, x, rows, yacc, c0, nc, v0, g, row0, col0, t, mask, accs)
            else:
                rest(words, bytes_, values, x, rows, yacc, c0, nc, v0, g, row0, col0, t, mask, accs)
        return pick

    return _chains(make_block, branch, gmax, vs)


def _make_block_body(walk, G: int, vec: int, ws: int, careful, U32):
    """``block(...)``: walk slices of G rows, reduce each over the group with the row sums
    scattered over its lanes (``kernels._common.reduce_scatter``), add them into yacc (one
    atomic per row, by the first lane holding it), or redo a non-finite slice on the careful
    (int64) path. ``U32``: the position type."""
    i64 = np.int64
    scatter = reduce_scatter(ws, G)
    R, D = scatter_layout(ws, G)        # row sums per lane, lanes holding each row sum

    @inline_device
    def block(words, bytes_, values, x, rows, yacc, c0, nc, v0, g, row0, col0, t, mask, accs):
        r0 = U32(0)
        while r0 < g:
            walk(words, bytes_, values, x, c0, nc, v0, g, r0, col0, t, accs)
            scatter(accs, t, mask)
            kb = U32(U32(t // U32(D)) * U32(R))
            bad = False
            for i in range(R):
                if math.isinf(accs[i]) or math.isnan(accs[i]):
                    bad = True
            if not cuda.any_sync(mask, bad):
                if U32(t % U32(D)) == U32(0):
                    for i in range(R):
                        cuda.atomic.add(yacc, rows[U32(U32(row0 + r0) + U32(kb + U32(i)))],
                                        accs[i])
            else:
                careful(bytes_, values, x, rows, yacc, i64(c0), i64(nc), i64(v0), i64(g),
                        i64(vec), i64(row0), i64(col0), i64(t), mask, i64(r0), i64(r0) + G)
            r0 = U32(r0 + U32(G))

    return block


@functools.lru_cache(maxsize=None)
def _spmv_kernel(dtype_name: str, delta_bits: int, ws: int, vs: int, cw: int, lw: int,
                 cfg: ECCSRConfig, index: str, fill_group: int = 1, pdl: bool = False):
    """The SpMV kernel with positions of type ``index`` ("uint32" only where the caller has
    checked ``DeviceECCSR.fits32``) and ``cfg.rows_per_pass``; with ``cfg.x_in_shared`` the
    variant that stages x in shared memory (launched with ``x.size`` elements of dynamic
    shared memory on a persistent grid, ``ec_csr.py``), copying x ``fill_group`` elements
    per load (a power of two dividing ``x.size``, at most 16 bytes). ``pdl`` (sm_90+, the
    kernel launched with ``_spmm.launch_smem``'s ``after``): it waits for the grid before it
    (``grid_dependency_wait``: the float32 zero pass) before its first add. It never calls
    ``launch_dependents``: a float16 finish pass launched after it starts as its blocks
    end, and the instructions cost the main loop more than the early start saves
    (docs/performance.md)."""
    gmax = cfg.rows_per_pass
    short_block, long_block = _spmv_parts(dtype_name, delta_bits, ws, vs, cw, lw, gmax, index)
    C = _code_parts(delta_bits, ws, vs, cw, index)
    group_mask, geometry, U32 = C["group_mask"], C["geometry"], C["index"]

    @inline_device
    def one_block(set_desc, ptr, rows, base, words, bytes_, values, x, yacc, blk, t, mask, accs):
        """Lane t's share of block ``blk``'s sums, added into yacc."""
        g, vec, row0, c0, nc, v0, col0 = geometry(set_desc, ptr, base, blk, t, ws)
        if vs > 1 and vec > U32(1):
            long_block(words, bytes_, values, x, rows, yacc, c0, nc, v0, g, row0, col0, t, mask, accs)
        else:
            short_block(words, bytes_, values, x, rows, yacc, c0, nc, v0, g, row0, col0, t, mask, accs)

    if cfg.x_in_shared:
        xnp = np.dtype(dtype_name)
        fill = fill_parts(dtype_name, fill_group, fill_group)

        @cuda.jit(**jit_options())
        def ec_csr_spmv_xs(set_desc, ptr, rows, base, words, bytes_, values, x, yacc):
            """As ``ec_csr_spmv``, with x first copied into shared memory by the CUDA block
            (its gathers then cost bank wavefronts instead of L1 tag lookups), and a
            persistent grid: group ``blockIdx.x * groups_per_block + group`` takes its block,
            then every ``gridDim.x * groups_per_block``-th after it."""
            sx = cuda.shared.array(0, xnp)
            fill(x, fill_group, 0, sx)              # x as rows of fill_group; ends in a barrier
            if pdl:
                grid_dependency_wait()
            per = U32(U32(cuda.blockDim.x) // U32(ws))
            t = U32(U32(cuda.threadIdx.x) % U32(ws))
            blk = U32(U32(U32(cuda.blockIdx.x) * per) + U32(U32(cuda.threadIdx.x) // U32(ws)))
            step = U32(U32(cuda.gridDim.x) * per)
            nb = U32(ptr.shape[0] - 1)
            mask = group_mask(U32(cuda.threadIdx.x % WARP) - t)
            accs = cuda.local.array(gmax, np.float32)
            while blk < nb:
                one_block(set_desc, ptr, rows, base, words, bytes_, values, sx, yacc, blk, t, mask,
                          accs)
                blk = U32(blk + step)

        return ec_csr_spmv_xs

    @cuda.jit(**jit_options())
    def ec_csr_spmv(set_desc, ptr, rows, base, words, bytes_, values, x, yacc):
        """Thread i: lane i % warp_size of block i // warp_size. The lane walks its stored
        columns vec at a time (its chunk slots), g accumulators (slices of rows_per_pass
        rows), then the group reduces and adds each row's sum into yacc (float32) with an
        atomic. yacc must be zero where the caller wants the plain product."""
        tid = U32(U32(U32(cuda.blockIdx.x) * U32(cuda.blockDim.x)) + U32(cuda.threadIdx.x))
        blk = U32(tid // U32(ws))
        t = U32(tid % U32(ws))
        if blk >= U32(ptr.shape[0] - 1):
            return
        if pdl:
            grid_dependency_wait()
        mask = group_mask(U32(cuda.threadIdx.x % WARP) - t)
        accs = cuda.local.array(gmax, np.float32)
        one_block(set_desc, ptr, rows, base, words, bytes_, values, x, yacc, blk, t, mask, accs)

    return ec_csr_spmv
