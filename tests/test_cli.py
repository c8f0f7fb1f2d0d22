"""spmvlab.cli: ``info``, ``formats``, ``stats`` and one-line errors (exit status 2)."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from spmvlab import cli, datasets, formats
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
    return {ln.split()[0]: ln for ln in lines[start + 1:] if ln.strip()}


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


def test_stats_reports_failing_format(capsys, tmp_path, monkeypatch):
    class Broken:
        name = "broken"

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
    ("stats", "missing_file.mtx"),
    ("stats", "HB/bcsstk13", "--dtype", "int8"),
    ("stats",),
    ("frobnicate",),
])
def test_bad_input_one_line_exit_2(capsys, monkeypatch, argv):
    monkeypatch.setattr(datasets, "_urlopen", lambda *a, **k: pytest.fail("network touched"))
    status, out, err = run(capsys, *argv)
    assert status == 2
    assert err.count("\n") == 1 and err.startswith("spmvlab") and "error" in err
    assert "Traceback" not in err


def test_bad_npy_exit_2(capsys, tmp_path):
    np.save(tmp_path / "v.npy", np.ones(7))
    status, _, err = run(capsys, "stats", str(tmp_path / "v.npy"))
    assert status == 2 and "2-D" in err and err.count("\n") == 1


def test_python_dash_m():
    res = subprocess.run([sys.executable, "-m", "spmvlab", "formats"], capture_output=True,
                         text=True, cwd=cli.__file__.rsplit("/spmvlab/", 1)[0], timeout=120)
    assert res.returncode == 0, res.stderr
    assert "csr:" in res.stdout
