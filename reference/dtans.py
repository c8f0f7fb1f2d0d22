"""Decoupled tANS (dtANS), the dtANS paper's entropy coder for GPUs (Sections IV-C to IV-F,
Algorithm 3), as a readable NumPy/Python reference.

Parameters (:class:`Params`): words of ``word_bits`` bits (radix ``W = 2**word_bits``),
tables of ``K`` slots, at most ``M`` slots per symbol, segments of ``l`` symbols packed in
``o`` words, ``f`` of which are refilled by conditional checks. ``Params.paper()`` is CSR-dtANS
(32, 4096, 256, 8, 3, 2); ``Params.toy()`` the paper's 2-bit example (2, 8, 4, 2, 3, 2).

Decoder (one stream, ``n`` symbols, ``S = ceil(n / l)`` segments); this is what the encoder
inverts exactly:

1. read ``o`` words ``w[0..o-1]``; the decoder state is a digit ``d = 0`` of radix ``r = 1``;
2. for each segment: ``unpack`` the ``o`` words into ``l`` slots; each slot gives a symbol
   (an escape slot is followed by the symbol's raw bits, read as words), a digit and a base;
3. unless it is the last segment: the ``l`` digits are added in ``f`` groups (group ``g``
   holds positions ``g * l // f`` .. ``(g + 1) * l // f - 1``): each digit as
   ``d = d * base + digit``, ``r = r * base``; after group ``g`` its check: if ``r >= W`` the
   word ``w[g]`` is taken from the state (``w[g] = d mod W``, ``d //= W``, ``r //= W``),
   else it is read from the stream; then the words ``w[f..o-1]`` are read unconditionally.

``unpack`` is a reinterpretation of bits: the ``o`` words, ``w[0]`` most significant, form
one number of ``o * word_bits = l * log2(K)`` bits, and slot ``k`` is its ``k``-th base-``K``
digit counted from the least significant (the paper's example: words 1 1 2 of radix 4 are
22 = 2*8 + 6, slots 6 then 2). ``pack`` is its inverse.

Encoder: a forward *base pass* follows the radix ``r`` only (it depends on the symbols, not on
the slots chosen) and records which checks take a word from the state; the backward *digit
pass* walks the decoder's steps in reverse: it starts from ``d = 0`` after the last check,
takes each word the decoder will read or extract (``pack`` of the next segment's slots),
puts the extracted ones back into ``d`` (``d = d * W + w``) and splits ``d`` into the digits
that choose each symbol's slot (``digit = d mod base``, ``d //= base``). The digit pass ends
with ``d = 0`` at the start, so the stream is exactly what the decoder consumes.

Choices the paper leaves open (this module is the specification):

* The last segment's digits are not added and nothing is read after it (the paper's
  end-of-row shortcut): its symbols take their first slot (digit 0) and its padding
  positions (``n`` not a multiple of ``l``) slot 0; the decoder ignores positions ``>= n``.
  An empty message has no words.
* The digits are added in ``f`` equal groups (positions split as ``g * l // f``), each
  followed by its check (the paper's example adds one digit per check; CSR-dtANS four).
* Escapes: a table may reserve slots for an escape symbol (:data:`ESCAPE`). A position whose
  slot is the escape reads the symbol itself right after ``unpack``, in position order, as
  ``ceil(raw_bits / word_bits)`` words, least significant word first (``raw_bits`` is a
  property of the table: 64 for float64 values, 32 for int32 column deltas, ...). Escaped
  symbols are non-negative integers below ``2**raw_bits``.
* Several tables may alternate: position ``p`` of the stream uses ``tables[p % len(tables)]``
  (CSR-dtANS: deltas and values).
* :meth:`Table.from_counts`: kept symbols are those that cannot be escaped, then the most
  frequent (ties by symbol), and every
  candidate number of kept symbols (all of them up to 64 distinct counts, else 64 spread
  over the count levels) is normalised with :func:`reference.tans.normalize` capped at
  ``M``; the choice minimises the expected total bits: coded bits (``-log2(q / K)`` per
  occurrence), raw words of the escaped occurrences and ``entry_bits`` per kept symbol
  (the table's stored bytes). Slots: kept symbols in that order, each's slots adjacent,
  then the escape's; slots beyond are unused (a stream naming one is corrupt).
* Decoding is strict (:class:`~reference._common.DecodeError`): the stream ending early,
  words left over, a word ``>= W``, an unused slot, an escape whose raw words exceed
  ``raw_bits``.

Word streams are NumPy arrays of the smallest unsigned dtype holding ``word_bits`` bits.
The decoder is written as a generator (:func:`decoder`) that yields an *event* before each
word it reads; the events order one stream's reads and, over several streams decoded in
lockstep (``reference.csr_dtans``: 32 rows of a warp), the warp-wide loads.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Generator, Hashable, Mapping, Sequence

import numpy as np

from ._common import DecodeError, OptionError, problem
from .tans import _ordered, count, normalize, spread

__all__ = [
    "ESCAPE", "INIT", "ESC", "CHECK", "LOAD", "Params", "Table", "unpack", "pack", "groups",
    "encode", "encode_events", "decode", "decoder", "base_pass", "choose_multiplicities",
]


class _Escape:
    """The escape symbol (a singleton)."""

    def __repr__(self):
        return "ESCAPE"

    def __reduce__(self):
        return "ESCAPE"


ESCAPE = _Escape()

#: event phases, in the order the decoder meets them within a segment
INIT, ESC, CHECK, LOAD = 0, 1, 2, 3


def _is_int(v) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


@dataclasses.dataclass(frozen=True)
class Params:
    """dtANS parameters, checked on creation (:class:`~reference._common.OptionError` naming
    the violated condition and the values)."""

    word_bits: int
    K: int
    M: int
    l: int  # noqa: E741  (the paper's name)
    o: int
    f: int

    def __post_init__(self):
        for name in ("word_bits", "K", "M", "l", "o", "f"):
            v = getattr(self, name)
            _need(_is_int(v) and v >= 1, f"Params.{name}", "an int >= 1", repr(v))
        wb, K, M, l, o, f = (int(getattr(self, n)) for n in ("word_bits", "K", "M", "l", "o", "f"))
        W = 1 << wb
        _need(wb <= 64, "Params.word_bits", "at most 64 (words are NumPy unsigned ints)", wb)
        _need(K >= 2, "Params.K", "at least 2 slots", K)
        _need(W ** o == K ** l, "Params: W**o == K**l",
              "o words to hold exactly l slots (unpack reinterprets bits)",
              f"W**o = 2**{wb * o}, K**l = {K}**{l}"
              + (f" = 2**{(K.bit_length() - 1) * l}" if K & (K - 1) == 0 else ""),
              "pick K a power of two and l, o with l * log2(K) = o * word_bits")
        _need(M <= K, "Params.M", f"at most K = {K}", M)
        _need(f <= o, "Params.f", f"at most o = {o} (checks refill words)", f)
        _need(f <= l, "Params.f", f"at most l = {l} (one check per digit group)", f)
        _need(M ** l <= W ** f, "Params: M**l <= W**f",
              "the digits of a segment to fit the f words its checks can take",
              f"M**l = {M}**{l} = {M ** l} > W**f = {W}**{f} = {W ** f}", "lower M or raise f")
        big = -(-l // f)
        _need(M ** big <= W, "Params: M**ceil(l/f) <= W",
              "one digit group to fit a word (the state stays below W**2)",
              f"M**{big} = {M ** big} > W = {W}", "lower M or raise f")

    @classmethod
    def paper(cls) -> "Params":
        """CSR-dtANS: 32-bit words, K = 4096, M = 256, l = 8, o = 3, f = 2."""
        return cls(32, 4096, 256, 8, 3, 2)

    @classmethod
    def toy(cls) -> "Params":
        """The paper's worked example: 2-bit words, K = 8, M = 4, l = 2, o = 3, f = 2."""
        return cls(2, 8, 4, 2, 3, 2)

    @property
    def W(self) -> int:
        return 1 << int(self.word_bits)

    @property
    def slot_bits(self) -> int:
        return int(self.K).bit_length() - 1

    @property
    def word_dtype(self) -> np.dtype:
        for dt in (np.uint8, np.uint16, np.uint32, np.uint64):
            if np.dtype(dt).itemsize * 8 >= self.word_bits:
                return np.dtype(dt)
        raise AssertionError("word_bits <= 64")

    def raw_words(self, raw_bits: int) -> int:
        """Words an escaped symbol of ``raw_bits`` bits takes."""
        return -(-int(raw_bits) // int(self.word_bits))


def _need(ok: bool, field: str, expected: str, received, fix: str | None = None):
    if not ok:
        raise OptionError(problem(field, expected, received, fix))


def groups(params: Params) -> list[range]:
    """The ``f`` digit groups: positions of a segment added before each check."""
    l, f = int(params.l), int(params.f)
    return [range(g * l // f, (g + 1) * l // f) for g in range(f)]


def unpack(words: Sequence[int], params: Params) -> list[int]:
    """``o`` words (the first most significant) -> ``l`` slots (the first least significant)."""
    N = 0
    for w in words:
        N = (N << int(params.word_bits)) | int(w)
    sb = params.slot_bits
    return [(N >> (k * sb)) & (int(params.K) - 1) for k in range(int(params.l))]


def pack(slots: Sequence[int], params: Params) -> list[int]:
    """Inverse of :func:`unpack`."""
    N = 0
    for k, s in enumerate(slots):
        N |= int(s) << (k * params.slot_bits)
    wb, o = int(params.word_bits), int(params.o)
    return [(N >> ((o - 1 - k) * wb)) & ((1 << wb) - 1) for k in range(o)]


# ---------------------------------------------------------------------------------------------
# tables
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Table:
    """A dtANS table: ``symbol[j]`` (or :data:`ESCAPE`) for the used slots ``j < len(symbol)``
    (slots up to ``K`` beyond them are unused), ``digit[j]``, ``base[j]``; ``first[s]`` the
    first slot of symbol ``s``; ``raw_bits`` the width of an escaped symbol (None: no
    escape)."""

    symbol: tuple
    digit: tuple
    base: tuple
    first: Mapping
    K: int
    raw_bits: int | None = None

    @classmethod
    def from_slots(cls, slots: Sequence[Hashable], params: Params, raw_bits: int | None = None) -> "Table":
        """The table whose slot ``j`` holds ``slots[j]`` (``ESCAPE`` for escape slots; a
        symbol's slots need not be adjacent: digits count its slots in slot order)."""
        slots = tuple(slots)
        K, M = int(params.K), int(params.M)
        _need(0 < len(slots) <= K, "slots", f"1 to K = {K} slots", len(slots))
        q = count(slots)
        _need(max(q.values()) <= M, "slots", f"at most M = {M} slots per symbol",
              {s: v for s, v in q.items() if v > M})
        if ESCAPE in q:
            _need(raw_bits is not None and _is_int(raw_bits) and raw_bits >= 1, "raw_bits",
                  "an int >= 1 for a table with escape slots", repr(raw_bits))
        seen: dict = {}
        digit = []
        for s in slots:
            digit.append(seen.get(s, 0))
            seen[s] = digit[-1] + 1
        first = {}
        for j, s in enumerate(slots):
            first.setdefault(s, j)
        return cls(symbol=slots, digit=tuple(digit), base=tuple(q[s] for s in slots),
                   first=first, K=K, raw_bits=None if raw_bits is None else int(raw_bits))

    @classmethod
    def from_multiplicities(cls, multiplicities: Mapping, params: Params,
                            raw_bits: int | None = None) -> "Table":
        """Each symbol's slots adjacent, in mapping order (:data:`ESCAPE` may be a key)."""
        return cls.from_slots(spread(multiplicities), params, raw_bits)

    @classmethod
    def from_counts(cls, counts: Mapping, params: Params, raw_bits: int | None = None,
                    entry_bits: float = 0.0) -> "Table":
        """The table minimising the expected total size of a stream with ``counts`` (symbol ->
        occurrences) plus ``entry_bits`` per kept symbol (module docstring). Without
        ``raw_bits`` every symbol is kept (at most ``K``)."""
        return cls.from_multiplicities(choose_multiplicities(counts, params, raw_bits, entry_bits),
                                       params, raw_bits)

    @property
    def escape(self) -> bool:
        return ESCAPE in self.first

    def multiplicities(self) -> dict:
        return {s: self.base[j] for s, j in self.first.items()}

    def slot_of(self, u) -> int:
        """First slot of ``u`` (its own, else the escape's)."""
        j = self.first.get(u)
        if j is not None and u is not ESCAPE:
            return j
        if self.escape and _is_int(u) and 0 <= int(u) < (1 << self.raw_bits):
            return self.first[ESCAPE]
        raise OptionError(problem("message", "symbols of the table" + (
            f" or integers in [0, 2**{self.raw_bits}) to escape" if self.escape else ""), repr(u),
            "build the table from the message's counts"))


def choose_multiplicities(counts: Mapping, params: Params, raw_bits: int | None = None,
                          entry_bits: float = 0.0, rest: int = 0) -> dict:
    """Slot multiplicities (kept symbols, then :data:`ESCAPE` if any) for ``counts``.

    ``rest``: occurrences of further symbols left out of ``counts`` (escapable, and after
    every listed one in the kept order: no more frequent, ties by larger symbol). Only the
    ``K + 1`` first symbols of the order can shape the choice, so a caller with many distinct
    symbols may list those (at least ``K + 1`` of them when ``rest > 0``) and pass the others'
    total here: the result is the same as for the whole ``counts``."""
    if rest:
        _need(raw_bits is not None and len(counts) > int(params.K), "rest",
              f"0 unless raw_bits is given and counts lists more than K = {params.K} symbols",
              f"rest {rest}, raw_bits {raw_bits!r}, {len(counts)} symbols listed",
              "list the K + 1 most frequent symbols, or pass rest=0 with every count")
    K, M = int(params.K), int(params.M)
    syms = sorted(_ordered(s for s in counts if counts[s] > 0), key=lambda s: -counts[s])
    m = len(syms)
    if m == 0:
        return {}
    if raw_bits is None:
        _need(m <= K, "counts", f"at most K = {K} symbols without escapes", f"{m} symbols",
              "pass raw_bits to escape rare symbols")
        return normalize({s: counts[s] for s in syms}, K, M)
    bad = {s for s in syms if not (_is_int(s) and 0 <= int(s) < (1 << int(raw_bits)))}
    syms = sorted(syms, key=lambda s: s not in bad)     # symbols that cannot be escaped first
    esc_bits = params.raw_words(raw_bits) * int(params.word_bits)
    cuts = {0, len(bad), m, *(k for k in range(1, m) if counts[syms[k]] != counts[syms[k - 1]])}
    levels = sorted(k for k in cuts if k >= len(bad) and k + (k < m) <= K)
    _need(bool(levels), "counts", f"at most K = {K} symbols, or the others escapable "
          f"(integers in [0, 2**{raw_bits}))", f"{m} symbols, {len(bad)} not escapable")
    cost: dict = {}

    def total(i: int) -> float:
        if i not in cost:
            k = levels[i]
            want = {s: counts[s] for s in syms[:k]}
            n_esc = sum(counts[s] for s in syms[k:]) + int(rest)
            if n_esc:
                want[ESCAPE] = n_esc
            q = normalize(want, K, M)
            bits = sum(c * math.log2(K / q[s]) for s, c in want.items())
            cost[i] = (bits + n_esc * esc_bits + k * entry_bits, q)
        return cost[i][0]

    grid = sorted({int(round(v)) for v in np.linspace(0, len(levels) - 1, min(len(levels), 12))})
    i = min(grid, key=total)
    for step in (-1, 1):                            # then walk to neighbouring levels downhill
        while 0 <= i + step < len(levels) and total(i + step) < total(i):
            i += step
    best = cost[i]
    q = best[1]
    return {s: q[s] for s in [*syms, ESCAPE] if s in q}


def _tables(table) -> tuple:
    return (table,) if isinstance(table, Table) else tuple(table)


# ---------------------------------------------------------------------------------------------
# encoding
# ---------------------------------------------------------------------------------------------


def base_pass(bases: Sequence[int], params: Params) -> list[list[bool]]:
    """Forward over the segments but the last: for each, which of its ``f`` checks take
    their word from the state (``r >= W``)."""
    l, W = int(params.l), params.W
    n_seg = -(-len(bases) // l)
    r, out = 1, []
    for j in range(n_seg - 1):
        taken = []
        for grp in groups(params):
            for k in grp:
                r *= bases[j * l + k]
            taken.append(r >= W)
            if r >= W:
                r //= W
        out.append(taken)
    return out


def encode_events(message: Sequence[Hashable], table, params: Params) -> list[tuple[tuple, int]]:
    """(event, word) for every word the decoder reads, in reading order (the digit pass)."""
    tables = _tables(table)
    l, o, f, W, wb = int(params.l), int(params.o), int(params.f), params.W, int(params.word_bits)
    n = len(message)
    n_seg = -(-n // l)
    if n_seg == 0:
        return []
    tabs = [tables[p % len(tables)] for p in range(n)]
    first = [t.slot_of(u) for t, u in zip(tabs, message)]
    bases = [t.base[j] for t, j in zip(tabs, first)]
    taken = base_pass(bases, params)
    back: list = []                                   # events in reverse reading order

    def escapes(j: int):
        for k in reversed(range(l)):
            p = j * l + k
            if p < n and tabs[p].symbol[first[p]] is ESCAPE:
                raw = int(message[p])
                for e in reversed(range(params.raw_words(tabs[p].raw_bits))):
                    back.append(((j, ESC, k, e), (raw >> (e * wb)) & (W - 1)))

    slots = [first[p] if p < n else 0 for p in range((n_seg - 1) * l, n_seg * l)]
    escapes(n_seg - 1)
    d = 0
    for j in reversed(range(n_seg - 1)):
        w = pack(slots, params)                       # the words segment j + 1 unpacks
        for k in reversed(range(f, o)):
            back.append(((j, LOAD, k, 0), w[k]))
        slots = [0] * l
        for g, grp in reversed(list(enumerate(groups(params)))):
            if taken[j][g]:
                d = d * W + w[g]
            else:
                back.append(((j, CHECK, g, 0), w[g]))
            for k in reversed(grp):
                p = j * l + k
                d, digit = divmod(d, bases[p])
                slots[k] = first[p] + digit
        escapes(j)
    assert d == 0, "the digit pass must end in the decoder's initial state"
    w = pack(slots, params)
    for k in reversed(range(o)):
        back.append(((0, INIT, k, 0), w[k]))
    return back[::-1]


def encode(message: Sequence[Hashable], table, params: Params) -> np.ndarray:
    """The word stream of ``message`` (``table``: one :class:`Table` or several alternating)."""
    return np.array([w for _, w in encode_events(message, table, params)], dtype=params.word_dtype)


# ---------------------------------------------------------------------------------------------
# decoding
# ---------------------------------------------------------------------------------------------


def _word(v, W: int, where) -> int:
    if not (_is_int(v) and 0 <= int(v) < W):
        raise DecodeError(problem("words", f"words in [0, {W})", f"{v!r} at {where}",
                                  "the stream is corrupt"))
    return int(v)


def decoder(n: int, table, params: Params) -> Generator[tuple, int, list]:
    """Algorithm 3 as a generator: yields the event of each word it needs, is sent the word,
    returns the ``n`` symbols (``StopIteration.value``)."""
    tables = _tables(table)
    l, o, W, wb = int(params.l), int(params.o), params.W, int(params.word_bits)
    n = int(n)
    n_seg = -(-n // l)
    out: list = []
    if n_seg == 0:
        return out
    w = [0] * o
    for k in range(o):
        ev = (0, INIT, k, 0)
        w[k] = _word((yield ev), W, ev)
    d, r = 0, 1
    for j in range(n_seg):
        slots = unpack(w, params)
        got = []
        for k in range(l):
            p = j * l + k
            if p >= n:
                break
            t = tables[p % len(tables)]
            i = slots[k]
            if i >= len(t.symbol):
                raise DecodeError(problem("words", f"slots below {len(t.symbol)} (the used ones)",
                                          f"slot {i} at symbol {p}", "the stream is corrupt"))
            u = t.symbol[i]
            if u is ESCAPE:
                u = 0
                for e in range(params.raw_words(t.raw_bits)):
                    ev = (j, ESC, k, e)
                    u |= _word((yield ev), W, ev) << (e * wb)
                if u >> t.raw_bits:
                    raise DecodeError(problem("words", f"an escaped symbol of {t.raw_bits} bits",
                                              f"{u} at symbol {p}", "the stream is corrupt"))
            out.append(u)
            got.append((t.digit[i], t.base[i]))
        if j == n_seg - 1:
            break
        for g, grp in enumerate(groups(params)):
            for k in grp:
                digit, b = got[k]
                d, r = d * b + digit, r * b
            if r >= W:
                w[g], d, r = d % W, d // W, r // W
            else:
                ev = (j, CHECK, g, 0)
                w[g] = _word((yield ev), W, ev)
        for k in range(int(params.f), o):
            ev = (j, LOAD, k, 0)
            w[k] = _word((yield ev), W, ev)
    return out


def decode(words, n: int, table, params: Params) -> list:
    """The ``n`` symbols of a word stream (strict: see the module docstring)."""
    words = np.asarray(words)
    if words.ndim != 1 or (words.size and words.dtype.kind not in "ui"):
        raise DecodeError(problem("words", "a 1-D array of unsigned words",
                                  f"{words.ndim}-D {words.dtype}"))
    if not (_is_int(n) and n >= 0):
        raise OptionError(problem("n", "an int >= 0", repr(n)))
    gen = decoder(n, table, params)
    at = 0
    try:
        ev = next(gen)
        while True:
            if at >= words.size:
                raise DecodeError(problem("words", f"more than {words.size} words for {n} symbols",
                                          f"the end at event {ev}", "pass the whole stream"))
            at += 1
            ev = gen.send(int(words[at - 1]))
    except StopIteration as stop:
        out = stop.value
    if at != words.size:
        raise DecodeError(problem("words", f"{at} words for {n} symbols", f"{words.size} words",
                                  "pass exactly the encoded stream and its n"))
    return out

