"""MACKO kernels vs reference vs scipy (simulator on CPU, real on GPU)."""
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given
from hypothesis import strategies as st

import reference.macko as R
from reference._common import DTypeError, OptionError
from spmvlab.kernels import macko as K
from strategies import build_case, llm_like, power_law_case, sparse_inputs
from parity import check_parity

CFG = {u: K.MackoConfig(threads_per_block=64, unroll=u) for u in (1, 2, 4)}
KDTYPES = (np.float16, np.float32)


def configs_for(delta_bits):
    """Every SpMV layout valid for this code width: 8 entries per lane x unroll 1/2/4, and
    the interleaved layouts with entries_per_lane x delta_bits in 8..64 bits."""
    out = list(CFG.values())
    out += [K.MackoConfig(threads_per_block=64, entries_per_lane=e) for e in (1, 2, 4)
            if e * delta_bits in (8, 16, 32, 64)]
    return out


@pytest.mark.parametrize("delta_bits", [1, 2, 4, 8])
@given(case=sparse_inputs(max_rows=10, max_cols=80, dtypes=KDTYPES), data=st.data())
def test_parity_random(delta_bits, case, data):
    M = R.encode(case.A, delta_bits=delta_bits, dtype=case.dtype)
    cfg = data.draw(st.sampled_from(configs_for(delta_bits)), label="config")
    check_parity(R, K, M, case.x, case.X, spmv_kwargs=dict(config=cfg),
                 spmm_kwargs=dict(config=cfg))


@pytest.mark.parametrize("entries_per_lane", [2, 4])
def test_interleaved_layout_long_rows(entries_per_lane):
    """Rows spanning several chunks, starting at every offset mod 8, for the interleaved layouts."""
    case = build_case(seed=entries_per_lane, n_rows=9, n_cols=700, density=0.5, dtype=np.float16)
    cfg = K.MackoConfig(threads_per_block=64, entries_per_lane=entries_per_lane)
    check_parity(R, K, R.encode(case.A, dtype=np.float16), case.x, spmv_kwargs=dict(config=cfg))


@given(case=llm_like(max_rows=8, max_cols=700, dtypes=KDTYPES))
def test_parity_llm_like_long_rows(case):
    """Rows longer than a chunk (256 stored entries) and than unroll x chunk."""
    M = R.encode(case.A, delta_bits=4, dtype=case.dtype)
    check_parity(R, K, M, case.x, spmv_kwargs=dict(config=CFG[2]))


@pytest.mark.parametrize("unroll", [1, 2, 4])
def test_rows_not_multiple_of_32_and_empty_rows(unroll):
    case = build_case(seed=3, n_rows=37, n_cols=150, density=0.4, dtype=np.float16,
                      empty_rows=True)
    M = R.encode(case.A, dtype=np.float16)
    check_parity(R, K, M, case.x, np.ascontiguousarray(case.X[:, :1]), spmv_kwargs=dict(config=CFG[unroll]),
                 spmm_kwargs=dict(config=CFG[unroll]))


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
    with pytest.raises(OptionError, match="unroll"):
        K.MackoConfig(unroll=3)
    with pytest.raises(OptionError, match="entries_per_lane"):
        K.spmv(R.encode(np.eye(3, dtype=np.float32), delta_bits=2), np.ones(3, np.float32),
               config=K.MackoConfig(entries_per_lane=2))


@pytest.mark.parametrize("cfg", [K.MackoConfig(threads_per_block=32),
                                 K.MackoConfig(threads_per_block=32, entries_per_lane=2)],
                         ids=["e8", "e2"])
def test_inserted_zeros_do_not_touch_inf_in_x(cfg):
    """A gap longer than 2**delta_bits inserts zeros; x = Inf at their columns must not
    turn the result into NaN (CSR semantics)."""
    A = sp.csr_matrix((np.array([1.0, 2.0], np.float32), ([0, 0], [0, 40])), shape=(1, 41))
    M = R.encode(A, delta_bits=4)
    assert M.n_stored == 4  # zeros were inserted at columns 16 and 32
    x = np.ones(41, np.float32)
    x[16] = np.inf
    x[32] = np.nan
    for y in (K.spmv(M, x, config=cfg), R.spmv(M, x)):
        assert y[0] == 3.0
    X = np.ascontiguousarray(np.stack([x, x], axis=1))
    assert (K.spmm(M, X, config=cfg) == 3.0).all()
