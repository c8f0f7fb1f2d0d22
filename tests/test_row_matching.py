"""reference/row_matching.py: the similarity (pattern product) and the greedy matching rule,
checked against its specification (the module docstring) on drawn and hand-made matrices."""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from hypothesis import example, given, strategies as st

from reference import row_matching as RM
from strategies import build_case, llm_like, sparse_inputs


def dense_pattern(A) -> np.ndarray:
    D = A.toarray() if sp.issparse(A) else np.asarray(A)
    return (D != 0).astype(np.int64)


def selected_before(pairs: np.ndarray, n: int) -> np.ndarray:
    """For every row, the index of the row whose turn removed it from the pool (itself when
    it was taken single or as the first of a pair, its partner's index when matched)."""
    by = np.arange(n)
    for i, j in pairs:
        by[j] = i
    return by


def assert_greedy(W: np.ndarray, pairs: np.ndarray):
    """The matching rule, stated without re-running it: rows taken in increasing order; each
    pair's partner has the highest similarity among the rows still in the pool, the lowest
    index among equals; a row left single overlaps no row still in the pool."""
    n = W.shape[0]
    assert pairs.dtype == np.int64 and pairs.shape == (pairs.shape[0], 2)
    assert np.all(pairs[:, 0] < pairs[:, 1]) and np.all(np.diff(pairs[:, 0]) > 0)
    assert np.unique(pairs).size == pairs.size, "a row in two pairs"
    by = selected_before(pairs, n)
    partner = dict(map(tuple, pairs))
    matched = set(pairs[:, 1].tolist())
    for i in range(n):
        if i in matched:
            continue
        pool = [k for k in range(n) if k != i and by[k] >= i]    # still unselected at i's turn
        best = max((W[i, k] for k in pool), default=0)
        if i in partner:
            j = partner[i]
            assert W[i, j] == best > 0, (i, j, best)
            assert j == min(k for k in pool if W[i, k] == best), (i, j)
        else:
            assert best == 0, f"row {i} left single with overlap {best} in the pool"


@given(case=st.one_of(sparse_inputs(max_rows=30, max_cols=40), llm_like(max_rows=30, max_cols=40)))
@example(case=build_case(1, 0, 0, 0.0, np.float32))
@example(case=build_case(2, 1, 9, 0.5, np.float32))
@example(case=build_case(3, 9, 1, 0.5, np.float32))
@example(case=build_case(4, 7, 0, 0.0, np.float32))
def test_similarity_is_the_pattern_product_and_matching_is_greedy(case):
    P = dense_pattern(case.A)
    W = RM.similarity(case.A)
    want = P @ P.T
    np.fill_diagonal(want, 0)
    np.testing.assert_array_equal(W, want)
    pairs = RM.match_rows(case.A)
    assert_greedy(W, pairs)
    np.testing.assert_array_equal(RM.match_rows(case.A, chunk=1), pairs)   # chunking changes nothing
    np.testing.assert_array_equal(RM.match_rows(case.A, chunk=7), pairs)


def test_pinned_ties_and_singles():
    """Rows 0..4 (columns): 0 {0,1,2}, 1 {0,1}, 2 {1,2}, 3 {5}, 4 {} and 5 {0,1,2}.

    Row 0 overlaps 5 in 3 columns (more than 1 or 2 with 2 each): (0, 5). Row 1 overlaps
    row 2 in column 1 only: (1, 2). Row 3 overlaps nothing left: single; row 4 is empty."""
    A = np.zeros((6, 6))
    for r, cols in enumerate([[0, 1, 2], [0, 1], [1, 2], [5], [], [0, 1, 2]]):
        A[r, cols] = 1
    W = RM.similarity(A)
    assert W.tolist() == [[0, 2, 2, 0, 0, 3], [2, 0, 1, 0, 0, 2], [2, 1, 0, 0, 0, 2],
                          [0, 0, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0], [3, 2, 2, 0, 0, 0]]
    assert RM.match_rows(A).tolist() == [[0, 5], [1, 2]]


def test_pinned_tie_goes_to_the_lowest_index():
    """Row 0 overlaps rows 1, 2 and 3 in two columns each: it takes row 1; row 2 then takes
    row 3 (one shared column), though row 3 shares as much with row 0."""
    A = np.zeros((4, 4))
    A[0, [0, 1]] = 1
    A[1, [0, 1]] = 1
    A[2, [0, 1, 3]] = 1
    A[3, [0, 1]] = 1
    assert RM.match_rows(A).tolist() == [[0, 1], [2, 3]]


def test_pattern_ignores_stored_zeros_and_counts_nan():
    A = sp.csr_matrix((np.array([0.0, np.nan, 1.0]), np.array([0, 1, 1]), np.array([0, 2, 3])),
                      shape=(2, 2))
    assert RM.pattern(A).toarray().tolist() == [[0, 1], [0, 1]]
    assert RM.similarity(A).tolist() == [[0, 1], [1, 0]]
