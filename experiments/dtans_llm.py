"""Beyond the papers: entropy coding of pruned LLM weights. Bytes per weight of CSR-dtANS,
MACKO and CSR on the real transformer weights in ``../shared/data/weights`` (mpnet,
``spmvlab.datasets.weights``) pruned per row by magnitude at 50 / 70 / 90 %, with fp16 and
fp32 values, against the order-0 entropy of the (delta, value) symbols. Measured on the CPU
(sizes only; the SpMV speed is ``dtans_llm_speed.py``).

Per weight matrix, sparsity and value dtype:

* ``csr``: int32 column indices and row pointers plus the values (``reference.csr``);
* ``macko``: MACKO with 4-bit deltas (``spmvlab.encoders.macko``; inserted zeros and padding
  counted);
* ``csr_dtans``: CSR-dtANS, the paper's parameters (``spmvlab.encoders.csr_dtans``);
* ``csr_dtans_lanes32``: the same with ``lanes_per_row=32`` (the long-row layout: each row cut
  into 32 independently decoded streams, what lets a warp decode a row; its pieces' initial
  words, stream ends and first columns counted);
* ``entropy``: nnz x (H(deltas) + H(values)) bits, the order-0 bound of the symbols CSR-dtANS
  codes (``spmvlab.analysis.entropy``); ``entropy_tables``: the same symbols under the encoded
  matrix's own tables (the bound with K = 4096 slots, multiplicity <= M = 256, escapes);
* ``dense``: rows x cols x value bytes.

``escaped_values``: the nonzeros whose value CSR-dtANS's value table does not keep (each
coded as the escape symbol and its raw bits; the table's report gives their share).

Sizes are given as bytes per weight of the dense matrix (``*_bpw``; dense fp16 = 2) and per
stored nonzero (``*_bpnz``). The fp32 weights are rounded to fp16 for the fp16 rows
(``lossy=True``; a few tiny weights underflow to zero and are dropped from every format).

    python experiments/dtans_llm.py [--quick] [--plot-only]
"""
from __future__ import annotations

import sys
import warnings

import numpy as np

from spmvlab import experiment as X
from spmvlab import plotting as P

NAME = "dtans_llm"
NEEDS_GPU = False
FORMATS = ("csr", "macko", "csr_dtans", "csr_dtans_lanes32", "entropy_tables", "entropy")
#: the formats as every figure draws them (plotting.METHODS), and the two bounds
STYLE = {"csr": P.line_style("csr_vector", label="CSR (int32 indices)"),
         "macko": P.line_style("macko", label="MACKO (4-bit deltas)"),
         "csr_dtans": P.line_style("csr_dtans"),
         "csr_dtans_lanes32": P.line_style("csr_dtans[lanes_per_row=32]", marker="x",
                                           label="CSR-dtANS, 32 lanes per row (long rows)"),
         "entropy_tables": dict(color="tab:olive", marker="v", markerfacecolor="none", ls="--",
                                markersize=8, linewidth=3, alpha=0.6,
                                label="bound with dtANS tables (K 4096, M 256)"),
         "entropy": dict(color="black", marker=".", ls=":", label="order-0 entropy of (delta, value)")}
FULL = dict(weights=None, sparsities=[0.5, 0.7, 0.9], dtypes=["float16", "float32"],
            prune="magnitude, per row", delta_bits=4, params="paper", seed=0)
QUICK = dict(weights=["mpnet_L00_attn_q"], sparsities=[0.5, 0.9])


def config(quick: bool = False, **overrides) -> dict:
    """``weights`` None: every weight matrix in the data directory (measure() records which);
    ``seed`` is unused (magnitude pruning is deterministic)."""
    return X.make_config(NAME, FULL, QUICK, quick, overrides)


def sizes(A, dtype, delta_bits: int = 4, params: str = "paper") -> dict:
    """Bytes of every format for sparse ``A`` in ``dtype`` (see the module docstring)."""
    from reference import csr as RC
    from reference._common import canonical_csr
    from spmvlab.analysis.entropy import csr_symbol_entropy, table_bits
    from spmvlab.encoders import csr_dtans as ED
    from spmvlab.encoders import macko as EM
    dt = np.dtype(dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")             # fp16 rounding of fp32 weights
        csr = canonical_csr(A, dt, lossy=True)
        M = ED.encode(csr, dtype=dt, params=params)
        M32 = ED.encode(csr, dtype=dt, params=params, lanes_per_row=32)
        mk = EM.encode(csr, delta_bits=delta_bits, dtype=dt)
        C = RC.encode(csr, dtype=dt)
        ent = csr_symbol_entropy(csr, dt)
        tb = table_bits(M, csr)
    return dict(nnz=int(csr.nnz), csr=int(C.nbytes), macko=int(mk.nbytes), csr_dtans=int(M.nbytes),
                csr_dtans_lanes32=int(M32.nbytes),
                entropy=ent["bound_bytes"], entropy_tables=tb["bound_bytes"],
                dtans_words=int(M.words.nbytes), dtans_tables=int(M.table_bytes),
                dtans_meta=int(M.row_lengths.nbytes + M.warp_ptr.nbytes),
                h_deltas=ent["delta_bits"], h_values=ent["value_bits"],
                kept_values=int(M.values.size), value_escape_slots=int(M.value_counts[-1]),
                distinct_values=int(np.unique(csr.data.astype(dt)).size),
                escaped_values=escaped_values(csr.data.astype(dt), M.values))


def escaped_values(values: np.ndarray, kept: np.ndarray) -> int:
    """How many of the nonzeros' ``values`` the value table does not keep (compared bit for
    bit, so -0.0 and 0.0 differ as they do in the coder): each is coded as the escape
    symbol plus its raw bits."""
    u = np.dtype(f"u{values.dtype.itemsize}")
    return int(np.count_nonzero(~np.isin(values.view(u), kept.astype(values.dtype).view(u))))


#: a cluster sweep's cells (``--cluster``, ``spmvlab.cluster``): one per weight matrix,
#: sparsity and value type, in the order of measure's loops
CELL_KEYS = ("weights", "sparsities", "dtypes")


def cells(cfg: dict) -> list[dict]:
    """The cells of a cluster sweep (``weights`` None: every weight matrix found)."""
    from spmvlab import cluster, datasets
    names = cfg["weights"] if cfg["weights"] is not None else datasets.weights_names()
    return cluster.grid(dict(cfg, weights=list(names)), CELL_KEYS)


def measure(cfg: dict) -> dict:
    from spmvlab import datasets
    names = cfg["weights"] if cfg["weights"] is not None else datasets.weights_names()
    jobs = [(w, s, d) for w in names for s in cfg["sparsities"] for d in cfg["dtypes"]]
    rows = []
    for w, s, d in X.progress(jobs, total=len(jobs), desc=NAME):
        W = datasets.weights(w)
        A = datasets.prune(W, s, method="magnitude", per_row=True)
        r = dict(weights=w, shape=list(W.shape), sparsity=s, dtype=d)
        r.update(sizes(A, d, cfg["delta_bits"], cfg["params"]))
        dense_n = W.shape[0] * W.shape[1]
        r["dense"] = dense_n * np.dtype(d).itemsize
        for f in FORMATS + ("dense",):
            r[f"{f}_bpw"] = r[f] / dense_n
            r[f"{f}_bpnz"] = r[f] / max(r["nnz"], 1)
        rows.append(r)
    return dict(rows=rows, weights_found=list(names))


def table(results: dict) -> list[dict]:
    """Bytes per dense weight, summed over the weight matrices, per sparsity and dtype."""
    out = []
    cfg = results["config"]
    for d in cfg["dtypes"]:
        for s in cfg["sparsities"]:
            rs = [r for r in results["rows"] if r["dtype"] == d and r["sparsity"] == s]
            if not rs:
                continue
            n = sum(r["shape"][0] * r["shape"][1] for r in rs)
            row = dict(dtype=d, sparsity=s, matrices=len(rs))
            for f in FORMATS + ("dense",):
                row[f"{f}_bpw"] = sum(r[f] for r in rs) / n
            row["dtans_vs_csr"] = row["csr_bpw"] / row["csr_dtans_bpw"]
            row["dtans_vs_macko"] = row["macko_bpw"] / row["csr_dtans_bpw"]
            row["dtans_over_entropy"] = row["csr_dtans_bpw"] / row["entropy_bpw"] - 1
            if all("escaped_values" in r for r in rs):
                row["escaped_share"] = sum(r["escaped_values"] for r in rs) / max(sum(r["nnz"] for r in rs), 1)
            out.append(row)
    return out


def plot(results: dict, fig_path: str) -> list[str]:
    plt = P.pyplot()
    tab = table(results)
    dtypes = results["config"]["dtypes"]
    fig, axes = plt.subplots(1, len(dtypes), figsize=(P.PAGE_WIDTH, 3.0), squeeze=False)
    for ax, d in zip(axes[0], dtypes):
        rs = sorted((r for r in tab if r["dtype"] == d), key=lambda r: r["sparsity"])
        x = [100 * r["sparsity"] for r in rs]
        # the bound under CSR-dtANS, wider; the long-row layout under the paper's
        for f in ("csr", "macko", "entropy_tables", "csr_dtans_lanes32", "csr_dtans", "entropy"):
            ax.plot(x, [r[f"{f}_bpw"] for r in rs], **STYLE[f])
        if rs:
            ax.axhline(rs[0]["dense_bpw"], color="gray", lw=1, label=f"dense {d}")
        ax.set(xlabel="sparsity (%), per-row magnitude pruning", ylabel="bytes per weight",
               title=f"{d} values", ylim=(0, None))
        ax.grid(alpha=0.3)
    names = ", ".join(results.get("weights_found") or [])
    fig.suptitle(f"Pruned mpnet weights: bytes per weight\n({names})")
    P.legend_below(fig, axes[0], ncol=3, room=0.16)
    return P.savefig(fig, fig_path, tight=False)


def report(results: dict):
    print(P.format_table(table(results), [
        ("dtype", "dtype", ""), ("sparsity", "sparsity", ".2f"), ("csr_bpw", "CSR", ".3f"),
        ("macko_bpw", "MACKO", ".3f"), ("csr_dtans_bpw", "dtANS", ".3f"),
        ("csr_dtans_lanes32_bpw", "dtANS 32 lanes", ".3f"),
        ("entropy_tables_bpw", "tables", ".3f"), ("entropy_bpw", "H0", ".3f"),
        ("dense_bpw", "dense", ".1f"), ("dtans_over_entropy", "dtANS/H0-1", ".2f"),
        ("escaped_share", "values escaped", ".3f")]))


if __name__ == "__main__":
    sys.exit(X.main(sys.modules[__name__]))
