"""Every kernel compiles to PTX for compute capability 9.0 (catches typing errors the
simulator cannot see). Runs in a subprocess with the simulator off; needs NVVM from
``numba-cuda[cu13]``. Under CI=true (or SPMVLAB_REQUIRE_PTX=1) a missing NVVM fails instead of skipping when
NVVM is missing."""
import os
import re
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
    # two processes share the targets: the rest of the suite runs on one core
    procs = [subprocess.Popen([sys.executable, "-m", "spmvlab.ptxcheck", "--shard", f"{i}/2"],
                              env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for i in range(2)]
    total = 0
    for proc in procs:
        out, err = proc.communicate(timeout=900)
        print(out[-3000:])
        assert proc.returncode == 0, out[-4000:] + err[-2000:]
        assert "FAIL" not in out
        m = re.search(r"(\d+)/(\d+) kernels compiled", out)
        assert m and m.group(1) == m.group(2), out[-2000:]
        total += int(m.group(2))
    from spmvlab import formats   # every format with kernels contributes targets
    assert total >= 10 * len(formats.kernel_formats()), total
