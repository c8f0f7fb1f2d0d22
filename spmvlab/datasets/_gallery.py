"""Structured matrices (:func:`banded`, :func:`stencil`, :func:`block`) and the named gallery.

:func:`gallery` returns one representative matrix per family and size, shared by tests and
experiments. Like :mod:`.synthetic`, every generator takes ``seed`` and returns canonical CSR
with standard-normal values (never exactly zero) in ``dtype``.

A module-private name: the package's ``gallery`` is the function of that name.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from reference._common import OptionError, ShapeError, problem

from ._build import _count, _csr, _fraction, _nonzero_normals, _rng, _shape, _sparse_dtype
from .synthetic import _exact_mask, power_law, uniform


def _finish(shape, lengths, indices, dtypes, rng) -> sp.csr_matrix:
    """CSR of the given row lengths and (CSR-ordered) column indices, normal values;
    ``dtypes`` is :func:`._build._sparse_dtype`'s pair."""
    dt, store = dtypes
    indptr = np.zeros(shape[0] + 1, dtype=np.int64)
    np.cumsum(lengths, out=indptr[1:])
    data = _nonzero_normals(rng, indices.size, dt).astype(store, copy=False)
    return _csr(shape, indptr, indices, data)


def banded(n, bandwidth, dtype=np.float32, seed=0) -> sp.csr_matrix:
    """Square ``n x n`` matrix whose nonzeros are exactly the ``(i, j)`` with
    ``|i - j| <= bandwidth``.

    Row ``i`` holds columns ``max(0, i - bandwidth)`` to ``min(n - 1, i + bandwidth)`` (the
    band is clipped at the edges); ``bandwidth >= n - 1`` gives a dense matrix.
    """
    n = _count(n, "n", error=ShapeError)
    b = _count(bandwidth, "bandwidth")
    dtypes = _sparse_dtype(dtype)
    rng = _rng(seed)
    i = np.arange(n, dtype=np.int64)
    first = np.maximum(i - b, 0)
    lengths = np.minimum(i + b, n - 1) - first + 1
    starts = np.cumsum(lengths) - lengths    # where each row begins in ``indices``
    indices = np.arange(int(lengths.sum()), dtype=np.int64) + np.repeat(first - starts, lengths)
    return _finish((n, n), lengths, indices, dtypes, rng)


# neighbour offsets (dx, dy, dz), ordered by the column offset dz * nx * ny + dy * nx + dx
_STENCILS = {
    5: ((0, -1, 0), (-1, 0, 0), (0, 0, 0), (1, 0, 0), (0, 1, 0)),
    9: tuple((dx, dy, 0) for dy in (-1, 0, 1) for dx in (-1, 0, 1)),
    7: ((0, 0, -1), (0, -1, 0), (-1, 0, 0), (0, 0, 0), (1, 0, 0), (0, 1, 0), (0, 0, 1)),
    27: tuple((dx, dy, dz) for dz in (-1, 0, 1) for dy in (-1, 0, 1) for dx in (-1, 0, 1)),
}


def stencil(nx, ny=None, points: int = 5, dtype=np.float32, seed=0, nz=None) -> sp.csr_matrix:
    """The pattern of a Laplacian stencil: 2-D 5- or 9-point on an ``nx x ny`` grid, 3-D 7- or
    27-point on an ``nx x ny x nz`` grid.

    Grid point ``(ix, iy, iz)`` is row and column ``(iz * ny + iy) * nx + ix`` (``ny`` and, in
    3-D, ``nz`` default to ``nx``; 2-D grids take no ``nz``); row ``r`` holds ``r`` and the
    grid neighbours of its point: those one step along an axis for 5 and 7 points, every
    point of the surrounding 3 x 3 (x 3) box for 9 and 27. Neighbours outside the grid are
    dropped, so with every side >= 2 a 5-point row holds 3 (corner), 4 (edge) or 5 entries and
    a 9-point row 4, 6 or 9; there are ``5*nx*ny - 2*nx - 2*ny`` and
    ``(3*nx - 2) * (3*ny - 2)`` nonzeros in 2-D, ``7*nx*ny*nz - 2*(nx*ny + ny*nz + nx*nz)``
    and ``(3*nx - 2) * (3*ny - 2) * (3*nz - 2)`` in 3-D.

    The values are random (standard normal), not the Laplacian's: the pattern is symmetric,
    the matrix is not.
    """
    nx = _count(nx, "nx", error=ShapeError)
    ny = nx if ny is None else _count(ny, "ny", error=ShapeError)
    try:
        ok = points in _STENCILS
    except TypeError:                        # unhashable
        ok = False
    if not ok:
        raise OptionError(problem("points", "5 or 9 (2-D), 7 or 27 (3-D)", repr(points)))
    if points in (5, 9):
        if nz is not None:
            raise OptionError(problem("nz", f"None for a 2-D {points}-point stencil", repr(nz),
                                      "pass points=7 or 27 for a 3-D grid, or leave nz out"))
        nz = 1
    else:
        nz = nx if nz is None else _count(nz, "nz", error=ShapeError)
    dtypes = _sparse_dtype(dtype)
    rng = _rng(seed)
    off = np.array(_STENCILS[points], dtype=np.int64)
    n = nx * ny * nz
    r = np.arange(n, dtype=np.int64)
    x = (r % nx)[:, None] + off[:, 0]
    y = (r // nx % ny)[:, None] + off[:, 1]
    z = (r // max(nx * ny, 1))[:, None] + off[:, 2]
    inside = (x >= 0) & (x < nx) & (y >= 0) & (y < ny) & (z >= 0) & (z < nz)
    indices = ((z * ny + y) * nx + x)[inside]   # row-major: CSR order, columns ascending
    return _finish((n, n), inside.sum(axis=1), indices, dtypes, rng)


def block(shape, block_shape, block_density: float, dtype=np.float32,
          seed=0) -> sp.csr_matrix:
    """Matrix tiled by ``block_shape`` blocks, each either fully dense or empty.

    The tiles start at multiples of ``block_shape``; those in the last tile row and column
    are cut at the matrix edge when ``shape`` is not a multiple. Exactly
    ``round(block_density * number of tiles)`` tiles, a uniformly random set, are dense (so
    each tile is dense with probability ``block_density`` up to that rounding).
    """
    n_rows, n_cols = _shape(shape)
    br, bc = _shape(block_shape, "block_shape")
    if br == 0 or bc == 0:
        raise ShapeError(problem("block_shape", "two positive ints (rows, cols)",
                                 repr(block_shape)))
    d = _fraction(block_density, "block_density", "pass e.g. 0.1 for 10% of the tiles dense")
    dtypes = _sparse_dtype(dtype)
    rng = _rng(seed)
    tr, tc = -(-n_rows // br), -(-n_cols // bc)
    dense = _exact_mask(rng, tr * tc, int(round(d * tr * tc))).reshape(tr, tc)
    heights = np.minimum(br, n_rows - br * np.arange(tr))
    widths = np.minimum(bc, n_cols - bc * np.arange(tc))
    cols = [np.flatnonzero(m) for m in np.repeat(dense, widths, axis=1)]  # per tile row
    lengths = np.repeat(np.array([c.size for c in cols], dtype=np.int64), heights)
    parts = [np.tile(c, h) for c, h in zip(cols, heights)]
    indices = np.concatenate(parts) if parts else np.zeros(0, np.int64)
    return _finish((n_rows, n_cols), lengths, indices, dtypes, rng)


# name -> (generator, {size: its arguments}); the table in gallery()'s docstring follows it
_ENTRIES = {
    "banded": (banded, {"small": dict(n=50, bandwidth=2),
                        "medium": dict(n=4000, bandwidth=8)}),
    "block": (block, {"small": dict(shape=(45, 52), block_shape=(6, 8), block_density=0.15),
                      "medium": dict(shape=(1500, 1700), block_shape=(16, 16),
                                     block_density=0.05)}),
    "power_law": (power_law, {"small": dict(n_rows=60, n_cols=40, avg_nnz_per_row=0.9,
                                            alpha=2.0),
                              "medium": dict(n_rows=3000, n_cols=3000, avg_nnz_per_row=10.0,
                                             alpha=2.0)}),
    "stencil": (stencil, {"small": dict(nx=7, ny=6), "medium": dict(nx=100, ny=90)}),
    "stencil9": (stencil, {"small": dict(nx=6, ny=5, points=9),
                           "medium": dict(nx=100, ny=90, points=9)}),
    "uniform": (uniform, {"small": dict(shape=(50, 40), sparsity=0.85),
                          "medium": dict(shape=(2000, 3000), sparsity=0.99)}),
}

#: Gallery family name -> its generator (``stencil9`` is :func:`stencil` with ``points=9``).
GALLERY = {name: gen for name, (gen, _) in _ENTRIES.items()}

#: The sizes every gallery family comes in.
GALLERY_SIZES = ("small", "medium")


def gallery_names() -> list[str]:
    """Sorted names of the gallery families."""
    return sorted(_ENTRIES)


def gallery(name: str, size: str = "small", seed=0, dtype=np.float32) -> sp.csr_matrix:
    """The gallery matrix of family ``name`` at ``size`` ("small" or "medium").

    ========= ======================================== ===================================
    name      small                                    medium
    ========= ======================================== ===================================
    banded    50 x 50, bandwidth 2 (244 nnz)           4000 x 4000, bandwidth 8 (67,928 nnz)
    block     45 x 52, 6 x 8 tiles, 8 of 56 dense      1500 x 1700, 16 x 16 tiles, 503 of
                                                       10,058 dense
    power_law 60 x 40, 54 nnz, alpha 2.0 (>= 6 rows   3000 x 3000, 30,000 nnz, alpha 2.0
              empty for every seed)
    stencil   5-point on 7 x 6 (42 rows, 184 nnz)      5-point on 100 x 90 (44,620 nnz)
    stencil9  9-point on 6 x 5 (30 rows, 208 nnz)      9-point on 100 x 90 (79,864 nnz)
    uniform   50 x 40, 300 nnz                         2000 x 3000, 60,000 nnz
    ========= ======================================== ===================================

    Small matrices are for kernel tests in the CUDA simulator: at most 64 rows and a few
    hundred nonzeros, no dimension a multiple of 32. Medium ones have thousands of rows.
    """
    if not isinstance(name, str) or name not in _ENTRIES:
        raise OptionError(problem("name", f"one of {gallery_names()}", repr(name)))
    gen, sizes = _ENTRIES[name]
    if not isinstance(size, str) or size not in sizes:
        raise OptionError(problem("size", f"one of {list(GALLERY_SIZES)}", repr(size)))
    return gen(**sizes[size], dtype=dtype, seed=seed)
