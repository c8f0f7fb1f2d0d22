"""Analytic storage models from the papers: closed-form sizes of sparse formats as a function
of density, to compare with what the encoders actually store.

* :mod:`spmvlab.analysis.density` -- effective density (size relative to the dense matrix) of
  CSR, Tiled-CSL, bitmask and MACKO (MACKO paper, eqs. 4-10), and the measured effective
  density of an encoded matrix.
* :mod:`spmvlab.analysis.entropy` -- order-0 entropies of a matrix's column indices, delta-coded
  columns and values: the bound an entropy coder such as CSR-dtANS works against.

These are models, not formats: no encoder or kernel lives here.
"""
from . import density, entropy

__all__ = ["density", "entropy"]
