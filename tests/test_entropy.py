"""spmvlab.analysis.entropy: order-0 entropies and the CSR-dtANS delta coding of columns."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from reference import csr_dtans as RC
from reference import tans as T
from spmvlab import datasets as ds
from spmvlab.analysis import entropy as E


def test_entropy_bits_by_hand():
    assert E.entropy_bits([]) == 0.0
    assert E.entropy_bits([7, 7, 7]) == 0.0
    assert E.entropy_bits([0, 1, 2, 3]) == pytest.approx(2.0)
    assert E.entropy_bits(np.array([1.5, -2.0])) == pytest.approx(1.0)
    assert E.entropy_bits(list("cbcbccbbba")) == pytest.approx(1.361, abs=5e-4)   # Fig. 3
    big = np.array([0, 10 ** 12, 10 ** 12, 5])                # beyond the bincount path
    assert E.entropy_bits(big) == pytest.approx(1.5)


@pytest.mark.parametrize("seed", range(4))
def test_entropy_bits_matches_tans(seed):
    rng = np.random.default_rng(seed)
    a = rng.geometric(0.3, size=500) - (seed % 2) * 3           # negatives take np.unique
    assert E.entropy_bits(a) == pytest.approx(T.entropy(T.count(a.tolist())))


def test_column_deltas_match_the_format():
    A = ds.power_law(70, 90, 6.0, seed=2)                       # empty and long rows
    d = E.column_deltas(A)
    want = []
    for i in range(A.shape[0]):
        cols = A.indices[A.indptr[i]:A.indptr[i + 1]]
        want += RC.row_symbols(cols, np.zeros(cols.size, np.uint32))[0::2]
    assert d.tolist() == want


def test_symbol_entropy_of_a_tridiagonal_pattern():
    n = 1000
    A = sp.diags([1.0, 1.0, 1.0], [-1, 0, 1], shape=(n, n), format="csr")
    got = E.csr_symbol_entropy(A, np.float64)
    assert got["value_bits"] == 0.0 and got["nnz"] == 3 * n - 2
    # deltas: each row's first column (n distinct values) then 1s
    d = E.column_deltas(A)
    assert np.count_nonzero(d == 1) == 2 * n - 2 + 1           # row 1 starts at column 0, row 2 at 1
    assert got["delta_bits"] < 0.5 * got["column_bits"]
    assert got["bound_bytes"] == pytest.approx(got["nnz"] * got["delta_bits"] / 8)


def test_values_count_by_bit_pattern():
    A = sp.csr_matrix(np.array([[0.0, 1.0, 2.0, 3.0]]))
    A.data[:] = [-0.0, 0.0, 0.0]                               # stored zeros are dropped
    B = sp.csr_matrix((np.array([1.0, -1.0, 1.0, 2.0]), np.array([0, 1, 2, 3]), np.array([0, 4])),
                      shape=(1, 4))
    got32 = E.csr_symbol_entropy(B, np.float32)
    assert got32["value_bits"] == pytest.approx(1.5)
    assert E.csr_symbol_entropy(A, np.float64)["nnz"] == 0


def test_table_bits_single_symbol_costs_log2_K_over_M():
    """One value (a pattern matrix): the value table gives it M = 256 of K = 4096 slots."""
    from spmvlab.encoders import csr_dtans as EC
    n = 300
    A = sp.diags([1.0, 1.0, 1.0], [-1, 0, 1], shape=(n, n), format="csr")
    M = EC.encode(A, dtype=np.float64)
    got = E.table_bits(M, A)
    assert got["value_bits"] == pytest.approx(4.0 * A.nnz)
    assert got["delta_bits"] >= 4.0 * A.nnz
    assert got == E.table_bits(M)                              # A decoded from M


def test_table_bits_bounds_and_escapes():
    from spmvlab.encoders import csr_dtans as EC
    rng = np.random.default_rng(3)
    A = ds.uniform((400, 600), 0.95, dtype=np.float64, seed=3)  # 12,000 distinct values
    A.data[: A.nnz // 2] = rng.integers(1, 5, size=A.nnz // 2)  # half from a small alphabet
    M = EC.encode(A, dtype=np.float64)
    assert M.value_counts[-1] > 0                              # some values escaped
    got = E.table_bits(M, A)
    ent = E.csr_symbol_entropy(A, np.float64)
    assert got["bound_bytes"] >= ent["bound_bytes"]            # cross entropy >= entropy
    esc = A.nnz - A.nnz // 2
    assert got["value_bits"] > 64 * 0.9 * esc                  # escaped values pay raw 64 bits
    assert 8 * M.words.nbytes >= got["delta_bits"] + got["value_bits"]
