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
def _code_parts(delta_bits: int, ws: int, vs: int, cw: int, index: str = "int64"):
    """Code loads: ``long_codes(words, bytes_, p)`` the ``vs`` codes of entries [p, p + vs)
    as one integer (code j at bit ``j * delta_bits``; p a multiple of ``cw``),
    ``short_code(bytes_, p)`` the code of entry p, ``short_word(words, bytes_, p)`` the same
    with the long loader's signature, ``code(w, j)`` code j of such an integer;
    ``group_sum(v, mask)`` the butterfly sum over a group of ``ws`` lanes;
    ``find_set(set_desc, blk)`` the set holding block ``blk``; ``group_mask(lane0)``.

    Positions and codes are of type ``index`` ("int64", or "uint32" where every array fits:
    unsigned 32-bit arithmetic about halves the instructions of the address math, and numba
    emits no wraparound checks for unsigned indices). Every operation casts back to that type
    because numba widens mixed int arithmetic to int64."""
    b = delta_bits
    WT = np.uint64 if vs * b > 32 else np.uint32
    IT = np.dtype(index).type
    cmask = (1 << b) - 1
    wbits = cw * b
    nw = vs // cw
    cw_shift = int(cw).bit_length() - 1

    if b == 8:
        @inline_device
        def short_code(bytes_, p):
            return IT(bytes_[p])
    else:
        @inline_device
        def short_code(bytes_, p):
            return IT(IT(bytes_[IT(p >> IT(1))]) >> IT(IT(p & IT(1)) * IT(4))) & IT(15)

    if wbits >= 8:
        @inline_device
        def long_codes(words, bytes_, p):
            i = IT(p >> IT(cw_shift))
            w = WT(words[i])
            for k in range(1, nw):
                w = WT(w | WT(WT(words[IT(i + IT(k))]) << WT(k * wbits)))
            return w
    else:                                        # 4-bit codes, one nibble at a time
        @inline_device
        def long_codes(words, bytes_, p):
            w = WT(0)
            for k in range(vs):
                w = WT(w | WT(WT(short_code(bytes_, IT(p + IT(k)))) << WT(k * 4)))
            return w

    @inline_device
    def short_word(words, bytes_, p):
        return short_code(bytes_, p)

    @inline_device
    def code(w, j):
        return IT(WT(w >> WT(j * b)) & WT(cmask))

    @inline_device
    def group_sum(v, mask):
        off = ws // 2
        while off > 0:
            v += cuda.shfl_xor_sync(mask, v, off)
            off //= 2
        return v

    @inline_device
    def find_set(set_desc, blk):
        n_sets = IT(set_desc.shape[0] // _NF)
        s = IT(0)
        while IT(s + IT(1)) < n_sets and IT(set_desc[IT(IT(s + IT(1)) * IT(_NF) + IT(2))]) <= blk:
            s = IT(s + IT(1))
        return IT(s * IT(_NF))

    @inline_device
    def group_mask(lane0):
        if ws == WARP:
            return np.uint32(0xFFFFFFFF)
        return np.uint32(np.uint32((1 << ws) - 1) << np.uint32(lane0))

    @inline_device
    def geometry(set_desc, ptr, base, blk, t, ws):
        """(g, vec, first row entry, first code, stored columns, first value, lane base
        column) of block ``blk`` for lane ``t``."""
        s = find_set(set_desc, blk)
        g = IT(set_desc[s])
        vec = IT(set_desc[IT(s + IT(1))])
        first = IT(set_desc[IT(s + IT(2))])
        row0 = IT(IT(set_desc[IT(s + IT(3))]) + IT(IT(blk - first) * g))
        c0 = IT(ptr[blk])
        nc = IT(IT(ptr[IT(blk + IT(1))]) - c0)
        v0 = IT(IT(set_desc[IT(s + IT(4))]) + IT(IT(c0 - IT(ptr[first])) * g))
        col0 = IT(base[IT(IT(blk * IT(ws)) + t)])
        return g, vec, row0, c0, nc, v0, col0

    return dict(short_code=short_code, long_codes=long_codes, short_word=short_word, code=code,
                group_sum=group_sum, find_set=find_set, group_mask=group_mask, geometry=geometry,
                index=IT)


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
