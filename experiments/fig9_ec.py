"""EC-SpMV paper, Fig. 9: storage relative to dense of CSR-32, EC-CSR-8 and EC-CSR-4 with
FP32 and FP16 values at 70 / 80 / 90 % sparsity, and the reduction against CSR-32 (the padding
of Table 2 is measured by the same encodings: ``table2_ec.py`` runs this ``measure``).

Every size is the ``.nbytes`` of the format object: every stored byte (CSR: int32 row
pointers and column indices and the values; EC-CSR: values with their padding zeros, packed
deltas, base indices, block pointers, row indices and set descriptors). Dense: rows x cols x
value bytes. The blocks and indices do not depend on the value type, so each matrix is
encoded once with float32 values and its FP16 size is that of the same object with the values
cast to float16 (``dataclasses.replace``); the ``uniform`` matrices hold float16 values, so this
is the FP16 encoding byte for byte.

Matrices (``ec_common``): ``datasets.uniform`` at every distinct Llama2 shape (7B, 13B, 70B:
10 shapes from 1024x8192 to 28672x8192, seeded) and the real all-mpnet-base-v2 weights pruned
per row by magnitude. EC-CSR options: warp_size 32, vector_size 4, dynamic clipping,
reordering (the defaults); EC-CSR-X has X-bit deltas (precision range 2**X). The encodings are
made by the fast encoder (``spmvlab.encoders.ec_csr``, the reference's bytes); its pipeline is
run stage by stage here so that the explicit zeros can be split into delta-range (``gap``) and
warp-alignment (``align``) padding.

Aggregates (:func:`summary`): per source, sparsity, value type and format, the bytes of all
matrices of the source summed (``pooled``) and the mean of the per-matrix ratios (``mean``);
padding overhead = explicit zeros / nonzeros, pooled the same way.

    python experiments/fig9_ec.py [--quick] [--shapes 4096x11008] [--sparsities 0.7,0.9]
"""
from __future__ import annotations

import dataclasses
import sys
import time

import numpy as np

from spmvlab import experiment as X
from spmvlab import plotting as P

from experiments import ec_common as EC

NAME = "fig9_ec"
NEEDS_GPU = False
FORMATS = ("csr32", "ec_csr8", "ec_csr4")
LABEL = {"csr32": "CSR-32", "ec_csr8": "EC-CSR-8", "ec_csr4": "EC-CSR-4"}
#: CSR-32 is what CSR (ours) stores, EC-CSR-8 EC-CSR's default: their plotting.METHODS colours;
#: EC-CSR-4 (4-bit deltas) a lighter shade of EC-CSR's
COLOR = {"csr32": P.METHODS["csr_vector"][1], "ec_csr8": P.METHODS["ec_csr"][1], "ec_csr4": "#c9a9e0"}
DTYPES = ("float32", "float16")
#: the paper's reductions vs CSR-32 (Sec. 8.2), % at 70 / 80 / 90 %
PAPER_REDUCTION = {("float32", "ec_csr8"): (38.9, 37.3, 33.7), ("float32", "ec_csr4"): (40.9, 38.2, 22.7),
                   ("float16", "ec_csr8"): (52.0, 49.9, 45.8), ("float16", "ec_csr4"): (55.4, 53.5, 41.3)}
PAPER_SPARSITIES = (0.7, 0.8, 0.9)
FULL = dict(shapes=EC.llama2_shapes(), sparsities=[0.7, 0.8, 0.9], weights=None, seed=0,
            warp_size=32, vector_size=4)
QUICK = dict(shapes=[[512, 1376], [1376, 512]], sparsities=[0.7, 0.9])


def config(quick: bool = False, **overrides) -> dict:
    """``weights`` None: every weight matrix of the data directory (measure() records which)."""
    return X.make_config(NAME, FULL, QUICK, quick, overrides)


def cli(p):
    p.add_argument("--shapes", type=X.shapes, help="uniform matrix shapes, RxC,...")
    p.add_argument("--sparsities", type=X.floats, help="sparsities, e.g. 0.7,0.9")


def encode_with_padding(A, delta_bits: int, cfg: dict):
    """(EC-CSR matrix with float32 values, padding stats, seconds): the fast encoder's
    ``encode_stages`` pipeline with ``reference.block_extraction.padding_stats`` taken between
    assembling the block sets and storing them."""
    from reference._common import canonical_csr
    from reference.block_extraction import assemble_sets, check_options, max_gap_for, padding_stats
    from spmvlab.encoders import ec_csr as E
    t0 = time.perf_counter()
    opts = check_options(delta_bits, cfg["warp_size"], cfg["vector_size"], None, True, None)
    csr = canonical_csr(A, np.float32)
    left = E.extract_leftovers(csr.indptr, csr.indices, csr.shape[1],
                               unit=opts["warp_size"] * opts["vector_size"],
                               max_gap=max_gap_for(delta_bits))
    sets = assemble_sets(left, opts)
    stats = padding_stats(sets)
    M = E.store_sets(csr, sets, opts, np.dtype(np.float32))
    seconds = time.perf_counter() - t0
    assert M.n_padding == stats["zeros"] and M.nnz == stats["nnz"] == csr.nnz
    return M, stats, seconds


def _as(M, dtype: str):
    """``M`` with its values in ``dtype`` (same indices: the encoding of the same blocks)."""
    return M if M.values.dtype == np.dtype(dtype) else dataclasses.replace(
        M, values=M.values.astype(dtype), checksum=None)


def measure(cfg: dict) -> dict:
    from reference import csr as RC
    names = EC.weight_names(cfg["weights"])
    cfg = dict(cfg, weights=names)
    jobs = [("uniform", tuple(s), sp) for s in cfg["shapes"] for sp in cfg["sparsities"]]
    jobs += [(n, None, sp) for n in names for sp in cfg["sparsities"]]
    rows = []
    for source, shape, sparsity in X.progress(jobs, total=len(jobs), desc=NAME):
        A = EC.matrix(source, sparsity, shape, cfg["seed"])
        shape = [int(v) for v in A.shape]
        base = dict(source=source, shape=shape, model=EC.model_of(shape) if source == "uniform" else "",
                    sparsity=sparsity, nnz=int(A.nnz))
        encoded = {"csr32": (RC.encode(A, dtype=np.float32), None, None)}
        for b in (8, 4):
            encoded[f"ec_csr{b}"] = encode_with_padding(A, b, cfg)
        for fmt, (M, stats, secs) in encoded.items():
            for dt in DTYPES:
                dense = shape[0] * shape[1] * np.dtype(dt).itemsize
                nbytes = int(_as(M, dt).nbytes)
                row = dict(base, format=fmt, dtype=dt, nbytes=nbytes, dense_bytes=dense,
                           rel_dense=nbytes / dense)
                if stats is not None:
                    row.update(padding_overhead=stats["overhead"], gap_zeros=stats["gap_zeros"],
                               align_zeros=stats["align_zeros"], n_blocks=M.n_blocks,
                               census={str(g): n for g, n in sorted(M.census().items())},
                               encode_s=secs)
                rows.append(row)
        del A, encoded
    return dict(rows=rows, config=cfg, cpu=EC.cpu_info())


def summary(results: dict) -> list[dict]:
    """One row per (source group, sparsity, dtype, format): ``rel_dense`` (pooled bytes /
    pooled dense bytes), ``rel_dense_mean``, ``reduction_vs_csr32`` (1 - pooled bytes / pooled
    CSR-32 bytes), ``reduction_vs_csr32_mean``, ``padding_overhead`` (pooled zeros / pooled
    nonzeros, EC formats) and ``n_matrices``. Groups: ``llama2`` (the uniform matrices) and
    ``mpnet`` (the real weights)."""
    rows = results["rows"]
    key = {}
    for r in rows:
        g = "llama2" if r["source"] == "uniform" else "mpnet"
        key.setdefault((g, r["sparsity"], r["dtype"]), []).append(r)
    out = []
    for (g, s, dt), sub in key.items():
        by = {}
        for r in sub:
            by.setdefault(r["format"], {})[(r["source"], tuple(r["shape"]))] = r
        csr = by.get("csr32", {})
        for fmt, mats in by.items():
            ks = sorted(mats)
            nb = sum(mats[k]["nbytes"] for k in ks)
            o = dict(group=g, sparsity=s, dtype=dt, format=fmt, n_matrices=len(ks),
                     rel_dense=nb / sum(mats[k]["dense_bytes"] for k in ks),
                     rel_dense_mean=float(np.mean([mats[k]["rel_dense"] for k in ks])))
            if all(k in csr for k in ks):
                o["reduction_vs_csr32"] = 1 - nb / sum(csr[k]["nbytes"] for k in ks)
                o["reduction_vs_csr32_mean"] = float(np.mean(
                    [1 - mats[k]["nbytes"] / csr[k]["nbytes"] for k in ks]))
            if fmt != "csr32":
                nnz = sum(mats[k]["nnz"] for k in ks)
                zeros = sum(mats[k]["gap_zeros"] + mats[k]["align_zeros"] for k in ks)
                o.update(padding_overhead=zeros / nnz if nnz else 0.0,
                         gap_overhead=sum(mats[k]["gap_zeros"] for k in ks) / nnz if nnz else 0.0,
                         align_overhead=sum(mats[k]["align_zeros"] for k in ks) / nnz if nnz else 0.0,
                         padding_overhead_mean=float(np.mean([mats[k]["padding_overhead"] for k in ks])))
            out.append(o)
    order = {f: i for i, f in enumerate(FORMATS)}
    return sorted(out, key=lambda o: (o["group"], o["dtype"] != "float32", o["sparsity"],
                                      order.get(o["format"], 9)))


def plot(results: dict, fig_path: str) -> list[str]:
    plt = P.pyplot()
    summ = summary(results)
    sparsities = sorted({o["sparsity"] for o in summ})
    fig, axes = plt.subplots(1, 2, figsize=(P.PAGE_WIDTH, 3.1), sharey=True)
    width = 0.27
    for ax, dt in zip(axes, DTYPES):
        for i, fmt in enumerate(FORMATS):
            xs, ys = [], []
            for j, s in enumerate(sparsities):
                o = next((o for o in summ if o["group"] == "llama2" and o["dtype"] == dt
                          and o["format"] == fmt and o["sparsity"] == s), None)
                if o is None:
                    continue
                x = j + (i - 1) * width
                xs.append(x)
                ys.append(o["rel_dense"])
                if "reduction_vs_csr32" in o and fmt != "csr32":     # inside the bar: hides nothing
                    ax.text(x, 0.012, f"{100 * o['reduction_vs_csr32']:.1f}", ha="center",
                            va="bottom", fontsize=6, color="white" if fmt == "ec_csr8" else "black",
                            zorder=4)
                if fmt != "csr32" and (dt, fmt) in PAPER_REDUCTION and s in PAPER_SPARSITIES:
                    csr = next((c for c in summ if c["group"] == "llama2" and c["dtype"] == dt
                                and c["format"] == "csr32" and c["sparsity"] == s), None)
                    if csr:
                        paper = csr["rel_dense"] * (1 - PAPER_REDUCTION[(dt, fmt)][PAPER_SPARSITIES.index(s)] / 100)
                        ax.plot([x - width / 2, x + width / 2], [paper, paper], color="black", lw=1.3,
                                zorder=3, label="paper's reduction applied to our CSR-32")
                m = next((o for o in summ if o["group"] == "mpnet" and o["dtype"] == dt
                          and o["format"] == fmt and o["sparsity"] == s), None)
                if m:
                    ax.plot(x, m["rel_dense"], "x", color="#8b0000", ms=4.5, mew=1.0, zorder=3,
                            label="real mpnet weights (per-row magnitude)")
            ax.bar(xs, ys, width, color=COLOR[fmt], label=f"{LABEL[fmt]} (Llama2 shapes, uniform)")
        ax.axhline(1.0, color="black", ls="--", lw=0.9, label="dense")
        ax.set_xticks(range(len(sparsities)), [f"{100 * s:.0f} %" for s in sparsities])
        ax.set(xlabel="sparsity", title=f"{'FP32' if dt == 'float32' else 'FP16'} values")
        ax.grid(axis="x", visible=False)
    axes[0].set_ylabel("storage relative to dense")
    fig.suptitle("Storage of CSR-32 and EC-CSR (every stored byte), relative to dense;\n"
                 "numbers in the bars: % less than CSR-32")
    P.legend_below(fig, axes, ncol=3, room=0.14)
    return P.savefig(fig, fig_path, tight=False)


def report(results: dict):
    cols = [("group", "matrices", ""), ("dtype", "values", ""), ("sparsity", "sparsity", ".2f"),
            ("format", "format", ""), ("rel_dense", "x dense", ".4f"),
            ("reduction_vs_csr32", "vs CSR-32", ".4f"), ("padding_overhead", "padding", ".4f")]
    P.print_table(summary(results), cols)


if __name__ == "__main__":
    sys.exit(X.main(sys.modules[__name__]))
