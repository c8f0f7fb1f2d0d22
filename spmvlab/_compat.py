"""Compatibility fixes applied before numba-cuda compiles anything.

numba-cuda 0.30.x registers an overload of ``np.row_stack``, which numpy 2.5 removed; on the
GPU image (numpy 2.5.2) every kernel compile then fails with an AttributeError. Restoring
the alias is harmless elsewhere.
"""
import numpy as np

if not hasattr(np, "row_stack"):
    np.row_stack = np.vstack
