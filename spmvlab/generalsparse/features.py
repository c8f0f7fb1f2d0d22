"""Matrix features of GeneralSparse's cost model (paper Sec. 3.4: "the characteristics of the
sparse matrix (e.g. row numbers, column numbers, average non-zero elements per row ...)" and
the column count of the dense matrix).

:func:`features` returns a dict of plain floats, :data:`FEATURE_NAMES` in order:

rows, cols, nnz, density          the shape and fill of A
row_mean, row_var, row_max        nonzeros per row: mean, variance, maximum
row_cv, empty_rows                coefficient of variation of the row lengths, fraction of empty rows
gap16                             fraction of in-row column gaps <= 16 (locality of the columns)
row_overlap                       fraction of nonzeros whose column is also a nonzero of the row
                                  above (similarity of adjacent rows; multi-row workers reuse it)
block4_fill                       nonzeros / (16 x the non-empty 4x4 tiles): 1 for 4x4 block
                                  pruning, about 1 - s ... for scattered nonzeros
N                                 columns of B
value_bytes                       bytes per value (2 for float16, 4 for float32)

The pattern statistics (gap16, row_overlap, block4_fill) are taken on at most
``sample_rows`` rows (whole groups of 4 consecutive rows, evenly spaced, so the result is
deterministic) to stay cheap on 100M-nonzero weight matrices; the rest on every row.

:func:`design` turns features into the regression's input vector (:data:`DESIGN_NAMES`):
a constant, the logarithms of the size features (time grows like a power of them), the
fractions as they are.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from reference._common import ShapeError, problem

__all__ = ["FEATURE_NAMES", "DESIGN_NAMES", "features", "design"]

FEATURE_NAMES = ("rows", "cols", "nnz", "density", "row_mean", "row_var", "row_max", "row_cv",
                 "empty_rows", "gap16", "row_overlap", "block4_fill", "N", "value_bytes")

#: the regression inputs: log(1 + x) of the size features, the fractions unchanged
_LOG = ("rows", "cols", "nnz", "row_mean", "row_var", "row_max", "N")
_LINEAR = ("density", "row_cv", "empty_rows", "gap16", "row_overlap", "block4_fill", "value_bytes")
DESIGN_NAMES = ("const",) + tuple(f"log_{n}" for n in _LOG) + _LINEAR


def _csr(A) -> sp.csr_matrix:
    if not sp.issparse(A):
        A = np.asarray(A)
        if A.ndim != 2:
            raise ShapeError(problem("A", "a 2-D matrix", f"{A.ndim}-D array"))
        return sp.csr_matrix(A)
    A = A.tocsr()
    if not A.has_sorted_indices:
        A = A.sorted_indices()
    return A


def _sample(A: sp.csr_matrix, sample_rows: int) -> sp.csr_matrix:
    """Evenly spaced groups of 4 consecutive rows, at most ``sample_rows`` rows in all."""
    m = A.shape[0]
    if m <= sample_rows:
        return A
    groups = max(1, sample_rows // 4)
    starts = np.linspace(0, max(m - 4, 0), groups).astype(np.int64) // 4 * 4
    rows = np.unique((starts[:, None] + np.arange(4)[None, :]).ravel())
    return A[rows[rows < m]]


def _mark_limit(nnz: int) -> int:
    """Positions up to which counting through a boolean mark array (a byte per position)
    beats hashing or sorting the nonzeros' keys: a few bytes per nonzero."""
    return 8 * int(nnz) + (1 << 20)


def _pattern_stats(S: sp.csr_matrix) -> tuple[float, float, float]:
    indptr, indices = S.indptr.astype(np.int64), S.indices.astype(np.int64)
    nnz = indices.size
    if nnz == 0:
        return 0.0, 0.0, 0.0
    # in-row gaps: consecutive entries of one row
    same_row = np.ones(nnz, dtype=bool)
    same_row[indptr[1:-1][indptr[1:-1] < nnz]] = False
    same_row[0] = False
    gaps = np.diff(indices)[same_row[1:]]
    gap16 = float(np.mean(gaps <= 16)) if gaps.size else 1.0
    row = np.repeat(np.arange(S.shape[0], dtype=np.int64), np.diff(indptr))
    m, k = S.shape
    # adjacent-row overlap: entries (r, c) with (r - 1, c) also an entry
    if m <= 1:
        overlap = 0.0
    elif m * k <= _mark_limit(nnz):     # a mark per position: faster than sparse products
        seen = np.zeros(m * k, dtype=bool)
        key = row * k + indices
        seen[key] = True
        below = key[indptr[1]:] - k     # the entries of rows 1.. looked up one row up
        overlap = float(np.count_nonzero(seen[below])) / nnz
    else:
        P = S.copy()
        P.data = np.ones_like(P.data, dtype=np.float32)
        overlap = float(P[1:].multiply(P[:-1]).nnz) / nnz
    # 4x4 tiles
    per_band = (k + 3) // 4
    key = (row // 4) * per_band + indices // 4
    span = ((m + 3) // 4) * per_band
    if span <= _mark_limit(nnz):
        seen = np.zeros(span, dtype=bool)
        seen[key] = True
        tiles = int(np.count_nonzero(seen))
    else:
        tiles = np.unique(key).size
    fill = float(nnz) / (16.0 * tiles)
    return gap16, overlap, fill


def features(A, N: int, dtype="float32", sample_rows: int = 8192) -> dict:
    """The features of ``A`` (scipy sparse or dense 2-D) multiplied by a B of ``N`` columns,
    values in ``dtype``."""
    if not isinstance(N, (int, np.integer)) or isinstance(N, bool) or N < 1:
        raise ShapeError(problem("N", "the number of columns of B, an integer >= 1", repr(N)))
    A = _csr(A)
    m, k = A.shape
    lengths = np.diff(A.indptr).astype(np.float64)
    nnz = float(A.nnz)
    mean = float(lengths.mean()) if m else 0.0
    var = float(lengths.var()) if m else 0.0
    gap16, overlap, fill = _pattern_stats(_sample(A, sample_rows))
    return dict(rows=float(m), cols=float(k), nnz=nnz, density=nnz / max(m * k, 1),
                row_mean=mean, row_var=var, row_max=float(lengths.max(initial=0.0)),
                row_cv=float(np.sqrt(var) / mean) if mean > 0 else 0.0,
                empty_rows=float(np.mean(lengths == 0)) if m else 0.0,
                gap16=gap16, row_overlap=overlap, block4_fill=fill, N=float(N),
                value_bytes=float(np.dtype(dtype).itemsize))


def design(feats) -> np.ndarray:
    """The regression input of one feature dict (or a list of them: one row each)."""
    if isinstance(feats, dict):
        return design([feats])[0]
    out = np.empty((len(feats), len(DESIGN_NAMES)), dtype=np.float64)
    for i, f in enumerate(feats):
        out[i] = [1.0] + [np.log1p(float(f[n])) for n in _LOG] + [float(f[n]) for n in _LINEAR]
    return out
