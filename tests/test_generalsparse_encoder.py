"""spmvlab/generalsparse/planner.py: the fast planner gives the reference's Plan array for
array (equal values and dtypes, same fields) for every listed strategy of drawn and fixed
matrices, for strategies outside the pruned list, and raises the reference's errors; its
compiled ``decode_compact`` gives the reference's arrays for every compact plan, damaged
ones included, so the validation that uses it rejects what the reference's rejects."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import assume, example, given
from hypothesis import strategies as st

import reference.generalsparse as G
from reference._common import FormatError, OptionError
from spmvlab.generalsparse import planner as fast
from spmvlab.generalsparse import tune
from strategies import build_case, gs_matrices, gs_wide_matrix

ACCEPT_LOSS = pytest.mark.filterwarnings("ignore::reference._common.LossyConversionWarning",
                                         "ignore::RuntimeWarning")


def assert_same_plan(F, R):
    """Every field equal; arrays of the same type, dtype, shape and bytes, all read-only."""
    assert type(F) is type(R)
    for f in dataclasses.fields(R):
        a, b = getattr(F, f.name), getattr(R, f.name)
        if isinstance(b, np.ndarray) or isinstance(a, np.ndarray):
            assert isinstance(a, np.ndarray) and isinstance(b, np.ndarray), f.name
            assert a.dtype == b.dtype and a.shape == b.shape, (f.name, a.dtype, b.dtype, a.shape, b.shape)
            assert a.tobytes() == b.tobytes(), f.name
            assert not a.flags.writeable, f.name
        else:
            assert a == b and type(a) is type(b), (f.name, a, b)


def both(A, s, dtype):
    """Both planners on (A, s): the same Plan, or the same error (type and message)."""
    try:
        R = G.plan(A, s, dtype=dtype, lossy=True)
    except OptionError as e:
        with pytest.raises(OptionError) as f:
            fast.plan(A, s, dtype=dtype, lossy=True)
        assert str(f.value) == str(e)
        return None
    F = fast.plan(A, s, dtype=dtype, lossy=True)
    assert_same_plan(F, R)
    if F.strategy.compact:
        assert_same_decoding(F)
    return F


def assert_same_decoding(p):
    """The compiled decoding of ``p``'s compact arrays is the reference's, dtype and bytes."""
    want, got = G.decode_compact(p), fast.decode_compact(p)
    assert sorted(got) == sorted(want)
    for name, a in want.items():
        assert got[name].dtype == a.dtype and got[name].tobytes() == a.tobytes(), name


@ACCEPT_LOSS
@given(gs_matrices(max_side=45, extremes=False), st.sampled_from([1, 3, 8, 13, 33, 64]), st.integers(0, 6))
@example((sp.coo_matrix((0, 0), dtype=np.float32), np.float32), 1, 0)         # nothing at all
@example((sp.coo_matrix((5, 7), dtype=np.float32), np.float32), 8, 0)         # no nonzeros
@example((sp.random(1, 70, 0.5, random_state=1, dtype=np.float32), np.float16), 13, 1)   # 1 x N
@example((sp.random(70, 1, 0.5, random_state=2, dtype=np.float32), np.float32), 64, 2)   # N x 1
@example((build_case(seed=7, n_rows=20, n_cols=30, density=0.3, dtype=np.float32,
                     empty_rows=True).A, np.float16), 5, 3)                   # empty rows
def test_listed_strategies_drawn_matrices(case, N, start):
    """A drawn matrix: every 7th listed strategy (from a drawn start) planned alike."""
    A, dtype = case
    for s in G.strategies(A, N, dtype=dtype, lossy=True)[start::7]:
        assert both(A, s, dtype) is not None           # listed strategies always fit


FIXED = [
    ("random 37x50", lambda: build_case(seed=1, n_rows=37, n_cols=50, density=0.3, dtype=np.float32,
                                        empty_rows=True).A),
    ("long rows 5x300", lambda: build_case(seed=2, n_rows=5, n_cols=300, density=0.6,
                                           dtype=np.float32).A),
    ("skewed 64x40", lambda: sp.csr_matrix(np.triu(np.random.default_rng(3).random((64, 40)) > 0.2)
                                           .astype(np.float32))),
]


@ACCEPT_LOSS
@pytest.mark.parametrize("name,make", FIXED, ids=[n for n, _ in FIXED])
@pytest.mark.parametrize("N", [1, 8, 64])
def test_every_listed_strategy_fixed_matrices(name, make, N):
    A = make()
    listed = G.strategies(A, N, dtype=np.float16, lossy=True)
    assert any(s.compact for s in listed) and any(s.interleave for s in listed)
    for s in listed:
        assert both(A, s, np.float16) is not None


DIVISIONS = [G.Division(r, b) for r in G.ROWS for b in (False, True)]


@st.composite
def any_strategy(draw):
    """A valid Strategy from the whole space (not only the pruned list)."""
    block = draw(st.sampled_from(DIVISIONS))
    size = 1 if block == G.Division("single", False) else draw(st.sampled_from([2, 3, 8, 50]))
    tc = draw(st.sampled_from([1, 2, 4, 8]))
    wc = tc * draw(st.sampled_from([1, 2, 8, 32]))
    w = draw(st.sampled_from([1, 2, 4]))
    bc = wc * draw(st.sampled_from([h for h in (1, 2, 4) if w % h == 0]))
    compact = draw(st.booleans())
    kw = dict(block=block, warp=draw(st.sampled_from(DIVISIONS)), thread=draw(st.sampled_from(DIVISIONS)),
              block_size=size, warps_per_block=w, thread_cols=tc, warp_cols=wc, block_cols=bc,
              sort_rows=draw(st.booleans()), pad_empty_rows=not compact and draw(st.booleans()),
              interleave=draw(st.booleans()), vector_width=draw(st.sampled_from([1, 2, 4, 8])),
              compact=compact, b_vector=draw(st.sampled_from([b for b in (1, 2, 4, 8) if tc % b == 0])))
    kw["cyclic"] = (kw["interleave"] and kw["thread"] == G.Division("single", True)
                    and kw["warp"].rows == "single" and draw(st.booleans()))
    try:
        return G.Strategy(**kw)
    except OptionError:
        assume(False)


@ACCEPT_LOSS
@given(gs_matrices(max_side=45, extremes=False), st.lists(any_strategy(), min_size=1, max_size=8))
def test_strategies_outside_the_list(case, chosen):
    """Any strategy: the same plan, or the same error where it does not fit A."""
    A, dtype = case
    for s in chosen:
        both(A, s, dtype)


def test_errors_are_the_reference_ones():
    A = build_case(seed=4, n_rows=12, n_cols=20, density=0.5, dtype=np.float32).A
    one_row = G.Strategy(block=G.Division("multi", False), warp=G.Division("single", False),
                         block_size=8, thread_cols=1, warp_cols=32, block_cols=32)
    assert both(A, one_row, np.float32) is None                      # 8 rows for 1 warp-group
    wide = G.Strategy(thread_cols=8, warp_cols=8, block_cols=8, b_vector=8)
    assert both(A, wide, np.float32) is None                         # 32-byte loads of B
    with pytest.raises(OptionError, match="strategy"):
        fast.plan(A, "row/warp")


@pytest.mark.parametrize("block_size,bits", [(2, 16), (4, 32)])
@pytest.mark.parametrize("interleave", [False, True])
def test_compact_wide_columns(block_size, bits, interleave):
    """K > 65536: per-block column bases (16 bits) or the int32 fallback, both alike."""
    M = G.Division("multi", False)
    s = G.Strategy(block=M, warp=M, thread=G.Division("multi", True), block_size=block_size,
                   thread_cols=2, warp_cols=4, block_cols=4, compact=True, b_vector=2,
                   interleave=interleave, vector_width=2 if interleave else 1)
    p = both(gs_wide_matrix(), s, np.float32)
    assert p.col_bits == bits


def test_plan_cached_is_the_fast_plan():
    """The search and the method plan through ``tune.plan_cached``: the reference's plan."""
    A = build_case(seed=5, n_rows=40, n_cols=64, density=0.4, dtype=np.float16).A
    for s in tune.default_shortlist(64, "float16"):
        assert_same_plan(tune.plan_cached(A, s, np.float16), G.plan(A, s, dtype=np.float16, lossy=True))
    for planned in (fast.plan, tune.plan_cached):     # the reference's refusal, before any work
        with pytest.raises(OptionError, match=r"strategy: expected a Strategy"):
            planned(A, "csr-vector", np.float16)


def _damaged(p, how: int, rng):
    """``p`` with one compact array changed in a way the checks before the decoding pass
    (``how``: 0 a thread-group one slot shorter, 1 a row starting one slot later, 2 a
    column offset changed, 3 two storage positions swapped); None where p offers no place."""
    def pick(where):
        return int(rng.choice(where)) if where.size else None
    if how == 0:
        g = pick(np.flatnonzero(p.tg_len > 0))
        a = p.tg_len.copy()
        field = "tg_len"
    elif how == 1:
        ptr = p.row_ptr
        g = pick(np.flatnonzero(ptr[1:-1] < ptr[2:]) + 1) if ptr.size > 2 else None
        a = ptr.copy()
        field = "row_ptr"
    elif how == 2:
        if p.col_bits != 16 or not p.n_slots:
            return None
        g = pick(np.arange(p.n_slots))
        a = p.col_offset.copy()
        field = "col_offset"
    else:
        if p.n_slots < 2:
            return None
        i, j = rng.choice(p.n_slots, 2, replace=False)
        a = p.storage.copy()
        a[[i, j]] = a[[j, i]]
        return dataclasses.replace(p, storage=a, checksum=None)
    if g is None:
        return None
    a[g] = a[g] - 1 if how == 0 else (a[g] + 1 if how == 1 else a[g] ^ 1)
    return dataclasses.replace(p, **{field: a}, checksum=None)


@ACCEPT_LOSS
@given(gs_matrices(max_side=45, extremes=False), st.sampled_from([1, 8, 33]), st.integers(0, 3),
       st.integers(0, 2**32 - 1))
def test_damaged_compact_plans_decode_and_fail_alike(case, N, how, seed):
    """A compact plan with one array damaged: both decodings agree, and the full validation
    with the compiled one fails (or passes) exactly as with the reference's."""
    A, dtype = case
    compact = [s for s in G.strategies(A, N, dtype=dtype, lossy=True) if s.compact]
    assume(compact)
    rng = np.random.default_rng(seed)
    p = _damaged(fast.plan(A, compact[int(rng.integers(len(compact)))], dtype=dtype, lossy=True),
                 how, rng)
    assume(p is not None)
    assert_same_decoding(p)
    try:
        p.validate(expensive=True)
    except FormatError as e:
        with pytest.raises(FormatError) as f:
            p.validate(expensive=True, decode=fast.decode_compact)
        assert str(f.value) == str(e)
    else:
        p.validate(expensive=True, decode=fast.decode_compact)


@ACCEPT_LOSS
@pytest.mark.parametrize("how", [0, 1, 2, 3], ids=["tg_len", "row_ptr", "col_offset", "storage"])
def test_each_damage_is_caught_with_the_compiled_decoding(how):
    """On a fixed matrix every kind of damage reaches the decoding and fails there, with the
    reference's message."""
    A = build_case(seed=1, n_rows=37, n_cols=50, density=0.3, dtype=np.float32, empty_rows=True).A
    s = next(s for s in G.strategies(A, 8, dtype=np.float32) if s.compact and not s.sort_rows)
    p = _damaged(fast.plan(A, s, dtype=np.float32), how, np.random.default_rng(how))
    assert_same_decoding(p)
    with pytest.raises(FormatError, match="decode to") as e:
        p.validate(expensive=True)
    with pytest.raises(FormatError) as f:
        p.validate(expensive=True, decode=fast.decode_compact)
    assert str(f.value) == str(e.value)
