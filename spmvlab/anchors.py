"""Public kernels timed beside ours: the MACKO authors' CUDA benchmark.

The public MACKO repository (its authors' CUDA kernel and a benchmark program,
``c_benchmarking/benchmark.cu``) is not part of spmvlab and its code never enters it: point
``SPMVLAB_PUBLIC_MACKO`` at a checkout and :func:`public_macko_rows` builds the benchmark
with nvcc for this GPU (once per checkout commit and compute capability, cached under
``~/.cache/spmvlab``) and runs it as a separate process.

How that program measures (read from its source; stated in every row's ``flush`` and
``impl``): its own random fp16 matrix of the given shape and density, a check of the kernel's
output against cuBLAS, 100 warm-up calls, then ``reps`` calls each timed with CUDA events
after ``cudaMemset`` of a buffer twice the L2 size (a *write* flush: the dirty lines'
write-back can land inside the timed call), reporting min, max and **mean** (not the median
our :func:`spmvlab.bench.time_fn` reports after a *read* flush). Its kernel ids used here:
7 = MACKO (fp16 values, 16-bit MACKO format), 2 = cuBLAS GemmEx with fp32 compute, the
baseline its speedups are taken against.
"""
from __future__ import annotations

import hashlib
import os
import re
import subprocess

from reference._common import problem

ENV = "SPMVLAB_PUBLIC_MACKO"
KERNELS = {"public_macko": 7, "public_cublas": 2}
FLUSH = "write (cudaMemset of 2x L2 before each call), mean"
_FIELDS = {"mean_us": r"Mean time \(us\):\s*([0-9.eE+-]+)", "min_us": r"Min\s+time \(us\):\s*([0-9.eE+-]+)",
           "max_us": r"Max\s+time \(us\):\s*([0-9.eE+-]+)", "max_abs_diff": r"Max diff:\s*([0-9.eEinfa+-]+)"}


class AnchorError(RuntimeError):
    """The public benchmark could not be found, built or run."""


def checkout() -> str | None:
    """The public MACKO checkout named by ``SPMVLAB_PUBLIC_MACKO`` (None: unset)."""
    path = os.environ.get(ENV)
    if not path:
        return None
    if not os.path.isfile(os.path.join(path, "c_benchmarking", "benchmark.cu")):
        raise AnchorError(problem(ENV, "a checkout of the public MACKO repository (with "
                                  "c_benchmarking/benchmark.cu)", path,
                                  "clone it and export SPMVLAB_PUBLIC_MACKO=<path>"))
    return path


def _source_hash(root: str) -> str:
    h = hashlib.sha256()
    for dirpath, _, files in sorted(os.walk(root)):
        if "/." in dirpath or "media" in dirpath:
            continue
        for f in sorted(files):
            if f.endswith((".cu", ".cuh", ".h")):
                with open(os.path.join(dirpath, f), "rb") as fh:
                    h.update(f.encode() + fh.read())
    return h.hexdigest()[:12]


def build(root: str, cc: tuple[int, int], nvcc: str = "nvcc") -> str:
    """The benchmark binary for compute capability ``cc`` (built once per source version)."""
    sm = f"{cc[0]}{cc[1]}"
    cache = os.path.join(os.path.expanduser("~/.cache/spmvlab/public_macko"),
                         f"{_source_hash(root)}_sm{sm}")
    exe = os.path.join(cache, "benchmark")
    if os.path.isfile(exe):
        return exe
    os.makedirs(cache, exist_ok=True)
    cmd = [nvcc, "-O3", "benchmark.cu", "-o", exe, "-gencode", f"arch=compute_{sm},code=sm_{sm}",
           "-lcublas", "-lcusparse"]
    r = subprocess.run(cmd, cwd=os.path.join(root, "c_benchmarking"), capture_output=True, text=True)
    if r.returncode:
        raise AnchorError(f"building the public MACKO benchmark failed ({' '.join(cmd)}):\n"
                          f"{r.stderr[-2000:]}")
    return exe


def parse(text: str) -> dict:
    """The times one benchmark run printed (``mean_us``, ``min_us``, ``max_us``), its largest
    absolute difference from its fp32 cuBLAS reference (``max_abs_diff``) and
    ``check_passed`` (it flags a difference above 0.1); raises :class:`AnchorError` when it
    printed no final result (e.g. out of memory)."""
    if "Final results:" not in text:
        raise AnchorError(f"the public benchmark printed no result: {text.strip()[-300:]}")
    out = {}
    for key, rx in _FIELDS.items():
        m = re.search(rx, text)
        if not m:
            raise AnchorError(f"the public benchmark's output lacks {key}")
        out[key] = float(m.group(1))
    out["check_passed"] = "LOOKS BIG" not in text
    return out


def run(exe: str, shape, density: float, kernel: int, reps: int = 200, seed: int = 47) -> dict:
    """One benchmark run: ``kernel`` on a fresh matrix of ``shape`` and ``density``."""
    args = [exe, "16", str(shape[0]), str(shape[1]), "100", str(reps), "1", "0", str(kernel),
            str(seed), f"{density:.4f}"]
    r = subprocess.run(args, capture_output=True, text=True, timeout=600)
    if r.returncode:
        raise AnchorError(f"{' '.join(args)} exited with {r.returncode}: {r.stderr.strip()[-300:]}")
    return parse(r.stdout)


def public_macko_rows(shape, sparsity: float, reps: int = 200, cc=(9, 0)) -> list[dict]:
    """Rows for ``public_macko`` and ``public_cublas`` at one shape and sparsity, with
    ``speedup_vs_own_cublas`` (its cuBLAS mean / its MACKO mean, the paper's ratio); one row
    with ``error`` when ``SPMVLAB_PUBLIC_MACKO`` is unset or the benchmark fails."""
    base = dict(kind="spmv", k=1, dtype="float16", shape=list(shape), reps=reps, cold=True,
                flush=FLUSH)
    try:
        root = checkout()
        if root is None:
            return [dict(base, method="public_macko", error=f"{ENV} is not set")]
        exe = build(root, cc)
        times = {m: run(exe, shape, 1.0 - sparsity, kid, reps) for m, kid in KERNELS.items()}
    except (AnchorError, OSError, subprocess.TimeoutExpired) as exc:
        return [dict(base, method="public_macko", error=str(exc).splitlines()[0])]
    rows = []
    for m, kid in KERNELS.items():
        rows.append(dict(base, method=m, impl=f"public MACKO c_benchmarking/benchmark.cu kernel {kid} "
                         f"(sources {_source_hash(root)})", **times[m], speedup_vs_own_cublas=times["public_cublas"]["mean_us"]
                         / times[m]["mean_us"]))
    return rows
