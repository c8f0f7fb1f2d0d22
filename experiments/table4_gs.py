"""GeneralSparse paper, Table 4: the average speedup of GeneralSparse (``generalsparse_best``)
over each baseline on the weight matrices of Fig. 14, per pruning method, sparsity (70/90 %)
and N (8, 32; the paper's "col"): cuSPARSE SpMM (the paper's baselines Sputnik, SparTA and
Flash-LLM are not run here; our MACKO and CSR SpMM and cuBLAS GEMM fp16 take their place).
Averages are arithmetic means over the six shapes (the report also gives geometric means).

The measurement is Fig. 14's (``fig14_gs.measure``) at N = 8 and 32. With
``--from-fig14`` (the default, ``from_fig14=True``) the rows are taken from this device's
saved ``fig14_gs`` results when they cover the configuration (no GPU time spent twice),
else measured.

    python experiments/table4_gs.py [--quick] [--measure-anyway]

Runtime: seconds when a device's saved fig14_gs results cover the configuration (pass
``--shapes`` for the shapes measured so far); that works on any machine, no GPU needed (the
results go to that device's folder with the meta of the run that measured the rows,
``--device`` picks one); else like fig14_gs restricted to N = 8, 32 on a GPU (split it the
same way).
"""
from __future__ import annotations

import sys

from experiments import _gs
from experiments import fig14_gs
from spmvlab import experiment as X
from spmvlab import plotting as P

NAME = "table4_gs"
NEEDS_GPU = True
SPLIT_KEYS = fig14_gs.SPLIT_KEYS
DERIVED_FROM = "fig14_gs"
#: "generalsparse": the method's default strategy (the cost model's pick), against which the
#: tuned kernel's speedup is what a search buys (issue 29: at most 1.2 on every cell, ``max``)
BASES = ["cusparse", "cublas", "macko", "csr_vector", "generalsparse"]


config = _gs.config_for(NAME, dict(fig14_gs.FULL, ns=[8, 32], from_fig14=True), dict(fig14_gs.QUICK))
cli = _gs.cli_for("shapes", "prunings", "sparsities", "ns", "methods",
                  derived_from=DERIVED_FROM)


def _covered(rows, cfg) -> list | None:
    if not rows:
        return None
    want = {(str(tuple(sh)), pr, s, n) for sh in cfg["shapes"] for pr in cfg["prunings"]
            for s in cfg["sparsities"] for n in cfg["ns"]}
    have = {(str(tuple(r["shape"])), r.get("pruning"), r.get("sparsity"), r.get("n")) for r in rows
            if r.get("method") == _gs.GS_BEST and r.get("median_us")}
    if not want <= have:
        return None
    keep = [r for r in rows if (str(tuple(r["shape"])), r.get("pruning"), r.get("sparsity"), r.get("n")) in want]
    return [dict(r, source="fig14_gs") for r in keep]


def derive(cfg: dict, device: str | None = None) -> dict | None:
    """The rows of ``device``'s saved fig14_gs results (default: this machine's) when they
    cover ``cfg``, else None; no GPU needed (``experiment.derive_run``)."""
    if not cfg.get("from_fig14", True):      # --measure-anyway
        return None
    rows, saved = _gs.saved_rows(DERIVED_FROM, device)
    got = _covered(rows, cfg)
    return None if got is None else dict(rows=got, source=dict(experiment=DERIVED_FROM,
                                                                meta=saved["meta"]))


measure = _gs.derived_measure(derive, "from_fig14", _gs.measure_weights, NAME)


def table(results: dict) -> list:
    """One row per (base, pruning, sparsity, N): mean, geometric-mean and largest speedup
    (``max``) over the shapes where both results passed the correctness check (``shapes``;
    None when none did), and the mean over every timed shape (``mean_timed``,
    ``timed_shapes``: torch's fp16 cuSPARSE often misses the error bound, and its time is
    still a time). Bases without rows in the results (older fig14_gs runs lack
    ``generalsparse``) give no rows."""
    cfg = results["config"]
    rows = results["rows"]
    keys = ("shape", "pruning", "sparsity", "n")

    def pick(sp, pr, s, n):
        return [v for k, v in sp if k[1:] == (pr, str(s), str(n))]

    out = []
    for base in BASES:
        ok = _gs.speedup(rows, _gs.GS_BEST, base, keys)
        timed = _gs.speedup(rows, _gs.GS_BEST, base, keys, checked=False)
        for pr in cfg["prunings"]:
            for s in cfg["sparsities"]:
                for n in cfg["ns"]:
                    xs, ts = pick(ok, pr, s, n), pick(timed, pr, s, n)
                    if ts:
                        out.append(dict(base=base, pruning=pr, sparsity=s, n=n, shapes=len(xs),
                                        mean=sum(xs) / len(xs) if xs else None,
                                        geomean=_gs.geomean(xs) if xs else None,
                                        max=max(xs) if xs else None,
                                        timed_shapes=len(ts), mean_timed=sum(ts) / len(ts)))
    return out


def plot(results: dict, fig_path: str) -> list[str]:
    """The table as a heat map: rows base x pruning (the base on the left, the pruning on the
    right), columns N x sparsity, cells the mean speedup."""
    import numpy as np
    plt = P.pyplot()
    cfg = results["config"]
    t = table(results)
    prs = list(cfg["prunings"])
    rlab = [(b, pr) for b in BASES for pr in prs]
    clab = [(n, s) for n in cfg["ns"] for s in cfg["sparsities"]]
    grid = np.full((len(rlab), len(clab)), np.nan)
    unchecked = np.zeros(grid.shape, dtype=bool)   # the baseline's results all missed the bound
    for r in t:
        ij = rlab.index((r["base"], r["pruning"])), clab.index((r["n"], r["sparsity"]))
        grid[ij] = r["mean"] if r["mean"] is not None else r["mean_timed"]
        unchecked[ij] = r["mean"] is None
    fig, ax = plt.subplots(figsize=(P.COLUMN_WIDTH, 1.3 + 0.27 * len(rlab)))
    ax.imshow(np.log2(grid), cmap="RdBu", vmin=-4, vmax=4, aspect="auto")
    for (i, j), v in np.ndenumerate(grid):
        text = "-" if not np.isfinite(v) else f"({v:.2f}×)" if unchecked[i, j] else f"{v:.2f}×"
        dark = np.isfinite(v) and abs(np.log2(v)) > 2.5           # deep colours: white text
        ax.text(j, i, text, ha="center", va="center", fontsize=7, color="white" if dark else "black")
    for k in range(1, len(BASES)):                                 # the bases apart
        ax.axhline(k * len(prs) - 0.5, color="white", lw=2)
    ax.set_xticks(range(len(clab)), [f"N = {n}\n{100 * s:.0f} %" for n, s in clab], fontsize=7)
    ax.xaxis.tick_top()
    ax.set_yticks([k * len(prs) + (len(prs) - 1) / 2 for k in range(len(BASES))],
                  [f"over\n{P.label(b)}" for b in BASES], fontsize=7)
    ax.tick_params(axis="y", length=0)
    right = ax.secondary_yaxis("right")
    right.set_yticks(range(len(rlab)), [pr[:4] if pr == "random" else pr[:3] for _, pr in rlab],
                     fontsize=6.5)
    right.tick_params(length=0)
    ax.grid(False)
    fig.suptitle("GeneralSparse paper Table 4: mean speedup\nof GeneralSparse tuned over "
                 f"{len(cfg['shapes'])} shapes,\nfp16, {P.device_name(results)} (paper: A100)")
    fig.text(0.5, 0.01, "(in parentheses: every result of the baseline outside the\nerror bound, "
             "its times kept); mag/rand: magnitude/random pruning", ha="center", va="bottom",
             fontsize=6.5)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    return P.savefig(fig, fig_path, tight=False)


def report(results: dict):
    P.print_table(table(results), [("base", "over", ""), ("pruning", "pruning", ""),
                                   ("sparsity", "sparsity", ".2f"), ("n", "col", ""),
                                   ("shapes", "shapes", ""), ("mean", "mean x", ".2f"),
                                   ("geomean", "geomean x", ".2f"), ("max", "max x", ".2f"),
                                   ("timed_shapes", "timed", ""),
                                   ("mean_timed", "mean x (timed)", ".2f")])


if __name__ == "__main__":
    sys.exit(X.main(sys.modules[__name__]))
