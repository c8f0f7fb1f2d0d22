"""reference/ec_csr.py: the paper's Fig. 4 and Fig. 6 layouts pinned, the stored blocks equal
to the extracted ones on every drawn input, padding statistics by hand, and the canonical
checks. The shared suite (test_formats.py) runs round trips, products, corruption, io."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import example, given, strategies as st

from reference import block_extraction as BE
from reference import csr as RC
from reference import ec_csr as E
from reference._common import FormatError, OptionError, canonical_csr
from reference.codec.interleave import interleaved_slot
from parity import assert_same_csr
from test_block_extraction import MATRICES, OPTIONS


def fig4_matrix() -> np.ndarray:
    """Rows 0 and 1 share columns 2 4 5 6 (one 2-grained block); row 2 holds 5 nonzeros that
    overlap neither (a 1-grained block: long part 4, short part 1)."""
    A = np.zeros((3, 12), np.float32)
    A[0, [2, 4, 5, 6]] = [1, 2, 3, 4]
    A[1, [2, 4, 5, 6]] = [5, 6, 7, 8]
    A[2, [0, 1, 3, 8, 10]] = [9, 10, 11, 12, 13]
    return A


def test_fig4_layout_pinned():
    """warp_size 2, vector_size 2 (the figure's). The 2-grained block: lane 0 base 2, deltas
    0 2; lane 1 base 5, deltas 0 1 (I_k = I_0 + delta_1 + ... + delta_k). Row 2: a long part
    of 4 (lanes: 0 1 | 3 8) and a short part of 1 padded to 2."""
    M = E.encode(fig4_matrix(), warp_size=2, vector_size=2)
    assert M.set_desc.tolist() == [2, 2, 0, 0, 0, 1, 2, 1, 2, 8, 1, 1, 2, 3, 12]
    assert [(s["granularity"], s["vector"], s["n_blocks"], s["nnz"]) for s in M.sets()] == [
        (2, 2, 1, 8), (1, 2, 1, 4), (1, 1, 1, 1)]
    assert M.base_indices.tolist() == [2, 5, 0, 3, 10, 10]
    assert M.delta_indices.tolist() == [0, 2, 0, 1, 0, 1, 0, 5, 0, 0]
    assert M.block_indptr.tolist() == [0, 4, 8, 10] and M.row_indices.tolist() == [0, 1, 2, 2]
    # each column's 2 values together (rows 0, 1), then row 2's long and short parts
    assert M.values.tolist() == [1, 5, 2, 6, 3, 7, 4, 8, 9, 10, 11, 12, 13, 0]
    blocks = E.stored_blocks(M)
    assert blocks[0].lane_deltas.tolist() == [[0, 2], [0, 1]]
    assert blocks[0].lane_cols.tolist() == [[2, 4], [5, 6]]
    assert blocks[2].lane_cols.tolist() == [[10], [10]] and blocks[2].values.tolist() == [[13], [0]]
    assert all(M.block_indptr.dtype == getattr(M, n).dtype == np.int32
               for n in ("base_indices", "row_indices", "set_desc"))
    assert M.nbytes == 14 * 4 + 10 + (6 + 4 + 4 + 15) * 4 == 182
    assert (M.nnz, M.n_padding, M.padding_overhead) == (13, 1, 1 / 13)
    assert M.census() == {2: 8, 1: 5}
    M4 = E.encode(fig4_matrix(), warp_size=2, vector_size=2, delta_bits=4)
    assert M4.delta_indices.tobytes().hex() == "2010105000"      # low nibble first
    assert_same_csr(M.to_csr(), canonical_csr(fig4_matrix()))


@pytest.mark.parametrize("vector, order", [(2, "a0 a1 b0 b1 a2 a3 b2 b3"), (4, "a0 a1 a2 a3 b0 b1 b2 b3"),
                                           (1, "a0 b0 a1 b1 a2 b2 a3 b3")])
def test_fig6_interleaving(vector, order):
    """Two lanes of 4 entries each (a: lane 0, b: lane 1), read ``vector`` at a time."""
    names = np.empty(8, dtype=object)
    for t, lane in enumerate("ab"):
        for k in range(4):
            names[interleaved_slot(t, k, 2, vector)] = f"{lane}{k}"
    assert " ".join(names) == order
    t, k = np.divmod(np.arange(8), 4)
    assert sorted(interleaved_slot(t, k, 2, vector).tolist()) == list(range(8))


def test_interleaving_compiles_for_numba():
    from spmvlab import codec
    slot = codec.njit(interleaved_slot)
    assert [slot(t, k, 32, 4) for t, k in ((0, 0), (1, 0), (0, 4), (31, 7))] == \
           [interleaved_slot(t, k, 32, 4) for t, k in ((0, 0), (1, 0), (0, 4), (31, 7))] == [0, 4, 128, 255]


def test_values_of_a_2_grained_block_are_interleaved_by_lane():
    """Two equal rows of 8 nonzeros, A[r, c] = 10 (r + 1) + c: one 2-grained block; lane 0
    columns 0..3, lane 1 columns 4..7. vector_size 2 stores columns 0 1 4 5 2 3 6 7."""
    A = 10.0 * np.array([[1], [2]]) + np.arange(8)
    M = E.encode(A.astype(np.float32), warp_size=2, vector_size=2)
    assert M.set_desc.tolist() == [2, 2, 0, 0, 0] and M.base_indices.tolist() == [0, 4]
    assert M.delta_indices.tolist() == [0, 1, 0, 1, 1, 1, 1, 1]
    assert M.values.tolist() == [10, 20, 11, 21, 14, 24, 15, 25, 12, 22, 13, 23, 16, 26, 17, 27]
    M4 = E.encode(A.astype(np.float32), warp_size=2, vector_size=4)
    assert M4.values.tolist() == [10, 20, 11, 21, 12, 22, 13, 23, 14, 24, 15, 25, 16, 26, 17, 27]


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.filterwarnings("ignore::reference._common.LossyConversionWarning")
@given(A=MATRICES, opts=OPTIONS, dtype=st.sampled_from((np.float16, np.float32, np.float64)))
@example(A=np.zeros((0, 0), np.float32), opts=dict(delta_bits=8, warp_size=32, vector_size=4,
         clip=None, reorder=True, max_granularity=None), dtype=np.float32)
@example(A=np.ones((9, 70), np.float32), opts=dict(delta_bits=4, warp_size=4, vector_size=2,
         clip=None, reorder=True, max_granularity=None), dtype=np.float16)
def test_stored_blocks_are_the_extracted_blocks(A, opts, dtype):
    """What ``encode`` stores decodes to exactly the blocks of ``block_sets``, in order, real
    columns holding the matrix's values and padding columns zeros; hence every nonzero is
    stored exactly once (test_block_extraction) and the statistics agree."""
    M = E.encode(A, dtype=dtype, lossy=True, **opts).validate(expensive=True)
    C = canonical_csr(A, dtype, lossy=True)
    sets = BE.block_sets(C, **opts)
    want = [(s.granularity, s.vector_size, b) for s in sets for b in s.blocks]
    got = E.stored_blocks(M)
    assert len(got) == len(want) == M.n_blocks and M.n_sets == len(sets)
    dense = C.toarray()
    for blk, (g, v, b) in zip(got, want):
        assert (blk.granularity, blk.vector) == (g, v)
        assert blk.rows.tolist() == b.rows.tolist() and blk.cols.tolist() == b.cols.tolist()
        assert np.all(blk.lane_deltas <= BE.max_gap_for(opts["delta_bits"]))
        real = b.kind == BE.REAL
        np.testing.assert_array_equal(blk.values[real], dense[np.ix_(b.rows, b.cols[real])].T.astype(dtype))
        assert np.all(blk.values[~real] == 0)
    stats = BE.padding_stats(sets)
    assert (M.nnz, M.n_padding) == (C.nnz, stats["zeros"]) and M.padding_overhead == stats["overhead"]
    assert sum(M.census().values()) == C.nnz
    assert_same_csr(M.to_csr(), C)


def test_padding_statistics_hand_computed():
    """Row 0: nonzeros at 0 and 40 with 4-bit deltas (at most 15 apart): zeros at 15 and 30;
    row 1: 5 nonzeros, a short part of 1 padded to 2: one more zero. 3 zeros, 7 nonzeros."""
    A = np.zeros((2, 50), np.float32)
    A[0, [0, 40]] = [1, 2]
    A[1, [10, 11, 12, 13, 14]] = [3, 4, 5, 6, 7]
    M = E.encode(A, delta_bits=4, warp_size=2, vector_size=2)
    assert (M.nnz, M.n_padding, M.padding_overhead) == (7, 3, 3 / 7)
    assert [b.cols.tolist() for b in E.stored_blocks(M)] == [[0, 15, 30, 40], [10, 11, 12, 13], [14, 14]]
    assert E.stored_blocks(M)[0].lane_deltas.tolist() == [[0, 15], [0, 10]]
    M8 = E.encode(A, delta_bits=8, warp_size=2, vector_size=2)
    assert (M8.n_padding, M8.padding_overhead) == (1, 1 / 7)    # 0 40 within range: only 14's pad
    assert [b.cols.tolist() for b in E.stored_blocks(M8)] == [[10, 11, 12, 13], [0, 40], [14, 14]]
    assert E.encode(np.zeros((3, 4), np.float32)).padding_overhead == 0.0


def test_padding_zeros_are_skipped_by_the_products():
    """x holds Inf at a padding column (15): the reference skips it, like reference.csr."""
    A = np.zeros((1, 41), np.float32)
    A[0, [0, 40]] = [1, 2]
    M = E.encode(A, delta_bits=4, warp_size=1, vector_size=1)
    assert E.stored_blocks(M)[0].cols.tolist() == [0, 15, 30, 40]
    x = np.ones(41, np.float32)
    x[15] = np.inf
    assert E.spmv(M, x).tolist() == RC.spmv(RC.encode(A), x).tolist() == [3.0]
    X = np.stack([x, 2 * x], axis=1)
    assert E.spmm(M, X).tolist() == [[3.0, 6.0]]


def test_empty_matrix_has_no_set_and_no_block():
    M = E.encode(sp.csr_matrix((3, 5), dtype=np.float32))
    assert (M.n_sets, M.n_blocks, M.values.size, M.block_indptr.tolist()) == (0, 0, 0, [0])
    assert E.spmv(M, np.ones(5, np.float32)).tolist() == [0, 0, 0]


# ---------------------------------------------------------------------------------------------
# validation
# ---------------------------------------------------------------------------------------------


def _rebuilt(M, **arrays):
    return dataclasses.replace(M, **arrays, checksum=None)


def _with_codes(M, codes):
    return _rebuilt(M, delta_indices=E.pack_deltas(codes, M.delta_bits))


def test_canonical_checks_name_what_is_wrong():
    M = E.encode(fig4_matrix(), warp_size=2, vector_size=2)
    codes = E.unpack_deltas(M.delta_indices, M.n_columns, M.delta_bits)
    cases = []
    bad = codes.copy()
    bad[2] = 1                                  # lane 1 of block 0 starts one column later
    cases.append((_with_codes(M, bad), "every lane's first delta"))
    vals = M.values.copy()
    vals[1] = 0                                 # column 2 of block 0: row 0 nonzero, row 1 zero
    cases.append((_rebuilt(M, values=vals), "all nonzero or all zero"))
    base = M.base_indices.copy()
    base[4] = 8                                 # the short part at column 8: stored twice
    cases.append((_rebuilt(M, base_indices=base), "each nonzero stored once"))
    rows = M.row_indices.copy()
    rows[:2] = [1, 0]
    cases.append((_rebuilt(M, row_indices=rows), "increasing rows within a block"))
    bad = codes.copy()
    bad[5] = 0                                  # block 1, lane 0: columns 0 0 (a repeat)
    cases.append((_with_codes(M, bad), "increasing columns"))
    for B, words in cases:
        B.validate(expensive=True, canonical=False)       # in range: only canonical form broken
        with pytest.raises(FormatError, match=words):
            B.validate(expensive=True)
        with pytest.raises(FormatError):
            E.spmv(B, np.ones(12, np.float32))


def test_reorder_and_block_sizes_are_checked():
    A = np.zeros((3, 40), np.float32)
    A[0, :4], A[1, :12], A[2, :8] = 1, 1, 1
    M = E.encode(A, warp_size=4, vector_size=1, reorder=False, clip=0, max_granularity=1)
    assert np.diff(M.block_indptr).tolist() == [4, 12, 8]
    with pytest.raises(FormatError, match="non-increasing column count"):
        _rebuilt(M, reorder=True).validate(expensive=True)
    ptr = M.block_indptr.copy()
    ptr[1] = 6                                  # blocks of 6 and 10 columns: not whole lanes
    with pytest.raises(FormatError, match="multiple of warp_size"):
        _rebuilt(M, block_indptr=ptr).validate()


@pytest.mark.parametrize("field, at, value, words", [
    ("set_desc", 1, 3, "set_desc vector"), ("set_desc", 4, 1, "set_desc first_value"),
    ("set_desc", 3, 1, "set_desc first_row"), ("set_desc", 5, 2, "decreasing"),
    ("set_desc", 0, 3, "powers of two"),
])
def test_cheap_checks_name_the_descriptor_field(field, at, value, words):
    M = E.encode(fig4_matrix(), warp_size=2, vector_size=2)
    a = getattr(M, field).copy()
    a[at] = value
    with pytest.raises(FormatError, match=words):
        _rebuilt(M, **{field: a}).validate()


@pytest.mark.parametrize("bad", [dict(delta_bits=1), dict(warp_size=64), dict(vector_size=3),
                                 dict(clip=None, reorder=1), dict(max_granularity=6)])
def test_encode_rejects_bad_options(bad):
    with pytest.raises(OptionError):
        E.encode(fig4_matrix(), **bad)
