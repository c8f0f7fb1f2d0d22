"""GeneralSparse paper, Fig. 15: SpMM on SuiteSparse matrices (fp32, N = 8, 32, 64, cold L2,
median): TFLOP/s against the number of nonzeros for the tuned GeneralSparse kernel
(``generalsparse_best``), cuSPARSE SpMM (CuPy) and our CSR SpMM (``csr_vector``), all in the
same run. The paper used 1168 matrices of the collection on an A100; here the 29 matrices of
``../shared/data/suitesparse`` (11k to 2.7M nonzeros).

    python experiments/fig15_gs.py [--quick] [--ns 8] [--matrices HB/bcsstk13,...] [--merge]

Runtime on an H200: about 3 min per N for the 29 matrices (the search compiles up to six
kernels per matrix, ~0.5 s each); run ``--ns 8``, ``--ns 32``, ``--ns 64`` with ``--merge``.
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
MARK = {_gs.GS_BEST: dict(color="tab:red", marker="o"), "cusparse": dict(color="tab:blue", marker="s"),
        "csr_vector": dict(color="tab:green", marker="^")}
FULL = dict(matrices=_gs.SUITESPARSE, ns=[8, 32, 64], dtype="float32", methods=METHODS, reps=20,
            warmup=3, search_top=4, proxy_nnz=2_000_000, seed=0)
QUICK = dict(matrices=["HB/bcsstk13", "DIMACS10/cs4", "SNAP/ego-Facebook"], ns=[8], reps=5)


config = _gs.config_for(NAME, FULL, QUICK)


cli = _gs.cli_for("matrices", "ns")


def measure(cfg: dict) -> dict:
    return dict(rows=_gs.measure_suitesparse(cfg, NAME))


def plot(results: dict, fig_path: str) -> list[str]:
    plt = P.pyplot()
    cfg = results["config"]
    rows = [r for r in results["rows"] if r.get("tflops") and r.get("check_passed") is not False]
    fig, axes = plt.subplots(1, len(cfg["ns"]), figsize=(4.3 * len(cfg["ns"]), 3.6), squeeze=False)
    for ax, n in zip(axes[0], cfg["ns"]):
        for m in cfg["methods"]:
            pts = sorted((r["nnz"], r["tflops"]) for r in rows if r["method"] == m and r["n"] == n)
            if pts:
                ax.plot([a for a, _ in pts], [b for _, b in pts], ls="none", ms=4, alpha=0.8,
                        label=m.replace("_", " "), **MARK.get(m, {"marker": "o"}))
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set(title=f"N = {n}", xlabel="nonzeros", ylabel="TFLOP/s (2 nnz N / t)")
        ax.legend(fontsize=7)
    fig.suptitle(f"SpMM fp32 on {len(cfg['matrices'])} SuiteSparse matrices, cold L2, "
                 f"{P.device_name(results)} (paper: 1168 matrices, A100)", fontsize=10)
    return P.savefig(fig, fig_path)


def report(results: dict):
    cols = [("matrix", "matrix", ""), ("n", "N", ""), ("method", "method", ""), ("nnz", "nnz", ""),
            ("median_us", "median us", ".1f"), ("tflops", "TFLOP/s", ".3f"),
            ("speedup_vs_cusparse", "x cuSPARSE", ".2f"), ("check_passed", "ok", "")]
    P.print_table(results["rows"], cols)


if __name__ == "__main__":
    sys.exit(X.main(sys.modules[__name__]))
