"""Plotting and report helpers shared by ``experiments/*.py`` (they never measure).

One figure style for every experiment:

* :data:`METHODS` gives each method one name, colour and marker in every figure
  (:func:`label`, :func:`line_style`, :func:`bar_style`), whatever the experiment;
* :func:`pyplot` sets fonts that stay readable when a figure is printed at paper width
  (:data:`PAGE_WIDTH` for a figure across the page, :data:`COLUMN_WIDTH` for one column: make
  figures that wide, in inches, and the text prints at its point size);
* :func:`ratio_axis` is the one log2 axis for ratios (speedups, relative sizes): ticks at the
  powers of two as ``0.25×``, ``1×``, ``4×``, the 1× line, limits that show every value;
  :func:`ratio_bars` draws bars from that 1× line up or down (never from an arbitrary floor);
  :func:`ratio_ticks` adds ticks at 1.5× (1.25×, ...) the powers of two where the range is narrow;
  :func:`log_axis` labels a log10 axis in plain numbers (``0.1``, ``10``, ``1k``);
* :func:`savefig` -- ``<path>.png`` and ``<path>.pdf``, the PDF without a creation date so
  that re-plotting the same results gives byte-identical files;
* :func:`method_lines` / :func:`speedup_axis` -- one line per method over sparsity, and the
  "speedup over a baseline" axis;
* :func:`device_name` -- the GPU (or CPU) a results file was measured on, for titles;
* :func:`format_table` / :func:`print_table` and :data:`TIMING_COLUMNS` -- plain-text tables.
"""
from __future__ import annotations

import math
import os
import re
from typing import Callable, Iterable, Mapping

__all__ = ["pyplot", "savefig", "device_name", "method_lines", "speedup_axis", "format_table",
           "print_table", "TIMING_COLUMNS", "METHODS", "label", "line_style", "bar_style",
           "ratio_axis", "ratio_bars", "ratio_ticks", "log_axis", "PAGE_WIDTH", "COLUMN_WIDTH",
           "legend_below"]

#: inches: a figure across a two-column page, and one column of it
PAGE_WIDTH, COLUMN_WIDTH = 7.0, 3.3

#: method -> (name, colour, marker), the same in every figure
METHODS = {
    "cublas": ("cuBLAS (dense)", "black", "s"),
    "cublas_sgemv": ("cuBLAS SGEMV (dense)", "dimgray", "s"),
    "numba_dense": ("dense GEMV (numba)", "gray", "s"),
    "public_cublas": ("cuBLAS (MACKO authors' run)", "black", "s"),
    "cusparse": ("cuSPARSE CSR", "tab:blue", "v"),
    "cusparse_coo": ("cuSPARSE COO", "tab:cyan", "<"),
    "cusparse_sell": ("cuSPARSE SELL", "steelblue", ">"),
    "csr_vector": ("CSR (ours)", "tab:green", "^"),
    "csr": ("CSR (ours)", "tab:green", "^"),          # the format (a layer), its default kernel
    "csr_scalar": ("CSR scalar (ours)", "yellowgreen", "^"),
    "csr_vector1": ("CSR vec=1 (ours)", "mediumseagreen", "d"),
    "coo": ("COO (ours)", "tab:olive", "x"),
    "macko": ("MACKO (ours)", "tab:orange", "o"),
    "public_macko": ("MACKO (authors' kernel)", "saddlebrown", "D"),
    "ec_csr": ("EC-CSR (ours)", "tab:purple", "P"),
    "csr_dtans": ("CSR-dtANS (ours)", "tab:brown", "X"),
    "split24": ("split 2:4 + CSR (ours)", "tab:pink", "h"),
    "generalsparse": ("GeneralSparse default (ours)", "lightcoral", "p"),
    "generalsparse_fixed": ("GeneralSparse fixed kernel (ours)", "rosybrown", "*"),
    "generalsparse_best": ("GeneralSparse tuned (ours)", "tab:red", "*"),
    "generalsparse_anchored": ("GeneralSparse tuned + our formats (ours)", "darkred", "*"),
}


def _base(method: str) -> tuple[str, str]:
    """(registered method, the ``[settings]`` part) of a method name like ``macko[prefetch=0]``."""
    m = re.match(r"^([\w]+)(\[.*\])?$", method)
    return (m.group(1), m.group(2) or "") if m else (method, "")


def label(method: str) -> str:
    """The method's name in figures: :data:`METHODS`'s, with any ``[settings]`` kept."""
    base, extra = _base(method)
    name = METHODS.get(base, (base.replace("_", " "), None, None))[0]
    return f"{name} {extra}" if extra else name


def line_style(method: str, **override) -> dict:
    """``ax.plot`` keywords for ``method``: its colour, marker and label."""
    base, extra = _base(method)
    name, color, marker = METHODS.get(base, (None, None, "o"))
    out = dict(label=label(method), marker=marker, markersize=4.5, linewidth=1.4)
    if color:
        out["color"] = color
    if extra:                                   # a setting of a known method: same colour, dashed
        out["linestyle"] = "--"
    out.update(override)
    return out


def bar_style(method: str, **override) -> dict:
    """``ax.bar`` keywords for ``method``: its colour and label."""
    base, _ = _base(method)
    color = METHODS.get(base, (None, None, None))[1]
    out = dict(label=label(method), **({"color": color} if color else {}))
    out.update(override)
    return out


def pyplot():
    """matplotlib.pyplot with the Agg backend and fonts readable at paper width (figures
    :data:`PAGE_WIDTH` or :data:`COLUMN_WIDTH` inches wide)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    plt.rcParams.update({"figure.dpi": 150, "savefig.dpi": 200, "axes.grid": True,
                         "grid.alpha": 0.3, "font.size": 8, "axes.titlesize": 8.5,
                         "axes.labelsize": 8, "xtick.labelsize": 7, "ytick.labelsize": 7,
                         "legend.fontsize": 7, "legend.framealpha": 0.9,
                         "figure.titlesize": 9})
    return plt


def _ratio_text(t: float) -> str:
    return f"{t:g}×" if t >= 1 else f"1/{1 / t:g}×" if t < 0.25 else f"{t:g}×"


def ratio_axis(ax, values: Iterable[float], *, axis: str = "y", line: bool = True,
               line_label: str | None = None):
    """A log2 axis for ratios covering ``values`` (and 1): ticks at every power of two in
    range (every second one where the range spans more than 8 of them), labelled ``0.25×``,
    ``1×``, ``4×``; the 1× line (labelled ``line_label``) unless ``line`` is False."""
    vals = [v for v in values if v and v > 0 and math.isfinite(v)] + [1.0]
    lo, hi = math.floor(math.log2(min(vals)) - 0.25), math.ceil(math.log2(max(vals)) + 0.25)
    step = 2 if hi - lo > 8 else 1
    ticks = [2.0 ** e for e in range(lo, hi + 1) if (e % step) == 0]
    limits = (2.0 ** (math.log2(min(vals)) - 0.3), 2.0 ** (math.log2(max(vals)) + 0.3))
    getattr(ax, f"set_{axis}scale")("log", base=2)
    getattr(ax, f"set_{axis}ticks")(ticks, [_ratio_text(t) for t in ticks])
    getattr(ax, f"{axis}axis").set_minor_locator(_null())
    getattr(ax, f"set_{axis}lim")(*limits)
    if line:
        (ax.axhline if axis == "y" else ax.axvline)(1.0, color="black", lw=0.9, ls="--",
                                                    label=line_label, zorder=1)


def ratio_ticks(ax, *, axis: str = "y", least: int = 3):
    """On a :func:`ratio_axis` whose limits hold fewer than ``least`` of its ticks (a narrow
    range, e.g. 0.8x to 1.7x): ticks also at 1.5x the powers of two from 1 up and at 0.75x,
    then at 1.25x and 1.75x them and 0.6x, 0.8x, 0.9x -- the fewest of these steps that give
    ``least`` ticks in range -- labelled as there; the limits stay."""
    lo, hi = getattr(ax, f"get_{axis}lim")()
    powers = [2.0 ** e for e in range(math.floor(math.log2(lo)), math.ceil(math.log2(hi)) + 1)]
    above = [p for p in powers if p >= 1]
    ticks = []
    for extra in ([], [1.5 * p for p in above] + [0.75],
                  [m * p for p in above for m in (1.25, 1.5, 1.75)] + [0.6, 0.75, 0.8, 0.9]):
        ticks = sorted(t for t in set(powers + extra) if lo <= t <= hi)
        if len(ticks) >= least:
            break
    getattr(ax, f"set_{axis}ticks")(ticks, [_ratio_text(t) for t in ticks])
    getattr(ax, f"set_{axis}lim")(lo, hi)


def _plain(v: float) -> str:
    """``v`` in few characters: 0.01, 0.5, 3, 20, 1k, 10k, 1M."""
    for div, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(v) >= div:
            return f"{v / div:g}{suffix}"
    return f"{v:g}"


def log_axis(ax, *, axis: str = "y"):
    """A log10 axis labelled in plain numbers (``0.01``, ``1``, ``100``, ``10k``, ``1M``)
    instead of powers of ten, also at 2x and 5x them where the limits (call it after
    plotting) span less than two decades; minor ticks unlabelled."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter
    getattr(ax, f"set_{axis}scale")("log")
    lo, hi = getattr(ax, f"get_{axis}lim")()
    narrow = lo > 0 and math.log10(hi / lo) < 2
    a = getattr(ax, f"{axis}axis")
    a.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0) if narrow else (1.0,)))
    a.set_major_formatter(FuncFormatter(lambda v, _: _plain(v)))
    a.set_minor_formatter(NullFormatter())


def _null():
    from matplotlib.ticker import NullLocator
    return NullLocator()


def ratio_bars(ax, xs, ratios, width, **kw):
    """Bars from the 1× line to each ratio (up above 1, down below), on a :func:`ratio_axis`."""
    return ax.bar(xs, [r - 1.0 for r in ratios], width, bottom=1.0, **kw)


def legend_below(fig, axes, ncol: int | None = None, room: float | None = 0.07):
    """One legend for the whole figure, under its panels (the labels of every axis, once), so
    nothing on the plots hides behind it; lays the panels out above it (``room``: the
    fraction of the height it takes; None: room for its rows of entries at the legend's font
    size and the x labels above them, whatever the figure's height). Save with
    ``savefig(..., tight=False)``."""
    seen = {}
    for ax in axes:
        for handle, text in zip(*ax.get_legend_handles_labels()):
            seen.setdefault(text, handle)
    ncol = ncol or min(len(seen), 4) or 1
    if room is None:
        rows = -(-len(seen) // ncol)
        import matplotlib                     # (the figure came from pyplot(): its style is set)
        inches = rows * 1.6 * matplotlib.rcParams["legend.fontsize"] / 72 + 0.15
        room = min(0.6, inches / fig.get_figheight())
    fig.tight_layout(rect=(0, room, 1, 1))
    if not seen:
        return None
    return fig.legend(list(seen.values()), list(seen), loc="lower center",
                      ncol=ncol, frameon=False, bbox_to_anchor=(0.5, 0.0))


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
                 names: Callable[[str], str] | None = None) -> list[str]:
    """Plot one line per method: ``y`` against ``100 * x`` over the rows of that method that
    have ``y``, in the method's :func:`line_style`. ``methods`` orders them (default: as
    first seen); ``style[method]`` overrides keywords of ``ax.plot``; ``names(method)`` names
    the line (default: :func:`label`). Returns the methods drawn."""
    rows = [r for r in rows if r.get(y) is not None]
    drawn = []
    for m in methods if methods is not None else dict.fromkeys(r["method"] for r in rows):
        pts = sorted((r[x], r[y]) for r in rows if r["method"] == m)
        if not pts:
            continue
        kw = line_style(m, **(style or {}).get(m, {}))
        if names is not None:
            kw["label"] = names(m)
        ax.plot([100 * a for a, _ in pts], [b for _, b in pts], **kw)
        drawn.append(m)
    return drawn


def speedup_axis(ax, *, title: str, ylabel: str, base_label: str | None = None,
                 log2: bool = False, legend: bool = True, legend_size=None):
    """Axis labels over sparsity and the 1x line (labelled ``base_label``); ``log2``: a
    :func:`ratio_axis` over the values plotted; then the legend."""
    ax.set(xlabel="sparsity (%)", ylabel=ylabel, title=title)
    if log2:
        ys = [y for line in ax.get_lines() for y in line.get_ydata()]
        ratio_axis(ax, ys, line_label=base_label)
    else:
        ax.axhline(1.0, color="black", lw=0.9, ls="--", label=base_label)
    if legend:
        ax.legend(fontsize=legend_size)


#: the columns of a timing table (``print_table(rows, TIMING_COLUMNS)``)
TIMING_COLUMNS = [("sparsity", "sparsity", ".2f"), ("method", "method", ""),
                  ("median_us", "median us", ".1f"), ("tb_s", "TB/s", ".2f"),
                  ("speedup_vs_cublas", "x cuBLAS", ".2f"),
                  ("speedup_vs_cusparse", "x cuSPARSE", ".2f"), ("check_passed", "ok", "")]


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
