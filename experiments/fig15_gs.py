"""GeneralSparse paper, Fig. 15: SpMM on SuiteSparse matrices (fp32, N = 8, 32, 64, cold L2,
median): TFLOP/s against the number of nonzeros for the tuned GeneralSparse kernel
(``generalsparse_best``), cuSPARSE SpMM (CuPy) and our CSR SpMM (``csr_vector``), all in the
same run. The paper used 1168 matrices of the collection on an A100; here the 29 matrices of
``../shared/data/suitesparse`` (11k to 2.7M nonzeros).

    python experiments/fig15_gs.py [--quick] [--ns 8] [--matrices HB/bcsstk13,...] [--merge]

Runtime: minutes per N on an H200 for the 29 matrices, mostly compiling the search's up to
six kernels per matrix (docs/experiments.md lists each saved run's duration); run
``--ns 8``, ``--ns 32``, ``--ns 64`` with ``--merge``.
"""
from __future__ import annotations

import sys

from experiments import _gs
from spmvlab import experiment as X
from spmvlab import plotting as P

NAME = "fig15_gs"
NEEDS_GPU = True
SPLIT_KEYS = ("matrices", "ns")
METHODS = ["cusparse", "csr_vector", _gs.GS_BEST]
FULL = dict(matrices=_gs.SUITESPARSE, ns=[8, 32, 64], dtype="float32", methods=METHODS, reps=20,
            warmup=3, search_top=4, proxy_nnz=2_000_000, seed=0)
QUICK = dict(matrices=["HB/bcsstk13", "DIMACS10/cs4", "SNAP/ego-Facebook"], ns=[8], reps=5)


config = _gs.config_for(NAME, FULL, QUICK)


cli = _gs.cli_for("matrices", "ns")


def measure(cfg: dict) -> dict:
    return dict(rows=_gs.measure_suitesparse(cfg, NAME))


def plot(results: dict, fig_path: str) -> list[str]:
    """A panel per N, all on one TFLOP/s axis and one nonzeros axis (log): a marker per
    matrix and method (half transparent, so that where two meet both show); a hollow marker:
    timed, but its result is outside the error bound."""
    plt = P.pyplot()
    cfg = results["config"]
    rows = [r for r in results["rows"] if r.get("tflops")]
    ns = list(cfg["ns"])
    fig, axes = plt.subplots(1, len(ns), figsize=(P.PAGE_WIDTH if len(ns) > 1 else P.COLUMN_WIDTH,
                                              3.2 if len(ns) > 1 else 4.0),
                             squeeze=False, sharex=True, sharey=True)
    bad = False
    for ax, n in zip(axes[0], ns):
        for z, m in enumerate(cfg["methods"]):
            style = P.line_style(m, linestyle="none", alpha=0.75, zorder=2 + z)
            style["markersize"] = 5.5 if style["marker"] == "*" else 3.5
            pts = [(r["nnz"], r["tflops"], r.get("check_passed") is not False) for r in rows
                   if r["method"] == m and r["n"] == n]
            for ok in (True, False):
                sel = [(a, b) for a, b, o in pts if o == ok]
                if sel:
                    ax.plot([a for a, _ in sel], [b for _, b in sel], **dict(
                        style, label=style["label"] if ok else None,
                        markerfacecolor=None if ok else "white"))
                    bad |= not ok
        ax.set(title=f"N = {n}", xlabel="nonzeros")
    axes[0][0].set_ylabel("TFLOP/s (2 nnz N / t)")
    P.log_axis(axes[0][0], axis="x")
    P.log_axis(axes[0][0])
    wide = len(ns) > 1                                   # else one column wide: text on more lines
    fig.suptitle(f"GeneralSparse paper Fig. 15: SpMM fp32{' ' if wide else chr(10)}on "
                 f"{len(cfg['matrices'])} SuiteSparse matrices, cold L2\n{P.device_name(results)} "
                 "(paper: 1168 matrices, A100)")
    if bad:
        axes[0][0].plot([], [], color="gray", marker="o", markerfacecolor="white", linestyle="none",
                        label="hollow: result outside the error bound")
    P.legend_below(fig, list(axes.flat), ncol=3 + bad if wide else 1, room=0.07 if wide else 0.14)
    return P.savefig(fig, fig_path, tight=False)


def report(results: dict):
    cols = [("matrix", "matrix", ""), ("n", "N", ""), ("method", "method", ""), ("nnz", "nnz", ""),
            ("median_us", "median us", ".1f"), ("tflops", "TFLOP/s", ".3f"),
            ("speedup_vs_cusparse", "x cuSPARSE", ".2f"), ("check_passed", "ok", "")]
    P.print_table(results["rows"], cols)


if __name__ == "__main__":
    sys.exit(X.main(sys.modules[__name__]))
