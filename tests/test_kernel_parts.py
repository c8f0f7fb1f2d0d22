"""Device helpers that several kernels share (spmvlab/kernels/_common.py), run as kernels of
their own: in the simulator on CPU, for real on a GPU."""
import numpy as np
import pytest

from spmvlab._cuda import cuda
from spmvlab.kernels._common import WARP, reduce_scatter, scatter_layout


def _scatter_kernel(ws: int, m: int):
    scatter = reduce_scatter(ws, m)

    @cuda.jit
    def k(inp, out):
        lane = cuda.threadIdx.x
        t = lane % ws
        mask = np.uint32(0xFFFFFFFF) if ws == WARP else \
            np.uint32(np.uint32((1 << ws) - 1) << np.uint32(lane - t))
        accs = cuda.local.array(m, np.float32)
        for i in range(m):
            accs[i] = inp[lane, i]
        scatter(accs, t, mask)
        for i in range(m):
            out[lane, i] = accs[i]
    return k


@pytest.mark.parametrize("ws,m", [(32, 1), (32, 8), (32, 32), (32, 64), (16, 4), (8, 8),
                                  (4, 16), (2, 2), (1, 4)])
def test_reduce_scatter_leaves_each_total_where_it_says(ws, m):
    """Lane t of each group of ws lanes ends with the group's totals of accumulators
    (t // D) * R + i in accs[i] (R = max(1, m // ws), D = max(1, ws // m)); integer values,
    so the float32 sums are exact whatever the order."""
    rng = np.random.default_rng(ws * 100 + m)
    inp = rng.integers(-1000, 1000, (WARP, m)).astype(np.float32)
    out = np.full((WARP, m), np.nan, np.float32)
    _scatter_kernel(ws, m)[1, WARP](inp, out)
    R, D = max(1, m // ws), max(1, ws // m)
    assert scatter_layout(ws, m) == (R, D)               # what the kernels read the totals by
    for lane in range(WARP):
        t, g0 = lane % ws, lane - lane % ws
        totals = inp[g0:g0 + ws].sum(axis=0)
        for i in range(R):
            assert out[lane, i] == totals[(t // D) * R + i], (lane, i)
