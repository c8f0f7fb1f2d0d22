"""GeneralSparse's cost model and search (paper Sec. 3.4, 4.6) over the strategy space of
``reference.generalsparse`` and the kernels of ``spmvlab.codegen``.

* :mod:`.features` -- matrix features (:func:`features`, :func:`design`);
* :mod:`.model`    -- per-strategy linear regression on log time (:class:`CostModel`), saved
  as ``spmvlab/tune/cost_model.json`` by ``experiments/search_gs.py`` (:func:`load_model`:
  None until then);
* :mod:`.search`   -- :func:`best_strategy` (model ranking + timing the top few, or the
  :func:`default_shortlist` without a model), :func:`search_analysis`.
"""
from .features import DESIGN_NAMES, FEATURE_NAMES, design, features
from .model import (MODEL_PATH, MODEL_VERSION, CostModel, load_model, strategy_family,
                    strategy_from_dict, strategy_key, strategy_to_dict)
from .search import (SHORTLIST_NAMES, SearchResult, anchors, best_strategy, candidates,
                     default_shortlist, gpu_timer, plan_cached, proxy, search_analysis,
                     sparse_signature, supported)

__all__ = ["FEATURE_NAMES", "DESIGN_NAMES", "features", "design", "MODEL_PATH", "MODEL_VERSION",
           "CostModel", "load_model", "strategy_key", "strategy_family", "strategy_to_dict",
           "strategy_from_dict", "SHORTLIST_NAMES", "default_shortlist", "supported",
           "sparse_signature", "proxy", "candidates", "plan_cached", "SearchResult",
           "anchors", "best_strategy", "gpu_timer", "search_analysis"]
