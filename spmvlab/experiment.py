"""Scaffolding shared by every ``experiments/<name>.py``.

An experiment is two separate functions: ``measure(args) -> results`` (needs a GPU; returns
a dict with at least ``config`` and ``rows``) and ``plot(results, fig_path)`` (never
measures). :func:`main` wires them to the command line:

    python experiments/<name>.py              measure on the GPU, save results/<name>.json,
                                              plot figures/<name>.png and .pdf
    python experiments/<name>.py --quick      a small run (saved as results/<name>.quick.json
                                              so the committed full results stay intact)
    python experiments/<name>.py --plot-only  plot from the saved results, measure nothing
    --out PATH / --fig PATH                   other results / figure paths

With no CUDA GPU a timing experiment prints one line ("no CUDA GPU: plotting the committed
results/<name>.json measured on <gpu> at <date>") and plots from the committed file; with
neither a GPU nor a results file it says so and exits with code 1.

Results files are JSON: ``{"meta": run_metadata(), "config": ..., "rows": [...], ...}``.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from typing import Callable, Iterable

import numpy as np

from reference._common import OptionError, problem

from .errors import DatasetError

__all__ = ["ROOT", "results_path", "figure_path", "parse_args", "save_results", "load_results",
           "progress", "gpu_available", "pyplot", "savefig", "format_table", "main"]

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# ---------------------------------------------------------------------------------------------
# paths and command line
# ---------------------------------------------------------------------------------------------

def results_path(name: str, quick: bool = False) -> str:
    return os.path.join(ROOT, "results", f"{name}{'.quick' if quick else ''}.json")


def figure_path(name: str, quick: bool = False) -> str:
    return os.path.join(ROOT, "figures", f"{name}{'.quick' if quick else ''}.png")


def _name_from_argv0() -> str:
    main_mod = sys.modules.get("__main__")
    f = getattr(main_mod, "__file__", None) or (sys.argv[0] if sys.argv else "experiment")
    return os.path.splitext(os.path.basename(f))[0] or "experiment"


def parse_args(description: str, extra: Callable[[argparse.ArgumentParser], None] | None = None,
               *, name: str | None = None, argv=None) -> argparse.Namespace:
    """Standard flags (``--quick``, ``--plot-only``, ``--out``, ``--fig``) plus whatever
    ``extra(parser)`` adds. ``args.name`` is the experiment's name (default: the script's
    file name); ``--out``/``--fig`` default to results/<name>[.quick].json and
    figures/<name>[.quick].png."""
    name = name or _name_from_argv0()
    p = argparse.ArgumentParser(description=description,
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--quick", action="store_true",
                   help="small, fast run (saved to results/<name>.quick.json unless --out)")
    p.add_argument("--plot-only", action="store_true",
                   help="plot from the saved results without measuring")
    p.add_argument("--out", default=None, help=f"results JSON (default results/{name}.json)")
    p.add_argument("--fig", default=None, help=f"figure path, .png; a .pdf is written beside it "
                                               f"(default figures/{name}.png)")
    if extra is not None:
        extra(p)
    args = p.parse_args(argv)
    args.name = name
    if args.out is None:
        args.out = results_path(name, args.quick)
    if args.fig is None:
        args.fig = figure_path(name, args.quick)
    return args


# ---------------------------------------------------------------------------------------------
# results files
# ---------------------------------------------------------------------------------------------

def _jsonable(o):
    if isinstance(o, dict):
        return {str(k): _jsonable(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [_jsonable(v) for v in o]
    if isinstance(o, np.ndarray):
        return _jsonable(o.tolist())
    if isinstance(o, np.generic):
        return _jsonable(o.item())
    if isinstance(o, np.dtype):
        return o.name
    if isinstance(o, float) and not math.isfinite(o):
        return None if math.isnan(o) else ("inf" if o > 0 else "-inf")
    if hasattr(o, "as_dict"):
        return _jsonable(o.as_dict())
    if isinstance(o, type) and issubclass(o, np.generic):
        return np.dtype(o).name
    return o


def _resolve(name_or_path: str) -> str:
    if name_or_path.endswith(".json") or os.sep in name_or_path:
        return os.path.abspath(name_or_path)
    return results_path(name_or_path)


def save_results(name: str, rows: list, config: dict, extra: dict | None = None,
                 meta: dict | None = None) -> str:
    """Write ``{"meta", "config", "rows", **extra}`` as JSON to results/<name>.json (or to
    ``name`` itself when it is a path ending in .json); returns the path."""
    path = _resolve(name)
    if meta is None:
        from .bench import run_metadata
        meta = run_metadata()
    doc = {"meta": meta, "config": config, "rows": list(rows)}
    for k, v in (extra or {}).items():
        if k in doc:
            raise OptionError(problem(f"extra[{k!r}]", "a key other than meta/config/rows", k))
        doc[k] = v
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(_jsonable(doc), f, indent=1, allow_nan=False)
        f.write("\n")
    os.replace(tmp, path)
    return path


def load_results(name: str) -> dict:
    """Read results/<name>.json (or a path ending in .json)."""
    path = _resolve(name)
    if not os.path.isfile(path):
        raise DatasetError(problem("results file", "an existing JSON file", path,
                                   "measure it first on a GPU machine"))
    with open(path) as f:
        return json.load(f)


# ---------------------------------------------------------------------------------------------
# small utilities
# ---------------------------------------------------------------------------------------------

def progress(iterable: Iterable, total: int | None = None, desc: str = "", stream=None,
             width: int = 28, min_interval: float = 0.2):
    """Yield from ``iterable`` while drawing ``desc [#####.....] i/total  elapsed`` on stderr."""
    stream = sys.stderr if stream is None else stream
    if total is None:
        try:
            total = len(iterable)  # type: ignore[arg-type]
        except TypeError:
            total = None
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


def gpu_available() -> bool:
    """True when numba sees a real CUDA GPU (False in the simulator)."""
    from ._cuda import SIMULATOR, cuda
    if SIMULATOR:
        return False
    try:
        return bool(cuda.is_available())
    except Exception:
        return False


def pyplot():
    """matplotlib.pyplot with the Agg backend and readable defaults."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    plt.rcParams.update({"figure.dpi": 110, "savefig.dpi": 150, "axes.grid": True,
                         "grid.alpha": 0.3, "font.size": 9, "axes.titlesize": 10,
                         "legend.fontsize": 7.5})
    return plt


def savefig(fig, path: str) -> list[str]:
    """Save ``fig`` as ``path`` (.png) and the same name with .pdf; returns both paths."""
    root, _ = os.path.splitext(os.path.abspath(path))
    os.makedirs(os.path.dirname(root), exist_ok=True)
    out = [root + ".png", root + ".pdf"]
    for p in out:
        fig.savefig(p, bbox_inches="tight")
    return out


def format_table(rows: list[dict], columns: list[tuple[str, str, str]]) -> str:
    """A plain-text table: ``columns`` is a list of (key, header, format spec)."""
    heads = [h for _, h, _ in columns]
    body = []
    for r in rows:
        cells = []
        for key, _, spec in columns:
            v = r.get(key)
            if v is None:
                cells.append("-")
            elif spec and isinstance(v, (int, float)):
                cells.append(format(v, spec))
            else:
                cells.append(str(v))
        body.append(cells)
    widths = [max([len(h)] + [len(c[i]) for c in body]) for i, h in enumerate(heads)]
    lines = ["  ".join(h.rjust(w) for h, w in zip(heads, widths)),
             "  ".join("-" * w for w in widths)]
    lines += ["  ".join(c.rjust(w) for c, w in zip(cells, widths)) for cells in body]
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# the standard entry point
# ---------------------------------------------------------------------------------------------

def _describe(results: dict) -> tuple[str, str]:
    meta = results.get("meta", {})
    dev = meta.get("device", {}) or {}
    gpu = dev.get("name") or ("the CUDA simulator" if dev.get("simulator") else "an unknown GPU")
    return gpu, meta.get("date_utc", "an unknown date")


def main(name: str, *, description: str, measure: Callable[[argparse.Namespace], dict],
         plot: Callable[[dict, str], object], extra: Callable | None = None,
         report: Callable[[dict], object] | None = None, argv=None, needs_gpu: bool = True) -> int:
    """Parse the flags, then measure+save+plot (GPU), or plot the saved results (no GPU or
    ``--plot-only``); after a measurement ``report(results)`` prints its summary last.
    Experiments that measure on the CPU (sizes, encodings) pass ``needs_gpu=False``.
    Returns the process exit code."""
    args = parse_args(description, extra, name=name, argv=argv)
    rel = os.path.relpath(args.out, ROOT) if args.out.startswith(ROOT) else args.out
    if args.plot_only or (needs_gpu and not gpu_available()):
        if not os.path.isfile(args.out):
            why = "--plot-only" if args.plot_only else "no CUDA GPU"
            print(f"{why}: there are no saved results at {rel} to plot. Run "
                  f"`python experiments/{name}.py{' --quick' if args.quick else ''}` on a machine "
                  f"with an NVIDIA GPU (and CuPy/torch for the vendor baselines) first.",
                  file=sys.stderr)
            return 1
        results = load_results(args.out)
        gpu, date = _describe(results)
        if not args.plot_only:
            print(f"no CUDA GPU: plotting the committed {rel} measured on {gpu} at {date}")
        figs = plot(results, args.fig)
        if args.plot_only:
            print("wrote " + ", ".join(os.path.relpath(f, ROOT) for f in (figs or [args.fig])))
        return 0
    results = measure(args)
    rows = results.pop("rows")
    config = results.pop("config")
    results.pop("meta", None)
    path = save_results(args.out, rows, config, extra=results)
    saved = load_results(path)
    figs = plot(saved, args.fig)
    print(f"wrote {os.path.relpath(path, ROOT)}"
          + "".join(f", {os.path.relpath(f, ROOT)}" for f in (figs or [])))
    if report is not None:
        report(saved)
    return 0
