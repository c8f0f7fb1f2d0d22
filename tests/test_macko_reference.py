"""reference/macko.py: pinned encodings, round trips, products, validation and errors."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, strategies as st

from reference import csr as rcsr
from reference import macko
from reference._common import (
    ChecksumError, FormatError, LossyConversionError, LossyConversionWarning, NotEncodedError,
    OptionError, canonical_csr,
)
from parity import assert_same_csr
from strategies import clustered_inputs

DTYPES = (np.float16, np.float32, np.float64)
DELTA_BITS = macko.DELTA_BITS


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
# inserted zeros (hypothesis)
# ---------------------------------------------------------------------------------------------

@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # NaN/Inf/overflow on purpose
@pytest.mark.filterwarnings("ignore::reference._common.LossyConversionWarning")
@given(clustered_inputs(), st.sampled_from(DELTA_BITS))
def test_inserted_zeros_within_the_worst_case_bound(case, b):
    """Long gaps and last columns: at most one inserted zero per 2**b skipped columns
    (the shared suite checks the round trip on the same inputs; ``lossy=True``: the values
    include some that overflow or underflow in float16)."""
    A, dtype = case.A, case.dtype
    M = macko.encode(A, delta_bits=b, dtype=dtype, lossy=True)
    assert M.values.size % 8 == 0
    want = canonical_csr(A, dtype, lossy=True)
    assert M.nnz == want.nnz
    # the worst-case bound holds for every matrix: at most one inserted zero per 2**b zeros
    zeros_before_last = sum(int(want.indices[want.indptr[r + 1] - 1]) + 1
                            - (want.indptr[r + 1] - want.indptr[r])
                            for r in range(want.shape[0]) if want.indptr[r + 1] > want.indptr[r])
    assert M.n_inserted * (1 << b) <= zeros_before_last


def test_float16_cast_to_zero_is_dropped():
    A = np.array([[1e-30, 0, 2.0]])          # 1e-30 becomes 0 in float16: not stored
    with pytest.warns(LossyConversionWarning, match="1 underflowing to zero"):
        M = macko.encode(A, dtype=np.float16, lossy=True)
    assert M.nnz == 1
    with pytest.warns(LossyConversionWarning):
        assert_same_csr(M.to_csr(), canonical_csr(A, np.float16, lossy=True))


def test_float16_cast_to_zero_raises_without_lossy():
    A = np.array([[1e-30, 0, 2.0]])
    with pytest.raises(LossyConversionError,
                       match=r"0 entries overflowing.*1 underflowing to zero, 0 underflowing to a "
                             r"subnormal \(first: row 0, column 0, 1e-30 -> 0.0\)") as err:
        macko.encode(A, dtype=np.float16)
    assert err.value.loss.counts["underflow to zero"] == 1


# ---------------------------------------------------------------------------------------------
# products
# ---------------------------------------------------------------------------------------------

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
            B.validate(checksum=False)                  # the structural checks alone


def _one_row(values, codes, delta_bits):
    """A 1x8 MackoMatrix built from its stored entries on purpose (a fresh checksum)."""
    pad = [0] * (8 - len(values))
    return macko.MackoMatrix(
        values=np.array(values + pad, np.float32), deltas=macko.pack_codes(np.array(codes + pad), delta_bits),
        row_ptr=np.array([0, len(values)], np.int32), shape=(1, 8), delta_bits=delta_bits)


def test_validate_expensive_only():
    M = macko.encode(fig3_matrix(13), delta_bits=2)
    # last code 0 -> 3: the last entry decodes to 0-based column 15 >= 13 columns
    past = _corrupt(M, deltas=macko.pack_codes(np.array([1, 2, 3, 2, 3, 0, 0, 0]), 2))
    past.validate(checksum=False)                        # cheap checks cannot see it
    with pytest.raises(FormatError, match="columns"):
        past.validate(expensive=True, checksum=False)
    with pytest.raises(ChecksumError):                   # the checksum can
        past.validate()
    # an unneeded zero: a stored zero with a short step
    unneeded = _one_row([1, 0, 1], [0, 1, 2], delta_bits=4)
    unneeded.validate()
    unneeded.validate(expensive=True, canonical=False)   # in bounds: safe for a kernel
    np.testing.assert_array_equal(macko.columns(unneeded), [0, 2, 5])
    with pytest.raises(FormatError, match="zero"):
        unneeded.validate(expensive=True)
    with pytest.raises(FormatError, match="zero"):       # so every reference function refuses it
        unneeded.to_csr()
    # a zero as the last entry of its row
    trailing = _one_row([1, 0], [0, 3], delta_bits=2)
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


def test_integer_input_with_a_dtype():
    M = macko.encode(np.ones((2, 2), dtype=np.int32), dtype=np.float16)
    assert M.dtype == np.float16 and M.nnz == 4


def test_registry():
    from spmvlab import formats
    info = formats.get("macko")
    assert info.reference == "reference.macko" and info.encoder == "spmvlab.encoders.macko"
    assert info.options["delta_bits"].default == 4
    assert info.kernel_dtypes == ("float16", "float32")
    assert info.options["delta_bits"].choices == DELTA_BITS and info.options["delta_bits"].auto
    M = info.encode(fig3_matrix(), delta_bits=2)
    assert M.deltas.tobytes() == bytes([0xB9, 0])
    with pytest.raises(OptionError):
        info.encode(fig3_matrix(), delta_bits=3)


# ---------------------------------------------------------------------------------------------
# reproductions ("Trust and the user's surface"): damaged matrices never give numbers
# ---------------------------------------------------------------------------------------------

def _small():
    """A 16x64 MackoMatrix at 50 % (delta_bits=4): 16 bytes of codes per row."""
    from spmvlab import datasets
    M = macko.encode(datasets.uniform((16, 64), 0.5, dtype=np.float32, seed=0))
    return M, np.random.default_rng(0).standard_normal(64).astype(np.float32)


def test_truncated_row_ptr_raises_instead_of_returning_numbers():
    """Reproduction 1: spmv of a matrix whose row_ptr lost 3 entries returned numbers."""
    M, x = _small()
    B = dataclasses.replace(M, row_ptr=M.row_ptr[:-3].copy())
    for call in (lambda: macko.spmv(B, x), lambda: macko.spmm(B, x[:, None].copy()), B.to_csr):
        with pytest.raises(FormatError, match=r"MackoMatrix.row_ptr: expected a 1-D array of 17 entries, received 14"):
            call()


def test_corrupted_code_byte_is_caught():
    """Reproduction 2: deltas[10] = 0xFF passed the cheap validate and to_csr returned a
    16x64 matrix holding a column past 63. Now the checksum catches it, and rebuilt on
    purpose (checksum=None) the column bound does, in every reference function."""
    M, x = _small()
    d = M.deltas.copy()
    d[10] = 0xFF
    B = dataclasses.replace(M, deltas=d)
    B.validate(checksum=False)                               # the cheap checks cannot see it
    with pytest.raises(ChecksumError):
        B.validate()
    C = dataclasses.replace(B, checksum=None)
    assert macko.columns(C).max() >= 64                      # the damage: a column past the end
    for call in (C.to_csr, lambda: macko.spmv(C, x), lambda: macko.spmm(C, x[:, None].copy())):
        with pytest.raises(FormatError, match=r"MackoMatrix.deltas: expected decoded columns in \[0, 64\)"):
            call()
    with pytest.raises(FormatError, match="deltas"):         # with its checksum: the same
        B.to_csr()


def test_one_bit_flip_inside_a_code_is_caught():
    """Reproduction 3: a one-bit flip that keeps every column in range passed
    validate(expensive=True) and changed the result; the checksum tells it apart now."""
    M, x = _small()
    y = macko.spmv(M, x)
    for bit in range(8 * M.deltas.size):
        d = M.deltas.copy()
        d[bit // 8] ^= np.uint8(1 << (bit % 8))
        B = dataclasses.replace(M, deltas=d)
        try:
            B.validate(expensive=True, checksum=False)      # structurally a fine matrix
        except FormatError:
            continue
        assert not np.array_equal(macko.spmv(dataclasses.replace(B, checksum=None), x), y)
        with pytest.raises(ChecksumError):
            B.validate(expensive=True)
        with pytest.raises(ChecksumError):
            macko.spmv(B, x)
        return
    pytest.fail("no one-bit flip kept the matrix structurally valid")


def test_scipy_matrix_raises_how_to_encode():
    """Reproduction 5, reference side: a scipy matrix where a MackoMatrix is expected."""
    with pytest.raises(NotEncodedError, match=r"expected a MackoMatrix, received scipy csr_matrix"
                                              r".*Fix: encode it first: M = reference.macko.encode\(A\)"):
        macko.spmv(sp.csr_matrix(fig3_matrix()), np.ones(13, np.float32))
