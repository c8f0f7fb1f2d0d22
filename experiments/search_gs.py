"""GeneralSparse paper, Sec. 3.4 and 4.6: the campaign that trains the cost model, its
accuracy on held-out matrices and the search analysis.

For every matrix and N, the strategies of ``strategies(A, N)`` that the code generator
supports (``spmvlab.generalsparse.tune.candidates``: hundreds per matrix and N with the cyclic
thread division) whose key is in a fixed sample of ``key_fraction`` of the keys
(:func:`key_sampled`, by hash), and with ``anchors`` the guarded search's anchors
(``tune.anchors``: 4-6 per N, 3-5 of them outside that sample, so that ``tune.fit`` can score
the search as ``best_strategy`` runs it), at most a few hundred per matrix and N, are built
(plan, upload), checked on the GPU and timed (cold L2, median of ``reps``),
with the kernel of the bare strategy (offsets loaded: one compile per strategy and dtype
serves every matrix). "Exhaustive" in the evaluation means every strategy of that sample. One row
per try (``method="gs"``: matrix, n, key, family, us, build_s, check_s, time_s, first = the
kernel's first use in this run) and one ``method="features"`` row per (matrix, N).

Then, on any machine: ``python -m spmvlab.generalsparse.fit results/h200/search_gs.json`` prints the
held-out evaluation (the model fitted on the training matrices; every
``holdout_every``-th matrix held out) and ``--write`` fits on all and writes
``spmvlab/generalsparse/cost_model.json``. ``plot``/``report`` show the same evaluation.

Matrices (``matrices``, specs): ``w:<layer>:<pruning>:<sparsity>[:<bh>x<bw>]`` a real weight
of ../shared/data/weights pruned over the whole matrix (fp16), ``ss:<Group/Name>`` a
SuiteSparse matrix (fp32).

    python experiments/search_gs.py [--quick] [--matrices SPEC,...] [--ns 8] [--merge]

Before timing, every distinct kernel is compiled once in parallel worker processes
(``SPMVLAB_COMPILE_WORKERS``, default min(16, cores); numba's compile is the slow step of a
try) into the kernel cache of ``spmvlab.generalsparse.codegen`` (``SPMVLAB_KERNEL_CACHE``, default a
folder in the temporary directory), from which the timing process loads them; the results
record the counts (``compile``: kernels, compiled, loaded from the cache, failed) and the
seconds; ``spmvlab.generalsparse.fit`` charges each try of its search analysis one kernel's compile
(seconds x workers / compiled, from a part that loaded none). Measure in parts, e.g. ``--set weights`` /
``--set suitesparse`` times ``--ns 8``, ``32``, ``64``, each with ``--merge``; the results
are saved every 20 s, so a part stopped by a time limit keeps what it timed.
"""
from __future__ import annotations

import hashlib
import os
import sys
import time

from experiments import _gs
from spmvlab import experiment as X
from spmvlab import plotting as P

NAME = "search_gs"
NEEDS_GPU = True
SPLIT_KEYS = ("matrices", "ns")
LAYERS = ["mpnet_L00_attn_q", "mpnet_L00_ffn_up", "mpnet_L00_ffn_down", "mpnet_L11_attn_q"]
WEIGHTS = [f"w:{layer}:{pr}:{s}" for layer in LAYERS for pr in ("magnitude", "random") for s in (0.7, 0.9)] + \
    ["w:mpnet_L00_ffn_up:random:0.7:4x4", "w:mpnet_L00_ffn_up:random:0.9:8x8"]
SUITESPARSE = ["ss:" + m for m in _gs.SUITESPARSE[:26:2] + ["vanHeukelum/cage11"]]
SETS = {"weights": WEIGHTS, "suitesparse": SUITESPARSE}
FULL = dict(matrices=WEIGHTS + SUITESPARSE, ns=[8, 32, 64], reps=10, warmup=2, max_strategies=None,
            key_fraction=0.2, anchors=True, holdout_every=4, seed=0)
QUICK = dict(matrices=["w:mpnet_L00_attn_q:magnitude:0.9", "ss:HB/bcsstk13"], ns=[8], reps=5,
             max_strategies=12, key_fraction=None)


def config(quick: bool = False, **overrides) -> dict:
    return X.make_config(NAME, FULL, QUICK, quick, overrides)


def cli(p):
    p.add_argument("--matrices", type=X.words, help="comma-separated matrix specs")
    p.add_argument("--set", dest="matrices", type=lambda t: SETS[t], help="weights or suitesparse")
    p.add_argument("--ns", type=X.ints, help="columns of B")


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


def key_sampled(key: str, fraction: float) -> bool:
    """Whether the strategies of ``key`` (``tune.strategy_key``) are in the timed sample: the
    first 8 bytes of the key's SHA-256 below ``fraction`` of their range. The same keys on
    every matrix and N (each key's regression gets every training matrix), none drawn at
    random, so a part measured later times the same strategies."""
    return int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big") < fraction * 2.0 ** 64


def _warm(spec: str, n: int, strategies: list) -> dict:
    """Compile the bare-strategy kernels of ``strategies`` on the matrix of ``spec`` with
    N = ``n`` (``spmvlab.generalsparse.method.compile_on``). Runs in a worker process."""
    from spmvlab.generalsparse.method import compile_on
    A, dtype = load(spec)
    return compile_on(A, n, dtype, strategies)


def warm_tasks(work: list, size: int = 8) -> list:
    """``(spec, n, strategies)`` tasks of at most ``size`` strategies that together name each
    distinct kernel of ``work`` once, at the first (matrix, N) that lists it."""
    from spmvlab.generalsparse.warm import kernel_key
    seen, tasks = set(), []
    for spec, n, dtype, k, cands in work:
        mine = []
        for st in cands:
            key = kernel_key(st, dtype, k)
            if key not in seen:
                seen.add(key)
                mine.append(st)
        tasks += [(spec, n, mine[i:i + size]) for i in range(0, len(mine), size)]
    return tasks


def warm_kernels(work: list, workers: int) -> dict:
    """Compile every distinct kernel of ``work`` ((spec, n, dtype, K, candidates) per matrix
    and N) once, in ``workers`` processes, before anything is timed. A kernel is the bare
    strategy's for a dtype (and, for compact storage, 16- or 32-bit columns: K above
    ``SPAN16`` may need 32), so each is compiled for the first (matrix, N) that lists it."""
    import concurrent.futures as cf
    from spmvlab.generalsparse.warm import compile_pool
    tasks = warm_tasks(work)
    t0 = time.perf_counter()
    done = dict(kernels=sum(len(t[2]) for t in tasks), compiled=0, loaded=0, failed=0, workers=workers)
    pool = compile_pool(workers)
    futs = {pool.submit(_warm, *t): t for t in tasks}
    for f in X.progress(cf.as_completed(futs), total=len(futs), desc=f"{NAME}: compile"):
        try:
            for k, v in f.result().items():
                done[k] += v
        except Exception as exc:   # noqa: BLE001 (the timed pass compiles what is missing)
            done["failed"] += len(futs[f][2])
            done.setdefault("errors", []).append(f"{futs[f][0]}: {type(exc).__name__}: {exc}"[:300])
    done["seconds"] = round(time.perf_counter() - t0, 1)
    return done


def measure(cfg: dict) -> dict:
    import numpy as np
    from spmvlab import methods
    from spmvlab.generalsparse import tune, warm
    from spmvlab._cuda import SIMULATOR
    from spmvlab.generalsparse.method import GeneralSparse
    work, loaded = [], {}
    for spec in cfg["matrices"]:
        A, dtype = loaded[spec] = load(spec)
        for n in (int(v) for v in cfg["ns"]):
            cands = tune.candidates(A, n, dtype=dtype)
            if cfg.get("key_fraction"):
                cands = [st for st in cands if key_sampled(tune.strategy_key(st), cfg["key_fraction"])]
            if cfg["max_strategies"] and len(cands) > cfg["max_strategies"]:
                pick = np.linspace(0, len(cands) - 1, cfg["max_strategies"]).astype(int)
                cands = [cands[i] for i in pick]
            if cfg.get("anchors"):     # what the guarded search times besides the model's picks
                cands += [st for st in tune.anchors(n, dtype) if st not in cands]
            work.append((spec, n, dtype, A.shape[1], cands))
    extra = {}
    workers = int(os.environ.get(warm.WORKERS_ENV, min(16, os.cpu_count() or 1)))
    if not SIMULATOR and workers > 1:
        # compiled kernels shared through files: compile them all in parallel first
        warm.share_kernels()
        extra["compile"] = warm_kernels(work, workers)
        print(f"{NAME}: {extra['compile']}", file=sys.stderr)
    rows = []
    seen = set()
    last = time.perf_counter()
    for spec, n, dtype, _, cands in X.progress(work, desc=NAME):
        p = methods.Problem.make(loaded[spec][0], dtype, k=n, seed=1, lossy=True)
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
            if time.perf_counter() - last > 20:      # a part stopped by a time limit keeps these
                X.checkpoint(dict(rows=rows, **extra))
                last = time.perf_counter()
        X.checkpoint(dict(rows=rows, **extra))
        last = time.perf_counter()
    return dict(rows=rows, **extra)


def short_label(spec: str) -> str:
    """A matrix spec in a few characters: "L00_attn_q mag 90%" or "HB/bcsstk13"."""
    kind, _, rest = spec.partition(":")
    if kind != "w":
        return rest
    parts = rest.split(":")
    label = f"{parts[0].replace('mpnet_', '')} {parts[1][:3]} {float(parts[2]) * 100:.0f}%"
    return label + (f" {parts[3]}" if len(parts) > 3 else "")


def plot(results: dict, fig_path: str) -> list[str]:
    """Held-out matrices: predicted vs measured time of every strategy (model fitted on the
    training matrices), and the quality of the model's pick and of its best of ``top`` (the
    tuned kernel's search), as markers side by side per (matrix, N)."""
    import numpy as np
    from spmvlab.generalsparse import fit
    plt = P.pyplot()
    ev = fit.evaluate(results)
    cfg = results["config"]
    _, recs = fit.timing_records(results["rows"])
    train, held = fit.split_matrices([m for m in cfg["matrices"] if any(r["matrix"] == m for r in recs)],
                                     cfg.get("holdout_every", 4))
    fig, (a, b) = plt.subplots(1, 2, figsize=(P.PAGE_WIDTH, 3.2), gridspec_kw={"width_ratios": [1, 2.3]})
    if held and len(train):
        model = fit.CostModel.fit([r for r in recs if r["matrix"] in train], ridge=ev["summary"]["ridge"])
        xs, ys = [], []
        for r in recs:
            if r["matrix"] in held and np.isfinite(r["time_us"]):
                p = model.predict_us(r["features"], (r["key"], r["family"]))
                if np.isfinite(p):
                    xs.append(r["time_us"])
                    ys.append(p)
        a.plot(xs, ys, ".", ms=2, alpha=0.35, color="slategray", label="a strategy, held-out matrix")
        if xs:
            lo, hi = min(xs + ys) / 1.2, max(xs + ys) * 1.2
            a.plot([lo, hi], [lo, hi], "k--", lw=0.9, label="predicted = measured", zorder=3)
            a.plot([lo, hi], [1.1 * lo, 1.1 * hi], "k:", lw=0.8, label="±10 %", zorder=3)
            a.plot([lo, hi], [lo / 1.1, hi / 1.1], "k:", lw=0.8, zorder=3)
            a.set(xlim=(lo, hi), ylim=(lo, hi))
    P.log_axis(a, axis="x")
    P.log_axis(a)
    a.set_aspect("equal")
    a.set(xlabel="measured time (µs)", ylabel="predicted time (µs)")
    a.set_title(f"held-out strategies\n(median accuracy "
                f"{ev['summary'].get('median_accuracy') or float('nan'):.2f})")
    cases = ev["cases"]
    top = ev["summary"].get("top", 4)
    mats = list(dict.fromkeys(c["matrix"] for c in cases))        # grouped per matrix, N apart
    per = {m: [c["n"] for c in cases if c["matrix"] == m] for m in mats}
    step = max(len(v) for v in per.values()) + 0.6 if per else 1
    xs = [mats.index(c["matrix"]) * step + per[c["matrix"]].index(c["n"]) for c in cases]
    b.axhline(1 / 1.1, color="black", ls="--", lw=0.9, label="within 10 % of the best", zorder=1)
    b.plot([x - 0.17 for x in xs], [c["top_rel"] for c in cases], zorder=3, **P.line_style(
        _gs.GS_BEST, linestyle="none", markersize=6.5,
        label=f"best of the model's top {top}, timed: {P.label(_gs.GS_BEST)}"))
    picks = [(x + 0.17, c["pick_rel"]) for x, c in zip(xs, cases) if c.get("pick_rel") is not None]
    b.plot([x for x, _ in picks], [y for _, y in picks], "v", color="darkgoldenrod", ms=4.5, zorder=3,
           label="the model's first pick, untimed")
    b.set_xticks(xs, [str(c["n"]) for c in cases], fontsize=6)
    for i, m in enumerate(mats):
        name = short_label(m).split("/")[-1]          # on three lines at most, each short
        name = name.replace("_", "\n", 1).replace(" ", "\n", 1) if m.startswith("w:") else \
            name.replace("-", "-\n", 1) if len(name) > 9 else name
        b.annotate(name, (i * step + (len(per[m]) - 1) / 2, 0), xycoords=("data", "axes fraction"),
                   xytext=(0, -15), textcoords="offset points", ha="center", va="top", fontsize=6)
    b.annotate("N =", (0, 0), xycoords="axes fraction", xytext=(-4, -5.5),
               textcoords="offset points", ha="right", va="top", fontsize=6)
    b.set_xlim(-0.6, max(xs, default=0) + 0.6)
    vals = [c["top_rel"] for c in cases] + [y for _, y in picks]
    b.set_ylim(min(vals + [0.85]) - 0.03, 1.02)
    b.grid(axis="x", visible=False)
    b.set(ylabel="exhaustive best time / chosen time")
    b.set_title("the model's choice on the held-out matrices")
    fig.suptitle(f"GeneralSparse cost model, {P.device_name(results)} (paper: A100)")
    P.legend_below(fig, [a, b], ncol=2, room=0.15)
    return P.savefig(fig, fig_path, tight=False)


def summary(results: dict) -> list:
    """The held-out evaluation's summary as one row (paper_values' view)."""
    from spmvlab.generalsparse import fit
    return [fit.evaluate(results)["summary"]]


def report(results: dict):
    from spmvlab.generalsparse import fit
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
