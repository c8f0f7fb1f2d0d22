"""Launch the MACKO SpMV once (default config) on one uniform matrix, for a profiler:

    ncu --kernel-name regex:macko --section SpeedOfLight ... python tools/profile_macko.py ROWS COLS SPARSITY

Prints nothing useful by itself; the profiler's report is the output."""
import sys

import numpy as np

from spmvlab import datasets
from spmvlab._cuda import cuda
from spmvlab.encoders import macko as E
from spmvlab.kernels import macko as K

rows, cols = (int(v) for v in sys.argv[1:3]) if len(sys.argv) > 2 else (12288, 12288)
sparsity = float(sys.argv[3]) if len(sys.argv) > 3 else 0.5
A = datasets.uniform((rows, cols), sparsity, dtype="float16", seed=0)
D = K.to_device(E.encode(A, delta_bits=4, dtype=np.float16))
x = cuda.to_device(np.random.default_rng(1).standard_normal(cols).astype(np.float16))
y = cuda.device_array(rows, dtype=np.float16)
K.spmv(D, x, out=y)
cuda.synchronize()
