"""A GeneralSparse plan run level by level on NumPy, the reference every generated kernel is
tested against: :func:`execute` forms the products, runs the thread level, the warp level
over each warp-group's thread-groups and the block level over each block's warp-groups
(:mod:`.reductions`), then writes the block ends (plain stores, or atomic additions where
blocks split rows), recording how every row of C was written; :func:`spmm` is the product
computed that way.

**Accumulation**: float32 for float16/float32 values (float64 for float64), the products in
the accumulator type; atomic additions go to an accumulator-typed C that is rounded to the
value type once at the end.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from .._common import OptionError, accumulator_dtype, check_operand, problem
from .plan import Plan, decode_compact, plan
from .reductions import _combine, _violation, thread_reduce
from .space import Strategy

__all__ = ["Execution", "execute", "spmm"]


class _Output:
    """C in the accumulator type, with a record of how every row was written."""

    def __init__(self, plan: Plan, n_cols: int, acc):
        self.plan = plan
        self.C = np.zeros((plan.shape[0], n_cols), dtype=acc)
        self.stores = np.zeros(plan.shape[0], dtype=np.int64)
        self.atomic = np.zeros(plan.shape[0], dtype=bool)

    def store(self, rows, values):
        rows = self.plan.row_order[rows]
        self.C[rows] = values
        np.add.at(self.stores, rows, 1)

    def add(self, rows, values):
        rows = self.plan.row_order[rows]
        with np.errstate(invalid="ignore", over="ignore"):
            np.add.at(self.C, rows, values)
        self.atomic[rows] = True


@dataclasses.dataclass(frozen=True)
class Execution:
    """The outcome of :func:`execute`: ``C`` (value dtype) and how each row of C was written:
    ``stores`` (plain stores per row) and ``atomic`` (rows that received atomic additions)."""

    C: np.ndarray
    stores: np.ndarray
    atomic: np.ndarray


def execute(p: Plan, B) -> Execution:
    """Run plan ``p`` on ``B`` (K x N, A's value dtype, C-contiguous) level by level: the
    products in the accumulator type, the thread level, the warp level over each
    warp-group's thread-groups, the block level over each block's warp-groups, then the
    block ends (plain stores, or atomic additions where blocks split rows)."""
    B = check_operand(B, p.shape[1], p.dtype, name="B", ndim=2)
    acc = accumulator_dtype(p.dtype)
    n_cols = B.shape[1]
    out = _Output(p, n_cols, acc)
    if p.strategy.compact:        # what the compact arrays say, not the plan's full ones
        view = decode_compact(p)

        def logical(name):
            return (view[name] if name in view else getattr(p, name))[p.storage]
    else:
        logical = p.logical
    real = ~logical("pad")
    products = np.zeros((p.n_slots, n_cols), dtype=acc)
    with np.errstate(invalid="ignore", over="ignore"):
        products[real] = (logical("values")[real].astype(acc)[:, None]
                          * np.asarray(B)[logical("cols")[real]].astype(acc))
    red, s = p.reduction, p.strategy
    parts = thread_reduce(products, logical("rows"), logical("row_start"), p.thread_offset,
                          red.thread, out)
    parts = _combine(parts, s.groups_per_warp, red.warp, "warp", out)
    parts = _combine(parts, s.groups_per_block, red.block, "block", out)
    for rows, vals in ((parts.lead_row, parts.lead), (parts.tail_row, parts.tail)):
        keep = rows >= 0
        if red.atomic:
            out.add(rows[keep], vals[keep])
        elif rows is parts.lead_row and keep.any():
            raise _violation("block", red.block, "a block beginning inside a row without atomics")
        else:
            out.store(rows[keep], vals[keep])
    if not p.zero_init and np.any((out.stores == 0) & ~out.atomic):
        raise OptionError(problem("Plan.zero_init", "True where a row is never written",
                                  "False", "build the plan with plan()"))
    with np.errstate(over="ignore"):
        C = out.C.astype(p.dtype)
    return Execution(C=C, stores=out.stores, atomic=out.atomic)


def spmm(A, B, strategy: Strategy | None = None, dtype=None, lossy: bool = False) -> np.ndarray:
    """C = A @ B computed the way ``strategy`` computes it (``A`` a matrix, or a
    :class:`Plan` with ``strategy`` omitted). C has A's value dtype."""
    if isinstance(A, Plan):
        if strategy is not None and strategy != A.strategy:
            raise OptionError(problem("strategy", "None or the plan's own strategy", strategy.label))
        return execute(A, B).C
    return execute(plan(A, strategy if strategy is not None else Strategy(), dtype, lossy), B).C
