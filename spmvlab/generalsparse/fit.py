"""Fit the cost model from the exhaustive timings of ``experiments/search_gs.py`` and judge it
on held-out matrices.

    python -m spmvlab.generalsparse.fit [results/h200/search_gs.json] [--write] [--top 4]

Without ``--write`` it only prints the held-out evaluation (the model fitted on the training
matrices, judged on the held-out ones: the config's ``holdout_every``-th matrices). The
ridge term of the regressions is chosen by 4-fold cross-validation over the training
matrices alone (:func:`choose_ridge`; the held-out ones never take part in the choice). With
``--write`` it then fits on every matrix and writes ``spmvlab/generalsparse/cost_model.json`` (the
only writer of that file), recording the results file's device, date and git hash.

The evaluation (:func:`evaluate`), per held-out (matrix, N):

* ``accuracy``            1 - median |predicted / measured - 1| over its strategies
                          (the paper's "accuracy rate is approximately 90 %");
* ``within10``            share of its strategies predicted within 10 %;
* ``pick_rel``            exhaustive best / time of the model's first pick (1 = the best);
* ``default_rel``         the same for the first of the model's order among the strategies
                          that keep rows within a block (the ``generalsparse`` method's
                          untimed default, ``search.model_ranking``);
* ``shortlist_rel``       the same for the first of ``shortlist.default_shortlist`` (the
                          ``generalsparse`` method's default before the model's pick; None
                          where the results did not time it);
* ``top_rel``             the same for the best of the model's first ``top`` (what
                          ``best_strategy(guard=False)`` keeps);
* ``search_rel``          the same for the best of those, the anchors
                          (``shortlist.anchors``) the results timed and the untimed default
                          above: what the guarded ``best_strategy`` keeps; ``anchors``
                          counts the anchors timed (search_gs times them all with
                          ``anchors=True``);
* the search analysis     iterations and seconds (each try: its measured plan and timing
                          seconds plus one kernel's compile seconds, ``_compile_s``) until a
                          strategy within 90 % of the best is timed, in the model's order;
                          the exhaustive seconds for comparison.
"""
from __future__ import annotations

import argparse
import sys

import numpy as np

from .model import MODEL_PATH, CostModel, key_splits_blocks, strategy_key
from .search import search_analysis
from .shortlist import anchors, default_shortlist

__all__ = ["timing_records", "split_matrices", "choose_ridge", "evaluate", "fit_all", "main", "RIDGES"]


def timing_records(rows: list) -> tuple[dict, list]:
    """(features by (matrix, n), timing records) from search_gs rows."""
    feats = {(r["matrix"], r["n"]): r["features"] for r in rows if r.get("method") == "features"}
    recs = []
    for r in rows:
        if r.get("method") != "gs" or (r["matrix"], r["n"]) not in feats:
            continue
        ok = r.get("check_passed") is not False and r.get("us") is not None
        recs.append(dict(matrix=r["matrix"], n=r["n"], key=r["key"], family=r["family"],
                         dtype=r.get("dtype"),
                         features=feats[(r["matrix"], r["n"])],
                         time_us=float(r["us"]) if ok else float("inf"),
                         cost_s=float(r.get("build_s", 0.0)) + float(r.get("time_s", 0.0))
                         + (0.0 if r.get("first") else float(r.get("check_s") or 0.0)),
                         check_s=r.get("check_s"), first=r.get("first")))
    return feats, recs


def split_matrices(matrices: list, every: int) -> tuple[list, list]:
    """(training, held-out): every ``every``-th matrix (the last of each group) held out."""
    held = [m for i, m in enumerate(matrices) if every and i % every == every - 1]
    return [m for m in matrices if m not in held], held


def _compile_s(recs, results: dict | None = None) -> float:
    """Seconds to compile one kernel: from the campaign's parallel compile step where a run
    compiled every kernel itself (``compile`` of a part, or of the file, with ``loaded`` 0:
    seconds x workers / compiled, summed over such runs); else the median check seconds of
    a kernel's first use minus that of later uses."""
    results = results or {}
    runs = [(p.get("extra") or {}).get("compile") for p in results.get("parts") or []] \
        if results.get("parts") else [results.get("compile")]
    runs = [c for c in runs if c]
    fresh = [c for c in runs if c.get("loaded") == 0 and c.get("compiled")]
    if fresh:
        return sum(c["seconds"] * c["workers"] for c in fresh) / sum(c["compiled"] for c in fresh)
    first = [r["check_s"] for r in recs if r.get("first") and r.get("check_s") is not None]
    later = [r["check_s"] for r in recs if r.get("first") is False and r.get("check_s") is not None]
    if not first:
        return 0.0
    return max(0.0, float(np.median(first)) - (float(np.median(later)) if later else 0.0))


#: the ridge terms :func:`choose_ridge` compares
RIDGES = (1e-3, 1e-2, 0.1, 1.0, 3.0, 10.0)


def _judge(model: CostModel, recs: list, matrices: list, top: int, per_compile: float = 0.0) -> list:
    """One dict per (matrix, N) of ``matrices``: how the model's ranking of its strategies
    compares with their measured times (module docstring)."""
    out = []
    for m in matrices:
        for n in sorted({r["n"] for r in recs if r["matrix"] == m}):
            rs = [r for r in recs if r["matrix"] == m and r["n"] == n]
            fin = [r for r in rs if np.isfinite(r["time_us"])]
            if not fin:
                continue
            pred = {r["key"]: model.predict_us(r["features"], (r["key"], r["family"])) for r in rs}
            rel = [abs(pred[r["key"]] / r["time_us"] - 1) for r in fin if np.isfinite(pred[r["key"]])]
            order = sorted(rs, key=lambda r: (not np.isfinite(pred[r["key"]]), pred[r["key"]]
                                              if np.isfinite(pred[r["key"]]) else 0.0))
            keys = [r["key"] for r in order]
            times = {r["key"]: r["time_us"] for r in rs}
            costs = {r["key"]: r["cost_s"] + per_compile for r in rs}
            a = search_analysis(times, keys, costs)
            best = a["best_us"]
            top_best = min(times[k] for k in keys[:top])
            guards = _anchor_keys(n, rs[0].get("dtype")) & set(times)
            whole = [k for k in keys if not key_splits_blocks(k) and np.isfinite(pred[k])]
            dt = rs[0].get("dtype")
            first = strategy_key(default_shortlist(int(n), dt)[0]) if dt else None
            search_best = min([top_best] + [times[k] for k in guards]
                              + [times[k] for k in whole[:1]])
            out.append(dict(matrix=m, n=n, strategies=len(rs),
                            accuracy=1 - float(np.median(rel)) if rel else None,
                            within10=float(np.mean(np.array(rel) <= 0.1)) if rel else None,
                            pick_rel=a["first_pick_rel"],
                            default_rel=(best / times[whole[0]] if whole
                                         and np.isfinite(times[whole[0]]) else None),
                            shortlist_rel=(best / times[first] if first in times
                                           and np.isfinite(times[first]) else None),
                            top_rel=best / top_best if np.isfinite(top_best) else 0.0,
                            pick_within_10pct=a["first_within_10pct"],
                            top_within_10pct=bool(top_best <= 1.1 * best),
                            anchors=len(guards),
                            search_rel=best / search_best if np.isfinite(search_best) else 0.0,
                            search_within_10pct=bool(search_best <= 1.1 * best),
                            iterations_to_90=a["iterations_to_target"], seconds_to_90=a["seconds_to_target"],
                            exhaustive_s=a["exhaustive_seconds"], best_us=best))
    return out


def _anchor_keys(n: int, dtype) -> set:
    """The strategy keys of ``shortlist.anchors(n, dtype)`` (none without a dtype)."""
    if not dtype:
        return set()
    return {strategy_key(s) for s in anchors(int(n), dtype)}


def choose_ridge(recs: list, matrices: list, folds: int = 4, top: int = 4,
                 ridges=RIDGES) -> tuple[float, list]:
    """The ridge term by ``folds``-fold cross-validation over ``matrices`` (every
    ``folds``-th matrix in a fold; only these matrices' timings are used): the largest share
    of (matrix, N) whose best of the model's top ``top`` is within 10 % of the best, ties
    broken by the median accuracy, then by the smaller ridge. Returns (ridge, one row per
    ridge with its cross-validated ``top_within_10pct`` and ``median_accuracy``)."""
    table = []
    for ridge in ridges:
        cases = []
        for f in range(min(folds, len(matrices))):
            test = matrices[f::folds]
            train = [m for m in matrices if m not in test]
            fitted = [r for r in recs if r["matrix"] in train]
            if not train or not any(np.isfinite(r["time_us"]) for r in fitted):
                continue
            cases += _judge(CostModel.fit(fitted, ridge=ridge), recs, test, top)
        acc = [c["accuracy"] for c in cases if c["accuracy"] is not None]
        table.append(dict(ridge=ridge, top_within_10pct=float(np.mean([c["top_within_10pct"] for c in cases]))
                          if cases else 0.0, median_accuracy=float(np.median(acc)) if acc else 0.0))
    best = max(table, key=lambda t: (round(t["top_within_10pct"], 9), round(t["median_accuracy"], 9),
                                     -t["ridge"]))
    return best["ridge"], table


def _slowdowns(rels) -> np.ndarray:
    """Measured time / exhaustive best of the cases with a timed pick (``rels``: best / time)."""
    r = np.array([float(x) for x in rels if x], dtype=np.float64)
    return 1.0 / r[r > 0]


def _geomean_slowdown(rels):
    s = _slowdowns(rels)
    return float(np.exp(np.log(s).mean())) if s.size else None


def _worst_slowdown(rels):
    s = _slowdowns(rels)
    return float(s.max()) if s.size else None


_EVALUATED: dict = {}


def evaluate(results: dict, top: int = 4) -> dict:
    """Fit on the training matrices (ridge chosen by :func:`choose_ridge` on them alone),
    judge on the held-out ones (see the module docstring). Remembered per results content
    and ``top``."""
    meta = results.get("meta") or {}
    memo = (meta.get("date_utc"), meta.get("git_hash"), top, repr(results.get("parts")),
            repr(results.get("compile")), repr(results["config"]),
            hash(tuple((r.get("method"), r.get("matrix"), r.get("n"), r.get("key"), r.get("us"),
                        r.get("check_passed")) for r in results["rows"])))
    if memo in _EVALUATED:
        return _EVALUATED[memo]
    cfg = results["config"]
    _, recs = timing_records(results["rows"])
    mats = [m for m in cfg["matrices"] if any(r["matrix"] == m for r in recs)]
    train, held = split_matrices(mats, cfg.get("holdout_every", 4))
    ridge, ridge_cv = choose_ridge(recs, train, top=top)
    model = CostModel.fit([r for r in recs if r["matrix"] in train], ridge=ridge)
    per_compile = _compile_s(recs, results)
    out = _judge(model, recs, held, top, per_compile)
    summary = {}
    if out:
        def share(k):
            return float(np.mean([bool(r[k]) for r in out]))
        acc = [r["accuracy"] for r in out if r["accuracy"] is not None]
        its = [r["iterations_to_90"] for r in out if r["iterations_to_90"] is not None]
        secs = [r["seconds_to_90"] for r in out if r["seconds_to_90"] is not None]
        summary = dict(train_matrices=len(train), held_out_matrices=len(held), cases=len(out),
                       median_accuracy=float(np.median(acc)) if acc else None,
                       pick_within_10pct=share("pick_within_10pct"),
                       pick_geomean_slowdown=_geomean_slowdown(r["pick_rel"] for r in out),
                       pick_worst_slowdown=_worst_slowdown(r["pick_rel"] for r in out),
                       default_geomean_slowdown=_geomean_slowdown(r["default_rel"] for r in out),
                       default_worst_slowdown=_worst_slowdown(r["default_rel"] for r in out),
                       shortlist_first_cases=sum(r["shortlist_rel"] is not None for r in out),
                       shortlist_first_geomean_slowdown=_geomean_slowdown(
                           r["shortlist_rel"] for r in out),
                       shortlist_first_worst_slowdown=_worst_slowdown(r["shortlist_rel"] for r in out),
                       top_within_10pct=share("top_within_10pct"),
                       search_within_10pct=share("search_within_10pct"),
                       cases_with_anchors=int(sum(r["anchors"] > 0 for r in out)),
                       median_iterations_to_90=float(np.median(its)) if its else None,
                       median_seconds_to_90=float(np.median(secs)) if secs else None,
                       median_exhaustive_s=float(np.median([r["exhaustive_s"] for r in out])),
                       compile_s_per_kernel=per_compile, top=top, ridge=ridge)
    _EVALUATED[memo] = dict(cases=out, summary=summary, ridge_cv=ridge_cv)
    return _EVALUATED[memo]


def fit_all(results: dict, top: int = 4) -> CostModel:
    """The model fitted on every matrix of the results (what ``--write`` saves), its ridge
    chosen by :func:`choose_ridge` over all of them."""
    _, recs = timing_records(results["rows"])
    meta = results.get("meta") or {}
    mats = [m for m in results["config"]["matrices"] if any(r["matrix"] == m for r in recs)]
    ridge, _ = choose_ridge(recs, mats, top=top)
    return CostModel.fit(recs, ridge=ridge, meta=dict(
        source="experiments/search_gs.py", device=(meta.get("device") or {}).get("name"),
        date_utc=meta.get("date_utc"), git_hash=meta.get("git_hash"),
        matrices=len({r["matrix"] for r in recs}), timings=len(recs), ridge=ridge))


def main(argv=None) -> int:
    from .. import experiment as X
    p = argparse.ArgumentParser(prog="python -m spmvlab.generalsparse.fit", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("results", nargs="?", default=None, help="search_gs results (default: the h200 ones)")
    p.add_argument("--write", action="store_true", help=f"write {MODEL_PATH}")
    p.add_argument("--top", type=int, default=4, help="candidates best_strategy times")
    a = p.parse_args(argv)
    res = X.load_results(a.results) if a.results else X.load_results("search_gs", "h200")
    ev = evaluate(res, a.top)
    for k, v in ev["summary"].items():
        print(f"{k:>26}: {v}")
    print("ridge by 4-fold cross-validation over the training matrices: " +
          ", ".join(f"{t['ridge']:g} (top {t['top_within_10pct']:.2f}, accuracy {t['median_accuracy']:.2f})"
                    for t in ev["ridge_cv"]))
    if a.write:
        dev = ((res.get("meta") or {}).get("device") or {}).get("name") or ""
        if "H200" not in dev:
            print(f"refusing to write the model from results of {dev or 'no GPU'} (H200 timings only)",
                  file=sys.stderr)
            return 1
        path = fit_all(res, a.top).save(MODEL_PATH)
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
