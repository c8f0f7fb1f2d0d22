"""One SparseLinear layer per format against nn.Linear (cuBLAS) in PyTorch, eager and inside a
CUDA graph: what the integration costs (issue 30).

    python tools/time_torch_layer.py [--shapes 4096x11008,11008x4096] [--sparsity 0.7]
                                     [--formats macko,csr] [--batches 1,8] [--calls 20]
                                     [--reps 15] [--out FILE.json]

Each (shape, format, batch): a ``datasets.uniform`` weight (seed 0, rounded to float16) as
``spmvlab.torch.SparseLinear`` and, on the same zeros, a dense ``nn.Linear``; both checked
against each other on one input first. Then, per layer:

``eager_us``  host-clocked time of one ``layer(x)`` from Python (the median over ``--reps``
              runs of ``--calls`` calls, synchronised around each run): what a step
              launched eagerly pays, mostly host time for small kernels;
``graph_us``  ``--calls`` calls captured in one CUDA graph and replayed, CUDA events, the
              median over ``--reps`` replays, divided by the calls (warm L2: the same
              weight read back to back, as consecutive decode steps do not);
``dense_graph_us``  the same for the dense layer, and ``speedup`` = dense / sparse graph time.

Writes the rows with the run metadata to ``--out`` (default
results/<device>/time_torch_layer.json). Needs torch and a CUDA GPU; without one it says so
in one line.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time


def _shapes(text: str) -> list[tuple[int, int]]:
    return [tuple(int(v) for v in s.lower().split("x")) for s in text.split(",") if s.strip()]


def _ints(text: str) -> list[int]:
    return [int(v) for v in text.split(",") if v.strip()]


def _graph_us(torch, fn, calls: int, reps: int) -> float:
    """Median microseconds per call of ``fn`` over ``reps`` replays of one graph of ``calls``
    calls (compiled and warmed on a side stream before the capture)."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(2):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(calls):
            fn()
    graph.replay()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        graph.replay()
        b.record()
        b.synchronize()
        times.append(1e3 * a.elapsed_time(b) / calls)
    return statistics.median(times)


def _eager_us(torch, fn, calls: int, reps: int) -> float:
    times = []
    for _ in range(reps):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
        times.append(1e6 * (time.perf_counter() - t0) / calls)
    return statistics.median(times)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shapes", type=_shapes, default=_shapes("4096x11008,11008x4096,4096x4096"))
    p.add_argument("--sparsity", type=float, default=0.7)
    p.add_argument("--formats", type=lambda t: [v for v in t.split(",") if v], default=None,
                   help="comma-separated layer formats (default: every float16 kernel format)")
    p.add_argument("--batches", type=_ints, default=[1, 8])
    p.add_argument("--calls", type=int, default=20)
    p.add_argument("--reps", type=int, default=15)
    p.add_argument("--out", default=None)
    a = p.parse_args(argv)
    from spmvlab import experiment, runinfo
    if not experiment.gpu_available():
        print("time_torch_layer: no CUDA GPU here (the layers are timed on a GPU)")
        return 2
    import numpy as np
    import torch
    from spmvlab import datasets
    from spmvlab import torch as ST
    formats = a.formats or ST.sparse_formats(torch.float16)
    rows = []

    def save():
        return experiment.save_results(
            a.out or "time_torch_layer", rows,
            dict(shapes=[list(s) for s in a.shapes], sparsity=a.sparsity, formats=formats,
                 batches=a.batches, calls=a.calls, reps=a.reps),
            meta=runinfo.run_metadata())

    for shape in a.shapes:
        A = datasets.uniform(shape, a.sparsity, dtype=np.float32, seed=0)
        w = torch.from_numpy(A.toarray()).to("cuda", torch.float16)
        dense = torch.nn.Linear(shape[1], shape[0], bias=False, dtype=torch.float16, device="cuda")
        with torch.no_grad():
            dense.weight.copy_(w)
        for fmt in formats:
            layer = ST.SparseLinear.from_weight(w, format=fmt)
            for B in a.batches:
                x = torch.randn(B, shape[1], device="cuda", dtype=torch.float16)
                layer.prepare(B)
                with torch.no_grad():
                    got, want = layer(x).float(), dense(x).float()
                    err = float((got - want).abs().max() / want.abs().max().clamp_min(1e-30))

                    def sparse_call():
                        return layer(x)

                    def dense_call():
                        return dense(x)
                    row = dict(shape=list(shape), sparsity=a.sparsity, method=fmt, batch=B,
                               max_rel_err=err, check_passed=err < 1e-2,
                               eager_us=_eager_us(torch, sparse_call, a.calls, a.reps),
                               graph_us=_graph_us(torch, sparse_call, a.calls, a.reps),
                               dense_eager_us=_eager_us(torch, dense_call, a.calls, a.reps),
                               dense_graph_us=_graph_us(torch, dense_call, a.calls, a.reps))
                row["speedup"] = row["dense_graph_us"] / row["graph_us"]
                rows.append(row)
                print(f"{shape[0]}x{shape[1]} {fmt:10s} B={B:<3d} eager {row['eager_us']:8.1f} us "
                      f"graph {row['graph_us']:7.1f} us  dense eager {row['dense_eager_us']:6.1f} "
                      f"graph {row['dense_graph_us']:6.1f} us  x{row['speedup']:.2f}  "
                      f"err {err:.1e}", flush=True)
            path = save()
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
