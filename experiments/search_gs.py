"""GeneralSparse paper, Sec. 3.4 and 4.6: the campaign that trains the cost model, its
accuracy on held-out matrices and the search analysis.

For every training matrix and N, every strategy of ``strategies(A, N)`` that the code
generator supports (``spmvlab.tune.candidates``, 85-240 per matrix) is built (plan, upload),
checked on the GPU and timed (cold L2, median of ``reps``), with the kernel of the bare
strategy (offsets loaded: one compile per strategy and dtype serves every matrix). One row
per try (``method="gs"``: matrix, n, key, family, us, build_s, check_s, time_s, first = the
kernel's first use in this run) and one ``method="features"`` row per (matrix, N).

Then, on any machine: ``python -m spmvlab.tune.fit results/h200/search_gs.json`` prints the
held-out evaluation (the model fitted on the training matrices; every
``holdout_every``-th matrix held out) and ``--write`` fits on all and writes
``spmvlab/tune/cost_model.json``. ``plot``/``report`` show the same evaluation.

Matrices (``matrices``, specs): ``w:<layer>:<pruning>:<sparsity>[:<bh>x<bw>]`` a real weight
of ../shared/data/weights pruned over the whole matrix (fp16), ``ss:<Group/Name>`` a
SuiteSparse matrix (fp32).

    python experiments/search_gs.py [--quick] [--matrices SPEC,...] [--ns 8] [--merge]

Runtime on an H200: about 4 min per part; measure in six parts, e.g.
``--matrices`` the weight specs / the SuiteSparse specs (``--set weights``/``--set suitesparse``)
times ``--ns 8``, ``32``, ``64``, each with ``--merge`` (about 25 min in all).
"""
from __future__ import annotations

import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [p for p in (HERE, os.path.dirname(HERE)) if p not in sys.path]

import _gs  # noqa: E402
from spmvlab import experiment as X  # noqa: E402
from spmvlab import plotting as P  # noqa: E402

NAME = "search_gs"
NEEDS_GPU = True
#: no results committed yet (written without a GPU): tests/test_bench.py allows that while set
AWAITING_FIRST_GPU_RUN = True
SPLIT_KEYS = ("matrices", "ns")
LAYERS = ["mpnet_L00_attn_q", "mpnet_L00_ffn_up", "mpnet_L00_ffn_down", "mpnet_L11_attn_q"]
WEIGHTS = [f"w:{layer}:{pr}:{s}" for layer in LAYERS for pr in ("magnitude", "random") for s in (0.7, 0.9)] + \
    ["w:mpnet_L00_ffn_up:random:0.7:4x4", "w:mpnet_L00_ffn_up:random:0.9:8x8"]
SUITESPARSE = ["ss:" + m for m in _gs.SUITESPARSE[:26:2] + ["vanHeukelum/cage11"]]
SETS = {"weights": WEIGHTS, "suitesparse": SUITESPARSE}
FULL = dict(matrices=WEIGHTS + SUITESPARSE, ns=[8, 32, 64], reps=10, warmup=2, max_strategies=None,
            holdout_every=4, seed=0)
QUICK = dict(matrices=["w:mpnet_L00_attn_q:magnitude:0.9", "ss:HB/bcsstk13"], ns=[8], reps=5,
             max_strategies=12)


def config(quick: bool = False, **overrides) -> dict:
    return X.make_config(NAME, FULL, QUICK, quick, overrides)


def cli(p):
    p.add_argument("--matrices", type=X.words, help="comma-separated matrix specs")
    p.add_argument("--set", dest="matrices", type=lambda t: SETS[t], help="weights or suitesparse")
    p.add_argument("--ns", type=lambda t: [int(v) for v in X.floats(t)], help="columns of B")


def load(spec: str):
    """(matrix, dtype) of a spec (module docstring)."""
    from spmvlab import datasets
    kind, _, rest = spec.partition(":")
    if kind == "ss":
        return datasets.suitesparse(rest, dtype="float32", download=False, lossy=True), "float32"
    if kind == "w":
        parts = rest.split(":")
        layer, pruning, s = parts[:3]
        block = tuple(int(v) for v in parts[3].split("x")) if len(parts) > 3 else (1, 1)
        W = datasets.load_dense(layer).astype("float32")
        return _gs.to_csr16(_gs.prune_blocks(W, float(s), pruning, block, seed=0)), "float16"
    raise ValueError(f"matrix spec {spec!r}: expected w:... or ss:...")


def measure(cfg: dict) -> dict:
    import numpy as np
    from spmvlab import methods, tune
    from spmvlab.methods.generalsparse import GeneralSparse
    rows = []
    seen = set()
    for spec in X.progress(cfg["matrices"], desc=NAME):
        A, dtype = load(spec)
        for n in (int(v) for v in cfg["ns"]):
            p = methods.Problem.make(A, dtype, k=n, seed=1, lossy=True)
            cands = tune.candidates(p.A, n, dtype=dtype)
            if cfg["max_strategies"] and len(cands) > cfg["max_strategies"]:
                pick = np.linspace(0, len(cands) - 1, cfg["max_strategies"]).astype(int)
                cands = [cands[i] for i in pick]
            rows.append(dict(method="features", matrix=spec, n=n, dtype=dtype, shape=list(p.shape),
                             nnz=int(p.A.nnz), candidates=len(cands),
                             features=tune.features(p.A, n, dtype)))
            for s in cands:
                key = (s, dtype)
                row = dict(method="gs", matrix=spec, n=n, dtype=dtype, key=tune.strategy_key(s),
                           family=tune.strategy_family(s), first=key not in seen)
                try:
                    t0 = time.perf_counter()
                    m = GeneralSparse(p, s, optimize=False)
                    t1 = time.perf_counter()
                    ok = m.check().passed
                    t2 = time.perf_counter()
                    seen.add(key)
                    t = m.time(reps=cfg["reps"], warmup=cfg["warmup"], cold=True)
                    t3 = time.perf_counter()
                    row.update(check_passed=ok, us=t.median_us, p10_us=t.p10_us, p90_us=t.p90_us,
                               build_s=round(t1 - t0, 4), check_s=round(t2 - t1, 4),
                               time_s=round(t3 - t2, 4), reduction=m.row_extra["reduction"])
                    del m
                except Exception as exc:   # noqa: BLE001 (a failing strategy is recorded)
                    row["error"] = f"{type(exc).__name__}: {exc}"[:300]
                rows.append(row)
            X.checkpoint(dict(rows=rows))  # a part stopped by a time limit keeps these
    return dict(rows=rows)


def plot(results: dict, fig_path: str) -> list[str]:
    """Held-out matrices: predicted vs measured time of every strategy (model fitted on the
    training matrices), and the quality of the model's pick and of its best of ``top``."""
    import numpy as np
    from spmvlab.tune import fit
    plt = P.pyplot()
    ev = fit.evaluate(results)
    cfg = results["config"]
    _, recs = fit.timing_records(results["rows"])
    train, held = fit.split_matrices([m for m in cfg["matrices"] if any(r["matrix"] == m for r in recs)],
                                     cfg.get("holdout_every", 4))
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4.2))
    if held and len(train):
        model = fit.CostModel.fit([r for r in recs if r["matrix"] in train])
        xs, ys = [], []
        for r in recs:
            if r["matrix"] in held and np.isfinite(r["time_us"]):
                p = model.predict_us(r["features"], (r["key"], r["family"]))
                if np.isfinite(p):
                    xs.append(r["time_us"])
                    ys.append(p)
        a.loglog(xs, ys, ".", ms=2, alpha=0.4)
        if xs:
            lo, hi = min(xs + ys), max(xs + ys)
            a.plot([lo, hi], [lo, hi], "k--", lw=1)
            a.plot([lo, hi], [1.1 * lo, 1.1 * hi], "k:", lw=0.8)
            a.plot([lo, hi], [lo / 1.1, hi / 1.1], "k:", lw=0.8)
    a.set(xlabel="measured us", ylabel="predicted us",
          title=f"held-out strategies (accuracy {ev['summary'].get('median_accuracy') or float('nan'):.2f})")
    cases = ev["cases"]
    b.bar(range(len(cases)), [c["top_rel"] for c in cases], label=f"best of top {ev['summary'].get('top', 4)}")
    b.plot(range(len(cases)), [c["pick_rel"] or 0 for c in cases], "rv", label="first pick", ls="none")
    b.axhline(1 / 1.1, color="black", ls="--", lw=1, label="within 10 % of the best")
    b.set_xticks(range(len(cases)), [f"{c['matrix'].split(':')[1][-14:]} N={c['n']}" for c in cases],
                 rotation=70, fontsize=6)
    b.set(ylabel="exhaustive best / chosen", ylim=(0, 1.05), title="the model's choice, held-out matrices")
    b.legend(fontsize=7)
    fig.suptitle(f"GeneralSparse cost model, {P.device_name(results)} (paper: A100)", fontsize=10)
    return P.savefig(fig, fig_path)


def summary(results: dict) -> list:
    """The held-out evaluation's summary as one row (paper_values' view)."""
    from spmvlab.tune import fit
    return [fit.evaluate(results)["summary"]]


def report(results: dict):
    from spmvlab.tune import fit
    ev = fit.evaluate(results)
    for k, v in ev["summary"].items():
        print(f"{k:>26}: {v}")
    P.print_table(ev["cases"], [("matrix", "held-out matrix", ""), ("n", "N", ""),
                                ("strategies", "strategies", ""), ("accuracy", "accuracy", ".2f"),
                                ("pick_rel", "pick", ".2f"), ("top_rel", "best of top", ".2f"),
                                ("iterations_to_90", "iters to 90%", ""),
                                ("seconds_to_90", "s to 90%", ".1f"), ("exhaustive_s", "exhaustive s", ".0f")])


if __name__ == "__main__":
    sys.exit(X.main(sys.modules[__name__]))
