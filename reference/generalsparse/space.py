"""The memory access space of GeneralSparse (paper Sec. 3.2): a :class:`Strategy` names one
point, :func:`strategies` lists the points worth trying for a matrix and N.

* **Sparse division** at three levels, block -> warp -> thread, each a :class:`Division`:
  ``rows="single"`` (every worker's nonzeros lie in one row) or ``"multi"``, and
  ``split`` (a row may be cut between workers of that level) or not. A block holds
  ``block_size`` rows (``multi``, not split), or at most ``block_size`` nonzeros (split).
  How each level cuts its parent's range is in :mod:`.divide`.
* **Dense division** by column groups: a thread computes ``thread_cols`` adjacent columns of
  C (its vector width on B), the ``warp_cols // thread_cols`` adjacent lanes that share the
  same nonzeros form a *thread-group*, and ``block_cols // warp_cols`` warps of a block that
  share the same nonzeros form a *warp-group* (paper Fig. 7b). Blocks along ``grid.y`` take
  successive groups of ``block_cols`` columns.
* **Format adjustments** (Fig. 8): ``sort_rows`` (rows by decreasing length),
  ``pad_empty_rows`` (one zero slot per empty row, so some worker writes its zeros),
  ``interleave`` (the slots that the thread-groups of a warp-group read at the same step are
  stored next to each other, ``vector_width`` at a time), ``vector_width`` (each
  thread-group's range padded to a multiple of it, for vector loads of the sparse arrays),
  and two of ours: ``cyclic`` (the thread division of :mod:`.divide`) and ``compact``
  storage (:mod:`.plan`).

**Lane and warp numbering** (a choice the paper leaves open). The lanes of a thread-group are
adjacent (thread-group ``lane // group_lanes``, column slot ``lane % group_lanes``), so a
thread-group reads adjacent columns of B; the warps of a warp-group are adjacent likewise.

**Pruning of** :func:`strategies` (keeps the list finite, a few hundred at most):
thread_cols in 1, 2, 4, 8 (at most N rounded up to a power of two) and a warp covering
``min(N rounded up, 32 * thread_cols)`` columns; no warp-groups (``block_cols ==
warp_cols``); 1 or 4 warps per block; block sizes that fill the geometry (rows: one per
warp-group or one per thread-group; nonzeros: 1 or 4 per thread-group; single-row split
blocks only where some row is longer than the block); under a
single-row parent only single-row split children (anything else leaves all but one child
idle); multi-row not split only where a parent holds more row pieces than it has
children (otherwise it equals single-row); single-row children only where every parent
holds at most as many row pieces as children; a level with one worker per parent copies
the parent's division; ``sort_rows`` only for multi-row blocks of unequal rows;
``pad_empty_rows`` only where A has empty rows and blocks are not split; ``interleave``
and ``vector_width`` 4 only for split thread divisions with at least 2 (4) slots per
thread-group on average, every interleaved one under single-row warp-groups and a
single-row split thread division once more with ``cyclic``; every strategy without
``pad_empty_rows`` once more with ``compact`` storage, ``b_vector`` = gcd(N, thread_cols)
(at most 16 bytes) and, where interleaved, ``vector_width`` = 16 bytes of values (8 float16,
4 float32).
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from .._common import OptionError, ShapeError, canonical_csr, problem, resolve_dtype
from .divide import _block_offsets, _children, _pieces, _row_adjust

__all__ = ["WARP", "ROWS", "Division", "Strategy", "strategies"]

WARP = 32
ROWS = ("single", "multi")

_POW2 = (1, 2, 4, 8, 16, 32)


def _pow2_at_least(n: int) -> int:
    return 1 << max(int(n) - 1, 0).bit_length()


@dataclasses.dataclass(frozen=True)
class Division:
    """How one level (block, warp or thread) divides its parent's nonzeros among its workers.

    rows   "single": every worker's nonzeros lie in one row; "multi": they may span rows
    split  True: a row may be cut between two workers of this level
    """

    rows: str = "single"
    split: bool = False

    def __post_init__(self):
        if self.rows not in ROWS:
            raise OptionError(problem("Division.rows", "'single' or 'multi'", repr(self.rows)))
        if not isinstance(self.split, bool):
            raise OptionError(problem("Division.split", "True or False", repr(self.split)))

    @property
    def label(self) -> str:
        return f"{self.rows}/{'split' if self.split else 'nonsplit'}"


@dataclasses.dataclass(frozen=True)
class Strategy:
    """One point of the memory access space (see the module docstring).

    block, warp, thread  the :class:`Division` of each level
    block_size           rows per block (multi-row, not split; 1 for single-row, not split)
                         or the most nonzeros per block (split)
    warps_per_block      1, 2, 4, 8, 16 or 32
    thread_cols          columns of C per thread (1, 2, 4 or 8)
    warp_cols            columns of C per warp: thread_cols times the lanes of a
                         thread-group (a power of two up to 32); every thread-group of a
                         warp covers the same columns with different nonzeros
    block_cols           columns per block: warp_cols times the warps of a warp-group
                         (a power of two dividing warps_per_block)
    sort_rows, pad_empty_rows, interleave, vector_width   the format adjustments
    cyclic               thread-groups of a single-row warp-group take the row piece's
                         entries in turn, vector_width at a time, instead of a contiguous
                         chunk each (needs interleave, warp=Division('single', ...),
                         thread=Division('single', True); see :mod:`.divide`)
    compact              compact storage (see "Compact storage" in :mod:`.plan`):
                         16-bit columns where they fit, rows from per-row and
                         per-thread-group offsets instead of per-slot rows and flags
    b_vector             values of B a thread loads at once (1, 2, 4 or 8, dividing
                         thread_cols; at most 16 bytes, checked by :func:`plan`); N must be
                         a multiple of it

    The defaults give one block of one warp per row, the row split among the warp's 32
    lanes (a CSR-vector kernel).
    """

    block: Division = Division("single", False)
    warp: Division = Division("single", True)
    thread: Division = Division("single", True)
    block_size: int = 1
    warps_per_block: int = 1
    thread_cols: int = 1
    warp_cols: int = 1
    block_cols: int = 1
    sort_rows: bool = False
    pad_empty_rows: bool = False
    interleave: bool = False
    vector_width: int = 1
    compact: bool = False
    b_vector: int = 1
    cyclic: bool = False

    def __post_init__(self):
        for level in ("block", "warp", "thread"):
            if not isinstance(getattr(self, level), Division):
                raise OptionError(problem(f"Strategy.{level}", "a Division",
                                          type(getattr(self, level)).__name__,
                                          f"pass {level}=Division(rows='single', split=True)"))
        for name in ("block_size", "warps_per_block", "thread_cols", "warp_cols", "block_cols",
                     "vector_width", "b_vector"):
            v = getattr(self, name)
            if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < 1:
                raise OptionError(problem(f"Strategy.{name}", "an integer >= 1", repr(v)))
        for name in ("sort_rows", "pad_empty_rows", "interleave", "compact", "cyclic"):
            if not isinstance(getattr(self, name), bool):
                raise OptionError(problem(f"Strategy.{name}", "True or False", repr(getattr(self, name))))
        b = self.block
        if not b.split and b.rows == "single" and self.block_size != 1:
            raise OptionError(problem("Strategy.block_size", "1 for single-row blocks that are not split",
                                      self.block_size, "pass block_size=1, or block=Division('multi', False)"))
        if not b.split and b.rows == "multi" and self.block_size < 2:
            raise OptionError(problem("Strategy.block_size", "at least 2 rows for multi-row blocks",
                                      self.block_size, "pass block=Division('single', False) for one row"))
        if self.cyclic:
            if self.thread != Division("single", True):
                raise OptionError(problem("Strategy.thread", "Division('single', True) with cyclic=True "
                                          "(thread-groups take turns within one row piece)", self.thread.label,
                                          "pass thread=Division('single', True), or cyclic=False"))
            if self.warp.rows != "single":
                raise OptionError(problem("Strategy.warp", "a single-row division with cyclic=True (one "
                                          "row piece per warp-group)", self.warp.label,
                                          "pass warp=Division('single', ...), or cyclic=False"))
            if not self.interleave:
                raise OptionError(problem("Strategy.interleave", "True with cyclic=True (the piece is "
                                          "stored in row order)", False, "pass interleave=True"))
        self._check_choice("warps_per_block", _POW2)
        self._check_choice("thread_cols", (1, 2, 4, 8))
        self._check_choice("vector_width", (1, 2, 4, 8))
        self._check_choice("b_vector", (1, 2, 4, 8))
        if self.thread_cols % self.b_vector:
            raise OptionError(problem("Strategy.b_vector", f"a divisor of thread_cols ({self.thread_cols})",
                                      self.b_vector, "pass b_vector=1, or more columns per thread"))
        if self.compact and self.pad_empty_rows:
            raise OptionError(problem("Strategy.pad_empty_rows", "False with compact storage (padding "
                                      "slots may only end a thread-group there)", True,
                                      "pass pad_empty_rows=False (the kernel zeroes C first)"))
        g, h = self.warp_cols // self.thread_cols, self.block_cols // self.warp_cols
        if self.warp_cols % self.thread_cols or g not in _POW2:
            raise OptionError(problem("Strategy.warp_cols", f"thread_cols ({self.thread_cols}) times "
                                      "a power of two up to 32", self.warp_cols))
        if self.block_cols % self.warp_cols or h not in _POW2 or self.warps_per_block % h:
            raise OptionError(problem("Strategy.block_cols", f"warp_cols ({self.warp_cols}) times a power "
                                      f"of two dividing warps_per_block ({self.warps_per_block})",
                                      self.block_cols))

    def _check_choice(self, name, allowed):
        if getattr(self, name) not in allowed:
            raise OptionError(problem(f"Strategy.{name}", f"one of {allowed}", getattr(self, name)))

    # ---- geometry derived from the dense division
    @property
    def group_lanes(self) -> int:
        """Lanes in a thread-group (they share nonzeros, each has its own columns)."""
        return self.warp_cols // self.thread_cols

    @property
    def groups_per_warp(self) -> int:
        """Thread-groups per warp: the thread level's workers per warp-group."""
        return WARP // self.group_lanes

    @property
    def group_warps(self) -> int:
        """Warps in a warp-group (they share nonzeros, each has its own columns)."""
        return self.block_cols // self.warp_cols

    @property
    def groups_per_block(self) -> int:
        """Warp-groups per block: the warp level's workers per block."""
        return self.warps_per_block // self.group_warps

    @property
    def threads_per_block(self) -> int:
        return WARP * self.warps_per_block

    @property
    def label(self) -> str:
        """A short one-line name, e.g. for plots."""
        adj = [n for n, on in (("sort", self.sort_rows), ("pad", self.pad_empty_rows),
                               ("ilv", self.interleave), ("cyc", self.cyclic)) if on]
        if self.vector_width > 1:
            adj.append(f"v{self.vector_width}")
        if self.compact:
            adj.append("cmp")
        if self.b_vector > 1:
            adj.append(f"bv{self.b_vector}")
        return (f"B:{self.block.label}({self.block_size}) W:{self.warp.label} T:{self.thread.label}"
                f" | cols {self.thread_cols}/{self.warp_cols}/{self.block_cols} x{self.warps_per_block}w"
                + (f" | {' '.join(adj)}" if adj else ""))


# --------------------------------------------------------------------------------------
# strategies(): the pruned list of points for one matrix and N
# --------------------------------------------------------------------------------------

_SINGLE_SPLIT = Division("single", True)


def _child_options(parent: Division, k: int, max_pieces: int):
    """The divisions listed for a level under ``parent`` (pruning rules of the module
    docstring); ``max_pieces``: the most row pieces a parent worker holds."""
    if k == 1:
        return [Division(parent.rows, False)]
    if parent.rows == "single":
        return [_SINGLE_SPLIT]
    opts = []
    if max_pieces <= k:
        opts += [Division("single", False), _SINGLE_SPLIT]
    else:
        opts.append(Division("multi", False))
    return opts + [Division("multi", True)]


def _max_pieces(parent: np.ndarray, rowptr: np.ndarray) -> int:
    _, a, b = _pieces(parent, rowptr)
    return int((b - a).max(initial=0))


def _dense_options(n_cols: int):
    top = _pow2_at_least(n_cols)
    for c in (1, 2, 4, 8):
        if c <= top:
            w = min(top, WARP * c)
            yield dict(thread_cols=c, warp_cols=w, block_cols=w)


def strategies(A, N: int, dtype=None, lossy: bool = False) -> list:
    """The valid strategies for ``A`` and a B of ``N`` columns, pruned as the module
    docstring says (every one of them :func:`plan` accepts for A)."""
    if not isinstance(N, (int, np.integer)) or isinstance(N, bool) or N < 1:
        raise ShapeError(problem("N", "the number of columns of B, an integer >= 1", repr(N)))
    dt = resolve_dtype(A, dtype)
    csr = canonical_csr(A, dt, lossy)
    lengths = np.diff(csr.indptr)
    layouts = {}
    out = []
    for dense in _dense_options(int(N)):
        for w in (1, 4):
            probe = Strategy(warps_per_block=w, **dense)
            g, t = probe.groups_per_block, probe.groups_per_warp
            blocks = [(Division("single", False), 1)]
            blocks += [(Division("multi", False), r) for r in sorted({g, g * t}) if r >= 2]
            for k in (1, 4):
                size = g * t * k
                if lengths.size and lengths.max() > size:
                    blocks.append((_SINGLE_SPLIT, size))
                blocks.append((Division("multi", True), size))
            for block, size in blocks:
                sorts = [False, True] if (block.rows == "multi" and not block.split
                                          and lengths.size and lengths.min() < lengths.max()) else [False]
                pads = [False, True] if (not block.split and lengths.size and lengths.min() == 0) else [False]
                for sort_rows in sorts:
                    for pad in pads:
                        key = (sort_rows, pad)
                        if key not in layouts:
                            layouts[key] = _row_adjust(csr.indptr, sort_rows, pad)[0]
                        out += _lower_levels(layouts[key], block, size, w, dense, sort_rows, pad)
    cap = 16 // np.dtype(dt).itemsize               # values of 16 bytes
    out += [dataclasses.replace(s, compact=True, b_vector=min(math.gcd(int(N), s.thread_cols), cap),
                                vector_width=max(s.vector_width, cap) if s.interleave else s.vector_width)
            for s in out if not s.pad_empty_rows]
    return out


def _lower_levels(rowptr, block, size, w, dense, sort_rows, pad) -> list:
    base = Strategy(block=block, warp=Division(block.rows, False), thread=Division(block.rows, False),
                    block_size=size, warps_per_block=w, sort_rows=sort_rows, pad_empty_rows=pad, **dense)
    g, t = base.groups_per_block, base.groups_per_warp
    b_off = _block_offsets(rowptr, base)
    found = []
    for warp in _child_options(block, g, _max_pieces(b_off, rowptr)):
        w_off = _children(b_off, rowptr, g, warp, "warp", "block")
        for thread in _child_options(warp, t, _max_pieces(w_off, rowptr)):
            s = dataclasses.replace(base, warp=warp, thread=thread)
            found.append(s)
            per_thread = rowptr[-1] / max((w_off.size - 1) * t, 1)
            if thread.split and t > 1 and per_thread >= 2:
                found.append(dataclasses.replace(s, interleave=True))
                if warp.rows == "single" and thread.rows == "single":
                    found.append(dataclasses.replace(s, interleave=True, cyclic=True))
                if per_thread >= 4:
                    found.append(dataclasses.replace(s, vector_width=4))
    return found
