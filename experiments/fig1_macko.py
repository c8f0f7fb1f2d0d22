"""MACKO paper, Fig. 1: SpMV runtime vs sparsity for a 36864 x 12288 fp16 matrix, all methods
(MACKO, cuSPARSE, numba CSR-vector, dense cuBLAS GEMV), cold L2. Measured by fig7_macko's
``measure`` on this shape.

    python experiments/fig1_macko.py [--quick] [--plot-only]
"""
from __future__ import annotations

import sys

from experiments import fig7_macko as F7
from spmvlab import experiment as X
from spmvlab import plotting as P

NAME = "fig1_macko"
NEEDS_GPU = True
# the paper's sparsities, 0-95 % (fig7's grid): where MACKO crosses cuBLAS and CSR
# the public benchmark builds its matrix on the host, one per sparsity, slow for these 453M
# entries, so it is off here; fig7 shows it
FULL = dict(F7.FULL, shape=[36864, 12288], reps=50, public_macko=False)
#: the H100 run (results/h100/fig1_macko.json) measured a coarser grid
H100_SPARSITIES = [0.3, 0.5, 0.7, 0.9]
QUICK = dict(sparsities=[0.5, 0.9], reps=20)
measure = F7.measure
report = F7.report


def config(quick: bool = False, **overrides) -> dict:
    return X.make_config(NAME, FULL, QUICK, quick, overrides)


def plot(results: dict, fig_path: str) -> list[str]:
    plt = P.pyplot()
    cfg = results["config"]
    rows = [r for r in results["rows"] if "median_us" in r]
    fig, ax = plt.subplots(figsize=(P.COLUMN_WIDTH, 2.9))
    P.method_lines(ax, rows, "median_us", methods=cfg["methods"], style={"cublas": dict(ls="--")})
    ax.set(xlabel="sparsity (%)", ylabel="SpMV time (us, median, cold L2)",
           title=f"{cfg['shape'][0]}x{cfg['shape'][1]} fp16 on {P.device_name(results)}")
    ax.set_ylim(bottom=0)
    ax.legend()
    return P.savefig(fig, fig_path)


def match(results: dict, base: str = "macko", other: str = "cusparse") -> list[dict]:
    """For each sparsity ``s`` of ``base``: the sparsity at which ``other`` takes the same time
    (linear interpolation of ``other``'s measured times; None outside them) and how many times
    fewer nonzeros ``other`` needs for it, ``(1 - s) / (1 - s_other)``."""
    rows = [r for r in results["rows"] if "median_us" in r]
    pts = sorted((r["sparsity"], r["median_us"]) for r in rows if r["method"] == other)
    out = []
    for r in sorted((r for r in rows if r["method"] == base), key=lambda r: r["sparsity"]):
        s_other = None
        for (s0, t0), (s1, t1) in zip(pts, pts[1:]):
            if min(t0, t1) <= r["median_us"] <= max(t0, t1) and t0 != t1:
                s_other = s0 + (s1 - s0) * (t0 - r["median_us"]) / (t0 - t1)
                break
        out.append(dict(method=base, other=other, sparsity=r["sparsity"], matching_sparsity=s_other,
                        fewer_nonzeros=None if s_other is None else (1 - r["sparsity"]) / (1 - s_other)))
    return out


def crossing(results: dict, method: str = "macko", field: str = "speedup_vs_cublas") -> list[dict]:
    """The sparsity at which ``method``'s ``field`` crosses 1 (linear interpolation between the
    measured sparsities; an empty list when it never does)."""
    pts = sorted((r["sparsity"], r[field]) for r in results["rows"]
                 if r["method"] == method and r.get(field) is not None)
    for (s0, v0), (s1, v1) in zip(pts, pts[1:]):
        if v0 < 1 <= v1:
            return [dict(method=method, field=field, sparsity=s0 + (s1 - s0) * (1 - v0) / (v1 - v0))]
    return []


if __name__ == "__main__":
    sys.exit(X.main(sys.modules[__name__]))
