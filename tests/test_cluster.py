"""spmvlab.cluster on a LocalCluster of two CPU worker processes (the simulator's machine):
a sweep of a real experiment (dtans_llm: bytes per format, deterministic) gives exactly the
serial run's rows in its order; a worker that dies is replaced and its cell run once more,
a second death or an exception is an error row and the sweep goes on; a stopped sweep
resumes without running its finished cells again."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from reference._common import OptionError
from spmvlab import cluster
from spmvlab import experiment as X
from spmvlab import results as R
from spmvlab._cuda import SIMULATOR

distributed = pytest.importorskip("distributed")

LAYER = "mpnet_L00_attn_q"
ADDED = ("gpu", "worker", "cell_index")


@pytest.fixture(scope="module")
def client():
    c = cluster.local_client(gpu=False, n_workers=2)
    yield c
    started = c.cluster
    c.close()
    started.close()


@pytest.fixture(scope="module")
def llm():
    mod = X.load_experiment("dtans_llm")
    from spmvlab import datasets
    try:
        datasets.weights(LAYER)
    except Exception as exc:                 # noqa: BLE001
        pytest.skip(f"no weights data ({exc})")
    return mod


def _cfg(mod, sparsities=(0.5, 0.9)):
    return mod.config(weights=[LAYER], sparsities=list(sparsities), dtypes=["float16"])


def _own(rows):
    return [{k: v for k, v in r.items() if k not in ADDED} for r in rows]


def test_grid_and_faults_spec():
    cfg = dict(a=[1, 2], b=["x", "y", "z"], c=5)
    g = cluster.grid(cfg, ("a", "b"))
    assert [(c["a"], c["b"]) for c in g] == [([1], ["x"]), ([1], ["y"]), ([1], ["z"]),
                                             ([2], ["x"]), ([2], ["y"]), ([2], ["z"])]
    assert all(c["c"] == 5 for c in g)
    g = cluster.grid(cfg, ("a", "b"), {"b": 2})
    assert [(c["a"], c["b"]) for c in g] == [([1], ["x", "y"]), ([1], ["z"]),
                                             ([2], ["x", "y"]), ([2], ["z"])]
    mod = X.load_experiment("fig4_macko")
    cs = cluster.cells(mod, mod.config(sparsities=[0.5, 0.9]))
    shapes = mod.config()["shapes"]
    assert len(cs) == 2 * -(-len(shapes) // mod.CELL_CHUNKS["shapes"])
    assert [sh for c in cs[:len(cs) // 2] for sh in c["shapes"]] == shapes
    assert cluster.cell_label(mod, cs[-1]) == {"sparsities": 0.9, "shapes": cs[-1]["shapes"]}
    # the costliest cells first: the chunk of the largest shapes, at each sparsity, leads
    cost = [sum(r * c for r, c in cell["shapes"]) for cell in cs]
    order = cluster.submission_order(mod, cs)
    assert sorted(order) == list(range(len(cs))) and order[:2] == [len(cs) // 2 - 1, len(cs) - 1]
    assert [cost[i] for i in order] == sorted(cost, reverse=True)
    one = X.load_experiment("fig7_ec")
    assert cluster.cell_cost(one, {"shapes": [[8192, 28672]]}) == 8192 * 28672
    assert cluster.submission_order(X.load_experiment("dtans_llm"),
                                    [{"weights": ["b"]}, {"weights": ["a"]}]) == [0, 1]
    with pytest.raises(OptionError):
        cluster.inject_fault("explode:1", 1)
    with pytest.raises(OptionError):
        cluster.inject_fault("exit-once:1", 1)          # needs its mark's path
    cluster.inject_fault("raise:2,exit:3", 1)           # not this cell: nothing happens
    with pytest.raises(RuntimeError):
        cluster.inject_fault("raise:2", 2)
    # the illegal-address kernel runs: the simulator checks bounds; on a GPU it poisons the
    # context of the process that runs it (a child here), with an error poisoned() knows
    if SIMULATOR:
        with pytest.raises(IndexError):
            cluster.inject_fault("illegal:4", 4)
    else:
        child = subprocess.run([sys.executable, "-c", "from spmvlab import cluster; "
                                "cluster.inject_fault('illegal:4', 4)"],
                               capture_output=True, text=True, timeout=300)
        assert child.returncode != 0 and cluster.poisoned(RuntimeError(child.stderr)), child.stderr
    assert cluster.poisoned(RuntimeError("CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access"))
    assert not cluster.poisoned(ValueError("shape mismatch"))
    # the H200's answer to the fault kernel's far write
    assert cluster.poisoned(RuntimeError("CUDA_ERROR_INVALID_ADDRESS_SPACE: 717"))


def test_a_cell_that_leaves_the_context_unusable_ends_its_process(monkeypatch):
    """Whatever the error's text, a cell after which the CUDA context fails its probe ends
    the worker process (a poisoned context would fail the worker's next cells); a context
    that passes keeps the process and the cell becomes an error record."""
    class Ended(Exception):
        pass

    def end(code):
        raise Ended(code)
    monkeypatch.setattr(cluster.os, "_exit", end)
    cell = {"weights": ["x"], "sparsities": [0.5], "dtypes": ["float16"]}
    monkeypatch.setattr(cluster, "context_usable", lambda: True)
    got = cluster.run_cell("dtans_llm", cell, 3, fault="raise:3")
    assert "fault injected" in got["error"] and got["index"] == 3
    monkeypatch.setattr(cluster, "context_usable", lambda: False)
    with pytest.raises(Ended):
        cluster.run_cell("dtans_llm", cell, 3, fault="raise:3")


def test_sweep_repeats_the_serial_rows(client, llm, tmp_path):
    cfg = _cfg(llm)
    out = str(tmp_path / "dtans_llm.json")
    paths = cluster.sweep(llm, cfg, client, out=out, fault="")
    assert paths == [out]
    got = R.load_results(out)
    serial = R._jsonable(llm.measure(cfg)["rows"])
    assert _own(got["rows"]) == serial and len(serial) == 2
    assert [r["sparsity"] for r in got["rows"]] == [0.5, 0.9]        # the serial loop's order
    from spmvlab._cuda import SIMULATOR
    assert all(r["worker"].startswith("tcp://") for r in got["rows"])
    assert all(r["gpu"] == {"simulator": True} if SIMULATOR else        # CPU workers on a GPU
               {"name", "index", "uuid"} <= set(r["gpu"]) for r in got["rows"])   # host share it
    assert got["config"] == R._jsonable(cfg) and not got.get("partial")
    assert got["cluster"]["cells_total"] == 2 and got["cluster"]["errors"] == 0
    assert [c["cell"]["sparsities"] for c in got["cells"]] == [0.5, 0.9]


def test_dead_workers_and_exceptions_cost_one_row_each(client, llm, tmp_path):
    cfg = _cfg(llm, (0.5, 0.7, 0.9))
    out = str(tmp_path / "faults.json")
    mark = tmp_path / "mark"
    # cell 0 ends its worker once (run again: a row), cell 1 every time (an error row after
    # one retry), cell 2 raises (an error row, no retry)
    cluster.sweep(llm, cfg, client, out=out, fault=f"exit-once:0:{mark},exit:1,raise:2")
    got = R.load_results(out)
    assert mark.exists()
    cells = {c["index"]: c for c in got["cells"]}
    assert cells[0]["error"] is None and cells[0]["restarts"] == 1
    assert "KilledWorker" in cells[1]["error"] and cells[1]["restarts"] == 2
    assert "fault injected" in cells[2]["error"] and cells[2]["restarts"] == 0
    assert [r["method"] if "method" in r else r["sparsity"] for r in got["rows"]] == [0.5, "error", "error"]
    assert got["rows"][1]["cell"] == {"weights": LAYER, "sparsities": 0.7, "dtypes": "float16"}
    assert got["cluster"]["errors"] == 2 and not got.get("partial")
    serial = R._jsonable(llm.measure(_cfg(llm, (0.5,)))["rows"])
    assert _own(got["rows"][:1]) == serial


def test_a_stopped_sweep_runs_only_its_missing_cells(client, llm, tmp_path, monkeypatch):
    """The resumed sweep runs the missing cell only; each cell keeps the commit of the run
    that measured it."""
    cfg = _cfg(llm)
    out = str(tmp_path / "resume.json")
    monkeypatch.setenv("SPMVLAB_GIT_HASH", "a" * 40)
    cluster.sweep(llm, cfg, client, out=out, fault="")
    whole = R.load_results(out)
    with open(out) as f:                     # as if stopped after its first cell
        doc = json.load(f)
    doc["rows"] = [r for r in doc["rows"] if r["cell_index"] == 0]
    # (a file written before cells named their run: the file's commit is cell 0's)
    doc["cells"] = [{k: v for k, v in c.items() if k != "run"} for c in doc["cells"]
                    if c["index"] == 0]
    doc["partial"] = True
    with open(out, "w") as f:
        json.dump(doc, f)
    # cell 0 would now end every worker it ran on: it must not run again
    monkeypatch.setenv("SPMVLAB_GIT_HASH", "b" * 40)
    said = []
    cluster.sweep(llm, cfg, client, out=out, fault="exit:0", log=said.append)
    assert said[0] == ("resuming: 1 of 2 cells finished before (at aaaaaaa, not this commit "
                       "bbbbbbb: remove the results file to measure them again), 1 to run")
    got = R.load_results(out)
    assert not got.get("partial") and got["cluster"]["resumed"] == 1 and got["cluster"]["errors"] == 0
    assert _own(got["rows"]) == _own(whole["rows"])
    assert [c["run"]["git_hash"] for c in got["cells"]] == ["a" * 40, "b" * 40]
    assert [r["git_hash"] for r in got["cluster"]["runs"]] == ["a" * 40, "b" * 40]


def test_experiment_flags():
    mod = X.load_experiment("dtans_llm")
    p, _ = X.build_parser(mod)
    a = p.parse_args(["--cluster", "local"])
    assert a.cluster == "local" and a.scheduler is None
    assert p.parse_args(["--scheduler", "tcp://10.0.0.1:8786"]).scheduler == "tcp://10.0.0.1:8786"
    with pytest.raises(SystemExit):
        p.parse_args(["--cluster", "local", "--scheduler", "tcp://h:1"])
    with pytest.raises(OptionError):
        X.main(mod, ["--cluster", "local", "--merge"])
    assert p.parse_args(["--cluster", "local", "--scaling", "4"]).scaling == 4
    with pytest.raises(OptionError):                    # the scaling is one host's
        X.main(mod, ["--scheduler", "tcp://h:1", "--scaling", "4"])
    with pytest.raises(OptionError):                    # not ignored without --cluster
        X.main(mod, ["--scaling", "4"])


def test_scaling_records_one_and_many_workers(llm, tmp_path):
    cfg = _cfg(llm)
    out = str(tmp_path / "dtans_llm.json")
    rec = cluster.scaling(llm, cfg, 2, gpu=False, out=out, log=lambda text: None)
    assert rec["gpus"] == 2 and rec["wall_s_1"] > 0 and rec["wall_s_n"] > 0
    assert rec["speedup"] == pytest.approx(rec["wall_s_1"] / rec["wall_s_n"], rel=0.01)
    many, one = R.load_results(out), R.load_results(str(tmp_path / "dtans_llm.1worker.json"))
    assert many["scaling"] == rec and "scaling" not in one
    assert _own(many["rows"]) == _own(one["rows"]) and len(one["rows"]) == 2
    assert len({r["worker"] for r in one["rows"]}) == 1
    assert rec["spread"] == {"rows": 0}            # byte counts: no times to compare
    # rows with times: many / one per row, against the one-worker rows' own spread
    t1 = dict(rows=[dict(method="m", shape=[1, 2], median_us=10.0, p10_us=9.0, p90_us=11.0),
                    dict(method="m", shape=[3, 4], median_us=20.0, p10_us=19.0, p90_us=22.0)])
    tn = dict(rows=[dict(method="m", shape=[3, 4], median_us=21.0),
                    dict(method="m", shape=[1, 2], median_us=10.0)])
    s = cluster._spread(t1, tn)
    assert s["rows"] == 2 and s["ratio_median"] == pytest.approx(1.025)
    assert s["one_worker_p90_over_p10"] == pytest.approx((11 / 9 + 22 / 19) / 2, rel=1e-3)


def test_scaling_refuses_more_gpus_than_the_host_shows(llm, monkeypatch):
    """--scaling 4 on a host of two GPUs stops before its one-GPU sweep, which would otherwise
    run for most of an hour before the four-worker cluster fails to start."""
    monkeypatch.setattr(cluster, "visible_gpus", lambda: 2)
    monkeypatch.setattr(cluster, "local_client", lambda **kw: pytest.fail("a cluster started"))
    with pytest.raises(OptionError, match="--scaling: expected at most 2"):
        cluster.scaling(llm, _cfg(llm), 4, gpu=True, log=lambda text: None)
    monkeypatch.undo()
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,2,3")
    assert cluster.visible_gpus() == (0 if SIMULATOR else 3)


def test_cells_of_an_experiment_with_its_own_cells(monkeypatch):
    """fig7_dtans: a cell per matrix in measure's order, measured alone; cells' extras merge
    as one run's (lists joined, dicts united, the rest the first cell's)."""
    mod = X.load_experiment("fig7_dtans")
    from experiments import _dtans as D
    cfg = mod.config(real=[], synthetic=["stencil5", "watts20"], log2_nnz=[10], large=[["banded17", 12]])
    cs = cluster.cells(mod, cfg)
    names = [n for n, *_ in D.matrices_gpu(cfg)]
    assert [c["cell_matrix"] for c in cs] == names == ["banded17_2^12", "stencil5_2^10", "watts20_2^10"]
    assert cluster.cell_label(mod, cs[1]) == {"cell_matrix": "stencil5_2^10"}
    seen = []
    monkeypatch.setattr(D, "measure_gpu", lambda c, desc, only=None: seen.append(only) or {"rows": []})
    mod.measure(cs[2])
    mod.measure(cfg)
    assert seen == [{"watts20_2^10": {}}, None]
    got = cluster._merged_extras([dict(done=["a"], matrix_seconds={"a": 1.0}, l2_bytes=5),
                                  dict(done=["b"], matrix_seconds={"b": 2.0}, l2_bytes=5)])
    assert got == dict(done=["a", "b"], matrix_seconds={"a": 1.0, "b": 2.0}, l2_bytes=5)


def test_a_resumed_sweep_adds_its_parts_and_scaling_from_files(client, llm, tmp_path):
    """The wall time of a sweep measured in parts adds up; ``python -m spmvlab.cluster
    scaling`` compares two finished sweeps' files."""
    cfg = _cfg(llm)
    one, many = str(tmp_path / "one.json"), str(tmp_path / "many.json")
    cluster.sweep(llm, cfg, client, out=one, fault="")
    with open(one) as f:
        doc = json.load(f)
    doc["rows"] = [r for r in doc["rows"] if r["cell_index"] == 0]
    doc["cells"] = [c for c in doc["cells"] if c["index"] == 0]
    doc["partial"], doc["cluster"]["wall_s"] = True, 1000.0      # a first part that ran long
    with open(one, "w") as f:
        json.dump(doc, f)
    with pytest.raises(OptionError):                    # not finished yet
        cluster.record_scaling(one, one)
    cluster.sweep(llm, cfg, client, out=one, fault="")
    assert R.load_results(one)["cluster"]["wall_s"] > 1000.0
    cluster.sweep(llm, cfg, client, out=many, fault="")
    assert cluster.main(["scaling", one, many]) == 0
    rec = R.load_results(many)["scaling"]
    assert rec["gpus"] == 2 and rec["wall_s_1"] > 1000.0 and rec["speedup"] > 1.0
    with pytest.raises(OptionError):                    # not the same sweep
        cluster.sweep(llm, _cfg(llm, (0.5,)), client, out=one, fault="")
        cluster.record_scaling(one, many)
