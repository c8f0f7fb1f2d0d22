"""GeneralSparse paper, Fig. 4: the same kernel's performance fluctuates with the sparsity
pattern. One fixed generated kernel (``generalsparse``: the first strategy of the default
shortlist, a warp-group per row) and our CSR SpMM on weight matrices of the OPT shapes pruned
by magnitude (rows of unequal length) and at random (nearly equal rows), 70 and 90 %, N = 32
(fp16, cold L2, median), with the tuned kernel (``generalsparse_best``) beside them: the
best strategy differs with the pattern. Weights: ``experiments/_gs.py``. The paper ran on an
A100.

    python experiments/fig4_gs.py [--quick] [--shapes 7168x7168] [--merge]

Runtime on an H200: about 3-6 min for the three default shapes (183 s at 573d07c; each
matrix drawn and pruned four times); split with ``--shapes`` and ``--merge``.
"""
from __future__ import annotations

import sys

from experiments import _gs
from spmvlab import experiment as X
from spmvlab import plotting as P

NAME = "fig4_gs"
NEEDS_GPU = True
SPLIT_KEYS = ("shapes", "prunings", "sparsities", "ns")
FULL = dict(shapes=[[7168, 7168], [9216, 9216], [28672, 7168]], prunings=["magnitude", "random"],
            sparsities=[0.7, 0.9], ns=[32], dtype="float16",
            methods=["generalsparse", "csr_vector", _gs.GS_BEST], reps=20, warmup=3, search_top=4,
            proxy_nnz=2_000_000, seed=0)
QUICK = dict(shapes=[[7168, 7168]], sparsities=[0.9], reps=5)


config = _gs.config_for(NAME, FULL, QUICK)


cli = _gs.cli_for("shapes", "sparsities", "ns")


def measure(cfg: dict) -> dict:
    return dict(rows=_gs.measure_weights(cfg, NAME))


def plot(results: dict, fig_path: str) -> list[str]:
    """A panel per method: TFLOP/s per shape and sparsity, magnitude and random side by side."""
    plt = P.pyplot()
    cfg = results["config"]
    rows = [r for r in results["rows"] if r.get("tflops") and r.get("check_passed") is not False]
    groups = [(tuple(sh), s, n) for sh in cfg["shapes"] for s in cfg["sparsities"] for n in cfg["ns"]]
    fig, axes = plt.subplots(1, len(cfg["methods"]), figsize=(4.6 * len(cfg["methods"]), 3.8),
                             squeeze=False, sharey=True)
    width = 0.8 / len(cfg["prunings"])
    for ax, m in zip(axes[0], cfg["methods"]):
        for j, pr in enumerate(cfg["prunings"]):
            by = {(tuple(r["shape"]), r["sparsity"], r["n"]): r["tflops"] for r in rows
                  if r["method"] == m and r["pruning"] == pr}
            ax.bar([i + j * width for i in range(len(groups))], [by.get(g, float("nan")) for g in groups],
                   width, label=pr)
        ax.set_xticks([i + 0.4 - width / 2 for i in range(len(groups))],
                      [f"{a}x{b}\n{100 * s:.0f} % N={n}" for (a, b), s, n in groups], fontsize=6.5)
        ax.set(title=m.replace("_", " "), ylabel="TFLOP/s")
        ax.legend(fontsize=7)
    fig.suptitle(f"One kernel, two pruning methods (fp16), {P.device_name(results)} (paper: A100)",
                 fontsize=10)
    return P.savefig(fig, fig_path)


def summary(results: dict) -> list:
    """One row per method (paper_values' view): its time under random pruning over its time
    under magnitude pruning of the same matrix (shape, sparsity, N), the range and the
    geometric mean; above 1 the magnitude-pruned matrix (uneven rows) is the faster one."""
    t = {(tuple(r["shape"]), r["sparsity"], r["n"], r["method"], r["pruning"]): r["median_us"]
         for r in results["rows"] if r.get("median_us") and r.get("check_passed") is not False}
    out = []
    for m in results["config"]["methods"]:
        xs = [t[k[:4] + ("random",)] / us for k, us in t.items()
              if k[3] == m and k[4] == "magnitude" and k[:4] + ("random",) in t]
        if xs:
            out.append(dict(method=m, matrices=len(xs), low=min(xs), high=max(xs),
                            geomean=_gs.geomean(xs)))
    return out


def report(results: dict):
    P.print_table(summary(results), [("method", "method", ""), ("matrices", "matrices", ""),
                                     ("low", "random/magnitude time min", ".2f"),
                                     ("high", "max", ".2f"), ("geomean", "geomean", ".2f")])
    cols = [("shape", "shape", ""), ("sparsity", "sparsity", ".2f"), ("pruning", "pruning", ""),
            ("n", "N", ""), ("method", "method", ""), ("median_us", "median us", ".1f"),
            ("tflops", "TFLOP/s", ".2f"), ("strategy", "strategy", ""), ("check_passed", "ok", "")]
    P.print_table(results["rows"], cols)


if __name__ == "__main__":
    sys.exit(X.main(sys.modules[__name__]))
