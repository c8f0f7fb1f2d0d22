"""Time the MACKO encoders (reference NumPy vs numba njit) on a 12288 x 12288 matrix at 50 %
sparsity (canonical CSR input, fp16 values, delta_bits=4) and check they agree byte for byte.
Writes results/cpu/encoder_macko.json (measured on the CPU, whatever the machine) with the run
metadata.

    python tools/time_macko_encoder.py [--reps 3]
"""
import argparse
import time

import numpy as np


from reference import macko as R
from spmvlab import datasets, experiment as X
from spmvlab.encoders import macko as E

p = argparse.ArgumentParser(description=__doc__)
p.add_argument("--reps", type=int, default=3)
args = p.parse_args()
A = datasets.uniform((12288, 12288), 0.5, dtype=np.float16, seed=0)   # float32 holding float16
E.encode(A[:64], delta_bits=4, dtype=np.float16)          # compile outside the timing
fast, ref = [], []
for _ in range(args.reps):
    t = time.perf_counter(); Mf = E.encode(A, delta_bits=4, dtype=np.float16); fast.append(time.perf_counter() - t)
t = time.perf_counter(); Mr = R.encode(A, delta_bits=4, dtype=np.float16); ref.append(time.perf_counter() - t)
same = all(np.array_equal(getattr(Mf, n), getattr(Mr, n)) for n in ("values", "deltas", "row_ptr"))
rows = [dict(encoder="numba njit", median_s=float(np.median(fast)), runs_s=fast),
        dict(encoder="reference (NumPy)", median_s=float(np.median(ref)), runs_s=ref)]
X.save_results("encoder_macko", rows, dict(shape=[12288, 12288], sparsity=0.5, nnz=int(A.nnz),
                                           dtype="float16", delta_bits=4, byte_identical=same),
               device="cpu")
print(f"nnz {A.nnz}: njit {np.median(fast):.2f} s, reference {np.median(ref):.2f} s, byte-identical: {same}")
