"""MACKO kernels vs reference vs scipy (simulator on CPU, real on GPU)."""
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given
from hypothesis import strategies as st

import reference.macko as R
from reference._common import DTypeError, OptionError
from spmvlab.kernels import macko as K
from strategies import build_case, power_law_case, sparse_inputs
from parity import check_parity

CFG = {1: K.MackoConfig(threads_per_block=64), 2: K.MackoConfig(threads_per_block=64, prefetch=0),
       4: K.MackoConfig(threads_per_block=32, prefetch=2)}
KDTYPES = (np.float16, np.float32)


@pytest.mark.parametrize("delta_bits", [1, 2, 4, 8])
@given(case=sparse_inputs(max_rows=10, max_cols=80, dtypes=KDTYPES), data=st.data())
def test_parity_random(delta_bits, case, data):
    M = R.encode(case.A, delta_bits=delta_bits, dtype=case.dtype)
    cfg = data.draw(st.sampled_from(list(CFG.values())), label="config")
    check_parity(R, K, M, case.x, case.X, spmv_kwargs=dict(config=cfg),
                 spmm_kwargs=dict(config=cfg))


@pytest.mark.parametrize("which", [1, 2, 4])
def test_rows_not_multiple_of_32_and_empty_rows(which):
    case = build_case(seed=3, n_rows=37, n_cols=150, density=0.4, dtype=np.float16,
                      empty_rows=True)
    M = R.encode(case.A, dtype=np.float16)
    check_parity(R, K, M, case.x, np.ascontiguousarray(case.X[:, :1]),
                 spmv_kwargs=dict(config=CFG[which]), spmm_kwargs=dict(config=CFG[which]))


def test_single_column_and_single_row():
    for shape in [(9, 1), (1, 600), (1, 1)]:
        case = build_case(seed=1, n_rows=shape[0], n_cols=shape[1], density=0.6, dtype=np.float32)
        check_parity(R, K, R.encode(case.A), case.x, case.X, spmv_kwargs=dict(config=CFG[2]))


def test_no_nonzeros():
    M = R.encode(sp.csr_matrix((5, 40), dtype=np.float32))
    y = K.spmv(M, np.ones(40, np.float32), config=CFG[2])
    assert np.array_equal(y, np.zeros(5, np.float32))


def test_spmm_wide_batch_tiles():
    """k = 70 needs two 64-column tiles."""
    case = build_case(seed=5, n_rows=3, n_cols=50, density=0.5, dtype=np.float16, k=70)
    check_parity(R, K, R.encode(case.A, dtype=np.float16), case.x, case.X,
                 spmm_kwargs=dict(config=CFG[1]))


def test_power_law_rows():
    case = power_law_case(seed=11, n_rows=6, n_cols=900, dtype=np.float32, alpha=1.2)
    check_parity(R, K, R.encode(case.A), case.x, spmv_kwargs=dict(config=CFG[4]))


def test_unsupported_dtype_and_config():
    M = R.encode(np.eye(3), dtype=np.float64)
    with pytest.raises(DTypeError, match="float16, float32"):
        K.spmv(M, np.ones(3))
    with pytest.raises(OptionError, match="threads_per_block"):
        K.MackoConfig(threads_per_block=48)
    with pytest.raises(OptionError, match="prefetch"):
        K.MackoConfig(prefetch=3)


@pytest.mark.parametrize("cfg", [K.MackoConfig(threads_per_block=32),
                                 K.MackoConfig(threads_per_block=32, prefetch=0),
                                 K.MackoConfig(threads_per_block=32, prefetch=2)],
                         ids=["prefetch1", "prefetch0", "prefetch2"])
def test_inserted_zeros_do_not_touch_inf_in_x(cfg):
    """A gap longer than 2**delta_bits inserts zeros; x = Inf at their columns must not
    turn the result into NaN (CSR semantics). Row 1 is long enough for the unmasked
    fast path (a whole 256-entry chunk inside the row), which must fall back too."""
    cols = [0, 40] + list(range(300, 900))
    rows = [0, 0] + [1] * 600
    A = sp.csr_matrix((np.ones(len(cols), np.float32), (rows, cols)), shape=(2, 900))
    A[0, 40] = 2.0
    M = R.encode(A, delta_bits=4)
    # zeros inserted at 16, 32 (row 0) and 16, 32, ..., 288 (row 1, before column 300)
    assert M.n_stored == A.nnz + 2 + 18
    x = np.ones(900, np.float32)
    x[16] = np.inf
    x[32] = np.nan
    for y in (K.spmv(M, x, config=cfg), R.spmv(M, x)):
        assert y.tolist() == [3.0, 600.0]
    X = np.ascontiguousarray(np.stack([x, x], axis=1))
    assert (K.spmm(M, X, config=cfg) == [[3.0, 3.0], [600.0, 600.0]]).all()


def test_columns_beyond_int32_raise():
    from reference._common import IndexOverflowError
    A = sp.csr_matrix((np.ones(2, np.float32), ([0, 0], [3, 2**31 + 5])), shape=(1, 2**31 + 9))
    M = R.encode(A)
    with pytest.raises(IndexOverflowError, match="int32"):
        K.to_device(M)
