"""reference.tans: the dtANS paper's Fig. 3 worked example, normalisation, round trips and
strict decoding."""
from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import assume, given, strategies as st

from reference import tans as T
from reference._common import DecodeError, FormatError, OptionError

U = "cbcbccbbba"          # Fig. 3's message


def fig3():
    return T.Table.from_slots("abbbbccc")


def test_fig3_tables():
    t = fig3()
    assert t.symbol == tuple("abbbbccc")
    assert t.digit == (0, 0, 1, 2, 3, 0, 1, 2)
    assert t.base == (1, 4, 4, 4, 4, 3, 3, 3)
    assert t.K == 8 and t.slot[("c", 2)] == 7


def test_fig3_encoding_is_state_23_and_14_bits():
    """papers/README.md: final state 23, 14 bits; v4 = 10 as the arithmetic gives."""
    s, bits = T.encode(U, fig3(), 16)
    assert (s, len(bits)) == (23, 14)
    assert bits == "00" + "1" + "0" + "1" + "10" + "0" + "0" + "0" + "0" + "000"
    assert "".join(T.decode(s, bits, fig3(), len(U), 16)) == U


def test_fig3_single_steps():
    t = fig3()
    assert T.encode_step(16, "a", t, 16) == (16, "000")     # s10 = 16 -> s9 = 16, v9 = 000
    assert T.encode_step(16, "b", t, 16) == (17, "0")       # s9 = 16 -> s8 = 17, v8 = 0
    assert T.decode_step(23, "00", 0, t, 16) == (26, "c", 2)  # s0 = 23 -> s1 = 26 = 2 00 2_3


def test_fig3_entropies():
    c = T.count(U)
    assert c == {"a": 1, "b": 5, "c": 4}
    assert T.entropy(c) == pytest.approx(1.361, abs=5e-4)
    q = T.normalize(c, 8)
    assert q == {"a": 1, "b": 4, "c": 3}
    assert T.cross_entropy(c, q, 8) == pytest.approx(1.366, abs=5e-4)
    assert T.cross_entropy(c, {"a": 2, "b": 4, "c": 2}, 8) == pytest.approx(1.5)   # P''
    assert T.Table.from_counts(c, 8) == fig3()


def test_ambiguous_state_is_refused_not_misdecoded():
    """Module docstring: with the Fig. 3 table and L = 16, c from 16 and from 31 both reach 22
    (bits '1' and '10'); the encoder names the step and a safe L."""
    t = fig3()
    assert T.encode_step(16, "c", t, 16) == (22, "1")
    with pytest.raises(T.AmbiguousStateError, match=r"use L = 24") as err:
        T.encode_step(31, "c", t, 16)
    assert isinstance(err.value, OptionError) and "state 31" in str(err.value)
    assert T.safe_L(t) == 24 and T.safe_L(t, 16) == 24 and T.safe_L(t, 25) == 48


@pytest.mark.parametrize("L, words", [(12, "a multiple of K = 8"), (4, "a multiple of K = 8")])
def test_L_must_be_a_multiple_of_K(L, words):
    with pytest.raises(OptionError, match=words):
        T.encode(U, fig3(), L)


def test_unknown_symbol_raises():
    with pytest.raises(OptionError, match="symbols of the table"):
        T.encode("abz", fig3(), 24)


# ---------------------------------------------------------------------------------------------
# normalisation
# ---------------------------------------------------------------------------------------------

def _brute_best(counts: dict, K: int, M: int) -> float:
    syms = list(counts)
    total = min(K, len(syms) * M)
    best = math.inf
    for q in itertools.product(range(1, M + 1), repeat=len(syms)):
        if sum(q) == total:
            best = min(best, -sum(counts[s] * math.log2(v / K) for s, v in zip(syms, q)))
    return best


@given(counts=st.lists(st.integers(1, 40), min_size=1, max_size=4),
       K=st.sampled_from([4, 8, 16]), cap=st.integers(1, 16))
def test_normalize_is_optimal(counts, K, cap):
    assume(len(counts) <= K)
    M = min(cap, K)
    c = {chr(97 + i): v for i, v in enumerate(counts)}
    q = T.normalize(c, K, M)
    assert set(q) == set(c)
    assert all(1 <= v <= M for v in q.values()) and sum(q.values()) == min(K, len(c) * M)
    got = -sum(c[s] * math.log2(q[s] / K) for s in c)
    assert got <= _brute_best(c, K, M) + 1e-9


def test_normalize_refuses_more_symbols_than_slots():
    with pytest.raises(OptionError, match="at most K = 2 symbols"):
        T.normalize({"a": 1, "b": 1, "c": 1}, 2)


# ---------------------------------------------------------------------------------------------
# round trips and strict decoding
# ---------------------------------------------------------------------------------------------

messages = st.lists(st.sampled_from("abcdef"), min_size=1, max_size=40)


@given(message=messages, K=st.sampled_from([8, 16, 32]), mult=st.integers(1, 3))
def test_round_trip_under_a_safe_L(message, K, mult):
    t = T.Table.from_counts(T.count(message), K)
    L = T.safe_L(t, K * mult)
    s, bits = T.encode(message, t, L)
    assert L <= s < 2 * L and set(bits) <= {"0", "1"}
    assert T.decode(s, bits, t, len(message), L) == list(message)


@given(message=messages, mult=st.integers(1, 4))
def test_any_L_round_trips_or_refuses(message, mult):
    t = T.Table.from_counts(T.count(message), 8)
    L = 8 * mult
    try:
        s, bits = T.encode(message, t, L)
    except T.AmbiguousStateError:
        assert any(L % b for b in t.base)
        return
    assert T.decode(s, bits, t, len(message), L) == list(message)


@given(message=messages, cut=st.integers(1, 8), flip=st.integers(0, 10**6))
def test_corrupt_bits_raise_decode_error_or_decode_n_symbols(message, cut, flip):
    t = T.Table.from_counts(T.count(message), 8)
    L = T.safe_L(t, 16)
    s, bits = T.encode(message, t, L)
    if bits:
        with pytest.raises(DecodeError):
            T.decode(s, bits[:-min(cut, len(bits))], t, len(message), L)
        i = flip % len(bits)
        bad = bits[:i] + ("1" if bits[i] == "0" else "0") + bits[i + 1:]
        try:
            out = T.decode(s, bad, t, len(message), L)
        except DecodeError:
            pass
        else:
            assert len(out) == len(message)
    with pytest.raises(DecodeError):
        T.decode(s, bits + "0", t, len(message), L)
    with pytest.raises(DecodeError):
        T.decode(2 * L, bits, t, len(message), L)


def test_decode_error_is_a_format_error():
    assert issubclass(DecodeError, FormatError)
    with pytest.raises(DecodeError, match="'0' or '1'"):
        T.decode(23, "00x0101000000", fig3(), 10, 16)
