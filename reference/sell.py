"""SELL-C, cuSPARSE's sliced ELLPACK layout (the third baseline of the CSR-dtANS paper).

Rows are cut into slices of ``slice_size`` consecutive rows (the last slice is padded with
empty rows to ``slice_size``). A slice is as wide as its longest row; every row of it is
padded to that width. The slice is stored column-major: slot ``j`` of local row ``r`` of
slice ``s`` sits at ``slice_offsets[s] + j * slice_size + r``, so a warp reading slot ``j``
of 32 rows touches 32 consecutive entries. Padding has column index -1 and value 0.
``slice_offsets`` (int32 [slices + 1]) starts at 0 and grows by ``width * slice_size`` per
slice. These are the arrays ``cusparseCreateSlicedEll`` takes (int32 offsets and columns,
zero-based); ``sellValuesSize`` is ``values.size``.

This is a plain NumPy layout builder for the ``cusparse_sell`` baseline
(``spmvlab.methods.cusparse_sell``), not a registered spmvlab format (no kernel of ours).
Its ``nbytes`` is ``reference.csr_dtans.cusparse_bytes(...)["sell"]``.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import scipy.sparse as sp

from ._common import FormatError, canonical_csr, problem, resolve_dtype

__all__ = ["SellMatrix", "encode", "to_csr", "spmv"]


@dataclasses.dataclass(frozen=True, eq=False)
class SellMatrix:
    """cuSPARSE sliced ELL (see the module docstring).

    slice_offsets : int32 [slices + 1]   first entry of every slice, then the entry count
    col_ind       : int32 [entries]      column of every entry, -1 for padding
    values        : float [entries]      value of every entry, 0 for padding
    shape         : (rows, cols)
    nnz           : stored nonzeros (entries that are not padding)
    slice_size    : rows per slice
    """

    slice_offsets: np.ndarray
    col_ind: np.ndarray
    values: np.ndarray
    shape: tuple
    nnz: int
    slice_size: int = 32

    @property
    def n_rows(self) -> int:
        return int(self.shape[0])

    @property
    def n_cols(self) -> int:
        return int(self.shape[1])

    @property
    def n_slices(self) -> int:
        return -(-self.n_rows // self.slice_size)

    @property
    def dtype(self) -> np.dtype:
        return self.values.dtype

    @property
    def n_entries(self) -> int:
        """Stored entries, padding included (cuSPARSE's ``sellValuesSize``)."""
        return int(self.values.size)

    @property
    def n_padding(self) -> int:
        return self.n_entries - int(self.nnz)

    @property
    def widths(self) -> np.ndarray:
        """Slots of every slice (its longest row)."""
        return np.diff(self.slice_offsets.astype(np.int64)) // self.slice_size

    @property
    def nbytes(self) -> int:
        return int(self.slice_offsets.nbytes + self.col_ind.nbytes + self.values.nbytes)

    def validate(self) -> "SellMatrix":
        """Raise :class:`FormatError` unless the arrays form a SELL matrix of ``shape``."""
        def req(ok, field, expected, received):
            if not ok:
                raise FormatError(problem(f"SellMatrix.{field}", expected, received,
                                          "rebuild with reference.sell.encode"))
        off, col = self.slice_offsets, self.col_ind
        req(self.slice_size >= 1, "slice_size", "a positive integer", self.slice_size)
        req(off.dtype == np.int32 and col.dtype == np.int32, "slice_offsets/col_ind",
            "int32 arrays", f"{off.dtype}/{col.dtype}")
        req(off.shape == (self.n_slices + 1,), "slice_offsets", f"shape ({self.n_slices + 1},)",
            off.shape)
        req(col.shape == self.values.shape == (int(off[-1]),), "col_ind/values",
            f"{int(off[-1])} entries each (slice_offsets[-1])", f"{col.shape}/{self.values.shape}")
        steps = np.diff(off.astype(np.int64))
        req(int(off[0]) == 0 and bool(np.all(steps >= 0)) and bool(np.all(steps % self.slice_size == 0)),
            "slice_offsets", f"0 then non-decreasing steps that are multiples of {self.slice_size}",
            off[:8].tolist())
        real = col >= 0
        req(bool(np.all(col >= -1)) and (col.size == 0 or int(col.max()) < self.n_cols), "col_ind",
            f"-1 (padding) or a column in [0, {self.n_cols})",
            f"range [{col.min() if col.size else '-'}, {col.max() if col.size else '-'}]")
        req(int(real.sum()) == self.nnz, "nnz", f"{int(real.sum())} non-padding entries", self.nnz)
        req(bool(np.all(self.values[~real] == 0)), "values", "0 at every padding entry",
            "a nonzero padding value")
        rows = self._entry_rows()
        req(bool(np.all(rows[real] < self.n_rows)), "col_ind", f"no entry in the padding rows "
            f">= {self.n_rows} of the last slice", "an entry there")
        return self

    def _entry_rows(self) -> np.ndarray:
        """Row of every stored entry (padding rows of the last slice included)."""
        n = self.n_entries
        if not n:
            return np.zeros(0, np.int64)
        sizes = np.diff(self.slice_offsets.astype(np.int64))
        slice_of = np.repeat(np.arange(self.n_slices, dtype=np.int64), sizes)
        local = np.arange(n, dtype=np.int64) - self.slice_offsets[slice_of].astype(np.int64)
        return slice_of * self.slice_size + local % self.slice_size


def encode(A, dtype=None, slice_size: int = 32, lossy: bool = False) -> SellMatrix:
    """Any scipy.sparse matrix or dense 2-D array -> :class:`SellMatrix` with int32 indices
    (row order kept: no sorting of rows by length, as cuSPARSE's SELL takes them)."""
    if int(slice_size) < 1:
        raise FormatError(problem("slice_size", "a positive integer", slice_size))
    slice_size = int(slice_size)
    dt = resolve_dtype(A, dtype)
    csr = canonical_csr(A, dt, lossy)
    n_rows = csr.shape[0]
    indptr = csr.indptr.astype(np.int64)
    lengths = np.diff(indptr)
    n_slices = -(-n_rows // slice_size)
    padded = np.zeros(n_slices * slice_size, np.int64)
    padded[:n_rows] = lengths
    widths = padded.reshape(n_slices, slice_size).max(axis=1) if n_slices else padded
    offsets = np.zeros(n_slices + 1, np.int64)
    np.cumsum(widths * slice_size, out=offsets[1:])
    total = int(offsets[-1])
    if total > np.iinfo(np.int32).max:
        raise FormatError(problem("SELL entries", "at most 2^31 - 1 (int32 slice offsets)", total,
                                  "use CSR or COO for this matrix"))
    col_ind = np.full(total, -1, np.int32)
    values = np.zeros(total, dt)
    rows = np.repeat(np.arange(n_rows, dtype=np.int64), lengths)
    slot = np.arange(csr.nnz, dtype=np.int64) - indptr[rows]
    pos = offsets[rows // slice_size] + slot * slice_size + rows % slice_size
    col_ind[pos] = csr.indices
    values[pos] = csr.data.astype(dt)
    return SellMatrix(slice_offsets=offsets.astype(np.int32), col_ind=col_ind, values=values,
                      shape=tuple(int(s) for s in csr.shape), nnz=int(csr.nnz), slice_size=slice_size)


def to_csr(S: SellMatrix) -> sp.csr_matrix:
    """The matrix back as canonical scipy CSR (padding dropped)."""
    S.validate()
    rows = S._entry_rows()
    real = S.col_ind >= 0
    A = sp.coo_matrix((S.values[real], (rows[real], S.col_ind[real].astype(np.int64))),
                      shape=S.shape).tocsr()
    A.sort_indices()
    return A


def spmv(S: SellMatrix, x: np.ndarray) -> np.ndarray:
    """y = S @ x in float64 from the layout itself (slot by slot, as a SELL kernel reads it):
    what the GPU baseline is checked against besides the exact product."""
    S.validate()
    x = np.asarray(x, dtype=np.float64)
    y = np.zeros(S.n_slices * S.slice_size)
    r = np.arange(S.slice_size)
    for s in range(S.n_slices):
        start = int(S.slice_offsets[s])
        for j in range(int(S.widths[s])):
            c = S.col_ind[start + j * S.slice_size + r]
            v = S.values[start + j * S.slice_size + r].astype(np.float64)
            ok = c >= 0
            y[s * S.slice_size + r[ok]] += v[ok] * x[c[ok]]
    return y[:S.n_rows]
