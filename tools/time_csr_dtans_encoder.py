"""Time the CSR-dtANS encoders (reference NumPy/Python vs numba njit) and check they agree
byte for byte. Writes results/cpu/encoder_csr_dtans.json with the run metadata.

Matrix (seeded, ``matrix(nnz, seed)``): 2**21 * nnz / 2**25 rows, ``2**20`` columns, row
lengths uniform in [8, 24] (mean 16, then adjusted by one in random rows to sum to exactly
``nnz``), columns uniform and distinct within a row, values standard normal in ``--dtype``
(default float16, held as float32 since scipy has no float16: a value
alphabet the paper's tables can cover in part). The fast encoder
runs on ``--nnz`` (default 2**25) nonzeros, the reference on ``--ref-nnz`` (default 2**18):
the reference is a Python loop per symbol, so throughputs (symbols/s, two symbols per
nonzero) are compared, and both encoders run on the small matrix for the byte check.

    python tools/time_csr_dtans_encoder.py [--nnz 33554432] [--ref-nnz 262144] [--reps 1]

The compiled warp pass runs on numba's threads (``prange``); on a shared machine the runs
vary with the load, so every run, the median and the best are recorded with the load
average.
"""
import argparse
import os
import time

import numpy as np
import scipy.sparse as sp
from numba import get_num_threads


from reference import csr_dtans as R
from spmvlab import experiment as X
from spmvlab.encoders import csr_dtans as E

N_COLS = 1 << 20


def matrix(nnz: int, seed: int, dtype) -> sp.csr_matrix:
    rng = np.random.default_rng(seed)
    n_rows = max(1, nnz // 16)
    lengths = rng.integers(8, 25, size=n_rows)
    diff = nnz - int(lengths.sum())
    rows = rng.choice(n_rows, size=abs(diff), replace=False)   # |diff| << rows here
    lengths[rows] += np.sign(diff)
    indptr = np.concatenate(([0], np.cumsum(lengths)))
    row = np.repeat(np.arange(n_rows, dtype=np.int64), lengths)
    u = np.sort(row * N_COLS + rng.integers(0, N_COLS - 32, size=nnz)) - row * N_COLS
    cols = u + (np.arange(nnz) - indptr[row])                  # sorted draws + rank: distinct
    vals = rng.standard_normal(nnz).astype(dtype)                 # values representable in dtype,
    vals[vals == 0] = 1
    vals = vals.astype(np.float64 if dtype == np.float64 else np.float32)  # held in a scipy dtype
    return sp.csr_matrix((vals, cols.astype(np.int32), indptr), shape=(n_rows, N_COLS))


def same(a, b) -> bool:
    return all(getattr(a, n).dtype == getattr(b, n).dtype
               and getattr(a, n).tobytes() == getattr(b, n).tobytes() for n, _ in a.arrays())


def timed(fn, *args, **kw):
    t = time.perf_counter()
    out = fn(*args, **kw)
    return out, time.perf_counter() - t


p = argparse.ArgumentParser(description=__doc__)
p.add_argument("--nnz", type=int, default=1 << 25)
p.add_argument("--ref-nnz", type=int, default=1 << 18)
p.add_argument("--reps", type=int, default=1)
p.add_argument("--dtype", default="float16")
p.add_argument("--params", default="paper")
args = p.parse_args()
dt = np.dtype(args.dtype)

small = matrix(args.ref_nnz, 1, dt)
_, compile_s = timed(E.encode, small[:64], dtype=dt, params=args.params)   # compile (or load the cache)
Mr, ref_s = timed(R.encode, small, dtype=dt, params=args.params)
Ms, fast_small_s = timed(E.encode, small, dtype=dt, params=args.params)
identical = same(Ms, Mr)

big = matrix(args.nnz, 0, dt)
fast = []
for _ in range(args.reps):
    Mf, s = timed(E.encode, big, dtype=dt, params=args.params)
    fast.append(s)
fast_s = float(np.median(fast))
sym = lambda nnz, s: 2 * nnz / s                                 # noqa: E731
best_s = float(min(fast))
rows = [dict(encoder="numba njit", nnz=int(big.nnz), shape=list(big.shape), median_s=fast_s,
             best_s=best_s, runs_s=fast, symbols_per_s=sym(big.nnz, fast_s),
             symbols_per_s_best=sym(big.nnz, best_s), words=int(Mf.words.size),
             nbytes=int(Mf.nbytes)),
        dict(encoder="numba njit", nnz=int(small.nnz), shape=list(small.shape), median_s=fast_small_s,
             runs_s=[fast_small_s], symbols_per_s=sym(small.nnz, fast_small_s)),
        dict(encoder="reference (NumPy/Python)", nnz=int(small.nnz), shape=list(small.shape),
             median_s=ref_s, runs_s=[ref_s], symbols_per_s=sym(small.nnz, ref_s))]
speedup = rows[0]["symbols_per_s"] / rows[2]["symbols_per_s"]
speedup_best = rows[0]["symbols_per_s_best"] / rows[2]["symbols_per_s"]
X.save_results("encoder_csr_dtans", rows,
               dict(params=args.params, dtype=str(dt), n_cols=N_COLS, row_lengths="uniform 8..24",
                    seeds={"big": 0, "small": 1}, compile_or_cache_load_s=compile_s),
               extra=dict(byte_identical_on_small=identical, speedup_symbols_per_s=speedup,
                          speedup_symbols_per_s_best=speedup_best, numba_threads=get_num_threads(),
                          load_avg_1_5_15=list(os.getloadavg()),
                          goal=dict(nnz=1 << 25, under_s=60, min_speedup=50)),
               device="cpu")
print(f"njit: nnz {big.nnz} in {fast_s:.2f} s ({rows[0]['symbols_per_s']:.3g} symbols/s); "
      f"nnz {small.nnz} in {fast_small_s:.3f} s")
print(f"reference: nnz {small.nnz} in {ref_s:.2f} s ({rows[2]['symbols_per_s']:.3g} symbols/s)")
print(f"njit runs {[round(t, 2) for t in fast]} s; load average {os.getloadavg()}")
print(f"speedup (symbols/s) median {speedup:.0f}x, best {speedup_best:.0f}x, byte-identical on the small matrix: {identical}")
