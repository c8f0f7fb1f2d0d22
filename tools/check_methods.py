"""Every timed method on the GPU, SpMV and SpMM: does each build, pass the one check, and time?

    python tools/check_methods.py [--shape 4096 11008] [--sparsity 0.5] [--k 8] [--out FILE]

For each value dtype (float16, float32) and right-hand-side count (SpMV, SpMM with ``--k``
columns) it runs ``spmvlab.methods.measure`` over every name ``methods.names()`` knows on one
``datasets.uniform`` matrix, prints one line per method (check, median us, TB/s, speedup over
cuBLAS) and writes the rows with the run metadata to results/<device>/check_methods.json. Methods a problem does not suit
(float16 for cusparse_coo, SpMM for the GEMV-only methods) are listed as skipped.
"""
from __future__ import annotations

import argparse
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main(argv=None) -> int:
    from spmvlab import datasets, experiment, methods, plotting, runinfo
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shape", type=int, nargs=2, default=[4096, 11008])
    p.add_argument("--sparsity", type=float, default=0.5)
    p.add_argument("--k", type=int, default=8, help="SpMM right-hand sides")
    p.add_argument("--reps", type=int, default=30)
    p.add_argument("--out", default=None, help="JSON path (default results/<device>/check_methods.json)")
    a = p.parse_args(argv)
    rows = []
    for dtype in ("float16", "float32"):
        # drawn in each dtype: float32 normals would underflow to float16 subnormals
        A = datasets.uniform(tuple(a.shape), a.sparsity, dtype=dtype, seed=0)
        for k in (None, a.k):
            prob = methods.Problem.make(A, dtype, k=k)
            names = [n for n in methods.names() if prob.kind in methods.resolve(n).kinds]
            rows += methods.measure_problem(prob, names, reps=a.reps, keep_going=True,
                                            extra=dict(sparsity=a.sparsity))
    cols = [("dtype", "dtype", ""), ("k", "k", ""), ("method", "method", ""),
            ("check_passed", "ok", ""), ("median_us", "us", ".1f"), ("tb_s", "TB/s", ".2f"),
            ("speedup_vs_cublas", "x cuBLAS", ".2f"), ("error", "error", "")]
    for r in rows:
        if "error" in r:
            r["error"] = r["error"][:70]
    print(plotting.format_table(rows, cols))
    bad = [r for r in rows if r.get("check_passed") is False or "error" in r]
    print(f"{len(rows)} rows, {len(bad)} failed or unavailable")
    path = experiment.save_results(a.out or "check_methods", rows, dict(vars(a)), meta=runinfo.run_metadata())
    print("wrote", os.path.relpath(path, ROOT))
    return 0


if __name__ == "__main__":
    sys.exit(main())
