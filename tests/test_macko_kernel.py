"""MACKO kernel specifics (simulator on CPU, real on GPU): inserted zeros under Inf/NaN in x,
dtype/config/int32 guards. The shared suite (test_formats.py) runs the parity cases."""
import numpy as np
import pytest
import scipy.sparse as sp

import reference.macko as R
from reference._common import DTypeError, OptionError
from spmvlab.kernels import macko as K


def test_unsupported_dtype_and_config():
    M = R.encode(np.eye(3), dtype=np.float64)
    with pytest.raises(DTypeError, match="float16, float32"):
        K.spmv(M, np.ones(3))
    with pytest.raises(OptionError, match="threads_per_block"):
        K.MackoConfig(threads_per_block=48)
    with pytest.raises(OptionError, match="prefetch"):
        K.MackoConfig(prefetch=3)
    with pytest.raises(OptionError, match="spmm_smem_threads"):
        K.MackoConfig(spmm_smem_threads=2048)
    with pytest.raises(OptionError, match="spmm_smem: expected True or False"):
        K.MackoConfig(spmm_smem=1)


@pytest.mark.parametrize("delta_bits, dtype", [(4, np.float16), (4, np.float32), (1, np.float16),
                                               (2, np.float32), (8, np.float16)])
def test_long_rows_take_the_unmasked_path_and_agree(delta_bits, dtype):
    """Rows long enough that whole 256-entry chunks lie inside them, one starting at entry 0
    and one at an offset that is not a multiple of 16, so the unmasked path runs first and
    between masked chunks; a short and an empty row too."""
    rng = np.random.default_rng(delta_bits)
    lengths = [1030, 3, 1500, 0, 1100]      # row 0 starts at entry 0: an interior first chunk
    rows = np.repeat(np.arange(5), lengths)
    cols = np.concatenate([np.sort(rng.choice(4000, n, replace=False)) for n in lengths])
    A = sp.csr_matrix((rng.standard_normal(rows.size), (rows, cols)), shape=(5, 4000))
    M = R.encode(A, delta_bits=delta_bits, dtype=dtype)
    assert M.row_ptr[2] % 16 and M.row_ptr[3] - M.row_ptr[2] > 2 * 512
    x = rng.standard_normal(4000).astype(dtype)
    y = np.full(5, 7.0, dtype)                     # garbage: every element must be written
    K.spmv(M, x, out=y, config=K.MackoConfig(threads_per_block=64))
    exact = M.to_csr().astype(np.float64) @ x.astype(np.float64)
    scale = abs(M.to_csr().astype(np.float64)) @ abs(x.astype(np.float64))
    assert np.all(abs(y.astype(np.float64) - exact) <= (2e-3 if dtype == np.float16 else 1e-5) * scale + 1e-6)
    assert y[3] == 0


def test_shared_memory_tile_halves_until_x_fits():
    from spmvlab.kernels._spmm import smem_tile
    assert smem_tile(np.float16, 11008, 8, 16) == 8          # 176 KiB
    assert smem_tile(np.float16, 11008, 64, 16) == 8         # 16 columns would be 352 KiB
    assert smem_tile(np.float32, 11008, 8, 16) == 4
    assert smem_tile(np.float16, 100, 3, 16) == 4
    assert smem_tile(np.float32, 10**6, 8, 16) == 0          # not one column fits: global X
    assert smem_tile(np.float16, 0, 8, 16) == 0
    assert smem_tile(np.float16, 100, 8, 16, limit=100 * 2 * 2) == 2


@pytest.mark.parametrize("dtype, k", [(np.float16, 24), (np.float32, 5)])
def test_shared_memory_spmm_equals_the_register_tile_bit_for_bit(dtype, k):
    """The two SpMM paths walk each row in the same order and differ only in where X's tile
    is read from, so their results agree exactly (several column tiles, a partial last one)."""
    rng = np.random.default_rng(3)
    A = sp.random(5, 300, density=0.3, random_state=4, format="csr", dtype=np.float64)
    M = R.encode(A, dtype=dtype)
    X = rng.standard_normal((300, k)).astype(dtype)
    glob = K.spmm(M, X, config=K.MackoConfig(threads_per_block=64, spmm_tile=8, spmm_smem=False))
    shared = K.spmm(M, X, config=K.MackoConfig(spmm_tile=8, spmm_smem_threads=64))
    assert glob.tobytes() == shared.tobytes()
    np.testing.assert_allclose(shared, M.to_csr().astype(np.float64) @ X.astype(np.float64),
                               rtol=2e-2 if dtype == np.float16 else 1e-5, atol=1e-2)


@pytest.mark.parametrize("cfg", [K.MackoConfig(threads_per_block=32),
                                 K.MackoConfig(threads_per_block=32, prefetch=0),
                                 K.MackoConfig(threads_per_block=32, prefetch=2),
                                 K.MackoConfig(threads_per_block=32, spmm_smem=False)],
                         ids=["prefetch1", "prefetch0", "prefetch2", "spmm-global-x"])
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


# ---- reproductions ("Trust and the user's surface"): nothing unchecked reaches a kernel ------

def test_corrupted_code_byte_never_reaches_a_kernel():
    """Reproduction 2, kernel side: to_device ran only the cheap checks, so a code byte set
    to 0xFF (a column past 63 in a 16x64 matrix) was read by the kernel as an
    out-of-bounds x index. Now the checksum refuses it, and rebuilt on purpose
    (checksum=None) the column check does, on the host and with the device check kernel."""
    import dataclasses
    from reference._common import ChecksumError, FormatError
    from spmvlab import datasets
    M = R.encode(datasets.uniform((16, 64), 0.5, dtype=np.float32, seed=0))
    d = M.deltas.copy()
    d[10] = 0xFF
    B = dataclasses.replace(M, deltas=d)
    x = np.ones(64, np.float32)
    with pytest.raises(ChecksumError):
        K.to_device(B)
    with pytest.raises(ChecksumError):
        K.spmv(B, x)
    C = dataclasses.replace(B, checksum=None)
    for check in ("host", "device"):
        with pytest.raises(FormatError, match=r"MackoMatrix.deltas: expected decoded columns in \[0, 64\)"):
            K.to_device(C, check=check)
    assert K.device_check(K._upload(C)) == ["deltas"]


def test_device_check_reads_whole_chunks_too():
    """One long row: its first 256-entry chunk lies inside the row, where the check sums
    whole code words (the unmasked path). A larger code there is flagged; a smaller one,
    which keeps every column in range, is not; the host check agrees both times."""
    import dataclasses
    from reference._common import FormatError
    A = sp.random(1, 1200, density=0.5, random_state=4, dtype=np.float32, format="lil")
    A[0, 1199] = 1.0
    M = R.encode(A.tocsr(), delta_bits=4)
    assert M.n_stored > 2 * K.CHUNK
    codes = R.unpack_codes(M, include_padding=True)
    for k, code in ((100, 15), (101, 0)):
        if codes[k] == code:
            continue
        c = codes.copy()
        c[k] = code
        B = dataclasses.replace(M, deltas=R.pack_codes(c, 4), checksum=None)
        flagged = K.device_check(K._upload(B))
        try:
            B.validate(expensive=True, canonical=False)
            assert flagged == [], k
        except FormatError:
            assert flagged == ["deltas"], k
    assert K.device_check(K._upload(M)) == []


def test_scipy_matrix_raises_how_to_encode():
    """Reproduction 5: a scipy matrix passed to the kernel raised AttributeError ('no
    attribute validate'); now a typed error says how to encode it."""
    from reference._common import NotEncodedError
    A = sp.random(4, 6, density=0.5, random_state=1, dtype=np.float32, format="csr")
    with pytest.raises(NotEncodedError, match=r"expected a MackoMatrix or DeviceMacko, received "
                                              r"scipy csr_matrix.*Fix: encode it first: "
                                              r"M = reference.macko.encode\(A\)"):
        K.spmv(A, np.ones(6, np.float32))


def _rows_of(lengths, n_cols, seed, dtype, delta_bits=4):
    """A matrix whose row r has lengths[r] nonzeros at random columns, encoded."""
    rng = np.random.default_rng(seed)
    rows = np.repeat(np.arange(len(lengths)), lengths)
    cols = np.concatenate([np.sort(rng.choice(n_cols, n, replace=False)) for n in lengths])
    A = sp.csr_matrix((rng.standard_normal(rows.size), (rows, cols)), shape=(len(lengths), n_cols))
    return R.encode(A, delta_bits=delta_bits, dtype=dtype), rng


# ---- the tensor-core SpMM (MackoConfig.spmm_mma) ------------------------------------------

def test_tensor_core_spmm_config_and_tiles():
    for bad in (32, 100, 2048, True):
        with pytest.raises(OptionError, match=r"spmm_mma_window: expected one of \(64, 128"):
            K.MackoConfig(spmm_mma_window=bad)
    with pytest.raises(OptionError, match="spmm_mma: expected True or False"):
        K.MackoConfig(spmm_mma=1)
    assert [K.mma_tile(n) for n in (2, 8, 9, 16, 17, 64)] == [8, 8, 16, 16, 32, 32]
    # tile (16 rows of window + 8 halves) + X window; the partial sums fit in the same bytes
    assert K.mma_smem_bytes(1024, 8) == 16 * 1032 * 2 + 1024 * 8 * 2 + 16
    assert K.mma_smem_bytes(64, 32) == 16 * 16 * 32 * 4 + 16


def _mma_agrees(lengths, n_cols, ks, window, seed, out_t=False):
    from parity import assert_close, garbage_like
    M, rng = _rows_of(lengths, n_cols, seed, np.float16)
    csr = M.to_csr()
    cfg = K.MackoConfig(threads_per_block=64, spmm_mma=True, spmm_mma_window=window)
    for k in ks:
        X = rng.standard_normal((n_cols, k)).astype(np.float16)
        out = garbage_like((len(lengths), k), np.float16)
        Y = K.spmm(M, X, out=out, config=cfg)
        assert Y is out
        assert_close(Y, csr, X, np.float16, f"mma spmm, N={k}")
        assert (Y[[i for i, n in enumerate(lengths) if n == 0]] == 0).all()
        if out_t:                  # the transpose written by the kernel (torch's layout)
            out = garbage_like((k, len(lengths)), np.float16)
            assert K.spmm(M, X, out=out, config=cfg, out_t=True) is out
            assert np.array_equal(out, Y.T)
    return M


def test_tensor_core_spmm_agrees_on_edge_rows_and_windows():
    """17 rows (a full and a partial block of 16) over 600 columns in two 512-column
    windows: empty rows, a one-entry row, a dense row whose first chunk lies wholly inside
    the first window (the untested store path), rows whose chunks straddle the windows, a
    row starting at an entry that is not a multiple of 8; N = 1 (SpMV) and N = 9 (a
    16-column tile, X copied one value at a time, columns past N zero)."""
    M = _mma_agrees([500, 0, 3, 300, 1, 0, 257, 20, 5, 100, 0, 0, 560, 2, 7, 150, 64], 600,
                    (1, 9), 512, 5)
    assert M.row_ptr[3] % 8


def test_tensor_core_spmm_agrees_on_column_tiles():
    """8 rows, 200 columns in four 64-column windows (the last partial): N = 3 (one 8-column
    tile, 5 columns zero) and N = 40 (two 32-column tiles, 16-byte X copies, the second
    tile 8 columns wide); also Y's transpose (``out_t``), the same values."""
    _mma_agrees([150, 0, 70, 9, 1, 0, 200, 33], 200, (3, 40), 64, 6, out_t=True)


def test_tensor_core_spmm_inf_nan_fall_back_to_csr_semantics():
    """The dense tile multiplies every column of the window by X, so an Inf/NaN anywhere
    in X (here at columns where only inserted zeros or nothing are stored) makes the fast
    result NaN; the block then redoes its rows on the careful path: finite results stay
    finite, and a stored entry times Inf gives Inf, as in CSR. float32 values take the
    gather kernel (spmm_mma is for float16)."""
    cols = [0, 40] + list(range(300, 900))
    rows = [0, 0] + [1] * 600
    A = sp.csr_matrix((np.ones(len(cols), np.float32), (rows, cols)), shape=(2, 900))
    A[0, 40] = 2.0
    for dtype in (np.float16, np.float32):
        M = R.encode(A, delta_bits=4, dtype=dtype)
        x = np.ones(900, dtype)
        x[16] = np.inf
        x[32] = np.nan
        x[100] = np.inf          # no entry (stored or inserted) in column 100
        X = np.ascontiguousarray(np.stack([x, x, np.ones(900, dtype)], axis=1))
        cfg = K.MackoConfig(spmm_mma=True, spmm_mma_window=512)
        assert (K.spmm(M, X, config=cfg) == [[3.0, 3.0, 3.0], [600.0, 600.0, 600.0]]).all()
        X[40, 1] = np.inf        # a stored entry times Inf
        Y = K.spmm(M, X, config=cfg)
        assert Y[0].tolist() == [3.0, np.inf, 3.0] and Y[1].tolist() == [600.0] * 3
