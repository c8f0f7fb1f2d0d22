"""MACKO paper, Fig. 4: SpMV speedup over cuBLAS GEMV for the 31 LLM layer shapes of the
paper's appendix D, at each sparsity (fp16, cold L2, uniform random masks).

    python experiments/fig4_macko.py [--quick] [--plot-only] [--sparsities 0.5,0.7]
                                     [--shapes 4096x4096,...] [--merge]

The full sweep (31 shapes x the paper's 11 sparsities, 0-95 %) takes longer than one GPU
session: measure it in parts with ``--sparsities``/``--shapes`` and ``--merge`` (each part's
git hash, device and date are kept in the results' ``parts``, each row's ``part`` names it).
"""
from __future__ import annotations

import sys
import time

from spmvlab import experiment as X
from spmvlab import plotting as P

NAME = "fig4_macko"
NEEDS_GPU = True
METHODS = ["cublas", "macko", "cusparse"]
#: the H100 run (results/h100/fig4_macko.json, 50 % only) timed no cuSPARSE
H100_METHODS = ["cublas", "macko"]
SPLIT_KEYS = ("shapes", "sparsities")
#: a cluster sweep's cells (``--cluster``), in the order of measure's loops
CELL_KEYS = ("sparsities", "shapes")
#: eight shapes a cell: its problems are built ahead in processes while the GPU times
#: the current one, as in a serial run (a cell of one shape would wait for each build)
CELL_CHUNKS = {"shapes": 8}
#: settings that do not change what a row measures (parts may differ in them)
UNCOMPARED_KEYS = ("budget_s",)
#: the paper's sparsities (Sec. 5.1: 0 % to 95 %)
SPARSITIES = [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95]


def config(quick: bool = False, **overrides) -> dict:
    from spmvlab import datasets
    shapes = [list(s) for s in datasets.LLM_SHAPES]
    full = dict(shapes=shapes, sparsities=SPARSITIES, dtype="float16", methods=METHODS,
                reps=40, warmup=5, seed=0, budget_s=None)
    return X.make_config(NAME, full, dict(shapes=shapes[:4], sparsities=[0.5], reps=20), quick,
                         overrides)


def cli(p):
    p.add_argument("--sparsities", type=X.floats, help="comma-separated fractions")
    p.add_argument("--shapes", type=X.shapes, help="comma-separated RxC")
    p.add_argument("--budget-s", type=float,
                   help="seconds after which no new (shape, sparsity) is begun; the run saves what "
                        "it measured and lists the rest under 'not_measured' (measure them later "
                        "with --merge)")


def measure(cfg: dict) -> dict:
    from spmvlab import methods
    rows = []
    jobs = [dict(shape=list(sh), sparsity=s, dtype=cfg["dtype"], seed=cfg["seed"], encode=["macko"])
            for s in cfg["sparsities"] for sh in cfg["shapes"]]
    budget = cfg.get("budget_s")
    t0 = time.perf_counter()
    built = X.problems(jobs, dense="cublas" in cfg["methods"])   # the next ones built meanwhile
    done = 0
    for job, p in X.progress(built, total=len(jobs), desc=NAME):
        rows += methods.measure_problem(p, cfg["methods"], reps=cfg["reps"], warmup=cfg["warmup"],
                                        extra=dict(sparsity=job["sparsity"]))
        del p
        done += 1
        X.checkpoint(dict(rows=rows))            # a run stopped by a time limit keeps these
        if budget is not None and time.perf_counter() - t0 > budget:
            break
    built.close()
    if done < len(jobs):
        print(f"{NAME}: time budget of {budget:g} s used up; {len(jobs) - done} of {len(jobs)} "
              "(shape, sparsity) pairs not measured (measure them later with --merge)",
              file=sys.stderr)
    return dict(rows=rows)


def not_measured(results: dict) -> list[dict]:
    """The (shape, sparsity) pairs of the config without a MACKO row (a run cut by its time
    budget, or parts still to come)."""
    have = {(tuple(r["shape"]), r["sparsity"]) for r in results["rows"] if r["method"] == "macko"}
    return [dict(shape=list(sh), sparsity=s) for s in results["config"]["sparsities"]
            for sh in results["config"]["shapes"] if (tuple(sh), s) not in have]


def plot(results: dict, fig_path: str) -> list[str]:
    """Bars per shape for up to 4 sparsities; beyond that a shapes x sparsities map of the
    speedup over cuBLAS (log2 colours, 1x white, each cell labelled; blank: not measured).
    The cuSPARSE times are in the rows and the report, not drawn."""
    plt = P.pyplot()
    cfg = results["config"]
    rows = [r for r in results["rows"] if r["method"] == "macko" and "speedup_vs_cublas" in r]
    labels = [f"{r}x{c}" for r, c in cfg["shapes"]]
    title = f"{len(labels)} LLM layer shapes, fp16, cold L2, {P.device_name(results)}"
    if len(cfg["sparsities"]) > 4:
        return _heatmap(plt, rows, cfg, labels, title, fig_path)
    fig, ax = plt.subplots(figsize=(P.PAGE_WIDTH, 2.9))
    n = len(cfg["sparsities"])
    width = 0.8 / max(1, n)
    shades = plt.get_cmap("Oranges")                # one sparsity: MACKO's colour; more: shades
    for i, s in enumerate(cfg["sparsities"]):
        by = {tuple(r["shape"]): r["speedup_vs_cublas"] for r in rows if r["sparsity"] == s}
        ks = [k for k, sh in enumerate(cfg["shapes"]) if tuple(sh) in by]
        color = P.METHODS["macko"][1] if n == 1 else shades(0.35 + 0.6 * i / (n - 1))
        P.ratio_bars(ax, [k + (i - (n - 1) / 2) * width for k in ks],
                     [by[tuple(cfg["shapes"][k])] for k in ks], width, color=color,
                     label=f"MACKO, {100 * s:.0f} % sparse")
    P.ratio_axis(ax, [r["speedup_vs_cublas"] for r in rows], line_label="cuBLAS GEMV")
    P.ratio_ticks(ax)
    ax.set_xticks(range(len(labels)), labels, rotation=90, fontsize=6)
    ax.set_xlim(-0.6, len(labels) - 0.4)
    ax.grid(axis="x", visible=False)
    ax.set(ylabel="speedup over cuBLAS GEMV", title=title)
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)   # beside: hides nothing
    return P.savefig(fig, fig_path)


def _heatmap(plt, rows, cfg, labels, title, fig_path):
    import numpy as np
    from matplotlib.colors import TwoSlopeNorm
    sp = cfg["sparsities"]
    grid = np.full((len(labels), len(sp)), np.nan)
    index = {tuple(sh): i for i, sh in enumerate(cfg["shapes"])}
    for r in rows:
        if tuple(r["shape"]) in index and r["sparsity"] in sp:
            grid[index[tuple(r["shape"])], sp.index(r["sparsity"])] = r["speedup_vs_cublas"]
    fig, ax = plt.subplots(figsize=(P.PAGE_WIDTH, 1.0 + 0.15 * len(labels)))
    logs = np.log2(grid)
    bound = max(0.5, float(np.nanmax(np.abs(logs)))) if np.isfinite(logs).any() else 1.0
    im = ax.imshow(logs, cmap="RdBu", norm=TwoSlopeNorm(0.0, -bound, bound), aspect="auto")
    for (i, j), v in np.ndenumerate(grid):
        if np.isfinite(v):
            ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=6.5,
                    color="white" if abs(np.log2(v)) > 0.6 * bound else "black")
    ax.set_xticks(range(len(sp)), [f"{100 * s:g}" for s in sp])
    ax.set_yticks(range(len(labels)), labels, fontsize=6.5)
    ax.set(xlabel="sparsity (%)", title=title)
    ax.grid(False)
    bar = fig.colorbar(im, ax=ax, fraction=0.03, pad=0.02)
    ticks = [t for t in (-3, -2, -1, 0, 1, 2, 3) if -bound <= t <= bound]
    bar.set_ticks(ticks, labels=[f"{2.0 ** t:g}×" for t in ticks])
    bar.ax.minorticks_off()
    bar.set_label("MACKO speedup over cuBLAS GEMV (blank: not measured)")
    return P.savefig(fig, fig_path)


def report(results: dict):
    cols = [("shape", "shape", ""), ("sparsity", "sparsity", ".2f"), ("median_us", "MACKO us", ".1f"),
            ("tb_s", "TB/s", ".2f"), ("speedup_vs_cublas", "x cuBLAS", ".2f"),
            ("speedup_vs_cusparse", "x cuSPARSE", ".2f")]
    P.print_table(results["rows"], cols, where=lambda r: r["method"] == "macko")
    missing = not_measured(results)
    if missing:
        print(f"not measured yet: {len(missing)} (shape, sparsity) pairs, e.g. "
              + ", ".join(f"{r['shape'][0]}x{r['shape'][1]} at {r['sparsity']:g}" for r in missing[:4]))


if __name__ == "__main__":
    sys.exit(X.main(sys.modules[__name__]))
