"""Building the problems of a long measurement ahead of their timing, in other processes,
and drawing its progress.

:func:`problems` yields one problem per job, built by ``workers`` spawned processes up to
``ahead`` jobs before it is used, so generating the next matrices overlaps the GPU timing
of the current one; :func:`progress` draws ``desc [#####.....] i/total elapsed eta`` on
stderr as a loop goes.
"""
from __future__ import annotations

import os
import sys
import time
from typing import Iterable

__all__ = ["progress", "build_problem", "default_workers", "problems", "encodings_of"]


def progress(iterable: Iterable, total: int | None = None, desc: str = "", stream=None,
             width: int = 28, min_interval: float = 0.2):
    """Yield from ``iterable`` while drawing ``desc [#####.....] i/total  elapsed`` on stderr."""
    stream = sys.stderr if stream is None else stream
    if total is None and hasattr(iterable, "__len__"):
        total = len(iterable)  # type: ignore[arg-type]
    t0 = time.perf_counter()
    last = [-1.0]

    def draw(i, final=False):
        now = time.perf_counter()
        if not final and now - last[0] < min_interval:
            return
        last[0] = now
        el = now - t0
        if total:
            done = int(width * min(i, total) / total)
            bar = "#" * done + "." * (width - done)
            eta = f" eta {el / i * (total - i):.0f}s" if 0 < i < total else ""
            line = f"{desc} [{bar}] {i}/{total} {el:.0f}s{eta}"
        else:
            line = f"{desc} {i} {el:.0f}s"
        stream.write("\r" + line.ljust(width + len(desc) + 30))
        if final:
            stream.write("\n")
        stream.flush()

    i = 0
    draw(0)
    for item in iterable:
        yield item
        i += 1
        draw(i)
    draw(i, final=True)


def encodings_of(names) -> list:
    """The formats (default encode options) that the plain format or format-method names
    among ``names`` encode their matrix in (``Problem.encoded``): the ``encode`` list of a
    job whose builder should encode ahead of the timing. Other names (vendor baselines,
    GeneralSparse's methods) encode, if at all, when their method is built."""
    from . import formats
    out = []
    for name in names:
        if not isinstance(name, str):
            continue
        for info in formats.kernel_formats():
            if (name == info.name or name in info.methods) and info.name not in out:
                out.append(info.name)
    return out


def build_problem(spec: dict, dense: bool = False):
    """The :class:`~spmvlab.methods.base.Problem` of one job: ``datasets.uniform(shape,
    sparsity, dtype, seed)`` with X drawn by ``Problem.make`` (``k`` columns, SpMV when
    None; X's seed ``xseed``, default 1 as in ``methods.measure``), its float64 reference
    product computed, with ``dense`` its dense copy (for cuBLAS), and the matrix encoded in
    each format named in ``spec["encode"]`` (default options; ``Problem.encoded``)."""
    from . import datasets
    from .methods.base import Problem
    A = datasets.uniform(tuple(spec["shape"]), spec["sparsity"], dtype=spec["dtype"],
                         seed=spec["seed"])
    p = Problem.make(A, spec["dtype"], k=spec.get("k"), seed=spec.get("xseed", 1))
    p.reference()
    if dense:
        p.dense()
    for fmt in spec.get("encode", ()):
        p.encoded(fmt)
    return p


def default_workers() -> int:
    """Builder processes of :func:`problems`: ``SPMVLAB_BUILD_WORKERS`` when set (an integer
    >= 0), else 0 on machines of two cores or fewer and ``min(4, cores // 4)`` otherwise."""
    env = os.environ.get("SPMVLAB_BUILD_WORKERS")
    if env is not None and env.strip():
        try:
            n = int(env)
        except ValueError:
            n = -1
        if n < 0:
            raise ValueError(f"SPMVLAB_BUILD_WORKERS: expected an integer >= 0 (builder "
                             f"processes; 0 builds in this process), got {env!r}; unset it "
                             "for the default")
        return n
    n = os.cpu_count() or 1
    return 0 if n <= 2 else min(4, max(1, n // 4))


def problems(specs: list, *, dense: bool = False, workers: int | None = None,
             ahead: int | None = None, builder=None):
    """Yield ``(spec, problem)`` for each spec in order (``builder(spec, dense)``, default
    :func:`build_problem`; another builder must be a module-level function, so that the
    workers can unpickle it, and may return anything picklable, e.g. one problem per N), built in
    ``workers`` separate processes up to ``ahead`` jobs before they are used, so generating
    the next matrices (numpy, one core each) overlaps the GPU timing of the current one.

    ``workers=0`` builds each in this process when it is needed (the default on machines
    of two cores or fewer; otherwise ``min(4, cores // 4)``, or ``SPMVLAB_BUILD_WORKERS``: a problem of the largest fig4
    layer at 0 % sparsity, with its dense copy and encodings, is several GB, and each one in
    flight is held in memory twice while it is passed back). The workers are started with
    ``spawn`` and never touch the GPU. Every problem is the same whichever process built it
    (the generators are seeded)."""
    specs = list(specs)
    build = build_problem if builder is None else builder
    workers = default_workers() if workers is None else int(workers)
    if workers <= 0:
        for spec in specs:
            yield spec, build(spec, dense)
        return
    import concurrent.futures as cf
    import multiprocessing as mp
    ahead = max(1, workers if ahead is None else int(ahead))
    pool = cf.ProcessPoolExecutor(workers, mp_context=mp.get_context("spawn"))
    finished = False
    try:
        pending = [pool.submit(build, s, dense) for s in specs[:ahead]]
        for i, spec in enumerate(specs):
            p = pending[i].result()
            pending[i] = None
            if i + ahead < len(specs):
                pending.append(pool.submit(build, specs[i + ahead], dense))
            yield spec, p
        finished = True
    finally:
        if finished:
            pool.shutdown(wait=True)
        else:
            # closed early (a time budget, an error): do not wait for the problems still being
            # built (the largest take tens of seconds and GBs): stop their workers
            procs = list((getattr(pool, "_processes", None) or {}).values())
            pool.shutdown(wait=False, cancel_futures=True)
            for proc in procs:
                proc.terminate()
