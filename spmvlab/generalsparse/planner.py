"""Fast GeneralSparse planner (numba, CPU): the same :class:`~reference.generalsparse.Plan`
as ``reference.generalsparse.plan``, array for array (equal values, equal dtypes), quicker;
and the plan cache the search and the method share (:func:`plan_cached`); and
:func:`decode_compact`, the reference's decoding of a compact plan in one compiled pass,
which the upload's full validation uses (``codegen.checked_plan``).

The reference builds the padded slot stream with several passes of NumPy temporaries the
size of the matrix (the layout's slot rows and sources, the logical slot stream, the storage
order, then one scatter per stored array). Here the per-row and per-thread-group work stays
in the reference's own NumPy helpers (row adjustments without the per-slot arrays, the three
divisions, the slot padding, the reduction selection), and one compiled pass
(``_fill_slots``) walks every thread-group's padded range once and writes each slot's
storage position, row, row start, source, column, value bits and padding flag straight into
the stored arrays, plus ``row_ptr`` for compact plans. Compact plans whose columns need
per-block bases (K > 65536) take the reference's ``column_bases`` on the logical arrays.

A plan does not depend on the columns of B a thread, warp or block computes
(:func:`sparse_signature`), so :func:`plan_cached` keeps the last plans made and serves
every N of a matrix from one of them.
"""
from __future__ import annotations

import dataclasses
import zlib

import numpy as np
import scipy.sparse as sp
from numba import njit, prange

import reference.generalsparse as GS
from reference._common import OptionError, canonical_csr, index_dtype_for, problem, resolve_dtype

__all__ = ["plan", "sparse_signature", "plan_cached", "decode_compact"]

#: the reference's cyclic thread division, compiled for scalars
_cyclic_entry = njit(cache=True, nogil=True)(GS.cyclic_entry)

# unsigned integer type with the same width as each value dtype (values are copied as bits)
_BITS = {2: np.uint16, 4: np.uint32, 8: np.uint64}


@njit(cache=True, nogil=True, parallel=True)
def _fill_slots(thread, length, offsets, first_row, rowptr, starts, padded_row, indices, vbits,
                t_count, interleave, v, cyclic, storage, rows, row_start, cols, vals, pad, source,
                row_ptr):
    """Every logical slot of every thread-group ``g`` (steps ``0 .. offsets[g+1] -
    offsets[g]``; the first ``length[g]`` hold layout slots ``thread[g] ...``, the rest
    padding that refers to the last of them): its storage position into ``storage`` and
    its row, row start, source, column, value bits and padding flag at that position.
    ``row_ptr[r]``: the logical position where adjusted row r starts (left as is where no
    slot starts one). ``first_row[g]``: the adjusted row of layout slot ``thread[g]``. ``cyclic``:
    step j holds entry ``reference.generalsparse.cyclic_entry(j, t)`` of the warp-group's
    row piece, which begins at ``thread[g - t]``."""
    n_groups = length.size
    for g in prange(n_groups):    # thread-groups write disjoint slots (and row starts)
        off = offsets[g]
        n_pad = offsets[g + 1] - off
        n_real = length[g]
        t = g % t_count
        base = offsets[g - t]
        piece = thread[g - t]
        r = first_row[g - t] if cyclic else first_row[g]
        for step in range(n_pad):
            lg = off + step
            if interleave:
                pos = base + (step // v) * (t_count * v) + t * v + step % v
            else:
                pos = lg
            storage[lg] = pos
            if n_real == 0:
                rows[pos] = -1
                source[pos] = -1
                pad[pos] = True
                continue
            last = min(step, n_real - 1)
            if cyclic:
                held = piece + _cyclic_entry(last, t, t_count, v)
            else:
                held = thread[g] + last
            while rowptr[r + 1] <= held:
                r += 1
            rows[pos] = r
            if step < n_real:
                if held == rowptr[r]:
                    row_start[pos] = True
                    row_ptr[r] = lg
                if padded_row[r]:
                    source[pos] = -1
                    pad[pos] = True
                else:
                    src = starts[r] + held - rowptr[r]
                    source[pos] = src
                    cols[pos] = indices[src]
                    vals[pos] = vbits[src]
            else:
                source[pos] = -1
                pad[pos] = True


def plan(A, strategy: GS.Strategy, dtype=None, lossy: bool = False) -> GS.Plan:
    """``reference.generalsparse.plan(A, strategy, dtype, lossy)``, array for array, with
    the slot stream written by one compiled pass (same errors where the strategy does not
    fit A)."""
    _check_strategy(strategy)
    dt = resolve_dtype(A, dtype)
    return _plan_csr(canonical_csr(A, dt, lossy), strategy, dt)


def _check_strategy(strategy):
    if not isinstance(strategy, GS.Strategy):
        raise OptionError(problem("strategy", "a Strategy", type(strategy).__name__,
                                  "take one from strategies(A, N) or build Strategy(...)"))


def _plan_csr(csr: sp.csr_matrix, s: GS.Strategy, dt) -> GS.Plan:
    """:func:`plan` of a matrix ``canonical_csr`` already returned (in ``dt``)."""
    rowptr, starts, padded_row, order = GS._row_adjust(csr.indptr, s.sort_rows, s.pad_empty_rows)
    _, _, thread = GS._divide(rowptr, s)
    length, padded = GS._pad_slots(thread, s)
    offsets = np.r_[0, np.cumsum(padded)].astype(np.int64)
    n = int(offsets[-1])
    m = int(csr.shape[0])
    idx = index_dtype_for(n, *csr.shape)
    t_count, g_count = s.groups_per_warp, s.groups_per_block
    if s.b_vector * np.dtype(dt).itemsize > 16:
        raise OptionError(problem("Strategy.b_vector", f"at most {16 // np.dtype(dt).itemsize} for "
                                  f"{np.dtype(dt).name} (16-byte loads)", s.b_vector))
    red = GS.select_reduction(s, int(padded.max(initial=0)))

    values = np.ascontiguousarray(csr.data.astype(dt))
    bits = _BITS[values.dtype.itemsize]
    storage = np.empty(n, dtype=idx)
    rows = np.zeros(n, dtype=idx)
    row_start = np.zeros(n, dtype=bool)
    cols = np.zeros(n, dtype=idx)
    vals = np.zeros(n, dtype=dt)
    pad = np.zeros(n, dtype=bool)
    source = np.zeros(n, dtype=idx)
    row_ptr = np.full(m + 1, n, dtype=np.int64)
    first_row = (np.searchsorted(rowptr, thread[:-1], side="right") - 1).astype(np.int64)
    _fill_slots(thread, length, offsets, first_row, rowptr, starts, padded_row.astype(np.bool_),
                np.ascontiguousarray(csr.indices), values.view(bits), t_count, bool(s.interleave),
                int(s.vector_width), bool(s.cyclic), storage, rows, row_start, cols, vals.view(bits),
                pad, source, row_ptr)

    written = np.zeros(m, dtype=bool)
    written[order[np.diff(rowptr) > 0]] = True      # every layout slot is held by a real slot
    block_offset = offsets[::t_count * g_count]
    extra = _compact(s, length, offsets, block_offset, rows, cols, pad, storage, row_ptr,
                     csr.shape, idx) if s.compact else {}
    return GS.Plan(
        strategy=s, shape=tuple(int(v) for v in csr.shape), dtype=dt, row_order=order.astype(idx),
        block_offset=block_offset.astype(idx), warp_offset=offsets[::t_count].astype(idx),
        thread_offset=offsets.astype(idx), storage=storage, rows=rows, row_start=row_start,
        cols=cols, values=vals, pad=pad, source=source, reduction=red,
        zero_init=bool(red.atomic or not written.all()), **extra)


def _compact(s, length, offsets, block_offset, rows, cols, pad, storage, row_ptr, shape, idx) -> dict:
    """The compact arrays of the reference's ``_compact_arrays`` from the stored ones."""
    n, k = int(offsets[-1]), int(shape[1])
    row_ptr = np.minimum.accumulate(row_ptr[::-1])[::-1]          # empty rows: the next row's start
    first = np.minimum(offsets[:-1], max(n - 1, 0))
    if n:
        tg_row = np.where(length > 0, rows[storage[first]], -1)
    else:
        tg_row = np.full(length.size, -1)
    out = dict(row_ptr=row_ptr.astype(idx), tg_row=tg_row.astype(np.int32),
               tg_len=length.astype(np.int32))
    if k <= GS.SPAN16:
        return dict(out, col_bits=16, col_base=None, col_offset=cols.astype(np.uint16))
    # columns beyond 16 bits: the reference's per-block bases, on the logical arrays
    logical_cols = cols[storage].astype(np.int64)
    real = ~pad[storage]
    base, block = GS.column_bases(logical_cols, real, block_offset, k)
    if base is None:
        return dict(out, col_bits=32)
    offset = np.zeros(n, dtype=np.uint16)
    offset[storage] = np.where(real, logical_cols - base[block], 0).astype(np.uint16)
    return dict(out, col_bits=16, col_base=base.astype(np.int32), col_offset=offset)


@njit(cache=True, nogil=True, parallel=True)
def _decode_slots(off, tg_len, row_ptr, block_offset, storage, col_src, col_base, by_base,
                  rows, row_start, pad, cols):
    """The reference ``decode_compact``'s arrays, thread-group by thread-group: slot j of
    group g (``off[g] <= j < off[g + 1]``) is real while ``j - off[g] < tg_len[g]``; a real
    slot's row is the last r with ``row_ptr[r] <= j`` (walked forward within the group),
    a padding slot's that of its group's last real slot (-1 where the group has none); its
    column ``col_src[storage[j]]`` plus, where ``by_base``, the column base of the block
    holding ``off[g]`` (every slot of a group is in one block). Written at ``storage[j]``,
    which the validation has checked to be a permutation."""
    for g in prange(off.size - 1):
        lo, hi, n_real = off[g], off[g + 1], tg_len[g]
        if hi <= lo:
            continue
        r = np.searchsorted(row_ptr, lo, side="right") - 1
        base = 0
        if by_base:
            base = col_base[np.searchsorted(block_offset, lo, side="right") - 1]
        held = -1
        for j in range(lo, hi):
            q = storage[j]
            if j - lo < n_real:
                while r + 1 < row_ptr.size and row_ptr[r + 1] <= j:
                    r += 1
                held = r
                rows[q] = r
                row_start[q] = row_ptr[max(r, 0)] == j
                pad[q] = False
                cols[q] = col_src[q] + base
            else:
                rows[q] = held
                row_start[q] = False
                pad[q] = True
                cols[q] = 0


def decode_compact(p: GS.Plan) -> dict:
    """``reference.generalsparse.decode_compact(p)``, array for array: the per-slot
    ``rows``, ``row_start``, ``pad`` and ``cols`` a compact plan's stored arrays decode to,
    for a plan whose cheap checks, storage permutation and ``row_ptr`` order the
    validation has passed (``Plan._check_entries`` calls it only then)."""
    if not p.strategy.compact:
        return GS.decode_compact(p)              # the reference's error
    n = p.n_slots
    rows = np.zeros(n, dtype=p.rows.dtype)
    row_start = np.zeros(n, dtype=np.bool_)
    pad = np.zeros(n, dtype=np.bool_)
    cols = np.zeros(n, dtype=p.cols.dtype)
    if p.col_bits == 16:
        src = np.asarray(p.col_offset, dtype=np.int64)
    else:
        src = np.asarray(p.cols, dtype=np.int64)
    by_base = p.col_bits == 16 and p.col_base is not None
    base = np.asarray(p.col_base, dtype=np.int64) if by_base else np.zeros(1, dtype=np.int64)
    _decode_slots(np.asarray(p.thread_offset, dtype=np.int64), np.asarray(p.tg_len, dtype=np.int64),
                  np.asarray(p.row_ptr, dtype=np.int64), np.asarray(p.block_offset, dtype=np.int64),
                  np.asarray(p.storage, dtype=np.int64), src, base, by_base,
                  rows, row_start, pad, cols)
    return dict(rows=rows, row_start=row_start, pad=pad, cols=cols)


# --------------------------------------------------------------------------------------
# plans, reused across N
# --------------------------------------------------------------------------------------


def sparse_signature(s: GS.Strategy) -> GS.Strategy:
    """The strategy with what ``plan`` does not depend on (columns per thread, warp and
    block) set to canonical values: equal signatures give the same plan arrays."""
    return dataclasses.replace(s, thread_cols=1, warp_cols=s.group_lanes,
                               block_cols=s.group_lanes * s.group_warps, b_vector=1)


_PLANS: dict = {}
_PLAN_SLOTS = 2


def _fingerprint(A: sp.csr_matrix, dtype) -> tuple:
    def crc(a):
        return zlib.crc32(np.ascontiguousarray(a).view(np.uint8))
    return (A.shape, np.dtype(dtype).name, A.nnz, crc(A.indptr), crc(A.indices), crc(A.data))


def plan_cached(A, s: GS.Strategy, dtype, lossy: bool = True) -> GS.Plan:
    """``plan(A, s)`` (:func:`plan`, equal to the reference's), reusing the last plans made
    for the same matrix (by content) and the same :func:`sparse_signature` (the arrays are
    shared, only the strategy differs: such a plan gets its own checksum)."""
    _check_strategy(s)
    dt = resolve_dtype(A, dtype)
    csr = canonical_csr(A, dt, lossy)
    key = (_fingerprint(csr, dt), sparse_signature(s))
    held = _PLANS.get(key)
    if held is None:
        held = _plan_csr(csr, s, dt)
        while len(_PLANS) >= _PLAN_SLOTS:
            _PLANS.pop(next(iter(_PLANS)))
        _PLANS[key] = held
    return held if held.strategy == s else dataclasses.replace(held, strategy=s, checksum=None)
