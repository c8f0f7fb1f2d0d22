"""MACKO vs CSR-vector crossover from measured rows, and the prediction `spmvlab stats` uses
(only for a matrix of the kind the committed runs time)."""
import numpy as np
import pytest

from spmvlab import datasets
from spmvlab.analysis import crossover as C
from spmvlab.cli import matrix_stats


def _rows(macko, csr, sparsities=(0.5, 0.7, 0.9, 0.95)):
    return ([dict(method="macko", sparsity=s, median_us=t) for s, t in zip(sparsities, macko)]
            + [dict(method="csr_vector", sparsity=s, median_us=t) for s, t in zip(sparsities, csr)])


def test_crossover_kinds():
    c = C.crossover(_rows([20, 15, 10, 8], [40, 30, 10, 6]))       # equal at 0.9: crossing there
    assert c["kind"] == "crossing" and c["sparsity"] == pytest.approx(0.9)
    c = C.crossover(_rows([20, 15, 10, 8], [40, 30, 12.5, 6]))
    assert c["kind"] == "crossing" and 0.9 < c["sparsity"] < 0.95
    assert C.crossover(_rows([20, 15, 10, 8], [40, 30, 20, 9]))["kind"] == "never"
    assert C.crossover(_rows([20, 15, 10, 8], [10, 5, 5, 4]))["sparsity"] == 0.5   # always
    assert C.crossover(_rows([], []))["kind"] == "unmeasured"


TABLE = [dict(kind="crossing", sparsity=0.94, lo=0.0, hi=0.95, device="h100", results="a",
              shape=[4096, 11008], dtype="float16", date="2026-11-22"),
         dict(kind="crossing", sparsity=0.92, lo=0.0, hi=0.95, device="h200", results="b",
              shape=[12288, 12288], dtype="float16", date="2026-11-23"),
         dict(kind="never", sparsity=None, lo=0.0, hi=0.9, device="h200", results="c",
              shape=[36864, 12288], dtype="float16", date="2026-11-23")]


def test_predict_uses_the_newest_device_and_the_nearest_shape():
    table = TABLE
    p = C.predict_faster((10000, 12000), 0.93, table)
    assert p["faster"] == "csr" and p["device"] == "h200" and "92.0 %" in p["reason"]
    assert C.predict_faster((10000, 12000), 0.5, table)["faster"] == "macko"
    p = C.predict_faster((40000, 12000), 0.8, table)
    assert p["faster"] == "macko" and "every measured sparsity up to 90 %" in p["reason"]
    assert C.predict_faster((40000, 12000), 0.97, table)["faster"] == "unknown"
    assert C.predict_faster((10, 10), 0.5, []) is None


def test_committed_measurements_cross_between_90_and_95_percent():
    got = {(t["device"], tuple(t["shape"])): t for t in C.measured()}
    t = got[("h200", (4096, 11008))]
    assert t["kind"] == "crossing" and 0.9 < t["sparsity"] <= 0.95


#: measurements of two small shapes on one device (the coverage rules, at test sizes)
SMALL = [dict(kind="crossing", sparsity=0.92, lo=0.0, hi=0.95, device="h200", results="s",
              shape=[512, 1024], dtype="float16", date="2026-11-23"),
         dict(kind="crossing", sparsity=0.9, lo=0.0, hi=0.95, device="h200", results="t",
              shape=[1024, 2048], dtype="float16", date="2026-11-23")]


def _weights(shape, sparsity, seed=0):
    """Per-row magnitude-pruned Gaussian weights (the kind of matrix the committed runs time),
    as CSR."""
    import scipy.sparse as sp
    return sp.csr_matrix(datasets.prune(datasets.gaussian_weights(shape, seed=seed), sparsity))


def _graph(n, avg):
    """A power-law graph's pattern (ones)."""
    G = datasets.power_law(n, n, avg, seed=0)
    G.data[:] = 1.0
    return G


def _half_rows_empty(A):
    import scipy.sparse as sp
    B = sp.diags((np.arange(A.shape[0]) % 2).astype(A.dtype)) @ A
    B.eliminate_zeros()
    return B.tocsr()


@pytest.mark.parametrize("sparsity, faster", [(0.5, "macko"), (0.93, "csr")])
def test_predict_covers_uniform_weights_of_a_measured_shape(sparsity, faster):
    s = matrix_stats(_weights((600, 1100), sparsity))
    assert C.uncovered(s, "float16", SMALL)[0] == []
    p = C.predict(s, "float16", SMALL)
    assert p["faster"] == faster and p["shape"] == [512, 1024] and "92.0 %" in p["reason"]
    s = matrix_stats(datasets.uniform((1024, 2048), sparsity, seed=1))   # a random mask
    assert C.predict(s, "float16", SMALL)["faster"] == ("csr" if sparsity >= 0.9 else "macko")


def test_predict_makes_no_prediction_for_a_sparse_power_law_graph():
    s = matrix_stats(_graph(1024, 1))                  # 99.9 % sparse, inside the shape range
    assert s["row_max"] > 10 * s["row_mean"]
    why, what = C.uncovered(s, "float16", SMALL)
    assert what == "uniform random masks, 512-1,024 x 1,024-2,048, 0-95 % sparse, float16"
    assert len(why) == 2 and why[0].startswith("99.9") and why[0].endswith("% sparse")
    assert why[1].startswith("rows of ") and f"(mean {s['row_mean']:.1f}" in why[1]
    p = C.predict(s, "float16", SMALL)
    assert p["faster"] is None and p["reason"] == (
        f"the committed GPU runs time {what}; this matrix is {', '.join(why)}")


@pytest.mark.parametrize("what, matrix, dtype, reason", [
    ("dtype", lambda: datasets.uniform((1024, 2048), 0.8), "float32", "in float32"),
    ("too small", lambda: datasets.uniform((256, 2048), 0.8), "float16", "256 x 2,048"),
    ("too large", lambda: datasets.uniform((1024, 4096), 0.8), "float16", "1,024 x 4,096"),
    ("too sparse", lambda: datasets.uniform((1024, 2048), 0.97), "float16", "97 % sparse"),
    ("empty rows", lambda: _half_rows_empty(datasets.uniform((1024, 2048), 0.8)), "float16",
     "rows of 0 to "),
    ("banded", lambda: datasets.banded(1024, 50), "float16",
     "median column gap 1 (a uniform mask's: "),
])
def test_predict_names_what_is_not_covered(what, matrix, dtype, reason):
    """Each rule on its own: the dtype, the shape range, the sparsity range, row lengths near
    the mean, and columns scattered like a uniform mask's."""
    s = matrix_stats(matrix())
    why = C.uncovered(s, dtype, SMALL)[0]
    assert len(why) == 1 and why[0].startswith(reason), why
    assert C.predict(s, dtype, SMALL)["faster"] is None


def test_uniform_gap_median_matches_a_random_mask():
    for sparsity in (0.0, 0.5, 0.8, 0.95):
        s = matrix_stats(datasets.uniform((500, 4000), sparsity, seed=2))
        assert s["gap_median"] == C._uniform_gap_median(s["density"])


def test_predict_without_committed_runs():
    s = matrix_stats(datasets.uniform((64, 64), 0.5))
    assert C.predict(s, "float16", []) == dict(
        faster=None, reason="no GPU runs of MACKO and CSR-vector are committed")


def test_committed_runs_predict_for_weights_and_not_for_graphs():
    """The committed runs (uniform masks of LLM shapes in float16) cover a float16 weight
    matrix of a measured shape and not a 99.9 % sparse power-law graph."""
    s = matrix_stats(_weights((4096, 4096), 0.8))
    p = C.predict(s, "float16")
    assert p["faster"] == "macko" and p["shape"] == [4096, 4096]
    assert p["reason"].startswith("CSR-vector is as fast as MACKO from")
    p = C.predict(matrix_stats(_graph(8192, 8)), "float16")
    assert p["faster"] is None and "% sparse, rows of " in p["reason"]
    assert C.predict(s, "float32")["faster"] is None
