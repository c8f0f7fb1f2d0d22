"""One-off probe (issue 29): the generalsparse method's untimed default (the cost model's
pick) against cuBLAS, MACKO and CSR SpMM on seeded uniform fp16 LLM shapes, N = 8 and 32.

    python tools/probe_gs_default.py OUT.json   (env NSHAPES, NS, METHODS narrow it)
"""
import json, os, sys
from spmvlab import datasets, methods, runinfo
out = sys.argv[1]
rows = []
for (shape, s) in [((4096, 11008), 0.7), ((7168, 7168), 0.7), ((7168, 7168), 0.9)][:int(os.environ.get("NSHAPES", 3))]:
    A = datasets.uniform(shape, s, dtype="float16", seed=0)
    for N in [int(v) for v in os.environ.get("NS", "8 32").split()]:
        got = methods.measure(A, "float16", os.environ.get("METHODS", "cublas macko csr generalsparse").split(), k=N,
                              reps=20, warmup=3, keep_going=True,
                              extra=dict(matrix=f"uniform_{shape[0]}x{shape[1]}_{round(s*100)}", n=N))
        cb = next(r["median_us"] for r in got if r["method"] == "cublas")
        for r in got:
            us = r.get("median_us")
            print(f"{r['matrix']:22s} N={N:<3d} {r['method']:14s} {us if us else float('nan'):8.1f} us  x cuBLAS {cb / us if us else 0:5.2f}  ok {r.get('check_passed')}  {r.get('pick_source', '')} {r.get('predicted_us', '')} {r.get('strategy', '') if r['method']=='generalsparse' else ''} {r.get('error','')}", flush=True)
        rows += got
json.dump(dict(meta=runinfo.run_metadata(), rows=rows), open(out, "w"), default=str, indent=1)
