"""The two fixed kernels around a generated one: zero C first (plans with ``zero_init``
or atomic additions), round a float32 sum buffer into a float16 C at the end. Decorating
compiles nothing; the first launch does."""
from __future__ import annotations

from ..._cuda import cuda

TILE = 16   # threads per block along each dimension


@cuda.jit
def zero2(C):
    """Thread (i, j) of the 2-D grid zeroes C[i, j]."""
    i, j = cuda.grid(2)
    if i < C.shape[0] and j < C.shape[1]:
        C[i, j] = 0


@cuda.jit
def narrow(src, dst):
    """Thread (i, j) of the 2-D grid rounds the float32 sum src[i, j] into dst[i, j]."""
    i, j = cuda.grid(2)
    if i < dst.shape[0] and j < dst.shape[1]:
        dst[i, j] = src[i, j]


def grid2(shape):
    """(blocks, threads) covering a 2-D array of ``shape``."""
    return ((shape[0] + TILE - 1) // TILE, (shape[1] + TILE - 1) // TILE), (TILE, TILE)
