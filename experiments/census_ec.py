"""EC-SpMV block-size census: the share of the nonzeros that EC-CSR puts in blocks of each
granularity (1, 2, 4, ... rows), real weights against random masks, at 70 / 80 / 90 %.

For each real weight matrix of the data directory (all-mpnet-base-v2) three masks of the same
shape and sparsity are encoded (the fast encoder, EC-CSR-X for X in ``delta_bits``, each
(warp_size, vector_size) of ``layouts``):

* ``magnitude``: the real weights pruned per row by magnitude (``datasets.prune``);
* ``row_random``: the same weights pruned per row at random (the same nonzeros per row,
  positions uniform within each row);
* ``uniform``: ``datasets.uniform`` (positions uniform over the whole matrix).

and, for scale, ``uniform`` at the Llama2 shapes of ``llm_shapes`` (first layout only). A block
needs at least warp_size x vector_size shared columns (the paper's 32 x 4 = 128), more than two
rows of a 768-column mpnet matrix share at 70 % (~69): the default layout can find no blocks
there whatever the mask, so a small layout (8 x 2 = 16 columns) is measured beside it. The issue asks whether real
weights hold more block structure than random masks (the data README's gap statistics suggest
not); the rows answer it per matrix: ``share`` maps granularity -> nonzeros in blocks of that
many rows / all nonzeros.

    python experiments/census_ec.py [--quick] [--plot-only]
"""
from __future__ import annotations

import sys

import numpy as np

from spmvlab import experiment as X
from spmvlab import plotting as P

from experiments import ec_common as EC

NAME = "census_ec"
NEEDS_GPU = False
MASKS = ("magnitude", "row_random", "uniform")
FULL = dict(weights=None, llm_shapes=[[4096, 4096], [4096, 11008]], sparsities=[0.7, 0.8, 0.9],
            delta_bits=[8, 4], layouts=[[32, 4], [8, 2]], seed=0)
QUICK = dict(llm_shapes=[[1024, 2048]], sparsities=[0.7, 0.9], delta_bits=[8])


def config(quick: bool = False, **overrides) -> dict:
    """``weights`` None: every weight matrix of the data directory (measure() records which)."""
    return X.make_config(NAME, FULL, QUICK, quick, overrides)


def _mask(kind: str, name: str, sparsity: float, seed: int):
    import scipy.sparse as sp
    from spmvlab import datasets
    if kind == "magnitude":
        return EC.matrix(name, sparsity)
    W = datasets.weights(name)
    if kind == "row_random":
        return sp.csr_matrix(datasets.prune(W, sparsity, method="random", per_row=True, seed=seed))
    return datasets.uniform(W.shape, sparsity, dtype=np.float16, seed=seed)


def measure(cfg: dict) -> dict:
    from spmvlab.encoders import ec_csr as E
    names = EC.weight_names(cfg["weights"])
    cfg = dict(cfg, weights=names)
    jobs = [(kind, n, s) for n in names for s in cfg["sparsities"] for kind in MASKS]
    jobs += [("uniform", f"{r}x{c}", s) for r, c in cfg["llm_shapes"] for s in cfg["sparsities"]]
    rows = []
    for kind, name, s in X.progress(jobs, total=len(jobs), desc=NAME):
        if name in names:
            A = _mask(kind, name, s, cfg["seed"])
        else:
            A = EC.matrix("uniform", s, [int(v) for v in name.split("x")], cfg["seed"])
        layouts = cfg["layouts"] if name in names else cfg["layouts"][:1]
        for (ws, vs), b in [(lay, b) for lay in layouts for b in cfg["delta_bits"]]:
            M = E.encode(A, dtype=np.float32, delta_bits=b, warp_size=ws, vector_size=vs)
            census = M.census()
            nnz = sum(census.values())
            rows.append(dict(matrix=name, mask=kind, real=name in names, shape=list(M.shape),
                             sparsity=s, delta_bits=b, warp_size=ws, vector_size=vs,
                             nnz=int(nnz), n_blocks=M.n_blocks,
                             share={str(g): census[g] / nnz for g in sorted(census)},
                             blocked=1 - census.get(1, 0) / nnz if nnz else 0.0,
                             padding_overhead=M.padding_overhead))
    return dict(rows=rows, config=cfg)


def plot(results: dict, fig_path: str) -> list[str]:
    """A panel per layout (row) and sparsity (column): per matrix and mask a bar of the share
    of nonzeros in blocks of 1, 2, 4, ... rows; the panels of a row share their matrices."""
    plt = P.pyplot()
    rows = [r for r in results["rows"] if r["delta_bits"] == 8]
    layouts = [tuple(v) for v in results["config"]["layouts"]]
    sparsities = sorted({r["sparsity"] for r in rows})
    grans = sorted({int(g) for r in rows for g in r["share"]})
    cmap = plt.get_cmap("viridis")
    colors = {g: cmap(i / max(len(grans) - 1, 1)) for i, g in enumerate(grans)}
    keys = [[k for k in dict.fromkeys((r["matrix"], r["mask"]) for r in rows
                                      if (r["warp_size"], r["vector_size"]) == lay)] for lay in layouts]
    heights = [max(len(k), 1) for k in keys]
    fig, axes = plt.subplots(len(layouts), len(sparsities), squeeze=False, sharex=True, sharey="row",
                             gridspec_kw=dict(height_ratios=heights),
                             figsize=(P.PAGE_WIDTH, 0.16 * sum(heights) + 0.55 * len(layouts) + 0.9))
    for (i, (ws, vs)), (j, s) in [(a, b) for a in enumerate(layouts) for b in enumerate(sparsities)]:
        ax = axes[i][j]
        sub = {(r["matrix"], r["mask"]): r for r in rows
               if r["sparsity"] == s and (r["warp_size"], r["vector_size"]) == (ws, vs)}
        y = np.arange(len(keys[i]))
        left = np.zeros(len(y))
        for g in grans:
            w = np.array([sub[k]["share"].get(str(g), 0.0) if k in sub else 0.0 for k in keys[i]])
            ax.barh(y, w, 0.8, left=left, color=colors[g], label=f"{g}-row blocks")
            left += w
        if j == 0:
            first = {k: next(r for r in rows if (r["matrix"], r["mask"]) == k) for k in keys[i]}
            ax.set_yticks(y, [f"{m.removeprefix('mpnet_')} {first[(m, k)]['shape'][0]}x"
                              f"{first[(m, k)]['shape'][1]}, {k}" if first[(m, k)]["real"]
                              else f"{m}, uniform" for m, k in keys[i]], fontsize=6)
            ax.invert_yaxis()
        ax.set(xlim=(0, 1), title=f"{100 * s:.0f} % sparse" if i == 0 else None)
        if j == 0:
            ax.set_ylabel(f"warp_size {ws} x vector_size {vs}")
        ax.set_xticks([0, 0.25, 0.5, 0.75, 1], ["0", "", "0.5", "", "1"])
        ax.grid(axis="y", visible=False)
        ax.tick_params(axis="y", length=0)
        if i == len(layouts) - 1:
            ax.set_xlabel("share of nonzeros")
    fig.suptitle("EC-CSR-8 row blocks: share of the nonzeros in blocks of 1, 2, 4 rows\n"
                 "(mpnet layers under three masks; uniform random matrices)")
    fig.tight_layout(rect=(0, 0.045, 1, 1), w_pad=1.5)
    fig.legend(*axes[0][0].get_legend_handles_labels(), loc="lower center", ncol=len(grans),
               frameon=False, bbox_to_anchor=(0.5, 0.0))
    return P.savefig(fig, fig_path, tight=False)


def report(results: dict):
    rows = [dict(r, **{f"g{g}": r["share"].get(str(g), 0.0) for g in (1, 2, 4, 8)})
            for r in results["rows"]]
    cols = [("matrix", "matrix", ""), ("mask", "mask", ""), ("sparsity", "sparsity", ".2f"),
            ("delta_bits", "bits", ""), ("warp_size", "ws", ""), ("vector_size", "vs", ""), ("g1", "g=1", ".3f"), ("g2", "g=2", ".3f"),
            ("g4", "g=4", ".3f"), ("g8", "g=8", ".3f"), ("padding_overhead", "padding", ".4f")]
    P.print_table(rows, cols)


def real_vs_random(results: dict) -> list[dict]:
    """Per real matrix, sparsity, delta width and layout: the share of nonzeros in blocks of 2 or more
    rows under the magnitude mask (``magnitude``), the per-row random one (``row_random``),
    the uniform one (``uniform``) and ``diff`` = magnitude - row_random."""
    out = {}
    for r in results["rows"]:
        if r["real"]:
            o = out.setdefault((r["matrix"], r["sparsity"], r["delta_bits"], r["warp_size"], r["vector_size"]),
                               dict(matrix=r["matrix"], shape=r["shape"], sparsity=r["sparsity"],
                                    delta_bits=r["delta_bits"], warp_size=r["warp_size"],
                                    vector_size=r["vector_size"]))
            o[r["mask"]] = r["blocked"]
    for o in out.values():
        if "magnitude" in o and "row_random" in o:
            o["diff"] = o["magnitude"] - o["row_random"]
    return list(out.values())


if __name__ == "__main__":
    sys.exit(X.main(sys.modules[__name__]))
