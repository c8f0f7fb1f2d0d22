"""reference.csr_dtans beyond the shared suite (tests/test_formats.py): the warp layout,
word counts the paper states, compression, the cuSPARSE size helper, corrupted words."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, strategies as st

import reference.csr as RC
from reference import csr_dtans as C, dtans as D
from reference._common import FormatError, OptionError, canonical_csr
from parity import assert_same_csr


@st.composite
def matrices(draw):
    """Small matrices, values from a few levels (so tables keep symbols) or random (so
    everything escapes); up to 70 rows (three warps, the last partial)."""
    rows, cols = draw(st.integers(0, 70)), draw(st.integers(0, 50))
    density = draw(st.sampled_from([0.0, 0.05, 0.3, 0.8]))
    seed = draw(st.integers(0, 2**16))
    dtype = draw(st.sampled_from([np.float16, np.float32, np.float64]))
    rng = np.random.default_rng(seed)
    mask = rng.random((rows, cols)) < density
    if draw(st.booleans()):
        vals = rng.choice([-1.5, 0.25, 2.0, 3.0], size=(rows, cols))
    else:
        vals = rng.standard_normal((rows, cols))
    return sp.csr_matrix(np.where(mask, vals, 0.0)), dtype, draw(st.sampled_from(["paper", "toy"]))


@given(case=matrices())
def test_round_trip_and_products(case):
    A, dtype, params = case
    M = C.encode(A, dtype=dtype, params=params).validate(expensive=True)
    assert_same_csr(M.to_csr(), canonical_csr(A, dtype))
    assert M.nbytes == sum(a.nbytes for _, a in M.arrays())
    assert M.warp_ptr.size == -(-A.shape[0] // 32) + 1
    x = np.linspace(-1, 1, A.shape[1]).astype(dtype)
    X = np.stack([x, -x], axis=1)
    R = RC.encode(A, dtype=dtype)
    np.testing.assert_array_equal(C.spmv(M, x), RC.spmv(R, x))
    np.testing.assert_array_equal(C.spmm(M, X), RC.spmm(R, X))


def _lanes(M, w):
    """Each lane's words, read back from warp ``w`` by the layout rule (event by event, the
    reading lanes in lane order)."""
    P = M.dtans_params
    tables = M.tables()
    csr = M.to_csr()
    rows = range(32 * w, min(32 * w + 32, M.n_rows))
    streams = [C.row_symbols(csr.indices[csr.indptr[i]:csr.indptr[i + 1]],
                             csr.data[csr.indptr[i]:csr.indptr[i + 1]].astype(M.dtype).view(C._uint(M.dtype)))
               for i in rows]
    events = sorted((ev, t) for t, s in enumerate(streams) for ev, _ in D.encode_events(s, tables, P))
    words = M.words[M.warp_ptr[w]:M.warp_ptr[w + 1]]
    out = {t: [] for t in range(len(rows))}
    for (ev, t), word in zip(events, words.tolist()):
        out[t].append(word)
    return out, streams


@pytest.mark.parametrize("params", ["paper", "toy"])
def test_warp_words_are_each_rows_own_stream_interleaved(params):
    """Warp 1 of a 70-row matrix (rows of 0 to 12 nonzeros): de-interleaving by the layout
    rule gives, for every lane, exactly the single-stream dtANS encoding of its row."""
    rng = np.random.default_rng(7)
    A = sp.random(70, 40, density=0.15, random_state=rng, format="csr",
                  data_rvs=lambda n: rng.choice([1.0, 2.0, -3.0, 0.5], n))
    M = C.encode(A, dtype=np.float32, params=params)
    lanes, streams = _lanes(M, 1)
    for t, stream in enumerate(streams):
        assert lanes[t] == D.encode(stream, M.tables(), M.dtans_params).tolist(), t
    assert sum(map(len, lanes.values())) == M.warp_ptr[2] - M.warp_ptr[1]


def test_single_row_words_are_the_dtans_stream():
    A = sp.csr_matrix(np.array([[0, 1.0, 0, 2.0, 1.0, 0, 0, 1.0, 3.0, 1.0, 0, 2.0]]))
    M = C.encode(A, dtype=np.float64)
    stream = C.row_symbols(np.array([1, 3, 4, 7, 8, 9, 11]),
                           np.array([1, 2, 1, 1, 3, 1, 2], np.float64).view(np.uint64))
    assert stream[:4] == [1, np.float64(1).view(np.uint64), 2, np.float64(2).view(np.uint64)]
    assert M.words.tolist() == D.encode(stream, M.tables(), D.Params.paper()).tolist()


def test_a_one_nonzero_row_takes_o_words():
    """The paper's count for rows of one nonzero: o = 3 words (plus the row length)."""
    A = sp.csr_matrix(np.column_stack([np.full(40, 2.0), np.zeros((40, 4))]))
    M = C.encode(A, dtype=np.float32)
    assert M.words.size == 3 * 40 and M.words.dtype == np.uint32
    assert M.values.tolist() == [2.0] and M.deltas.tolist() == [0]
    assert M.value_counts.tolist() == [256, 0] and M.delta_counts.tolist() == [256, 0]


def test_edge_shapes():
    for A in (np.zeros((0, 0)), np.zeros((3, 0)), np.zeros((0, 4)), np.zeros((5, 9)),
              np.eye(1), np.ones((1, 70)), np.ones((70, 1)), np.diag(np.arange(1.0, 34.0))):
        for params in ("paper", "toy"):
            M = C.encode(A, dtype=np.float32, params=params).validate(expensive=True)
            assert_same_csr(M.to_csr(), canonical_csr(A, np.float32))
            if not np.count_nonzero(A):
                assert M.words.size == 0 and M.values.size == 0 and M.value_counts.tolist() == [0]


def test_compresses_a_banded_matrix_with_few_values():
    n = 256
    rng = np.random.default_rng(3)
    A = sp.diags([rng.choice([1.0, -1.0, 2.0], n - abs(k)) for k in range(-4, 5)], list(range(-4, 5)),
                 format="csr")
    M = C.encode(A, dtype=np.float64)
    sizes = C.cusparse_bytes(A, np.float64)
    assert M.nbytes * 3 < min(sizes.values())          # at least 4 bits a symbol: log2(K / M)
    assert M.expanded_table_bytes == 4096 * (8 + 4) + 4096 * (4 + 4)


def test_cusparse_bytes_by_hand():
    A = np.array([[1.0, 0, 2], [0, 0, 0], [3, 4, 5]])
    assert C.cusparse_bytes(A, np.float32) == {"csr": 4 * 4 + 5 * 8, "coo": 5 * 12,
                                               "sell": 2 * 4 + 32 * 3 * 8}
    assert C.cusparse_bytes(np.zeros((0, 3)), np.float64) == {"csr": 4, "coo": 0, "sell": 4}


def test_unknown_params_raise():
    with pytest.raises(OptionError, match=r"params: expected one of \['paper', 'toy'\]"):
        C.encode(np.eye(2), params="big")


@given(case=matrices(), at=st.integers(0, 10**6), value=st.integers(0, 2**32 - 1))
def test_corrupt_words_raise_format_error_or_decode(case, at, value):
    """A word replaced (fresh checksum, so only the structure can catch it): validate raises
    FormatError or the matrix decodes to some matrix; never another exception. Truncated and
    lengthened words are caught by the cheap checks."""
    A, dtype, params = case
    M = C.encode(A, dtype=dtype, params=params)
    if not M.words.size:
        return
    bad = M.words.copy()
    bad[at % bad.size] = value % (2 * M.dtans_params.W) if params == "toy" else value
    B = dataclasses.replace(M, words=bad, checksum=None)
    try:
        B.validate(expensive=True)
    except FormatError:
        pass
    else:
        B.to_csr()
    for words in (M.words[:-1], np.append(M.words, M.words[:1])):
        with pytest.raises(FormatError, match="warp_ptr"):
            dataclasses.replace(M, words=words, checksum=None).validate()
