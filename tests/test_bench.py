"""Timing harness, baselines and experiment scaffolding: the parts that run without a GPU.

(The timings themselves need a GPU; here: metadata, progress bar, results round trip, the
experiment module API (config/measure/plot separation, flags as config overrides, results and
figure paths per device, plotting every committed results file), the simulator refusing to
time.)
"""
import argparse
import dataclasses
import io
import json
import os
import time
import types

import numpy as np
import pytest
import scipy.sparse as sp

from experiments import _dtans as D
from reference._common import OptionError
from spmvlab.errors import DatasetError
from spmvlab import bench, methods, runinfo
from spmvlab import experiment as X
from spmvlab import results as R
from spmvlab import workers
from spmvlab import plotting as P
from spmvlab._cuda import SIMULATOR
from spmvlab.errors import BackendUnavailable

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# ---- bench -------------------------------------------------------------------------------------

def test_timing_stats():
    t = bench.Timing.from_samples([5.0, 1.0, 3.0, 2.0, 4.0], cold=True)
    assert t.median_us == 3.0 and t.mean_us == 3.0 and t.reps == 5 and t.cold
    assert t.p10_us == pytest.approx(1.4) and t.p90_us == pytest.approx(4.6)
    assert t.samples == (5.0, 1.0, 3.0, 2.0, 4.0)
    assert "samples" not in t.as_dict() and t.as_dict(samples=True)["samples"] == [5.0, 1.0, 3.0, 2.0, 4.0]


def test_a_sample_the_host_queued_late_is_taken_again():
    """Host sides of 20, 500 (outlasts the 100 us pad: re-taken with the pad raised to 750),
    30 and 900 us (outlasts 750: re-taken again), then on time; the GPU times of the late
    samples (inflated by the wait) never reach the statistics. With reps=2 at most two
    re-takes: a host late every time keeps the third late sample."""
    hosts = iter([20, 500, 30, 900, 40, 50])
    gpus = iter([10.0, 400.0, 11.0, 800.0, 12.0, 13.0])
    pads = []

    def sample(pad):
        pads.append(pad)
        return next(gpus), next(hosts)
    got, redone = bench.collect_samples(sample, 4, 100)
    assert got == [10.0, 11.0, 12.0, 13.0] and redone == 2
    assert pads == [100, 100, 750, 750, 1500, 1500]
    late = bench.collect_samples(lambda pad: (99.0, pad + 1.0), 2, 100)
    assert late == ([99.0, 99.0], 2)
    t = bench.Timing.from_samples([1.0, 2.0], cold=False, redone=3)
    assert t.redone == 3 and t.as_dict()["redone"] == 3


def test_effective_bandwidth():
    assert bench.effective_bandwidth(3e6, 1.0) == pytest.approx(3.0)  # 3 MB in 1 us = 3 TB/s
    assert np.isnan(bench.effective_bandwidth(1, 0))


def test_metadata_keys():
    meta = runinfo.run_metadata()
    for key in ("git_hash", "git_dirty", "date_utc", "hostname", "versions", "device"):
        assert key in meta
    for key in ("python", "numpy", "scipy", "numba", "numba_cuda", "cupy", "torch"):
        assert key in meta["versions"]
    assert meta["versions"]["numpy"] == np.__version__
    assert meta["date_utc"].endswith("+00:00")
    json.dumps(meta)
    if SIMULATOR:
        assert meta["device"] == {"simulator": True}


def test_git_state(tmp_path, monkeypatch):
    import subprocess
    monkeypatch.delenv("SPMVLAB_GIT_HASH", raising=False)        # a GPU run sets them
    monkeypatch.delenv("SPMVLAB_GIT_DIRTY", raising=False)
    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(git + ["init", "-q"], check=True)
    (repo / "f.txt").write_text("a\n")
    subprocess.run(git + ["add", "f.txt"], check=True)
    subprocess.run(git + ["commit", "-qm", "c"], check=True)
    head = subprocess.run(git + ["rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    assert runinfo.git_state(str(repo)) == (head, False)
    for d in ("results", "figures", "spmvlab"):
        (repo / d).mkdir()
        (repo / d / "r.json").write_text("1\n")
    subprocess.run(git + ["add", "."], check=True)
    subprocess.run(git + ["commit", "-qm", "outputs"], check=True)
    head = subprocess.run(git + ["rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    (repo / "results" / "r.json").write_text("2\n")            # an experiment's output: clean
    (repo / "figures" / "r.json").write_text("2\n")
    assert runinfo.git_state(str(repo)) == (head, False)
    (repo / "spmvlab" / "r.json").write_text("2\n")            # anything else: dirty
    assert runinfo.git_state(str(repo)) == (head, True)
    (repo / "spmvlab" / "r.json").write_text("1\n")
    (repo / "f.txt").write_text("b\n")
    assert runinfo.git_state(str(repo)) == (head, True)
    assert runinfo.git_state(str(tmp_path / "nowhere")) == (None, None)
    monkeypatch.setenv("SPMVLAB_GIT_HASH", "c" * 40)             # a shipped copy names its commit,
    monkeypatch.setenv("SPMVLAB_GIT_DIRTY", "0")                 # also over a stale .git
    assert runinfo.git_state(str(tmp_path / "nowhere")) == ("c" * 40, False)
    assert runinfo.git_state(str(repo)) == ("c" * 40, False)


def test_device_slug():
    assert runinfo.device_slug({"simulator": True}) == "cpu"
    assert runinfo.device_slug({"simulator": False, "name": "NVIDIA H100 80GB HBM3"}) == "h100"
    assert runinfo.device_slug({"simulator": False, "name": "NVIDIA H200"}) == "h200"
    assert runinfo.device_slug(None) == "cpu"


@pytest.mark.skipif(not SIMULATOR, reason="checks the simulator's refusal")
def test_time_fn_refuses_the_simulator():
    with pytest.raises(BackendUnavailable, match="real CUDA GPU"):
        bench.time_fn(lambda: None)
    with pytest.raises(BackendUnavailable):
        bench.copy_bandwidth(1 << 20)
    assert runinfo.device_info() == {"simulator": True}


# ---- experiment scaffolding -------------------------------------------------------------------

def test_progress_bar_output():
    buf = io.StringIO()
    got = list(X.progress(range(5), desc="work", stream=buf, min_interval=0.0))
    assert got == [0, 1, 2, 3, 4]
    text = buf.getvalue()
    assert "work [" in text and "5/5" in text and text.endswith("\n")
    buf = io.StringIO()
    assert list(X.progress(iter("ab"), desc="gen", stream=buf)) == ["a", "b"]
    assert "gen 2" in buf.getvalue()


def test_save_load_round_trip(tmp_path):
    rows = [dict(method="m", median_us=np.float32(1.5), n=np.int64(3), arr=np.arange(2), bad=float("nan"))]
    meta = {"date_utc": "2026-01-01T00:00:00+00:00", "device": {"name": "Fake GPU"}}
    path = X.save_results(str(tmp_path / "r.json"), rows, {"dtype": np.dtype(np.float16)},
                          extra={"copy_bandwidth": {"tb_s": 3.0}}, meta=meta)
    back = X.load_results(path)
    assert back["meta"] == meta and back["config"] == {"dtype": "float16"}
    assert back["rows"] == [dict(method="m", median_us=1.5, n=3, arr=[0, 1], bad=None)]
    assert back["copy_bandwidth"] == {"tb_s": 3.0}
    with pytest.raises(Exception, match="existing JSON"):
        X.load_results(str(tmp_path / "missing.json"))


def test_paths_per_device(monkeypatch, tmp_path):
    assert X.results_path("fig7_macko", "h100") == os.path.join(ROOT, "results", "h100", "fig7_macko.json")
    assert X.results_path("x", "cpu", quick=True).endswith(os.path.join("results", "cpu", "x.quick.json"))
    assert X.figure_path("x", "h200") == os.path.join(ROOT, "figures", "h200", "x.png")
    assert X.figure_path("x", "h100", quick=True).endswith(os.path.join("figures", "h100", "x.quick.png"))
    h100 = {"device": {"simulator": False, "name": "NVIDIA H100 80GB HBM3"}}
    assert X.results_device(h100) == "h100" and X.results_device(h100, needs_gpu=False) == "cpu"
    assert X.results_device({"device": {"simulator": True}}) == "cpu"
    # the committed results: GPU experiments under h100/h200, CPU-measured ones under cpu
    assert X.result_devices("fig7_macko") == ["h100", "h200"] and X.result_devices("fig2_macko") == ["cpu"]
    assert X.load_results("fig7_macko", "h100")["meta"]["device"]["name"].startswith("NVIDIA H100")
    assert X.load_results("fig7_macko", "h200")["meta"]["device"]["name"].startswith("NVIDIA H200")
    with pytest.raises(DatasetError, match="one of"):
        X.load_results("fig7_macko")                     # two devices: say which
    # save_results with a bare name goes to results/<device of meta>/
    monkeypatch.setattr(X.R, "RESULTS", str(tmp_path))
    path = X.save_results("demo", [], {}, meta=h100)
    assert path == str(tmp_path / "h100" / "demo.json")
    assert X.result_devices("demo") == ["h100"] and X.load_results("demo")["rows"] == []
    X.save_results("demo", [], {}, meta={"device": {"simulator": True}})
    with pytest.raises(Exception, match="device"):
        X.load_results("demo")                             # two devices: say which
    assert X.load_results("demo", device="cpu")["config"] == {}


def test_every_committed_results_file_is_in_its_device_folder():
    import glob
    paths = glob.glob(os.path.join(ROOT, "results", "*.json"))
    assert paths == [], "results files belong in results/<device>/"
    for path in glob.glob(os.path.join(ROOT, "results", "*", "*.json")):
        with open(path) as f:
            meta = json.load(f)["meta"]
        folder = os.path.basename(os.path.dirname(path))
        assert folder == runinfo.device_slug(meta["device"]), path


def _demo_module(calls):
    """A minimal experiment module measured on the CPU."""
    mod = types.ModuleType("demo_exp")
    mod.__doc__ = "demo experiment"
    mod.NAME, mod.NEEDS_GPU = "demo_exp", False

    def config(quick=False, **overrides):
        return X.make_config("demo_exp", dict(n=4, seed=0), dict(n=2), quick, overrides)

    def measure(cfg):
        calls.append(cfg)
        return dict(rows=[dict(i=i, v=float(i * i)) for i in range(cfg["n"])], note="extra key")

    def plot(results, fig_path):
        plt = P.pyplot()
        fig, ax = plt.subplots()
        ax.plot([r["i"] for r in results["rows"]], [r["v"] for r in results["rows"]])
        return P.savefig(fig, fig_path)

    def cli(p):
        p.add_argument("--n", type=int, help="points")

    mod.config, mod.measure, mod.plot, mod.cli = config, measure, plot, cli
    return mod


def test_config_and_measure_are_separate(tmp_path, monkeypatch):
    calls = []
    mod = _demo_module(calls)
    assert mod.config() == {"n": 4, "seed": 0} and mod.config(True) == {"n": 2, "seed": 0}
    with pytest.raises(OptionError, match="demo_exp config.*'m'"):
        mod.config(m=1)

    def no_parsing(*a, **k):
        raise AssertionError("measure() must not parse the command line")

    # main: flags become config overrides, measure() gets that dict and nothing else
    out, fig = tmp_path / "r.json", tmp_path / "f.png"
    assert X.main(mod, ["--n", "3", "--out", str(out), "--fig", str(fig)]) == 0
    assert calls == [{"n": 3, "seed": 0}]
    saved = X.load_results(str(out))
    assert saved["config"] == {"n": 3, "seed": 0} and len(saved["rows"]) == 3
    assert saved["note"] == "extra key" and "git_hash" in saved["meta"]
    assert fig.exists() and (tmp_path / "f.pdf").exists()
    # measure(cfg) runs from a dict alone
    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", no_parsing)
    assert len(mod.measure(mod.config(quick=True))["rows"]) == 2
    # and a real experiment's measure (the vendor/kernel calls replaced)
    exp = X.load_experiment("fig7_macko")
    seen = []
    monkeypatch.setattr(methods, "measure_problem", lambda p, names, **kw: seen.append(
        (p.shape, p.dtype.name, list(names), kw["extra"])) or [dict(method=n) for n in names])
    # seeded values inside float16's normal range (unseeded uniform [0, 1) values fell below
    # it now and then, and Problem.make refused the lossy conversion)
    monkeypatch.setattr("spmvlab.datasets.uniform", lambda shape, s, **kw: sp.random(
        *shape, density=0.1, random_state=0, data_rvs=lambda k: np.linspace(0.5, 1.5, k)))
    monkeypatch.setattr("spmvlab.anchors.public_macko_rows",
                        lambda shape, s, **kw: [dict(method="public_macko", shape=list(shape))])
    res = exp.measure(exp.config(quick=True, shape=[32, 64]))
    assert [s[3]["sparsity"] for s in seen] == [0.5, 0.9] and seen[0][:2] == ((32, 64), "float16")
    assert len(res["rows"]) == 10 and set(res) == {"rows"}
    assert [r["sparsity"] for r in res["rows"] if r["method"] == "public_macko"] == [0.5, 0.9]
    seen.clear()      # the public benchmark only at public_sparsities
    res = exp.measure(exp.config(quick=True, shape=[32, 64], public_sparsities=[0.9]))
    assert [r["sparsity"] for r in res["rows"] if r["method"] == "public_macko"] == [0.9]
    assert [s[3]["sparsity"] for s in seen] == [0.5, 0.9]


def test_with_rhs_shares_the_matrix_and_draws_x_as_make_does():
    from spmvlab.methods.base import Problem
    A = sp.random(30, 50, density=0.3, random_state=1, format="csr", dtype=np.float32)
    p = Problem.make(A, "float16")
    M, D = p.encoded("macko"), p.dense()
    for k in (None, 1, 8):
        q, ref = p.with_rhs(k), Problem.make(A, "float16", k=k)
        assert np.array_equal(q.X, ref.X) and q.X.shape == ref.X.shape and q.X.dtype == np.float16
        assert q.encoded("macko") is M and q.dense() is D and q.A is p.A
        assert np.array_equal(q.reference().exact, ref.reference().exact)
    assert "reference" not in p.with_rhs(4)._cache


def test_spmm_experiment_builds_each_matrix_once(monkeypatch):
    """spmm_macko: one problem per (shape, sparsity), each N its own X, fp32 rows on the same A."""
    exp = X.load_experiment("spmm_macko")
    seen = []
    monkeypatch.setattr(methods, "measure_problem", lambda p, names, **kw: seen.append(
        (p.dtype.name, p.k, p.kind, tuple(names))) or [dict(method=n, k=p.k, kind=p.kind) for n in names])
    built = []
    real = workers.build_problem
    monkeypatch.setattr(workers, "build_problem", lambda spec, dense=False: built.append(spec) or real(spec, dense))
    cfg = exp.config(shapes=[[8, 40]], sparsities=[0.5], ks=[1, 8], cusparse_k=[8], fp32_ks=[8])
    monkeypatch.setattr(workers, "default_workers", lambda: 0)
    res = exp.measure(cfg)
    assert len(built) == 1
    assert [(d, k, kind) for d, k, kind, _ in seen] == [
        ("float16", 1, "spmm"), ("float16", 1, "spmv"), ("float16", 8, "spmm"),
        ("float32", 8, "spmm"), ("float32", 1, "spmv")]
    assert "cusparse" in seen[2][3] and "cusparse" not in seen[0][3]
    assert sum(r["method"].startswith("spmv_") for r in res["rows"]) == len(seen[1][3]) + len(seen[4][3])


def test_problems_are_the_same_from_worker_processes():
    """experiment.problems: built in spawned workers ahead of use, or here, the same problems
    in the same order (seeded), each with its reference product (and dense copy on request)."""
    specs = [dict(shape=[7, 40], sparsity=s, dtype="float16", seed=3, k=k, encode=["macko"])
             for s, k in ((0.5, None), (0.9, 3), (0.0, None))]
    here = list(X.problems(specs, dense=True, workers=0))
    there = list(X.problems(specs, dense=True, workers=1, ahead=2))
    assert [s for s, _ in here] == [s for s, _ in there] == specs
    for (_, a), (_, b) in zip(here, there):
        assert (a.A != b.A).nnz == 0 and a.A.dtype == b.A.dtype and np.array_equal(a.X, b.X)
        assert "reference" in b._cache and np.array_equal(a.dense(), b.dense())
        assert a.dtype == np.float16 and a.k == (1 if a.X.ndim == 1 else a.X.shape[1])
    assert here[1][1].X.shape == (40, 3) and here[2][1].A.nnz == 7 * 40
    # the encoding built in the worker is the one this process would build, and it is reused
    from spmvlab import formats
    for (_, a), (_, b) in zip(here, there):
        key = [k for k in b._cache if isinstance(k, tuple) and k[:2] == ("encoded", "macko")]
        assert len(key) == 1
        M = formats.get("macko").encode(a.A, dtype=a.dtype, fast=True)
        assert b.encoded("macko") is b._cache[key[0]] and b.encoded("macko").nbytes == M.nbytes
        assert all(np.array_equal(getattr(M, f.name), getattr(b.encoded("macko"), f.name))
                   for f in dataclasses.fields(M) if isinstance(getattr(M, f.name), np.ndarray))
    # closed early (a time budget): the workers still building are stopped, not waited for
    import time
    big = [dict(shape=[4000, 4000], sparsity=0.0, dtype="float16", seed=s, encode=["macko"])
           for s in range(3)]
    gen = X.problems(specs[:1] + big, dense=True, workers=1, ahead=3)
    next(gen)
    t0 = time.perf_counter()
    gen.close()
    assert time.perf_counter() - t0 < 2.0


def test_build_workers_from_the_environment(monkeypatch):
    """SPMVLAB_BUILD_WORKERS sets the builder processes of experiment.problems; a bad value
    raises naming the variable."""
    monkeypatch.setenv("SPMVLAB_BUILD_WORKERS", "7")
    assert workers.default_workers() == 7
    monkeypatch.setenv("SPMVLAB_BUILD_WORKERS", "0")
    assert workers.default_workers() == 0
    for bad in ("-1", "many"):
        monkeypatch.setenv("SPMVLAB_BUILD_WORKERS", bad)
        with pytest.raises(ValueError, match="SPMVLAB_BUILD_WORKERS"):
            workers.default_workers()
    monkeypatch.delenv("SPMVLAB_BUILD_WORKERS")
    n = os.cpu_count() or 1
    assert workers.default_workers() == (0 if n <= 2 else min(4, max(1, n // 4)))


def test_quick_runs_go_to_quick_files(tmp_path, monkeypatch):
    calls = []
    mod = _demo_module(calls)
    monkeypatch.setattr(X.R, "RESULTS", str(tmp_path / "results"))
    monkeypatch.setattr(X.R, "FIGURES", str(tmp_path / "figures"))
    assert X.main(mod, ["--quick"]) == 0
    assert (tmp_path / "results" / "cpu" / "demo_exp.quick.json").exists()
    assert (tmp_path / "figures" / "cpu" / "demo_exp.quick.png").exists()
    assert (tmp_path / "figures" / "cpu" / "demo_exp.quick.pdf").exists()
    assert X.main(mod, ["--plot-only", "--quick", "--device", "cpu"]) == 0
    assert X.main(mod, ["--plot-only"]) == 1                # no full run saved


def test_every_experiment_follows_the_api():
    exps = X.experiments()
    assert {"fig7_macko", "fig1_macko", "fig2_macko", "appc_macko", "baseline_csr", "fig4_macko",
            "table1_macko", "tune_macko"} <= set(exps)
    for name, mod in exps.items():
        assert mod.NAME == name and mod.__doc__ and isinstance(mod.NEEDS_GPU, bool)
        for f in ("config", "measure", "plot"):
            assert callable(getattr(mod, f)), (name, f)
        full, quick = mod.config(), mod.config(quick=True)
        assert isinstance(full, dict) and set(full) == set(quick) and full != quick
        assert "seed" in full, f"{name}: seeds must be explicit"
        assert mod.config(seed=7)["seed"] == 7
        with pytest.raises(OptionError):
            mod.config(no_such_setting=1)
        text = X.build_parser(mod)[0].format_help()
        assert "(default: None)" not in text and "default: " not in text, name
    assert not X.experiments()["fig2_macko"].NEEDS_GPU and not X.experiments()["appc_macko"].NEEDS_GPU


def test_ec_over_macko_pairs_rows_of_one_run():
    mod = X.load_experiment("spmm_llm")
    cell = dict(shape=[8, 8], sparsity=0.7, k=8, check_passed=True)
    rows = [dict(cell, method="macko", median_us=2.0, part=0), dict(cell, method="ec_csr", median_us=3.0, part=0),
            dict(cell, method="ec_csr", median_us=5.0, part=0, sparsity=0.9, check_passed=False),
            dict(cell, method="macko", median_us=2.0, part=0, sparsity=0.9),
            dict(cell, method="macko", median_us=2.0, part=0, k=32),
            dict(cell, method="ec_csr", median_us=1.0, part=1, k=32)]
    assert mod.ec_over_macko(dict(rows=rows)) == [dict(shape=[8, 8], sparsity=0.7, k=8, ratio=1.5)]


@pytest.mark.parametrize("name,flag,text", [("spmm_llm", "ks", "8,32"), ("spmm_macko", "ks", "8,64"),
                                            ("fig14_gs", "ns", "8,32"), ("search_gs", "ns", "8"),
                                            ("e2e_decode", "batches", "1,8")])
def test_count_flags_stay_integers(name, flag, text):
    """A count given on the command line has config()'s type: a part measured with ``--ks 8``
    merges with saved runs of ``ks=[8, ...]`` instead of adding an 8.0 beside the 8."""
    mod = X.load_experiment(name)
    parser, dests = X.build_parser(mod)
    got = getattr(parser.parse_args([f"--{flag}", text]), flag)
    assert got == [int(v) for v in text.split(",")]
    assert all(type(v) is int for v in got) and all(type(v) is int for v in mod.config()[flag])


def test_flags_override_config():
    exp = X.load_experiment("fig7_macko")
    parser, dests = X.build_parser(exp)
    args = parser.parse_args(["--shape", "12288", "12288", "--quick"])
    cfg = exp.config(args.quick, **{d: getattr(args, d) for d in dests if getattr(args, d) is not None})
    assert cfg["shape"] == [12288, 12288] and X.results_name(exp, cfg) == "fig7_macko_12288x12288"
    assert X.results_name(exp, exp.config()) == "fig7_macko"
    assert "--shape ROWS COLS matrix shape (default 4096 11008)" in " ".join(parser.format_help().split())
    base = X.load_experiment("baseline_csr")
    parser, dests = X.build_parser(base)
    a = parser.parse_args(["--shapes", "64x128,128x64", "--sparsities", "0.5,0.9", "--csr-max-nnz", "0"])
    cfg = base.config(**{d: getattr(a, d) for d in dests if getattr(a, d) is not None})
    assert cfg["shapes"] == [[64, 128], [128, 64]] and cfg["sparsities"] == [0.5, 0.9]
    assert cfg["csr_max_nnz"] is None and cfg["dtypes"] == ["float16", "float32"]
    assert base.config(quick=True)["reps"] == 20 and base.config()["reps"] == 60
    help_text = parser.format_help()
    assert help_text.count("(default 60; with --quick 20)") == 1 and "default: None" not in help_text
    fig1 = X.load_experiment("fig1_macko")
    assert fig1.measure is exp.measure and fig1.config()["shape"] == [36864, 12288]


def test_every_split_key_has_its_flag():
    """An experiment measured in parts (``--merge``, ``--merge-parts``, a cluster's cells)
    takes a flag for each of its SPLIT_KEYS, so any part can be measured from the command
    line."""
    missing = {}
    for name, mod in sorted(X.experiments().items()):
        _, dests = X.build_parser(mod)
        gaps = [k for k in getattr(mod, "SPLIT_KEYS", ()) if k not in dests]
        if gaps:
            missing[name] = gaps
    assert not missing, missing


def _committed_results():
    out = []
    for name, mod in sorted(X.experiments().items()):
        for run in getattr(mod, "RUNS", [{}]):
            rname = X.results_name(mod, mod.config(**run))
            out += [(name, rname, dev) for dev in X.result_devices(rname)]
    return out


@pytest.mark.parametrize("name,rname,device", _committed_results())
def test_plot_committed_results(name, rname, device, tmp_path):
    """Every committed results file plots (no GPU needed) and tells its report."""
    mod = X.load_experiment(name)
    res = X.load_results(rname, device)
    out = mod.plot(res, str(tmp_path / f"{rname}.png"))
    assert [os.path.basename(p) for p in out] == [f"{rname}.png", f"{rname}.pdf"]
    with open(out[0], "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    with open(out[1], "rb") as f:
        pdf = f.read()
    assert pdf.startswith(b"%PDF") and b"CreationDate" not in pdf


# how each committed run differs from config() with no overrides
_MPNET = ["mpnet_L00_attn_q", "mpnet_L00_ffn_down", "mpnet_L00_ffn_up", "mpnet_L11_attn_q"]
_RUN_FLAGS = {name: dict(weights=_MPNET)     # found by measure()
              for name in ("fig2_macko", "fig5_ec", "fig9_ec", "table2_ec", "census_ec")}
_OLDER_KEYS = {"baseline_csr": {"tol"}}    # tolerances now live in spmvlab.check
# config keys added after a committed run, at a value that does not change what that run did
# (public_sparsities: the runs before it ran the public benchmark at every sparsity, which
# their rows show)
_NEWER_KEYS = {"spmm_macko": {"fp32_methods", "fp32_ks"}, "fig4_macko": {"budget_s"},
               "fig7_macko": {"public_macko", "public_sparsities"},
               "fig1_macko": {"public_macko", "public_sparsities"},
               "search_gs": {"anchors"},          # the guarded search's anchors, after its run
               "e2e_decode": {"lean"}}            # how models are held, after its run


def _run_flags(name, device):
    """The flags of the committed run of ``name`` on ``device`` (older runs kept as records)."""
    if (name, device) == ("tune_macko", "h100"):
        return dict(methods=X.load_experiment(name).H100_METHODS)
    if (name, device) == ("fig4_macko", "h100"):
        return dict(sparsities=[0.5], methods=X.load_experiment(name).H100_METHODS)
    if (name, device) == ("fig4_macko", "h200"):         # measured in parts (every sparsity)
        return dict(budget_s=205.0)                      # the last part's budget
    if (name, device) == ("fig1_macko", "h100"):
        return dict(sparsities=X.load_experiment(name).H100_SPARSITIES)
    if (name, device) in (("fig6_dtans", "cpu"), ("table1_dtans", "cpu")):
        return dict(synthetic=D.COMMITTED_FAMILIES)
    if (name, device) == ("e2e_decode", "h200"):         # measured in parts on GPU hosts
        return dict(models=["llama2-7b", "llama2-13b", "llama3.1-8b"],
                    formats=["macko", "ec_csr", "csr", "csr_dtans", "coo", "split24",
                             "generalsparse"])
    if name in ("fig7_dtans", "fig8_dtans", "table2_dtans", "table3_dtans") and device == "h200":
        return dict(variants=["csr_dtans[first_delta=diagonal]"])    # before rows_per_lane=auto
    if (name, device) == ("spmm_macko", "h200"):   # before spmm_mma_double left the code
        return dict(methods=["cublas", "macko", "macko[spmm_smem_threads=512]",
                             "macko[spmm_smem=False]", "macko[spmm_mma=True]",
                             "macko[spmm_mma=True,spmm_mma_window=512]",
                             "macko[spmm_mma=True,spmm_mma_double=True,spmm_mma_window=512]",
                             "csr_vector"])
    if (name, device) == ("fig4_gs", "h200"):             # before generalsparse_fixed existed
        return dict(methods=["generalsparse", "csr_vector", "generalsparse_best"])
    return _RUN_FLAGS.get(name, {})


@pytest.mark.parametrize("name,rname,device", _committed_results())
def test_config_reproduces_the_committed_runs(name, rname, device):
    """config() (plus the flags those runs were given) is the saved config: re-measuring
    repeats the committed experiment. The module's UNCOMPARED_KEYS change no row (a file
    joined from parts keeps the last part's), so they are left out on both sides."""
    mod = X.load_experiment(name)
    run = next(r for r in getattr(mod, "RUNS", [{}]) if X.results_name(mod, mod.config(**r)) == rname)
    cfg = R._jsonable(mod.config(**run, **_run_flags(name, device)))
    saved = X.load_results(rname, device)["config"]
    free = set(getattr(mod, "UNCOMPARED_KEYS", ()))
    cfg = {k: v for k, v in cfg.items()
           if k not in free and (k in saved or k not in _NEWER_KEYS.get(name, set()))}
    assert cfg == {k: v for k, v in saved.items()
                   if k not in free and k not in _OLDER_KEYS.get(name, set())}


def test_cpu_measure_repeats_the_committed_rows():
    """appc_macko measures on the CPU: measure(config()) gives the committed rows exactly."""
    mod = X.load_experiment("appc_macko")
    assert R._jsonable(mod.measure(mod.config())["rows"]) == X.load_results("appc_macko", "cpu")["rows"]



def test_every_experiment_has_committed_results():
    """GPU experiments on a GPU's folder (h100, h200, ...), CPU ones in cpu/."""
    got = {}
    for n, _, d in _committed_results():
        got.setdefault(n, set()).add(d)
    for name, mod in X.experiments().items():
        devices = got.get(name, set())
        if getattr(mod, "AWAITING_FIRST_GPU_RUN", False):
            # written without a GPU; the flag goes when its first results are committed
            assert mod.NEEDS_GPU and not devices, (name, "has results: remove AWAITING_FIRST_GPU_RUN")
            continue
        assert (devices - {"cpu"}) if mod.NEEDS_GPU else ("cpu" in devices), (name, devices)


def test_replotting_is_byte_identical(tmp_path, capsys):
    mod = X.load_experiment("appc_macko")
    a = X.replot(mod, mod.config(), fig=str(tmp_path / "a.png"), device="cpu")
    first = [(tmp_path / f).read_bytes() for f in ("a.png", "a.pdf")]
    assert a == 0 and X.replot(mod, mod.config(), fig=str(tmp_path / "a.png"), device="cpu") == 0
    assert [(tmp_path / f).read_bytes() for f in ("a.png", "a.pdf")] == first
    line = capsys.readouterr().out.strip().splitlines()[0]
    assert line.startswith("plotted results/cpu/appc_macko.json (CPU, 2026-") and "a.png" in line


def _fake_results(two_dtypes=True):
    from itertools import product
    rows = []
    names = ["csr_scalar", "csr_vector", "cusparse", "cublas", "numba_dense"]
    for shape, s, d, m in product([[64, 128], [128, 64]], [0.5, 0.9], ["float16", "float32"] if two_dtypes else ["float32"], names):
        t = 50.0 * (1 - s if "csr" in m else 0.5) + (5 if d == "float32" else 0) + 1
        rows.append(dict(shape=shape, sparsity=s, dtype=d, method=m, median_us=t,
                         p10_us=t, p90_us=t, tb_s=1.0, check_passed=(m != "numba_dense" or s != 0.9)))
    rows.append(dict(shape=[64, 128], sparsity=0.5, dtype="float32", method="cusparse", error="boom"))
    return {"meta": {"date_utc": "2026-01-01T00:00:00+00:00", "device": {"name": "Fake GPU"}},
            "config": {"reps": 3}, "rows": rows, "copy_bandwidth": {"tb_s": 3.0}}


def test_plot_from_fabricated_results(tmp_path, capsys):
    exp = X.load_experiment("baseline_csr")
    res = _fake_results()
    methods.add_speedups(res["rows"], keys=("sparsity",))
    out = exp.plot(res, str(tmp_path / "fig.png"))
    assert [os.path.basename(p) for p in out] == ["fig.png", "fig.pdf"]
    for p in out:
        assert os.path.getsize(p) > 1000
    exp.report(res)
    text = capsys.readouterr().out
    assert "csr_vector" in text and "µs / TB/s" in text and "error" in text


def test_experiment_without_gpu_plots_saved_results(tmp_path, monkeypatch, capsys):
    exp = X.load_experiment("baseline_csr")
    monkeypatch.setattr(X, "gpu_available", lambda: False)
    monkeypatch.setattr(exp, "measure", lambda cfg: pytest.fail("measure() must not run without a GPU"))
    res = _fake_results(two_dtypes=False)
    out = tmp_path / "r.json"
    X.save_results(str(out), res["rows"], res["config"], meta=res["meta"])
    assert X.main(exp, ["--out", str(out), "--fig", str(tmp_path / "f.png")]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 2 and lines[0].startswith("plotted ")
    assert "Fake GPU" in lines[0] and "2026-01-01" in lines[0] and lines[0].endswith("f.pdf")
    assert lines[1] == ("to measure again: python experiments/baseline_csr.py --measure "
                        "(on a machine with a CUDA GPU)")
    assert X.main(exp, ["--measure", "--out", str(out)]) == 2           # asked, but no GPU
    assert "measuring needs a CUDA GPU" in capsys.readouterr().err
    assert (tmp_path / "f.png").exists() and (tmp_path / "f.pdf").exists()
    assert X.main(exp, ["--out", str(tmp_path / "none.json")]) == 1
    assert "no saved results" in capsys.readouterr().err
    # without --out: every device folder with results, one line each, figures beside them
    monkeypatch.setattr(X.R, "FIGURES", str(tmp_path / "figures"))
    assert X.main(exp, []) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[:-1] == [f"plotted results/{d}/baseline_csr.json ({gpu}, "
                          f"{day}) -> {tmp_path}/figures/{d}/baseline_csr.png, "
                          f"{tmp_path}/figures/{d}/baseline_csr.pdf"
                          for d, gpu, day in [("h100", "NVIDIA H100 80GB HBM3", "2026-11-22"),
                                              ("h200", "NVIDIA H200", "2026-11-26")]]
    assert X.main(exp, ["--device", "h200", "--plot-only"]) == 0
    assert capsys.readouterr().out.strip().splitlines() == lines[1:2]
    assert X.main(exp, ["--device", "a100"]) == 1


def test_format_table():
    t = P.format_table([{"a": 1.23456, "b": "x"}, {"a": None, "b": "long"}], [("a", "A", ".2f"), ("b", "B", "")])
    lines = t.splitlines()
    assert lines[0].split() == ["A", "B"] and "1.23" in lines[2] and "-" in lines[3]


def _split_module():
    """A CPU experiment over shapes x sparsities that may be measured in parts."""
    mod = types.ModuleType("split_exp")
    mod.__doc__ = "split experiment"
    mod.NAME, mod.NEEDS_GPU, mod.SPLIT_KEYS = "split_exp", False, ("shapes", "sparsities")

    def config(quick=False, **overrides):
        return X.make_config("split_exp", dict(shapes=[[4, 8], [8, 4]], sparsities=[0.5, 0.7, 0.9],
                                               reps=3, seed=0), dict(reps=1), quick, overrides)

    def measure(cfg):
        return dict(rows=[dict(method=m, shape=sh, sparsity=s, median_us=float(len(cfg["sparsities"])))
                          for sh in cfg["shapes"] for s in cfg["sparsities"] for m in ("a", "b")])

    def plot(results, fig_path):
        plt = P.pyplot()
        fig, ax = plt.subplots()
        ax.plot([r["sparsity"] for r in results["rows"]], [r["median_us"] for r in results["rows"]])
        return P.savefig(fig, fig_path)

    def cli(p):
        p.add_argument("--sparsities", type=X.floats)
        p.add_argument("--shapes", type=X.shapes)
        p.add_argument("--reps", type=int)

    mod.config, mod.measure, mod.plot, mod.cli = config, measure, plot, cli
    return mod


def test_fig4_time_budget_and_not_measured(monkeypatch):
    """fig4: no (shape, sparsity) is begun after budget_s; what was measured is returned and
    not_measured() names the rest (from the rows, so it stays right across merged parts)."""
    exp = X.load_experiment("fig4_macko")
    seen = []
    monkeypatch.setattr(methods, "measure_problem", lambda p, names, **kw: seen.append(p.shape) or [
        dict(method=n, shape=list(p.shape), sparsity=kw["extra"]["sparsity"]) for n in names])
    monkeypatch.setattr(X, "problems", lambda jobs, **kw: ((j, types.SimpleNamespace(
        shape=tuple(j["shape"]))) for j in jobs))
    cfg = exp.config(shapes=[[4, 8], [8, 4]], sparsities=[0.5, 0.9], budget_s=0.0)
    res = dict(config=cfg, **exp.measure(cfg))
    assert seen == [(4, 8)] and {r["method"] for r in res["rows"]} == set(cfg["methods"])
    assert exp.not_measured(res) == [dict(shape=[8, 4], sparsity=0.5), dict(shape=[4, 8], sparsity=0.9),
                                     dict(shape=[8, 4], sparsity=0.9)]
    seen.clear()
    cfg = exp.config(shapes=[[4, 8], [8, 4]], sparsities=[0.5, 0.9])
    res = dict(config=cfg, **exp.measure(cfg))
    assert len(seen) == 4 and exp.not_measured(res) == []


def test_merge_measures_a_sweep_in_parts(tmp_path):
    mod = _split_module()
    out, fig = str(tmp_path / "r.json"), str(tmp_path / "f.png")
    assert X.main(mod, ["--sparsities", "0.9,0.5", "--out", out, "--fig", fig]) == 0
    assert X.main(mod, ["--sparsities", "0.7,0.9", "--shapes", "4x8", "--merge", "--out", out,
                        "--fig", fig]) == 0
    saved = X.load_results(out)
    # united in config() order; the re-measured (4x8, 0.9) rows replaced, the others kept
    assert saved["config"]["sparsities"] == [0.5, 0.7, 0.9]
    assert saved["config"]["shapes"] == [[4, 8], [8, 4]] and len(saved["rows"]) == 2 * 2 * 3 - 2 * 1
    got = {(tuple(r["shape"]), r["sparsity"], r["method"]): (r["part"], r["median_us"]) for r in saved["rows"]}
    assert got[((4, 8), 0.9, "a")] == (1, 2.0) and got[((8, 4), 0.9, "a")] == (0, 2.0)
    assert got[((4, 8), 0.7, "b")] == (1, 2.0) and ((8, 4), 0.7, "a") not in got
    assert len(saved["parts"]) == 2 and saved["parts"][1]["config"]["sparsities"] == [0.7, 0.9]
    assert saved["parts"][0]["git_hash"] == saved["meta"]["git_hash"]
    # other settings must match the saved run's
    with pytest.raises(OptionError, match="--merge.*different reps"):
        X.main(mod, ["--reps", "9", "--merge", "--out", out, "--fig", fig])
    mod.UNCOMPARED_KEYS = ("reps",)        # ... unless the module says they change no row
    assert X.main(mod, ["--reps", "9", "--shapes", "8x4", "--merge", "--out", out, "--fig", fig]) == 0
    assert X.load_results(out)["config"]["reps"] == 9
    with pytest.raises(OptionError, match="has none"):
        X.main(_demo_module([]), ["--merge", "--out", out, "--fig", fig])


def test_a_remeasured_row_replaces_the_saved_one_whatever_code_it_picked():
    """A GeneralSparse row's ``batch`` is the code option the method picked: a re-measured
    cell replaces the saved row even when the pick changed; e2e_decode's batch sizes stay
    part of what a row measured."""
    mod = _split_module()
    cfg = mod.config()
    gs = dict(method="generalsparse", shape=[4, 8], sparsity=0.9, k=8)
    rows, _, _ = X.merge_results(mod, dict(config=cfg, rows=[dict(gs, batch=False, median_us=9.0)]),
                                 [dict(gs, batch=True, median_us=1.0)], cfg, {})
    assert [(r["batch"], r["median_us"]) for r in rows] == [(True, 1.0)]
    rows, _, _ = X.merge_results(mod, dict(config=cfg, rows=[dict(gs, median_us=9.0)]),  # not recorded
                                 [dict(gs, batch=True, median_us=1.0)], cfg, {})
    assert [(r["batch"], r["median_us"]) for r in rows] == [(True, 1.0)]
    e2e = dict(method="macko", model="m", new_tokens=8, graph=True)
    rows, _, _ = X.merge_results(mod, dict(config=cfg, rows=[dict(e2e, batch=1, tokens_per_s=5.0)]),
                                 [dict(e2e, batch=8, tokens_per_s=20.0)], cfg, {})
    assert sorted(r["batch"] for r in rows) == [1, 8]


def test_merge_parts_joins_files_measured_apart(tmp_path):
    """--merge-parts: parts measured apart (one sparsity each) join into the rows and config
    of the same parts measured one after the other with --merge, nothing measured."""
    mod = _split_module()
    p1, p2, fig = str(tmp_path / "a.json"), str(tmp_path / "b.json"), str(tmp_path / "f.png")
    assert X.main(mod, ["--sparsities", "0.5", "--out", p1, "--fig", fig]) == 0
    assert X.main(mod, ["--sparsities", "0.9", "--out", p2, "--fig", fig]) == 0
    out = str(tmp_path / "joined.json")
    assert X.main(mod, ["--merge-parts", p1, p2, "--out", out]) == 0
    saved = X.load_results(out)
    assert saved["config"]["sparsities"] == [0.5, 0.9] and len(saved["parts"]) == 2
    assert sorted((r["sparsity"], r["part"]) for r in saved["rows"]) == \
        sorted((r["sparsity"], 0 if r["sparsity"] == 0.5 else 1) for r in saved["rows"])
    assert {r["sparsity"] for r in saved["rows"]} == {0.5, 0.9} and "partial" not in saved
    # the parts' measuring times add up (unknown when one part has none)
    for path, took in ((p1, 3.0), (p2, 4.5)):
        res = X.load_results(path)
        X.save_results(path, res["rows"], res["config"], extra=dict(measure_s=took),
                       meta=res["meta"])
    assert X.main(mod, ["--merge-parts", p1, p2, "--out", out]) == 0
    assert X.load_results(out)["measure_s"] == 7.5
    res = X.load_results(p1)
    X.save_results(p1, res["rows"], res["config"], meta=res["meta"])
    assert X.main(mod, ["--merge-parts", p1, p2, "--out", out]) == 0
    assert "measure_s" not in X.load_results(out)
    # a part stopped before its end leaves the joined file partial
    X.save_results(p1, X.load_results(p1)["rows"][:1], X.load_results(p1)["config"],
                   extra=dict(partial=True))
    assert X.main(mod, ["--merge-parts", p1, p2, "--out", out]) == 0
    assert X.load_results(out)["partial"] is True
    X.save_results(p2, X.load_results(p2)["rows"], dict(X.load_results(p2)["config"], reps=9))
    with pytest.raises(OptionError, match="different reps"):
        X.main(mod, ["--merge-parts", p1, p2, "--out", out])


def test_checkpoint_keeps_what_a_stopped_run_measured(tmp_path):
    """A measure that saves partial results (X.checkpoint) and is then stopped leaves them in
    the results file marked partial; a finished run replaces them; with --merge the partial
    rows join the file as it was when the run began."""
    mod = _split_module()
    out, fig = str(tmp_path / "r.json"), str(tmp_path / "f.png")
    full = mod.measure

    def stopped(cfg):
        rows = full(cfg)["rows"]
        X.checkpoint(dict(rows=rows[:2], skipped=["x"]))
        raise KeyboardInterrupt                  # what a time limit does mid-run

    mod.measure = stopped
    with pytest.raises(KeyboardInterrupt):
        X.main(mod, ["--sparsities", "0.5", "--out", out, "--fig", fig])
    saved = X.load_results(out)
    assert saved["partial"] is True and len(saved["rows"]) == 2 and saved["skipped"] == ["x"]
    mod.measure = full
    assert X.main(mod, ["--sparsities", "0.5", "--out", out, "--fig", fig]) == 0   # saved: plotted
    assert X.load_results(out)["partial"] is True
    assert X.main(mod, ["--measure", "--sparsities", "0.5", "--out", out, "--fig", fig]) == 0
    saved = X.load_results(out)
    assert "partial" not in saved and len(saved["rows"]) == 4
    mod.measure = stopped
    with pytest.raises(KeyboardInterrupt):
        X.main(mod, ["--sparsities", "0.9", "--merge", "--out", out, "--fig", fig])
    saved = X.load_results(out)
    assert saved["partial"] is True and len(saved["rows"]) == 4 + 2
    assert sorted({r["sparsity"] for r in saved["rows"]}) == [0.5, 0.9]
    # each part keeps what its measure returned besides rows (the top level: the latest's)
    assert saved["parts"][1]["extra"] == {"skipped": ["x"]} and "extra" not in saved["parts"][0]
    assert saved["skipped"] == ["x"]
    assert X.checkpoint(dict(rows=[])) is None  # outside a run: nothing is written


def test_sigterm_stops_a_run_and_keeps_its_checkpoint(tmp_path):
    """SIGTERM (what `timeout` sends) while a run measures raises experiment.Stopped in the
    measure, which saves what it has on the way out; main returns 128 + 15 and the file is
    partial; the handler is gone after the run; --plot-only plots the partial file."""
    import signal
    mod = _split_module()
    out, fig = str(tmp_path / "r.json"), str(tmp_path / "f.png")
    full = mod.measure
    before = signal.getsignal(signal.SIGTERM)

    def killed(cfg):
        rows = full(cfg)["rows"]
        X.checkpoint(dict(rows=rows[:1]))
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            for _ in range(200):                   # the handler raises within a bytecode or two
                time.sleep(0.01)
        except X.Stopped:
            X.checkpoint(dict(rows=rows[:3], stopped="signal 15"))
            raise
        raise AssertionError("SIGTERM did not stop the measure")

    mod.measure = killed
    assert X.main(mod, ["--sparsities", "0.5,0.7", "--out", out, "--fig", fig]) == 128 + signal.SIGTERM
    saved = X.load_results(out)
    assert saved["partial"] is True and len(saved["rows"]) == 3 and saved["stopped"] == "signal 15"
    assert signal.getsignal(signal.SIGTERM) == before
    assert X.main(mod, ["--plot-only", "--out", out, "--fig", fig]) == 0
    assert os.path.isfile(fig)


def test_e2e_plot_has_a_row_of_panels_per_model(monkeypatch, tmp_path):
    """e2e_decode's figure: one panel per batch, a row per model, each model's lines from its
    own rows (two models at one sparsity must not share a point); its legend names every
    format, also one that only the first model's rows hold."""
    from experiments import e2e_decode as E
    rows = []
    for model, tps in [("llama2-7b", 150.0), ("llama2-13b", 90.0)]:
        for B in (1, 8):
            rows.append(dict(model=model, sparsity=0.7, method="dense", batch=B, new_tokens=4,
                             graph=True, tokens_per_s=100.0 * B, ms_per_step=1.0, weights_bytes=10))
            rows.append(dict(model=model, sparsity=0.7, method="macko", batch=B, new_tokens=4,
                             graph=True, tokens_per_s=tps * B, ms_per_step=1.0, weights_bytes=5,
                             dense_tokens_per_s=100.0 * B))
            if model == "llama2-7b":
                rows.append(dict(rows[-1], method="csr", tokens_per_s=50.0 * B))
    results = dict(rows=rows, config=dict(models=["llama2-7b", "llama2-13b"], sparsities=[0.7],
                                          formats=["macko", "csr"]),
                   meta=dict(device=dict(name="test GPU")))
    seen = {}

    def keep(fig, path, tight=True):
        seen["axes"], seen["legends"] = fig.axes, fig.legends
        return [path]
    monkeypatch.setattr(P, "savefig", keep)
    E.plot(results, str(tmp_path / "f.png"))
    panels = {ax.get_title(): [tuple(line.get_ydata()) for line in ax.get_lines()
                               if line.get_label() != "_nolegend_" and len(line.get_ydata()) == 1]
              for ax in seen["axes"]}
    assert list(panels) == ["llama2-7b, batch 1", "llama2-7b, batch 8",
                            "llama2-13b, batch 1", "llama2-13b, batch 8"]
    assert panels["llama2-7b, batch 8"] == [(0.5,), (1.5,)]
    assert panels["llama2-13b, batch 1"] == [(0.9,)]
    legend, = seen["legends"]
    assert sorted(t.get_text() for t in legend.get_texts()) == sorted(
        P.line_style(m)["label"] for m in ("csr", "macko"))


def test_e2e_prediction_is_for_the_isolated_layers_model_only():
    """e2e_decode.predicted puts table1_macko's isolated Llama-2-7B layer times beside the
    measured MACKO speedup at batch 1: never beside another model's (other shapes)."""
    from experiments import e2e_decode as E
    rows = []
    for model in ("llama2-7b", "llama2-13b"):
        rows.append(dict(model=model, sparsity=0.7, method="dense", batch=1, new_tokens=8,
                         graph=True, tokens_per_s=100.0, ms_per_step=10.0, nonlinear_ms=1.0,
                         weights_bytes=10))
        rows.append(dict(rows[-1], method="macko", tokens_per_s=140.0, ms_per_step=7.0,
                         weights_bytes=4, dense_tokens_per_s=100.0))
    results = dict(rows=rows, config=dict(models=["llama2-7b", "llama2-13b"], sparsities=[0.7],
                                          formats=["macko"]),
                   meta=dict(device=dict(name="NVIDIA H200")))
    got = E.predicted(results)
    assert [(p["model"], p["sparsity"]) for p in got] == [("llama2-7b", "0.7")]
    assert got[0]["speedup"] == pytest.approx(1.4) and got[0]["nonlinear_ms"] == 1.0


def test_e2e_plot_takes_the_newest_part_of_the_file(monkeypatch, tmp_path):
    """A point of e2e_decode's figure comes from the newest part that measured it (its
    longest generation there), not from an older part's longer run of older code."""
    from experiments import e2e_decode as E
    rows = []
    for part, n, tps in [(0, 256, 120.0), (0, 128, 119.0), (3, 128, 170.0), (3, 64, 160.0)]:
        rows.append(dict(model="m", sparsity=0.7, method="macko", batch=1, new_tokens=n,
                         graph=True, tokens_per_s=tps, ms_per_step=1.0, weights_bytes=5,
                         dense_tokens_per_s=100.0, part=part))
    results = dict(rows=rows, config=dict(models=["m"], sparsities=[0.7], formats=["macko"]),
                   meta=dict(device=dict(name="test GPU")))
    seen = {}

    def keep(fig, path, tight=True):
        seen["fig"] = fig
        return [path]
    monkeypatch.setattr(P, "savefig", keep)
    E.plot(results, str(tmp_path / "f.png"))
    ax, = seen["fig"].axes
    ys = [tuple(line.get_ydata()) for line in ax.get_lines() if line.get_label() != "_nolegend_"
          and len(line.get_ydata()) == 1]
    assert ys == [(1.7,)]
    assert "128 generated tokens" in seen["fig"]._suptitle.get_text()


def test_e2e_breakdown_splits_a_step_by_kernel_kind(capsys):
    """e2e_decode.breakdown: kernels of two steps (microseconds) summed by kind and per step,
    overlapping kernels counted once in the busy time, the rest of the span idle; the
    names name the kind (the memory-efficient attention is a CUTLASS kernel: attention, not
    a GEMM); the report prints it once per (model, sparsity, method, batch)."""
    from experiments import e2e_decode as E
    step = [(0, 10, "_ZN6cudapy7spmvlab7kernels5macko4spmv"),
            (12, 20, "fmha_cutlassF_f16_aligned_64x64_rf_sm80(PyTorchMemEffAttention::Params)"),
            (15, 25, "triton_per_fused__to_copy_add_mean_mul_rsqrt_0"),
            (30, 40, "void gemv2T_kernel_val<int, int, __half, __half, float, 128>"),
            (41, 42, "void at::native::index_elementwise_kernel<128, 4>")]
    ks = step + [(a + 100, b + 100, n) for a, b, n in step]
    b = E.breakdown(ks, steps=2)
    assert b["ms"] == {"ours": 0.010, "attention": 0.008, "glue": 0.010, "gemm": 0.010,
                       "other": 0.001}
    # busy: 10 + 13 (12-25, two overlapping kernels) + 10 + 1 = 34 of each step's 42, and
    # the 58 between the two steps: (8 + 8 + 58) / 2 per step
    assert b["idle_ms"] == pytest.approx(0.037) and b["span_ms"] == pytest.approx(0.071)
    assert b["kernels"] == 5 and b["top"][0]["launches"] == 1.0
    assert [t["kind"] for t in b["top"]] == ["ours", "glue", "gemm", "attention", "other"]
    assert E.breakdown([], 1) == {}
    row = dict(model="m", sparsity=0.7, method="macko", batch=1, new_tokens=4, graph=True,
               tokens_per_s=1.0, ms_per_step=1.0, weights_bytes=1, breakdown=b)
    results = dict(rows=[row, dict(row, new_tokens=8)],
                   config=dict(models=["m"], sparsities=[0.7], formats=["macko"]), meta={})
    assert len(E.breakdown_table(results)) == 1
    E.report(results)
    out = capsys.readouterr().out
    assert "where a captured step's GPU time goes" in out and "attention" in out
