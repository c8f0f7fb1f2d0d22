"""CSR-dtANS SpMV decode throughput against cuSPARSE (CSR, COO, SELL) on large matrices and
against cuBLAS and MACKO on LLM weight shapes: the issue-28 benchmark.

    python tools/time_csr_dtans.py [--family stencil5:25 ...] [--weights 4096x11008:0.7 ...]
                                   [--no-weights] [--dtypes float64 float32] [--configs '{}' ...]
                                   [--reps 20]
                                   [--out FILE.json] [--quick]

Synthetic matrices are ``experiments/_dtans.py``'s families at 2**e nonzeros (built on the
host with their seeds; ``--family stencil5:25``; the default five only where neither
``--family`` nor ``--weights`` is given, and the same for the weights); weight shapes are ``datasets.uniform``
masks (seed 0; ``--weights 4096x11008:0.7``) whose float16 values are drawn from the values
the real weights keep at that sparsity (``experiments/dtans_llm_speed.matrix``, as that
experiment builds them), or are standard normal where ``SPMVLAB_DATA`` has no weights. Each
method is checked against the float64 product, then timed cold (L2 read-flushed before every
call, CUDA events, median of ``--reps``) by ``experiments/_dtans.time_matrix``. Every
``--configs`` entry (``CSRDtansConfig`` fields as JSON) is one more CSR-dtANS method.

Per matrix it prints median times, each CSR-dtANS config's speedup over the fastest
baseline, and its decode rate: symbols per second (two per nonzero: a column delta and a
value), symbols per SM per clock (the SM count and the maximum SM clock of the device), and
the rate the device's copy bandwidth would need to stream the format's bytes in the same
time. Writes the rows with the run metadata to ``--out`` (default
results/<device>/time_csr_dtans.json). Without a GPU it says so in one line.
"""
from __future__ import annotations

import argparse
import json
import sys

SPARSE_BASELINES = ("cusparse", "cusparse_coo", "cusparse_sell")
DENSE_BASELINES = ("cublas", "macko")
FAMILIES = ("stencil5:25", "stencil9:25", "stencil27:25", "banded17:25", "erdos_renyi5:25",
            "watts20:25", "power_law8:25")
WEIGHTS = ("4096x11008:0.7", "4096x11008:0.9")


def _family(text: str) -> tuple[str, int]:
    fam, _, e = text.partition(":")
    return fam, int(e or 25)


def _weights(text: str) -> tuple[int, int, float]:
    shape, _, s = text.partition(":")
    r, c = shape.lower().split("x")
    return int(r), int(c), float(s or 0.7)


def _csr_dtans_name(cfg: dict) -> str:
    if not cfg:
        return "csr_dtans"
    inner = ",".join(f"{k}={v!r}" for k, v in cfg.items())
    return f"csr_dtans[{inner}]"


def main(argv=None) -> int:
    from spmvlab import bench, datasets, experiment, plotting, runinfo
    from spmvlab._cuda import cuda
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--family", type=_family, action="append", metavar="FAM:LOG2NNZ")
    p.add_argument("--weights", type=_weights, action="append", metavar="RxC:SPARSITY")
    p.add_argument("--dtypes", nargs="+", default=["float64", "float32"],
                   help="value types of the synthetic matrices (weights are float16)")
    p.add_argument("--configs", type=json.loads, nargs="+", default=[{}],
                   help="CSRDtansConfig fields as JSON, one CSR-dtANS method each")
    p.add_argument("--reps", type=int, default=20)
    p.add_argument("--no-weights", action="store_true", help="synthetic matrices only")
    p.add_argument("--quick", action="store_true", help="stencil5 at 2^22 and one weight shape")
    p.add_argument("--out", default=None)
    a = p.parse_args(argv)
    if not experiment.gpu_available():
        print("time_csr_dtans: no CUDA GPU here (the kernels are timed on a GPU)")
        return 0
    from experiments import _dtans as D
    # the default families only where neither --family nor --weights names what to time
    fams = a.family or ([] if a.weights else
                        [("stencil5", 22)] if a.quick else [_family(f) for f in FAMILIES])
    weights = [] if a.no_weights or (a.family and not a.weights) else a.weights or (
        [(4096, 11008, 0.7)] if a.quick else [_weights(w) for w in WEIGHTS])
    ours = [_csr_dtans_name(c) for c in a.configs]
    dev = cuda.get_current_device()
    sms = dev.MULTIPROCESSOR_COUNT
    clock_hz = dev.CLOCK_RATE * 1e3
    copy = bench.copy_bandwidth()
    copy_bps = copy["tb_s"] * 1e12
    print(f"{dev.name.decode() if isinstance(dev.name, bytes) else dev.name}: {sms} SMs, "
          f"max SM clock {clock_hz / 1e9:.2f} GHz, copy {copy['tb_s']:.2f} TB/s", flush=True)

    def log(text):
        print("  " + text, file=sys.stderr, flush=True)

    cases = []
    for i, (fam, e) in enumerate(fams):
        spec = D.synthetic_specs([fam], [e], 1000 + i)[0]
        cases.append((spec["name"], lambda s=spec: D.build(s), a.dtypes, SPARSE_BASELINES))
    def weight_matrix(r, c, s):
        from experiments import dtans_llm_speed as L
        try:
            pool = L.value_pool(datasets.weights_names(), s)
        except Exception as exc:              # noqa: BLE001 - no weights: normal values
            log(f"no value pool ({type(exc).__name__}: {exc}); standard-normal values")
            return datasets.uniform((r, c), s, dtype="float16", seed=0)
        return L.matrix((r, c), s, pool, "float16", seed=0)

    for r, c, s in weights:
        cases.append((f"uniform_{r}x{c}_{round(s * 100)}", lambda r=r, c=c, s=s: weight_matrix(r, c, s),
                      ["float16"], DENSE_BASELINES))
    rows, path = [], None

    def save():
        # after every matrix, so a run stopped part way keeps what it measured
        return experiment.save_results(
            a.out or "time_csr_dtans", rows,
            dict(families=[list(f) for f in fams], weights=[list(w) for w in weights],
                 dtypes=a.dtypes, configs=a.configs, reps=a.reps, sms=sms,
                 max_sm_clock_hz=clock_hz, copy=copy),
            meta=runinfo.run_metadata())

    for name, make, dtypes, baselines in cases:
        A = make()
        for dt in dtypes:
            got = D.time_matrix(A, dt, [*baselines, *ours], reps=a.reps, warmup=3,
                                caches=("cold",), extra=dict(matrix=name), log=log)
            base = [r["median_us"] for r in got
                    if r["method"] in baselines and r.get("median_us") and r.get("check_passed")]
            best = min(base) if base else None
            for r in got:
                us = r.get("median_us")
                if not us:
                    continue
                if best:
                    r["speedup_vs_best_baseline"] = best / us
                if r["method"].startswith("csr_dtans"):
                    sym = 2 * r["nnz"]
                    r["symbols_per_s"] = sym / (us * 1e-6)
                    r["symbols_per_sm_clock"] = r["symbols_per_s"] / (sms * clock_hz)
                    r["copy_us"] = r["format_bytes"] / copy_bps * 1e6
            rows += got
            print(f"\n{name} {dt} ({got[0]['nnz']:,} nonzeros)")
            print(plotting.format_table(got, [
                ("method", "method", ""), ("check_passed", "ok", ""), ("median_us", "us", ".1f"),
                ("format_bytes", "bytes", "d"), ("speedup_vs_best_baseline", "x best", ".2f"),
                ("symbols_per_s", "sym/s", ".3g"), ("symbols_per_sm_clock", "sym/SM/clk", ".2f"),
                ("copy_us", "copy us", ".1f"), ("error", "error", "")]), flush=True)
            path = save()
    print("wrote", path)
    return 0 if all(r.get("check_passed", True) is not False for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
