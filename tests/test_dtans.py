"""reference.dtans: parameters, pack/unpack, the paper's 2-bit example (Section IV-D), round
trips (tails, one-symbol alphabets, escapes, alternating tables) and strict decoding."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given, strategies as st

from reference import dtans as D
from reference._common import DecodeError, FormatError, OptionError

TOY = D.Params.toy()
PAPER = D.Params.paper()
# valid parameter sets beyond the two named ones (word_bits, K, M, l, o, f)
OTHERS = [D.Params(8, 16, 4, 2, 1, 1), D.Params(4, 4, 2, 2, 1, 1), D.Params(3, 8, 2, 3, 3, 3),
          D.Params(16, 256, 16, 4, 2, 2), D.Params(6, 8, 2, 4, 2, 1)]
ALL = [TOY, PAPER, *OTHERS]


def fig3_table(params=TOY):
    return D.Table.from_slots("abbbbccc", params)


# ---------------------------------------------------------------------------------------------
# parameters
# ---------------------------------------------------------------------------------------------

def test_named_params():
    assert (PAPER.word_bits, PAPER.K, PAPER.M, PAPER.l, PAPER.o, PAPER.f) == (32, 4096, 256, 8, 3, 2)
    assert (TOY.word_bits, TOY.K, TOY.M, TOY.l, TOY.o, TOY.f) == (2, 8, 4, 2, 3, 2)
    assert PAPER.word_dtype == np.uint32 and TOY.word_dtype == np.uint8 and TOY.W == 4
    with pytest.raises(Exception):
        PAPER.K = 8                                     # frozen


@pytest.mark.parametrize("args, words", [
    ((32, 4096, 256, 8, 2, 2), r"W\*\*o == K\*\*l.*2\*\*64.*K\*\*l = 4096\*\*8"),
    ((2, 8, 4, 2, 3, 1), r"M\*\*l <= W\*\*f.*M\*\*l = 4\*\*2 = 16 > W\*\*f = 4\*\*1 = 4"),
    ((2, 8, 16, 2, 3, 2), r"Params.M: expected at most K = 8, received 16"),
    ((2, 8, 4, 2, 3, 4), r"Params.f: expected at most o = 3"),
    ((2, 8, 4, 1, 1, 1), r"W\*\*o == K\*\*l"),
    ((1, 4, 2, 1, 2, 2), r"Params.f: expected at most l = 1"),
    ((2, 8, 4, 2, 3, 0), r"Params.f: expected an int >= 1, received 0"),
    ((2.0, 8, 4, 2, 3, 2), r"Params.word_bits: expected an int >= 1"),
    ((65, 2, 1, 65, 1, 1), r"at most 64"),
])
def test_params_name_the_violated_condition(args, words):
    with pytest.raises(OptionError, match=words):
        D.Params(*args)


@given(wb=st.integers(1, 12), kb=st.integers(1, 6), M=st.integers(1, 64), l=st.integers(1, 6),
       o=st.integers(1, 6), f=st.integers(1, 6))
def test_params_valid_exactly_when_the_conditions_hold(wb, kb, M, l, o, f):  # noqa: E741
    K, W = 1 << kb, 1 << wb
    ok = (W ** o == K ** l and M <= K and f <= o and f <= l and M ** l <= W ** f
          and M ** -(-l // f) <= W)
    if ok:
        D.Params(wb, K, M, l, o, f)
    else:
        with pytest.raises(OptionError, match="Params"):
            D.Params(wb, K, M, l, o, f)


# ---------------------------------------------------------------------------------------------
# the paper's example
# ---------------------------------------------------------------------------------------------

def test_unpack_is_the_papers_bit_reinterpretation():
    """1_4 1_4 2_4 = 22 = 2_8 6_8: slots 6 then 2."""
    assert D.unpack([1, 1, 2], TOY) == [6, 2]
    assert D.pack([6, 2], TOY) == [1, 1, 2]


@given(params=st.sampled_from(ALL), data=st.data())
def test_pack_inverts_unpack(params, data):
    slots = data.draw(st.lists(st.integers(0, params.K - 1), min_size=params.l, max_size=params.l))
    words = D.pack(slots, params)
    assert len(words) == params.o and all(0 <= w < params.W for w in words)
    assert D.unpack(words, params) == slots


def test_papers_stream_decodes_its_first_six_symbols():
    """papers/README.md: digits added one at a time, each followed by its check, the printed
    stream 11211211000_4 gives c b c b c c from its first six words (the walk-through: w1 read,
    w2 = 1 extracted, w3 = 1 read; then 1 1 1 unpacks to slots 5 and 2)."""
    assert D.decode(np.array([1, 1, 2, 1, 1, 2]), 6, fig3_table(), TOY) == list("cbcbcc")


def test_fig3_message_under_toy_params_is_pinned():
    """Our encoding of Fig. 3's message with the toy parameters (regression pin: the paper's
    printed stream does not decode to the whole message, see papers/README.md)."""
    u = list("cbcbccbbba")
    words = D.encode(u, fig3_table(), TOY)
    assert words.dtype == np.uint8 and words.tolist() == [1, 1, 1, 2, 3, 1, 2, 1, 1]
    assert D.decode(words, 10, fig3_table(), TOY) == u


def test_base_pass_follows_the_radix():
    """Fig. 3 bases under toy params: r = 3 after c (read), 12 after b (extract), ..."""
    bases = [3, 4, 3, 4, 3, 3, 4, 4, 4, 1]
    assert D.base_pass(bases, TOY) == [[False, True], [True, True], [True, False], [True, True]]


# ---------------------------------------------------------------------------------------------
# tables
# ---------------------------------------------------------------------------------------------

def test_table_caps_multiplicity_at_M():
    t = D.Table.from_counts({0: 1000, 1: 1}, TOY)
    assert t.multiplicities() == {0: 4, 1: 4}                    # M = 4, 8 slots
    t = D.Table.from_counts({7: 5}, TOY)
    assert t.multiplicities() == {7: 4} and len(t.symbol) == 4   # 4 slots unused


def test_escape_when_table_entries_cost_more():
    counts = {**{v: 50 for v in range(4)}, **{100 + v: 1 for v in range(40)}}
    kept = D.Table.from_counts(counts, PAPER, raw_bits=32, entry_bits=0)
    assert not kept.escape and len(kept.multiplicities()) == 44
    esc = D.Table.from_counts(counts, PAPER, raw_bits=32, entry_bits=48)
    assert esc.escape and set(esc.multiplicities()) == {0, 1, 2, 3, D.ESCAPE}


def test_more_symbols_than_slots_need_escapes():
    counts = {v: 1 for v in range(9)}
    with pytest.raises(OptionError, match="at most K = 8 symbols"):
        D.Table.from_counts(counts, TOY)
    t = D.Table.from_counts(counts, TOY, raw_bits=8)
    assert t.escape and len(t.first) <= 8
    with pytest.raises(OptionError, match="integers in"):
        D.Table.from_counts({**counts, "x": 1, "y": 1, "z": 1, "w": 1, "v": 1, "u": 1, "t": 1,
                             "s": 1, "r": 1}, TOY, raw_bits=8)


# ---------------------------------------------------------------------------------------------
# round trips
# ---------------------------------------------------------------------------------------------

@st.composite
def coded(draw, params=None):
    """(message, tables, params): small alphabets (one symbol possible), lengths that are not
    multiples of l, escapes, one or two alternating tables."""
    params = params or draw(st.sampled_from(ALL))
    alphabet = draw(st.integers(1, 12))
    message = draw(st.lists(st.integers(0, alphabet - 1) | st.integers(0, 255), max_size=5 * params.l + 3))
    raw_bits = draw(st.sampled_from([None, 8, 13]))
    entry = draw(st.sampled_from([0, 24, 200]))
    n_tables = draw(st.integers(1, 2))
    tables = []
    for i in range(n_tables):
        part = message[i::n_tables] or [0]
        counts = D.count(part)
        assume(raw_bits is not None or len(counts) <= params.K)
        tables.append(D.Table.from_counts(counts, params, raw_bits=raw_bits, entry_bits=entry))
    return message, tuple(tables), params


@given(case=coded())
def test_round_trip(case):
    message, tables, params = case
    words = D.encode(message, tables, params)
    assert words.dtype == params.word_dtype and words.ndim == 1
    assert D.decode(words, len(message), tables, params) == message
    if not message:
        assert words.size == 0
    elif len(message) <= params.l and not any(t.escape for t in tables):
        assert words.size == params.o                 # one segment: its o words only


@given(params=st.sampled_from(ALL), message=st.lists(st.integers(0, 2**13 - 1), min_size=1,
                                                     max_size=20))
def test_all_escape_messages(params, message):
    t = D.Table.from_multiplicities({D.ESCAPE: params.M}, params, raw_bits=13)
    words = D.encode(message, t, params)
    assert D.decode(words, len(message), t, params) == message
    assert words.size >= len(message) * params.raw_words(13)


@given(params=st.sampled_from(ALL), n=st.integers(1, 30))
def test_one_symbol_alphabet(params, n):
    t = D.Table.from_counts({"z": n}, params)
    words = D.encode(["z"] * n, t, params)
    assert D.decode(words, n, t, params) == ["z"] * n


# ---------------------------------------------------------------------------------------------
# corruption
# ---------------------------------------------------------------------------------------------

@given(case=coded(), cut=st.integers(1, 5), at=st.integers(0, 10**6), value=st.integers(0, 2**32 - 1))
def test_corrupt_streams_raise_typed_errors(case, cut, at, value):
    message, tables, params = case
    n = len(message)
    words = D.encode(message, tables, params)
    with pytest.raises(DecodeError):
        D.decode(np.append(words, words[:1] if words.size else [0]).astype(words.dtype), n, tables, params)
    if not words.size:
        return
    with pytest.raises(DecodeError, match="more than"):
        D.decode(words[:-min(cut, words.size)], n, tables, params)
    bad = words.astype(np.uint64)
    bad[at % words.size] = value % (2 * params.W)
    try:
        out = D.decode(bad, n, tables, params)
    except DecodeError:
        return
    assert len(out) == n


def test_word_out_of_range_and_unused_slot():
    t = fig3_table()
    with pytest.raises(DecodeError, match=r"words in \[0, 4\)"):
        D.decode(np.array([1, 1, 4], np.uint8), 1, t, TOY)
    small = D.Table.from_slots("ab", TOY)                  # slots 2..7 unused
    with pytest.raises(DecodeError, match="slot 6 at symbol 0"):
        D.decode(np.array([1, 1, 2], np.uint8), 1, small, TOY)
    assert issubclass(DecodeError, FormatError)


def test_escape_wider_than_raw_bits():
    t = D.Table.from_multiplicities({D.ESCAPE: 4}, TOY, raw_bits=3)       # 2 words of 2 bits
    words = D.encode([5], t, TOY)
    bad = words.copy()
    bad[-1] = 3                                        # high word 3: 14 > 2**3 - 1
    with pytest.raises(DecodeError, match="escaped symbol of 3 bits"):
        D.decode(bad, 1, t, TOY)
