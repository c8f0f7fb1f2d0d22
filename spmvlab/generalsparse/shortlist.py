"""GeneralSparse's fixed shortlist of strategies: what the search times where no cost model
has been fitted, the compact anchors every model-ranked search times beside the model's
picks, the ``generalsparse`` method's one fixed kernel (the first entry) and the compile
check's sample of compact kernels (``codegen.ptx_targets``). Depends on the reference alone,
so the code generator and the search can both import it.

The shortlist has up to fourteen strategies, the same for every matrix, written for N
columns with ``thread_cols = min(8, max(1, N' // 8))`` (N' = N rounded up to a power of two)
so that a thread-group has ``min(N', 8)`` lanes for every N >= 8 and one plan serves all
N >= 8 (:func:`.planner.sparse_signature`):

1. ``row/warp``   a block of one warp per row, the row cut among the warp's thread-groups
                  (THREAD_TOTAL + WARP_TOTAL; CSR-vector);
2. ``row/wg x4``  four warps per block, one row per warp (THREAD_TOTAL + WARP_TOTAL);
3. ``row/tg``     one row per thread-group, a block of 4 warps (THREAD_TOTAL; CSR-scalar);
4. ``nnz/tg``     nonzero-balanced: blocks of 4 nonzeros per thread-group, rows cut anywhere
                  (THREAD_BITMAP + WARP_SEGMENT, block ends added atomically);
5-6.              1 and 4 with one column per thread (a thread-group of min(N', 32) lanes);
7. ``row/blk x4`` one row per block of four warps, the row cut among the four warp-groups
                  and their thread-groups (THREAD_TOTAL + WARP_TOTAL + BLOCK_TOTAL: the
                  warp-groups' sums combined in shared memory; for long rows);
8. ``nnz/blk x4`` 4 with blocks of four warps (still 4 nonzeros per thread-group), rows
                  cut between warp-groups too (THREAD_BITMAP + WARP_SEGMENT + BLOCK_SEGMENT,
                  block ends added atomically);
9. ``row/warp cv``     1 with compact storage (16-bit columns where they fit, no per-slot
                       rows or flags), interleaved slots read ``V`` at a time (V = 16 bytes of
                       values: 8 for float16, 4 for float32), ``min(N', V)`` columns per thread
                       and B read with vector loads of ``gcd(N, columns per thread)`` values;
10. ``row/wg x4 cv``   2 the same way (four rows per block of four warps);
11. ``row/wg x4 cv16`` 10 with warps of 16 columns (blocks along ``grid.y`` take N / 16
                       column groups: A read N / 16 times, a block's slice of B 8x smaller,
                       so more of it stays in L1); only for N' > 16.
12-14. ``... cyc``     9-11 with the cyclic thread division (``reference.generalsparse``: the
                       thread-groups take a row's entries in turns of V, so a warp's step
                       reads V times T consecutive entries and gathers nearby rows of B).

The shortlist depends on the dtype (float16 by default) through 9-14.
"""
from __future__ import annotations

import math

import numpy as np

import reference.generalsparse as GS

__all__ = ["SHORTLIST_NAMES", "default_shortlist", "anchors"]

SHORTLIST_NAMES = ("row/warp", "row/wg x4", "row/tg", "nnz/tg", "row/warp tc1", "nnz/tg tc1",
                   "row/blk x4", "nnz/blk x4", "row/warp cv", "row/wg x4 cv", "row/wg x4 cv16",
                   "row/warp cv cyc", "row/wg x4 cv cyc", "row/wg x4 cv16 cyc")


def _pow2(n: int) -> int:
    return 1 << max(int(n) - 1, 0).bit_length()


def _dense(N: int, thread_cols: int | None = None) -> dict:
    top = _pow2(N)
    tc = min(8, max(1, top // 8)) if thread_cols is None else thread_cols
    tc = min(tc, top)
    w = min(top, GS.WARP * tc)
    return dict(thread_cols=tc, warp_cols=w, block_cols=w)


def _compact_variant(N: int, dtype, name: str) -> GS.Strategy | None:
    S, M, SS = GS.Division("single", False), GS.Division("multi", False), GS.Division("single", True)
    v = 16 // np.dtype(dtype).itemsize
    top = _pow2(N)
    tc = min(v, top)
    if name.endswith(("cv16", "cv16 cyc")):
        if top <= 16:
            return None
        w = 16
    else:
        w = min(top, GS.WARP * tc)
    t = GS.WARP // (w // tc)
    thread = SS if t > 1 else S
    cyclic = name.endswith(" cyc")
    if cyclic and t == 1:
        return None
    dense = dict(thread_cols=tc, warp_cols=w, block_cols=w, compact=True, b_vector=math.gcd(int(N), tc),
                 interleave=t > 1, vector_width=v, cyclic=cyclic)
    if name.startswith("row/warp"):
        return GS.Strategy(block=S, warp=S, thread=thread, block_size=1, warps_per_block=1, **dense)
    return GS.Strategy(block=M, warp=S, thread=thread, block_size=4, warps_per_block=4, **dense)


def default_shortlist(N: int, dtype="float16") -> list:
    """The strategies of the module docstring, in that order (valid for every matrix; the
    compact ones for ``dtype``, float16 or float32)."""
    S, M = GS.Division("single", False), GS.Division("multi", False)
    SS, MS = GS.Division("single", True), GS.Division("multi", True)
    out = []
    for name in SHORTLIST_NAMES:
        if " cv" in name:
            s = _compact_variant(N, dtype, name)
            if s is not None and s not in out:
                out.append(s)
            continue
        dense = _dense(N, 1 if name.endswith("tc1") else None)
        t = GS.WARP // (dense["warp_cols"] // dense["thread_cols"])      # thread-groups per warp
        if name.startswith("row/warp"):
            s = GS.Strategy(block=S, warp=S, thread=SS if t > 1 else S, block_size=1,
                            warps_per_block=1, **dense)
        elif name == "row/wg x4":
            s = GS.Strategy(block=M, warp=S, thread=SS if t > 1 else S, block_size=4,
                            warps_per_block=4, **dense)
        elif name == "row/blk x4":
            s = GS.Strategy(block=S, warp=SS, thread=SS if t > 1 else S, block_size=1,
                            warps_per_block=4, **dense)
        elif name == "nnz/blk x4":
            s = GS.Strategy(block=MS, warp=MS, thread=MS if t > 1 else M, block_size=16 * t,
                            warps_per_block=4, **dense)
        elif name == "row/tg":
            s = GS.Strategy(block=M if 4 * t >= 2 else S, warp=M if t > 1 else S, thread=S,
                            block_size=4 * t if 4 * t >= 2 else 1, warps_per_block=4, **dense)
        else:   # nnz/tg
            s = GS.Strategy(block=MS, warp=M, thread=MS if t > 1 else M, block_size=4 * t,
                            warps_per_block=1, **dense)
        if s not in out:        # small N: the tc1 variants are the first ones
            out.append(s)
    return out


def anchors(N: int, dtype="float16") -> list:
    """The strategies every model-ranked search times beside the model's picks: the compact
    entries of :func:`default_shortlist` (9-14: rows per warp or warp-group, 16-bit columns,
    vector loads), which won most weight-matrix cases of ``experiments/search_gs.py``. They
    bound what a wrong ranking can cost: where the model's top picks on the row sample are
    all nonzero-split strategies, the one kept can be many times slower than CSR SpMM on
    the matrix (a case is in docs/performance.md, "GeneralSparse search")."""
    return [s for s in default_shortlist(N, dtype) if s.compact]
