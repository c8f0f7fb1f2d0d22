"""The public MACKO benchmark runner (spmvlab.anchors): output parsing and errors (no GPU)."""
import pytest

from spmvlab import anchors

OUT = """Cache size: 62914560
Max diff: 0.0312

Kernel id: 7
Bits per value: 16
Last time (us): 25.1
Max  time (us): 31.5
Min  time (us): 24.75
Mean time (us): 25.5
Final results:\t16\t4096\t11008\t7\t0.5\t25\t3535\t1767
"""


def test_parse_reads_times_and_the_check():
    got = anchors.parse(OUT)
    assert got == dict(mean_us=25.5, min_us=24.75, max_us=31.5, max_abs_diff=0.0312, check_passed=True)
    assert anchors.parse(OUT.replace("Max diff: 0.0312", "Max diff: 3.5\n@@@@@@ LOOKS BIG @@@@@@@@"))[
        "check_passed"] is False
    with pytest.raises(anchors.AnchorError, match="no result"):
        anchors.parse(OUT.split("Final")[0])
    with pytest.raises(anchors.AnchorError, match="mean_us"):
        anchors.parse(OUT.replace("Mean time", "Average"))


def test_missing_or_wrong_checkout_gives_an_error_row(monkeypatch, tmp_path):
    monkeypatch.delenv(anchors.ENV, raising=False)
    (row,) = anchors.public_macko_rows((64, 64), 0.5)
    assert row["method"] == "public_macko" and "SPMVLAB_PUBLIC_MACKO is not set" in row["error"]
    monkeypatch.setenv(anchors.ENV, str(tmp_path))
    (row,) = anchors.public_macko_rows((64, 64), 0.5)
    assert "SPMVLAB_PUBLIC_MACKO: expected a checkout" in row["error"]
    assert row["flush"] == anchors.FLUSH and row["shape"] == [64, 64]
