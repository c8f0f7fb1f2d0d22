"""spmvlab/encoders/macko.py: byte-for-byte equal to reference/macko.py on larger matrices,
non-canonical CSR input and a lying canonical flag (the shared suite runs the drawn cases)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from reference import macko as ref
from reference._common import (
    DTypeError, FormatError, LossyConversionError, LossyConversionWarning, OptionError,
)
from spmvlab.encoders import macko as fast

DTYPES = (np.float16, np.float32, np.float64)
DELTA_BITS = ref.DELTA_BITS


def assert_identical(F, R):
    """Same class, shape, options, and every array with the same dtype and bytes."""
    assert type(F) is type(R)
    assert F.shape == R.shape and F.delta_bits == R.delta_bits
    assert isinstance(F.shape[0], int) and isinstance(F.shape[1], int)
    names_f = [n for n, _ in F.arrays()]
    assert names_f == [n for n, _ in R.arrays()] == ["values", "deltas", "row_ptr"]
    for (name, a), (_, b) in zip(F.arrays(), R.arrays()):
        assert a.dtype == b.dtype, name
        assert a.shape == b.shape, name
        assert a.tobytes() == b.tobytes(), name
        assert not a.flags.writeable


def both(A, b, dtype, lossy=False):
    R = ref.encode(A, delta_bits=b, dtype=dtype, lossy=lossy)
    F = fast.encode(A, delta_bits=b, dtype=dtype, lossy=lossy)
    assert_identical(F, R)
    F.validate(expensive=True)
    return F


def both_raise(A, b, dtype):
    """Both encoders raise the same LossyConversionError without ``lossy``; returns it."""
    with pytest.raises(LossyConversionError) as r:
        ref.encode(A, delta_bits=b, dtype=dtype)
    with pytest.raises(LossyConversionError) as f:
        fast.encode(A, delta_bits=b, dtype=dtype)
    assert str(f.value) == str(r.value) and f.value.loss == r.value.loss
    return f.value


def both_ways(A, b, dtype):
    """With ``lossy=True`` identical bytes and the same warning (at most one each); without,
    identical bytes too, or the same error exactly when there was a warning."""
    seen = {}
    for name, enc in (("ref", ref.encode), ("fast", fast.encode)):
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always")
            enc(A, delta_bits=b, dtype=dtype, lossy=True)
        seen[name] = [w.message.loss for w in rec if w.category is LossyConversionWarning]
        assert len(seen[name]) <= 1
    assert seen["ref"] == seen["fast"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LossyConversionWarning)
        F = both(A, b, dtype, lossy=True)
    if seen["ref"]:
        assert both_raise(A, b, dtype).loss == seen["ref"][0]
    else:
        both(A, b, dtype)
    return F


def _random(seed, shape, density, fmt="csr"):
    rng = np.random.default_rng(seed)
    return sp.random(*shape, density=density, random_state=rng, format=fmt,
                     data_rvs=lambda n: rng.standard_normal(n))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("b", DELTA_BITS)
def test_random_matrices(b, dtype):
    for seed, shape, density in [(0, (64, 300), 0.5), (1, (40, 1000), 0.02), (2, (7, 5), 0.9),
                                 (3, (200, 64), 0.2)]:
        A = _random(seed, shape, density)   # float16: some normals underflow to a subnormal
        both_ways(A, b, dtype)              # canonical CSR: the fast path
        both_ways(A.tocoo(), b, dtype)      # through canonical_csr
        both_ways(A.toarray(), b, dtype)    # dense


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("b", DELTA_BITS)
def test_edge_cases(b, dtype):
    m = 1 << b
    gaps = np.zeros((4, 3 * m + 3))
    gaps[0, m - 1] = 1
    gaps[1, m] = 2
    gaps[2, [0, m]] = 3
    gaps[3, [0, m + 1]] = 4
    last = np.zeros((3, 700))
    last[1, -1] = 9
    special = np.zeros((2, 40))
    special[0, [3, 30]] = [np.nan, np.inf]
    special[1, [0, 39]] = [-np.inf, 1e-30]           # 1e-30 is 0 in float16
    cases = [
        np.zeros((3, 5)), np.zeros((0, 4)), np.zeros((4, 0)),
        np.ones((1, 50)), np.ones((50, 1)), np.eye(9)[::-1].copy(),
        gaps, last, special,
        sp.csr_matrix(gaps), sp.csr_matrix(last), sp.csr_matrix(special),
        sp.csr_array(gaps), sp.csr_matrix((3, 5)),
    ]
    for A in cases:
        both_ways(A, b, dtype)
    if dtype == np.float16:
        assert both_raise(special, b, dtype).loss.to_zero == 1


def test_non_canonical_csr_inputs_fall_back():
    # unsorted indices and duplicates (scipy leaves both alone until asked)
    data = np.array([1.0, 2.0, 3.0, 4.0, -4.0])
    indices = np.array([5, 1, 7, 7, 2], dtype=np.int32)
    indptr = np.array([0, 2, 5], dtype=np.int32)
    unsorted = sp.csr_matrix((data, indices, indptr), shape=(2, 40))
    assert not unsorted.has_canonical_format
    # sorted, no duplicates, but explicit zeros: the flag says canonical, the values do not
    explicit = sp.csr_matrix((np.array([1.0, 0.0, -0.0, 2.0]), np.array([0, 3, 20, 39]),
                              np.array([0, 2, 4])), shape=(2, 40))
    assert explicit.has_canonical_format
    # int64 indices, int values with a dtype
    wide = sp.csr_matrix((np.array([3, 1, 2]), np.array([0, 17, 33], dtype=np.int64),
                          np.array([0, 1, 3], dtype=np.int64)), shape=(2, 34))
    for b in DELTA_BITS:
        for dtype in DTYPES:
            both(unsorted, b, dtype)
            F = both(explicit, b, dtype)
            assert F.nnz == 2
            both(wide, b, dtype)


@pytest.mark.filterwarnings("ignore::reference._common.LossyConversionWarning")
def test_float64_to_float16_underflow_in_fast_path():
    A = sp.csr_matrix(np.array([[1e-30, 0, 2.0, 0, 0, 1e-8, 7.0]]))
    assert A.has_canonical_format
    F = both(A, 1, np.float16, lossy=True)
    assert F.nnz == 2


def test_float64_to_float16_underflow_in_fast_path_raises_without_lossy():
    A = sp.csr_matrix(np.array([[1e-30, 0, 2.0, 0, 0, 1e-8, 7.0]]))
    err = both_raise(A, 1, np.float16)
    assert (err.loss.overflow, err.loss.to_zero, err.loss.to_subnormal) == (0, 2, 0)
    assert err.loss.first[:2] == (0, 0) and "row 0, column 0, 1e-30 -> 0.0" in str(err)


def test_overflow_and_subnormal_only_stay_on_the_fast_path(monkeypatch):
    """No zero after the cast, so the fast path checks the conversion itself (one warning)."""
    A = sp.csr_matrix(np.array([[0, 1e5, 2.0], [1e-6, 0, -7e4]]))
    monkeypatch.setattr(fast, "canonical_csr", lambda *a, **k: pytest.fail("left the fast path"))
    err = both_raise(A, 2, np.float16)
    assert (err.loss.overflow, err.loss.to_zero, err.loss.to_subnormal) == (2, 0, 1)
    assert err.loss.first[:2] == (0, 1)
    with pytest.warns(LossyConversionWarning) as seen:
        F = fast.encode(A, delta_bits=2, dtype=np.float16, lossy=True)
    assert len(seen) == 1 and F.nnz == 4 and np.isinf(F.values[[0, 3]]).all()


def test_errors_match_reference():
    A = np.ones((2, 3), dtype=np.float32)
    for bad in (3, 0, True, 4.0):
        with pytest.raises(OptionError):
            fast.encode(A, delta_bits=bad)
    with pytest.raises(DTypeError):
        fast.encode(sp.csr_matrix(np.ones((2, 2), dtype=np.complex128)))
    with pytest.raises(DTypeError):
        fast.encode(sp.csr_matrix(np.ones((2, 2), dtype=np.int64)))


def test_lying_canonical_flag_is_caught():
    """A CSR whose has_canonical_format flag is wrong must not corrupt memory."""
    A = sp.csr_matrix((np.array([1.0, 2.0]), np.array([5, 1]), np.array([0, 2])), shape=(1, 8))
    A.has_canonical_format = True          # a lie: indices are unsorted
    try:
        M = fast.encode(A)
    except FormatError:
        return
    M.validate(expensive=True)             # if scipy re-sorted it, the result must be valid
    assert_identical(M, ref.encode(A))


def test_registry_fast_encode():
    from spmvlab import formats
    A = _random(5, (30, 100), 0.3)
    info = formats.get("macko")
    assert_identical(info.encode(A, fast=True, delta_bits=2), info.encode(A, delta_bits=2))
    assert info.nbytes(A) == ref.encode(A).nbytes
