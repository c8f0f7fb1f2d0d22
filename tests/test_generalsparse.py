"""reference/generalsparse/: the memory access space and the reduction space of GeneralSparse.

Invariants on every drawn input (Hypothesis) and every strategy ``strategies(A, N)`` lists:
every nonzero is owned by exactly one thread-group and every (thread-group, column of C) by
exactly one thread; the divisions keep their promises (single-row, not split, block sizes);
the format adjustments do what they say; the product equals ``A @ B`` within the per-dtype
bound of ``spmvlab.check``, every row of C written once (or only atomically, or left to the
zero initialisation the plan asks for). Each reduction algorithm equals a plain (segmented)
sum. Pinned: Algorithm 1 on the example of paper_repro.md, a small plan's offsets, the
selection rules.
"""
import dataclasses

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import example, given
from hypothesis import strategies as st

import reference.generalsparse as G
from parity import assert_close
from reference._common import DTypeError, OptionError, ShapeError, canonical_csr
from reference.offsets import compress
from spmvlab import datasets
from strategies import build_case, gs_matrices, gs_wide_matrix

single, multi = "single", "multi"
D = G.Division
SPLIT_S, SPLIT_M, WHOLE_S, WHOLE_M = D(single, True), D(multi, True), D(single, False), D(multi, False)


# --------------------------------------------------------------------------------------
# helpers: the invariants
# --------------------------------------------------------------------------------------


def _owners(p: G.Plan):
    """Per logical slot: its thread-group, warp-group and block."""
    s = p.strategy
    group = p.group_of_slot()
    return group, group // s.groups_per_warp, group // (s.groups_per_warp * s.groups_per_block)


def _one_owner_per_key(keys, owners):
    """Within each key, all slots have the same owner."""
    if not len(keys):
        return True
    pairs = np.unique(np.stack([keys, owners]), axis=1)
    return np.unique(pairs[0]).size == pairs.shape[1]


def check_plan(p: G.Plan, csr: sp.csr_matrix):
    s = p.strategy
    t, g = s.groups_per_warp, s.groups_per_block
    off = p.thread_offset.astype(np.int64)
    # the nested partition of the slot stream (Fig. 7c offsets)
    assert off[0] == 0 and off[-1] == p.n_slots and np.all(np.diff(off) >= 0)
    assert off.size == p.n_blocks * g * t + 1
    assert np.array_equal(p.warp_offset, p.thread_offset[::t])
    assert np.array_equal(p.block_offset, p.warp_offset[::g])
    assert np.array_equal(np.sort(p.storage), np.arange(p.n_slots))
    # every nonzero owned by exactly one slot (hence one thread-group), with its column and value
    real = ~p.pad
    assert np.array_equal(np.sort(p.source[real]), np.arange(csr.nnz))
    assert np.all(p.source[~real] == -1)
    assert np.array_equal(p.cols[real], csr.indices[p.source[real]])
    assert np.array_equal(p.values[real].astype(np.float64), csr.data[p.source[real]].astype(np.float64),
                          equal_nan=True)
    assert np.all(p.values[~real] == 0) and np.all(p.cols[~real] == 0)
    orig_row = np.repeat(np.arange(csr.shape[0]), np.diff(csr.indptr))
    assert np.array_equal(p.row_order[p.rows[real]], orig_row[p.source[real]])
    assert np.array_equal(np.sort(p.row_order), np.arange(csr.shape[0]))
    # the BITMAP: a row begins at its first slot; padding begins only an empty row
    rows, starts, lpad = p.logical("rows"), p.logical("row_start"), p.logical("pad")
    src = p.logical("source")
    assert np.array_equal(starts[~lpad], src[~lpad] == csr.indptr[:-1][orig_row[src[~lpad]]])
    lengths_of = np.diff(csr.indptr)[p.row_order]
    row_ids, first = np.unique(rows, return_index=True)
    empty_pad = np.zeros_like(lpad)
    empty_pad[first[(row_ids >= 0) & (lengths_of[np.maximum(row_ids, 0)] == 0)]] = True
    assert np.array_equal(starts[lpad], empty_pad[lpad])
    # the divisions keep their promises
    group, wgroup, block = _owners(p)
    keep = ~lpad | (rows >= 0)
    level = {"thread": group, "warp": wgroup, "block": block}
    parent = {"thread": wgroup, "warp": block, "block": np.zeros_like(block)}
    for name in level:
        div = getattr(s, name)
        if div.rows == single:        # every worker's slots lie in one row
            assert _one_owner_per_key(level[name][keep], rows[keep]), name
        if not div.split:             # a row piece of the parent stays with one worker
            key = parent[name][keep] * (csr.shape[0] + 1) + rows[keep]
            assert _one_owner_per_key(key, level[name][keep]), name
    if not s.block.split and s.block.rows == multi:
        assert p.n_blocks == -(-csr.shape[0] // s.block_size)
        assert np.array_equal(rows[keep] // s.block_size, block[keep])
    if s.block.split:                 # at most block_size nonzeros per block
        assert np.bincount(block[~lpad], minlength=1).max() <= s.block_size
    # format adjustments
    lengths = np.diff(off)
    assert np.all(lengths % s.vector_width == 0)
    if s.interleave:
        assert np.all(lengths.reshape(-1, t) == lengths.reshape(-1, t)[:, :1])
    if s.sort_rows:
        assert np.all(np.diff(np.diff(csr.indptr)[p.row_order]) <= 0)
    if s.pad_empty_rows:
        assert np.unique(rows[rows >= 0]).size == csr.shape[0]
    empty_unpadded = np.any(np.diff(csr.indptr) == 0) and not s.pad_empty_rows
    assert p.zero_init == (s.block.split or bool(empty_unpadded))
    assert p.reduction == G.select_reduction(s, int(lengths.max(initial=0)))
    check_compact(p, csr)


def check_compact(p: G.Plan, csr: sp.csr_matrix):
    """Compact storage: its arrays alone give back every per-slot array; columns are 16-bit
    exactly when every block's span fits; the bytes counted are the arrays the kernel reads."""
    s = p.strategy
    if not s.compact:
        assert p.col_bits == 32 and p.row_ptr is None and p.col_offset is None
        assert set(p.device_arrays()) == {"flags", "rows", "cols", "values"}
        return
    d = G.decode_compact(p)
    for name in ("rows", "row_start", "pad", "cols"):
        assert np.array_equal(d[name], getattr(p, name)), name
    arrays = p.device_arrays()
    assert "rows" not in arrays and "flags" not in arrays
    if csr.shape[1] <= G.SPAN16:
        assert p.col_bits == 16 and p.col_base is None and arrays["cols"].dtype == np.uint16
    assert p.stored_bytes == sum(a.nbytes for a in arrays.values()) + p.thread_offset.nbytes + \
        (p.warp_offset.nbytes if s.interleave else 0)


def check_columns(p: G.Plan, n_cols: int):
    """Every (thread-group, column) pair is computed by exactly one thread of the launch."""
    group, cols = p.thread_map(n_cols)
    n_groups = p.thread_offset.size - 1
    pairs = np.stack([np.repeat(group, cols.shape[1]), cols.ravel()])
    pairs = pairs[:, pairs[1] >= 0]
    assert pairs.shape[1] == n_groups * n_cols
    assert np.unique(pairs, axis=1).shape[1] == pairs.shape[1]


def check_product(p: G.Plan, csr, B, dtype):
    ex = G.execute(p, B)
    assert_close(ex.C, csr, B, dtype, what=p.strategy.label)
    assert ex.stores.max(initial=0) <= 1, "a row stored twice"
    assert not np.any(ex.stores[ex.atomic]), "a row both stored and added atomically"
    assert ex.atomic.any() <= p.reduction.atomic
    assert p.zero_init or np.all((ex.stores == 1) | ex.atomic)
    return ex


def _b(seed, k, n, dtype):
    return np.random.default_rng(seed).standard_normal((k, n)).astype(dtype)


# --------------------------------------------------------------------------------------
# Every strategy on every drawn input
# --------------------------------------------------------------------------------------

@st.composite
def inputs(draw):
    A, dtype = draw(gs_matrices(max_side=40, extremes=True))
    return A, dtype, draw(st.sampled_from([1, 3, 8, 13, 33, 64])), draw(st.integers(0, 2**16))


# drawn extremes may overflow float16 (summed duplicates too): accepted on purpose
ACCEPT_LOSS = pytest.mark.filterwarnings("ignore::reference._common.LossyConversionWarning",
                                         "ignore::RuntimeWarning")


def _run_all(A, dtype, n, seed):
    csr = canonical_csr(A, dtype, lossy=True)
    B = _b(seed, A.shape[1], n, dtype)
    listed = G.strategies(A, n, dtype=dtype, lossy=True)
    assert listed and len(listed) == len(set(listed))
    for s in listed:
        p = G.plan(A, s, dtype=dtype, lossy=True)
        check_plan(p, csr)
        check_product(p, csr, B, dtype)
    return listed


@ACCEPT_LOSS
@given(inputs())
@example((sp.coo_matrix((0, 0), dtype=np.float32), np.float32, 1, 0))           # nothing at all
@example((sp.coo_matrix((5, 7), dtype=np.float32), np.float32, 8, 0))           # no nonzeros
@example((sp.random(1, 70, 0.5, random_state=1, dtype=np.float32), np.float32, 13, 1))   # 1 x N
@example((sp.random(70, 1, 0.5, random_state=2, dtype=np.float32), np.float16, 64, 2))   # N x 1
@example((sp.random(33, 65, 0.2, random_state=3, dtype=np.float32), np.float32, 33, 3))   # not x32
@example((build_case(seed=7, n_rows=20, n_cols=30, density=0.3, dtype=np.float32,
                     empty_rows=True).A, np.float32, 5, 5))                      # empty rows, N = 5
@example((sp.coo_matrix((np.array([4e4, 4e4, 1.0], np.float32), ([0, 0, 1], [2, 2, 0])), shape=(2, 3)),
          np.float16, 3, 6))                                      # duplicates summing past float16
def test_every_strategy_partitions_and_multiplies(case):
    """Every listed strategy: each nonzero owned once, divisions as declared, C = A @ B."""
    _run_all(*case)


@ACCEPT_LOSS
@given(inputs())
@example((sp.random(9, 20, 0.4, random_state=4, dtype=np.float32), np.float32, 13, 4))
def test_dense_division_covers_every_column_once(case):
    A, dtype, n, _ = case
    for s in G.strategies(A, n, dtype=dtype, lossy=True)[::7]:
        check_columns(G.plan(A, s, dtype=dtype, lossy=True), n)


def test_compact_strategies_are_listed_and_smaller():
    A = build_case(seed=7, n_rows=20, n_cols=30, density=0.5, dtype=np.float16, empty_rows=True).A
    listed = G.strategies(A, 8, dtype=np.float16, lossy=True)
    compact = [s for s in listed if s.compact]
    assert compact and all(not s.pad_empty_rows and s.b_vector == min(8, s.thread_cols) for s in compact)
    assert any(s.interleave and s.vector_width == 8 for s in compact)
    for s in compact[::5]:
        full = G.plan(A, dataclasses.replace(s, compact=False, b_vector=1), dtype=np.float16, lossy=True)
        small = G.plan(A, s, dtype=np.float16, lossy=True)
        if small.nnz and not s.interleave and s.vector_width == 1:     # same slots, fewer bytes
            assert small.n_slots == full.n_slots       # (tiny thread-groups: per-group bytes may dominate)
            arrays = small.device_arrays()
            assert arrays["values"].itemsize + arrays["cols"].itemsize == 4     # 2 value + 2 column
            assert arrays["tg_len"].size == small.thread_offset.size - 1 and arrays["row_ptr"].size == 21
    with pytest.raises(OptionError, match="pad_empty_rows"):
        G.Strategy(compact=True, pad_empty_rows=True)
    with pytest.raises(OptionError, match="b_vector"):
        G.Strategy(thread_cols=2, warp_cols=2, block_cols=2, b_vector=4)
    with pytest.raises(OptionError, match="b_vector"):
        G.plan(A, G.Strategy(thread_cols=8, warp_cols=8, block_cols=8, b_vector=8), dtype=np.float32, lossy=True)


@pytest.mark.parametrize("block_size,bits", [(2, 16), (4, 32)])
def test_compact_columns_wide_matrix(block_size, bits):
    """Row-blocks of 2 rows: every block's span fits (a base per block); of 4: one does not,
    so the plan falls back to int32 columns. Both multiply exactly."""
    A = gs_wide_matrix()
    M = G.Division("multi", False)
    s = G.Strategy(block=M, warp=M, thread=G.Division("multi", True), block_size=block_size,
                   thread_cols=2, warp_cols=2, block_cols=2, compact=True, b_vector=2)
    p = G.plan(A, s, dtype=np.float32)
    assert p.col_bits == bits and (p.col_base is not None) == (bits == 16)
    if bits == 16:
        assert list(p.col_base) == [3, 65000, 10]
    check_plan(p, canonical_csr(A, np.float32))
    B = _b(1, A.shape[1], 2, np.float32)
    np.testing.assert_allclose(G.spmm(p, B), A @ B, rtol=1e-6)


def test_gallery_reaches_every_algorithm():
    """Over the structured gallery the rules select each of the eight algorithms, and every
    listed strategy multiplies correctly (float32, N = 8)."""
    seen = set()
    for name in ("power_law", "block", "banded"):
        A = datasets.gallery(name, "small")
        B = _b(5, A.shape[1], 8, np.float32)
        for s in G.strategies(A, 8):
            p = G.plan(A, s)
            seen |= set(p.reduction.algorithms)
            check_product(p, canonical_csr(A), B, np.float32)
    assert seen == set(G.ALGORITHMS)


def test_explicit_strategies_outside_the_pruned_list():
    """Points the pruning skips still plan and multiply: warp-groups, vector width 2 with
    interleaving, sorted and padded rows, a multi-row level under a single-row one."""
    A = datasets.gallery("power_law", "small")
    csr = canonical_csr(A)
    B = _b(6, A.shape[1], 13, np.float32)
    points = [
        G.Strategy(block=WHOLE_M, block_size=6, warp=SPLIT_M, thread=SPLIT_M, warps_per_block=4,
                   thread_cols=1, warp_cols=4, block_cols=8, interleave=True, vector_width=2,
                   sort_rows=True, pad_empty_rows=True),
        G.Strategy(block=WHOLE_S, warp=SPLIT_M, thread=WHOLE_M, warps_per_block=2),
        G.Strategy(block=SPLIT_M, block_size=7, warp=WHOLE_M, thread=SPLIT_S, warps_per_block=8,
                   thread_cols=2, warp_cols=16, block_cols=16, vector_width=8),
        G.Strategy(),
    ]
    for s in points:
        p = G.plan(A, s)
        check_plan(p, csr)
        check_columns(p, 13)
        check_product(p, csr, B, np.float32)


# --------------------------------------------------------------------------------------
# Pinned plans and rules
# --------------------------------------------------------------------------------------


def _rows(lengths, n_cols=6):
    dense = np.zeros((len(lengths), n_cols), np.float32)
    for i, n in enumerate(lengths):
        dense[i, :n] = np.arange(1, n + 1)
    return dense


def test_pinned_offsets_one_block_per_row_two_groups_per_warp():
    """Row lengths 3, 1, 4, 0; a block per row, its warp split between 2 thread-groups of 16
    lanes: thread offsets [0,2,3 | 3,4,4 | 4,6,8 | 8,8,8]."""
    s = G.Strategy(block=WHOLE_S, warp=WHOLE_S, thread=SPLIT_S, thread_cols=1, warp_cols=16, block_cols=16)
    p = G.plan(_rows([3, 1, 4, 0]), s)
    assert p.thread_offset.tolist() == [0, 2, 3, 4, 4, 6, 8, 8, 8]
    assert p.block_offset.tolist() == [0, 3, 4, 8, 8]
    assert p.reduction == G.Reduction(thread=G.THREAD_TOTAL, warp=G.WARP_TOTAL, block=None, atomic=False)
    assert p.zero_init                          # row 3 is empty and not padded
    q = G.plan(_rows([3, 1, 4, 0]), dataclasses.replace(s, pad_empty_rows=True))
    assert q.thread_offset.tolist()[-3:] == [8, 9, 9] and not q.zero_init
    ex = G.execute(q, np.ones((6, 16), np.float32))
    assert ex.C[:, 0].tolist() == [6, 1, 10, 0] and ex.stores.tolist() == [1, 1, 1, 1]


def test_pinned_interleaved_vector_layout():
    """One row of 8 and one of 3, a block of both rows, 2 thread-groups each taking a row,
    vector width 2, interleaved: thread lengths padded to 8, stored pairwise alternating."""
    s = G.Strategy(block=WHOLE_M, block_size=2, warp=WHOLE_M, thread=WHOLE_S, warp_cols=16,
                   block_cols=16, vector_width=2, interleave=True)
    p = G.plan(_rows([8, 3], n_cols=8), s)
    assert p.thread_offset.tolist() == [0, 8, 16]
    assert p.storage.tolist() == [0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15]
    assert p.logical("pad").tolist() == [False] * 8 + [False] * 3 + [True] * 5
    assert p.logical("rows").tolist() == [0] * 8 + [1] * 8   # padding keeps its group's row
    assert G.execute(p, np.ones((8, 16), np.float32)).C[:, 0].tolist() == [36, 6]


def test_pinned_cyclic_layout():
    """One row of 11, one warp-group of 2 thread-groups, vector width 2, interleaved. Chunked,
    thread-group 0 takes entries 0-5 and 1 takes 6-10; cyclic, they take pairs in turn (0 gets
    0 1 4 5 8 9, 1 gets 2 3 6 7 10), so memory holds the row in order, one padding slot last."""
    s = G.Strategy(block=WHOLE_S, warp=WHOLE_S, thread=SPLIT_S, thread_cols=1, warp_cols=16, block_cols=16,
                   vector_width=2, interleave=True)
    A = _rows([11], n_cols=11)
    chunked, cyclic = G.plan(A, s), G.plan(A, dataclasses.replace(s, cyclic=True))
    assert chunked.logical("source").tolist() == list(range(11)) + [-1]
    assert chunked.source.tolist() == [0, 1, 6, 7, 2, 3, 8, 9, 4, 5, 10, -1]
    assert cyclic.thread_offset.tolist() == chunked.thread_offset.tolist() == [0, 6, 12]
    assert cyclic.source.tolist() == list(range(11)) + [-1]           # storage = row order
    assert cyclic.logical("source").tolist() == [0, 1, 4, 5, 8, 9, 2, 3, 6, 7, 10, -1]
    assert cyclic.logical("pad").tolist() == [False] * 11 + [True]
    assert G.cyclic_lengths(np.array([11, 0, 3, 8]), 2, 2).tolist() == [[6, 5], [0, 0], [2, 1], [4, 4]]
    for p in (chunked, cyclic):
        assert G.execute(p, np.ones((11, 16), np.float32)).C[:, 0].tolist() == [66]
    c = G.plan(A, dataclasses.replace(s, cyclic=True, compact=True, b_vector=1))
    assert c.tg_len.tolist() == [6, 5] and c.tg_row.tolist() == [0, 0]
    assert {k: v.tolist() for k, v in G.decode_compact(c).items()} == {
        k: getattr(c, k).tolist() for k in ("rows", "row_start", "pad", "cols")}


def test_cyclic_strategies_are_listed():
    """Every interleaved strategy with single-row warp-groups and a single-row split thread
    division is listed once more cyclic (compact ones too); the rest never are."""
    listed = G.strategies(build_case(seed=2, n_rows=5, n_cols=300, density=0.6, dtype=np.float32).A, 8)
    cyc = [s for s in listed if s.cyclic]
    assert cyc and any(s.compact for s in cyc)
    assert all(s.interleave and s.thread == SPLIT_S and s.warp.rows == "single" for s in cyc)
    assert {dataclasses.replace(s, cyclic=False) for s in cyc} <= set(listed)


def test_pinned_split_blocks_add_atomically():
    """Blocks of 4 nonzeros over rows of 3, 2, 4: row 0 ends inside block 0 (stored by the
    warp's BITMAP reduction), rows 1 and 2 cross block boundaries (added atomically)."""
    s = G.Strategy(block=SPLIT_M, block_size=4, warp=WHOLE_M, thread=SPLIT_M, warp_cols=8, block_cols=8)
    p = G.plan(_rows([3, 2, 4]), s)
    assert p.block_offset.tolist() == [0, 4, 8, 9]
    assert p.reduction == G.Reduction(thread=None, warp=G.WARP_BITMAP, block=None, atomic=True)
    ex = G.execute(p, np.ones((6, 8), np.float32))
    assert ex.C[:, 0].tolist() == [6, 3, 10]
    assert ex.atomic.tolist() == [False, True, True] and ex.stores.tolist() == [1, 0, 0]


@pytest.mark.parametrize("thread,warp,block,slots,want", [
    (SPLIT_S, WHOLE_S, WHOLE_S, 1, (None, G.WARP_TOTAL, None, False)),           # range < 2: skip threads
    (SPLIT_S, WHOLE_S, WHOLE_S, 2, (G.THREAD_TOTAL, G.WARP_TOTAL, None, False)),
    (SPLIT_M, WHOLE_M, WHOLE_M, 4, (G.THREAD_BITMAP, G.WARP_SEGMENT, None, False)),
    (SPLIT_M, WHOLE_M, WHOLE_M, 1, (None, G.WARP_BITMAP, None, False)),
    (SPLIT_S, SPLIT_S, WHOLE_M, 3, (G.THREAD_TOTAL, G.WARP_TOTAL, G.BLOCK_BITMAP, False)),
    (SPLIT_M, SPLIT_M, SPLIT_M, 3, (G.THREAD_BITMAP, G.WARP_SEGMENT, G.BLOCK_SEGMENT, True)),
    (WHOLE_M, SPLIT_S, WHOLE_S, 9, (G.THREAD_BITMAP, None, G.BLOCK_TOTAL, False)),
])
def test_selection_rules(thread, warp, block, slots, want):
    size = 1 if block == WHOLE_S else 4
    s = G.Strategy(block=block, warp=warp, thread=thread, block_size=size)
    assert G.select_reduction(s, slots) == G.Reduction(*want)


def test_plan_offsets_compress_back():
    """The code optimizer can take a plan's offsets: every pattern expands to them."""
    A = datasets.gallery("banded", "small")
    for s in G.strategies(A, 8)[::5]:
        p = G.plan(A, s)
        for arr in (p.thread_offset, p.warp_offset, p.block_offset):
            assert np.array_equal(compress(arr).expand(arr.size), arr)


# --------------------------------------------------------------------------------------
# The reductions against plain sums
# --------------------------------------------------------------------------------------


def _ints(rng, shape):
    """Small integers as float64: every order of summation is exact, so any lane mistake shows."""
    return rng.integers(-50, 50, size=shape).astype(np.float64)


def test_algorithm1_paper_example():
    """Values 1..8, rows starting at lanes 0, 3, 5: heads hold 6, 9, 21 (paper_repro.md)."""
    v = np.arange(1, 9, dtype=np.float64).reshape(1, 8, 1)
    bitmap = np.zeros((1, 8), bool)
    bitmap[0, [0, 3, 5]] = True
    out = G.bitmap_reduce(v, bitmap)[0, :, 0]
    assert out[[0, 3, 5]].tolist() == [6, 9, 21]


@given(st.integers(1, 32), st.integers(1, 4), st.integers(0, 2**32 - 1))
@example(1, 1, 0)
@example(32, 3, 1)
def test_bitmap_reduce_is_a_segmented_sum(k, n, seed):
    rng = np.random.default_rng(seed)
    v = _ints(rng, (3, k, n))
    bitmap = rng.random((3, k)) < 0.35
    out = G.bitmap_reduce(v, bitmap)
    for p in range(3):
        heads = [0] + [j for j in range(1, k) if bitmap[p, j]]
        for a, b in zip(heads, heads[1:] + [k]):
            assert np.array_equal(out[p, a], v[p, a:b].sum(axis=0))


@given(st.sampled_from([1, 2, 4, 8, 16, 32]), st.integers(0, 2**32 - 1))
def test_tree_sum_is_the_sum(k, seed):
    v = _ints(np.random.default_rng(seed), (4, k, 3))
    assert np.array_equal(G.tree_sum(v), v.sum(axis=1))


@given(st.integers(1, 32), st.integers(0, 2**32 - 1))
@example(1, 0)
@example(8, 3)
def test_segment_reduce_is_a_segmented_sum(k, seed):
    """Lay the lanes out as a sequence (lead, start, tail per lane) and sum it by rows."""
    rng = np.random.default_rng(seed)
    has = rng.random((3, k)) < 0.4
    lead, tail = _ints(rng, (3, k, 2)), _ints(rng, (3, k, 2)) * has[..., None]
    result, head, closes = G.segment_reduce(lead, tail, has)
    for p in range(3):
        starts = [j for j in range(k) if has[p, j]]
        upto = starts[0] + 1 if starts else k
        assert np.array_equal(head[p], lead[p, :upto].sum(axis=0))
        for i, j in zip(starts, starts[1:] + [None]):
            end = j + 1 if j is not None else k
            assert np.array_equal(result[p, i], tail[p, i] + lead[p, i + 1:end].sum(axis=0))
            assert closes[p, i] == (j is not None)


class _Recorder:
    def __init__(self):
        self.rows, self.values = [], []

    def store(self, rows, values):
        self.rows += list(rows)
        self.values += list(values)


@given(st.integers(0, 2**32 - 1), st.sampled_from([G.THREAD_BITMAP, G.THREAD_TOTAL, None]))
@example(0, G.THREAD_BITMAP)
def test_thread_reduce_is_a_segmented_sum(seed, algorithm):
    """Random slot rows and thread ranges: complete rows stored, leads and tails as summed
    by a plain loop over each range."""
    rng = np.random.default_rng(seed)
    n_slots = int(rng.integers(0, 40))
    if algorithm is None:                         # at most one slot per range
        offsets = np.arange(n_slots + 1)
    else:
        offsets = np.unique(np.r_[0, rng.integers(0, n_slots + 1, 5), n_slots])
    if algorithm == G.THREAD_BITMAP:              # rows run across ranges
        rows = np.sort(rng.integers(0, 8, n_slots))
        starts = np.r_[rng.random() < 0.5, rows[1:] != rows[:-1]][:n_slots]
    else:                                         # one row per range, begun here or before
        rows = np.repeat(np.arange(offsets.size - 1), np.diff(offsets))
        starts = np.zeros(n_slots, bool)
        firsts = offsets[:-1][np.diff(offsets) > 0]
        starts[firsts] = rng.random(firsts.size) < 0.5
    vals = _ints(rng, (n_slots, 2))
    rec = _Recorder()
    parts = G.thread_reduce(vals, rows, starts, offsets, algorithm, rec)
    stored = dict(zip(rec.rows, [tuple(v) for v in rec.values]))
    for i, (a, b) in enumerate(zip(offsets[:-1], offsets[1:])):
        s_in = [j for j in range(a, b) if starts[j]]
        lead_end = s_in[0] if s_in else b
        assert np.array_equal(parts.lead[i], vals[a:lead_end].sum(axis=0))
        assert parts.lead_row[i] == (rows[a] if lead_end > a else -1)
        assert parts.has_start[i] == bool(s_in)
        if s_in:
            assert np.array_equal(parts.tail[i], vals[s_in[-1]:b].sum(axis=0))
            assert parts.tail_row[i] == rows[s_in[-1]]
            for x, y in zip(s_in, s_in[1:]):
                assert stored[rows[x]] == tuple(vals[x:y].sum(axis=0))


# --------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------


def test_strategy_errors_name_the_field():
    with pytest.raises(OptionError, match=r"Strategy.block_size: expected 1 for single-row blocks"):
        G.Strategy(block_size=4)
    with pytest.raises(OptionError, match=r"Strategy.warp_cols: expected thread_cols \(2\) times"):
        G.Strategy(thread_cols=2, warp_cols=3, block_cols=3)
    with pytest.raises(OptionError, match=r"Strategy.block_cols: expected warp_cols \(4\) times a power of two "
                                          r"dividing warps_per_block \(1\)"):
        G.Strategy(warp_cols=4, block_cols=8)
    with pytest.raises(OptionError, match=r"Division.rows: expected 'single' or 'multi', received 'many'"):
        G.Division("many")
    with pytest.raises(OptionError, match=r"Strategy.warps_per_block: expected one of"):
        G.Strategy(warps_per_block=3)
    with pytest.raises(OptionError, match=r"Strategy.interleave: expected True with cyclic=True"):
        G.Strategy(cyclic=True)
    with pytest.raises(OptionError, match=r"Strategy.thread: expected Division\('single', True\) with cyclic"):
        G.Strategy(thread=WHOLE_S, cyclic=True, interleave=True)
    with pytest.raises(OptionError, match=r"Strategy.warp: expected a single-row division with cyclic"):
        G.Strategy(block=WHOLE_M, block_size=2, warp=WHOLE_M, cyclic=True, interleave=True)


def test_plan_and_spmm_errors():
    A = _rows([3, 1, 4, 2])
    wide = G.Strategy(block=WHOLE_M, block_size=4, warp=WHOLE_S, thread=WHOLE_S)
    with pytest.raises(OptionError, match=r"Strategy.warp: expected at most 1 row pieces per block"):
        G.plan(A, wide)
    with pytest.raises(OptionError, match=r"strategy: expected a Strategy"):
        G.plan(A, "csr-vector")
    with pytest.raises(ShapeError, match=r"B.shape\[0\]: expected 6"):
        G.spmm(A, np.ones((5, 2), np.float32), G.Strategy())
    with pytest.raises(DTypeError, match=r"B.dtype: expected float32"):
        G.spmm(A, np.ones((6, 2), np.float64), G.Strategy())
    with pytest.raises(ShapeError, match=r"N: expected the number of columns of B"):
        G.strategies(A, 0)
    p = G.plan(A, G.Strategy())
    with pytest.raises(OptionError, match=r"strategy: expected None or the plan's own strategy"):
        G.spmm(p, np.ones((6, 2), np.float32), wide)
    assert np.array_equal(G.spmm(p, np.ones((6, 2), np.float32)), A @ np.ones((6, 2), np.float32))
