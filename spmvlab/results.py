"""Where results and figures live, and results files: one JSON per (experiment, device).

    results/<device>/<name>.json        {"meta": run_metadata(), "config", "rows", ...}
    figures/<device>/<name>.png, .pdf   (``<name>.quick.*`` for ``--quick`` runs, not committed)

``<device>`` is ``runinfo.device_slug`` of the GPU (``h100``, ``h200``, ...) or ``cpu`` for
experiments measured on the CPU. :func:`to_json` writes NumPy values as Python ones, NaN as
null and infinities as "inf"/"-inf", so every file is plain JSON.
"""
from __future__ import annotations

import glob
import json
import math
import os

import numpy as np

from reference._common import OptionError, problem

from .errors import DatasetError

__all__ = ["ROOT", "RESULTS", "FIGURES", "EXPERIMENTS", "results_path", "figure_path",
           "result_devices", "results_device", "rel", "file_name", "to_json", "is_path",
           "save_results", "load_results"]

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(ROOT, "results")
FIGURES = os.path.join(ROOT, "figures")
EXPERIMENTS = os.path.join(ROOT, "experiments")


def file_name(name: str, quick: bool, ext: str) -> str:
    """``<name>[.quick]<ext>``."""
    return f"{name}{'.quick' if quick else ''}{ext}"


def results_path(name: str, device: str, quick: bool = False) -> str:
    """results/<device>/<name>[.quick].json"""
    return os.path.join(RESULTS, device, file_name(name, quick, ".json"))


def figure_path(name: str, device: str, quick: bool = False) -> str:
    """figures/<device>/<name>[.quick].png (a .pdf is written beside it)"""
    return os.path.join(FIGURES, device, file_name(name, quick, ".png"))


def result_devices(name: str, quick: bool = False) -> list[str]:
    """The devices (folders of results/) that hold results of ``name``, sorted."""
    found = glob.glob(os.path.join(RESULTS, "*", file_name(name, quick, ".json")))
    return sorted(os.path.basename(os.path.dirname(p)) for p in found)


def results_device(meta: dict | None, needs_gpu: bool = True) -> str:
    """The folder a run's results go to: ``cpu`` for CPU-measured experiments, else the slug
    of the GPU in ``meta["device"]``."""
    from .runinfo import device_slug
    return device_slug((meta or {}).get("device")) if needs_gpu else "cpu"


def rel(path: str) -> str:
    """``path`` relative to the repository root when it lies inside it."""
    path = os.path.abspath(path)
    return os.path.relpath(path, ROOT) if path.startswith(ROOT + os.sep) else path


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


def to_json(doc) -> str:
    """``doc`` as the JSON text results files hold (NumPy values as Python ones, NaN as null,
    infinities as "inf"/"-inf"), ending in a newline."""
    return json.dumps(_jsonable(doc), indent=1, allow_nan=False) + "\n"


def is_path(name_or_path: str) -> bool:
    """Whether ``name_or_path`` names a file rather than an experiment."""
    return name_or_path.endswith(".json") or os.sep in name_or_path


def save_results(name_or_path: str, rows: list, config: dict, extra: dict | None = None,
                 meta: dict | None = None, *, device: str | None = None) -> str:
    """Write ``{"meta", "config", "rows", **extra}`` as JSON to ``name_or_path`` when it is a
    path, else to results/<device>/<name>.json (``device`` default: :func:`results_device`
    of ``meta``); returns the path."""
    if meta is None:
        from .runinfo import run_metadata
        meta = run_metadata()
    path = (os.path.abspath(name_or_path) if is_path(name_or_path)
            else results_path(name_or_path, device or results_device(meta)))
    doc = {"meta": meta, "config": config, "rows": list(rows)}
    for k, v in (extra or {}).items():
        if k in doc:
            raise OptionError(problem(f"extra[{k!r}]", "a key other than meta/config/rows", k))
        doc[k] = v
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(to_json(doc))
    os.replace(tmp, path)
    return path


def load_results(name_or_path: str, device: str | None = None, quick: bool = False) -> dict:
    """Read a results file: a path, or results/<device>/<name>.json (``device`` may be left
    out when one device has results of ``name``)."""
    if is_path(name_or_path):
        path = os.path.abspath(name_or_path)
    else:
        devices = [device] if device else result_devices(name_or_path, quick)
        if len(devices) != 1:
            raise DatasetError(problem("device", f"one of {devices}" if devices else
                                       "a device with saved results", device or "none given",
                                       f"pass device=... (results/<device>/{name_or_path}.json)"))
        path = results_path(name_or_path, devices[0], quick)
    if not os.path.isfile(path):
        raise DatasetError(problem("results file", "an existing JSON file", path,
                                   "measure it first on a GPU machine"))
    with open(path) as f:
        return json.load(f)
