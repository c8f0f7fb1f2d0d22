"""Launch one SpMV (or SpMM with --k) of any registered format's kernel on one seeded uniform
fp16 matrix, for a profiler:

    ncu --kernel-name regex:macko --launch-skip 1 --launch-count 1 --section SpeedOfLight ... \\
        python tools/profile_kernel.py macko ROWS COLS SPARSITY [--k N] [--config '{"prefetch": 2}']
    ncu --kernel-name regex:ec_csr_sp ... python tools/profile_kernel.py ec_csr 12288 12288 0.7 \\
        --option delta_bits=8 --config '{"rows_per_pass": 4}'

    ncu ... python tools/profile_kernel.py csr_dtans --family stencil5 --log2-nnz 25 --dtype float64

Encodes with the format's fast encoder (``--option NAME=VALUE``: its encode options, as
``spmvlab stats`` takes them), then launches twice: the first call compiles, so profile the
second (``--launch-skip``: 1, or 2 where a call runs a zero pass first, as EC-CSR's SpMM does).
The matrix is a seeded uniform one of ROWS x COLS at SPARSITY, or with ``--family`` one of the
dtANS experiments' synthetic families (``experiments/_dtans.py``) of 2**``--log2-nnz``
nonzeros. Prints the format's bytes; the profiler's report is the output.
"""
import argparse
import ast
import json

import numpy as np

from spmvlab import datasets, formats
from spmvlab._cuda import cuda


def _option(text: str):
    name, _, value = text.partition("=")
    try:
        return name.strip(), ast.literal_eval(value.strip())
    except (ValueError, SyntaxError):
        return name.strip(), value.strip()


p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
p.add_argument("format", choices=[f.name for f in formats.kernel_formats()])
p.add_argument("rows", type=int, nargs="?", default=12288)
p.add_argument("cols", type=int, nargs="?", default=12288)
p.add_argument("sparsity", type=float, nargs="?", default=0.5)
p.add_argument("--k", type=int, default=0, help="columns of X (0: SpMV)")
p.add_argument("--option", type=_option, action="append", default=[], metavar="NAME=VALUE",
               help="an encode option of the format (repeatable)")
p.add_argument("--config", type=json.loads, default={}, help="the kernel config's fields as JSON")
p.add_argument("--dtype", default="float16", help="value dtype (default float16)")
p.add_argument("--family", default=None, help="a synthetic family of experiments/_dtans.py")
p.add_argument("--log2-nnz", type=int, default=20, help="with --family: 2**this many nonzeros")
a = p.parse_args()
info = formats.get(a.format)
K = info.kernel_module()
cfg = info.make_config(**a.config)
dt = np.dtype(a.dtype)
if a.family:
    from experiments import _dtans
    A = _dtans.build(_dtans.synthetic_specs([a.family], [a.log2_nnz])[0])
    what = f"{a.family} 2^{a.log2_nnz}"
else:
    A = datasets.uniform((a.rows, a.cols), a.sparsity, dtype=a.dtype, seed=0)
    what = f"{a.rows}x{a.cols} at {a.sparsity}"
a.rows, a.cols = A.shape
M = info.encode(A, dtype=dt, fast=True, **dict(a.option))
D = K.to_device(M)
print(f"{a.format} {M.options()} {what} ({a.rows}x{a.cols}, {dt.name}): {M.nbytes} bytes, "
      f"{A.nnz} nonzeros")
rng = np.random.default_rng(1)
for _ in range(2):
    if a.k:
        X = cuda.to_device(rng.standard_normal((a.cols, a.k)).astype(dt))
        K.spmm(D, X, out=cuda.device_array((a.rows, a.k), dtype=dt), config=cfg)
    else:
        x = cuda.to_device(rng.standard_normal(a.cols).astype(dt))
        K.spmv(D, x, out=cuda.device_array(a.rows, dtype=dt), config=cfg)
cuda.synchronize()
