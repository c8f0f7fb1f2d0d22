"""dtANS paper, Fig. 6: CSR-dtANS size against the smallest of cuSPARSE's CSR, COO and SELL
(slices of 32 rows), 64- and 32-bit values, for every matrix: the local SuiteSparse matrices
(``../shared/data/suitesparse`` through ``spmvlab.datasets``) and seeded synthetic ones
(``experiments/_dtans.py``: stencils, banded, Erdős–Rényi, Watts–Strogatz, Barabási–Albert,
power-law and uniform patterns from 2^8 to 2^22 nonzeros, small value alphabets). Measured on
the CPU (sizes only).

Per matrix and value width: the bytes of CSR, COO and SELL with int32 indices
(``reference.csr_dtans.cusparse_bytes``: CSR (rows + 1) * 4 + nnz * (4 + v); COO nnz * (8 + v);
SELL (slices + 1) * 4 plus each 32-row slice padded to its longest row, 4 + v bytes per
entry), the CSR-dtANS encoding (``spmvlab.encoders.csr_dtans``, the paper's parameters:
32-bit words, K = 4096, M = 256) and its parts (word streams, row lengths and warp pointers,
stored tables), the order-0 entropy bound of its two symbol domains
(``spmvlab.analysis.entropy.csr_symbol_entropy``: nnz x (H(deltas) + H(values)) bits) and
the cost of the same symbols under the matrix's own dtANS tables
(``spmvlab.analysis.entropy.table_bits``: log2(K / q) per symbol, raw words for escapes;
with M = 256 of K = 4096 slots no symbol costs less than 4 bits, so no nonzero less than 8).
The word streams exceed that table bound by the coder state of each row. Our
format stores its tables compactly (a symbol and a 2-byte slot count per kept symbol); the
paper counts the expanded K-slot tables of shared memory (64 KB for 64-bit, 48 KB for 32-bit
values, K x (value bytes + 8)), so ``dtans_bytes_paper_tables`` gives the size with those
instead. Values that do not fit 32 bits are rounded (``lossy=True``), as the paper converts
every matrix to the width.

    python experiments/fig6_dtans.py [--quick] [--plot-only]
"""
from __future__ import annotations

import sys
import time
import warnings

import numpy as np

from experiments import _dtans as D
from spmvlab import experiment as X
from spmvlab import plotting as P

NAME = "fig6_dtans"
NEEDS_GPU = False
FULL = dict(real=None, synthetic=list(D.FAMILIES), log2_nnz=[8, 10, 12, 14, 16, 18, 20, 22],
            dtypes=["float64", "float32"], params="paper", seed=0)
QUICK = dict(real=["HB/bcsstk13", "Gset/G51", "DIMACS10/cti"], synthetic=["stencil5", "watts20"],
             log2_nnz=[8, 12, 16])


def config(quick: bool = False, **overrides) -> dict:
    """``real`` None: every local SuiteSparse matrix (measure() records which)."""
    return X.make_config(NAME, FULL, QUICK, quick, overrides)


def sizes(A, dtype, params: str = "paper") -> dict:
    """One row of sizes for matrix ``A`` with values in ``dtype`` (see the module docstring)."""
    from reference import csr_dtans as R
    from reference._common import canonical_csr
    from spmvlab.analysis.entropy import csr_symbol_entropy, table_bits
    from spmvlab.encoders import csr_dtans as E
    dt = np.dtype(dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")          # values rounded to float32 (lossy by design)
        t0 = time.perf_counter()
        M = E.encode(A, dtype=dt, lossy=True, params=params)
        enc_s = time.perf_counter() - t0
        base = R.cusparse_bytes(A, dt, lossy=True)
        ent = csr_symbol_entropy(A, dt, lossy=True)
        tb = table_bits(M, canonical_csr(A, dt, lossy=True))
    best = min(base, key=base.get)
    K = M.dtans_params.K
    paper_tables = K * (dt.itemsize + 8)
    nnz, rows = int(M.nnz), int(M.n_rows)
    meta = int(M.row_lengths.nbytes + M.warp_ptr.nbytes)
    bound = ent["bound_bytes"]
    return dict(
        dtype=dt.name, shape=list(M.shape), nnz=nnz, nnz_per_row=nnz / max(rows, 1),
        csr_bytes=base["csr"], coo_bytes=base["coo"], sell_bytes=base["sell"], best_baseline=best,
        baseline_bytes=base[best], dtans_bytes=int(M.nbytes), words_bytes=int(M.words.nbytes),
        meta_bytes=meta, table_bytes=int(M.table_bytes), paper_table_bytes=paper_tables,
        dtans_bytes_paper_tables=int(M.nbytes) - int(M.table_bytes) + paper_tables,
        ratio=M.nbytes / base[best], compressed=bool(M.nbytes < base[best]),
        compressed_paper_tables=bool(int(M.nbytes) - int(M.table_bytes) + paper_tables < base[best]),
        kept_values=int(M.values.size), kept_deltas=int(M.deltas.size),
        value_escape_slots=int(M.value_counts[-1]), delta_escape_slots=int(M.delta_counts[-1]),
        h_deltas=ent["delta_bits"], h_values=ent["value_bits"], h_columns=ent["column_bits"],
        entropy_bytes=bound, stream_bits_per_nnz=8 * M.words.nbytes / max(nnz, 1),
        entropy_bits_per_nnz=ent["delta_bits"] + ent["value_bits"],
        stream_over_entropy=(M.words.nbytes / bound - 1) if bound else None,
        total_over_entropy=(M.nbytes / bound - 1) if bound else None,
        table_bound_bytes=tb["bound_bytes"], table_bits_per_nnz=8 * tb["bound_bytes"] / max(nnz, 1),
        stream_over_table=(M.words.nbytes / tb["bound_bytes"] - 1) if tb["bound_bytes"] else None,
        encode_s=enc_s)


def measure(cfg: dict) -> dict:
    jobs = list(D.matrices(cfg))
    rows, found = [], []
    for name, source, spec, load in X.progress(jobs, total=len(jobs), desc=NAME):
        A = load()
        if source == "suitesparse":
            found.append(name)
        for dt in cfg["dtypes"]:
            r = dict(matrix=name, source=source, family=spec["family"] if spec else "suitesparse")
            r.update(sizes(A, dt, cfg["params"]))
            rows.append(r)
    return dict(rows=rows, real_found=found)


def plot(results: dict, fig_path: str) -> list[str]:
    import matplotlib.colors as mcolors
    plt = P.pyplot()
    rows = results["rows"]
    dtypes = results["config"]["dtypes"]
    from matplotlib.lines import Line2D
    fig, axes = plt.subplots(1, len(dtypes), figsize=(P.PAGE_WIDTH, 3.5), squeeze=False,
                             sharex=True, sharey=True)
    norm = mcolors.LogNorm(vmin=1, vmax=64)
    lo = min([r["baseline_bytes"] for r in rows] + [1e3]) / 2
    hi = max([r["baseline_bytes"] for r in rows] + [1e4]) * 2
    xs = np.geomspace(lo, hi, 10)
    sc = None
    for ax, dt in zip(axes[0], dtypes):
        rs = [r for r in rows if r["dtype"] == dt]
        ax.plot(xs, xs, "k-", lw=0.9)
        ax.plot(xs, xs / 10, "k:", lw=0.9)
        ax.plot(xs, xs * 2, "k:", lw=0.9)
        ax.axhline(_pt(rows, dt), color="gray", ls="--", lw=0.8)
        for source, marker in (("suitesparse", "o"), ("synthetic", "^")):
            ss = [r for r in rs if r["source"] == source]
            if ss:
                sc = ax.scatter([r["baseline_bytes"] for r in ss], [r["dtans_bytes"] for r in ss],
                                c=[max(r["nnz_per_row"], 1) for r in ss], cmap="plasma", norm=norm,
                                marker=marker, s=12 if source == "synthetic" else 18,
                                edgecolors="k" if source == "suitesparse" else "none",
                                linewidths=0.4, zorder=3 if source == "suitesparse" else 2)
        ax.set(xscale="log", yscale="log", xlabel="smallest of CSR / COO / SELL (bytes)",
               title=f"{dt}: {sum(r['compressed'] for r in rs)} of {len(rs)} smaller")
        ax.grid(alpha=0.3, which="major")
    axes[0][0].set_ylabel("CSR-dtANS (bytes)")
    n = {src: len({r["matrix"] for r in rows if r["source"] == src}) for src in ("suitesparse", "synthetic")}
    handles = [Line2D([], [], color="k", lw=0.9, label="equal size"),
               Line2D([], [], color="k", ls=":", lw=0.9, label="10x smaller / 2x larger"),
               Line2D([], [], color="gray", ls="--", lw=0.8, label="paper's K-slot tables ("
                      + " / ".join(f"{dt}: {_pt(rows, dt) // 1024} KiB" for dt in dtypes) + ")"),
               Line2D([], [], ls="none", marker="o", mfc="0.6", mec="k", mew=0.4, ms=4.5,
                      label=f"SuiteSparse ({n['suitesparse']})"),
               Line2D([], [], ls="none", marker="^", mfc="0.6", mec="none", ms=4.5,
                      label=f"synthetic ({n['synthetic']})")]
    fig.suptitle("CSR-dtANS size vs the smallest cuSPARSE format (paper Fig. 6); "
                 "below the solid line: compressed")
    fig.tight_layout(rect=(0, 0.1, 0.9, 1))
    if sc is not None:
        cax = fig.add_axes((0.91, 0.2, 0.015, 0.65))
        bar = fig.colorbar(sc, cax=cax, label="average nonzeros per row")
        bar.set_ticks([1, 2, 4, 8, 16, 32, 64], labels=["1", "2", "4", "8", "16", "32", "64"])
        bar.ax.minorticks_off()
    fig.legend(handles=handles, loc="lower center", ncol=3, frameon=False, bbox_to_anchor=(0.45, 0.0))
    return P.savefig(fig, fig_path, tight=False)


def _pt(rows, dt) -> int:
    """The paper's expanded table bytes for value type ``dt`` (0 without rows)."""
    return next((r["paper_table_bytes"] for r in rows if r["dtype"] == dt), 0)


def best_compression(results: dict) -> list[dict]:
    """Per dtype: the largest baseline / CSR-dtANS ratio and its matrix."""
    out = []
    for dt in results["config"]["dtypes"]:
        rs = [r for r in results["rows"] if r["dtype"] == dt]
        if rs:
            b = min(rs, key=lambda r: r["ratio"])
            out.append(dict(dtype=dt, matrix=b["matrix"], factor=1 / b["ratio"]))
    return out


def goal(results: dict, source: str | None = None) -> list[dict]:
    """The issue's goals on matrices with >= 2^15 nonzeros and >= 10 per row, per dtype:
    ``compressed`` (k of n smaller than the smallest baseline) and the gap to the order-0
    entropy bound (``total_over_entropy``: all bytes; ``stream_over_entropy``: the word
    streams only) and to the tables' own bound (``stream_over_table``): median and max, and
    how many are within 5 %."""
    out = []
    for dt in results["config"]["dtypes"]:
        rs = [r for r in results["rows"] if r["dtype"] == dt and r["nnz"] >= 2 ** 15
              and r["nnz_per_row"] >= 10 and (source is None or r["source"] == source)
              and r["total_over_entropy"] is not None]
        if not rs:
            continue
        tot = [r["total_over_entropy"] for r in rs]
        st = [r["stream_over_entropy"] for r in rs]
        tt = [r["stream_over_table"] for r in rs if r["stream_over_table"] is not None]
        out.append(dict(dtype=dt, source=source or "all", n=len(rs),
                        compressed=sum(r["compressed"] for r in rs),
                        total_gap_median=float(np.median(tot)), total_gap_max=float(max(tot)),
                        within_5pct_total=sum(g <= 0.05 for g in tot),
                        stream_gap_median=float(np.median(st)), stream_gap_max=float(max(st)),
                        within_5pct_stream=sum(g <= 0.05 for g in st),
                        table_gap_median=float(np.median(tt)) if tt else None,
                        within_5pct_table=sum(g <= 0.05 for g in tt),
                        bits_per_nnz_median=float(np.median([8 * r["dtans_bytes"] / r["nnz"] for r in rs])),
                        entropy_bits_median=float(np.median([r["entropy_bits_per_nnz"] for r in rs])),
                        table_bits_median=float(np.median([r["table_bits_per_nnz"] for r in rs]))))
    return out


def real_table(results: dict) -> list[dict]:
    """Per real matrix: compression factor (baseline / CSR-dtANS) in each dtype."""
    out = {}
    for r in results["rows"]:
        if r["source"] == "suitesparse":
            d = out.setdefault(r["matrix"], dict(matrix=r["matrix"], nnz=r["nnz"],
                                                 nnz_per_row=r["nnz_per_row"]))
            d[f"factor_{r['dtype']}"] = 1 / r["ratio"]
            d[f"baseline_{r['dtype']}"] = r["best_baseline"]
            d[f"gap_{r['dtype']}"] = r["total_over_entropy"]
    return list(out.values())


def report(results: dict):
    cols = [("matrix", "matrix", ""), ("nnz", "nnz", ""), ("nnz_per_row", "nnz/row", ".1f"),
            ("factor_float64", "fp64 x", ".2f"), ("baseline_float64", "best", ""),
            ("factor_float32", "fp32 x", ".2f"), ("gap_float64", "fp64 over H0", ".2f")]
    print(P.format_table(sorted(real_table(results), key=lambda r: r["nnz"]), cols))
    for b in best_compression(results):
        print(f"best {b['dtype']}: {b['factor']:.2f}x ({b['matrix']})")
    for g in goal(results) + goal(results, "suitesparse"):
        print(f"goal, {g['source']} {g['dtype']} (>= 2^15 nnz, >= 10/row): {g['compressed']}/{g['n']} "
              f"smaller; over the entropy bound: median {100 * g['total_gap_median']:.1f} %, max "
              f"{100 * g['total_gap_max']:.1f} % ({g['within_5pct_total']} within 5 %); streams alone "
              f"median {100 * g['stream_gap_median']:.1f} % ({g['within_5pct_stream']} within 5 %); "
              f"streams over the tables' own bound: median {100 * (g['table_gap_median'] or 0):.1f} % "
              f"({g['within_5pct_table']} within 5 %); bits/nnz median: stored "
              f"{g['bits_per_nnz_median']:.1f}, H0 {g['entropy_bits_median']:.1f}, tables "
              f"{g['table_bits_median']:.1f}")


if __name__ == "__main__":
    sys.exit(X.main(sys.modules[__name__]))
