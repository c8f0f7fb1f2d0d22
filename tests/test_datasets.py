"""spmvlab.datasets: synthetic generators (exact counts, seeding), shapes, real data loaders.

Real-data tests read the shared data directory and skip when it is absent; the download
path is exercised with a fake opener only (no network).
"""
from __future__ import annotations

import gzip
import io
import subprocess
import sys
import tarfile
import urllib.error

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp

from spmvlab import datasets as ds
from spmvlab.datasets import _paths, _suitesparse, synthetic
from spmvlab.errors import (
    DatasetError, LossyConversionError, LossyConversionWarning, OptionError, ShapeError,
)


def _assert_canonical(A: sp.csr_matrix):
    assert isinstance(A, sp.csr_matrix)
    A.check_format(full_check=True)
    rows = np.repeat(np.arange(A.shape[0]), np.diff(A.indptr))
    same = rows[1:] == rows[:-1]
    assert np.all(np.diff(A.indices.astype(np.int64))[same] > 0), "indices not strictly sorted"
    assert np.all(A.data != 0), "explicit zero stored"


# --------------------------------------------------------------------------------------
# uniform
# --------------------------------------------------------------------------------------

UNIFORM_CASES = [
    ((1, 1), 0.0), ((1, 1), 1.0), ((1, 100), 0.3), ((100, 1), 0.5), ((1, 5000), 0.9),
    ((5000, 1), 0.25), ((37, 53), 0.0), ((37, 53), 1.0), ((37, 53), 0.9), ((64, 64), 0.5),
    ((200, 300), 0.99), ((1000, 1000), 0.7), ((129, 4097), 0.5), ((500, 500), 0.995),
    ((300, 700), 0.05), ((0, 5), 0.5), ((5, 0), 0.5), ((0, 0), 0.0),
]


@pytest.mark.parametrize("shape,sparsity", UNIFORM_CASES)
def test_uniform_exact_nnz(shape, sparsity):
    A = ds.uniform(shape, sparsity, seed=7)
    assert A.shape == shape
    assert A.nnz == round((1 - sparsity) * shape[0] * shape[1])
    assert A.dtype == np.float32
    assert A.indices.dtype == np.int32 and A.indptr.dtype == np.int32
    _assert_canonical(A)


def test_uniform_many_blocks(monkeypatch):
    """Force the block path with many small blocks (and a ragged last block)."""
    monkeypatch.setattr(synthetic, "_BLOCK", 1000)
    for shape, s in [((333, 97), 0.4), ((1000, 64), 0.9), ((57, 2000), 0.0), ((90, 90), 0.95)]:
        A = ds.uniform(shape, s, seed=3)
        assert A.nnz == round((1 - s) * shape[0] * shape[1])
        _assert_canonical(A)


@pytest.mark.parametrize("n,k", [(1, 0), (1, 1), (10, 3), (1000, 0), (1000, 1000), (1000, 999),
                                 (1000, 1), (65537, 32768), (200_000, 3), (200_000, 199_990)])
def test_exact_mask_count(n, k):
    m = synthetic._exact_mask(np.random.default_rng(0), n, k)
    assert m.shape == (n,) and m.dtype == bool and int(m.sum()) == k


def test_uniform_positions_look_uniform():
    """Every position is set with probability 1 - sparsity (loose 5-sigma bound)."""
    freq = np.zeros((8, 8))
    n = 400
    for seed in range(n):
        freq += ds.uniform((8, 8), 0.75, seed=seed).toarray() != 0
    p = freq / n
    assert np.all(np.abs(p - 0.25) < 5 * np.sqrt(0.25 * 0.75 / n))


def test_uniform_seeds():
    a = ds.uniform((300, 400), 0.8, seed=1)
    b = ds.uniform((300, 400), 0.8, seed=1)
    c = ds.uniform((300, 400), 0.8, seed=2)
    assert (a != b).nnz == 0 and np.array_equal(a.indices, b.indices)
    assert (a != c).nnz > 0
    assert not np.array_equal(a.indices, c.indices)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_uniform_dtypes(dtype):
    A = ds.uniform((50, 60), 0.5, dtype=dtype, seed=0)
    if dtype == np.float16:   # scipy has no float16: float32 holding float16 values
        assert A.dtype == np.float32
        assert np.array_equal(A.data.astype(np.float16).astype(np.float32), A.data)
    else:
        assert A.dtype == dtype
    assert A.nnz == 1500 and np.all(A.data != 0)
    assert 0.7 < np.std(A.data) < 1.3


@pytest.mark.parametrize("bad", [-0.1, 1.5, float("nan"), "x"])
def test_uniform_bad_sparsity(bad):
    with pytest.raises(OptionError, match="sparsity: expected"):
        ds.uniform((4, 4), bad)


def test_uniform_bad_shape():
    with pytest.raises(ShapeError, match="shape"):
        ds.uniform((4, -1), 0.5)
    with pytest.raises(ShapeError):
        ds.uniform((4,), 0.5)


# --------------------------------------------------------------------------------------
# gaussian_weights / prune
# --------------------------------------------------------------------------------------


def test_gaussian_weights():
    W = ds.gaussian_weights((64, 96), seed=5)
    assert W.shape == (64, 96) and W.dtype == np.float32 and np.all(W != 0)
    assert np.array_equal(W, ds.gaussian_weights((64, 96), seed=5))
    assert not np.array_equal(W, ds.gaussian_weights((64, 96), seed=6))
    assert ds.gaussian_weights((3, 4), dtype=np.float16).dtype == np.float16
    tiny = ds.gaussian_weights((50, 50), dtype=np.float16, std=1e-6)   # would underflow
    assert np.all(tiny != 0)


@pytest.mark.parametrize("method", ["magnitude", "random"])
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("sparsity", [0.0, 0.5, 0.7, 0.9, 1.0])
def test_prune_per_row_exact(method, dtype, sparsity):
    W = ds.gaussian_weights((40, 130), dtype=dtype, seed=1)
    P = ds.prune(W, sparsity, method=method, seed=2)
    assert P.dtype == W.dtype and P.shape == W.shape
    k = round(sparsity * 130)
    assert np.all((P == 0).sum(axis=1) == k)
    kept = P != 0
    assert np.array_equal(P[kept], W[kept])     # survivors unchanged
    assert np.all(W != 0)                        # input untouched


@pytest.mark.parametrize("method", ["magnitude", "random"])
def test_prune_global_exact(method):
    W = ds.gaussian_weights((70, 90), seed=3)
    P = ds.prune(W, 0.83, method=method, per_row=False, seed=4)
    assert int((P == 0).sum()) == round(0.83 * 70 * 90)


def test_prune_magnitude_keeps_largest():
    W = ds.gaussian_weights((30, 50), seed=9)
    P = ds.prune(W, 0.6)
    for r in range(30):
        assert np.abs(W[r][P[r] != 0]).min() >= np.abs(W[r][P[r] == 0]).max()
    G = ds.prune(W, 0.6, per_row=False)
    assert np.abs(W[G != 0]).min() >= np.abs(W[G == 0]).max()


def test_prune_ties_deterministic():
    W = np.ones((3, 10), dtype=np.float32)
    W[:, 7] = -1.0
    P = ds.prune(W, 0.4)                        # all |w| tie: lowest columns go first
    assert np.array_equal(np.flatnonzero(P[0] == 0), [0, 1, 2, 3])
    G = ds.prune(W, 0.1, per_row=False)         # 3 entries: earliest row-major positions
    assert np.array_equal(np.flatnonzero(G.ravel() == 0), [0, 1, 2])
    N = W.copy()
    N[0, 0] = np.nan                            # NaN counts as the largest magnitude
    P = ds.prune(N, 0.9)
    assert np.isnan(P[0, 0]) and int((P[0] == 0).sum()) == 9


def test_prune_random_seeded():
    W = ds.gaussian_weights((20, 40), seed=0)
    a, b = ds.prune(W, 0.5, "random", seed=1), ds.prune(W, 0.5, "random", seed=1)
    c = ds.prune(W, 0.5, "random", seed=2)
    assert np.array_equal(a, b) and not np.array_equal(a, c)
    # random pruning is not magnitude pruning
    assert not np.array_equal(a, ds.prune(W, 0.5, "magnitude"))


def test_prune_errors():
    with pytest.raises(OptionError, match="method"):
        ds.prune(np.ones((2, 2)), 0.5, method="l1")
    with pytest.raises(OptionError, match="sparsity"):
        ds.prune(np.ones((2, 2)), 2.0)
    with pytest.raises(ShapeError, match="W: expected a 2-D"):
        ds.prune(np.ones(4), 0.5)


# --------------------------------------------------------------------------------------
# power_law
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("n_rows,n_cols,avg,alpha", [
    (2000, 5000, 8.0, 2.0), (3000, 3000, 4.5, 1.5), (300, 64, 40.0, 1.5), (50, 10, 10.0, 2.5),
    (1, 1, 1.0, 2.0), (10, 10, 0.0, 2.0), (400, 1000, 900.0, 3.0),
])
def test_power_law(n_rows, n_cols, avg, alpha):
    A = ds.power_law(n_rows, n_cols, avg, alpha=alpha, seed=1)
    assert A.shape == (n_rows, n_cols)
    assert A.nnz == min(round(avg * n_rows), n_rows * n_cols)
    lengths = np.diff(A.indptr)
    assert lengths.max(initial=0) <= n_cols
    _assert_canonical(A)


def test_power_law_is_skewed_and_seeded():
    A = ds.power_law(5000, 20000, 10.0, alpha=2.0, seed=4)
    lengths = np.diff(A.indptr)
    assert lengths.max() > 20 * lengths.mean()          # a heavy tail
    assert np.median(lengths) < lengths.mean()
    B = ds.power_law(5000, 20000, 10.0, alpha=2.0, seed=4)
    assert np.array_equal(A.indices, B.indices) and np.array_equal(A.data, B.data)
    C = ds.power_law(5000, 20000, 10.0, alpha=2.0, seed=5)
    assert not np.array_equal(A.indptr, C.indptr)


def test_power_law_errors():
    with pytest.raises(OptionError, match="alpha"):
        ds.power_law(10, 10, 2.0, alpha=1.0)
    with pytest.raises(OptionError, match="avg_nnz_per_row"):
        ds.power_law(10, 10, -1.0)


# --------------------------------------------------------------------------------------
# shapes
# --------------------------------------------------------------------------------------


def test_llm_shapes():
    assert len(ds.LLM_SHAPES) == 31
    assert isinstance(ds.LLM_SHAPES, tuple) and all(isinstance(s, tuple) for s in ds.LLM_SHAPES)
    assert ds.LLM_SHAPES[0] == (4096, 4096) and ds.LLM_SHAPES[-1] == (12288, 49152)
    assert (8192, 29568) in ds.LLM_SHAPES and (21504, 7168) in ds.LLM_SHAPES
    assert ds.LLAMA2_7B_LAYERS["n_blocks"] == 32
    layers = ds.LLAMA2_7B_LAYERS["layers"]
    assert [layers[k] for k in ("q", "k", "v", "o")] == [(4096, 4096)] * 4
    assert layers["gate"] == layers["up"] == (11008, 4096) and layers["down"] == (4096, 11008)


# --------------------------------------------------------------------------------------
# data directory and real data
# --------------------------------------------------------------------------------------


def test_data_dir_env(monkeypatch, tmp_path):
    monkeypatch.setenv("SPMVLAB_DATA", str(tmp_path))
    assert ds.data_dir() == tmp_path
    assert ds.suitesparse_names() == [] or all("/" in n for n in ds.suitesparse_names())
    assert ds.weights_names() == []
    monkeypatch.setenv("SPMVLAB_DATA", str(tmp_path / "missing"))
    with pytest.raises(DatasetError, match="SPMVLAB_DATA"):
        ds.data_dir()


def test_data_dir_absent(monkeypatch, tmp_path):
    monkeypatch.delenv("SPMVLAB_DATA", raising=False)
    monkeypatch.setattr(_paths, "_REPO_ROOT", tmp_path / "repo")
    with pytest.raises(DatasetError, match="Fix: set SPMVLAB_DATA"):
        ds.data_dir()


@pytest.fixture(scope="module")
def data():
    try:
        d = ds.data_dir()
    except DatasetError:
        pytest.skip("data directory absent (set SPMVLAB_DATA)")
    if not (d / "suitesparse").is_dir():
        pytest.skip("no suitesparse/ in the data directory")
    return d


#: the weight matrices of the shared data directory (../shared/data/README.md)
MPNET = ["mpnet_L00_attn_q", "mpnet_L00_ffn_down", "mpnet_L00_ffn_up", "mpnet_L11_attn_q"]


@pytest.fixture(scope="module")
def weights_data(data):
    """The data directory with every weight matrix of the shared one; skipped where a
    partial copy (a GPU host's) lacks some, found by file so a broken lister still fails."""
    missing = [n for n in MPNET if not (data / "weights" / f"{n}.npy").is_file()]
    if missing:
        pytest.skip(f"weights {missing} not in the data directory")
    return data


@pytest.fixture
def no_network(monkeypatch, tmp_path):
    """Cache in tmp_path and an opener that fails like an offline machine."""
    calls = []

    def offline(url, timeout=None):
        calls.append(url)
        raise urllib.error.URLError("[Errno -3] Temporary failure in name resolution")

    monkeypatch.setenv("SPMVLAB_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(_suitesparse, "_urlopen", offline)
    return calls


def test_suitesparse_names(data):
    names = ds.suitesparse_names()
    assert "HB/bcsstk13" in names and "Gset/G51" in names
    assert names == sorted(names) and len(names) == len(set(names))


def test_suitesparse_g51(data, no_network):
    A = ds.suitesparse("Gset/G51")
    assert A.shape == (1000, 1000) and A.nnz == 11818 and A.dtype == np.float64
    assert (A != A.T).nnz == 0                    # symmetric file expanded
    assert np.all(A.data == 1.0)                  # pattern matrix
    _assert_canonical(A)
    assert not no_network                          # found locally: no download


def test_suitesparse_bcsstk13_name_forms(data, no_network):
    A = ds.suitesparse("HB/bcsstk13", dtype=np.float32)
    assert A.shape == (2003, 2003) and A.nnz == 83883 and A.dtype == np.float32
    assert (A != A.T).nnz == 0
    for alias in ("HB__bcsstk13", "HB__bcsstk13.mtx.gz", "HB__bcsstk13.mtx", "bcsstk13"):
        B = ds.suitesparse(alias, dtype=np.float32)
        assert (A != B).nnz == 0
    assert not no_network


def test_suitesparse_integer_matrix(data):
    A = ds.suitesparse("Arenas/PGPgiantcompo")
    assert A.nnz == 48632 and A.dtype == np.float64


def test_download_offline_raises(no_network, tmp_path):
    with pytest.raises(DatasetError, match="network error") as ei:
        ds.suitesparse("NoGroup/no_matrix")
    assert "Fix:" in str(ei.value)
    assert no_network == [f"{ds.SUITESPARSE_URL}/NoGroup/no_matrix.tar.gz"]
    assert not list((tmp_path / "cache" / "suitesparse").glob("*"))   # nothing left behind


def test_download_404(monkeypatch, tmp_path):
    def not_found(url, timeout=None):
        raise urllib.error.HTTPError(url, 404, "Not Found", {}, None)

    monkeypatch.setenv("SPMVLAB_CACHE", str(tmp_path))
    monkeypatch.setattr(_suitesparse, "_urlopen", not_found)
    with pytest.raises(DatasetError, match="no such matrix"):
        ds.download_suitesparse("HB/nothing")


def test_download_bad_name(no_network):
    with pytest.raises(DatasetError, match="Group/Name"):
        ds.download_suitesparse("not a name")
    assert not no_network


class _FakeResponse(io.BytesIO):
    def __init__(self, payload: bytes):
        super().__init__(payload)
        self.headers = {"Content-Length": str(len(payload))}


def test_download_fake_tarball(monkeypatch, tmp_path, capsys):
    """The whole download path against an in-memory tarball: URL override, extract, cache."""
    M = sp.random(30, 40, density=0.1, random_state=0, format="coo")
    mtx = io.BytesIO()
    scipy.io.mmwrite(mtx, M)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        info = tarfile.TarInfo("tiny/tiny.mtx")
        info.size = len(mtx.getvalue())
        tar.addfile(info, io.BytesIO(mtx.getvalue()))
    calls = []

    def fake(url, timeout=None):
        calls.append(url)
        return _FakeResponse(buf.getvalue())

    monkeypatch.setenv("SPMVLAB_CACHE", str(tmp_path))
    monkeypatch.setenv("SPMVLAB_SUITESPARSE_URL", "http://mirror.invalid/MM/")
    monkeypatch.setattr(_suitesparse, "_urlopen", fake)
    A = ds.suitesparse("Fake/tiny")
    assert calls == ["http://mirror.invalid/MM/Fake/tiny.tar.gz"]
    assert A.shape == (30, 40) and A.nnz == M.nnz
    assert "downloading Fake/tiny" in capsys.readouterr().err
    assert (tmp_path / "suitesparse" / "Fake__tiny.mtx").is_file()
    assert not list((tmp_path / "suitesparse").glob("*.part"))
    assert "Fake/tiny" in ds.suitesparse_names()
    ds.suitesparse("Fake/tiny")                    # cached: no second download
    assert len(calls) == 1


def test_weights(weights_data):
    names = ds.weights_names()
    assert names == MPNET
    shapes = {"mpnet_L00_attn_q": (768, 768), "mpnet_L00_ffn_up": (3072, 768),
              "mpnet_L00_ffn_down": (768, 3072), "mpnet_L11_attn_q": (768, 768)}
    for name, shape in shapes.items():
        W = ds.weights(name)
        assert W.shape == shape and W.dtype == np.float32 and W.flags.c_contiguous
    assert ds.weights("mpnet_L00_attn_q", dtype=np.float16).dtype == np.float16
    with pytest.raises(DatasetError, match="weights name"):
        ds.weights("gpt5_layer0")


# --------------------------------------------------------------------------------------
# load_matrix
# --------------------------------------------------------------------------------------


def test_load_matrix_files(tmp_path):
    D = ds.prune(ds.gaussian_weights((20, 30), seed=0), 0.5)
    np.save(tmp_path / "w.npy", D)
    A = ds.load_matrix(tmp_path / "w.npy")
    assert A.shape == (20, 30) and A.nnz == 300 and A.dtype == np.float32
    assert np.array_equal(A.toarray(), D)
    assert ds.load_matrix(str(tmp_path / "w.npy"), dtype=np.float64).dtype == np.float64

    M = sp.random(15, 25, density=0.2, random_state=1, format="coo")
    scipy.io.mmwrite(tmp_path / "m.mtx", M)
    with open(tmp_path / "m.mtx", "rb") as f, gzip.open(tmp_path / "g.mtx.gz", "wb") as g:
        g.write(f.read())
    for name in ("m.mtx", "g.mtx.gz"):
        B = ds.load_matrix(tmp_path / name)
        assert B.shape == (15, 25) and B.nnz == M.nnz
        assert np.allclose(B.toarray(), M.toarray())


def test_load_matrix_conversion_that_loses_values(tmp_path):
    """Asking for a dtype the values do not fit raises, unless ``lossy=True`` (one warning)."""
    np.save(tmp_path / "m.npy", np.array([[1e5, 0.0], [0.5, 1e-9]]))
    scipy.io.mmwrite(tmp_path / "m.mtx", sp.coo_matrix(np.array([[1e5, 0.0], [0.5, 1e-9]])))
    for name in ("m.npy", "m.mtx"):
        with pytest.raises(LossyConversionError, match="row 0, column 0, 100000.0 -> inf"):
            ds.load_matrix(tmp_path / name, dtype=np.float16)
        with pytest.warns(LossyConversionWarning, match="1 underflowing to zero"):
            A = ds.load_matrix(tmp_path / name, dtype=np.float16, lossy=True)
        assert A.nnz == 2 and np.isinf(A[0, 0])
        assert ds.load_matrix(tmp_path / name).nnz == 3          # float64: nothing lost


def test_load_matrix_errors(tmp_path, no_network):
    with pytest.raises(DatasetError, match="an existing file"):
        ds.load_matrix(tmp_path / "nope.mtx")
    (tmp_path / "x.txt").write_text("hello")
    with pytest.raises(DatasetError, match=r"\.npy"):
        ds.load_matrix(tmp_path / "x.txt")
    np.save(tmp_path / "v.npy", np.ones(5))
    with pytest.raises(ShapeError, match="2-D"):
        ds.load_matrix(tmp_path / "v.npy")
    with pytest.raises(DatasetError, match="weights") as ei:
        ds.load_matrix("definitely_not_a_matrix")
    assert "MATRIX: expected" in str(ei.value)
    assert not no_network


def test_load_matrix_names(weights_data):
    data = weights_data
    A = ds.load_matrix("HB/bcsstk13")
    assert A.nnz == 83883
    W = ds.load_matrix("mpnet_L00_ffn_down")
    assert W.shape == (768, 3072) and W.dtype == np.float32
    B = ds.load_matrix(data / "suitesparse" / "Gset__G51.mtx.gz")
    assert B.nnz == 11818


def test_load_dense(tmp_path, weights_data):
    data = weights_data
    D = ds.gaussian_weights((6, 9), seed=2)
    np.save(tmp_path / "d.npy", D)
    assert np.array_equal(ds.load_dense(tmp_path / "d.npy"), D)
    np.save(tmp_path / "i.npy", np.arange(6).reshape(2, 3))
    assert ds.load_dense(tmp_path / "i.npy").dtype == np.float64
    W = ds.load_dense("mpnet_L00_attn_q")
    assert W.shape == (768, 768) and W.dtype == np.float32
    for sparse in ("HB/bcsstk13", data / "suitesparse" / "Gset__G51.mtx.gz"):
        with pytest.raises(DatasetError, match="a sparse Matrix Market matrix"):
            ds.load_dense(sparse)


def test_load_matrix_weights_checks_the_conversion(weights_data):
    """A weights name is converted once, by canonical_csr: a value that underflows in
    float16 raises (it was flushed silently by an early cast before)."""
    W = ds.weights("mpnet_L00_attn_q")
    assert np.abs(W).min() < 6e-8                      # underflows to zero in float16
    with pytest.raises(LossyConversionError, match="underflowing to zero"):
        ds.load_matrix("mpnet_L00_attn_q", dtype=np.float16)
    with pytest.warns(LossyConversionWarning):
        A = ds.load_matrix("mpnet_L00_attn_q", dtype=np.float16, lossy=True)
    assert A.nnz < W.size


def test_read_mtx_refuses_a_cut_last_line(tmp_path):
    """scipy reads a number cut short as another value (and crashes on one cut after its
    exponent's 'E'): a file whose last line has no newline is refused as truncated."""
    scipy.io.mmwrite(tmp_path / "m.mtx", sp.coo_matrix(np.array([[0.0, 0.123456789], [2.5, 0]])))
    data = (tmp_path / "m.mtx").read_bytes()
    assert data.endswith(b"\n")
    (tmp_path / "cut.mtx").write_bytes(data[:-4])
    with gzip.open(tmp_path / "cut.mtx.gz", "wb") as g:
        g.write(data[:-4])
    for name in ("cut.mtx", "cut.mtx.gz"):
        with pytest.raises(DatasetError, match="last line is cut") as ei:
            ds.load_matrix(tmp_path / name)
        assert "delete" not in str(ei.value)
    (tmp_path / "cut.mtx.gz").write_bytes(gzip.compress(data)[:-9])    # a cut gzip stream
    with pytest.raises(DatasetError, match="unreadable"):
        ds.load_matrix(tmp_path / "cut.mtx.gz")
    assert ds.load_matrix(tmp_path / "m.mtx").nnz == 2


def test_import_is_cheap():
    code = ("import sys, spmvlab.datasets; "
            "heavy = [m for m in ('numba', 'scipy.io', 'spmvlab._cuda') if m in sys.modules]; "
            "assert not heavy, heavy")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=_paths._REPO_ROOT)
