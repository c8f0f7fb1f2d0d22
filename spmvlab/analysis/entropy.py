"""Order-0 (empirical) entropies of a sparse matrix's symbols: what an entropy coder with one
static table per symbol domain can reach at best (dtANS paper, Sections III and IV-A).

* :func:`entropy_bits` -- bits per symbol of an array of symbols, ``-sum p log2 p`` over the
  empirical distribution (0 for fewer than two distinct symbols);
* :func:`column_deltas` -- the per-row delta coding of CSR column indices that CSR-dtANS
  uses (``reference.csr_dtans``): a row's first delta is its column, every further one the
  step from the previous column;
* :func:`csr_symbol_entropy` -- the order-0 bound of CSR-dtANS's two symbol domains:
  ``nnz * (H(deltas) + H(values))`` bits, values taken by their bit pattern in ``dtype``;
* :func:`table_bits` -- what the same symbols cost under an encoded matrix's own tables:
  ``log2(K / q)`` bits for a symbol with ``q`` of the ``K`` slots, plus the raw bits (whole
  words) of an escaped one. dtANS caps ``q`` at ``M`` (256 of 4096 slots: at least 4 bits
  per symbol, 8 per nonzero) and keeps at most ``K`` symbols per domain, so this is the
  bound the coder can reach with the paper's parameters; the word streams add the coder
  state (a few words per row) on top.

The bound is for the symbol streams alone: it counts no table, no per-row length or stream
start, and no coder state; an entropy coder spends at least this many bits on the streams.
"""
from __future__ import annotations

import numpy as np

from reference._common import canonical_csr, csr_value_array, resolve_dtype

__all__ = ["entropy_bits", "column_deltas", "csr_symbol_entropy", "table_bits"]


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
    from reference.csr_dtans import unit_deltas
    return unit_deltas(A.indptr, A.indices)


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


def _domain_bits(symbols: np.ndarray, kept: np.ndarray, counts: np.ndarray, K: int,
                 raw_bits: int) -> float:
    """Bits of ``symbols`` under one domain's stored table (kept symbols, their slot counts
    with the escape's last)."""
    if symbols.size == 0:
        return 0.0
    order = np.argsort(kept, kind="stable")
    ks, q = kept[order], counts[:-1].astype(np.float64)[order]
    at = np.searchsorted(ks, symbols)
    at_c = np.minimum(at, max(ks.size - 1, 0))
    hit = (ks.size > 0) & (ks[at_c] == symbols) if ks.size else np.zeros(symbols.size, bool)
    bits = np.zeros(symbols.size)
    if ks.size:
        bits[hit] = np.log2(K / q[at_c[hit]])
    n_esc = int(np.count_nonzero(~hit))
    if n_esc:
        q_esc = float(counts[-1])
        if q_esc <= 0:
            return float("inf")
        bits[~hit] = np.log2(K / q_esc) + raw_bits
    return float(bits.sum())


def table_bits(M, A=None) -> dict:
    """The ideal cost of the symbols of CSR-dtANS matrix ``M`` under its own tables (see the
    module docstring): ``delta_bits`` and ``value_bits`` in total bits, ``bound_bytes`` their
    sum / 8. ``A``: the canonical CSR ``M`` encodes (default: ``M.to_csr()``, slow for big
    matrices). Escaped symbols count ``log2(K / q_escape)`` plus their raw bits rounded up to
    whole words, as they are stored."""
    from reference.csr_dtans import delta_raw_bits, unit_deltas
    P = M.dtans_params
    csr = M.to_csr() if A is None else A
    dt = M.values.dtype
    u = np.dtype(f"u{dt.itemsize}")
    vsym = csr_value_array(csr, dt).view(u)
    dsym = unit_deltas(csr.indptr, csr.indices, M.lanes_per_row, M.first_delta, M.n_cols)
    wb = int(P.word_bits)
    raw_v = int(P.raw_words(8 * dt.itemsize)) * wb
    raw_d = int(P.raw_words(delta_raw_bits(M.n_cols))) * wb
    vb = _domain_bits(vsym, M.values.view(u), M.value_counts, int(P.K), raw_v)
    db = _domain_bits(dsym, M.delta_symbols(), M.delta_counts, int(P.K), raw_d)
    return dict(delta_bits=db, value_bits=vb, bound_bytes=(db + vb) / 8.0)
