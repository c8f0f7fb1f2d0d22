"""Transformer weight matrices from ``<data_dir>/weights`` (``.npy``, or ``.safetensors``).

A module-private name: the package's ``weights`` is the function of that name.
"""
from __future__ import annotations

import difflib
from pathlib import Path

import numpy as np

from reference._common import VALUE_DTYPES, ShapeError, problem, value_dtype

from ..errors import BackendUnavailable, DatasetError
from ._files import read_npy
from ._paths import _data_subdir


def _have_safetensors() -> bool:
    import importlib.util  # noqa: PLC0415

    return importlib.util.find_spec("safetensors") is not None


def _weights_files() -> dict[str, Path]:
    d = _data_subdir("weights")
    if d is None:
        return {}
    sufs = (".npy", ".safetensors") if _have_safetensors() else (".npy",)
    found: dict[str, Path] = {}
    for f in sorted(d.iterdir()):
        if f.suffix in sufs and f.is_file():
            found.setdefault(f.stem, f)
    return found


def weights_names() -> list[str]:
    """Sorted names of the weight matrices in ``<data_dir>/weights`` (file stems)."""
    return sorted(_weights_files())


def weights(name: str, dtype=np.float32) -> np.ndarray:
    """A real weight matrix (dense, out_features x in_features) in ``dtype`` (``None``: as
    stored, integer/boolean values as float64 and other floats as float32).

    ``name`` is a file stem of ``<data_dir>/weights/<name>.npy`` (or ``.safetensors`` when the
    ``safetensors`` package is installed; ``name:tensor`` picks one tensor of a file holding
    several).
    """
    dt = None if dtype is None else value_dtype(dtype)
    stem, _, tensor = str(name).partition(":")
    stem = stem[:-4] if stem.endswith(".npy") else stem
    stem = stem[:-12] if stem.endswith(".safetensors") else stem
    files = _weights_files()
    path = files.get(stem)
    if path is None:
        d = _data_subdir("weights")
        st = d / f"{stem}.safetensors" if d is not None else None
        if st is not None and st.is_file():
            raise BackendUnavailable(problem(f"weights {name!r}", "the safetensors package",
                                             "not installed", "pip install safetensors"))
        if not files:
            raise DatasetError(problem("weights name", "the name of a file in <data>/weights",
                                       f"{name!r}, and no weights folder was found",
                                       "set SPMVLAB_DATA to the folder holding weights/"))
        close = difflib.get_close_matches(stem, files, n=3, cutoff=0.5)
        hint = (f"did you mean {' or '.join(repr(c) for c in close)}?" if close
                else "spmvlab.datasets.weights_names() lists them")
        raise DatasetError(problem("weights name", f"one of {sorted(files)}", repr(name), hint))
    if path.suffix == ".npy":
        arr = read_npy(path)
    else:
        from safetensors.numpy import load_file  # noqa: PLC0415

        tensors = load_file(str(path))
        if tensor:
            if tensor not in tensors:
                raise DatasetError(problem(f"tensor of {path.name}", f"one of {sorted(tensors)}",
                                           repr(tensor)))
            arr = tensors[tensor]
        elif len(tensors) == 1:
            arr = next(iter(tensors.values()))
        else:
            raise DatasetError(problem(f"weights {name!r}",
                                       "a file with one tensor, or name:tensor",
                                       f"{len(tensors)} tensors",
                                       f"use {stem}:<one of {sorted(tensors)}>"))
    if arr.ndim != 2:
        raise ShapeError(problem(f"weights {name!r}", "a 2-D matrix", f"shape {arr.shape}"))
    if dt is None:
        dt = (arr.dtype if arr.dtype in VALUE_DTYPES
              else np.dtype(np.float64 if arr.dtype.kind in "iub" else np.float32))
    return np.ascontiguousarray(arr, dtype=dt)

