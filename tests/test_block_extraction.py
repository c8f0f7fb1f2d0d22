"""reference/block_extraction.py: the paper's Fig. 3 invariants, the cover invariant on every
drawn input (every nonzero in exactly one block, nothing else but explicit padding zeros),
what each level conserves, and the padding, splitting and clipping rules on worked cases."""
from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import example, given, strategies as st

from reference import block_extraction as BE
from reference._common import OptionError, canonical_csr
from strategies import build_case, clustered_inputs, llm_like, sparse_inputs

OPTIONS = st.fixed_dictionaries({
    "delta_bits": st.sampled_from(BE.DELTA_BITS), "warp_size": st.sampled_from((1, 2, 4)),
    "vector_size": st.sampled_from((1, 2, 4)), "clip": st.sampled_from((None, 0, 4, 16)),
    "reorder": st.booleans(), "max_granularity": st.sampled_from((None, 1, 2, 4))})


@st.composite
def row_families(draw, max_rows=24, max_cols=90):
    """Rows drawn as noisy copies of a few base patterns, so that blocks of granularity 4 and
    more exist (uniform masks rarely give them on small matrices)."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    n_rows, n_cols = draw(st.integers(1, max_rows)), draw(st.integers(1, max_cols))
    bases = rng.random((draw(st.integers(1, 4)), n_cols)) < draw(st.sampled_from((0.1, 0.4, 0.8)))
    family = rng.integers(0, bases.shape[0], n_rows)
    mask = (bases[family] & (rng.random((n_rows, n_cols)) < 0.9)) | (rng.random((n_rows, n_cols)) < 0.05)
    return np.where(mask, rng.standard_normal((n_rows, n_cols)), 0.0).astype(np.float32)


MATRICES = st.one_of(row_families(), sparse_inputs(max_rows=24, max_cols=120).map(lambda c: c.A),
                     llm_like(max_rows=24, max_cols=96).map(lambda c: c.A),
                     clustered_inputs().map(lambda c: c.A))


def pattern_of(A) -> np.ndarray:
    return canonical_csr(A, np.float64, lossy=True).toarray() != 0


def check_block_sets(A, sets, opts):
    """Every property :func:`block_sets` promises, checked on its output."""
    P = pattern_of(A)
    ws, vs = opts["warp_size"], opts["vector_size"]
    unit, max_gap = ws * vs, BE.max_gap_for(opts["delta_bits"])
    count = np.zeros(P.shape, dtype=np.int64)
    keys = [(s.granularity, s.vector_size) for s in sets]
    assert keys == sorted(keys, reverse=True) and len(set(keys)) == len(keys), keys
    for s in sets:
        assert s.blocks, "an empty set is listed"
        assert s.vector_size == vs or (s.vector_size == 1 and vs > 1)
        long = s.vector_size == vs
        sizes = [b.n_columns for b in s.blocks]
        if opts["reorder"]:
            assert sizes == sorted(sizes, reverse=True)
        for b in s.blocks:
            assert b.granularity == s.granularity and np.all(np.diff(b.rows) > 0)
            assert 0 < b.n_columns and b.n_columns % (ws * s.vector_size) == 0
            if not long:
                assert b.n_columns < unit + ws                  # a remainder, aligned
            if long and opts["clip"]:
                assert b.n_columns <= max(unit, opts["clip"] // (b.granularity * unit) * unit)
            step, later = np.diff(b.cols), b.kind[1:]
            assert np.all(step <= max_gap), "a delta out of range"
            assert np.all(step[later != BE.ALIGN] > 0) and np.all(step[later == BE.ALIGN] == 0)
            align = np.flatnonzero(b.kind == BE.ALIGN)
            assert np.all(b.kind[align[0]:] == BE.ALIGN) if align.size else True   # at the end only
            assert 0 <= b.cols.min() and b.cols.max() < P.shape[1]
            real = b.cols[b.kind == BE.REAL]
            assert P[np.ix_(b.rows, real)].all(), "a real column where the matrix has no entry"
            count[np.ix_(b.rows, real)] += 1
    np.testing.assert_array_equal(count, P.astype(np.int64))   # each nonzero exactly once


@given(A=MATRICES, opts=OPTIONS)
@example(A=np.zeros((0, 0), np.float32), opts=dict(delta_bits=8, warp_size=32, vector_size=4,
                                                   clip=None, reorder=True, max_granularity=None))
@example(A=build_case(1, 1, 70, 0.4, np.float32).A, opts=dict(delta_bits=4, warp_size=2,
         vector_size=2, clip=None, reorder=True, max_granularity=None))
@example(A=build_case(2, 70, 1, 0.4, np.float32).A, opts=dict(delta_bits=4, warp_size=1,
         vector_size=1, clip=None, reorder=True, max_granularity=None))
@example(A=np.ones((33, 65), np.float32), opts=dict(delta_bits=8, warp_size=4, vector_size=2,
         clip=None, reorder=True, max_granularity=None))
def test_every_nonzero_lands_in_exactly_one_block(A, opts):
    check_block_sets(A, BE.block_sets(A, **opts), opts)


def elements(blocks) -> Counter:
    """(row, column) of every entry the blocks cover, with multiplicity."""
    return Counter((int(r), int(c)) for b in blocks for r in b.rows for c in b.cols)


@given(A=MATRICES, unit=st.sampled_from((1, 2, 4)), delta_bits=st.sampled_from(BE.DELTA_BITS))
@example(A=np.ones((16, 8), np.float32), unit=1, delta_bits=8)
def test_each_level_splits_its_input_into_leftover_and_extracted_blocks(A, unit, delta_bits):
    """Level by level: the input's entries are the leftover's plus the extracted blocks',
    each once; extracted blocks (granularity 2g, a multiple of ``unit`` columns, adjacent
    columns within the delta range) are the next level's input; the last level extracts
    nothing."""
    max_gap = BE.max_gap_for(delta_bits)
    levels = BE.extract(A, unit=unit, max_gap=max_gap)
    P = pattern_of(A)
    assert elements(levels[0].rows) == Counter(map(tuple, np.argwhere(P).tolist()))
    for k, level in enumerate(levels):
        assert level.granularity == 2 ** k
        assert elements(level.rows) == elements(level.leftover) + elements(level.extracted)
        assert all(b.granularity == level.granularity for b in level.leftover)
        for b in level.extracted:
            assert b.granularity == 2 * level.granularity and b.n_columns % unit == 0
            assert b.n_columns and np.all(np.diff(b.cols) > 0) and np.all(np.diff(b.cols) <= max_gap)
        if k + 1 < len(levels):
            assert [(b.rows.tolist(), b.cols.tolist()) for b in level.extracted] == \
                   [(b.rows.tolist(), b.cols.tolist()) for b in levels[k + 1].rows]
    assert not levels[-1].rounds


# ---------------------------------------------------------------------------------------------
# paper Fig. 3 (the figure is missing from the text: its stated numbers, pinned)
# ---------------------------------------------------------------------------------------------

#: columns of rows 0..5 (9 columns), chosen so that the text's statements about Fig. 3 hold
FIG3_ROWS = [[3, 5], [3, 5], [3, 4, 5, 6], [0, 1, 2, 7, 8], [0, 2, 3, 4, 5, 6, 7, 8], [1]]


def fig3_matrix() -> np.ndarray:
    A = np.zeros((6, 9), np.float32)
    for r, cols in enumerate(FIG3_ROWS):
        A[r, cols] = 1 + r
    return A


def test_fig3_invariants():
    """Row 4 shares columns 3 4 5 6 with row 2 and 0 2 7 8 with row 3; level 0 extracts three
    blocks in round 1 and one more block of four columns in round 2; level 1 is the 4 x 9
    matrix of those blocks and leaves three non-empty rows; row 4's nonzeros end up split
    across blocks; every nonzero lies in exactly one block."""
    A = fig3_matrix()
    P = A != 0
    assert np.flatnonzero(P[4] & P[2]).tolist() == [3, 4, 5, 6]
    assert np.flatnonzero(P[4] & P[3]).tolist() == [0, 2, 7, 8]
    levels = BE.extract(A)
    l0, l1 = levels[0], levels[1]
    assert [len(r) for r in l0.rounds] == [3, 1]
    assert l0.rounds[1][0].n_columns == 4 and l0.rounds[1][0].rows.tolist() == [3, 4]
    assert l0.rounds[0][1].rows.tolist() == [2, 4] and l0.rounds[0][1].cols.tolist() == [3, 4, 5, 6]
    assert not l0.leftover
    level1 = sp.csr_matrix((np.ones(sum(b.n_columns for b in l1.rows)),
                            np.concatenate([b.cols for b in l1.rows]),
                            np.cumsum([0] + [b.n_columns for b in l1.rows])), shape=(len(l1.rows), 9))
    assert level1.shape == (4, 9) and all(b.granularity == 2 for b in l1.rows)
    assert len(l1.leftover) == 3
    assert [b.granularity for b in levels[2].leftover] == [4] and len(levels) == 3
    opts = dict(delta_bits=8, warp_size=1, vector_size=1, clip=0, reorder=True, max_granularity=None)
    sets = BE.block_sets(A, **opts)
    check_block_sets(A, sets, opts)
    holding_row4 = [b for s in sets for b in s.blocks if 4 in b.rows]
    assert len(holding_row4) == 3          # {3, 5} at granularity 4, {4, 6} and {0, 2, 7, 8} at 2
    assert sorted(c for b in holding_row4 for c in b.cols) == np.flatnonzero(P[4]).tolist()


# ---------------------------------------------------------------------------------------------
# the rules, on worked cases
# ---------------------------------------------------------------------------------------------


def test_runs_cut_where_a_gap_is_beyond_the_range():
    cols = np.array([0, 3, 18, 19, 40, 55])
    assert [r.tolist() for r in BE.runs(cols, 15)] == [[0, 3, 18, 19], [40, 55]]
    assert [r.tolist() for r in BE.runs(cols, None)] == [cols.tolist()]
    assert BE.runs(np.zeros(0, np.int64), 15) == []


def test_extraction_keeps_only_whole_units_of_each_run():
    """Two equal rows with columns 0..5 and 40..42 (a gap of 35 > 15): with unit 2 the runs
    give blocks of 6 and 2 columns; column 42 stays in both rows."""
    A = np.zeros((2, 50), np.float32)
    A[:, [0, 1, 2, 3, 4, 5, 40, 41, 42]] = 1
    l0 = BE.extract(A, unit=2, max_gap=15)[0]
    assert [b.cols.tolist() for b in l0.rounds[0]] == [[0, 1, 2, 3, 4, 5], [40, 41]]
    assert [(b.rows.tolist(), b.cols.tolist()) for b in l0.leftover] == [([0], [42]), ([1], [42])]


def test_pad_gaps_inserts_a_zero_every_max_gap_columns():
    """Gaps 1, 15, 16, 31, 45 with max_gap 15: (d - 1) // 15 zeros each = 0 0 1 2 2."""
    b = BE.Block.of([7], [0, 1, 16, 32, 63, 108])
    p = BE.pad_gaps(b, 15)
    assert p.cols.tolist() == [0, 1, 16, 31, 32, 47, 62, 63, 78, 93, 108]
    assert p.kind.tolist() == [0, 0, 0, 1, 0, 1, 1, 0, 1, 1, 0]
    assert BE.pad_gaps(b, 255) is b


def test_split_long_short_fig4_row():
    """Paper Fig. 4: a 1-grained block of 5 nonzeros with warp_size 2 and vector_size 2 is a
    long part of 4 and a short part of 1 padded to 2 (repeating its column)."""
    b = BE.Block.of([3], [1, 4, 6, 9, 11])
    long, short = BE.split_long_short(b, 2, 2)
    assert long.cols.tolist() == [1, 4, 6, 9] and set(long.kind.tolist()) == {BE.REAL}
    assert short.cols.tolist() == [11, 11] and short.kind.tolist() == [BE.REAL, BE.ALIGN]
    whole, none = BE.split_long_short(b, 2, 1)          # vector_size 1: no short part
    assert none is None and whole.cols.tolist() == [1, 4, 6, 9, 11, 11]
    long, short = BE.split_long_short(b.piece(0, 4), 2, 2)
    assert short is None and long.n_columns == 4
    long, short = BE.split_long_short(b.piece(0, 3), 2, 2)
    assert long is None and short.cols.tolist() == [1, 4, 6, 6]


def test_clip_block_cuts_into_equal_whole_units():
    b = BE.Block.of([0], np.arange(24))
    assert [p.n_columns for p in BE.clip_block(b, 10, 4)] == [8, 8, 8]       # at most 8 columns
    assert [p.n_columns for p in BE.clip_block(b.piece(0, 20), 12, 4)] == [12, 8]   # 5 units: 3 + 2
    assert [p.cols[0] for p in BE.clip_block(b.piece(0, 20), 12, 4)] == [0, 12]
    assert BE.clip_block(b, 0, 4) == [b] and BE.clip_block(b, 1000, 4) == [b]
    g2 = BE.Block.of([0, 1], np.arange(24))                  # work 48: at most 16 // 2 = 8 columns
    assert [p.n_columns for p in BE.clip_block(g2, 16, 4)] == [8, 8, 8]
    assert [p.n_columns for p in BE.clip_block(g2, 3, 4)] == [4] * 6        # never below a unit


def test_dynamic_threshold_is_twice_the_mean_work():
    blocks = [BE.Block.of([0], np.arange(8)), BE.Block.of([1], np.arange(8)),
              BE.Block.of([2, 3], np.arange(20))]               # work 8, 8, 40: mean 56 / 3
    assert BE.clip_threshold(blocks, None) == 38                  # ceil(2 * 56 / 3)
    assert BE.clip_threshold(blocks, 5) == 5 and BE.clip_threshold([], None) == 0


def test_padding_statistics_hand_computed():
    """Row 0: columns 0 and 40 (gap 40 > 15: zeros at 15 and 30), a long part of 4; row 1:
    columns 0..4 (5 nonzeros), a long part of 4 and a short part of 1 + 1 alignment zero.
    Nonzeros 7, zeros 2 + 1: overhead 3 / 7."""
    A = np.zeros((2, 50), np.float32)
    A[0, [0, 40]] = 1
    A[1, [10, 11, 12, 13, 14]] = 1
    sets = BE.block_sets(A, delta_bits=4, warp_size=2, vector_size=2)
    assert [(s.granularity, s.vector_size, [b.cols.tolist() for b in s.blocks]) for s in sets] == [
        (1, 2, [[0, 15, 30, 40], [10, 11, 12, 13]]), (1, 1, [[14, 14]])]
    assert BE.padding_stats(sets) == {"nnz": 7, "gap_zeros": 2, "align_zeros": 1, "zeros": 3,
                                      "overhead": 3 / 7}
    assert BE.padding_stats([]) == {"nnz": 0, "gap_zeros": 0, "align_zeros": 0, "zeros": 0,
                                    "overhead": 0.0}


def test_max_granularity_caps_the_aggregation():
    A = np.ones((8, 16), np.float32)                           # all rows equal: up to 8-grained
    sizes = {g: {s.granularity for s in BE.block_sets(A, warp_size=1, vector_size=1, max_granularity=g)}
             for g in (None, 1, 2, 4)}
    assert sizes == {None: {8}, 1: {1}, 2: {2}, 4: {4}}


def test_reorder_sorts_blocks_by_stored_columns_within_a_set():
    A = np.zeros((3, 40), np.float32)
    A[0, :4], A[1, :12], A[2, :8] = 1, 1, 1
    for reorder, want in ((True, [12, 8, 4]), (False, [4, 12, 8])):
        (s,) = BE.block_sets(A, warp_size=4, vector_size=1, reorder=reorder, clip=0, max_granularity=1)
        assert [b.n_columns for b in s.blocks] == want


@pytest.mark.parametrize("bad", [dict(delta_bits=2), dict(delta_bits=True), dict(warp_size=3),
                                 dict(warp_size=64), dict(vector_size=16), dict(clip=-1),
                                 dict(clip=2.5), dict(reorder="yes"), dict(max_granularity=3),
                                 dict(max_granularity=0)])
def test_bad_options_raise_option_error_naming_them(bad):
    (name,) = bad
    with pytest.raises(OptionError, match=rf"^{name}: expected"):
        BE.block_sets(np.eye(3, dtype=np.float32), **bad)
