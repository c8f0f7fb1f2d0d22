"""Batched SpMM on LLM layer shapes (Y = W @ X, X of N = 8 to 64 columns, fp16, cold L2):
every format's SpMM against cuBLAS GEMM, issue 29's table.

Serving a pruned model multiplies each weight by the activations of a batch of tokens. For
each shape (Llama-2-7B's 4096x11008, a 7168x7168 and a 28672x7168 projection), sparsity
(uniform random masks, ``datasets.uniform``) and N, every method is checked on the GPU
against the float64 product and timed (median, L2 flushed before every call): MACKO, CSR,
EC-CSR, the ``generalsparse`` method's default (the cost model's pick for the matrix and N)
and the split 2:4 format (``split24``: the first two nonzeros of every group of four
columns through the sparse tensor cores, the rest as a CSR residual; with its launch
settings), cuBLAS GEMM fp16 (CuPy, GemmEx with fp32 compute) in the same run. The plot and
the table are ``spmm_macko``'s.

    python experiments/spmm_llm.py [--quick] [--plot-only] [--shapes ...] [--sparsities ...]
                                   [--ks ...] [--methods cublas,split24,...] [--merge]
"""
from __future__ import annotations

import sys

from spmvlab import experiment as X

from experiments import spmm_macko as _spmm

NAME = "spmm_llm"
NEEDS_GPU = True
# measured in parts and joined with --merge / --merge-parts; a method timed in a run of its own
# joins the table too (each run times cuBLAS beside it: speedups never cross runs)
SPLIT_KEYS = ("shapes", "sparsities", "ks", "methods")
CELL_KEYS = ("shapes", "sparsities", "ks")     # a cluster task: every method of one cell
# split24 with its default launch settings only: an earlier h200 run also timed
# warps_per_band 4, 8, 16 and cols_per_warp 16 (docs/performance.md, "Split 2:4 kernels"),
# and the default (4 warps from FULL_GRID_BLOCKS blocks, 8 under) is what that sweep chose
METHODS = ["cublas", "macko", "csr_vector", "ec_csr", "generalsparse", "split24"]
FULL = dict(shapes=[[4096, 11008], [7168, 7168], [28672, 7168]], sparsities=[0.5, 0.7, 0.9],
            ks=[8, 32, 64], dtype="float16", methods=METHODS, reps=50, warmup=5, seed=0)
QUICK = dict(shapes=[[4096, 11008]], sparsities=[0.7], ks=[8, 32], reps=20)

method_list = _spmm.method_list
cli = _spmm.cli                     # --methods, --ks, --shapes, --sparsities
plot = _spmm.plot
report = _spmm.report


def config(quick: bool = False, **overrides) -> dict:
    return X.make_config(NAME, FULL, QUICK, quick, overrides)


def measure(cfg: dict) -> dict:
    """Per shape and sparsity one matrix (built with its dense copy and its encodings in a
    worker process while the previous one is timed); each N gets its own X (``Problem.with_rhs``, seed 1 as
    ``methods.measure`` draws it). The plot reads ``cusparse_k`` and the fp16 rows."""
    from spmvlab import methods
    rows = []
    jobs = [dict(shape=list(s), sparsity=sp, dtype=cfg["dtype"], seed=cfg["seed"],
                 encode=X.encodings_of(cfg["methods"]))
            for s in cfg["shapes"] for sp in cfg["sparsities"]]
    for job, p1 in X.progress(X.problems(jobs, dense=True), total=len(jobs), desc=NAME):
        for k in (int(v) for v in cfg["ks"]):
            rows += methods.measure_problem(p1.with_rhs(k), cfg["methods"], reps=cfg["reps"],
                                            warmup=cfg["warmup"],
                                            extra=dict(sparsity=job["sparsity"]))
            # after every N: a run stopped by a time limit keeps these (the largest matrix
            # alone can fill a device call)
            X.checkpoint(dict(rows=rows))
        del p1
    return dict(rows=rows)


def best(results: dict) -> list[dict]:
    """Per (shape, sparsity, N): the fastest of our methods whose check passed (any split24
    setting counts), its time and its speedup over cuBLAS in the same run; paper_repro.md's
    batched-SpMM table reads these."""
    cells = {}
    for r in results["rows"]:
        if r["method"] == "cublas" or not r.get("check_passed") or r.get("median_us") is None:
            continue
        key = (tuple(r["shape"]), r["sparsity"], r["k"])
        if key not in cells or r["median_us"] < cells[key]["median_us"]:
            cells[key] = r
    return [dict(shape=list(key[0]), sparsity=key[1], k=key[2], method=r["method"],
                 median_us=r["median_us"], speedup=r["speedup_vs_cublas"])
            for key, r in sorted(cells.items())]


def ec_over_macko(results: dict) -> list[dict]:
    """Per (shape, sparsity, N): EC-CSR SpMM's time over MACKO SpMM's (issue 29 asks for at
    most 1.25 at N = 8), from rows of one run (the same ``part`` of a merged file) whose checks
    passed; cells where the two come from different runs are left out."""
    got = {}
    for r in results["rows"]:
        if r["method"] in ("ec_csr", "macko") and r.get("check_passed") and r.get("median_us"):
            got.setdefault((tuple(r["shape"]), r["sparsity"], r["k"]), {})[r["method"]] = r
    return [dict(shape=list(key[0]), sparsity=key[1], k=key[2],
                 ratio=pair["ec_csr"]["median_us"] / pair["macko"]["median_us"])
            for key, pair in sorted(got.items())
            if len(pair) == 2 and pair["ec_csr"].get("part") == pair["macko"].get("part")]


if __name__ == "__main__":
    sys.exit(X.main(sys.modules[__name__]))
