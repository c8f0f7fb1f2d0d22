"""spmvlab/encoders/ec_csr.py: byte for byte reference/ec_csr.py on a larger seeded matrix
with each option, and its stages (matching by either path, extraction) equal to the
reference's own; the choice of path and the memory check (the shared suite in test_formats.py
runs the drawn cases and edge cases)."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from reference import block_extraction as BE
from reference import ec_csr as ref
from reference import row_matching as RM
from reference._common import OptionError, SizeLimitError
from spmvlab import datasets
from spmvlab.encoders import ec_csr as fast


def _matrix(seed=7, shape=(300, 600), sparsity=0.7):
    rng = np.random.default_rng(seed)
    return sp.random(*shape, density=1 - sparsity, random_state=rng, format="csr",
                     dtype=np.float32, data_rvs=lambda n: rng.standard_normal(n))


A300 = _matrix()


def assert_identical(F, R):
    assert type(F) is type(R) and F.shape == R.shape and F.options() == R.options()
    assert [n for n, _ in F.arrays()] == [n for n, _ in R.arrays()]
    for (name, a), (_, b) in zip(F.arrays(), R.arrays()):
        assert a.dtype == b.dtype and a.shape == b.shape, name
        assert a.tobytes() == b.tobytes(), name


@pytest.mark.parametrize("opts", [
    {},
    {"delta_bits": 4, "clip": 0},
    {"warp_size": 2, "vector_size": 2, "clip": 64},
    {"warp_size": 8, "vector_size": 2, "reorder": False, "max_granularity": 2},
    {"warp_size": 4, "vector_size": 1, "max_granularity": 1},
], ids=lambda o: "-".join(f"{k}{v}" for k, v in o.items()) or "defaults")
def test_seeded_300x600_at_70_percent_is_the_reference(opts):
    F = fast.encode(A300, **opts)
    assert_identical(F, ref.encode(A300, **opts))
    F.validate(expensive=True)


def test_float16_values_and_dense_input():
    A = A300[:64].toarray()
    assert_identical(fast.encode(A, dtype=np.float16, warp_size=2, vector_size=2),
                     ref.encode(A, dtype=np.float16, warp_size=2, vector_size=2))


def _with_ties():
    A = A300[:120].tolil()
    A[5] = A[17]                                 # ties: rows 5 and 17 equal, 40 empty
    A[40] = 0
    A = A.tocsr()
    A.eliminate_zeros()
    return A


def _lists(A):
    """A canonical CSR matrix as the encoder's row lists: (start, length, columns)."""
    return (A.indptr[:-1].astype(np.int64), np.diff(A.indptr).astype(np.int64),
            A.indices.astype(np.int64))


@pytest.mark.parametrize("chunk", [1, 3, fast.CHUNK])
def test_match_rows_is_the_reference_for_any_chunk(chunk):
    """Pairs, their order and ties as reference.row_matching (rows with equal patterns and
    empty rows included)."""
    A = _with_ties()
    bits = fast.to_bitsets(A.indptr, A.indices, A.shape[1])
    cnt, lo, hi = (np.empty(A.shape[0], dtype=np.int64) for _ in range(3))
    fast._counts(bits, cnt, lo, hi)
    np.testing.assert_array_equal(fast.match_rows(bits, cnt, lo, hi, chunk), RM.match_rows(A))


@pytest.mark.parametrize("force", [None, "sparse", "dense"])
@pytest.mark.parametrize("A", [_with_ties(), A300[:1], A300[:0], sp.csr_matrix((7, 9)),
                               sp.csr_matrix(np.ones((6, 70))), datasets.banded(40, 2),
                               datasets.barabasi_albert(150, 3, seed=2)],
                         ids=["ties", "one-row", "no-rows", "empty", "all-equal", "banded",
                              "power-law"])
def test_match_round_is_the_reference_by_either_path(A, force):
    """The sparse path (a column -> rows index), the dense one (bitsets over the columns the
    rows hold) and the automatic choice give the reference's pairs, order and ties."""
    A = sp.csr_matrix(A)
    got = fast.match_round(*_lists(A), A.shape[1], force)
    np.testing.assert_array_equal(got, RM.match_rows(A).reshape(-1, 2))


def test_match_sparse_uses_the_current_rows_only():
    """Rows as (start, length) windows of one array, as a level holds them after columns were
    taken: what lies past a row's length is not read."""
    A = _with_ties()
    start, length, cols = _lists(A)
    cut = length // 2
    B = sp.csr_matrix((np.ones(int(cut.sum())), np.concatenate(
        [cols[s:s + c] for s, c in zip(start, cut)]), np.concatenate(([0], np.cumsum(cut)))),
        shape=A.shape)
    for force in ("sparse", "dense"):
        np.testing.assert_array_equal(fast.match_round(start, cut, cols, A.shape[1], force),
                                      RM.match_rows(B))


def _path(A):
    start, length, cols = _lists(sp.csr_matrix(A))
    position = np.empty(A.shape[1], dtype=np.int64)
    counts = fast._round_counts(start, length, cols, A.shape[1], position)
    return "dense" if fast.use_bitsets(A.shape[0], int(length.sum()), *counts) else "sparse"


def test_use_bitsets_dense_for_dense_rows_sparse_for_graphs():
    """Bitsets where rows hold a large share of the columns (pruned weights), column lists
    on graphs and meshes (whose bitsets would be mostly zero words) and wherever the bitsets
    would outgrow the entries."""
    assert _path(datasets.uniform((1024, 1024), 0.7, seed=0)) == "dense"
    assert _path(datasets.uniform((512, 4096), 0.9, seed=0)) == "dense"
    assert _path(datasets.banded(4000, 3)) == "sparse"
    assert _path(datasets.barabasi_albert(4000, 4, seed=1)) == "sparse"
    assert _path(datasets.uniform((4000, 4000), 0.999, seed=0)) == "sparse"
    assert _path(sp.random(20000, 64, density=0.5, format="csr", random_state=1)) == "sparse"


def test_memory_grows_with_entries_and_rows(monkeypatch):
    """A tall matrix with few entries per row stays within a small memory limit (no rows x
    rows or rows x columns array); a matrix whose working arrays exceed it is refused."""
    monkeypatch.setenv("SPMVLAB_MEMORY_LIMIT", "64M")
    A = sp.random(200_000, 4000, density=2e-4, format="csr", dtype=np.float32,
                  random_state=np.random.default_rng(4))
    assert _path(A) == "sparse"
    M = fast.encode(A)
    assert (M.to_csr() != A).nnz == 0
    monkeypatch.setenv("SPMVLAB_MEMORY_LIMIT", "1M")
    with pytest.raises(SizeLimitError, match="SPMVLAB_MEMORY_LIMIT"):
        fast.encode(A)


@pytest.mark.parametrize("force", [None, "sparse", "dense"])
@pytest.mark.parametrize("unit, max_gap, max_granularity", [(1, None, None), (4, 15, None),
                                                            (8, 255, 2)])
def test_extract_leftovers_is_the_reference_level_by_level(unit, max_gap, max_granularity, force):
    A = A300[:100] if unit == 1 else A300             # unit 1: many rounds in the reference
    levels = BE.extract(A, unit=unit, max_gap=max_gap, max_granularity=max_granularity)
    times = {}
    got = fast.extract_leftovers(A.indptr, A.indices, A.shape[1], unit, max_gap,
                                 max_granularity, times, force)
    assert [g for g, _ in got] == [lv.granularity for lv in levels]
    for (_, blocks), lv in zip(got, levels):
        assert len(blocks) == len(lv.leftover)
        for b, r in zip(blocks, lv.leftover):
            np.testing.assert_array_equal(b.rows, r.rows)
            np.testing.assert_array_equal(b.cols, r.cols)
            np.testing.assert_array_equal(b.kind, r.kind)
    assert set(times) == {"bitsets", "matching", "extraction", "leftovers"}


def test_encode_stages_times_every_stage():
    M, times = fast.encode_stages(A300[:50], warp_size=2, vector_size=2)
    assert_identical(M, ref.encode(A300[:50], warp_size=2, vector_size=2))
    assert set(times) == {"canonical", "bitsets", "matching", "extraction", "leftovers",
                          "assemble", "store"}
    assert all(v >= 0 for v in times.values())


@pytest.mark.parametrize("bad", [{"warp_size": 3}, {"delta_bits": 5}, {"clip": -1},
                                 {"reorder": 1}, {"max_granularity": 3}])
def test_bad_options_raise_the_reference_error(bad):
    with pytest.raises(OptionError) as r:
        ref.encode(A300[:4], **bad)
    with pytest.raises(OptionError) as f:
        fast.encode(A300[:4], **bad)
    assert str(f.value) == str(r.value)


def test_wide_sparse_matrix_uses_only_its_columns():
    """Bitsets over the columns in use: 40 x 10**7 with 12 shared-column runs; the gap rule
    still sees the true column numbers (runs cut where the true step exceeds max_gap)."""
    rng = np.random.default_rng(3)
    cols = np.concatenate([np.arange(k * 10**6, k * 10**6 + 300, 3) for k in range(3)])
    rows = [r for r in range(40) for _ in cols]
    A = sp.csr_matrix((rng.standard_normal(len(rows)).astype(np.float32),
                       (rows, np.tile(cols, 40))), shape=(40, 10**7))
    for opts in ({"warp_size": 2, "vector_size": 2}, {"delta_bits": 4, "warp_size": 4,
                                                      "vector_size": 1}):
        assert_identical(fast.encode(A, **opts), ref.encode(A, **opts))
