"""Where EC-CSR stores each entry of a block (EC-SpMV paper, Fig. 6): lanes interleaved by vector.

A block of ``n`` stored columns is shared by ``lanes`` threads: lane ``t`` takes the block's
columns ``[t * m, (t + 1) * m)`` in column order, ``m = n // lanes`` (``n`` is a multiple of
``lanes * vector``, so ``m`` is a multiple of ``vector``). A lane reads its columns ``vector``
at a time; the ``q``-th group of every lane, lane 0 first, forms chunk ``q`` of ``lanes *
vector`` consecutive stored entries, so that one load instruction of the whole warp reads one
contiguous chunk. Entry ``k`` of lane ``t`` is stored at
``(k // vector) * lanes * vector + t * vector + k % vector`` from the block's start.

Example, lanes = 2, vector = 2, m = 4 (lane 0 holds a0..a3, lane 1 b0..b3): stored order
a0 a1 b0 b1 a2 a3 b2 b3. With vector = 4 the order stays a0 a1 a2 a3 b0 b1 b2 b3.

Shared codec code (see :mod:`reference.codec`): no argument checks; ``t``/``k`` ints or NumPy
int arrays, ``lanes`` and ``vector`` positive ints.
"""


def interleaved_slot(t, k, lanes, vector):
    """Position within its block of entry ``k`` of lane ``t``."""
    return (k // vector) * (lanes * vector) + t * vector + k % vector
