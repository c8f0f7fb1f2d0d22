"""Where two SpMV methods cross: the sparsity from which one is as fast as the other, read
from measured results (``experiments/fig7_macko.py``, ``fig1_macko.py``), and a prediction of
the faster of MACKO and CSR for a matrix from those measurements.

MACKO stores at least one entry per 2**delta_bits columns of a row (explicit zeros fill longer
gaps), so at high sparsity its bytes approach those of CSR with 2-byte values and 4-byte
indices, and the CSR-vector kernel, with less work per entry, becomes the faster one.
"""
from __future__ import annotations

import math

__all__ = ["crossover", "measured", "predict_faster"]

#: the results that time MACKO and CSR-vector on one shape over many sparsities
RESULTS = ("fig7_macko", "fig7_macko_12288x12288", "fig7_macko_4096x4096", "fig7_macko_11008x4096",
           "fig1_macko")


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
    :data:`RESULTS`, with ``device``, ``results``, ``shape`` and ``date``."""
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
                                date=res.get("meta", {}).get("date_utc", "")))
    return out


def predict_faster(shape, sparsity: float, table: list[dict] | None = None) -> dict | None:
    """The faster of MACKO and CSR-vector for a matrix of ``shape`` and ``sparsity``, as the
    committed measurements predict it: the newest device's measurement at the nearest
    measured shape (distance in log rows and log columns). Returns ``faster``
    (``"macko"``/``"csr"``), the crossover it used and a one-line ``reason``; None when no
    GPU results are committed. Uniform random masks were measured: other structures may
    differ, ``spmvlab bench`` times the matrix itself on a GPU."""
    table = measured() if table is None else table
    if not table:
        return None
    newest = max(t["date"] for t in table)
    latest_dev = next(t["device"] for t in table if t["date"] == newest)
    cand = [t for t in table if t["device"] == latest_dev]
    r, c = (max(1, int(v)) for v in shape)
    best = min(cand, key=lambda t: (math.log(t["shape"][0] / r)) ** 2 + (math.log(t["shape"][1] / c)) ** 2)
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
