"""Tabled asymmetric numeral systems (tANS) in the mixed-radix view of the dtANS paper
(Schaetzle, Pegolotti, Pueschel, Section III-D/E, Algorithms 1 and 2, Fig. 3).

A *table* of ``K`` slots gives every slot a symbol, a *digit* and a *base*: a symbol that
owns ``q`` slots has base ``q`` in each of them, and its slots carry the digits 0 .. q-1 in
slot order. The coder keeps a state ``s`` in ``[L, 2L)``.

Encoding runs over the message right to left. One step with symbol ``u`` of base ``r``
writes the state as ``x * 2**nb * r + b * r + d`` (most significant part ``x``, then an
``nb``-bit string ``b``, then the digit ``d = s mod r``), emits ``b`` and continues from
``x * K + j`` where ``j`` is the slot of ``u`` with digit ``d``; ``nb`` is the smallest
count that puts ``x * K + j`` below ``2L``. Decoding runs left to right and undoes each
step: ``j = s mod K`` gives symbol, digit and base; the bits are read one at a time,
most significant first, until ``t * r + d`` (``t`` = ``x`` followed by the bits read)
reaches ``L``.

The pipeline is a chain of functions, each step written once:

    count(message) -> normalize(counts, K) -> spread(multiplicities) -> Table
    encode(message, table, L) -> (final_state, bits)
    decode(final_state, bits, table, n, L) -> message

``bits`` is a str of '0'/'1' in the order the decoder reads them: the bits of the first
symbol's step first, each step's string most significant bit first.

Choices the paper leaves open (this module is the specification):

* ``L`` must be a multiple of ``K`` (the paper asks ``L >= K``): then ``x`` ranges over
  ``[L/K, 2L/K)`` and every state in ``[L, 2L)`` has exactly one ``nb``.
* The decoder's bit count is "read until the state reaches ``L``" (the shortest string that
  puts the state back in ``[L, 2L)``). With the digit below the bits, two states can then
  share a slot and ``x`` with bit strings one of which is a prefix of the other whenever a
  base does not divide ``L``. Example (Fig. 3 table, ``L = 16``): symbol ``c`` (base 3) from
  state 16 and from state 31 both lead to state 22, emitting '1' and '10'. Every state can
  be encoded without ambiguity when each base divides ``L`` (:func:`safe_L` gives such an
  ``L``); otherwise :func:`encode` checks each step and raises :class:`AmbiguousStateError`
  naming the step, instead of producing a stream that decodes wrongly. Fig. 3's message
  meets no such state and encodes to final state 23 and 14 bits.
* :func:`decode` is strict: it raises :class:`~reference._common.DecodeError` when the bits
  run out, when bits are left over, when a state leaves ``[L, 2L)`` or when the state after
  the last symbol is not ``L`` (the encoder's initial state).
* :func:`normalize` gives every symbol at least one slot and then hands out the remaining
  slots so that the cross entropy is minimal (see its docstring); :func:`spread` puts each
  symbol's slots next to each other, symbols in the order of the multiplicities mapping;
  :func:`count` returns symbols sorted when they are comparable (else in order of first
  appearance).
"""
from __future__ import annotations

import dataclasses
import math
from typing import Hashable, Mapping, Sequence

import numpy as np

from ._common import DecodeError, OptionError, problem

__all__ = [
    "AmbiguousStateError", "Table", "count", "normalize", "spread", "entropy", "cross_entropy",
    "encode", "decode", "encode_step", "decode_step", "safe_L",
]


class AmbiguousStateError(OptionError):
    """:func:`encode` met a state whose step the decoder could not undo (a base that does
    not divide ``L``): use ``L = safe_L(table, L)``."""


# ---------------------------------------------------------------------------------------------
# counting and normalising
# ---------------------------------------------------------------------------------------------


def _ordered(keys) -> list:
    keys = list(keys)
    try:
        return sorted(keys)
    except TypeError:
        return keys


def count(message: Sequence[Hashable]) -> dict:
    """Occurrences of each symbol of ``message``, symbols sorted where comparable."""
    c: dict = {}
    for u in message:
        c[u] = c.get(u, 0) + 1
    return {u: c[u] for u in _ordered(c)}


def normalize(counts: Mapping, K: int, M: int | None = None) -> dict:
    """Slot multiplicities ``q`` (symbol -> int) for the symbols with a positive count:
    ``1 <= q <= M`` (``M`` defaults to ``K``), summing to ``K`` (to ``m * M`` when the ``m``
    symbols cannot fill ``K`` slots), minimising the cross entropy
    ``-sum c_s log2(q_s / K)``.

    Algorithm: the objective is a sum of concave functions of the integers ``q_s`` under one
    sum constraint, so a point where no single slot can move from one symbol to another with
    a gain is optimal. Start from ``q_s = clip(floor(c_s * K / N), 1, M)``, add (remove) one
    slot at a time where the gain ``c_s log2((q+1)/q)`` is largest (the loss
    ``c_s log2(q/(q-1))`` smallest) until the sum is right, then move single slots from the
    smallest loss to the largest gain while that gains. Ties go to the symbol listed first.
    """
    K = int(K)
    M = K if M is None else int(M)
    syms = [s for s in counts if counts[s] > 0]
    if not syms:
        return {}
    if len(syms) > K:
        raise OptionError(problem("counts", f"at most K = {K} symbols", f"{len(syms)} symbols",
                                  "use a larger K, or escape rare symbols (reference.dtans)"))
    c = np.array([float(counts[s]) for s in syms])
    total = min(K, len(syms) * M)
    q = np.clip(np.floor(c * K / c.sum()), 1, M).astype(np.int64)

    g = np.empty(q.size)
    loss = np.empty(q.size)

    def gains(at):
        """Gain and loss of the symbols ``at`` (an index array), after their ``q`` moved:
        only those change, so each step costs O(1) ufunc work, not O(symbols)."""
        qa, ca = q[at], c[at]
        g[at] = np.where(qa < M, ca * np.log2((qa + 1) / qa), -np.inf)
        loss[at] = np.where(qa > 1, ca * np.log2(qa / np.maximum(qa - 1, 1)), np.inf)

    gains(np.arange(q.size))
    have = int(q.sum())
    while have != total:
        step = 1 if have < total else -1
        i = int(np.argmax(g)) if step > 0 else int(np.argmin(loss))
        q[i] += step
        gains(np.array([i]))
        have += step
    while True:
        i, j = int(np.argmax(g)), int(np.argmin(loss))
        if i == j or not g[i] > loss[j] * (1 + 1e-12):
            break
        q[i] += 1
        q[j] -= 1
        gains(np.array([i, j]))
    return {s: int(v) for s, v in zip(syms, q)}


def spread(multiplicities: Mapping) -> tuple:
    """The slot symbols: each symbol's ``q`` slots next to each other, in mapping order."""
    return tuple(s for s, q in multiplicities.items() for _ in range(int(q)))


def entropy(counts: Mapping) -> float:
    """Shannon entropy of the distribution ``counts`` in bits per symbol."""
    c = np.array([v for v in counts.values() if v > 0], dtype=float)
    p = c / c.sum()
    return float(-(p * np.log2(p)).sum())


def cross_entropy(counts: Mapping, multiplicities: Mapping, K: int) -> float:
    """Bits per symbol a coder with slot multiplicities ``q`` (out of ``K``) spends on a
    message with ``counts``: ``-sum p_s log2(q_s / K)`` (inf if a counted symbol has no
    slot)."""
    n = sum(v for v in counts.values() if v > 0)
    out = 0.0
    for s, v in counts.items():
        if v > 0:
            q = multiplicities.get(s, 0)
            if q <= 0:
                return math.inf
            out -= v / n * math.log2(q / K)
    return out


# ---------------------------------------------------------------------------------------------
# the table
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Table:
    """The coding tables of ``K = len(symbol)`` slots: ``symbol[j]``, ``digit[j]`` (rank of
    slot ``j`` among its symbol's slots) and ``base[j]`` (its symbol's slot count);
    ``slot[(symbol, digit)]`` is the inverse."""

    symbol: tuple
    digit: tuple
    base: tuple
    slot: Mapping

    @classmethod
    def from_slots(cls, slots: Sequence[Hashable]) -> "Table":
        """The table whose slot ``j`` holds ``slots[j]`` (e.g. ``"abbbbccc"``)."""
        slots = tuple(slots)
        if not slots:
            raise OptionError(problem("slots", "at least one slot", "none"))
        q = count(slots)
        seen: dict = {}
        digit = []
        for s in slots:
            digit.append(seen.get(s, 0))
            seen[s] = digit[-1] + 1
        return cls(symbol=slots, digit=tuple(digit), base=tuple(q[s] for s in slots),
                   slot={(s, d): j for j, (s, d) in enumerate(zip(slots, digit))})

    @classmethod
    def from_counts(cls, counts: Mapping, K: int) -> "Table":
        """``count -> normalize -> spread``: the table of ``K`` slots for ``counts``."""
        return cls.from_slots(spread(normalize(counts, K)))

    @property
    def K(self) -> int:
        return len(self.symbol)

    def multiplicities(self) -> dict:
        return {s: self.base[self.slot[(s, 0)]] for s in _ordered({s for s in self.symbol})}


def safe_L(table: Table, at_least: int | None = None) -> int:
    """The smallest multiple of ``K`` and of every base that is ``>= at_least`` (default
    ``K``): every message encodes under it."""
    m = math.lcm(table.K, *table.base)
    want = table.K if at_least is None else int(at_least)
    return -(-want // m) * m


def _check_L(table: Table, L: int) -> int:
    if not (isinstance(L, (int, np.integer)) and L >= table.K and L % table.K == 0):
        raise OptionError(problem("L", f"a multiple of K = {table.K}", repr(L),
                                  f"use L = {safe_L(table)} (safe_L(table))"))
    return int(L)


# ---------------------------------------------------------------------------------------------
# coding
# ---------------------------------------------------------------------------------------------


def encode_step(s: int, u: Hashable, table: Table, L: int) -> tuple[int, str]:
    """One step of Algorithm 1: state ``s`` and symbol ``u`` -> (new state, emitted bits)."""
    j0 = table.slot.get((u, 0))
    if j0 is None:
        raise OptionError(problem("message", "symbols of the table", repr(u),
                                  "build the table from the message's counts"))
    r = table.base[j0]
    d, t = s % r, s // r
    j = table.slot[(u, d)]
    nb = 0
    while (t >> nb) * table.K + j >= 2 * L:
        nb += 1
    x = t >> nb
    if nb and (t >> 1) * r + d >= L:
        raise AmbiguousStateError(problem(
            "L", "a state size under which every step can be undone",
            f"L = {L}: symbol {u!r} (base {r}) from state {s} emits {nb} bits the decoder "
            f"would stop reading after {nb - 1}", f"use L = {safe_L(table, L)} (safe_L(table, L))"))
    bits = format(t & ((1 << nb) - 1), f"0{nb}b") if nb else ""
    return x * table.K + j, bits


def decode_step(s: int, bits: str, at: int, table: Table, L: int) -> tuple[int, Hashable, int]:
    """One step of Algorithm 2: state ``s``, reading ``bits`` from position ``at`` ->
    (previous state, symbol, new position)."""
    j, t = s % table.K, s // table.K
    d, r = table.digit[j], table.base[j]
    while t * r + d < L:
        if at >= len(bits):
            raise DecodeError(problem("bits", "more bits", f"the end after {len(bits)} bits",
                                      "pass the whole stream"))
        if bits[at] not in "01":
            raise DecodeError(problem(f"bits[{at}]", "'0' or '1'", repr(bits[at])))
        t = 2 * t + (bits[at] == "1")
        at += 1
    s = t * r + d
    if s >= 2 * L:
        raise DecodeError(problem("state", f"a state in [{L}, {2 * L})", s, "the stream is corrupt"))
    return s, table.symbol[j], at


def encode(message: Sequence[Hashable], table: Table, L: int) -> tuple[int, str]:
    """Algorithm 1: (final state, bits in the order the decoder reads them)."""
    L = _check_L(table, L)
    s, steps = L, []
    for u in reversed(message):
        s, b = encode_step(s, u, table, L)
        steps.append(b)
    return s, "".join(reversed(steps))


def decode(final_state: int, bits: str, table: Table, n: int, L: int) -> list:
    """Algorithm 2: the ``n`` symbols (strict: see the module docstring)."""
    L = _check_L(table, L)
    s = int(final_state)
    if not L <= s < 2 * L:
        raise DecodeError(problem("final_state", f"a state in [{L}, {2 * L})", s))
    out, at = [], 0
    for _ in range(int(n)):
        s, u, at = decode_step(s, bits, at, table, L)
        out.append(u)
    if at != len(bits):
        raise DecodeError(problem("bits", f"{at} bits for {n} symbols", f"{len(bits)} bits",
                                  "pass exactly the encoded bits"))
    if s != L:
        raise DecodeError(problem("state", f"{L} (the initial state) after the last symbol", s,
                                  "the stream or n is wrong"))
    return out
