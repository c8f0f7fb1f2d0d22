"""Time the fast EC-CSR encoder (numba) stage by stage on an 8192 x 28672 matrix at 70 %
sparsity (uniform random positions, seeded; fp16 values; default options: delta_bits=8,
warp_size=32, vector_size=4, dynamic clipping, reordering), and compare it with the NumPy
reference on a smaller matrix the reference can handle (byte identity checked there).
Writes results/cpu/encoder_ec_csr.json (measured on the CPU) with the run metadata.

    python tools/time_ec_csr_encoder.py [--shape 8192 28672] [--check-shape 2048 7168] [--reps 1]
"""
import argparse
import os
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from reference import ec_csr as R  # noqa: E402
from spmvlab import datasets, experiment as X  # noqa: E402
from spmvlab.encoders import ec_csr as E  # noqa: E402

p = argparse.ArgumentParser(description=__doc__)
p.add_argument("--shape", type=int, nargs=2, default=[8192, 28672])
p.add_argument("--check-shape", type=int, nargs=2, default=[2048, 7168])
p.add_argument("--sparsity", type=float, default=0.7)
p.add_argument("--reps", type=int, default=1)
args = p.parse_args()


def same(F, M):
    return all(a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
               for (_, a), (_, b) in zip(F.arrays(), M.arrays()))


E.encode(datasets.uniform((64, 512), args.sparsity, dtype=np.float16, seed=1),
         dtype=np.float16)                                # compile outside the timing

# byte identity and speedup on a size the reference handles
C = datasets.uniform(tuple(args.check_shape), args.sparsity, dtype=np.float16, seed=0)
t = time.perf_counter(); Mr = R.encode(C, dtype=np.float16); ref_s = time.perf_counter() - t
t = time.perf_counter(); Mf, check_stages = E.encode_stages(C, dtype=np.float16); fast_check_s = time.perf_counter() - t
identical = same(Mf, Mr)
print(f"check {args.check_shape}: reference {ref_s:.2f} s, fast {fast_check_s:.2f} s, "
      f"byte-identical: {identical}")

# the full size, fast encoder only
A = datasets.uniform(tuple(args.shape), args.sparsity, dtype=np.float16, seed=0)
runs, stages = [], []
for _ in range(args.reps):
    t = time.perf_counter(); M, st = E.encode_stages(A, dtype=np.float16); runs.append(time.perf_counter() - t)
    stages.append(st)
    print(f"{args.shape}: {runs[-1]:.2f} s", {k: round(v, 2) for k, v in st.items()})
rows = [dict(encoder="numba njit", shape=list(args.shape), nnz=int(A.nnz),
             median_s=float(np.median(runs)), runs_s=runs,
             stages_s={k: float(np.median([s[k] for s in stages])) for k in stages[0]},
             n_blocks=M.n_blocks, sets=[{k: s[k] for k in ("granularity", "vector", "n_blocks", "nnz")}
                                        for s in M.sets()],
             padding_overhead=M.padding_overhead),
        dict(encoder="numba njit", shape=list(args.check_shape), nnz=int(C.nnz),
             median_s=fast_check_s, runs_s=[fast_check_s], stages_s=check_stages),
        dict(encoder="reference (NumPy)", shape=list(args.check_shape), nnz=int(C.nnz),
             median_s=ref_s, runs_s=[ref_s])]
X.save_results("encoder_ec_csr", rows,
               dict(shape=list(args.shape), check_shape=list(args.check_shape),
                    sparsity=args.sparsity, dtype="float16", delta_bits=8, warp_size=32,
                    vector_size=4, clip=None, reorder=True, max_granularity=None, seed=0,
                    generator="spmvlab.datasets.uniform", byte_identical=identical,
                    speedup_at_check_shape=ref_s / fast_check_s, goal_s=60.0,
                    cpu_threads=os.cpu_count()),
               device="cpu")
