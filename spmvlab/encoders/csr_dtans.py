"""Fast CSR-dtANS encoder (numba, CPU): the same bytes as ``reference.csr_dtans.encode``.

Stages (choices made here):

1. canonical CSR exactly as the reference (``reference._common.canonical_csr``: the same
   errors and the same single lossy warning);
2. column deltas per row (compiled, ``_deltas``);
3. the histograms (compiled, a hash count: ``_histogram``) and the table choice with the reference's own
   ``reference.dtans.choose_multiplicities``: only the ``K + 1`` most frequent symbols of a
   domain are passed as a dict, the other occurrences as ``rest`` (the choice depends on no
   more, see its docstring), so millions of distinct values cost no Python dict;
4. per warp (compiled, ``_encode_warps``, chunks of warps in parallel with ``prange``, each
   warp written at an upper bound of the words before it, then ``_compact``): every row's
   symbols are looked up in the kept symbols (an open-addressing hash table; a miss is the
   escape), coded by the shared ``reference.codec.dtans.encode_stream`` (base and digit
   pass, words tagged with event keys), and the warp's words are put in lockstep reading
   order by a counting sort over the events (``_order_warp``).

All symbols travel as uint64 (value bit patterns of float16/32/64 and deltas alike), so each
compiled function has one signature for every dtype and both parameter sets.
"""
from __future__ import annotations

import numpy as np
from numba import get_num_threads, njit, prange

from reference import csr_dtans as R
from reference import dtans
from reference._common import (
    OptionError, canonical_csr, csr_value_array, index_dtype_for, problem, resolve_dtype,
)
from reference.codec.dtans import encode_stream

from ..codec import njit as _codec_njit

__all__ = ["encode"]

_encode_stream = _codec_njit(encode_stream)


@njit(cache=True, nogil=True, parallel=True)
def _deltas(indptr, cols, per_row, diagonal, mask, out):
    """``out[k]`` = column step of nonzero ``k`` from the previous one of its unit (for a
    unit's first: from 0, or with ``diagonal`` from the unit's row ``u // per_row``), as
    uint64 & ``mask``; units in parallel."""
    for r in prange(indptr.size - 1):
        prev = r // per_row if diagonal else 0
        for k in range(indptr[r], indptr[r + 1]):
            c = cols[k]
            out[k] = np.uint64(c - prev) & mask
            prev = c


_HASH_MUL = np.uint64(0x9E3779B97F4A7C15)


@njit(cache=True, nogil=True)
def _hash_table(keys):
    """Open-addressing hash table (linear probing, Fibonacci hashing) of the kept symbols:
    (slot -> index into ``keys`` + 1, 0 empty; its shift). At most half full."""
    bits = 4
    while (1 << bits) < 2 * keys.size:
        bits += 1
    table = np.zeros(1 << bits, np.int64)
    shift = np.uint64(64 - bits)
    for i in range(keys.size):
        h = np.int64((keys[i] * _HASH_MUL) >> shift)
        while table[h] != 0:
            h = (h + 1) & ((1 << bits) - 1)
        table[h] = i + 1
    return table, shift


@njit(cache=True, nogil=True)
def _lookup(sym, keys, hashed, shift, first, base, esc_first, esc_base, raw_words, i,
            o_first, o_base, o_esc, o_raw, o_rw):
    """Position ``i`` of a stream: ``sym``'s slot and base from the kept ``keys`` (through
    their hash table), or the escape's (then its raw bits and word count)."""
    mask = hashed.size - 1
    h = np.int64((sym * _HASH_MUL) >> shift)
    while True:
        x = hashed[h] - 1
        if x < 0 or keys[x] == sym:
            break
        h = (h + 1) & mask
    if x >= 0:
        o_first[i] = first[x]
        o_base[i] = base[x]
        o_esc[i] = 0
    else:
        o_first[i] = esc_first
        o_base[i] = esc_base
        o_esc[i] = 1
        o_raw[i] = sym
        o_rw[i] = raw_words


@njit(cache=True, nogil=True)
def _order_warp(buf_w, buf_k, cnt, lanes, buckets, out, at):
    """Write the warp's ``cnt`` tagged words to ``out[at:]`` in key order. Keys are
    ``event * lanes + lane`` and a lane meets an event once, written lane after lane: a
    counting sort by event (stable, so lanes stay in order) when the events span at most
    ``buckets.size``, else a sort of (key, word) packed in one uint64 or an argsort."""
    if cnt == 0:
        return
    top = buf_k[:cnt].max()
    n_ev = top // lanes + 1
    if n_ev <= buckets.size:
        buckets[:n_ev] = 0
        for i in range(cnt):
            buckets[buf_k[i] // lanes] += 1
        acc = 0
        for e in range(n_ev):
            c = buckets[e]
            buckets[e] = acc
            acc += c
        for i in range(cnt):
            e = buf_k[i] // lanes
            out[at + buckets[e]] = buf_w[i]
            buckets[e] += 1
    elif top < (1 << 32):
        for i in range(cnt):
            buf_w[i] |= np.uint64(buf_k[i]) << np.uint64(32)
        packed = np.sort(buf_w[:cnt])
        for i in range(cnt):
            out[at + i] = packed[i] & np.uint64(0xFFFFFFFF)
    else:
        order = np.argsort(buf_k[:cnt])
        for i in range(cnt):
            out[at + i] = buf_w[order[i]]


@njit(cache=True, nogil=True, parallel=True)
def _encode_warps(indptr, deltas, vbits, dk, df, db, desc, vk, vf, vb, vesc, rws,
                  geo, bound_ptr, n_chunks, out, src_ptr, n_words):
    """Encode every warp's rows into ``out`` (uint32 words) at ``src_ptr[w]``, its word count
    into ``n_words[w]``. Warps are split into ``n_chunks`` contiguous chunks run in parallel
    (``prange``), each with its own scratch, writing its warps one after the other from the
    bound of the words before it (``bound_ptr``: prefix sums of an upper bound of each
    warp's words), so only the pages of words written are touched. ``desc``/``vesc``: (escape's first slot, its
    base) of each table; ``rws``: raw words of an escaped (delta, value); ``geo``: (l, f,
    o, word_bits, slot_bits, n_k, n_e, lanes)."""
    l, f, o, wb, sb, n_k, n_e, lanes = geo[0], geo[1], geo[2], geo[3], geo[4], geo[5], geo[6], geo[7]
    n_rows = indptr.size - 1
    n_warps = n_words.size
    max_len = 0
    max_bound = 0
    for wi in range(n_warps):
        max_bound = max(max_bound, bound_ptr[wi + 1] - bound_ptr[wi])
        for row in range(wi * lanes, min(n_rows, (wi + 1) * lanes)):
            max_len = max(max_len, indptr[row + 1] - indptr[row])
    nmax = 2 * max_len
    dh, dshift = _hash_table(dk)
    vh, vshift = _hash_table(vk)
    per = (n_warps + n_chunks - 1) // n_chunks
    for ch in prange(n_chunks):
        first = np.zeros(nmax, np.int64)
        base = np.ones(nmax, np.uint64)
        esc = np.zeros(nmax, np.uint8)
        raw = np.zeros(nmax, np.uint64)
        rw = np.zeros(nmax, np.int64)
        taken = np.zeros((nmax // l + 1) * f, np.bool_)
        slots = np.zeros(l, np.int64)
        w = np.zeros(o, np.int64)
        buf_w = np.zeros(max_bound, np.uint64)
        buf_k = np.zeros(max_bound, np.int64)
        buckets = np.zeros(4 * max_bound + 4096, np.int64)
        at = bound_ptr[min(n_warps, ch * per)]
        for wi in range(ch * per, min(n_warps, (ch + 1) * per)):
            cnt = 0
            for t in range(lanes):
                row = wi * lanes + t
                if row >= n_rows:
                    break
                a = indptr[row]
                L = indptr[row + 1] - a
                for i in range(L):
                    _lookup(deltas[a + i], dk, dh, dshift, df, db, desc[0], desc[1], rws[0], 2 * i,
                            first, base, esc, raw, rw)
                    _lookup(vbits[a + i], vk, vh, vshift, vf, vb, vesc[0], vesc[1], rws[1], 2 * i + 1,
                            first, base, esc, raw, rw)
                cnt = _encode_stream(first, base, esc, raw, rw, 2 * L, l, f, o, wb, sb, n_k, n_e,
                                     lanes, t, taken, slots, w, buf_w, buf_k, cnt)
            _order_warp(buf_w, buf_k, cnt, lanes, buckets, out, at)
            src_ptr[wi] = at
            n_words[wi] = cnt
            at += cnt


@njit(cache=True, nogil=True, parallel=True)
def _compact(out, src_ptr, warp_ptr, words):
    """Copy warp ``w``'s words from ``out[src_ptr[w]:]`` to ``words[warp_ptr[w]:]``; warps
    in parallel."""
    for wi in prange(warp_ptr.size - 1):
        a = src_ptr[wi]
        b = warp_ptr[wi]
        for i in range(warp_ptr[wi + 1] - b):
            words[b + i] = out[a + i]


@njit(cache=True, nogil=True)
def _insert(keys, counts, shift, sym, add):
    """Add ``add`` occurrences of ``sym`` to the hash count; returns 1 if the symbol is new."""
    mask = keys.size - 1
    h = np.int64((sym * _HASH_MUL) >> shift)
    while counts[h] != 0 and keys[h] != sym:
        h = (h + 1) & mask
    new = 1 if counts[h] == 0 else 0
    keys[h] = sym
    counts[h] += add
    return new


@njit(cache=True, nogil=True)
def _histogram(symbols):
    """(distinct symbols, their counts), unordered: one pass with an open-addressing hash
    table that doubles when half full (``np.unique`` would sort every occurrence); symbols
    below ``2 * len + 1024`` (deltas, float16 bit patterns) are counted in a plain array."""
    top = symbols.max() if symbols.size else np.uint64(0)
    if top < np.uint64(2 * symbols.size + 1024):
        direct = np.zeros(np.int64(top) + 1, np.int64)
        for i in range(symbols.size):
            direct[np.int64(symbols[i])] += 1
        seen = np.nonzero(direct)[0]
        return seen.astype(np.uint64), direct[seen]
    bits = 10
    keys = np.zeros(1 << bits, np.uint64)
    counts = np.zeros(1 << bits, np.int64)
    used = 0
    for i in range(symbols.size):
        used += _insert(keys, counts, np.uint64(64 - bits), symbols[i], 1)
        if 2 * used > keys.size:
            bits += 1
            k2 = np.zeros(1 << bits, np.uint64)
            c2 = np.zeros(1 << bits, np.int64)
            for j in range(keys.size):
                if counts[j]:
                    _insert(k2, c2, np.uint64(64 - bits), keys[j], counts[j])
            keys, counts = k2, c2
    full = counts > 0
    return keys[full], counts[full]


def _chunks(n_warps: int) -> int:
    """Parallel chunks of warps: 4 per numba thread (at least 1, at most one per warp)."""
    return max(1, min(n_warps, 4 * get_num_threads()))


def _top(symbols: np.ndarray, K: int):
    """(counts dict of the ``K + 1`` first symbols in the kept order, the others'
    occurrences) from a domain's symbols (uint64)."""
    keys, counts = _histogram(symbols)
    by_symbol = np.argsort(keys, kind="stable")
    uniq, cnt = keys[by_symbol], counts[by_symbol]
    order = np.argsort(-cnt, kind="stable")             # by count, ties by symbol
    head = order[:K + 1]
    rest = int(cnt[order[K + 1:]].sum()) if order.size > K + 1 else 0
    keep = np.sort(head)                                # the dict in symbol order, as count()
    return dict(zip(uniq[keep].tolist(), cnt[keep].tolist())), rest


def _lookup_table(q: dict):
    """(sorted kept symbols uint64, their first slots int64, bases uint64, (escape's first
    slot, base)) of multiplicities ``q`` (slots in mapping order, as ``spread``)."""
    syms, firsts, bases, at, esc = [], [], [], 0, (0, 1)
    for s, c in q.items():
        if s is dtans.ESCAPE:
            esc = (at, int(c))
        else:
            syms.append(int(s))
            firsts.append(at)
            bases.append(int(c))
        at += int(c)
    keys = np.array(syms, dtype=np.uint64)
    order = np.argsort(keys, kind="stable")
    return (keys[order], np.array(firsts, np.int64)[order], np.array(bases, np.uint64)[order],
            np.array(esc, np.int64))


def encode(A, dtype=None, lossy: bool = False, params: str = "paper",
           lanes_per_row: int = 1, rows_per_lane: int = 1,
           first_delta: str = "column") -> R.CSRDtansMatrix:
    """Any scipy.sparse matrix or dense 2-D array -> :class:`reference.csr_dtans.CSRDtansMatrix`,
    byte for byte ``reference.csr_dtans.encode(A, dtype, lossy, params, lanes_per_row,
    rows_per_lane, first_delta)`` (and its errors and warning; ``rows_per_lane="auto"`` the
    same pick, ``reference.csr_dtans.choose_rows_per_lane``). Deltas restart at each unit
    (row or piece; from 0, or from its row with ``first_delta="diagonal"``)
    and the streams (pieces, rows or groups of rows: ``reference.csr_dtans.stream_ptr``) are
    coded as rows."""
    if params not in R.PARAMS:
        raise OptionError(problem("params", f"one of {sorted(R.PARAMS)}", repr(params),
                                  "pass params='paper' or params='toy'"))
    lanes = R.check_lanes_per_row(lanes_per_row)
    rpl = R.check_rows_per_lane(rows_per_lane, lanes)
    first_delta = R.check_first_delta(first_delta)
    P = R.PARAMS[params]
    dt = resolve_dtype(A, dtype)
    csr = canonical_csr(A, dt, lossy)
    n_rows, n_cols = (int(s) for s in csr.shape)
    vals = csr_value_array(csr, dt)
    uint = R._uint(dt)
    vbits = vals.view(uint).astype(np.uint64)
    indptr = csr.indptr.astype(np.int64)
    cols = csr.indices.astype(np.int64)
    rpl = R.choose_rows_per_lane(rpl, indptr, lanes, cols, dt.itemsize)
    uptr = R.stream_ptr(indptr, lanes)             # units: a delta from 0 at each start
    sptr = R.stream_ptr(indptr, lanes, rpl)        # streams: the lanes' symbol sequences
    n_streams = sptr.size - 1
    nnz = int(cols.size)
    deltas = np.empty(nnz, np.uint64)
    vraw, draw = dt.itemsize * 8, R.delta_raw_bits(n_cols)
    diagonal = first_delta == "diagonal"
    mask = np.uint64((1 << draw) - 1 if diagonal and draw < 64 else (1 << 64) - 1)
    _deltas(uptr, cols, np.int64(lanes), diagonal, mask, deltas)
    K = int(P.K)
    vc, vrest = _top(vbits, K)
    dc, drest = _top(deltas, K)
    vq = dtans.choose_multiplicities(vc, P, vraw, vraw + 16, rest=vrest)
    dq = dtans.choose_multiplicities(dc, P, draw, index_dtype_for(nnz, n_rows, n_cols).itemsize * 8 + 16,
                                     rest=drest)
    n_warps = -(-n_streams // R.WARP)
    warp_ptr = np.zeros(n_warps + 1, np.int64)
    if nnz:
        dk, df, db, desc = _lookup_table(dq)
        vk, vf, vb, vesc = _lookup_table(vq)
        rws = np.array([P.raw_words(draw), P.raw_words(vraw)], np.int64)
        geo = np.array([P.l, P.f, P.o, P.word_bits, P.slot_bits, max(P.l, P.o), int(rws.max()),
                        R.WARP], np.int64)
        lengths = np.diff(sptr)
        n_seg = (2 * lengths + P.l - 1) // P.l
        bound = np.zeros(n_warps * R.WARP, np.int64)
        bound[:n_streams] = P.o * n_seg + lengths * rws.sum()
        bound_ptr = np.concatenate(([0], np.cumsum(bound.reshape(n_warps, R.WARP).sum(axis=1))))
        out = np.empty(int(bound_ptr[-1]), np.uint32)      # words are at most 32 bits
        src_ptr = np.zeros(n_warps, np.int64)
        n_words = np.zeros(n_warps, np.int64)
        _encode_warps(sptr, deltas, vbits, dk, df, db, desc, vk, vf, vb, vesc, rws, geo,
                      bound_ptr, _chunks(n_warps), out, src_ptr, n_words)
        warp_ptr[1:] = np.cumsum(n_words)
        words = np.empty(int(warp_ptr[-1]), P.word_dtype)
        _compact(out, src_ptr, warp_ptr, words)
    else:
        words = np.zeros(0, P.word_dtype)
    idx = index_dtype_for(nnz, words.size, n_rows, n_cols)

    v_syms, v_counts = R.stored_table(vq, dt, uint)
    d_syms, d_counts = R.stored_delta_table(dq, idx, n_cols, first_delta)
    return R.CSRDtansMatrix(values=v_syms, value_counts=v_counts, deltas=d_syms, delta_counts=d_counts,
                            row_lengths=np.diff(indptr).astype(idx), warp_ptr=warp_ptr.astype(idx),
                            words=words, shape=(n_rows, n_cols), params=params,
                            lanes_per_row=lanes, rows_per_lane=rpl, first_delta=first_delta)
