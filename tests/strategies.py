"""Hypothesis strategies shared by every format's tests.

``sparse_inputs`` draws small COO matrices (duplicates allowed) with forced edge cases:
no nonzeros, empty rows, 1xN and Nx1, sizes that are not multiples of 32, and, on request,
NaN/Inf, huge/tiny values and values that do not fit the dtype (``misfit``: encode those with
``lossy=True``; summed duplicates of huge values can overflow too). ``llm_like`` draws uniform masks at LLM sparsities and
``power_law`` skewed row lengths. The matrix is built from a drawn seed, so a failing
example is reproduced from the blob Hypothesis prints.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import scipy.sparse as sp
from hypothesis import strategies as st

DTYPES = (np.float16, np.float32, np.float64)

# magnitudes that stress each dtype without making float32 sums overflow
HUGE = {np.float16: 3.0e4, np.float32: 1.0e18, np.float64: 1.0e150}
TINY = {np.float16: 6.0e-8, np.float32: 1.0e-38, np.float64: 1.0e-300}
# float64 values that overflow, underflow to zero and underflow to a subnormal in each dtype
MISFIT = {np.float16: (1.0e5, 1.0e-9, 1.0e-6), np.float32: (1.0e39, 1.0e-47, 1.0e-40)}


@dataclasses.dataclass
class Case:
    """One drawn test matrix with the operands to multiply it by."""

    A: object                   # scipy matrix (duplicates allowed) or dense array; float16 cases hold values in float32, misfit cases in float64
    dtype: type                 # the value dtype to encode with
    x: np.ndarray               # length n_cols, in dtype
    X: np.ndarray               # (n_cols, k), in dtype
    label: str

    def __repr__(self):
        return (f"Case({self.label}, shape={self.A.shape}, nnz={self.A.nnz}, "
                f"dtype={np.dtype(self.dtype).name})")


def _values(rng, n, dtype, special: bool, extremes: bool):
    v = rng.standard_normal(n)
    if extremes and n:
        pick = rng.random(n)
        v = np.where(pick < 0.1, v * HUGE[dtype], v)
        v = np.where((pick >= 0.1) & (pick < 0.2), np.sign(v) * TINY[dtype] * 4, v)
    if special and n:
        pick = rng.random(n)
        v = np.where(pick < 0.05, np.nan, v)
        v = np.where((pick >= 0.05) & (pick < 0.1), np.inf, v)
        v = np.where((pick >= 0.1) & (pick < 0.15), -np.inf, v)
    return v.astype(dtype)


def _misfit(rng, vals):
    """``vals`` in float64 with about a third replaced by :data:`MISFIT` values of their dtype
    (those that overflow, underflow to zero or to a subnormal in it); float64 has none."""
    if vals.dtype.type not in MISFIT or not vals.size:
        return vals
    pick = rng.integers(0, 9, size=vals.size)
    out = vals.astype(np.float64)
    for i, v in enumerate(MISFIT[vals.dtype.type]):
        out = np.where(pick == i, np.where(rng.random(vals.size) < 0.5, -v, v), out)
    return out


def _sparse_ok(vals):
    """scipy.sparse has no float16: hold float16 values exactly in float32."""
    return vals.astype(np.float32) if vals.dtype == np.float16 else vals


def build_case(seed: int, n_rows: int, n_cols: int, density: float, dtype, k: int = 3,
               special: bool = False, extremes: bool = False, duplicates: bool = False,
               empty_rows: bool = False, misfit: bool = False, label: str = "random") -> Case:
    rng = np.random.default_rng(seed)
    nnz = int(round(density * n_rows * n_cols))
    flat = rng.choice(n_rows * n_cols, size=nnz, replace=False) if n_rows * n_cols else np.zeros(0, int)
    rows, cols = np.divmod(flat, max(n_cols, 1))
    if empty_rows and n_rows > 1:
        keep = rows % 3 != 1
        rows, cols = rows[keep], cols[keep]
    if duplicates and rows.size:
        extra = rng.integers(0, rows.size, size=max(1, rows.size // 4))
        rows, cols = np.concatenate([rows, rows[extra]]), np.concatenate([cols, cols[extra]])
    vals = _values(rng, rows.size, dtype, special, extremes)
    vals = _sparse_ok(_misfit(rng, vals) if misfit else vals)
    A = sp.coo_matrix((vals, (rows, cols)), shape=(n_rows, n_cols))
    x = _values(rng, n_cols, dtype, special and rng.random() < 0.3, False)
    X = _values(rng, n_cols * k, dtype, False, False).reshape(n_cols, k)
    return Case(A=A, dtype=dtype, x=x, X=X, label=label)


SHAPES_EDGE = [(0, 0), (0, 5), (5, 0), (1, 1), (1, 33), (33, 1), (1, 70), (70, 1), (31, 33), (33, 65)]


@st.composite
def sparse_inputs(draw, max_rows=40, max_cols=40, dtypes=DTYPES, special=None, extremes=None,
                  misfit=None, max_k=4):
    """A :class:`Case`; every ~4th draw is one of the forced edge shapes."""
    dtype = draw(st.sampled_from(dtypes))
    if draw(st.integers(0, 3)) == 0:
        n_rows, n_cols = draw(st.sampled_from(SHAPES_EDGE))
        label = "edge-shape"
    else:
        n_rows = draw(st.integers(1, max_rows))
        n_cols = draw(st.integers(1, max_cols))
        label = "random"
    density = draw(st.sampled_from([0.0, 0.05, 0.3, 0.6, 1.0]))
    return build_case(
        seed=draw(st.integers(0, 2**32 - 1)), n_rows=n_rows, n_cols=n_cols, density=density,
        dtype=dtype, k=draw(st.integers(1, max_k)),
        special=draw(st.booleans()) if special is None else special,
        extremes=draw(st.booleans()) if extremes is None else extremes,
        duplicates=draw(st.booleans()), empty_rows=draw(st.booleans()),
        misfit=draw(st.booleans()) if misfit is None else misfit, label=label)


#: forced (rows, cols, density) cases of the GeneralSparse planners' drawn matrices
GS_EDGE = [(0, 0, 0.0), (4, 5, 0.0), (1, 70, 0.3), (70, 1, 0.6), (33, 65, 0.05), (31, 33, 0.3)]


@st.composite
def gs_matrices(draw, max_side=40, extremes=True):
    """``(A, dtype)`` for the GeneralSparse planners: float32 or float16 values, every ~4th
    draw one of ``GS_EDGE``, else up to ``max_side`` x ``max_side``; special values,
    duplicates and empty rows drawn (and extreme magnitudes when ``extremes``)."""
    dtype = draw(st.sampled_from([np.float32, np.float16]))
    if draw(st.integers(0, 3)) == 0:
        rows, cols, density = draw(st.sampled_from(GS_EDGE))
    else:
        rows, cols = draw(st.integers(1, max_side)), draw(st.integers(1, max_side))
        density = draw(st.sampled_from([0.0, 0.05, 0.3, 0.7, 1.0]))
    seed = draw(st.integers(0, 2**32 - 1))
    special = draw(st.booleans())
    extreme = draw(st.booleans()) if extremes else False
    case = build_case(seed=seed, n_rows=rows, n_cols=cols, density=density, dtype=dtype,
                      special=special, extremes=extreme, duplicates=draw(st.booleans()),
                      empty_rows=draw(st.booleans()))
    return case.A, dtype


def gs_wide_matrix() -> sp.csr_matrix:
    """6 x 70000 (columns past 16 bits): in blocks of 2 rows every span fits 16 bits, in
    blocks of 4 the first (columns 3 to 69999) does not; row 5 is empty."""
    A = sp.lil_matrix((6, 70000), dtype=np.float32)
    A[0, [3, 60000]] = [1.0, 2.0]
    A[1, [40, 41]] = [3.0, -1.0]
    A[2, 65000] = -2.0
    A[3, [69999, 65010]] = [4.0, 5.0]
    A[4, 10] = 0.5
    return A.tocsr()


@st.composite
def llm_like(draw, max_rows=48, max_cols=96, dtypes=DTYPES):
    """Uniform random mask at an LLM sparsity (30-95 %), Gaussian values."""
    dtype = draw(st.sampled_from(dtypes))
    sparsity = draw(st.sampled_from([0.3, 0.5, 0.7, 0.9, 0.95]))
    return build_case(seed=draw(st.integers(0, 2**32 - 1)), n_rows=draw(st.integers(1, max_rows)),
                      n_cols=draw(st.integers(1, max_cols)), density=1 - sparsity, dtype=dtype,
                      label=f"llm@{sparsity:.0%}")


def power_law_case(seed: int, n_rows: int, n_cols: int, dtype, alpha: float = 1.5, k: int = 2) -> Case:
    """Row lengths drawn from a Zipf law (capped at n_cols): a few long rows, many short."""
    rng = np.random.default_rng(seed)
    lengths = np.minimum(rng.zipf(alpha, size=n_rows), n_cols)
    rows = np.repeat(np.arange(n_rows), lengths)
    cols = np.concatenate([rng.choice(n_cols, size=l, replace=False) for l in lengths]) \
        if n_rows else np.zeros(0, int)
    vals = _values(rng, rows.size, dtype, False, False)
    A = sp.coo_matrix((_sparse_ok(vals), (rows, cols)), shape=(n_rows, n_cols))
    return Case(A=A, dtype=dtype, x=_values(rng, n_cols, dtype, False, False),
                X=_values(rng, n_cols * k, dtype, False, False).reshape(n_cols, k), label="power-law")


_SPECIAL = st.sampled_from([np.nan, np.inf, -np.inf, 1e-30, 6.0e4, -0.0])


@st.composite
def clustered_inputs(draw, max_rows=6, max_cols=300, dtypes=DTYPES, k=2):
    """Up to 40 entries with columns clustered near both ends of the row (long gaps, the last
    column) and special values (NaN, Inf, values that underflow or overflow in float16, -0),
    as a COO (duplicates allowed), CSR or dense input."""
    n_rows = draw(st.integers(0, max_rows))
    n_cols = draw(st.integers(1, max_cols))
    if draw(st.booleans()):
        n_rows = max(n_rows, 1)
    n = draw(st.integers(0, 40)) if n_rows else 0
    rows = draw(st.lists(st.integers(0, max(n_rows - 1, 0)), min_size=n, max_size=n))
    col = st.one_of(st.integers(0, n_cols - 1), st.integers(max(n_cols - 3, 0), n_cols - 1),
                    st.integers(0, min(n_cols - 1, 20)))
    cols = draw(st.lists(col, min_size=n, max_size=n))
    vals = draw(st.lists(st.one_of(st.floats(-1e3, 1e3, width=32), _SPECIAL), min_size=n, max_size=n))
    coo = sp.coo_matrix((np.array(vals, dtype=np.float64), (np.array(rows, dtype=np.int64),
                         np.array(cols, dtype=np.int64))), shape=(n_rows, n_cols))
    kind = draw(st.sampled_from(["coo", "csr", "dense"]))
    A = {"coo": coo, "csr": coo.tocsr(), "dense": coo.toarray()}[kind]
    dtype = draw(st.sampled_from(dtypes))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    return Case(A=A, dtype=dtype, x=_values(rng, n_cols, dtype, False, False),
                X=_values(rng, n_cols * k, dtype, False, False).reshape(n_cols, k),
                label=f"clustered-{kind}")


# ---------------------------------------------------------------------------------------------
# malformed input: what scipy builds (or lets a user change) without checking
# ---------------------------------------------------------------------------------------------

@dataclasses.dataclass
class Malformed:
    """One drawn bad input: ``A`` (a scipy matrix, a nested list), the typed error every
    entry point must raise (``error``; None: ``A`` is valid, and an entry point may only
    encode it exactly or refuse it with ``may_refuse``)."""

    A: object
    error: type | None
    label: str
    may_refuse: tuple = ()

    def __repr__(self):
        return f"Malformed({self.label})"


#: how a valid matrix is broken (each keeps scipy's own constructors quiet)
MALFORMED_KINDS = ("column past the width", "negative column", "indptr decreasing",
                   "indptr not starting at 0", "indptr not ending at nnz", "indptr too short",
                   "coo row past the height", "coo negative column", "csc row past the height",
                   "bsr block column past the width", "ragged list", "huge rows, few entries",
                   "huge columns, few entries")


def malformed_case(kind: str, seed: int, n_rows: int, n_cols: int) -> Malformed:
    """A valid random ``n_rows x n_cols`` float32 matrix (at least 2 x 2, some entries)
    broken as ``kind`` (:data:`MALFORMED_KINDS`); reproducible from ``seed``."""
    from reference._common import InputError, ShapeError, SizeLimitError  # noqa: PLC0415

    rng = np.random.default_rng(seed)
    good = sp.random(n_rows, n_cols, density=0.4, format="csr", dtype=np.float32, random_state=rng)
    if good.nnz == 0:
        good = sp.csr_matrix(([1.0], ([n_rows - 1], [n_cols - 1])), shape=(n_rows, n_cols), dtype=np.float32)
    A = good.copy()
    k = int(rng.integers(0, A.nnz))
    if kind == "column past the width":
        A.indices[k] = n_cols + int(rng.integers(0, 3))
    elif kind == "negative column":
        A.indices[k] = -int(rng.integers(1, n_cols + 1))
    elif kind == "indptr decreasing":
        r = int(rng.integers(1, n_rows))
        A.indptr[r] = A.indptr[-1] + 1 if A.indptr[r + 1] <= A.indptr[-1] else A.indptr[-1] + 1
        A.indptr[r + 1] = max(int(A.indptr[r]) - 1, 0)
    elif kind == "indptr not starting at 0":
        A.indptr[0] = 1
    elif kind == "indptr not ending at nnz":
        A.indptr[-1] = A.nnz - 1 if A.nnz > 1 else 2
    elif kind == "indptr too short":
        A = sp.csr_matrix(good)
        A.indptr = A.indptr[:-1].copy()
    elif kind == "coo row past the height":
        A = good.tocoo()
        A.row[k] = n_rows + int(rng.integers(0, 3))
    elif kind == "coo negative column":
        A = good.tocoo()
        A.col[k] = -1
    elif kind == "csc row past the height":
        A = good.tocsc()
        A.indices[k] = n_rows
    elif kind == "bsr block column past the width":
        A = sp.bsr_matrix(good.toarray()[: n_rows - n_rows % 2, : n_cols - n_cols % 2], blocksize=(2, 2))
        if A.nnz == 0:
            A = sp.bsr_matrix(np.ones((2, 2), np.float32), blocksize=(2, 2))
        A.indices[int(rng.integers(0, A.indices.size))] = A.shape[1] // 2
    elif kind == "ragged list":
        dense = good.toarray().tolist()
        dense[int(rng.integers(0, n_rows))].append(1.0)
        return Malformed(dense, ShapeError, kind)
    elif kind == "huge rows, few entries":
        n = 1 << int(rng.integers(44, 60))
        coo = good.tocoo()
        A = sp.coo_matrix((coo.data, (coo.row.astype(np.int64) * (n // n_rows), coo.col)), shape=(n, n_cols))
        return Malformed(A, SizeLimitError, kind)
    elif kind == "huge columns, few entries":
        n = 1 << int(rng.integers(33, 62))
        coo = good.tocoo()
        A = sp.coo_matrix((coo.data, (coo.row, coo.col.astype(np.int64) * (n // n_cols))), shape=(n_rows, n))
        return Malformed(A, None, kind, may_refuse=(SizeLimitError,))
    else:
        raise ValueError(kind)
    return Malformed(A, InputError, kind)


@st.composite
def malformed_inputs(draw):
    """A :class:`Malformed` of every kind in :data:`MALFORMED_KINDS`, small shapes."""
    return malformed_case(draw(st.sampled_from(MALFORMED_KINDS)), draw(st.integers(0, 2**32 - 1)),
                          draw(st.integers(2, 9)), draw(st.integers(2, 12)))


def with_malformed_kinds(f):
    """Every kind of :data:`MALFORMED_KINDS` as an explicit example (4 x 7, fixed seeds)."""
    from hypothesis import example  # noqa: PLC0415

    for i, kind in enumerate(MALFORMED_KINDS):
        f = example(case=malformed_case(kind, 100 + i, 4, 7))(f)
    return f
