"""MACKO vs CSR-vector crossover from measured rows, and the prediction `spmvlab stats` uses."""
import pytest

from spmvlab.analysis import crossover as C


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


def test_predict_uses_the_newest_device_and_the_nearest_shape():
    table = [dict(kind="crossing", sparsity=0.94, lo=0.0, hi=0.95, device="h100", results="a",
                  shape=[4096, 11008], date="2026-11-22"),
             dict(kind="crossing", sparsity=0.92, lo=0.0, hi=0.95, device="h200", results="b",
                  shape=[12288, 12288], date="2026-11-23"),
             dict(kind="never", sparsity=None, lo=0.0, hi=0.9, device="h200", results="c",
                  shape=[36864, 12288], date="2026-11-23")]
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
