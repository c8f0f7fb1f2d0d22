"""Helpers shared by the generators: argument checks, value draws, canonical CSR assembly."""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from reference._common import OptionError, ShapeError, index_dtype_for, problem, value_dtype


def _shape(shape, field: str = "shape") -> tuple[int, int]:
    try:
        r, c = (int(v) for v in shape)
        ok = r >= 0 and c >= 0 and all(int(v) == v for v in shape)
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise ShapeError(problem(field, "two non-negative ints (rows, cols)", repr(shape)))
    return r, c


def _count(x, field: str, minimum: int = 0, error: type = OptionError) -> int:
    """``x`` as an int ``>= minimum`` (integral floats accepted, like :func:`_shape`)."""
    try:
        v = int(x)
        ok = v >= minimum and v == x
    except (TypeError, ValueError, OverflowError):
        ok = False
    if not ok:
        raise error(problem(field, f"an int >= {minimum}", repr(x)))
    return v


def _fraction(x, field: str, fix: str = "pass e.g. 0.9 for 90% zeros") -> float:
    try:
        v = float(x)
    except (TypeError, ValueError):
        v = float("nan")
    if not 0.0 <= v <= 1.0:
        raise OptionError(problem(field, "a number in [0, 1]", repr(x), fix))
    return v


def _rng(seed) -> np.random.Generator:
    if isinstance(seed, np.random.Generator):
        return seed
    return np.random.default_rng(seed)


def _nonzero_normals(rng, n: int, dtype: np.dtype) -> np.ndarray:
    """``n`` standard-normal values of ``dtype`` with exact zeros (also from the cast) redrawn."""
    gen = np.float64 if dtype == np.float64 else np.float32
    v = rng.standard_normal(n, dtype=gen).astype(dtype, copy=False)
    zero = np.flatnonzero(v == 0)
    while zero.size:
        v[zero] = rng.standard_normal(zero.size, dtype=gen).astype(dtype)
        zero = zero[v[zero] == 0]
    return v


def _csr(shape, indptr, indices, data) -> sp.csr_matrix:
    idx = index_dtype_for(len(data), *shape)
    out = sp.csr_matrix((data, indices.astype(idx, copy=False), indptr.astype(idx, copy=False)),
                        shape=shape, copy=False)
    out.has_sorted_indices = True
    out.has_canonical_format = True
    return out


def _sparse_dtype(dtype) -> tuple[np.dtype, np.dtype]:
    """(value dtype asked for, dtype the scipy matrix stores: float32 for float16)."""
    dt = value_dtype(dtype)
    return dt, (np.dtype(np.float32) if dt == np.float16 else dt)
