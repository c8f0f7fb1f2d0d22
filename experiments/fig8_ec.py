"""EC-SpMV paper, Fig. 8: the one-off preprocessing time per matrix, split into hierarchical
block extraction and EC-CSR format conversion, on this machine's CPU.

For every shape (by default the Llama2 shapes of ``ec_common.LLAMA2_SHAPES``) and sparsity, a
``datasets.uniform`` matrix (seeded, float16 values) is encoded by the fast encoder
(``spmvlab.encoders.ec_csr.encode_stages``: numba, parallel similarity counts) with the default
options (EC-CSR-8: delta_bits 8, warp_size 32, vector_size 4, dynamic clipping, reordering);
``reps`` runs, the median kept, after one small encode that compiles everything. Stages, as the
paper's two:

    extraction   bitsets + matching (similarity counts included) + extraction + leftovers
                 (Algorithm 1 with Algorithm 2 in every round)
    conversion   canonical (CSR input checks) + assemble (gap padding, long/short split,
                 clipping, reordering) + store (deltas, interleaving, values)

Matrix generation is not timed. The CPU (model, logical CPUs, numba threads) is recorded under
``cpu``. The paper's CPUs: Xeon Silver 4316 (20 cores) and W5-3435 (16 cores); ours is the
one recorded in the results.

    python experiments/fig8_ec.py [--quick] [--shapes 4096x11008,8192x28672] [--sparsities 0.7]
"""
from __future__ import annotations

import sys
import time

import numpy as np

from spmvlab import experiment as X
from spmvlab import plotting as P

from experiments import ec_common as EC

NAME = "fig8_ec"
NEEDS_GPU = False
EXTRACTION = ("bitsets", "matching", "extraction", "leftovers")
CONVERSION = ("canonical", "assemble", "store")
#: the paper's statement (Sec. 8.1) and the issue's goal for 8192x28672 at 70 %
PAPER_BOUND_S, GOAL_S = 100.0, 60.0
FULL = dict(shapes=EC.llama2_shapes(), sparsities=[0.7], delta_bits=8, reps=1, seed=0)
QUICK = dict(shapes=[[512, 2048], [1024, 1024]], sparsities=[0.7, 0.9])


def config(quick: bool = False, **overrides) -> dict:
    return X.make_config(NAME, FULL, QUICK, quick, overrides)


def cli(p):
    p.add_argument("--shapes", type=X.shapes, help="matrix shapes, RxC,...")
    p.add_argument("--sparsities", type=X.floats, help="sparsities, e.g. 0.7,0.9")
    p.add_argument("--reps", type=int, help="encodes per matrix (median kept)")


def measure(cfg: dict) -> dict:
    from spmvlab import datasets
    from spmvlab.encoders import ec_csr as E
    E.encode(datasets.uniform((64, 512), 0.7, dtype=np.float16, seed=1), dtype=np.float16,
             delta_bits=cfg["delta_bits"])                    # compile outside the timing
    jobs = [(tuple(s), sp) for s in cfg["shapes"] for sp in cfg["sparsities"]]
    rows = []
    for shape, sparsity in X.progress(jobs, total=len(jobs), desc=NAME):
        A = EC.matrix("uniform", sparsity, shape, cfg["seed"])
        runs, stages = [], []
        for _ in range(cfg["reps"]):
            t0 = time.perf_counter()
            M, st = E.encode_stages(A, dtype=np.float16, delta_bits=cfg["delta_bits"])
            runs.append(time.perf_counter() - t0)
            stages.append(st)
        med = {k: float(np.median([s[k] for s in stages])) for k in stages[0]}
        rows.append(dict(shape=list(shape), model=EC.model_of(shape), sparsity=sparsity,
                         nnz=int(A.nnz), total_s=float(np.median(runs)), runs_s=runs,
                         extraction_s=sum(med[k] for k in EXTRACTION),
                         conversion_s=sum(med[k] for k in CONVERSION), stages_s=med,
                         n_blocks=M.n_blocks, census={str(g): n for g, n in M.census().items()}))
        del A, M
    return dict(rows=rows, cpu=EC.cpu_info())


def plot(results: dict, fig_path: str) -> list[str]:
    plt = P.pyplot()
    rows = results["rows"]
    sparsities = sorted({r["sparsity"] for r in rows})
    n_shapes = max(len([r for r in rows if r["sparsity"] == s]) for s in sparsities)
    fig, axes = plt.subplots(1, len(sparsities), squeeze=False, sharex=True, sharey=True,
                             figsize=(P.COLUMN_WIDTH if len(sparsities) == 1 else P.PAGE_WIDTH,
                                      0.2 * n_shapes + 1.5))
    cpu = results.get("cpu", {})
    top = max([PAPER_BOUND_S] + [r["total_s"] for r in rows])
    for i, (ax, s) in enumerate(zip(axes[0], sparsities)):
        sub = [r for r in rows if r["sparsity"] == s]
        labels = [f"{r['shape'][0]}x{r['shape'][1]}" + (f" ({r['model']})" if r.get("model") else "")
                  for r in sub]
        y = np.arange(len(sub))
        ext = np.array([r["extraction_s"] for r in sub])
        conv = np.array([r["conversion_s"] for r in sub])
        # the two stages of EC-CSR's encoder (no methods): shades of its colour
        ax.barh(y, ext, 0.7, color="#5e2d79", label="block extraction (matching + extraction)")
        ax.barh(y, conv, 0.7, left=ext, color="#c2a5cf", label="format conversion")
        for yi, r in zip(y, sub):
            ax.text(r["total_s"], yi, f" {r['total_s']:.1f} s", va="center", fontsize=6.5)
        ax.axvline(PAPER_BOUND_S, color="gray", ls="--", lw=0.9, label="paper: < 100 s for most")
        if i == 0:
            ax.set_yticks(y, labels, fontsize=6.5)
            ax.invert_yaxis()
        ax.grid(axis="y", visible=False)
        ax.set(xlabel="seconds", title=f"{100 * s:.0f} % sparse, EC-CSR-{results['config']['delta_bits']}",
               xlim=(0, top * 1.22))
    fig.suptitle(f"EC-CSR preprocessing per matrix,\n{cpu.get('model', 'CPU')} "
                 f"({cpu.get('numba_threads', '?')} threads)")
    P.legend_below(fig, axes[0][:1], ncol=1, room=0.13)
    return P.savefig(fig, fig_path, tight=False)


def report(results: dict):
    cols = [("shape", "shape", ""), ("model", "layer", ""), ("sparsity", "sparsity", ".2f"),
            ("nnz", "nnz", ""), ("extraction_s", "extraction s", ".1f"),
            ("conversion_s", "conversion s", ".1f"), ("total_s", "total s", ".1f")]
    P.print_table(results["rows"], cols)
    cpu = results.get("cpu", {})
    print(f"CPU: {cpu.get('model')}, {cpu.get('logical_cpus')} logical CPUs, "
          f"{cpu.get('numba_threads')} numba threads")


if __name__ == "__main__":
    sys.exit(X.main(sys.modules[__name__]))
