"""What checking a matrix in ``to_device`` costs, next to one SpMV, for every format with kernels.

    python tools/time_device_check.py [--shape R C ...] [--sparsity 0.5] [--dtype float16]
                                      [--reps 30] [--out FILE]

Default shapes: 4096 x 11008 and 12288 x 12288 (``datasets.uniform`` at ``--sparsity``),
each format encoded with its registry defaults (MACKO: delta_bits=4). One line per
(shape, format):

  check_us       the format's check kernel alone (``launch_check``): CUDA events, median of
                 ``--reps`` calls with L2 flushed (``bench.time_fn``)
  spmv_us        the format's SpMV with its default config, timed the same way
  check/spmv     check_us / spmv_us: the device check costs this fraction of one SpMV
  call_us        ``device_check(D)`` as ``to_device`` calls it (flags upload, launch, read
                 back), wall clock, median of 20 warm calls
  host_ms        the same predicates on the host (``validate(expensive=True,
                 canonical=False, checksum=False)``): what ``to_device`` runs below
                 ``kernels._common.DEVICE_CHECK_MIN_ENTRIES`` stored entries
  checksum_ms    ``verify_checksum()`` on the host (every ``to_device`` runs it), median of 3
  to_device_ms   ``to_device(M)`` as a user calls it (cheap checks, checksum, upload, check),
                 wall clock, one call after a warm-up
  flagged        fields the device check flagged (must be "-": these matrices are valid)

Without a GPU it says so in one line. The rows and the run metadata go to
results/<device>/device_check_<dtype>.json (or ``--out FILE.json``).
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _wall_ms(fn, reps: int) -> float:
    """Median wall-clock milliseconds of ``reps`` calls of ``fn``."""
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(1e3 * (time.perf_counter() - t0))
    return float(np.median(times))


def measure(info, A, shape, dtype, reps: int) -> dict:
    from spmvlab import bench
    from spmvlab._cuda import cuda
    K = info.kernel_module()
    M = info.encode(A, dtype=dtype, fast=True)
    D = K.to_device(M, check="host")
    x = cuda.to_device(np.random.default_rng(0).standard_normal(M.n_cols).astype(dtype))
    y = cuda.device_array(M.n_rows, dtype=dtype)
    flags = cuda.to_device(np.zeros(len(K.CHECK_FIELDS), np.int32))
    cfg = info.make_config()
    check = bench.time_fn(lambda: K.launch_check(D, flags), reps=reps)
    spmv = bench.time_fn(lambda: K.spmv(D, x, out=y, config=cfg), reps=reps)
    flagged = K.device_check(D)
    call_ms = _wall_ms(lambda: K.device_check(D), 20)
    host_ms = _wall_ms(lambda: M.validate(expensive=True, canonical=False, checksum=False), 1)
    checksum_ms = _wall_ms(M.verify_checksum, 3)
    K.to_device(M)                                   # warm-up (allocations, compiled kernels)
    to_device_ms = _wall_ms(lambda: K.to_device(M), 1)
    return dict(shape=f"{shape[0]}x{shape[1]}", format=info.name, dtype=np.dtype(dtype).name,
                options=M.options(), entries=int(M.values.size), mb=M.nbytes / 1e6,
                check_us=check.median_us, spmv_us=spmv.median_us,
                ratio=check.median_us / spmv.median_us, call_us=1e3 * call_ms, host_ms=host_ms,
                checksum_ms=checksum_ms, to_device_ms=to_device_ms,
                flagged=",".join(flagged) or "-")


def main(argv=None) -> int:
    from spmvlab import datasets, experiment, formats, plotting, runinfo
    from spmvlab.kernels._common import DEVICE_CHECK_MIN_ENTRIES
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shape", type=int, nargs=2, action="append", metavar=("R", "C"),
                   help="matrix shape (repeatable; default 4096 11008 and 12288 12288)")
    p.add_argument("--sparsity", type=float, default=0.5)
    p.add_argument("--dtype", default="float16", choices=("float16", "float32"))
    p.add_argument("--reps", type=int, default=30)
    p.add_argument("--out", default=None, help="JSON path (default: print only)")
    a = p.parse_args(argv)
    if not experiment.gpu_available():
        print("time_device_check: no CUDA GPU here (the check kernels are timed on a GPU)")
        return 0
    rows = []
    for shape in a.shape or [(4096, 11008), (12288, 12288)]:
        A = datasets.uniform(tuple(shape), a.sparsity, dtype=a.dtype, seed=0)   # drawn in the dtype: nothing lost
        for info in formats.kernel_formats():
            if info.supports_dtype(a.dtype):
                rows.append(measure(info, A, shape, a.dtype, a.reps))
                print(f"  measured {rows[-1]['shape']} {info.name}", file=sys.stderr)
    cols = [("shape", "shape", ""), ("format", "format", ""), ("dtype", "dtype", ""),
            ("entries", "entries", "d"), ("mb", "MB", ".1f"), ("check_us", "check_us", ".1f"),
            ("spmv_us", "spmv_us", ".1f"), ("ratio", "check/spmv", ".3f"),
            ("call_us", "call_us", ".1f"), ("host_ms", "host_ms", ".1f"),
            ("checksum_ms", "checksum_ms", ".1f"), ("to_device_ms", "to_device_ms", ".1f"),
            ("flagged", "flagged", "")]
    print(plotting.format_table(rows, cols))
    print(f"to_device checks on the device from {DEVICE_CHECK_MIN_ENTRIES} stored entries "
          f"(kernels._common.DEVICE_CHECK_MIN_ENTRIES), on the host below")
    path = experiment.save_results(a.out or f"device_check_{a.dtype}", rows, dict(vars(a)),
                                   meta=runinfo.run_metadata())
    print("wrote", os.path.relpath(path, ROOT))
    return 1 if any(r["flagged"] != "-" for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
