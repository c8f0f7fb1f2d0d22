"""A GeneralSparse strategy applied to one matrix: :func:`plan` returns a :class:`Plan`, the
block, warp and thread offset arrays of paper Fig. 7c (:mod:`.divide`), the adjusted layout
(each slot's row, row start, column and value, in storage order) and the reduction the rules
select (:func:`.reductions.select_reduction`). Like the formats, a plan is checked and
checksummed.

* **Padding slots** (empty rows, vector width, interleaving) hold value 0 and column 0 and
  contribute an exact 0 (never ``0 * B[0]``, which is NaN where B holds Inf or NaN; the
  MACKO reference treats its inserted zeros the same way). A padding slot belongs to the row
  of the last real slot of its thread-group, or to no row (-1) in a thread-group with no
  real slot.
* **Empty rows** without ``pad_empty_rows`` are never written: the plan sets ``zero_init``
  (the kernel zeroes C first), as it does when blocks add atomically.

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

:func:`decode_compact` rebuilds the per-slot arrays from these alone and
:func:`.execute.execute` computes compact plans through it. ``Plan.bytes_per_nnz`` counts
every byte the kernel reads (values, columns, bases, row and thread-group arrays, offsets);
for float16 with long rows it approaches 4 bytes per nonzero (2 value + 2 column): 1.2 bytes
per weight at 70 % sparsity, 0.4 at 90 %.
"""
from __future__ import annotations

import dataclasses
from typing import ClassVar

import numpy as np

from .._common import (
    VALUE_DTYPES, Checksummed, OptionError, _plain, canonical_csr, index_dtype_for, problem,
    resolve_dtype,
)
from .divide import _ceil_div, _divide, _pad_slots, _row_adjust, _storage, cyclic_entry
from .reductions import Reduction, select_reduction
from .space import WARP, Strategy

__all__ = ["Plan", "plan", "SPAN16", "column_bases", "decode_compact"]


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
    def validate(self, expensive: bool = False, *, checksum: bool = True, decode=None) -> "Plan":
        """Check the plan is consistent; raise :class:`FormatError` naming the field if not,
        else return it. Cheap: the strategy, shape, dtype and reduction, every array's dtype
        and length, the offsets (starting at 0, non-decreasing, ending at the slot count,
        the warp and block offsets every ``groups_per_warp``-th and
        ``groups_per_warp * groups_per_block``-th thread offset). ``expensive=True``: every
        index a kernel reads in range (rows, columns, storage and row order permutations,
        the source of every slot, padding holding 0), the reduction the rules select, C
        zeroed where a row is never written, and a compact plan's arrays decoding to its
        per-slot arrays (:func:`decode_compact`). ``checksum=True``: the checksum, last.
        ``decode``: a function that returns what :func:`decode_compact` returns for every plan
        that reaches it (default that function; a faster one may stand in for it, as
        ``spmvlab.generalsparse.planner.decode_compact`` does)."""
        self._check_fields()
        if expensive:
            self._check_entries(decode or decode_compact)
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

    def _check_entries(self, decode):
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
        got = decode(self)
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
# plan(): the row adjustments, the three divisions, slot padding, storage order
# --------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class _Layout:
    """The slot stream after the row adjustments (before the divisions)."""

    rowptr: np.ndarray      # [M + 1] over adjusted rows
    source: np.ndarray      # [slots] canonical CSR index, -1 for an empty row's padding slot
    row_order: np.ndarray   # [M]


def _layout(indptr: np.ndarray, sort_rows: bool, pad_empty_rows: bool) -> _Layout:
    rowptr, starts, padded, order = _row_adjust(indptr, sort_rows, pad_empty_rows)
    slots = np.diff(rowptr)
    row = np.repeat(np.arange(slots.size), slots)
    source = np.where(padded[row], -1, starts[row] + np.arange(row.size) - rowptr[row])
    return _Layout(rowptr=rowptr, source=source, row_order=order)


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


# --------------------------------------------------------------------------------------
# compact storage
# --------------------------------------------------------------------------------------


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
