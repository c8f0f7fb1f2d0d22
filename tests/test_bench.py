"""Timing harness, baselines and experiment scaffolding: the parts that run without a GPU.

(The timings themselves need a GPU; here: metadata, progress bar, results round trip,
plotting from a fabricated results dict, the simulator refusing to time, missing vendor
libraries naming their pip extra, and the numba dense GEMV kernel in the simulator.)
"""
import importlib.util
import io
import json
import os
import sys

import numpy as np
import pytest
import scipy.sparse as sp

import reference.csr as R
from spmvlab import baselines as B
from spmvlab import bench
from spmvlab import experiment as X
from spmvlab._cuda import SIMULATOR
from spmvlab.errors import BackendUnavailable
from spmvlab.kernels import dense as KD

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _load_experiment(name):
    path = os.path.join(ROOT, "experiments", f"{name}.py")
    spec = importlib.util.spec_from_file_location(f"_exp_{name}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# ---- bench -------------------------------------------------------------------------------------

def test_timing_stats():
    t = bench.Timing.from_samples([5.0, 1.0, 3.0, 2.0, 4.0], cold=True)
    assert t.median_us == 3.0 and t.mean_us == 3.0 and t.reps == 5 and t.cold
    assert t.p10_us == pytest.approx(1.4) and t.p90_us == pytest.approx(4.6)
    assert t.samples == (5.0, 1.0, 3.0, 2.0, 4.0)
    assert "samples" not in t.as_dict() and t.as_dict(samples=True)["samples"] == [5.0, 1.0, 3.0, 2.0, 4.0]


def test_effective_bandwidth():
    assert bench.effective_bandwidth(3e6, 1.0) == pytest.approx(3.0)  # 3 MB in 1 us = 3 TB/s
    assert np.isnan(bench.effective_bandwidth(1, 0))


def test_metadata_keys(monkeypatch):
    monkeypatch.setattr(bench, "_git_dirty", lambda root=bench.REPO_ROOT: None)  # no git process in tests
    meta = bench.run_metadata()
    for key in ("git_hash", "git_dirty", "date_utc", "hostname", "versions", "device"):
        assert key in meta
    for key in ("python", "numpy", "scipy", "numba", "numba_cuda", "cupy", "torch"):
        assert key in meta["versions"]
    assert meta["versions"]["numpy"] == np.__version__
    assert meta["date_utc"].endswith("+00:00")
    json.dumps(meta)
    if SIMULATOR:
        assert meta["device"] == {"simulator": True}


def test_git_hash_reads_files(tmp_path):
    g = tmp_path / ".git"
    (g / "refs" / "heads").mkdir(parents=True)
    (g / "HEAD").write_text("ref: refs/heads/main\n")
    (g / "refs" / "heads" / "main").write_text("a" * 40 + "\n")
    assert bench._git_hash(str(tmp_path)) == "a" * 40
    (g / "refs" / "heads" / "main").unlink()
    (g / "packed-refs").write_text(f"# pack-refs\n{'b' * 40} refs/heads/main\n")
    assert bench._git_hash(str(tmp_path)) == "b" * 40
    assert bench._git_hash(str(tmp_path / "nowhere")) is None


@pytest.mark.skipif(not SIMULATOR, reason="checks the simulator's refusal")
def test_time_fn_refuses_the_simulator():
    with pytest.raises(BackendUnavailable, match="real CUDA GPU"):
        bench.time_fn(lambda: None)
    with pytest.raises(BackendUnavailable):
        bench.copy_bandwidth(1 << 20)
    assert bench.device_info() == {"simulator": True}


# ---- experiment scaffolding -------------------------------------------------------------------

def test_progress_bar_output():
    buf = io.StringIO()
    got = list(X.progress(range(5), desc="work", stream=buf, min_interval=0.0))
    assert got == [0, 1, 2, 3, 4]
    text = buf.getvalue()
    assert "work [" in text and "5/5" in text and text.endswith("\n")
    buf = io.StringIO()
    assert list(X.progress(iter("ab"), desc="gen", stream=buf)) == ["a", "b"]
    assert "gen 2" in buf.getvalue()


def test_save_load_round_trip(tmp_path):
    rows = [dict(method="m", median_us=np.float32(1.5), n=np.int64(3), arr=np.arange(2), bad=float("nan"))]
    meta = {"date_utc": "2026-01-01T00:00:00+00:00", "device": {"name": "Fake GPU"}}
    path = X.save_results(str(tmp_path / "r.json"), rows, {"dtype": np.dtype(np.float16)},
                          extra={"copy_bandwidth": {"tb_s": 3.0}}, meta=meta)
    back = X.load_results(path)
    assert back["meta"] == meta and back["config"] == {"dtype": "float16"}
    assert back["rows"] == [dict(method="m", median_us=1.5, n=3, arr=[0, 1], bad=None)]
    assert back["copy_bandwidth"] == {"tb_s": 3.0}
    with pytest.raises(Exception, match="existing JSON"):
        X.load_results(str(tmp_path / "missing.json"))


def test_parse_args_defaults():
    a = X.parse_args("d", name="demo", argv=[])
    assert a.out == X.results_path("demo") and a.fig == X.figure_path("demo") and not a.quick
    q = X.parse_args("d", name="demo", argv=["--quick", "--fig", "x.png"],
                     extra=lambda p: p.add_argument("--reps", type=int, default=None))
    assert q.quick and q.out.endswith("demo.quick.json") and q.fig == "x.png" and q.reps is None


def _fake_results(two_dtypes=True):
    from itertools import product
    rows = []
    methods = ["numba_csr_scalar", "numba_csr_vector4", "cusparse_csr", "cublas_gemv", "numba_dense"]
    for shape, s, d, m in product(["64x128", "128x64"], [0.5, 0.9], ["float16", "float32"] if two_dtypes else ["float32"], methods):
        t = 50.0 * (1 - s if "csr" in m else 0.5) + (5 if d == "float32" else 0) + 1
        rows.append(dict(shape=shape, rows=64, cols=128, sparsity=s, dtype=d, method=m, median_us=t,
                         p10_us=t, p90_us=t, tb_s=1.0, check_passed=(m != "numba_dense" or s != 0.9)))
    rows.append(dict(shape="64x128", sparsity=0.5, dtype="float32", method="cusparse_csr", error="boom"))
    return {"meta": {"date_utc": "2026-01-01T00:00:00+00:00", "device": {"name": "Fake GPU"}},
            "config": {"reps": 3}, "rows": rows, "copy_bandwidth": {"tb_s": 3.0}}


def test_plot_from_fabricated_results(tmp_path, capsys):
    exp = _load_experiment("baseline_csr")
    res = _fake_results()
    exp.add_speedups(res["rows"])
    out = exp.plot(res, str(tmp_path / "fig.png"))
    assert [os.path.basename(p) for p in out] == ["fig.png", "fig.pdf"]
    for p in out:
        assert os.path.getsize(p) > 1000
    with open(out[0], "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    exp.report(res)
    text = capsys.readouterr().out
    assert "numba_csr_vector4" in text and "µs / TB/s" in text and "error" in text


def test_experiment_without_gpu_plots_saved_results(tmp_path, monkeypatch, capsys):
    exp = _load_experiment("baseline_csr")
    monkeypatch.setattr(X, "gpu_available", lambda: False)
    res = _fake_results(two_dtypes=False)
    out = tmp_path / "r.json"
    X.save_results(str(out), res["rows"], res["config"], meta=res["meta"])

    def no_measure(args):
        raise AssertionError("measure() must not run without a GPU")

    argv = ["--out", str(out), "--fig", str(tmp_path / "f.png")]
    assert X.main("baseline_csr", description="d", measure=no_measure, plot=exp.plot, argv=argv) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("no CUDA GPU: plotting the committed")
    assert "Fake GPU" in lines[0] and "2026-01-01" in lines[0]
    assert (tmp_path / "f.png").exists() and (tmp_path / "f.pdf").exists()
    argv = ["--out", str(tmp_path / "none.json"), "--fig", str(tmp_path / "g.png")]
    assert X.main("baseline_csr", description="d", measure=no_measure, plot=exp.plot, argv=argv) == 1
    assert "no saved results" in capsys.readouterr().err


def test_format_table():
    t = X.format_table([{"a": 1.23456, "b": "x"}, {"a": None, "b": "long"}], [("a", "A", ".2f"), ("b", "B", "")])
    lines = t.splitlines()
    assert lines[0].split() == ["A", "B"] and "1.23" in lines[2] and "-" in lines[3]


# ---- baselines ---------------------------------------------------------------------------------

def _hide(monkeypatch, *mods):
    for m in mods:
        monkeypatch.setitem(sys.modules, m, None)  # makes `import m` raise ImportError


def test_missing_cupy_names_the_gpu_extra(monkeypatch):
    _hide(monkeypatch, "cupy", "cupyx", "cupyx.scipy", "cupyx.scipy.sparse")
    M = R.encode(sp.random(8, 8, density=0.5, random_state=0, dtype=np.float32))
    for build in (lambda: B.DenseGemv(np.ones((4, 4), np.float32), np.float32),
                  lambda: B.CusparseCSR(M, np.float32),
                  lambda: B.CusparseCOO(M, np.float32)):
        with pytest.raises(BackendUnavailable, match=r"pip install -e \.\[gpu\]"):
            build()
    assert not B.cupy_available()
    with pytest.raises(BackendUnavailable, match=r"\.\[gpu\]"):
        bench._Events("cupy")


def test_missing_torch_names_the_torch_extra(monkeypatch):
    _hide(monkeypatch, "torch")
    M = R.encode(sp.random(8, 8, density=0.5, random_state=0, dtype=np.float32), dtype=np.float16)
    with pytest.raises(BackendUnavailable, match=r"pip install -e \.\[torch\]"):
        B.CusparseCSR(M, np.float16)
    assert not B.torch_available()


def test_relative_error():
    A = sp.csr_matrix(np.array([[1.0, -2.0, 0.0], [0.0, 0.0, 0.0], [0.5, 0.5, 0.5]], np.float32))
    x = np.array([1.0, 1.0, 2.0], np.float32)
    exact = np.array([-1.0, 0.0, 2.0])
    assert B.relative_error(exact, A, x, np.float32).passed
    c = B.relative_error(exact + [0.0, 0.0, 1e-3], A, x, np.float32)    # 1e-3 / 2.0 = 5e-4
    assert not c.passed and c.n_bad == 1 and c.max_rel_err == pytest.approx(5e-4)
    assert B.relative_error(exact + [0.0, 0.0, 1e-3], A, x, np.float16).passed
    assert not B.relative_error(exact + [0.0, 1e-30, 0.0], A, x, np.float32).passed  # empty row must be 0
    assert not B.relative_error([np.nan, 0.0, 2.0], A, x, np.float32).passed
    ref = B.reference_product(A.toarray(), x)
    assert B.relative_error(exact, ref=ref, dtype=np.float32).passed


# ---- numba dense GEMV (simulator on CPU, real kernel on a GPU) ------------------------------------

SMALL = KD.DenseConfig(threads_per_block=64)


@pytest.mark.parametrize("dtype,shape", [(np.float32, (40, 64)), (np.float16, (33, 48)),
                                         (np.float32, (17, 37)), (np.float64, (9, 6)), (np.float16, (3, 5))])
def test_dense_gemv_matches_numpy(dtype, shape):
    rng = np.random.default_rng(7)
    W = rng.uniform(-1, 1, shape).astype(dtype)
    x = rng.uniform(-1, 1, shape[1]).astype(dtype)
    y = KD.gemv(W, x, config=SMALL)
    assert y.dtype == np.dtype(dtype) and y.shape == (shape[0],)
    chk = B.relative_error(y, W, x, dtype)
    assert chk.passed, chk
    expect_vec = {2: 8, 4: 4, 8: 2}[np.dtype(dtype).itemsize]
    assert KD.vector_width(dtype, shape[1]) == (expect_vec if shape[1] % expect_vec == 0 else 1)


def test_dense_gemv_device_operands_and_out():
    from spmvlab._cuda import cuda
    rng = np.random.default_rng(3)
    W = rng.uniform(-1, 1, (12, 16)).astype(np.float32)
    x = rng.uniform(-1, 1, 16).astype(np.float32)
    D = KD.to_device(W)
    assert D.nbytes == W.nbytes and D.shape == (12, 16)
    out = cuda.device_array(12, dtype=np.float32)
    got = KD.gemv(D, cuda.to_device(x), out=out, config=SMALL)
    assert got is out
    np.testing.assert_allclose(out.copy_to_host(), W @ x, rtol=1e-5, atol=1e-6)
    host_out = np.zeros(12, np.float32)
    assert KD.gemv(D, x, out=host_out, config=SMALL) is host_out
    np.testing.assert_allclose(host_out, W @ x, rtol=1e-5, atol=1e-6)


def test_numba_dense_baseline_check():
    rng = np.random.default_rng(5)
    W = rng.uniform(-1, 1, (10, 24)).astype(np.float32)
    b = B.NumbaDense(W, np.float32, config=SMALL)
    assert b.events == "numba" and b.nbytes == W.nbytes + (10 + 24) * 4 and b.name == "numba_dense_v4"
    assert b.check().passed


def test_dense_errors():
    from reference._common import DTypeError, OptionError, ShapeError
    with pytest.raises(ShapeError):
        KD.to_device(np.ones(4, np.float32))
    with pytest.raises(DTypeError):
        KD.to_device(np.ones((2, 2), np.int32))
    with pytest.raises(OptionError):
        KD.DenseConfig(vec=3)
    with pytest.raises(OptionError):
        KD.DenseConfig(threads_per_block=48)
    with pytest.raises(ShapeError):
        KD.gemv(np.ones((2, 4), np.float32), np.ones(3, np.float32))
