"""Codec steps shared by the NumPy references and spmvlab's numba code, written once.

Rule for every function in this package: plain Python in the subset numba compiles, so the
same source serves three callers:

* the NumPy references call it directly (on Python/NumPy scalars, and on NumPy integer
  arrays where its docstring says so);
* ``spmvlab.codec.njit(f)`` compiles it for CPU encoders;
* ``spmvlab.codec.device(f)`` compiles it as an inlined CUDA device function for kernels.

So: scalars, NumPy arrays, loops and integer arithmetic only; no Python objects (lists,
dicts, classes), no f-strings or exceptions with formatted messages, no keyword-only or
``*args`` parameters, no numba import. A function may call other functions of this package
by their bare names (``from .packing import get_code``, not ``packing.get_code``): the
builds compile those too. Anything else it calls must be a builtin or a NumPy function numba
supports. Argument checking belongs to the callers.

Modules: :mod:`reference.codec.packing` (b-bit codes packed into bytes),
:mod:`reference.codec.interleave` (EC-CSR's lane-interleaved order within a block),
:mod:`reference.codec.dtans` (dtANS ``pack`` and one stream's base + digit pass, words tagged
with warp event keys).
"""
