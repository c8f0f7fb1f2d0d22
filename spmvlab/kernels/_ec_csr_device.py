"""Device functions shared by the EC-CSR kernels (kernels/ec_csr.py, _ec_csr_spmv.py,
_ec_csr_spmm.py): vector loads of value tuples, the code loads and group reductions, a
block's geometry read from the set descriptors, and the chains of block walkers
specialised per granularity. The thread/data mapping they implement is described in
kernels/ec_csr.py.
"""

from __future__ import annotations

import functools

import numpy as np

from .._cuda import cuda, inline_device
from ._common import WARP
from ._intrinsics import vload1, vload2, vload4, vload8

_NF = 5                     # fields per set descriptor (reference.ec_csr.SET_FIELDS)
_VLOAD = {1: vload1, 2: vload2, 4: vload4, 8: vload8}


def _tuple_loader(n: int, piece: int):
    """``load(arr, i)``: the tuple ``arr[i:i + n]`` read in aligned vector loads of ``piece``
    elements (``n`` and ``piece`` powers of two, ``piece <= n``)."""
    piece = min(piece, n, 8)
    if n == piece:
        return _VLOAD[piece]
    half = _tuple_loader(n // 2, piece)
    h = n // 2

    @inline_device
    def load(arr, i):
        return half(arr, i) + half(arr, i + h)

    return load


@functools.lru_cache(maxsize=None)
def _code_parts(delta_bits: int, ws: int, vs: int, cw: int):
    """Code loads: ``long_codes(words, bytes_, p)`` the ``vs`` codes of entries [p, p + vs)
    as one integer (code j at bit ``j * delta_bits``; p a multiple of ``cw``),
    ``short_code(bytes_, p)`` the code of entry p, ``code(w, j)`` code j of such an integer;
    ``group_sum(v, mask)`` the butterfly sum over a group of ``ws`` lanes;
    ``find_set(set_desc, blk)`` the set holding block ``blk``."""
    b = delta_bits
    WT = np.uint64 if vs * b > 32 else np.uint32
    cmask = (1 << b) - 1
    wbits = cw * b
    nw = vs // cw
    int64 = np.int64

    if b == 8:
        @inline_device
        def short_code(bytes_, p):
            return int64(bytes_[p])
    else:
        @inline_device
        def short_code(bytes_, p):
            return int64((bytes_[p >> 1] >> ((p & 1) * 4)) & 15)

    if wbits >= 8:
        @inline_device
        def long_codes(words, bytes_, p):
            i = p // cw
            w = WT(words[i])
            for k in range(1, nw):
                w = WT(w | WT(WT(words[i + k]) << WT(k * wbits)))
            return w
    else:                                        # 4-bit codes, one nibble at a time
        @inline_device
        def long_codes(words, bytes_, p):
            w = WT(0)
            for k in range(vs):
                w = WT(w | WT(WT(short_code(bytes_, p + k)) << WT(k * 4)))
            return w

    @inline_device
    def short_word(words, bytes_, p):
        return short_code(bytes_, p)

    @inline_device
    def code(w, j):
        return int64(WT(w >> WT(j * b)) & WT(cmask))

    @inline_device
    def group_sum(v, mask):
        off = ws // 2
        while off > 0:
            v += cuda.shfl_xor_sync(mask, v, off)
            off //= 2
        return v

    @inline_device
    def find_set(set_desc, blk):
        n_sets = set_desc.shape[0] // _NF
        s = 0
        while s + 1 < n_sets and set_desc[(s + 1) * _NF + 2] <= blk:
            s += 1
        return s * _NF

    @inline_device
    def group_mask(lane0):
        if ws == WARP:
            return np.uint32(0xFFFFFFFF)
        return np.uint32(np.uint32((1 << ws) - 1) << np.uint32(lane0))

    return dict(short_code=short_code, long_codes=long_codes, short_word=short_word, code=code, group_sum=group_sum,
                find_set=find_set, group_mask=group_mask)


def _block_geometry(C):
    """``geometry(set_desc, ptr, base, blk, t)``: (g, vec, first row entry, first code,
    stored columns, first value, lane base column) of block ``blk`` for lane ``t``."""
    find_set = C["find_set"]

    @inline_device
    def geometry(set_desc, ptr, base, blk, t, ws):
        s = find_set(set_desc, blk)
        g = np.int64(set_desc[s])
        vec = np.int64(set_desc[s + 1])
        first = set_desc[s + 2]
        row0 = set_desc[s + 3] + (blk - first) * g
        c0 = np.int64(ptr[blk])
        nc = np.int64(ptr[blk + 1]) - c0
        v0 = set_desc[s + 4] + (c0 - ptr[first]) * g
        return g, vec, np.int64(row0), c0, nc, np.int64(v0), np.int64(base[blk * ws + t])

    return geometry


def _chains(make_block, branch, gmax: int, vs: int):
    """The (short, long) block walkers shared by SpMV and SpMM: exact versions for the
    granularities below ``gmax`` picked by ``branch``, the ``gmax``-row sliced walker for
    the rest; ``long`` reads ``vs`` columns at a time (the same as ``short`` when 1)."""
    def chain(vec):
        fn = make_block(gmax, vec, True)
        G = gmax // 2
        while G >= 1:
            fn = branch(G, make_block(G, vec, False), fn)
            G //= 2
        return fn

    short = chain(1)
    return short, (chain(vs) if vs > 1 else short)
