"""Scaffolding shared by every ``experiments/<name>.py``.

An experiment is a module with

    NAME                              its name: results and figure files are named after it
    NEEDS_GPU                         False when ``measure`` runs on the CPU (sizes, encodings)
    config(quick=False, **overrides)  every setting of a run (seeds included) as a dict
    measure(cfg) -> dict              ``{"rows": [...], **extra}``; it may return ``config``
                                      when the run settles a setting (e.g. the data it found)
    plot(results, fig_path) -> list   the figure files written; never measures
    report(results)                   optional: prints a short table
    cli(parser)                       optional: adds flags; a flag given on the command line
                                      becomes ``config(**{dest: value})``
    results_name(cfg)                 optional: the results name when it depends on ``cfg``
                                      (default ``NAME``)
    RUNS                              optional: the overrides of each run ``python -m
                                      spmvlab.figures`` makes (default ``[{}]``)

Results and figure files, one per (experiment, device), are :mod:`spmvlab.results`'s; the
process pool that builds problems ahead of their timing is :mod:`spmvlab.workers`'s.

:func:`main` is the command line of every experiment. It measures only when asked, or where
measuring is the point of running it here:

    python experiments/<name>.py              plot the saved results of every device; with no
                                              saved results for this machine, measure (a CPU
                                              experiment) or say how to (a GPU one). On a
                                              machine with a CUDA GPU a GPU experiment measures
    python experiments/<name>.py --measure    measure on this machine, save, plot, report
    python experiments/<name>.py --plot-only  plot the saved results, never measure
    python experiments/<name>.py --quick      a small measured run, saved as <name>.quick.json
    --device D                                plot only results/D/
    --out PATH / --fig PATH                   other results / figure paths
    --cluster local / --scheduler ADDRESS     the sweep's cells as Dask tasks on every GPU of
                                              this host or of a cluster (spmvlab.cluster)

A measurement that replaces a saved results file says so first (the file, and the commit and
date it was measured at). Results record how long the measurement took (``measure_s``); the
line that plots saved results repeats it, with the command that measures again.
"""
from __future__ import annotations

import argparse
import copy
import glob
import importlib
import os
import sys
import time

from reference._common import OptionError, SpmvlabError, problem

from . import results as R
from .results import (  # noqa: F401  (the experiments' one namespace: X.results_path, ...)
    EXPERIMENTS, FIGURES, RESULTS, ROOT, figure_path, load_results, result_devices,
    results_device, results_path, save_results, to_json,
)
from .workers import encodings_of, problems, progress  # noqa: F401  (X.problems, ...)

__all__ = ["ROOT", "results_path", "figure_path", "result_devices", "results_device",
           "make_config", "floats", "ints", "shapes", "words", "to_json", "save_results", "load_results",
           "progress", "problems", "encodings_of", "gpu_available", "load_experiment", "experiments", "results_name",
           "build_parser", "checkpoint", "Stopped", "run", "derive_run", "replot", "main"]


# ---------------------------------------------------------------------------------------------
# configurations and flags
# ---------------------------------------------------------------------------------------------

def make_config(name: str, full: dict, quick_changes: dict, quick: bool, overrides: dict) -> dict:
    """A fresh copy of ``full``, updated by ``quick_changes`` when ``quick`` and then by the
    ``overrides`` that are not None; an override that is not a key of ``full`` is refused."""
    cfg = copy.deepcopy(full)
    if quick:
        cfg.update(copy.deepcopy(quick_changes))
    for key, value in overrides.items():
        if key not in cfg:
            raise OptionError(problem(f"{name} config[{key!r}]", f"one of {sorted(cfg)}", repr(key),
                                      f"see `python experiments/{name}.py --help`"))
        if value is not None:
            cfg[key] = copy.deepcopy(value)
    return cfg


def floats(text: str) -> list[float]:
    """argparse type: ``"0,0.5,0.9"`` -> ``[0.0, 0.5, 0.9]``."""
    return [float(v) for v in text.split(",") if v.strip()]


def ints(text: str) -> list[int]:
    """argparse type: ``"8,32,64"`` -> ``[8, 32, 64]`` (counts stay integers, as config() has them,
    so that a part measured with them merges with the saved runs)."""
    return [int(v) for v in text.split(",") if v.strip()]


def shapes(text: str) -> list[list[int]]:
    """argparse type: ``"4096x11008,12288x12288"`` -> ``[[4096, 11008], [12288, 12288]]``."""
    return [[int(v) for v in s.lower().split("x")] for s in text.split(",") if s.strip()]


def words(text: str) -> list[str]:
    """argparse type: ``"float16,float32"`` -> ``["float16", "float32"]``."""
    return [v.strip() for v in text.split(",") if v.strip()]


def gpu_available() -> bool:
    """True when numba sees a real CUDA GPU (False in the simulator)."""
    from ._cuda import SIMULATOR, cuda
    if SIMULATOR:
        return False
    try:
        return bool(cuda.is_available())
    except Exception:
        return False


# ---------------------------------------------------------------------------------------------
# experiment modules
# ---------------------------------------------------------------------------------------------

def load_experiment(name: str):
    """The module ``experiments.<name>`` (the experiments package is installed with the
    project)."""
    if name.startswith("__") or not os.path.isfile(os.path.join(EXPERIMENTS, f"{name}.py")):
        raise OptionError(problem("experiment", f"one of {sorted(experiments())}", repr(name),
                                  "see `python -m spmvlab.figures --list`"))
    return importlib.import_module(f"experiments.{name}")


def experiments() -> dict:
    """Every experiments/*.py that exposes ``NAME``, by name (sorted)."""
    out = {}
    for path in sorted(glob.glob(os.path.join(EXPERIMENTS, "[!_]*.py"))):
        mod = load_experiment(os.path.splitext(os.path.basename(path))[0])
        if getattr(mod, "NAME", None):
            out[mod.NAME] = mod
    return out


def results_name(module, cfg: dict) -> str:
    """The name of the results/figure files of ``module`` run with ``cfg``."""
    f = getattr(module, "results_name", None)
    return f(cfg) if f is not None else module.NAME


def _show(value, sep: str = ",") -> str:
    """A config value as it would be typed as a flag: ``4096x11008,12288x12288``, ``0.5,0.9``."""
    if isinstance(value, (list, tuple)):
        return sep.join("x".join(map(str, v)) if isinstance(v, (list, tuple)) else str(v)
                        for v in value)
    return "none" if value is None else str(value)


def build_parser(module) -> tuple[argparse.ArgumentParser, list[str]]:
    """The experiment's parser and the ``dest`` of every flag its ``cli`` added (each such
    flag defaults to None, meaning "as config() says"; its help gets config()'s defaults)."""
    p = argparse.ArgumentParser(prog=f"experiments/{module.NAME}.py", description=module.__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true",
                   help="a small, fast run, saved as <name>.quick.json/.png")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--measure", action="store_true",
                      help="measure on this machine (a GPU experiment needs a CUDA GPU), save "
                           "and plot; without it a CPU experiment re-plots its saved results")
    mode.add_argument("--plot-only", action="store_true",
                      help="plot the saved results, never measure (also on a GPU)")
    p.add_argument("--device", default=None,
                   help="plot only results/DEVICE/ (h100, h200, cpu, ...), not every device "
                        "with results")
    p.add_argument("--out", default=None,
                   help=f"results JSON (default results/<device>/{module.NAME}.json)")
    p.add_argument("--merge", action="store_true",
                   help="add this run's rows to the saved results (same settings apart from "
                        "the experiment's SPLIT_KEYS, e.g. other shapes or sparsities) instead "
                        "of replacing them")
    mode.add_argument("--merge-parts", dest="merge_parts", nargs="+", metavar="PART",
                      help="join results files measured apart (e.g. one sparsity per GPU, each "
                           "with its own --out; settings equal apart from SPLIT_KEYS) into "
                           "--out (default the saved results), measuring nothing")
    p.add_argument("--fig", default=None,
                   help=f"figure path, .png, with a .pdf beside it "
                        f"(default figures/<device>/{module.NAME}.png)")
    from .cluster import main_flags
    main_flags(p)
    before = {a.dest for a in p._actions}
    if hasattr(module, "cli"):
        module.cli(p)
    own = [a for a in p._actions if a.dest not in before]
    p.set_defaults(**{a.dest: None for a in own})
    full, quick = module.config(False), module.config(True)
    for a in own:
        if a.dest in full and a.help != argparse.SUPPRESS:
            sep = " " if isinstance(a.nargs, int) else ","
            d, q = _show(full[a.dest], sep), _show(quick[a.dest], sep)
            a.help = f"{a.help or ''} (default {d}{f'; with --quick {q}' if q != d else ''})".strip()
    return p, [a.dest for a in own]


#: the keys of a row that say what was measured (a re-measured row replaces the saved one)
ROW_IDENTITY = ("method", "kind", "k", "dtype", "shape", "sparsity", "matrix", "n",
                "model", "batch", "new_tokens", "graph")


def _row_key(row: dict) -> str:
    """The row's :data:`ROW_IDENTITY` values; ``batch`` only as a batch size (e2e_decode's, an
    integer): a boolean one is the code option a GeneralSparse method picked (a result of the
    run, which a re-measurement may pick differently, and which older runs did not record)."""
    b = row.get("batch")
    size = isinstance(b, int) and not isinstance(b, bool)
    return to_json({k: row.get(k) for k in ROW_IDENTITY if k != "batch" or size})


def _part(meta: dict, config: dict) -> dict:
    """What one run of a merged results file was: its code, machine, date and config."""
    return dict(git_hash=meta.get("git_hash"), git_dirty=meta.get("git_dirty"),
                date_utc=meta.get("date_utc"), device=(meta.get("device") or {}).get("name"),
                config=config)


def _extras(results: dict) -> dict:
    """What a results file holds besides its rows, config, metadata, parts and duration."""
    return {k: v for k, v in results.items()
            if k not in ("rows", "config", "meta", "parts", "partial", "measure_s")}


def _measured_at(path: str) -> str:
    """'commit abc1234, 2026-11-23' of a saved results file (what a new run replaces)."""
    try:
        meta = load_results(path).get("meta") or {}
    except (OSError, ValueError, SpmvlabError):
        return "unreadable"
    dirty = " with uncommitted changes" if meta.get("git_dirty") else ""
    return f"commit {meta.get('git_hash') or '?'}{dirty}, {(meta.get('date_utc') or '?')[:10]}"


def merge_results(module, old: dict, rows: list, config: dict, meta: dict,
                  extra: dict | None = None) -> tuple[list, dict, list]:
    """``old`` (a saved results file) plus a new run (``rows``, ``config``, ``meta``): the two
    configs must agree except in the module's ``SPLIT_KEYS`` (lists, united in the order of
    ``module.config()``) and its ``UNCOMPARED_KEYS`` (settings that do not change what a row
    measures, such as a time budget; the new run's value is kept); a new row replaces the saved row it re-measures (same
    :data:`ROW_IDENTITY`). Every row gets ``part``, the index of its run in the returned
    ``parts`` (each run's git hash, device, date and config, and ``extra``: what ``measure``
    returned besides its rows, e.g. a compile count, where there was any; the file's top
    level keeps the latest run's)."""
    split = tuple(getattr(module, "SPLIT_KEYS", ()))
    if not split:
        raise OptionError(problem("--merge", f"an experiment with SPLIT_KEYS ({module.NAME} has none)",
                                  module.NAME, "re-run the whole configuration instead"))
    a, b = old["config"], config
    free = split + tuple(getattr(module, "UNCOMPARED_KEYS", ()))
    differ = sorted(k for k in set(a) | set(b) if k not in free and a.get(k) != b.get(k))
    if differ:
        raise OptionError(problem("--merge", f"the saved run's config apart from {', '.join(split)}",
                                  f"different {', '.join(differ)}",
                                  "measure with the saved settings, or without --merge"))
    full = module.config()
    merged = dict(b)
    for k in split:
        have = [v for v in a.get(k, []) + b.get(k, [])]
        order = {to_json(v): i for i, v in enumerate(full.get(k, []))}
        seen = {}
        for v in have:
            seen.setdefault(to_json(v), v)
        merged[k] = sorted(seen.values(), key=lambda v: (order.get(to_json(v), len(order)), to_json(v)))
    first = _part(old.get("meta") or {}, a)
    if _extras(old):
        first["extra"] = _extras(old)
    parts = list(old.get("parts") or [first])
    old_rows = [dict(r, part=r.get("part", 0)) for r in old["rows"]]
    new_keys = {_row_key(r) for r in rows}
    kept = [r for r in old_rows if _row_key(r) not in new_keys]
    parts.append(dict(_part(meta, b), **({"extra": dict(extra)} if extra else {})))
    return kept + [dict(r, part=len(parts) - 1) for r in rows], merged, parts


def merge_parts(module, paths: list, out: str) -> str:
    """Join the results files ``paths`` (runs of ``module`` measured apart, e.g. in parallel
    on several GPUs) into ``out`` with :func:`merge_results`, in the order given (a later
    file's row replaces an earlier one it re-measures); the top level keeps the last file's
    metadata and extras but ``measure_s``, the parts' measuring times summed (absent when a
    part has none); it is marked ``"partial": true`` when any part was (a run stopped
    before the end of its configuration). Returns the path written."""
    if not paths:
        raise OptionError(problem("--merge-parts", "at least one results file", "none"))
    base = load_results(paths[0])
    partial = bool(base.get("partial"))
    took = [base.get("measure_s")]
    for path in paths[1:]:
        part = load_results(path)
        partial = partial or bool(part.get("partial"))
        took.append(part.get("measure_s"))
        rows, config, parts = merge_results(module, base, part["rows"], part["config"],
                                            part.get("meta") or {}, extra=_extras(part))
        base = dict(part, rows=rows, config=config, parts=parts)
        base.pop("partial", None)
    extra = {k: v for k, v in base.items() if k not in ("meta", "config", "rows", "partial")}
    if partial:
        extra["partial"] = True
    # the parts' measuring times add up (run apart, even at once on several GPUs); unknown
    # when a part did not record its own
    extra.pop("measure_s", None)
    if all(t is not None for t in took):
        extra["measure_s"] = round(sum(float(t) for t in took), 1)
    return save_results(out, base["rows"], base["config"], extra=extra, meta=base.get("meta"))


_CHECKPOINT = None


class Stopped(KeyboardInterrupt):
    """A measurement stopped by SIGTERM (what ``timeout`` sends) while :func:`run` measures:
    raised in the main thread so a ``measure`` can save what it has (:func:`checkpoint`)
    on the way out; :func:`main` then returns 128 + the signal number."""

    def __init__(self, signum: int):
        super().__init__(f"signal {signum}")
        self.signum = int(signum)


def _raise_stopped(signum, frame):
    raise Stopped(signum)


def checkpoint(results: dict) -> str | None:
    """Save ``results`` (what ``measure`` has so far: ``rows`` plus its extras) as the run's
    results file, marked ``"partial": true``, when called from a ``measure`` that :func:`run`
    started (else nothing; returns the path or None). Long measurements call it after each
    unit of work, so a run stopped by a time limit keeps what it measured; the complete
    results replace the file at the end. With ``--merge`` the partial rows are merged with
    the file as it was when the run began."""
    return _CHECKPOINT(results) if _CHECKPOINT is not None else None


def run(module, cfg: dict, *, quick: bool = False, out: str | None = None,
        fig: str | None = None, report: bool = True, merge: bool = False) -> dict:
    """Measure ``cfg``, save the results (with :func:`runinfo.run_metadata`), plot them from
    the saved file and print the report; returns the saved results. ``measure`` may save
    partial results on the way (:func:`checkpoint`); SIGTERM while it measures raises
    :class:`Stopped` in it (so it can save what it has), which propagates. With ``merge`` the rows
    join the saved results of the same name (:func:`merge_results`) instead of replacing
    them: long sweeps are measured in parts (e.g. fig4's shapes and sparsities)."""
    from .runinfo import run_metadata
    meta = run_metadata()
    device = results_device(meta, module.NEEDS_GPU)
    name = results_name(module, cfg)
    path = out or results_path(name, device, quick)
    base = load_results(path) if merge and os.path.isfile(path) else None
    if os.path.isfile(path) and not merge:
        print(f"{module.NAME}: measuring; this replaces {R.rel(path)} ({_measured_at(path)})",
              file=sys.stderr, flush=True)
    started = time.perf_counter()

    def _save(results: dict, partial: bool) -> str:
        results = dict(results)
        rows = results.pop("rows")
        config = results.pop("config", cfg)
        results.pop("meta", None)
        results.pop("partial", None)
        if base is not None:
            rows, config, results["parts"] = merge_results(module, base, rows, config, meta,
                                                           extra=_extras(results))
        if partial:
            results["partial"] = True
        results["measure_s"] = round(time.perf_counter() - started, 1)
        return save_results(path, rows, config, extra=results, meta=meta)

    global _CHECKPOINT
    import signal
    import threading
    saves = []

    def _partial(results: dict) -> str:
        saves.append(_save(results, True))
        return saves[-1]

    saved_cp, _CHECKPOINT = _CHECKPOINT, _partial
    main_thread = threading.current_thread() is threading.main_thread()
    old_term = signal.signal(signal.SIGTERM, _raise_stopped) if main_thread else None
    try:
        results = dict(module.measure(cfg))
    except Stopped:
        print(f"{module.NAME}: stopped by a signal; "
              + (f"partial results kept in {R.rel(path)} (plot them with --plot-only)" if saves
                 else "nothing was saved"), file=sys.stderr, flush=True)
        raise
    finally:
        _CHECKPOINT = saved_cp
        if main_thread and old_term is not None:
            signal.signal(signal.SIGTERM, old_term)
    return _publish(module, _save(results, False), fig or figure_path(name, device, quick), report)


def _publish(module, path: str, fig: str, report: bool, whence: str = "") -> dict:
    """Load the results just saved at ``path``, plot them to ``fig``, say which files were
    written (``whence`` after the results' name) and print the module's report; returns them."""
    saved = load_results(path)
    figs = module.plot(saved, fig)
    print(f"wrote {R.rel(path)}{whence}" + "".join(f", {R.rel(f)}" for f in figs or []))
    if report and hasattr(module, "report"):
        module.report(saved)
    return saved


def derive_run(module, cfg: dict, device: str, *, quick: bool = False, out: str | None = None,
               fig: str | None = None, report: bool = True) -> dict | None:
    """The results of an experiment whose rows are another experiment's saved rows
    (``module.DERIVED_FROM``; ``module.derive(cfg, device)`` returns ``{"rows", "source":
    {"experiment", "meta"}}``, or None when ``device``'s saved results do not cover ``cfg``),
    made on any machine: saved as ``device``'s results with the source's meta (the GPU,
    commit and date that measured the rows) and this run's own under ``derived``; plotted
    and reported as :func:`run` does. None when not covered (nothing written)."""
    from .runinfo import run_metadata
    got = module.derive(cfg, device)
    if got is None:
        return None
    got = dict(got)
    rows, source = got.pop("rows"), got["source"]
    name = results_name(module, cfg)
    path = save_results(out or results_path(name, device, quick), rows, cfg,
                        extra=dict(got, derived=run_metadata()), meta=source["meta"])
    return _publish(module, path, fig or figure_path(name, device, quick), report,
                    f" from {source['experiment']}'s {device} results")


def replot(module, cfg: dict, *, quick: bool = False, device: str | None = None,
           out: str | None = None, fig: str | None = None, prefix: str = "",
           hint: bool = False) -> int:
    """Plot saved results of ``cfg``'s run: the file ``out``, or results/<device>/ of
    ``device`` or of every device that has them; one line per file says which results
    (device, date) went to which figure, and with ``hint`` a last line the command that
    measures again (and how long the saved run took). Returns 0, or 1 (with a line on
    stderr) when there are no saved results."""
    name = results_name(module, cfg)
    if out:
        paths = [os.path.abspath(out)]
    else:
        paths = [results_path(name, d, quick) for d in ([device] if device else
                                                         result_devices(name, quick))]
    paths = [p for p in paths if os.path.isfile(p)]
    if not paths:
        where = R.rel(out) if out else f"results/{device or '<device>'}/{R.file_name(name, quick, '.json')}"
        how = "" if not module.NEEDS_GPU else " on a machine with a CUDA GPU"
        print(f"{prefix}there are no saved results at {where} to plot: run "
              f"`python experiments/{module.NAME}.py --measure` with the same flags{how} first.",
              file=sys.stderr)
        return 1
    if fig and len(paths) > 1:
        raise OptionError(problem("--fig", "one results file to plot", f"{len(paths)} devices",
                                  "pick one with --device"))
    from .plotting import device_name
    for path in paths:
        results = load_results(path)
        folder = os.path.dirname(path)
        dev = (os.path.basename(folder) if os.path.dirname(folder) == R.RESULTS
               else results_device(results.get("meta"), module.NEEDS_GPU))
        figs = module.plot(results, fig or figure_path(name, dev, quick))
        date = (results.get("meta") or {}).get("date_utc", "an unknown date")[:10]
        print(f"{prefix}plotted {R.rel(path)} ({device_name(results)}, {date}) -> "
              + ", ".join(R.rel(f) for f in figs or []))
    if hint:
        took = results.get("measure_s")
        where = ("" if not module.NEEDS_GPU else
                 f" (re-derives the rows from {module.DERIVED_FROM}'s saved results)"
                 if hasattr(module, "derive") else " (on a machine with a CUDA GPU)")
        print(f"to measure again: python experiments/{module.NAME}.py --measure{where}"
              + (f"; the saved run took {_duration(took)}" if took else ""))
    return 0


def _duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min"


def main(module, argv=None) -> int:
    """The command line of an experiment module (see the module docstring); returns the exit
    code."""
    parser, dests = build_parser(module)
    args = parser.parse_args(argv)
    overrides = {d: getattr(args, d) for d in dests if getattr(args, d) is not None}
    try:
        cfg = module.config(args.quick, **overrides)
    except OptionError as exc:
        parser.error(str(exc))
    gpu = module.NEEDS_GPU and gpu_available()
    if args.cluster or args.scheduler or args.scaling:
        return _cluster_main(module, cfg, args)
    if args.merge_parts:
        meta = load_results(args.merge_parts[-1]).get("meta") or {}
        path = merge_parts(module, args.merge_parts, args.out or results_path(
            results_name(module, cfg), results_device(meta, module.NEEDS_GPU), args.quick))
        print(f"{module.NAME}: {len(args.merge_parts)} parts joined in {R.rel(path)} (plot it "
              f"with --plot-only --out {R.rel(path)})")
        return 0
    asked = args.measure or args.quick or args.merge
    saved = bool(args.out and os.path.isfile(args.out)) or bool(
        result_devices(results_name(module, cfg), args.quick))
    if args.plot_only or not (asked or gpu or not _saved_here(module, cfg, args, gpu)):
        return replot(module, cfg, quick=args.quick, device=args.device, out=args.out,
                      fig=args.fig, hint=not args.plot_only and saved)
    if module.NEEDS_GPU and not gpu:
        if hasattr(module, "derive"):        # rows of another experiment, re-derived here
            devices = [args.device] if args.device else result_devices(module.DERIVED_FROM, args.quick)
            if any([derive_run(module, cfg, d, quick=args.quick, out=args.out, fig=args.fig)
                    is not None for d in devices]):
                return 0
            print(f"{module.NAME}: no saved {module.DERIVED_FROM} results cover this "
                  f"configuration ({', '.join(devices) or 'none saved'}): measure "
                  f"{module.DERIVED_FROM} on a machine with a CUDA GPU first", file=sys.stderr)
            return 1
        print(f"{module.NAME}: measuring needs a CUDA GPU and this machine has none "
              "(the numba CUDA simulator is too slow to time); plot the saved results with "
              f"python experiments/{module.NAME}.py", file=sys.stderr)
        return 2
    try:
        run(module, cfg, quick=args.quick, out=args.out, fig=args.fig, merge=args.merge)
    except Stopped as exc:
        return 128 + exc.signum
    return 0


def _cluster_main(module, cfg: dict, args) -> int:
    """``--cluster local`` / ``--scheduler ADDRESS``: the sweep as Dask tasks
    (:mod:`spmvlab.cluster`), then each device's results plotted and reported."""
    from . import cluster
    if args.merge or args.plot_only:
        raise OptionError(problem("--cluster / --scheduler", "without --merge and --plot-only",
                                  "--merge" if args.merge else "--plot-only",
                                  "a cluster sweep writes whole results files"))
    if args.cluster and module.NEEDS_GPU and not gpu_available():
        print(f"{module.NAME}: --cluster local needs a CUDA GPU on this host for a GPU "
              "experiment (or --scheduler ADDRESS of a cluster that has them)", file=sys.stderr)
        return 2
    name = results_name(module, cfg)
    if args.scaling:
        if not args.cluster:
            raise OptionError(problem("--scaling", "with --cluster local",
                                      "--scheduler" if args.scheduler else "no --cluster",
                                      "time the scaling on one host's GPUs"))
        rec = cluster.scaling(module, cfg, args.scaling, quick=args.quick, out=args.out)
        print(f"{module.NAME}: 1 GPU {rec['wall_s_1']} s, {rec['gpus']} GPUs {rec['wall_s_n']} s: "
              f"{rec['speedup']}x; per-row times {rec['gpus']} / 1: {rec['spread']}")
        return 0
    client = cluster.local_client() if args.cluster else cluster.remote_client(args.scheduler)
    try:
        paths = cluster.sweep(module, cfg, client, quick=args.quick, out=args.out)
    finally:
        started = getattr(client, "cluster", None) if args.cluster else None
        client.close()
        if started is not None:
            started.close()
    for path in paths:
        folder = os.path.dirname(path)
        dev = os.path.basename(folder) if os.path.dirname(folder) == R.RESULTS else "cluster"
        _publish(module, path, args.fig or figure_path(name, dev, args.quick), True)
    return 0


def _saved_here(module, cfg: dict, args, gpu: bool) -> bool:
    """Whether the results a run here would make are saved already (``--out``, else
    results/cpu/ for a CPU experiment, any device's for one derived from another's rows); a
    GPU experiment on a machine without a GPU counts as saved (it never measures unasked)."""
    derived = module.NEEDS_GPU and not gpu and hasattr(module, "derive")
    if module.NEEDS_GPU and not gpu and not derived:
        return True
    if args.out:
        return os.path.isfile(args.out)
    name = results_name(module, cfg)
    if derived:
        return bool(result_devices(name, args.quick))
    return os.path.isfile(results_path(name, "cpu", args.quick)) if not module.NEEDS_GPU else False
