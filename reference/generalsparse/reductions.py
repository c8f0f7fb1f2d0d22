"""The reduction space of GeneralSparse (paper Sec. 3.3), lane by lane on NumPy arrays.

THREAD_TOTAL, THREAD_BITMAP (sequential, in registers), WARP_TOTAL, WARP_BITMAP, WARP_SEGMENT
(over the lanes of a warp), BLOCK_TOTAL, BLOCK_BITMAP, BLOCK_SEGMENT (over the warp-groups of
a block, in shared memory): :func:`tree_sum` (TOTAL), :func:`bitmap_reduce` (Algorithm 1) and
:func:`segment_reduce` (Algorithm 2), each batched over the workers of a level;
:func:`thread_reduce` is the sequential thread level and ``_combine`` takes one level up.
:func:`select_reduction` holds the selection rules (Fig. 12); ``execute.execute`` runs them
level by level.

Every worker passes up to its parent what it could not finish (:class:`Partials`): the
*lead*, the sum of its slots before its first row start (the end of a row that began
earlier), and the *tail*, the sum from its last row start to its end (a row that may go on in
the next worker). Rows that begin and end inside one worker are complete and stored there.

Choices the paper leaves open
-----------------------------
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
"""
from __future__ import annotations

import dataclasses

import numpy as np

from .._common import OptionError, problem
from .space import Strategy

__all__ = [
    "THREAD_TOTAL", "THREAD_BITMAP", "WARP_TOTAL", "WARP_BITMAP", "WARP_SEGMENT",
    "BLOCK_TOTAL", "BLOCK_BITMAP", "BLOCK_SEGMENT", "ALGORITHMS", "Reduction", "select_reduction",
    "Partials", "tree_sum", "bitmap_reduce", "segment_reduce", "thread_reduce",
]

THREAD_TOTAL, THREAD_BITMAP = "THREAD_TOTAL", "THREAD_BITMAP"
WARP_TOTAL, WARP_BITMAP, WARP_SEGMENT = "WARP_TOTAL", "WARP_BITMAP", "WARP_SEGMENT"
BLOCK_TOTAL, BLOCK_BITMAP, BLOCK_SEGMENT = "BLOCK_TOTAL", "BLOCK_BITMAP", "BLOCK_SEGMENT"
#: the reduction space: algorithm -> the level it runs at
ALGORITHMS = {THREAD_TOTAL: "thread", THREAD_BITMAP: "thread", WARP_TOTAL: "warp",
              WARP_BITMAP: "warp", WARP_SEGMENT: "warp", BLOCK_TOTAL: "block",
              BLOCK_BITMAP: "block", BLOCK_SEGMENT: "block"}


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


# --------------------------------------------------------------------------------------
# the algorithms, lane by lane (batched over the workers of a level)
# --------------------------------------------------------------------------------------


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


# --------------------------------------------------------------------------------------
# the levels: what each worker passes up
# --------------------------------------------------------------------------------------


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


def _combine(children: Partials, k: int, algorithm, level: str, out) -> Partials:
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
