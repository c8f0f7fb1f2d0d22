"""Where the real data lives: :func:`data_dir` (``$SPMVLAB_DATA``) and :func:`cache_dir`."""
from __future__ import annotations

import os
from pathlib import Path

from reference._common import problem

from ..errors import DatasetError

_REPO_ROOT = Path(__file__).resolve().parents[2]   # <root>/spmvlab/datasets/_paths.py


def data_dir() -> Path:
    """The real-data directory: ``$SPMVLAB_DATA``, else ``<repo root>/../shared/data``.

    Raises :class:`DatasetError` when neither exists.
    """
    env = os.environ.get("SPMVLAB_DATA")
    if env:
        p = Path(env).expanduser()
        if not p.is_dir():
            raise DatasetError(problem("SPMVLAB_DATA", "an existing directory", repr(env),
                                       "point SPMVLAB_DATA at the folder holding suitesparse/ "
                                       "and weights/, or unset it"))
        return p
    default = _REPO_ROOT.parent / "shared" / "data"
    if default.is_dir():
        return default
    raise DatasetError(problem("data directory", f"$SPMVLAB_DATA or {default}", "neither exists",
                               "set SPMVLAB_DATA to the folder holding suitesparse/ and weights/ "
                               "(SuiteSparse matrices can also be downloaded by name, "
                               "e.g. suitesparse('HB/bcsstk13'))"))


def _data_subdir(name: str) -> Path | None:
    try:
        p = data_dir() / name
    except DatasetError:
        return None
    return p if p.is_dir() else None


def cache_dir() -> Path:
    """spmvlab's download cache: ``$SPMVLAB_CACHE``, else ``~/.cache/spmvlab``.

    SuiteSparse downloads go into its ``suitesparse/`` subfolder. Not created here.
    """
    env = os.environ.get("SPMVLAB_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "spmvlab"
