"""COO specifics: the kernels binary-search the rows, so rows out of order must never reach
them; raw matrices are refused. The shared suite (test_formats.py) runs the rest."""
import dataclasses

import numpy as np
import pytest
import scipy.sparse as sp

import reference.coo as R
from reference._common import FormatError, NotEncodedError
from spmvlab.kernels import coo as K


def _small():
    return R.encode(sp.random(4, 12, density=0.5, random_state=3, dtype=np.float32, format="csr"))


@pytest.mark.parametrize("check", ["host", "device"])
def test_rows_out_of_order_never_reach_a_kernel(check):
    """Every row in range but two entries' rows swapped: the binary search would miss
    entries, so to_device refuses it (rebuilt on purpose, checksum=None)."""
    M = _small()
    rows = M.rows.copy()
    i = int(np.flatnonzero(np.diff(rows))[0])        # the last entry of the first row
    rows[i], rows[i + 1] = rows[i + 1], rows[i]
    B = dataclasses.replace(M, rows=rows, checksum=None)
    with pytest.raises(FormatError, match=r"COOMatrix.rows: expected non-decreasing rows"):
        K.to_device(B, check=check)
    assert K.device_check(K._upload(B)) == ["rows"]
    with pytest.raises(FormatError, match="rows"):
        R.spmv(B, np.ones(12, np.float32))


def test_truncated_rows_raise_a_format_error():
    M = _small()
    B = dataclasses.replace(M, rows=M.rows[:-1].copy())
    for call in (lambda: R.spmv(B, np.ones(12, np.float32)), B.to_csr, lambda: K.to_device(B)):
        with pytest.raises(FormatError, match=rf"COOMatrix.rows: expected a 1-D array of {M.nnz} entries"):
            call()


def test_scipy_matrix_raises_how_to_encode():
    A = sp.random(4, 6, density=0.5, random_state=1, dtype=np.float32, format="coo")
    with pytest.raises(NotEncodedError, match=r"expected a COOMatrix or DeviceCOO, received scipy "
                                              r"coo_matrix.*M = reference.coo.encode\(A\)"):
        K.spmv(A, np.ones(6, np.float32))


@pytest.mark.parametrize("at", [0, 2, 3, 4, 7, 8, 9])
def test_device_check_sees_rows_out_of_order_at_every_position(at):
    """The check kernel reads 4 entries per load: a descent inside a group, across two
    groups (3 -> 4, 7 -> 8) and in the last partial group (10 entries) is flagged."""
    rows = np.array([0, 0, 1, 1, 2, 2, 3, 3, 4, 4], np.int32)
    rows[at] = rows[at + 1] + 1 if at + 1 < rows.size else rows[at]
    if at + 1 == rows.size:                          # the last entry: make it the descent's end
        rows[at - 1] = rows[at] + 1
    M = R.COOMatrix(rows=rows, cols=np.arange(10, dtype=np.int32), values=np.ones(10, np.float32),
                    shape=(6, 10))
    assert K.device_check(K._upload(M)) == ["rows"]
    ok = R.encode(sp.csr_matrix((np.ones(10, np.float32), (np.sort(rows), np.arange(10))), shape=(6, 10)))
    assert K.device_check(K._upload(ok)) == []
