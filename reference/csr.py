"""CSR, the reference every other format is checked against.

``encode`` canonicalises any input (sorted indices, duplicates summed, explicit zeros
dropped, int32 indices unless a count needs int64); ``spmv``/``spmm`` are plain NumPy with
the accumulation type the kernels use (float32 for float16/float32 values, float64 for
float64), so NaN and Inf propagate exactly as in a sum of products.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import scipy.sparse as sp

from ._common import (
    SparseFormat, accumulator_dtype, canonical_csr, check_operand, csr_from_arrays,
    csr_value_array, resolve_dtype, rowmajor_increasing,
)

__all__ = ["CSRMatrix", "encode", "spmv", "spmm", "row_ids"]


@dataclasses.dataclass(frozen=True, eq=False, repr=False)
class CSRMatrix(SparseFormat):
    """Compressed sparse rows.

    indptr  : int32/int64 [rows + 1]  start of each row in ``indices``/``values``
    indices : int32/int64 [nnz]       column of each stored value, sorted within a row
    values  : float16/32/64 [nnz]     the nonzeros in row-major order
    """

    indptr: np.ndarray
    indices: np.ndarray
    values: np.ndarray
    shape: tuple

    format_name = "csr"

    @property
    def nnz(self) -> int:
        return int(self.values.size)

    def to_csr(self) -> sp.csr_matrix:
        self.validate(expensive=True)
        return csr_from_arrays(self.shape, self.indptr, self.indices, self.values)

    def _check_arrays(self):
        """indptr (rows + 1 non-decreasing pointers from 0 to nnz), indices of the same
        length and index dtype as the values."""
        self._check_indptr("indptr", self.indptr, self.n_rows, self.values.size)
        self._check_index_array("indices", self.indices, self.values.size)
        self._require(self.indices.dtype == self.indptr.dtype, "indices.dtype",
                      f"{self.indptr.dtype} (same as indptr)", self.indices.dtype)

    def _check_entries(self, canonical: bool):
        """Every column in [0, cols); canonical: strictly increasing within each row, no
        explicit zeros."""
        if not self.indices.size:
            return
        n_cols = self.n_cols
        lo, hi = int(self.indices.min()), int(self.indices.max())
        self._require(lo >= 0 and hi < n_cols, "indices", f"columns in [0, {n_cols})",
                      f"range [{lo}, {hi}]")
        if canonical:
            self._require(rowmajor_increasing(row_ids(self.indptr), self.indices), "indices",
                          "strictly increasing columns within each row", "unsorted or repeated")
            self._require(bool(np.all(self.values != 0)), "values", "no explicit zeros",
                          "a stored zero", "re-encode with reference.csr.encode")


def encode(A, dtype=None, lossy: bool = False) -> CSRMatrix:
    """Any scipy.sparse matrix or dense 2-D array -> canonical :class:`CSRMatrix`.

    ``lossy``: accept values that overflow or underflow in ``dtype`` (see ``canonical_csr``)."""
    dt = resolve_dtype(A, dtype)
    csr = canonical_csr(A, dt, lossy)
    return CSRMatrix(indptr=np.ascontiguousarray(csr.indptr), indices=np.ascontiguousarray(csr.indices),
                     values=csr_value_array(csr, dt), shape=tuple(int(s) for s in csr.shape))


def row_ids(indptr: np.ndarray) -> np.ndarray:
    """Row index of every stored entry."""
    return np.repeat(np.arange(indptr.size - 1, dtype=np.int64), np.diff(indptr))


def spmv(M: CSRMatrix, x: np.ndarray) -> np.ndarray:
    """y = M @ x, products and sums in the accumulator type, y in M's value type. ``M`` is
    validated fully first (:class:`FormatError` if inconsistent)."""
    M = CSRMatrix.checked(M)
    x = check_operand(np.asarray(x) if not hasattr(x, "dtype") else x, M.n_cols, M.dtype)
    acc = accumulator_dtype(M.dtype)
    products = M.values.astype(acc) * np.asarray(x).astype(acc)[M.indices]
    y = np.zeros(M.n_rows, dtype=acc)
    np.add.at(y, row_ids(M.indptr), products)
    return y.astype(M.dtype)


def spmm(M: CSRMatrix, X: np.ndarray) -> np.ndarray:
    """Y = M @ X for X of shape (n_cols, k); Y has shape (n_rows, k)."""
    M = CSRMatrix.checked(M)
    X = check_operand(X, M.n_cols, M.dtype, name="X", ndim=2)
    acc = accumulator_dtype(M.dtype)
    products = M.values.astype(acc)[:, None] * np.asarray(X).astype(acc)[M.indices, :]
    Y = np.zeros((M.n_rows, X.shape[1]), dtype=acc)
    np.add.at(Y, row_ids(M.indptr), products)
    return Y.astype(M.dtype)
