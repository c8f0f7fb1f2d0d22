"""dtANS per-stream steps in the numba subset: ``pack`` and the base + digit passes of one
stream, with every word tagged by a sortable event key (:mod:`reference.dtans` is the
specification; this is the same coder over arrays, for ``spmvlab.encoders.csr_dtans``).

Shared codec code (see :mod:`reference.codec`): no argument checks. Choices made here:

* A symbol position ``p`` of a stream is given by arrays, not by a table object:
  ``first[p]`` (its first slot, int64), ``base[p]`` (its slot count, uint64), ``esc[p]``
  (nonzero: the slot is the escape's), ``raw[p]`` (the escaped symbol's bits, uint64) and
  ``raw_words[p]`` (words an escape takes). The caller does the table look-up.
* The decoder state ``d`` and radix ``r`` are uint64: this holds for parameters with
  ``M**ceil(l / f) * W <= 2**64`` and ``word_bits <= 32`` (the ``paper`` and ``toy`` sets),
  the bound :class:`reference.dtans.Params` already asks (``M**ceil(l/f) <= W``) plus
  ``W <= 2**32``.
* The event ``(segment j, phase, k, e)`` of :mod:`reference.dtans` becomes the int64 key
  ``(((j * 4 + phase) * n_k + k) * n_e + e) * lanes + lane`` with ``n_k = max(l, o)`` and
  ``n_e`` the most words of any escape: sorting the keys of all lanes of a warp gives the
  lockstep reading order, lane order within an event (``reference.csr_dtans``).
"""
import numpy as np

INIT, ESC, CHECK, LOAD = 0, 1, 2, 3


def pack_words(slots, slot_bits, word_bits, out):
    """``reference.dtans.pack`` into ``out`` (int64 [o], the first word most significant) of
    ``slots`` (int64 [l], the first least significant), bit field by bit field (no integer
    wider than a word)."""
    o = out.size
    for k in range(o):
        out[k] = 0
    for i in range(slots.size):
        v = slots[i]
        off = i * slot_bits
        rem = slot_bits
        while rem > 0:
            wi = off // word_bits
            sh = off - wi * word_bits
            take = min(word_bits - sh, rem)
            out[o - 1 - wi] |= (v & ((1 << take) - 1)) << sh
            v >>= take
            off += take
            rem -= take


def event_key(j, phase, k, e, n_k, n_e, lanes, lane):
    """The sortable key of event ``(j, phase, k, e)`` of lane ``lane`` (module docstring)."""
    return (((j * 4 + phase) * n_k + k) * n_e + e) * lanes + lane


def encode_stream(first, base, esc, raw, raw_words, n, l, f, o, word_bits, slot_bits,
                  n_k, n_e, lanes, lane, taken, slots, w, out_words, out_keys, pos):
    """Words and event keys of one stream of ``n`` symbols (positions ``0 .. n-1`` of the
    arrays) written at ``out_words[pos:]``/``out_keys[pos:]``, in the reverse of reading
    order; returns the new ``pos``. Scratch: ``taken`` (bool, at least ``(S - 1) * f``),
    ``slots`` (int64 [l]), ``w`` (int64 [o]). ``reference.dtans.encode_events`` exactly:
    base pass forward, digit pass backward, escapes at their segment."""
    n_seg = (n + l - 1) // l
    if n_seg == 0:
        return pos
    W = 1 << word_bits
    Wu = np.uint64(W)
    mask = np.uint64(W - 1)
    # base pass: which checks take their word from the state
    r = np.uint64(1)
    for j in range(n_seg - 1):
        for g in range(f):
            for k in range(g * l // f, (g + 1) * l // f):
                r = r * base[j * l + k]
            t = r >= Wu
            taken[j * f + g] = t
            if t:
                r = r // Wu
    # digit pass, backward from the last segment
    j = n_seg - 1
    for k in range(l):
        p = j * l + k
        slots[k] = first[p] if p < n else 0
    for k in range(l - 1, -1, -1):
        p = j * l + k
        if p < n and esc[p]:
            for e in range(raw_words[p] - 1, -1, -1):
                out_words[pos] = (raw[p] >> np.uint64(e * word_bits)) & mask
                out_keys[pos] = event_key(j, ESC, k, e, n_k, n_e, lanes, lane)
                pos += 1
    d = np.uint64(0)
    for j in range(n_seg - 2, -1, -1):
        pack_words(slots, slot_bits, word_bits, w)
        for k in range(o - 1, f - 1, -1):
            out_words[pos] = w[k]
            out_keys[pos] = event_key(j, LOAD, k, 0, n_k, n_e, lanes, lane)
            pos += 1
        for g in range(f - 1, -1, -1):
            if taken[j * f + g]:
                d = d * Wu + np.uint64(w[g])
            else:
                out_words[pos] = w[g]
                out_keys[pos] = event_key(j, CHECK, g, 0, n_k, n_e, lanes, lane)
                pos += 1
            for k in range((g + 1) * l // f - 1, g * l // f - 1, -1):
                p = j * l + k
                b = base[p]
                digit = d % b
                d = d // b
                slots[k] = first[p] + int(digit)
        for k in range(l - 1, -1, -1):
            p = j * l + k
            if esc[p]:
                for e in range(raw_words[p] - 1, -1, -1):
                    out_words[pos] = (raw[p] >> np.uint64(e * word_bits)) & mask
                    out_keys[pos] = event_key(j, ESC, k, e, n_k, n_e, lanes, lane)
                    pos += 1
    pack_words(slots, slot_bits, word_bits, w)
    for k in range(o - 1, -1, -1):
        out_words[pos] = w[k]
        out_keys[pos] = event_key(0, INIT, k, 0, n_k, n_e, lanes, lane)
        pos += 1
    return pos
