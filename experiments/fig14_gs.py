"""GeneralSparse paper, Fig. 14: SpMM TFLOP/s on the OPT-30B/66B weight shapes, magnitude and
random pruning at 70 and 90 %, N = 8, 32, 64 (fp16 values, fp32 accumulation, cold L2,
median): the tuned GeneralSparse kernel (``generalsparse_best``: the cost model's top
candidates, or the default shortlist while no model is fitted, timed on a <= 2M-nonzero row
sample of the matrix with the compact shortlist anchors (``tune.anchors``), the two
fastest and the fastest anchor again on the whole matrix; the winner run with the code
optimizer) against cuBLAS GEMM fp16
(CuPy), cuSPARSE SpMM (torch, fp16), our MACKO SpMM and CSR SpMM (``csr_vector``), all in
the same run. Weights: ``experiments/_gs.py`` (seeded normal values with the row/column
scales of a real layer). The paper ran on an A100.

    python experiments/fig14_gs.py [--quick] [--shapes 7168x7168] [--prunings random]
                                   [--sparsities 0.7] [--ns 8,32] [--merge]

Runtime on an H200 (573d07c): 2-3 min per (shape, sparsity), both prunings, for the
7168/9216/28672 shapes (28672x7168: 146 s at 90 %, 166 s at 70 %; drawing, pruning, encoding
and planning take most of it); 36864x9216 156 s at 90 % and 216 s at 70 %, 9216x36864
137 s at 90 % and 266 s at 70 % (06dd8fa). Measure the full sweep in parts,
e.g. one (shape, sparsity) per run with ``--merge``.
"""
from __future__ import annotations

import sys

from experiments import _gs
from spmvlab import experiment as X
from spmvlab import plotting as P

NAME = "fig14_gs"
NEEDS_GPU = True
SPLIT_KEYS = ("shapes", "prunings", "sparsities", "ns")
METHODS = ["cublas", "cusparse", "macko", "csr_vector", _gs.GS_BEST]
STYLE = {_gs.GS_BEST: dict(color="tab:red"), "cublas": dict(color="black"),
         "cusparse": dict(color="tab:blue"), "macko": dict(color="tab:orange"),
         "csr_vector": dict(color="tab:green")}
FULL = dict(shapes=_gs.OPT_SHAPES, prunings=["magnitude", "random"], sparsities=[0.7, 0.9],
            ns=[8, 32, 64], dtype="float16", methods=METHODS, reps=20, warmup=3, search_top=4,
            proxy_nnz=2_000_000, seed=0)
QUICK = dict(shapes=[[7168, 7168]], prunings=["random"], sparsities=[0.9], ns=[8], reps=5)


config = _gs.config_for(NAME, FULL, QUICK)


cli = _gs.cli_for("shapes", "prunings", "sparsities", "ns")


def measure(cfg: dict) -> dict:
    return dict(rows=_gs.measure_weights(cfg, NAME))


def plot(results: dict, fig_path: str) -> list[str]:
    """One panel per (pruning, sparsity): TFLOP/s (log) per shape and N, a bar per method."""
    plt = P.pyplot()
    cfg = results["config"]
    rows = [r for r in results["rows"] if r.get("tflops")]
    panels = [(pr, s) for pr in cfg["prunings"] for s in cfg["sparsities"]]
    groups = [(tuple(sh), n) for sh in cfg["shapes"] for n in cfg["ns"]]
    ms = cfg["methods"]
    fig, axes = plt.subplots(len(panels), 1, figsize=(max(8, 0.55 * len(groups) * len(ms) / 2.5),
                                                      3.2 * len(panels)), squeeze=False)
    width = 0.8 / len(ms)
    for ax, (pr, s) in zip(axes[:, 0], panels):
        mine = [r for r in rows if r["pruning"] == pr and r["sparsity"] == s]
        for j, m in enumerate(ms):
            by = {(tuple(r["shape"]), r["n"]): r for r in mine if r["method"] == m}
            xs = [i + j * width for i in range(len(groups))]
            ys = [by[g]["tflops"] if g in by else float("nan") for g in groups]
            bad = [g in by and by[g].get("check_passed") is False for g in groups]
            ax.bar(xs, [y if not b else float("nan") for y, b in zip(ys, bad)], width,
                   label=m.replace("_", " "), **STYLE.get(m, {}))
            if any(bad):     # timed, but its result is outside the error bound: hatched
                ax.bar(xs, [y if b else float("nan") for y, b in zip(ys, bad)], width, fill=False,
                       hatch="////", edgecolor=STYLE.get(m, {}).get("color", "gray"))
        vals = [r["tflops"] for r in mine]
        if vals:
            ax.set_ylim(min(vals) / 1.6, max(vals) * 4)      # room for the legend above the bars
        for i, g in enumerate(groups):
            if not any((tuple(r["shape"]), r["n"]) == g for r in mine):
                ax.text(i + 0.4 - width / 2, 0.5, "not\nmeasured", transform=ax.get_xaxis_transform(),
                        ha="center", va="center", fontsize=6.5, color="gray")
        ax.set_yscale("log")
        ax.set_xticks([i + 0.4 - width / 2 for i in range(len(groups))],
                      [f"{a}x{b}\nN={n}" for (a, b), n in groups], fontsize=6.5)
        ax.set(ylabel="TFLOP/s (2 nnz N / t)", title=f"{pr} pruning, {100 * s:.0f} % sparse")
        ax.legend(fontsize=7, ncol=len(ms), loc="upper left")
    fig.suptitle(f"SpMM fp16 on OPT-30B/66B weight shapes, cold L2, {P.device_name(results)} "
                 "(paper: A100); hatched: timed, result outside the error bound", fontsize=10)
    return P.savefig(fig, fig_path)


def report(results: dict):
    cols = [("shape", "shape", ""), ("pruning", "pruning", ""), ("sparsity", "sparsity", ".2f"),
            ("n", "N", ""), ("method", "method", ""), ("median_us", "median us", ".1f"),
            ("tflops", "TFLOP/s", ".2f"), ("speedup_vs_cusparse", "x cuSPARSE", ".2f"),
            ("speedup_vs_cublas", "x cuBLAS", ".2f"), ("check_passed", "ok", "")]
    P.print_table(results["rows"], cols)


if __name__ == "__main__":
    sys.exit(X.main(sys.modules[__name__]))
