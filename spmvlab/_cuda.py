"""The one place spmvlab imports ``numba.cuda``.

On a machine with no CUDA driver, Numba's CUDA simulator is switched on (unless the user
already chose with ``NUMBA_ENABLE_CUDASIM``) and spmvlab's warp-collective emulation is
installed, so every kernel runs, slowly, on the CPU. Importing this compiles nothing.
"""
from __future__ import annotations

import ctypes.util
import glob
import os

from . import _compat  # noqa: F401  (must run before numba-cuda compiles)


def driver_present() -> bool:
    """True when a CUDA driver library and a device node are visible."""
    if not (glob.glob("/dev/nvidia[0-9]*") or glob.glob("/dev/dxg")):
        return False
    return ctypes.util.find_library("cuda") is not None or bool(
        glob.glob("/usr/lib*/**/libcuda.so*", recursive=True) +
        glob.glob("/usr/local/nvidia/lib*/libcuda.so*"))


if "NUMBA_ENABLE_CUDASIM" not in os.environ and not driver_present():
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
    import sys
    if "numba" in sys.modules:  # numba read its config already: make it read it again
        from numba.core import config as _config
        _config.reload_config()

from numba import config as _nbconfig  # noqa: E402
from numba import cuda  # noqa: E402
from numba.cuda import libdevice as _libdevice  # noqa: E402

#: ``numba.cuda.libdevice`` for kernels (on the simulator cudasim.install() gives its stubs,
#: which return None, working bodies: umulhi, umul64hi, popc, clz, ...)
libdevice = _libdevice

SIMULATOR: bool = bool(_nbconfig.ENABLE_CUDASIM)

if SIMULATOR:
    import warnings

    from . import cudasim as _cudasim
    _cudasim.install()
    # kernels rely on uint32 wrap-around (e.g. MACKO's byte-sum multiply); on the simulator
    # NumPy scalars warn about it, the GPU does not
    warnings.filterwarnings("ignore", message="overflow encountered in scalar (multiply|subtract)",
                            category=RuntimeWarning, module=r"spmvlab\.kernels\.")


def inline_device(fn):
    """``fn`` as a device function the compiler inlines into its callers (NVVM's
    ``alwaysinline``: ``forceinline=True``). Numba's own IR-level inlining (``inline=True``,
    deprecated) re-types every call site and made the larger SpMM kernels take 10+ s each
    to compile; the simulator takes neither option."""
    if SIMULATOR:
        return cuda.jit(device=True)(fn)
    return cuda.jit(device=True, forceinline=True)(fn)


def backend_name() -> str:
    if SIMULATOR:
        return "numba CUDA simulator (CPU)"
    try:
        name = cuda.get_current_device().name
    except Exception as exc:  # pragma: no cover - broken driver
        return f"CUDA unavailable ({exc})"
    return f"CUDA GPU: {name.decode() if isinstance(name, bytes) else name}"
