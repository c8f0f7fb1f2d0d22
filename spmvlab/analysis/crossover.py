"""Where two SpMV methods cross: the sparsity from which one is as fast as the other, read
from measured results (``experiments/fig7_macko.py``, ``fig1_macko.py``), and a prediction of
the faster of MACKO and CSR for a matrix from those measurements.

MACKO stores at least one entry per 2**delta_bits columns of a row (explicit zeros fill longer
gaps), so at high sparsity its bytes approach those of CSR with 2-byte values and 4-byte
indices, and the CSR-vector kernel, with less work per entry, becomes the faster one.

The committed runs time uniform random masks of LLM weight shapes, in the value dtype each run
records, over a range of sparsities, so :func:`predict` predicts only for matrices of that
kind (:func:`uncovered` states the rule); for anything else it says why it makes no prediction.
"""
from __future__ import annotations

import math

__all__ = ["crossover", "measured", "predict", "predict_faster", "uncovered"]

#: the results that time MACKO and CSR-vector on one shape over many sparsities
RESULTS = ("fig7_macko", "fig7_macko_12288x12288", "fig7_macko_4096x4096", "fig7_macko_11008x4096",
           "fig1_macko")
#: a covered matrix's rows hold between 1/ROW_SPREAD and ROW_SPREAD times the mean row length,
#: and its median in-row column gap is within that factor of a uniform mask's
ROW_SPREAD = 2.0


def _times(rows, method: str) -> dict[float, float]:
    return {r["sparsity"]: r["median_us"] for r in rows
            if r.get("method") == method and r.get("median_us") and "sparsity" in r}


def crossover(rows, a: str = "macko", b: str = "csr_vector") -> dict:
    """The sparsity from which ``b`` is at least as fast as ``a`` over the measured
    sparsities of ``rows`` (one shape): ``kind`` is ``"crossing"`` (``sparsity`` interpolated
    linearly in log(t_a / t_b) between the last measured point where ``a`` is faster and the
    next), ``"never"`` (``a`` faster at every point; ``sparsity`` None) or ``"always"``
    (``b`` already as fast at the lowest point). ``lo``/``hi``: the measured range."""
    ta, tb = _times(rows, a), _times(rows, b)
    pts = sorted((s, math.log(ta[s] / tb[s])) for s in ta.keys() & tb.keys())
    if not pts:
        return dict(kind="unmeasured", sparsity=None, lo=None, hi=None, a=a, b=b)
    lo, hi = pts[0][0], pts[-1][0]
    base = dict(lo=lo, hi=hi, a=a, b=b)
    if pts[0][1] >= 0:
        return dict(base, kind="always", sparsity=lo)
    for (s0, v0), (s1, v1) in zip(pts, pts[1:]):
        if v0 < 0 <= v1:
            return dict(base, kind="crossing", sparsity=s0 + (s1 - s0) * (0 - v0) / (v1 - v0))
    return dict(base, kind="never", sparsity=None)


def measured(devices=None) -> list[dict]:
    """:func:`crossover` (MACKO vs CSR-vector) of every committed results file in
    :data:`RESULTS`, with ``device``, ``results``, ``shape``, ``dtype`` and ``date``."""
    from .. import experiment as X
    out = []
    for name in RESULTS:
        for dev in X.result_devices(name):
            if devices is not None and dev not in devices:
                continue
            res = X.load_results(name, dev)
            shape = res["config"].get("shape")
            if not shape:
                continue
            c = crossover(res["rows"])
            if c["kind"] != "unmeasured":
                out.append(dict(c, device=dev, results=name, shape=list(shape),
                                dtype=res["config"].get("dtype"),
                                date=res.get("meta", {}).get("date_utc", "")))
    return out


def _newest(table: list[dict]) -> list[dict]:
    """The measurements of the device measured last (the one predictions use)."""
    newest = max(t["date"] for t in table)
    latest_dev = next(t["device"] for t in table if t["date"] == newest)
    return [t for t in table if t["device"] == latest_dev]


def _nearest(cand: list[dict], shape) -> dict:
    """The measurement at the shape nearest ``shape`` (distance in log rows and log columns)."""
    r, c = (max(1, int(v)) for v in shape)
    return min(cand, key=lambda t: (math.log(t["shape"][0] / r)) ** 2
               + (math.log(t["shape"][1] / c)) ** 2)


def predict_faster(shape, sparsity: float, table: list[dict] | None = None) -> dict | None:
    """The faster of MACKO and CSR-vector for a matrix of ``shape`` and ``sparsity``, as the
    committed measurements predict it: the newest device's measurement at the nearest
    measured shape (distance in log rows and log columns). Returns ``faster``
    (``"macko"``/``"csr"``), the crossover it used and a one-line ``reason``; None when no
    GPU results are committed. It extrapolates to any shape and sparsity: :func:`predict`
    first checks that the measurements cover the matrix."""
    table = measured() if table is None else table
    if not table:
        return None
    best = _nearest(_newest(table), shape)
    where = f"{best['shape'][0]}x{best['shape'][1]} on {best['device']} ({best['results']})"
    if best["kind"] == "crossing":
        faster = "csr" if sparsity >= best["sparsity"] else "macko"
        reason = (f"CSR-vector is as fast as MACKO from {100 * best['sparsity']:.1f} % sparsity at "
                  f"{where}")
    elif best["kind"] == "never":
        faster = "macko" if sparsity <= best["hi"] else "unknown"
        reason = f"MACKO was faster at every measured sparsity up to {100 * best['hi']:.0f} % at {where}"
    else:
        faster = "csr" if sparsity >= best["lo"] else "unknown"
        reason = f"CSR-vector was as fast from the lowest measured sparsity at {where}"
    return dict(faster=faster, reason=reason, **{k: best[k] for k in ("device", "shape", "sparsity", "kind")})


def _uniform_gap_median(density: float) -> float:
    """The median in-row column gap of a uniform random mask of ``density``: gaps are
    geometric, P(gap = k) = (1 - d)**(k - 1) * d, so the median is the least k with
    1 - (1 - d)**k >= 1/2."""
    if density >= 1.0:
        return 1.0
    if density <= 0.0:
        return math.inf
    return float(max(1, math.ceil(math.log(0.5) / math.log1p(-density) - 1e-9)))


def _span(values, fmt=",") -> str:
    lo, hi = min(values), max(values)
    return f"{lo:{fmt}}" if lo == hi else f"{lo:{fmt}}-{hi:{fmt}}"


def uncovered(stats: dict, dtype: str, table: list[dict]) -> tuple[list[str], str]:
    """Why the measurements in ``table`` do not cover a matrix (an empty list: they do), and
    one phrase that says what they cover.

    ``stats`` is :func:`spmvlab.cli.matrix_stats` of the matrix, ``dtype`` its value dtype.
    The committed runs time uniform random masks of LLM weight shapes, so a matrix is covered
    when it is of that kind, as measured on the newest device:

    * ``dtype`` is a value dtype the runs used (MACKO's and CSR's bytes per entry, and so
      their crossover, depend on it);
    * its rows and its columns each lie within the measured shapes' range (the crossover
      moves with the shape, and launch cost and caching differ outside that range);
    * its sparsity lies within the range measured at the nearest measured shape;
    * every row holds between 1/:data:`ROW_SPREAD` and :data:`ROW_SPREAD` times the mean
      row length (no empty rows; a uniform mask's rows are near the mean, a power-law
      graph's are not);
    * its median in-row column gap is within a factor :data:`ROW_SPREAD` of a uniform
      mask's of the same density (columns scattered, not banded or clustered); this, the
      weakest sign, is reported only where the shape, sparsity and rows pass.
    """
    cand = _newest(table)
    dtypes = sorted({t.get("dtype") or "?" for t in cand})
    rows, cols = [t["shape"][0] for t in cand], [t["shape"][1] for t in cand]
    best = _nearest(cand, stats["shape"])
    lo, hi = best["lo"], best["hi"]
    what = (f"uniform random masks, {_span(rows)} x {_span(cols)}, "
            f"{100 * lo:g}-{100 * hi:g} % sparse, {'/'.join(dtypes)}")
    why = []
    r, c = stats["shape"]
    sparsity = 1.0 - stats["density"]
    if not (lo <= sparsity <= hi):
        why.append(f"{100 * sparsity:.5g} % sparse")
    if not (min(rows) <= r <= max(rows) and min(cols) <= c <= max(cols)):
        why.append(f"{r:,} x {c:,}")
    mean = stats["row_mean"]
    if stats["empty_rows"] or not (mean / ROW_SPREAD <= stats["row_min"]
                                   and stats["row_max"] <= ROW_SPREAD * mean):
        empty = f", {stats['empty_rows']:,} empty" if stats["empty_rows"] else ""
        why.append(f"rows of {stats['row_min']:,} to {stats['row_max']:,} nonzeros "
                   f"(mean {mean:.1f}{empty})")
    gap, want = stats["gap_median"], _uniform_gap_median(stats["density"])
    if not why and not (want / ROW_SPREAD <= gap <= ROW_SPREAD * want):   # nan fails too
        why.append(f"median column gap {gap:g} (a uniform mask's: {want:g})")
    if dtype not in dtypes:
        why.append(f"in {dtype}")
    return why, what


def predict(stats: dict, dtype: str, table: list[dict] | None = None) -> dict:
    """The faster of MACKO and CSR-vector for a matrix (``stats``: its
    :func:`spmvlab.cli.matrix_stats`; ``dtype``: its value dtype) as the committed GPU runs
    predict it, only where they cover the matrix (:func:`uncovered`). Returns ``faster``
    (``"macko"``/``"csr"``, or None: no prediction) and a one-line ``reason`` (the crossover
    used, or why no prediction is made); with a prediction also :func:`predict_faster`'s
    ``device``, ``shape``, ``sparsity`` and ``kind``."""
    table = measured() if table is None else table
    if not table:
        return dict(faster=None, reason="no GPU runs of MACKO and CSR-vector are committed")
    why, what = uncovered(stats, dtype, table)
    if why:
        return dict(faster=None, reason=f"the committed GPU runs time {what}; this matrix is "
                                        + ", ".join(why))
    return predict_faster(stats["shape"], 1.0 - stats["density"], table)
