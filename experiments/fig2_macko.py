"""MACKO paper, Fig. 2: effective density (format size / dense size) vs density, for
16-bit values, with the sizes of dense matrices quantized to 8 and 4 bits (the paper's Q8
and Q4 lines); two more panels for 8- and 4-bit values (not in the paper's figure).

Curves: the paper's formulas (``spmvlab.analysis.density``: CSR32, CSR16, Tiled-CSL, bitmask, MACKO
best/expected/worst, dense, and dense at fewer bits). Points: real encodings, measured on the CPU, of
* uniform random masks (``datasets.uniform``, 2048 x 2048) and
* the real transformer weights in ``<data>/weights`` pruned per row by magnitude,
with MACKO (delta_bits=4) and CSR (int32 indices). Measured sizes count every stored byte,
row pointers and padding included; for 8/4-bit values the value array is counted at that
width (the codes and row pointers do not change).

    python experiments/fig2_macko.py [--quick] [--plot-only]
"""
from __future__ import annotations

import sys

import numpy as np

from spmvlab import experiment as X
from spmvlab import plotting as P

NAME = "fig2_macko"
NEEDS_GPU = False
VALUE_BITS = (16, 8, 4)
FULL = dict(uniform_shape=[2048, 2048],
            densities=[0.02, 0.05, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 1.0],
            weight_sparsities=[0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9],
            weights=None, prune="magnitude, per row", seed=0, delta_bits=4)
QUICK = dict(uniform_shape=[512, 512], densities=[0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 0.9],
             weight_sparsities=[0.3, 0.5, 0.7, 0.9])


def config(quick: bool = False, **overrides) -> dict:
    """``weights`` None: every weight matrix found in the data directory (measure() records
    which)."""
    return X.make_config(NAME, FULL, QUICK, quick, overrides)


def size_bits(M, b_val: int) -> int:
    """Bits ``M`` (MACKO or CSR) needs with its values stored at ``b_val`` bits."""
    values = M.values
    other = M.nbytes - values.nbytes
    return 8 * other + values.size * b_val


def measure(cfg: dict) -> dict:
    from reference import csr as RC
    from spmvlab import datasets
    from spmvlab.encoders import macko as EM
    names = cfg["weights"]
    if names is None:
        try:
            names = datasets.weights_names()
        except Exception as exc:   # no data directory: uniform points only
            print(f"real weights unavailable ({exc}); measuring uniform matrices only", file=sys.stderr)
            names = []
    cfg = dict(cfg, weights=list(names))
    shape = tuple(cfg["uniform_shape"])
    jobs = [("uniform", d) for d in cfg["densities"]]
    jobs += [(w, 1 - s) for w in names for s in cfg["weight_sparsities"]]
    rows = []
    for source, d in X.progress(jobs, total=len(jobs), desc=NAME):
        if source == "uniform":
            A = datasets.uniform(shape, 1 - d, dtype=np.float16, seed=cfg["seed"])
        else:
            W = datasets.weights(source)
            A = datasets.prune(W, 1 - d, method="magnitude", per_row=True)
        # real float32 weights can lie below float16's normal range: the figure counts bytes
        # of the float16 encoding, so their underflow is accepted (and reported as a warning)
        M = EM.encode(A, delta_bits=cfg["delta_bits"], dtype=np.float16, lossy=True)
        C = RC.encode(A, dtype=np.float16, lossy=True)
        dense_elems = M.n_rows * M.n_cols
        real_d = M.nnz / dense_elems
        for b in VALUE_BITS:
            rows.append(dict(source=source, shape=list(M.shape), density=real_d, value_bits=b,
                             macko=size_bits(M, b) / (dense_elems * b),
                             csr32=size_bits(C, b) / (dense_elems * b),
                             inserted_zeros=int(M.n_inserted)))
    return dict(rows=rows, config=cfg)


def plot(results: dict, fig_path: str):
    from spmvlab.analysis import density as F
    plt = P.pyplot()
    rows = results["rows"]
    b_delta = results["config"]["delta_bits"]
    d = np.linspace(0.005, 1.0, 400)
    # MACKO and CSR (32-bit indices, as in CSR (ours)) in their plotting.METHODS colours and
    # markers; the other formats are no method of ours: colours no method has
    mk, ms = P.METHODS["macko"][1:], P.METHODS["csr_vector"][1:]
    fig, axes = plt.subplots(1, len(VALUE_BITS), figsize=(P.PAGE_WIDTH, 3.4), sharey=True)
    for ax, b in zip(axes, VALUE_BITS):
        ax.plot(d, F.dense(d, b), "k-", lw=1, label="dense")
        for q, ls in ((8, (0, (6, 3))), (4, (0, (2, 2)))):     # dense quantized to q bits
            if q < b:
                ax.plot(d, F.dense(d, q) * q / b, color="gray", ls=ls, lw=1.1,
                        label=f"dense, {q}-bit values (Q{q})")
        ax.plot(d, F.csr32(d, b), color=ms[0], lw=1.2, label="CSR32")
        # CSR16 and Tiled-CSL differ by Tiled-CSL's per-tile offsets only (< 0.001 here):
        # CSR16 as a wide pale band, Tiled-CSL dashed on top of it
        ax.plot(d, F.csr16(d, b), color="gold", lw=4, alpha=0.6, zorder=1.5,
                label="CSR16 (wide)")
        ax.plot(d, F.tiled_csl(d, b), color="tab:pink", ls="--", lw=1.1, zorder=2.5,
                label="Tiled-CSL (on CSR16)")
        ax.plot(d, F.bitmask(d, b), color="teal", lw=1.2, label="bitmask")
        ax.plot(d, F.macko_expected(d, b_delta, b), color=mk[0], lw=1.2,
                label=f"MACKO expected ({b_delta}-bit deltas)")
        ax.fill_between(d, F.macko_best(d, b_delta, b), F.macko_worst(d, b_delta, b),
                        color=mk[0], alpha=0.15, lw=0, label="MACKO best..worst")
        uni = [r for r in rows if r["value_bits"] == b and r["source"] == "uniform"]
        real = [r for r in rows if r["value_bits"] == b and r["source"] != "uniform"]
        ax.plot([r["density"] for r in uni], [r["macko"] for r in uni], mk[1], color=mk[0],
                mfc="none", ms=4.5, mew=0.9, label="MACKO measured (uniform)")
        ax.plot([r["density"] for r in real], [r["macko"] for r in real], "x", color="#8c3d00",
                ms=3.5, mew=0.9, label="MACKO measured (real weights)")
        ax.plot([r["density"] for r in uni], [r["csr32"] for r in uni], ms[1], color=ms[0],
                mfc="none", ms=3.5, mew=0.9, label="CSR32 measured (uniform)")
        ax.set(xlabel="density d = nnz / (rows x cols)", title=f"{b}-bit values", xlim=(0, 1),
               ylim=(0, 2.0))
        ax.set_xticks([0, 0.25, 0.5, 0.75, 1], ["0", "0.25", "0.5", "0.75", "1"])
    axes[0].set_ylabel("effective density (size / dense size)")
    P.legend_below(fig, axes[:1], ncol=4, room=0.18)          # the first panel has every line
    return P.savefig(fig, fig_path, tight=False)


def report(results: dict):
    cols = [("source", "source", ""), ("value_bits", "bits", ""), ("density", "d", ".3f"),
            ("macko", "MACKO effd", ".4f"), ("csr32", "CSR32 effd", ".4f")]
    P.print_table(results["rows"], cols, where=lambda r: r["value_bits"] == 16)


def _solve(f, level: float) -> float:
    """The density in [0, 1] at which the increasing function ``f`` equals ``level``
    (bisection to 1e-9)."""
    lo, hi = 0.0, 1.0
    while hi - lo > 1e-9:
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if f(mid) < level else (lo, mid)
    return (lo + hi) / 2


def crossings(results: dict) -> list[dict]:
    """Where MACKO (the results' delta width) is as large as dense, for each value width:
    ``equals_dense_at`` from eq. 10 (expected case), ``worst_equals_dense_at`` from eq. 9
    (worst case)."""
    from spmvlab.analysis.density import macko_expected, macko_worst
    b = results["config"]["delta_bits"]
    return [dict(value_bits=b_val, delta_bits=b,
                 equals_dense_at=_solve(lambda d: macko_expected(d, b, b_val), 1.0),
                 worst_equals_dense_at=_solve(lambda d: macko_worst(d, b, b_val), 1.0))
            for b_val in VALUE_BITS]


def quantized(results: dict) -> list[dict]:
    """For 16-bit values and dense matrices quantized to ``quant_bits`` = 8 and 4 (the
    paper's Q8 / Q4, effective density quant_bits / 16): the sparsity at which MACKO (eq. 10,
    the results' delta width) and CSR32 (eq. 4) are as small (``macko_sparsity``,
    ``csr32_sparsity``)."""
    from spmvlab.analysis.density import csr32, macko_expected
    b = results["config"]["delta_bits"]
    return [dict(quant_bits=q, delta_bits=b,
                 macko_sparsity=1 - _solve(lambda d: macko_expected(d, b, 16), q / 16),
                 csr32_sparsity=1 - _solve(lambda d: csr32(d, 16), q / 16))
            for q in (8, 4)]


def with_formula(results: dict) -> list[dict]:
    """The rows with ``expected`` = eq. 10 at the row's density and value width."""
    from spmvlab.analysis.density import macko_expected
    b = results["config"]["delta_bits"]
    return [dict(r, expected=float(macko_expected(r["density"], b, r["value_bits"])))
            for r in results["rows"]]


if __name__ == "__main__":
    sys.exit(X.main(sys.modules[__name__]))
