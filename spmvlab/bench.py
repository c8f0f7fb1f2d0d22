"""GPU timing harness: CUDA-event timing with an optional L2 flush and bandwidth helpers
(the metadata every results file records is :mod:`spmvlab.runinfo`).

How one timed call works (:func:`time_fn`)
------------------------------------------
Per repetition, on the legacy default stream (stream 0, which numba, CuPy's
``cupy.cuda.Stream.null`` and torch's default stream all are unless a program opts into
per-thread default streams):

1. cold mode only: a numba kernel reads (default) or overwrites a device buffer of
   ``flush_bytes`` (default 2 x the device's L2 size), evicting ``fn``'s data from L2;
2. a one-thread numba kernel sleeps ``pad_us`` microseconds. While the GPU sleeps the host
   records the start event and calls ``fn``, so by the time the GPU reaches the start event
   all of ``fn``'s launches are queued behind it: the events measure GPU time only, never
   Python's launch overhead (a numba launch costs the host more than many SpMVs take on the
   GPU);
3. start event, ``fn()``, end event; wait for the end event.

A sample whose host side (step 3's enqueueing) took longer than the pad is taken again with
the pad doubled: the GPU may have reached the start event before ``fn`` was queued and timed
the wait as work (a host busy with other processes, e.g. cells of a sweep built beside it).
``Timing.redone`` counts them; after ``reps`` re-takes the rest are kept as they come.

``fn`` must enqueue its work on the default stream without synchronising the host (a host
sync inside ``fn`` would make the GPU idle while timed). The events are numba's by default;
``events="cupy"`` or ``"torch"`` use that library's events (recorded on its current
stream, by default the same stream 0).
"""
from __future__ import annotations

import dataclasses
import functools
import time
import warnings
from typing import Callable

import numpy as np

from reference._common import OptionError, problem

from ._cuda import cuda
from .backends import import_cupy, import_torch, require_gpu

__all__ = ["Timing", "time_fn", "collect_samples", "effective_bandwidth", "copy_bandwidth",
           "l2_size", "flush_l2", "require_gpu"]

DEFAULT_L2_BYTES = 50 * 1024 * 1024
EVENT_KINDS = ("numba", "cupy", "torch")


# ---------------------------------------------------------------------------------------------
# results of one timing
# ---------------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Timing:
    """Statistics of ``reps`` timed calls, in microseconds (``samples`` in call order)."""

    median_us: float
    p10_us: float
    p90_us: float
    mean_us: float
    reps: int
    cold: bool
    samples: tuple = dataclasses.field(default=(), repr=False)
    #: samples taken again because the host had not queued the timed call before the GPU
    #: reached it (the module docstring)
    redone: int = 0

    @classmethod
    def from_samples(cls, samples_us, cold: bool, redone: int = 0) -> "Timing":
        s = np.asarray(samples_us, dtype=np.float64)
        if s.size == 0:
            raise OptionError(problem("samples", "at least one timing", "none"))
        return cls(median_us=float(np.median(s)), p10_us=float(np.percentile(s, 10)),
                   p90_us=float(np.percentile(s, 90)), mean_us=float(s.mean()), reps=int(s.size),
                   cold=bool(cold), samples=tuple(float(v) for v in s), redone=int(redone))

    def as_dict(self, samples: bool = False) -> dict:
        d = dataclasses.asdict(self)
        d["samples"] = list(self.samples) if samples else None
        if not samples:
            d.pop("samples")
        return d


# ---------------------------------------------------------------------------------------------
# device helpers: L2 size, flush and pad kernels
# ---------------------------------------------------------------------------------------------

def _device_attr(name, default=None):
    try:
        return int(getattr(cuda.get_current_device(), name))
    except Exception:
        return default


def l2_size() -> int:
    """The current device's L2 size in bytes (50 MB if the driver does not say)."""
    v = _device_attr("L2_CACHE_SIZE")
    return v if v else DEFAULT_L2_BYTES


@functools.lru_cache(maxsize=None)
def _flush_kernel():
    @cuda.jit
    def flush_write(buf, value):
        """Grid-stride loop: every thread writes ``value`` to buf[i], buf[i + stride], ..."""
        i = cuda.grid(1)
        stride = cuda.gridsize(1)
        while i < buf.shape[0]:
            buf[i] = value
            i += stride

    return flush_write


@functools.lru_cache(maxsize=None)
def _flush_read_kernel():
    @cuda.jit
    def flush_read(buf, value, sink):
        """Grid-stride loop: every thread reads buf[i], buf[i + stride], ...; the sum is
        written only if it equals ``value`` (never, in practice) so the loads stay."""
        i = cuda.grid(1)
        stride = cuda.gridsize(1)
        s = 0
        while i < buf.shape[0]:
            s += buf[i]
            i += stride
        if s == value:
            sink[0] = s

    return flush_read


@functools.lru_cache(maxsize=None)
def _pad_kernel():
    @cuda.jit
    def sleep_pad(n_us):
        """One thread sleeps about ``n_us`` microseconds (keeps the stream busy)."""
        for _ in range(n_us):
            cuda.nanosleep(1000)

    return sleep_pad


_flush_buffers: dict = {}
_flush_count = [0]
FLUSH_MODES = ("write", "read")


def _flush_buffer(nbytes: int):
    n = max(1, -(-int(nbytes) // 4))
    buf = _flush_buffers.get(n)
    if buf is None:
        _flush_buffers.clear()
        buf = cuda.device_array(n, dtype=np.int32)
        _flush_kernel()[_blocks(), 256](buf, np.int32(0))
        _flush_buffers[n] = buf
        _flush_buffers["sink"] = cuda.device_array(1, dtype=np.int32)
    return buf


def _blocks() -> int:
    return 8 * (_device_attr("MULTIPROCESSOR_COUNT", 132) or 132)


def flush_l2(nbytes: int | None = None, mode: str = "read"):
    """Evict L2 on the default stream: overwrite (``mode="write"``) or read (``"read"``)
    ``nbytes`` (default 2 x L2) of a device buffer.

    "write" leaves L2 full of dirty lines that the next kernel's misses write back to
    memory while it runs; "read" leaves clean lines (no write-back traffic)."""
    require_gpu("flush_l2")
    if mode not in FLUSH_MODES:
        raise OptionError(problem("flush mode", f"one of {FLUSH_MODES}", repr(mode)))
    buf = _flush_buffer(nbytes or 2 * l2_size())
    _flush_count[0] += 1
    v = np.int32(_flush_count[0] & 0x7FFFFFFF)
    if mode == "write":
        _flush_kernel()[_blocks(), 256](buf, v)
    else:
        _flush_read_kernel()[_blocks(), 256](buf, np.int32(-1), _flush_buffers["sink"])


def _pad(us: int):
    if us > 0:
        with warnings.catch_warnings():  # a 1-thread launch is the point here
            warnings.simplefilter("ignore")
            _pad_kernel()[1, 1](np.int32(us))


# ---------------------------------------------------------------------------------------------
# events
# ---------------------------------------------------------------------------------------------

class _Events:
    """A start/end pair of one library's CUDA events recorded on its current stream."""

    def __init__(self, kind: str):
        self.kind = kind
        if kind == "numba":
            self.start, self.end = cuda.event(timing=True), cuda.event(timing=True)
        elif kind == "cupy":
            cp = import_cupy("events='cupy'")
            self._cp = cp
            self.start, self.end = cp.cuda.Event(), cp.cuda.Event()
        elif kind == "torch":
            torch = import_torch("events='torch'")
            self.start = torch.cuda.Event(enable_timing=True)
            self.end = torch.cuda.Event(enable_timing=True)
        else:
            raise OptionError(problem("events", f"one of {EVENT_KINDS}", repr(kind)))

    def record_start(self):
        self.start.record()

    def record_end(self):
        self.end.record()

    def elapsed_us(self) -> float:
        self.end.synchronize()
        if self.kind == "numba":
            return 1e3 * cuda.event_elapsed_time(self.start, self.end)
        if self.kind == "cupy":
            return 1e3 * self._cp.cuda.get_elapsed_time(self.start, self.end)
        return 1e3 * self.start.elapsed_time(self.end)


def _sync(kind: str):
    cuda.synchronize()
    if kind == "torch":
        import torch
        torch.cuda.synchronize()
    elif kind == "cupy":
        import cupy
        cupy.cuda.Device().synchronize()


# ---------------------------------------------------------------------------------------------
# time_fn
# ---------------------------------------------------------------------------------------------

def time_fn(fn: Callable[[], object], *, reps: int = 60, warmup: int = 10, cold: bool = True,
            flush_bytes: int | None = None, events: str = "numba",
            pad_us: int | None = None, flush: str = "read") -> Timing:
    """Time ``fn()`` (a zero-argument callable that launches GPU work on the default stream)
    with CUDA events; see the module docstring for what one timed call does.

    cold        flush L2 (read or overwrite ``flush_bytes``, default 2 x L2, see ``flush``)
                before every timed call
    flush       "read" (default: read a 2 x L2 buffer, L2 ends up holding its clean lines) or
                "write" (overwrite it). A write flush leaves L2 full of dirty lines whose
                write-back lands inside the timed call and inflates every cold time, so the
                default flushes by reading (docs/performance.md, "Timing (bench.py)")
    events      "numba" (default), "cupy" or "torch": whose events bracket ``fn``
    pad_us      GPU sleep before the start event, so the host can queue ``fn`` ahead of the
                GPU; default: 1.5 x the slowest host-side duration of a warm-up call + 50 us
    """
    require_gpu("time_fn")
    if reps < 1 or warmup < 0:
        raise OptionError(problem("reps/warmup", "reps >= 1 and warmup >= 0", (reps, warmup)))
    if events not in EVENT_KINDS:
        raise OptionError(problem("events", f"one of {EVENT_KINDS}", repr(events)))
    ev = _Events(events)
    flush_n = flush_bytes or 2 * l2_size()
    if flush not in FLUSH_MODES:
        raise OptionError(problem("flush", f"one of {FLUSH_MODES}", repr(flush)))
    if cold:
        flush_l2(flush_n, flush)  # allocate and compile outside the loop
    _pad(1)
    host_us = []
    for _ in range(max(warmup, 1)):
        t0 = time.perf_counter()
        fn()
        host_us.append(1e6 * (time.perf_counter() - t0))
        _sync(events)
    if pad_us is None:
        pad_us = int(1.5 * max(host_us[1:] or host_us) + 50)

    def sample(pad: int) -> tuple[float, float]:
        if cold:
            flush_l2(flush_n, flush)
        _pad(pad)
        t0 = time.perf_counter()
        ev.record_start()
        fn()
        ev.record_end()
        host = 1e6 * (time.perf_counter() - t0)
        return ev.elapsed_us(), host

    samples, redone = collect_samples(sample, reps, pad_us)
    _sync(events)
    return Timing.from_samples(samples, cold, redone)


#: the longest pad a re-taken sample asks for, in microseconds
MAX_PAD_US = 100_000


def collect_samples(sample: Callable[[int], tuple], reps: int, pad_us: int) -> tuple[list, int]:
    """``reps`` samples of ``sample(pad) -> (gpu_us, host_us)``, re-taking (up to ``reps``
    times in all) each one whose host side outlasted its pad, with the pad doubled (at most
    :data:`MAX_PAD_US`); returns the samples and the number re-taken."""
    samples, redone, pad = [], 0, int(pad_us)
    while len(samples) < reps:
        gpu_us, host_us = sample(pad)
        if host_us > pad and redone < reps:
            redone += 1
            pad = min(MAX_PAD_US, max(2 * pad, int(1.5 * host_us)))
            continue
        samples.append(gpu_us)
    return samples, redone


def effective_bandwidth(nbytes: float, us: float) -> float:
    """Bytes moved per second, in TB/s (1e12 bytes per second)."""
    if us <= 0:
        return float("nan")
    return float(nbytes) / (float(us) * 1e-6) / 1e12


def copy_bandwidth(nbytes: int = 1 << 30, reps: int = 20) -> dict:
    """Device-to-device copy probe (cuMemcpyDtoD of ``nbytes``): TB/s counting the bytes
    read plus the bytes written."""
    require_gpu("copy_bandwidth")
    n = int(nbytes) // 4
    src = cuda.device_array(n, dtype=np.int32)
    dst = cuda.device_array(n, dtype=np.int32)
    _flush_kernel()[_blocks(), 256](src, np.int32(1))
    t = time_fn(lambda: dst.copy_to_device(src), reps=reps, warmup=3, cold=False)
    moved = 2 * n * 4
    return {"nbytes": n * 4, "bytes_moved": moved, "median_us": t.median_us,
            "p10_us": t.p10_us, "p90_us": t.p90_us,
            "tb_s": effective_bandwidth(moved, t.median_us)}
