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


def _summary(out):
    """The summary lines under the size table: label -> text."""
    labels = ("smallest", "fastest (measured)", "faster (predicted)")
    return {lab: ln[len(lab):].strip() for ln in out.splitlines() for lab in labels
            if ln.startswith(lab + "  ")}


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
    # MACKO is the smallest of the formats here; 64 x 96 is far smaller than any shape
    # the committed GPU runs time, so no prediction of the faster kernel is made
    summ = _summary(out)
    macko = rows["macko"].split()[1]
    assert summ["smallest"].startswith(f"macko {macko} bytes; next csr_dtans ")
    assert summ["smallest"].endswith(f"over the {len(formats.all_formats())} formats that "
                                     "encoded it")
    assert summ["faster (predicted)"].startswith("no prediction of MACKO vs CSR-vector: ")
    assert summ["faster (predicted)"].endswith("this matrix is 64 x 96")


def test_stats_names_a_smallest_format_that_is_neither_macko_nor_csr(capsys, tmp_path):
    """A 4096 x 4096 weight matrix pruned to 80 % in float16: CSR-dtANS is the smallest format
    (MACKO the runner-up), and the matrix is of the kind the committed GPU runs time (a
    uniform mask of a measured shape, in their dtype and sparsity range), so the faster of
    MACKO and CSR-vector is predicted: MACKO, below the crossover at 4096 x 4096."""
    path = tmp_path / "w.npy"
    np.save(path, datasets.gaussian_weights((4096, 4096), seed=0))
    status, out, err = run(capsys, "stats", str(path), "--prune", "0.8", "--dtype", "float16",
                           "--json", str(tmp_path / "s.json"))
    assert status == 0, err
    rows = _table_rows(out)
    dtans, macko = rows["csr_dtans"].split()[1], rows["macko"].split()[1]
    summ = _summary(out)
    assert summ["smallest"].startswith(f"csr_dtans {dtans} bytes; next macko {macko} bytes (")
    assert summ["faster (predicted)"].startswith(
        "MACKO, of MACKO and CSR-vector: CSR-vector is as fast as MACKO from ")
    assert "at 4096x4096 on " in summ["faster (predicted)"]
    doc = json.loads((tmp_path / "s.json").read_text())
    assert "macko_vs_csr" not in doc
    v = doc["summary"]
    sizes = {r["format"]: r["nbytes"] for r in doc["sizes"]}
    assert v["bytes"] == sizes and min(sizes, key=sizes.get) == "csr_dtans"
    assert (v["smallest"], v["smallest_bytes"]) == ("csr_dtans", sizes["csr_dtans"])
    assert (v["next"], v["next_bytes"]) == ("macko", sizes["macko"])
    assert v["fastest"]["basis"] == "predicted" and v["fastest"]["method"] == "macko"


def test_stats_power_law_graph_gets_no_prediction(capsys, tmp_path, monkeypatch):
    """A power-law graph 99.9 % sparse, of a shape inside the measured range: far sparser than
    any committed run and with rows of very different lengths, so no prediction, and the
    line says why."""
    monkeypatch.setattr(formats, "all_formats", lambda: [formats.get("csr"), formats.get("macko")])
    path = tmp_path / "g.mtx"
    G = datasets.power_law(8192, 8192, 8, seed=0)
    G.data[:] = 1.0                                  # a graph: its pattern, in any dtype
    scipy.io.mmwrite(path, G)
    status, out, err = run(capsys, "stats", str(path), "--dtype", "float16",
                           "--json", str(tmp_path / "g.json"))
    assert status == 0, err
    line = _summary(out)["faster (predicted)"]
    assert line.startswith("no prediction of MACKO vs CSR-vector: the committed GPU runs time "
                           "uniform random masks, ")
    reason = line.split("; this matrix is ", 1)[1]
    assert reason.startswith("99.9") and "% sparse, rows of " in reason and "nonzeros" in reason
    assert "8,192 x 8,192" not in reason and "float16" not in reason   # shape and dtype covered
    v = json.loads((tmp_path / "g.json").read_text())["summary"]
    assert v["fastest"]["basis"] == "none" and v["fastest"]["method"] is None
    assert "% sparse" in v["fastest"]["reason"]


@pytest.fixture
def have_weights():
    try:
        datasets.data_dir()
    except DatasetError:
        pytest.skip("data directory absent (set SPMVLAB_DATA)")
    if "mpnet_L11_attn_q" not in datasets.weights_names():
        pytest.skip("mpnet_L11_attn_q not in the data directory")


def test_stats_real_weights_smallest_is_csr_dtans(capsys, have_weights):
    """The issue's case: mpnet_L11_attn_q pruned to 70 % in float16 is smallest in CSR-dtANS,
    not in MACKO; 768 x 768 is smaller than every measured shape, so no prediction."""
    status, out, err = run(capsys, "stats", "mpnet_L11_attn_q", "--prune", "0.7",
                           "--dtype", "float16")
    assert status == 0, err
    summ = _summary(out)
    assert summ["smallest"].startswith("csr_dtans 380,246 bytes; next macko 445,976 bytes (1.17x)")
    assert summ["faster (predicted)"].startswith("no prediction of MACKO vs CSR-vector")
    assert summ["faster (predicted)"].endswith("this matrix is 768 x 768")


def test_summary_measured_fastest_passed_its_check():
    """On a GPU the fastest is the timed method with the least median among those that passed
    their check (a faster failed row or an untimed one does not count)."""
    sizes = [dict(format="csr", nbytes=30), dict(format="macko", nbytes=20),
             dict(format="ec_csr", error="ValueError: no")]
    rows = [dict(method="csr", check_passed=True, median_us=12.0),
            dict(method="macko", check_passed=False, median_us=5.0),
            dict(method="cusparse", check_passed=True, median_us=9.0),
            dict(method="cusparse_coo", error="not timed")]
    s = cli.matrix_stats(datasets.uniform((32, 32), 0.5))
    v = cli.summary(s, sizes, "float32", rows)
    assert (v["smallest"], v["next"], v["bytes"]) == ("macko", "csr", {"csr": 30, "macko": 20})
    f = v["fastest"]
    assert (f["basis"], f["method"], f["median_us"], f["next"], f["next_us"]) == (
        "measured", "cusparse", 9.0, "csr", 12.0)
    lines = dict(cli._summary_lines(v))
    assert lines["fastest (measured)"].startswith("cusparse 9.00 us median; next csr 12.00 us")
    assert lines["smallest"].startswith("macko 20 bytes; next csr 30 bytes (1.50x); over the 2")
    assert cli.summary(s, sizes, "float32", [])["fastest"]["basis"] == "none"
    v = cli.summary(s, [dict(format="csr", nbytes=30)], "float32")
    assert dict(cli._summary_lines(v))["smallest"] == "csr 30 bytes (the only format encoded)"


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
              "copy_bandwidth", "rows", "summary"}


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
    sizes = {r["format"]: r["nbytes"] for r in doc["sizes"]}
    assert doc["summary"]["smallest"] == min(sizes, key=sizes.get)
    if simulator:
        line = [ln for ln in out.splitlines() if "no CUDA GPU" in ln]
        assert len(line) == 1 and "sizes and encode times only" in line[0]
        assert doc["gpu"] is False and doc["rows"] == [] and doc["copy_bandwidth"] is None
        # nothing timed: 16 x 64 is outside the measured shapes, so no prediction either
        assert doc["summary"]["fastest"]["basis"] == "none"
        assert _summary(out)["faster (predicted)"].startswith("no prediction")
    else:                                               # a real GPU: timing columns exist
        for col in ("median us", "TB/s", "x cuBLAS", "ok"):
            assert col in out
        assert "device-to-device copy" in out and doc["copy_bandwidth"]["tb_s"] > 0
        timed = _timed_rows(doc["rows"])
        assert {"csr", MACKO_TIMED, "coo", "cublas"} <= set(timed)
        for r in timed.values():
            assert set(methods.ROW_KEYS) <= set(r) and r["check_passed"]
        assert "speedup_vs_cublas" in timed[MACKO_TIMED]
        fast = doc["summary"]["fastest"]
        assert fast["basis"] == "measured"
        assert fast["median_us"] == min(r["median_us"] for r in timed.values())
        assert _summary(out)["fastest (measured)"].startswith(f"{fast['method']} ")


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
    medians = iter([20, 10])                           # csr is timed first, then MACKO
    monkeypatch.setattr(bench, "time_fn", lambda fn, **kw: Timing.from_samples(
        [m := next(medians), m + 1, m + 2], True))
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
        assert set(methods.ROW_KEYS) <= set(r) and r["check_passed"]
    assert (timed["csr"]["median_us"], timed[MACKO_TIMED]["median_us"]) == (21, 11)
    fast = doc["summary"]["fastest"]
    assert (fast["basis"], fast["method"], fast["next"]) == ("measured", MACKO_TIMED, "csr")
    assert _summary(out)["fastest (measured)"].startswith(
        f"{MACKO_TIMED} 11.00 us median; next csr 21.00 us")
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
    assert set(doc) == {"meta", "command", "config", "matrix", "sizes", "summary"}
    v = doc["summary"]
    sizes = {r["format"]: r["nbytes"] for r in doc["sizes"]}
    order = sorted(sizes, key=sizes.get)
    assert v["bytes"] == sizes and (v["smallest"], v["next"]) == tuple(order[:2])
    assert (v["smallest_bytes"], v["next_bytes"]) == (sizes[order[0]], sizes[order[1]])
    assert v["fastest"]["basis"] == "none" and "16 x 64" in v["fastest"]["reason"]
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
