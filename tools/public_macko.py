"""Build and run the MACKO authors' public CUDA benchmark from a checkout (never part of
spmvlab; see spmvlab/anchors.py for how it measures):

    python tools/public_macko.py CHECKOUT [--shapes 4096x11008,12288x12288]
                                 [--sparsities 0.3,0.5,0.7,0.9] [--reps 200]

Prints its MACKO and cuBLAS means and the speedup over its own cuBLAS per point.
experiments/fig7_macko.py runs the same thing in its own run when SPMVLAB_PUBLIC_MACKO is set.
"""
import argparse
import os
import sys


from spmvlab import anchors

p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
p.add_argument("checkout")
p.add_argument("--shapes", default="4096x11008,12288x12288")
p.add_argument("--sparsities", default="0.3,0.5,0.7,0.9")
p.add_argument("--reps", type=int, default=200)
a = p.parse_args()
os.environ[anchors.ENV] = os.path.abspath(a.checkout)
for shape in a.shapes.split(","):
    r, c = (int(v) for v in shape.split("x"))
    for s in (float(v) for v in a.sparsities.split(",")):
        rows = {x["method"]: x for x in anchors.public_macko_rows((r, c), s, reps=a.reps)}
        if "error" in rows.get("public_macko", {}):
            sys.exit(f"{shape} {s}: {rows['public_macko']['error']}")
        m, b = rows["public_macko"], rows["public_cublas"]
        print(f"{shape:>12} {s:4.2f}  MACKO {m['mean_us']:8.1f} us  cuBLAS {b['mean_us']:8.1f} us  "
              f"{m['speedup_vs_own_cublas']:.2f}x  check {'ok' if m['check_passed'] else 'FAILED'}",
              flush=True)
