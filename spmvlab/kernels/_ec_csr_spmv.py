"""EC-CSR SpMV kernels (numba.cuda): the int64-position path and the ``index32`` path
(uint32 positions, unrolled column loop), which kernels/ec_csr.py picks per matrix (index32
when every position fits, ``_fits32``). Mapping, accumulation and the careful path for
Inf/NaN: kernels/ec_csr.py.
"""

from __future__ import annotations

import functools
import math
from typing import TYPE_CHECKING

import numpy as np

from .._cuda import cuda, inline_device
from ._common import WARP, acc_type, jit_options
from ._ec_csr_device import _NF, _block_geometry, _chains, _code_parts, _tuple_loader

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
def _spmv_parts(dtype_name: str, delta_bits: int, ws: int, vs: int, cw: int, lw: int, gmax: int):
    """``block(...)``: one group's whole contribution of its block to y (see kernels/ec_csr.py's
    docstring), specialised on granularity below ``gmax`` and on the vector width."""
    acc = acc_type(dtype_name)
    C = _code_parts(delta_bits, ws, vs, cw)
    long_codes, code, group_sum = C["long_codes"], C["code"], C["group_sum"]
    P = 16 // np.dtype(dtype_name).itemsize
    careful = _spmv_careful(dtype_name, delta_bits, ws, vs, cw)

    def make_block(G: int, vec: int, sliced: bool):
        load_w = long_codes if vec > 1 else C["short_word"]
        step = ws * vec
        if sliced:
            col_load = _tuple_loader(G, P)
        else:
            grp_load = _tuple_loader(vec * G, lw)

        if sliced:
            @inline_device
            def walk(words, bytes_, values, x, c0, nc, v0, g, r0, col0, t, accs):
                """This lane's columns, rows [r0, r0 + G) of a block of g >= G rows."""
                for k in range(G):
                    accs[k] = acc(0)
                col = col0
                p = c0 + t * vec
                end = c0 + nc
                while p < end:
                    w = load_w(words, bytes_, p)
                    for j in range(vec):
                        col += code(w, j)
                        xv = acc(x[col])
                        vals = col_load(values, v0 + (p - c0 + j) * g + r0)
                        for k in range(G):
                            accs[k] += acc(vals[k]) * xv
                    p += step
        else:
            @inline_device
            def walk(words, bytes_, values, x, c0, nc, v0, g, r0, col0, t, accs):
                """This lane's columns of a block of exactly G rows: one load of the vec * G
                values of each group of vec columns."""
                for k in range(G):
                    accs[k] = acc(0)
                col = col0
                p = c0 + t * vec
                end = c0 + nc
                while p < end:
                    w = load_w(words, bytes_, p)
                    vals = grp_load(values, v0 + (p - c0) * G)
                    for j in range(vec):
                        col += code(w, j)
                        xv = acc(x[col])
                        for k in range(G):
                            accs[k] += acc(vals[j * G + k]) * xv
                    p += step

        @inline_device
        def block(words, bytes_, values, x, rows, yacc, c0, nc, v0, g, row0, col0, t, mask, accs):
            r0 = 0
            while r0 < g:
                walk(words, bytes_, values, x, c0, nc, v0, g, r0, col0, t, accs)
                ok = True
                for k in range(G):
                    s = group_sum(accs[k], mask)
                    accs[k] = s
                    if math.isinf(s) or math.isnan(s):
                        ok = False
                if ok:                      # group-uniform: every lane holds the same sums
                    for k in range(G):
                        if k % ws == t:
                            cuda.atomic.add(yacc, rows[row0 + r0 + k], accs[k])
                else:
                    careful(bytes_, values, x, rows, yacc, c0, nc, v0, g, vec, row0, col0, t,
                            mask, r0, r0 + G)
                r0 += G

        return block

    def branch(G, exact, rest):
        @inline_device
        def pick(words, bytes_, values, x, rows, yacc, c0, nc, v0, g, row0, col0, t, mask, accs):
            if g == G:
                exact(words, bytes_, values, x, rows, yacc, c0, nc, v0, g, row0, col0, t, mask, accs)
            else:
                rest(words, bytes_, values, x, rows, yacc, c0, nc, v0, g, row0, col0, t, mask, accs)
        return pick

    return _chains(make_block, branch, gmax, vs)


@functools.lru_cache(maxsize=None)
def _spmv_kernel(dtype_name: str, delta_bits: int, ws: int, vs: int, cw: int, lw: int,
                 cfg: ECCSRConfig):
    gmax = cfg.rows_per_pass
    short_block, long_block = _spmv_parts(dtype_name, delta_bits, ws, vs, cw, lw, gmax)
    C = _code_parts(delta_bits, ws, vs, cw)
    group_mask = C["group_mask"]
    geometry = _block_geometry(C)

    @cuda.jit
    def ec_csr_spmv(set_desc, ptr, rows, base, words, bytes_, values, x, yacc):
        """Thread i: lane i % warp_size of block i // warp_size. The lane walks its stored
        columns vec at a time (its chunk slots), g accumulators (slices of rows_per_pass
        rows), then the group reduces and adds each row's sum into yacc (float32) with an
        atomic. yacc must be zero where the caller wants the plain product."""
        tid = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
        blk = tid // ws
        t = tid % ws
        if blk >= ptr.shape[0] - 1:
            return
        mask = group_mask(cuda.threadIdx.x % WARP - t)
        g, vec, row0, c0, nc, v0, col0 = geometry(set_desc, ptr, base, blk, t, ws)
        accs = cuda.local.array(gmax, np.float32)
        if vs > 1 and vec > 1:
            long_block(words, bytes_, values, x, rows, yacc, c0, nc, v0, g, row0, col0, t, mask, accs)
        else:
            short_block(words, bytes_, values, x, rows, yacc, c0, nc, v0, g, row0, col0, t, mask, accs)

    return ec_csr_spmv


# ---------------------------------------------------------------------------------------------
# SpMV, 32-bit path (ECCSRConfig.index32): uint32 positions, unrolled column loop
# ---------------------------------------------------------------------------------------------

_U32 = np.uint32


@functools.lru_cache(maxsize=None)
def _code_parts32(delta_bits: int, ws: int, vs: int, cw: int):
    """As :func:`_code_parts` with uint32 positions: ``long_codes(words, bytes_, p)``,
    ``short_word(words, bytes_, p)`` (the code of entry p as a word), ``code(w, j)`` (uint32),
    ``find_set(set_desc, blk)``. Every index is unsigned, so numba emits no wraparound."""
    b = delta_bits
    WT = np.uint64 if vs * b > 32 else np.uint32
    cmask = (1 << b) - 1
    wbits = cw * b
    nw = vs // cw
    U32 = _U32
    cw_shift = int(cw).bit_length() - 1

    if b == 8:
        @inline_device
        def short_code(bytes_, p):
            return U32(bytes_[p])
    else:
        @inline_device
        def short_code(bytes_, p):
            return U32(U32(bytes_[U32(p >> U32(1))]) >> U32(U32(p & U32(1)) * U32(4))) & U32(15)

    if wbits >= 8:
        @inline_device
        def long_codes(words, bytes_, p):
            i = U32(p >> U32(cw_shift))
            w = WT(words[i])
            for k in range(1, nw):
                w = WT(w | WT(WT(words[U32(i + U32(k))]) << WT(k * wbits)))
            return w
    else:                                        # 4-bit codes, one nibble at a time
        @inline_device
        def long_codes(words, bytes_, p):
            w = WT(0)
            for k in range(vs):
                w = WT(w | WT(WT(short_code(bytes_, U32(p + U32(k)))) << WT(k * 4)))
            return w

    @inline_device
    def short_word(words, bytes_, p):
        return short_code(bytes_, p)

    @inline_device
    def code(w, j):
        return U32(WT(w >> WT(j * b)) & WT(cmask))

    @inline_device
    def find_set(set_desc, blk):
        n_sets = U32(set_desc.shape[0] // _NF)
        s = U32(0)
        while U32(s + U32(1)) < n_sets and U32(set_desc[U32(U32(s + U32(1)) * U32(_NF) + U32(2))]) <= blk:
            s = U32(s + U32(1))
        return U32(s * U32(_NF))

    return dict(short_code=short_code, long_codes=long_codes, short_word=short_word, code=code,
                find_set=find_set)


def _block_geometry32(C):
    """``geometry(set_desc, ptr, base, blk, t)``: (g, vec, first row entry, first code,
    stored columns, first value, lane base column) of block ``blk`` for lane ``t``, uint32."""
    find_set = C["find_set"]
    U32 = _U32

    @inline_device
    def geometry(set_desc, ptr, base, blk, t, ws):
        s = find_set(set_desc, blk)
        g = U32(set_desc[s])
        vec = U32(set_desc[U32(s + U32(1))])
        first = U32(set_desc[U32(s + U32(2))])
        row0 = U32(U32(set_desc[U32(s + U32(3))]) + U32(U32(blk - first) * g))
        c0 = U32(ptr[blk])
        nc = U32(U32(ptr[U32(blk + U32(1))]) - c0)
        v0 = U32(U32(set_desc[U32(s + U32(4))]) + U32(U32(c0 - U32(ptr[first])) * g))
        col0 = U32(base[U32(U32(blk * U32(ws)) + t)])
        return g, vec, row0, c0, nc, v0, col0

    return geometry


@functools.lru_cache(maxsize=None)
def _spmv_parts32(dtype_name: str, delta_bits: int, ws: int, vs: int, cw: int, lw: int,
                  gmax: int, unroll: int):
    """:func:`_spmv_parts` on uint32 positions, the exact-G walkers unrolled ``unroll``
    iterations: one step loads the code words and values of all its iterations first
    (nested tuples), then decodes the columns, gathers x and does the FMAs in order (the
    same products, summed in the same order, as the int64 path)."""
    acc = acc_type(dtype_name)
    C = _code_parts32(delta_bits, ws, vs, cw)
    code = C["code"]
    group_sum = _code_parts(delta_bits, ws, vs, cw)["group_sum"]
    careful = _spmv_careful(dtype_name, delta_bits, ws, vs, cw)
    P = 16 // np.dtype(dtype_name).itemsize
    U32 = _U32

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
            return _make_block_body(walk, G, vec, ws, group_sum, careful)

        grp_load = _tuple_loader(vec * G, lw)

        def make_loads(u):
            """``loads(words, bytes_, values, p, c0, v0)``: the (code word, values) of ``u``
            consecutive iterations from position p, as nested pairs."""
            if u == 1:
                @inline_device
                def loads(words, bytes_, values, p, c0, v0):
                    return (load_w(words, bytes_, p),
                            grp_load(values, U32(v0 + U32(U32(p - c0) * U32(G)))))
                return loads
            half = make_loads(u // 2)
            off = (u // 2) * step

            @inline_device
            def loads2(words, bytes_, values, p, c0, v0):
                return (half(words, bytes_, values, p, c0, v0),
                        half(words, bytes_, values, U32(p + U32(off)), c0, v0))
            return loads2

        def make_compute(u):
            """``compute(L, x, col, accs) -> col``: the FMAs of loaded iterations ``L``."""
            if u == 1:
                @inline_device
                def compute(L, x, col, accs):
                    w = L[0]
                    vals = L[1]
                    for j in range(vec):
                        col = U32(col + code(w, j))
                        xv = acc(x[col])
                        for k in range(G):
                            accs[k] += acc(vals[j * G + k]) * xv
                    return col
                return compute
            half = make_compute(u // 2)

            @inline_device
            def compute2(L, x, col, accs):
                col = half(L[0], x, col, accs)
                return half(L[1], x, col, accs)
            return compute2

        steps = []
        u = unroll
        while u >= 1:
            steps.append((u, make_loads(u), make_compute(u)))
            u //= 2
        (U, loadU, compU), rest = steps[0], steps[1:]
        rest2 = rest[0] if len(rest) >= 1 else None
        rest1 = rest[1] if len(rest) >= 2 else None
        lastU = (U - 1) * step

        @inline_device
        def tail(words, bytes_, values, x, c0, v0, p, end, col, accs):
            """The 0 .. unroll-1 iterations left after the unrolled loop."""
            if rest2 is not None:
                u2, load2, comp2 = rest2
                if U32(p + U32((u2 - 1) * step)) < end:
                    L = load2(words, bytes_, values, p, c0, v0)
                    col = comp2(L, x, col, accs)
                    p = U32(p + U32(u2 * step))
            if rest1 is not None:
                u1, load1, comp1 = rest1
                if p < end:
                    L = load1(words, bytes_, values, p, c0, v0)
                    col = comp1(L, x, col, accs)
            return col

        @inline_device
        def walk(words, bytes_, values, x, c0, nc, v0, g, r0, col0, t, accs):
            """This lane's columns of a block of exactly G rows, ``unroll`` iterations (of
            vec columns) per step."""
            for k in range(G):
                accs[k] = acc(0)
            col = col0
            p = U32(c0 + U32(t * U32(vec)))
            end = U32(c0 + nc)
            while U32(p + U32(lastU)) < end:
                L = loadU(words, bytes_, values, p, c0, v0)
                col = compU(L, x, col, accs)
                p = U32(p + U32(U * step))
            tail(words, bytes_, values, x, c0, v0, p, end, col, accs)

        return _make_block_body(walk, G, vec, ws, group_sum, careful)

    def branch(G, exact, rest):
        @inline_device
        def pick(words, bytes_, values, x, rows, yacc, c0, nc, v0, g, row0, col0, t, mask, accs):
            if g == U32(G):
                exact(words, bytes_, values, x, rows, yacc, c0, nc, v0, g, row0, col0, t, mask, accs)
            else:
                rest(words, bytes_, values, x, rows, yacc, c0, nc, v0, g, row0, col0, t, mask, accs)
        return pick

    return _chains(make_block, branch, gmax, vs)


def _make_block_body(walk, G: int, vec: int, ws: int, group_sum, careful):
    """``block(...)``: walk slices of G rows, reduce each over the group, add the sums into
    yacc (row k of the slice by lane k % ws, one atomic each), or redo a non-finite slice on
    the careful (int64) path."""
    U32 = _U32
    i64 = np.int64

    @inline_device
    def block(words, bytes_, values, x, rows, yacc, c0, nc, v0, g, row0, col0, t, mask, accs):
        r0 = U32(0)
        while r0 < g:
            walk(words, bytes_, values, x, c0, nc, v0, g, r0, col0, t, accs)
            ok = True
            for k in range(G):
                s = group_sum(accs[k], mask)
                accs[k] = s
                if math.isinf(s) or math.isnan(s):
                    ok = False
            if ok:                      # group-uniform: every lane holds the same sums
                for k in range(G):
                    if U32(k % ws) == t:
                        cuda.atomic.add(yacc, rows[U32(U32(row0 + r0) + U32(k))], accs[k])
            else:
                careful(bytes_, values, x, rows, yacc, i64(c0), i64(nc), i64(v0), i64(g),
                        i64(vec), i64(row0), i64(col0), i64(t), mask, i64(r0), i64(r0) + G)
            r0 = U32(r0 + U32(G))

    return block


@functools.lru_cache(maxsize=None)
def _spmv_kernel32(dtype_name: str, delta_bits: int, ws: int, vs: int, cw: int, lw: int,
                   cfg: ECCSRConfig):
    """The SpMV kernel on uint32 positions (``ECCSRConfig.index32``; the caller checks
    ``DeviceECCSR.fits32``), with ``cfg.unroll`` and ``cfg.max_registers``."""
    gmax = cfg.rows_per_pass
    short_block, long_block = _spmv_parts32(dtype_name, delta_bits, ws, vs, cw, lw, gmax,
                                            cfg.unroll)
    group_mask = _code_parts(delta_bits, ws, vs, cw)["group_mask"]
    geometry = _block_geometry32(_code_parts32(delta_bits, ws, vs, cw))
    U32 = _U32

    @cuda.jit(**jit_options(max_registers=cfg.max_registers))
    def ec_csr_spmv32(set_desc, ptr, rows, base, words, bytes_, values, x, yacc):
        """As ``ec_csr_spmv``, every position a uint32."""
        tid = U32(U32(U32(cuda.blockIdx.x) * U32(cuda.blockDim.x)) + U32(cuda.threadIdx.x))
        blk = U32(tid // U32(ws))
        t = U32(tid % U32(ws))
        if blk >= U32(ptr.shape[0] - 1):
            return
        mask = group_mask(U32(cuda.threadIdx.x % WARP) - t)
        g, vec, row0, c0, nc, v0, col0 = geometry(set_desc, ptr, base, blk, t, ws)
        accs = cuda.local.array(gmax, np.float32)
        if vs > 1 and vec > U32(1):
            long_block(words, bytes_, values, x, rows, yacc, c0, nc, v0, g, row0, col0, t, mask, accs)
        else:
            short_block(words, bytes_, values, x, rows, yacc, c0, nc, v0, g, row0, col0, t, mask, accs)

    return ec_csr_spmv32
