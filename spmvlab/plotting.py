"""Plotting and report helpers shared by ``experiments/*.py`` (they never measure).

* :func:`pyplot` -- matplotlib with the Agg backend and the project's defaults;
* :func:`savefig` -- ``<path>.png`` and ``<path>.pdf``, the PDF without a creation date so that
  re-plotting the same results gives byte-identical files;
* :func:`method_lines` / :func:`speedup_axis` -- one line per method over sparsity, and the
  "speedup over a baseline" axis with its 1x line;
* :func:`device_name` -- the GPU (or CPU) a results file was measured on, for titles;
* :func:`format_table` / :func:`print_table` and :data:`TIMING_COLUMNS` -- plain-text tables.
"""
from __future__ import annotations

import os
from typing import Callable, Iterable, Mapping

__all__ = ["pyplot", "savefig", "device_name", "method_lines", "speedup_axis", "format_table",
           "print_table", "TIMING_COLUMNS"]

#: (key, header, format) of the per-method timing table most GPU experiments print
TIMING_COLUMNS = [("sparsity", "sparsity", ".2f"), ("method", "method", ""),
                  ("median_us", "median us", ".1f"), ("tb_s", "TB/s", ".2f"),
                  ("speedup_vs_cublas", "x cuBLAS", ".2f"),
                  ("speedup_vs_cusparse", "x cuSPARSE", ".2f"), ("check_passed", "ok", "")]


def pyplot():
    """matplotlib.pyplot with the Agg backend and readable defaults."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    plt.rcParams.update({"figure.dpi": 110, "savefig.dpi": 150, "axes.grid": True,
                         "grid.alpha": 0.3, "font.size": 9, "axes.titlesize": 10,
                         "legend.fontsize": 7.5})
    return plt


def savefig(fig, path: str, *, tight: bool = True) -> list[str]:
    """Save ``fig`` as ``path`` (.png) and the same name with .pdf, then close it; returns both
    paths. ``tight``: call ``fig.tight_layout()`` first. The files carry no date, so the same
    results always give the same bytes."""
    import matplotlib.pyplot as plt
    root, _ = os.path.splitext(os.path.abspath(path))
    os.makedirs(os.path.dirname(root), exist_ok=True)
    if tight:
        fig.tight_layout()
    out = [root + ".png", root + ".pdf"]
    fig.savefig(out[0], bbox_inches="tight")
    fig.savefig(out[1], bbox_inches="tight", metadata={"CreationDate": None})
    plt.close(fig)
    return out


def device_name(results: Mapping) -> str:
    """The GPU named in ``results["meta"]`` ("CPU" for results measured without one)."""
    dev = (results.get("meta") or {}).get("device") or {}
    if dev.get("name"):
        return str(dev["name"])
    return "CPU" if dev.get("simulator") else "an unknown GPU"


def method_lines(ax, rows: Iterable[Mapping], y: str, *, methods: Iterable[str] | None = None,
                 style: Mapping[str, Mapping] | None = None, x: str = "sparsity",
                 label: Callable[[str], str] | None = None) -> list[str]:
    """Plot one line per method: ``y`` against ``100 * x`` over the rows of that method that
    have ``y``. ``methods`` orders them (default: as first seen); ``style[method]`` holds
    keyword arguments for ``ax.plot`` (default: circles); ``label(method)`` names the line
    (default: the method with spaces). Returns the methods drawn."""
    rows = [r for r in rows if r.get(y) is not None]
    drawn = []
    for m in methods if methods is not None else dict.fromkeys(r["method"] for r in rows):
        pts = sorted((r[x], r[y]) for r in rows if r["method"] == m)
        if not pts:
            continue
        kw = dict((style or {}).get(m, {"marker": "o"}))
        ax.plot([100 * a for a, _ in pts], [b for _, b in pts],
                label=label(m) if label else m.replace("_", " "), **kw)
        drawn.append(m)
    return drawn


def speedup_axis(ax, *, title: str, ylabel: str, base_label: str | None = None,
                 log2: bool = False, legend: bool = True, legend_size=None):
    """The 1x line (labelled ``base_label``), axis labels over sparsity, optionally a log2 axis
    with ``Nx`` ticks, and the legend."""
    ax.axhline(1.0, color="black", lw=1, ls="--", label=base_label)
    ax.set(xlabel="sparsity (%)", ylabel=ylabel, title=title)
    if log2:
        ax.set_yscale("log", base=2)
        lo, hi = ax.get_ylim()
        ticks = [t for t in (0.125, 0.25, 0.5, 1, 2, 4, 8) if lo <= t <= hi]
        ax.set_yticks(ticks, [f"{t:g}x" for t in ticks])
    if legend:
        ax.legend(fontsize=legend_size)


def format_table(rows: list[Mapping], columns: list[tuple[str, str, str]]) -> str:
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


def print_table(rows: Iterable[Mapping], columns: list[tuple[str, str, str]],
                where: Callable[[Mapping], bool] | None = None) -> None:
    """Print :func:`format_table` of the timed rows (those with ``median_us``, or all rows
    when none has it) that satisfy ``where``."""
    rows = list(rows)
    if any("median_us" in r for r in rows):
        rows = [r for r in rows if "median_us" in r]
    print(format_table([r for r in rows if where is None or where(r)], columns))
