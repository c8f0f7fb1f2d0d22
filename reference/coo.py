"""COO, the coordinate list: the row, the column and the value of every nonzero.

Stored row-major (sorted by row, then column), one entry per nonzero of the canonical input,
so ``to_csr`` returns it exactly and ``spmv``/``spmm`` sum each row in the same order as
``reference/csr.py`` (bit-identical results). It is the format cuSPARSE's COO routines
take, and the simplest format to read the shared protocol from.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import scipy.sparse as sp

from ._common import (
    SparseFormat, triplet_product, canonical_csr, check_operand, csr_from_arrays,
    csr_value_array, resolve_dtype, rowmajor_increasing,
)
from .csr import row_ids

__all__ = ["COOMatrix", "encode", "spmv", "spmm"]


@dataclasses.dataclass(frozen=True, eq=False, repr=False)
class COOMatrix(SparseFormat):
    """Coordinate list, row-major.

    rows    : int32/int64 [nnz]       row of each stored value, non-decreasing
    cols    : int32/int64 [nnz]       column of each stored value, increasing within a row
    values  : float16/32/64 [nnz]     the nonzeros
    """

    rows: np.ndarray
    cols: np.ndarray
    values: np.ndarray
    shape: tuple

    format_name = "coo"

    @property
    def nnz(self) -> int:
        return int(self.values.size)

    def indptr(self) -> np.ndarray:
        """CSR row pointers of the entries (int64 [rows + 1])."""
        return np.concatenate(([0], np.cumsum(np.bincount(self.rows, minlength=self.n_rows))))

    def to_csr(self) -> sp.csr_matrix:
        self.validate(expensive=True)
        return csr_from_arrays(self.shape, self.indptr(), self.cols, self.values)

    def _check_arrays(self):
        """rows and cols: one index per value, the same index dtype."""
        for name in ("rows", "cols"):
            self._check_index_array(name, getattr(self, name), self.values.size)
        self._require(self.cols.dtype == self.rows.dtype, "cols.dtype",
                      f"{self.rows.dtype} (same as rows)", self.cols.dtype)

    def _check_entries(self, canonical: bool):
        """Every index in range and rows non-decreasing (the kernels search them);
        canonical: entries strictly increasing in (row, column), no explicit zeros."""
        if not self.nnz:
            return
        for name, a, n in (("rows", self.rows, self.n_rows), ("cols", self.cols, self.n_cols)):
            lo, hi = int(a.min()), int(a.max())
            self._require(lo >= 0 and hi < n, name, f"indices in [0, {n})", f"range [{lo}, {hi}]")
        self._require(bool(np.all(self.rows[1:] >= self.rows[:-1])), "rows",
                      "non-decreasing rows (row-major order)", "a decreasing step")
        if canonical:
            self._require(rowmajor_increasing(self.rows, self.cols), "rows/cols",
                          "entries strictly increasing in (row, column)", "unsorted or repeated")
            self._require(bool(np.all(self.values != 0)), "values", "no explicit zeros",
                          "a stored zero", "re-encode with reference.coo.encode")


def encode(A, dtype=None, lossy: bool = False) -> COOMatrix:
    """Any scipy.sparse matrix or dense 2-D array -> canonical :class:`COOMatrix`.

    ``lossy``: accept values that overflow or underflow in ``dtype`` (see ``canonical_csr``)."""
    dt = resolve_dtype(A, dtype)
    csr = canonical_csr(A, dt, lossy)
    idx = csr.indices.dtype
    return COOMatrix(rows=row_ids(csr.indptr).astype(idx), cols=np.ascontiguousarray(csr.indices),
                     values=csr_value_array(csr, dt), shape=tuple(int(s) for s in csr.shape))


def spmv(M: COOMatrix, x: np.ndarray) -> np.ndarray:
    """y = M @ x, products and sums in the accumulator type, y in M's value type. ``M`` is
    validated fully first (:class:`FormatError` if inconsistent)."""
    M = COOMatrix.checked(M)
    x = check_operand(np.asarray(x) if not hasattr(x, "dtype") else x, M.n_cols, M.dtype)
    return triplet_product(M.rows, M.cols, M.values, M.n_rows, x, M.dtype)


def spmm(M: COOMatrix, X: np.ndarray) -> np.ndarray:
    """Y = M @ X for X of shape (n_cols, k); Y has shape (n_rows, k)."""
    M = COOMatrix.checked(M)
    X = check_operand(X, M.n_cols, M.dtype, name="X", ndim=2)
    return triplet_product(M.rows, M.cols, M.values, M.n_rows, X, M.dtype)
