"""The numba CSR-dtANS encoder beyond the shared suite (tests/test_formats.py checks byte
equality on small drawn matrices and edge cases): a larger seeded matrix for every value
dtype and both parameter sets, the all-escape table, the shared codec steps against the
reference coder, and ``choose_multiplicities(rest=...)``."""
import numpy as np
import pytest
import scipy.sparse as sp

from reference import csr_dtans as R
from reference import dtans
from reference._common import OptionError
from reference.codec.dtans import pack_words
from spmvlab.encoders import csr_dtans as E


def _assert_same(A, **kw):
    ref, fast = R.encode(A, **kw), E.encode(A, **kw)
    assert [n for n, _ in fast.arrays()] == [n for n, _ in ref.arrays()]
    for (name, a), (_, b) in zip(fast.arrays(), ref.arrays()):
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes(), name
    assert fast.shape == ref.shape and fast.params == ref.params
    return fast


def _seeded(seed=0, n=2000, density=0.002):
    """2000 x 2000, skewed value alphabet (a few frequent values, many rare ones) and row
    lengths from 0 to ~3 dozen, so both tables keep symbols and escape others."""
    rng = np.random.default_rng(seed)
    A = sp.random(n, n, density=density, random_state=rng, format="csr", dtype=np.float64)
    A.data = np.where(rng.random(A.nnz) < 0.7, rng.integers(1, 9, A.nnz) / 4.0,
                      rng.standard_normal(A.nnz))
    A.data[A.data == 0] = 1.0
    dense_rows = rng.choice(n, 20, replace=False)           # some long rows: many segments
    B = sp.lil_matrix((n, n))
    for r in dense_rows:
        B[r, rng.choice(n, 40, replace=False)] = 0.5
    return (A + B.tocsr()).tocsr()


@pytest.mark.parametrize("params", ["paper", "toy"])
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_seeded_2000x2000_byte_for_byte(params, dtype):
    M = _assert_same(_seeded(), dtype=dtype, params=params)
    assert M.value_counts[-1] > 0 and M.values.size > 0        # kept and escaped values
    want = _seeded().toarray().astype(dtype).astype(np.float64)
    np.testing.assert_array_equal(np.asarray(M.to_csr().toarray(), dtype=np.float64), want)


@pytest.mark.parametrize("params", ["paper", "toy"])
def test_all_values_escaped(params):
    """Distinct float64 values: keeping one costs more than its raw bits, so the value table
    is the escape alone (M slots, the most one symbol may have)."""
    rng = np.random.default_rng(3)
    A = sp.random(100, 400, density=0.05, random_state=rng, format="csr", dtype=np.float64)
    A.data = rng.standard_normal(A.nnz) + 10.0
    M = _assert_same(A, params=params)
    assert M.values.size == 0 and M.value_counts.tolist() == [R.PARAMS[params].M]


def test_empty_and_empty_rows():
    _assert_same(sp.csr_matrix((70, 9), dtype=np.float32))
    A = sp.csr_matrix(([1.0, 2.0], ([0, 69], [8, 0])), shape=(70, 9), dtype=np.float32)
    _assert_same(A)
    _assert_same(A, params="toy")


def test_params_error_names_the_option():
    with pytest.raises(OptionError, match="params"):
        E.encode(sp.eye(3, format="csr"), params="fast")


@pytest.mark.parametrize("P", [dtans.Params.paper(), dtans.Params.toy()])
def test_pack_words_is_the_reference_pack(P):
    rng = np.random.default_rng(1)
    out = np.zeros(P.o, np.int64)
    for _ in range(50):
        slots = rng.integers(0, P.K, P.l)
        pack_words(slots.astype(np.int64), P.slot_bits, P.word_bits, out)
        assert out.tolist() == dtans.pack(slots.tolist(), P)


def test_choose_multiplicities_rest_is_the_full_count():
    """The K + 1 most frequent symbols and the others' total choose what all counts do."""
    P = dtans.Params.toy()
    rng = np.random.default_rng(2)
    for _ in range(30):
        counts = {int(s): int(c) for s, c in zip(rng.choice(60, 25, replace=False),
                                                  rng.integers(1, 6, 25))}
        full = dtans.choose_multiplicities(counts, P, 8, 24.0)
        order = sorted(sorted(counts), key=lambda s: -counts[s])
        head = {s: counts[s] for s in sorted(order[:P.K + 1])}
        rest = sum(counts[s] for s in order[P.K + 1:])
        assert dtans.choose_multiplicities(head, P, 8, 24.0, rest=rest) == full
    with pytest.raises(OptionError, match="rest"):
        dtans.choose_multiplicities({1: 3}, P, 8, 24.0, rest=5)


@pytest.mark.parametrize("P", [dtans.Params.paper(), dtans.Params.toy()], ids=["paper", "toy"])
def test_encode_stream_is_the_reference_coder(P):
    """The shared step, called as plain Python: the words of ``reference.dtans.encode_events``
    with escapes, in its event order once the keys are sorted."""
    from reference.codec.dtans import encode_stream
    rng = np.random.default_rng(4)
    raw_bits = (12, 16)
    escaped = 0
    for n in (1, 2, 7, 8, 9, 31):
        msg = [int(rng.choice([1, 2, 3, 5, 40 + int(rng.integers(0, 50))])) for _ in range(n)]
        tabs = tuple(dtans.Table.from_counts(dtans.count(msg[p::2] or [1]), P, raw_bits[p], 64.0)
                     for p in (0, 1))
        ref = dtans.encode_events(msg, tabs, P)
        t = [tabs[p % 2] for p in range(n)]
        first = np.array([t[p].slot_of(u) for p, u in enumerate(msg)], np.int64)
        base = np.array([t[p].base[j] for p, j in enumerate(first)], np.uint64)
        esc = np.array([t[p].symbol[j] is dtans.ESCAPE for p, j in enumerate(first)], np.uint8)
        raw = np.array(msg, np.uint64)
        rws = np.array([P.raw_words(raw_bits[p % 2]) for p in range(n)], np.int64)
        n_k, n_e = max(P.l, P.o), int(rws.max())
        size = P.o * (n // P.l + 1) + int(rws.sum())
        words, keys = np.zeros(size, np.uint64), np.zeros(size, np.int64)
        cnt = encode_stream(first, base, esc, raw, rws, n, P.l, P.f, P.o, P.word_bits, P.slot_bits,
                            n_k, n_e, 32, 5, np.zeros(n, bool), np.zeros(P.l, np.int64),
                            np.zeros(P.o, np.int64), words, keys, 0)
        order = np.argsort(keys[:cnt])
        assert words[:cnt][order].tolist() == [w for _, w in ref]
        assert [tuple(ev) for ev, _ in ref] == sorted(tuple(ev) for ev, _ in ref)
        escaped += int(esc.sum())
    assert escaped > 0


def _rows_of(length, n_rows=96, n_cols=300, seed=0, scatter=False):
    """``n_rows`` rows of ``length`` nonzeros each, a few values: at columns next to the
    row's (neighbouring rows read neighbouring x), or with ``scatter`` at random columns of
    ``n_cols``."""
    rng = np.random.default_rng(seed)
    if scatter:
        rows = [np.sort(rng.choice(n_cols, length, replace=False)) for _ in range(n_rows)]
    else:
        rows = [np.sort((i + np.arange(length)) % n_cols) for i in range(n_rows)]
    cols = np.concatenate(rows)
    vals = rng.integers(1, 5, cols.size).astype(np.float64)
    return sp.csr_matrix((vals, cols, np.arange(n_rows + 1) * length), shape=(n_rows, n_cols))


def test_x_sectors_counts_a_warps_distinct_sectors_per_nonzero():
    """32 rows of one nonzero each on the diagonal read 8 sectors of float64 x (4 of float32):
    0.25 (0.125) a nonzero; columns 64 apart give each nonzero its own sector; a sector two
    warps both read counts once per warp; no nonzeros: 0."""
    eye = sp.identity(64, format="csr")
    ip, c = eye.indptr.astype(np.int64), eye.indices.astype(np.int64)
    assert R.x_sectors(ip, c, 8) == 0.25 and R.x_sectors(ip, c, 4) == 0.125
    far = sp.csr_matrix((np.ones(64), np.arange(64) * 64, np.arange(65)), shape=(64, 4096))
    assert R.x_sectors(far.indptr.astype(np.int64), far.indices.astype(np.int64), 4) == 1.0
    col0 = np.zeros(64, np.int64)
    assert R.x_sectors(np.arange(65, dtype=np.int64), col0, 8) == 2 / 64
    assert R.x_sectors(np.zeros(5, np.int64), np.zeros(0, np.int64), 8) == 0.0
    assert R.x_sectors(np.zeros(1, np.int64), np.zeros(0, np.int64), 8) == 0.0


@pytest.mark.parametrize("length, expected", [(5, 4), (6, 4), (9, 2), (12, 2), (17, 1), (40, 1)])
def test_rows_per_lane_auto_packs_short_rows(length, expected, monkeypatch):
    """``rows_per_lane="auto"`` packs as many rows per stream as keep its mean nonzeros within
    STREAM_NNZ where neighbouring rows read neighbouring x (MIN_STREAMS lowered to fit these
    small matrices): both encoders pick the same, store it, and write the bytes of that
    explicit choice; one lane per row with ``lanes_per_row`` above 1, and on a matrix
    without rows."""
    monkeypatch.setattr(R, "MIN_STREAMS", 8)
    A = _rows_of(length)
    M = _assert_same(A, rows_per_lane="auto", first_delta="diagonal")
    assert M.rows_per_lane == expected and M.options()["rows_per_lane"] == expected
    explicit = R.encode(A, rows_per_lane=expected, first_delta="diagonal")
    assert all(a.tobytes() == b.tobytes() for (_, a), (_, b) in zip(M.arrays(), explicit.arrays()))
    assert _assert_same(A, rows_per_lane="auto", lanes_per_row=2).rows_per_lane == 1
    assert _assert_same(sp.csr_matrix((0, 7)), rows_per_lane="auto").rows_per_lane == 1
    for bad in ("Auto", "4", 3):
        for enc in (R.encode, E.encode):
            with pytest.raises(OptionError, match="rows_per_lane"):
                enc(A, rows_per_lane=bad)


@pytest.mark.parametrize("fast", [False, True])
def test_rows_per_lane_auto_keeps_a_lane_per_row(fast, monkeypatch):
    """``rows_per_lane="auto"`` keeps one row per lane where rows of 5 nonzeros scatter
    their columns (each gather its own sector of x), and where packing would leave fewer
    than MIN_STREAMS streams (96 rows, at the module's own bound); 2 rows where 4 would
    leave too few."""
    enc = E.encode if fast else R.encode
    assert enc(_rows_of(5), rows_per_lane="auto").rows_per_lane == 1
    monkeypatch.setattr(R, "MIN_STREAMS", 8)
    assert enc(_rows_of(5, n_cols=1 << 20, scatter=True), rows_per_lane="auto").rows_per_lane == 1
    assert enc(_rows_of(5, n_rows=40), rows_per_lane="auto").rows_per_lane == 4
    monkeypatch.setattr(R, "MIN_STREAMS", 11)
    assert enc(_rows_of(5, n_rows=40), rows_per_lane="auto").rows_per_lane == 2
