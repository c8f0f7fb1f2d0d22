"""What is specific to split 2:4 (reference/split24.py, spmvlab/kernels/split24.py): the
layout of the tensor-core operands, the split rule, and the kernel's tile pipeline on bands
long enough to refill every slot many times (the shared suite's small cases hold a few tiles
per band)."""
from __future__ import annotations

import numpy as np
import pytest

import reference.split24 as S
from parity import garbage_like
from spmvlab import formats
from spmvlab.check import reference_product, relative_error


def test_each_row_and_group_has_one_place_in_the_operands():
    """The values' order (lane, register, kept value) and the metadata's (word, nibble) each
    name every (tile row, group) of a tile exactly once (twice for the two kept values),
    and a lane's metadata word covers the groups its own A registers hold."""
    vr, vg, mr, mg = S._VROW, S._VGROUP, S._MROW, S._MGROUP
    pairs = sorted(zip(vr.tolist(), vg.tolist()))
    assert pairs == sorted([(r, g) for r in range(16) for g in range(8)] * 2)
    assert sorted(zip(mr.tolist(), mg.tolist())) == [(r, g) for r in range(16) for g in range(8)]
    for lane in range(32):
        g, t = divmod(lane, 4)
        got = set(zip(vr[lane * 8:lane * 8 + 8].tolist(), vg[lane * 8:lane * 8 + 8].tolist()))
        assert got == {(g, t), (g + 8, t), (g, t + 4), (g + 8, t + 4)}
        if t < 2:       # sparsity selector 0: lanes 4g and 4g + 1 supply the metadata
            word = 2 * g + t
            nib = set(zip(mr[word * 8:word * 8 + 8].tolist(), mg[word * 8:word * 8 + 8].tolist()))
            assert nib == {(r, 4 * t + j) for r in (g, g + 8) for j in range(4)}


def test_the_first_two_nonzeros_of_each_group_are_kept():
    A = np.zeros((3, 8), np.float32)
    A[0, :4] = [1, 2, 3, 4]          # full group: 1, 2 kept, 3, 4 residual
    A[1, 3] = 5                      # a lone nonzero at position 3: kept as (2, 3)
    A[1, 4:6] = [6, 7]
    A[2, 5] = 8                      # a lone nonzero at position 1: kept as (1, 2)
    M = S.encode(A)
    assert M.res_values.tolist() == [3, 4] and M.res_cols.tolist() == [2, 3]
    assert M.res_ptr.tolist() == [0, 2, 2, 2]
    rows, cols, vals = S.decode_tiles(M)
    kept = {(int(r), int(c)): float(v) for r, c, v in zip(rows, cols, vals) if r < 3 and c < 8}
    assert kept[(0, 0)] == 1 and kept[(0, 1)] == 2
    assert kept[(1, 2)] == 0 and kept[(1, 3)] == 5
    assert kept[(1, 4)] == 6 and kept[(1, 5)] == 7
    assert kept[(2, 5)] == 8 and kept[(2, 6)] == 0
    assert M.nnz == 8 and M.n_tiles == 1


@pytest.mark.parametrize("extra", [5, 6], ids=["odd-k", "even-k"])
@pytest.mark.parametrize("cfg", [dict(warps_per_band=1, cols_per_warp=8),
                                 dict(warps_per_band=3, cols_per_warp=8),
                                 dict(warps_per_band=2, cols_per_warp=16)])
def test_long_bands_refill_the_slot_every_tile(cfg, extra):
    """Bands of 23 tiles (736 columns), the second band partial, k across two column blocks
    of Y, the second of fewer 8-column tiles than a block holds: every warp refills its slot
    several times (at W = 3: tiles w, w + 3, ..., 8 refills for warp 0), and where W does
    not divide 23 the last refills load the band's last tile again, to be left out of the
    sums. The residual: rows of none, one and ten entries beside rows of about twenty (so
    a warp's last batch of four is partial, or its only one), k odd (X read 2 bytes at a
    time) and even (4 bytes)."""
    info = formats.get("split24")
    K = info.kernel_module()
    rng = np.random.default_rng(7)
    n_rows, n_cols, k = 19, 736 - 7, cfg["cols_per_warp"] + extra   # a second block, partial
    A = rng.standard_normal((n_rows, n_cols)) * (rng.random((n_rows, n_cols)) < 0.3)
    A[0] = 0
    A[0, ::4] = 1.5                                  # one nonzero per group: no residual
    A[3] = 0
    A[3, 40:43] = [1, -2, 3]                         # one residual entry
    A[17] = 0
    A[17, 100:120] = rng.standard_normal(20)         # five residual groups
    M = info.encode(A.astype(np.float16))
    assert [int(v) for v in np.diff(M.res_ptr)[[0, 3, 17]]] == [0, 1, 10]
    X = rng.standard_normal((n_cols, k)).astype(np.float16)
    out = garbage_like((n_rows, k), np.float16)
    Y = K.spmm(M, X, out=out, config=info.make_config(**cfg))
    assert Y is out
    chk = relative_error(Y, dtype=np.float16, ref=reference_product(M.to_csr(), X))
    assert chk.passed, chk.worst


@pytest.mark.parametrize("k", [6, 14])
def test_residual_in_the_last_row_of_x(k):
    """Residual entries in the matrix's last column read the last row of X; for even k not a
    multiple of 8 the lanes of an 8-column tile's columns past k load nothing (their bounds
    check), never past X's end (which the simulator's vector loads assert)."""
    info = formats.get("split24")
    K = info.kernel_module()
    A = np.zeros((16, 64), np.float32)
    A[0, 60:64] = [1, 2, 3, 4]                       # 3 and 4 into the residual
    A[9, 61:64] = [-1, 5, 0.5]
    M = info.encode(A.astype(np.float16))
    assert M.res_cols.tolist() == [62, 63, 63]
    X = np.random.default_rng(3).standard_normal((64, k)).astype(np.float16)
    out = garbage_like((16, k), np.float16)
    K.spmm(M, X, out=out, config=info.make_config(warps_per_band=1, cols_per_warp=8))
    chk = relative_error(out, dtype=np.float16, ref=reference_product(M.to_csr(), X))
    assert chk.passed, chk.worst


def test_defaults_follow_the_columns_of_x_and_the_grid():
    """None fields: the fewest columns per block that cover X (32 beyond); 4 warps per band
    once bands x column blocks reach FULL_GRID_BLOCKS, 8 below."""
    K = formats.get("split24").kernel_module()
    full = K.FULL_GRID_BLOCKS * 16
    got = [(c.cols_per_warp, c.warps_per_band)
           for c in (K.resolved(K.Split24Config(), k, full // 2)
                     for k in (1, 8, 9, 16, 17, 32, 33, 64, 65))]
    assert got == [(8, 8), (8, 8), (16, 8), (16, 8), (32, 8), (32, 8), (32, 4), (32, 4),
                   (32, 4)]
    assert K.resolved(K.Split24Config(), 8, full).warps_per_band == 4
    assert K.resolved(K.Split24Config(), 8, full - 16).warps_per_band == 8
    assert K.resolved(K.Split24Config(warps_per_band=2, cols_per_warp=8), 64, full) == \
        K.Split24Config(warps_per_band=2, cols_per_warp=8)


def test_scattered_matrices_are_refused_by_the_memory_limit(monkeypatch):
    """Each scattered nonzero costs a whole tile: past the memory limit encode raises a
    typed error saying so, before it allocates the tiles."""
    from reference._common import SizeLimitError
    monkeypatch.setenv("SPMVLAB_MEMORY_LIMIT", "256K")
    n = 4096
    idx = np.arange(0, n, 37)
    import scipy.sparse as sp
    A = sp.csr_matrix((np.ones(idx.size, np.float32), (idx, idx[::-1])), shape=(n, n))
    with pytest.raises(SizeLimitError, match="occupied 16 x 32 tiles .* use csr or macko"):
        S.encode(A)
    monkeypatch.setenv("SPMVLAB_MEMORY_LIMIT", "64M")
    assert S.encode(A).n_tiles == idx.size
