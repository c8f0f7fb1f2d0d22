"""GeneralSparse's cost model (paper Sec. 3.4): one linear regression per strategy, from the
matrix features (:mod:`.features`) to the logarithm of the measured kernel time.

Strategies are keyed by :func:`strategy_key`, which leaves out what ``strategies(A, N)``
derives from N (the column widths of a warp and a block, and the block size expressed in
nonzeros or rows of the block's geometry): the same kind of kernel for N = 8, 32 and 64
shares one regression, and N is one of its inputs. A key with fewer than ``min_samples``
training points falls back to the regression of its *family* (the three divisions and the
columns per thread), fitted on every point of the family; a family with fewer than
``min_samples`` points is not fitted either, and its strategies are unpredictable (NaN,
ranked last).

The fit is ordinary least squares with a small ridge term on everything but the constant
(``np.linalg.lstsq`` on the design matrix stacked over ``sqrt(ridge) * I``), on log(time):
time grows like a product of powers of the size features.

The fitted model is a small JSON file (:data:`MODEL_PATH`, ``"version"``
:data:`MODEL_VERSION`) written only by :mod:`.fit` (``--write``) from the timings of
``experiments/search_gs.py``; :func:`load_model` returns None while it does not exist.
"""
from __future__ import annotations

import dataclasses
import json
import os

import numpy as np

import reference.generalsparse as GS
from reference._common import OptionError, problem

from .features import DESIGN_NAMES, design

__all__ = ["MODEL_VERSION", "MODEL_PATH", "strategy_key", "key_splits_blocks", "strategy_family",
           "strategy_to_dict", "strategy_from_dict", "CostModel", "load_model"]

MODEL_VERSION = 1
MODEL_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cost_model.json")


def strategy_to_dict(s: GS.Strategy) -> dict:
    """Every field of a strategy as plain JSON values (divisions as "rows/split")."""
    d = dataclasses.asdict(s)
    for level in ("block", "warp", "thread"):
        div = getattr(s, level)
        d[level] = f"{div.rows}/{'split' if div.split else 'nonsplit'}"
    return d


def strategy_from_dict(d: dict) -> GS.Strategy:
    """The inverse of :func:`strategy_to_dict`."""
    kw = dict(d)
    for level in ("block", "warp", "thread"):
        rows, split = kw[level].split("/")
        kw[level] = GS.Division(rows, split == "split")
    return GS.Strategy(**kw)


def _block_size_rel(s: GS.Strategy) -> str:
    per = s.groups_per_block * s.groups_per_warp       # thread-groups per block
    if not s.block.split:
        if s.block.rows == "single":
            return "row"
        if s.block_size == s.groups_per_block:
            return "row/wg"
        if s.block_size == per:
            return "row/tg"
        return f"rows{s.block_size}"
    if s.block_size % per == 0:
        return f"nnz{s.block_size // per}/tg"
    return f"nnz{s.block_size}"


def strategy_family(s: GS.Strategy) -> str:
    """The coarse key: the three divisions and the columns per thread."""
    return f"B:{s.block.label} W:{s.warp.label} T:{s.thread.label} tc{s.thread_cols}"


def strategy_key(s: GS.Strategy) -> str:
    """A key shared by the strategies of one kind across N (see the module docstring)."""
    adj = "".join(c for c, on in (("s", s.sort_rows), ("p", s.pad_empty_rows), ("i", s.interleave),
                                  ("c", s.compact), ("y", s.cyclic)) if on)
    if s.b_vector > 1:         # B read as wide as the thread's columns allow (N-dependent)
        adj += "b"
    return (f"{strategy_family(s)} bs:{_block_size_rel(s)} x{s.warps_per_block}w"
            f" L{s.group_lanes} G{s.group_warps} v{s.vector_width}{(' ' + adj) if adj else ''}")


def key_splits_blocks(key: str) -> bool:
    """Whether the strategies of :func:`strategy_key` ``key`` split rows across blocks
    (``block.split``): its first word is ``B:<block.label>``, ``<rows>/split`` or
    ``<rows>/nonsplit``."""
    return key.split()[0].endswith("/split")


def _fit(X: np.ndarray, y: np.ndarray, ridge: float) -> np.ndarray:
    """Least squares of y on X with ``ridge`` on every coefficient but the first (constant)."""
    p = X.shape[1]
    reg = np.sqrt(ridge) * np.eye(p)[1:]
    Xa = np.vstack([X, reg])
    ya = np.concatenate([y, np.zeros(p - 1)])
    coef, *_ = np.linalg.lstsq(Xa, ya, rcond=None)
    return coef


@dataclasses.dataclass
class CostModel:
    """Per-key and per-family coefficients over :data:`~.features.DESIGN_NAMES`.

    ``predict_us(features, strategy)`` returns the predicted time in microseconds (NaN when
    neither the key nor its family was fitted); ``rank`` orders strategies by it."""

    coef: dict                       # strategy_key -> [len(DESIGN_NAMES)] coefficients
    family_coef: dict                # strategy_family -> coefficients
    samples: dict                    # key -> training points
    design_names: tuple = DESIGN_NAMES
    version: int = MODEL_VERSION
    meta: dict = dataclasses.field(default_factory=dict)

    @classmethod
    def fit(cls, records, *, ridge: float = 1e-3, min_samples: int = 4, meta: dict | None = None):
        """``records``: iterable of dicts with ``features`` (a feature dict), ``time_us``
        (> 0) and ``strategy`` (a Strategy) or its ``key`` and ``family`` strings."""
        by_key, by_family = {}, {}
        for r in records:
            t = float(r["time_us"])
            if not np.isfinite(t) or t <= 0:
                continue
            s = r.get("strategy")
            key = r["key"] if s is None else strategy_key(s)
            family = r["family"] if s is None else strategy_family(s)
            row = (design(r["features"]), np.log(t))
            by_key.setdefault(key, []).append(row)
            by_family.setdefault(family, []).append(row)
        if not by_key:
            raise OptionError(problem("records", "at least one timing with time_us > 0", "none"))

        def fit_all(groups, least):
            out = {}
            for k, rows in groups.items():
                if len(rows) >= least:
                    X = np.array([x for x, _ in rows])
                    y = np.array([v for _, v in rows])
                    out[k] = [float(c) for c in _fit(X, y, ridge)]
            return out

        # a family needs min_samples points too: fitted on fewer, the ridge leaves its size
        # terms near zero and it predicts one constant time for every matrix, so a kernel far
        # slower on a large matrix can look fastest and become the untimed default
        # (docs/performance.md, "GeneralSparse search", has the case that showed it)
        return cls(coef=fit_all(by_key, min_samples), family_coef=fit_all(by_family, min_samples),
                   samples={k: len(v) for k, v in by_key.items()}, meta=dict(meta or {}))

    def coefficients(self, s):
        """The coefficients used for a Strategy (or a (key, family) pair); None if unfitted."""
        key, family = (s if isinstance(s, tuple) else (strategy_key(s), strategy_family(s)))
        c = self.coef.get(key)
        if c is None:
            c = self.family_coef.get(family)
        return None if c is None else np.asarray(c)

    def predict_us(self, feats: dict, s) -> float:
        """Predicted microseconds of a Strategy (or a (key, family) pair) on ``feats``."""
        c = self.coefficients(s)
        if c is None:
            return float("nan")
        return float(np.exp(design(feats) @ c))

    def rank(self, feats: dict, strategies) -> list:
        """``strategies`` sorted by predicted time (unpredictable ones last, in their order)."""
        pred = [self.predict_us(feats, s) for s in strategies]
        order = sorted(range(len(pred)), key=lambda i: (not np.isfinite(pred[i]), pred[i]
                                                        if np.isfinite(pred[i]) else 0.0, i))
        return [strategies[i] for i in order]

    # ---- JSON
    def to_dict(self) -> dict:
        return dict(version=self.version, design_names=list(self.design_names), meta=self.meta,
                    coef=self.coef, family_coef=self.family_coef, samples=self.samples)

    @classmethod
    def from_dict(cls, d: dict) -> "CostModel":
        if d.get("version") != MODEL_VERSION:
            raise OptionError(problem("cost model version", MODEL_VERSION, d.get("version"),
                                      "re-fit it with experiments/search_gs.py"))
        if tuple(d.get("design_names", ())) != DESIGN_NAMES:
            raise OptionError(problem("cost model design_names", list(DESIGN_NAMES),
                                      d.get("design_names"), "re-fit it with experiments/search_gs.py"))
        return cls(coef=d["coef"], family_coef=d["family_coef"], samples=d.get("samples", {}),
                   meta=d.get("meta", {}))

    def save(self, path: str = MODEL_PATH) -> str:
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(self.to_dict(), f, indent=1, sort_keys=True)
            f.write("\n")
        os.replace(tmp, path)
        return path


def load_model(path: str = MODEL_PATH):
    """The saved :class:`CostModel`, or None when no model has been fitted yet."""
    if not os.path.isfile(path):
        return None
    with open(path) as f:
        return CostModel.from_dict(json.load(f))
