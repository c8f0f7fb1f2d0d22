"""GeneralSparse's generated kernels on the GPU: every supported strategy of a few small
matrices, checked; a sample timed. The first thing to run on a new GPU (and after the
generator changes): it exercises compile, upload, launch and the check of every reduction
path, with and without the code optimizer.

    python tools/gs_device_sweep.py [--ns 1,3,8,32,64] [--per-case 8] [--time 4] [--out FILE]

Default: 20 cases x 8 strategies (evenly spaced over the candidates, plus the shortlist's
that are not among them) x 2 builds, about 3-5 min on an H200 (each optimized build compiles
its own kernel, ~0.3-1 s); ``--per-case 0`` builds every candidate (~2000 compiles).

Matrices: a 300x260 random matrix with an empty row and one long row, the mpnet attention
weight pruned 90 % by magnitude (fp16 only), bcsstk13 (fp32 only); dtypes float16 and
float32. For each (matrix, dtype, N): ``--per-case`` candidates (``spmvlab.tune.candidates``,
evenly spaced; all with 0) plus the default shortlist, built with the code
optimizer on (offsets compressed) and off (offsets loaded, one kernel per strategy), each
checked against the float64 product on the GPU. ``--time`` strategies per case (evenly
spaced) are then timed (cold L2, median of 20), with cuSPARSE and our CSR SpMM beside them.
Prints a summary and failures; writes every row with the run metadata to
results/<device>/gs_device_sweep.json (or ``--out``).
"""
from __future__ import annotations

import argparse
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)


def _matrices():
    import numpy as np
    import scipy.sparse as sp
    from spmvlab import datasets
    rng = np.random.default_rng(20261123)
    A = sp.random(300, 260, density=0.05, format="lil", random_state=rng)
    A[7, :] = 0
    A[11, :200] = rng.standard_normal(200)
    yield "random300x260", A.tocsr(), ("float16", "float32")
    try:
        W = datasets.load_dense("mpnet_L00_attn_q").astype("float32")
        yield "mpnet_attn_q_mag90", sp.csr_matrix(datasets.prune(W, 0.9, "magnitude", per_row=False)), ("float16",)
        yield "HB/bcsstk13", datasets.suitesparse("HB/bcsstk13", dtype="float32", download=False), ("float32",)
    except Exception as exc:       # noqa: BLE001 (no data folder: the synthetic matrix only)
        print(f"skipping the real matrices: {exc}", file=sys.stderr)


def main(argv=None) -> int:
    import numpy as np
    from spmvlab import experiment, methods, runinfo, tune
    from spmvlab.methods.generalsparse import GeneralSparse
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ns", type=lambda t: [int(v) for v in t.split(",")], default=[1, 3, 8, 32, 64])
    p.add_argument("--per-case", type=int, default=8, help="strategies per case (0: all)")
    p.add_argument("--time", type=int, default=4, help="strategies timed per case")
    p.add_argument("--out", default=None)
    a = p.parse_args(argv)
    rows, t_start = [], time.perf_counter()
    for name, A, dtypes in _matrices():
        for dt in dtypes:
            for n in a.ns:
                prob = methods.Problem.make(A, dt, k=n, seed=3, lossy=True)
                cands = tune.candidates(prob.A, n, dtype=dt)
                if a.per_case and len(cands) > a.per_case:
                    cands = [cands[i] for i in np.linspace(0, len(cands) - 1, a.per_case).astype(int)]
                cands += [s for s in tune.default_shortlist(n) if s not in cands]
                timed = set(np.linspace(0, len(cands) - 1, min(a.time, len(cands))).astype(int))
                for i, s in enumerate(cands):
                    for opt in (True, False):
                        row = dict(matrix=name, dtype=dt, n=n, strategy=s.label, optimize=opt)
                        try:
                            t0 = time.perf_counter()
                            m = GeneralSparse(prob, s, optimize=opt)
                            c = m.check()
                            row.update(check_passed=c.passed, max_rel_err=c.max_rel_err, n_bad=c.n_bad,
                                       reduction=m.row_extra["reduction"], offsets=m.row_extra["offsets"],
                                       build_check_s=round(time.perf_counter() - t0, 3))
                            if opt and i in timed:
                                row["median_us"] = m.time(reps=20, warmup=3).median_us
                        except Exception as exc:     # noqa: BLE001
                            row["error"] = f"{type(exc).__name__}: {exc}"[:400]
                        rows.append(row)
                base = methods.measure_problem(prob, ["cusparse", "csr_vector"], reps=20, warmup=3,
                                               keep_going=True, extra=dict(matrix=name, n=n))
                rows += [dict(r, baseline=True) for r in base]
                bad = [r for r in rows if r.get("matrix") == name and r.get("dtype") == dt and r.get("n") == n
                       and not r.get("baseline") and (r.get("error") or not r.get("check_passed"))]
                gs_t = [r["median_us"] for r in rows if r.get("matrix") == name and r.get("dtype") == dt
                        and r.get("n") == n and r.get("median_us") and not r.get("baseline")]
                base_t = {r["method"]: r.get("median_us") for r in base}
                print(f"{name:>20} {dt} N={n:<3} {len(cands):4d} strategies x2: {len(bad)} failed; "
                      f"timed best {min(gs_t) if gs_t else float('nan'):.1f} us, median "
                      f"{float(np.median(gs_t)) if gs_t else float('nan'):.1f} us; cuSPARSE "
                      f"{base_t.get('cusparse')}, csr_vector {base_t.get('csr_vector')} "
                      f"[{time.perf_counter() - t_start:.0f}s]", flush=True)
                for r in bad[:5]:
                    print("   FAIL", r["strategy"], "opt" if r["optimize"] else "loaded",
                          r.get("error") or f"max_rel_err {r.get('max_rel_err')} n_bad {r.get('n_bad')}")
    meta = runinfo.run_metadata()
    path = experiment.save_results(a.out or "gs_device_sweep", rows, vars(a), meta=meta)
    n_bad = sum(1 for r in rows if not r.get("baseline") and (r.get("error") or not r.get("check_passed")))
    print(f"{sum(1 for r in rows if not r.get('baseline'))} kernel builds, {n_bad} failed; wrote {path}")
    return 1 if n_bad else 0


if __name__ == "__main__":
    sys.exit(main())
