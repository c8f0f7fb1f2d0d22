"""GeneralSparse (Wang, Guo, Xiao, Chen, Tan) on the GPU: everything beyond the NumPy
reference of ``reference/generalsparse/`` (the strategy space, plans, the reductions lane by
lane) and ``reference/offsets.py`` (the code optimizer's offset patterns). The experiments'
shared parts are in ``experiments/_gs.py``.

Modules, each importing only the ones listed before it (and the reference):

* :mod:`.planner`    the fast planner (numba, CPU): ``reference.generalsparse.plan`` array
                     for array, quicker; :func:`~.planner.plan_cached`, one plan for every N;
* :mod:`.shortlist`  the fixed shortlist of strategies and its compact anchors;
* :mod:`.codegen`    the code generator (paper Sec. 3.5): a ``numba.cuda`` SpMM kernel per
                     plan or strategy, ``upload``, ``spmm``, ``launcher``, the compile
                     check's targets;
* :mod:`.features`   the matrix features of the cost model;
* :mod:`.model`      the cost model (paper Sec. 3.4): a regression per strategy, saved as
                     ``cost_model.json`` beside it;
* :mod:`.search`     the search: candidates ranked by the model, timed by a given timer;
* :mod:`.fit`        ``python -m spmvlab.generalsparse.fit``: fit the model on the timings of
                     ``experiments/search_gs.py`` and judge it on held-out matrices;
* :mod:`.method`     the timed method ``GeneralSparse`` (``spmvlab.methods`` names it
                     ``generalsparse``, ``generalsparse_best``) and :func:`~.method.gpu_timer`;
* :mod:`.tune`       the cost model and search in one namespace, the search timed by
                     :func:`~.method.gpu_timer` by default.

Importing this package imports none of them.
"""
