"""The EC-SpMV experiments' own code (experiments/*_ec.py, experiments/ec_common.py): shared
encodings equal the encoder's, sizes count every byte, the GPU experiments measure what they
say and plot what they measure (timings themselves are never asserted)."""
import os

import numpy as np
import pytest
import scipy.sparse as sp

from reference._common import OptionError
from spmvlab import datasets, methods
from spmvlab import experiment as X
from experiments import ec_common as EC
from spmvlab.encoders import ec_csr as E


def _same(a, b):
    return all(x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes()
               for (_, x), (_, y) in zip(a.arrays(), b.arrays())) and a.shape == b.shape


@pytest.fixture(scope="module")
def A():
    # dense enough that pairs share runs of 128+ columns: 2- and 4-row blocks get extracted
    return datasets.uniform((48, 1024), 0.3, dtype=np.float16, seed=3)


def test_shared_extraction_gives_the_encoders_bytes(A):
    variants = dict(EC.ABLATION, ec4=dict(delta_bits=4), small=dict(warp_size=8, vector_size=2, clip=256))
    times = {}
    got = EC.encode_variants(A, variants, times=times)
    assert set(times) == set(variants)
    for name, opts in variants.items():
        want = E.encode(A, dtype=np.float32, **opts)
        assert _same(got[name], want), name
    assert set(got["ec_index_only"].census()) == {1}
    assert max(got["ec_balanced"].census()) >= 2               # the extraction found blocks
    # the float16 matrix is the float32 one with its values cast (values exact in float16)
    assert _same(EC.with_values(got["ec_balanced"], np.float16), E.encode(A, dtype=np.float16))


def test_encoded_method_refuses_a_matrix_of_another_dtype(A):
    M32 = E.encode(A, dtype=np.float32)
    spec = methods.format_method("ec_csr", "pre", encoded=lambda p: M32)
    p = methods.Problem.make(A, np.float16)
    with pytest.raises(OptionError, match="encoded"):
        methods.build(spec, p)


def test_encoded_method_runs_the_given_matrix():
    B = datasets.uniform((8, 256), 0.5, dtype=np.float16, seed=1)
    M = E.encode(B, dtype=np.float32)
    seen = []
    spec = methods.format_method("ec_csr", "pre", encoded=lambda p: seen.append(p) or EC.with_values(M, p.dtype))
    m = methods.build(spec, methods.Problem.make(B, np.float16))
    assert len(seen) == 1 and m.format_bytes == EC.with_values(M, np.float16).nbytes
    assert m.check().passed


def test_row_deltas():
    fig5 = X.load_experiment("fig5_ec")
    A = sp.csr_matrix(np.array([[0, 1, 0, 1, 1], [0, 0, 0, 0, 0], [1, 0, 0, 0, 1], [0, 0, 1, 0, 0]]))
    assert fig5.row_deltas(A).tolist() == [2, 1, 4]
    B = datasets.uniform((40, 300), 0.8, seed=2)
    want = np.concatenate([np.diff(B.indices[B.indptr[r]:B.indptr[r + 1]]) for r in range(40)])
    assert np.array_equal(fig5.row_deltas(B), want)


def test_storage_counts_every_byte():
    fig9 = X.load_experiment("fig9_ec")
    res = fig9.measure(fig9.config(shapes=[[64, 512]], sparsities=[0.7], weights=[]))
    rows = {(r["format"], r["dtype"]): r for r in res["rows"]}
    nnz = rows["csr32", "float32"]["nnz"]
    assert rows["csr32", "float32"]["nbytes"] == 4 * 65 + 8 * nnz
    assert rows["csr32", "float16"]["nbytes"] == 4 * 65 + 6 * nnz
    for b in (8, 4):
        r32, r16 = rows[f"ec_csr{b}", "float32"], rows[f"ec_csr{b}", "float16"]
        M = E.encode(datasets.uniform((64, 512), 0.7, dtype=np.float16, seed=0), dtype=np.float16,
                     delta_bits=b)
        assert r16["nbytes"] == M.nbytes and r32["nbytes"] == M.nbytes + 2 * M.values.size
        assert r32["padding_overhead"] == pytest.approx(M.padding_overhead)
        assert r32["gap_zeros"] + r32["align_zeros"] == M.n_padding
    summ = fig9.summary(res)
    ec8 = next(o for o in summ if o["format"] == "ec_csr8" and o["dtype"] == "float16")
    assert ec8["reduction_vs_csr32"] == pytest.approx(
        1 - rows["ec_csr8", "float16"]["nbytes"] / rows["csr32", "float16"]["nbytes"])


def _fake_timings(mod, cfg):
    """What measure() would return on a GPU, with methods.measure replaced."""
    rows = []
    for shape in cfg["shapes"]:
        for s in cfg["sparsities"]:
            for dt, k in ([(d, 1) for d in cfg.get("spmv_dtypes", cfg.get("dtypes"))]
                          + [(d, cfg.get("spmm_k")) for d in cfg.get("spmm_dtypes", [])]):
                for m in (list(EC.ABLATION) if mod.NAME == "fig10_ec" else ["ec_csr"]) + cfg["baselines"]:
                    t = {"cublas": 100.0, "cusparse": 80.0, "csr_vector": 70.0}.get(m, 40.0 * (1 - s) + 10)
                    rows.append(dict(method=m, kind="spmv" if k == 1 else "spmm", k=k, dtype=dt,
                                     shape=list(shape), sparsity=s, median_us=t, check_passed=m != "macko"))
    methods.add_speedups(rows, keys=("sparsity",))
    return {"meta": {"date_utc": "2026-01-01T00:00:00+00:00", "device": {"name": "Fake GPU"}},
            "config": cfg, "rows": rows}


@pytest.mark.parametrize("name", ["fig7_ec", "fig10_ec"])
def test_gpu_experiments_measure_and_plot(name, monkeypatch, tmp_path, capsys):
    mod = X.load_experiment(name)
    cfg = mod.config(quick=True, shapes=[[16, 256]], sparsities=[0.5, 0.7])
    seen = []

    def fake_measure(A, dtype, names, k=None, **kw):
        seen.append((A.shape, dtype, k, [getattr(n, "name", n) for n in names], kw["extra"]))
        return [dict(method=getattr(n, "name", n)) for n in names]

    monkeypatch.setattr(methods, "measure", fake_measure)
    res = mod.measure(cfg)
    per_matrix = (len(mod.problems(cfg)) if name == "fig7_ec" else len(cfg["dtypes"]))
    assert len(seen) == 2 * per_matrix and {s[4]["sparsity"] for s in seen} == {0.5, 0.7}
    ec = ["ec_csr"] if name == "fig7_ec" else list(EC.ABLATION)
    assert all(s[3] == ec + cfg["baselines"] for s in seen)
    assert all("encode_s" in r for r in res["rows"] if r["method"] in ec)
    fake = _fake_timings(mod, mod.config())
    out = mod.plot(fake, str(tmp_path / f"{name}.png"))
    assert [os.path.basename(p) for p in out] == [f"{name}.png", f"{name}.pdf"]
    mod.report(fake)
    assert "geomean" in capsys.readouterr().out.replace("geomean x", "geomean")
