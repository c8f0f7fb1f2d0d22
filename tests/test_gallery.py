"""spmvlab.datasets gallery: banded, stencil, block and the named gallery (exact structure,
canonical form, seeding, float16, typed errors)."""
from __future__ import annotations

import numpy as np
import pytest

from spmvlab import datasets as ds
from spmvlab.errors import DTypeError, OptionError, ShapeError
from test_datasets import _assert_canonical

NAMES = ["banded", "block", "power_law", "stencil", "stencil9", "uniform"]
ALL = [(name, size) for name in NAMES for size in ("small", "medium")]


def _same(A, B) -> bool:
    return (A.shape == B.shape and A.dtype == B.dtype
            and all(np.array_equal(getattr(A, k), getattr(B, k)) and
                    getattr(A, k).dtype == getattr(B, k).dtype
                    for k in ("indptr", "indices", "data")))


# --------------------------------------------------------------------------------------
# registry
# --------------------------------------------------------------------------------------


def test_registry():
    assert ds.gallery_names() == NAMES == sorted(ds.GALLERY)
    assert ds.GALLERY["uniform"] is ds.uniform and ds.GALLERY["power_law"] is ds.power_law
    assert ds.GALLERY["stencil"] is ds.GALLERY["stencil9"] is ds.stencil
    assert ds.GALLERY["banded"] is ds.banded and ds.GALLERY["block"] is ds.block
    assert ds.GALLERY_SIZES == ("small", "medium")


@pytest.mark.parametrize("name,size", ALL)
def test_canonical(name, size):
    A = ds.gallery(name, size)
    _assert_canonical(A)
    assert A.dtype == np.float32
    assert A.indices.dtype == np.int32 and A.indptr.dtype == np.int32
    if size == "small":            # simulator-sized, dimensions not multiples of 32
        assert A.shape[0] <= 64 and 0 < A.nnz <= 400
        assert A.shape[0] % 32 and A.shape[1] % 32
    else:
        assert A.shape[0] >= 1000 and A.nnz >= 10_000


def test_small_with_empty_rows():
    for seed in range(5):          # 54 nonzeros over 60 rows: empty rows whatever the seed
        A = ds.gallery("power_law", seed=seed)
        assert A.shape == (60, 40) and A.nnz == 54
        assert np.count_nonzero(np.diff(A.indptr) == 0) >= 6


@pytest.mark.parametrize("name", NAMES)
def test_seeding(name):
    A, B = ds.gallery(name, seed=3), ds.gallery(name, seed=3)
    assert _same(A, B)
    C = ds.gallery(name, seed=4)
    assert not np.array_equal(A.data, C.data)
    G = ds.gallery(name, seed=np.random.default_rng(3))   # a Generator works like its seed
    assert _same(A, G)


@pytest.mark.parametrize("name", NAMES)
def test_dtypes(name):
    A32 = ds.gallery(name, seed=1)
    A16 = ds.gallery(name, seed=1, dtype=np.float16)
    A64 = ds.gallery(name, seed=1, dtype="float64")
    assert A16.dtype == np.float32 and A64.dtype == np.float64   # float16 kept in float32
    assert np.array_equal(A16.data.astype(np.float16).astype(np.float32), A16.data)
    for A in (A16, A64):           # positions are drawn before values: same pattern
        assert np.array_equal(A.indptr, A32.indptr) and np.array_equal(A.indices, A32.indices)
        _assert_canonical(A)


# --------------------------------------------------------------------------------------
# exact structure
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("n,b", [(0, 2), (1, 0), (5, 0), (7, 2), (10, 3), (6, 10), (33, 5)])
def test_banded_structure(n, b):
    A = ds.banded(n, b, seed=2)
    i, j = np.indices((n, n))
    assert A.shape == (n, n)
    assert np.array_equal(A.toarray() != 0, np.abs(i - j) <= b)
    _assert_canonical(A)


def _stencil_pattern(nx, ny, points):
    P = np.zeros((nx * ny, nx * ny), dtype=bool)
    for iy in range(ny):
        for ix in range(nx):
            for dy in (-1, 0, 1):
                for dx in (-1, 0, 1):
                    if points == 5 and dx and dy:
                        continue
                    if 0 <= ix + dx < nx and 0 <= iy + dy < ny:
                        P[iy * nx + ix, (iy + dy) * nx + ix + dx] = True
    return P


@pytest.mark.parametrize("points", [5, 9])
@pytest.mark.parametrize("nx,ny", [(1, 1), (2, 2), (7, 6), (5, 9), (1, 4), (3, 1), (0, 3)])
def test_stencil_structure(nx, ny, points):
    A = ds.stencil(nx, ny, points=points, seed=5)
    assert np.array_equal(A.toarray() != 0, _stencil_pattern(nx, ny, points))
    _assert_canonical(A)
    if nx and ny:
        want = (5 * nx * ny - 2 * nx - 2 * ny if points == 5
                else (3 * nx - 2) * (3 * ny - 2))
        assert A.nnz == want
    if nx >= 2 and ny >= 2:
        lengths = np.bincount(np.diff(A.indptr), minlength=10)
        corner, edge, inner = (3, 4, 5) if points == 5 else (4, 6, 9)
        assert lengths[corner] == 4 and lengths[edge] == 2 * (nx - 2) + 2 * (ny - 2)
        assert lengths[inner] == (nx - 2) * (ny - 2) and lengths.sum() == nx * ny
    assert ds.stencil(nx, seed=5).shape == (nx * nx, nx * nx)     # ny defaults to nx


def _stencil3_pattern(nx, ny, nz, points):
    n = nx * ny * nz
    P = np.zeros((n, n), dtype=bool)
    for iz in range(nz):
        for iy in range(ny):
            for ix in range(nx):
                for dz in (-1, 0, 1):
                    for dy in (-1, 0, 1):
                        for dx in (-1, 0, 1):
                            if points == 7 and abs(dx) + abs(dy) + abs(dz) > 1:
                                continue
                            if 0 <= ix + dx < nx and 0 <= iy + dy < ny and 0 <= iz + dz < nz:
                                P[(iz * ny + iy) * nx + ix, ((iz + dz) * ny + iy + dy) * nx + ix + dx] = True
    return P


@pytest.mark.parametrize("points", [7, 27])
@pytest.mark.parametrize("nx,ny,nz", [(1, 1, 1), (2, 2, 2), (3, 4, 5), (5, 3, 2), (1, 1, 6),
                                      (4, 1, 3), (0, 3, 2), (3, 3, 0)])
def test_stencil_3d_structure(nx, ny, nz, points):
    A = ds.stencil(nx, ny, points=points, nz=nz, seed=5)
    assert np.array_equal(A.toarray() != 0, _stencil3_pattern(nx, ny, nz, points))
    _assert_canonical(A)
    if nx and ny and nz:
        want = (7 * nx * ny * nz - 2 * (nx * ny + ny * nz + nx * nz) if points == 7
                else (3 * nx - 2) * (3 * ny - 2) * (3 * nz - 2))
        assert A.nnz == want
    assert ds.stencil(nx, points=points, seed=5).shape == (nx ** 3, nx ** 3)  # ny, nz default to nx


@pytest.mark.parametrize("shape,bshape,d", [
    ((45, 52), (6, 8), 0.15), ((10, 10), (3, 4), 0.5), ((7, 5), (10, 10), 1.0),
    ((33, 65), (1, 32), 0.3), ((40, 40), (8, 8), 0.0), ((9, 7), (2, 3), 1.0), ((0, 5), (2, 2), 0.5),
])
def test_block_structure(shape, bshape, d):
    A = ds.block(shape, bshape, d, seed=6)
    assert A.shape == shape
    _assert_canonical(A)
    D = A.toarray() != 0
    full = 0
    for r0 in range(0, shape[0], bshape[0]):
        for c0 in range(0, shape[1], bshape[1]):
            tile = D[r0:r0 + bshape[0], c0:c0 + bshape[1]]
            assert not tile.any() or tile.all()           # every tile dense or empty
            full += bool(tile.all() and tile.size)
    n_tiles = -(-shape[0] // bshape[0]) * -(-shape[1] // bshape[1])
    assert full == round(d * n_tiles)


def test_block_tiles_vary_with_seed():
    pats = {ds.block((40, 40), (8, 8), 0.3, seed=s).indices.tobytes() for s in range(5)}
    assert len(pats) == 5


# --------------------------------------------------------------------------------------
# errors
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("call,exc,field", [
    (lambda: ds.banded(-1, 2), ShapeError, "n"),
    (lambda: ds.banded(4.5, 2), ShapeError, "n"),
    (lambda: ds.banded(5, -1), OptionError, "bandwidth"),
    (lambda: ds.banded(5, "2"), OptionError, "bandwidth"),
    (lambda: ds.banded(5, 1, dtype=np.int32), DTypeError, "dtype"),
    (lambda: ds.stencil(-2), ShapeError, "nx"),
    (lambda: ds.stencil(3, "a"), ShapeError, "ny"),
    (lambda: ds.stencil(3, points=6), OptionError, "points"),
    (lambda: ds.stencil(3, points=5, nz=2), OptionError, "nz"),
    (lambda: ds.stencil(3, points=27, nz=-1), ShapeError, "nz"),
    (lambda: ds.stencil(3, points=[5]), OptionError, "points"),
    (lambda: ds.stencil(3, dtype="int8"), DTypeError, "dtype"),
    (lambda: ds.block((4, -4), (2, 2), 0.5), ShapeError, "shape"),
    (lambda: ds.block((4, 4), (0, 2), 0.5), ShapeError, "block_shape"),
    (lambda: ds.block((4, 4), (2,), 0.5), ShapeError, "block_shape"),
    (lambda: ds.block((4, 4), (2, 2), 1.5), OptionError, "block_density"),
    (lambda: ds.block((4, 4), (2, 2), float("nan")), OptionError, "block_density"),
    (lambda: ds.gallery("nope"), OptionError, "name"),
    (lambda: ds.gallery(["banded"]), OptionError, "name"),
    (lambda: ds.gallery("banded", "large"), OptionError, "size"),
    (lambda: ds.gallery("banded", dtype=np.int8), DTypeError, "dtype"),
])
def test_errors(call, exc, field):
    with pytest.raises(exc, match=f"^{field}: expected "):
        call()
