"""Compile generated kernels in parallel processes before they are timed.

A GeneralSparse search times about ten strategies per (matrix, N), many of them new to the
process, and numba's compile is the slow step of a new one's try: one after another, the
compiles took a large share of the search's time on the GPU (docs/performance.md,
"GeneralSparse search"). Compiled in worker processes at once, with the kernel cache
(``codegen.CACHE_ENV``) shared through files, the search then loads them.

``compile_pool(workers)``
    The worker processes, started once per process and kept.
``prepare(A, strategies, N, dtype, task)``
    In the searching process: ``task`` run in the pool for each strategy not yet met by
    this process, on the first non-empty rows of A (every column, so the kernels are those
    of A), where ``SPMVLAB_COMPILE_WORKERS`` asks for two or more workers on a GPU; nothing
    otherwise. The task that compiles (a launch of the bare kernel) is
    ``method.compile_on``; a worker that fails costs nothing but its count: the timed try
    compiles what is missing.
"""
from __future__ import annotations

import os
import tempfile
import time

import numpy as np

from reference.generalsparse import SPAN16

from . import codegen

__all__ = ["WORKERS_ENV", "compile_pool", "share_kernels", "prepare", "kernel_key"]

#: environment variable: how many processes compile a search's kernels before it times them
WORKERS_ENV = "SPMVLAB_COMPILE_WORKERS"
#: rows of A the workers launch the kernels on (every column: the same kernel text as A's)
SAMPLE_ROWS = 256

_POOL: list = []
_MET: set = set()       # kernel_key()s this process compiled or had compiled


def compile_pool(workers: int):
    """The compile processes, started once per process and kept (a cluster sweep's worker
    measures one (matrix, N) cell after another: starting 16 processes that import numba for
    each cell cost about as much as the compiles once the kernel cache holds them)."""
    import concurrent.futures as cf
    import multiprocessing as mp
    if _POOL and _POOL[0][0] == workers and not getattr(_POOL[0][1], "_broken", False):
        return _POOL[0][1]
    while _POOL:
        _POOL.pop()[1].shutdown(wait=False, cancel_futures=True)
    _POOL.append((workers, cf.ProcessPoolExecutor(workers, mp_context=mp.get_context("spawn"))))
    return _POOL[0][1]


def share_kernels() -> str:
    """Keep compiled kernels in files from now on, for this process and the workers it
    starts: ``codegen.CACHE_ENV`` as set, else a folder under the system's temporary
    directory (a later run on the same machine loads what is there). Returns the folder."""
    return os.environ.setdefault(codegen.CACHE_ENV,
                                 os.path.join(tempfile.gettempdir(), "spmvlab_kernels"))


def kernel_key(strategy, dtype, n_cols: int) -> tuple:
    """What tells one bare-strategy kernel from another for a matrix of ``n_cols`` columns:
    the strategy, the value type and whether compact storage may need 32-bit columns."""
    return strategy, np.dtype(dtype).name, bool(strategy.compact and n_cols > SPAN16)


def _workers() -> int:
    try:
        return int(os.environ.get(WORKERS_ENV) or 0)
    except ValueError:
        return 0


def prepare(A, strategies, N: int, dtype, task, *, workers: int | None = None,
            pool=None) -> dict | None:
    """Compile the kernels of ``strategies`` for A (CSR), N and ``dtype`` in ``workers``
    processes (default: ``SPMVLAB_COMPILE_WORKERS``): ``task(sample, N, dtype, [strategy])``
    (a module-level function returning counts of compiled, loaded and failed kernels), one
    strategy a task, on the first :data:`SAMPLE_ROWS` non-empty rows of A; only those this
    process has not met before (:func:`kernel_key`; a 32-bit-column kernel that the sample's
    columns do not need is then compiled by the timed try, as without workers). None when
    fewer than two workers are asked for, in the simulator (which compiles nothing) or when
    there is nothing new; else the counts and the seconds waited. ``pool``: the executor
    (default :func:`compile_pool`)."""
    from .._cuda import SIMULATOR
    workers = _workers() if workers is None else int(workers)
    if workers < 2 or (SIMULATOR and pool is None):
        return None
    dt = np.dtype(dtype).name
    new = []
    for s in strategies:
        key = kernel_key(s, dt, A.shape[1])
        if key not in _MET:
            _MET.add(key)
            new.append(s)
    if not new:
        return None
    share_kernels()
    t0 = time.perf_counter()
    sample = A[np.flatnonzero(np.diff(A.indptr))[:SAMPLE_ROWS]]
    out = dict(kernels=len(new), compiled=0, loaded=0, failed=0)
    try:
        pool = pool or compile_pool(workers)
        futures = [pool.submit(task, sample, int(N), dt, [s]) for s in new]
    except Exception:   # noqa: BLE001 (no pool: the tries compile as before)
        out["failed"] = len(new)
        futures = []
    for f in futures:
        try:
            for k, v in f.result().items():
                out[k] += v
        except Exception:   # noqa: BLE001 (a dead worker: the try compiles it)
            out["failed"] += 1
    out["seconds"] = round(time.perf_counter() - t0, 2)
    return out
