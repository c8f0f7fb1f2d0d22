"""The simulator's warp-collective emulation, tested on its own (CPU only)."""
import threading
import time

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


def test_disjoint_sub_warp_groups_run_their_own_collectives():
    """Lane groups of 4 with their own masks: each group makes a different number of
    butterfly steps (group i repeats its sum i + 1 times), as divergent sub-warp code does."""
    @cuda.jit
    def k(out):
        lane = cuda.threadIdx.x
        grp = lane // 4
        mask = np.uint32(np.uint32(15) << np.uint32(grp * 4))
        v = lane
        for _ in range(grp % 3 + 1):
            v += cuda.shfl_xor_sync(mask, v, 2)
            v += cuda.shfl_xor_sync(mask, v, 1)
        out[lane] = v

    out = np.zeros(32, np.int64)
    run(k, 32, out)
    want = []
    for lane in range(32):
        grp = lane // 4
        s = sum(range(grp * 4, grp * 4 + 4))
        want.append(s * 4 ** (grp % 3))
    assert out.tolist() == want


# -- a failed launch leaves the simulator as it found it ------------------------------------------
# The simulator raises a thread's exception without joining the rest of the block; threads
# still inside a device function (warp_sum) kept ``cuda`` swapped for the fake module in
# that function's module (spmvlab.kernels._common), so the next to_device failed with
# "'FakeCUDAModule' object has no attribute 'to_device'". See spmvlab/cudasim.py.

def _sim_threads():
    return [t for t in threading.enumerate() if hasattr(t, "thread_id") and t.is_alive()]


def _tiny_csr():
    from reference.csr import CSRMatrix
    indptr = np.array([0, 2, 3, 3, 5], np.int32)
    indices = np.array([0, 3, 1, 0, 2], np.int32)
    values = np.array([1, 2, 3, 4, 5], np.float32)
    return CSRMatrix(indptr=indptr, indices=indices, values=values, shape=(4, 4))


def _spmv_out_of_bounds():
    """The reported case: a column index past x, read by lane 5 of row 0 while the block's
    other warp (row 1) is inside warp_sum."""
    from spmvlab.kernels import csr
    # vec=1: lane l of row r's warp reads entry indptr[r] + l; row 0's entry 5 is bad
    D = csr.DeviceCSR(indptr=cuda.to_device(np.array([0, 6, 7, 7, 9], np.int32)),
                      indices=cuda.to_device(np.array([0, 1, 2, 3, 0, 10_000, 1, 0, 2], np.int32)),
                      values=cuda.to_device(np.ones(9, np.float32)), shape=(4, 4),
                      dtype=np.dtype(np.float32), nbytes=0)
    csr.spmv(D, np.ones(4, np.float32), config=csr.CSRConfig(vec=1, threads_per_block=64))


def _lane_skips_warp_sum():
    from spmvlab.kernels._common import warp_sum

    @cuda.jit
    def k(out):
        t = cuda.threadIdx.x
        if t == 7:
            return
        out[t] = warp_sum(np.float32(t))

    k[1, 64](np.zeros(64, np.float32))


def _lane_too_late_for_a_shuffle():
    """Lane 7 is alive but does not reach the shuffle within TIMEOUT_S (lowered below)."""
    @cuda.jit
    def k(out):
        t = cuda.threadIdx.x
        if t == 7:
            time.sleep(0.5)   # the simulator runs kernels as Python
            return
        out[t] = cuda.shfl_sync(FULL, t, 0)

    k[1, 32](np.zeros(32, np.int32))


_NEVER_REACHED = r"lanes \[7\] of warp 0 .* never reached"


@pytest.mark.parametrize("launch, error, message", [
    (_spmv_out_of_bounds, IndexError, r"tid=\[5, 0, 0\] ctaid=\[0, 0, 0\]: index 10000 is out of"),
    (_lane_skips_warp_sum, "WarpDivergenceError", _NEVER_REACHED),
    (_lane_too_late_for_a_shuffle, "WarpDivergenceError", _NEVER_REACHED),
], ids=["out-of-bounds", "divergent", "timed-out"])
def test_failed_launch_restores_the_simulator(monkeypatch, launch, error, message):
    from spmvlab import cudasim
    from spmvlab.kernels import _common, csr
    from numba.cuda.simulator import kernelapi

    if isinstance(error, str):
        error = getattr(cudasim, error)
    with monkeypatch.context() as m, pytest.raises(error, match=message) as info:
        m.setattr(cudasim, "TIMEOUT_S", 0.2)
        launch()
    assert type(info.value) is error   # the first failure, not a lane aborted because of it
    # the short timeout is for the failing launch only: on a loaded machine the calls below
    # can take longer than 0.2 s to bring every lane of a warp to a collective

    # the user's next call, right away (it used to fail in _common.to_dev)
    M = _tiny_csr()
    x = np.array([1, 2, 3, 4], np.float32)
    for cfg in (csr.CSRConfig(vec=1, threads_per_block=64), csr.CSRConfig()):
        assert np.array_equal(csr.spmv(M, x, config=cfg), M.to_csr() @ x)

    # nothing of the failed launch is left running or swapped
    assert not _sim_threads()
    assert not kernelapi._swap_refcount
    assert _common.cuda is cuda and csr.cuda is cuda

    d = cuda.to_device(np.arange(4, dtype=np.float32))
    assert np.array_equal(d.copy_to_host(), np.arange(4, dtype=np.float32))

    @cuda.jit
    def rotate(out):
        lane = cuda.threadIdx.x
        out[lane] = cuda.shfl_sync(FULL, lane * 10, (lane + 1) % 32)

    out = np.zeros(32, np.int32)
    run(rotate, 32, out)
    assert np.array_equal(out, (np.arange(1, 33) % 32) * 10)

def test_straggler_past_join_timeout_is_reported(monkeypatch):
    """Lane 7 sleeps through the collective's timeout and the launch's wait for the block:
    the caller still gets the divergence error, plus a warning that a thread still runs."""
    from spmvlab import cudasim

    monkeypatch.setattr(cudasim, "TIMEOUT_S", 0.1)
    monkeypatch.setattr(cudasim, "JOIN_TIMEOUT_S", 0.1)

    @cuda.jit
    def k(out):
        t = cuda.threadIdx.x
        if t == 7:
            time.sleep(0.6)
        out[t] = cuda.shfl_sync(FULL, t, 7)

    with pytest.warns(RuntimeWarning, match="1 simulated threads of a failed launch"):
        with pytest.raises(cudasim.WarpDivergenceError, match=r"lanes \[7\]"):
            run(k, 32, np.zeros(32, np.int32))
    for t in _sim_threads():
        t.join(5)
    assert not _sim_threads()   # lane 7 woke, saw the abort flag at the shuffle, and ended


def test_a_collective_right_after_syncthreads_is_no_divergence():
    """The simulator releases a barrier's threads one by one: a lane that has left it and
    reaches a warp collective must wait for the lanes still flagged as waiting in that same
    barrier, not report them as divergent (seen with shared tables filled before a decode)."""
    @cuda.jit
    def k(out):
        sm = cuda.shared.array(64, np.int32)
        sm[cuda.threadIdx.x] = cuda.threadIdx.x
        cuda.syncthreads()
        out[cuda.threadIdx.x] = cuda.shfl_xor_sync(FULL, sm[63 - cuda.threadIdx.x], 1)

    for _ in range(5):
        out = np.zeros(64, np.int32)
        run(k, 64, out)
        assert np.array_equal(out, 63 - (np.arange(64) ^ 1))


def test_threads_reaching_a_shared_array_together_share_it(monkeypatch):
    """Every thread released by a barrier allocates the same shared array at once: all of them
    must get the block's one array. The simulator's own lookup was not atomic and once gave a
    thread an array of its own, whose writes the others never saw; creating the array is
    slowed here (as a thread switch would) so that window is always hit."""
    from numba.cuda.simulator import kernelapi

    class SlowNumpy:
        def __getattr__(self, name):
            return getattr(np, name)

        def empty(self, *args, **kwargs):
            time.sleep(0.002)
            return np.empty(*args, **kwargs)

    monkeypatch.setattr(kernelapi, "np", SlowNumpy())
    n = 64

    @cuda.jit
    def k(out):
        i = cuda.threadIdx.x
        cuda.syncthreads()                     # the whole block reaches the next line at once
        buf = cuda.shared.array(64, np.int32)
        buf[i] = i + 1
        cuda.syncthreads()
        s = 0
        for j in range(64):
            s += buf[j]
        out[cuda.blockIdx.x, i] = s

    out = np.zeros((4, n), np.int32)
    k[4, n](out)
    assert (out == n * (n + 1) // 2).all(), np.unique(out)
