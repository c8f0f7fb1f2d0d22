"""Host (CPU) seconds of the GeneralSparse weight experiments' loop, per matrix, without a
GPU: ``experiments/_gs.measure_weights`` as it is (one build per matrix, problems per N
sharing the dense copy, encodings and plans) against the former loop (``methods.measure``
per N: everything rebuilt per N), in the CUDA simulator with the GPU parts faked (checks
only compute the reference product, timings are a function of ``format_bytes``, cuBLAS
only builds its dense copy, cuSPARSE nothing), so only host work is counted.

    NUMBA_ENABLE_CUDASIM=1 python tools/time_gs_host.py --shape 7168x7168 --sparsity 0.7 --ns 8,32,64

Prints seconds per path and the inclusive seconds of the main host stages (of this
process: with ``--workers N`` the matrices are built in N other processes, not counted)."""
from __future__ import annotations

import argparse
import collections
import functools
import os
import sys
import time

os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT]

from spmvlab import experiment as X  # noqa: E402

_gs = X.load_experiment("_gs")
STAGES = collections.defaultdict(float)


def _timed(name, fn):
    @functools.wraps(fn)
    def wrap(*a, **kw):
        t0 = time.perf_counter()
        try:
            return fn(*a, **kw)
        finally:
            STAGES[name] += time.perf_counter() - t0
    return wrap


def fake_gpu():
    """Replace the GPU parts by host-only stand-ins and wrap the host stages with timers."""
    from spmvlab import codegen, tune
    from spmvlab.bench import Timing
    from spmvlab.check import Check
    from spmvlab.methods import base, vendor

    def check(self):
        self.problem.reference()
        return Check(passed=True, n_bad=0, max_rel_err=0.0, worst=None)

    base.Method.check = check
    base.Method.time = lambda self, **kw: Timing.from_samples([1.0 + self.format_bytes / 1e3] * 3, cold=True)

    class FakeCublas(base.Method):
        def __init__(self, p):
            self.problem, self.impl = p, "fake cublas"
            self.format_bytes = p.dense().nbytes

    class FakeCusparse(base.Method):
        def __init__(self, p, backend="auto"):
            self.problem, self.impl = p, "fake cusparse"
            self.format_bytes = p.A.data.nbytes // 2 + p.A.indices.nbytes + p.A.indptr.nbytes

    vendor.Cublas, vendor.CusparseCSR = FakeCublas, FakeCusparse
    _gs.build_weights = _timed("build_weights (all of the above that a worker can do)", _gs.build_weights)
    for name in ("opt_weights", "prune_blocks", "to_csr16"):
        setattr(_gs, name, _timed(name, getattr(_gs, name)))
    base.Problem.make = classmethod(_timed("Problem.make", base.Problem.make.__func__))
    base.reference_product = _timed("reference product", base.reference_product)
    base.Problem.encoded = _timed("encode (macko, csr)", base.Problem.encoded)
    base.Problem.dense = _timed("dense copy", base.Problem.dense)
    tune.best_strategy = _timed("gs search (proxy, incl. its plans)", tune.best_strategy)
    tune.plan_cached = _timed("gs plan_cached (incl. search's)", tune.plan_cached)
    codegen.generate = _timed("codegen.generate", codegen.generate)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shape", type=X.shapes, default=[[7168, 7168]])
    ap.add_argument("--sparsity", type=X.floats, default=[0.7])
    ap.add_argument("--prunings", type=X.words, default=["magnitude"])
    ap.add_argument("--workers", type=int, default=0,
                    help="builder processes of the new path (0: build in this process)")
    ap.add_argument("--ns", type=lambda t: [int(v) for v in X.floats(t)], default=[8, 32, 64])
    ap.add_argument("--paths", type=X.words, default=["old", "new"])
    args = ap.parse_args(argv)
    fake_gpu()
    exp = X.load_experiment("fig14_gs")
    cfg = exp.config(shapes=args.shape, sparsities=args.sparsity, prunings=args.prunings, ns=args.ns)
    print(f"{args.shape} {args.prunings} {args.sparsity} ns={args.ns} methods={cfg['methods']}, "
          f"{os.cpu_count()} cores, new path with workers={args.workers}")
    out = {}
    for path in args.paths:
        STAGES.clear()
        t0 = time.perf_counter()
        if path == "old":
            rows = _gs.measure_weights_per_n(cfg)
        else:
            rows = _gs.measure_weights(cfg, "new", workers=args.workers)
        total = time.perf_counter() - t0
        out[path] = rows
        per = total / len(_gs.weight_jobs(cfg))
        print(f"{path}: {total:.1f} s host ({per:.1f} s per matrix), {len(rows)} rows, "
              f"{sum('error' in r for r in rows)} errors")
        for k, v in sorted(STAGES.items(), key=lambda kv: -kv[1]):
            print(f"    {k:40s} {v:7.2f} s")
    if len(out) == 2:
        strip = {"search_s"}
        same = [{k: v for k, v in r.items() if k not in strip} for r in out["old"]] == \
               [{k: v for k, v in r.items() if k not in strip} for r in out["new"]]
        print("rows equal (search_s excluded):", same)


if __name__ == "__main__":
    main()
