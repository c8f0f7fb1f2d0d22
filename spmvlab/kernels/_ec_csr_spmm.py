"""EC-CSR SpMM kernel (numba.cuda): Y = M @ X for a tile of X's columns per grid column, one
source for both position types as the SpMV's (uint32 where the matrix and the X and Y tiles
fit, ``ECCSRConfig.index32``; int64 for the rest). Mapping and accumulation:
kernels/ec_csr.py ("SpMM"). ``out_t``: the adds go to Y's transpose, flat (n, rows), the
layout torch's (tokens, features) results have, so no copy follows the product.
"""

from __future__ import annotations

import functools
import math
from typing import TYPE_CHECKING

import numpy as np

from .._cuda import cuda, inline_device
from ._common import WARP, acc_type, reduce_scatter, scatter_layout
from ._ec_csr_device import _VLOAD, _chains, _code_parts, _tuple_loader
from ._intrinsics import grid_dependency_wait

if TYPE_CHECKING:
    from .ec_csr import ECCSRConfig


@functools.lru_cache(maxsize=None)
def _spmm_parts(dtype_name: str, delta_bits: int, ws: int, vs: int, cw: int, lw: int,
                gmax: int, ct: int, gx: int, index: str, out_t: bool = False):
    """As :func:`_spmv_parts` for a tile of ``ct`` columns of X gathered ``gx`` at a time,
    positions of type ``index`` (the careful path always int64); ``out_t``: Y's transpose."""
    acc = acc_type(dtype_name)
    C = _code_parts(delta_bits, ws, vs, cw, index)
    U32 = C["index"]
    i64 = np.int64
    long_codes, code = C["long_codes"], C["code"]
    K = _code_parts(delta_bits, ws, vs, cw)         # the careful path's (int64)
    short_code, group_sum = K["short_code"], K["group_sum"]
    P = 16 // np.dtype(dtype_name).itemsize
    xload = _VLOAD[gx]
    n_groups = ct // gx

    def make_at(T):
        """Y's flat position of (row, column j) for positions of type ``T``: row * n + j, or
        j * m + row for the transpose (n columns of X, m rows of M)."""
        if out_t:
            @inline_device
            def at(row, j, n, m):
                return T(T(j * m) + row)
        else:
            @inline_device
            def at(row, j, n, m):
                return T(T(row * n) + j)
        return at

    y_at, y_at64 = make_at(U32), make_at(i64)

    @inline_device
    def careful(bytes_, values, Xf, n, m, j0, nvalid, rows, Yacc, c0, nc, v0, g, vec, row0, col0,
                t, mask, rlo, rhi, accs):
        """Rows [rlo, rhi) one at a time, stored zeros skipped (``accs`` holds ct)."""
        per_lane = nc // ws
        for r in range(rlo, rhi):
            for jj in range(ct):
                accs[jj] = acc(0)
            col = col0
            for k in range(per_lane):
                pos = (k // vec) * (ws * vec) + t * vec + k % vec
                col += short_code(bytes_, c0 + pos)
                v = acc(values[v0 + pos * g + r])
                if v != 0:
                    for jj in range(ct):
                        if jj < nvalid:
                            accs[jj] += v * acc(Xf[col * n + j0 + jj])
            row = i64(rows[row0 + r])
            for jj in range(ct):
                s = group_sum(accs[jj], mask)
                if jj % ws == t and jj < nvalid:
                    cuda.atomic.add(Yacc, y_at64(row, j0 + jj, n, m), s)

    def make_fma(G: int):
        @inline_device
        def fma_tile(Xf, off, nvalid, vals, base_k, accs):
            """accs[k * ct + j] += vals[base_k + k] * X_tile[j] for G rows and ct columns; a
            group of X past the valid columns (last tile) rereads the last valid one, and
            its accumulators are never stored."""
            for gi in range(n_groups):
                jj = gi * gx
                xp = xload(Xf, U32(off + U32(min(jj, nvalid - gx))))
                for tt in range(gx):
                    xv = acc(xp[tt])
                    for k in range(G):
                        accs[k * ct + jj + tt] += acc(vals[base_k + k]) * xv
        return fma_tile

    def make_block(G: int, vec: int, sliced: bool):
        load_w = long_codes if vec > 1 else C["short_word"]
        step = ws * vec
        fma_tile = make_fma(G)
        if sliced:
            col_load = _tuple_loader(G, P)
        else:
            grp_load = _tuple_loader(vec * G, lw)

        if sliced:
            @inline_device
            def walk(words, bytes_, values, Xf, n, j0, nvalid, c0, nc, v0, g, r0, col0, t, accs):
                for k in range(G * ct):
                    accs[k] = acc(0)
                col = col0
                p = U32(c0 + U32(t * U32(vec)))
                end = U32(c0 + nc)
                while p < end:
                    w = load_w(words, bytes_, p)
                    for j in range(vec):
                        col = U32(col + code(w, j))
                        vals = col_load(values, U32(U32(v0 + U32(U32(U32(p - c0) + U32(j)) * g)) + r0))
                        fma_tile(Xf, U32(U32(col * n) + j0), nvalid, vals, 0, accs)
                    p = U32(p + U32(step))
        else:
            @inline_device
            def word_cols(Xf, n, j0, nvalid, w, vals, col, accs):
                """The vec columns of code word w, each times its G values of ``vals`` into
                the tile; returns the last column. Written out column by column, so the
                index into ``vals`` is a constant in each: in a loop over the columns
                (too long for the compiler to unroll at G x ct FMAs a column) every read
                of a value became a search over the tuple's elements."""
                col = U32(col + code(w, 0))
                fma_tile(Xf, U32(U32(col * n) + j0), nvalid, vals, 0, accs)
                if vec > 1:
                    col = U32(col + code(w, 1))
                    fma_tile(Xf, U32(U32(col * n) + j0), nvalid, vals, G, accs)
                if vec > 2:
                    col = U32(col + code(w, 2))
                    fma_tile(Xf, U32(U32(col * n) + j0), nvalid, vals, 2 * G, accs)
                    col = U32(col + code(w, 3))
                    fma_tile(Xf, U32(U32(col * n) + j0), nvalid, vals, 3 * G, accs)
                if vec > 4:
                    for j in range(4, 8):           # (8: a vector size no default uses)
                        col = U32(col + code(w, j))
                        fma_tile(Xf, U32(U32(col * n) + j0), nvalid, vals, j * G, accs)
                return col

            @inline_device
            def walk(words, bytes_, values, Xf, n, j0, nvalid, c0, nc, v0, g, r0, col0, t, accs):
                for k in range(G * ct):
                    accs[k] = acc(0)
                col = col0
                p = U32(c0 + U32(t * U32(vec)))
                end = U32(c0 + nc)
                while p < end:
                    w = load_w(words, bytes_, p)
                    vals = grp_load(values, U32(v0 + U32(U32(p - c0) * U32(G))))
                    col = word_cols(Xf, n, j0, nvalid, w, vals, col, accs)
                    p = U32(p + U32(step))

        scatter = reduce_scatter(ws, G * ct)
        R, D = scatter_layout(ws, G * ct)   # totals per lane, lanes holding each total

        @inline_device
        def block(words, bytes_, values, Xf, n, m, j0, nvalid, rows, Yacc, c0, nc, v0, g, row0,
                  col0, t, mask, accs):
            r0 = U32(0)
            while r0 < g:
                walk(words, bytes_, values, Xf, n, j0, nvalid, c0, nc, v0, g, r0, col0, t, accs)
                scatter(accs, t, mask)
                kb = U32(U32(t // U32(D)) * U32(R))
                bad = False
                for i in range(R):
                    s = accs[i]
                    if U32(U32(kb + U32(i)) % U32(ct)) < nvalid and (math.isinf(s) or math.isnan(s)):
                        bad = True
                if not cuda.any_sync(mask, bad):
                    if U32(t % U32(D)) == U32(0):
                        for i in range(R):
                            k = U32(kb + U32(i))
                            jj = U32(k % U32(ct))
                            if jj < nvalid:
                                row = U32(rows[U32(U32(row0 + r0) + U32(k // U32(ct)))])
                                cuda.atomic.add(Yacc, y_at(row, U32(j0 + jj), n, m), accs[i])
                else:
                    careful(bytes_, values, Xf, i64(n), i64(m), i64(j0), i64(nvalid), rows, Yacc, i64(c0),
                            i64(nc), i64(v0), i64(g), i64(vec), i64(row0), i64(col0), i64(t), mask,
                            i64(r0), i64(r0) + G, accs)
                r0 = U32(r0 + U32(G))

        return block

    def branch(G, exact, rest):
        @inline_device
        def pick(words, bytes_, values, Xf, n, m, j0, nvalid, rows, Yacc, c0, nc, v0, g, row0,
                 col0, t, mask, accs):
            if g == U32(G):
                exact(words, bytes_, values, Xf, n, m, j0, nvalid, rows, Yacc, c0, nc, v0, g, row0,
                      col0, t, mask, accs)
            else:
                rest(words, bytes_, values, Xf, n, m, j0, nvalid, rows, Yacc, c0, nc, v0, g, row0,
                     col0, t, mask, accs)
        return pick

    return _chains(make_block, branch, gmax, vs)


@functools.lru_cache(maxsize=None)
def _spmm_kernel(dtype_name: str, delta_bits: int, ws: int, vs: int, cw: int, lw: int,
                 cfg: ECCSRConfig, ct: int, gx: int, index: str, pdl: bool = False,
                 out_t: bool = False):
    """The SpMM kernel with positions of type ``index`` ("uint32" only where the caller has
    checked that the matrix and the X and Y tiles fit) and ``cfg.spmm_rows_per_pass``;
    ``pdl`` as the SpMV's (``_ec_csr_spmv._spmv_kernel``); ``out_t``: it adds into Y's
    transpose."""
    gmax = cfg.spmm_rows_per_pass
    short_block, long_block = _spmm_parts(dtype_name, delta_bits, ws, vs, cw, lw, gmax, ct, gx,
                                          index, out_t)
    C = _code_parts(delta_bits, ws, vs, cw, index)
    group_mask, geometry, U32 = C["group_mask"], C["geometry"], C["index"]
    n_acc = max(gmax * ct, ct)

    @cuda.jit
    def ec_csr_spmm(set_desc, ptr, rows, base, words, bytes_, values, Xf, Yacc, n, m):
        """Thread i of grid column y: lane i % warp_size of block i // warp_size, X columns
        [ct * y, ct * y + ct). Each decoded column multiplies its g values by row ``column``
        of the X tile into rows x ct accumulators; the group reduces and adds into Yacc
        (float32, flat (m, n); ``out_t``: (n, m)) with atomics."""
        tid = U32(U32(U32(cuda.blockIdx.x) * U32(cuda.blockDim.x)) + U32(cuda.threadIdx.x))
        blk = U32(tid // U32(ws))
        t = U32(tid % U32(ws))
        if blk >= U32(ptr.shape[0] - 1):
            return
        if pdl:
            grid_dependency_wait()
        nn = U32(n)
        mm = U32(m)
        j0 = U32(U32(cuda.blockIdx.y) * U32(ct))
        nvalid = U32(min(U32(ct), U32(nn - j0)))
        mask = group_mask(U32(cuda.threadIdx.x % WARP) - t)
        g, vec, row0, c0, nc, v0, col0 = geometry(set_desc, ptr, base, blk, t, ws)
        accs = cuda.local.array(n_acc, np.float32)
        if vs > 1 and vec > U32(1):
            long_block(words, bytes_, values, Xf, nn, mm, j0, nvalid, rows, Yacc, c0, nc, v0, g,
                       row0, col0, t, mask, accs)
        else:
            short_block(words, bytes_, values, Xf, nn, mm, j0, nvalid, rows, Yacc, c0, nc, v0, g,
                        row0, col0, t, mask, accs)

    return ec_csr_spmm
