"""GeneralSparse (Wang, Guo, Xiao, Chen, Tan): the memory access space and the reduction space
of SpMM ``C = A @ B`` (A sparse M x K, B dense K x N row-major), as plain data and readable
NumPy. The fast planner, the code generator, the cost model and the search of
``spmvlab.generalsparse`` build on this package; the code optimizer's offset patterns are in
``reference/offsets.py``.

Modules, each importing only the ones listed before it:

* :mod:`.divide`      the offset arithmetic of a plan: the row adjustments, the block, warp
                      and thread divisions (paper Fig. 7c), the cyclic thread division, the
                      slot padding and the storage order;
* :mod:`.space`       the memory access space (Sec. 3.2): :class:`Division`,
                      :class:`Strategy`, and :func:`strategies`, the points worth trying for
                      a matrix and N;
* :mod:`.reductions`  the reduction space (Sec. 3.3): the algorithms lane by lane
                      (:func:`tree_sum`, :func:`bitmap_reduce`, :func:`segment_reduce`,
                      :func:`thread_reduce`) and the selection rules (:func:`select_reduction`);
* :mod:`.plan`        :func:`plan`: a strategy applied to a matrix, a :class:`Plan` (checked
                      and checksummed), compact storage and :func:`decode_compact`;
* :mod:`.execute`     :func:`execute` runs a plan level by level; :func:`spmm` is the product
                      computed that way.

Every public name is importable from here (``import reference.generalsparse as GS;
GS.plan(A, GS.Strategy())``), and so are the helpers the fast planner shares with the
reference (``_row_adjust``, ``_divide``, ``_pad_slots``, ``column_bases``, ``cyclic_entry``).

Plain NumPy/SciPy; no numba.
"""
from .divide import _divide, _pad_slots, _row_adjust, cyclic_entry, cyclic_lengths  # noqa: F401
from .execute import Execution, execute, spmm
from .plan import SPAN16, Plan, column_bases, decode_compact, plan
from .reductions import (
    ALGORITHMS, BLOCK_BITMAP, BLOCK_SEGMENT, BLOCK_TOTAL, THREAD_BITMAP, THREAD_TOTAL, WARP_BITMAP,
    WARP_SEGMENT, WARP_TOTAL, Partials, Reduction, bitmap_reduce, segment_reduce, select_reduction,
    thread_reduce, tree_sum,
)
from .space import ROWS, WARP, Division, Strategy, strategies

__all__ = [
    "WARP", "ROWS", "Division", "Strategy", "Reduction", "Plan", "Partials", "Execution",
    "THREAD_TOTAL", "THREAD_BITMAP", "WARP_TOTAL", "WARP_BITMAP", "WARP_SEGMENT",
    "BLOCK_TOTAL", "BLOCK_BITMAP", "BLOCK_SEGMENT", "ALGORITHMS",
    "plan", "strategies", "select_reduction", "spmm", "execute", "decode_compact", "SPAN16",
    "tree_sum", "bitmap_reduce", "segment_reduce", "thread_reduce",
    "column_bases", "cyclic_entry", "cyclic_lengths",
]
