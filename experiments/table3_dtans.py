"""dtANS paper, Table III: Table II (``table2_dtans.py``, which says what the cells count and
where the timings come from) with a cold L2: fig7_dtans's cold rows, each timed call after a
read of a buffer twice the L2's size. The paper's goal for this table: a majority of the
matrices above 2^25 nonzeros faster in fp64.

    python experiments/table3_dtans.py [--quick] [--plot-only] [--measure-missing-s SECONDS]
"""
import sys

from experiments import _dtans as D
from spmvlab import experiment as X

NAME, NEEDS_GPU, CACHE = "table3_dtans", True, "cold"
DERIVED_FROM = D.SIBLING
config, cli, (measure, plot, report, derive) = (D.reuser_config(NAME), D.reuser_cli,
                                                D.speed_table(NAME, CACHE, "Table III"))

if __name__ == "__main__":
    sys.exit(X.main(sys.modules[__name__]))
