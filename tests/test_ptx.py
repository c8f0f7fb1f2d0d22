"""Every kernel compiles to PTX for compute capability 9.0 (catches typing errors the
simulator cannot see). Runs in a subprocess with the simulator off; needs NVVM from
``numba-cuda[cu13]``. Under CI=true (or SPMVLAB_REQUIRE_PTX=1) a missing NVVM fails instead of skipping when
NVVM is missing."""
import os
import re
import subprocess
import sys
import tempfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _nvvm_available() -> bool:
    code = ("import os; os.environ['NUMBA_ENABLE_CUDASIM']='0'\n"
            "from numba.cuda.cudadrv import nvvm; nvvm.NVVM()")
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="0")
    return subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT,
                          capture_output=True).returncode == 0


_background = {}


def _procs() -> int:
    """How many processes share the background compile: ``SPMVLAB_PTX_PROCS`` (default 1,
    for CI's two cores; tools/suite_shards.sh asks for more on a GPU host, where this one
    test otherwise outlasts every other shard)."""
    v = os.environ.get("SPMVLAB_PTX_PROCS", "1")
    if not v.isdigit() or int(v) < 1:
        raise ValueError(f"SPMVLAB_PTX_PROCS: expected a positive integer, got {v!r}")
    return int(v)


def start_in_background():
    """Start the compile now, in :func:`_procs` processes beside the rest of the suite
    (which runs on one core: on CI's two cores one process then costs no wall time); the
    test collects them. conftest.py calls this after collection when the test is selected."""
    if "procs" in _background or not _nvvm_available():
        return
    _start(_procs())


def _start(n: int):
    """``python -m spmvlab.ptxcheck --shard i/n`` for i < n, each writing to a temporary
    file; kept in ``_background``."""
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="0")
    _background["outs"] = outs = [tempfile.TemporaryFile(mode="w+") for _ in range(n)]
    _background["procs"] = [subprocess.Popen([sys.executable, "-m", "spmvlab.ptxcheck", "--shard",
                                              f"{i}/{n}"], env=env, cwd=ROOT, stdout=out,
                                             stderr=subprocess.STDOUT, text=True)
                            for i, out in enumerate(outs)]


def stop_background():
    """Stop a compile still running when the session ends (e.g. after -x)."""
    for proc in _background.pop("procs", []):
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    for out in _background.pop("outs", []):
        out.close()


def _compiled_in_background(timeout: float = 1800):
    """[(returncode, output)] of the background compile's processes, waiting for them (each
    at most ``timeout`` seconds); None if none ran."""
    procs = _background.get("procs")
    if procs is None:
        return None
    results = []
    for proc, out in zip(procs, _background["outs"]):
        proc.wait(timeout=timeout)
        out.seek(0)
        results.append((proc.returncode, out.read()))
    return results


def test_all_kernels_compile_for_sm90():
    if not _nvvm_available():
        if os.environ.get("SPMVLAB_REQUIRE_PTX") == "1" or os.environ.get("CI") == "true":
            pytest.fail("NVVM is not available: pip install 'numba-cuda[cu13]'")
        pytest.skip("NVVM not available (pip install 'numba-cuda[cu13]')")
    results = _compiled_in_background()
    if results is None:               # run alone: two processes share the targets
        _start(2)
        results = _compiled_in_background(timeout=900)
    total = 0
    for returncode, out in results:
        print(out[-3000:])
        assert returncode == 0, out[-6000:]
        assert "FAIL" not in out
        m = re.search(r"(\d+)/(\d+) kernels compiled", out)
        assert m and m.group(1) == m.group(2), out[-2000:]
        total += int(m.group(2))
    from spmvlab import formats   # every format with kernels contributes targets
    assert total >= 10 * len(formats.kernel_formats()), total
