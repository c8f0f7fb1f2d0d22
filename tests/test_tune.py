"""spmvlab.generalsparse.tune: features, the per-strategy linear regression (fit on synthetic
features with a known law, recovered), ranking, JSON round trip, the search's choice logic and
analysis, plan reuse; the GeneralSparse method on the simulator."""
import dataclasses
import json
import os

import numpy as np
import pytest
import scipy.sparse as sp

import reference.generalsparse as GS
from reference._common import OptionError
from spmvlab.generalsparse import features as F
from spmvlab.generalsparse import tune


def test_features_by_hand():
    A = sp.csr_matrix(np.array([[1, 0, 2, 0, 0, 0, 0, 0],
                                [1, 0, 2, 0, 0, 0, 0, 0],
                                [0, 0, 0, 0, 0, 0, 0, 0],
                                [0, 0, 0, 0, 0, 0, 0, 3]], dtype=np.float32))
    f = tune.features(A, 8)
    assert list(f) == list(tune.FEATURE_NAMES)
    assert (f["rows"], f["cols"], f["nnz"], f["N"], f["value_bytes"]) == (4, 8, 5, 8, 4)
    assert tune.features(A, 8, "float16")["value_bytes"] == 2
    assert f["density"] == pytest.approx(5 / 32)
    lengths = np.array([2, 2, 0, 1])
    assert f["row_mean"] == pytest.approx(lengths.mean()) and f["row_var"] == pytest.approx(lengths.var())
    assert f["row_max"] == 2 and f["empty_rows"] == 0.25
    assert f["row_cv"] == pytest.approx(lengths.std() / lengths.mean())
    assert f["gap16"] == 1.0                        # the two in-row gaps are 2 and 2
    assert f["row_overlap"] == pytest.approx(2 / 5)  # row 1's two entries sit under row 0's
    assert f["block4_fill"] == pytest.approx(5 / 32)  # two non-empty 4x4 tiles
    d = tune.design(f)
    assert d.shape == (len(tune.DESIGN_NAMES),) and d[0] == 1.0
    with pytest.raises(Exception):
        tune.features(A, 0)


@pytest.mark.parametrize("seed", range(4))
def test_pattern_counts_by_marks_equal_the_sparse_ones(seed, monkeypatch):
    """The row-overlap and 4x4-tile counts through mark arrays (small index spaces) equal
    those through sparse products and hashing (the fallback for wide matrices): the fitted
    cost model's features must not depend on which path ran."""
    rng = np.random.default_rng(seed)
    for _ in range(40):
        m, k = int(rng.integers(1, 70)), int(rng.integers(1, 90))
        A = sp.random(m, k, density=float(rng.random()), format="csr", random_state=rng)
        if m > 3:
            A = A.tolil()
            A[int(rng.integers(m)), :] = 0          # an empty row
            A = A.tocsr()
            A.eliminate_zeros()
        marks = F._pattern_stats(A)
        with monkeypatch.context() as mp:
            mp.setattr(F, "_mark_limit", lambda nnz: -1)
            assert F._pattern_stats(A) == marks


def _synthetic_records(rng, laws, n=40):
    recs, feats = [], []
    for _ in range(n):
        f = dict(rows=rng.integers(100, 100000), cols=rng.integers(100, 100000), nnz=0,
                 density=rng.uniform(0, 1), row_mean=rng.uniform(1, 500), row_var=rng.uniform(0, 1e4),
                 row_max=rng.uniform(1, 5000), row_cv=rng.uniform(0, 3), empty_rows=rng.uniform(0, .5),
                 gap16=rng.uniform(0, 1), row_overlap=rng.uniform(0, 1), block4_fill=rng.uniform(0, 1),
                 N=int(rng.choice([8, 32, 64])), value_bytes=int(rng.choice([2, 4])))
        f["nnz"] = f["rows"] * f["row_mean"]
        feats.append(f)
        for s, c in laws.items():
            recs.append(dict(features=f, strategy=s, time_us=float(np.exp(tune.design(f) @ c))))
    return recs, feats


def test_fit_recovers_a_known_linear_law():
    rng = np.random.default_rng(3)
    s1, s2 = tune.default_shortlist(32)[:2]
    p = len(tune.DESIGN_NAMES)
    laws = {s1: rng.normal(0, 0.3, p), s2: rng.normal(0, 0.3, p)}
    recs, feats = _synthetic_records(rng, laws)
    m = tune.CostModel.fit(recs, ridge=1e-10)
    for s, c in laws.items():
        assert np.allclose(m.coefficients(s), c, atol=1e-5)
    f = feats[0]
    for s, c in laws.items():
        assert m.predict_us(f, s) == pytest.approx(np.exp(tune.design(f) @ c), rel=1e-6)
    ranked = m.rank(f, [s1, s2])
    assert ranked[0] == min((s1, s2), key=lambda s: tune.design(f) @ laws[s])
    # noise: still close
    noisy = [dict(r, time_us=r["time_us"] * np.exp(rng.normal(0, 0.01))) for r in recs]
    m2 = tune.CostModel.fit(noisy, ridge=1e-6)
    assert np.max(np.abs(m2.coefficients(s1) - laws[s1])) < 0.2


def test_unknown_key_falls_back_to_family_or_nan():
    rng = np.random.default_rng(4)
    s = tune.default_shortlist(32)[0]
    other = dataclasses.replace(s, sort_rows=True)          # same family, another key
    assert tune.strategy_key(other) != tune.strategy_key(s)
    assert tune.strategy_family(other) == tune.strategy_family(s)
    c = rng.normal(0, 0.2, len(tune.DESIGN_NAMES))
    recs, feats = _synthetic_records(rng, {s: c}, n=30)
    recs.append(dict(features=feats[0], strategy=other, time_us=5.0))   # one point only
    m = tune.CostModel.fit(recs, min_samples=4)
    assert tune.strategy_key(other) not in m.coef and np.isfinite(m.predict_us(feats[1], other))
    far = tune.default_shortlist(32)[3]
    assert np.isnan(m.predict_us(feats[1], far))
    assert m.rank(feats[1], [far, s])[-1] == far            # unpredictable ones last


def test_a_family_needs_min_samples_points_too():
    """A family timed fewer than min_samples times predicts nothing: fitted on one point the
    ridge keeps its size terms at zero, a constant time for every matrix."""
    rng = np.random.default_rng(6)
    s, lone = tune.default_shortlist(32)[0], tune.default_shortlist(32)[3]
    assert tune.strategy_family(lone) != tune.strategy_family(s)
    recs, feats = _synthetic_records(rng, {s: rng.normal(0, 0.2, len(tune.DESIGN_NAMES))}, n=30)
    recs.append(dict(features=feats[0], strategy=lone, time_us=5.0))
    m = tune.CostModel.fit(recs, min_samples=4)
    assert tune.strategy_family(lone) not in m.family_coef
    assert np.isnan(m.predict_us(feats[1], lone))
    assert m.rank(feats[1], [lone, s]) == [s, lone]
    recs += [dict(r, strategy=lone, time_us=5.0 + i) for i, r in enumerate(recs[:3])]
    assert np.isfinite(tune.CostModel.fit(recs, min_samples=4).predict_us(feats[1], lone))


def test_model_json_round_trip(tmp_path):
    rng = np.random.default_rng(5)
    s = tune.default_shortlist(8)[0]
    recs, feats = _synthetic_records(rng, {s: rng.normal(0, .2, len(tune.DESIGN_NAMES))}, n=10)
    m = tune.CostModel.fit(recs, meta={"device": "test"})
    path = m.save(str(tmp_path / "m.json"))
    back = tune.load_model(path)
    assert back.predict_us(feats[2], s) == pytest.approx(m.predict_us(feats[2], s))
    assert back.meta == {"device": "test"}
    d = json.load(open(path))
    d["version"] = 99
    json.dump(d, open(path, "w"))
    with pytest.raises(OptionError, match="version"):
        tune.load_model(path)
    assert tune.load_model(str(tmp_path / "none.json")) is None


def test_strategy_dict_round_trip_and_shortlist_valid():
    A = sp.random(50, 40, density=0.2, format="csr", random_state=np.random.default_rng(0))
    A = A.tolil()
    A[5, :] = 0
    for N in (1, 3, 8, 32, 64):
        for dt in ("float32", "float16"):
            short = tune.default_shortlist(N, dt)
            assert len(set(short)) == len(short) and len(short) >= 4 - (N < 8)
            for s in short:
                assert tune.strategy_from_dict(tune.strategy_to_dict(s)) == s
                assert tune.supported(s)
                GS.plan(A.tocsr(), s, dtype=dt)                  # valid for any matrix


def test_shortlist_compact_variants_move_few_bytes():
    """On a 70 % sparse 16 x 4096 weight (rows of ~1200 nonzeros): the compact float16
    shortlist strategies read under 4.8 bytes per nonzero (1.45 per weight), against ~11
    for the plain layout (rows much shorter than 8 x 32 slots pay for their padding)."""
    W = sp.random(16, 4096, density=0.3, format="csr", random_state=np.random.default_rng(2), dtype=np.float32)
    for N in (8, 32, 64):
        short = tune.default_shortlist(N, "float16")
        compact = [s for s in short if s.compact]
        assert len(compact) == 2 * (2 + (N > 16)) and all(s.b_vector == 8 and s.vector_width == 8 for s in compact)
        assert [s.cyclic for s in compact] == [False] * (2 + (N > 16)) + [True] * (2 + (N > 16))
        plain = GS.plan(W, short[0], dtype="float16", lossy=True)
        assert plain.bytes_per_nnz > 10
        for s in compact:
            p = GS.plan(W, s, dtype="float16", lossy=True)
            assert p.col_bits == 16 and p.bytes_per_nnz < 4.8, (s.label, p.bytes_per_nnz)
            assert p.stored_bytes < 1.45 * W.shape[0] * W.shape[1]        # bytes per weight
    assert all(s.b_vector == 4 and s.thread_cols == 4 for s in tune.default_shortlist(32, "float32") if s.compact)
    assert all(s.b_vector == 1 for s in tune.default_shortlist(3, "float16") if s.compact)


def test_best_strategy_times_the_model_top_or_the_shortlist():
    A = sp.random(60, 50, density=0.3, format="csr", random_state=np.random.default_rng(1))
    calls = []

    def timer(P, s, N, dt):
        calls.append(s)
        return 10.0 if len(calls) == 2 else 20.0          # the second tried is fastest

    r = tune.best_strategy(A, 8, "float32", model=None, timer=timer)
    assert r.source == "shortlist" and calls == tune.default_shortlist(8, "float32")
    assert r.strategy == calls[1] and [t["rank"] for t in r.timed] == list(range(len(calls)))
    # a model fitted on one matrix where candidate i took 1 + i us: it ranks them in order
    cands = tune.candidates(A, 8, dtype="float32")
    feats = tune.features(A, 8)
    recs = [dict(features=feats, strategy=s, time_us=1.0 + i) for i, s in enumerate(cands)]
    m = tune.CostModel.fit(recs, min_samples=1)
    calls.clear()
    r = tune.best_strategy(A, 8, "float32", model=m, top=2, timer=timer, guard=False)
    assert r.source == "model" and len(calls) == 2 and r.n_candidates == len(cands)
    assert calls == m.rank(feats, cands)[:2] == cands[:2] and r.strategy == cands[1]
    calls.clear()       # guarded (the default): the anchors the model did not pick are timed too
    r = tune.best_strategy(A, 8, "float32", model=m, top=2, timer=timer)
    extra = [s for s in tune.anchors(8, "float32") if s not in cands[:2]]
    assert extra and calls == cands[:2] + extra and r.strategy == cands[1]
    assert [t["rank"] for t in r.timed] == [0, 1] + [None] * len(extra)
    assert [t["key"] for t in r.summary()["search_timed"]] == [tune.strategy_key(s) for s in calls]
    with pytest.raises(OptionError):
        tune.best_strategy(A, 8, "float32", model=None, timer=lambda *a: float("inf"))


def test_a_key_tells_whether_its_strategies_split_rows_across_blocks():
    """``key_splits_blocks`` (what the fit's evaluation reads from a record's key) agrees
    with ``block.split`` (what ``model_ranking`` reads from a strategy) on every candidate."""
    from spmvlab.generalsparse.model import key_splits_blocks
    A = sp.random(40, 36, density=0.3, format="csr", random_state=np.random.default_rng(3))
    cands = tune.candidates(A, 4, dtype="float32")
    assert {s.block.split for s in cands} == {True, False}
    assert all(key_splits_blocks(tune.strategy_key(s)) == s.block.split for s in cands)


def test_default_strategy_is_the_model_pick(monkeypatch):
    """The ``generalsparse`` method's default: the strategy the fitted model ranks first on
    the matrix (nothing timed), not the shortlist's fixed first entry; the shortlist's
    first only without a model; the next of the ranking where a pick does not plan."""
    from spmvlab.generalsparse import method as GM
    from spmvlab.methods.base import Problem
    A = sp.random(40, 36, density=0.3, format="csr", random_state=np.random.default_rng(3))
    cands = tune.candidates(A, 4, dtype="float32")
    feats = tune.features(A, 4, "float32")
    whole = [s for s in cands if not s.block.split]
    want = whole[len(whole) // 2]                 # the model learns this one is fastest
    split = next(s for s in cands if s.block.split)
    recs = [dict(features=feats, strategy=s, time_us=1.0 if s == want else 0.5 if s == split
                 else 5.0 + i) for i, s in enumerate(cands)]
    model = tune.CostModel.fit(recs, min_samples=1)
    assert model.rank(feats, cands)[0] == split
    ranked, source, pred = tune.model_ranking(A, 4, "float32", model=model)
    # rows split across blocks are never the untimed pick, however fast the model says
    assert source == "model" and ranked[0] == want and pred == pytest.approx(1.0, rel=0.05)
    assert split not in ranked and sorted(map(tune.strategy_key, ranked)) == sorted(
        map(tune.strategy_key, whole))
    assert want != tune.default_shortlist(4, "float32")[0]
    assert tune.model_ranking(A, 4, "float32", model=None) == (
        tune.default_shortlist(4, "float32"), "shortlist", None)
    monkeypatch.setattr(GM, "model_ranking", lambda A, N, dt: tune.model_ranking(A, N, dt, model=model))
    p = Problem.make(A, "float32", k=4)
    m = GM.GeneralSparse(p, "default")
    assert m.strategy == want and m.row_extra["pick_source"] == "model" and m.check().passed
    # a first pick that does not plan for the matrix: the next one runs
    real = GM.planner.plan_cached

    def refuse(A_, s, dt):
        if s == want:
            raise OptionError("not for this matrix")
        return real(A_, s, dt)
    monkeypatch.setattr(GM.planner, "plan_cached", refuse)
    m = GM.GeneralSparse(Problem.make(A, "float32", k=4), "default")
    assert m.strategy == ranked[1] and m.row_extra["predicted_us"] is None


def test_best_strategy_confirms_the_proxy_winners_on_the_matrix():
    A = sp.random(400, 50, density=0.3, format="csr", random_state=np.random.default_rng(3))
    short = tune.default_shortlist(8, "float32")
    proxy_us = {s: 10.0 + i for i, s in enumerate(short)}     # the sample ranks them in order
    full_us = {s: 100.0 - i for i, s in enumerate(short)}     # the matrix: the second is faster
    seen = []

    def timer(P, s, N, dt):
        whole = P.shape[0] == A.shape[0]
        seen.append((whole, s))
        return full_us[s] if whole else proxy_us[s]

    r = tune.best_strategy(A, 8, "float32", model=None, timer=timer, max_nnz=2000)
    assert [w for w, _ in seen] == [False] * len(short) + [True, True]
    assert [s for w, s in seen if w] == short[:2] and r.strategy == short[1]
    assert [t.get("full_us") for t in r.timed[:3]] == [100.0, 99.0, None]
    assert r.summary()["search_confirmed"] == 2 and r.proxy_rows < A.shape[0]
    seen.clear()
    r = tune.best_strategy(A, 8, "float32", model=None, timer=timer, max_nnz=2000, confirm=0)
    assert r.strategy == short[0] and all(not w for w, _ in seen)
    seen.clear()
    r = tune.best_strategy(A, 8, "float32", model=None, timer=timer)   # A is its own proxy
    assert r.strategy == short[-1] and len(seen) == len(short) and r.summary()["search_confirmed"] == 0


def test_guarded_search_keeps_an_anchor_when_the_model_picks_are_slow_on_the_matrix():
    # the model's picks win on the sample and lose on the matrix (nonzero-split strategies on
    # a 512-row sample of 9216x9216, fig14_gs at 2426572): an anchor is confirmed and kept
    A = sp.random(400, 50, density=0.3, format="csr", random_state=np.random.default_rng(4))
    cands = tune.candidates(A, 8, dtype="float32")
    picks = [s for s in cands if not s.compact][:3]
    anchors = tune.anchors(8, "float32")
    feats = tune.features(A, 8)
    m = tune.CostModel.fit([dict(features=feats, strategy=s, time_us=1.0 + i)
                            for i, s in enumerate(picks)], min_samples=1)
    seen, step = [], [5.0]

    def timer(P, s, N, dt):
        whole = P.shape[0] == A.shape[0]
        seen.append((whole, s))
        if s in anchors:
            i = anchors.index(s)
            return 50.0 - (i if step[0] < 1 else -i) if whole else 30.0 + step[0] * i
        return 500.0 if whole else 10.0

    r = tune.best_strategy(A, 8, "float32", model=m, top=3, timer=timer, max_nnz=2000)
    assert [s for w, s in seen if not w][:3] == m.rank(feats, cands)[:3]
    confirmed = [s for w, s in seen if w]
    assert len(confirmed) == 3 and confirmed[-1] == anchors[0] and r.strategy == anchors[0]
    assert r.summary()["search_confirmed"] == 3
    # anchors tied on the sample (within 10 % of the fastest): all confirmed, the matrix decides
    seen.clear()
    step[0] = 0.1
    r = tune.best_strategy(A, 8, "float32", model=m, top=3, timer=timer, max_nnz=2000)
    assert [s for w, s in seen if w][2:] == anchors and len(anchors) >= 4 and r.strategy == anchors[-1]
    seen.clear()
    r = tune.best_strategy(A, 8, "float32", model=m, top=3, timer=timer, max_nnz=2000, guard=False)
    assert r.strategy not in anchors and not any(s in anchors for _, s in seen)


def test_guarded_search_never_keeps_a_pick_slower_than_the_default():
    """The generalsparse method's untimed default (model_ranking's first pick on A) is timed
    with the search's candidates and always confirmed on A: where it is slow on the sample
    and the fastest on the matrix (as on 28672x7168 at N = 32 in fig14_gs, docs/performance.md
    "GeneralSparse search"), the search keeps it."""
    A = sp.random(400, 50, density=0.3, format="csr", random_state=np.random.default_rng(5))
    anchors = tune.anchors(8, "float32")
    cands = tune.candidates(tune.proxy(A, max_nnz=2000), 8, dtype="float32")
    split = next(s for s in cands if s.block.split)
    want = next(s for s in cands if not s.block.split and s not in anchors)
    feats = tune.features(A, 8)
    m = tune.CostModel.fit([dict(features=feats, strategy=s, time_us=0.5 if s == split else
                                 1.0 if s == want else 5.0 + i) for i, s in enumerate(cands)],
                           min_samples=1)
    assert tune.model_ranking(A, 8, "float32", model=m, max_nnz=2000)[0][0] == want
    seen = []

    def timer(P, s, N, dt):
        whole = P.shape[0] == A.shape[0]
        seen.append((whole, s))
        if s == want:
            return 20.0 if whole else 100.0
        if s in anchors:
            return 50.0 + anchors.index(s) if whole else 30.0 + 10 * anchors.index(s)
        return 500.0 if whole else 10.0

    r = tune.best_strategy(A, 8, "float32", model=m, top=1, timer=timer, max_nnz=2000)
    assert [s for w, s in seen if not w] == [split] + anchors + [want]
    assert [s for w, s in seen if w] == [split, anchors[0], want] and r.strategy == want
    entry = r.summary()["search_timed"][-1]
    assert entry["default"] and entry["rank"] is None and entry["full_us"] == 20.0
    assert entry["key"] == tune.strategy_key(want)
    assert not any(t.get("default") for t in r.summary()["search_timed"][:-1])
    # each try's wall seconds, on the sample and (where confirmed) on the matrix
    tries = r.summary()["search_timed"]
    assert all(t["s"] >= 0 for t in tries)
    assert [t["full_s"] is not None for t in tries] == [t["full_us"] is not None for t in tries]
    seen.clear()
    r = tune.best_strategy(A, 8, "float32", model=m, top=1, timer=timer, max_nnz=2000, guard=False)
    assert want not in [s for _, s in seen] and r.strategy == split


def test_proxy_keeps_columns_and_bounds_nnz():
    A = sp.random(5000, 300, density=0.05, format="csr", random_state=np.random.default_rng(2))
    P = tune.proxy(A, max_nnz=10000, run=64)
    assert P.shape[1] == 300 and P.nnz <= 12000 and P.shape[0] < 5000
    assert tune.proxy(A, max_nnz=10 ** 9) is not None and tune.proxy(A, 10 ** 9).shape == A.shape


def test_search_analysis():
    times = {"a": 10.0, "b": 20.0, "c": 10.5, "d": float("inf")}
    r = tune.search_analysis(times, ["b", "d", "c", "a"], {"a": 1.0, "b": 2.0, "c": 3.0, "d": 4.0})
    assert r["best_us"] == 10.0 and r["iterations_to_target"] == 3 and r["seconds_to_target"] == 9.0
    assert r["exhaustive_seconds"] == 10.0 and r["first_pick_us"] == 20.0
    assert not r["first_within_10pct"] and r["first_pick_rel"] == 0.5
    r = tune.search_analysis(times, ["c"])
    assert r["iterations_to_target"] == 1 and r["first_within_10pct"]
    assert tune.search_analysis(times, ["b"])["iterations_to_target"] is None


def test_plan_cached_shares_arrays_across_column_widths():
    A = sp.random(40, 30, density=0.3, format="csr", random_state=np.random.default_rng(6))
    s32, s64 = tune.default_shortlist(32)[0], tune.default_shortlist(64)[0]
    assert s32 != s64 and tune.sparse_signature(s32) == tune.sparse_signature(s64)
    p1 = tune.plan_cached(A, s32, "float32")
    p2 = tune.plan_cached(A, s64, "float32")
    assert p2.strategy == s64 and p2.cols is p1.cols
    p2.validate()                   # its own checksum, not the first plan's
    ref = GS.plan(A, s64, dtype="float32")
    B = np.random.default_rng(0).standard_normal((30, 64)).astype(np.float32)
    assert np.allclose(GS.spmm(p2, B), GS.spmm(ref, B), rtol=1e-5, atol=1e-5)


def test_generalsparse_method_checks_on_the_device():
    from spmvlab import methods
    from spmvlab.methods.base import Problem
    from spmvlab.generalsparse.method import GeneralSparse
    A = sp.random(24, 20, density=0.25, format="csr", random_state=np.random.default_rng(7))
    p = Problem.make(A, "float32", k=3)
    for s in (tune.default_shortlist(3)[0], tune.default_shortlist(3)[-1]):
        m = GeneralSparse(p, s)
        assert m.check().passed and m.row_extra["strategy"] == s.label
        assert m.format_bytes >= A.nnz * (4 + 4 + 4)
    m = GeneralSparse(p, tune.default_shortlist(3)[-1], optimize=False)
    assert m.check().passed and "loaded" in m.impl
    cv = next(s for s in tune.anchors(3, "float32") if s.vector_width > 1)
    m = GeneralSparse(p, cv, prefetch=True, batch=True)          # the code options, passed through
    assert m.check().passed and m.row_extra["prefetch"] and "prefetch" in m.impl
    assert m.row_extra["batch"] == (cv.b_vector > 1)
    assert "generalsparse" in methods.names() and "generalsparse_best" in methods.names()
    with pytest.raises(OptionError):
        GeneralSparse(Problem.make(A, "float32"), "default")      # SpMV problem


def test_anchor_formats_run_when_faster_than_the_search_pick():
    """search={"formats": ...}: a format timed faster than GeneralSparse's pick on the
    matrix runs in its place (and checks); a slower one, or one that does not take the
    problem (split24 has no float32 kernel), leaves GeneralSparse's kernel."""
    from spmvlab.methods.base import Problem
    from spmvlab.generalsparse.method import GeneralSparse
    A = sp.random(12, 10, density=0.4, format="csr", random_state=np.random.default_rng(8))
    p = Problem.make(A, "float32", k=2)
    fake = {"generalsparse": 5.0, "csr_vector": 3.0}

    def format_timer(m):
        return fake["generalsparse" if isinstance(m, GeneralSparse) else m.name]

    search = dict(timer=lambda A, s, N, dt: 1.0, model=None, top=1,
                  formats=("split24", "csr_vector"), format_timer=format_timer)
    m = GeneralSparse(p, "best", search=search)
    assert m.row_extra["picked_format"] == "csr_vector" and m.check().passed
    assert m.row_extra["search_formats"] == [dict(method="generalsparse", us=5.0),
                                             dict(method="split24", us=None),  # no float32 kernel
                                             dict(method="csr_vector", us=3.0)]
    assert "anchor format" in m.impl
    calls = []
    m._delegate.run = lambda: calls.append(1)            # run() is the format's
    m.run()
    assert calls == [1]
    fake["csr_vector"] = 9.0
    m = GeneralSparse(p, "best", search=search)
    assert m.row_extra["picked_format"] is None and "codegen" in m.impl and m.check().passed
    with pytest.raises(OptionError):
        GeneralSparse(p, "default", search={"formats": ("macko",)})


def test_search_hands_every_strategy_it_will_time_to_the_timers_prepare():
    """A timer with ``prepare`` (on the GPU: compile the tries' kernels in parallel first)
    gets, once and before any try, the sample, N, dtype and exactly the strategies the
    search then times on the sample, in that order; what it returns is kept as
    ``search_warm``."""
    A = sp.random(400, 50, density=0.3, format="csr", random_state=np.random.default_rng(5))
    cands = tune.candidates(tune.proxy(A, max_nnz=2000), 8, dtype="float32")
    m = tune.CostModel.fit([dict(features=tune.features(A, 8), strategy=s, time_us=1.0 + i)
                            for i, s in enumerate(cands)], min_samples=1)
    events = []

    def timer(P, s, N, dt):
        events.append(("time", P.shape, s))
        return 10.0 + len(events)

    def prepare(P, strategies, N, dt):
        events.append(("prepare", P.shape, list(strategies), N, dt))
        return dict(kernels=len(strategies), seconds=0.5)

    timer.prepare = prepare
    r = tune.best_strategy(A, 8, "float32", model=m, top=2, timer=timer, max_nnz=2000)
    assert events[0][0] == "prepare" and [e[0] for e in events].count("prepare") == 1
    sample = [e for e in events if e[0] == "time" and e[1][0] < A.shape[0]]
    assert events[0][1] == sample[0][1] and events[0][3:] == (8, np.dtype("float32"))
    assert events[0][2] == [e[2] for e in sample] and len(sample) >= 2 + 4   # picks + anchors
    assert r.summary()["search_warm"] == dict(kernels=len(sample), seconds=0.5)
    timer.prepare = lambda *a: None
    assert "search_warm" not in tune.best_strategy(A, 8, "float32", model=m, top=2, timer=timer,
                                                   max_nnz=2000).summary()


class _Pool:
    """A stand-in for the compile processes: records each task, answers at once."""

    def __init__(self, fail=()):
        self.tasks, self.fail = [], fail

    def submit(self, fn, *args):
        import concurrent.futures as cf
        self.tasks.append((fn, args))
        f = cf.Future()
        if args[3][0] in self.fail:
            f.set_exception(RuntimeError("worker died"))
        else:
            f.set_result(dict(compiled=1, loaded=0, failed=0))
        return f


def test_warm_prepare_compiles_each_new_kernel_once_on_a_sample_of_a(monkeypatch):
    from spmvlab.generalsparse import codegen, warm
    monkeypatch.setattr(warm, "_MET", set())
    monkeypatch.delenv(warm.WORKERS_ENV, raising=False)
    monkeypatch.setenv(codegen.CACHE_ENV, "/nonexistent/kernels")
    rng = np.random.default_rng(3)
    A = sp.random(600, 70, density=0.2, format="csr", random_state=rng)
    A = sp.vstack([sp.csr_matrix((5, 70)), A]).tocsr()          # empty first rows
    ss = tune.anchors(8, "float32")[:3]
    pool = _Pool(fail=(ss[1],))

    def task(*args):
        raise AssertionError("runs in the pool")

    assert warm.prepare(A, ss, 8, "float32", task, pool=pool) is None       # no workers asked for
    monkeypatch.setenv(warm.WORKERS_ENV, "1")
    assert warm.prepare(A, ss, 8, "float32", task, pool=pool) is None and not pool.tasks
    monkeypatch.setenv(warm.WORKERS_ENV, "4")
    got = warm.prepare(A, ss, 8, "float32", task, pool=pool)
    assert ({k: got[k] for k in ("kernels", "compiled", "failed")}
            == dict(kernels=3, compiled=2, failed=1))
    assert [a[3] for _, a in pool.tasks] == [[s] for s in ss]         # one strategy a task
    for fn, (S, n, dt, _) in pool.tasks:
        assert fn is task and (n, dt) == (8, "float32")
        assert S.shape == (warm.SAMPLE_ROWS, 70) and np.diff(S.indptr).min() > 0
        assert (S != A[5:5 + warm.SAMPLE_ROWS]).nnz == 0             # A's first non-empty rows
    pool.tasks.clear()
    assert warm.prepare(A, ss + tune.anchors(8, "float32")[3:4], 8, "float32", task,
                        pool=pool)["kernels"] == 1
    assert warm.prepare(A, ss, 8, "float32", task, pool=pool) is None       # all met before
    assert warm.prepare(A, ss[:1], 8, "float16", task, pool=pool)["kernels"] == 1   # another dtype
    assert os.environ[codegen.CACHE_ENV] == "/nonexistent/kernels"    # a cache set is kept
    from spmvlab.generalsparse.method import compile_on, gpu_timer
    ready = gpu_timer().prepare                         # bare kernels: compiled ahead
    assert ready.func is warm.prepare and ready.keywords == dict(task=compile_on)
    assert not hasattr(gpu_timer(optimize=True), "prepare")   # one kernel per plan: not


def test_compile_on_counts_what_failed():
    """A compile worker's task: each strategy's kernel launched once on the problem of the
    sample; one that cannot run is counted."""
    from spmvlab.generalsparse.method import compile_on
    A = sp.random(40, 30, density=0.3, format="csr", random_state=np.random.default_rng(6))
    got = compile_on(A, 8, "float32", [tune.anchors(8, "float32")[0], "not a strategy"])
    assert got == dict(compiled=1, loaded=0, failed=1)
