"""Why the tuned GeneralSparse kernel loses to our CSR SpMM at N = 8 on the long-row weight
shapes (fig14_gs on the H200 at 06dd8fa: 7168x28672 magnitude 90 %, 248 us against CSR SpMM's
153 us; 9216x36864 random 90 %, 196 us against 94 us): the row-per-warp strategies of the
generated space, varied one setting at a time, timed on the whole matrix beside CSR SpMM
(``csr_vector``: a warp per row, 4 entries per lane per step, 32-bit columns) and MACKO.

    python tools/gs_rowwarp_ab.py [--cases 7168x28672:magnitude:0.9,...] [--ns 8] [--only REGEX] [--out FILE]

The matrices are fig14_gs's (``experiments/_gs.py``: seeded OPT-like weights, pruned over the
whole matrix, fp16). Variants (compact storage: 16-bit columns, rows from offsets; B gathered
``tc`` values at a time):

``row/warp cv vW``    a warp per row, each lane its own thread-group reading W consecutive
                      entries per step (interleaved storage), one warp per block (W = 8 is the
                      guarded search's anchor "row/warp cv")
``row/wg x4 cv vW``   four rows per block of four warps (the anchor "row/wg x4 cv" for W = 8)
``row/wg x8 cv vW``   eight rows per block of eight warps

each with the code optimizer off (offsets loaded, as the search times them) and, for the
anchors, on; then the anchors, the v4 and the x8 v8 variants with the cyclic thread division
(``cyc``: lanes take a row's entries in turns of W; "row/warp cv cyc" and "row/wg x4 cv cyc" are
anchors too). Every kernel is checked on the GPU first; times are medians of 20 cold-L2 runs.
Prints a table and writes every row with the run metadata (results/<device>/gs_rowwarp_ab.json
or ``--out``).

On the H200 (results/h200/gs_rowwarp_ab_06c1dd9_before_unmasked.json, then
gs_rowwarp_ab_88467f2.json, after the generator stopped masking each gather): the fastest variant took 205 ->
178 us on 7168x28672 (CSR SpMM 154-155 us) and 200 -> 187 us on 9216x36864 (CSR SpMM 93 us);
on 28672x7168 (short rows, CSR SpMM 61 us) the optimized "row/wg x4 cv" went 55 -> 60 us,
the other variants within 2 % of before.
Vector width 8 is the fastest width everywhere, and more warps per block change little. Their
SASS (tools/sass.py) is alike: 48 registers against CSR SpMM's 46, no spills, two or three
gathers of B in flight in both; the profiler (tools/profile_gs_rowwarp.py, ncu) showed the
difference in L1: 26 % of the generated kernel's loads hit there, 71 % of CSR SpMM's.
The cause was the lane order (tools/gs_lane_order_ab.py). With the cyclic thread division
(gs_rowwarp_ab.json at 156e0b1) the fastest variant takes 139 us on 7168x28672 (chunked 181,
CSR SpMM 156) and 92 us on 9216x36864 (chunked 184, CSR SpMM 94), both "row/wg x4 cv v8 cyc
+opt"; on 28672x7168 cyclic is 2-5 % slower than chunked (62.5 against 60.2 us, CSR SpMM 61).

Last, the code generator's options on the optimized cyclic anchors: ``pf`` (``prefetch``: the
next vector load of A issued before the current one's products), ``batch`` (a full load's
gathers of B written before its products) and both; every other variant is the plain kernel
(``batch=False``: kernels batch by default, float16 since that run, float32 since the
``--dtype float32`` run at 041ff09). At 3e06c79 (``results/h200/gs_rowwarp_ab_opts.json``,
7168x7168 and 9216x36864 magnitude 70 %, N = 8 and 32) batch took 6-11 % off the plain kernel
in all 8 cases (7168x7168 N = 8, row/warp: 50.5 -> 47.3 us), pf 4-9 %, both 3-13 %; with
float32 (``gs_rowwarp_ab_opts_fp32.json``, N = 8/32/64) batch 3-35 % in all 12 cases
(7168x7168 N = 8, row/warp: 126.6 -> 85.7 us), pf 10-31 %, both 21-34 % (better than batch
alone in 4 of 12: 7168x7168 N = 32 and 64). ``--only`` keeps the variants whose label matches a
regular expression (the baselines always run).
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import re
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "experiments")]

CASES = "7168x28672:magnitude:0.9,9216x36864:random:0.9,28672x7168:random:0.9"


def variants(N: int, dtype: str = "float16"):
    """(label, strategy, optimize, code options) of the A/B, anchors first."""
    from spmvlab.tune import search
    rw = search._compact_variant(N, dtype, "row/warp cv")
    wg = search._compact_variant(N, dtype, "row/wg x4 cv")
    M = type(wg.block)("multi", False)
    out = [(f"row/warp cv v{rw.vector_width} (anchor)", rw, False),
           (f"row/warp cv v{rw.vector_width} (anchor) +opt", rw, True),
           (f"row/wg x4 cv v{wg.vector_width} (anchor)", wg, False),
           (f"row/wg x4 cv v{wg.vector_width} (anchor) +opt", wg, True)]
    for w in (4, 2):
        out.append((f"row/warp cv v{w}", dataclasses.replace(rw, vector_width=w), False))
        out.append((f"row/wg x4 cv v{w}", dataclasses.replace(wg, vector_width=w), False))
    for w in (8, 4):
        out.append((f"row/wg x8 cv v{w}", dataclasses.replace(wg, block=M, block_size=8, warps_per_block=8,
                                                             vector_width=w), False))
    # the cyclic thread division (lanes take the row's entries in turns): the anchors and v4, x8
    cyc = [(label.replace(" (anchor)", "").replace(" +opt", "") + " cyc" + (" +opt" if opt else ""),
            dataclasses.replace(s, cyclic=True), opt)
           for label, s, opt in out if "(anchor)" in label or " v4" in label or "x8 cv v8" in label]
    # code options of the generator on the cyclic anchors (the fig14 picks' kind): the next
    # load of A issued first (pf), a load's gathers of B written first (batch), both
    opts = [(label + tag, s, opt, kw) for label, s, opt in cyc if label.endswith("cyc +opt")
            for tag, kw in ((" pf", dict(prefetch=True, batch=False)), (" batch", dict(batch=True)),
                            (" pf+batch", dict(prefetch=True, batch=True)))]
    return [(label, s, opt, dict(batch=False)) for label, s, opt in out + cyc] + opts   # plain: no option


def main(argv=None) -> int:
    import numpy as np  # noqa: F401
    import _gs
    from spmvlab import experiment, methods, runinfo
    from spmvlab.methods.generalsparse import GeneralSparse
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", default=CASES, help="comma-separated RxC:pruning:sparsity")
    ap.add_argument("--ns", default="8")
    ap.add_argument("--only", default=None, help="regular expression over the variant labels")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--dtype", default="float16", choices=("float16", "float32"),
                    help="value dtype of A and B (float32: the same matrices, values as float32)")
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)
    t_start = time.perf_counter()
    rows, table = [], []
    for case in a.cases.split(","):
        t0 = time.perf_counter()
        shape, pruning, sparsity, A = _gs.case_matrix(case)
        print(f"{case}: nnz {A.nnz} ({time.perf_counter() - t0:.0f} s to draw)", flush=True)
        for n in [int(v) for v in a.ns.split(",")]:
            p = methods.Problem.make(A, a.dtype, k=n, seed=1, lossy=True)
            extra = dict(case=case, shape=list(shape), pruning=pruning, sparsity=sparsity, n=n, dtype=a.dtype)
            for r in methods.measure_problem(p, ["csr_vector", "macko", "cublas"], reps=a.reps, warmup=3,
                                             keep_going=True, extra=extra):
                rows.append(r)
                table.append((case, n, r["method"], r.get("median_us"), r.get("check_passed"), ""))
            for label, s, opt, kw in variants(n, a.dtype):
                if a.only and not re.search(a.only, label):
                    continue
                row = dict(extra, method="generalsparse", variant=label, optimize=opt, strategy=s.label, **kw)
                t1 = time.perf_counter()
                try:
                    m = GeneralSparse(p, s, optimize=opt, **kw)
                    c = m.check()
                    t = m.time(reps=a.reps, warmup=3, cold=True)
                    row.update(check_passed=c.passed, median_us=t.median_us, p10_us=t.p10_us,
                               p90_us=t.p90_us, format_bytes=m.format_bytes,
                               bytes_per_nnz=m.format_bytes / A.nnz)
                    m.close()
                except Exception as exc:      # noqa: BLE001 (recorded, the A/B goes on)
                    row["error"] = f"{type(exc).__name__}: {exc}"[:300]
                row["build_time_s"] = round(time.perf_counter() - t1, 2)
                rows.append(row)
                table.append((case, n, label, row.get("median_us"), row.get("check_passed"),
                              f"{row.get('bytes_per_nnz', float('nan')):.2f} B/nnz" if "error" not in row
                              else row["error"][:60]))
                print(f"  N={n} {label:28s} {row.get('median_us', float('nan')):8.1f} us "
                      f"[{time.perf_counter() - t_start:.0f}s]", flush=True)
            del p
        del A
    path = experiment.save_results(a.out or "gs_rowwarp_ab", rows, vars(a), meta=runinfo.run_metadata())
    print(f"\n{'case':28s} {'N':>3s} {'method / variant':32s} {'median us':>10s} check")
    for case, n, what, us, ok, note in table:
        print(f"{case:28s} {n:3d} {what:32s} {us if us is not None else float('nan'):10.1f} {ok} {note}")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
