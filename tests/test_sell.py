"""The cuSPARSE SELL baseline: the NumPy layout (reference/sell.py) on the CPU; the ctypes
method (spmvlab.methods.cusparse_sell): its missing-library path and status errors on the
CPU, its product against the exact one on a real GPU only."""
import numpy as np
import pytest
import scipy.sparse as sp

from reference import csr_dtans as C
from reference import sell as S
from reference._common import FormatError, OptionError
from spmvlab import methods
from spmvlab.errors import BackendUnavailable
from spmvlab.methods import cusparse_sell as CS


def _mats():
    rng = np.random.default_rng(7)
    yield "empty", sp.csr_matrix((0, 5))
    yield "zero", sp.csr_matrix((40, 9))
    yield "one", sp.csr_matrix(np.array([[0.0, 2.5]]))
    yield "skewed", sp.random(77, 50, density=0.08, random_state=1, format="csr")
    A = sp.random(100, 64, density=0.05, random_state=2, format="lil")
    A[3, :] = rng.standard_normal(64)          # one long row widens its slice only
    yield "longrow", A.tocsr()
    yield "exact32", sp.random(64, 64, density=0.1, random_state=3, format="csr")


@pytest.mark.parametrize("name,A", list(_mats()), ids=[n for n, _ in _mats()])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_round_trip_bytes_and_product(name, A, dtype):
    M = S.encode(A, dtype).validate()
    back = S.to_csr(M)
    ref = A.astype(dtype).tocsr()
    ref.eliminate_zeros()
    assert back.shape == ref.shape and (back != ref).nnz == 0
    assert M.nbytes == C.cusparse_bytes(A, dtype)["sell"]
    assert M.slice_offsets.dtype == M.col_ind.dtype == np.int32
    assert M.n_entries == int(M.slice_offsets[-1]) == M.nnz + M.n_padding
    x = np.random.default_rng(0).standard_normal(A.shape[1]).astype(dtype)
    np.testing.assert_allclose(S.spmv(M, x), ref.astype(np.float64) @ x.astype(np.float64),
                               rtol=1e-12, atol=1e-12)


def test_layout_by_hand():
    # rows 0..2 in one slice of 4: widths = longest row = 3; column-major inside the slice
    A = np.array([[1.0, 0, 2, 0], [0, 0, 0, 0], [3, 4, 5, 0]])
    M = S.encode(A, np.float64, slice_size=4)
    assert M.slice_offsets.tolist() == [0, 12]
    # slot 0 of rows 0..3, then slot 1, then slot 2; row 3 is the last slice's padding row
    assert M.col_ind.tolist() == [0, -1, 0, -1, 2, -1, 1, -1, -1, -1, 2, -1]
    assert M.values.tolist() == [1, 0, 3, 0, 2, 0, 4, 0, 0, 0, 5, 0]
    assert M.n_padding == 12 - 5 and M.widths.tolist() == [3]


def test_padding_counts_per_slice():
    lengths = [1] * 32 + [5] + [0] * 31 + [2, 2, 2]    # slice widths 1, 5, 2 (last slice of 3 rows)
    rows = np.repeat(np.arange(len(lengths)), lengths)
    cols = np.concatenate([np.arange(n) for n in lengths])
    A = sp.csr_matrix((np.ones(rows.size), (rows, cols)), shape=(len(lengths), 8))
    M = S.encode(A, np.float32)
    assert M.widths.tolist() == [1, 5, 2]
    assert M.n_entries == 32 * (1 + 5 + 2)
    assert M.n_padding == 32 * 8 - A.nnz
    assert int((M.col_ind == -1).sum()) == M.n_padding


def test_validate_catches_corruption():
    M = S.encode(sp.random(40, 30, density=0.2, random_state=4, format="csr"), np.float64)
    import dataclasses
    bad_col = M.col_ind.copy()
    bad_col[np.flatnonzero(bad_col == -1)[0]] = 99
    with pytest.raises(FormatError, match="col_ind"):
        dataclasses.replace(M, col_ind=bad_col).validate()
    with pytest.raises(FormatError, match="nnz"):
        dataclasses.replace(M, nnz=M.nnz + 1).validate()
    with pytest.raises(FormatError, match="slice_offsets"):
        dataclasses.replace(M, slice_offsets=M.slice_offsets[:-1]).validate()
    with pytest.raises(FormatError, match="slice_size"):
        S.encode(np.eye(3), np.float64, slice_size=0)


# ---- the ctypes method: CPU-testable parts ------------------------------------------------------

def _problem(dtype=np.float32, k=None):
    return methods.Problem.make(sp.random(40, 30, density=0.2, random_state=0, format="csr"), dtype, k=k)


def test_registered_and_spmv_only():
    assert "cusparse_sell" in methods.names()
    with pytest.raises(OptionError, match="spmv"):
        methods.build("cusparse_sell", _problem(k=4))


def test_missing_library_is_backend_unavailable(monkeypatch):
    monkeypatch.setattr(CS, "_CANDIDATES", lambda: [])
    monkeypatch.setattr(CS, "_LIB", None)
    with pytest.raises(BackendUnavailable, match="libcusparse"):
        CS.load_cusparse()


def test_missing_symbol_is_backend_unavailable(monkeypatch):
    class NoSell:                      # a libcusparse older than 12.1: no sliced ELL
        def __getattr__(self, name):
            raise AttributeError(name)
    monkeypatch.setattr(CS, "_LIB", None)
    monkeypatch.setattr(CS, "_CANDIDATES", lambda: ["fake"])
    monkeypatch.setattr(CS, "_open", lambda path: NoSell())
    with pytest.raises(BackendUnavailable, match="cusparseCreateSlicedEll"):
        CS.load_cusparse()


def test_measure_records_the_missing_library(monkeypatch):
    def missing(*a, **k):
        raise BackendUnavailable("libcusparse: not found")
    monkeypatch.setattr(CS, "load_cusparse", missing)
    monkeypatch.setattr(CS, "_cupy", lambda what: None)
    rows = methods.measure_problem(_problem(), ["cusparse_sell"])
    assert rows[0]["method"] == "cusparse_sell" and "BackendUnavailable" in rows[0]["error"]


def test_status_error_names_call_and_status():
    err = CS.CusparseError("cusparseSpMV", 10)
    assert "cusparseSpMV" in str(err) and "CUSPARSE_STATUS_NOT_SUPPORTED" in str(err)
    with pytest.raises(CS.CusparseError, match="cusparseCreate.*CUSPARSE_STATUS_NOT_INITIALIZED"):
        CS._check("cusparseCreate", 1)
    CS._check("cusparseCreate", 0)
    assert "status 99" in str(CS.CusparseError("cusparseSpMV", 99))


def test_value_types():
    assert CS.value_types(np.float32) == (CS.CUDA_R_32F, CS.CUDA_R_32F)
    assert CS.value_types(np.float64) == (CS.CUDA_R_64F, CS.CUDA_R_64F)
    assert CS.value_types(np.float16) == (CS.CUDA_R_16F, CS.CUDA_R_32F)


# ---- on a real GPU -----------------------------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16])
def test_cusparse_sell_matches_exact_product(dtype):
    from spmvlab import backends
    if not backends.cupy_available():
        pytest.skip("needs CuPy on a real GPU")
    rng = np.random.default_rng(5)                   # values in [0.5, 1.5): exact range of float16
    A = sp.random(1000, 700, density=0.01, random_state=5, format="lil",
                  data_rvs=lambda k: rng.uniform(0.5, 1.5, k))
    A[10, :] = 1.0                                   # one wide slice
    p = methods.Problem.make(A.tocsr(), dtype)
    try:
        m = methods.build("cusparse_sell", p)
    except CS.CusparseError as exc:
        if dtype == np.float16 and exc.status == 10:     # CUSPARSE_STATUS_NOT_SUPPORTED
            pytest.skip(f"this cuSPARSE has no float16 SELL SpMV: {exc}")
        raise
    chk = m.check()
    assert chk.passed, chk
    assert m.format_bytes == C.cusparse_bytes(p.A, dtype)["sell"]
    t = m.time(reps=3, warmup=1)
    assert t.median_us > 0
    m.close()


# ---- the method's call sequence against a fake CuPy and a fake libcusparse (CPU) ----------------

class _Dev:
    """A 'device' array: a NumPy array with a fake device pointer."""
    registry: dict = {}

    def __init__(self, a):
        self.a = np.array(a)
        self.nbytes = self.a.nbytes
        ptr = 0x1000 * (len(_Dev.registry) + 1)
        _Dev.registry[ptr] = self
        self.data = type("D", (), {"ptr": ptr})()

    def __getitem__(self, key):
        return _Dev(self.a[key])


class _FakeCupy:
    class cuda:
        @staticmethod
        def get_current_stream():
            return type("S", (), {"ptr": 0})()
    asarray = staticmethod(lambda a: _Dev(a))
    zeros = staticmethod(lambda n, dtype: _Dev(np.zeros(n, dtype)))
    empty = staticmethod(lambda n, dtype: _Dev(np.zeros(n, dtype)))
    full = staticmethod(lambda n, v, dtype: _Dev(np.full(n, v, dtype)))
    asnumpy = staticmethod(lambda d: d.a.copy())


class _FakeLib:
    """Checks every call's argument count against the ctypes signatures and runs a SELL SpMV
    from the descriptor arguments it was given, so argument order mistakes fail here."""

    def __init__(self):
        self.calls, self.objs = [], {}

    def _new(self, out, obj):
        key = 0x9000 + len(self.objs)
        self.objs[key] = obj
        out._obj.value = key

    def __getattr__(self, name):
        import ctypes
        if name not in CS._SIGNATURES:
            raise AttributeError(name)

        def fn(*args):
            assert len(args) == len(CS._SIGNATURES[name]), name
            self.calls.append(name)
            val = lambda v: v.value if isinstance(v, ctypes.c_void_p) else v  # noqa: E731
            if name == "cusparseCreate":
                self._new(args[0], "handle")
            elif name == "cusparseCreateSlicedEll":
                rows, cols, nnz, size, slice_size, off, col, v = (val(a) for a in args[1:9])
                assert args[9:] == (CS.CUSPARSE_INDEX_32I, CS.CUSPARSE_INDEX_32I,
                                    CS.CUSPARSE_INDEX_BASE_ZERO, args[12])
                self._new(args[0], ("sell", rows, cols, nnz, size, slice_size, off, col, v, args[12]))
            elif name == "cusparseCreateDnVec":
                self._new(args[0], ("vec", args[1], val(args[2]), args[3]))
            elif name == "cusparseSpMV_bufferSize":
                args[-1]._obj.value = 64
            elif name == "cusparseSpMV":
                A, x, y = (self.objs[val(a)] for a in (args[3], args[4], args[6]))
                assert args[8] == CS.CUSPARSE_SPMV_SELL_ALG1 and args[0] is not None
                _, rows, cols, nnz, size, ss, off, col, v, vt = A
                M = S.SellMatrix(_Dev.registry[off].a, _Dev.registry[col].a, _Dev.registry[v].a,
                                 (rows, cols), nnz, ss)
                assert M.n_entries == size and A[9] == x[3] == y[3]
                yd = _Dev.registry[y[2]]
                yd.a[:rows] = S.spmv(M, _Dev.registry[x[2]].a)
            return 0
        return fn


def test_call_sequence_against_a_fake_cusparse(monkeypatch):
    lib = _FakeLib()
    monkeypatch.setattr(CS, "_cupy", lambda what: _FakeCupy)
    monkeypatch.setattr(CS, "load_cusparse", lambda: lib)
    A = sp.random(70, 50, density=0.1, random_state=9, format="csr")
    for dtype in (np.float64, np.float32):
        p = methods.Problem.make(A, dtype)
        m = methods.build("cusparse_sell", p)
        assert m.format_bytes == C.cusparse_bytes(p.A, dtype)["sell"]
        assert m.check().passed
        m.close()
    assert lib.calls[:7] == ["cusparseCreate", "cusparseSetStream", "cusparseCreateSlicedEll",
                             "cusparseCreateDnVec", "cusparseCreateDnVec", "cusparseSpMV_bufferSize",
                             "cusparseSpMV"]
    assert lib.calls[7:11] == ["cusparseDestroyDnVec", "cusparseDestroyDnVec", "cusparseDestroySpMat",
                               "cusparseDestroy"]
