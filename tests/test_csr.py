"""CSR specifics: canonicalisation against scipy's own, pinned encoding, int64 indices,
corruptions only CSR has, config checks. The shared suite (test_formats.py) runs the rest."""
import dataclasses

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given

import reference.csr as R
from reference._common import (
    ChecksumError, DTypeError, FormatError, IndexOverflowError, NotEncodedError, index_dtype_for,
)
from spmvlab.kernels import csr as K
from strategies import sparse_inputs
from parity import assert_same_csr


def scipy_canonical(A, dtype):
    c = sp.csr_matrix(A, dtype=np.float64 if np.dtype(dtype) == np.float64 else A.dtype, copy=True)
    c.sum_duplicates()
    c.data = c.data.astype(dtype).astype(np.float32 if np.dtype(dtype) == np.float16 else dtype)
    c.eliminate_zeros()
    return c


# ---- reference ---------------------------------------------------------------------------------

@pytest.mark.filterwarnings("ignore::RuntimeWarning", "ignore::reference._common.LossyConversionWarning")
@given(sparse_inputs())
def test_round_trip_is_scipys_canonical_form(case):
    """Our canonicalisation (which every format's round trip is checked against) equals
    scipy's own: sum duplicates, cast, drop zeros (scipy's silent cast is ``lossy=True``)."""
    M = R.encode(case.A, dtype=case.dtype, lossy=True).validate(expensive=True)
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


def test_int32_kernel_guard_message():
    from spmvlab.kernels._common import check_int32
    with pytest.raises(IndexOverflowError, match="int32"):
        check_int32("nnz", 2**31)


def test_config_rejects_bad_values():
    from reference._common import OptionError
    with pytest.raises(OptionError, match="threads_per_block"):
        K.CSRConfig(threads_per_block=100)
    with pytest.raises(OptionError, match="vec"):
        K.CSRConfig(vec=3)
    with pytest.raises(OptionError, match="variant"):
        K.CSRConfig(variant="magic")


# ---- reproductions ("Trust and the user's surface") -------------------------------------------

def _small():
    M = R.encode(sp.random(16, 64, density=0.5, random_state=0, dtype=np.float32, format="csr"))
    return M, np.random.default_rng(0).standard_normal(64).astype(np.float32)


def test_truncated_indptr_raises_a_format_error():
    """Reproduction 1: a truncated indptr made the reference raise NumPy's 'not
    broadcastable'; now a FormatError names the field."""
    M, x = _small()
    B = dataclasses.replace(M, indptr=M.indptr[:-3].copy())
    for call in (lambda: R.spmv(B, x), lambda: R.spmm(B, x[:, None].copy()), B.to_csr):
        with pytest.raises(FormatError, match=r"CSRMatrix.indptr: expected a 1-D array of 17 entries"):
            call()


@pytest.mark.parametrize("check", ["host", "device"])
def test_out_of_range_columns_never_reach_a_kernel(check):
    """Reproduction 2, CSR: an index of 10**6 and a column count shrunk below the last
    column passed to_device's cheap checks (a GPU reads x out of bounds). Now the checksum
    refuses them, and rebuilt on purpose (checksum=None) the column check does."""
    M, x = _small()
    idx = M.indices.copy()
    idx[5] = 10**6
    for B in (dataclasses.replace(M, indices=idx), dataclasses.replace(M, shape=(16, 60))):
        with pytest.raises(ChecksumError):
            K.to_device(B, check=check)
        C = dataclasses.replace(B, checksum=None)
        with pytest.raises(FormatError, match=r"CSRMatrix.indices: expected columns in \[0, 6\d\)"):
            K.to_device(C, check=check)
        with pytest.raises(FormatError, match=r"CSRMatrix.indices"):
            R.spmv(C, x[:C.shape[1]].copy())
        assert K.device_check(K._upload(C)) == ["indices"]


def test_one_bit_flip_is_caught():
    """Reproduction 3, CSR: a flipped bit in an index that stays in range and sorted (or in
    a value) is a valid matrix with another product; only the checksum tells."""
    M, x = _small()
    idx = M.indices.copy()
    idx[0] ^= 1                             # row 0's first column, next to its neighbour
    for B in (dataclasses.replace(M, indices=idx),
              dataclasses.replace(M, values=np.where(np.arange(M.nnz) == 3, -M.values, M.values))):
        dataclasses.replace(B, checksum=None).validate(expensive=True)   # structurally fine
        with pytest.raises(ChecksumError):
            B.validate(expensive=True)
        with pytest.raises(ChecksumError):
            R.spmv(B, x)


def test_scipy_matrix_raises_how_to_encode():
    """Reproduction 5, CSR: a scipy matrix or a dense array where a CSRMatrix is expected."""
    A = sp.random(4, 6, density=0.5, random_state=1, dtype=np.float32, format="csr")
    for raw, what in ((A, "scipy csr_matrix"), (A.toarray(), "a 2-D NumPy array")):
        for call in (K.to_device, lambda M: K.spmv(M, np.ones(6, np.float32)),
                     lambda M: R.spmv(M, np.ones(6, np.float32))):
            with pytest.raises(NotEncodedError, match=rf"received {what}.*M = reference.csr.encode\(A\)"):
                call(raw)
