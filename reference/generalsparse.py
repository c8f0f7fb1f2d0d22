"""GeneralSparse (Wang, Guo, Xiao, Chen, Tan): the memory access space and the reduction space
of SpMM ``C = A @ B`` (A sparse M x K, B dense K x N row-major), as plain data and readable
NumPy. The code generator, the cost model and the kernels build on this module.

Memory access space (paper Sec. 3.2)
------------------------------------
A :class:`Strategy` names one point of the space:

* **Sparse division** at three levels, block -> warp -> thread, each a :class:`Division`:
  ``rows="single"`` (every worker's nonzeros lie in one row) or ``"multi"``, and
  ``split`` (a row may be cut between workers of that level) or not. A block holds
  ``block_size`` rows (``multi``, not split), or at most ``block_size`` nonzeros (split).
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
  and ours, ``cyclic`` (below).

:func:`plan` turns a strategy and a matrix into a :class:`Plan`: the block, warp and thread
offset arrays of Fig. 7c (a nested partition of the slot stream), the adjusted layout, and
the reduction the rules select. :func:`strategies` lists the points worth trying for a
matrix and N.

Reduction space (paper Sec. 3.3)
--------------------------------
THREAD_TOTAL, THREAD_BITMAP (sequential, in registers), WARP_TOTAL, WARP_BITMAP, WARP_SEGMENT
(over the lanes of a warp), BLOCK_TOTAL, BLOCK_BITMAP, BLOCK_SEGMENT (over the warp-groups of
a block, in shared memory). They are written lane by lane on NumPy arrays: :func:`tree_sum`
(TOTAL), :func:`bitmap_reduce` (Algorithm 1) and :func:`segment_reduce` (Algorithm 2), each
batched over the workers of a level; :func:`thread_reduce` is the sequential thread level.
:func:`select_reduction` holds the selection rules (Fig. 12), :func:`execute` runs a plan
level by level and :func:`spmm` is the product computed that way.

Every worker passes up to its parent what it could not finish (:class:`Partials`): the
*lead*, the sum of its slots before its first row start (the end of a row that began
earlier), and the *tail*, the sum from its last row start to its end (a row that may go on in
the next worker). Rows that begin and end inside one worker are complete and stored there.

Choices the paper leaves open
-----------------------------
* **Fixed worker counts.** Every block has ``groups_per_block`` warp-groups and every
  warp-group ``groups_per_warp`` thread-groups, so a worker finds its offsets from its ids
  alone (what lets the code optimizer of ``reference/offsets.py`` replace the loads). The
  offsets are global slot positions: ``thread_offset`` has one entry per thread-group plus
  one, ``warp_offset = thread_offset[::groups_per_warp]``,
  ``block_offset = warp_offset[::groups_per_block]``.
* **Lane and warp numbering.** The lanes of a thread-group are adjacent (thread-group
  ``lane // group_lanes``, column slot ``lane % group_lanes``), so a thread-group reads
  adjacent columns of B; the warps of a warp-group are adjacent likewise.
* **How a level divides its parent's range** (only the block level has a size):
  not split -> consecutive groups of ``ceil(pieces / K)`` whole row pieces per worker
  (``single``: one piece each, so at most K pieces); ``multi`` + split -> K chunks of
  ``ceil(slots / K)`` slots regardless of rows; ``single`` + split -> each of the parent's
  r row pieces (r <= K) gets ``K // r`` workers, which cut it into equal chunks. A *row
  piece* is the part of a row inside the parent's range. Row-based blocks take rows by
  index (``block_size`` consecutive rows, empty ones included), split blocks take the slot
  stream (``single``: each row cut into chunks of ``block_size`` slots).
* **Reduction rules (our reading of Fig. 12, which is a figure only).** Thread level: none
  when no thread-group has two slots (the paper's "thread offset range < 2"), else
  THREAD_TOTAL for single-row threads and THREAD_BITMAP for multi-row ones. Warp level: only
  where the thread division splits rows; WARP_TOTAL for single-row warp-groups, WARP_BITMAP
  when every thread-group passes up one piece, WARP_SEGMENT when it may pass up two (after
  THREAD_BITMAP). Block level: the same over warp-groups, where the warp division splits
  rows. Where the *block* division splits rows, the pieces at a block's two ends are added
  to C atomically (C zeroed first); the paper has no grid-level reduction.
* **Algorithm 1** as printed doubles ``step`` before its first use (distance-1 neighbours
  are never added; ``paper_repro.md``). Ours runs distances 1, 2, 4, ... and keeps per lane
  "my segment ends within my window" (a segmented suffix sum); the head lane of each row
  then holds the row's sum. **Algorithm 2**'s indexing is loose in the text; ours: a lane
  with a row start adds to its tail the leads of the following lanes up to and including
  the next lane with a row start (``Seg_offset``: the run of start-free lanes between).
* **Padding slots** (empty rows, vector width, interleaving) hold value 0 and column 0 and
  contribute an exact 0 (never ``0 * B[0]``, which is NaN where B holds Inf or NaN; the
  MACKO reference treats its inserted zeros the same way). A padding slot belongs to the row
  of the last real slot of its thread-group, or to no row (-1) in a thread-group with no
  real slot.
* **Empty rows** without ``pad_empty_rows`` are never written: the plan sets ``zero_init``
  (the kernel zeroes C first), as it does when blocks add atomically.
* **Cyclic thread division** (``cyclic``, our format adjustment): the thread-groups of a
  warp-group that holds one row piece take its entries in turn, ``vector_width`` at a time
  (thread-group t's step j holds entry ``(j // V) * T * V + t * V + j % V`` of the piece, T
  thread-groups, V the vector width), instead of one contiguous chunk each. With
  ``interleave`` that entry is exactly the storage position, so the piece is stored in row
  order and a warp's step reads T * V consecutive entries of the row: their columns are
  close, so the rows of B they gather share cache lines (the order of CSR SpMM's lanes).
  Contiguous chunks spread a warp's gathers over the whole row, and lose their L1 hits
  (measured in docs/probes.md, "Lane order"). Thread-group t's real slots are a prefix of
  its steps (the entries grow with j), so the padding still ends each thread-group and the
  generated kernel is the same; only the plan differs. Valid where the thread division is
  single-row split, the warp division single-row and the storage interleaved.
* **Accumulation**: float32 for float16/float32 values (float64 for float64), the
  products in the accumulator type; atomic additions go to an accumulator-typed C that is
  rounded to the value type once at the end.
* **Pruning of** :func:`strategies` (keeps the list finite, a few hundred at most):
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

Compact storage (our format adjustment, in the spirit of the paper's Fig. 8)
---------------------------------------------------------------------------
The plain layout stores per slot a flag byte, a row and a column index (4 bytes each) beside
the value: ~11 bytes per float16 nonzero, more than the 2 bytes per *weight* of a dense fp16
GEMM at 70 % sparsity. ``Strategy(compact=True)`` stores instead (:meth:`Plan.device_arrays`):

* the column as a uint16 offset from the first column of its block (``col_base``, one int32
  per block), or as it is where every column fits 16 bits (K <= 65536: no base at all);
  where some block spans more than 65536 columns the plan falls back to int32 columns
  (``Plan.col_bits`` says which);
* no per-slot row or flag: ``row_ptr`` (the logical position where each row begins, M + 1
  entries), and per thread-group the row of its first real slot (``tg_row``) and its number
  of real slots (``tg_len``). Padding slots only ever end a thread-group (``pad_empty_rows``
  is refused with compact storage), so a worker reads its real slots and never a padding
  flag; a multi-row worker finds its next row start in ``row_ptr``.

:func:`decode_compact` rebuilds the per-slot arrays from these alone and :func:`execute`
computes compact plans through it. ``Plan.bytes_per_nnz`` counts every byte the kernel
reads (values, columns, bases, row and thread-group arrays, offsets); for float16 with long
rows it approaches 4 bytes per nonzero (2 value + 2 column): 1.2 bytes per weight at 70 %
sparsity, 0.4 at 90 %.

Plain NumPy/SciPy; no numba.
"""
from __future__ import annotations

import dataclasses
import math
from typing import ClassVar

import numpy as np

from ._common import (
    VALUE_DTYPES, Checksummed, OptionError, ShapeError, _plain, accumulator_dtype, canonical_csr,
    check_operand, index_dtype_for, problem, resolve_dtype,
)

__all__ = [
    "WARP", "ROWS", "Division", "Strategy", "Reduction", "Plan", "Partials", "Execution",
    "THREAD_TOTAL", "THREAD_BITMAP", "WARP_TOTAL", "WARP_BITMAP", "WARP_SEGMENT",
    "BLOCK_TOTAL", "BLOCK_BITMAP", "BLOCK_SEGMENT", "ALGORITHMS",
    "plan", "strategies", "select_reduction", "spmm", "execute", "decode_compact", "SPAN16",
    "tree_sum", "bitmap_reduce", "segment_reduce", "thread_reduce",
]

WARP = 32
ROWS = ("single", "multi")

THREAD_TOTAL, THREAD_BITMAP = "THREAD_TOTAL", "THREAD_BITMAP"
WARP_TOTAL, WARP_BITMAP, WARP_SEGMENT = "WARP_TOTAL", "WARP_BITMAP", "WARP_SEGMENT"
BLOCK_TOTAL, BLOCK_BITMAP, BLOCK_SEGMENT = "BLOCK_TOTAL", "BLOCK_BITMAP", "BLOCK_SEGMENT"
#: the reduction space: algorithm -> the level it runs at
ALGORITHMS = {THREAD_TOTAL: "thread", THREAD_BITMAP: "thread", WARP_TOTAL: "warp",
              WARP_BITMAP: "warp", WARP_SEGMENT: "warp", BLOCK_TOTAL: "block",
              BLOCK_BITMAP: "block", BLOCK_SEGMENT: "block"}

_POW2 = (1, 2, 4, 8, 16, 32)


def _pow2_at_least(n: int) -> int:
    return 1 << max(int(n) - 1, 0).bit_length()


def _ceil_div(a, b):
    return -(-a // b)


# ======================================================================================
# The memory access space
# ======================================================================================


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
                         thread=Division('single', True); see the module docstring)
    compact              compact storage (see "Compact storage" in the module docstring):
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


@dataclasses.dataclass(frozen=True)
class Reduction:
    """The reduction a plan runs: one algorithm (or None) per level, and whether blocks add
    their end pieces to C atomically."""

    thread: str | None
    warp: str | None
    block: str | None
    atomic: bool

    @property
    def algorithms(self) -> tuple:
        return tuple(a for a in (self.thread, self.warp, self.block) if a is not None)


def select_reduction(strategy: Strategy, max_thread_slots: int) -> Reduction:
    """The paper's rule-based selection (Fig. 12, as read in the module docstring), from the
    divisions and the longest thread-group range."""
    s = strategy
    thread = None if max_thread_slots < 2 else (THREAD_TOTAL if s.thread.rows == "single" else THREAD_BITMAP)
    pieces_per_group = 2 if thread == THREAD_BITMAP else 1
    warp = None
    if s.thread.split:
        warp = (WARP_TOTAL if s.warp.rows == "single" else
                WARP_BITMAP if pieces_per_group == 1 else WARP_SEGMENT)
    block = None
    if s.warp.split:
        block = (BLOCK_TOTAL if s.block.rows == "single" else
                 BLOCK_BITMAP if s.warp.rows == "single" else BLOCK_SEGMENT)
    return Reduction(thread=thread, warp=warp, block=block, atomic=s.block.split)


@dataclasses.dataclass(frozen=True, eq=False)
class Plan(Checksummed):
    """A strategy applied to one matrix: the offset arrays and the adjusted layout.

    Slots are the stored entries: the nonzeros plus padding. *Logical* positions number them
    in the order the workers own them (thread-group by thread-group); *storage* positions
    are where they sit in memory (the same unless ``interleave``).

    strategy       the :class:`Strategy`
    shape, dtype   A's shape and value dtype
    row_order      [M] original row of each adjusted row (sort_rows; else 0..M-1)
    block_offset   [n_blocks + 1] first logical slot of each block
    warp_offset    [n_blocks * groups_per_block + 1] first logical slot of each warp-group
    thread_offset  [n_blocks * groups_per_block * groups_per_warp + 1] ... of each thread-group
    storage        [n_slots] storage position of each logical slot
    rows           [n_slots] (storage order) adjusted row of each slot; -1: padding of no row
    row_start      [n_slots] (storage order) the BITMAP: True where a row begins
    cols, values   [n_slots] (storage order) column and value (padding: 0 and 0)
    pad            [n_slots] (storage order) True for padding slots
    source         [n_slots] (storage order) index of the nonzero in canonical CSR, -1 padding
    reduction      the :class:`Reduction` the rules select
    zero_init      the kernel must zero C first (empty rows that no worker writes, or atomics)

    Compact storage (``strategy.compact``; else these are None and ``col_bits`` 32):
    col_bits       16: columns stored as ``col_offset`` (uint16) from ``col_base``; 32: ``cols``
    col_base       [n_blocks] int32 first column of each block's span; None where every
                   column fits 16 bits as it is (K <= 65536)
    col_offset     [n_slots] uint16 (storage order) column - col_base of its block (padding 0)
    row_ptr        [M + 1] logical position of each adjusted row's first slot (an empty row:
                   the next row's; the last entry: n_slots)
    tg_row         [thread-groups] int32 adjusted row of the group's first real slot, -1: none
    tg_len         [thread-groups] int32 real slots of the group (its padding follows them)

    Like the formats, a plan is checked and checksummed (``Checksummed``): its arrays are
    read-only, ``checksum`` covers every field and array, and :meth:`validate` checks what a
    generated kernel relies on (``codegen.upload`` calls it before anything reaches the GPU).
    """

    strategy: Strategy
    shape: tuple
    dtype: np.dtype
    row_order: np.ndarray
    block_offset: np.ndarray
    warp_offset: np.ndarray
    thread_offset: np.ndarray
    storage: np.ndarray
    rows: np.ndarray
    row_start: np.ndarray
    cols: np.ndarray
    values: np.ndarray
    pad: np.ndarray
    source: np.ndarray
    reduction: Reduction
    zero_init: bool
    col_bits: int = 32
    col_base: np.ndarray | None = None
    col_offset: np.ndarray | None = None
    row_ptr: np.ndarray | None = None
    tg_row: np.ndarray | None = None
    tg_len: np.ndarray | None = None

    rebuild_fix: ClassVar[str] = "plan it again: reference.generalsparse.plan(A, strategy)"

    def _checksum_head(self) -> tuple:
        absent = tuple(f.name for f in dataclasses.fields(self)
                       if f.name != "checksum" and getattr(self, f.name) is None)
        return ("generalsparse plan", repr(self.strategy), repr(_plain(self.shape)),
                repr(self.dtype), repr(self.reduction), repr(self.zero_init), repr(self.col_bits),
                absent)

    # validation ---------------------------------------------------------------------------
    def validate(self, expensive: bool = False, *, checksum: bool = True) -> "Plan":
        """Check the plan is consistent; raise :class:`FormatError` naming the field if not,
        else return it. Cheap: the strategy, shape, dtype and reduction, every array's dtype
        and length, the offsets (starting at 0, non-decreasing, ending at the slot count,
        the warp and block offsets every ``groups_per_warp``-th and
        ``groups_per_warp * groups_per_block``-th thread offset). ``expensive=True``: every
        index a kernel reads in range (rows, columns, storage and row order permutations,
        the source of every slot, padding holding 0), the reduction the rules select, C
        zeroed where a row is never written, and a compact plan's arrays decoding to its
        per-slot arrays (:func:`decode_compact`). ``checksum=True``: the checksum, last."""
        self._check_fields()
        if expensive:
            self._check_entries()
        if checksum:
            self.verify_checksum()
        return self

    def _check_fields(self):
        s = self.strategy
        self._require(isinstance(s, Strategy), "strategy", "a Strategy", type(s).__name__)
        sh = self.shape
        self._require(isinstance(sh, tuple) and len(sh) == 2 and all(
            isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)) and v >= 0
            for v in sh), "shape", "a tuple of two non-negative ints", repr(sh))
        self._require(isinstance(self.dtype, np.dtype) and self.dtype in VALUE_DTYPES, "dtype",
                      "float16, float32 or float64 (a np.dtype)", repr(self.dtype))
        self._require(isinstance(self.reduction, Reduction), "reduction", "a Reduction",
                      type(self.reduction).__name__)
        self._require(isinstance(self.zero_init, bool), "zero_init", "True or False", repr(self.zero_init))
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            optional = f.name in ("col_base", "col_offset", "row_ptr", "tg_row", "tg_len")
            if f.type in ("np.ndarray", "np.ndarray | None") and not (optional and v is None):
                self._require(isinstance(v, np.ndarray), f.name, "a NumPy array", type(v).__name__)
        off = self.thread_offset
        per_warp, per_block = s.groups_per_warp, s.groups_per_warp * s.groups_per_block
        self._require(off.ndim == 1 and off.size >= 1 and (off.size - 1) % per_block == 0,
                      "thread_offset", f"1 + a multiple of {per_block} entries (thread-groups per "
                      "block)", off.size)
        n, groups = int(self.storage.size), off.size - 1
        self._check_indptr("thread_offset", off, groups, n)
        for name, step in (("warp_offset", per_warp), ("block_offset", per_block)):
            a = getattr(self, name)
            self._check_index_array(name, a, groups // step + 1)
            self._require(bool(np.array_equal(a, off[::step])), name,
                          f"every {step}-th thread offset", "other offsets")
        for name in ("storage", "rows", "cols", "source"):
            self._check_index_array(name, getattr(self, name), n)
        for name in ("row_start", "pad"):
            a = getattr(self, name)
            self._require(a.dtype == np.bool_ and a.shape == (n,), name, f"a bool array of {n} entries",
                          f"{a.dtype} of shape {a.shape}")
        self._require(self.values.dtype == self.dtype and self.values.shape == (n,), "values",
                      f"{self.dtype} of shape {(n,)}", f"{self.values.dtype} of shape {self.values.shape}")
        m = int(sh[0])
        self._check_index_array("row_order", self.row_order, m)
        if not s.compact:
            self._require(self.col_bits == 32 and all(getattr(self, k) is None for k in (
                "col_base", "col_offset", "row_ptr", "tg_row", "tg_len")), "col_bits",
                "32 and no compact arrays (strategy.compact is False)", self.col_bits)
            return
        self._check_index_array("row_ptr", self.row_ptr, m + 1)
        for name in ("tg_row", "tg_len"):
            a = getattr(self, name)
            self._require(a.dtype == np.int32 and a.shape == (groups,), name,
                          f"int32 of shape {(groups,)}", f"{a.dtype} of shape {a.shape}")
        self._require(self.col_bits in (16, 32), "col_bits", "16 or 32", repr(self.col_bits))
        if self.col_bits == 32:
            self._require(self.col_offset is None and self.col_base is None, "col_offset",
                          "None with 32-bit columns", "an array")
            return
        a = self.col_offset
        self._require(isinstance(a, np.ndarray) and a.dtype == np.uint16 and a.shape == (n,),
                      "col_offset", f"uint16 of shape {(n,)}", repr(a)[:80])
        b = self.col_base
        n_blocks = self.block_offset.size - 1
        self._require(b is None or (isinstance(b, np.ndarray) and b.dtype == np.int32
                                    and b.shape == (n_blocks,)), "col_base",
                      f"None or int32 of shape {(n_blocks,)}", repr(b)[:80])

    def _check_entries(self):
        s, (m, k), n = self.strategy, (int(v) for v in self.shape), self.n_slots
        pad = self.pad
        real = ~pad
        self._require(_is_permutation(self.storage, n), "storage", f"a permutation of 0..{n - 1}",
                      "repeated or out-of-range positions")
        self._require(_is_permutation(self.row_order, m), "row_order",
                      f"a permutation of 0..{m - 1}", "repeated or out-of-range rows")
        rows, cols, source = self.rows, self.cols, self.source
        self._require(bool(np.all((rows >= -1) & (rows < m))), "rows", f"rows in [-1, {m})",
                      f"range [{rows.min()}, {rows.max()}]" if n else "?")
        self._require(bool(np.all(cols[real] >= 0) and np.all(cols[real] < k)), "cols",
                      f"columns in [0, {k})", f"range [{cols[real].min()}, {cols[real].max()}]"
                      if real.any() else "?")
        self._require(bool(np.all(cols[pad] == 0) and np.all(self.values[pad] == 0)
                           and np.all(source[pad] == -1)), "pad",
                      "padding slots with column 0, value 0 and source -1", "another padding slot")
        nnz = int(real.sum())
        self._require(_is_permutation(source[real], nnz), "source",
                      f"each of the {nnz} nonzeros once", "a nonzero missing or repeated")
        self._require(bool(np.all(rows[real] >= 0)), "rows", "a row for every real slot", "-1")
        length = np.diff(self.thread_offset)
        want = select_reduction(s, int(length.max(initial=0)))
        self._require(self.reduction == want, "reduction", repr(want), repr(self.reduction))
        written = np.zeros(m, dtype=bool)
        written[self.row_order[rows[rows >= 0]]] = True
        self._require(self.zero_init or not (want.atomic or not written.all()), "zero_init",
                      "True (C must be zeroed: atomic block ends or rows no slot writes)", False)
        if not s.compact:
            return
        ptr = self.row_ptr
        self._require(bool(np.all(ptr[1:] >= ptr[:-1])) and int(ptr[-1]) == n and (m == 0 or int(ptr[0]) >= 0),
                      "row_ptr", f"non-decreasing slot positions ending at {n}", "others")
        self._require(bool(np.all((self.tg_len >= 0) & (self.tg_len <= length))), "tg_len",
                      "between 0 and each thread-group's length", "others")
        self._require(bool(np.all((self.tg_row >= -1) & (self.tg_row < m))), "tg_row",
                      f"rows in [-1, {m})", "others")
        if self.col_base is not None:
            self._require(bool(np.all(self.col_base >= 0)), "col_base", "non-negative columns", "a negative one")
        got = decode_compact(self)
        for name in ("rows", "row_start", "pad", "cols"):
            self._require(bool(np.array_equal(got[name], getattr(self, name))), name,
                          "what the compact arrays (row_ptr, tg_len, col_base/col_offset) decode to",
                          "other values")
        first = np.minimum(self.thread_offset[:-1], max(n - 1, 0))
        lead = np.where(self.tg_len > 0, self.logical("rows")[first] if n else -1, -1)
        self._require(bool(np.array_equal(lead, self.tg_row)), "tg_row",
                      "the row of each thread-group's first real slot (-1: none)", "other rows")

    def device_arrays(self) -> dict:
        """The per-slot, per-row and per-thread-group arrays the generated kernel reads
        (name -> array, in kernel-argument order; offset tables not included, the code
        optimizer may replace them by expressions). Not compact: ``flags`` (uint8, bit 0 row
        start, bit 1 padding), ``rows`` (row of C, sort undone), ``cols``, ``values``.
        Compact: ``values``, ``cols`` (uint16 offsets, or int32), ``col_base`` (where
        needed), ``row_ptr``, ``tg_row``, ``tg_len``, ``row_order`` (sort_rows only)."""
        if not self.strategy.compact:
            flags = (self.row_start.astype(np.uint8) * 1) | (self.pad.astype(np.uint8) * 2)
            rows = np.where(self.rows >= 0, self.row_order[np.maximum(self.rows, 0)], -1).astype(self.rows.dtype)
            return dict(flags=flags, rows=rows, cols=np.asarray(self.cols), values=np.asarray(self.values))
        out = dict(values=np.asarray(self.values))
        if self.col_bits == 16:
            out["cols"] = np.asarray(self.col_offset)
            if self.col_base is not None:
                out["col_base"] = np.asarray(self.col_base)
        else:
            out["cols"] = np.asarray(self.cols, dtype=np.int32)
        out.update(row_ptr=np.asarray(self.row_ptr), tg_row=np.asarray(self.tg_row),
                   tg_len=np.asarray(self.tg_len))
        if self.strategy.sort_rows:
            out["row_order"] = np.asarray(self.row_order, dtype=np.int32)
        return out

    @property
    def stored_bytes(self) -> int:
        """Every byte the kernel reads for A: :meth:`device_arrays` plus the thread-group
        offsets (and the warp-group offsets where interleaved) as stored arrays (an upper
        bound: the code optimizer may compute them instead)."""
        total = sum(int(a.nbytes) for a in self.device_arrays().values()) + int(self.thread_offset.nbytes)
        return total + (int(self.warp_offset.nbytes) if self.strategy.interleave else 0)

    @property
    def bytes_per_nnz(self) -> float:
        """:attr:`stored_bytes` per nonzero of A (NaN for an empty A)."""
        return self.stored_bytes / self.nnz if self.nnz else float("nan")

    @property
    def n_blocks(self) -> int:
        return self.block_offset.size - 1

    @property
    def n_slots(self) -> int:
        return int(self.storage.size)

    @property
    def nnz(self) -> int:
        return int(np.count_nonzero(~self.pad))

    def grid(self, n_cols: int) -> tuple:
        """(blocks along x, blocks along y) for a B of ``n_cols`` columns."""
        return (self.n_blocks, _ceil_div(int(n_cols), self.strategy.block_cols))

    def logical(self, name: str) -> np.ndarray:
        """A per-slot array (``rows``, ``cols``, ...) in logical order."""
        return getattr(self, name)[self.storage]

    def group_of_slot(self) -> np.ndarray:
        """[n_slots] the thread-group owning each logical slot."""
        return np.repeat(np.arange(self.thread_offset.size - 1), np.diff(self.thread_offset))

    def thread_map(self, n_cols: int):
        """Every thread of the launch for a B of ``n_cols`` columns, as (group, columns):
        ``group`` [threads] the global thread-group it belongs to, ``columns``
        [threads, thread_cols] the columns of C it computes (-1: beyond N, idle)."""
        s = self.strategy
        bx, by = self.grid(n_cols)
        block_x, block_y, tid = np.meshgrid(np.arange(bx), np.arange(by), np.arange(s.threads_per_block),
                                            indexing="ij")
        block_x, block_y, tid = block_x.ravel(), block_y.ravel(), tid.ravel()
        warp, lane = tid // WARP, tid % WARP
        group = ((block_x * s.groups_per_block + warp // s.group_warps) * s.groups_per_warp
                 + lane // s.group_lanes)
        first = (block_y * s.block_cols + (warp % s.group_warps) * s.warp_cols
                 + (lane % s.group_lanes) * s.thread_cols)
        cols = first[:, None] + np.arange(s.thread_cols)[None, :]
        return group, np.where(cols < n_cols, cols, -1)


# --------------------------------------------------------------------------------------
# plan(): format adjustments of rows, the three divisions, slot padding, interleaving
# --------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class _Layout:
    """The slot stream after the row adjustments (before the divisions)."""

    rowptr: np.ndarray      # [M + 1] over adjusted rows
    source: np.ndarray      # [slots] canonical CSR index, -1 for an empty row's padding slot
    row_order: np.ndarray   # [M]


def _row_adjust(indptr: np.ndarray, sort_rows: bool, pad_empty_rows: bool):
    """The row adjustments: ``(rowptr`` over the adjusted rows, each adjusted row's first
    CSR index, whether it is an empty row's padding slot, ``row_order)``."""
    indptr = np.asarray(indptr, dtype=np.int64)
    lengths = np.diff(indptr)
    order = np.argsort(-lengths, kind="stable") if sort_rows else np.arange(lengths.size)
    lengths, starts = lengths[order], indptr[:-1][order]
    padded = pad_empty_rows & (lengths == 0)
    slots = np.where(padded, 1, lengths)
    rowptr = np.concatenate(([0], np.cumsum(slots))).astype(np.int64)
    return rowptr, starts, padded, order


def _layout(indptr: np.ndarray, sort_rows: bool, pad_empty_rows: bool) -> _Layout:
    rowptr, starts, padded, order = _row_adjust(indptr, sort_rows, pad_empty_rows)
    slots = np.diff(rowptr)
    row = np.repeat(np.arange(slots.size), slots)
    source = np.where(padded[row], -1, starts[row] + np.arange(row.size) - rowptr[row])
    return _Layout(rowptr=rowptr, source=source, row_order=order)


def _block_offsets(rowptr: np.ndarray, s: Strategy) -> np.ndarray:
    """Block level: rows by index (not split) or chunks of the slot stream (split)."""
    n_rows, total = rowptr.size - 1, int(rowptr[-1])
    if not s.block.split:
        return rowptr[np.r_[0:n_rows:s.block_size, n_rows]] if n_rows else rowptr[:1]
    if s.block.rows == "multi":
        return np.r_[np.arange(0, total, s.block_size), total].astype(np.int64)
    counts = _ceil_div(np.diff(rowptr), s.block_size)
    row = np.repeat(np.arange(n_rows), counts)
    k = np.arange(row.size) - np.repeat(np.cumsum(counts) - counts, counts)
    return np.r_[rowptr[:-1][row] + k * s.block_size, total].astype(np.int64)


def _sorted_union(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``np.union1d`` of two non-decreasing arrays, by a merge: the stable sort of two sorted
    runs is linear (numpy's hash-based unique costs far more per call on large inputs, and
    :func:`strategies` makes many such calls: docs/performance.md, "GeneralSparse
    reference")."""
    c = np.concatenate([np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)])
    c.sort(kind="stable")
    if c.size:
        c = c[np.r_[True, c[1:] != c[:-1]]]
    return c


def _pieces(parent: np.ndarray, rowptr: np.ndarray):
    """The row pieces of every parent range: ``cuts`` (sorted positions where a row or a
    parent range begins) and, per parent, the index range [a, b) of its pieces in ``cuts``."""
    cuts = _sorted_union(rowptr, parent)
    return cuts, np.searchsorted(cuts, parent[:-1]), np.searchsorted(cuts, parent[1:])


def _too_many_pieces(level: str, parent_name: str, k: int, r: np.ndarray, division: Division):
    i = int(np.argmax(r))
    return OptionError(problem(
        f"Strategy.{level}", f"at most {k} row pieces per {parent_name} for {division.label} "
        f"(one {level} worker per piece, {k} per {parent_name})",
        f"{parent_name} {i} holds {int(r[i])}",
        f"choose {level}=Division('multi', ...), or fewer rows per block (block_size), or more "
        f"{'thread-groups per warp (smaller warp_cols)' if level == 'thread' else 'warps per block'}"))


def _children(parent: np.ndarray, rowptr: np.ndarray, k: int, division: Division, level: str,
              parent_name: str) -> np.ndarray:
    """Divide every parent range into exactly ``k`` consecutive child ranges (module
    docstring: how a level divides its parent's range). Returns the child offsets."""
    lo, hi = parent[:-1], parent[1:]
    cuts, a, b = _pieces(parent, rowptr)
    r = b - a
    if division.rows == "single" and r.size and r.max() > k:
        raise _too_many_pieces(level, parent_name, k, r, division)
    if k == 1:
        return parent.copy()
    j = np.arange(k)[None, :]
    if not division.split:                         # whole pieces, ceil(r / k) per child
        q = np.maximum(_ceil_div(r, k), 1)[:, None]
        starts = cuts[np.minimum(a[:, None] + j * q, b[:, None])]
    elif division.rows == "multi":                 # equal chunks of the parent's slots
        n = (hi - lo)[:, None]
        starts = lo[:, None] + np.minimum(j * _ceil_div(n, k), n)
    else:                                          # k // r children per piece
        q = (k // np.maximum(r, 1))[:, None]
        piece, m = j // q, j % q
        inside = piece < r[:, None]
        at = np.minimum(a[:, None] + piece, cuts.size - 1)
        ps, pe = cuts[at], cuts[np.minimum(at + 1, cuts.size - 1)]
        n = pe - ps
        starts = np.where(inside, ps + np.minimum(m * _ceil_div(n, q), n), hi[:, None])
    return np.r_[starts.ravel(), parent[-1]].astype(np.int64)


def _divide(rowptr: np.ndarray, s: Strategy):
    """Block, warp and thread offsets over the (unpadded) slot stream."""
    block = _block_offsets(rowptr, s)
    warp = _children(block, rowptr, s.groups_per_block, s.warp, "warp", "block")
    if s.cyclic:      # one row piece per warp-group (single-row warps), so nothing to refuse
        thread = _cyclic_offsets(warp, s)
    else:
        thread = _children(warp, rowptr, s.groups_per_warp, s.thread, "thread", "warp-group")
    return block, warp, thread


def cyclic_lengths(n: np.ndarray, t_count: int, v: int) -> np.ndarray:
    """[len(n), t_count] real slots of each thread-group when ``t_count`` thread-groups take
    the ``n`` entries of a row piece in turns of ``v`` (``cyclic``): thread-group t holds the
    entries ``(j // v) * t_count * v + t * v + j % v`` below n, a prefix of its steps j."""
    n = np.asarray(n, dtype=np.int64)[:, None]
    q, r = n // (t_count * v), n % (t_count * v)
    return q * v + np.clip(r - np.arange(t_count)[None, :] * v, 0, v)


def cyclic_entry(step: np.ndarray, t: np.ndarray, t_count: int, v: int) -> np.ndarray:
    """The entry of its row piece that thread-group ``t``'s ``step`` holds (``cyclic``;
    arrays or scalars: the numba planner compiles this function as it is)."""
    return (step // v) * (t_count * v) + t * v + step % v


def _cyclic_offsets(warp: np.ndarray, s: Strategy) -> np.ndarray:
    """Thread offsets over the unpadded stream for ``cyclic``: each thread-group's slice has
    the length of its real slots (the slots themselves are spread over the piece)."""
    length = cyclic_lengths(np.diff(warp), s.groups_per_warp, s.vector_width)
    starts = warp[:-1, None] + np.cumsum(length, axis=1) - length
    return np.r_[starts.ravel(), warp[-1]].astype(np.int64)


def _pad_slots(thread: np.ndarray, s: Strategy):
    """Padded thread-group lengths (vector width; interleaving: equal in a warp-group)."""
    length = np.diff(thread)
    v = s.vector_width
    padded = _ceil_div(length, v) * v
    if s.interleave and padded.size:
        per_warp = padded.reshape(-1, s.groups_per_warp)
        padded = np.repeat(per_warp.max(axis=1), s.groups_per_warp)
    return length, padded


def _storage(offsets: np.ndarray, s: Strategy) -> np.ndarray:
    """Storage position of every logical slot (interleaving: the slots a warp-group's
    thread-groups read at the same step side by side, ``vector_width`` at a time)."""
    n = int(offsets[-1])
    if not s.interleave:
        return np.arange(n, dtype=np.int64)
    t_count = s.groups_per_warp
    group = np.repeat(np.arange(offsets.size - 1), np.diff(offsets))
    j = np.arange(n) - offsets[:-1][group]          # step within the thread-group
    t = group % t_count                              # thread-group within its warp-group
    base = offsets[:-1][group - t]                   # first slot of the warp-group
    v = s.vector_width
    return base + (j // v) * (t_count * v) + t * v + j % v


def _sentinel(a: np.ndarray, fill) -> np.ndarray:
    """``a`` with one more element, ``fill``, so that index -1 reads it."""
    return np.concatenate([a, np.full(1, fill, dtype=a.dtype)])


@dataclasses.dataclass(frozen=True)
class _Slots:
    """The padded slot stream in logical order."""

    offsets: np.ndarray     # thread-group offsets after padding
    row: np.ndarray         # adjusted row (-1: padding of a thread-group with no real slot)
    start: np.ndarray       # a row begins here
    source: np.ndarray      # canonical CSR index, -1 for padding


def _slots(lay: _Layout, thread: np.ndarray, s: Strategy) -> _Slots:
    length, padded = _pad_slots(thread, s)
    offsets = np.r_[0, np.cumsum(padded)].astype(np.int64)
    group = np.repeat(np.arange(padded.size), padded)
    step = np.arange(group.size) - offsets[:-1][group]
    real = step < length[group]
    # the layout slot each logical slot holds; padding refers to its group's last real slot
    last = np.minimum(step, length[group] - 1)
    if s.cyclic:      # entries of the warp-group's piece, which begins at its first group's
        t = group % s.groups_per_warp
        at = thread[:-1][group - t] + cyclic_entry(last, t, s.groups_per_warp, s.vector_width)
    else:
        at = thread[:-1][group] + last
    held = np.where(length[group] > 0, at, -1)
    n_lay = int(lay.rowptr[-1])
    lay_row = _sentinel(np.repeat(np.arange(lay.rowptr.size - 1), np.diff(lay.rowptr)), -1)
    lay_first = np.zeros(n_lay + 1, dtype=bool)
    lay_first[lay.rowptr[:-1][np.diff(lay.rowptr) > 0]] = True
    return _Slots(offsets=offsets, row=lay_row[held], start=real & lay_first[held],
                  source=np.where(real, _sentinel(lay.source, -1)[held], -1))


def plan(A, strategy: Strategy, dtype=None, lossy: bool = False) -> Plan:
    """Apply ``strategy`` to ``A`` (any scipy.sparse matrix or dense 2-D array; ``dtype``
    and ``lossy`` as in ``canonical_csr``): row adjustments, the three divisions, then the
    slot padding and the storage order. Raises :class:`OptionError` (naming the level) where
    the strategy does not fit A (single-row workers facing more row pieces than workers)."""
    if not isinstance(strategy, Strategy):
        raise OptionError(problem("strategy", "a Strategy", type(strategy).__name__,
                                  "take one from strategies(A, N) or build Strategy(...)"))
    dt = resolve_dtype(A, dtype)
    csr = canonical_csr(A, dt, lossy)
    s = strategy
    lay = _layout(csr.indptr, s.sort_rows, s.pad_empty_rows)
    _, _, thread = _divide(lay.rowptr, s)
    sl = _slots(lay, thread, s)
    storage = _storage(sl.offsets, s)
    idx = index_dtype_for(sl.offsets[-1], *csr.shape)

    def stored(logical, dtype_):
        out = np.zeros(storage.size, dtype=dtype_)
        out[storage] = logical
        return out

    t_count, g_count = s.groups_per_warp, s.groups_per_block
    if s.b_vector * np.dtype(dt).itemsize > 16:
        raise OptionError(problem("Strategy.b_vector", f"at most {16 // np.dtype(dt).itemsize} for "
                                  f"{np.dtype(dt).name} (16-byte loads)", s.b_vector))
    red = select_reduction(s, int(np.diff(sl.offsets).max(initial=0)))
    written = np.zeros(csr.shape[0], dtype=bool)
    written[lay.row_order[sl.row[sl.row >= 0]]] = True
    block_offset = sl.offsets[::t_count * g_count]
    cols = _sentinel(np.asarray(csr.indices, dtype=idx), 0)[sl.source]
    extra = (_compact_arrays(sl, np.diff(thread), block_offset, cols, csr.shape, idx)
             if s.compact else {})
    if "col_offset" in extra:
        extra["col_offset"] = stored(extra["col_offset"], np.uint16)
    return Plan(
        strategy=s, shape=tuple(int(v) for v in csr.shape), dtype=dt, row_order=lay.row_order.astype(idx),
        block_offset=block_offset.astype(idx),
        warp_offset=sl.offsets[::t_count].astype(idx), thread_offset=sl.offsets.astype(idx),
        storage=storage.astype(idx), rows=stored(sl.row, idx), row_start=stored(sl.start, bool),
        cols=stored(cols, idx),
        values=stored(_sentinel(csr.data.astype(dt), 0)[sl.source], dt),
        pad=stored(sl.source < 0, bool), source=stored(sl.source, idx), reduction=red,
        zero_init=bool(red.atomic or not written.all()), **extra)


#: the widest span of columns a 16-bit offset covers
SPAN16 = 1 << 16


def _compact_arrays(sl: _Slots, length: np.ndarray, block_offset: np.ndarray, cols: np.ndarray,
                    shape: tuple, idx) -> dict:
    """The compact storage of a plan (logical order; ``col_offset`` still logical): the
    row offsets, the thread-group rows and real lengths, the column offsets and bases."""
    n, m, k = int(sl.offsets[-1]), int(shape[0]), int(shape[1])
    real = sl.source >= 0
    row_ptr = np.full(m + 1, n, dtype=np.int64)
    at = np.flatnonzero(sl.start)
    row_ptr[sl.row[at]] = at
    row_ptr = np.minimum.accumulate(row_ptr[::-1])[::-1]          # empty rows: the next row's start
    first = np.minimum(sl.offsets[:-1], max(n - 1, 0))
    tg_row = np.where(length > 0, sl.row[first] if n else -1, -1)
    out = dict(row_ptr=row_ptr.astype(idx), tg_row=tg_row.astype(np.int32),
               tg_len=length.astype(np.int32))
    if k <= SPAN16:
        return dict(out, col_bits=16, col_base=None, col_offset=cols.astype(np.uint16))
    base, block = column_bases(cols, real, block_offset, k)
    if base is None:
        return dict(out, col_bits=32)
    offset = np.where(real, cols - base[block], 0)
    return dict(out, col_bits=16, col_base=base.astype(np.int32), col_offset=offset.astype(np.uint16))


def column_bases(cols: np.ndarray, real: np.ndarray, block_offset: np.ndarray, k: int) -> tuple:
    """Per block of slots (``block_offset``), the smallest column of its real slots (0 for a
    block with none): ``(bases, block of each slot)``, or ``(None, block of each slot)`` when
    some block's columns span ``SPAN16`` or more (no 16-bit offsets). ``cols`` and ``real``
    are per slot, in logical order."""
    n = cols.size
    block = np.searchsorted(block_offset, np.arange(n), side="right") - 1
    lo = np.full(block_offset.size - 1, k, dtype=np.int64)
    hi = np.full(block_offset.size - 1, -1, dtype=np.int64)
    np.minimum.at(lo, block[real], cols[real])
    np.maximum.at(hi, block[real], cols[real])
    used = hi >= 0
    if np.any(hi[used] - lo[used] >= SPAN16):
        return None, block
    return np.where(used, lo, 0), block


def _is_permutation(a: np.ndarray, n: int) -> bool:
    """Whether ``a`` holds each of 0..n-1 exactly once."""
    if a.size != n:
        return False
    if not n:
        return True
    if int(a.min()) < 0 or int(a.max()) >= n:
        return False
    return bool(np.all(np.bincount(a, minlength=n) == 1))


def decode_compact(p: Plan) -> dict:
    """The per-slot arrays ``rows``, ``row_start``, ``pad`` and ``cols`` (storage order)
    recovered from a compact plan's stored arrays alone (``row_ptr``, ``tg_row``, ``tg_len``,
    ``col_base``/``col_offset`` or ``cols``, the thread offsets and the storage order): what the
    generated kernel sees. Equal to the plan's own arrays (a test checks it)."""
    if not p.strategy.compact:
        raise OptionError(problem("plan.strategy.compact", "True", False, "plan a compact strategy"))
    n = p.n_slots
    j = np.arange(n)
    off = np.asarray(p.thread_offset, dtype=np.int64)
    tg_len = np.asarray(p.tg_len, dtype=np.int64)
    group = np.searchsorted(off, j, side="right") - 1
    real = j - off[group] < tg_len[group]
    row_ptr = np.asarray(p.row_ptr, dtype=np.int64)
    row = np.searchsorted(row_ptr, j, side="right") - 1
    last = off[:-1] + tg_len - 1                                  # each group's last real slot
    last_row = np.where(tg_len > 0, np.searchsorted(row_ptr, np.maximum(last, 0), side="right") - 1, -1)
    row = np.where(real, row, last_row[group])
    start = real & (row_ptr[np.maximum(row, 0)] == j)
    storage = np.asarray(p.storage, dtype=np.int64)
    if p.col_bits == 16:
        cols = np.asarray(p.col_offset, dtype=np.int64)[storage]
        if p.col_base is not None:
            block = np.searchsorted(np.asarray(p.block_offset, dtype=np.int64), j, side="right") - 1
            cols = cols + np.asarray(p.col_base, dtype=np.int64)[block]
    else:
        cols = np.asarray(p.cols, dtype=np.int64)[storage]
    cols = np.where(real, cols, 0)

    def stored(logical, dtype_):
        out = np.zeros(n, dtype=dtype_)
        out[storage] = logical
        return out

    return dict(rows=stored(row, p.rows.dtype), row_start=stored(start, bool), pad=stored(~real, bool),
                cols=stored(cols, p.cols.dtype))


# ======================================================================================
# The reduction space, lane by lane
# ======================================================================================


def tree_sum(values: np.ndarray) -> np.ndarray:
    """TOTAL over K lanes (K a power of two), batched: ``values`` [P, K, N] -> [P, N].

    Distances K/2, K/4, ..., 1: lane l < d adds lane l + d (a warp's ``shfl_down``, or the
    shared-memory tree of a block); lane 0 ends with the sum."""
    v = np.array(values, copy=True)
    d = v.shape[1] // 2
    with np.errstate(invalid="ignore", over="ignore"):
        while d >= 1:
            v[:, :d] = v[:, :d] + v[:, d:2 * d]
            d //= 2
    return v[:, 0]


def _suffix_scan(values: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Segmented suffix sum over the lanes, batched: every lane j gets the sum of lanes j up
    to the end of its segment (``ends[j]``: the segment of lane j ends at lane j; the last
    lane always ends one). Passes at distances 1, 2, 4, ...; after each pass ``ends[j]``
    says whether the segment ends inside lane j's window, which is when j stops adding."""
    v = np.array(values, copy=True)
    e = np.array(ends, copy=True)
    e[:, -1:] = True
    k, step = v.shape[1], 1
    with np.errstate(invalid="ignore", over="ignore"):
        while step < k:
            go = ~e[:, :k - step]                   # lanes whose segment reaches past their window
            v_next, e_next = v.copy(), e.copy()
            v_next[:, :k - step] = np.where(go[..., None], v[:, :k - step] + v[:, step:], v[:, :k - step])
            e_next[:, :k - step] = e[:, :k - step] | e[:, step:]
            v, e = v_next, e_next
            step *= 2
    return v


def bitmap_reduce(values: np.ndarray, bitmap: np.ndarray) -> np.ndarray:
    """Algorithm 1 (BITMAP), batched: ``values`` [P, K, N], ``bitmap`` [P, K] (True where a
    row begins). Returns [P, K, N]: every lane where a row begins (and lane 0) holds the sum
    of its row's lanes, up to the next lane where a row begins."""
    ends = np.ones_like(bitmap)
    ends[:, :-1] = bitmap[:, 1:]                     # my row ends here if the next lane starts one
    return _suffix_scan(values, ends)


def segment_reduce(lead: np.ndarray, tail: np.ndarray, has_start: np.ndarray):
    """Algorithm 2 (SEGMENT), batched over P parents of K lanes. Lane k holds ``lead[k]``
    (its slots before its first row start) and ``tail[k]`` (from its last row start on);
    ``has_start[k]`` says whether it holds a row start at all.

    Returns (result, head, closes):
      result [P, K, N]  at a lane with a row start: its tail plus the leads of the following
                        lanes up to and including the next lane with a row start
      head   [P, N]     the leads of lanes 0 up to and including the first lane with a start
                        (the end of a row that began before the parent)
      closes [P, K]     the row of that lane's tail ends inside the parent (a later lane
                        holds a row start); where False the row may go on
    """
    k = has_start.shape[1]
    # Seg_offset: 1 for lanes without a row start; span[i]: how many follow lane i in a row
    no_start = ~has_start
    span = np.zeros(has_start.shape, dtype=np.int64)
    for lane in range(k - 2, -1, -1):
        span[:, lane] = np.where(no_start[:, lane + 1], span[:, lane + 1] + 1, 0)
    closes = (np.arange(k)[None, :] + span + 1) < k
    # the leads summed from each lane up to and including the next lane with a row start
    chained = _suffix_scan(lead, has_start)
    following = np.zeros_like(chained)
    following[:, :-1] = chained[:, 1:]
    with np.errstate(invalid="ignore", over="ignore"):
        result = tail + following
    return result, chained[:, 0], closes


@dataclasses.dataclass
class Partials:
    """What the workers of one level pass up (P workers, N columns; rows -1: none).

    has_start [P]     the worker's slots include a row start
    lead [P, N], lead_row [P]   the sum of its slots before its first row start
    tail [P, N], tail_row [P]   the sum from its last row start to its end
    """

    has_start: np.ndarray
    lead: np.ndarray
    lead_row: np.ndarray
    tail: np.ndarray
    tail_row: np.ndarray

    def grouped(self, k: int):
        """The same arrays shaped [P // k, k, ...] (children grouped by parent)."""
        p, n = self.has_start.size // k, self.lead.shape[1]
        return (self.has_start.reshape(p, k), self.lead.reshape(p, k, n), self.lead_row.reshape(p, k),
                self.tail.reshape(p, k, n), self.tail_row.reshape(p, k))


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


def _violation(level: str, algorithm, what: str) -> OptionError:
    return OptionError(problem(f"reduction.{level}", f"input {algorithm or 'without a reduction'} "
                               "can handle", what, "use select_reduction(strategy, ...) for this plan"))


def thread_reduce(products, rows, row_start, offsets, algorithm, out=None) -> Partials:
    """The thread level: each thread-group walks its slots [offsets[i], offsets[i+1]) in
    order (all thread-groups step together, as the lanes of a warp do). ``products`` [slots,
    N], ``rows``/``row_start`` [slots] in logical order.

    THREAD_TOTAL sums all (one row); THREAD_BITMAP stores each row that begins and ends in the
    range (through ``out.store``) and keeps the lead and the tail; None: at most one slot."""
    offsets = np.asarray(offsets, dtype=np.int64)
    n, lo, length = offsets.size - 1, offsets[:-1], np.diff(offsets)
    width = products.shape[1]
    acc = np.zeros((n, width), dtype=products.dtype)
    lead = np.zeros_like(acc)
    cur = np.full(n, -1, dtype=np.int64)
    lead_row = np.full(n, -1, dtype=np.int64)
    started = np.zeros(n, dtype=bool)
    if algorithm is None and length.size and length.max() > 1:
        raise _violation("thread", algorithm, f"a thread-group of {int(length.max())} slots")
    with np.errstate(invalid="ignore", over="ignore"):
        for j in range(int(length.max(initial=0))):
            act = np.flatnonzero(length > j)
            slot = lo[act] + j
            starts, r = row_start[slot], rows[slot]
            if algorithm == THREAD_BITMAP:
                flush = act[starts]                  # reaching a row start: hand over the sum
                done = flush[started[flush]]         # a row that began in this range: complete
                out.store(cur[done], acc[done])
                first = flush[~started[flush]]       # before the first row start: the lead
                lead[first], lead_row[first] = acc[first], cur[first]
                acc[flush] = 0
            elif j > 0 and starts.any() or np.any((cur[act] >= 0) & (r >= 0) & (r != cur[act])):
                raise _violation("thread", algorithm, "a thread-group spanning two rows")
            started[act] |= starts
            cur[act] = np.where(r >= 0, r, cur[act])
            acc[act] = acc[act] + products[slot]
    return Partials(has_start=started, lead=np.where(started[:, None], lead, acc),
                    lead_row=np.where(started, lead_row, cur),
                    tail=np.where(started[:, None], acc, 0), tail_row=np.where(started, cur, -1))


def _first_lane_rows(lead_row, has_start):
    """Per parent: the row of the leads up to and including the first lane with a start."""
    upto = np.cumsum(has_start, axis=1) - has_start == 0        # lanes before/at the first start
    return np.where(upto, lead_row, -1).max(axis=1, initial=-1)


def _combine(children: Partials, k: int, algorithm, level: str, out: _Output) -> Partials:
    """One level up: the partials of k children per parent -> the parents' partials, rows
    that end inside a parent stored through ``out``."""
    hs, lead, lead_row, tail, tail_row = children.grouped(k)
    two = (lead_row >= 0) & (tail_row >= 0)
    later = np.zeros_like(hs)                                   # a later lane holds a start
    later[:, :-1] = np.flip(np.cumsum(np.flip(hs[:, 1:], 1), axis=1), 1) > 0
    has = hs.any(axis=1)
    if algorithm in (WARP_TOTAL, BLOCK_TOTAL):
        row = np.maximum(lead_row, tail_row)
        top = row.max(axis=1, initial=-1)
        if two.any() or np.any((row >= 0) & (row != top[:, None])):
            raise _violation(level, algorithm, "children holding pieces of two rows")
        total = tree_sum(np.where((tail_row >= 0)[..., None], tail, lead))
        zero = np.zeros_like(total)
        return Partials(has_start=has, lead=np.where(has[:, None], zero, total),
                        lead_row=np.where(has, -1, top), tail=np.where(has[:, None], total, zero),
                        tail_row=np.where(has, top, -1))
    if algorithm in (WARP_BITMAP, BLOCK_BITMAP):
        if two.any():
            raise _violation(level, algorithm, "a child passing up two pieces")
        v = bitmap_reduce(np.where((tail_row >= 0)[..., None], tail, lead), hs)
        result, closes = v, later
        head = np.where(hs[:, :1], 0, v[:, 0])          # lane 0 holds a lead unless a row starts there
    elif algorithm in (WARP_SEGMENT, BLOCK_SEGMENT):
        result, head, closes = segment_reduce(lead, tail, hs)
    elif algorithm is None:
        before = np.cumsum(hs, axis=1) - hs == 0
        if np.any((lead_row >= 0) & ~before) or np.any((lead_row >= 0).sum(axis=1) > 1):
            raise _violation(level, algorithm, "a row shared by two children")
        with np.errstate(invalid="ignore", over="ignore"):   # one term per parent: exact
            head = np.where(before[..., None], lead, 0).sum(axis=1)
        result, closes = tail, later
    else:
        raise _violation(level, algorithm, "an algorithm of another level")
    done = hs & closes
    out.store(tail_row[done], result[done])
    last = hs & ~closes
    pick = np.argmax(last, axis=1)
    p = np.arange(hs.shape[0])
    return Partials(has_start=has, lead=head, lead_row=_first_lane_rows(lead_row, hs),
                    tail=np.where(has[:, None], result[p, pick], 0), tail_row=np.where(has, tail_row[p, pick], -1))


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


# ======================================================================================
# strategies(): the pruned list of points for one matrix and N
# ======================================================================================

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
