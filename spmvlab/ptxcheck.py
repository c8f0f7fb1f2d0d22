"""Compile every kernel of every registered format to PTX for compute capability 9.0.

The CUDA simulator runs kernels with NumPy semantics, not Numba's typing, so a kernel can
pass every simulator test and still fail to compile for the GPU (uint32 arithmetic widened to
64 bits, shuffles of unsupported types, ...). This check catches that on a CPU-only machine:
it needs NVVM, which ``numba-cuda[cu13]`` (in the ``test`` extra) installs.

Run: ``NUMBA_ENABLE_CUDASIM=0 python -m spmvlab.ptxcheck`` (exit code 1 on any failure).
Targets may list regular expressions their PTX must contain (e.g. 16-byte loads).
"""
from __future__ import annotations

import contextlib
import importlib
import os
import re
import sys
import time
import types

CC = (9, 0)


@contextlib.contextmanager
def _pretend_device(cc=CC):
    """Kernels that call device functions ask for the current device's compute capability;
    with no GPU there is none, so answer with ``cc`` while compiling."""
    from numba.cuda import dispatcher
    fake = types.SimpleNamespace(compute_capability=cc, id=0, name=b"ptxcheck")
    saved = dispatcher.get_current_device
    dispatcher.get_current_device = lambda: fake
    try:
        yield
    finally:
        dispatcher.get_current_device = saved


#: kernel modules that are not formats (baselines)
EXTRA_MODULES = ("spmvlab.methods.dense_gemv", "spmvlab.generalsparse.codegen")


def kernel_modules():
    """Every kernel module: the registered formats' plus :data:`EXTRA_MODULES`."""
    from spmvlab import formats
    return list(dict.fromkeys([f.kernels for f in formats.kernel_formats()] + list(EXTRA_MODULES)))


def check(verbose: bool = True, pattern: str | None = None,
          shard: tuple[int, int] = (0, 1)) -> list[tuple[str, str]]:
    """Compile all targets (those matching ``pattern``; with ``shard = (i, n)`` every n-th
    from the i-th, so n processes can share the work); return (label, error) per failure."""
    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        raise RuntimeError("ptxcheck needs the real numba.cuda compiler: run with NUMBA_ENABLE_CUDASIM=0")
    os.environ["NUMBA_ENABLE_CUDASIM"] = "0"
    from spmvlab._cuda import cuda

    failures = []
    n = seen = 0
    t0 = time.perf_counter()
    with _pretend_device():
        for modname in kernel_modules():
            try:
                mod = importlib.import_module(modname)
            except ImportError as exc:
                failures.append((modname, f"import failed: {exc}"))
                continue
            for target in mod.ptx_targets():
                if pattern and not re.search(pattern, target.label):
                    continue
                seen += 1
                if (seen - 1) % shard[1] != shard[0]:
                    continue
                n += 1
                try:
                    disp = target.build()
                    ptx, _ = cuda.compile_ptx(disp.py_func, target.signature, cc=CC)
                    for rx in getattr(target, "expects", ()):
                        if not re.search(rx, ptx):
                            raise AssertionError(f"PTX lacks /{rx}/")
                    if verbose:
                        print(f"ok    {target.label}")
                except Exception as exc:  # report every failure, keep going
                    msg = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
                    failures.append((target.label, msg))
                    if verbose:
                        print(f"FAIL  {target.label}: {msg}")
    if verbose:
        print(f"{n - len(failures)}/{n} kernels compiled for sm_{CC[0]}{CC[1]} "
              f"in {time.perf_counter() - t0:.1f} s")
    return failures


def main(argv=None) -> int:
    """``python -m spmvlab.ptxcheck [PATTERN] [--shard I/N]``."""
    import argparse
    p = argparse.ArgumentParser(prog="python -m spmvlab.ptxcheck",
                                description="compile every kernel for sm_90 (no GPU needed)")
    p.add_argument("pattern", nargs="?", default=None, help="only labels matching this regex")
    p.add_argument("--shard", default="0/1", help="I/N: every N-th target from the I-th")
    args = p.parse_args(sys.argv[1:] if argv is None else argv)
    i, _, n = args.shard.partition("/")
    if not (i.isdigit() and n.isdigit() and int(i) < int(n)):
        p.error(f"--shard: expected I/N with 0 <= I < N, got {args.shard!r}")
    failures = check(pattern=args.pattern, shard=(int(i), int(n)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
