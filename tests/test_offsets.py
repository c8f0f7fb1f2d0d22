"""reference/offsets.py: the code optimizer's offset patterns (GeneralSparse, Table 3).

Pinned: the four Table 3 examples (paper_repro.md, GeneralSparse pinned tests). Properties:
``compress(arr).expand(len(arr))`` is ``arr`` exactly (values and dtype) for any integer array,
the generated expression evaluates to ``arr[ID]``, and the chosen pattern never costs more
than storing the array.
"""
import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from reference._common import DTypeError, ShapeError
from reference.offsets import (
    VALUE_LIMIT, Branch, Cyclicity, Linear, Quasilinear, Stored, compress,
)


def _evaluate(pattern, n, var="ID", name="offset"):
    """The expression evaluated in plain Python at every id (as a kernel would)."""
    expr = pattern.expression(var, name)
    env = dict(pattern.arrays(name))
    return [int(eval(expr, {}, {**env, var: i})) for i in range(n)]


def _roundtrip(arr):
    p = compress(arr)
    out = p.expand(len(arr))
    assert out.dtype == arr.dtype, (out.dtype, arr.dtype)
    assert np.array_equal(out, arr), (type(p).__name__, p.expression())
    return p


# ------------------------------------------------------------------ Table 3, pinned


def test_table3_linear():
    p = _roundtrip(np.arange(0, 50, 5, dtype=np.int32))
    assert isinstance(p, Linear) and p.slope == 5
    assert p.expression() == "5 * ID"


def test_table3_branch():
    p = _roundtrip(np.array([0, 5, 8], dtype=np.int32))
    assert isinstance(p, Branch) and p.values == (0, 5, 8) and p.bounds == (0, 1, 2)
    assert _evaluate(p, 3) == [0, 5, 8]


def test_table3_cyclicity():
    arr = np.array([0, 1, 6, 7, 12, 13, 18, 19], dtype=np.int32)
    p = _roundtrip(arr)
    assert isinstance(p, Cyclicity) and (p.period, p.step) == (2, 6)
    assert isinstance(p.cycle, Linear) and p.cycle.slope == 1
    assert p.expression() == "6 * (ID // 2) + ID % 2"


def test_table3_quasilinear():
    p = _roundtrip(np.arange(3, 53, 5, dtype=np.int32))
    assert isinstance(p, Quasilinear) and (p.slope, p.intercept, p.residuals) == (5, 3, None)
    assert p.expression() == "5 * ID + 3"


# ------------------------------------------------------------------ the cost rule


def test_quasilinear_residuals_beat_wide_stored_values_only():
    """Residuals in int8 (cost 3 ops + load + 1 byte) beat storing int32 offsets, but not
    int16 ones: the cost rule of the module docstring."""
    rng = np.random.default_rng(1)
    noise = rng.integers(-3, 4, size=100)
    wide = np.arange(100) * 1000 + 7 + noise            # values up to ~1e5: int32
    p = _roundtrip(wide.astype(np.int64))
    assert isinstance(p, Quasilinear) and p.residuals.dtype == np.int8 and p.slope == 1000
    assert p.cost < Stored(length=100, dtype=np.dtype(np.int64), values=wide.astype(np.int32)).cost
    narrow = np.arange(100) * 10 + noise + 3               # values below 1000: int16
    assert isinstance(_roundtrip(narrow.astype(np.int64)), Stored)


def test_cycle_of_a_nonlinear_period_is_branched():
    arr = np.array([0, 3, 4] * 4) + np.repeat(np.arange(4) * 10, 3)
    p = _roundtrip(arr)
    assert isinstance(p, Cyclicity) and p.period == 3 and p.step == 10 and isinstance(p.cycle, Branch)
    assert _evaluate(p, arr.size) == arr.tolist()


def test_stored_fallback_and_names():
    arr = np.array([0, 9, 2, 7, 1, 8, 3, 6, 4, 5, 0, 9, 1, 8, 2, 7, 3], dtype=np.int64)
    p = _roundtrip(arr)
    assert isinstance(p, Stored) and p.values.dtype == np.int8 and p.nbytes == arr.size
    assert p.expression("tid", "warp_offset") == "int(warp_offset[tid])"
    assert set(p.arrays("warp_offset")) == {"warp_offset"}
    assert _evaluate(p, arr.size, "tid", "warp_offset") == arr.tolist()


def test_huge_values_are_not_fitted():
    arr = np.array([0, VALUE_LIMIT * 2, VALUE_LIMIT * 4, VALUE_LIMIT * 6, 1, 2, 3, 4, 5, 6, 7, 8,
                    9, 10, 11, 12, 13], dtype=np.int64)
    assert isinstance(_roundtrip(arr), Stored)


def test_errors_name_the_field():
    with pytest.raises(ShapeError, match=r"arr: expected a 1-D integer array, received 2-D"):
        compress(np.zeros((2, 2), np.int32))
    with pytest.raises(DTypeError, match=r"arr.dtype: expected an integer dtype, received float64"):
        compress(np.array([0.0, 1.0]))
    p = compress(np.array([0, 9, 2, 7, 1, 8, 3, 6, 4, 5, 0, 9, 1, 8, 2, 7, 3]))
    with pytest.raises(ShapeError, match=r"n: expected 0 to 17 ids"):
        p.expand(18)
    assert np.array_equal(compress(np.arange(0, 12, 3)).expand(6), np.arange(0, 18, 3))


# ------------------------------------------------------------------ properties


@st.composite
def structured(draw):
    """Offset-like arrays: linear, shifted, periodic, piecewise constant, with noise."""
    n = draw(st.integers(0, 120))
    kind = draw(st.sampled_from(["linear", "shifted", "cyclic", "runs", "noisy"]))
    ids = np.arange(n, dtype=np.int64)
    slope = draw(st.integers(-1000, 1000))
    base = draw(st.integers(-10**6, 10**6))
    if kind == "linear":
        arr = slope * ids
    elif kind == "shifted":
        arr = slope * ids + base
    elif kind == "cyclic":
        p = draw(st.integers(2, 70))
        cycle = np.array(draw(st.lists(st.integers(-50, 50), min_size=p, max_size=p)))
        arr = slope * (ids // p) + cycle[ids % p] if n else ids
    elif kind == "runs":
        arr = np.repeat(np.array(draw(st.lists(st.integers(-99, 99), min_size=1, max_size=20))),
                        draw(st.integers(1, 8)))[:n]
    else:
        arr = slope * ids + base + np.array(draw(st.lists(st.integers(-100, 100), min_size=n, max_size=n)),
                                             dtype=np.int64)
    return arr.astype(draw(st.sampled_from([np.int32, np.int64])))


@given(hnp.arrays(hnp.integer_dtypes(endianness="=") | hnp.unsigned_integer_dtypes(endianness="="),
                  st.integers(0, 80)))
@example(np.zeros(0, np.int32))
@example(np.array([np.iinfo(np.int64).min, np.iinfo(np.int64).max, 0]))
@example(np.array([np.iinfo(np.uint64).max, 0, 5], dtype=np.uint64))
def test_expand_of_compress_is_the_array(arr):
    p = _roundtrip(arr)
    stored = Stored(length=arr.size, dtype=arr.dtype, values=arr)
    assert p.cost <= stored.cost


@given(structured())
@example(np.arange(0, 40, 4, dtype=np.int32))
@example(np.array([0, 1, 6, 7, 12, 13], dtype=np.int32))
@example(np.array([1, 0], dtype=np.int32))                 # -1 * ID + 1, not a 2-way branch
def test_structured_arrays_round_trip_and_evaluate(arr):
    p = _roundtrip(arr)
    assert _evaluate(p, arr.size) == arr.tolist()
    if arr.size >= 2 and np.all(np.diff(arr) == arr[1] - arr[0]):
        assert isinstance(p, (Linear, Quasilinear)) and getattr(p, "residuals", None) is None
