"""EC-SpMV paper, Fig. 5: cumulative distribution of the delta indices (column steps) of
pruned weight matrices at 70 / 80 / 90 % sparsity.

A delta is the step between two consecutive nonzeros of a row, ``col[k] - col[k - 1]`` (the
first nonzero of a row has none: EC-CSR stores it as a base index). Counted exactly over every
row of every matrix of a group:

* ``Llama2-7B``, ``-13B``, ``-70B``: ``datasets.uniform`` at each distinct Llama2 shape of the
  model (``ec_common.LLAMA2_SHAPES``, each shape once), seeded;
* ``mpnet``: the real all-mpnet-base-v2 weights of the data directory, pruned per row by
  magnitude (the data README: their gaps match a uniform mask's).

The paper prunes Llama2 with SparseGPT and reads thresholds off its plot: most deltas below 32
at 70 %, 64 at 80 %, 128 at 90 %. Each row holds the CDF at 1 .. ``max_delta`` and the fraction
at or below each of ``thresholds`` (15 and 255 are EC-CSR-4's and -8's largest delta).

    python experiments/fig5_ec.py [--quick] [--plot-only]
"""
from __future__ import annotations

import sys

import numpy as np

from spmvlab import experiment as X
from spmvlab import plotting as P

from experiments import ec_common as EC

NAME = "fig5_ec"
NEEDS_GPU = False
#: the paper's "most deltas below" threshold per sparsity (read from its Sec. 6.2 text)
PAPER_THRESHOLD = {0.7: 32, 0.8: 64, 0.9: 128}
FULL = dict(models=list(EC.LLAMA2_SHAPES), sparsities=[0.7, 0.8, 0.9], weights=None,
            thresholds=[8, 15, 16, 32, 64, 128, 255, 256], max_delta=512, seed=0,
            shape_scale=1)
QUICK = dict(models=["7B"], sparsities=[0.7, 0.9], shape_scale=8)


def config(quick: bool = False, **overrides) -> dict:
    """``weights`` None: every weight matrix found (measure() records which); ``shape_scale``
    divides every Llama2 shape (1: the real shapes; --quick uses 8)."""
    return X.make_config(NAME, FULL, QUICK, quick, overrides)


def row_deltas(A) -> np.ndarray:
    """The column steps between consecutive nonzeros of each row of CSR ``A`` (int64)."""
    idx = A.indices.astype(np.int64)
    d = np.diff(idx)
    starts = A.indptr[1:-1].astype(np.int64)             # where a new row begins in ``idx``
    keep = np.ones(d.size, dtype=bool)
    keep[starts[(starts > 0) & (starts <= d.size)] - 1] = False
    return d[keep]


def _row(group, source, sparsity, hist, cfg, matrices):
    n = int(hist.sum())
    cdf = np.cumsum(hist[1:cfg["max_delta"] + 1]) / max(n, 1)
    steps = np.arange(hist.size)
    return dict(group=group, source=source, sparsity=sparsity, matrices=matrices, n_deltas=n,
                frac_le={str(t): float(hist[1:t + 1].sum() / max(n, 1)) for t in cfg["thresholds"]},
                mean_delta=float((hist * steps).sum() / max(n, 1)) if hist[-1] == 0 else None,
                over_max=int(hist[-1]), cdf=cdf)


def measure(cfg: dict) -> dict:
    names = EC.weight_names(cfg["weights"])
    cfg = dict(cfg, weights=names)
    top = cfg["max_delta"] + 1                             # bin of every delta > max_delta
    jobs = [(m, s) for m in cfg["models"] for s in cfg["sparsities"]]
    jobs += [("mpnet", s) for s in cfg["sparsities"] if names]
    rows = []
    for group, s in X.progress(jobs, total=len(jobs), desc=NAME):
        hist = np.zeros(top + 1, dtype=np.int64)
        if group == "mpnet":
            sources = [(n, None) for n in names]
        else:
            shapes = {tuple(v) for v in EC.LLAMA2_SHAPES[group].values()}
            sources = [("uniform", [r // cfg["shape_scale"], c // cfg["shape_scale"]])
                       for r, c in sorted(shapes)]
        for src, shape in sources:
            d = row_deltas(EC.matrix(src, s, shape, cfg["seed"]))
            hist += np.bincount(np.minimum(d, top), minlength=top + 1)
        rows.append(_row("mpnet" if group == "mpnet" else f"Llama2-{group}",
                         "weights" if group == "mpnet" else "uniform", s, hist, cfg,
                         [src if shape is None else f"{shape[0]}x{shape[1]}" for src, shape in sources]))
    return dict(rows=rows, config=cfg)


def plot(results: dict, fig_path: str) -> list[str]:
    plt = P.pyplot()
    rows = results["rows"]
    sparsities = sorted({r["sparsity"] for r in rows})
    groups = list(dict.fromkeys(r["group"] for r in rows))
    fig, axes = plt.subplots(1, len(sparsities), figsize=(P.PAGE_WIDTH, 2.7),
                             sharey=True, squeeze=False)
    # matrix groups (no method): the uniform curves coincide, so wide to thin, pale to dark,
    # each on the one before; the real weights hollow markers on top
    style = {"Llama2-7B": dict(ls="-", lw=4.0, color="#c6dbef"),
             "Llama2-13B": dict(ls="--", lw=1.8, color="#4292c6"),
             "Llama2-70B": dict(ls=":", lw=1.2, color="#08306b")}
    for ax, s in zip(axes[0], sparsities):
        for g in groups:
            r = next((r for r in rows if r["group"] == g and r["sparsity"] == s), None)
            if r is None:
                continue
            x = np.arange(1, len(r["cdf"]) + 1)
            if g in style:
                ax.plot(x, r["cdf"], zorder=2, label=g + " shapes (uniform)", **style[g])
            else:
                ax.plot(x, r["cdf"], ls="none", color="tab:pink", marker="o", mfc="none", ms=3.5,
                        mew=0.9, markevery=0.08, zorder=3,
                        label=g + (" (real, per-row magnitude)" if g == "mpnet" else ""))
        t = PAPER_THRESHOLD.get(round(s, 2))
        if t:
            ax.axvline(t, color="gray", ls="--", lw=0.9, label="the paper's \"most deltas below\"")
            ax.text(t * 1.1, 0.03, f"{t}", fontsize=6.5, color="dimgray", va="bottom")
        for t in (15, 255):
            ax.axvline(t, color="black", lw=0.6, alpha=0.5,
                       label="largest 4-/8-bit delta (15, 255)")
        ax.set_xscale("log", base=2)
        ax.set_xticks([2.0 ** e for e in range(0, 10, 2)])
        ax.set(xlabel="delta index (column step in a row)", title=f"{100 * s:.0f} % sparse",
               ylim=(0, 1.01))
    axes[0][0].set_ylabel("cumulative fraction of deltas")
    fig.suptitle("Delta indices of pruned weights (the curves coincide)")
    P.legend_below(fig, axes[0][:1], ncol=3, room=0.17)
    return P.savefig(fig, fig_path, tight=False)


def report(results: dict):
    th = [str(t) for t in results["config"]["thresholds"]]
    rows = [dict(r, **{f"le{t}": r["frac_le"][t] for t in th}) for r in results["rows"]]
    cols = [("group", "group", ""), ("sparsity", "sparsity", ".2f"), ("n_deltas", "deltas", "")]
    cols += [(f"le{t}", f"<={t}", ".5f") for t in th]
    P.print_table(rows, cols)


def at_paper_threshold(results: dict) -> list[dict]:
    """Per group and sparsity: the fraction of deltas at or below the paper's threshold for
    that sparsity (32 / 64 / 128), as ``frac`` with ``threshold``."""
    out = []
    for r in results["rows"]:
        t = PAPER_THRESHOLD.get(round(r["sparsity"], 2))
        if t is not None and str(t) in r["frac_le"]:
            out.append(dict(group=r["group"], source=r["source"], sparsity=r["sparsity"],
                            threshold=t, frac=r["frac_le"][str(t)]))
    return out


def beyond(results: dict) -> list[dict]:
    """Per group and sparsity: the fraction of deltas above 15 (``over_15``: steps EC-CSR-4
    cannot store, each costing a padding zero in a 1-grained row) and above 255
    (``over_255``, EC-CSR-8's)."""
    return [dict(group=r["group"], source=r["source"], sparsity=r["sparsity"],
                 over_15=1 - r["frac_le"]["15"], over_255=1 - r["frac_le"]["255"])
            for r in results["rows"] if "15" in r["frac_le"] and "255" in r["frac_le"]]


if __name__ == "__main__":
    sys.exit(X.main(sys.modules[__name__]))
