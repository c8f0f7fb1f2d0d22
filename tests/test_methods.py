"""spmvlab.methods and spmvlab.check: names, the one correctness check, missing backends, the
numba dense GEMV baseline (simulator on CPU, real on a GPU). Timing itself needs a GPU."""
import sys

import numpy as np
import pytest
import scipy.sparse as sp

from reference import csr_dtans as csr_dtans_ref
from spmvlab import bench, formats, methods
from spmvlab.check import compare, reference_product, relative_error
from spmvlab.errors import (
    BackendUnavailable, LossyConversionError, LossyConversionWarning, OptionError,
)
from spmvlab.methods import dense_gemv as KD
from spmvlab.methods.ours import NumbaDense


# ---- names -------------------------------------------------------------------------------------

def test_every_name_resolves_to_itself():
    for name in methods.names():
        assert methods.resolve(name).name == name
    assert {"cublas", "cusparse", "csr_vector", "csr_scalar", "macko"} <= set(methods.names())


def test_format_settings_come_from_the_registry(monkeypatch):
    p = methods.Problem.make(np.eye(4, dtype=np.float32), np.float32)
    m = methods.build("csr_vector1", p)
    assert m.name == "csr_vector1" and m.config == formats.get("csr").make_config(vec=1)
    m = methods.build("macko[threads_per_block=64,prefetch=0,delta_bits=2]", p)
    assert m.config == formats.get("macko").make_config(threads_per_block=64, prefetch=0)
    assert m.options == {"delta_bits": 2}
    spec = methods.format_method("macko", "macko_small", {"threads_per_block": 32})
    assert methods.build(spec, p).name == "macko_small"
    # what an "auto" option became is on the method: rows of 1 nonzero, 8 to a lane (the
    # bound on streams lowered to fit a 4 x 4 matrix)
    monkeypatch.setattr(csr_dtans_ref, "MIN_STREAMS", 1)
    m = methods.build("csr_dtans[first_delta=diagonal,rows_per_lane=auto]", p)
    assert m.options["rows_per_lane"] == "auto"
    assert m.stored_options["rows_per_lane"] == 8 and m.stored_options["first_delta"] == "diagonal"


@pytest.mark.parametrize("bad", ["csrx", "macko[prefetch]", "nope", "cusparse_csr"])
def test_unknown_names_raise_naming_the_choices(bad):
    with pytest.raises(OptionError, match="method"):
        methods.build(bad, methods.Problem.make(np.eye(3, dtype=np.float32), np.float32))


@pytest.mark.parametrize("bad, field", [("macko[no_such=1]", "MackoConfig fields"),
                                        ("csr[vec=3]", "CSRConfig.vec")])
def test_bad_config_fields_raise_naming_them(bad, field):
    with pytest.raises(OptionError, match=field):
        methods.build(bad, methods.Problem.make(np.eye(3, dtype=np.float32), np.float32))


def test_capabilities_are_checked():
    p = methods.Problem.make(np.eye(4, dtype=np.float32), np.float32, k=2)
    with pytest.raises(OptionError, match="spmv problem"):
        methods.build("numba_dense", p)
    with pytest.raises(OptionError, match="spmm"):
        methods.build("cublas_sgemv", p)


def test_problem():
    A = sp.random(6, 9, density=0.5, random_state=0, dtype=np.float64)
    p = methods.Problem.make(A, np.float16, k=3, seed=4)
    assert p.kind == "spmm" and p.k == 3 and p.X.shape == (9, 3) and p.X.dtype == np.float16
    assert p.A.dtype == np.float32 and p.operand_bytes == (6 + 9) * 3 * 2
    assert np.array_equal(p.dense(), A.toarray().astype(np.float16))
    q = methods.Problem.make(A, np.float16, seed=4)
    assert q.kind == "spmv" and q.out_shape == (6,)
    assert np.array_equal(q.X, np.random.default_rng(4).standard_normal(9).astype(np.float16))
    assert p.reference() is p.reference()


def test_problem_conversion_that_loses_values():
    A = np.array([[1e5, 2.0], [0.0, 1e-9]])
    with pytest.raises(LossyConversionError, match="pass lossy=True"):
        methods.Problem.make(A, np.float16)
    with pytest.warns(LossyConversionWarning):
        p = methods.Problem.make(A, np.float16, lossy=True)
    assert p.A.nnz == 2 and np.isinf(p.A[0, 0])


def test_rows_and_speedups():
    rows = [dict(method="cublas", dtype="float16", kind="spmv", k=1, shape=[2, 2], sparsity=s, median_us=10.0)
            for s in (0.5, 0.9)]
    rows += [dict(method="macko", dtype="float16", kind="spmv", k=1, shape=[2, 2], sparsity=s, median_us=t)
             for s, t in ((0.5, 5.0), (0.9, 2.0))]
    rows.append(dict(method="macko", dtype="float16", kind="spmv", k=1, shape=[2, 2], sparsity=0.7, error="x"))
    methods.add_speedups(rows, keys=("sparsity",))
    assert [r.get("speedup_vs_cublas") for r in rows] == [1.0, 1.0, 2.0, 5.0, None]
    assert "cusparse" not in str(rows)


# ---- the check ---------------------------------------------------------------------------------

def test_relative_error():
    A = sp.csr_matrix(np.array([[1.0, -2.0, 0.0], [0.0, 0.0, 0.0], [0.5, 0.5, 0.5]], np.float32))
    x = np.array([1.0, 1.0, 2.0], np.float32)
    exact = np.array([-1.0, 0.0, 2.0])
    assert relative_error(exact, A, x, np.float32).passed
    c = relative_error(exact + [0.0, 0.0, 1e-3], A, x, np.float32)    # 1e-3 / 2.0 = 5e-4
    assert not c.passed and c.n_bad == 1 and c.max_rel_err == pytest.approx(5e-4)
    assert relative_error(exact + [0.0, 0.0, 1e-3], A, x, np.float16).passed
    assert not relative_error(exact + [0.0, 1e-30, 0.0], A, x, np.float32).passed  # empty row must be 0
    assert not relative_error([np.nan, 0.0, 2.0], A, x, np.float32).passed
    ref = reference_product(A.toarray(), x)
    assert relative_error(exact, ref=ref, dtype=np.float32).passed


def test_nan_or_inf_where_exact_is_finite_fails():
    """The old check took nanmax over the errors: a NaN result passed. Never again."""
    A = sp.csr_matrix(np.array([[1.0, 2.0], [3.0, 4.0]], np.float32))
    ref = reference_product(A, np.ones(2, np.float32))
    for bad in ([np.nan, 7.0], [3.0, np.inf], [np.nan, np.nan]):
        chk = compare(np.array(bad, np.float32), ref, np.float32)
        assert not chk.passed and chk.max_rel_err == np.inf
    big = sp.csr_matrix(np.array([[6e4, 6e4]], np.float32))          # exact 1.2e5 overflows float16
    ok = compare(np.array([np.inf], np.float16), reference_product(big, np.ones(2, np.float16)), np.float16)
    assert ok.passed                                                   # inf is float16's rounding
    nan_in = sp.csr_matrix(np.array([[np.nan, 1.0]], np.float32))    # exact NaN: NaN is right
    assert compare(np.array([np.nan], np.float32), reference_product(nan_in, np.ones(2)), np.float32).passed
    assert not compare(np.array([1.0], np.float32), reference_product(nan_in, np.ones(2)), np.float32).passed


# ---- missing backends --------------------------------------------------------------------------

def _hide(monkeypatch, *mods):
    for m in mods:
        monkeypatch.setitem(sys.modules, m, None)  # makes `import m` raise ImportError


def test_missing_cupy_names_the_gpu_extra(monkeypatch):
    _hide(monkeypatch, "cupy", "cupyx", "cupyx.scipy", "cupyx.scipy.sparse")
    from spmvlab import backends
    p = methods.Problem.make(sp.random(8, 8, density=0.5, random_state=0, dtype=np.float32), np.float32)
    for name in ("cublas", "cusparse", "cusparse_coo", "cublas_sgemv"):
        with pytest.raises(BackendUnavailable, match=r"pip install -e \.\[gpu\]"):
            methods.build(name, p)
    assert not backends.cupy_available()
    with pytest.raises(BackendUnavailable, match=r"\.\[gpu\]"):
        bench._Events("cupy")
    rows = methods.measure_problem(p, ["cublas"])
    assert rows[0]["method"] == "cublas" and "BackendUnavailable" in rows[0]["error"]


def test_dropped_methods_cost_a_full_collection_only_when_memory_is_short(monkeypatch):
    """measure_problem collects only the young generations after each method while the
    device has memory to spare (a full collection walks every object numba's compiler left),
    and everything once less than half of it is free."""
    import gc
    from spmvlab._cuda import cuda
    calls = []
    monkeypatch.setattr(gc, "collect", lambda generation=2: calls.append(generation) or 0)
    p = methods.Problem.make(sp.random(8, 8, density=0.5, random_state=0, dtype=np.float32), np.float32)
    rows = methods.measure_problem(p, ["cublas", "cusparse"])      # no GPU here: error rows
    assert len(rows) == 2 and calls == [1, 1]

    class Ctx:
        def __init__(self, free):
            self.free = free

        def get_memory_info(self):
            return self.free, 100

    for free, want in ((90, [1]), (49, [1, 2])):
        calls.clear()
        monkeypatch.setattr(cuda, "current_context", lambda f=free: Ctx(f))
        methods.release()
        assert calls == want, (free, calls)


def test_missing_torch_names_the_torch_extra(monkeypatch):
    _hide(monkeypatch, "torch")
    from spmvlab import backends
    p = methods.Problem.make(sp.random(8, 8, density=0.5, random_state=0, dtype=np.float32), np.float16)
    with pytest.raises(BackendUnavailable, match=r"pip install -e \.\[torch\]"):
        methods.build("cusparse", p)
    assert not backends.torch_available()


# ---- numba dense GEMV (simulator on CPU, real kernel on a GPU) ------------------------------------

SMALL = KD.DenseConfig(threads_per_block=64)


@pytest.mark.parametrize("dtype,shape", [(np.float32, (40, 64)), (np.float16, (33, 48)),
                                         (np.float32, (17, 37)), (np.float64, (9, 6)), (np.float16, (3, 5))])
def test_dense_gemv_matches_numpy(dtype, shape):
    rng = np.random.default_rng(7)
    W = rng.uniform(-1, 1, shape).astype(dtype)
    x = rng.uniform(-1, 1, shape[1]).astype(dtype)
    y = KD.gemv(W, x, config=SMALL)
    assert y.dtype == np.dtype(dtype) and y.shape == (shape[0],)
    chk = relative_error(y, W, x, dtype)
    assert chk.passed, chk
    expect_vec = {2: 8, 4: 4, 8: 2}[np.dtype(dtype).itemsize]
    assert KD.vector_width(dtype, shape[1]) == (expect_vec if shape[1] % expect_vec == 0 else 1)


def test_dense_gemv_device_operands_and_out():
    from spmvlab._cuda import cuda
    rng = np.random.default_rng(3)
    W = rng.uniform(-1, 1, (12, 16)).astype(np.float32)
    x = rng.uniform(-1, 1, 16).astype(np.float32)
    D = KD.to_device(W)
    assert D.nbytes == W.nbytes and D.shape == (12, 16)
    out = cuda.device_array(12, dtype=np.float32)
    got = KD.gemv(D, cuda.to_device(x), out=out, config=SMALL)
    assert got is out
    np.testing.assert_allclose(out.copy_to_host(), W @ x, rtol=1e-5, atol=1e-6)
    host_out = np.zeros(12, np.float32)
    assert KD.gemv(D, x, out=host_out, config=SMALL) is host_out
    np.testing.assert_allclose(host_out, W @ x, rtol=1e-5, atol=1e-6)


def test_numba_dense_method_check():
    rng = np.random.default_rng(5)
    W = rng.uniform(-1, 1, (10, 24)).astype(np.float32)
    p = methods.Problem.make(W, np.float32)
    m = NumbaDense(p, config={"threads_per_block": 64})
    assert m.events == "numba" and m.nbytes == W.nbytes + (10 + 24) * 4 and m.name == "numba_dense"
    assert "vec=4" in m.impl
    assert m.check().passed


def test_dense_errors():
    from reference._common import DTypeError, ShapeError
    with pytest.raises(ShapeError):
        KD.to_device(np.ones(4, np.float32))
    with pytest.raises(DTypeError):
        KD.to_device(np.ones((2, 2), np.int32))
    with pytest.raises(OptionError):
        KD.DenseConfig(vec=3)
    with pytest.raises(OptionError):
        KD.DenseConfig(threads_per_block=48)
    with pytest.raises(ShapeError):
        KD.gemv(np.ones((2, 4), np.float32), np.ones(3, np.float32))
