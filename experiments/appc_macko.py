"""MACKO paper, appendix C: effective density of MACKO with delta_bits 1, 2, 4 and 8 vs
sparsity (16-bit values): the expected-case formula (``spmvlab.analysis.density``, eq. 10)
as curves, real encodings of uniform random 2048 x 2048 masks (every stored byte counted) as
points, measured on the CPU.

    python experiments/appc_macko.py [--quick] [--plot-only]
"""
from __future__ import annotations

import sys

import numpy as np

from spmvlab import experiment as X
from spmvlab import plotting as P

NAME = "appc_macko"
NEEDS_GPU = False
FULL = dict(shape=[2048, 2048],
            sparsities=[0.0, 0.05, 0.1, 0.15, 0.2, 0.3, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.98],
            delta_bits=[1, 2, 4, 8], seed=0, value_dtype="float16")
QUICK = dict(shape=[512, 512], sparsities=[0.1, 0.3, 0.5, 0.7, 0.9])
COLORS = ("#fdae61", "#d7191c", "#2c7bb6", "#1a1a6e")   # delta widths (not methods): light to dark


def config(quick: bool = False, **overrides) -> dict:
    return X.make_config(NAME, FULL, QUICK, quick, overrides)


def measure(cfg: dict) -> dict:
    from spmvlab import datasets
    from spmvlab.analysis.density import macko_expected, measured_effective_density
    from spmvlab.encoders import macko as EM
    dtype = np.dtype(cfg["value_dtype"])
    rows = []
    for s in X.progress(cfg["sparsities"], total=len(cfg["sparsities"]), desc=NAME):
        # drawn in the value dtype (float32 draws cast, zeros redrawn): nothing lost at encode
        A = datasets.uniform(tuple(cfg["shape"]), s, dtype=dtype, seed=cfg["seed"])
        for b in cfg["delta_bits"]:
            M = EM.encode(A, delta_bits=b, dtype=dtype)
            rows.append(dict(sparsity=s, delta_bits=b, measured=measured_effective_density(M),
                             expected=float(macko_expected(1 - s, b, 8 * dtype.itemsize)),
                             inserted_zeros=int(M.n_inserted), nnz=int(M.nnz)))
    return dict(rows=rows)


def plot(results: dict, fig_path: str) -> list[str]:
    from spmvlab.analysis.density import macko_expected
    plt = P.pyplot()
    s = np.linspace(0.0, 0.99, 300)
    fig, ax = plt.subplots(figsize=(P.COLUMN_WIDTH, 2.7))
    for b, color in zip(results["config"]["delta_bits"], COLORS):
        ax.plot(100 * s, macko_expected(1 - s, b, 16), color=color, lw=1.2, label=f"{b}-bit deltas")
        pts = [r for r in results["rows"] if r["delta_bits"] == b]
        ax.plot([100 * r["sparsity"] for r in pts], [r["measured"] for r in pts], "o", color=color,
                mfc="none", ms=3.5, mew=0.9)
    ax.axhline(1.0, color="black", lw=0.9, ls="--", label="dense")
    ax.set(xlabel="sparsity (%)", ylabel="effective density (16-bit values)", ylim=(0, 1.6),
           title="MACKO: eq. 10 (lines) vs encodings (circles)")
    ax.legend(loc="upper right", ncol=2, fontsize=6.5)
    return P.savefig(fig, fig_path)


def report(results: dict):
    cols = [("sparsity", "sparsity", ".2f"), ("delta_bits", "bits", ""),
            ("expected", "expected", ".4f"), ("measured", "measured", ".4f")]
    P.print_table(results["rows"], cols)


def deviation(results: dict) -> list[dict]:
    """The rows with ``abs_diff`` = |measured - expected| (formula vs real encoding)."""
    return [dict(r, abs_diff=abs(r["measured"] - r["expected"])) for r in results["rows"]]


def worst_deviation(results: dict) -> list[dict]:
    """For each delta width, the row where the encoding lies furthest from eq. 10, with
    ``diff`` = measured - expected (signed) and ``abs_diff``."""
    rows = deviation(results)
    out = []
    for b in results["config"]["delta_bits"]:
        worst = max((r for r in rows if r["delta_bits"] == b), key=lambda r: r["abs_diff"])
        out.append(dict(worst, diff=worst["measured"] - worst["expected"]))
    return out


def row_pointer_share(results: dict) -> list[dict]:
    """One row: ``effd``, the row pointers' size relative to the dense matrix (rows + 1
    integers of the index width the encoder picks), a term eq. 10 leaves out but the measured
    sizes count."""
    from reference._common import index_dtype_for
    R, C = results["config"]["shape"]
    value_bytes = np.dtype(results["config"]["value_dtype"]).itemsize
    ptr_bytes = index_dtype_for(R * C).itemsize
    return [dict(effd=(R + 1) * ptr_bytes / (R * C * value_bytes))]


def thresholds(results: dict, b_val: int = 16) -> list[dict]:
    """From eq. 10 for each delta width of the results: ``below_dense_from``, the sparsity
    above which MACKO is smaller than dense, and ``smallest_from``/``smallest_to``, the
    sparsity range in which this width gives the smallest expected size (found on a 0.0001
    grid, to 0.999 sparsity), also as a text (``smallest``: "< 24 %", "24–56 %", "> 89 %")."""
    from spmvlab.analysis.density import macko_expected
    bits = list(results["config"]["delta_bits"])
    s = np.round(np.arange(0.0, 0.9991, 0.0001), 6)
    sizes = np.array([macko_expected(1 - s, b, b_val) for b in bits])
    best = np.argmin(sizes, axis=0)
    out = []
    for i, b in enumerate(bits):
        below = s[sizes[i] < 1.0]
        won = s[best == i]
        lo, hi = (float(won[0]), float(won[-1])) if won.size else (None, None)
        text = ("never" if lo is None else f"< {100 * hi:.0f} %" if lo == 0 else
                f"> {100 * lo:.0f} %" if hi >= s[-1] else f"{100 * lo:.0f}–{100 * hi:.0f} %")
        out.append(dict(delta_bits=b, below_dense_from=float(below[0]) if below.size else None,
                        smallest_from=lo, smallest_to=hi, smallest=text))
    return out


if __name__ == "__main__":
    sys.exit(X.main(sys.modules[__name__]))
