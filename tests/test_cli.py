"""spmvlab.cli: ``info``, ``formats``, ``stats``, ``bench`` and one-line errors (exit status 2)."""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
import scipy.io

from spmvlab import bench, cli, datasets, formats, methods
from spmvlab.bench import Timing
from spmvlab.datasets import _suitesparse
from spmvlab.errors import DatasetError


def run(capsys, *argv):
    """main(argv) -> (status, stdout, stderr); argparse exits are turned into statuses."""
    try:
        status = cli.main(list(argv))
    except SystemExit as exc:
        status = exc.code
    out, err = capsys.readouterr()
    return status, out, err


@pytest.fixture
def have_data():
    try:
        d = datasets.data_dir()
    except DatasetError:
        pytest.skip("data directory absent (set SPMVLAB_DATA)")
    if "HB/bcsstk13" not in datasets.suitesparse_names():
        pytest.skip("HB/bcsstk13 not in the data directory")
    return d


def test_info(capsys, simulator):
    status, out, err = run(capsys, "info")
    assert status == 0 and err == ""
    for key in ("backend", "python", "numpy", "scipy", "numba-cuda", "cupy", "torch", "data dir"):
        assert key in out
    if simulator:
        assert "numba CUDA simulator (CPU)" in out
    else:
        assert "compute capability" in out and "SM count" in out


def test_info_without_data(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("SPMVLAB_DATA", str(tmp_path / "missing"))
    monkeypatch.setenv("SPMVLAB_CACHE", str(tmp_path / "cache"))
    status, out, _ = run(capsys, "info")
    assert status == 0
    assert "not found" in out and "0 matrices" in out


def test_formats(capsys):
    status, out, _ = run(capsys, "formats")
    assert status == 0
    for info in formats.all_formats():
        assert f"{info.name}:" in out
        for opt in info.options:
            assert f"option {opt} =" in out
    assert f"{len(formats.all_formats())} format(s)" in out


def _table_rows(out):
    lines = out.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("format"))
    rows = {}
    for ln in lines[start + 1:]:
        if not ln.strip():            # the size table ends here (a timing table may follow)
            break
        rows[ln.split()[0]] = ln
    return rows


def test_stats_real_matrix(capsys, have_data):
    status, out, err = run(capsys, "stats", "HB/bcsstk13")
    assert status == 0, err
    assert "2,003 x 2,003" in out and "83,883" in out
    assert "<=16: 93.4%" in out                    # the data README's d<=16 for bcsstk13
    rows = _table_rows(out)
    for info in formats.all_formats():
        assert info.name in rows
    assert "679,080" in rows["csr"]                # 2004*4 + 83883*(4+4) bytes in float32
    assert rows["dense"].split()[1] == f"{2003 * 2003 * 4:,}"


def test_stats_npy(capsys, tmp_path):
    W = datasets.prune(datasets.gaussian_weights((64, 96), seed=0), 0.75)
    path = tmp_path / "w.npy"
    np.save(path, W)
    status, out, err = run(capsys, "stats", str(path), "--dtype", "float16")
    assert status == 0, err
    assert "64 x 96" in out and "1,536" in out and "float16 (2 bytes)" in out
    assert "empty rows 0" in out and "min 24" in out and "max 24" in out
    rows = _table_rows(out)
    csr_bytes = 65 * 4 + 1536 * (4 + 2)
    assert f"{csr_bytes:,}" in rows["csr"]
    # 75 % sparse: MACKO is the smaller, and (below every committed crossover) the faster
    vs = {ln.split("  ")[0]: ln.split("  ", 1)[1].strip() for ln in out.splitlines()
          if ln.startswith(("smaller ", "faster (predicted) "))}
    assert vs["smaller"].startswith("MACKO (") and f"{csr_bytes:,} CSR" in vs["smaller"]
    assert vs["faster (predicted)"].startswith("MACKO: CSR-vector is as fast as MACKO from")


def test_stats_reports_failing_format(capsys, tmp_path, monkeypatch):
    class Broken:
        name = "broken"
        options = {}

        def encode(self, A, dtype=None, fast=False, **options):
            raise ValueError("cannot encode\nthis")

    monkeypatch.setattr(formats, "all_formats", lambda: [formats.get("csr"), Broken()])
    np.save(tmp_path / "e.npy", np.eye(5, dtype=np.float32))
    status, out, _ = run(capsys, "stats", str(tmp_path / "e.npy"))
    assert status == 0
    rows = _table_rows(out)
    assert "failed: ValueError: cannot encode this" in rows["broken"]
    assert "csr" in rows


@pytest.mark.parametrize("argv", [
    ("stats", "no_such_matrix"),
    ("bench", "no_such_matrix"),
    ("bench",),
    ("stats", "missing_file.mtx"),
    ("stats", "HB/bcsstk13", "--dtype", "int8"),
    ("stats",),
    ("frobnicate",),
])
def test_bad_input_one_line_exit_2(capsys, monkeypatch, argv):
    monkeypatch.setattr(_suitesparse, "_urlopen", lambda *a, **k: pytest.fail("network touched"))
    status, out, err = run(capsys, *argv)
    assert status == 2
    assert err.count("\n") == 1 and err.startswith("spmvlab") and "error" in err
    assert "Traceback" not in err


def test_bad_npy_exit_2(capsys, tmp_path):
    np.save(tmp_path / "v.npy", np.ones(7))
    status, _, err = run(capsys, "stats", str(tmp_path / "v.npy"))
    assert status == 2 and "2-D" in err and err.count("\n") == 1


def _misfit_npy(tmp_path):
    """A float32 matrix whose 1e5 overflows and 1e-9 underflows to zero in float16."""
    path = tmp_path / "misfit.npy"
    np.save(path, np.array([[0, 1e5, 1.0], [1e-9, 0, 3.0]], dtype=np.float32))
    return str(path)


def test_stats_values_that_do_not_fit_the_dtype_exit_2_naming_lossy(capsys, tmp_path):
    status, out, err = run(capsys, "stats", _misfit_npy(tmp_path), "--dtype", "float16")
    assert status == 2 and out == "" and err.count("\n") == 1
    assert err.startswith("spmvlab stats: error: MATRIX:") and "Traceback" not in err
    assert "1 entry overflowing to +-inf, 1 underflowing to zero" in err
    assert "row 0, column 1, 100000.0 -> inf" in err and "pass --lossy" in err
    assert "lossy=True" not in err


def test_stats_lossy_accepts_and_warns_in_one_line(capsys, tmp_path):
    status, out, err = run(capsys, "stats", _misfit_npy(tmp_path), "--dtype", "float16", "--lossy")
    assert status == 0
    assert err.count("\n") == 1 and err.startswith("spmvlab stats: warning: MATRIX: accepted (--lossy)")
    assert "1 underflowing to zero" in err
    assert "nnz          3" in out                     # the 1e-9 is dropped
    rows = _table_rows(out)
    assert f"{3 * 4 + 3 * (4 + 2):,}" in rows["csr"]         # indptr + 3 x (index, value)
    status, out, err = run(capsys, "stats", _misfit_npy(tmp_path))   # float32 holds them all
    assert status == 0 and err == "" and "nnz          4" in out


def test_python_dash_m():
    res = subprocess.run([sys.executable, "-m", "spmvlab", "formats"], capture_output=True,
                         text=True, cwd=cli.__file__.rsplit("/spmvlab/", 1)[0], timeout=120)
    assert res.returncode == 0, res.stderr
    assert "csr:" in res.stdout


# --------------------------------------------------------------------------------------
# bench, and the flags stats and bench share
# --------------------------------------------------------------------------------------

#: bench times MACKO with the width delta_bits='auto' chooses, and names the method so
MACKO_TIMED = "macko[delta_bits='auto']"
SIZE_KEYS = {"format", "nbytes", "bytes_per_nnz", "effective_density", "options", "encode_s",
             "encode_repeats", "note", "chosen"}
BENCH_KEYS = {"meta", "command", "config", "matrix", "sizes", "gpu", "timing_note",
              "copy_bandwidth", "rows"}


@pytest.fixture
def npy(tmp_path):
    """A 16 x 64 dense weight file, half of every row zero (512 nonzeros)."""
    path = tmp_path / "w.npy"
    np.save(path, datasets.prune(datasets.gaussian_weights((16, 64), seed=0), 0.5))
    return str(path)


@pytest.fixture
def mtx(tmp_path):
    """A tiny synthetic sparse matrix as a Matrix Market file (12 x 40, 10% nonzero)."""
    path = tmp_path / "tiny.mtx"
    scipy.io.mmwrite(path, datasets.uniform((12, 40), 0.9, dtype=np.float64, seed=3))
    return str(path)


def _timed_rows(rows):
    return {r["method"]: r for r in rows if "error" not in r}


def test_bench_npy(capsys, tmp_path, npy, simulator):
    out_json = tmp_path / "bench.json"
    status, out, err = run(capsys, "bench", npy, "--reps", "5", "--json", str(out_json))
    assert status == 0, err
    assert "encode [" in err                            # the progress bar over formats
    rows = _table_rows(out)
    assert set(rows) >= {f.name for f in formats.all_formats()} | {"dense"}
    assert f"{17 * 4 + 512 * 8:,}" in rows["csr"]       # indptr + 512 x (index, value)
    assert "encode ms" in out and "best of 3" in out
    doc = json.loads(out_json.read_text())
    assert set(doc) == BENCH_KEYS and doc["command"] == "bench"
    assert {"git_hash", "date_utc", "versions", "device"} <= set(doc["meta"])
    assert doc["matrix"]["nnz"] == 512 and doc["config"]["dtype"] == "float32"
    for row in doc["sizes"]:
        assert set(row) == SIZE_KEYS and row["nbytes"] > 0 and row["encode_s"] > 0
    assert f"wrote {out_json}" in out
    if simulator:
        line = [ln for ln in out.splitlines() if "no CUDA GPU" in ln]
        assert len(line) == 1 and "sizes and encode times only" in line[0]
        assert doc["gpu"] is False and doc["rows"] == [] and doc["copy_bandwidth"] is None
    else:                                               # a real GPU: timing columns exist
        for col in ("median us", "TB/s", "x cuBLAS", "ok"):
            assert col in out
        assert "device-to-device copy" in out and doc["copy_bandwidth"]["tb_s"] > 0
        timed = _timed_rows(doc["rows"])
        assert {"csr", MACKO_TIMED, "coo", "cublas"} <= set(timed)
        for r in timed.values():
            assert set(methods.ROW_KEYS) <= set(r) and r["check_passed"]
        assert "speedup_vs_cublas" in timed[MACKO_TIMED]


def test_bench_tiny_mtx_json_stdout(capsys, mtx, simulator):
    """float64 on a tiny synthetic .mtx: MACKO's kernels take float16/float32 only, so it is
    sized, not timed, and the table says why; --json alone prints only JSON on stdout."""
    status, out, err = run(capsys, "bench", mtx, "--formats", "macko,csr", "--dtype", "float64")
    assert status == 0, err
    rows = _table_rows(out)
    assert set(rows) == {"macko", "csr", "dense"}
    assert "size only: kernels take float16, float32, not float64" in rows["macko"]
    status, out, err = run(capsys, "bench", mtx, "--formats", "macko,csr", "--dtype", "float64",
                           "--reps", "5", "--json")
    assert status == 0, err
    doc = json.loads(out)
    assert set(doc) == BENCH_KEYS
    assert [r["format"] for r in doc["sizes"]] == ["macko", "csr"]
    assert "not float64" in doc["sizes"][0]["note"] and doc["sizes"][1]["note"] is None
    assert doc["matrix"]["shape"] == [12, 40] and doc["matrix"]["nnz"] == 48
    if simulator:
        assert "no CUDA GPU" in err and doc["timing_note"].startswith("no CUDA GPU")
    else:
        timed = _timed_rows(doc["rows"])
        assert not any(m.startswith("macko") for m in timed) and "csr" in timed


def test_bench_timing_table_with_stand_in_timer(capsys, tmp_path, monkeypatch):
    """The GPU branch on any machine: the kernels run and are checked (the simulator on a
    CPU), the timer and the copy probe are stand-ins; the table and rows must carry the
    timing columns, and a method that cannot run is one line under the table."""
    from spmvlab import experiment
    monkeypatch.setattr(experiment, "gpu_available", lambda: True)
    monkeypatch.setattr(bench, "copy_bandwidth", lambda: {"tb_s": 4.0, "median_us": 500.0})
    monkeypatch.setattr(bench, "time_fn", lambda fn, **kw: Timing.from_samples([9, 10, 11], True))
    np.save(tmp_path / "w.npy", datasets.prune(datasets.gaussian_weights((4, 40), seed=2), 0.5))
    status, out, err = run(capsys, "bench", str(tmp_path / "w.npy"), "--methods",
                           "csr,macko,cusparse_coo", "--dtype", "float16", "--reps", "3",
                           "--json", str(tmp_path / "b.json"))
    assert status == 0, err
    for col in ("method", "ok", "median us", "TB/s", "x cuBLAS", "matrix bytes"):
        assert col in out
    assert "copy 4.00 TB/s" in out and "cusparse_coo: not timed:" in out
    doc = json.loads((tmp_path / "b.json").read_text())
    timed = _timed_rows(doc["rows"])
    assert set(timed) == {"csr", MACKO_TIMED} and doc["gpu"] is True
    for r in timed.values():
        assert set(methods.ROW_KEYS) <= set(r) and r["check_passed"] and r["median_us"] == 10
    assert "float32, float64, received float16" in next(
        r["error"] for r in doc["rows"] if r["method"] == "cusparse_coo")


def test_prune_dense_input(capsys, tmp_path):
    path = tmp_path / "d.npy"
    np.save(path, datasets.gaussian_weights((8, 40), seed=1))
    status, out, err = run(capsys, "stats", str(path), "--prune", "0.75")
    assert status == 0, err
    assert "nnz          80" in out and "min 10" in out and "max 10" in out   # 10 of 40 kept
    assert "75% of every row zeroed" in out
    status, out, err = run(capsys, "bench", str(path), "--prune", "0.75", "--json")
    assert status == 0, err
    doc = json.loads(out)
    assert doc["matrix"]["nnz"] == 80 and doc["config"]["prune"] == 0.75


def test_delta_bits_and_option(capsys, npy):
    A = datasets.load_matrix(npy)
    want = {b: formats.get("macko").nbytes(A, np.float32, delta_bits=b) for b in (4, 8)}
    assert want[4] != want[8]
    _, out, _ = run(capsys, "stats", npy)
    assert f"{want[4]:,}" in _table_rows(out)["macko"] and "macko delta_bits=4" in out
    for flags in (("--delta-bits", "8"), ("--option", "delta_bits=8"),
                  ("--option", "macko.delta_bits=8"),
                  ("--delta-bits", "8", "--option", "delta_bits=8")):
        status, out, err = run(capsys, "stats", npy, *flags)
        assert status == 0, err
        assert f"{want[8]:,}" in _table_rows(out)["macko"] and "macko delta_bits=8" in out
    status, out, err = run(capsys, "bench", npy, "--delta-bits", "8", "--json")
    assert status == 0, err
    doc = json.loads(out)
    assert doc["config"]["options"] == {"macko": {"delta_bits": 8}}
    macko = next(r for r in doc["sizes"] if r["format"] == "macko")
    assert macko["nbytes"] == want[8] and macko["options"] == {"delta_bits": 8}


def test_stats_json(capsys, tmp_path, npy):
    status, out, err = run(capsys, "stats", npy, "--json")
    assert status == 0 and err == ""
    doc = json.loads(out)
    assert set(doc) == {"meta", "command", "config", "matrix", "sizes", "macko_vs_csr"}
    vs = doc["macko_vs_csr"]
    sizes = {r["format"]: r["nbytes"] for r in doc["sizes"]}
    assert (vs["macko_bytes"], vs["csr_bytes"]) == (sizes["macko"], sizes["csr"])
    assert vs["smaller"] == ("macko" if sizes["macko"] < sizes["csr"] else "csr")
    assert vs["faster"] in ("macko", "csr", "unknown") and "%" in vs["faster_reason"]
    assert doc["command"] == "stats" and doc["matrix"]["nnz"] == 512
    assert {r["format"] for r in doc["sizes"]} == {f.name for f in formats.all_formats()}
    assert all("encode_s" not in r for r in doc["sizes"])
    path = tmp_path / "s.json"
    status, out, err = run(capsys, "stats", npy, "--json", str(path))
    assert status == 0, err
    assert "format" in out and f"wrote {path}" in out            # the tables, and the file
    assert json.loads(path.read_text())["sizes"] == doc["sizes"]


@pytest.mark.parametrize("argv, names", [
    (("bench", "{npy}", "--prune", "1.5"), "--prune"),
    (("stats", "{mtx}", "--prune", "0.5"), "dense"),
    (("bench", "{npy}", "--k", "0"), "--k"),
    (("bench", "{npy}", "--reps", "many"), "--reps"),
    (("bench", "{npy}", "--formats", "csr,nope"), "--formats"),
    (("bench", "{npy}", "--methods", "csr,frob"), "--methods"),
    (("bench", "{npy}", "--methods", "macko[prefetch]"), "--methods"),
    (("bench", "{npy}", "--formats", "csr", "--delta-bits", "8"), "--delta-bits"),
    (("stats", "{npy}", "--delta-bits", "3"), "--delta-bits"),
    (("stats", "{npy}", "--option", "frob=1"), "--option"),
    (("stats", "{npy}", "--option", "delta_bits"), "--option"),
    (("stats", "{npy}", "--delta-bits", "8", "--option", "delta_bits=4"), "--delta-bits"),
    (("bench", "--json", "{npy}", "{npy}"), "--json"),
    (("stats", "{npy}", "--json", "{npy}"), "--json"),
    (("stats", "{npy}", "--json", "/no/such/folder/x.json"), "--json"),
    (("bench", "{npy}", "--dtype", "int8"), "--dtype"),
])
def test_bad_arguments_one_line_exit_2(capsys, npy, mtx, argv, names):
    before = open(npy, "rb").read()
    status, out, err = run(capsys, *(a.format(npy=npy, mtx=mtx) for a in argv))
    assert status == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith(f"spmvlab {argv[0]}") and "error" in err
    assert names in err and "Traceback" not in err
    assert open(npy, "rb").read() == before           # a MATRIX is never taken for --json's PATH


# --------------------------------------------------------------------------------------
# a truncated .mtx: the user's own file is never to be deleted
# --------------------------------------------------------------------------------------


def _truncated(path, cut_mid_line: bool):
    data = open(path, "rb").read()
    lines = data.splitlines(keepends=True)
    keep = data[:len(data) - 5] if cut_mid_line else b"".join(lines[:len(lines) // 2])
    open(path, "wb").write(keep)
    return path


@pytest.mark.parametrize("cut_mid_line", [True, False])
def test_truncated_own_file_says_check_it(capsys, mtx, cut_mid_line):
    _truncated(mtx, cut_mid_line)
    status, out, err = run(capsys, "stats", mtx)
    assert status == 2 and out == "" and err.count("\n") == 1
    assert mtx in err and "check that the file is complete" in err
    assert "delete" not in err and "download" not in err


def test_truncated_download_says_delete_it(capsys, tmp_path, monkeypatch, mtx):
    cache = tmp_path / "cache"
    (cache / "suitesparse").mkdir(parents=True)
    monkeypatch.setenv("SPMVLAB_CACHE", str(cache))
    monkeypatch.setenv("SPMVLAB_DATA", str(tmp_path / "empty"))
    (tmp_path / "empty").mkdir()
    target = cache / "suitesparse" / "Fake__tiny.mtx"
    target.write_bytes(open(mtx, "rb").read())
    _truncated(target, cut_mid_line=False)
    monkeypatch.setattr(_suitesparse, "_urlopen", lambda *a, **k: pytest.fail("network touched"))
    status, out, err = run(capsys, "stats", "Fake/tiny")
    assert status == 2 and err.count("\n") == 1
    assert f"delete {target} to download it again" in err
