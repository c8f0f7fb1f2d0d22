"""GeneralSparse's search (paper Sec. 3.4 and 4.6): rank the strategies of a matrix with the
cost model, time the first few, keep the fastest.

``best_strategy(A, N, dtype)``
    With a fitted model (:func:`~.model.load_model`): the candidates
    (:func:`candidates`: ``strategies(A, N)`` that the code generator supports) ranked by
    predicted time, the first ``top`` timed on the GPU. Without one: the
    :func:`default_shortlist` timed in full. Large matrices are searched on a *proxy*
    (:func:`proxy`: evenly spaced runs of 256 consecutive rows, every column, at most
    ``max_nnz`` nonzeros): the candidates are listed and timed there, and only the winner is
    planned for the whole matrix. Returns a :class:`SearchResult`.

``search_analysis(times, order, costs)``
    Given the exhaustive timings of one (matrix, N), the order the model would time them in
    and what each try cost, the iterations and seconds until a strategy within 90 % of the
    exhaustive best has been timed, beside the exhaustive search's seconds (the comparison of
    the paper's Sec. 4.6).

The shortlist (no model yet) has up to fourteen strategies, the same for every matrix, written for N
columns with ``thread_cols = min(8, max(1, N' // 8))`` (N' = N rounded up to a power of two)
so that a thread-group has ``min(N', 8)`` lanes for every N >= 8 and one plan serves all
N >= 8 (:func:`sparse_signature`):

1. ``row/warp``   a block of one warp per row, the row cut among the warp's thread-groups
                  (THREAD_TOTAL + WARP_TOTAL; CSR-vector);
2. ``row/wg x4``  four warps per block, one row per warp (THREAD_TOTAL + WARP_TOTAL);
3. ``row/tg``     one row per thread-group, a block of 4 warps (THREAD_TOTAL; CSR-scalar);
4. ``nnz/tg``     nonzero-balanced: blocks of 4 nonzeros per thread-group, rows cut anywhere
                  (THREAD_BITMAP + WARP_SEGMENT, block ends added atomically);
5-6.              1 and 4 with one column per thread (a thread-group of min(N', 32) lanes);
7. ``row/blk x4`` one row per block of four warps, the row cut among the four warp-groups
                  and their thread-groups (THREAD_TOTAL + WARP_TOTAL + BLOCK_TOTAL: the
                  warp-groups' sums combined in shared memory; for long rows);
8. ``nnz/blk x4`` 4 with blocks of four warps (still 4 nonzeros per thread-group), rows
                  cut between warp-groups too (THREAD_BITMAP + WARP_SEGMENT + BLOCK_SEGMENT,
                  block ends added atomically);
9. ``row/warp cv``     1 with compact storage (16-bit columns where they fit, no per-slot
                       rows or flags), interleaved slots read ``V`` at a time (V = 16 bytes of
                       values: 8 for float16, 4 for float32), ``min(N', V)`` columns per thread
                       and B read with vector loads of ``gcd(N, columns per thread)`` values;
10. ``row/wg x4 cv``   2 the same way (four rows per block of four warps);
11. ``row/wg x4 cv16`` 10 with warps of 16 columns (blocks along ``grid.y`` take N / 16
                       column groups: A read N / 16 times, a block's slice of B 8x smaller,
                       so more of it stays in L1); only for N' > 16.
12-14. ``... cyc``     9-11 with the cyclic thread division (``reference.generalsparse``: the
                       thread-groups take a row's entries in turns of V, so a warp's step
                       reads V times T consecutive entries and gathers nearby rows of B).

The shortlist depends on the dtype (float16 by default) through 9-14.
"""
from __future__ import annotations

import dataclasses
import math
import time
import zlib

import numpy as np
import scipy.sparse as sp

import reference.generalsparse as GS
from reference._common import OptionError, canonical_csr, problem, resolve_dtype

from ..encoders.generalsparse import plan as fast_plan
from .features import features
from .model import CostModel, load_model, strategy_key

__all__ = ["SHORTLIST_NAMES", "default_shortlist", "supported", "sparse_signature", "proxy",
           "candidates", "SearchResult", "anchors", "best_strategy", "search_analysis", "plan_cached",
           "gpu_timer"]

SHORTLIST_NAMES = ("row/warp", "row/wg x4", "row/tg", "nnz/tg", "row/warp tc1", "nnz/tg tc1",
                   "row/blk x4", "nnz/blk x4", "row/warp cv", "row/wg x4 cv", "row/wg x4 cv16",
                   "row/warp cv cyc", "row/wg x4 cv cyc", "row/wg x4 cv16 cyc")
_BLOCK_ALGS = (GS.BLOCK_TOTAL, GS.BLOCK_BITMAP, GS.BLOCK_SEGMENT)


def _pow2(n: int) -> int:
    return 1 << max(int(n) - 1, 0).bit_length()


def _dense(N: int, thread_cols: int | None = None) -> dict:
    top = _pow2(N)
    tc = min(8, max(1, top // 8)) if thread_cols is None else thread_cols
    tc = min(tc, top)
    w = min(top, GS.WARP * tc)
    return dict(thread_cols=tc, warp_cols=w, block_cols=w)


def _compact_variant(N: int, dtype, name: str) -> GS.Strategy | None:
    S, M, SS = GS.Division("single", False), GS.Division("multi", False), GS.Division("single", True)
    v = 16 // np.dtype(dtype).itemsize
    top = _pow2(N)
    tc = min(v, top)
    if name.endswith(("cv16", "cv16 cyc")):
        if top <= 16:
            return None
        w = 16
    else:
        w = min(top, GS.WARP * tc)
    t = GS.WARP // (w // tc)
    thread = SS if t > 1 else S
    cyclic = name.endswith(" cyc")
    if cyclic and t == 1:
        return None
    dense = dict(thread_cols=tc, warp_cols=w, block_cols=w, compact=True, b_vector=math.gcd(int(N), tc),
                 interleave=t > 1, vector_width=v, cyclic=cyclic)
    if name.startswith("row/warp"):
        return GS.Strategy(block=S, warp=S, thread=thread, block_size=1, warps_per_block=1, **dense)
    return GS.Strategy(block=M, warp=S, thread=thread, block_size=4, warps_per_block=4, **dense)


def default_shortlist(N: int, dtype="float16") -> list:
    """The strategies of the module docstring, in that order (valid for every matrix; the
    compact ones for ``dtype``, float16 or float32)."""
    S, M = GS.Division("single", False), GS.Division("multi", False)
    SS, MS = GS.Division("single", True), GS.Division("multi", True)
    out = []
    for name in SHORTLIST_NAMES:
        if " cv" in name:
            s = _compact_variant(N, dtype, name)
            if s is not None and s not in out:
                out.append(s)
            continue
        dense = _dense(N, 1 if name.endswith("tc1") else None)
        t = GS.WARP // (dense["warp_cols"] // dense["thread_cols"])      # thread-groups per warp
        if name.startswith("row/warp"):
            s = GS.Strategy(block=S, warp=S, thread=SS if t > 1 else S, block_size=1,
                            warps_per_block=1, **dense)
        elif name == "row/wg x4":
            s = GS.Strategy(block=M, warp=S, thread=SS if t > 1 else S, block_size=4,
                            warps_per_block=4, **dense)
        elif name == "row/blk x4":
            s = GS.Strategy(block=S, warp=SS, thread=SS if t > 1 else S, block_size=1,
                            warps_per_block=4, **dense)
        elif name == "nnz/blk x4":
            s = GS.Strategy(block=MS, warp=MS, thread=MS if t > 1 else M, block_size=16 * t,
                            warps_per_block=4, **dense)
        elif name == "row/tg":
            s = GS.Strategy(block=M if 4 * t >= 2 else S, warp=M if t > 1 else S, thread=S,
                            block_size=4 * t if 4 * t >= 2 else 1, warps_per_block=4, **dense)
        else:   # nnz/tg
            s = GS.Strategy(block=MS, warp=M, thread=MS if t > 1 else M, block_size=4 * t,
                            warps_per_block=1, **dense)
        if s not in out:        # small N: the tc1 variants are the first ones
            out.append(s)
    return out


def supported(s: GS.Strategy, dtype="float32") -> bool:
    """The code generator builds this strategy (block reductions over several warp-groups
    included, where their shared slots fit: ``codegen.shared_bytes``)."""
    from ..codegen import SHARED_LIMIT, shared_bytes
    red = GS.select_reduction(s, 2)
    return not (red.block in _BLOCK_ALGS and s.groups_per_block > 1
                and shared_bytes(s, dtype) > SHARED_LIMIT)


def sparse_signature(s: GS.Strategy) -> GS.Strategy:
    """The strategy with what ``plan`` does not depend on (columns per thread, warp and
    block) set to canonical values: equal signatures give the same plan arrays."""
    return dataclasses.replace(s, thread_cols=1, warp_cols=s.group_lanes,
                               block_cols=s.group_lanes * s.group_warps, b_vector=1)


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


# --------------------------------------------------------------------------------------
# plans, reused across N
# --------------------------------------------------------------------------------------

_PLANS: dict = {}
_PLAN_SLOTS = 2


def _fingerprint(A: sp.csr_matrix, dtype) -> tuple:
    def crc(a):
        return zlib.crc32(np.ascontiguousarray(a).view(np.uint8))
    return (A.shape, np.dtype(dtype).name, A.nnz, crc(A.indptr), crc(A.indices), crc(A.data))


def plan_cached(A, s: GS.Strategy, dtype, lossy: bool = True) -> GS.Plan:
    """``plan(A, s)`` (the fast planner ``spmvlab.encoders.generalsparse.plan``, equal to
    the reference's), reusing the last plans made for the same matrix (by content) and the
    same :func:`sparse_signature` (the arrays are shared, only the strategy differs)."""
    dt = resolve_dtype(A, dtype)
    csr = canonical_csr(A, dt, lossy)
    key = (_fingerprint(csr, dt), sparse_signature(s))
    held = _PLANS.get(key)
    if held is None:
        held = fast_plan(csr, s, dtype=dt, lossy=lossy)
        while len(_PLANS) >= _PLAN_SLOTS:
            _PLANS.pop(next(iter(_PLANS)))
        _PLANS[key] = held
    return held if held.strategy == s else dataclasses.replace(held, strategy=s)


# --------------------------------------------------------------------------------------
# the search
# --------------------------------------------------------------------------------------


@dataclasses.dataclass
class SearchResult:
    """What :func:`best_strategy` found: ``strategy`` the fastest timed; ``timed`` one dict
    per try (label, key, us, seconds, predicted_us, rank, and ``full_us`` where it was timed
    again on the whole matrix); ``source`` "model" or
    "shortlist"; ``seconds`` the whole search; ``proxy_rows``/``proxy_nnz`` the matrix timed
    (A itself when small)."""

    strategy: GS.Strategy
    timed: list
    source: str
    seconds: float
    n_candidates: int
    proxy_rows: int
    proxy_nnz: int

    def summary(self) -> dict:
        return dict(search_source=self.source, search_tried=len(self.timed),
                    search_candidates=self.n_candidates, search_s=round(self.seconds, 3),
                    search_proxy_rows=self.proxy_rows, search_proxy_nnz=self.proxy_nnz,
                    search_confirmed=sum("full_us" in t for t in self.timed),
                    strategy=self.strategy.label, strategy_key=strategy_key(self.strategy),
                    search_timed=[dict(key=t["key"], rank=t["rank"], us=_round(t["us"]),
                                       full_us=_round(t.get("full_us")),
                                       predicted_us=_round(t.get("predicted_us")))
                                  for t in self.timed])


def _round(v):
    """A timing for the results files: 0.1 us, None for none or not finite (JSON)."""
    return None if v is None or not np.isfinite(v) else round(float(v), 1)


def gpu_timer(reps: int = 10, warmup: int = 2, optimize: bool = False, keep=None):
    """A timer for :func:`best_strategy`: ``timer(A, strategy, N, dtype) -> microseconds``
    (median, cold L2) of the generated kernel through the ``GeneralSparse`` method (its
    GPU check must pass, else the strategy counts as infinitely slow). ``optimize`` False
    (the default): the bare strategy's kernel (offsets loaded), as the cost model's timings
    were taken (``experiments/search_gs.py``); compiled once per strategy and dtype, so the
    searches of other matrices and N that try the same strategy compile nothing (an
    optimized kernel is compiled per plan, so a search that timed those paid a compile per
    try: docs/performance.md, "GeneralSparse search"). The method
    that runs the chosen strategy applies the code optimizer to it. ``keep``: a
    ``Problem`` of the searched matrix; the problem of the timed sample is kept among its
    shared values (``Problem.shared``), so the searches for the other N of that matrix
    (``Problem.with_rhs``) reuse the sample's plans (the same X and timings either way)."""
    cache = {}

    def timer(A, s, N, dtype):
        from ..methods.base import Problem
        from ..methods.generalsparse import GeneralSparse
        key = (id(A), int(N), np.dtype(dtype).name)
        p = cache.get(key)
        if p is None and keep is not None and A is keep.A and keep.dtype == np.dtype(dtype):
            p = keep if keep.k == int(N) else keep.with_rhs(int(N), seed=1)   # the matrix itself
        if p is None:
            cache.clear()
            if keep is None:
                p = Problem.make(A, dtype, k=int(N), seed=1, lossy=True)
            else:
                dt = np.dtype(dtype)
                base = keep.shared(("search_sample", _fingerprint(A, dt)),
                                   lambda: Problem.make(A, dt, k=int(N), seed=1, lossy=True))
                p = base if base.k == int(N) else base.with_rhs(int(N), seed=1)
            cache[key] = p
        m = GeneralSparse(p, strategy=s, optimize=optimize)
        if not m.check().passed:
            return float("inf")
        return m.time(reps=reps, warmup=warmup, cold=True).median_us

    return timer


def anchors(N: int, dtype="float16") -> list:
    """The strategies every model-ranked search times beside the model's picks: the compact
    entries of :func:`default_shortlist` (9-14: rows per warp or warp-group, 16-bit columns,
    vector loads), which won most weight-matrix cases of ``experiments/search_gs.py``. They
    bound what a wrong ranking can cost: where the model's top picks on the row sample are
    all nonzero-split strategies, the one kept can be many times slower than CSR SpMM on
    the matrix (a case is in docs/performance.md, "GeneralSparse search")."""
    return [s for s in default_shortlist(N, dtype) if s.compact]


def best_strategy(A, N: int, dtype="float16", *, model="default", top: int = 4,
                  timer=None, max_nnz: int = 2_000_000, where=None, confirm: int = 2,
                  guard: bool = True, tie: float = 0.1) -> SearchResult:
    """The fastest of the model's ``top`` candidates (or of the default shortlist when
    ``model`` is None or no model has been fitted), timed by ``timer`` (default
    :func:`gpu_timer`) on :func:`proxy` ``(A, max_nnz)``. ``where``: a predicate on
    strategies, only those it accepts are considered (e.g. an ablation's sub-space;
    without a model: the accepted candidates, ``top`` of them evenly spaced in the
    listing order of ``strategies``).

    When the proxy is a sample (A has more than ``max_nnz`` nonzeros), the ``confirm``
    fastest on the proxy are timed again on A itself and the fastest there is kept: a
    sample of at most ``max_nnz`` nonzeros runs so briefly that launch and tail effects can
    rank strategies otherwise than on the whole matrix (a nonzero-split strategy can win on
    the sample and lose to CSR SpMM on the matrix: docs/performance.md, "GeneralSparse
    search"). ``timed`` entries get ``full_us``.

    ``guard`` (model-ranked searches only): the :func:`anchors` not among the model's picks
    are timed too (their entries have ``rank`` None), and every one of them within ``tie``
    (10 %) of the fastest of them on the proxy is confirmed on A with the others, so the kept
    strategy is never slower than the best of those anchors measured on A. (A row sample
    does not rank the anchors: on long rows they take alike times on it and differ widely on
    the matrix, where the cyclic ones are fast: docs/probes.md.)"""
    t0 = time.perf_counter()
    if model == "default":
        model = load_model()
    if model is not None and not isinstance(model, CostModel):
        raise OptionError(problem("model", "'default', None or a CostModel", type(model).__name__))
    if top < 1:
        raise OptionError(problem("top", "at least 1", top))
    timer = timer or gpu_timer()
    dt = resolve_dtype(A, dtype)
    P = proxy(canonical_csr(A, dt, True), max_nnz)
    if model is None and where is None:
        ranked, source, predicted = default_shortlist(N, dt), "shortlist", {}
        n_cand = len(ranked)
    elif model is None:
        cands = [s for s in candidates(P, N, dtype=dt) if where(s)]
        pick = np.unique(np.linspace(0, len(cands) - 1, min(top, len(cands))).astype(int)) if cands else []
        ranked, source, predicted, n_cand = [cands[i] for i in pick], "listing", {}, len(cands)
    else:
        cands = [s for s in candidates(P, N, dtype=dt) if where is None or where(s)]
        feats = features(P, N, dt)      # the matrix timed, as in training
        predicted = {s: model.predict_us(feats, s) for s in cands}
        ranked, source, n_cand = model.rank(feats, cands)[:top], "model", len(cands)
    n_ranked = len(ranked)
    if guard and source == "model":
        ranked += [s for s in anchors(N, dt) if s not in ranked and (where is None or where(s))]
    def attempt(M, s) -> tuple[float, float]:
        """(microseconds of ``s`` on ``M``, seconds the try took)."""
        t1 = time.perf_counter()
        try:
            us = float(timer(M, s, N, dt))
        except OptionError:        # the strategy does not fit this matrix
            us = float("inf")
        return us, time.perf_counter() - t1

    timed = []
    for i, s in enumerate(ranked):
        us, secs = attempt(P, s)
        timed.append(dict(label=s.label, key=strategy_key(s), us=us, seconds=secs,
                          predicted_us=predicted.get(s), rank=i if i < n_ranked else None))
    finite = [i for i, r in enumerate(timed) if np.isfinite(r["us"])]
    if not finite:
        raise OptionError(problem("best_strategy", "at least one strategy that runs",
                                  "none of " + ", ".join(r["label"] for r in timed)))
    best = min(finite, key=lambda i: timed[i]["us"])
    if confirm > 0 and P.shape[0] < A.shape[0] and len(finite) > 1:
        again = sorted(finite, key=lambda i: timed[i]["us"])[:confirm]
        guards = [i for i in finite if i >= n_ranked]
        if guards:
            fastest = min(timed[i]["us"] for i in guards)
            again += [i for i in guards if timed[i]["us"] <= (1 + tie) * fastest and i not in again]
        for i in again:
            timed[i]["full_us"], secs = attempt(A, ranked[i])
            timed[i]["seconds"] += secs
        full = [i for i in finite if np.isfinite(timed[i].get("full_us", float("inf")))]
        if full:
            best = min(full, key=lambda i: timed[i]["full_us"])
    return SearchResult(strategy=ranked[best], timed=timed, source=source,
                        seconds=time.perf_counter() - t0, n_candidates=n_cand,
                        proxy_rows=int(P.shape[0]), proxy_nnz=int(P.nnz))


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
