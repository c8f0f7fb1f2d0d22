"""The GeneralSparse experiments without a GPU: pruning helpers, the search campaign's loop
(timing faked, kernels checked on the simulator), the cost model's held-out evaluation on
fabricated timings with a known law, and every table/plot on fabricated rows."""
import os

import numpy as np
import pytest
import scipy.sparse as sp

from spmvlab import experiment as X
from spmvlab.generalsparse import tune

_gs = X.load_experiment("_gs")


def test_prune_blocks_zeroes_whole_blocks():
    rng = np.random.default_rng(0)
    W = rng.standard_normal((16, 24)).astype(np.float32) + 10.0
    for method in ("magnitude", "random"):
        out = _gs.prune_blocks(W, 0.5, method, (4, 4), seed=1)
        blocks = (out.reshape(4, 4, 6, 4) != 0).sum(axis=(1, 3))
        assert set(np.unique(blocks)) == {0, 16} and (blocks == 0).sum() == 12
    mag = _gs.prune_blocks(W, 0.5, "magnitude", (4, 4))
    norms = np.sqrt((W.reshape(4, 4, 6, 4) ** 2).sum(axis=(1, 3)))
    kept = (mag.reshape(4, 4, 6, 4) != 0).any(axis=(1, 3))
    assert norms[kept].min() >= norms[~kept].max()
    from spmvlab import datasets
    assert np.array_equal(_gs.prune_blocks(W, 0.7, "random", seed=3),
                          datasets.prune(W, 0.7, "random", per_row=False, seed=3))
    A = _gs.to_csr16(mag)
    assert A.nnz == np.count_nonzero(mag) and A.dtype == np.float32


def _fake_timing(us):
    from spmvlab.bench import Timing
    return Timing.from_samples([us, us, us], cold=True)


def test_search_campaign_loop(monkeypatch):
    exp = X.load_experiment("search_gs")
    monkeypatch.setenv("SPMVLAB_COMPILE_WORKERS", "1")     # on a GPU: no worker processes (fake load)
    A = sp.random(24, 20, density=0.3, format="csr", random_state=np.random.default_rng(1))
    monkeypatch.setattr(exp, "load", lambda spec: (A, "float32"))
    from spmvlab.generalsparse.method import GeneralSparse
    monkeypatch.setattr(GeneralSparse, "time", lambda self, **kw: _fake_timing(float(self.format_bytes)))
    cfg = exp.config(quick=True, matrices=["ss:a", "ss:b"], ns=[3], max_strategies=3, anchors=False)
    rows = exp.measure(cfg)["rows"]
    feats = [r for r in rows if r["method"] == "features"]
    gs = [r for r in rows if r["method"] == "gs"]
    assert len(feats) == 2 and len(gs) == 6 and all(r["check_passed"] for r in gs)
    assert [r["first"] for r in gs] == [True] * 3 + [False] * 3       # kernels reused across matrices
    assert feats[0]["features"]["N"] == 3 and feats[0]["candidates"] == 3
    # with the anchors (the default): the guarded search's anchors timed after the sample
    rows = exp.measure(dict(cfg, anchors=True))["rows"]
    gs = [r for r in rows if r["method"] == "gs"]
    keys = [tune.strategy_key(s) for s in tune.anchors(3, "float32")]
    assert len(gs) == 2 * (3 + len(keys)) and [r["key"] for r in gs[3:3 + len(keys)]] == keys


def test_compile_tasks_name_each_kernel_once():
    import dataclasses
    exp = X.load_experiment("search_gs")
    A = sp.random(24, 20, density=0.3, format="csr", random_state=np.random.default_rng(1))
    from spmvlab.generalsparse import tune
    c = tune.candidates(A, 8, dtype="float32")
    wide = [s for s in c if s.compact][:2]
    assert wide and len(c) > 9
    work = [("a", 8, "float32", 20, c), ("b", 8, "float32", 20, c[::-1]),   # b: nothing new
            ("c", 8, "float16", 20, c[:3]),                                   # another dtype
            ("d", 32, "float32", 70000, wide + c[:1])]        # compact, 32-bit columns possible
    tasks = exp.warm_tasks(work, size=4)
    assert [t[0] for t in tasks].count("b") == 0
    named = [(t[0], s) for t in tasks for s in t[2]]
    assert [s for m, s in named if m == "a"] == c and [s for m, s in named if m == "c"] == c[:3]
    assert [s for m, s in named if m == "d"] == wide and all(len(t[2]) <= 4 for t in tasks)
    assert all(t[1] == (32 if t[0] == "d" else 8) for t in tasks)
    assert dataclasses.is_dataclass(tasks[0][2][0])


def test_the_compile_pool_is_kept_between_cells():
    """A cluster worker measures cell after cell: its compile processes start once (the same
    processes answer the next cell's tasks) and a different worker count replaces them."""
    import os
    from spmvlab.generalsparse import warm
    try:
        a = warm.compile_pool(2)
        assert a.submit(os.getpid).result() != os.getpid()
        assert warm.compile_pool(2) is a
        assert a.submit(os.getpid).result() != os.getpid()        # still running
        b = warm.compile_pool(1)
        assert b is not a and warm.compile_pool(1) is b
    finally:
        while warm._POOL:
            warm._POOL.pop()[1].shutdown(wait=True)


def _fabricated_search(n_mat=8, seed=0, slow_anchors=False):
    """search_gs-like results where time = exp(design(features) @ c_key) exactly
    (``slow_anchors``: the anchors' laws 20x slower, so the model never ranks them first)."""
    rng = np.random.default_rng(seed)
    strategies = tune.default_shortlist(32)
    laws = {tune.strategy_key(s): rng.normal(0, 0.3, len(tune.DESIGN_NAMES)) for s in strategies}
    if slow_anchors:
        for s in tune.anchors(32, "float16"):
            laws[tune.strategy_key(s)][0] += 3.0
    rows, mats = [], []
    for i in range(n_mat):
        A = sp.random(40 + 10 * i, 30 + 5 * i, density=0.05 + 0.04 * i, format="csr", random_state=rng)
        spec = f"ss:m{i}"
        mats.append(spec)
        f = tune.features(A, 32)
        rows.append(dict(method="features", matrix=spec, n=32, features=f))
        for s in strategies:
            k = tune.strategy_key(s)
            us = float(np.exp(tune.design(f) @ laws[k]))
            rows.append(dict(method="gs", matrix=spec, n=32, key=k, family=tune.strategy_family(s), us=us,
                             check_passed=True, build_s=0.1, check_s=0.5 if i == 0 else 0.01,
                             time_s=0.02, first=i == 0))
    return {"meta": {"date_utc": "2026-01-01T00:00:00+00:00", "device": {"name": "Fake GPU"}},
            "config": dict(matrices=mats, ns=[32], holdout_every=4), "rows": rows}


def test_evaluate_scores_the_guarded_search():
    """search_within_10pct: the best of the model's top and the anchors the results timed."""
    from spmvlab.generalsparse import fit
    res = _fabricated_search(slow_anchors=True)
    s0 = fit.evaluate(res, top=1)["summary"]
    assert s0["cases_with_anchors"] == 0 and s0["search_within_10pct"] == s0["top_within_10pct"]
    keys = {tune.strategy_key(s) for s in tune.anchors(32, "float16")}
    assert keys <= {r["key"] for r in res["rows"] if r["method"] == "gs"}
    _, held = fit.split_matrices(res["config"]["matrices"], 4)
    for r in res["rows"]:
        if r["method"] == "gs":
            r["dtype"] = "float16"
            if r["key"] in keys and r["matrix"] in held:      # unseen in training: only the guard finds it
                r["us"] = 1e-6
    ev = fit.evaluate(res, top=1)
    s = ev["summary"]
    assert s["cases_with_anchors"] == s["cases"] == 2 and s["search_within_10pct"] == 1.0
    assert s["top_within_10pct"] == 0.0 and all(c["anchors"] == len(keys) for c in ev["cases"])


def test_evaluate_counts_the_default_in_the_guarded_search():
    """search_within_10pct also counts the untimed default (the model's first strategy that
    keeps rows within a block), which the guarded search times and confirms."""
    from spmvlab.generalsparse import fit
    res = _fabricated_search(slow_anchors=True)
    short = tune.default_shortlist(32)
    split = {tune.strategy_key(s) for s in short if s.block.split}
    anchors = {tune.strategy_key(s) for s in tune.anchors(32, "float16")}
    assert split and anchors and len(split | anchors) < len(short)
    _, held = fit.split_matrices(res["config"]["matrices"], 4)
    for r in res["rows"]:
        if r["method"] == "gs":
            r["dtype"] = "float16"
            if r["key"] in split:                  # the model learns to rank these first
                r["us"] /= 20
            elif r["key"] in anchors:              # and these last
                r["us"] *= 1000
            elif r["matrix"] in held:
                r["us"] = 1e-6                     # on unseen matrices the whole-row ones win
    s = fit.evaluate(res, top=1)["summary"]
    assert s["cases"] == 2 and s["top_within_10pct"] == 0.0 and s["search_within_10pct"] == 1.0


def test_evaluate_recovers_a_known_law(capsys, tmp_path):
    from spmvlab.generalsparse import fit
    res = _fabricated_search()
    ev = fit.evaluate(res)
    s = ev["summary"]
    assert s["held_out_matrices"] == 2 and s["train_matrices"] == 6 and s["cases"] == 2
    assert s["median_accuracy"] > 0.97 and s["pick_within_10pct"] == 1.0
    assert s["median_iterations_to_90"] == 1 and s["compile_s_per_kernel"] == pytest.approx(0.49)
    # the parallel compile step, where a run compiled everything itself, gives the compile cost
    res["compile"] = dict(kernels=10, compiled=10, loaded=0, failed=0, workers=4, seconds=5.0)
    assert fit.evaluate(res)["summary"]["compile_s_per_kernel"] == pytest.approx(2.0)
    res["parts"] = [dict(extra=dict(compile=dict(res["compile"], seconds=3.0))), dict(),
                    dict(extra=dict(compile=dict(kernels=4, compiled=1, loaded=3, workers=4, seconds=9.0)))]
    assert fit.evaluate(res)["summary"]["compile_s_per_kernel"] == pytest.approx(1.2)   # parts: loads skipped
    del res["parts"][0]["extra"]
    assert fit.evaluate(res)["summary"]["compile_s_per_kernel"] == pytest.approx(0.49)  # none fresh
    del res["compile"], res["parts"]
    assert [t["ridge"] for t in ev["ridge_cv"]] == list(fit.RIDGES)
    # the choice: the best cross-validated top-4 share, then the best accuracy
    train, _ = fit.split_matrices(res["config"]["matrices"], 4)
    ridge, table = fit.choose_ridge(fit.timing_records(res["rows"])[1], train)     # what evaluate did
    chosen = next(t for t in table if t["ridge"] == ridge)
    assert ridge == s["ridge"] and chosen["top_within_10pct"] == max(t["top_within_10pct"] for t in table)
    assert chosen["median_accuracy"] == max(t["median_accuracy"] for t in table
                                            if t["top_within_10pct"] == chosen["top_within_10pct"])
    assert table[0]["median_accuracy"] > table[-1]["median_accuracy"] > 0      # an exact law: less shrinkage fits it
    model = fit.fit_all(res)
    assert model.meta["timings"] == 8 * len(tune.default_shortlist(32)) and model.meta["ridge"] in fit.RIDGES
    exp = X.load_experiment("search_gs")
    out = exp.plot(res, str(tmp_path / "s.png"))
    assert all(os.path.getsize(p) > 1000 for p in out)
    exp.report(res)
    assert "median_accuracy" in capsys.readouterr().out
    path = str(tmp_path / "r.json")
    X.save_results(path, res["rows"], res["config"], meta=res["meta"])
    assert fit.main([path]) == 0
    assert fit.main([path, "--write"]) == 1          # not H200 timings: refused


def _weights_rows():
    rows = []
    rng = np.random.default_rng(2)
    for shape in ([64, 128], [128, 64]):
        for pr in ("magnitude", "random"):
            for s in (0.7, 0.9):
                for b in ([1, 1], [4, 4]):
                    for n in (8, 32):
                        for m in ("cublas", "cusparse", "macko", "csr_vector", _gs.GS_BEST, "generalsparse"):
                            us = float(rng.uniform(5, 50))
                            rows.append(_gs.add_tflops(dict(
                                method=m, shape=shape, pruning=pr, sparsity=s, block=b, n=n, k=n,
                                nnz=int(shape[0] * shape[1] * (1 - s)), median_us=us, check_passed=True,
                                matrix=pr if b == [1, 1] else f"{pr}4x4", strategy="x")))
    return rows


@pytest.mark.parametrize("name", ["fig14_gs", "table4_gs", "table5_gs", "fig4_gs"])
def test_weight_experiments_plot_and_report(name, tmp_path, capsys):
    exp = X.load_experiment(name)
    cfg = exp.config(shapes=[[64, 128], [128, 64]])
    if "blocks" in cfg:
        cfg["blocks"] = [[1, 1], [4, 4]]
    res = {"meta": {"date_utc": "2026-01-01", "device": {"name": "Fake GPU"}}, "config": cfg,
           "rows": _weights_rows()}
    out = exp.plot(res, str(tmp_path / f"{name}.png"))
    assert [os.path.basename(p) for p in out] == [f"{name}.png", f"{name}.pdf"]
    exp.report(res)
    assert capsys.readouterr().out
    if hasattr(exp, "table"):
        t = exp.table(res)
        assert t and all(r["mean"] > 0 for r in t)


def test_suitesparse_experiments_plot_and_tables(tmp_path):
    rows = []
    for i, mat in enumerate(["a", "b", "c", "d"]):
        for n in (8, 32, 64):
            for m, us in (("cusparse", 20.0), ("csr_vector", 10.0), (_gs.GS_BEST, 10.0 / (0.7 + 0.5 * i))):
                rows.append(_gs.add_tflops(dict(method=m, matrix=mat, n=n, k=n, nnz=1000 * (i + 1),
                                                median_us=us, check_passed=True)))
    for name in ("fig15_gs", "table6_gs"):
        exp = X.load_experiment(name)
        res = {"meta": {"date_utc": "2026-01-01", "device": {"name": "Fake GPU"}},
               "config": exp.config(matrices=["a", "b", "c", "d"]), "rows": rows}
        assert len(exp.plot(res, str(tmp_path / f"{name}.png"))) == 2
    t = X.load_experiment("table6_gs").table(res)
    over_csr = [r for r in t if r["base"] == "csr_vector" and r["n"] == 8][0]
    # speedups over csr_vector: 0.7, 1.2, 1.7, 2.2 -> one per bucket from <0.8 up
    assert over_csr["<0.8x"] == 25.0 and over_csr["1.0-1.4x"] == 25.0 and over_csr[">1.8x"] == 25.0
    assert sum(over_csr[b] for b, _, _ in X.load_experiment("table6_gs").BUCKETS) == 100.0


def test_fig18_variants_and_plot(tmp_path):
    exp = X.load_experiment("fig18_gs")
    import reference.generalsparse as GS
    base = exp.base_strategy()
    assert GS.select_reduction(base, 2).algorithms == ("THREAD_TOTAL",) and tune.supported(base)
    assert exp.thread_only(base) and not exp.thread_only(tune.default_shortlist(32)[0])
    rows = [dict(method=v, matrix=m, n=n, median_us=10.0 / (1 + j), check_passed=True)
            for j, v in enumerate(exp.VARIANTS) for m in ("x", "y") for n in (8, 32)]
    res = {"meta": {"date_utc": "2026-01-01", "device": {"name": "Fake GPU"}}, "config": exp.config(), "rows": rows}
    assert len(exp.plot(res, str(tmp_path / "f.png"))) == 2


# ------------------------------------------------------------------------------------------
# the measurement loops: one build per matrix, the same rows as one methods.measure per N
# ------------------------------------------------------------------------------------------

#: keys of a row that are timings (or depend on them) and may differ between two runs
_TIMING_KEYS = ("median_us", "p10_us", "p90_us", "mean_us", "tb_s", "tflops", "search_s",
                "speedup_vs_cublas", "speedup_vs_cusparse")


def _fake_gpu(monkeypatch):
    """Checks and timings without running kernels, both functions of the problem (its matrix
    and X through the reference product; format_bytes), so equal rows mean equal problems."""
    from spmvlab.check import Check
    from spmvlab.methods import base

    def check(self):
        ref = self.problem.reference()
        return Check(passed=True, n_bad=0, max_rel_err=float(np.abs(ref.exact).sum()), worst=None)

    monkeypatch.setattr(base.Method, "check", check)
    monkeypatch.setattr(base.Method, "time", lambda self, **kw: _fake_timing(
        1.0 + float(self.format_bytes) / 1000 + self.problem.k))


#: keys of a search_timed entry that are wall seconds
_TRY_SECONDS = ("s", "full_s")


def _untimed(rows):
    def entry(k, v):
        if k == "search_timed":
            return [{a: b for a, b in t.items() if a not in _TRY_SECONDS} for t in v]
        return v
    return [{k: entry(k, v) for k, v in r.items() if k not in _TIMING_KEYS} for r in rows]


def _tiny_weights_cfg(tmp_path):
    like = tmp_path / "like.npy"
    np.save(like, np.random.default_rng(5).standard_normal((12, 10)).astype(np.float32) + 0.5)
    cfg = X.load_experiment("table5_gs").config(
        shapes=[[32, 64]], sparsities=[0.7], ns=[8, 16], blocks=[[1, 1], [4, 4]],
        methods=["cublas", "macko", "csr_vector", _gs.GS_BEST])
    cfg["like"] = str(like)
    return cfg


def test_weights_loop_builds_once_and_matches_the_per_n_loop(monkeypatch, tmp_path):
    """measure_weights: one matrix build, one dense copy, one encoding per format and one
    GeneralSparse plan per layout for each matrix (the N share them), and the same rows
    in the same order as methods.measure per N, timings aside."""
    from spmvlab.generalsparse import method as gs_method
    from spmvlab.generalsparse import planner
    from spmvlab.generalsparse import search as gs_search
    from spmvlab.methods import base
    _fake_gpu(monkeypatch)
    # no cost model: the search times the shortlist, whose picks share a layout across N here
    monkeypatch.setattr(gs_search, "load_model", lambda *a, **kw: None)
    cfg = _tiny_weights_cfg(tmp_path)
    blocks = [tuple(b) for b in cfg["blocks"]]
    old = _gs.measure_weights_per_n(cfg, blocks)
    counts = {"build": 0, "make": 0, "dense": 0, "encode": 0}
    plans, searching = [], []     # (matrix, layout) of every plan outside the search

    def counted(name, fn):
        def wrap(*a, **kw):
            counts[name] += not searching
            counts["search " + name] = counts.get("search " + name, 0) + bool(searching)
            return fn(*a, **kw)
        return wrap

    monkeypatch.setattr(_gs, "build_weights", counted("build", _gs.build_weights))
    monkeypatch.setattr(base.Problem, "make", classmethod(counted("make", base.Problem.make.__func__)))
    real_dense = base.Problem.dense
    monkeypatch.setattr(base.Problem, "dense", lambda self: (
        counts.__setitem__("dense", counts["dense"] + ("dense" not in self._cache)) or real_dense(self)))
    real_encoded = base.Problem.encoded

    def encoded(self, fmt, options=None):
        before = len(self._cache)
        out = real_encoded(self, fmt, options)
        counts["encode"] += len(self._cache) - before
        return out

    monkeypatch.setattr(base.Problem, "encoded", encoded)
    def plan(A, s, dtype, lossy=True):
        if not searching:
            plans.append((planner._fingerprint(A, np.dtype(dtype)), planner.sparse_signature(s)))
        return real_plan(A, s, dtype, lossy)

    def search(*a, **kw):
        searching.append(1)
        try:
            return real_search(*a, **kw)
        finally:
            searching.pop()

    real_plan, real_search = planner.plan_cached, gs_method.best_strategy
    monkeypatch.setattr(planner, "plan_cached", plan)
    monkeypatch.setattr(gs_method, "best_strategy", search)
    new = _gs.measure_weights(cfg, "t", blocks=blocks, workers=0)
    assert counts["build"] == counts["make"] == counts["dense"] == 2
    assert counts["search make"] == 2            # the search's sample: one problem per matrix
    assert counts["encode"] == 2 * 2                          # macko and csr, once per matrix
    assert len(plans) == len(set(plans)) < 2 * 2        # once per layout, reused across N
    assert len(new) == 2 * 2 * 4 and [r["n"] for r in new[:8]] == [8] * 4 + [16] * 4
    assert all("error" not in r for r in new if r["method"] != "cublas")
    assert _untimed(new) == _untimed(old)
    assert {r["k"] for r in new} == {8, 16} and len({r["max_rel_err"] for r in new if "error" not in r}) > 2


def test_weights_loop_builds_in_worker_processes(monkeypatch, tmp_path):
    """measure_weights with a builder process: the problems (and so the rows) are the ones
    built in this process."""
    _fake_gpu(monkeypatch)
    cfg = _tiny_weights_cfg(tmp_path)
    cfg.update(blocks=[[1, 1]], ns=[8, 32], methods=["macko", "csr_vector"])
    here = _gs.measure_weights(cfg, "t", workers=0)
    there = _gs.measure_weights(cfg, "t", workers=1)
    assert _untimed(here) == _untimed(there) and len(here) == 4


def test_suitesparse_loop_loads_once_and_matches_the_per_n_loop(monkeypatch, tmp_path):
    from scipy import io as spio

    from spmvlab import datasets, methods
    _fake_gpu(monkeypatch)
    (tmp_path / "suitesparse").mkdir()
    rng = np.random.default_rng(3)
    for i, name in enumerate(("Grp__a", "Grp__b")):
        spio.mmwrite(str(tmp_path / "suitesparse" / f"{name}.mtx"),
                     sp.random(20 + 4 * i, 24, density=0.3, format="coo", random_state=rng))
    monkeypatch.setenv("SPMVLAB_DATA", str(tmp_path))
    cfg = X.load_experiment("fig15_gs").config(matrices=["Grp/a", "Grp/b"], ns=[8, 16],
                                               methods=["csr_vector", _gs.GS_BEST])
    old = []
    for mat in cfg["matrices"]:
        A = datasets.suitesparse(mat, dtype=cfg["dtype"], download=False, lossy=True)
        for n in cfg["ns"]:
            old += [_gs.add_tflops(r) for r in methods.measure(
                A, cfg["dtype"], _gs.method_list(cfg), k=n, reps=cfg["reps"], warmup=cfg["warmup"],
                keep_going=True, lossy=True, extra=dict(matrix=mat, n=n))]
    loads = []
    real = datasets.suitesparse
    monkeypatch.setattr(datasets, "suitesparse", lambda *a, **kw: loads.append(a[0]) or real(*a, **kw))
    new = _gs.measure_suitesparse(cfg, "t", workers=0)
    assert loads == ["Grp/a", "Grp/b"]
    assert _untimed(new) == _untimed(old) and len(new) == 2 * 2 * 2


def test_weights_loop_stops_its_workers_when_stopped(monkeypatch, tmp_path):
    """A measurement stopped mid-run (a time limit's signal) stops the builder processes
    still building the next matrices instead of waiting for them."""
    import time

    from spmvlab import methods
    cfg = _tiny_weights_cfg(tmp_path)
    cfg.update(shapes=[[32, 64], [4000, 4000]], sparsities=[0.0], blocks=[[1, 1]],
               methods=["csr_vector"], ns=[8])
    raised = []

    def stop(*a, **kw):            # the 4000 x 4000 matrix (seconds to build) is in flight now
        raised.append(time.perf_counter())
        raise X.Stopped(15)

    monkeypatch.setattr(methods, "measure_problem", stop)
    import multiprocessing as mp
    before = set(mp.active_children())
    with pytest.raises(X.Stopped) as info:      # its traceback (the loop's frame) kept alive
        _gs.measure_weights(cfg, "t", workers=1)
    while set(mp.active_children()) - before and time.perf_counter() - raised[0] < 3.0:
        time.sleep(0.05)
    assert not set(mp.active_children()) - before, "the builder process still runs"
    assert not _gs._DRAWN and info.value.signum == 15


def test_key_sample_is_fixed_and_about_the_fraction():
    exp = X.load_experiment("search_gs")
    keys = [f"key {i}" for i in range(4000)]
    picked = [k for k in keys if exp.key_sampled(k, 0.2)]
    assert 0.17 < len(picked) / len(keys) < 0.23
    assert picked == [k for k in keys if exp.key_sampled(k, 0.2)]             # the same every time
    assert set(k for k in keys if exp.key_sampled(k, 0.1)) < set(picked)     # nested fractions
    assert not any(exp.key_sampled(k, 0.0) for k in keys) and all(exp.key_sampled(k, 1.0) for k in keys)


def test_search_plot_labels_name_pruning_and_sparsity():
    exp = X.load_experiment("search_gs")
    assert exp.short_label("w:mpnet_L00_ffn_up:random:0.9:8x8") == "L00_ffn_up ran 90% 8x8"
    assert exp.short_label("w:mpnet_L11_attn_q:magnitude:0.7") == "L11_attn_q mag 70%"
    assert exp.short_label("ss:HB/bcsstk13") == "HB/bcsstk13"


def test_derived_tables_are_made_without_a_gpu(tmp_path, monkeypatch, capsys):
    """table6_gs from a device's saved fig15_gs rows on a machine without a GPU: the device's
    folder, the measuring run's meta, this run's under "derived"; not covered -> nothing."""
    monkeypatch.setattr(X.R, "RESULTS", str(tmp_path / "results"))
    monkeypatch.setattr(X.R, "FIGURES", str(tmp_path / "figures"))
    monkeypatch.setattr(X, "gpu_available", lambda: False)
    exp = X.load_experiment("table6_gs")
    mats = ["a", "b"]
    rows = [_gs.add_tflops(dict(method=m, matrix=mat, n=n, k=n, nnz=1000, median_us=us, check_passed=True))
            for mat in mats for n in (8, 32, 64)
            for m, us in (("cusparse", 20.0), ("csr_vector", 12.0), (_gs.GS_BEST, 10.0))]
    meta = {"date_utc": "2026-01-01T00:00:00Z", "git_hash": "abc1234", "device": {"name": "Fake GPU"}}
    X.save_results("fig15_gs", rows, X.load_experiment("fig15_gs").config(matrices=mats), meta=meta,
                   device="fakegpu")
    assert X.main(exp, ["--matrices", ",".join(mats)]) == 0
    res = X.load_results("table6_gs", "fakegpu")
    assert res["meta"] == meta and res["source"]["experiment"] == "fig15_gs"
    assert "derived" in res and len(res["rows"]) == len(rows)
    assert os.path.isfile(tmp_path / "figures" / "fakegpu" / "table6_gs.png")
    t = exp.table(res)
    assert {r["base"] for r in t} == {"cusparse", "csr_vector"} and all(r["mean"] > 1 for r in t)
    # a matrix fig15_gs has not measured: not covered, nothing derived (the saved table replotted)
    os.remove(X.results_path("table6_gs", "fakegpu"))
    assert exp.derive(exp.config(matrices=mats + ["c"]), "fakegpu") is None
    assert exp.derive(exp.config(matrices=mats, from_fig15=False), "fakegpu") is None
    assert X.main(exp, ["--measure", "--matrices", "a,c"]) == 1
    assert "no saved fig15_gs results cover" in capsys.readouterr().err
    assert not os.path.exists(X.results_path("table6_gs", "fakegpu"))


def test_default_gap_pairs_the_default_with_the_tuned_pick():
    """fig14_gs.default_gap: the default's time over the tuned pick's per cell, only where
    both were timed and passed their checks."""
    mod = X.load_experiment("fig14_gs")
    cell = dict(shape=[8, 8], pruning="random", sparsity=0.9, n=8, check_passed=True)
    rows = [dict(cell, method="generalsparse", median_us=3.0),
            dict(cell, method="generalsparse_best", median_us=2.0),
            dict(cell, method="cublas", median_us=1.0),
            dict(cell, n=32, method="generalsparse", median_us=9.0),            # no tuned pick
            dict(cell, n=64, method="generalsparse", median_us=9.0),
            dict(cell, n=64, method="generalsparse_best", median_us=1.0, check_passed=False)]
    assert mod.default_gap(dict(rows=rows)) == [dict(shape=[8, 8], pruning="random", sparsity=0.9,
                                                     n=8, gap=1.5)]
