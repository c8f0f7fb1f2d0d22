"""GeneralSparse's cost model and search (paper Sec. 3.4, 4.6) in one namespace, over the
strategy space of ``reference.generalsparse`` and the kernels of :mod:`.codegen`, with the
search timed on the GPU unless told otherwise.

* :mod:`.features`  -- matrix features (:func:`features`, :func:`design`);
* :mod:`.model`     -- per-strategy linear regression on log time (:class:`CostModel`), saved
  as ``spmvlab/generalsparse/cost_model.json`` by ``python -m spmvlab.generalsparse.fit``
  from the timings of ``experiments/search_gs.py`` (:func:`load_model`: None until then);
* :mod:`.shortlist` -- the fixed :func:`default_shortlist` and its compact :func:`anchors`;
* :mod:`.planner`   -- :func:`plan_cached` and :func:`sparse_signature` (one plan for every N);
* :mod:`.search`    -- :func:`candidates`, :func:`proxy`, :func:`search_analysis` and the
  search itself, which takes its timer as an argument;
* :mod:`.method`    -- :func:`gpu_timer`, which times a strategy through the
  ``GeneralSparse`` method.

:func:`best_strategy` here is :func:`.search.best_strategy` with :func:`gpu_timer` as the
default timer. This module sits above the method (it imports it); the search and the method
import nothing from here.
"""
from __future__ import annotations

from . import search as _search
from .features import DESIGN_NAMES, FEATURE_NAMES, design, features
from .method import gpu_timer
from .model import (MODEL_PATH, MODEL_VERSION, CostModel, load_model, strategy_family,
                    strategy_from_dict, strategy_key, strategy_to_dict)
from .planner import plan_cached, sparse_signature
from .search import SearchResult, candidates, model_ranking, proxy, search_analysis, supported
from .shortlist import SHORTLIST_NAMES, anchors, default_shortlist

__all__ = ["FEATURE_NAMES", "DESIGN_NAMES", "features", "design", "MODEL_PATH", "MODEL_VERSION",
           "CostModel", "load_model", "strategy_key", "strategy_family", "strategy_to_dict",
           "strategy_from_dict", "SHORTLIST_NAMES", "default_shortlist", "supported",
           "sparse_signature", "proxy", "candidates", "plan_cached", "SearchResult",
           "anchors", "best_strategy", "model_ranking", "gpu_timer", "search_analysis"]


def best_strategy(A, N: int, dtype="float16", *, timer=None, **options) -> SearchResult:
    """:func:`.search.best_strategy` (``options``: its keyword arguments), each candidate
    timed by ``timer`` (default: a fresh :func:`gpu_timer`, the generated kernel's median
    time on the GPU)."""
    return _search.best_strategy(A, N, dtype, timer=timer or gpu_timer(), **options)
