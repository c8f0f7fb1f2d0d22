"""The CSR-dtANS experiments' shared parts (experiments/_dtans.py) without a GPU: the synthetic
matrix set, the paper's success cells, CSR-dtANS against the fastest baseline, and the GPU
experiments' tables and plots from fabricated timing rows (timings are never asserted)."""
from __future__ import annotations

import os

import numpy as np
import scipy.sparse as sp
import pytest

from experiments import _dtans as D
from reference._common import OptionError
from spmvlab import experiment as X


@pytest.mark.parametrize("family", list(D.FAMILIES))
def test_synthetic_families(family):
    spec = D.synthetic_specs([family], [12], seed=3)[0]
    A = D.build(spec)
    per_row, values = D.FAMILIES[family]
    assert 2 ** 11 <= A.nnz <= 2 ** 13 and A.dtype == np.float64
    if family == "stencil27":      # a cube of side 5: most rows are on its faces
        side = round(A.shape[0] ** (1 / 3))
        assert side ** 3 == A.shape[0] and A.nnz == (3 * side - 2) ** 3
    else:
        assert abs(A.nnz / A.shape[0] - per_row) < 0.25 * per_row + 1
    assert np.all(A.data != 0)
    distinct = np.unique(A.data)
    assert distinct.size <= 16                                  # a small value alphabet
    if values == "pattern":
        assert distinct.tolist() == [1.0]
    if values == "laplacian":
        assert -1.0 in distinct
    B = D.build(spec)
    assert np.array_equal(A.indices, B.indices) and np.array_equal(A.data, B.data)


def _row(matrix, dtype, method, us, nnz, rows, fbytes, cache, source="synthetic"):
    return dict(matrix=matrix, source=source, family="x", dtype=dtype, method=method, cache=cache,
                median_us=us, nnz=nnz, shape=[rows, rows], format_bytes=fbytes, check_passed=True,
                tb_s=1.0)


def _fake_rows():
    rows = []
    # (name, nnz, rows, dtANS us warm, cold): a small matrix (slower), a big one (faster)
    for name, nnz, n_rows, ours in (("small", 2 ** 12, 2 ** 10, 9.0), ("mid", 2 ** 22, 2 ** 17, 5.0),
                                     ("big", 2 ** 26, 2 ** 21, 4.0), ("wide", 2 ** 26, 2 ** 24, 20.0)):
        for dt in ("float64", "float32"):
            for cache in ("warm", "cold"):
                rows += [_row(name, dt, "cusparse", 8.0, nnz, n_rows, 12 * nnz, cache),
                         _row(name, dt, "cusparse_coo", 10.0, nnz, n_rows, 16 * nnz, cache),
                         _row(name, dt, "csr_dtans", ours, nnz, n_rows, 3 * nnz, cache)]
    rows.append(dict(matrix="broken", source="synthetic", dtype="float64", method="csr_dtans",
                     nnz=10, shape=[4, 4], error="OSError: boom"))
    return rows


def test_pairs_take_the_fastest_baseline():
    prs = D.pairs(_fake_rows(), "cold")
    assert len(prs) == 8
    big = next(p for p in prs if p["matrix"] == "big" and p["dtype"] == "float64")
    assert big["baseline"] == "cusparse" and big["speedup"] == pytest.approx(2.0)
    assert big["size_ratio"] == pytest.approx(0.25) and big["faster"]
    assert big["symbols_per_s"] == pytest.approx(2 * 2 ** 26 / 4e-6)
    small = next(p for p in prs if p["matrix"] == "small")
    assert not small["faster"] and small["nnz_per_row"] == 4.0


def test_cells_and_summary():
    rows = _fake_rows()
    cells = D.speed_cells(rows, "cold", ["float64"])
    got = {(c["source"], c["nnz_per_row"], c["nnz"]): (c["success"], c["total"]) for c in cells}
    assert got[("all", "<= 10", "<= 2^20")] == (0, 1)         # small: 4 per row
    assert got[("all", "> 10", "<= 2^25")] == (1, 1)          # mid: 32 per row
    assert got[("all", "> 10", "> 2^25")] == (1, 1)           # big: 32 per row
    assert got[("all", "<= 10", "> 2^25")] == (0, 1)          # wide: 4 per row, slower
    assert got[("suitesparse", "> 10", "> 2^25")] == (0, 0)
    s = D.speed_summary(rows, "cold", ["float64"])[0]
    assert s["large"] == 2 and s["large_faster"] == 1 and s["best_matrix"] == "big"


def _results(rows, cfg):
    return {"meta": {"date_utc": "2026-01-01T00:00:00+00:00", "device": {"name": "Fake GPU"}},
            "config": cfg, "rows": rows, "copy_bandwidth": {"tb_s": 4.0}, "l2_bytes": 60 * 2 ** 20}


@pytest.mark.parametrize("name", ["fig7_dtans", "fig8_dtans", "table2_dtans", "table3_dtans"])
def test_gpu_experiments_plot_fabricated_results(name, tmp_path, monkeypatch, capsys):
    mod = X.load_experiment(name)
    cfg = mod.config(quick=True)
    rows = _fake_rows()
    monkeypatch.setattr(D, "measure_gpu", lambda cfg, desc, **kw: dict(rows=rows, copy_bandwidth={"tb_s": 4.0},
                                                                       l2_bytes=60 * 2 ** 20, done=[]))
    monkeypatch.setattr(D, "reuse_rows", lambda *a, **k: None)
    res = mod.measure(cfg)
    res = _results(res.pop("rows"), cfg) | res
    out = mod.plot(res, str(tmp_path / f"{name}.png"))
    assert [os.path.basename(p) for p in out] == [f"{name}.png", f"{name}.pdf"]
    mod.report(res)
    text = capsys.readouterr().out
    assert "float64" in text
    if name == "fig7_dtans":
        t = mod.throughput(res)
        assert {r["matrix"] for r in t} == {"big", "wide"}        # >= 2^23 nonzeros
        big = next(r for r in t if r["matrix"] == "big" and r["dtype"] == "float64")
        assert big["needed_symbols_per_s"] == pytest.approx(2 * 2 ** 26 * 4e12 / (3 * 2 ** 26))
        assert "symbols_per_sm_clock" not in big             # the fake device names no SMs
        res["meta"]["device"].update(sm_count=100, clock_khz=2_000_000)
        big = next(r for r in mod.throughput(res) if r["matrix"] == "big" and r["dtype"] == "float64")
        assert big["symbols_per_sm_clock"] == pytest.approx(big["symbols_per_s"] / 2e11)
        assert "error: broken" in text
    if name == "fig8_dtans":
        assert all(r.get("cache", "cold") == "cold" for r in res["rows"])


@pytest.mark.parametrize("name", ["fig8_dtans", "table2_dtans", "table3_dtans"])
def test_reusers_are_derived_without_a_gpu(name, tmp_path, monkeypatch, capsys):
    """On a machine without a GPU fig8/table2/table3 are made from a device's saved
    fig7_dtans rows whichever commit measured them: that device's folder, the measuring
    run's meta, this run's under "derived", the rows fig7's; another config -> nothing."""
    monkeypatch.setattr(X.R, "RESULTS", str(tmp_path / "results"))
    monkeypatch.setattr(X.R, "FIGURES", str(tmp_path / "figures"))
    monkeypatch.setattr(X, "gpu_available", lambda: False)
    mod = X.load_experiment(name)
    cfg = X.load_experiment("fig7_dtans").config()
    meta = {"date_utc": "2026-01-01T00:00:00+00:00", "git_hash": "abc1234", "git_dirty": False,
            "device": {"name": "Fake GPU"}}
    assert X.main(mod, ["--measure"]) == 1                       # no fig7 results anywhere
    assert "no saved fig7_dtans results" in capsys.readouterr().err
    rows = _fake_rows()
    X.save_results("fig7_dtans", rows, cfg, {"copy_bandwidth": {"tb_s": 4.0}}, meta=meta,
                   device="fakegpu")
    assert X.main(mod, ["--measure"]) == 0
    res = X.load_results(name, "fakegpu")
    assert res["meta"] == meta and res["source"]["experiment"] == "fig7_dtans"
    assert "derived" in res and res["rows_git_hash"] == "abc1234"
    assert res["copy_bandwidth"] == {"tb_s": 4.0} and res["not_measured"]   # fake rows miss matrices
    assert os.path.isfile(tmp_path / "figures" / "fakegpu" / f"{name}.png")
    if name == "fig8_dtans":
        cold = [r for r in rows if r.get("cache", "cold") == "cold"]
        assert res["rows"] == cold
    else:
        cache = "warm" if name == "table2_dtans" else "cold"
        assert res["rows"] == D.speed_cells(rows, cache, cfg["dtypes"])
        assert res["summary"] == D.speed_summary(rows, cache, cfg["dtypes"])
    assert mod.derive(mod.config(reps=99), "fakegpu") is None    # other settings: not derived
    assert mod.derive(mod.config(budget_s=1.0), "fakegpu") is not None   # a time limit is not


def test_wall_split_says_where_the_seconds_went():
    """Builds and checks count once per method (two cache rows), problems once per matrix and
    dtype, timing per row; the rest is 'other'; runs without the fields give None."""
    row = dict(matrix="a", dtype="float32", problem_s=1.0, build_s=2.0, check_s=3.0)
    rows = [dict(row, method=m, cache=c, time_s=0.5) for m in ("x", "y") for c in ("warm", "cold")]
    res = dict(rows=rows, matrix_seconds={"a": 20.0}, load_seconds={"a": 4.0})
    assert D.wall_split(res) == "wall 20 s: loading 4, problems 1, builds 4, checks 6, timing 2, other 3"
    assert D.wall_split(dict(rows=[dict(matrix="a")])) is None


def test_reuse_needs_the_same_commit_config_and_device(tmp_path, monkeypatch):
    from spmvlab import runinfo
    meta = {"git_hash": "a" * 40, "git_dirty": False, "date_utc": "2026-01-01T00:00:00+00:00",
            "device": {"simulator": False, "name": "NVIDIA H200"}}
    monkeypatch.setattr(runinfo, "run_metadata", lambda: dict(meta))
    monkeypatch.setattr(X.R, "RESULTS", str(tmp_path))
    cfg = D.GPU_QUICK | {"seed": 0}
    assert D.reuse_rows("fig7_dtans", cfg, True) is None          # nothing saved
    X.save_results(X.results_path("fig7_dtans", "h200"), [{"x": 1}], cfg, meta=meta)
    assert D.reuse_rows("fig7_dtans", cfg, True)["rows"] == [{"x": 1}]
    assert D.reuse_rows("fig7_dtans", cfg | {"reps": 99}, True) is None
    monkeypatch.setattr(runinfo, "run_metadata", lambda: dict(meta, git_hash="b" * 40))
    assert D.reuse_rows("fig7_dtans", cfg, True) is None
    monkeypatch.setattr(runinfo, "run_metadata", lambda: dict(meta, git_dirty=True))
    assert D.reuse_rows("fig7_dtans", cfg, True) is None


def test_llm_speed_matrix_and_plot(tmp_path, monkeypatch, capsys):
    mod = X.load_experiment("dtans_llm_speed")
    pool = np.array([0.5, -0.25, 1e-9, 2.0], dtype=np.float32)
    A = mod.matrix((64, 96), 0.7, pool, "float16", seed=1)
    assert A.nnz == round(0.3 * 64 * 96) and np.all(A.data != 0)
    assert set(np.unique(A.data)) <= {0.5, -0.25, 2.0}            # 1e-9 underflows in fp16
    cfg = mod.config(quick=True, weights=["w"])

    def fake_time(A, dtype, names, **kw):
        return [dict(kw["extra"], method=m, shape=list(A.shape), dtype=dtype, nnz=int(A.nnz),
                     median_us=10.0 if m == "cublas" else 5.0, format_bytes=100, check_passed=True,
                     cache="cold") for m in names]

    monkeypatch.setattr(D, "time_matrix", fake_time)
    monkeypatch.setattr(mod, "value_pool", lambda names, s: pool)
    res = mod.measure(cfg)
    assert {r["speedup_vs_cublas"] for r in res["rows"]} == {1.0, 2.0}
    res = _results(res["rows"], cfg)
    out = mod.plot(res, str(tmp_path / "s.png"))
    assert os.path.basename(out[0]) == "s.png"
    mod.report(res)
    assert "csr_dtans" in capsys.readouterr().out


def test_measure_gpu_order_and_budget(monkeypatch):
    from spmvlab import bench, runinfo
    seen = []
    monkeypatch.setattr(D, "time_matrix", lambda A, dt, names, **kw: seen.append((kw["extra"]["matrix"], dt)) or [])
    monkeypatch.setattr(bench, "copy_bandwidth", lambda: {"tb_s": 1.0})
    monkeypatch.setattr(runinfo, "device_info", lambda: {"l2_bytes": 1})
    cfg = dict(D.GPU_FULL, real=[], synthetic=["stencil5", "watts20"], log2_nnz=[10],
               large=[["banded17", 11]], dtypes=["float32"], budget_s=None)
    res = D.measure_gpu(cfg, "t")
    assert [m for m, _ in seen] == ["banded17_2^11", "stencil5_2^10", "watts20_2^10"]
    assert res["skipped"] == [] and set(res["matrix_seconds"]) == {m for m, _ in seen}
    seen.clear()
    res = D.measure_gpu(dict(cfg, budget_s=1e-12), "t")
    assert seen == [] and len(res["skipped"]) == 3


def test_expected_rate_is_the_median_of_the_largest_matrices():
    """The budget's estimate: the prior before any matrix; then the median rate of the
    matrices of at least half the largest one's nonzeros, so one slow first matrix (kernels
    compiling) does not stand for the ones after it, and small matrices do not count."""
    assert D.expected_s_per_nnz([]) == D.PRIOR_S_PER_NNZ
    big = 2 ** 26
    assert D.expected_s_per_nnz([(2 ** 20, 9e-6), (big, 1.4e-6)]) == 1.4e-6
    rates = [(2 ** 20, 9e-6), (big, 1.4e-6), (big - 5, 0.4e-6), (big - 9, 0.7e-6)]
    assert D.expected_s_per_nnz(rates) == 0.7e-6
    assert D.expected_s_per_nnz(rates + [(2 * big, 0.6e-6)]) == pytest.approx(1.0e-6)


def test_sell_joins_the_baselines_when_timed():
    rows = _fake_rows()
    assert D.baselines_timed(rows) == ["cusparse", "cusparse_coo"]
    assert D.baselines_text(rows) == "CSR / COO (no SELL timing in this run)"
    rows.append(_row("big", "float64", "cusparse_sell", 6.0, 2 ** 26, 2 ** 21, 9 * 2 ** 26, "cold"))
    rows.append(dict(_row("mid", "float64", "cusparse_sell", 1.0, 2 ** 22, 2 ** 17, 1, "cold"),
                     check_passed=False))                          # a failed check never wins
    assert D.baselines_text(rows) == "CSR / COO / SELL"
    prs = {(p["matrix"], p["dtype"]): p for p in D.pairs(rows, "cold")}
    big = prs[("big", "float64")]
    assert big["baseline"] == "cusparse_sell" and big["speedup"] == pytest.approx(1.5)
    assert big["size_ratio"] == pytest.approx(3 / 9)
    assert prs[("mid", "float64")]["baseline"] == "cusparse"
    assert prs[("big", "float32")]["baseline"] == "cusparse"        # no SELL row there
    assert "cusparse_sell" in D.GPU_FULL["methods"]


def test_time_matrix_caps_slow_methods_and_logs(monkeypatch):
    """method_cap_s: a method whose reps would pass the cap runs fewer (at least 3), and its
    rows say so; every method gets a log line; measure_gpu checkpoints after each matrix."""
    import types as T

    import scipy.sparse as sp

    from spmvlab import bench, methods, runinfo
    calls = []

    class Slow:
        impl, nbytes, format_bytes = "fake", 100, 100

        def check(self):
            return T.SimpleNamespace(passed=True, max_rel_err=0.0, n_bad=0)

        def time(self, reps, warmup, cold, flush="read"):
            calls.append((reps, warmup))
            return T.SimpleNamespace(median_us=1e6, p10_us=1e6, p90_us=1e6, mean_us=1e6, reps=reps, cold=cold)

        def close(self):
            pass

    monkeypatch.setattr(methods, "build", lambda spec, p: Slow())
    A = sp.random(20, 20, density=0.2, random_state=0, format="csr")
    lines = []
    rows = D.time_matrix(A, "float32", ["cusparse"], reps=20, warmup=3, caches=("warm", "cold"),
                         extra=dict(matrix="m"), method_cap_s=5.0, log=lines.append)
    assert calls == [(1, 0), (3, 1), (3, 1)]          # one probe call of 1 s, then 3 reps each
    assert [r["reps"] for r in rows] == [3, 3] and all(r["reps_capped"] for r in rows)
    assert len(lines) == 1 and "capped" in lines[0]
    for key in ("problem_s", "build_s", "check_s", "time_s"):     # where the wall time went
        assert all(isinstance(r[key], float) and r[key] >= 0 for r in rows), key
    calls.clear()
    rows = D.time_matrix(A, "float32", ["cusparse"], reps=20, warmup=3, caches=("warm",),
                         extra=dict(matrix="m"), method_cap_s=1e9)
    assert calls == [(1, 0), (20, 3)] and "reps_capped" not in rows[0]
    assert "stored_options" not in rows[0]               # a baseline records no layout
    Slow.stored_options = {"rows_per_lane": 4, "first_delta": "diagonal"}   # what auto became
    rows = D.time_matrix(A, "float32", ["csr_dtans"], reps=20, warmup=3, caches=("warm",),
                         extra=dict(matrix="m"), method_cap_s=1e9)
    assert rows[0]["stored_options"] == {"rows_per_lane": 4, "first_delta": "diagonal"}
    saved = []
    monkeypatch.setattr(D, "time_matrix", lambda A, dt, names, **kw: [dict(matrix=kw["extra"]["matrix"])])
    monkeypatch.setattr(bench, "copy_bandwidth", lambda: {"tb_s": 1.0})
    monkeypatch.setattr(runinfo, "device_info", lambda: {"l2_bytes": 1})
    monkeypatch.setattr(X, "checkpoint", lambda res: saved.append(len(res["rows"])))
    cfg = dict(D.GPU_FULL, real=[], synthetic=["stencil5", "watts20"], log2_nnz=[10], large=[],
               dtypes=["float32"], budget_s=None)
    res = D.measure_gpu(cfg, "t")
    assert saved == [1, 2]
    assert set(res["load_seconds"]) == set(res["matrix_seconds"]) == set(res["done"])


def _fake_gpu(monkeypatch):
    from spmvlab import bench, runinfo
    monkeypatch.setattr(bench, "copy_bandwidth", lambda: {"tb_s": 1.0})
    monkeypatch.setattr(runinfo, "device_info", lambda: {"l2_bytes": 1})


def _timing(A, dt, names, **kw):
    """time_matrix's fake: one warm and one cold row per method, appended to ``into``."""
    new = [_row(kw["extra"]["matrix"], dt, m, 5.0 if m == "csr_dtans" else 8.0, int(A.nnz), A.shape[0],
                100, cache) for m in names for cache in ("warm", "cold")]
    kw["into"].extend(new)
    return new


def test_budget_bounds_the_work_in_flight(monkeypatch):
    """A matrix expected to end after the budget (target nonzeros x seconds per nonzero) is
    not begun, smaller ones after it still are; methods not begun by the deadline are
    skipped and listed, never built."""
    import time
    _fake_gpu(monkeypatch)
    seen, time_matrix = [], D.time_matrix
    monkeypatch.setattr(D, "time_matrix", lambda A, dt, names, **kw: seen.append(kw["extra"]["matrix"]) or [])
    cfg = dict(D.GPU_FULL, real=[], synthetic=["stencil5"], log2_nnz=[10], large=[["banded17", 34]],
               dtypes=["float32"], budget_s=600)
    res = D.measure_gpu(cfg, "t")            # 2^34 nonzeros x 0.5 us = 8590 s > 600 s: not loaded
    assert seen == ["stencil5_2^10"] and res["skipped"] == ["banded17_2^34"] and res["done"] == seen
    from spmvlab import methods
    built = []
    monkeypatch.setattr(methods, "build", lambda spec, p: built.append(spec.name))
    A = D.build(D.synthetic_specs(["stencil5"], [8])[0])
    skipped, lines = [], []
    rows = time_matrix(A, "float32", ["cusparse", "csr_dtans"], reps=3, warmup=1, extra=dict(matrix="m"),
                         deadline=time.perf_counter() - 1, skipped=skipped, log=lines.append)
    assert rows == [] and built == [] and skipped == ["m float32 cusparse", "m float32 csr_dtans"]
    assert all("skipped" in t for t in lines)


def test_a_stop_saves_the_rows_in_flight(monkeypatch):
    """Stopped (SIGTERM) inside the second matrix: the rows of the first and of the second's
    methods done are saved with ``stopped``, and the stop propagates."""
    _fake_gpu(monkeypatch)
    saved = []
    monkeypatch.setattr(X, "checkpoint", lambda res: saved.append(dict(res, rows=list(res["rows"]))))

    def timing(A, dt, names, **kw):
        _timing(A, dt, names[:1], **kw)          # the first method done ...
        if kw["extra"]["matrix"] == "watts20_2^10":
            raise X.Stopped(15)                  # ... then SIGTERM
        _timing(A, dt, names[1:], **kw)
        return list(kw["into"])                  # as time_matrix: every row of this call

    monkeypatch.setattr(D, "time_matrix", timing)
    cfg = dict(D.GPU_FULL, real=[], synthetic=["stencil5", "watts20"], log2_nnz=[10], large=[],
               dtypes=["float32"], budget_s=None)
    with pytest.raises(X.Stopped):
        D.measure_gpu(cfg, "t")
    first, last = saved
    per_matrix = 2 * len([*cfg["methods"], *cfg["variants"]])     # both cache states
    assert first["done"] == ["stencil5_2^10"] and "stopped" not in first
    assert len(first["rows"]) == per_matrix
    assert last["stopped"]["matrix"] == "watts20_2^10" and last["stopped"]["reason"] == "signal 15"
    assert len(last["rows"]) == per_matrix + 2 and last["done"] == ["stencil5_2^10"]
    assert D.missing(cfg, last["rows"]) == {"watts20_2^10": {"float32": D.GPU_FULL["methods"][1:]}}


def test_fig7_stopped_by_sigterm_keeps_partial_results_the_reusers_take(tmp_path, monkeypatch):
    """End to end without a GPU: fig7 killed by SIGTERM in its second matrix leaves a
    partial results file that --plot-only plots; fig8 (measure_missing_s 0) takes its rows
    and lists what is missing without measuring; with measure_missing_s it measures only
    that; without reusable fig7 results it fails at once."""
    import signal

    from spmvlab import runinfo
    _fake_gpu(monkeypatch)
    meta = {"git_hash": "a" * 40, "git_dirty": False, "date_utc": "2026-01-01T00:00:00+00:00",
            "device": {"simulator": False, "name": "NVIDIA H200"}}
    monkeypatch.setattr(runinfo, "run_metadata", lambda: dict(meta))
    monkeypatch.setattr(X.R, "RESULTS", str(tmp_path / "results"))
    monkeypatch.setattr(X.R, "FIGURES", str(tmp_path / "figures"), raising=False)
    monkeypatch.setattr(X, "gpu_available", lambda: True)

    def timing(A, dt, names, **kw):
        if kw["extra"]["matrix"] == "watts20_2^10":
            os.kill(os.getpid(), signal.SIGTERM)
        return _timing(A, dt, names, **kw)

    monkeypatch.setattr(D, "time_matrix", timing)
    fig7, fig8 = X.load_experiment("fig7_dtans"), X.load_experiment("fig8_dtans")
    flags = ["--budget-s", "0"]                 # 0: no budget
    cfg = dict(real=[], synthetic=["stencil5", "watts20"], log2_nnz=[10], large=[], dtypes=["float32"])
    for mod in (fig7, fig8):
        monkeypatch.setattr(mod, "config", lambda quick=False, _m=mod, **o: X.make_config(
            _m.NAME, dict(D.GPU_FULL, **cfg), D.GPU_QUICK, quick, o))
    fig_path = str(tmp_path / "f7.png")
    assert X.main(fig7, flags + ["--fig", fig_path]) == 128 + signal.SIGTERM
    path = X.results_path("fig7_dtans", "h200")
    part = X.load_results(path)
    assert part["partial"] and part["done"] == ["stencil5_2^10"] and part["stopped"]["matrix"] == "watts20_2^10"
    assert {r["matrix"] for r in part["rows"]} == {"stencil5_2^10"}
    assert X.main(fig7, ["--plot-only", "--device", "h200", "--fig", fig_path]) == 0
    assert D.run_state(part)[0].startswith("PARTIAL results: stopped (signal 15) in watts20_2^10")

    calls = []
    monkeypatch.setattr(D, "time_matrix", lambda A, dt, names, **kw: calls.append(names) or _timing(A, dt, names, **kw))
    res = fig8.measure(fig8.config(budget_s=0))
    assert calls == [] and res["rows_partial"] and res["not_measured"] == ["watts20_2^10 float32"]
    assert {r["matrix"] for r in res["rows"]} == {"stencil5_2^10"} and all(r["cache"] == "cold" for r in res["rows"])
    assert "not_measured (1): watts20_2^10 float32" in D.run_state(res)
    res = fig8.measure(fig8.config(budget_s=0, measure_missing_s=60.0))
    assert calls == [D.GPU_FULL["methods"]] and "not_measured" not in res
    assert res["measured_here"] == ["watts20_2^10"] and "1 matrices measured here" in res["rows_from"]
    assert {r["matrix"] for r in res["rows"]} == {"stencil5_2^10", "watts20_2^10"}
    assert X.results_path("fig8_dtans", "h200") and not os.path.exists(X.results_path("fig8_dtans", "h200"))
    monkeypatch.setattr(runinfo, "run_metadata", lambda: dict(meta, git_hash="b" * 40))
    calls.clear()
    with pytest.raises(OptionError, match="fig7_dtans.py first"):
        fig8.measure(fig8.config(budget_s=0))
    assert calls == []


def test_variants_are_timed_beside_the_paper_layout_and_summarised_apart(monkeypatch):
    """The config's ``variants`` (CSR-dtANS beyond the paper's layout) are timed with the
    other methods of every matrix, left out of what a stopped run misses, and each gets its
    own summary line; the pairs (figures, tables) stay the paper's layout."""
    _fake_gpu(monkeypatch)
    seen = []

    def timing(A, dt, names, **kw):
        seen.append(list(names))
        new = [_row(kw["extra"]["matrix"], dt, m, {"csr_dtans": 5.0, D.PACKED: 2.0}.get(m, 8.0),
                    int(A.nnz), A.shape[0], 100, cache) for m in names for cache in ("warm", "cold")]
        kw["into"].extend(new)
        return new

    monkeypatch.setattr(D, "time_matrix", timing)
    cfg = dict(D.GPU_FULL, real=[], synthetic=["stencil5"], log2_nnz=[10], large=[],
               dtypes=["float32"], budget_s=None)
    assert cfg["variants"] == [D.PACKED]
    res = D.measure_gpu(cfg, "t", checkpoint=lambda r: None)
    assert seen == [[*D.GPU_FULL["methods"], D.PACKED]]
    assert D.missing(cfg, res["rows"]) == {}
    res["config"] = cfg
    lines = D.summary_lines(res, "cold")
    assert len(lines) == 2 and lines[0].startswith("cold float32 csr_dtans: 1/1 faster, best 1.60x")
    assert lines[1].startswith(f"cold float32 {D.PACKED}: 1/1 faster, best 4.00x")
    assert [p["dtans_us"] for p in D.pairs(res["rows"], "cold")] == [5.0]


def test_dtans_llm_counts_the_escaped_values():
    """``escaped_values``: nonzeros whose value the table does not keep, bit for bit (-0.0 is
    not 0.0); on a matrix of 6000 distinct values, each once, every value past the kept ones
    escapes; on one of three values none does."""
    mod = X.load_experiment("dtans_llm")
    vals = np.array([1.0, 2.0, -0.0, 3.0, 1.0], np.float16)
    assert mod.escaped_values(vals, np.array([1.0, 0.0], np.float16)) == 3
    rng = np.random.default_rng(0)
    n = 6000
    cols = np.tile(np.arange(15) * 20, n // 15)          # 15 distinct columns a row
    many = sp.csr_matrix((np.arange(1, n + 1, dtype=np.float32), cols,
                          np.arange(0, n + 1, 15)), shape=(n // 15, 400))
    r = mod.sizes(many, "float32")
    assert r["kept_values"] < r["nnz"] == n and r["escaped_values"] == n - r["kept_values"]
    few = sp.csr_matrix((rng.integers(1, 4, n).astype(np.float32), cols,
                         np.arange(0, n + 1, 15)), shape=(n // 15, 400))
    assert mod.sizes(few, "float32")["escaped_values"] == 0
