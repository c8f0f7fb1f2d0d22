"""Every kernel compiles to PTX for compute capability 9.0 (catches typing errors the
simulator cannot see). Runs in a subprocess with the simulator off; needs NVVM from
``numba-cuda[cu13]``. Under CI=true (or SPMVLAB_REQUIRE_PTX=1) a missing NVVM fails instead of skipping when
NVVM is missing."""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _nvvm_available() -> bool:
    code = ("import os; os.environ['NUMBA_ENABLE_CUDASIM']='0'\n"
            "from numba.cuda.cudadrv import nvvm; nvvm.NVVM()")
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="0")
    return subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT,
                          capture_output=True).returncode == 0


def test_all_kernels_compile_for_sm90():
    if not _nvvm_available():
        if os.environ.get("SPMVLAB_REQUIRE_PTX") == "1" or os.environ.get("CI") == "true":
            pytest.fail("NVVM is not available: pip install 'numba-cuda[cu13]'")
        pytest.skip("NVVM not available (pip install 'numba-cuda[cu13]')")
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="0")
    proc = subprocess.run([sys.executable, "-m", "spmvlab.ptxcheck"], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=900)
    print(proc.stdout[-3000:])
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "FAIL" not in proc.stdout
