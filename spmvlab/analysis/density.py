"""Effective density of sparse formats (MACKO paper, Sec. 3.2 and 4.2, eqs. 4-10).

The *effective density* of a storage format is its size relative to the dense matrix:
``effd = storage_bits / (rows * cols * b_val)`` for ``b_val``-bit values (paper eq. 2). A dense
matrix has ``effd = 1``; an ideal format storing only the nonzeros would have ``effd = d``,
the density ``d = nnz / (rows * cols)``.

The formulas below are the paper's: like the paper, they **ignore row pointers and other
per-row or constant terms** (CSR's ``rows + 1`` offsets, MACKO's ``row_ptr`` and its end
padding to a multiple of 8 entries), which vanish for large matrices. The one exception is
Tiled-CSL, whose per-tile offset term (eq. 6) is kept. :func:`measured_effective_density`
counts every byte of an encoded matrix, row pointers included, unless asked not to.

Every function takes ``d`` as a float or an array of floats in [0, 1] and returns the same
shape (a float for a scalar).
"""
from __future__ import annotations

import math

import numpy as np

from reference._common import OptionError, problem

__all__ = [
    "csr32", "csr16", "tiled_csl", "bitmask", "dense",
    "macko_best", "macko_expected", "macko_worst", "macko_padding_fraction",
    "measured_effective_density",
]


def _density(d) -> np.ndarray:
    arr = np.asarray(d, dtype=np.float64)
    if arr.size and (np.any(~np.isfinite(arr)) or np.any(arr < 0) or np.any(arr > 1)):
        raise OptionError(problem("d", "densities in [0, 1]", d))
    return arr


def _out(arr, d):
    """A float for scalar input, else an array."""
    return float(arr) if np.ndim(d) == 0 else arr


def _bits(value: int, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value <= 0:
        raise OptionError(problem(field, "a positive number of bits", repr(value)))
    return int(value)


def _delta_bits(delta_bits) -> int:
    from reference.macko import check_delta_bits   # same check as the encoder (OptionError)
    return check_delta_bits(delta_bits)


# ---------------------------------------------------------------------------------------------
# baselines
# ---------------------------------------------------------------------------------------------


def csr32(d, b_val: int = 16):
    """CSR with 32-bit column indices (eq. 4): ``d * (32 + b_val) / b_val``."""
    b_val = _bits(b_val, "b_val")
    return _out(_density(d) * (32 + b_val) / b_val, d)


def csr16(d, b_val: int = 16):
    """CSR with 16-bit column indices (eq. 5): ``d * (16 + b_val) / b_val``."""
    b_val = _bits(b_val, "b_val")
    return _out(_density(d) * (16 + b_val) / b_val, d)


def tiled_csl(d, b_val: int = 16, shape: tuple | None = None, tile: tuple = (128, 64)):
    """Tiled-CSL (Flash-LLM, eq. 6): 16-bit in-tile indices plus a 32-bit offset per tile.

    ``d * (16 + b_val) / b_val + 32 * NT / (R * C)`` with ``NT = ceil(R / tile_rows) *
    ceil(C / tile_cols)`` tiles for ``shape = (R, C)``. Without ``shape`` the tile term is its
    large-matrix limit ``32 / (tile_rows * tile_cols)``. (The paper's eq. 6 writes the tile
    term without dividing by ``b_val``, i.e. relative to bits rather than values; here it is
    divided by ``b_val`` like every other term, so all functions share the unit
    "dense matrix sizes".)
    """
    b_val = _bits(b_val, "b_val")
    tr, tc = (int(t) for t in tile)
    if tr <= 0 or tc <= 0:
        raise OptionError(problem("tile", "two positive sizes", tile))
    if shape is None:
        tiles_per_element = 1.0 / (tr * tc)
    else:
        R, C = (int(s) for s in shape)
        if R <= 0 or C <= 0:
            raise OptionError(problem("shape", "two positive sizes", shape))
        tiles_per_element = math.ceil(R / tr) * math.ceil(C / tc) / (R * C)
    return _out(_density(d) * (16 + b_val) / b_val + 32 * tiles_per_element / b_val, d)


def bitmask(d, b_val: int = 16):
    """One bit per matrix element plus the nonzero values (eq. 7): ``d + 1 / b_val``."""
    b_val = _bits(b_val, "b_val")
    return _out(_density(d) + 1.0 / b_val, d)


def dense(d, b_val: int = 16):
    """The dense matrix: 1 at every density."""
    _bits(b_val, "b_val")
    return _out(np.ones_like(_density(d)), d)


# ---------------------------------------------------------------------------------------------
# MACKO
# ---------------------------------------------------------------------------------------------


def _entry_cost(delta_bits: int, b_val: int) -> float:
    """Bits per stored MACKO entry relative to a value: ``(b_val + b_delta) / b_val``."""
    return (b_val + delta_bits) / b_val


def macko_best(d, delta_bits: int = 4, b_val: int = 16):
    """No inserted zeros (every step <= 2**b) (eq. 8): ``d * (b_val + b) / b_val``."""
    b, b_val = _delta_bits(delta_bits), _bits(b_val, "b_val")
    return _out(_density(d) * _entry_cost(b, b_val), d)


def macko_worst(d, delta_bits: int = 4, b_val: int = 16):
    """Every zero run forces inserted zeros (eq. 9): ``(d + (1 - d) / 2**b) * (b_val + b) / b_val``.

    ``(1 - d) / 2**b`` zeros per element is an upper bound for *any* matrix: a gap of ``g``
    columns needs ``(g - 1) // 2**b`` inserted zeros, at most a ``1 / 2**b`` share of the
    ``g - 1`` zeros it skips.
    """
    b, b_val = _delta_bits(delta_bits), _bits(b_val, "b_val")
    dd = _density(d)
    return _out((dd + (1 - dd) / 2.0 ** b) * _entry_cost(b, b_val), d)


def macko_padding_fraction(d, delta_bits: int = 4):
    """Expected inserted zeros per nonzero, ``z / (1 - z)`` with ``z = (1 - d)**(2**b)``.

    For independent nonzeros of probability ``d`` (rows long enough to ignore their ends),
    the zeros before a nonzero number ``j >= k * 2**b`` with probability ``z**k``, and a gap
    needs ``floor(j / 2**b)`` inserted zeros, so their expectation is
    ``sum_k z**k = z / (1 - z)``. At ``d = 0`` this is infinite (no nonzeros to amortise
    over); computed with ``expm1``/``log1p`` to stay accurate at small ``d``.
    """
    b = _delta_bits(delta_bits)
    dd = _density(d)
    with np.errstate(divide="ignore"):
        log_z = (2.0 ** b) * np.log1p(-dd)            # log z; -inf at d = 1
        frac = np.exp(log_z) / -np.expm1(log_z)        # z / (1 - z); inf at d = 0
    return _out(frac, d)


def macko_expected(d, delta_bits: int = 4, b_val: int = 16):
    """Uniform independent nonzeros (eq. 10): ``d * (1 + z / (1 - z)) * (b_val + b) / b_val``
    with ``z = (1 - d)**(2**b)``.

    At ``d = 0`` the value is the limit ``d -> 0``, ``(1 / 2**b) * (b_val + b) / b_val`` (equal
    to the worst case there), since ``d * z / (1 - z) -> 1 / 2**b``.
    """
    b, b_val = _delta_bits(delta_bits), _bits(b_val, "b_val")
    dd = _density(d)
    frac = np.asarray(macko_padding_fraction(dd, b))
    with np.errstate(invalid="ignore"):
        stored = np.where(dd > 0, dd * (1 + frac), 1.0 / 2.0 ** b)
    return _out(stored * _entry_cost(b, b_val), d)


def measured_effective_density(M, value_bits: int | None = None,
                               include_row_ptr: bool = True) -> float:
    """The effective density of an encoded matrix: ``M.nbytes / (rows * cols * value_bytes)``.

    ``value_bits`` is the dense value width the size is compared with (default: ``M``'s own
    value dtype). ``M.nbytes`` counts every stored array, row pointers and end padding
    included; ``include_row_ptr=False`` leaves out ``M.row_ptr`` (or ``M.indptr``), the term
    the paper's formulas ignore. NaN for a matrix with no elements.
    """
    bits = 8 * M.dtype.itemsize if value_bits is None else _bits(value_bits, "value_bits")
    n_elements = M.n_rows * M.n_cols
    if n_elements == 0:
        return float("nan")
    nbytes = M.nbytes
    if not include_row_ptr:
        for name in ("row_ptr", "indptr"):
            ptr = getattr(M, name, None)
            if isinstance(ptr, np.ndarray):
                nbytes -= ptr.nbytes
    return float(nbytes * 8 / (n_elements * bits))
