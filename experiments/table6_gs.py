"""GeneralSparse paper, Table 6: the share of SuiteSparse matrices in each speedup bucket
(> 1.8x, 1.4-1.8x, 1.0-1.4x, 0.8-1.0x, and < 0.8x, which the paper does not list) of the tuned
GeneralSparse kernel over cuSPARSE SpMM and over our CSR SpMM (standing in for the paper's
hand-written baselines), with the mean speedup, per N (fp32). The measurement is Fig. 15's:
with ``from_fig15=True`` (default) the rows are taken from this device's saved ``fig15_gs``
results when they cover the configuration, else measured.

    python experiments/table6_gs.py [--quick] [--measure-anyway]

Runtime: seconds when a device's saved fig15_gs results cover the configuration; that
works on any machine, no GPU needed (the results go to that device's folder with the meta of
the run that measured the rows, ``--device`` picks one); else measured as fig15_gs, on a GPU.
"""
from __future__ import annotations

import sys

from experiments import _gs
from experiments import fig15_gs
from spmvlab import experiment as X
from spmvlab import plotting as P

NAME = "table6_gs"
NEEDS_GPU = True
SPLIT_KEYS = fig15_gs.SPLIT_KEYS
DERIVED_FROM = "fig15_gs"
BASES = ["cusparse", "csr_vector"]
BUCKETS = [(">1.8x", 1.8, float("inf")), ("1.4-1.8x", 1.4, 1.8), ("1.0-1.4x", 1.0, 1.4),
           ("0.8-1.0x", 0.8, 1.0), ("<0.8x", 0.0, 0.8)]
#: a colour per bucket (not methods), green (faster) to red (slower)
BUCKET_COLORS = ["#1a9850", "#91cf60", "#d9ef8b", "#fc8d59", "#d73027"]


config = _gs.config_for(NAME, dict(fig15_gs.FULL, from_fig15=True), dict(fig15_gs.QUICK))
cli = _gs.cli_for("matrices", "ns", derived_from=DERIVED_FROM)


def derive(cfg: dict, device: str | None = None) -> dict | None:
    """The rows of ``device``'s saved fig15_gs results (default: this machine's) when they
    cover ``cfg`` (every matrix and N), else None; no GPU needed
    (``experiment.derive_run``)."""
    if not cfg.get("from_fig15", True):      # --measure-anyway
        return None
    rows, saved = _gs.saved_rows(DERIVED_FROM, device)
    if not rows:
        return None
    want = {(m, n) for m in cfg["matrices"] for n in cfg["ns"]}
    have = {(r.get("matrix"), r.get("n")) for r in rows if r.get("method") == _gs.GS_BEST}
    if not want <= have:
        return None
    keep = [dict(r, source=DERIVED_FROM) for r in rows if (r.get("matrix"), r.get("n")) in want]
    return dict(rows=keep, source=dict(experiment=DERIVED_FROM, meta=saved["meta"]))


measure = _gs.derived_measure(derive, "from_fig15", _gs.measure_suitesparse, NAME)


def table(results: dict) -> list:
    cfg = results["config"]
    out = []
    for base in BASES:
        sp = _gs.speedup(results["rows"], _gs.GS_BEST, base, ("matrix", "n"))
        for n in cfg["ns"]:
            xs = [v for k, v in sp if k[1] == str(n)]
            if not xs:
                continue
            row = dict(base=base, n=n, matrices=len(xs), mean=sum(xs) / len(xs))
            for label, lo, hi in BUCKETS:
                row[label] = 100.0 * sum(lo <= x < hi for x in xs) / len(xs)
            out.append(row)
    return out


def plot(results: dict, fig_path: str) -> list[str]:
    """Stacked shares of the buckets, one bar per (base, N) grouped by base, each share's
    percentage in it; the mean speedup under each bar."""
    plt = P.pyplot()
    t = table(results)
    bases = list(dict.fromkeys(r["base"] for r in t))
    xs = [bases.index(r["base"]) * 0.6 + i for i, r in enumerate(t)]     # a gap between bases
    fig, ax = plt.subplots(figsize=(P.COLUMN_WIDTH, 3.1))
    bottom = [0.0] * len(t)
    for (label, _, _), c in zip(BUCKETS, BUCKET_COLORS):
        vals = [r[label] for r in t]
        ax.bar(xs, vals, 0.8, bottom=bottom, color=c, label=label.replace("x", "×"))
        for x, b, v in zip(xs, bottom, vals):
            if v >= 7:
                ax.text(x, b + v / 2, f"{v:.0f}", ha="center", va="center", fontsize=6.5,
                        color="white" if c in ("#1a9850", "#d73027") else "black")
        bottom = [b + v for b, v in zip(bottom, vals)]
    ax.set_xticks(xs, [f"{r['n']}\n{r['mean']:.2f}×" for r in t], fontsize=6.5)
    ax.annotate("N =\nmean", (0, 0), xycoords="axes fraction", xytext=(-4, -7),
                textcoords="offset points", ha="right", va="top", fontsize=6.5)   # the tick rows
    for b in bases:
        mine = [x for x, r in zip(xs, t) if r["base"] == b]
        ax.annotate(f"over {P.label(b)}", (sum(mine) / len(mine), 0), xycoords=("data", "axes fraction"),
                    xytext=(0, -27), textcoords="offset points", ha="center", va="top", fontsize=7)
    ax.set_ylim(0, 100)
    ax.grid(axis="x", visible=False)
    ax.set_ylabel("% of the matrices")
    count = max((r["matrices"] for r in t), default=0)
    ax.set_title(f"GeneralSparse paper Table 6: {count} SuiteSparse\nmatrices, fp32, "
                 f"{P.device_name(results)}")
    leg = P.legend_below(fig, [ax], ncol=3, room=0.15)
    if leg is not None:
        leg.set_title("speedup of GeneralSparse tuned", prop={"size": 7})
    return P.savefig(fig, fig_path, tight=False)


def report(results: dict):
    cols = [("base", "over", ""), ("n", "col", ""), ("matrices", "matrices", "")] + \
        [(label, label, ".1f") for label, _, _ in BUCKETS] + [("mean", "mean x", ".2f")]
    P.print_table(table(results), cols)


if __name__ == "__main__":
    sys.exit(X.main(sys.modules[__name__]))
