"""Time the fast EC-CSR encoder (numba) against the NumPy reference.

Default (synthetic): the fast encoder stage by stage on an 8192 x 28672 matrix at 70 %
sparsity (uniform random positions, seeded; fp16 values; default options: delta_bits=8,
warp_size=32, vector_size=4, dynamic clipping, reordering), and the reference on a smaller
matrix it can handle (byte identity checked there). Writes results/cpu/encoder_ec_csr.json.

    python tools/time_ec_csr_encoder.py [--shape 8192 28672] [--check-shape 2048 7168] [--reps 1]

``--data``: every matrix of the data directory (``spmvlab.datasets``: the SuiteSparse
matrices in float32, the weight matrices pruned at 70 % by magnitude in float16), default
options, both encoders in this one process, one matrix after the other: the reference's
wall time, the fast encoder's after a warm-up call on the same matrix (numba compilation
and thread start excluded), each the median of ``--reps`` runs where its first run is
under ``--repeat-below`` seconds and that one run otherwise, and whether the two encodings
are byte for byte equal (every array: dtype, shape, bytes). A matrix whose values do not
fit float32 is encoded with ``lossy=True`` by both (marked in its row). Writes
results/cpu/ec_csr_encoder_times.json (one row per matrix), rewritten after each matrix;
with ``--update``, the rows of ``--names`` replace those of the file's earlier run (re-timing a
matrix disturbed by other load: each row records the load average before and after it).

    python tools/time_ec_csr_encoder.py --data [--names SNAP/email-Enron ...] [--update] [--reps 3]
"""
import argparse
import os
import time

import numba
import numpy as np


from reference import ec_csr as R
from reference._common import LossyConversionError, canonical_csr
from spmvlab import datasets, experiment as X
from spmvlab.encoders import ec_csr as E

p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
p.add_argument("--shape", type=int, nargs=2, default=[8192, 28672])
p.add_argument("--check-shape", type=int, nargs=2, default=[2048, 7168])
p.add_argument("--sparsity", type=float, default=0.7)
p.add_argument("--reps", type=int, default=None,
               help="runs per timing (synthetic: 1; --data: 3, the median taken)")
p.add_argument("--data", action="store_true", help="time every matrix of the data directory")
p.add_argument("--names", nargs="*", default=None,
               help="with --data: only these (SuiteSparse 'Group/Name' or weights names)")
p.add_argument("--update", action="store_true",
               help="with --data --names: replace these rows of the existing results file")
p.add_argument("--repeat-below", type=float, default=10.0,
               help="with --data: repeat a timing only where its first run is under this (s)")
args = p.parse_args()


def same(F, M):
    """Byte for byte equal encodings: every array's dtype, shape and bytes, shape, options."""
    fa, ma = list(F.arrays()), list(M.arrays())
    return (F.shape == M.shape and F.options() == M.options()
            and [n for n, _ in fa] == [n for n, _ in ma]
            and all(a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
                    for (_, a), (_, b) in zip(fa, ma)))


def timed(call, reps: int, repeat_below: float):
    """(last result, median seconds, every run's seconds): ``reps`` runs where the first is
    under ``repeat_below`` seconds, else that one run."""
    runs = []
    while True:
        t = time.perf_counter()
        out = call()
        runs.append(time.perf_counter() - t)
        if len(runs) >= reps or runs[0] >= repeat_below:
            return out, float(np.median(runs)), runs


def data_matrices(names):
    """(name, kind, matrix, dtype) of every matrix of the data directory, or of ``names``."""
    ss, ws = datasets.suitesparse_names(), datasets.weights_names()
    for name in (names if names else ss + ws):
        if name in ss:
            yield name, "suitesparse", datasets.suitesparse(name), np.float32
        elif name in ws:
            yield name, "weights", datasets.prune(datasets.weights(name), 0.7), np.float16
        else:
            raise SystemExit(f"unknown matrix {name!r}: one of {ss + ws}")


def time_data():
    reps = 3 if args.reps is None else args.reps
    E.encode(datasets.uniform((64, 512), 0.7, dtype=np.float16, seed=1), dtype=np.float16)
    order = datasets.suitesparse_names() + datasets.weights_names()
    earlier = {}
    if args.update:
        earlier = {r["name"]: r for r in X.load_results("ec_csr_encoder_times", "cpu")["rows"]}
    for name, kind, A, dt in data_matrices(args.names):
        load_before = os.getloadavg()[0]
        try:
            canonical_csr(A, dt)
            lossy = False
        except LossyConversionError:
            lossy = True
        nnz = int(A.nnz) if hasattr(A, "nnz") else int(np.count_nonzero(A))
        print(f"{name} {A.shape} nnz {nnz:,} {np.dtype(dt).name}{' lossy' if lossy else ''}",
              flush=True)
        Mr, ref_s, ref_runs = timed(lambda: R.encode(A, dtype=dt, lossy=lossy), reps,
                                    args.repeat_below)
        E.encode(A, dtype=dt, lossy=lossy)                          # warm-up
        (Mf, stages), fast_s, fast_runs = timed(
            lambda: E.encode_stages(A, dtype=dt, lossy=lossy), reps, args.repeat_below)
        equal = same(Mf, Mr)
        earlier[name] = dict(name=name, kind=kind, shape=list(A.shape), nnz=nnz,
                             dtype=np.dtype(dt).name, lossy=lossy, reference_s=ref_s,
                             fast_s=fast_s, ratio=ref_s / fast_s, bytes_equal=equal,
                             reference_runs_s=ref_runs, fast_runs_s=fast_runs,
                             fast_stages_s=stages, n_blocks=Mf.n_blocks,
                             load_average_1min=[load_before, os.getloadavg()[0]])
        print(f"  reference {ref_s:.3f} s, fast {fast_s:.3f} s ({ref_s / fast_s:.1f}x), "
              f"bytes equal: {equal}", flush=True)
        del Mr, Mf
        X.save_results("ec_csr_encoder_times", sorted(earlier.values(),
                                                      key=lambda r: order.index(r["name"])),
                       dict(options=dict(delta_bits=8, warp_size=32, vector_size=4, clip=None,
                                         reorder=True, max_granularity=None),
                            suitesparse_dtype="float32", weights_dtype="float16",
                            weights_pruning=dict(sparsity=0.7, method="magnitude", per_row=True),
                            reps=reps, repeat_below_s=args.repeat_below,
                            fast_warmup="one call on the same matrix before timing",
                            cpu_threads=os.cpu_count(), numba_threads=numba.get_num_threads()),
                       device="cpu")
    slower = [r["name"] for r in earlier.values() if r["fast_s"] > r["reference_s"]]
    unequal = [r["name"] for r in earlier.values() if not r["bytes_equal"]]
    print(f"{len(earlier)} matrices; fast slower on: {slower or 'none'}; bytes differ on: "
          f"{unequal or 'none'}")


def time_synthetic():
    reps = 1 if args.reps is None else args.reps
    E.encode(datasets.uniform((64, 512), args.sparsity, dtype=np.float16, seed=1),
             dtype=np.float16)                                # compile outside the timing

    # byte identity and speedup on a size the reference handles
    C = datasets.uniform(tuple(args.check_shape), args.sparsity, dtype=np.float16, seed=0)
    t = time.perf_counter(); Mr = R.encode(C, dtype=np.float16); ref_s = time.perf_counter() - t
    t = time.perf_counter(); Mf, check_stages = E.encode_stages(C, dtype=np.float16); fast_check_s = time.perf_counter() - t
    identical = same(Mf, Mr)
    print(f"check {args.check_shape}: reference {ref_s:.2f} s, fast {fast_check_s:.2f} s, "
          f"byte-identical: {identical}")

    # the full size, fast encoder only
    A = datasets.uniform(tuple(args.shape), args.sparsity, dtype=np.float16, seed=0)
    runs, stages = [], []
    for _ in range(reps):
        t = time.perf_counter(); M, st = E.encode_stages(A, dtype=np.float16); runs.append(time.perf_counter() - t)
        stages.append(st)
        print(f"{args.shape}: {runs[-1]:.2f} s", {k: round(v, 2) for k, v in st.items()})
    rows = [dict(encoder="numba njit", shape=list(args.shape), nnz=int(A.nnz),
                 median_s=float(np.median(runs)), runs_s=runs,
                 stages_s={k: float(np.median([s[k] for s in stages])) for k in stages[0]},
                 n_blocks=M.n_blocks, sets=[{k: s[k] for k in ("granularity", "vector", "n_blocks", "nnz")}
                                            for s in M.sets()],
                 padding_overhead=M.padding_overhead),
            dict(encoder="numba njit", shape=list(args.check_shape), nnz=int(C.nnz),
                 median_s=fast_check_s, runs_s=[fast_check_s], stages_s=check_stages),
            dict(encoder="reference (NumPy)", shape=list(args.check_shape), nnz=int(C.nnz),
                 median_s=ref_s, runs_s=[ref_s])]
    X.save_results("encoder_ec_csr", rows,
                   dict(shape=list(args.shape), check_shape=list(args.check_shape),
                        sparsity=args.sparsity, dtype="float16", delta_bits=8, warp_size=32,
                        vector_size=4, clip=None, reorder=True, max_granularity=None, seed=0,
                        generator="spmvlab.datasets.uniform", byte_identical=identical,
                        speedup_at_check_shape=ref_s / fast_check_s, goal_s=60.0,
                        cpu_threads=os.cpu_count()),
                   device="cpu")


if args.data:
    time_data()
else:
    time_synthetic()
