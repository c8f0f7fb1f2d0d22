"""Launch one EC-CSR SpMV (or SpMM with --k) on one uniform fp16 matrix, for a profiler:

    ncu --kernel-name regex:ec_csr --launch-skip 2 --launch-count 1 --section SpeedOfLight ... \\
        python tools/profile_ec_csr.py ROWS COLS SPARSITY [--k N] [--config '{"unroll": 4}']

Encodes with the fast encoder (EC-CSR-8 by default, ``--delta-bits``), then launches twice
(the first compiles). Each call runs a zero pass, the main kernel and (fp16 output) a finish
pass; ``--kernel-name regex:ec_csr_sp`` selects the main kernel. Prints the format's bytes
and the main kernel's launch count; the profiler's report is the output."""
import argparse
import json

import numpy as np

from spmvlab import datasets
from spmvlab._cuda import cuda
from spmvlab.encoders import ec_csr as E
from spmvlab.kernels import ec_csr as K

p = argparse.ArgumentParser()
p.add_argument("rows", type=int, nargs="?", default=12288)
p.add_argument("cols", type=int, nargs="?", default=12288)
p.add_argument("sparsity", type=float, nargs="?", default=0.7)
p.add_argument("--k", type=int, default=0, help="columns of X (0: SpMV)")
p.add_argument("--delta-bits", type=int, default=8)
p.add_argument("--config", type=json.loads, default={}, help="ECCSRConfig fields as JSON")
a = p.parse_args()
cfg = K.ECCSRConfig(**a.config)
A = datasets.uniform((a.rows, a.cols), a.sparsity, dtype="float16", seed=0)
M = E.encode(A, dtype=np.float16, delta_bits=a.delta_bits)
D = K.to_device(M)
print(f"EC-CSR-{a.delta_bits} {a.rows}x{a.cols} at {a.sparsity}: {M.nbytes} bytes, {A.nnz} nonzeros")
rng = np.random.default_rng(1)
for _ in range(2):
    if a.k:
        X = cuda.to_device(rng.standard_normal((a.cols, a.k)).astype(np.float16))
        K.spmm(D, X, out=cuda.device_array((a.rows, a.k), dtype=np.float16), config=cfg)
    else:
        x = cuda.to_device(rng.standard_normal(a.cols).astype(np.float16))
        K.spmv(D, x, out=cuda.device_array(a.rows, dtype=np.float16), config=cfg)
cuda.synchronize()
