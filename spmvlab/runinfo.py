"""Where, when and with what a result was measured: the metadata every results file records.

:func:`run_metadata` gives the git commit (and whether the tree was dirty), the date, the
host, the package versions and :func:`device_info`. A copy of the tree without ``.git``
(e.g. shipped to a GPU machine) names its commit in ``SPMVLAB_GIT_HASH`` /
``SPMVLAB_GIT_DIRTY`` (``1`` or ``0``), which then win over any ``.git`` found.
"""
from __future__ import annotations

import datetime
import os
import platform
import re
import socket
import subprocess
import sys
from importlib import metadata

import numpy as np

from ._cuda import SIMULATOR, cuda

__all__ = ["device_info", "device_slug", "git_state", "versions", "run_metadata", "REPO_ROOT"]

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _device_attr(dev, name):
    try:
        return int(getattr(dev, name))
    except Exception:
        return None


def device_info() -> dict:
    """The GPU's name, compute capability, SM count, L2 size, memory and CUDA versions;
    ``{"simulator": True}`` in the CUDA simulator."""
    if SIMULATOR:
        return {"simulator": True}
    info: dict = {"simulator": False}
    try:
        dev = cuda.get_current_device()
        name = dev.name
        info["name"] = name.decode() if isinstance(name, bytes) else str(name)
        info["compute_capability"] = list(dev.compute_capability)
        for key, attr in (("sm_count", "MULTIPROCESSOR_COUNT"), ("l2_bytes", "L2_CACHE_SIZE"),
                          ("clock_khz", "CLOCK_RATE"), ("memory_clock_khz", "MEMORY_CLOCK_RATE"),
                          ("memory_bus_bits", "GLOBAL_MEMORY_BUS_WIDTH")):
            info[key] = _device_attr(dev, attr)
    except Exception as exc:  # pragma: no cover - broken driver
        info["error"] = f"{type(exc).__name__}: {exc}"
        return info
    try:
        info["memory_bytes"] = int(cuda.current_context().get_memory_info()[1])
    except Exception:
        pass
    for key, mod in (("driver_cuda_version", "driver"), ("runtime_cuda_version", "runtime")):
        try:
            m = __import__(f"numba.cuda.cudadrv.{mod}", fromlist=[mod])
            info[key] = ".".join(map(str, m.get_version()))
        except Exception as exc:
            info[key] = f"unknown ({type(exc).__name__})"
    out = _run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"])
    if out:
        info["driver_version"] = out.splitlines()[0]
    return info


def device_slug(device: dict | None) -> str:
    """A short folder name for a device dict: ``h100``, ``h200``, ``a100``, ... (the model
    number in the GPU's name), ``cpu`` for the simulator or no GPU."""
    if not device or device.get("simulator") or not device.get("name"):
        return "cpu"
    name = str(device["name"])
    m = re.search(r"\b([A-Z]{1,2}\d{2,4}[A-Z]?)\b", name)
    return (m.group(1) if m else re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")).lower()


def _run(cmd, cwd=None) -> str | None:
    """stdout of ``cmd`` (stripped), or None if it fails or is missing."""
    try:
        out = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


#: the folders experiments write into; changes there leave a tree clean for :func:`git_state`
OUTPUT_DIRS = ("results", "figures")


def git_state(root: str = REPO_ROOT) -> tuple[str | None, bool | None]:
    """(HEAD's commit, whether tracked files differ from it) of the checkout at ``root``.
    The experiments' outputs (:data:`OUTPUT_DIRS`) do not count: a results file or figure
    written and not yet committed changes no code, so the next experiment of the same session
    (fig8_dtans after fig7_dtans, a table after its figure) still runs on a clean commit.

    ``SPMVLAB_GIT_HASH`` / ``SPMVLAB_GIT_DIRTY`` win when set: a copy of the tree shipped to
    another machine may carry a stale ``.git`` (seen on the GPU machine), and whoever ships
    it knows the commit."""
    env_hash = os.environ.get("SPMVLAB_GIT_HASH")
    if env_hash:
        dirty = os.environ.get("SPMVLAB_GIT_DIRTY")
        return env_hash, (None if dirty is None else dirty == "1")
    head = _run(["git", "-C", root, "rev-parse", "--verify", "HEAD"])
    if head:
        status = _run(["git", "-C", root, "status", "--porcelain", "--untracked-files=no", "--", "."]
                      + [f":(exclude){d}" for d in OUTPUT_DIRS])
        return head, (None if status is None else bool(status))
    return None, None


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except Exception:
        return None


def versions() -> dict:
    """Versions of Python and every package a result may depend on (None: not installed)."""
    out = {"python": platform.python_version(), "numpy": np.__version__}
    for key, dist in (("scipy", "scipy"), ("numba", "numba"), ("numba_cuda", "numba-cuda"),
                      ("matplotlib", "matplotlib")):
        out[key] = _version(dist)
    out["cupy"] = next((f"{v} ({d})" for d in ("cupy-cuda13x", "cupy-cuda12x", "cupy-cuda11x", "cupy")
                        if (v := _version(d))), None)
    out["torch"] = _version("torch")
    return out


def run_metadata() -> dict:
    """Where, when and with what a result was measured."""
    git_hash, dirty = git_state()
    return {
        "git_hash": git_hash,
        "git_dirty": dirty,
        "date_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "hostname": socket.gethostname(),
        "platform": platform.platform(),
        "argv": list(sys.argv),
        "versions": versions(),
        "device": device_info(),
    }
