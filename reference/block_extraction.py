"""Hierarchical block extraction (EC-SpMV paper, Algorithm 1 and Sections 5-6), readable.

A *g-grained block* is a set of g rows and n columns such that the matrix holds an entry at
every (row, column) of it: a dense g x n submatrix after gathering its rows and columns. The
extraction turns a sparse matrix into *block sets*, one per granularity 1, 2, 4, 8, ..., such
that every nonzero lies in exactly one block (:func:`block_sets`; invariant tested on every
input). Steps:

1. **Multi-round extraction at one level** (:func:`extraction_round`). The level's input
   ``A_E`` has one row per g-grained block (level 0: the matrix's rows, g = 1); ``A_R`` starts
   as a copy. A round pairs the rows of ``A_R`` (:func:`reference.row_matching.match_rows`),
   cuts each pair's shared columns into 2g-grained blocks and removes those columns from both
   rows. Rounds repeat until one gives no block.
2. **Multi-level aggregation** (:func:`extract`). The 2g-grained blocks of all rounds, in the
   order extracted, are the rows of the next level's ``A_E`` (an entry = a dense 2g x 1
   column); the non-empty rows left in ``A_R`` are the level's output, blocks of granularity
   g. The first level that extracts nothing outputs all its rows and ends the extraction.
3. **Precision range** R_P = 2**delta_bits (the delta indices the format can store are 0 ..
   R_P - 1, so ``max_gap = R_P - 1``). Extraction only takes runs of shared columns whose
   adjacent columns are at most ``max_gap`` apart (:func:`runs`). An output block whose
   adjacent columns are further apart gets explicit zero columns (g zeros each) at
   ``max_gap`` steps (:func:`pad_gaps`): for 1-grained rows, zeros every R_P - 1 columns.
4. **Column multiple.** An extracted block has a multiple of ``unit = warp_size *
   vector_size`` columns (a run of L columns gives its first ``L // unit * unit``; a run
   shorter than ``unit`` is not a usable block). An output block is split into a *long*
   part (its first multiple of ``unit`` columns, loaded ``vector_size`` at a time) and a
   *short* part (the rest, padded with explicit zero columns to a multiple of ``warp_size``,
   loaded one at a time) (:func:`split_long_short`).
5. **Clipping** (:func:`clip_block`): a long part whose work (granularity x columns) is
   above the threshold is cut into pieces of whole units, as equal as possible.
6. **Reordering**: blocks within a set by decreasing stored columns (stable), sets by
   decreasing granularity, the long set of a granularity before its short set.

Choices the paper leaves open (this module is the specification):

* Row matching: see :mod:`reference.row_matching` (rows in increasing index order, ties to
  the lowest index, rows with no overlap single).
* A pair's shared columns are split into runs wherever two adjacent shared columns are more
  than ``max_gap`` apart; *every* run of at least ``unit`` columns becomes a block (a pair may
  give several blocks in one round), keeping its first ``L // unit * unit`` columns. Columns
  not taken stay in ``A_R`` for later rounds. The same pair can match again in a later round
  (if it is still each other's best); a round that gives no block at all ends the level, so
  rows whose best partner only shares unusable columns get no block that level.
* Every round removes at least ``2 * unit`` entries, so the rounds end; every level at least
  halves the number of entries, so the levels end. A block's rows are distinct (two blocks
  that share a row have disjoint columns, so they never pair) and kept in increasing order.
* ``A_E`` rows (the extracted blocks) are ordered by round, then by pair (matching order),
  then by run (column order); leftover blocks keep their ``A_R`` row order.
* Gap padding is applied only to output blocks (extracted blocks have no gap above
  ``max_gap`` by construction, but a leftover block of a level >= 1 may have lost inner
  columns to coarser blocks); a zero column is inserted at ``previous + max_gap`` until the
  next real column is within ``max_gap``: a gap of d columns gets ``(d - 1) // max_gap`` zeros.
* The long/short split applies to every granularity (the paper describes it for 1-grained
  blocks; extracted blocks are multiples of ``unit`` anyway, only gap-padded leftovers of
  levels >= 1 can need a short part). Long part first, short part after it. Alignment zeros
  repeat the block's last column (their delta is 0). With ``vector_size == 1`` there is no
  short part: the whole block is padded to a multiple of ``warp_size`` (= ``unit``).
* The paper's Section 7 says 1-grained blocks are read with vector size 1, Section 6.3.1
  that their long parts are multiples of ``warp_size * vector_size`` "to enable efficient
  vectorized operations": we follow 6.3.1 (long parts ``vector_size``, short parts 1).
* Clipping threshold ("dynamically adjusted" in the paper): ``clip=None`` takes
  ``ceil(CLIP_FACTOR * mean work)`` over all long parts of all sets (work = granularity x
  stored columns), so only blocks more than twice the average are cut; ``clip=T`` (an int)
  uses T stored entries; ``clip=0`` does not clip. A long part of granularity g is cut into
  ``ceil(n / C)`` pieces of whole units, ``C = max(unit, T // (g * unit) * unit)`` columns at
  most, the first pieces one unit longer where the units do not divide evenly. Short parts are
  never clipped (they are shorter than ``unit + warp_size``).
* Reordering sorts by *stored* columns (the work of the warp, padding included), not by
  nonzeros. ``reorder=False`` keeps the extraction order within each set; the order of the
  sets (decreasing granularity, long before short) is part of the layout either way.
* ``max_granularity`` (None: no limit) stops the aggregation there: ``max_granularity=1``
  extracts nothing (every row a 1-grained block: delta indexing only, the paper's ablation).
"""
from __future__ import annotations

import dataclasses

import numpy as np
import scipy.sparse as sp

from ._common import OptionError, check_size, problem
from .row_matching import match_rows, pattern

__all__ = [
    "DELTA_BITS", "WARP_SIZES", "VECTOR_SIZES", "CLIP_FACTOR", "REAL", "GAP", "ALIGN",
    "Block", "BlockSet", "Level", "check_options", "max_gap_for", "runs", "extraction_round",
    "extract", "pad_gaps", "pad_to_multiple", "split_long_short", "clip_threshold", "clip_block",
    "block_sets", "assemble_sets", "padding_stats",
]

#: bits per delta index EC-CSR stores (the paper's EC-CSR-4 and EC-CSR-8)
DELTA_BITS = (4, 8)
#: threads per block (lanes of a warp working on one block): powers of two up to 32
WARP_SIZES = (1, 2, 4, 8, 16, 32)
#: entries a thread loads at a time from a long part
VECTOR_SIZES = (1, 2, 4, 8)
#: the dynamic clipping threshold is this many times the mean work of a long part
CLIP_FACTOR = 2

#: kinds of stored column: a real one (the matrix holds all g entries), a zero column inserted
#: to keep a delta within range, a zero column padding to a multiple of ``warp_size``
REAL, GAP, ALIGN = 0, 1, 2


@dataclasses.dataclass(frozen=True, eq=False)
class Block:
    """A g-grained block: ``rows`` (int64 [g], increasing), its stored columns ``cols``
    (int64 [n], in storage order: increasing, alignment zeros repeat the last column) and the
    kind of each stored column ``kind`` (int8 [n]: :data:`REAL`, :data:`GAP` or :data:`ALIGN`)."""

    rows: np.ndarray
    cols: np.ndarray
    kind: np.ndarray

    @classmethod
    def of(cls, rows, cols) -> "Block":
        """A block of real columns only."""
        cols = np.asarray(cols, dtype=np.int64)
        return cls(np.asarray(rows, dtype=np.int64), cols, np.full(cols.size, REAL, np.int8))

    @property
    def granularity(self) -> int:
        return int(self.rows.size)

    @property
    def n_columns(self) -> int:
        """Stored columns, padding included."""
        return int(self.cols.size)

    @property
    def real_cols(self) -> np.ndarray:
        return self.cols[self.kind == REAL]

    @property
    def nnz(self) -> int:
        """Nonzeros of the matrix in this block (granularity x real columns)."""
        return self.granularity * int(np.count_nonzero(self.kind == REAL))

    @property
    def work(self) -> int:
        """Stored entries (granularity x stored columns): what one warp multiplies."""
        return self.granularity * self.n_columns

    def piece(self, start: int, stop: int) -> "Block":
        """Stored columns ``start:stop`` of this block, same rows."""
        return Block(self.rows, self.cols[start:stop], self.kind[start:stop])


@dataclasses.dataclass(frozen=True, eq=False)
class BlockSet:
    """The blocks of one granularity and one load width: ``vector_size`` is the extraction's
    ``vector_size`` for a set of long parts and 1 for a set of short parts."""

    granularity: int
    vector_size: int
    blocks: list

    @property
    def nnz(self) -> int:
        return sum(b.nnz for b in self.blocks)


@dataclasses.dataclass(frozen=True, eq=False)
class Level:
    """What one level of :func:`extract` did: its input ``A_E`` (``rows``: one g-grained block
    per row; ``granularity`` = g), the 2g-grained blocks extracted in each round that gave any
    (``rounds``), and the non-empty rows left in ``A_R`` afterwards (``leftover``: the level's
    output blocks, before padding)."""

    granularity: int
    rows: list
    rounds: list
    leftover: list

    @property
    def extracted(self) -> list:
        return [b for r in self.rounds for b in r]


def _is_int(v) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def check_options(delta_bits, warp_size, vector_size, clip, reorder, max_granularity) -> dict:
    """The options as plain Python values, or :class:`OptionError` naming the first bad one."""
    for name, v, allowed in (("delta_bits", delta_bits, DELTA_BITS),
                             ("warp_size", warp_size, WARP_SIZES),
                             ("vector_size", vector_size, VECTOR_SIZES)):
        if not (_is_int(v) and int(v) in allowed):
            raise OptionError(problem(name, f"one of {allowed}", repr(v)))
    if not (clip is None or (_is_int(clip) and clip >= 0)):
        raise OptionError(problem("clip", "None (dynamic threshold), 0 (no clipping) or a "
                                  "positive int (stored entries per block)", repr(clip)))
    if not isinstance(reorder, (bool, np.bool_)):
        raise OptionError(problem("reorder", "True or False", repr(reorder)))
    if not (max_granularity is None or (_is_int(max_granularity) and max_granularity >= 1
                                        and int(max_granularity) & (int(max_granularity) - 1) == 0)):
        raise OptionError(problem("max_granularity", "None (no limit) or a power of two >= 1",
                                  repr(max_granularity)))
    return dict(delta_bits=int(delta_bits), warp_size=int(warp_size), vector_size=int(vector_size),
                clip=None if clip is None else int(clip), reorder=bool(reorder),
                max_granularity=None if max_granularity is None else int(max_granularity))


def max_gap_for(delta_bits: int) -> int:
    """The largest delta ``delta_bits`` bits store: R_P - 1 with R_P = 2**delta_bits."""
    return (1 << int(delta_bits)) - 1


# ---------------------------------------------------------------------------------------------
# extraction (Algorithm 1)
# ---------------------------------------------------------------------------------------------


def runs(cols: np.ndarray, max_gap: int | None) -> list:
    """``cols`` (increasing) cut wherever two adjacent columns are more than ``max_gap`` apart
    (None: never)."""
    if max_gap is None or cols.size < 2:
        return [cols] if cols.size else []
    return np.split(cols, np.flatnonzero(np.diff(cols) > max_gap) + 1)


def _rows_as_csr(remaining: list, n_cols: int) -> sp.csr_matrix:
    """The pattern of ``A_R`` (one row per array of columns)."""
    indptr = np.concatenate(([0], np.cumsum([c.size for c in remaining], dtype=np.int64)))
    indices = np.concatenate(remaining) if remaining else np.zeros(0, np.int64)
    return sp.csr_matrix((np.ones(indices.size, np.int64), indices, indptr),
                         shape=(len(remaining), n_cols))


def extraction_round(rows: list, remaining: list, n_cols: int, unit: int = 1,
                     max_gap: int | None = None) -> list:
    """One round at one level: match the rows of ``A_R`` (``remaining[k]``: the columns row k
    still holds; ``rows[k]``: the matrix rows of that g-grained row), cut every pair's shared
    columns into runs, keep each run's first ``L // unit * unit`` columns as a 2g-grained
    block and remove them from both rows of the pair (``remaining`` is updated in place).
    Returns the blocks (empty: the level is done)."""
    blocks = []
    for i, j in match_rows(_rows_as_csr(remaining, n_cols)):
        shared = np.intersect1d(remaining[i], remaining[j], assume_unique=True)
        taken = []
        for run in runs(shared, max_gap):
            usable = run[:run.size // unit * unit]
            if usable.size:
                blocks.append(Block.of(np.sort(np.concatenate((rows[i], rows[j]))), usable))
                taken.append(usable)
        if taken:
            gone = np.concatenate(taken)
            remaining[i] = np.setdiff1d(remaining[i], gone, assume_unique=True)
            remaining[j] = np.setdiff1d(remaining[j], gone, assume_unique=True)
    return blocks


def extract(A, unit: int = 1, max_gap: int | None = None, max_granularity: int | None = None) -> list:
    """Algorithm 1 on ``A``'s pattern: the list of :class:`Level` records, level 0 first. The
    leftovers of all levels together are the raw blocks (no padding yet): every nonzero of
    ``A`` lies in exactly one of them."""
    P = pattern(A)
    n_rows, n_cols = P.shape
    rows = [np.array([r], dtype=np.int64) for r in range(n_rows)]
    cols = [P.indices[P.indptr[r]:P.indptr[r + 1]].astype(np.int64) for r in range(n_rows)]
    levels, g = [], 1
    while True:
        remaining = [c.copy() for c in cols]                    # A_R = A_E
        rounds = []
        if max_granularity is None or 2 * g <= max_granularity:
            while True:                                         # multi-round extraction
                blocks = extraction_round(rows, remaining, n_cols, unit, max_gap)
                if not blocks:
                    break
                rounds.append(blocks)
        leftover = [Block.of(rows[k], remaining[k]) for k in range(len(rows)) if remaining[k].size]
        level = Level(granularity=g, rows=[Block.of(r, c) for r, c in zip(rows, cols)],
                      rounds=rounds, leftover=leftover)
        levels.append(level)
        if not rounds:
            return levels
        rows = [b.rows for b in level.extracted]                # A_E of the next level
        cols = [b.cols for b in level.extracted]
        g *= 2


# ---------------------------------------------------------------------------------------------
# padding, splitting, clipping
# ---------------------------------------------------------------------------------------------


def pad_gaps(block: Block, max_gap: int) -> Block:
    """``block`` with a zero column (kind :data:`GAP`) at ``previous + max_gap`` wherever two
    adjacent columns are more than ``max_gap`` apart, repeatedly: a gap of d columns gets
    ``(d - 1) // max_gap`` zero columns, and every step becomes at most ``max_gap``."""
    cols, kind = block.cols, block.kind
    if cols.size < 2:
        return block
    n_zero = (np.diff(cols) - 1) // max_gap          # zeros before column k + 1
    if not n_zero.any():
        return block
    # column k moves right by the zeros inserted before it; the z zeros of gap k sit at
    # previous + max_gap * (1 .. z), right after column k
    shift = np.concatenate(([0], np.cumsum(n_zero)))
    out_cols = np.empty(cols.size + int(shift[-1]), dtype=np.int64)
    out_kind = np.full(out_cols.size, GAP, np.int8)
    at = np.arange(cols.size) + shift
    out_cols[at], out_kind[at] = cols, kind
    gap_of = np.repeat(np.arange(n_zero.size), n_zero)      # the gap each zero fills
    step = np.arange(gap_of.size) - shift[gap_of] + 1        # 1 .. z within its gap
    out_cols[at[gap_of] + step] = cols[gap_of] + max_gap * step
    return Block(block.rows, out_cols, out_kind)


def pad_to_multiple(block: Block, multiple: int) -> Block:
    """``block`` with zero columns (kind :data:`ALIGN`) repeating its last column appended
    until its stored column count is a multiple of ``multiple``."""
    n_pad = -block.n_columns % multiple
    if not n_pad:
        return block
    return Block(block.rows, np.concatenate((block.cols, np.repeat(block.cols[-1:], n_pad))),
                 np.concatenate((block.kind, np.full(n_pad, ALIGN, np.int8))))


def split_long_short(block: Block, warp_size: int, vector_size: int):
    """(long part or None, short part or None): the long part holds the block's first
    ``n // unit * unit`` stored columns (``unit = warp_size * vector_size``), the short part
    the rest padded to a multiple of ``warp_size``. With ``vector_size == 1`` the whole block,
    padded to a multiple of ``warp_size``, is the long part."""
    if vector_size == 1:
        return pad_to_multiple(block, warp_size), None
    unit = warp_size * vector_size
    n_long = block.n_columns // unit * unit
    long = block.piece(0, n_long) if n_long else None
    short = (pad_to_multiple(block.piece(n_long, block.n_columns), warp_size)
             if n_long < block.n_columns else None)
    return long, short


def clip_threshold(long_blocks: list, clip: int | None) -> int:
    """The clipping threshold in stored entries (0: no clipping): ``clip`` itself, or for
    ``clip=None`` ``ceil(CLIP_FACTOR * mean work)`` over ``long_blocks``."""
    if clip is not None:
        return clip
    if not long_blocks:
        return 0
    total = sum(b.work for b in long_blocks)
    return -(-CLIP_FACTOR * total // len(long_blocks))


def clip_block(block: Block, threshold: int, unit: int) -> list:
    """``block`` (a long part: a multiple of ``unit`` columns) cut into the fewest pieces of
    at most ``C = max(unit, threshold // (g * unit) * unit)`` columns, in whole units, as equal
    as possible (the first pieces one unit longer). ``threshold = 0``: ``[block]``."""
    n = block.n_columns
    if threshold <= 0:
        return [block]
    most = max(unit, threshold // (block.granularity * unit) * unit)
    if n <= most:
        return [block]
    k = -(-n // most)
    base, extra = divmod(n // unit, k)
    sizes = [(base + (i < extra)) * unit for i in range(k)]
    bounds = np.concatenate(([0], np.cumsum(sizes)))
    return [block.piece(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:])]


# ---------------------------------------------------------------------------------------------
# the whole pipeline
# ---------------------------------------------------------------------------------------------


def block_sets(A, delta_bits: int = 8, warp_size: int = 32, vector_size: int = 4,
               clip: int | None = None, reorder: bool = True,
               max_granularity: int | None = None) -> list:
    """``A``'s pattern as block sets (list of :class:`BlockSet`, in storage order: decreasing
    granularity, long set before short set, empty sets left out). Every nonzero of ``A`` is a
    real entry of exactly one block; every other stored entry is an explicit padding zero."""
    opts = check_options(delta_bits, warp_size, vector_size, clip, reorder, max_granularity)
    unit, max_gap = opts["warp_size"] * opts["vector_size"], max_gap_for(opts["delta_bits"])
    levels = extract(A, unit=unit, max_gap=max_gap, max_granularity=opts["max_granularity"])
    return assemble_sets([(level.granularity, level.leftover) for level in levels], opts)


def assemble_sets(leftovers: list, opts: dict) -> list:
    """Steps 3-6 after the extraction: ``leftovers`` lists ``(granularity, raw blocks)`` per
    level, level 0 first (the raw blocks in ``A_R`` row order); ``opts`` are checked options
    (:func:`check_options`). Returns the block sets in storage order, as :func:`block_sets`
    (shared by the reference and the fast encoder, which extracts differently)."""
    ws, vs = opts["warp_size"], opts["vector_size"]
    unit, max_gap = ws * vs, max_gap_for(opts["delta_bits"])
    columns = sum(g * (raw.cols.size + int(np.sum((np.diff(raw.cols) - 1) // max_gap)))
                  for g, raws in leftovers for raw in raws if raw.cols.size > 1)
    check_size(16 * columns, "delta_bits", f"delta_bits={opts['delta_bits']}: {columns:,} "
               "stored columns with the zeros that keep every step within the delta range",
               "use a format without gap zeros (csr) for a matrix this wide and sparse")
    long_parts, short_parts = {}, {}
    for g, raws in leftovers:
        for raw in raws:
            long, short = split_long_short(pad_gaps(raw, max_gap), ws, vs)
            if long is not None:
                long_parts.setdefault(g, []).append(long)
            if short is not None:
                short_parts.setdefault(g, []).append(short)
    threshold = clip_threshold([b for bs in long_parts.values() for b in bs], opts["clip"])
    sets = []
    for g in sorted(set(long_parts) | set(short_parts), reverse=True):
        for v, blocks in ((vs, [p for b in long_parts.get(g, []) for p in clip_block(b, threshold, unit)]),
                          (1, short_parts.get(g, []))):
            if blocks:
                if opts["reorder"]:
                    blocks = sorted(blocks, key=lambda b: -b.n_columns)   # stable
                sets.append(BlockSet(granularity=g, vector_size=v, blocks=blocks))
    return sets


def padding_stats(sets: list) -> dict:
    """Nonzeros and explicit zeros of block sets: ``nnz``, ``gap_zeros`` (inserted for the
    delta range), ``align_zeros`` (padding to a multiple of ``warp_size``), ``zeros`` (their
    sum) and ``overhead`` = zeros / nnz (0.0 without nonzeros): the paper's Table 2 statistic."""
    nnz = gap = align = 0
    for s in sets:
        for b in s.blocks:
            nnz += b.nnz
            gap += b.granularity * int(np.count_nonzero(b.kind == GAP))
            align += b.granularity * int(np.count_nonzero(b.kind == ALIGN))
    return {"nnz": nnz, "gap_zeros": gap, "align_zeros": align, "zeros": gap + align,
            "overhead": (gap + align) / nnz if nnz else 0.0}
