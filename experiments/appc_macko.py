"""MACKO paper, appendix C: effective density of MACKO with delta_bits 1, 2, 4 and 8 vs
sparsity (16-bit values): the expected-case formula (``reference.density``, eq. 10) as
curves, real encodings of uniform random 2048 x 2048 masks (every stored byte counted) as
points, measured on the CPU.

    python experiments/appc_macko.py [--quick] [--plot-only]
"""
from __future__ import annotations

import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [p for p in (HERE, os.path.dirname(HERE)) if p not in sys.path]

from spmvlab import experiment as X  # noqa: E402

NAME = "appc_macko"
DELTA_BITS = (1, 2, 4, 8)


def measure(args) -> dict:
    from reference.density import macko_expected, measured_effective_density
    from spmvlab import datasets
    from spmvlab.encoders import macko as EM
    n = 512 if args.quick else 2048
    sparsities = [0.1, 0.3, 0.5, 0.7, 0.9] if args.quick else \
        [0.0, 0.05, 0.1, 0.15, 0.2, 0.3, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.98]
    cfg = dict(shape=[n, n], sparsities=sparsities, delta_bits=list(DELTA_BITS), seed=0,
               value_dtype="float16")
    rows = []
    for s in X.progress(sparsities, total=len(sparsities), desc=NAME):
        A = datasets.uniform((n, n), s, dtype=np.float32, seed=cfg["seed"])
        for b in DELTA_BITS:
            M = EM.encode(A, delta_bits=b, dtype=np.float16)
            rows.append(dict(sparsity=s, delta_bits=b, measured=measured_effective_density(M),
                             expected=float(macko_expected(1 - s, b, 16)),
                             inserted_zeros=int(M.n_inserted), nnz=int(M.nnz)))
    return dict(rows=rows, config=cfg)


def plot(results: dict, fig_path: str):
    from reference.density import macko_expected
    plt = X.pyplot()
    s = np.linspace(0.0, 0.99, 300)
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    for b, color in zip(DELTA_BITS, ("tab:orange", "tab:green", "tab:red", "tab:blue")):
        ax.plot(100 * s, macko_expected(1 - s, b, 16), color=color, label=f"{b}-bit deltas (expected)")
        pts = [r for r in results["rows"] if r["delta_bits"] == b]
        ax.plot([100 * r["sparsity"] for r in pts], [r["measured"] for r in pts], "o", color=color,
                mfc="none", ms=5)
    ax.axhline(1.0, color="black", lw=1, label="dense")
    ax.set(xlabel="sparsity (%)", ylabel="effective density (16-bit values)", ylim=(0, 1.6),
           title="MACKO delta width: formula (lines) vs encodings (circles)")
    ax.legend()
    fig.tight_layout()
    return X.savefig(fig, fig_path)


def report(results: dict):
    cols = [("sparsity", "sparsity", ".2f"), ("delta_bits", "bits", ""),
            ("expected", "expected", ".4f"), ("measured", "measured", ".4f")]
    print(X.format_table(results["rows"], cols))


if __name__ == "__main__":
    sys.exit(X.main(NAME, description=__doc__, measure=measure, plot=plot, report=report,
                    needs_gpu=False))
