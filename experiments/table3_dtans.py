"""dtANS paper, Table III: the share of matrices on which CSR-dtANS SpMV is faster than the
fastest cuSPARSE format (CSR, COO or SELL, those timed; see fig7_dtans.py), cold L2, by total
nonzeros (<= 2^20, <= 2^25, > 2^25) and average nonzeros per row (<= 10, > 10), for 64- and
32-bit values, over all matrices and the local SuiteSparse and synthetic ones apart.

Rows: the cells (success/total). The timings are fig7_dtans's (the same settings) from
results/<this device>/fig7_dtans.json measured by the same commit on this GPU, also when fig7
was stopped early and saved part of them (``rows_partial``, ``not_measured``); nothing is
measured here unless ``--measure-missing-s SECONDS`` asks for what fig7's rows miss (all of
it without reusable fig7 results); without reusable fig7 results and that flag it fails at
once, saying why (as fig8_dtans; ``--quick`` measures its six small matrices itself).
Extras ``summary`` (best speedup, and the > 2^25 column: the issue's goal is a majority
faster in fp64 cold L2).

    python experiments/table3_dtans.py [--quick] [--plot-only] [--measure-missing-s SECONDS]
"""
from __future__ import annotations

import sys

from experiments import _dtans as D
from spmvlab import experiment as X
from spmvlab import plotting as P

NAME = "table3_dtans"
NEEDS_GPU = True
CACHE = "cold"


def config(quick: bool = False, **overrides) -> dict:
    """fig7_dtans's settings."""
    return X.make_config(NAME, D.GPU_FULL, D.GPU_QUICK, quick, overrides)


def cli(p):
    D.gpu_cli(p, reuser=True)


def measure(cfg: dict) -> dict:
    res = D.gpu_results(cfg, NAME)
    timing = res.pop("rows")
    return dict(res, rows=D.speed_cells(timing, CACHE, cfg["dtypes"]),
                summary=D.speed_summary(timing, CACHE, cfg["dtypes"]),
                baselines=D.baselines_timed(timing),
                pairs=D.pairs(timing, CACHE))


def plot(results: dict, fig_path: str) -> list[str]:
    timed = results.get("baselines", ["cusparse", "cusparse_coo"])   # files before SELL: CSR/COO
    return D.plot_cells(results, fig_path, f"dtANS paper Table III: CSR-dtANS SpMV faster than "
                        f"the fastest of cuSPARSE {D.baselines_text(timed=timed)}, cold L2")


def report(results: dict):
    for line in D.run_state(results):
        print(line)
    print(P.format_table([r for r in results["rows"] if r["source"] in ("all", "suitesparse")],
                         [("dtype", "dtype", ""), ("source", "source", ""),
                          ("nnz_per_row", "nnz/row", ""), ("nnz", "nnz", ""),
                          ("success", "faster", ""), ("total", "of", ""), ("rate", "rate", ".2f")]))
    for s in results.get("summary") or []:
        print(f"{s['dtype']}: best {s['best_speedup']:.2f}x ({s['best_matrix']}); > 2^25 nnz: "
              f"{s['large_faster']}/{s['large']} faster")


if __name__ == "__main__":
    sys.exit(X.main(sys.modules[__name__]))
