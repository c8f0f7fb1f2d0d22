"""CSR-dtANS kernel specifics (the shared suite in test_formats.py runs the parity cases):
the expanded shared-memory tables, escapes decoded inside the kernel, one warp whose rows
have very different lengths, every value dtype, and the device check agreeing with the
host's decode on damaged words. Small cases: on a CPU they run in the CUDA simulator."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import scipy.sparse as sp

from reference import csr_dtans as R
from reference._common import FormatError
from spmvlab.kernels import csr_dtans as K
from parity import assert_close, check_parity, garbage_like

CFG = K.CSRDtansConfig(threads_per_block=32, spmm_tile=2)
# the kernels rely on uint32 wrap-around (a digit group's bases multiply to W = 2**32); NumPy
# scalars on the simulator warn about it, the GPU does not
pytestmark = pytest.mark.filterwarnings("ignore:overflow encountered in scalar:RuntimeWarning")


def ragged(dtype, seed=0, n_rows=35, n_cols=400, distinct=True, contiguous=False):
    """Rows of lengths 0, 1, 2, 3, 5, ... up to 61 in one warp (and a second, partial warp);
    with ``distinct`` the values are all different (so the value table escapes most of them)
    and some column gaps are long (escaped deltas); with ``contiguous`` row i holds columns
    0 .. length - 1 (deltas 0 and 1 only)."""
    rng = np.random.default_rng(seed)
    lengths = np.array([0, 1, 2, 3, 5, 61, 0, 8, 13, 4] * 4)[:n_rows]
    rows, cols = [], []
    for i, n in enumerate(lengths):
        c = (np.arange(min(int(n), n_cols)) if contiguous
             else np.sort(rng.choice(n_cols, size=min(int(n), n_cols), replace=False)))
        rows += [i] * c.size
        cols += c.tolist()
    vals = rng.standard_normal(len(rows)) if distinct else rng.integers(1, 4, len(rows)).astype(float)
    return sp.csr_matrix((vals, (rows, cols)), shape=(n_rows, n_cols)).astype(np.float64), rng


@pytest.mark.parametrize("params", sorted(R.PARAMS))
def test_expanded_tables_are_the_reference_tables(params):
    A, _ = ragged(np.float32, seed=1)
    M = R.encode(A, dtype=np.float32, params=params)
    dtab, vtab = M.tables()
    for syms, counts, tab in ((M.deltas, M.delta_counts, dtab), (M.values, M.value_counts, vtab)):
        sym, info, esc, used = K.table_layout(syms, counts)
        assert used == len(tab.symbol)
        assert esc == (tab.first[R.dtans.ESCAPE] if tab.escape else used)
        assert (info & 0xFF).tolist() == list(tab.digit)
        assert ((info >> 8) + 1).tolist() == list(tab.base)
        bits = sym.view(f"u{sym.dtype.itemsize}") if sym.dtype.kind == "f" else sym
        assert [int(b) for b, s in zip(bits, tab.symbol) if s is not R.dtans.ESCAPE] == \
               [int(s) for s in tab.symbol if s is not R.dtans.ESCAPE]


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_packed_tables_hold_each_slot_whole(dtype):
    """One word per slot: the symbol's bits low, its info above them (float64: apart)."""
    A, _ = ragged(dtype, seed=2, distinct=True)
    M = R.encode(A, dtype=dtype)
    vsym, vinfo, _, _ = K.table_layout(M.values, M.value_counts)
    dsym, dinfo, _, _ = K.table_layout(M.deltas.astype(np.int32), M.delta_counts)
    vtab, dtab = K.packed_tables(vsym, vinfo, dsym, dinfo)
    assert dtab.dtype == np.uint64
    assert ((dtab & 0xFFFFFFFF).astype(np.uint32).view(np.int32) == dsym).all()
    assert ((dtab >> np.uint64(32)) == dinfo).all()
    width = np.dtype(dtype).itemsize * 8
    if width == 64:
        assert vtab is vsym
        return
    assert vtab.dtype == (np.uint32 if width == 16 else np.uint64)
    low = (vtab & vtab.dtype.type((1 << width) - 1)).astype(f"u{width // 8}")
    assert (low == vsym.view(f"u{width // 8}")).all()
    assert ((vtab >> vtab.dtype.type(width)) == vinfo).all()
    assert (dinfo > 0xFF).any() and (vinfo > 0xFF).any()      # bases above 1 reach the top bits


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_ragged_warp_with_escapes_every_dtype(dtype):
    """Both tables escape (distinct values, long gaps), lanes finish at very different
    segments; SpMV and an SpMM of 3 columns (two tiles, the second partial)."""
    A, rng = ragged(dtype, seed=2)
    M = R.encode(A, dtype=dtype)
    assert M.value_counts[-1] > 0 and M.delta_counts[-1] > 0, "the case must escape"
    x = rng.standard_normal(A.shape[1]).astype(dtype)
    X = rng.standard_normal((A.shape[1], 3)).astype(dtype)
    check_parity(R, K, M, x, X, config=CFG)


def test_no_escapes_and_toy_params():
    """Few distinct values and short gaps: tables without escape slots (the kernel skips the
    escape ballots); the toy parameters (2-bit words) on the same rows."""
    A, rng = ragged(np.float32, seed=3, n_rows=33, n_cols=70, distinct=False, contiguous=True)
    for params in ("paper", "toy"):
        M = R.encode(A, dtype=np.float32, params=params)
        if params == "paper":
            assert M.value_counts[-1] == 0 and M.delta_counts[-1] == 0
        x = rng.standard_normal(A.shape[1]).astype(np.float32)
        y = K.spmv(M, x, config=CFG)
        assert_close(y, M.to_csr(), x, np.float32, f"kernel spmv ({params})")


def test_device_check_agrees_with_the_host_on_damaged_words():
    """A word changed anywhere (checksum rebuilt): the host's full decode and the device
    check accept or reject together, and the check names ``words``."""
    A, _ = ragged(np.float32, seed=4, n_rows=12, n_cols=60)
    M = R.encode(A, dtype=np.float32)
    words = M.words
    seen_bad = 0
    for at in sorted({0, 1, 5, words.size - 1}):
        for new in (0, 0xFFFFFFFF):
            w = words.copy()
            w[at] = new
            B = dataclasses.replace(M, words=w, checksum=None)
            try:
                B.validate(expensive=True, canonical=False)
                host = []
            except FormatError:
                host = ["words"]
            assert K.device_check(K._upload(B)) == host, (at, new)
            seen_bad += bool(host)
    assert seen_bad, "no damaged case was rejected"


def test_to_device_checks_large_matrices_on_the_device_not_with_the_host_decoder(monkeypatch):
    """check="auto" outside the simulator: the host check (the reference's Python decoder)
    only below HOST_CHECK_MAX_NNZ nonzeros, the device check kernel above, although
    ``values`` (the value table) is tiny: the generic ``values.size`` rule sent a 2^26-nonzero
    matrix to the host decoder for ~150 s per value type."""
    from spmvlab.kernels import _common as C
    A, _ = ragged(np.float32, seed=5, n_rows=12, n_cols=60)
    M = R.encode(A, dtype=np.float32)
    assert M.values.size < C.DEVICE_CHECK_MIN_ENTRIES and M.nnz > 8
    host, device = [], []
    monkeypatch.setattr(C, "SIMULATOR", False)
    monkeypatch.setattr(K, "_upload", lambda M: "uploaded")
    monkeypatch.setattr(K, "device_check", lambda D: device.append(D) or [])
    monkeypatch.setattr(R.CSRDtansMatrix, "_check_entries", lambda self, canonical: host.append(canonical))
    monkeypatch.setattr(K, "HOST_CHECK_MAX_NNZ", 8)
    assert K.to_device(M) == "uploaded"
    assert device == ["uploaded"] and host == []
    monkeypatch.setattr(K, "HOST_CHECK_MAX_NNZ", M.nnz + 1)
    device.clear()
    assert K.to_device(M) == "uploaded"
    assert device == [] and host == [False]
    assert K.to_device(M, check="device") == "uploaded" and device == ["uploaded"]


def test_config_fields_are_checked():
    """Each launch setting is refused out of range, naming its field."""
    from reference._common import OptionError
    for bad in (15, 256, True, 32.0):
        with pytest.raises(OptionError, match="CSRDtansConfig.max_registers"):
            K.CSRDtansConfig(max_registers=bad)
    for bad in (-1, 33, True):
        with pytest.raises(OptionError, match="CSRDtansConfig.blocks_per_sm"):
            K.CSRDtansConfig(blocks_per_sm=bad)
    with pytest.raises(OptionError, match="CSRDtansConfig.spmm_tile"):
        K.CSRDtansConfig(spmm_tile=3)
    assert K.CSRDtansConfig(max_registers=32).max_registers == 32


LAYOUTS = [("lanes_per_row", 2), ("lanes_per_row", 8), ("lanes_per_row", 32),
           ("rows_per_lane", 2), ("rows_per_lane", 4), ("rows_per_lane", 8)]


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("option, value", LAYOUTS)
def test_layouts_other_than_a_lane_per_row(option, value):
    """``lanes_per_row`` (a row's pieces on 2, 8 or 32 lanes) and ``rows_per_lane`` (2, 4 or 8
    rows one after another on a lane) on the ragged rows (0 to 61 nonzeros: pieces of 0, 1
    and many; empty rows inside and at the ends of a lane's group; a partial last group):
    SpMV and SpMM (3 columns in tiles of 2, and in tiles of one column; also into Y's
    transpose) against the exact product in garbage-filled outputs, the device check, fast encoder == reference; with
    escapes (float16, distinct values) and without (small integers, the toy parameters too)."""
    from spmvlab.encoders import csr_dtans as E
    A, rng = ragged(np.float16, seed=4, n_rows=37)
    M = R.encode(A, dtype=np.float16, **{option: value})
    per_row = value if option == "lanes_per_row" else 1
    assert getattr(M, option) == value and M.n_streams == -(-37 * per_row // (value // per_row))
    x = rng.standard_normal(A.shape[1]).astype(np.float16)
    X = rng.standard_normal((A.shape[1], 3)).astype(np.float16)
    check_parity(R, K, M, x, X, config=CFG)
    check_parity(R, K, M, x, X, config=K.CSRDtansConfig(threads_per_block=32, spmm_tile=1))
    Yt = garbage_like((3, 37), np.float16)                # the transpose, as SparseLinear asks
    assert K.spmm(M, X, out=Yt, config=CFG, out_t=True) is Yt
    assert_close(Yt.T, M.to_csr(), X, np.float16, f"{option} {value} out_t")
    assert K.device_check(K.to_device(M, check="host")) == []
    F = E.encode(A, dtype=np.float16, **{option: value})
    assert all(np.array_equal(a, b) for (_, a), (_, b) in zip(M.arrays(), F.arrays()))
    B, rng = ragged(np.float32, seed=5, n_rows=33, n_cols=70, distinct=False, contiguous=True)
    for params in ("paper", "toy"):
        N = R.encode(B, dtype=np.float32, params=params, **{option: value})
        x = rng.standard_normal(B.shape[1]).astype(np.float32)
        assert_close(K.spmv(N, x, config=CFG), N.to_csr(), x, np.float32, f"{option} {value} {params}")


def test_long_row_layout_rejects_a_bad_lane_count_and_corruption():
    """lanes_per_row outside 1..32 (powers of two) is refused by both encoders and by the
    matrix check; a matrix whose lanes_per_row is changed after encoding no longer decodes
    (its warps hold other streams) and the device check flags it."""
    from reference._common import OptionError
    from spmvlab.encoders import csr_dtans as E
    A, _ = ragged(np.float32, seed=6)
    for bad in (3, 0, 64, True, "32"):
        for enc in (R.encode, E.encode):
            with pytest.raises(OptionError, match="lanes_per_row"):
                enc(A, dtype=np.float32, lanes_per_row=bad)
    M = R.encode(A, dtype=np.float32, lanes_per_row=4)
    with pytest.raises(FormatError, match="lanes_per_row"):
        dataclasses.replace(M, lanes_per_row=5, checksum=None).validate()
    wrong = dataclasses.replace(M, lanes_per_row=2, checksum=None)
    with pytest.raises(FormatError):
        wrong.validate(expensive=True)
    D = K._upload(wrong)
    assert K.device_check(D) == ["words"]
    with pytest.raises(OptionError, match="rows_per_lane"):        # one layout at a time
        R.encode(A, dtype=np.float32, rows_per_lane=2, lanes_per_row=2)
    for bad in (3, 16, True):
        with pytest.raises(OptionError, match="rows_per_lane"):
            E.encode(A, dtype=np.float32, rows_per_lane=bad)


def banded_with_outliers(n_rows=70, n_cols=90, far=((3, 88), (40, 1))):
    """Rows i holding columns i - 2 .. i + 2 (clipped) with small integer values, plus the
    ``far`` entries: with ``first_delta="diagonal"`` every row's first delta is one of a few
    small numbers (-2, -1, 0) except the rows of the far entries and the first rows, so
    only a few segments of the warps meet an escaped delta."""
    rows, cols = [], []
    for i in range(n_rows):
        c = [j for j in range(i - 2, i + 3) if 0 <= j < n_cols]
        rows += [i] * len(c)
        cols += c
    for r, c in far:
        rows.append(r)
        cols.append(c)
    rng = np.random.default_rng(9)
    vals = rng.integers(1, 4, len(rows)).astype(float)
    return sp.csr_matrix((vals, (rows, cols)), shape=(n_rows, n_cols))


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("layout", [{}, {"lanes_per_row": 8}, {"rows_per_lane": 4}])
def test_diagonal_first_deltas(layout):
    """``first_delta="diagonal"`` (a unit's first delta from its row index): negative first
    deltas round-trip; the fast encoder writes the reference's bytes; SpMV, SpMM and SpMM
    into Y's transpose match the exact product in garbage-filled outputs, and the device
    check accepts the matrix, on (a) a banded matrix whose rows' first deltas need no
    escape except a few (so warps take both the segment code with escape events and the
    one without), (b) the same without the far entries' escapes and first rows (no escape
    slot at all) and (c) the ragged warp whose values and deltas escape everywhere."""
    from spmvlab.encoders import csr_dtans as E
    band = banded_with_outliers()
    cases = [(band, np.float32, "some escapes"),
             (banded_with_outliers(far=())[2:, :], np.float32, "first rows cut"),
             (ragged(np.float16, seed=11)[0], np.float16, "ragged")]
    rng = np.random.default_rng(12)
    for A, dt, what in cases:
        M = R.encode(A, dtype=dt, first_delta="diagonal", **layout)
        assert M.first_delta == "diagonal" and M.options()["first_delta"] == "diagonal"
        assert np.array_equal(M.to_csr().toarray(), sp.csr_matrix(A).toarray().astype(dt)), what
        F = E.encode(A, dtype=dt, first_delta="diagonal", **layout)
        assert all(np.array_equal(a, b) and a.dtype == b.dtype
                   for (_, a), (_, b) in zip(M.arrays(), F.arrays())), what
        if what == "some escapes":
            assert M.delta_counts[-1] > 0 and (M.deltas < 0).any(), "the case must escape"
        x = rng.standard_normal(A.shape[1]).astype(dt)
        X = rng.standard_normal((A.shape[1], 3)).astype(dt)
        check_parity(R, K, M, x, X, config=CFG)
        Yt = garbage_like((3, A.shape[0]), dt)
        assert K.spmm(M, X, out=Yt, config=CFG, out_t=True) is Yt
        assert_close(Yt.T, M.to_csr(), X, dt, f"diagonal {what} out_t")
        assert K.device_check(K.to_device(M, check="host")) == [], what
    # the paper's first deltas cost this matrix escapes on every row; the rows' own do not
    C = R.encode(band, dtype=np.float32, **layout)
    D = R.encode(band, dtype=np.float32, first_delta="diagonal", **layout)
    assert D.nbytes < C.nbytes


def test_first_delta_is_checked_and_switching_it_breaks_the_matrix():
    """A ``first_delta`` the encoders do not take is refused naming it; a matrix whose
    first_delta is changed after encoding fails its checks (negative stored deltas, or
    columns shifted out of range), on the host and on the device."""
    from reference._common import OptionError
    from spmvlab.encoders import csr_dtans as E
    A = banded_with_outliers()
    for bad in ("row", None, 1):
        for enc in (R.encode, E.encode):
            with pytest.raises(OptionError, match="first_delta"):
                enc(A, dtype=np.float32, first_delta=bad)
    D = R.encode(A, dtype=np.float32, first_delta="diagonal")
    with pytest.raises(FormatError, match="first_delta"):
        dataclasses.replace(D, first_delta="rows", checksum=None).validate()
    with pytest.raises(FormatError, match="deltas"):
        dataclasses.replace(D, first_delta="column", checksum=None).validate()
    C = R.encode(A, dtype=np.float32)
    moved = dataclasses.replace(C, first_delta="diagonal", checksum=None)
    with pytest.raises(FormatError, match="words"):
        moved.validate(expensive=True)
    assert K.device_check(K._upload(moved)) == ["words"]
