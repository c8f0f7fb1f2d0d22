"""MACKO paper, Fig. 7 (and Figs. 5/6/8/9 with --shape): SpMV speedup over cuBLAS GEMV vs
sparsity, fp16 values, cold L2.

Methods: MACKO (numba kernel, delta_bits=4, fp32 accumulation), cuSPARSE CSR (torch, fp16),
numba CSR-vector, and the dense cuBLAS GEMV every speedup is relative to. Matrices are
``datasets.uniform`` masks (seeded) with Gaussian values; every method is checked on the GPU
against the float64 product before it is timed (median of ``reps`` calls, L2 read-flushed).

With ``public_macko`` (default on) the MACKO authors' own CUDA kernel and benchmark run in the
same process at every point (``spmvlab.anchors``; export ``SPMVLAB_PUBLIC_MACKO=<checkout>``,
else its rows record the error): its own matrix, its own cuBLAS baseline, write-flushed, mean
of ``reps`` calls; the plot shows its speedup over its own cuBLAS. Each of its runs builds
its own matrix on the CPU, slowly at the large shapes, so it runs at ``public_sparsities``
only (default 30/50/70/90 %, the sparsities the tables quote; None: every sparsity, as the
saved H200 results of 4096 x 11008 have it).

    python experiments/fig7_macko.py                    # 4096 x 11008 (paper Fig. 7)
    python experiments/fig7_macko.py --shape 12288 12288  # Figs. 5/9; 4096 4096: Fig. 6; 11008 4096: Fig. 8

Other shapes are saved as fig7_macko_<R>x<C>.
"""
from __future__ import annotations

import sys

from spmvlab import experiment as X
from spmvlab import plotting as P

NAME = "fig7_macko"
NEEDS_GPU = True
DEFAULT_SHAPE = [4096, 11008]
PAPER_FIGURE = {(4096, 11008): "Fig. 7", (12288, 12288): "Figs. 5 and 9", (4096, 4096): "Fig. 6",
                (11008, 4096): "Fig. 8"}
#: the paper's shapes, one results file each (python -m spmvlab.figures runs them all)
RUNS = [{}] + [{"shape": list(s)} for s in PAPER_FIGURE if list(s) != DEFAULT_SHAPE]
METHODS = ["cublas", "macko", "cusparse", "csr_vector"]
FULL = dict(shape=DEFAULT_SHAPE, sparsities=[0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95],
            dtype="float16", methods=METHODS, reps=100, warmup=10, seed=0, cold=True,
            public_macko=True, public_sparsities=[0.3, 0.5, 0.7, 0.9])
QUICK = dict(sparsities=[0.5, 0.9], reps=30)


def config(quick: bool = False, **overrides) -> dict:
    return X.make_config(NAME, FULL, QUICK, quick, overrides)


def cli(p):
    p.add_argument("--shape", type=int, nargs=2, metavar=("ROWS", "COLS"), help="matrix shape")
    p.add_argument("--public-sparsities", type=X.floats,
                   help="the sparsities at which the public MACKO benchmark runs")


def results_name(cfg: dict) -> str:
    r, c = cfg["shape"]
    return NAME if [r, c] == DEFAULT_SHAPE else f"{NAME}_{r}x{c}"


def measure(cfg: dict) -> dict:
    """One matrix per sparsity of ``cfg["shape"]``; every method checked, then timed."""
    from spmvlab import anchors, methods, runinfo
    cc = tuple(runinfo.device_info().get("compute_capability") or (9, 0))
    rows = []
    jobs = [dict(shape=list(cfg["shape"]), sparsity=s, dtype=cfg["dtype"], seed=cfg["seed"],
                 encode=["macko", "csr"])
            for s in cfg["sparsities"]]
    public = cfg.get("public_sparsities") or cfg["sparsities"]
    built = X.problems(jobs, dense="cublas" in cfg["methods"])   # the next ones built meanwhile
    for job, p in X.progress(built, total=len(jobs), desc="sparsity"):
        sparsity = job["sparsity"]
        rows += methods.measure_problem(p, cfg["methods"], reps=cfg["reps"], warmup=cfg["warmup"],
                                        cold=cfg["cold"], extra=dict(sparsity=sparsity))
        del p
        if cfg.get("public_macko") and sparsity in public:
            rows += [dict(r, sparsity=sparsity) for r in
                     anchors.public_macko_rows(cfg["shape"], sparsity, reps=cfg["reps"], cc=cc)]
    for r in rows:
        if r["method"] == "public_macko" and "error" in r:
            print(f"public MACKO kernel not measured: {r['error']}", file=sys.stderr)
            break
    return dict(rows=rows)


def plot(results: dict, fig_path: str) -> list[str]:
    plt = P.pyplot()
    cfg = results["config"]
    rows = [r for r in results["rows"] if "median_us" in r]
    fig, ax = plt.subplots(figsize=(P.COLUMN_WIDTH, 3.6))
    # the authors' kernel first and hollow, so a marker of ours on the same point stays visible
    P.method_lines(ax, results["rows"], "speedup_vs_own_cublas", methods=["public_macko"],
                   style={"public_macko": dict(ls=":", markerfacecolor="none", markersize=6)},
                   names=lambda m: "MACKO, authors' kernel\n(vs their cuBLAS; write flush, mean)")
    P.method_lines(ax, rows, "speedup_vs_cublas", methods=[m for m in cfg["methods"] if m != "cublas"])
    dense = sorted(r["median_us"] for r in rows if r["method"] == "cublas")
    t_dense = dense[len(dense) // 2] if dense else float("nan")
    P.speedup_axis(ax, base_label=f"cuBLAS GEMV ({t_dense:.0f} us)", log2=True,
                   ylabel="speedup over cuBLAS GEMV",
                   title=f"SpMV {cfg['shape'][0]}x{cfg['shape'][1]} fp16, cold L2, "
                         f"{P.device_name(results)}", legend=False)
    handles, names = ax.get_legend_handles_labels()
    order = sorted(range(len(names)), key=lambda i: ("authors" in names[i], "cuBLAS" in names[i]))
    ax.legend([handles[i] for i in order], [names[i] for i in order], fontsize=6.5, ncol=2,
              loc="upper center", bbox_to_anchor=(0.45, -0.2), frameon=False)   # below: hides nothing
    return P.savefig(fig, fig_path)


def csr_crossover(results: dict) -> list[dict]:
    """The sparsity from which CSR-vector is as fast as MACKO on this shape (one row with
    ``shape`` and ``sparsity``; none when it never is in the measured range)."""
    from spmvlab.analysis.crossover import crossover
    c = crossover(results["rows"])
    return [dict(c, shape=results["config"]["shape"])] if c["kind"] == "crossing" else []


def report(results: dict):
    P.print_table(results["rows"], P.TIMING_COLUMNS)
    public = [r for r in results["rows"] if r["method"].startswith("public_") and "mean_us" in r]
    if public:
        print("public MACKO benchmark (its own matrix and cuBLAS; write-flush, mean):")
        print(P.format_table(public, [("sparsity", "sparsity", ".2f"), ("method", "method", ""),
                                      ("mean_us", "mean us", ".1f"),
                                      ("speedup_vs_own_cublas", "x its cuBLAS", ".2f"),
                                      ("check_passed", "ok", "")]))


if __name__ == "__main__":
    sys.exit(X.main(sys.modules[__name__]))
