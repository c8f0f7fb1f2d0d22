"""dtANS paper, Fig. 4: entropy of delta-coded column indices relative to the plain column
indices, for Erdős–Rényi, Watts–Strogatz and Barabási–Albert graphs of growing size at
average degree 5, 10 and 20 (median of 3 seeds). Measured on the CPU.

Graphs (``spmvlab.datasets``, undirected, as symmetric adjacency matrices): ``erdos_renyi(n,
d)`` (G(n, p), p = d / (n - 1)), ``watts_strogatz(n, d, p=rewire)`` (ring with d neighbours,
each edge rewired with probability ``rewire``; the paper does not give its p) and
``barabasi_albert(n, d / 2)`` (d / 2 = 2.5 edges per new node alternate 2 and 3). For each
matrix: H(columns) and H(deltas), the order-0 entropies in bits per nonzero of the column
indices and of CSR-dtANS's per-row delta coding (first delta = the column), and their ratio
(``spmvlab.analysis.entropy``). The paper's y-axis is that ratio ("relative entropy").

    python experiments/fig4_dtans.py [--quick] [--plot-only]
"""
from __future__ import annotations

import sys

import numpy as np

from spmvlab import experiment as X
from spmvlab import plotting as P

NAME = "fig4_dtans"
NEEDS_GPU = False
MODELS = ("erdos_renyi", "watts_strogatz", "barabasi_albert")
LABEL = {"erdos_renyi": "Erdős–Rényi", "watts_strogatz": "Watts–Strogatz",
         "barabasi_albert": "Barabási–Albert"}
FULL = dict(models=list(MODELS), degrees=[5, 10, 20], nodes=[2 ** e for e in range(8, 19)],
            seeds=[0, 1, 2], rewire=0.1, seed=0)
QUICK = dict(nodes=[2 ** e for e in (8, 10, 12)], seeds=[0])


def config(quick: bool = False, **overrides) -> dict:
    """``seed`` offsets every graph's seed (graph seed = seed + each of ``seeds``)."""
    return X.make_config(NAME, FULL, QUICK, quick, overrides)


def cli(p):
    p.add_argument("--nodes", type=lambda t: [int(v) for v in t.split(",")], help="node counts")


def graph(model: str, n: int, degree: float, seed: int, rewire: float):
    from spmvlab import datasets as ds
    if model == "erdos_renyi":
        return ds.erdos_renyi(n, degree, seed=seed)
    if model == "watts_strogatz":
        return ds.watts_strogatz(n, int(degree), p=rewire, seed=seed)
    if model == "barabasi_albert":
        return ds.barabasi_albert(n, degree / 2, seed=seed)
    raise ValueError(model)


def measure(cfg: dict) -> dict:
    from spmvlab.analysis.entropy import column_deltas, entropy_bits
    jobs = [(m, d, n, s) for m in cfg["models"] for d in cfg["degrees"] for n in cfg["nodes"]
            for s in cfg["seeds"] if int(d) < n / 2]
    rows = []
    for model, d, n, s in X.progress(jobs, total=len(jobs), desc=NAME):
        A = graph(model, n, d, cfg["seed"] + s, cfg["rewire"])
        h_col, h_delta = entropy_bits(A.indices), entropy_bits(column_deltas(A))
        rows.append(dict(model=model, degree=d, n=n, graph_seed=cfg["seed"] + s, nnz=int(A.nnz),
                         mean_degree=A.nnz / n, h_columns=h_col, h_deltas=h_delta,
                         ratio=h_delta / h_col if h_col else float("nan")))
    return dict(rows=rows)


def medians(results: dict) -> list[dict]:
    """The median over seeds of each (model, degree, n): the points of the figure."""
    out = {}
    for r in results["rows"]:
        out.setdefault((r["model"], r["degree"], r["n"]), []).append(r)
    return [dict(model=m, degree=d, n=n, seeds=len(rs),
                 ratio=float(np.median([r["ratio"] for r in rs])),
                 h_columns=float(np.median([r["h_columns"] for r in rs])),
                 h_deltas=float(np.median([r["h_deltas"] for r in rs])),
                 mean_degree=float(np.median([r["mean_degree"] for r in rs])))
            for (m, d, n), rs in out.items()]


def summary(results: dict) -> list[dict]:
    """Per model: the ratio's range over sizes and degrees, and whether it is below 1 at
    every point."""
    med = medians(results)
    return [dict(model=m, ratio_min=min(r["ratio"] for r in rs), ratio_max=max(r["ratio"] for r in rs),
                 all_below_1=all(r["ratio"] < 1 for r in rs), points=len(rs))
            for m in results["config"]["models"] for rs in [[r for r in med if r["model"] == m]] if rs]


def plot(results: dict, fig_path: str) -> list[str]:
    plt = P.pyplot()
    med = medians(results)
    cfg = results["config"]
    models = cfg["models"]
    fig, axes = plt.subplots(1, len(models), figsize=(P.PAGE_WIDTH, 2.6), sharey=True,
                             squeeze=False)
    colors = ("#9ecae1", "#4292c6", "#08519c", "#08306b")    # degrees (no method): light to dark
    for ax, m in zip(axes[0], models):
        for d, c in zip(cfg["degrees"], colors):
            pts = sorted((r["n"], r["ratio"]) for r in med if r["model"] == m and r["degree"] == d)
            if pts:
                ax.plot(*zip(*pts), "o-", color=c, ms=3, lw=1.2, label=f"average degree {d}")
        ax.set_xscale("log", base=2)
        ax.axhline(1.0, color="k", lw=0.9, ls="--")
        ax.set_xticks([2.0 ** e for e in range(8, 19, 2)])
        ax.set(title=LABEL.get(m, m), xlabel="nodes n")
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("H(delta-coded columns)\n/ H(columns)")
    axes[0][0].set_ylim(0, 1.05)
    fig.suptitle(f"Entropy reduction by delta coding (median of {len(cfg['seeds'])} seeds"
                 + (f"; Watts–Strogatz rewiring p = {cfg['rewire']}" if "watts_strogatz" in models else "")
                 + ")")
    P.legend_below(fig, axes[0][:1], room=0.1)
    return P.savefig(fig, fig_path, tight=False)


def report(results: dict):
    med = sorted(medians(results), key=lambda r: (r["model"], r["degree"], r["n"]))
    print(P.format_table(med, [("model", "model", ""), ("degree", "deg", ""), ("n", "n", ""),
                               ("h_columns", "H(col)", ".2f"), ("h_deltas", "H(delta)", ".2f"),
                               ("ratio", "ratio", ".3f")]))
    for s in summary(results):
        print(f"{s['model']}: ratio {s['ratio_min']:.3f}..{s['ratio_max']:.3f}, below 1 everywhere: "
              f"{s['all_below_1']}")


if __name__ == "__main__":
    sys.exit(X.main(sys.modules[__name__]))
