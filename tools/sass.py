"""SASS of spmvlab's kernels without a GPU: compile the PTX check's targets for sm_90, assemble
with ptxas and disassemble, printing registers, spills and the instruction mix.

    python tools/sass.py 'macko.spmv\\[float16,b4,prefetch=1\\]' [--maxreg 40] [--dump k.sass]

Needs ``ptxas`` and ``cuobjdump`` new enough for the PTX that numba-cuda's NVVM emits (PTX 9.5
for NVVM 13.5; the CUDA 13.0 toolkit's ptxas refuses it), and ``nvdisasm``, which cuobjdump
runs from ``PATH``. Without a toolkit: ``pip download --no-deps nvidia-cuda-nvcc
nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm``, unzip the wheels into one folder, point
``SPMVLAB_CUDA_BIN`` at its ``nvidia/cu13/bin`` and put that folder on ``PATH``. The labels are those of
``python -m spmvlab.ptxcheck``. Instruction counts are a guide, not a timing: see
results/h200/macko_spmv_rewrite_ab.txt for a rewrite with fewer instructions that ran slower.
"""
import argparse
import collections
import importlib
import os
import re
import subprocess
import sys
import tempfile

os.environ["NUMBA_ENABLE_CUDASIM"] = "0"

from spmvlab import ptxcheck
from spmvlab._cuda import cuda

p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
p.add_argument("pattern", help="regular expression over the PTX check's labels")
p.add_argument("--maxreg", type=int, default=None, help="ptxas --maxrregcount (the kernel's cap)")
p.add_argument("--dump", default=None, help="write the SASS of the last match here")
a = p.parse_args()
bin_dir = os.environ.get("SPMVLAB_CUDA_BIN", "")
tool = {t: os.path.join(bin_dir, t) if bin_dir else t for t in ("ptxas", "cuobjdump")}

with ptxcheck._pretend_device(), tempfile.TemporaryDirectory() as tmp:
    found = 0
    for modname in ptxcheck.kernel_modules():
        for t in importlib.import_module(modname).ptx_targets():
            if not re.search(a.pattern, t.label):
                continue
            found += 1
            ptx, _ = cuda.compile_ptx(t.build().py_func, t.signature, cc=ptxcheck.CC)
            src, cubin = os.path.join(tmp, "k.ptx"), os.path.join(tmp, "k.cubin")
            with open(src, "w") as f:
                f.write(ptx)
            cmd = [tool["ptxas"], "-arch=sm_90", "-v", "-o", cubin, src]
            if a.maxreg:
                cmd[1:1] = ["--maxrregcount", str(a.maxreg)]
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode:
                sys.exit(f"{t.label}: ptxas failed: {r.stderr.strip()[-400:]}")
            info = " | ".join(ln.split("info    : ")[-1] for ln in r.stderr.splitlines()
                              if "registers" in ln or "spill" in ln)
            sass = subprocess.run([tool["cuobjdump"], "-sass", cubin], capture_output=True,
                                  text=True, check=True).stdout
            ops = re.findall(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*)", sass)
            print(f"{t.label}: {len(ops)} instructions; {info}")
            print("   ", ", ".join(f"{k} {v}" for k, v in collections.Counter(ops).most_common(16)))
            if a.dump:
                with open(a.dump, "w") as f:
                    f.write(sass)
    if not found:
        sys.exit(f"no PTX check target matches {a.pattern!r} (python -m spmvlab.ptxcheck lists them)")
