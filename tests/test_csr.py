"""CSR: canonicalisation, bad input, and reference/kernel/scipy parity (simulator or GPU)."""
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given

import reference.csr as R
from reference._common import (
    DTypeError, FormatError, IndexOverflowError, LayoutError, ShapeError, index_dtype_for,
)
from spmvlab.kernels import csr as K
from strategies import build_case, llm_like, power_law_case, sparse_inputs
from parity import assert_same_csr, check_parity, garbage_like

SMALL = K.CSRConfig(threads_per_block=64)          # fewer simulated threads per block
CONFIGS = [("scalar", SMALL), ("vector", SMALL), ("vector", K.CSRConfig(threads_per_block=64, vec=1)),
           ("vector", K.CSRConfig(threads_per_block=64, vec=2))]


def scipy_canonical(A, dtype):
    c = sp.csr_matrix(A, dtype=np.float64 if np.dtype(dtype) == np.float64 else A.dtype, copy=True)
    c.sum_duplicates()
    c.data = c.data.astype(dtype).astype(np.float32 if np.dtype(dtype) == np.float16 else dtype)
    c.eliminate_zeros()
    return c


# ---- reference ---------------------------------------------------------------------------------

@given(sparse_inputs())
def test_round_trip_is_the_canonical_input(case):
    M = R.encode(case.A, dtype=case.dtype).validate(expensive=True)
    want = scipy_canonical(case.A, case.dtype)
    assert_same_csr(M.to_csr(), want)
    assert M.nbytes == M.indptr.nbytes + M.indices.nbytes + M.values.nbytes
    assert M.indices.dtype == np.int32 and M.values.dtype == np.dtype(case.dtype)


def test_pinned_encoding():
    A = sp.coo_matrix(([3.0, 1.0, 2.0, 0.0, 5.0, 1.0], ([2, 0, 0, 1, 2, 0], [1, 3, 0, 2, 1, 3])),
                      shape=(3, 4)).astype(np.float32)
    M = R.encode(A)
    assert M.indptr.tolist() == [0, 2, 2, 3]
    assert M.indices.tolist() == [0, 3, 1]
    assert M.values.tolist() == [2.0, 2.0, 8.0]       # duplicates summed, explicit zero dropped
    assert M.nbytes == 4 * 4 + 3 * 4 + 3 * 4


def test_dense_input_and_dtype_conversion():
    W = np.array([[0, 1.5, 0], [np.nan, 0, -2]], dtype=np.float64)
    M = R.encode(W, dtype=np.float16)
    assert M.values.dtype == np.float16
    assert np.isnan(M.values[1]) and M.indices.tolist() == [1, 0, 2]
    assert R.encode(np.zeros((3, 5), np.float32)).nnz == 0
    assert R.encode(np.eye(3, dtype=np.int64), dtype=np.float32).nnz == 3


def test_index_dtype_switches_to_int64():
    assert index_dtype_for(10, 2**31 - 1) == np.int32
    assert index_dtype_for(10, 2**31) == np.int64
    A = sp.csr_matrix((np.ones(2, np.float32), ([0, 0], [5, 2**31 + 3])), shape=(1, 2**31 + 10))
    M = R.encode(A)
    assert M.indices.dtype == np.int64 and M.indptr.dtype == np.int64
    assert M.indices.tolist() == [5, 2**31 + 3]


@pytest.mark.parametrize("bad, exc, words", [
    (np.zeros((2, 2, 2)), ShapeError, "2-D"),
    (np.zeros(4), ShapeError, "2-D"),
    (np.zeros((2, 2), np.complex64), DTypeError, "complex"),
    (np.zeros((2, 2), np.int32), DTypeError, "dtype=np.float32"),
    (np.array([["a"]]), DTypeError, "dtype"),
])
def test_bad_matrix_input_raises_typed_error(bad, exc, words):
    with pytest.raises(exc, match=words):
        R.encode(bad)


def test_bad_dtype_option():
    with pytest.raises(DTypeError, match="float16, float32 or float64"):
        R.encode(np.eye(2, dtype=np.float32), dtype=np.int8)


def test_validate_catches_corruption():
    M = R.encode(sp.random(6, 7, density=0.5, random_state=3, dtype=np.float32))
    bad_ptr = M.indptr.copy(); bad_ptr[2], bad_ptr[3] = bad_ptr[3], bad_ptr[2] - 1
    with pytest.raises(FormatError, match="indptr"):
        R.CSRMatrix(indptr=bad_ptr, indices=M.indices, values=M.values, shape=M.shape).validate()
    with pytest.raises(FormatError, match="indices"):
        R.CSRMatrix(indptr=M.indptr, indices=M.indices[:-1], values=M.values, shape=M.shape).validate()
    bad_idx = M.indices.copy(); bad_idx[0] = 7
    with pytest.raises(FormatError, match=r"columns in \[0, 7\)"):
        R.CSRMatrix(indptr=M.indptr, indices=bad_idx, values=M.values, shape=M.shape).validate(expensive=True)


def test_arrays_are_read_only():
    M = R.encode(np.eye(3, dtype=np.float32))
    with pytest.raises(ValueError):
        M.values[0] = 5


# ---- bad operands: typed error, nothing changed --------------------------------------------------

@pytest.mark.parametrize("module", [R, K])
def test_bad_vector_raises_and_changes_nothing(module):
    M = R.encode(sp.random(5, 6, density=0.5, random_state=1, dtype=np.float32))
    x = np.ones(6, np.float32)
    with pytest.raises(ShapeError, match=r"x.shape\[0\]: expected 6"):
        module.spmv(M, np.ones(5, np.float32))
    with pytest.raises(DTypeError, match="x.dtype: expected float32"):
        module.spmv(M, np.ones(6, np.float64))
    with pytest.raises(LayoutError, match="C-contiguous"):
        module.spmv(M, np.ones(12, np.float32)[::2])
    with pytest.raises(ShapeError, match="2-D"):
        module.spmm(M, x)
    if module is K:
        out = garbage_like((5,), np.float32)
        before = out.copy()
        with pytest.raises(ShapeError, match="out.shape"):
            K.spmv(M, x, out=np.zeros(4, np.float32))
        with pytest.raises(DTypeError):
            K.spmv(M, x.astype(np.float16), out=out)
        assert np.array_equal(out, before)


def test_int32_kernel_guard_message():
    from spmvlab.kernels._common import check_int32
    with pytest.raises(IndexOverflowError, match="int32"):
        check_int32("nnz", 2**31)


# ---- kernels (simulator on CPU, real on GPU) -------------------------------------------------------

@pytest.mark.parametrize("variant, cfg", CONFIGS, ids=lambda v: str(v))
@given(case=sparse_inputs(max_rows=20, max_cols=40))
def test_kernel_parity(variant, cfg, case):
    M = R.encode(case.A, dtype=case.dtype)
    check_parity(R, K, M, case.x, case.X, spmv_kwargs=dict(variant=variant, config=cfg),
                 spmm_kwargs=dict(config=cfg))


@given(case=llm_like(max_rows=12, max_cols=96, dtypes=(np.float16, np.float32)))
def test_kernel_parity_llm_like(case):
    check_parity(R, K, R.encode(case.A, dtype=case.dtype), case.x, spmv_kwargs=dict(config=SMALL))


def test_power_law_rows_and_long_rows():
    case = power_law_case(seed=7, n_rows=10, n_cols=300, dtype=np.float32, alpha=1.3)
    M = R.encode(case.A)
    for variant, cfg in CONFIGS[:2]:
        check_parity(R, K, M, case.x, spmv_kwargs=dict(variant=variant, config=cfg))


def test_nan_inf_propagate_like_scipy():
    A = sp.csr_matrix(np.array([[np.inf, 1, 0], [np.nan, 0, 2], [1, -np.inf, 0], [0, 0, 3]],
                               dtype=np.float32))
    M = R.encode(A)
    x = np.array([1, 2, np.inf], np.float32)
    want = A @ x
    for y in (R.spmv(M, x), K.spmv(M, x, config=SMALL), K.spmv(M, x, variant="scalar")):
        np.testing.assert_array_equal(y, want)


def test_device_arrays_in_device_out():
    from spmvlab._cuda import cuda
    case = build_case(seed=1, n_rows=9, n_cols=13, density=0.4, dtype=np.float32)
    M = R.encode(case.A)
    D = K.to_device(M)
    y_dev = K.spmv(D, cuda.to_device(case.x), config=SMALL)
    assert not isinstance(y_dev, np.ndarray)
    np.testing.assert_allclose(y_dev.copy_to_host(), R.spmv(M, case.x), rtol=1e-5, atol=1e-6)


def test_config_rejects_bad_values():
    from reference._common import OptionError
    with pytest.raises(OptionError, match="threads_per_block"):
        K.CSRConfig(threads_per_block=100)
    with pytest.raises(OptionError, match="vec"):
        K.CSRConfig(vec=3)
    with pytest.raises(OptionError, match="variant"):
        K.spmv(R.encode(np.eye(2, dtype=np.float32)), np.ones(2, np.float32), variant="magic")
