"""Test and benchmark matrices: seeded synthetic generators and the real data sets.

Synthetic (every generator takes ``seed``, default 0, and uses ``np.random.default_rng``):

* :func:`uniform`          -- exactly ``round((1 - sparsity) * rows * cols)`` nonzeros at
                              uniformly random distinct positions, standard-normal values;
* :func:`gaussian_weights` -- a dense standard-normal "weight matrix";
* :func:`prune`            -- zero an exact fraction of a dense matrix (magnitude or random,
                              per row or global);
* :func:`power_law`        -- power-law row lengths, uniformly random columns.

Shapes: :data:`LLM_SHAPES` (the 31 layer shapes of the MACKO paper's appendix D) and
:data:`LLAMA2_7B_LAYERS`.

Real data (directory from :func:`data_dir`): SuiteSparse matrices (:func:`suitesparse_names`,
:func:`suitesparse`, downloaded into a cache when not present locally) and transformer
weights (:func:`weights_names`, :func:`weights`). :func:`load_matrix` takes any of these, or
a ``.mtx``/``.mtx.gz``/``.npy`` path, and returns a canonical scipy CSR matrix.

float16: scipy.sparse has no float16, so (as in ``reference._common.canonical_csr``) a sparse
matrix asked for in float16 is returned as a float32 matrix holding exactly float16 values.

Importing this module is cheap: no data is read and nothing heavy is imported.
"""
from __future__ import annotations

import os
import re
import sys
import tarfile
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from reference._common import (
    DTypeError, OptionError, ShapeError, canonical_csr, index_dtype_for, problem, value_dtype,
)

from .errors import BackendUnavailable, DatasetError

__all__ = [
    "LLM_SHAPES", "LLAMA2_7B_LAYERS", "SUITESPARSE_URL",
    "data_dir", "cache_dir",
    "uniform", "gaussian_weights", "prune", "power_law",
    "suitesparse_names", "suitesparse", "download_suitesparse",
    "weights_names", "weights", "load_matrix",
]

# --------------------------------------------------------------------------------------
# Shapes
# --------------------------------------------------------------------------------------

#: The 31 (rows, cols) weight shapes of the MACKO paper's appendix D (rows = out features).
LLM_SHAPES: tuple[tuple[int, int], ...] = (
    (4096, 4096), (8192, 8192), (8192, 29568), (32000, 5120), (32000, 8192), (28672, 8192),
    (5120, 5120), (5120, 13824), (3584, 20480), (4096, 11008), (13824, 5120), (18944, 3584),
    (14336, 4096), (4096, 14336), (8192, 28672), (11008, 4096), (32000, 4096), (20480, 3584),
    (3584, 18944), (21504, 7168), (7168, 7168), (28672, 7168), (7168, 28672), (27648, 9216),
    (9216, 9216), (36864, 9216), (9216, 36864), (36864, 12288), (12288, 12288),
    (49152, 12288), (12288, 49152),
)

#: Llama-2-7B: the linear layers of one transformer block (name -> (rows, cols)), repeated
#: ``n_blocks`` times.
LLAMA2_7B_LAYERS: dict = {
    "n_blocks": 32,
    "layers": {
        "q": (4096, 4096), "k": (4096, 4096), "v": (4096, 4096), "o": (4096, 4096),
        "gate": (11008, 4096), "up": (11008, 4096), "down": (4096, 11008),
    },
}

# --------------------------------------------------------------------------------------
# Directories
# --------------------------------------------------------------------------------------

_REPO_ROOT = Path(__file__).resolve().parent.parent


def data_dir() -> Path:
    """The real-data directory: ``$SPMVLAB_DATA``, else ``<repo root>/../shared/data``.

    Raises :class:`DatasetError` when neither exists.
    """
    env = os.environ.get("SPMVLAB_DATA")
    if env:
        p = Path(env).expanduser()
        if not p.is_dir():
            raise DatasetError(problem("SPMVLAB_DATA", "an existing directory", repr(env),
                                       "point SPMVLAB_DATA at the folder holding suitesparse/ "
                                       "and weights/, or unset it"))
        return p
    default = _REPO_ROOT.parent / "shared" / "data"
    if default.is_dir():
        return default
    raise DatasetError(problem("data directory", f"$SPMVLAB_DATA or {default}", "neither exists",
                               "set SPMVLAB_DATA to the folder holding suitesparse/ and weights/ "
                               "(SuiteSparse matrices can also be downloaded by name, "
                               "e.g. suitesparse('HB/bcsstk13'))"))


def _data_subdir(name: str) -> Path | None:
    try:
        p = data_dir() / name
    except DatasetError:
        return None
    return p if p.is_dir() else None


def cache_dir() -> Path:
    """spmvlab's download cache: ``$SPMVLAB_CACHE``, else ``~/.cache/spmvlab``.

    SuiteSparse downloads go into its ``suitesparse/`` subfolder. Not created here.
    """
    env = os.environ.get("SPMVLAB_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "spmvlab"


# --------------------------------------------------------------------------------------
# Argument checks
# --------------------------------------------------------------------------------------


def _shape(shape, field: str = "shape") -> tuple[int, int]:
    try:
        r, c = (int(v) for v in shape)
        ok = r >= 0 and c >= 0 and all(int(v) == v for v in shape)
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise ShapeError(problem(field, "two non-negative ints (rows, cols)", repr(shape)))
    return r, c


def _fraction(x, field: str) -> float:
    try:
        v = float(x)
    except (TypeError, ValueError):
        v = float("nan")
    if not 0.0 <= v <= 1.0:
        raise OptionError(problem(field, "a number in [0, 1]", repr(x),
                                  "pass e.g. 0.9 for 90% zeros"))
    return v


def _rng(seed) -> np.random.Generator:
    if isinstance(seed, np.random.Generator):
        return seed
    return np.random.default_rng(seed)


# --------------------------------------------------------------------------------------
# Synthetic matrices
# --------------------------------------------------------------------------------------

_BLOCK = 1 << 24          # positions per block in the dense pass of uniform()
_HYPERGEOM_MAX = 10 ** 9  # numpy's hypergeometric takes ngood, nbad < 1e9


def _nonzero_normals(rng, n: int, dtype: np.dtype) -> np.ndarray:
    """``n`` standard-normal values of ``dtype`` with exact zeros (also from the cast) redrawn."""
    gen = np.float64 if dtype == np.float64 else np.float32
    v = rng.standard_normal(n, dtype=gen).astype(dtype, copy=False)
    zero = np.flatnonzero(v == 0)
    while zero.size:
        v[zero] = rng.standard_normal(zero.size, dtype=gen).astype(dtype)
        zero = zero[v[zero] == 0]
    return v


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


def _csr(shape, indptr, indices, data) -> sp.csr_matrix:
    idx = index_dtype_for(len(data), *shape)
    out = sp.csr_matrix((data, indices.astype(idx, copy=False), indptr.astype(idx, copy=False)),
                        shape=shape, copy=False)
    out.has_sorted_indices = True
    out.has_canonical_format = True
    return out


def _sparse_dtype(dtype) -> tuple[np.dtype, np.dtype]:
    """(value dtype asked for, dtype the scipy matrix stores: float32 for float16)."""
    dt = value_dtype(dtype)
    return dt, (np.dtype(np.float32) if dt == np.float16 else dt)


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


# --------------------------------------------------------------------------------------
# SuiteSparse
# --------------------------------------------------------------------------------------

#: Base URL of the SuiteSparse collection's Matrix Market tarballs (override with
#: ``$SPMVLAB_SUITESPARSE_URL``): ``<base>/<Group>/<Name>.tar.gz``.
SUITESPARSE_URL = "https://suitesparse-collection-website.herokuapp.com/MM"

_MTX_SUFFIXES = (".mtx.gz", ".mtx")
_NAME_RE = re.compile(r"^[A-Za-z0-9_.+\-]+/[A-Za-z0-9_.+\-]+$")

# the opener the download uses; tests replace it so no network is touched
_urlopen = urllib.request.urlopen


def _strip_mtx(fname: str) -> str | None:
    for suf in _MTX_SUFFIXES:
        if fname.endswith(suf):
            return fname[: -len(suf)]
    return None


def _suitesparse_dirs() -> list[Path]:
    dirs = []
    local = _data_subdir("suitesparse")
    if local is not None:
        dirs.append(local)
    cached = cache_dir() / "suitesparse"
    if cached.is_dir():
        dirs.append(cached)
    return dirs


def _suitesparse_files() -> dict[str, Path]:
    """'Group/Name' -> file, local data first, then the download cache."""
    found: dict[str, Path] = {}
    for d in _suitesparse_dirs():
        for f in sorted(d.iterdir()):
            stem = _strip_mtx(f.name)
            if stem and "__" in stem:
                group, _, name = stem.partition("__")
                found.setdefault(f"{group}/{name}", f)
    return found


def suitesparse_names() -> list[str]:
    """Sorted 'Group/Name' of the SuiteSparse matrices available without a download."""
    return sorted(_suitesparse_files())


def _normalise_suitesparse(name: str) -> str:
    """'HB/bcsstk13', 'HB__bcsstk13', 'HB__bcsstk13.mtx', 'HB__bcsstk13.mtx.gz' -> 'HB/bcsstk13'."""
    n = str(name).strip()
    n = _strip_mtx(n) or n
    if "/" not in n and "__" in n:
        group, _, rest = n.partition("__")
        n = f"{group}/{rest}"
    return n


def _resolve_suitesparse(name: str) -> tuple[str, Path | None]:
    """(canonical 'Group/Name', local file or None). A bare 'Name' matches if unique."""
    files = _suitesparse_files()
    n = _normalise_suitesparse(name)
    if n in files:
        return n, files[n]
    if "/" not in n:
        hits = [k for k in files if k.split("/", 1)[1] == n]
        if len(hits) == 1:
            return hits[0], files[hits[0]]
    return n, None


def _read_mtx(path: Path, dtype) -> sp.csr_matrix:
    import scipy.io  # noqa: PLC0415  (keeps the module import cheap)

    try:
        M = scipy.io.mmread(str(path))
    except (OSError, ValueError, EOFError) as exc:
        raise DatasetError(problem(f"file {path}", "a Matrix Market file", f"unreadable ({exc})",
                                   "check the file, or delete it to download it again")) from exc
    return canonical_csr(M, dtype=value_dtype(dtype))


def suitesparse(name: str, dtype=np.float64, download: bool = True) -> sp.csr_matrix:
    """A SuiteSparse matrix as canonical CSR, by name ('HB/bcsstk13' or a file stem).

    Looked up in ``<data_dir>/suitesparse`` (files ``Group__Name.mtx[.gz]``), then in the
    download cache; otherwise downloaded (``download=True``) with
    :func:`download_suitesparse`. Symmetric files are expanded to the full matrix, pattern
    matrices get the value 1.0, explicit zeros are dropped.
    """
    full, path = _resolve_suitesparse(name)
    if path is None:
        if not (download and _NAME_RE.match(full)):
            raise DatasetError(problem(
                "suitesparse name", "'Group/Name' of a SuiteSparse matrix", repr(name),
                f"use one of {suitesparse_names()} or a collection name like 'HB/bcsstk17'"))
        path = download_suitesparse(full)
    return _read_mtx(path, dtype)


def _progress(label: str, done: int, total: int | None, stream) -> None:
    mb = done / 1e6
    if total:
        msg = f"\rdownloading {label}: {mb:.1f} / {total / 1e6:.1f} MB ({100 * done / total:3.0f}%)"
    else:
        msg = f"\rdownloading {label}: {mb:.1f} MB"
    stream.write(msg)
    stream.flush()


def download_suitesparse(name: str, progress: bool = True, timeout: float = 60.0) -> Path:
    """Download 'Group/Name' from the SuiteSparse collection into the cache; return the .mtx.

    Fetches ``<base>/<Group>/<Name>.tar.gz`` (base: ``$SPMVLAB_SUITESPARSE_URL`` or
    :data:`SUITESPARSE_URL`) with urllib, extracts ``<Name>.mtx`` to
    ``<cache_dir>/suitesparse/Group__Name.mtx`` and removes the tarball. A progress line goes
    to stderr. Raises :class:`DatasetError` when offline or the matrix does not exist.
    """
    full = _normalise_suitesparse(name)
    if not _NAME_RE.match(full):
        raise DatasetError(problem("suitesparse name", "'Group/Name'", repr(name),
                                   "e.g. 'HB/bcsstk17'"))
    group, mname = full.split("/")
    base = os.environ.get("SPMVLAB_SUITESPARSE_URL", SUITESPARSE_URL).rstrip("/")
    url = f"{base}/{group}/{mname}.tar.gz"
    dest_dir = cache_dir() / "suitesparse"
    target = dest_dir / f"{group}__{mname}.mtx"
    if target.is_file():
        return target
    manual = (f"check your connection, or download {url} by hand and put {mname}.mtx at "
              f"{target}, or set SPMVLAB_DATA")
    try:
        dest_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DatasetError(problem("cache directory", "a writable directory", f"{dest_dir} ({exc})",
                                   "set SPMVLAB_CACHE to a writable folder")) from exc
    part = dest_dir / f"{group}__{mname}.tar.gz.part"
    stream = sys.stderr
    try:
        with _urlopen(url, timeout=timeout) as resp, open(part, "wb") as out:
            total = resp.headers.get("Content-Length") if getattr(resp, "headers", None) else None
            total = int(total) if total and str(total).isdigit() else None
            done = 0
            while True:
                chunk = resp.read(1 << 20)
                if not chunk:
                    break
                out.write(chunk)
                done += len(chunk)
                if progress:
                    _progress(full, done, total, stream)
        if progress:
            stream.write("\n")
    except urllib.error.HTTPError as exc:
        part.unlink(missing_ok=True)
        what = "no such matrix in the collection" if exc.code == 404 else f"HTTP {exc.code}"
        raise DatasetError(problem(f"download of {full}", f"the tarball at {url}", what,
                                   "check the Group/Name spelling at https://sparse.tamu.edu"
                                   if exc.code == 404 else manual)) from exc
    except (urllib.error.URLError, OSError, ValueError) as exc:
        part.unlink(missing_ok=True)
        reason = getattr(exc, "reason", exc)
        raise DatasetError(problem(f"download of {full}", f"the tarball at {url}",
                                   f"network error ({reason})", manual)) from exc
    try:
        with tarfile.open(part, "r:gz") as tar:
            member = next((m for m in tar.getmembers()
                           if m.isfile() and Path(m.name).name == f"{mname}.mtx"), None)
            if member is None:
                raise DatasetError(problem(f"tarball of {full}", f"a member {mname}.mtx",
                                           "none", manual))
            src = tar.extractfile(member)
            tmp = target.with_suffix(".mtx.tmp")
            with src, open(tmp, "wb") as out:
                while True:
                    chunk = src.read(1 << 20)
                    if not chunk:
                        break
                    out.write(chunk)
            tmp.replace(target)
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise DatasetError(problem(f"tarball of {full}", "a .tar.gz archive",
                                   f"unreadable ({exc})", manual)) from exc
    finally:
        part.unlink(missing_ok=True)
    return target


# --------------------------------------------------------------------------------------
# Weights
# --------------------------------------------------------------------------------------


def _have_safetensors() -> bool:
    import importlib.util  # noqa: PLC0415

    return importlib.util.find_spec("safetensors") is not None


def _weights_files() -> dict[str, Path]:
    d = _data_subdir("weights")
    if d is None:
        return {}
    sufs = (".npy", ".safetensors") if _have_safetensors() else (".npy",)
    found: dict[str, Path] = {}
    for f in sorted(d.iterdir()):
        if f.suffix in sufs and f.is_file():
            found.setdefault(f.stem, f)
    return found


def weights_names() -> list[str]:
    """Sorted names of the weight matrices in ``<data_dir>/weights`` (file stems)."""
    return sorted(_weights_files())


def weights(name: str, dtype=np.float32) -> np.ndarray:
    """A real weight matrix (dense, out_features x in_features) in ``dtype``.

    ``name`` is a file stem of ``<data_dir>/weights/<name>.npy`` (or ``.safetensors`` when the
    ``safetensors`` package is installed; ``name:tensor`` picks one tensor of a file holding
    several).
    """
    dt = value_dtype(dtype)
    stem, _, tensor = str(name).partition(":")
    stem = stem[:-4] if stem.endswith(".npy") else stem
    stem = stem[:-12] if stem.endswith(".safetensors") else stem
    files = _weights_files()
    path = files.get(stem)
    if path is None:
        d = _data_subdir("weights")
        st = d / f"{stem}.safetensors" if d is not None else None
        if st is not None and st.is_file():
            raise BackendUnavailable(problem(f"weights {name!r}", "the safetensors package",
                                             "not installed", "pip install safetensors"))
        raise DatasetError(problem("weights name", f"one of {sorted(files)}", repr(name),
                                   "set SPMVLAB_DATA to the folder holding weights/"))
    if path.suffix == ".npy":
        arr = _load_npy(path)
    else:
        from safetensors.numpy import load_file  # noqa: PLC0415

        tensors = load_file(str(path))
        if tensor:
            if tensor not in tensors:
                raise DatasetError(problem(f"tensor of {path.name}", f"one of {sorted(tensors)}",
                                           repr(tensor)))
            arr = tensors[tensor]
        elif len(tensors) == 1:
            arr = next(iter(tensors.values()))
        else:
            raise DatasetError(problem(f"weights {name!r}",
                                       "a file with one tensor, or name:tensor",
                                       f"{len(tensors)} tensors",
                                       f"use {stem}:<one of {sorted(tensors)}>"))
    if arr.ndim != 2:
        raise ShapeError(problem(f"weights {name!r}", "a 2-D matrix", f"shape {arr.shape}"))
    return np.ascontiguousarray(arr, dtype=dt)


def _load_npy(path: Path) -> np.ndarray:
    try:
        return np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError) as exc:
        raise DatasetError(problem(f"file {path}", "a .npy array (no pickles)",
                                   f"unreadable ({exc})")) from exc


# --------------------------------------------------------------------------------------
# Anything -> CSR
# --------------------------------------------------------------------------------------


def load_matrix(spec, dtype=None) -> sp.csr_matrix:
    """Canonical scipy CSR from a path, a SuiteSparse name or a weights name.

    ``spec`` is tried as: an existing ``.mtx``/``.mtx.gz``/``.npy`` file (a dense 2-D ``.npy``
    becomes CSR, its zeros dropped); a SuiteSparse matrix available locally ('HB/bcsstk13',
    'HB__bcsstk13', or a unique bare 'bcsstk13'); a weights name; finally a 'Group/Name' that is
    downloaded from the collection. ``dtype=None`` keeps floating values as they are and
    converts integer/pattern values to float64.
    """
    s = str(spec)
    path = Path(s).expanduser()
    dt = None if dtype is None else value_dtype(dtype)
    if path.is_file():
        if s.endswith(_MTX_SUFFIXES):
            return _read_mtx(path, dt or np.float64)
        if path.suffix == ".npy":
            arr = _load_npy(path)
            if arr.ndim != 2:
                raise ShapeError(problem(f"file {path}", "a 2-D array", f"shape {arr.shape}"))
            if arr.dtype.kind not in "fiub":
                raise DTypeError(problem(f"file {path}", "a real numeric array",
                                         f"dtype {arr.dtype}"))
            use = dt or (arr.dtype if arr.dtype.kind == "f" else np.dtype(np.float64))
            return canonical_csr(arr, use)
        raise DatasetError(problem(f"file {path}", "a .mtx, .mtx.gz or .npy file",
                                   f"suffix {''.join(path.suffixes) or '(none)'}"))
    full, local = _resolve_suitesparse(s)
    if local is not None:
        return _read_mtx(local, dt or np.float64)
    wfiles = _weights_files()
    wstem = s.partition(":")[0]
    if wstem in wfiles or (wstem.endswith(".npy") and wstem[:-4] in wfiles):
        W = weights(s, dt or np.float32)
        return canonical_csr(W, dt or W.dtype)
    looks_like_file = (s.endswith(_MTX_SUFFIXES + (".npy", ".safetensors"))
                       or (os.sep in s and not _NAME_RE.match(s)))
    if looks_like_file:
        raise DatasetError(problem("MATRIX", "an existing file", repr(s), "check the path"))
    if _NAME_RE.match(full):
        return _read_mtx(download_suitesparse(full), dt or np.float64)
    raise DatasetError(problem(
        "MATRIX", "a .mtx/.mtx.gz/.npy path, a SuiteSparse name or a weights name", repr(s),
        f"use one of the SuiteSparse matrices {suitesparse_names()} or weights {sorted(wfiles)}"))
