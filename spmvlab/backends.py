"""Optional backends: CuPy (cuBLAS/cuSPARSE), torch (float16 cuSPARSE) and a real GPU.

Each ``import_*`` returns the module or raises :class:`~spmvlab.errors.BackendUnavailable`
naming the pip extra that installs it; ``require_gpu`` refuses the numba CUDA simulator.
Nothing here is imported at spmvlab's import time.
"""
from __future__ import annotations

from reference._common import problem

from ._cuda import SIMULATOR
from .errors import BackendUnavailable

__all__ = ["require_gpu", "import_cupy", "import_torch", "cupy_available", "torch_available"]


def require_gpu(what: str = "timing"):
    """Raise :class:`BackendUnavailable` unless a real CUDA GPU is in use."""
    if SIMULATOR:
        raise BackendUnavailable(problem(
            what, "a real CUDA GPU", "the numba CUDA simulator (no CUDA driver or GPU found)",
            "run on a machine with an NVIDIA GPU; simulator times mean nothing"))


def import_cupy(what: str = "this baseline"):
    """``cupy`` (with ``cupyx.scipy.sparse``), or BackendUnavailable naming the extra."""
    try:
        import cupy
        import cupyx.scipy.sparse  # noqa: F401
    except Exception as exc:  # ImportError, or a CUDA library failing to load
        raise BackendUnavailable(problem(
            what, "CuPy (cuBLAS/cuSPARSE bindings)", f"{type(exc).__name__}: {exc}",
            "pip install -e .[gpu]   (installs cupy-cuda13x)")) from exc
    return cupy


def import_torch(what: str = "this baseline"):
    """``torch`` with CUDA, or BackendUnavailable naming the extra."""
    try:
        import torch
    except Exception as exc:
        raise BackendUnavailable(problem(
            what, "PyTorch with CUDA (cuSPARSE float16 CSR)", f"{type(exc).__name__}: {exc}",
            "pip install -e .[torch]   (a CUDA build of torch)")) from exc
    if not torch.cuda.is_available():
        raise BackendUnavailable(problem(what, "a CUDA build of torch that sees a GPU",
                                         f"torch {torch.__version__} with torch.cuda.is_available() False",
                                         "pip install -e .[torch] with a CUDA wheel, on a GPU machine"))
    return torch


def _available(importer, what: str) -> bool:
    try:
        importer(what)
        require_gpu(what)
        return True
    except BackendUnavailable:
        return False


def cupy_available() -> bool:
    return _available(import_cupy, "cupy")


def torch_available() -> bool:
    return _available(import_torch, "torch")
