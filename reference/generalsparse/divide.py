"""The offset arithmetic of a GeneralSparse plan: how a strategy cuts the slot stream of a
matrix. The row adjustments (``sort_rows``, ``pad_empty_rows``), the block, warp and thread
offsets of paper Fig. 7c (a nested partition of the slot stream), the cyclic thread
division, the padding of each thread-group's range and the storage order. :func:`.plan.plan`
builds a plan on them, :func:`.space.strategies` probes them to prune its list, and the fast
planner (``spmvlab.generalsparse.planner``) calls them as they are. A strategy is read here
by its attributes only, so this module imports nothing else of the package.

Choices the paper leaves open
-----------------------------
* **Fixed worker counts.** Every block has ``groups_per_block`` warp-groups and every
  warp-group ``groups_per_warp`` thread-groups, so a worker finds its offsets from its ids
  alone (what lets the code optimizer of ``reference/offsets.py`` replace the loads). The
  offsets are global slot positions: ``thread_offset`` has one entry per thread-group plus
  one, ``warp_offset = thread_offset[::groups_per_warp]``,
  ``block_offset = warp_offset[::groups_per_block]``.
* **How a level divides its parent's range** (only the block level has a size):
  not split -> consecutive groups of ``ceil(pieces / K)`` whole row pieces per worker
  (``single``: one piece each, so at most K pieces); ``multi`` + split -> K chunks of
  ``ceil(slots / K)`` slots regardless of rows; ``single`` + split -> each of the parent's
  r row pieces (r <= K) gets ``K // r`` workers, which cut it into equal chunks. A *row
  piece* is the part of a row inside the parent's range. Row-based blocks take rows by
  index (``block_size`` consecutive rows, empty ones included), split blocks take the slot
  stream (``single``: each row cut into chunks of ``block_size`` slots).
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
"""
from __future__ import annotations

import numpy as np

from .._common import OptionError, problem

__all__ = ["cyclic_lengths", "cyclic_entry"]


def _ceil_div(a, b):
    return -(-a // b)


# --------------------------------------------------------------------------------------
# row adjustments
# --------------------------------------------------------------------------------------


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


# --------------------------------------------------------------------------------------
# the three divisions
# --------------------------------------------------------------------------------------


def _block_offsets(rowptr: np.ndarray, s) -> np.ndarray:
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
    :func:`.space.strategies` makes many such calls: docs/performance.md, "GeneralSparse
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


def _too_many_pieces(level: str, parent_name: str, k: int, r: np.ndarray, division):
    i = int(np.argmax(r))
    return OptionError(problem(
        f"Strategy.{level}", f"at most {k} row pieces per {parent_name} for {division.label} "
        f"(one {level} worker per piece, {k} per {parent_name})",
        f"{parent_name} {i} holds {int(r[i])}",
        f"choose {level}=Division('multi', ...), or fewer rows per block (block_size), or more "
        f"{'thread-groups per warp (smaller warp_cols)' if level == 'thread' else 'warps per block'}"))


def _children(parent: np.ndarray, rowptr: np.ndarray, k: int, division, level: str,
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


def _divide(rowptr: np.ndarray, s):
    """Block, warp and thread offsets over the (unpadded) slot stream."""
    block = _block_offsets(rowptr, s)
    warp = _children(block, rowptr, s.groups_per_block, s.warp, "warp", "block")
    if s.cyclic:      # one row piece per warp-group (single-row warps), so nothing to refuse
        thread = _cyclic_offsets(warp, s)
    else:
        thread = _children(warp, rowptr, s.groups_per_warp, s.thread, "thread", "warp-group")
    return block, warp, thread


# --------------------------------------------------------------------------------------
# the cyclic thread division
# --------------------------------------------------------------------------------------


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


def _cyclic_offsets(warp: np.ndarray, s) -> np.ndarray:
    """Thread offsets over the unpadded stream for ``cyclic``: each thread-group's slice has
    the length of its real slots (the slots themselves are spread over the piece)."""
    length = cyclic_lengths(np.diff(warp), s.groups_per_warp, s.vector_width)
    starts = warp[:-1, None] + np.cumsum(length, axis=1) - length
    return np.r_[starts.ravel(), warp[-1]].astype(np.int64)


# --------------------------------------------------------------------------------------
# slot padding and storage order
# --------------------------------------------------------------------------------------


def _pad_slots(thread: np.ndarray, s):
    """Padded thread-group lengths (vector width; interleaving: equal in a warp-group)."""
    length = np.diff(thread)
    v = s.vector_width
    padded = _ceil_div(length, v) * v
    if s.interleave and padded.size:
        per_warp = padded.reshape(-1, s.groups_per_warp)
        padded = np.repeat(per_warp.max(axis=1), s.groups_per_warp)
    return length, padded


def _storage(offsets: np.ndarray, s) -> np.ndarray:
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
