"""Order-0 (empirical) entropies of a sparse matrix's symbols: what an entropy coder with one
static table per symbol domain can reach at best (dtANS paper, Sections III and IV-A).

* :func:`entropy_bits` -- bits per symbol of an array of symbols, ``-sum p log2 p`` over the
  empirical distribution (0 for fewer than two distinct symbols);
* :func:`column_deltas` -- the per-row delta coding of CSR column indices that CSR-dtANS
  uses (``reference.csr_dtans``): a row's first delta is its column, every further one the
  step from the previous column;
* :func:`csr_symbol_entropy` -- the order-0 bound of CSR-dtANS's two symbol domains:
  ``nnz * (H(deltas) + H(values))`` bits, values taken by their bit pattern in ``dtype``.

The bound is for the symbol streams alone: it counts no table, no per-row length or stream
start, and no coder state; an entropy coder spends at least this many bits on the streams.
"""
from __future__ import annotations

import numpy as np

from reference._common import canonical_csr, csr_value_array, resolve_dtype

__all__ = ["entropy_bits", "column_deltas", "csr_symbol_entropy"]


def entropy_bits(symbols) -> float:
    """Empirical order-0 entropy of ``symbols`` (any 1-D array of integers or floats, compared
    by value) in bits per symbol."""
    a = np.asarray(symbols).ravel()
    if a.size == 0:
        return 0.0
    if a.dtype.kind in "iu" and a.size and int(a.min()) >= 0 and int(a.max()) < 4 * a.size + 1024:
        counts = np.bincount(a.astype(np.int64))
        counts = counts[counts > 0]
    else:
        counts = np.unique(a, return_counts=True)[1]
    if counts.size < 2:
        return 0.0
    p = counts / a.size
    return float(-(p * np.log2(p)).sum())


def column_deltas(A) -> np.ndarray:
    """The delta-coded column index of every nonzero of canonical CSR ``A`` (int64): the
    column for a row's first nonzero, else the step from the previous nonzero's column."""
    indptr = np.asarray(A.indptr, dtype=np.int64)
    cols = np.asarray(A.indices, dtype=np.int64)
    d = np.diff(cols, prepend=0)
    starts = indptr[:-1][np.diff(indptr) > 0]
    d[starts] = cols[starts]
    return d


def csr_symbol_entropy(A, dtype=None, lossy: bool = False) -> dict:
    """The order-0 entropies of ``A``'s CSR-dtANS symbols with values in ``dtype``:
    ``delta_bits`` and ``value_bits`` (bits per symbol of each domain), ``column_bits`` (of the
    plain column indices, for comparison), ``nnz`` and ``bound_bytes`` = ``nnz * (delta_bits +
    value_bits) / 8``."""
    dt = resolve_dtype(A, dtype)
    csr = canonical_csr(A, dt, lossy)
    vals = csr_value_array(csr, dt)
    ubits = vals.view(np.dtype(f"u{dt.itemsize}"))
    hd = entropy_bits(column_deltas(csr))
    hv = entropy_bits(ubits)
    hc = entropy_bits(csr.indices)
    nnz = int(csr.nnz)
    return dict(nnz=nnz, delta_bits=hd, value_bits=hv, column_bits=hc,
                bound_bytes=nnz * (hd + hv) / 8.0)
