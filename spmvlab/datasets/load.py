"""Anything -> canonical CSR: :func:`load_matrix` (a file, a SuiteSparse or a weights name);
:func:`load_dense` for the dense sources (``.npy`` files, weights) that are to be pruned."""
from __future__ import annotations

import difflib
import os
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from reference._common import DTypeError, ShapeError, canonical_csr, problem, value_dtype

from ..errors import DatasetError
from ._suitesparse import (
    _MTX_SUFFIXES, _NAME_RE, _read_mtx, _resolve_suitesparse, download_suitesparse,
    suitesparse_names,
)
from ._files import read_npy
from ._weights import _weights_files, weights


def _source(spec) -> tuple[str, object]:
    """Where ``spec`` points, without reading it: ("mtx", path), ("npy", path),
    ("weights", name) or ("download", 'Group/Name'). Tried in the order :func:`load_matrix`
    documents; anything else raises :class:`DatasetError`."""
    s = str(spec)
    path = Path(s).expanduser()
    if path.is_file():
        if s.endswith(_MTX_SUFFIXES):
            return "mtx", path
        if path.suffix == ".npy":
            return "npy", path
        raise DatasetError(problem(f"file {path}", "a .mtx, .mtx.gz or .npy file",
                                   f"suffix {''.join(path.suffixes) or '(none)'}"))
    full, local = _resolve_suitesparse(s)
    if local is not None:
        return "mtx", local
    wfiles = _weights_files()
    wstem = s.partition(":")[0]
    if wstem in wfiles or (wstem.endswith(".npy") and wstem[:-4] in wfiles):
        return "weights", s
    looks_like_file = (s.endswith(_MTX_SUFFIXES + (".npy", ".safetensors"))
                       or (os.sep in s and not _NAME_RE.match(s)))
    if looks_like_file:
        raise DatasetError(problem("MATRIX", "an existing file", repr(s), "check the path"))
    if _NAME_RE.match(full):
        return "download", full
    known = suitesparse_names() + sorted(wfiles)
    close = difflib.get_close_matches(s, known + [k.split("/", 1)[1] for k in known if "/" in k],
                                      n=3, cutoff=0.6)
    raise DatasetError(problem(
        "MATRIX", "a .mtx/.mtx.gz/.npy path, a SuiteSparse name or a weights name", repr(s),
        (f"did you mean {' or '.join(repr(c) for c in close)}? " if close else "")
        + f"use one of the SuiteSparse matrices {suitesparse_names()} or weights {sorted(wfiles)}"))


def _dense(kind: str, where) -> np.ndarray:
    """The array of a dense source as stored (integer/boolean values as float64)."""
    if kind == "weights":
        return weights(where, None)
    arr = read_npy(where)
    if arr.ndim != 2:
        raise ShapeError(problem(f"file {where}", "a 2-D array", f"shape {arr.shape}"))
    if arr.dtype.kind not in "fiub":
        raise DTypeError(problem(f"file {where}", "a real numeric array", f"dtype {arr.dtype}"))
    return arr if arr.dtype.kind == "f" else arr.astype(np.float64)


def load_matrix(spec, dtype=None, lossy: bool = False) -> sp.csr_matrix:
    """Canonical scipy CSR from a path, a SuiteSparse name or a weights name.

    ``spec`` is tried as: an existing ``.mtx``/``.mtx.gz``/``.npy`` file (a dense 2-D ``.npy``
    becomes CSR, its zeros dropped); a SuiteSparse matrix available locally ('HB/bcsstk13',
    'HB__bcsstk13', or a unique bare 'bcsstk13'); a weights name; finally a 'Group/Name' that is
    downloaded from the collection. ``dtype=None`` keeps floating values as they are (weights:
    float32) and converts integer/pattern values to float64; values that overflow or underflow
    in ``dtype`` raise ``LossyConversionError`` unless ``lossy=True`` (``canonical_csr``).
    """
    kind, where = _source(spec)
    dt = None if dtype is None else value_dtype(dtype)
    if kind in ("mtx", "download"):
        path = where if kind == "mtx" else download_suitesparse(where)
        return _read_mtx(path, dt or np.float64, lossy)
    arr = _dense(kind, where)
    # converted once, here, so that the lossy check sees the values as stored
    return canonical_csr(arr, dt or (np.float32 if kind == "weights" else arr.dtype), lossy)


def load_dense(spec) -> np.ndarray:
    """The dense 2-D array of a ``.npy`` file or a weights name, as stored (integer/boolean
    values as float64), e.g. to prune it (:func:`~spmvlab.datasets.prune`). A sparse source
    (a Matrix Market file or a SuiteSparse name) raises :class:`DatasetError`."""
    kind, where = _source(spec)
    if kind in ("mtx", "download"):
        raise DatasetError(problem(
            "MATRIX", "a dense matrix (a 2-D .npy file or a weights name)",
            f"{str(spec)!r}, a sparse Matrix Market matrix",
            "pruning is for dense weights; a sparse matrix is used as it is"))
    return _dense(kind, where)
