"""An experiment's sweep as Dask tasks on every GPU of a host or a cluster (the optional
``cluster`` extra: dask, distributed, dask-cuda; nothing else in spmvlab imports them).

    python experiments/<name>.py --cluster local          # LocalCUDACluster: a worker per GPU
    python experiments/<name>.py --scheduler ADDRESS      # a running cluster (docs/experiments.md)

The unit of work is a *cell* of the experiment's configuration (:func:`cells`): the config
with each of its ``CELL_KEYS`` (default ``SPLIT_KEYS``, the keys ``--merge`` joins runs
over) narrowed to one value, e.g. fig4_macko's (sparsity, shape) pairs or search_gs's
(matrix, N). A task runs the experiment's own ``measure`` on its cell in a worker process
(:func:`run_cell`), so matrices are built there from their seeds or paths and only configs
and rows cross the network; the kernel caches on disk are shared by the processes of a host.

The parent (:func:`sweep`) gathers the rows in cell order, the order of the serial run's
loops (``CELL_KEYS`` lists them outermost first), adds to each row the GPU (``gpu``: name,
index, UUID) and the ``worker`` it ran on, and writes the results file a serial run writes,
with a ``cluster`` record (scheduler, workers, cells, wall time, errors) and one entry per
cell under ``cells``. Rows measured on another kind of GPU go to that device's own results
folder (results/h100/, results/h200/, ...). The file is rewritten after every finished cell,
marked ``partial``, so a stopped sweep started again with the same settings runs only the
cells it lacks.

Faults: a cell whose ``measure`` raises becomes one row with ``method`` "error" (its cell and
the exception) and the sweep goes on. A CUDA error that leaves the process's context unusable
(an illegal address, a failed launch: :func:`poisoned`) ends the worker process (the nanny
starts a fresh one) and the sweep submits the cell again once; a second death makes it an
error row. No more cells are in flight than the live workers have threads, so a death
costs no cell but its own (the scheduler's ``distributed.scheduler.allowed-failures`` = 0,
set by :func:`local_client`, fails the dead worker's cell at once; give an external
scheduler the same). ``SPMVLAB_CLUSTER_FAULT`` injects
faults for testing this (:func:`inject_fault`).
"""
from __future__ import annotations

import os
import sys
import time

from reference._common import OptionError, problem

from . import results as R
from ._cuda import SIMULATOR, cuda
from .runinfo import device_info, device_slug, run_metadata

__all__ = ["grid", "cells", "cell_cost", "submission_order", "cell_label", "gpu_identity",
           "visible_gpus", "poisoned", "context_usable", "inject_fault", "run_cell",
           "local_client", "remote_client", "sweep", "scaling", "record_scaling", "main_flags",
           "FAULT_ENV", "DASK_CONFIG"]

#: faults to inject, comma-separated: ``exit:I`` (the worker running cell I exits, every
#: attempt), ``exit-once:I:PATH`` (exits the first time, leaving PATH as its mark),
#: ``raise:I`` (cell I raises), ``illegal:I`` (cell I launches a kernel that writes far
#: outside its array: an illegal address on a GPU)
FAULT_ENV = "SPMVLAB_CLUSTER_FAULT"
#: the Dask settings a sweep relies on: a cell whose worker died fails at once (the sweep,
#: not the scheduler, runs it again: the scheduler would also charge the death to cells
#: only queued on that worker), and worker processes that may start processes of their
#: own (the experiments' problem builders)
DASK_CONFIG = {"distributed.scheduler.allowed-failures": 0, "distributed.worker.daemon": False}
#: runs more of a cell whose worker died
RETRIES = 1

_POISON = ("illegal address", "illegal memory access", "illegal_address", "illegaladdress",
           "launch_failed", "launch failed", "unspecified launch failure", "misaligned",
           "illegal instruction", "illegal_instruction", "cuda_error_assert",
           "hardware_stack_error", "context is destroyed", "cuda_error_context_is_destroyed",
           "invalid_address_space", "invalidaddressspace")


def _keys(module) -> tuple:
    keys = tuple(getattr(module, "CELL_KEYS", None) or getattr(module, "SPLIT_KEYS", ()))
    if not keys and not hasattr(module, "cells"):
        raise OptionError(problem(f"{module.NAME} as a cluster sweep",
                                  "an experiment with SPLIT_KEYS, CELL_KEYS or cells(cfg)",
                                  "none of them", "run it without --cluster / --scheduler"))
    return keys


def grid(cfg: dict, keys, chunks: dict | None = None) -> list[dict]:
    """``cfg`` with each of ``keys`` (list-valued settings) narrowed to one value, every
    combination, the first key outermost; a key in ``chunks`` is narrowed to consecutive
    runs of that many values instead (the last may be shorter)."""
    chunks = chunks or {}
    out = [{}]
    for k in keys:
        vals, size = list(cfg[k]), int(chunks.get(k, 1))
        if size < 1:
            raise OptionError(problem(f"CELL_CHUNKS[{k!r}]", "an int >= 1", size))
        runs = [vals[i:i + size] for i in range(0, len(vals), size)]
        out = [dict(c, **{k: run}) for c in out for run in runs]
    return [dict(cfg, **c) for c in out]


def cells(module, cfg: dict) -> list[dict]:
    """The configs of ``cfg``'s cells: ``module.cells(cfg)`` where the experiment defines it
    (e.g. to list the data a None setting stands for), else :func:`grid` over its
    ``CELL_KEYS`` (default ``SPLIT_KEYS``), which name the serial run's loops outermost
    first, in runs of ``CELL_CHUNKS[key]`` values where the experiment sets it (a cell of
    several problems builds the next ones while it times the current one, as a serial run
    does: ``spmvlab.workers.problems``)."""
    if hasattr(module, "cells"):
        return [dict(c) for c in module.cells(cfg)]
    return grid(cfg, _keys(module), getattr(module, "CELL_CHUNKS", None))


def cell_cost(module, cell: dict) -> float | None:
    """A cell's expected run time, in any unit, for ordering the cells: the experiment's
    ``cell_cost(cell)`` where it defines one, else the sum of rows x columns of the cell's
    ``shapes`` (one [rows, columns] or a list of them), else None."""
    if hasattr(module, "cell_cost"):
        return float(module.cell_cost(cell))
    shapes = cell.get("shapes")
    if not isinstance(shapes, list) or not shapes:
        return None
    if all(isinstance(v, int) for v in shapes):
        shapes = [shapes]
    try:
        return float(sum(int(r) * int(c) for r, c in shapes))
    except (TypeError, ValueError):
        return None


def submission_order(module, todo: list[dict]) -> list[int]:
    """The cells' indices in the order they are submitted: the costliest first
    (:func:`cell_cost`; ties keep the grid's order), so the sweep does not end waiting on
    one long cell begun last; the grid's order where a cell's cost is unknown."""
    costs = [cell_cost(module, c) for c in todo]
    if any(c is None for c in costs):
        return list(range(len(todo)))
    return sorted(range(len(todo)), key=lambda i: -costs[i])


def cell_label(module, cell: dict) -> dict:
    """What distinguishes a cell: its value of each of ``CELL_KEYS`` (default
    ``SPLIT_KEYS``; a run of ``CELL_CHUNKS`` values as a list), or, for an experiment that
    names neither, its ``cell_*`` settings."""
    keys = tuple(getattr(module, "CELL_KEYS", None) or getattr(module, "SPLIT_KEYS", ()))
    if not keys:
        return {k: v for k, v in cell.items() if k.startswith("cell_")}
    return {k: cell[k][0] if isinstance(cell[k], list) and len(cell[k]) == 1 else cell[k]
            for k in keys}


def gpu_identity() -> dict:
    """This process's GPU: name, index on its host (``CUDA_VISIBLE_DEVICES``' first entry
    where set, else the device number) and UUID; ``{"simulator": True}`` in the simulator."""
    if SIMULATOR:
        return {"simulator": True}
    dev = cuda.get_current_device()
    name = dev.name.decode() if isinstance(dev.name, bytes) else str(dev.name)
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")[0].strip()
    index = int(visible) if visible.isdigit() else int(dev.id)
    uuid = getattr(dev, "uuid", None)
    return dict(name=name, index=index, uuid=None if uuid is None else str(uuid))


def visible_gpus() -> int:
    """The GPUs a local cluster started here can use: ``CUDA_VISIBLE_DEVICES``' entries where
    set, else the driver's count (0 in the simulator or without a driver)."""
    if SIMULATOR:
        return 0
    env = os.environ.get("CUDA_VISIBLE_DEVICES")
    if env is not None:
        return len([d for d in env.split(",") if d.strip()])
    try:
        return len(cuda.gpus)
    except Exception:                        # noqa: BLE001 - no driver: no GPUs
        return 0


def poisoned(exc: BaseException) -> bool:
    """Whether ``exc`` is a CUDA error after which this process's context is unusable (every
    later call fails until the process exits)."""
    text = f"{type(exc).__name__} {exc}".lower()
    return any(p in text for p in _POISON)


def context_usable() -> bool:
    """Whether this process's CUDA context still works after a cell raised: a sticky error
    fails every later call whatever its first message said (an H200 reports the fault
    kernel's far write as an invalid address space, not an illegal address). True in the
    simulator."""
    if SIMULATOR:
        return True
    try:
        import numpy as np
        cuda.synchronize()
        cuda.to_device(np.zeros(1, np.float32)).copy_to_host()
        return True
    except Exception:                        # noqa: BLE001 - any failure: unusable
        return False


def _faults(spec: str | None) -> list[tuple]:
    out = []
    for item in (spec or "").split(","):
        if not item.strip():
            continue
        kind, _, rest = item.strip().partition(":")
        index, _, arg = rest.partition(":")
        if kind not in ("exit", "exit-once", "raise", "illegal") or not index.isdigit() \
                or (kind == "exit-once") != bool(arg):
            raise OptionError(problem(FAULT_ENV, "exit:I, exit-once:I:PATH, raise:I or illegal:I, "
                                      "comma-separated", repr(item)))
        out.append((kind, int(index), arg))
    return out


def inject_fault(spec: str | None, index: int) -> None:
    """Do what ``spec`` (``SPMVLAB_CLUSTER_FAULT``'s syntax) asks of cell ``index``."""
    for kind, i, arg in _faults(spec):
        if i != index:
            continue
        if kind == "exit":
            os._exit(70)
        if kind == "exit-once" and not os.path.exists(arg):
            with open(arg, "w") as f:
                f.write(f"cell {index} ended its worker once\n")
            os._exit(70)
        if kind == "raise":
            raise RuntimeError(f"fault injected into cell {index} ({FAULT_ENV})")
        if kind == "illegal":
            _illegal_launch()


def _illegal_launch() -> None:
    """A kernel that writes 2**30 elements past a 32-element array (numba-cuda checks no
    bounds on a GPU; the simulator raises IndexError instead)."""
    import numpy as np
    kernel = cuda.jit(_far_write)
    a = cuda.device_array(32, dtype=np.float32)
    kernel[1, 32](a)
    cuda.synchronize()


def _far_write(a):
    a[cuda.threadIdx.x + (1 << 30)] = 1.0


def run_cell(name: str, cell: dict, index: int, fault: str | None = None) -> dict:
    """Run in a worker: ``experiments.<name>.measure(cell)``. Returns the rows, what else
    measure returned, this process's device and GPU, the worker's address and the seconds;
    or, where measure raised, the error (a poisoned CUDA context ends the process instead)."""
    from .experiment import load_experiment
    t0 = time.perf_counter()
    try:
        from distributed import get_worker
        worker = get_worker().address
    except Exception:                        # noqa: BLE001 - not in a Dask worker
        worker = None
    out = dict(index=index, worker=worker, pid=os.getpid())
    try:
        module = load_experiment(name)
        inject_fault(fault, index)
        res = dict(module.measure(cell))
    except Exception as exc:                 # noqa: BLE001 - every failure becomes a record
        if poisoned(exc) or not context_usable():
            print(f"cell {index}: {type(exc).__name__}: {exc}; ending this worker (its CUDA "
                  "context is unusable)", file=sys.stderr, flush=True)
            os._exit(70)
        out.update(error=f"{type(exc).__name__}: {exc}", seconds=time.perf_counter() - t0)
        _where(out)
        return out
    out["rows"] = res.pop("rows")
    res.pop("config", None)
    out.update(extra=res, seconds=time.perf_counter() - t0)
    _where(out)
    return out


def _where(out: dict) -> None:
    try:
        out.update(device=device_info(), gpu=gpu_identity())
    except Exception as exc:                 # noqa: BLE001 - a broken context: say so
        out.update(device={"error": f"{type(exc).__name__}: {exc}"}, gpu=None)


def local_client(gpu: bool | None = None, n_workers: int | None = None):
    """A ``distributed.Client`` of a cluster on this host started with :data:`DASK_CONFIG`:
    ``LocalCUDACluster`` (one single-threaded worker per visible GPU) where ``gpu`` (default:
    a CUDA GPU is present), else a ``LocalCluster`` of ``n_workers`` single-threaded worker
    processes (default: the cores, at most 4)."""
    try:
        import dask
        from distributed import Client, LocalCluster
    except ImportError as exc:
        raise OptionError(problem("--cluster", "dask and distributed installed",
                                  f"{type(exc).__name__}: {exc}",
                                  'pip install -e ".[cluster]"')) from None
    from .experiment import gpu_available
    gpu = gpu_available() if gpu is None else gpu
    # for good, not for a block: a nanny reads the config again when it restarts a worker
    dask.config.set(DASK_CONFIG)
    if gpu:
        try:
            from dask_cuda import LocalCUDACluster
        except ImportError as exc:
            raise OptionError(problem("--cluster local on a GPU host", "dask-cuda installed",
                                      f"{type(exc).__name__}: {exc}",
                                      'pip install -e ".[cluster]"')) from None
        cluster = LocalCUDACluster(threads_per_worker=1, **(
            {"n_workers": n_workers} if n_workers else {}))
    else:
        cluster = LocalCluster(n_workers=n_workers or min(4, os.cpu_count() or 1),
                               threads_per_worker=1, processes=True)
    return Client(cluster)


def remote_client(address: str):
    """A ``distributed.Client`` of the running scheduler at ``address``."""
    try:
        from distributed import Client
    except ImportError as exc:
        raise OptionError(problem("--scheduler", "dask and distributed installed",
                                  f"{type(exc).__name__}: {exc}",
                                  'pip install -e ".[cluster]"')) from None
    return Client(address)


def _done_before(name: str, cfg: dict, quick: bool, out: str | None, n: int) -> tuple[dict, float]:
    """Cells (index -> their results) that a stopped sweep of the same settings finished,
    from the partial results files of every device (or ``out``), and the seconds it had
    run (its parts' wall times add up)."""
    paths = [out] if out else [R.results_path(name, d, quick) for d in R.result_devices(name, quick)]
    done, before = {}, 0.0
    for path in paths:
        if not path or not os.path.isfile(path):
            continue
        try:
            saved = R.load_results(path)
        except Exception:                    # noqa: BLE001 - unreadable: start afresh
            continue
        info = saved.get("cluster") or {}
        if not saved.get("partial") or saved.get("config") != cfg or info.get("cells_total") != n:
            continue
        before = max(before, float(info.get("wall_s") or 0.0))
        by_cell = {}
        for row in saved["rows"]:
            by_cell.setdefault(row.get("cell_index"), []).append(row)
        meta = saved.get("meta") or {}
        for c in saved.get("cells") or []:
            i = c["index"]
            if c.get("error") is None:
                done[i] = dict(c, device=meta.get("device"), run=c.get("run") or _run(meta),
                               rows=[{k: v for k, v in r.items() if k not in ("cell_index", "gpu", "worker")}
                                     for r in by_cell.get(i, [])])
    return done, before


def _other_commits(done: dict, meta: dict) -> str:
    """The commits of resumed cells measured at another commit than this run's (" (at ...)"),
    so that mixing them is seen before the sweep goes on; empty when all are this commit's."""
    here = meta.get("git_hash")
    other = sorted({str(c["run"].get("git_hash"))[:7] for c in done.values()
                    if c["run"].get("git_hash") != here})
    if not other:
        return ""
    return (f" (at {', '.join(other)}, not this commit {str(here)[:7]}: remove the results "
            "file to measure them again)")


def _run(meta: dict) -> dict:
    """The commit and date of the run that measured a cell (a resumed sweep's file holds
    cells of several runs)."""
    return {k: meta.get(k) for k in ("git_hash", "git_dirty", "date_utc")}


def sweep(module, cfg: dict, client, *, quick: bool = False, out: str | None = None,
          fault: str | None = None, log=None) -> list[str]:
    """Run ``cfg``'s cells as tasks on ``client``'s workers and save the results (see the
    module docstring); returns the paths written, one per kind of GPU. ``fault``: default
    ``SPMVLAB_CLUSTER_FAULT``."""
    from distributed import as_completed
    log = log or (lambda text: print(f"{module.NAME}: {text}", file=sys.stderr, flush=True))
    fault = os.environ.get(FAULT_ENV) if fault is None else fault
    _faults(fault)                           # refuse a malformed spec before starting
    from .experiment import results_name
    meta = run_metadata()
    name = results_name(module, cfg)
    todo = cells(module, cfg)
    labels = [cell_label(module, c) for c in todo]
    n = len(todo)
    done, before = _done_before(name, cfg, quick, out, n)
    if done:
        log(f"resuming: {len(done)} of {n} cells finished before{_other_commits(done, meta)}, "
            f"{n - len(done)} to run")
    t0 = time.perf_counter()
    workers = client.scheduler_info().get("workers", {})
    stamp = f"{os.getpid()}-{int(time.time() * 1000)}"
    waiting = [i for i in submission_order(module, todo) if i not in done]
    deaths = {i: 0 for i in waiting}
    futures = {}

    def slots() -> int:
        """Threads of the workers alive now: no more cells are in flight, so none waits on a
        worker behind another (a worker's death fails every cell it holds)."""
        live = client.scheduler_info().get("workers", {})
        return max(1, sum(int(w.get("nthreads", 1)) for w in live.values()))

    def submit():
        i = waiting.pop(0)
        f = client.submit(run_cell, module.NAME, todo[i], i, fault, pure=False,
                          key=f"{module.NAME}-cell{i}-try{deaths[i]}-{stamp}")
        futures[f] = i
        return f
    record = dict(scheduler=getattr(client, "scheduler", None) and client.scheduler.address,
                  workers=len(workers), cells_total=n, resumed=len(done))
    results = dict(done)
    written: list[str] = []

    def save(partial: bool) -> list[str]:
        return _save(module, cfg, name, quick, out, meta, labels, results,
                     dict(record, wall_s=round(before + time.perf_counter() - t0, 1)), partial)

    running = as_completed([submit() for _ in range(min(slots(), len(waiting)))])
    for fut in running:
        i = futures.pop(fut)
        try:
            got = fut.result()
        except Exception as exc:             # noqa: BLE001 - its worker died (KilledWorker), ...
            deaths[i] += 1
            if deaths[i] <= RETRIES:         # once more, on a fresh worker
                log(f"cell {i + 1}/{n} {labels[i]}: its worker died ({type(exc).__name__}); "
                    "running it again")
                waiting.insert(0, i)
                got = None
            else:
                got = dict(index=i, error=f"{type(exc).__name__}: {exc}", worker=None)
        while waiting and len(futures) < slots():
            running.add(submit())
        if got is None:
            continue
        got["restarts"] = deaths.get(i, 0)
        got["run"] = _run(meta)
        results[i] = got
        state = "error: " + got["error"] if got.get("error") else f"{len(got['rows'])} rows"
        gpu = (got.get("gpu") or {}).get("index")
        died = f"; its worker died {got['restarts']}x" if got["restarts"] else ""
        log(f"cell {i + 1}/{n} {labels[i]} on {got.get('worker') or '?'}"
            f"{'' if gpu is None else f' (GPU {gpu})'} in {got.get('seconds', 0):.1f} s: "
            f"{state}{died}")
        written = save(partial=len(results) < n)
    if not written:
        written = save(partial=False)
    return written


def _save(module, cfg, name, quick, out, meta, labels, results, record, partial) -> list[str]:
    """Write the rows gathered so far: one results file per kind of GPU among the cells
    (errors with the most common one)."""
    groups: dict = {}
    slug_of = {}
    for i, got in results.items():
        if got.get("device") and not got.get("error"):
            slug_of[i] = device_slug(got["device"])
    slugs = sorted(set(slug_of.values()), key=lambda s: -list(slug_of.values()).count(s))
    home = slugs[0] if slugs else R.results_device(meta, module.NEEDS_GPU)
    if out and len(slugs) > 1:
        raise OptionError(problem("--out", "rows of one kind of GPU", ", ".join(slugs),
                                  "leave --out out: each device's rows go to its results folder"))
    for i in sorted(results):
        got = results[i]
        slug = slug_of.get(i, home)
        g = groups.setdefault(slug, dict(rows=[], cells=[], device=None))
        if got.get("error"):
            g["rows"].append(dict(method="error", error=got["error"], cell=labels[i],
                                  cell_index=i, worker=got.get("worker")))
        else:
            g["device"] = g["device"] or got.get("device")
            for row in got["rows"]:
                g["rows"].append(dict(row, gpu=got.get("gpu"), worker=got.get("worker"),
                                      cell_index=i))
        g["cells"].append(dict(index=i, cell=labels[i], worker=got.get("worker"),
                               gpu=got.get("gpu"), seconds=round(float(got.get("seconds", 0)), 2),
                               restarts=got.get("restarts", 0), error=got.get("error"),
                               run=got.get("run"), extra=got.get("extra") or None))
    paths = []
    for slug, g in groups.items():
        m = dict(meta, device=g["device"] or meta.get("device"))
        errors = sum(1 for c in g["cells"] if c["error"])
        extra = _merged_extras([c["extra"] for c in g["cells"] if c["extra"]])
        runs = [dict(t) for t in dict.fromkeys(tuple(sorted((c["run"] or {}).items()))
                                               for c in g["cells"])]
        extra.update(cluster=dict(record, cells=len(g["cells"]), errors=errors, runs=runs),
                     cells=g["cells"])
        if partial:
            extra["partial"] = True
        path = out or R.results_path(name, slug, quick)
        paths.append(R.save_results(path, g["rows"], cfg, extra=extra, meta=m))
    return paths


def _spread(one: dict, many: dict) -> dict:
    """How the per-row medians of the sweep on several workers compare with the one-worker
    sweep's (rows matched by what they measured): quantiles of many / one, and the median
    of the one-worker rows' own p90 / p10 (its run-to-run noise)."""
    import numpy as np

    from .experiment import _row_key
    a = {_row_key(r): r for r in one["rows"] if r.get("median_us")}
    ratios = [float(r["median_us"]) / float(a[_row_key(r)]["median_us"])
              for r in many["rows"] if r.get("median_us") and _row_key(r) in a]
    noise = [float(r["p90_us"]) / float(r["p10_us"]) for r in one["rows"]
             if r.get("p10_us") and r.get("p90_us")]
    if not ratios:
        return dict(rows=0)
    q = np.quantile(ratios, [0.1, 0.5, 0.9])
    return dict(rows=len(ratios), ratio_p10=round(float(q[0]), 4), ratio_median=round(float(q[1]), 4),
                ratio_p90=round(float(q[2]), 4),
                one_worker_p90_over_p10=round(float(np.median(noise)), 4) if noise else None)


def scaling(module, cfg: dict, workers: int, *, gpu: bool | None = None, quick: bool = False,
            out: str | None = None, log=None) -> dict:
    """The sweep of ``cfg`` on one worker (one GPU), then on ``workers``, each on a cluster
    of its own started for it (:func:`local_client`), wall times from before the cluster
    starts to the results saved. The one-worker results go beside the others as
    ``<name>.1gpu.json`` (``.1worker.json`` without GPUs); the many-worker file, the
    experiment's usual one (or ``out``), gets ``scaling``: {gpus, wall_s_1, wall_s_n,
    speedup, spread} (:func:`_spread`: its rows' times against the one-worker rows').
    Returns that record."""
    from .experiment import gpu_available, results_name
    gpu = gpu_available() if gpu is None else gpu
    shown = visible_gpus() if gpu else workers
    if workers > shown:
        # refused before the one-GPU sweep, which may take most of an hour
        raise OptionError(problem("--scaling", f"at most {shown} (the GPUs this host shows)",
                                  workers, "ask for as many workers as GPUs, or run on a host "
                                  "with more"))
    name = results_name(module, cfg)
    walls, paths = {}, {}
    for n in (1, workers):
        t0 = time.perf_counter()
        client = local_client(gpu=gpu, n_workers=n)
        try:
            if n == 1:
                target = _single_path(out or R.results_path(name, _here(gpu, module, client),
                                                            quick), gpu)
            else:
                target = out
            got = sweep(module, cfg, client, quick=quick, out=target, log=log)
        finally:
            started = client.cluster
            client.close()
            started.close()
        walls[n] = time.perf_counter() - t0
        if len(got) != 1:
            raise OptionError(problem("scaling", "a sweep on one kind of GPU", f"{len(got)} kinds"))
        paths[n] = got[0]
    return record_scaling(paths[1], paths[workers], (walls[1], walls[workers]), gpus=workers)


def record_scaling(one_path: str, many_path: str, walls: tuple | None = None,
                   gpus: int | None = None) -> dict:
    """Write ``scaling`` into the results at ``many_path`` from those at ``one_path`` (the
    same sweep on one GPU): ``walls`` (seconds on one, on many), default the two sweeps'
    own ``cluster.wall_s`` (summed over the parts of a resumed sweep, start-up not
    included); ``gpus`` default the many-worker sweep's worker count. Returns the record.
    A one-GPU sweep longer than a machine's time limit is measured in parts (the same
    command again resumes it) and compared afterwards with ``python -m spmvlab.cluster
    scaling ONE.json MANY.json``."""
    one, many = R.load_results(one_path), R.load_results(many_path)
    for path, res in ((one_path, one), (many_path, many)):
        if res.get("partial") or not res.get("cluster"):
            raise OptionError(problem(f"scaling: {R.rel(path)}", "a finished cluster sweep",
                                      "partial" if res.get("partial") else "no cluster record",
                                      "run the same command again to finish it"))
    if one["config"] != many["config"]:
        raise OptionError(problem("scaling", "two sweeps of the same config",
                                  "different configs", "measure both with the same flags"))
    if walls is None:
        walls = (float(one["cluster"]["wall_s"]), float(many["cluster"]["wall_s"]))
    w1, wn = round(walls[0], 1), round(walls[1], 1)     # the speed-up is what they give
    rec = dict(gpus=int(gpus or many["cluster"]["workers"]), wall_s_1=w1, wall_s_n=wn,
               speedup=round(w1 / wn, 3),
               one_worker_results=R.rel(one_path), spread=_spread(one, many))
    extra = {k: v for k, v in many.items() if k not in ("meta", "config", "rows")}
    extra["scaling"] = rec
    R.save_results(many_path, many["rows"], many["config"], extra=extra, meta=many["meta"])
    return rec


def main(argv=None) -> int:
    """``python -m spmvlab.cluster scaling ONE.json MANY.json``: :func:`record_scaling`."""
    import argparse
    p = argparse.ArgumentParser(prog="python -m spmvlab.cluster",
                                description="the speed-up of a sweep on several GPUs over one")
    sub = p.add_subparsers(dest="cmd", required=True)
    sc = sub.add_parser("scaling", help="write 'scaling' into MANY from the one-GPU sweep ONE")
    sc.add_argument("one")
    sc.add_argument("many")
    a = p.parse_args(argv)
    rec = record_scaling(a.one, a.many)
    print(f"1 GPU {rec['wall_s_1']} s, {rec['gpus']} GPUs {rec['wall_s_n']} s: {rec['speedup']}x; "
          f"per-row times {rec['gpus']} / 1: {rec['spread']}")
    return 0



def _single_path(path: str, gpu: bool) -> str:
    root, ext = os.path.splitext(path)
    return f"{root}.{'1gpu' if gpu else '1worker'}{ext}"


def _here(gpu: bool, module, client) -> str:
    """The results folder of the workers' device (asked of one of them)."""
    info = client.submit(device_info, pure=False).result()
    return device_slug(info) if gpu else R.results_device(run_metadata(), module.NEEDS_GPU)


def _merged_extras(extras: list) -> dict:
    """What the cells' ``measure`` returned besides rows, as one run's would be: lists
    joined and dicts united in cell order, anything else the first cell's."""
    out: dict = {}
    for ex in extras:
        for k, v in ex.items():
            if k in ("rows", "config", "meta", "cluster", "cells", "partial", "measure_s"):
                continue
            if k not in out:
                out[k] = list(v) if isinstance(v, list) else dict(v) if isinstance(v, dict) else v
            elif isinstance(v, list) and isinstance(out[k], list):
                out[k] += v
            elif isinstance(v, dict) and isinstance(out[k], dict):
                out[k].update(v)
    return out


def main_flags(parser) -> None:
    """``--cluster local`` and ``--scheduler ADDRESS`` on an experiment's command line."""
    g = parser.add_mutually_exclusive_group()
    g.add_argument("--cluster", choices=["local"], default=None,
                   help="measure the cells as Dask tasks on every GPU of this host "
                        "(LocalCUDACluster; needs the cluster extra)")
    g.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="measure the cells as Dask tasks on a running cluster "
                        "(docs/experiments.md)")
    parser.add_argument("--scaling", type=int, default=None, metavar="N",
                        help="with --cluster local: measure on one GPU, then on N, and record "
                             "the speed-up in the N-GPU results ('scaling')")


if __name__ == "__main__":
    sys.exit(main())
