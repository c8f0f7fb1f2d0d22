"""Warp collectives and bit intrinsics for Numba's CUDA simulator.

The stock simulator (``NUMBA_ENABLE_CUDASIM=1``) has no ``shfl_*_sync``, ``ballot_sync``,
``all_sync``/``any_sync``, ``syncwarp`` or ``activemask``, and gets ``popc``/``clz`` wrong for
negative and 64-bit inputs. :func:`install` adds them to the simulator's fake ``cuda``
module so warp-per-row kernels run unchanged on a CPU-only machine.

Each collective is a rendezvous: the k-th collective call with a given ``mask`` of every
lane named in it is matched with the k-th such call of the others (so disjoint sub-warp
groups, e.g. EC-CSR's blocks of 2 lanes, run their own sequences). A lane that exits, or waits in another
barrier, without reaching the collective makes the others raise :class:`WarpDivergenceError`
instead of hanging; so does a lane that is still running but has not arrived after
:data:`TIMEOUT_S` seconds.

Failed launches. When a simulated thread raises, the simulator's ``BlockManager.run`` raises
that exception at once, without joining the block's other threads: it only sets their
``abort`` flag, which nothing but ``syncthreads`` reads. Those threads keep running after the
launch has returned. While one of them is inside a device function (``warp_sum`` in
``spmvlab.kernels._common``, say), it holds the simulator's ``swapped_cuda_module``
reference count for that function's module, so the launch's own ``finally`` does not put the
real ``numba.cuda`` back in the module's globals, and the caller's next ``cuda.to_device``
there raises ``AttributeError: 'FakeCUDAModule' object has no attribute 'to_device'`` (the
swap is undone later, whenever the last straggler leaves the device function; one that
enters a device function after the launch has returned swaps in ``None``). :func:`install`
therefore wraps ``BlockManager.run``: after a failure it aborts the block (the collectives
here read the ``abort`` flag too), joins its threads for up to :data:`JOIN_TIMEOUT_S`
seconds, warns if any is still running (a lane spinning in plain code cannot be stopped),
and raises the failure that came first (the out-of-bounds ``IndexError`` rather than the
``WarpDivergenceError`` its warp-mates raised because of it).

Shared arrays. The simulator gives each ``cuda.shared.array`` call site one array per block,
looked up and, on a miss, created without a lock: threads that reach a call site together
(all the lanes a barrier or a warp collective has just released) can each miss and create
their own, and a thread left with its own array writes where its block-mates never read
(split24's SpMM lost a warp's sums that way, at random, under load). :func:`install`
replaces the lookup with the same one under a lock, the call site found from the caller's
frame.
"""
from __future__ import annotations

import itertools
import sys
import threading
import time
import warnings

import numpy as np

WARP = 32
FULL_MASK = 0xFFFFFFFF
TIMEOUT_S = 30.0
"""Seconds a warp collective waits for a lane that is still running before it raises
:class:`WarpDivergenceError` (read at every call; tests lower it)."""
JOIN_TIMEOUT_S = 30.0
POLL_S = 0.02
"""Seconds between a waiting lane's checks for aborts and lanes that will never arrive (the
last lane to arrive wakes the others at once)."""
SWITCH_INTERVAL_S = 5e-4
"""The interpreter's thread switch interval :func:`install` sets (at most): with Python's
default 5 ms, every hand-over of the GIL between the simulated lanes of a warp collective
(and the simulator's polling main thread) could wait that long, and those hand-overs
dominated the simulated time of collective-heavy kernels (CSR-dtANS: a ballot per decoder
event); the shorter interval cuts that wait (docs/performance.md, "Warp simulator")."""
"""Seconds a failed launch waits for the rest of its block to stop (read at every failure)."""


class WarpDivergenceError(RuntimeError):
    """A lane named in a warp collective's mask never reached it."""


class LaunchAborted(RuntimeError):
    """Raised in a lane waiting in a collective once another thread of its block failed;
    the launch reports that other failure, not this."""


_failures = itertools.count()  # orders the failed threads of a block, first failure first


class _Warp:
    """Rendezvous state of one warp of one block."""

    def __init__(self):
        self.cond = threading.Condition()
        self.slots: dict[int, dict[int, object]] = {}   # call number -> lane -> value
        self.readers: dict[int, int] = {}                # call number -> lanes still to read


_registry_lock = threading.Lock()


def _me():
    t = threading.current_thread()
    if not hasattr(t, "thread_id"):
        raise RuntimeError("warp collectives can only be called inside a simulated kernel")
    return t


def _warp_of(t) -> _Warp:
    """The warp's rendezvous, kept on the simulator's per-block manager."""
    with _registry_lock:
        warps = t._manager.__dict__.setdefault("_spmvlab_warps", {})
        w = warps.get(t.thread_id // WARP)
        if w is None:
            w = warps[t.thread_id // WARP] = _Warp()
    return w


def _block_size(t) -> int:
    bx, by, bz = t._manager._block_dim
    return int(bx * by * bz)


def _lanes(mask: int) -> list[int]:
    m = int(mask) & FULL_MASK
    return [i for i in range(WARP) if (m >> i) & 1]


def _exchange(mask, value):
    """Deposit ``value`` for this lane, wait for every lane in ``mask``, return all values."""
    t = _me()
    lane = t.thread_id % WARP
    lanes = _lanes(mask)
    if lane not in lanes:
        raise WarpDivergenceError(f"lane {lane} called a warp collective with mask {int(mask):#x} "
                                  "that does not include itself")
    warp_base = t.thread_id - lane
    n_threads = _block_size(t)
    missing = [ln for ln in lanes if warp_base + ln >= n_threads]
    if missing:
        raise WarpDivergenceError(f"mask {int(mask):#x} names lanes {missing} that do not exist "
                                  f"in a block of {n_threads} threads")
    if t.abort:
        raise LaunchAborted("abort flag set on a warp collective call")
    w = _warp_of(t)
    # counted per mask: groups of lanes with disjoint masks (sub-warp reductions) run their
    # own sequences of collectives, as on the GPU
    m = int(mask) & FULL_MASK
    counters = t.__dict__.setdefault("_spmvlab_calls", {})
    call = counters.get((id(w), m), 0)
    counters[(id(w), m)] = call + 1
    key = (m, call)
    deadline = time.monotonic() + TIMEOUT_S
    with w.cond:
        slot = w.slots.setdefault(key, {})
        slot[lane] = value
        if len(slot) >= len(lanes) and all(ln in slot for ln in lanes):
            w.cond.notify_all()   # only the last arrival wakes the others (aborts: polled)
        while not all(ln in slot for ln in lanes):
            w.cond.wait(timeout=POLL_S)
            if t.abort:  # set by the simulator (and _stop_block) when another thread failed
                raise LaunchAborted("abort flag set in a warp collective")
            if not all(ln in slot for ln in lanes):
                absent = [ln for ln in lanes if ln not in slot]
                gone = [ln for ln in absent if not _lane_alive(t, warp_base + ln)]
                if gone or time.monotonic() > deadline:
                    raise WarpDivergenceError(
                        f"lanes {gone or absent} of warp {t.thread_id // WARP} in block "
                        f"{tuple(t.blockIdx)} never reached warp collective #{call} "
                        f"(mask {int(mask):#x})")
        values = dict(slot)
        left = w.readers.get(key, len(lanes)) - 1
        if left == 0:
            w.slots.pop(key, None)
            w.readers.pop(key, None)
        else:
            w.readers[key] = left
    return lane, values


def _lane_alive(t, thread_id: int) -> bool:
    """False once that lane's thread has finished or waits in a later syncthreads than ``t``
    passed; True while it runs or has not started yet (the simulator starts a block's threads
    one by one). A lane still marked as waiting in the barrier ``t`` itself passed is being
    released (the simulator clears the threads' flags one by one), so it counts as running."""
    other = t._manager.__dict__.get("_spmvlab_threads", {}).get(thread_id)
    if other is None:
        return True
    if not other.is_alive():
        return False
    return not (other.syncthreads_blocked
                and getattr(other, "_spmvlab_barriers", 0) > getattr(t, "_spmvlab_barriers", 0))


def _block_threads(manager) -> list:
    """The started simulator threads of one block (from before they reach ``run``)."""
    return [t for t in threading.enumerate() if getattr(t, "_manager", None) is manager]


def _ran(manager) -> list:
    """The block's threads that reached ``run`` (every one that can have failed)."""
    return list(manager.__dict__.get("_spmvlab_threads", {}).values())


def _from_a_thread(manager, exc) -> bool:
    return any(t.exception is not None and t.exception[0] is exc for t in _ran(manager))


def _stop_block(manager):
    """Abort the block of a failed launch and wait for its threads; return the
    ``(exception, traceback)`` of the thread that failed first (not one that was only
    aborted), or None."""
    threads = _block_threads(manager)
    for t in threads:
        t.abort = True
        t.syncthreads_blocked = False
        t.syncthreads_event.set()
    deadline = time.monotonic() + JOIN_TIMEOUT_S
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
    stuck = [t for t in threads if t.is_alive()]
    if stuck:
        warnings.warn(f"{len(stuck)} simulated threads of a failed launch (first: {stuck[0]}) "
                      f"still run after {JOIN_TIMEOUT_S} s; until they end, modules whose "
                      "device functions they are in may still see the fake cuda module",
                      RuntimeWarning, stacklevel=4)
    failed = [t for t in _ran(manager) if t.exception is not None and not _aborted(t.exception[0])]
    if not failed:
        return None
    return min(failed, key=lambda t: getattr(t, "_spmvlab_failure", float("inf"))).exception


def _aborted(exc) -> bool:
    """True for the errors a thread raises only because another one failed first."""
    return isinstance(exc, LaunchAborted) or (type(exc) is RuntimeError
                                              and "abort flag set" in str(exc))


# -- the collectives --------------------------------------------------------------------------

def shfl_sync(mask, value, src_lane):
    lane, vals = _exchange(mask, value)
    src = int(src_lane) % WARP
    return vals.get(src, value)


def shfl_up_sync(mask, value, delta):
    lane, vals = _exchange(mask, value)
    src = lane - int(delta)
    return vals.get(src, value) if src >= 0 else value


def shfl_down_sync(mask, value, delta):
    lane, vals = _exchange(mask, value)
    src = lane + int(delta)
    return vals.get(src, value) if src < WARP else value


def shfl_xor_sync(mask, value, lane_mask):
    lane, vals = _exchange(mask, value)
    src = lane ^ int(lane_mask)
    return vals.get(src, value) if src < WARP else value


def ballot_sync(mask, predicate):
    _, vals = _exchange(mask, bool(predicate))
    bits = 0
    for ln, p in vals.items():
        if p:
            bits |= 1 << ln
    return np.uint32(bits).view(np.int32)  # numba's CUDA ballot_sync returns int32 too


def all_sync(mask, predicate):
    _, vals = _exchange(mask, bool(predicate))
    return int(all(vals.values()))


def any_sync(mask, predicate):
    _, vals = _exchange(mask, bool(predicate))
    return int(any(vals.values()))


def syncwarp(mask=FULL_MASK):
    _exchange(mask, None)


def activemask():
    t = _me()
    lane0 = t.thread_id - t.thread_id % WARP
    n = min(WARP, _block_size(t) - lane0)
    return np.uint32((1 << n) - 1 if n < WARP else FULL_MASK)


def lanemask_lt():
    t = _me()
    return np.uint32((1 << (t.thread_id % WARP)) - 1)


# -- bit intrinsics with the widths the hardware uses -------------------------------------------

def _bits(val):
    v = np.asarray(val)
    width = v.dtype.itemsize * 8 if v.dtype.kind in "iu" else 32
    return int(v) & ((1 << width) - 1), width


def popc(val):
    u, _ = _bits(val)
    return bin(u).count("1")


def clz(val):
    u, width = _bits(val)
    return width - u.bit_length()


def ffs(val):
    u, _ = _bits(val)
    return (u & -u).bit_length()


def brev(val):
    u, width = _bits(val)
    return int(format(u, f"0{width}b")[::-1], 2)


def umulhi(a, b):
    return np.uint32((int(a) & FULL_MASK) * (int(b) & FULL_MASK) >> 32)


def umul64hi(a, b):
    m = (1 << 64) - 1
    return np.uint64(((int(a) & m) * (int(b) & m)) >> 64)


_COLLECTIVES = dict(shfl_sync=shfl_sync, shfl_up_sync=shfl_up_sync, shfl_down_sync=shfl_down_sync,
                    shfl_xor_sync=shfl_xor_sync, ballot_sync=ballot_sync, all_sync=all_sync,
                    any_sync=any_sync, syncwarp=syncwarp, activemask=activemask,
                    lanemask_lt=lanemask_lt, popc=popc, clz=clz, ffs=ffs, brev=brev)
_LIBDEVICE = dict(umulhi=umulhi, umul64hi=umul64hi, popc=popc, popcll=popc, clz=clz, clzll=clz,
                  ffs=ffs, ffsll=ffs, brev=brev, brevll=brev)

_installed = False


def install() -> None:
    """Add the emulations to the simulator's fake ``cuda`` module (idempotent)."""
    global _installed
    if _installed:
        return
    from numba.cuda.simulator import kernel, kernelapi

    original_run = kernel.BlockThread.run
    original_syncthreads = kernel.BlockThread.syncthreads
    original_block_run = kernel.BlockManager.run

    def run(self):  # register each simulated thread with its block so lanes can see it
        self._manager.__dict__.setdefault("_spmvlab_threads", {})[self.thread_id] = self
        original_run(self)
        if self.exception is not None:  # numbered before is_alive() turns False
            self._spmvlab_failure = next(_failures)

    def block_run(self, grid_point, *args):  # stop the whole block before a failure leaves
        try:
            original_block_run(self, grid_point, *args)
        except BaseException as exc:
            first = _stop_block(self)
            if first is not None and first[0] is not exc and _from_a_thread(self, exc):
                raise first[0].with_traceback(first[1]) from None
            raise

    def syncthreads(self):  # count the barriers each thread entered (see _lane_alive)
        self._spmvlab_barriers = getattr(self, "_spmvlab_barriers", 0) + 1
        original_syncthreads(self)

    shared_lock = threading.Lock()
    original_shared = kernelapi.FakeCUDAShared.array

    def shared_array(self, shape, dtype, alignment=None):  # one array per call site and block
        if isinstance(dtype, kernelapi.types.Type):       # the simulator's own imports
            dtype = kernelapi.numpy_support.as_dtype(dtype)
        dtype = np.dtype(dtype)     # (np.uint32 as well: the stock dynamic array needs a dtype)
        if alignment is not None or shape == 0:            # refused, or the dynamic array
            return original_shared(self, shape, dtype, alignment)
        caller = sys._getframe(1)
        site = (caller.f_code.co_filename, caller.f_lineno)
        with shared_lock:
            res = self._allocations.get(site)
            if res is None:
                res = self._allocations[site] = np.empty(shape, dtype)
        return res

    kernelapi.FakeCUDAShared.array = shared_array
    kernel.BlockThread.run = run
    kernel.BlockThread.syncthreads = syncthreads
    sys.setswitchinterval(min(sys.getswitchinterval(), SWITCH_INTERVAL_S))
    kernel.BlockManager.run = block_run

    for name, fn in _COLLECTIVES.items():
        setattr(kernelapi.FakeCUDAModule, name, staticmethod(fn))
    try:
        from numba.cuda import libdevice
        for name, fn in _LIBDEVICE.items():
            setattr(libdevice, name, fn)
    except ImportError:  # pragma: no cover - simulator without a libdevice stub module
        pass
    _installed = True
