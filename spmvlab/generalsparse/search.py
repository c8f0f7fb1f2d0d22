"""GeneralSparse's search (paper Sec. 3.4 and 4.6): rank the strategies of a matrix with the
cost model, time the first few, keep the fastest.

``best_strategy(A, N, dtype, timer=...)``
    With a fitted model (:func:`~.model.load_model`): the candidates
    (:func:`candidates`: ``strategies(A, N)`` that the code generator supports) ranked by
    predicted time, the first ``top`` timed by ``timer``. Without one: the
    :func:`~.shortlist.default_shortlist` timed in full. Large matrices are searched on a
    *proxy* (:func:`proxy`: evenly spaced runs of 256 consecutive rows, every column, at most
    ``max_nnz`` nonzeros): the candidates are listed and timed there, and only the winner is
    planned for the whole matrix. Returns a :class:`SearchResult`.

``model_ranking(A, N, dtype)``
    The untimed choice (the ``generalsparse`` method's default): the candidates ranked by
    the model's predicted time on A's own features, the fixed shortlist where no model has
    been fitted.

``search_analysis(times, order, costs)``
    Given the exhaustive timings of one (matrix, N), the order the model would time them in
    and what each try cost, the iterations and seconds until a strategy within 90 % of the
    exhaustive best has been timed, beside the exhaustive search's seconds (the comparison of
    the paper's Sec. 4.6).

The search knows nothing of how a strategy is timed: the GPU timer, which builds the
``GeneralSparse`` method, is :func:`.method.gpu_timer`, and :func:`.tune.best_strategy` is
this search timed by it unless told otherwise.
"""
from __future__ import annotations

import dataclasses
import time

import numpy as np
import scipy.sparse as sp

import reference.generalsparse as GS
from reference._common import OptionError, canonical_csr, problem, resolve_dtype

from .codegen import SHARED_LIMIT, shared_bytes
from .features import features
from .model import CostModel, load_model, strategy_key
from .shortlist import anchors, default_shortlist

__all__ = ["supported", "proxy", "candidates", "model_ranking", "first_that_plans", "SearchResult",
           "best_strategy", "search_analysis"]

_BLOCK_ALGS = (GS.BLOCK_TOTAL, GS.BLOCK_BITMAP, GS.BLOCK_SEGMENT)


def supported(s: GS.Strategy, dtype="float32") -> bool:
    """The code generator builds this strategy (block reductions over several warp-groups
    included, where their shared slots fit: ``codegen.shared_bytes``)."""
    red = GS.select_reduction(s, 2)
    return not (red.block in _BLOCK_ALGS and s.groups_per_block > 1
                and shared_bytes(s, dtype) > SHARED_LIMIT)


def proxy(A, max_nnz: int = 2_000_000, run: int = 256) -> sp.csr_matrix:
    """A row sample of A with at most ``max_nnz`` nonzeros: evenly spaced runs of ``run``
    consecutive rows (every column), A itself when it is small enough."""
    A = A.tocsr() if sp.issparse(A) else sp.csr_matrix(A)
    if A.nnz <= max_nnz:
        return A
    m = A.shape[0]
    keep_rows = max(run, int(m * max_nnz / max(A.nnz, 1)))
    runs = max(1, keep_rows // run)
    starts = np.linspace(0, max(m - run, 0), runs).astype(np.int64)
    rows = np.unique((starts[:, None] + np.arange(run)[None, :]).ravel())
    return A[rows[rows < m]]


def candidates(A, N: int, dtype=None, lossy: bool = True) -> list:
    """``strategies(A, N)`` that the generator supports (A small: use :func:`proxy` first)."""
    dt = resolve_dtype(A, dtype)
    return [s for s in GS.strategies(A, N, dtype=dt, lossy=lossy) if supported(s, dt)]


def model_ranking(A, N: int, dtype="float16", *, model="default", max_nnz: int = 2_000_000):
    """(strategies best first, source, predicted microseconds of the first or None) for
    (A, N), nothing timed: :func:`candidates` of :func:`proxy` ``(A, max_nnz)`` (the
    strategies the search would consider) that keep each row within one block, ranked by
    ``model`` on the features of A itself (the matrix that will run; ``model="default"``:
    :func:`~.model.load_model`), source "model"; without a fitted model the
    :func:`~.shortlist.default_shortlist`, source "shortlist".

    Strategies that split rows across blocks (``block.split``: partial sums added
    atomically in global memory) are left out: the model was fitted on matrices of at most
    a few hundred thousand nonzeros, and on LLM shapes with N = 32 its block-split pick
    took 25-50x the time of CSR SpMM; the timed search (:func:`best_strategy`) still tries
    them. On the held-out matrices of the committed campaign the pick without them stays
    close to the exhaustive best, where the shortlist's first entry (one fixed kernel for
    every matrix) is several times slower (docs/performance.md, "GeneralSparse search")."""
    if model == "default":
        model = load_model()
    if model is not None and not isinstance(model, CostModel):
        raise OptionError(problem("model", "'default', None or a CostModel", type(model).__name__))
    dt = resolve_dtype(A, dtype)
    if model is None:
        return default_shortlist(N, dt), "shortlist", None
    C = canonical_csr(A, dt, True)
    feats = features(C, N, dt)
    ranked = _whole_rows_ranked(model, feats, candidates(proxy(C, max_nnz), N, dtype=dt))
    if not ranked:
        return default_shortlist(N, dt), "shortlist", None
    first = model.predict_us(feats, ranked[0])
    return ranked, "model", (first if np.isfinite(first) else None)


def _whole_rows_ranked(model: CostModel, feats, cands: list) -> list:
    """``cands`` that keep each row within one block, best first by ``model`` on ``feats``
    (:func:`model_ranking`'s order; the guarded search's default pick)."""
    return model.rank(feats, [s for s in cands if not s.block.split])


def first_that_plans(ranked: list, plan) -> tuple:
    """``(strategy, plan(strategy))`` for the first of ``ranked`` (e.g. :func:`model_ranking`'s)
    that ``plan`` accepts: a pick that does not plan for the matrix raises
    :class:`OptionError` and the next one is tried; the last one's error when none does."""
    for i, s in enumerate(ranked):
        try:
            return s, plan(s)
        except OptionError:
            if i == len(ranked) - 1:
                raise


# --------------------------------------------------------------------------------------
# the search
# --------------------------------------------------------------------------------------


@dataclasses.dataclass
class SearchResult:
    """What :func:`best_strategy` found: ``strategy`` the fastest timed; ``timed`` one dict
    per try (label, key, us, seconds, predicted_us, rank, default, and ``full_us`` and
    ``full_seconds`` where it was timed again on the whole matrix: the seconds are each
    try's wall time, plan, compile, check and timing together); ``source`` "model" or
    "shortlist"; ``seconds`` the whole search; ``proxy_rows``/``proxy_nnz`` the matrix timed
    (A itself when small); ``warm`` what the timer's ``prepare`` did before the tries
    (:func:`.warm.prepare`'s counts and seconds; None where it did nothing). :meth:`summary`
    keeps the seconds per try as ``s`` and ``full_s`` (where a search's time goes)."""

    strategy: GS.Strategy
    timed: list
    source: str
    seconds: float
    n_candidates: int
    proxy_rows: int
    proxy_nnz: int
    warm: dict | None = None

    def summary(self) -> dict:
        warm = {"search_warm": self.warm} if self.warm else {}
        return dict(**warm, search_source=self.source, search_tried=len(self.timed),
                    search_candidates=self.n_candidates, search_s=round(self.seconds, 3),
                    search_proxy_rows=self.proxy_rows, search_proxy_nnz=self.proxy_nnz,
                    search_confirmed=sum("full_us" in t for t in self.timed),
                    strategy=self.strategy.label, strategy_key=strategy_key(self.strategy),
                    search_timed=[dict(key=t["key"], rank=t["rank"], us=_round(t["us"]),
                                       full_us=_round(t.get("full_us")),
                                       predicted_us=_round(t.get("predicted_us")),
                                       s=round(t["seconds"], 2),
                                       full_s=(round(t["full_seconds"], 2)
                                               if "full_seconds" in t else None),
                                       **({"default": True} if t.get("default") else {}))
                                  for t in self.timed])


def _round(v):
    """A timing for the results files: 0.1 us, None for none or not finite (JSON)."""
    return None if v is None or not np.isfinite(v) else round(float(v), 1)


def best_strategy(A, N: int, dtype="float16", *, timer, model="default", top: int = 4,
                  max_nnz: int = 2_000_000, where=None, confirm: int = 2,
                  guard: bool = True, tie: float = 0.1) -> SearchResult:
    """The fastest of the model's ``top`` candidates (or of the default shortlist when
    ``model`` is None or no model has been fitted), timed by ``timer`` (``timer(A, strategy,
    N, dtype) -> microseconds``; on the GPU :func:`.method.gpu_timer`) on :func:`proxy`
    ``(A, max_nnz)``; a ``timer.prepare(P, strategies, N, dtype)``, where the timer has one, is
    called first with every strategy the search will time (on the GPU: their kernels
    compiled in parallel processes, :func:`.warm.prepare`). ``where``: a predicate on
    strategies, only those it accepts are considered (e.g. an ablation's sub-space;
    without a model: the accepted candidates, ``top`` of them evenly spaced in the
    listing order of ``strategies``).

    When the proxy is a sample (A has more than ``max_nnz`` nonzeros), the ``confirm``
    fastest on the proxy are timed again on A itself and the fastest there is kept: a
    sample of at most ``max_nnz`` nonzeros runs so briefly that launch and tail effects can
    rank strategies otherwise than on the whole matrix (a nonzero-split strategy can win on
    the sample and lose to CSR SpMM on the matrix: docs/performance.md, "GeneralSparse
    search"). ``timed`` entries get ``full_us``.

    ``guard`` (model-ranked searches only): the :func:`~.shortlist.anchors` not among the model's picks
    are timed too (their entries have ``rank`` None), and every one of them within ``tie``
    (10 %) of the fastest of them on the proxy is confirmed on A with the others, so the kept
    strategy is never slower than the best of those anchors measured on A. (A row sample
    does not rank the anchors: on long rows they take alike times on it and differ widely on
    the matrix, where the cyclic ones are fast: docs/probes.md.) The ``generalsparse``
    method's untimed default, :func:`model_ranking`'s first pick on A, is timed as well
    (where ``where`` accepts it) and always confirmed on A, so the search never keeps a
    strategy it measured slower than that default (the default ranks on A's features, the
    search on the sample's, so the two can differ; its entry has ``default`` True)."""
    t0 = time.perf_counter()
    if model == "default":
        model = load_model()
    if model is not None and not isinstance(model, CostModel):
        raise OptionError(problem("model", "'default', None or a CostModel", type(model).__name__))
    if top < 1:
        raise OptionError(problem("top", "at least 1", top))
    dt = resolve_dtype(A, dtype)
    C = canonical_csr(A, dt, True)
    P = proxy(C, max_nnz)
    if model is None and where is None:
        ranked, source, predicted = default_shortlist(N, dt), "shortlist", {}
        n_cand = len(ranked)
    elif model is None:
        cands = [s for s in candidates(P, N, dtype=dt) if where(s)]
        pick = np.unique(np.linspace(0, len(cands) - 1, min(top, len(cands))).astype(int)) if cands else []
        ranked, source, predicted, n_cand = [cands[i] for i in pick], "listing", {}, len(cands)
    else:
        every = candidates(P, N, dtype=dt)
        cands = [s for s in every if where is None or where(s)]
        feats = features(P, N, dt)      # the matrix timed, as in training
        predicted = {s: model.predict_us(feats, s) for s in cands}
        ranked, source, n_cand = model.rank(feats, cands)[:top], "model", len(cands)
    n_ranked = n_guarded = len(ranked)  # the model's picks, then the anchors, then the default
    default = None
    if guard and source == "model":
        ranked += [s for s in anchors(N, dt) if s not in ranked and (where is None or where(s))]
        n_guarded = len(ranked)
        whole = _whole_rows_ranked(model, features(C, N, dt), every)
        pick = whole[0] if whole else default_shortlist(N, dt)[0]     # model_ranking's first
        if where is None or where(pick):
            if pick not in ranked:
                ranked.append(pick)
            default = ranked.index(pick)
    def attempt(M, s) -> tuple[float, float]:
        """(microseconds of ``s`` on ``M``, seconds the try took)."""
        t1 = time.perf_counter()
        try:
            us = float(timer(M, s, N, dt))
        except OptionError:        # the strategy does not fit this matrix
            us = float("inf")
        return us, time.perf_counter() - t1

    prepare = getattr(timer, "prepare", None)       # e.g. compile the tries' kernels at once
    warmed = prepare(P, ranked, N, dt) if prepare is not None else None
    timed = []
    for i, s in enumerate(ranked):
        us, secs = attempt(P, s)
        timed.append(dict(label=s.label, key=strategy_key(s), us=us, seconds=secs,
                          predicted_us=predicted.get(s), rank=i if i < n_ranked else None,
                          default=i == default))
    finite = [i for i, r in enumerate(timed) if np.isfinite(r["us"])]
    if not finite:
        raise OptionError(problem("best_strategy", "at least one strategy that runs",
                                  "none of " + ", ".join(r["label"] for r in timed)))
    best = min(finite, key=lambda i: timed[i]["us"])
    if confirm > 0 and P.shape[0] < A.shape[0] and len(finite) > 1:
        again = sorted(finite, key=lambda i: timed[i]["us"])[:confirm]
        guards = [i for i in finite if n_ranked <= i < n_guarded]
        if guards:
            fastest = min(timed[i]["us"] for i in guards)
            again += [i for i in guards if timed[i]["us"] <= (1 + tie) * fastest and i not in again]
        if default in finite and default not in again:
            again.append(default)
        for i in again:
            timed[i]["full_us"], timed[i]["full_seconds"] = attempt(A, ranked[i])
        full = [i for i in finite if np.isfinite(timed[i].get("full_us", float("inf")))]
        if full:
            best = min(full, key=lambda i: timed[i]["full_us"])
    return SearchResult(strategy=ranked[best], timed=timed, source=source,
                        seconds=time.perf_counter() - t0, n_candidates=n_cand,
                        proxy_rows=int(P.shape[0]), proxy_nnz=int(P.nnz), warm=warmed)


def search_analysis(times: dict, order: list, costs: dict | None = None,
                    fraction: float = 0.9) -> dict:
    """``times`` {key: us} of an exhaustive run, ``order`` the keys in the order a search
    times them, ``costs`` {key: seconds one try took} (default 0). Returns the exhaustive
    best, the iterations and seconds until a strategy with ``best / us >= fraction`` has
    been timed (None if never), the exhaustive seconds, and how close the first pick is."""
    finite = {k: float(v) for k, v in times.items() if v is not None and np.isfinite(v) and v > 0}
    if not finite:
        raise OptionError(problem("times", "at least one finite timing", "none"))
    costs = costs or {}
    best = min(finite.values())
    spent, hit, hit_s = 0.0, None, None
    for i, k in enumerate(order, 1):
        spent += float(costs.get(k, 0.0))
        if k in finite and best / finite[k] >= fraction:
            hit, hit_s = i, spent
            break
    first = finite.get(order[0]) if order else None
    return dict(best_us=best, n_strategies=len(finite), iterations_to_target=hit,
                seconds_to_target=hit_s,
                exhaustive_seconds=float(sum(costs.get(k, 0.0) for k in times)),
                first_pick_us=first, first_pick_rel=(best / first) if first else None,
                first_within_10pct=bool(first is not None and first <= 1.1 * best))
