"""reference/macko.py: pinned encodings, round trips, products, validation and errors."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, strategies as st

from reference import csr as rcsr
from reference import macko
from reference._common import DTypeError, FormatError, OptionError, ShapeError, canonical_csr
from parity import assert_close
from strategies import llm_like
from strategies import sparse_inputs as shared_inputs

DTYPES = (np.float16, np.float32, np.float64)
DELTA_BITS = (1, 2, 4, 8)
_UINT = {2: np.uint16, 4: np.uint32, 8: np.uint64}


def assert_same_csr(got: sp.csr_matrix, want: sp.csr_matrix):
    """Same shape, pattern, index dtypes and values bit for bit (NaN payloads included)."""
    assert got.shape == want.shape
    assert got.indptr.dtype == want.indptr.dtype and got.indices.dtype == want.indices.dtype
    np.testing.assert_array_equal(got.indptr, want.indptr)
    np.testing.assert_array_equal(got.indices, want.indices)
    assert got.data.dtype == want.data.dtype
    isz = got.data.dtype.itemsize
    np.testing.assert_array_equal(got.data.view(_UINT[isz]), want.data.view(_UINT[isz]))


def fig3_matrix(n_cols: int = 13) -> np.ndarray:
    """Paper Fig. 3: one row, values 1 2 3 4 at 1-based columns 2 5 12 13."""
    A = np.zeros((1, n_cols), dtype=np.float32)
    A[0, [1, 4, 11, 12]] = [1, 2, 3, 4]
    return A


# ---------------------------------------------------------------------------------------------
# pinned encodings
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("n_cols", [13, 16])
def test_fig3_delta_bits_2(n_cols):
    M = macko.encode(fig3_matrix(n_cols), delta_bits=2)
    assert M.shape == (1, n_cols) and M.delta_bits == 2 and M.dtype == np.float32
    # values 1 2 0 3 4, then 3 zeros of end padding (multiple of 8 entries)
    np.testing.assert_array_equal(M.values, [1, 2, 0, 3, 4, 0, 0, 0])
    np.testing.assert_array_equal(macko.unpack_codes(M) + 1, [2, 3, 4, 3, 1])   # steps
    np.testing.assert_array_equal(macko.unpack_codes(M), [1, 2, 3, 2, 0])       # codes
    # 4 codes per byte, entry k at bit 2*(k % 4): 1 | 2<<2 | 3<<4 | 2<<6 = 0xB9; then 0
    assert M.deltas.tobytes() == bytes([0xB9, 0x00])
    np.testing.assert_array_equal(M.row_ptr, [0, 5])
    assert M.row_ptr.dtype == np.int32
    # the inserted zero sits at 1-based column 9
    np.testing.assert_array_equal(macko.columns(M) + 1, [2, 5, 9, 12, 13])
    assert (M.n_stored, M.n_padded, M.nnz, M.n_inserted) == (5, 8, 4, 1)
    M.validate(expensive=True)


def test_golden_delta_bits_4():
    """A small fixed matrix, encoded by hand (16 columns per step at most)."""
    A = np.zeros((3, 40), dtype=np.float32)
    A[0, [0, 1, 17, 39]] = [1.5, -2, 3, 4]   # gaps 1 1 16 22: zero inserted at column 33
    A[2, [16, 33]] = [5, 6]                   # gaps 17 17: zeros at columns 15 and 32
    M = macko.encode(A, delta_bits=4)
    np.testing.assert_array_equal(M.values, [1.5, -2, 3, 0, 4, 0, 5, 0, 6] + [0] * 7)
    np.testing.assert_array_equal(macko.unpack_codes(M), [0, 0, 15, 15, 5, 15, 0, 15, 0])
    # low nibble = even entry: (0,0) (15,15) (5,15) (0,15) (0,pad) pad pad pad
    assert M.deltas.tobytes().hex() == "00fff5f000000000"
    np.testing.assert_array_equal(M.row_ptr, [0, 5, 5, 9])
    np.testing.assert_array_equal(macko.columns(M), [0, 1, 17, 33, 39, 15, 16, 32, 33])
    M.validate(expensive=True)
    assert_same_csr(M.to_csr(), canonical_csr(A))


def test_golden_delta_bits_1_and_8():
    A = np.zeros((1, 4), dtype=np.float64)
    A[0, [0, 3]] = [7, 8]                    # b=1: gap 3 -> zero at column 2, then step 1
    M1 = macko.encode(A, delta_bits=1)
    np.testing.assert_array_equal(M1.values, [7, 0, 8, 0, 0, 0, 0, 0])
    assert M1.deltas.tobytes() == bytes([0b010])
    M8 = macko.encode(A, delta_bits=8)
    np.testing.assert_array_equal(M8.values, [7, 8, 0, 0, 0, 0, 0, 0])
    assert M8.deltas.tobytes() == bytes([0, 2, 0, 0, 0, 0, 0, 0])


@pytest.mark.parametrize("b", DELTA_BITS)
def test_gap_exactly_max_step_and_one_more(b):
    m = 1 << b
    A = np.zeros((4, 3 * m + 3), dtype=np.float32)
    A[0, m - 1] = 1                 # first step exactly 2**b (from column -1): no zero
    A[1, m] = 2                     # first step 2**b + 1: one zero at column 2**b - 1
    A[2, [0, m]] = 3                # gap exactly 2**b: no zero
    A[3, [0, m + 1]] = 4            # gap 2**b + 1: one zero at column 2**b
    M = macko.encode(A, delta_bits=b)
    np.testing.assert_array_equal(M.row_ptr, [0, 1, 3, 5, 8])
    np.testing.assert_array_equal(macko.columns(M), [m - 1, m - 1, m, 0, m, 0, m, m + 1])
    np.testing.assert_array_equal(macko.unpack_codes(M), [m - 1, m - 1, 0, 0, m - 1, 0, m - 1, 0])
    M.validate(expensive=True)
    assert_same_csr(M.to_csr(), canonical_csr(A))


def test_one_entry_at_last_column_long_gaps():
    for b in DELTA_BITS:
        A = np.zeros((2, 1000), dtype=np.float32)
        A[0, -1] = 5
        M = macko.encode(A, delta_bits=b)
        assert M.n_inserted == 999 >> b
        assert macko.columns(M)[M.row_ptr[1] - 1] == 999
        M.validate(expensive=True)
        assert_same_csr(M.to_csr(), canonical_csr(A))


def test_no_nonzeros_and_zero_sized():
    for shape in [(3, 5), (0, 4), (4, 0), (0, 0)]:
        M = macko.encode(np.zeros(shape, dtype=np.float32))
        assert M.values.size == 0 and M.deltas.size == 0 and M.n_stored == 0
        np.testing.assert_array_equal(M.row_ptr, np.zeros(shape[0] + 1))
        M.validate(expensive=True)
        assert_same_csr(M.to_csr(), canonical_csr(np.zeros(shape, dtype=np.float32)))
        np.testing.assert_array_equal(macko.spmv(M, np.ones(shape[1], np.float32)),
                                      np.zeros(shape[0]))


def test_pack_unpack_inverse():
    rng = np.random.default_rng(1)
    for b in DELTA_BITS:
        codes = rng.integers(0, 1 << b, size=64, dtype=np.uint8)
        packed = macko.pack_codes(codes, b)
        assert packed.size == 64 * b // 8
        M = macko.MackoMatrix(values=np.ones(64, np.float32), deltas=packed,
                              row_ptr=np.array([0, 64], np.int32), shape=(1, 10_000), delta_bits=b)
        np.testing.assert_array_equal(macko.unpack_codes(M), codes)


# ---------------------------------------------------------------------------------------------
# round trips (hypothesis)
# ---------------------------------------------------------------------------------------------

_special = st.sampled_from([np.nan, np.inf, -np.inf, 1e-30, 6.0e4, -0.0])


@st.composite
def sparse_inputs(draw):
    """A small matrix as dense array, COO (duplicates allowed) or CSR, plus a value dtype."""
    n_rows = draw(st.integers(0, 6))
    n_cols = draw(st.integers(1, 300))
    if draw(st.booleans()):
        n_rows = max(n_rows, 1)
    n = draw(st.integers(0, 40)) if n_rows else 0
    rows = draw(st.lists(st.integers(0, max(n_rows - 1, 0)), min_size=n, max_size=n))
    # columns clustered near both ends so gaps around 2**b and the last column come up
    col = st.one_of(st.integers(0, n_cols - 1), st.integers(max(n_cols - 3, 0), n_cols - 1),
                    st.integers(0, min(n_cols - 1, 20)))
    cols = draw(st.lists(col, min_size=n, max_size=n))
    vals = draw(st.lists(st.one_of(st.floats(-1e3, 1e3, width=32), _special),
                         min_size=n, max_size=n))
    coo = sp.coo_matrix((np.array(vals, dtype=np.float64), (np.array(rows, dtype=np.int64),
                         np.array(cols, dtype=np.int64))), shape=(n_rows, n_cols))
    kind = draw(st.sampled_from(["coo", "csr", "dense"]))
    A = {"coo": coo, "csr": coo.tocsr(), "dense": coo.toarray()}[kind]
    dtype = draw(st.sampled_from(DTYPES))
    return A, dtype


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # NaN/Inf/overflow on purpose
@given(sparse_inputs(), st.sampled_from(DELTA_BITS))
def test_round_trip(inp, b):
    A, dtype = inp
    M = macko.encode(A, delta_bits=b, dtype=dtype)
    M.validate(expensive=True)
    assert M.dtype == dtype and M.values.size % 8 == 0
    want = canonical_csr(A, dtype)
    assert_same_csr(M.to_csr(), want)
    assert M.nnz == want.nnz
    # the worst-case bound holds for every matrix: at most one inserted zero per 2**b zeros
    zeros_before_last = sum(int(want.indices[want.indptr[r + 1] - 1]) + 1
                            - (want.indptr[r + 1] - want.indptr[r])
                            for r in range(want.shape[0]) if want.indptr[r + 1] > want.indptr[r])
    assert M.n_inserted * (1 << b) <= zeros_before_last


@pytest.mark.parametrize("shape", [(1, 50), (50, 1), (1, 1)])
@pytest.mark.parametrize("b", DELTA_BITS)
def test_vector_shapes(shape, b):
    rng = np.random.default_rng(3)
    A = (rng.random(shape) < 0.3) * rng.standard_normal(shape)
    for dtype in DTYPES:
        M = macko.encode(A, delta_bits=b, dtype=dtype)
        M.validate(expensive=True)
        assert_same_csr(M.to_csr(), canonical_csr(A, dtype))


def test_nan_inf_values_round_trip():
    A = np.zeros((2, 40), dtype=np.float32)
    A[0, [3, 30]] = [np.nan, np.inf]
    A[1, [0, 39]] = [-np.inf, 1.0]
    for dtype in DTYPES:
        for b in DELTA_BITS:
            M = macko.encode(A, delta_bits=b, dtype=dtype)
            assert_same_csr(M.to_csr(), canonical_csr(A, dtype))


def test_float16_cast_to_zero_is_dropped():
    A = np.array([[1e-30, 0, 2.0]])          # 1e-30 becomes 0 in float16: not stored
    M = macko.encode(A, dtype=np.float16)
    assert M.nnz == 1
    assert_same_csr(M.to_csr(), canonical_csr(A, np.float16))


# ---------------------------------------------------------------------------------------------
# products
# ---------------------------------------------------------------------------------------------

_TOL = {np.float16: 2e-2, np.float32: 1e-5, np.float64: 1e-12}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("b", DELTA_BITS)
def test_spmv_spmm_vs_scipy(dtype, b):
    rng = np.random.default_rng(7)
    A = sp.random(37, 300, density=0.15, random_state=rng, format="csr")
    M = macko.encode(A, delta_bits=b, dtype=dtype)
    C = M.to_csr().astype(np.float64)
    x = rng.standard_normal(300).astype(dtype)
    y = macko.spmv(M, x)
    assert y.dtype == dtype and y.shape == (37,)
    want = C @ x.astype(np.float64)
    np.testing.assert_allclose(y.astype(np.float64), want, rtol=_TOL[dtype], atol=_TOL[dtype] * 10)
    X = rng.standard_normal((300, 5)).astype(dtype)
    Y = macko.spmm(M, X)
    assert Y.dtype == dtype and Y.shape == (37, 5)
    np.testing.assert_allclose(Y.astype(np.float64), C @ X.astype(np.float64),
                               rtol=_TOL[dtype], atol=_TOL[dtype] * 10)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # NaN/Inf/overflow on purpose
@given(st.one_of(shared_inputs(max_cols=80), llm_like()), st.sampled_from(DELTA_BITS))
def test_shared_cases_round_trip_and_products(case, b):
    """The suite's shared cases (NaN/Inf, extremes, duplicates, edge shapes): exact round trip,
    products within the suite's tolerance model, and equal to reference.csr bit for bit."""
    M = macko.encode(case.A, delta_bits=b, dtype=case.dtype).validate(expensive=True)
    C = M.to_csr()
    assert_same_csr(C, canonical_csr(case.A, case.dtype))
    assert_close(macko.spmv(M, case.x), C, case.x, case.dtype, "spmv")
    assert_close(macko.spmm(M, case.X), C, case.X, case.dtype, "spmm")
    R = rcsr.encode(case.A, dtype=case.dtype)
    np.testing.assert_array_equal(macko.spmv(M, case.x), rcsr.spmv(R, case.x))
    np.testing.assert_array_equal(macko.spmm(M, case.X), rcsr.spmm(R, case.X))


@pytest.mark.parametrize("dtype", DTYPES)
def test_spmv_equals_csr_reference_bit_for_bit(dtype):
    """Inserted zeros are skipped, so Inf/NaN in x at their columns do not leak in."""
    rng = np.random.default_rng(11)
    A = sp.random(20, 200, density=0.05, random_state=rng, format="csr")
    M = macko.encode(A, delta_bits=2, dtype=dtype)
    assert M.n_inserted > 0
    R = rcsr.encode(A, dtype=dtype)
    x = rng.standard_normal(200).astype(dtype)
    x[macko.columns(M)[M.values[:M.n_stored] == 0]] = np.inf   # Inf under every inserted zero
    np.testing.assert_array_equal(macko.spmv(M, x), rcsr.spmv(R, x))
    X = np.stack([x, -x, x * 2], axis=1)
    np.testing.assert_array_equal(macko.spmm(M, X), rcsr.spmm(R, X))


def test_spmv_operand_errors():
    M = macko.encode(fig3_matrix())
    with pytest.raises(ShapeError):
        macko.spmv(M, np.ones(12, np.float32))
    with pytest.raises(DTypeError):
        macko.spmv(M, np.ones(13, np.float64))
    with pytest.raises(ShapeError):
        macko.spmm(M, np.ones(13, np.float32))


# ---------------------------------------------------------------------------------------------
# validation and errors
# ---------------------------------------------------------------------------------------------


def _corrupt(M, **arrays):
    return dataclasses.replace(M, **arrays)


def _edit(arr, fn):
    a = np.array(arr, copy=True)
    fn(a)
    return a


def test_validate_cheap_catches_corruption():
    A = np.zeros((3, 40), dtype=np.float32)
    A[0, [0, 1, 17, 39]] = [1.5, -2, 3, 4]
    A[2, [16, 33]] = [5, 6]
    M = macko.encode(A, delta_bits=4).validate(expensive=True)
    bad = [
        _corrupt(M, values=M.values[:-1]),                                    # truncated values
        _corrupt(M, values=M.values[:8]),                                     # truncated to 8
        _corrupt(M, deltas=M.deltas[:-1]),                                    # truncated codes
        _corrupt(M, row_ptr=_edit(M.row_ptr, lambda a: a.__setitem__(1, 6))),   # decreasing
        _corrupt(M, row_ptr=_edit(M.row_ptr, lambda a: a.__setitem__(0, 1))),   # not from 0
        _corrupt(M, row_ptr=_edit(M.row_ptr, lambda a: a.__setitem__(-1, 17))), # past values
        _corrupt(M, row_ptr=_edit(M.row_ptr, lambda a: a.__setitem__(-1, 7))),  # padding > 7
        _corrupt(M, row_ptr=M.row_ptr[:-1]),                                  # wrong length
        _corrupt(M, row_ptr=M.row_ptr.astype(np.int64)),                      # wrong index dtype
        _corrupt(M, values=_edit(M.values, lambda a: a.__setitem__(-1, 1))),   # padding value
        _corrupt(M, deltas=_edit(M.deltas, lambda a: a.__setitem__(-1, 1))),   # padding code
        _corrupt(M, deltas=M.deltas.astype(np.int8)),                         # deltas dtype
        _corrupt(M, values=M.values.astype(np.int32)),                        # values dtype
        _corrupt(M, delta_bits=3),
        _corrupt(M, shape=(3,)),
    ]
    for B in bad:
        with pytest.raises(FormatError):
            B.validate()


def test_validate_expensive_only():
    M = macko.encode(fig3_matrix(13), delta_bits=2)
    # last code 0 -> 3: the last entry decodes to 0-based column 15 >= 13 columns
    past = _corrupt(M, deltas=macko.pack_codes(np.array([1, 2, 3, 2, 3, 0, 0, 0]), 2))
    past.validate()                                      # cheap checks cannot see it
    with pytest.raises(FormatError, match="columns"):
        past.validate(expensive=True)
    # an unneeded zero: a stored zero with a short step
    A = np.zeros((1, 8), np.float32)
    A[0, [0, 5]] = 1
    unneeded = macko.MackoMatrix(
        values=np.array([1, 0, 1, 0, 0, 0, 0, 0], np.float32),
        deltas=macko.pack_codes(np.array([0, 1, 2, 0, 0, 0, 0, 0]), 4),
        row_ptr=np.array([0, 3], np.int32), shape=(1, 8), delta_bits=4)
    assert_same_csr(unneeded.validate().to_csr(), canonical_csr(A))
    with pytest.raises(FormatError, match="zero"):
        unneeded.validate(expensive=True)
    # a zero as the last entry of its row
    trailing = macko.MackoMatrix(
        values=np.array([1, 0, 0, 0, 0, 0, 0, 0], np.float32),
        deltas=macko.pack_codes(np.array([0, 3, 0, 0, 0, 0, 0, 0]), 2),
        row_ptr=np.array([0, 2], np.int32), shape=(1, 8), delta_bits=2)
    trailing.validate()
    with pytest.raises(FormatError, match="last entry"):
        trailing.validate(expensive=True)


def test_arrays_read_only_and_summary():
    M = macko.encode(fig3_matrix())
    for _, a in M.arrays():
        assert not a.flags.writeable
    assert "MackoMatrix" in repr(M) and M.options() == {"delta_bits": 4}
    assert M.nbytes == M.values.nbytes + M.deltas.nbytes + M.row_ptr.nbytes


@pytest.mark.parametrize("bad", [0, 3, 16, -4, 4.0, "4", True, None])
def test_bad_delta_bits(bad):
    with pytest.raises(OptionError):
        macko.encode(fig3_matrix(), delta_bits=bad)


def test_bad_inputs():
    with pytest.raises(DTypeError):
        macko.encode(np.ones((2, 2), dtype=np.complex64))
    with pytest.raises(DTypeError):
        macko.encode(np.ones((2, 2), dtype=np.int32))
    with pytest.raises(ShapeError):
        macko.encode(np.ones(4, dtype=np.float32))
    M = macko.encode(np.ones((2, 2), dtype=np.int32), dtype=np.float16)
    assert M.dtype == np.float16 and M.nnz == 4


def test_registry():
    from spmvlab import formats
    info = formats.get("macko")
    assert info.reference == "reference.macko" and info.encoder == "spmvlab.encoders.macko"
    assert info.options["delta_bits"].default == 4
    assert info.kernel_dtypes == ("float16", "float32")
    M = info.encode(fig3_matrix(), delta_bits=2)
    assert M.deltas.tobytes() == bytes([0xB9, 0])
    with pytest.raises(OptionError):
        info.encode(fig3_matrix(), delta_bits=3)
