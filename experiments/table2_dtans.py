"""dtANS paper, Table II: the share of matrices on which CSR-dtANS SpMV is faster than the
fastest cuSPARSE format (CSR, COO or SELL, those timed; see fig7_dtans.py), warm L2, by total
nonzeros (<= 2^20, <= 2^25, > 2^25) and average nonzeros per row (<= 10, > 10), for 64- and
32-bit values, over all matrices and the local SuiteSparse and synthetic ones apart.

Rows: the cells (success/total). The timings are fig7_dtans's (the same settings) from
results/<this device>/fig7_dtans.json measured by the same commit on this GPU, also when fig7
was stopped early and saved part of them (``rows_partial``, ``not_measured``); nothing is
measured here unless ``--measure-missing-s SECONDS`` asks for what fig7's rows miss (all of
it without reusable fig7 results); without reusable fig7 results and that flag it fails at
once, saying why (as fig8_dtans; ``--quick`` measures its six small matrices itself). On a
machine without a GPU it is made from a device's saved fig7_dtans results, as fig8_dtans is.
Extras ``summary`` (best speedup, and the > 2^25 column: the issue's goal is a majority
faster in fp64 cold L2).

    python experiments/table2_dtans.py [--quick] [--plot-only] [--measure-missing-s SECONDS]
"""
import sys

from experiments import _dtans as D
from spmvlab import experiment as X

NAME, NEEDS_GPU, CACHE = "table2_dtans", True, "warm"
DERIVED_FROM = D.SIBLING
config, cli, (measure, plot, report, derive) = (D.reuser_config(NAME), D.reuser_cli,
                                                D.speed_table(NAME, CACHE, "Table II"))

if __name__ == "__main__":
    sys.exit(X.main(sys.modules[__name__]))
