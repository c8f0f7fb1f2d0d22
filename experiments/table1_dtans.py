"""dtANS paper, Table I: the share of matrices CSR-dtANS makes smaller than the smallest of
CSR, COO and SELL, by total nonzeros (<= 2^10, <= 2^15, > 2^15) and average nonzeros per row
(<= 10, > 10), for 64- and 32-bit values. Measured on the CPU.

The rows are fig6_dtans's (same config): taken from results/cpu/fig6_dtans.json when it was
measured by the same committed code with the same settings, else measured here the same way
(``experiments/_dtans.py``: ``reuse_rows``). Cells are given for all matrices, the local
SuiteSparse ones and the synthetic ones apart, with our compact tables and with the paper's
K-slot tables counted instead (64 KB / 48 KB: the paper's reason for 0 successes at <= 2^10).

    python experiments/table1_dtans.py [--quick] [--plot-only]
"""
from __future__ import annotations

import sys

from experiments import _dtans as D
from experiments import fig6_dtans as F6
from spmvlab import experiment as X
from spmvlab import plotting as P

NAME = "table1_dtans"
NEEDS_GPU = False
EDGES = (10, 15)
VARIANTS = (("compressed", "our tables"), ("compressed_paper_tables", "paper's K-slot tables"))
SOURCES = ("all", "suitesparse", "synthetic")


def config(quick: bool = False, **overrides) -> dict:
    """fig6_dtans's settings (the same matrices)."""
    return X.make_config(NAME, F6.config(quick), {}, False, overrides)


def table(rows: list[dict], dtypes) -> list[dict]:
    out = []
    for dt in dtypes:
        for key, label in VARIANTS:
            for src in SOURCES:
                rs = [r for r in rows if r["dtype"] == dt and (src == "all" or r["source"] == src)]
                for c in D.cells(rs, key, EDGES):
                    out.append(dict(c, dtype=dt, tables=label, source=src))
    return out


def measure(cfg: dict) -> dict:
    saved = D.reuse_rows(F6.NAME, cfg, NEEDS_GPU)
    if saved is not None:
        rows = saved["rows"]
        src = dict(rows_from=f"results/cpu/{F6.NAME}.json", rows_git_hash=saved["meta"]["git_hash"],
                   rows_date=saved["meta"]["date_utc"])
    else:
        rows = F6.measure(cfg)["rows"]
        src = dict(rows_from="measured here")
    return dict(rows=table(rows, cfg["dtypes"]), **src)


def plot(results: dict, fig_path: str) -> list[str]:
    plt = P.pyplot()
    cfg = results["config"]
    rows = results["rows"]
    dtypes = cfg["dtypes"]
    fig, axes = plt.subplots(len(VARIANTS), len(dtypes), squeeze=False,
                             figsize=(P.PAGE_WIDTH, 0.7 + 1.55 * len(VARIANTS)),
                             gridspec_kw=dict(left=0.005, right=0.995, top=1 - 0.65 / (0.7 + 1.55 * len(VARIANTS)),
                                              bottom=0.01, wspace=0.04, hspace=0.3))
    for i, (_, label) in enumerate(VARIANTS):
        for j, dt in enumerate(dtypes):
            ax = axes[i][j]
            ax.axis("off")
            cs = [r for r in rows if r["dtype"] == dt and r["tables"] == label]
            cols = [c["nnz"] for c in cs if c["source"] == "all"][:3]
            body, rlab = [], []
            for per_row in ("<= 10", "> 10"):
                rlab.append(f"nnz/row\n{per_row}")
                body.append(["\n".join(f"{s[:5]}: {D.cell_text(c)}" for s in SOURCES for c in cs
                                       if c["source"] == s and c["nnz_per_row"] == per_row and c["nnz"] == col)
                             for col in cols])
            t = ax.table(cellText=body, rowLabels=rlab, colLabels=[f"nnz {c}" for c in cols],
                         cellLoc="center", bbox=[0.13, 0.0, 0.87, 1.0])
            t.auto_set_font_size(False)
            t.set_fontsize(6.5)
            for (r_, _), cell in t.get_celld().items():
                cell.set_height(0.4 if r_ == 0 else 1.0)     # relative: the header one line
            ax.set_title(f"{dt}, {label}")
    fig.suptitle("CSR-dtANS smaller than the smallest of CSR/COO/SELL (paper Table I):\n"
                 "successes/matrices, all, SuiteSparse (suite) and synthetic (synth)")
    return P.savefig(fig, fig_path, tight=False)


def report(results: dict):
    print(P.format_table([r for r in results["rows"] if r["source"] in ("all", "suitesparse")],
                         [("dtype", "dtype", ""), ("tables", "tables", ""), ("source", "source", ""),
                          ("nnz_per_row", "nnz/row", ""), ("nnz", "nnz", ""),
                          ("success", "smaller", ""), ("total", "of", ""), ("rate", "rate", ".2f")]))


if __name__ == "__main__":
    sys.exit(X.main(sys.modules[__name__]))
