"""tools/tc_bitmap_ab.py, the tensor-core bitmap-tile SpMM probe: its layout decodes back to
the matrix exactly, and its kernel (mma.sync emulated lane by lane on the simulator) equals
the exact product on shapes that are not multiples of 16, with empty bands and tiles, B read
as it is or packed in row pairs, one tile or several (U) per warp step (a band whose tile count
is not a multiple of U W: the padding tiles must add nothing)."""
import os
import sys

import numpy as np
import pytest
import scipy.sparse as sp

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "tools"), os.path.join(ROOT, "experiments")]

import tc_bitmap_ab as T  # noqa: E402


def _matrix(shape, density, seed):
    A = sp.random(*shape, density=density, format="csr", random_state=np.random.default_rng(seed),
                  dtype=np.float32)
    A.data = (A.data - np.float32(0.5)).astype(np.float16).astype(np.float32)
    A.eliminate_zeros()
    return A


@pytest.mark.parametrize("shape,density", [((37, 50), 0.3), ((16, 16), 1.0), ((5, 7), 0.0), ((1, 40), 0.5),
                                           ((40, 1), 0.5), ((70, 300), 0.02)])
def test_layout_round_trip(shape, density):
    A = _matrix(shape, density, 1)
    t = T.encode(A)
    assert (abs(T.decode(t) - A)).sum() == 0 and T.decode(t).nnz == A.nnz
    assert t["tile_ptr"].size == -(-shape[0] // 16) + 1 and t["tile_mask"].size == 16 * t["tile_col"].size
    assert t["bytes"] == 2 * A.nnz + 56 * t["tile_col"].size + 4 * t["tile_ptr"].size
    f = T.encode_frag(A)
    assert (abs(T.decode_frag(f) - A)).sum() == 0 and T.decode_frag(f).nnz == A.nnz
    assert f["bytes"] == 2 * A.nnz + 72 * f["tile_col"].size + 4 * f["tile_ptr"].size
    p = T.encode_frag(A, pad=8)                         # tiles start at multiples of 8 values
    assert (abs(T.decode_frag(p) - A)).sum() == 0 and p["tile_voff"].size == p["tile_col"].size + 1
    assert np.all(p["tile_voff"] % 8 == 0) and np.all(np.diff(p["tile_voff"]) < np.diff(f["tile_voff"].tolist()
                                                                                    + [A.nnz]) + 8)


def test_fragment_slots_cover_the_tile_once():
    """The fragment order is a bijection of the 16 x 16 tile onto 32 lanes x 8 slots, and slot
    j of lane (g, t) is the element the mma's A word j // 2 holds (rows g, g + 8; columns 2t + c,
    2t + 8 + c)."""
    seen = {T._frag_slot(r, c): (r, c) for r in range(16) for c in range(16)}
    assert len(seen) == 256 and set(seen) == {(ln, j) for ln in range(32) for j in range(8)}
    g, t = 5, 3
    assert [seen[(4 * g + t, j)] for j in range(8)] == [(g, 2 * t), (g, 2 * t + 1), (g + 8, 2 * t),
                                                        (g + 8, 2 * t + 1), (g, 2 * t + 8), (g, 2 * t + 9),
                                                        (g + 8, 2 * t + 8), (g + 8, 2 * t + 9)]


@pytest.mark.parametrize("layout", ["row", "frag"])
@pytest.mark.parametrize("shape,density,n,warps,bpack,unroll", [
    ((37, 50), 0.3, 8, 2, False, 1), ((33, 130), 0.05, 16, 4, True, 1), ((18, 20), 1.0, 8, 1, True, 1),
    ((20, 30), 0.0, 8, 2, False, 2), ((37, 100), 0.4, 8, 2, False, 3), ((33, 130), 0.05, 8, 1, True, 4)])
def test_kernel_equals_the_exact_product(shape, density, n, warps, bpack, unroll, layout):
    _product_case(shape, density, n, warps, bpack, unroll, layout)


@pytest.mark.parametrize("shape,density,n,warps", [((37, 50), 0.3, 8, 2), ((33, 130), 0.05, 16, 4),
                                                   ((18, 20), 1.0, 8, 1), ((20, 30), 0.0, 8, 2),
                                                   ((37, 100), 0.4, 8, 3)])
@pytest.mark.parametrize("prefetch", [False, True])
def test_staged_kernel_equals_the_exact_product(shape, density, n, warps, prefetch):
    """The fragment layout with 16-byte-aligned tiles, staged through shared memory (B packed;
    a full 16 x 16 tile fills all 32 lanes' 16-byte copies), with and without the two-stage
    prefetch (bands of 1, 2 and more tiles per warp: the pipeline's start and end)."""
    _product_case(shape, density, n, warps, True, 1, "stage", prefetch)


def _product_case(shape, density, n, warps, bpack, unroll, layout, prefetch=False):
    A = _matrix(shape, density, 2)
    A[0, :] = 0                                         # an empty row; 33 x 130: empty tiles too
    A.eliminate_zeros()
    t = T.LAYOUTS[layout][0](A)
    B = np.random.default_rng(3).standard_normal((shape[1], n)).astype(np.float16)
    Bp = np.zeros((-(-shape[1] // 16) * 16, n), np.float16)
    Bp[:shape[1]] = B
    bands = t["tile_ptr"].size - 1
    dC = T.cuda.to_device(np.full((bands * 16, n), np.nan, np.float32))   # garbage: unwritten fails
    dW = T.cuda.to_device(np.zeros(Bp.size // 2, np.uint32)) if bpack else None
    T.run(T.device_arrays(t), T.cuda.to_device(Bp.ravel()), T.cuda.to_device(np.zeros(1, np.float16)), dC,
          n, warps, dW, unroll, prefetch)
    C = dC.copy_to_host()[:shape[0]]
    exact = A.astype(np.float64) @ B.astype(np.float64)
    bound = abs(A).astype(np.float64) @ np.abs(B.astype(np.float64))
    assert np.all(np.abs(C - exact) <= 1e-5 * bound + 1e-6)
