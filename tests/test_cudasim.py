"""The simulator's warp-collective emulation, tested on its own (CPU only)."""
import numpy as np
import pytest

from spmvlab._cuda import SIMULATOR, cuda

pytestmark = pytest.mark.skipif(not SIMULATOR, reason="tests the CUDA-simulator emulation")
FULL = 0xFFFFFFFF


def run(kernel, n_threads, *arrays):
    kernel[1, n_threads](*arrays)


def test_shuffles_match_their_definitions():
    @cuda.jit
    def k(out):
        lane = cuda.threadIdx.x
        v = np.int32(lane * 10)
        out[0, lane] = cuda.shfl_sync(FULL, v, 5)
        out[1, lane] = cuda.shfl_up_sync(FULL, v, 3)
        out[2, lane] = cuda.shfl_down_sync(FULL, v, 4)
        out[3, lane] = cuda.shfl_xor_sync(FULL, v, 1)
        out[4, lane] = cuda.shfl_sync(FULL, v, lane + 33)   # source taken mod 32

    out = np.full((5, 32), -1, np.int32)
    run(k, 32, out)
    lanes = np.arange(32)
    assert (out[0] == 50).all()
    assert np.array_equal(out[1], np.where(lanes >= 3, (lanes - 3) * 10, lanes * 10))
    assert np.array_equal(out[2], np.where(lanes < 28, (lanes + 4) * 10, lanes * 10))
    assert np.array_equal(out[3], (lanes ^ 1) * 10)
    assert np.array_equal(out[4], ((lanes + 1) % 32) * 10)


def test_votes_and_inclusive_scan_over_two_warps():
    @cuda.jit
    def k(flags, ballots, alls, anys, scan):
        t = cuda.threadIdx.x
        lane = t % 32
        b = cuda.ballot_sync(FULL, flags[t])
        ballots[t] = b
        alls[t] = cuda.all_sync(FULL, flags[t])
        anys[t] = cuda.any_sync(FULL, flags[t])
        s = np.int32(t)
        off = 1
        while off < 32:
            up = cuda.shfl_up_sync(FULL, s, off)
            if lane >= off:
                s += up
            off *= 2
        cuda.syncwarp(FULL)
        scan[t] = s

    flags = np.zeros(64, np.int32)
    flags[[0, 3, 31]] = 1
    flags[32:] = 1
    ballots, alls, anys, scan = (np.full(64, -7, np.int64) for _ in range(4))
    run(k, 64, flags, ballots, alls, anys, scan)
    assert (ballots[:32] == (1 | 8 | 1 << 31) - (1 << 32)).all()   # int32 view, as on the GPU
    assert (ballots[32:] == -1).all()
    assert (alls[:32] == 0).all() and (alls[32:] == 1).all()
    assert (anys == 1).all()
    t = np.arange(64)
    want = np.concatenate([np.cumsum(t[:32]), np.cumsum(t[32:])])
    assert np.array_equal(scan, want)


def test_bit_intrinsics_use_hardware_widths():
    @cuda.jit
    def k(out):
        out[0] = cuda.popc(np.int32(-1))
        out[1] = cuda.clz(np.uint64(1))
        out[2] = cuda.clz(np.int32(1))
        out[3] = cuda.ffs(np.int32(8))
        out[4] = cuda.popc(np.uint64(0xFFFFFFFFFFFFFFFF))

    out = np.zeros(5, np.int64)
    run(k, 1, out)
    assert out.tolist() == [32, 63, 31, 4, 64]


def test_libdevice_multiply_high():
    from numba.cuda import libdevice

    @cuda.jit
    def k(a, b, out):
        out[0] = libdevice.umulhi(a[0], b[0])

    out = np.zeros(1, np.uint32)
    run(k, 1, np.array([0xFFFFFFFF], np.uint32), np.array([0x10], np.uint32), out)
    assert out[0] == 0xF


def test_lane_that_exits_early_raises_instead_of_hanging():
    from spmvlab.cudasim import WarpDivergenceError

    @cuda.jit
    def k(out):
        lane = cuda.threadIdx.x
        if lane == 7:
            return
        out[lane] = cuda.shfl_sync(FULL, lane, 0)

    with pytest.raises(WarpDivergenceError, match="never reached"):
        run(k, 32, np.zeros(32, np.int32))


def test_mask_naming_missing_lanes_raises():
    from spmvlab.cudasim import WarpDivergenceError

    @cuda.jit
    def k(out):
        out[cuda.threadIdx.x] = cuda.shfl_sync(FULL, 1, 0)

    with pytest.raises(WarpDivergenceError, match="do not exist"):
        run(k, 16, np.zeros(16, np.int32))


def test_partial_mask():
    @cuda.jit
    def k(out):
        lane = cuda.threadIdx.x
        if lane < 16:
            out[lane] = cuda.shfl_down_sync(0xFFFF, lane, 8)

    out = np.full(32, -1, np.int32)
    run(k, 32, out)
    assert out[:16].tolist() == [i + 8 if i < 8 else i for i in range(16)]
