"""Test-suite setup.

* With no CUDA GPU, Numba's CUDA simulator is switched on before numba.cuda is imported
  (``spmvlab._cuda`` does it) and spmvlab's warp-collective emulation is installed; on a GPU
  the same kernel tests run for real.
* Hypothesis profiles: ``ci`` (small, bounded, derandomized, prints reproduction blobs),
  ``dev`` and ``thorough``. Choose with ``--hypothesis-profile=NAME`` or the
  ``HYPOTHESIS_PROFILE`` environment variable (default ``dev``).
"""
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

from spmvlab._cuda import SIMULATOR  # decides simulator vs GPU first

_common = dict(deadline=None, print_blob=True,
               suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                      HealthCheck.filter_too_much])
settings.register_profile("ci", max_examples=12, derandomize=True, **_common)
settings.register_profile("dev", max_examples=30, **_common)
settings.register_profile("thorough", max_examples=400, **_common)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))


def pytest_report_header(config):
    from spmvlab._cuda import backend_name
    return f"spmvlab kernels run on: {backend_name()}"


@pytest.hookimpl(trylast=True)      # after -k / -m have deselected
def pytest_collection_modifyitems(config, items):
    if SIMULATOR:
        skip = pytest.mark.skip(reason="needs a real CUDA GPU (running in the simulator)")
        for item in items:
            if "gpu" in item.keywords:
                item.add_marker(skip)
    for item in items:     # the sm_90 compile starts now, beside the rest of the suite
        if item.name == "test_all_kernels_compile_for_sm90":
            item.module.start_in_background()


def pytest_sessionfinish(session, exitstatus):
    import sys
    ptx = sys.modules.get("test_ptx") or sys.modules.get("tests.test_ptx")
    if ptx is not None:
        ptx.stop_background()


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


@pytest.fixture(scope="session")
def simulator():
    return SIMULATOR
