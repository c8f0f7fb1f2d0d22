"""Does the order in which a warp's lanes walk a long row decide SpMM speed at N = 8? One
CSR SpMM kernel (fp16 values, int32 columns, fp16 B with N = 8, fp32 sums; a warp per row,
4 entries per lane per step with 4 gathers of B in flight, no branches around them), written
twice with only the lane -> entry mapping changed:

``cyclic``   step k: lane l takes entries start + 128 k + 4 l .. + 3 (our CSR SpMM's order: the
             warp reads 128 consecutive entries, so all lanes gather B rows of one column window)
``chunked``  lane l takes the l-th of 32 equal contiguous pieces of the row, 4 entries per
             step (the order of GeneralSparse's row-per-warp strategies, ``T:single/split``:
             the lanes gather from 32 column windows spread over all of K)

On the H200 the generated row-per-warp kernels took 1.15x and 2.0x CSR SpMM's time on
7168x28672 (magnitude 90 %) and 9216x36864 (random 90 %) at N = 8 with alike SASS
(tools/gs_rowwarp_ab.py). If ``chunked`` is as much slower than ``cyclic`` here, the lane
order is the cause and GeneralSparse needs a cyclic thread division.

It was (results/h200/gs_lane_order_ab.json at cffec9e): chunked took 602 us against cyclic's
124 on 9216x36864 random 90 %, 414 against 180 on 7168x28672 magnitude 90 % and 192 against 66
on 28672x7168 random 90 % (csr_vector 94, 153, 61 us). GeneralSparse now has it
(``Strategy.cyclic``, reference/generalsparse.py).

    python tools/gs_lane_order_ab.py [--cases 9216x36864:random:0.9,...] [--out FILE]

Both kernels are checked against scipy first; times are medians of 20 cold-L2 runs, beside
the registry's ``csr_vector`` method on the same problem. Writes every row with the run
metadata (results/<device>/gs_lane_order_ab.json or ``--out``).
"""
from __future__ import annotations

import argparse
import functools
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "experiments")]

from numba import float32, int64  # noqa: E402

from spmvlab._cuda import SIMULATOR, cuda  # noqa: E402  (a module global: the simulator swaps it)
from spmvlab.kernels._intrinsics import vload8  # noqa: E402

CASES = "9216x36864:random:0.9,7168x28672:magnitude:0.9,28672x7168:random:0.9"
WARPS = 4          # warps per block
N = 8              # columns of B


@functools.lru_cache(maxsize=None)
def kernel(order: str):
    """``spmm(indptr, cols, vals, Bf, C)``: warp w of block b owns row 4 b + w and all 8 columns;
    lane l sums its entries' products into 8 registers (which entries: ``order``), then the warp
    adds them up with shuffles and lanes 0-7 write C[row, lane]."""
    cyclic = order == "cyclic"

    @cuda.jit
    def spmm(indptr, cols, vals, Bf, C):
        lane = cuda.threadIdx.x % 32
        row = cuda.blockIdx.x * WARPS + cuda.threadIdx.x // 32
        if row >= C.shape[0]:
            return
        start = int64(indptr[row])
        end = int64(indptr[row + 1])
        if cyclic:
            p = start + 4 * lane
            step = 128
            stop = end
        else:
            piece = (end - start + 31) // 32
            p = start + lane * piece
            step = 4
            stop = min(p + piece, end)
        a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = float32(0.0)
        last = max(end - 1, start)
        while p < stop:
            for q in range(4):                       # unrolled: 4 gathers in flight
                e = min(p + q, last)                 # clamped, weight 0 past the range
                w = float32(vals[e]) if p + q < stop else float32(0.0)
                xs = vload8(Bf, int64(cols[e]) * N)
                a0 += w * float32(xs[0])
                a1 += w * float32(xs[1])
                a2 += w * float32(xs[2])
                a3 += w * float32(xs[3])
                a4 += w * float32(xs[4])
                a5 += w * float32(xs[5])
                a6 += w * float32(xs[6])
                a7 += w * float32(xs[7])
            p += step
        off = 16
        while off > 0:
            a0 += cuda.shfl_xor_sync(0xFFFFFFFF, a0, off)
            a1 += cuda.shfl_xor_sync(0xFFFFFFFF, a1, off)
            a2 += cuda.shfl_xor_sync(0xFFFFFFFF, a2, off)
            a3 += cuda.shfl_xor_sync(0xFFFFFFFF, a3, off)
            a4 += cuda.shfl_xor_sync(0xFFFFFFFF, a4, off)
            a5 += cuda.shfl_xor_sync(0xFFFFFFFF, a5, off)
            a6 += cuda.shfl_xor_sync(0xFFFFFFFF, a6, off)
            a7 += cuda.shfl_xor_sync(0xFFFFFFFF, a7, off)
            off //= 2
        if lane < N:
            s = (a0, a1, a2, a3, a4, a5, a6, a7)
            v = a0
            for j in range(1, N):                   # lane j writes column j
                if lane == j:
                    v = s[j]
            C[row, lane] = v

    return spmm


def run(order: str, A, Bf, dC):
    """Launch ``order``'s kernel on the device arrays of ``A`` (a dict) and flat B."""
    rows = dC.shape[0]
    kernel(order)[(rows + WARPS - 1) // WARPS, 32 * WARPS](A["indptr"], A["cols"], A["vals"], Bf, dC)


def main(argv=None) -> int:
    import _gs
    from spmvlab import experiment, methods, runinfo
    from spmvlab.bench import time_fn
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", default=CASES, help="comma-separated RxC:pruning:sparsity")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)
    rows, lines = [], []
    for case in a.cases.split(","):
        shape, pruning, sparsity, A = _gs.case_matrix(case)
        B = np.random.default_rng(1).standard_normal((shape[1], N)).astype(np.float16)
        exact = A.astype(np.float64) @ B.astype(np.float64)
        bound = abs(A).astype(np.float64) @ np.abs(B.astype(np.float64))
        dA = dict(indptr=cuda.to_device(A.indptr.astype(np.int64)), cols=cuda.to_device(A.indices.astype(np.int32)),
                  vals=cuda.to_device(A.data.astype(np.float16)))
        dB = cuda.to_device(np.ascontiguousarray(B).ravel())
        extra = dict(case=case, shape=list(shape), pruning=pruning, sparsity=sparsity, n=N, nnz=int(A.nnz))
        for order in ("cyclic", "chunked"):
            dC = cuda.to_device(np.full((shape[0], N), np.nan, dtype=np.float32))
            run(order, dA, dB, dC)
            err = np.abs(dC.copy_to_host() - exact)
            ok = bool(np.all(err <= 1e-3 * bound + 1e-6))
            row = dict(extra, method=f"csr_{order}", check_passed=ok, max_err=float(np.nanmax(err)))
            if not SIMULATOR:
                t = time_fn(lambda: run(order, dA, dB, dC), reps=a.reps, warmup=3, cold=True)
                row.update(median_us=t.median_us, p10_us=t.p10_us, p90_us=t.p90_us)
            rows.append(row)
            lines.append(f"{case:28s} {row['method']:12s} {row.get('median_us', float('nan')):8.1f} us  check {ok}")
            print(lines[-1], flush=True)
        if not SIMULATOR:
            p = methods.Problem.make(A, "float16", k=N, seed=1, lossy=True)
            for r in methods.measure_problem(p, ["csr_vector"], reps=a.reps, warmup=3, keep_going=True, extra=extra):
                rows.append(r)
                lines.append(f"{case:28s} {'csr_vector':12s} {r.get('median_us') or float('nan'):8.1f} us  "
                             f"check {r.get('check_passed')}")
                print(lines[-1], flush=True)
        if any(not r["check_passed"] for r in rows if r.get("case") == case and r["method"].startswith("csr_c")):
            print(f"{case}: a kernel failed its check", file=sys.stderr)
    path = experiment.save_results(a.out or "gs_lane_order_ab", rows, vars(a), meta=runinfo.run_metadata())
    print("\n".join(["", *lines, f"wrote {path}"]))
    return 0 if all(r.get("check_passed", True) for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
