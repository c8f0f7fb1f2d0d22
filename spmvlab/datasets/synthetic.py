"""Seeded random matrices: :func:`uniform`, :func:`gaussian_weights`, :func:`prune`,
:func:`power_law`, and random graphs as symmetric adjacency patterns: :func:`erdos_renyi`,
:func:`watts_strogatz`, :func:`barabasi_albert`. Every generator takes ``seed`` (an int or a ``np.random.Generator``)."""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from reference._common import (
    DTypeError, OptionError, ShapeError, index_dtype_for, problem, value_dtype,
)

from ._build import _count, _csr, _fraction, _nonzero_normals, _rng, _shape, _sparse_dtype

_BLOCK = 1 << 24          # positions per block in the dense pass of uniform()
_HYPERGEOM_MAX = 10 ** 9  # numpy's hypergeometric takes ngood, nbad < 1e9


def _split_count(n_left: int, n_right: int, k: int, rng) -> int:
    """How many of ``k`` uniformly chosen positions fall in the left part (hypergeometric).

    numpy's sampler needs both parts below 1e9; beyond that (matrices of over 2e9 positions)
    the split is binomial, clipped to what each part can hold.
    """
    if k == 0 or n_left == 0:
        return 0
    if n_right == 0:
        return k
    if n_left < _HYPERGEOM_MAX and n_right < _HYPERGEOM_MAX:
        return int(rng.hypergeometric(n_left, n_right, k))
    x = int(rng.binomial(k, n_left / (n_left + n_right)))
    return min(max(x, k - n_right), n_left, k)


def _block_counts(sizes: list[int], k: int, rng) -> list[int]:
    """Split ``k`` uniform positions over consecutive blocks of ``sizes`` positions
    (multivariate hypergeometric by recursive halving)."""
    counts = [0] * len(sizes)

    def rec(lo: int, hi: int, kk: int):
        if hi - lo == 1:
            counts[lo] = kk
            return
        mid = (lo + hi) // 2
        left = _split_count(sum(sizes[lo:mid]), sum(sizes[mid:hi]), kk, rng)
        rec(lo, mid, left)
        rec(mid, hi, kk - left)

    if sizes:
        rec(0, len(sizes), k)
    return counts


def _exact_mask(rng, n: int, k: int) -> np.ndarray:
    """Boolean mask of ``n`` positions with exactly ``k`` True, uniformly at random.

    Bernoulli pass then fix-up: every position is set with the same probability (16-bit
    resolution), so conditional on the count the set is a uniform subset; surplus positions
    are then removed (uniform subset of the set ones) or missing ones added (uniform among the
    unset ones, by rejection). Both steps keep the subset uniform.
    """
    if 2 * k > n:                                  # draw the (smaller) complement
        return ~_exact_mask(rng, n, n - k)
    thr = int(round(k / n * 65536)) if n else 0
    u = np.frombuffer(rng.bytes(2 * n), dtype=np.uint16)
    mask = u < thr
    c = int(np.count_nonzero(mask))
    if c > k:                                      # drop c - k of the set positions
        on = np.flatnonzero(mask)
        mask[on[rng.choice(c, c - k, replace=False)]] = False
    while c < k:                                   # add k - c of the unset positions
        need = k - c
        cand = rng.integers(0, n, size=2 * need + 16)
        cand = cand[~mask[cand]]
        _, first = np.unique(cand, return_index=True)
        cand = cand[np.sort(first)][:need]         # first occurrences, in draw order
        mask[cand] = True
        c += cand.size
    return mask


def uniform(shape, sparsity: float, dtype=np.float32, seed=0) -> sp.csr_matrix:
    """Random sparse matrix with exactly ``round((1 - sparsity) * rows * cols)`` nonzeros.

    The positions are a uniformly random set of distinct positions; the values are standard
    normal (never exactly zero) in ``dtype``. The result is canonical CSR (sorted indices,
    int32 indices unless a count needs int64).

    Method: sparse matrices (at most 1/64 of positions set) draw the flat positions with
    numpy's ``choice(replace=False)`` (Floyd's algorithm) and sort them. Otherwise the rows
    are cut into blocks of about 2**24 positions, the nonzero count is split among blocks
    with the multivariate hypergeometric law (what a uniform subset of the whole matrix
    gives), and each block draws its exact count with :func:`_exact_mask`. Both are exactly
    uniform (above 2e9 positions the block split is binomial, see :func:`_split_count`);
    memory is the output plus about 3 bytes per position of one block.
    """
    n_rows, n_cols = _shape(shape)
    s = _fraction(sparsity, "sparsity")
    dt, store = _sparse_dtype(dtype)
    rng = _rng(seed)
    n = n_rows * n_cols
    k = min(n, int(round((1.0 - s) * n)))
    idx = index_dtype_for(k, n_rows, n_cols)

    if k == 0:
        indptr = np.zeros(n_rows + 1, dtype=idx)
        indices = np.zeros(0, dtype=idx)
    elif n > 10_000 and 64 * k <= n:
        pos = np.sort(rng.choice(n, size=k, replace=False, shuffle=False).astype(np.int64))
        rows, indices = np.divmod(pos, n_cols)
        indptr = np.zeros(n_rows + 1, dtype=np.int64)
        np.cumsum(np.bincount(rows, minlength=n_rows), out=indptr[1:])
    else:
        block_rows = max(1, _BLOCK // max(n_cols, 1))
        starts = list(range(0, n_rows, block_rows))
        sizes = [(min(r0 + block_rows, n_rows) - r0) * n_cols for r0 in starts]
        counts = _block_counts(sizes, k, rng)
        indices = np.empty(k, dtype=idx)
        row_len = np.zeros(n_rows, dtype=np.int64)
        # the column of every position of a (full) block
        col_of = np.tile(np.arange(n_cols, dtype=idx), min(block_rows, n_rows))
        at = 0
        for r0, size, kb in zip(starts, sizes, counts):
            nr = size // n_cols
            if kb == 0:
                continue
            if kb == size:
                row_len[r0:r0 + nr] = n_cols
                indices[at:at + kb] = col_of[:size]
            else:
                mask = _exact_mask(rng, size, kb)
                row_len[r0:r0 + nr] = np.count_nonzero(mask.reshape(nr, n_cols), axis=1)
                indices[at:at + kb] = col_of[:size][mask]
            at += kb
        indptr = np.zeros(n_rows + 1, dtype=np.int64)
        np.cumsum(row_len, out=indptr[1:])
    data = _nonzero_normals(rng, k, dt).astype(store, copy=False)
    return _csr((n_rows, n_cols), indptr, indices, data)


def gaussian_weights(shape, dtype=np.float32, seed=0, std: float = 1.0) -> np.ndarray:
    """Dense ``(rows, cols)`` matrix of normal values (mean 0, ``std``), none exactly zero.

    A stand-in for an unpruned linear layer (rows = out features). Zeros are redrawn (also
    those produced by a float16 cast), so :func:`prune` then leaves exact nonzero counts.
    """
    n_rows, n_cols = _shape(shape)
    dt = value_dtype(dtype)
    rng = _rng(seed)
    w = _nonzero_normals(rng, n_rows * n_cols, np.dtype(np.float64) if dt == np.float64
                         else np.dtype(np.float32))
    if std != 1.0:
        w *= std
    w = w.astype(dt, copy=False)
    zero = np.flatnonzero(w == 0)
    while zero.size:  # std scaling or the float16 cast may underflow
        w[zero] = (rng.standard_normal(zero.size) * std).astype(dt)
        zero = zero[w[zero] == 0]
    return w.reshape(n_rows, n_cols)


def _smallest_rows(scores: np.ndarray, k: int) -> np.ndarray:
    """Mask of the ``k`` smallest scores of every row; ties go to the lower column."""
    b, c = scores.shape
    if k <= 0:
        return np.zeros((b, c), dtype=bool)
    if k >= c:
        return np.ones((b, c), dtype=bool)
    t = np.partition(scores, k - 1, axis=1)[:, k - 1:k]
    lt = scores < t
    need = k - np.count_nonzero(lt, axis=1)
    eq = scores == t
    rank = np.cumsum(eq, axis=1, dtype=np.int32)
    return lt | (eq & (rank <= need[:, None]))


def _smallest_flat(scores: np.ndarray, k: int) -> np.ndarray:
    """Mask of the ``k`` smallest of a 1-D array; ties go to the lower index."""
    mask = np.zeros(scores.size, dtype=bool)
    if k <= 0:
        return mask
    if k >= scores.size:
        mask[:] = True
        return mask
    t = np.partition(scores, k - 1)[k - 1]
    mask = scores < t
    need = k - int(np.count_nonzero(mask))
    mask[np.flatnonzero(scores == t)[:need]] = True
    return mask


def _magnitude(block: np.ndarray) -> np.ndarray:
    a = np.abs(block)
    if a.dtype.kind == "f":
        a[np.isnan(a)] = np.inf      # NaN counts as the largest magnitude: kept
    return a


def prune(W, sparsity: float, method: str = "magnitude", per_row: bool = True,
          seed=0) -> np.ndarray:
    """Zero exactly ``round(sparsity * n)`` entries of dense ``W`` (a new array, same dtype).

    ``per_row=True``: ``n`` is the column count and every row loses exactly that many entries;
    ``per_row=False``: ``n`` is ``rows * cols`` and the entries are chosen over the whole matrix.

    ``method="magnitude"`` zeroes the smallest ``|w|`` (NaN counts as largest; among equal
    magnitudes the lower column -- globally the earlier row-major position -- goes first);
    ``method="random"`` zeroes a uniformly random set (seeded by ``seed``).
    Entries already zero count like any other: magnitude pruning removes them first, random
    pruning may pick them or not. With no zeros in ``W`` (e.g. :func:`gaussian_weights`) the
    result has exactly the requested number of zeros per row (or in total).
    """
    if sp.issparse(W):
        W = W.toarray()
    A = np.asarray(W)
    if A.ndim != 2:
        raise ShapeError(problem("W", "a 2-D dense array", f"{A.ndim}-D array of shape {A.shape}"))
    if A.dtype.kind not in "fiu":
        raise DTypeError(problem("W.dtype", "a real numeric dtype", A.dtype))
    s = _fraction(sparsity, "sparsity")
    if method not in ("magnitude", "random"):
        raise OptionError(problem("method", "'magnitude' or 'random'", repr(method)))
    rng = _rng(seed)
    out = np.array(A, copy=True, order="C")
    n_rows, n_cols = out.shape
    if n_rows == 0 or n_cols == 0:
        return out
    if per_row:
        k = int(round(s * n_cols))
        b = max(1, (1 << 22) // n_cols)
        for r0 in range(0, n_rows, b):
            blk = out[r0:r0 + b]
            scores = _magnitude(blk) if method == "magnitude" else rng.random(blk.shape)
            blk[_smallest_rows(scores, k)] = 0
    else:
        k = int(round(s * n_rows * n_cols))
        if method == "magnitude":
            mask = _smallest_flat(_magnitude(out).ravel(), k)
        else:
            mask = _exact_mask(rng, n_rows * n_cols, k)
        out.reshape(-1)[mask] = 0
    return out


def _row_lengths(n_rows: int, n_cols: int, total: int, alpha: float, rng) -> np.ndarray:
    """Power-law row lengths, each <= n_cols, summing to exactly ``total``."""
    u = rng.random(n_rows)
    w = (1.0 - u) ** (-1.0 / (alpha - 1.0))        # Pareto, pdf ~ x**-alpha, x >= 1
    if total >= n_rows * n_cols:
        return np.full(n_rows, n_cols, dtype=np.int64)
    # scale so that sum(min(scale * w, n_cols)) == total (bisection, keep the lower side)
    lo, hi = 0.0, total / w.sum()
    while np.minimum(hi * w, n_cols).sum() < total:
        hi *= 2.0
    for _ in range(64):
        mid = 0.5 * (lo + hi)
        if np.minimum(mid * w, n_cols).sum() <= total:
            lo = mid
        else:
            hi = mid
    x = np.minimum(lo * w, n_cols)
    lengths = np.floor(x).astype(np.int64)
    frac = x - lengths
    rem = total - int(lengths.sum())
    while rem > 0:                                   # largest fractional parts first
        room = np.flatnonzero(lengths < n_cols)
        take = room[np.argsort(-frac[room], kind="stable")[:rem]]
        lengths[take] += 1
        frac[take] = 0.0
        rem -= take.size
    return lengths


def _distinct_per_row(lengths: np.ndarray, n_cols: int, rng) -> tuple[np.ndarray, np.ndarray]:
    """(row, col) of ``lengths[r]`` uniformly random distinct columns per row, CSR order.

    Draw columns with replacement (a margin more than the expected number of draws needed),
    keep the distinct ones, then keep a uniformly random ``lengths[r]`` of them (random
    priorities); rows that came up short are drawn again. The distinct set is exchangeable,
    so the kept set is a uniform subset.
    """
    rows_out, cols_out = [], []
    todo = np.flatnonzero(lengths > 0)
    while todo.size:
        ln = lengths[todo].astype(np.float64)
        expect = n_cols * np.log(n_cols / np.maximum(n_cols - ln, 0.5))
        m = np.ceil(1.05 * expect + 3.0 * np.sqrt(expect) + 4).astype(np.int64)
        r = np.repeat(todo, m)
        keys = np.unique(r * n_cols + rng.integers(0, n_cols, size=r.size))
        kr, kc = np.divmod(keys, n_cols)
        got = np.bincount(kr, minlength=lengths.size)[todo]
        ok = got >= lengths[todo]
        if not ok.all():                             # short rows: drop, draw again
            sel = np.isin(kr, todo[ok])
            kr, kc = kr[sel], kc[sel]
        prio = rng.random(kr.size)
        order = np.lexsort((prio, kr))
        start = np.searchsorted(kr, kr[order], side="left")
        rank = np.arange(kr.size) - start
        keep = np.zeros(kr.size, dtype=bool)
        keep[order[rank < lengths[kr[order]]]] = True
        rows_out.append(kr[keep])
        cols_out.append(kc[keep])
        todo = todo[~ok]
    if not rows_out:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    rows, cols = np.concatenate(rows_out), np.concatenate(cols_out)
    order = np.lexsort((cols, rows))
    return rows[order], cols[order]


def power_law(n_rows: int, n_cols: int, avg_nnz_per_row: float, alpha: float = 2.0,
              dtype=np.float32, seed=0) -> sp.csr_matrix:
    """Sparse matrix whose row lengths follow a power law; columns uniform, values normal.

    Row lengths are Pareto draws (density ``~ x**-alpha``, ``alpha > 1``) scaled so that the
    total is exactly ``round(avg_nnz_per_row * n_rows)`` (at most ``rows * cols``) with every
    row capped at ``n_cols``. Columns within a row are distinct and uniformly random; rows with
    more than half the columns are drawn as the complement of a sparse sample.
    """
    n_rows, n_cols = _shape((n_rows, n_cols), "(n_rows, n_cols)")
    try:
        avg = float(avg_nnz_per_row)
    except (TypeError, ValueError):
        avg = float("nan")
    if not avg >= 0:
        raise OptionError(problem("avg_nnz_per_row", "a non-negative number",
                                  repr(avg_nnz_per_row)))
    if not float(alpha) > 1.0:
        raise OptionError(problem("alpha", "a number > 1 (Pareto exponent)", repr(alpha)))
    dt, store = _sparse_dtype(dtype)
    rng = _rng(seed)
    total = min(int(round(avg * n_rows)), n_rows * n_cols)
    if total == 0 or n_cols == 0:
        lengths = np.zeros(n_rows, dtype=np.int64)
    else:
        lengths = _row_lengths(n_rows, n_cols, total, float(alpha), rng)
    dense = lengths > n_cols // 2
    sparse_len = np.where(dense, n_cols - lengths, lengths)
    rows, cols = _distinct_per_row(sparse_len, n_cols, rng)
    if dense.any():
        keep_r = ~dense[rows]
        parts_r, parts_c = [rows[keep_r]], [cols[keep_r]]
        ex_r, ex_c = rows[~keep_r], cols[~keep_r]
        drows = np.flatnonzero(dense)
        b = max(1, (1 << 22) // n_cols)
        for i in range(0, drows.size, b):
            blk = drows[i:i + b]
            mask = np.ones((blk.size, n_cols), dtype=bool)
            sel = (ex_r >= blk[0]) & (ex_r <= blk[-1])
            mask[np.searchsorted(blk, ex_r[sel]), ex_c[sel]] = False
            br, bc = np.divmod(np.flatnonzero(mask), n_cols)
            parts_r.append(blk[br])
            parts_c.append(bc)
        rows, cols = np.concatenate(parts_r), np.concatenate(parts_c)
        order = np.lexsort((cols, rows))
        rows, cols = rows[order], cols[order]
    indptr = np.zeros(n_rows + 1, dtype=np.int64)
    np.cumsum(lengths, out=indptr[1:])
    data = _nonzero_normals(rng, total, dt).astype(store, copy=False)
    return _csr((n_rows, n_cols), indptr, cols, data)


# ---------------------------------------------------------------------------------------------
# random graphs (undirected, simple): symmetric adjacency patterns
# ---------------------------------------------------------------------------------------------

def _degree(x, field: str) -> float:
    try:
        v = float(x)
    except (TypeError, ValueError):
        v = float("nan")
    if not v > 0:
        raise OptionError(problem(field, "a positive number", repr(x)))
    return v


def _graph(n: int, u: np.ndarray, v: np.ndarray, dtype, rng) -> sp.csr_matrix:
    """Symmetric ``n x n`` CSR with a nonzero at ``(u, v)`` and ``(v, u)`` for every edge of
    the (simple: no loops, no repeats) edge list; standard-normal values, drawn in CSR order
    (so ``A[i, j]`` and ``A[j, i]`` differ: the pattern is symmetric, the matrix is not)."""
    dt, store = _sparse_dtype(dtype)
    rows = np.concatenate((u, v)).astype(np.int64)
    cols = np.concatenate((v, u)).astype(np.int64)
    keys = np.sort(rows * n + cols)
    rows, cols = np.divmod(keys, n)
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=n), out=indptr[1:])
    data = _nonzero_normals(rng, cols.size, dt).astype(store, copy=False)
    return _csr((n, n), indptr, cols, data)


def _first_of_each(keys: np.ndarray, order_key: np.ndarray | None = None) -> np.ndarray:
    """Mask of the entries that are not the first of their key (the first: smallest
    ``order_key``, then smallest index)."""
    idx = np.arange(keys.size)
    order = np.lexsort((idx,) if order_key is None else (idx, order_key)) if keys.size else idx
    order = order[np.argsort(keys[order], kind="stable")]
    k = keys[order]
    later = np.zeros(keys.size, dtype=bool)
    later[order[1:][k[1:] == k[:-1]]] = True
    return later


def erdos_renyi(n, avg_degree, dtype=np.float32, seed=0) -> sp.csr_matrix:
    """Adjacency pattern of an Erdős–Rényi graph G(n, p), ``p = avg_degree / (n - 1)``:
    every one of the ``n (n - 1) / 2`` node pairs is an edge independently with probability
    ``p`` (capped at 1), so the expected degree is ``avg_degree``.

    Method: the edge count is drawn from its binomial law, then that many distinct pairs
    uniformly (numpy's ``choice(replace=False)``) -- the same law as one coin per pair.
    Returns the symmetric ``n x n`` matrix (no diagonal) with normal values.
    """
    n = _count(n, "n", error=ShapeError)
    d = _degree(avg_degree, "avg_degree")
    rng = _rng(seed)
    pairs = n * (n - 1) // 2
    p = min(1.0, d / (n - 1)) if n > 1 else 0.0
    m = int(rng.binomial(pairs, p)) if pairs else 0
    k = np.sort(rng.choice(pairs, size=m, replace=False, shuffle=False).astype(np.int64)) \
        if m else np.zeros(0, np.int64)
    # pair k = i (i - 1) / 2 + j with 0 <= j < i: invert the triangular numbers exactly
    i = ((1.0 + np.sqrt(1.0 + 8.0 * k.astype(np.float64))) / 2.0).astype(np.int64)
    i -= i * (i - 1) // 2 > k
    i += (i + 1) * i // 2 <= k
    return _graph(n, i, k - i * (i - 1) // 2, dtype, rng)


def watts_strogatz(n, k, p: float = 0.1, dtype=np.float32, seed=0) -> sp.csr_matrix:
    """Adjacency pattern of a Watts–Strogatz small-world graph: a ring of ``n`` nodes, each
    joined to its ``k // 2`` nearest neighbours on either side, then every ring edge
    ``(u, u + j)`` rewired with probability ``p`` to ``(u, w)``, ``w`` uniform among the
    nodes that are neither ``u`` nor already joined to ``u``.

    ``k`` odd (e.g. 5, an average degree the dtANS paper's Fig. 4 uses): the even nodes also
    get the edge ``(u, u + (k + 1) // 2)``, so the mean degree is ``k`` for even ``n``.
    The edge count never changes: ``n * (k // 2)`` plus ``ceil(n / 2)`` for odd ``k``.

    Method (vectorised, so the order of rewiring differs from the sequential textbook loop):
    all rewired edges draw their ``w`` at once; a draw that is a self loop or repeats an
    edge (a ring edge, or another rewired edge -- the first of those keeps it) is drawn
    again until none is left. Needs ``1 <= k < n / 2`` (``w`` always exists).
    """
    n = _count(n, "n", error=ShapeError)
    k = _count(k, "k", minimum=1)
    p = _fraction(p, "p", "pass the rewiring probability, e.g. 0.1")
    if not 2 * k < n:
        raise OptionError(problem("k", f"an int with 1 <= k < n / 2 = {n / 2}", repr(k),
                                  "use more nodes or a smaller degree"))
    rng = _rng(seed)
    nodes = np.arange(n, dtype=np.int64)
    u = [nodes] * (k // 2)
    v = [(nodes + j) % n for j in range(1, k // 2 + 1)]
    if k % 2:
        u.append(nodes[::2])
        v.append((nodes[::2] + (k + 1) // 2) % n)
    u, v = np.concatenate(u), np.concatenate(v)
    moved = rng.random(u.size) < p
    redo = np.flatnonzero(moved)
    for _ in range(10_000):
        if not redo.size:
            break
        v[redo] = rng.integers(0, n, size=redo.size)
        keys = np.minimum(u, v) * n + np.maximum(u, v)
        bad = _first_of_each(keys, moved.astype(np.int8)) | (u == v)
        redo = np.flatnonzero(bad & moved)
    else:   # pragma: no cover - only with k close to n / 2 and p near 1
        raise OptionError(problem("k", "a degree that leaves room to rewire", repr(k)))
    return _graph(n, u, v, dtype, rng)


def barabasi_albert(n, m, dtype=np.float32, seed=0) -> sp.csr_matrix:
    """Adjacency pattern of a Barabási–Albert preferential-attachment graph.

    Start: a star of ``M = ceil(m) + 1`` nodes (node 0 joined to 1 .. M - 1). Then each new
    node ``v = M .. n - 1`` joins ``m_v`` distinct earlier nodes, each chosen with probability
    proportional to its degree before ``v`` arrived. ``m`` need not be an integer: ``m_v =
    floor((v + 1) m) - floor(v m)`` takes ``floor(m)`` or ``ceil(m)`` edges so that they
    average ``m`` (``m = 2.5`` gives mean degree 5); the mean degree tends to ``2 m``.

    Method (vectorised, Batagelj and Brandes' edge-list form): list every edge's two ends in
    order; a degree-proportional choice is a uniformly random earlier end, so new edge ``e``
    of node ``v`` draws a position ``r_e`` among the ends of the edges before ``v``'s and
    takes the node there. Those positions point backwards and are resolved all at once by
    pointer doubling. A node that drew the same target twice replaces each repeat by the
    node at a fresh random end before its edges (the ends as they then stand), until its
    targets are distinct.
    """
    n = _count(n, "n", error=ShapeError)
    m = _degree(m, "m")
    M = int(np.ceil(m)) + 1
    if n < M:
        raise ShapeError(problem("n", f"at least ceil(m) + 1 = {M} nodes", repr(n)))
    rng = _rng(seed)
    v_new = np.arange(M, n, dtype=np.int64)
    m_v = (np.floor((v_new + 1) * m) - np.floor(v_new * m)).astype(np.int64)
    n_seed = M - 1
    src = np.concatenate((np.arange(1, M, dtype=np.int64), np.repeat(v_new, m_v)))
    E = src.size
    first = np.concatenate(([0], np.cumsum(m_v)[:-1])) + n_seed if m_v.size else m_v
    limit = np.zeros(E, dtype=np.int64)
    limit[n_seed:] = 2 * np.repeat(first, m_v)      # edge e may point below 2 * first(v)
    base = np.zeros(2 * E, dtype=np.int64)
    base[0::2] = src                                # even positions: the edge's new node
    ptr = np.arange(2 * E, dtype=np.int64)          # seed targets (node 0) are fixed points
    ptr[2 * n_seed + 1::2] = (rng.random(E - n_seed) * limit[n_seed:]).astype(np.int64)
    while True:                                     # pointer doubling to the fixed points
        nxt = ptr[ptr]
        if np.array_equal(nxt, ptr):
            break
        ptr = nxt
    ends = base[ptr]
    del ptr, nxt
    check = np.arange(n_seed, E)
    for _ in range(10_000):
        redo = check[_first_of_each(src[check] * n + ends[2 * check + 1])]
        if not redo.size:
            break
        r = (rng.random(redo.size) * limit[redo]).astype(np.int64)
        ends[2 * redo + 1] = ends[r]
        nodes = np.unique(src[redo]) - M             # re-check every edge of those nodes
        cnt = m_v[nodes]
        check = np.repeat(first[nodes] - np.cumsum(cnt) + cnt, cnt) + np.arange(cnt.sum())
    else:   # pragma: no cover
        raise OptionError(problem("m", "a degree the graph can attach", repr(m)))
    return _graph(n, src, ends[1::2], dtype, rng)
