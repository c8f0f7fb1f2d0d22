"""dtANS paper, Fig. 8: as Fig. 7 (``fig7_dtans.py``, which documents the baselines, the
matrices and the SELL baseline through ctypes), with a cold L2 (a 2 x L2 buffer read before every timed
call). The rows are fig7_dtans's cold timings from results/<this device>/fig7_dtans.json,
measured with the same settings by the same commit on this GPU (run fig7_dtans first: then
this takes seconds), also when fig7 was stopped early and saved part of them (``rows_partial``;
what is missing is listed in ``not_measured``). Nothing is measured here unless asked:
``--measure-missing-s SECONDS`` measures what fig7's rows miss (everything, without reusable
fig7 results) within that many seconds; without reusable fig7 results and without that flag
it fails at once, saying why (``_dtans.gpu_results``). ``--quick`` measures its six small
matrices itself (``measure_missing_s`` = 120 there). On a machine without a GPU it is made
from a device's saved fig7_dtans results of the same settings, whichever commit measured
them (``_dtans.reuser``: no GPU time; the results carry the meta of the run that measured the
rows), so a change to this figure needs no new measurement.

    python experiments/fig8_dtans.py [--quick] [--plot-only] [--measure-missing-s SECONDS]
"""
from __future__ import annotations

import sys

from experiments import _dtans as D
from spmvlab import experiment as X
from spmvlab import plotting as P

NAME = "fig8_dtans"
NEEDS_GPU = True
CACHE = "cold"
DERIVED_FROM = D.SIBLING


config = D.reuser_config(NAME)
cli = D.reuser_cli


def _finish(res: dict, cfg: dict) -> dict:
    res["rows"] = [r for r in res["rows"] if r.get("cache", CACHE) == CACHE]
    return res


measure, derive = D.reuser(NAME, _finish)


def plot(results: dict, fig_path: str) -> list[str]:
    return D.plot_speed(results, fig_path, CACHE, "Fig. 8")


def report(results: dict):
    for line in D.run_state(results):
        print(line)
    cols = [("matrix", "matrix", ""), ("dtype", "dtype", ""), ("nnz", "nnz", ""),
            ("baseline", "fastest", ""), ("speedup", "speedup", ".2f"), ("size_ratio", "size", ".2f")]
    print(P.format_table(sorted(D.pairs(results["rows"], CACHE), key=lambda r: (r["dtype"], r["nnz"])), cols))
    for line in D.summary_lines(results, CACHE):
        print(line)


if __name__ == "__main__":
    sys.exit(X.main(sys.modules[__name__]))
