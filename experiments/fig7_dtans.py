"""dtANS paper, Fig. 7: SpMV time of CSR-dtANS relative to the fastest cuSPARSE format against
its relative size, warm L2, 64- and 32-bit values. This run also times every matrix cold
(L2 read-flushed before every call): fig8_dtans, table2_dtans and table3_dtans reuse its rows
(``experiments/_dtans.py``: ``reuse_rows`` when they run after it on the same device and
commit; ``reuser``'s derive on a machine without a GPU, from any commit's saved run), so one
measurement serves all four.

Baselines: the paper's three cuSPARSE formats, the fastest per matrix: CSR and COO SpMV through
CuPy (``spmvlab.methods``: ``cusparse``, ``cusparse_coo``) and SELL with slices of 32
(``cusparse_sell``: CuPy binds no ``cusparseCreateSlicedEll``, so
``spmvlab.methods.cusparse_sell`` calls the device's libcusparse through ctypes with
``CUSPARSE_SPMV_SELL_ALG1``). A baseline that cannot be built or fails its check on a matrix
gets an ``error`` row and drops out of that matrix's choice; the figure titles name the
baselines the rows hold. Ours: ``csr_dtans`` (``spmvlab.kernels.csr_dtans``, decode on the
fly, encoded by the fast encoder on the host); beside it, beyond the paper, the config's
``variants``: ``csr_dtans[first_delta=diagonal,rows_per_lane=auto]`` (each row's first delta
from its row index, short rows packed several to a lane where x's gathers are local; its rows'
``stored_options`` say how many), in the report's summary only (the figure and the tables are
the paper's layout). Every method is checked on the GPU against the float64 product before it
is timed (median of ``reps`` calls).

Matrices, in this order: the local SuiteSparse matrices (``SPMVLAB_DATA``), then seeded
synthetic ones (small value alphabets; ``experiments/_dtans.py``): eight families at 2^26 and
``banded17`` at 2^27 (the paper's > 2^25 column), four at 2^24, and every family at 2^22.
Runtime: minutes on an H200 machine, almost all of it on the host CPU (generation, fast
encoding in both value types, SELL layout, COO arrays and the reference product);
docs/experiments.md lists each saved run's duration. On the GPU a call is short at 2^26-2^27
nonzeros (5 to 44 nonzeros per row: every lane's row is short), but one lane decodes a whole
row, so power_law8/32 at 2^22 (longest rows 198018 and 131072 nonzeros) are far slower per
call: ``method_cap_s`` = 5 s cuts their reps (``reps_capped``, at least 3). ``budget_s`` =
530: no matrix, value type or method is begun after it, nor a matrix expected to end after it
(target nonzeros x the median seconds per nonzero of the largest matrices so far,
``_dtans.expected_s_per_nnz``); skipped ones are listed in ``skipped``. The results file is
rewritten after every matrix (``"partial": true`` and ``done`` until the end) and on SIGTERM
(what ``timeout`` sends: the rows of the methods done and ``stopped``), so a run killed by a
time limit keeps what it measured and fig8/table2/table3 and ``--plot-only`` work on it. One
stderr line per method gives its build, check and timing seconds. ``to_device`` checks a
CSR-dtANS matrix on the device from ``spmvlab.kernels.csr_dtans.HOST_CHECK_MAX_NNZ`` nonzeros
on, because the reference's Python decoder on the host is too slow for the large matrices.
``--quick``: six small matrices.

    python experiments/fig7_dtans.py [--quick] [--plot-only] [--budget-s S] [--method-cap-s S]
"""
from __future__ import annotations

import sys

from experiments import _dtans as D
from spmvlab import experiment as X
from spmvlab import plotting as P

NAME = "fig7_dtans"
NEEDS_GPU = True
CACHE = "warm"


def config(quick: bool = False, **overrides) -> dict:
    """``real`` None: every local SuiteSparse matrix; ``large``: [family, log2 nnz] pairs."""
    return X.make_config(NAME, D.GPU_FULL, D.GPU_QUICK, quick, overrides)


def cli(p):
    D.gpu_cli(p)


def cells(cfg: dict) -> list[dict]:
    """A cluster sweep's cells (``--cluster``, ``spmvlab.cluster``): one per matrix, in
    measure's order, each the config with ``cell_matrix`` naming it."""
    return [dict(cfg, cell_matrix=name) for name, *_ in D.matrices_gpu(cfg)]


def measure(cfg: dict) -> dict:
    one = cfg.get("cell_matrix")             # a cluster sweep's cell: that matrix alone
    return D.measure_gpu(cfg, NAME, only=None if one is None else {one: {}})


def plot(results: dict, fig_path: str) -> list[str]:
    return D.plot_speed(results, fig_path, CACHE, "Fig. 7")


def throughput(results: dict) -> list[dict]:
    """CSR-dtANS decode rate (symbols/s, two per nonzero, cold L2; and per SM per clock, at
    the GPU's SM count and the clock it reports) beside the rate that would read its bytes
    at the measured copy bandwidth (``needed``) and the share reached, for the matrices of
    2^23 nonzeros and more."""
    bw = (results.get("copy_bandwidth") or {}).get("tb_s")
    dev = (results.get("meta") or {}).get("device") or {}
    sm_hz = (dev.get("sm_count") or 0) * (dev.get("clock_khz") or 0) * 1e3
    out = []
    for p in D.pairs(results["rows"], "cold"):
        if p["nnz"] >= 2 ** 23 and bw:
            need = 2 * p["nnz"] * bw * 1e12 / p["dtans_bytes"]
            out.append(dict(matrix=p["matrix"], dtype=p["dtype"], nnz=p["nnz"],
                            symbols_per_s=p["symbols_per_s"], needed_symbols_per_s=need,
                            share=p["symbols_per_s"] / need, dtans_tb_s=p["dtans_tb_s"],
                            speedup=p["speedup"],
                            **({"symbols_per_sm_clock": p["symbols_per_s"] / sm_hz} if sm_hz else {})))
    return out


def report(results: dict):
    for line in D.run_state(results):
        print(line)
    split = D.wall_split(results)
    if split:
        print(split)
    cols = [("matrix", "matrix", ""), ("dtype", "dtype", ""), ("nnz", "nnz", ""),
            ("baseline", "fastest", ""), ("baseline_us", "base us", ".1f"), ("dtans_us", "dtANS us", ".1f"),
            ("speedup", "speedup", ".2f"), ("size_ratio", "size", ".2f")]
    for cache in results["config"]["caches"]:
        print(f"-- {cache} L2")
        print(P.format_table(sorted(D.pairs(results["rows"], cache), key=lambda r: (r["dtype"], r["nnz"])), cols))
        for line in D.summary_lines(results, cache):
            print(line)
    errors = [r for r in results["rows"] if "error" in r]
    for r in errors[:10]:
        print(f"error: {r['matrix']} {r['dtype']} {r['method']}: {r['error']}")
    t = throughput(results)
    if t:
        print(P.format_table(t, [("matrix", "matrix", ""), ("dtype", "dtype", ""),
                                 ("symbols_per_s", "symbols/s", ".3g"),
                                 ("symbols_per_sm_clock", "per SM-clock", ".2f"),
                                 ("needed_symbols_per_s", "at copy BW", ".3g"), ("share", "share", ".2f")]))


if __name__ == "__main__":
    sys.exit(X.main(sys.modules[__name__]))
