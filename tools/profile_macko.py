"""Launch the MACKO SpMV once per configuration on one LLM-sized matrix, for a profiler
(``ncu --kernel-name regex:macko ... python tools/profile_macko.py``). Prints nothing useful
by itself; the profiler's report is the output."""
import sys

import numpy as np

from spmvlab import datasets
from spmvlab.encoders import macko as E
from spmvlab.kernels import macko as K
from spmvlab._cuda import cuda

shape = (12288, 12288)
sparsity = float(sys.argv[1]) if len(sys.argv) > 1 else 0.5
A = datasets.uniform(shape, sparsity, dtype="float32", seed=0)
M = E.encode(A, delta_bits=4, dtype=np.float16)
D = K.to_device(M)
x = cuda.to_device(np.random.default_rng(1).standard_normal(shape[1]).astype(np.float16))
y = cuda.device_array(shape[0], dtype=np.float16)
for cfg in (K.MackoConfig(), K.MackoConfig(entries_per_lane=2)):
    K.spmv(D, x, out=y, config=cfg)
cuda.synchronize()
