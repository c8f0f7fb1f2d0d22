"""The CSR-dtANS experiments' shared parts (experiments/_dtans.py) without a GPU: the synthetic
matrix set, the paper's success cells, CSR-dtANS against the fastest baseline, and the GPU
experiments' tables and plots from fabricated timing rows (timings are never asserted)."""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "experiments"))

import _dtans as D  # noqa: E402
from spmvlab import experiment as X  # noqa: E402


@pytest.mark.parametrize("family", list(D.FAMILIES))
def test_synthetic_families(family):
    spec = D.synthetic_specs([family], [12], seed=3)[0]
    A = D.build(spec)
    per_row, values = D.FAMILIES[family]
    assert 2 ** 11 <= A.nnz <= 2 ** 13 and A.dtype == np.float64
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
    monkeypatch.setattr(D, "measure_gpu", lambda cfg, desc: dict(rows=rows, copy_bandwidth={"tb_s": 4.0},
                                                                 l2_bytes=60 * 2 ** 20))
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
        assert "error: broken" in text
    if name == "fig8_dtans":
        assert all(r.get("cache", "cold") == "cold" for r in res["rows"])


def test_reuse_needs_the_same_commit_config_and_device(tmp_path, monkeypatch):
    from spmvlab import runinfo
    meta = {"git_hash": "a" * 40, "git_dirty": False, "date_utc": "2026-01-01T00:00:00+00:00",
            "device": {"simulator": False, "name": "NVIDIA H200"}}
    monkeypatch.setattr(runinfo, "run_metadata", lambda: dict(meta))
    monkeypatch.setattr(X, "RESULTS", str(tmp_path))
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
    calls.clear()
    rows = D.time_matrix(A, "float32", ["cusparse"], reps=20, warmup=3, caches=("warm",),
                         extra=dict(matrix="m"), method_cap_s=1e9)
    assert calls == [(1, 0), (20, 3)] and "reps_capped" not in rows[0]
    saved = []
    monkeypatch.setattr(D, "time_matrix", lambda A, dt, names, **kw: [dict(matrix=kw["extra"]["matrix"])])
    monkeypatch.setattr(bench, "copy_bandwidth", lambda: {"tb_s": 1.0})
    monkeypatch.setattr(runinfo, "device_info", lambda: {"l2_bytes": 1})
    monkeypatch.setattr(X, "checkpoint", lambda res: saved.append(len(res["rows"])))
    cfg = dict(D.GPU_FULL, real=[], synthetic=["stencil5", "watts20"], log2_nnz=[10], large=[],
               dtypes=["float32"], budget_s=None)
    D.measure_gpu(cfg, "t")
    assert saved == [1, 2]
