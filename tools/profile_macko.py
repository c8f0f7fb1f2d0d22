"""Launch one MACKO SpMV (or SpMM with --k) on one uniform fp16 matrix, for a profiler:

    ncu --kernel-name regex:macko --section SpeedOfLight ... \\
        python tools/profile_macko.py ROWS COLS SPARSITY [--k N] [--config '{"prefetch": 2}']

Launches twice (the first compiles); prints nothing useful by itself: the profiler's report
is the output (``--launch-skip 1`` profiles the second launch)."""
import argparse
import json

import numpy as np

from spmvlab import datasets
from spmvlab._cuda import cuda
from spmvlab.encoders import macko as E
from spmvlab.kernels import macko as K

p = argparse.ArgumentParser()
p.add_argument("rows", type=int, nargs="?", default=12288)
p.add_argument("cols", type=int, nargs="?", default=12288)
p.add_argument("sparsity", type=float, nargs="?", default=0.5)
p.add_argument("--k", type=int, default=0, help="columns of X (0: SpMV)")
p.add_argument("--config", type=json.loads, default={}, help="MackoConfig fields as JSON")
a = p.parse_args()
cfg = K.MackoConfig(**a.config)
A = datasets.uniform((a.rows, a.cols), a.sparsity, dtype="float16", seed=0)
D = K.to_device(E.encode(A, delta_bits=4, dtype=np.float16))
rng = np.random.default_rng(1)
for _ in range(2):
    if a.k:
        X = cuda.to_device(rng.standard_normal((a.cols, a.k)).astype(np.float16))
        K.spmm(D, X, out=cuda.device_array((a.rows, a.k), dtype=np.float16), config=cfg)
    else:
        x = cuda.to_device(rng.standard_normal(a.cols).astype(np.float16))
        K.spmv(D, x, out=cuda.device_array(a.rows, dtype=np.float16), config=cfg)
cuda.synchronize()
