"""The one correctness check: every timed method and every kernel test compares its result
with the float64 product of the *stored* values through this module.

Bound (one table, per value dtype). With ``S_i = sum_j |a_ij x_j|`` and ``n_i`` the stored
entries of row i, a result ``y_i`` is accepted when

    |y_i - exact_i| <= OUT_EPS[dtype] * |exact_i| + 2 * (n_i + 1) * ACC_EPS[dtype] * S_i + FLOOR[dtype]

The first term is the final rounding to the output dtype, the second the standard bound for
a sum of n products accumulated in float32 (float16/float32 values) or float64 in any order
(with a factor 2 of room for accumulators that truncate), the third absorbs subnormals.

Where ``exact`` is not finite (NaN/Inf in the data) the result must be the same NaN or the
same infinity. Where ``exact`` is finite the result must be finite too, except where the
output dtype itself overflows (then +/-Inf of the right sign is the correct rounding). So a
kernel that returns NaN or Inf where the exact product is finite fails.

Plain NumPy/SciPy: importing this module imports no numba.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import scipy.sparse as sp

from reference._common import ShapeError, problem

__all__ = ["OUT_EPS", "ACC_EPS", "FLOOR", "Check", "Reference", "reference_product", "compare",
           "relative_error"]

OUT_EPS = {np.dtype(np.float16): 2.0**-10, np.dtype(np.float32): 2.0**-23, np.dtype(np.float64): 2.0**-52}
ACC_EPS = {np.dtype(np.float16): 2.0**-23, np.dtype(np.float32): 2.0**-23, np.dtype(np.float64): 2.0**-52}
FLOOR = {np.dtype(np.float16): 2.0**-24, np.dtype(np.float32): 2.0**-140, np.dtype(np.float64): 2.0**-1060}


@dataclasses.dataclass(frozen=True)
class Reference:
    """The float64 product of the stored values, computed once and compared many times.

    exact   A @ X in float64 (shape (rows,) or (rows, k))
    scale   |A| @ |X|, the S of the bound
    counts  stored entries per row, shaped to broadcast against ``exact``
    """

    exact: np.ndarray
    scale: np.ndarray
    counts: np.ndarray


def _as_csr(A) -> sp.csr_matrix | None:
    """scipy CSR of a scipy matrix or an encoded matrix (``to_csr``); None for dense input."""
    if sp.issparse(A):
        return sp.csr_matrix(A)
    if hasattr(A, "to_csr"):
        return A.to_csr()
    return None


def reference_product(A, X) -> Reference:
    """:class:`Reference` of ``A @ X``: ``A`` a scipy matrix, an encoded matrix or a dense
    2-D array holding the stored values; ``X`` a vector or a (cols, k) matrix."""
    X64 = np.asarray(X, dtype=np.float64)
    csr = _as_csr(A)
    with np.errstate(invalid="ignore", over="ignore"):
        if csr is not None:
            A64 = csr.astype(np.float64)
            exact = np.asarray(A64 @ X64)
            A64.data = np.abs(A64.data)
            scale = np.asarray(A64 @ np.abs(X64))
            counts = np.diff(csr.indptr).astype(np.float64)
        else:
            A64 = np.asarray(A, dtype=np.float64)
            exact = A64 @ X64
            scale = np.abs(A64) @ np.abs(X64)
            counts = np.full(A64.shape[0], float(A64.shape[1]))
    return Reference(exact=exact, scale=scale, counts=counts.reshape((-1,) + (1,) * (exact.ndim - 1)))


@dataclasses.dataclass(frozen=True)
class Check:
    """Outcome of comparing one result with the exact product.

    passed       every element within the bound (see the module docstring)
    n_bad        elements outside it (NaN/Inf where the exact product is finite count)
    max_rel_err  worst |y - exact| / S over the elements (inf if one is NaN or Inf where
                 the exact product is finite; rows with S = 0 must be exactly 0)
    worst        (first bad index, y, exact, bound) of the first failing element, else None
    """

    passed: bool
    n_bad: int
    max_rel_err: float
    worst: tuple | None = None

    def as_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d["worst"] = list(self.worst) if self.worst else None
        return d


def compare(y, ref: Reference, dtype) -> Check:
    """Check a result ``y`` (host array) against a :class:`Reference` for value ``dtype``."""
    dtype = np.dtype(dtype)
    yy = np.asarray(y, dtype=np.float64)
    exact, S, n = ref.exact, ref.scale, ref.counts
    if yy.shape != exact.shape:
        raise ShapeError(problem("result", f"shape {exact.shape}", yy.shape))
    finite = np.isfinite(exact)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        err = np.abs(yy - exact)
        bound = OUT_EPS[dtype] * np.abs(exact) + 2 * (n + 1) * ACC_EPS[dtype] * S + FLOOR[dtype]
        if dtype == np.float64:
            overflow = np.zeros_like(finite)
        else:
            overflow = finite & ~np.isfinite(exact.astype(dtype))
        near = np.abs(exact) + bound >= np.finfo(dtype).max   # rounding may still overflow
        ok_finite = finite & (err <= bound)
        rel = np.where(S > 0, err / np.where(S > 0, S, 1.0), np.where(err == 0, 0.0, np.inf))
    ok_overflow = (overflow | near) & np.isinf(yy) & (np.sign(yy) == np.sign(exact))
    ok_nan = ~finite & np.isnan(exact) & np.isnan(yy)
    ok_inf = ~finite & np.isinf(exact) & (yy == exact)
    ok = ok_finite | ok_overflow | ok_nan | ok_inf
    rel = np.where(finite & ~ok_overflow, np.where(np.isnan(rel), np.inf, rel), 0.0)
    bad = np.argwhere(~ok)
    worst = None
    if bad.size:
        i = tuple(int(v) for v in bad[0])
        worst = (list(i), float(yy[i]), float(exact[i]), float(bound[i]))
    return Check(passed=not bad.size, n_bad=int(bad.shape[0]),
                 max_rel_err=float(rel.max()) if rel.size else 0.0, worst=worst)


def relative_error(y, A=None, X=None, dtype=None, ref: Reference | None = None) -> Check:
    """:func:`compare` ``y`` with ``A @ X`` (or a precomputed ``ref``); ``dtype`` defaults to
    A's value dtype."""
    dt = np.dtype(dtype) if dtype is not None else np.dtype(getattr(A, "dtype", np.float32))
    return compare(y, ref if ref is not None else reference_product(A, X), dt)
