"""EC-CSR SpMV kernel variants (``ECCSRConfig``) against cuBLAS and MACKO on LLM shapes.

    python tools/time_ec_csr.py [--out FILE.json] [--shape R C ...] [--sparsity 0.5 0.7 ...]
                                [--fp32 0.7 ...] [--methods NAME ...] [--reps 60] [--quick]

Default: 4096 x 11008 and 12288 x 12288 (``datasets.uniform``, seed 0) at 50/70/80/90 %
sparsity in float16 and at 70 % in float32; methods ``cublas``, ``macko``, and EC-CSR with
the int64 kernel (``index32=False``, the first version) and the default (uint32 positions);
``--methods`` takes other settings, e.g. ``'ec_csr[threads_per_block=128]'``. Every method
is checked against the exact product and timed by ``spmvlab.methods.measure_problem`` (CUDA
events, L2 flushed by a read, median of ``--reps``). The problems (matrix, dense copy,
MACKO and EC-CSR encodings) are built in worker processes while the GPU times the previous
one (``spmvlab.experiment.problems``). ``--quick``: 4096 x 11008 at 70 % only, 20 reps.

Prints one table per problem (median us, TB/s over the format's bytes, speedup over cuBLAS
and over MACKO) and writes the rows with the run metadata to ``--out`` (default
results/<device>/time_ec_csr.json) after every problem, so a run stopped part way keeps
the problems it finished. Without a GPU it says so in one line.
"""
from __future__ import annotations

import argparse
import sys


#: what is timed by default: the baselines, then EC-CSR kernel settings
METHODS = ("cublas", "macko", "ec_csr[index32=False]", "ec_csr")
SHAPES = ((4096, 11008), (12288, 12288))
SPARSITIES = (0.5, 0.7, 0.8, 0.9)


def specs(shapes, sparsities, fp32) -> list[dict]:
    out = []
    for shape in shapes:
        for s in sparsities:
            out.append(dict(shape=list(shape), sparsity=s, dtype="float16", seed=0,
                            encode=["ec_csr", "macko"]))
        for s in fp32:
            out.append(dict(shape=list(shape), sparsity=s, dtype="float32", seed=0,
                            encode=["ec_csr", "macko"]))
    return out


def main(argv=None) -> int:
    from spmvlab import experiment, methods, plotting, runinfo
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shape", type=int, nargs=2, action="append", metavar=("R", "C"))
    p.add_argument("--sparsity", type=float, nargs="+", default=None)
    p.add_argument("--fp32", type=float, nargs="*", default=None,
                   help="sparsities also timed in float32 (default 0.7)")
    p.add_argument("--methods", nargs="+", default=None)
    p.add_argument("--reps", type=int, default=None)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--out", default=None, help="JSON path (default results/<device>/time_ec_csr.json)")
    a = p.parse_args(argv)
    if not experiment.gpu_available():
        print("time_ec_csr: no CUDA GPU here (the kernels are timed on a GPU)")
        return 0
    shapes = a.shape or ([(4096, 11008)] if a.quick else SHAPES)
    sparsities = a.sparsity or ([0.7] if a.quick else SPARSITIES)
    fp32 = a.fp32 if a.fp32 is not None else ([] if a.quick else [0.7])
    names = list(a.methods or METHODS)
    reps = a.reps or (20 if a.quick else 60)
    rows = []

    def save():
        # after every problem, so a run stopped by a time limit keeps what it measured
        return experiment.save_results(
            a.out or "time_ec_csr", rows,
            dict(shapes=[list(s) for s in shapes], sparsities=list(sparsities), fp32=list(fp32),
                 methods=names, reps=reps),
            meta=runinfo.run_metadata())

    for spec, prob in experiment.problems(specs(shapes, sparsities, fp32), dense=True):
        extra = dict(sparsity=spec["sparsity"])
        got = methods.measure_problem(prob, names, reps=reps, extra=extra, keep_going=True)
        base = {r["method"]: r.get("median_us") for r in got}
        for r in got:
            us = r.get("median_us")
            for ref in ("cublas", "macko"):
                if us and base.get(ref):
                    r[f"speedup_vs_{ref}"] = base[ref] / us
        rows += got
        print(f"\n{spec['shape'][0]}x{spec['shape'][1]} {spec['dtype']} sparsity {spec['sparsity']}")
        print(plotting.format_table(got, [
            ("method", "method", ""), ("check_passed", "ok", ""), ("median_us", "us", ".1f"),
            ("format_bytes", "bytes", "d"), ("tb_s", "TB/s", ".2f"),
            ("speedup_vs_cublas", "x cuBLAS", ".2f"), ("speedup_vs_macko", "x MACKO", ".2f"),
            ("error", "error", "")]))
        save()
        sys.stdout.flush()
    print("wrote", save())
    return 0 if all(r.get("check_passed", True) is not False for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
