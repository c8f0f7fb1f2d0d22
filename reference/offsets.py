"""GeneralSparse's code optimizer: an offset array replaced by an expression of the worker id.

A generated SpMM kernel finds the nonzeros of its thread-group, warp or block through an
offset array (``start, end = offset[ID], offset[ID + 1]``). Many of these arrays follow a
rule, and the GeneralSparse paper (Wang et al., Sec. 3.5, Table 3) replaces such loads with
arithmetic. This module recognises four rules and one fallback, each a frozen
:class:`Pattern` that gives back the array exactly (:meth:`Pattern.expand`) and a Python
expression over the id that a code generator can paste into a ``numba.cuda`` kernel
(:meth:`Pattern.expression`):

=============  =====================================================  =========================
pattern        value at ``ID``                                        Table 3 example
=============  =====================================================  =========================
Linear         ``slope * ID``                                         [0, 5, 10, ...] -> 5 * ID
Quasilinear    ``slope * ID + intercept (+ residual[ID])``            [3, 8, 13, ...] -> 5 * ID + 3
Cyclicity      ``step * (ID // period) + cycle(ID % period)``         [0, 1, 6, 7, ...] -> 6 * (ID // 2) + ID % 2
Branch         one value per run of ids, as nested conditionals      [0, 5, 8] -> 0 / 5 / 8 for ID = 0 / 1 / 2
Stored         ``name[ID]``: the array itself (nothing fits better)
=============  =====================================================  =========================

:func:`compress` tries every pattern that reproduces the array exactly and returns the
cheapest (:attr:`Pattern.cost`).

Choices the paper leaves open
-----------------------------
* **Cost.** The paper says a computed offset beats a load but gives no cost. Ours counts the
  generated expression: 1 per arithmetic operation, comparison or conditional, plus, per
  array read, :data:`LOAD_COST` and :data:`BYTE_COST` per byte of the element read. Ties go
  to the pattern listed first in :data:`PATTERN_ORDER`. With these weights a 3-way branch
  (4 units) beats any load (at least 10), and a linear fit with int8 residuals (13) beats
  storing int32 offsets (16), but int32 residuals (19) do not.
* **Linear vs Quasilinear.** Table 3 files ``[0, 5, 10]`` under Linear and ``[3, 8, 13]``
  under Quasilinear, so Linear here passes through the origin (``slope * ID``) and
  Quasilinear adds an intercept and, where the fit is not exact, a stored residual array.
  Its slope is the least-squares slope rounded to an integer (generated code stays in
  integer arithmetic); its intercept centres the residuals (midrange), which minimises
  their width; residuals are stored in the narrowest integer type that holds them.
* **Branch.** "Only k values" is read as k runs of equal values over consecutive ids
  (Table 3's example has k = 3 runs of one id each); at most :data:`MAX_RUNS` runs, tested
  with ``ID < bound`` in order.
* **Cyclicity.** A period ``p`` (2 <= p <= :data:`MAX_PERIOD`, the array at least two
  periods long) with a constant step between ids ``p`` apart. One period is kept and itself
  compressed (Linear, Quasilinear, Branch or Stored, never Cyclicity again) over
  ``ID % p``; the smallest such period wins.
* **Stored.** The fallback keeps the array in the narrowest integer type that holds its
  values (an offset array needs no more), so its cost is a fair comparison.
* **Range.** Arrays with a value beyond +-:data:`VALUE_LIMIT` (2**40) are only stored or
  branched: every intermediate of an arithmetic expression then stays far inside int64,
  and no offset array of this project comes near (2**40 nonzeros).
* **Names.** An expression reads the id from a variable (``var``, default ``"ID"``) and a
  stored array from ``name`` (default ``"offset"``); a Quasilinear residual array is
  ``name + "_residual"``, a Cyclicity period table ``name + "_cycle"``.
  :meth:`Pattern.arrays` returns the arrays under those names. Expressions are normalised
  with :func:`ast.unparse` (no redundant parentheses). An array read is wrapped in ``int()``
  so a narrow element widens before any arithmetic (Python and numba alike).

Plain NumPy; no numba.
"""
from __future__ import annotations

import ast
import dataclasses

import numpy as np

from ._common import DTypeError, ShapeError, problem

__all__ = ["Pattern", "Linear", "Quasilinear", "Cyclicity", "Branch", "Stored", "compress",
           "LOAD_COST", "BYTE_COST", "MAX_PERIOD", "MAX_RUNS", "VALUE_LIMIT", "PATTERN_ORDER"]

#: cost of one array read, in units of one integer operation
LOAD_COST = 8
#: cost per byte of an element read
BYTE_COST = 2
#: the longest period Cyclicity looks for
MAX_PERIOD = 64
#: the most runs Branch writes out as conditionals
MAX_RUNS = 16
#: arrays with a value beyond this magnitude are only stored or branched
VALUE_LIMIT = 2**40


def _narrowest(values: np.ndarray) -> np.dtype:
    """The narrowest integer dtype that holds ``values`` (signed first at each width)."""
    if values.size == 0:
        return np.dtype(np.int8)
    lo, hi = int(values.min()), int(values.max())
    for dt in (np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64):
        info = np.iinfo(dt)
        if info.min <= lo and hi <= info.max:
            return np.dtype(dt)
    raise AssertionError("unreachable: the values came from an integer array")


def _frozen(values, dtype=None) -> np.ndarray:
    a = np.array(values, dtype=dtype)
    a.setflags(write=False)
    return a


def _normal(expr: str) -> str:
    return ast.unparse(ast.parse(expr, mode="eval"))


def _times(coef: int, var: str) -> str:
    """``coef * var`` written as short as it gets (``0``, ``var``)."""
    return {0: "0", 1: var}.get(coef, f"{coef} * {var}")


def _plus(expr: str, const: int) -> str:
    return expr if const == 0 else f"{expr} {'-' if const < 0 else '+'} {abs(const)}"


@dataclasses.dataclass(frozen=True, eq=False)
class Pattern:
    """Base of the patterns: ``length`` ids, values of ``dtype`` (the compressed array's).

    Subclasses define ``_values(ids)`` (int64 values at the ids, or Python ints where they
    may not fit), ``_expression(var, name)`` and ``_arrays(name)``.
    """

    length: int
    dtype: np.dtype

    #: how many ids an expansion may cover: the length for patterns holding arrays
    unbounded = True

    def expand(self, n: int | None = None) -> np.ndarray:
        """The first ``n`` values (default: all ``length``), in ``dtype``: exactly the
        compressed array. Patterns that hold arrays cannot go past ``length``."""
        n = self.length if n is None else int(n)
        if n < 0 or (not self.unbounded and n > self.length):
            raise ShapeError(problem("n", f"0 to {self.length} ids (this pattern holds an array)"
                                     if not self.unbounded else "a count >= 0", n))
        return np.asarray(self._values(np.arange(n, dtype=np.int64))).astype(self.dtype)

    def expression(self, var: str = "ID", name: str = "offset") -> str:
        """A Python expression for the value at id ``var``; arrays it reads are named after
        ``name`` (see :meth:`arrays`)."""
        return _normal(self._expression(var, name))

    def arrays(self, name: str = "offset") -> dict:
        """The arrays :meth:`expression` reads, by the names it uses."""
        return self._arrays(name)

    @property
    def nbytes(self) -> int:
        """Bytes of the arrays the kernel must be given."""
        return sum(a.nbytes for a in self._arrays("a").values())

    @property
    def cost(self) -> int:
        """Estimated cost of one evaluation (see the module docstring)."""
        arrays = self._arrays("offset")
        total = 0
        for node in ast.walk(ast.parse(self._expression("ID", "offset"), mode="eval")):
            if isinstance(node, (ast.BinOp, ast.Compare, ast.IfExp)) or (
                    isinstance(node, ast.UnaryOp) and not isinstance(node.operand, ast.Constant)):
                total += 1          # (a negative literal is a constant, not an operation)
            elif isinstance(node, ast.Subscript):
                total += LOAD_COST + BYTE_COST * arrays[node.value.id].itemsize
        return total

    def _arrays(self, name: str) -> dict:
        return {}


@dataclasses.dataclass(frozen=True, eq=False)
class Linear(Pattern):
    """``slope * ID``."""

    slope: int

    def _values(self, ids):
        return self.slope * ids

    def _expression(self, var, name):
        return _times(self.slope, var)


@dataclasses.dataclass(frozen=True, eq=False)
class Quasilinear(Pattern):
    """``slope * ID + intercept``, plus ``residuals[ID]`` where the fit is not exact
    (``residuals`` is None when it is)."""

    slope: int
    intercept: int
    residuals: np.ndarray | None = None

    @property
    def unbounded(self):
        return self.residuals is None

    def _values(self, ids):
        v = self.slope * ids + self.intercept
        return v if self.residuals is None else v + self.residuals[ids].astype(np.int64)

    def _expression(self, var, name):
        if self.slope == 0:
            expr = str(self.intercept)
        else:
            expr = _plus(_times(self.slope, var), self.intercept)
        return expr if self.residuals is None else f"{expr} + int({name}_residual[{var}])"

    def _arrays(self, name):
        return {} if self.residuals is None else {f"{name}_residual": self.residuals}


@dataclasses.dataclass(frozen=True, eq=False)
class Cyclicity(Pattern):
    """``step * (ID // period) + cycle(ID % period)``: ``cycle`` is the pattern of the first
    period (length ``period``)."""

    period: int
    step: int
    cycle: Pattern

    def _values(self, ids):
        first = self.cycle.expand(self.period).astype(np.int64)
        return self.step * (ids // self.period) + first[ids % self.period]

    def _expression(self, var, name):
        inner = self.cycle._expression(f"({var} % {self.period})", f"{name}_cycle")
        outer = _times(self.step, f"({var} // {self.period})")
        return f"{outer} + ({inner})" if self.step else inner

    def _arrays(self, name):
        return self.cycle._arrays(f"{name}_cycle")


@dataclasses.dataclass(frozen=True, eq=False)
class Branch(Pattern):
    """Runs of equal values: ``values[j]`` for ``bounds[j] <= ID < bounds[j + 1]``, the last
    run to the end (``bounds[0] == 0``)."""

    bounds: tuple
    values: tuple

    def _values(self, ids):
        run = np.searchsorted(np.asarray(self.bounds[1:], dtype=np.int64), ids, side="right")
        vals = np.array(self.values, dtype=object)[run] if len(self.values) else np.zeros(0, object)
        return np.array(list(vals), dtype=np.int64 if self.dtype != np.uint64 else np.uint64)

    def _expression(self, var, name):
        if not self.values:
            return "0"
        expr = str(self.values[-1])
        for bound, value in zip(reversed(self.bounds[1:]), reversed(self.values[:-1])):
            expr = f"{value} if {var} < {bound} else ({expr})"
        return expr


@dataclasses.dataclass(frozen=True, eq=False)
class Stored(Pattern):
    """The array itself, in the narrowest integer type that holds it: ``name[ID]``."""

    values: np.ndarray
    unbounded = False

    def _values(self, ids):
        return self.values[ids]

    def _expression(self, var, name):
        return f"int({name}[{var}])"

    def _arrays(self, name):
        return {name: self.values}


#: the order ties are broken in (first wins)
PATTERN_ORDER = (Linear, Quasilinear, Cyclicity, Branch, Stored)


def _check_array(arr) -> np.ndarray:
    a = np.asarray(arr)
    if a.ndim != 1:
        raise ShapeError(problem("arr", "a 1-D integer array", f"{a.ndim}-D array of shape {a.shape}",
                                 "pass one offset array at a time"))
    if a.dtype.kind not in "iu":
        if a.size == 0 and a.dtype.kind == "f":   # np.asarray([]) is float64
            return np.zeros(0, dtype=np.int64)
        raise DTypeError(problem("arr.dtype", "an integer dtype", a.dtype,
                                 "pass np.asarray(arr, dtype=np.int64)"))
    return a


def _linear_candidates(a: np.ndarray, n: int, dt: np.dtype):
    """Linear and exact Quasilinear, if they fit (values within VALUE_LIMIT)."""
    ids = np.arange(n, dtype=np.int64)
    first = int(a[0]) if n else 0
    step = int(a[1]) - first if n > 1 else 0
    if np.array_equal(step * ids + first, a):
        if first == 0:
            yield Linear(length=n, dtype=dt, slope=step)
        yield Quasilinear(length=n, dtype=dt, slope=step, intercept=first)


def _fit(a: np.ndarray, n: int, dt: np.dtype):
    """Quasilinear with residuals: rounded least-squares slope, midrange intercept."""
    ids = np.arange(n, dtype=np.int64)
    slope = int(round(float(np.polyfit(ids, a.astype(np.float64), 1)[0]))) if n > 1 else 0
    rest = a.astype(np.int64) - slope * ids
    intercept = (int(rest.min()) + int(rest.max())) // 2
    residuals = rest - intercept
    return Quasilinear(length=n, dtype=dt, slope=slope, intercept=intercept,
                       residuals=_frozen(residuals, _narrowest(residuals)))


def _runs(a: np.ndarray, n: int, dt: np.dtype):
    change = np.flatnonzero(a[1:] != a[:-1]) + 1 if n else np.zeros(0, np.int64)
    if change.size + 1 > MAX_RUNS:
        return None
    starts = [0] + change.tolist() if n else []
    return Branch(length=n, dtype=dt, bounds=tuple(starts), values=tuple(int(a[s]) for s in starts))


def _cycle(a: np.ndarray, n: int, dt: np.dtype):
    """The smallest period p (2 <= p <= MAX_PERIOD, n >= 2p) with a constant step."""
    wide = a.astype(np.int64)
    for p in range(2, min(MAX_PERIOD, n // 2) + 1):
        step = int(wide[p]) - int(wide[0])
        if np.all(wide[p:] - wide[:-p] == step):
            return Cyclicity(length=n, dtype=dt, period=p, step=step, cycle=_cheapest(a[:p], cyclic=False))
    return None


def _cheapest(a: np.ndarray, cyclic: bool = True) -> Pattern:
    n, dt = a.size, a.dtype
    candidates = [Stored(length=n, dtype=dt, values=_frozen(a, _narrowest(a)))]
    run = _runs(a, n, dt)
    if run is not None:
        candidates.append(run)
    if n == 0 or float(np.abs(a.astype(np.float64)).max()) <= VALUE_LIMIT:
        exact = list(_linear_candidates(a, n, dt))
        candidates += exact or [_fit(a, n, dt)]
        cyc = _cycle(a, n, dt) if cyclic and not exact else None
        if cyc is not None:
            candidates.append(cyc)
    rank = {cls: i for i, cls in enumerate(PATTERN_ORDER)}
    return min(candidates, key=lambda c: (c.cost, rank[type(c)]))


def compress(arr) -> Pattern:
    """The cheapest :class:`Pattern` that reproduces the 1-D integer array ``arr`` exactly
    (``compress(arr).expand(len(arr))`` equals ``arr``, dtype included)."""
    return _cheapest(_check_array(arr))
