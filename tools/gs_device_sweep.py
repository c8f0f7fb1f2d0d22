"""GeneralSparse's generated kernels on the GPU: every supported strategy of a few small
matrices, checked; a sample timed; then the compact + vector-load strategies on LLM weight
shapes beside cuBLAS GEMM fp16 and cuSPARSE. The first thing to run on a new GPU (and after
the generator changes): it exercises compile, upload, launch and the check of every reduction
path, with and without the code optimizer.

    python tools/gs_device_sweep.py [--parts big,small] [--ns 1,3,8,32,64] [--per-case 8]
                                    [--time 4] [--big-ns 8,32,64] [--budget-s 270] [--out FILE]

Part ``big`` (first): random-pruned float16 weights (seeded, uniform mask) of 7168x7168 and
28672x7168 at 70 and 90 % sparsity, N = 8, 32, 64 (``--big-ns``): the compact shortlist
strategies with four warps per block (``spmvlab.generalsparse.tune.default_shortlist(N, "float16")``:
"row/wg x4 cv", and "row/wg x4 cv16" for N > 16), each checked on the GPU and timed (cold L2,
median of 20), with cuBLAS GEMM fp16 (method "cublas", k = N) and cuSPARSE SpMM; prints the
bytes per nonzero (and per weight) each kernel reads and its speedup over both. Minutes on a
GPU, most of it drawing the matrices and planning their nonzeros in NumPy.

Part ``small``: 20 cases x ``--per-case`` strategies (evenly spaced over the candidates, plus
the default shortlist for the case's dtype, compact ones included, plus one candidate for each
block reduction over several warp-groups, BLOCK_TOTAL/BITMAP/SEGMENT with and without atomic
block ends, that the sample lacks; a summary line counts their builds and failures) x 2 builds (each optimized
build compiles its own kernel); ``--per-case 0`` builds every candidate (~4000
compiles). No case is begun after ``--budget-s`` seconds from the start (the rest are listed
as skipped), so that the whole run stays near the budget.

Matrices: a 300x260 random matrix with an empty row and one long row, the mpnet attention
weight pruned 90 % by magnitude (fp16 only), bcsstk13 (fp32 only); dtypes float16 and
float32. For each (matrix, dtype, N): ``--per-case`` candidates (``spmvlab.generalsparse.tune.candidates``,
evenly spaced; all with 0) plus the default shortlist, built with the code
optimizer on (offsets compressed) and off (offsets loaded, one kernel per strategy), each
checked against the float64 product on the GPU. ``--time`` strategies per case (evenly
spaced) are then timed (cold L2, median of 20), with cuSPARSE and our CSR SpMM beside them.
Prints a summary and failures; writes every row with the run metadata to
results/<device>/gs_device_sweep.json (or ``--out``).
"""
from __future__ import annotations

import argparse
import gc
import sys
import time



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


BIG_SHAPES = ((7168, 7168), (28672, 7168))
BIG_SPARSITIES = (0.7, 0.9)


def _random_pruned(shape, sparsity: float, seed: int = 0):
    """float16 values (held in float32) under a uniform random mask keeping 1 - sparsity of
    the entries, as CSR (seeded; no exact zeros)."""
    import numpy as np
    import scipy.sparse as sp
    m, k = shape
    rng = np.random.default_rng([seed, m, k, int(round(sparsity * 1000))])
    mask = rng.random((m, k), dtype=np.float32) >= sparsity
    rows, cols = np.nonzero(mask)
    del mask
    vals = rng.standard_normal(rows.size, dtype=np.float32).astype(np.float16).astype(np.float32)
    vals[vals == 0] = 1.0
    indptr = np.r_[0, np.cumsum(np.bincount(rows, minlength=m))].astype(np.int64)
    return sp.csr_matrix((vals, cols.astype(np.int32), indptr), shape=(m, k))


def big_part(ns, rows: list, t_start: float) -> int:
    """The compact strategies on the weight shapes beside cuBLAS and cuSPARSE; returns the
    number of failed GeneralSparse builds/checks."""
    from spmvlab import methods
    from spmvlab.generalsparse import planner, tune
    from spmvlab.generalsparse.method import GeneralSparse
    n_bad = 0
    print("part big: float16, random pruning; GS = compact + vector-load strategies (row/wg x4 cv[16])",
          flush=True)
    for shape in BIG_SHAPES:
        for sparsity in BIG_SPARSITIES:
            t0 = time.perf_counter()
            A = _random_pruned(shape, sparsity)
            weights = shape[0] * shape[1]
            print(f"{shape[0]}x{shape[1]} {sparsity:.0%}: nnz {A.nnz} (drawn in "
                  f"{time.perf_counter() - t0:.1f} s)", flush=True)
            for n in ns:
                prob = methods.Problem.make(A, "float16", k=n, seed=3, lossy=True)
                extra = dict(part="big", shape=list(shape), sparsity=sparsity, n=n)
                base = methods.measure_problem(prob, ["cublas", "cusparse"], reps=20, warmup=3,
                                               keep_going=True, extra=extra)
                rows += [dict(r, baseline=True) for r in base]
                bt = {r["method"]: r.get("median_us") for r in base}
                line = [f"  N={n:<3} cuBLAS {bt.get('cublas') or float('nan'):8.1f} us  cuSPARSE "
                        f"{bt.get('cusparse') or float('nan'):9.1f} us"]
                for s in tune.default_shortlist(n, "float16"):
                    if not (s.compact and s.warps_per_block == 4):
                        continue
                    row = dict(extra, dtype="float16", strategy=s.label, optimize=True)
                    try:
                        t1 = time.perf_counter()
                        m = GeneralSparse(prob, s)
                        c = m.check()
                        us = m.time(reps=20, warmup=3).median_us
                        row.update(check_passed=c.passed, max_rel_err=c.max_rel_err, n_bad=c.n_bad,
                                   median_us=us, format_bytes=m.format_bytes,
                                   bytes_per_nnz=m.format_bytes / A.nnz,
                                   bytes_per_weight=m.format_bytes / weights,
                                   col_bits=m.plan.col_bits, build_check_s=round(time.perf_counter() - t1, 2))
                        for b in ("cublas", "cusparse"):
                            if bt.get(b):
                                row[f"speedup_{b}"] = bt[b] / us
                        tag = "" if c.passed else " CHECK FAILED"
                        line.append(f"    {'cv16' if s.warp_cols == 16 < n else 'cv  '} {us:8.1f} us "
                                    f"{row['bytes_per_nnz']:.2f} B/nnz ({row['bytes_per_weight']:.2f} B/weight) "
                                    f"x{row.get('speedup_cublas', float('nan')):.2f} vs cuBLAS, "
                                    f"x{row.get('speedup_cusparse', float('nan')):.1f} vs cuSPARSE{tag}")
                        n_bad += 0 if c.passed else 1
                        m.close()
                    except Exception as exc:     # noqa: BLE001
                        row["error"] = f"{type(exc).__name__}: {exc}"[:400]
                        line.append(f"    ERROR {s.label}: {row['error']}")
                        n_bad += 1
                    rows.append(row)
                print("\n".join(line) + f"  [{time.perf_counter() - t_start:.0f}s]", flush=True)
                del prob
            del A
            planner._PLANS.clear()
            gc.collect()
    return n_bad


def _block_extras(all_cands: list, cands: list) -> list:
    """One candidate per (block reduction, atomic) over several warp-groups that ``cands``
    does not yet hold (BLOCK_TOTAL, BLOCK_BITMAP, BLOCK_SEGMENT; shared memory, one barrier)."""
    import reference.generalsparse as GS

    def key(s):
        red = GS.select_reduction(s, 2)
        return (red.block, red.atomic) if red.block and s.groups_per_block > 1 else None

    have = {key(s) for s in cands}
    out = []
    for s in all_cands:
        k = key(s)
        if k is not None and k not in have:
            have.add(k)
            out.append(s)
    return out


def main(argv=None) -> int:
    import numpy as np
    from spmvlab import experiment, methods, runinfo
    from spmvlab.generalsparse import tune
    from spmvlab.generalsparse.method import GeneralSparse
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ns", type=lambda t: [int(v) for v in t.split(",")], default=[1, 3, 8, 32, 64])
    p.add_argument("--per-case", type=int, default=8, help="strategies per case (0: all)")
    p.add_argument("--time", type=int, default=4, help="strategies timed per case")
    p.add_argument("--out", default=None)
    p.add_argument("--parts", type=lambda t: t.split(","), default=["big", "small"])
    p.add_argument("--big-ns", type=lambda t: [int(v) for v in t.split(",")], default=[8, 32, 64])
    p.add_argument("--budget-s", type=float, default=270.0,
                   help="no small case is begun after this many seconds")
    a = p.parse_args(argv)
    rows, t_start = [], time.perf_counter()
    n_big_bad = big_part(a.big_ns, rows, t_start) if "big" in a.parts else 0
    skipped = []
    for name, A, dtypes in (_matrices() if "small" in a.parts else ()):
        for dt in dtypes:
            for n in a.ns:
                if time.perf_counter() - t_start > a.budget_s:
                    skipped.append(f"{name} {dt} N={n}")
                    continue
                prob = methods.Problem.make(A, dt, k=n, seed=3, lossy=True)
                cands = all_cands = tune.candidates(prob.A, n, dtype=dt)
                if a.per_case and len(cands) > a.per_case:
                    cands = [cands[i] for i in np.linspace(0, len(cands) - 1, a.per_case).astype(int)]
                cands += [s for s in tune.default_shortlist(n, dt) if s not in cands]
                cands += _block_extras(all_cands, cands)
                timed = set(np.linspace(0, len(cands) - 1, min(a.time, len(cands))).astype(int))
                for i, s in enumerate(cands):
                    for opt in (True, False):
                        row = dict(matrix=name, dtype=dt, n=n, strategy=s.label, optimize=opt,
                                   warp_groups=s.groups_per_block)
                        try:
                            t0 = time.perf_counter()
                            m = GeneralSparse(prob, s, optimize=opt)
                            c = m.check()
                            row.update(check_passed=c.passed, max_rel_err=c.max_rel_err, n_bad=c.n_bad,
                                       reduction=m.row_extra["reduction"], offsets=m.row_extra["offsets"],
                                       bytes_per_nnz=m.row_extra["bytes_per_nnz"], compact=s.compact,
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
    if skipped:
        print(f"budget of {a.budget_s:.0f} s spent: {len(skipped)} small cases not begun: {', '.join(skipped)}")
    blk = [r for r in rows if not r.get("baseline") and r.get("warp_groups", 1) > 1
           and "BLOCK_" in str(r.get("reduction"))]
    print(f"block reductions over several warp-groups: {len(blk)} builds, "
          f"{sum(1 for r in blk if r.get('error') or not r.get('check_passed'))} failed")
    meta = runinfo.run_metadata()
    path = experiment.save_results(a.out or "gs_device_sweep", rows, dict(vars(a), skipped=skipped), meta=meta)
    n_bad = sum(1 for r in rows if not r.get("baseline") and (r.get("error") or not r.get("check_passed")))
    print(f"{sum(1 for r in rows if not r.get('baseline'))} kernel builds, {n_bad} failed "
          f"({n_big_bad} in part big); wrote {path} [{time.perf_counter() - t_start:.0f}s]")
    return 1 if n_bad else 0


if __name__ == "__main__":
    sys.exit(main())
