"""The input boundary: a matrix, a GeneralSparse plan or a file a user hands in either gives
the right answer or a typed ``SpmvlabError`` whose message names the field, what was
expected, what was received and a fix. Never a crash, a wrong matrix or a request for
terabytes, and never a kernel launch on unchecked input.

One test per reproduction of the boundary issue (scipy matrices with indices outside the
shape or broken row pointers, damaged plans, file headers asking for terabytes, memory that
grew with the column count, int64 sort keys overflowing, generic errors), and the
malformed-input strategy (``strategies.malformed_inputs``) through both planners, the methods
and ``stats`` (the shared suite runs it through every format's encoders). Every test here
runs under a 256 MiB memory limit (``SPMVLAB_MEMORY_LIMIT``), so what would ask for more is
refused.
"""
from __future__ import annotations

import contextlib
import dataclasses
import gzip
import io as _io
import os
import sys
import tracemalloc
import warnings
from unittest import mock

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given

import reference.generalsparse as GS
from reference import macko as RM
from reference._common import (
    DTypeError, FormatError, InputError, LayoutError, OptionError, ShapeError,
    SizeLimitError, SizeWarning, SpmvlabError, check_input, memory_limit,
)
from spmvlab import cli, datasets, formats, io, methods
from spmvlab.generalsparse import codegen
from spmvlab.generalsparse import planner as FGS
from spmvlab.errors import DatasetError
from strategies import gs_wide_matrix, malformed_inputs, with_malformed_kinds

LIMIT = "256M"


@pytest.fixture(autouse=True)
def small_memory_limit(monkeypatch):
    monkeypatch.setenv("SPMVLAB_MEMORY_LIMIT", LIMIT)


@contextlib.contextmanager
def no_launch():
    """Any copy to the device (every kernel launch starts with one) fails the test."""
    from spmvlab._cuda import cuda

    def refuse(*args, **kwargs):
        raise AssertionError("a kernel's input reached the device")

    with mock.patch.object(cuda, "to_device", refuse):
        yield


def encoders():
    """(format, fast) for every registered format's reference and fast encoder."""
    return [pytest.param(info, fast, id=f"{info.name}{'-fast' if fast else ''}")
            for info in formats.all_formats() for fast in ((False, True) if info.encoder else (False,))]


def assert_names_the_problem(exc, *words):
    """The one message shape: field, expected, received, fix (and ``words`` in it)."""
    text = str(exc)
    assert "expected" in text and "received" in text and "Fix:" in text, text
    for w in words:
        assert w in text, (w, text)


# ---------------------------------------------------------------------------------------------
# 1. scipy matrices scipy builds without checking
# ---------------------------------------------------------------------------------------------

def _csr(cols, indptr, shape):
    return sp.csr_matrix((np.ones(len(cols), np.float32), np.array(cols), np.array(indptr)),
                         shape=shape)


@pytest.mark.parametrize("info, fast", encoders())
def test_column_past_the_width_is_refused_before_any_encoder(info, fast):
    """A column 7 in a 5-column CSR (scipy does not check): EC-CSR's encoder killed the
    interpreter in scipy's A @ A.T, the others built format-breaking matrices."""
    A = _csr([0, 7], [0, 1, 2], (2, 5))
    with pytest.raises(InputError) as err:
        info.encode(A, fast=fast)
    assert_names_the_problem(err.value, "A.indices", "[0, 5)", "7", "row 1")


@pytest.mark.parametrize("info, fast", encoders())
@pytest.mark.parametrize("cols", [[0, -1], [2, -3]])
def test_negative_column_is_refused_not_wrapped(info, fast, cols):
    """Column -1 read as column 4 (a garbage value there), or a -3 that vanished."""
    A = _csr(cols, [0, 1, 2] if cols[0] == 0 else [0, 2, 2], (2, 5))
    with pytest.raises(InputError) as err:
        info.encode(A, fast=fast)
    assert_names_the_problem(err.value, "A.indices", str(cols[1]))


@pytest.mark.parametrize("info, fast", encoders())
def test_decreasing_row_pointers_are_refused(info, fast):
    """indptr [0, 3, 1, 3] leaked scipy's ValueError (reference) or an IndexError (fast)."""
    A = _csr([0, 1, 2], [0, 3, 1, 3], (3, 4))
    with pytest.raises(InputError) as err:
        info.encode(A, fast=fast)
    assert_names_the_problem(err.value, "A.indptr", "non-decreasing", "indptr[1] = 3")


def test_check_input_passes_valid_input_through_unchanged():
    A = sp.random(7, 9, density=0.3, format="csr", random_state=0)
    assert check_input(A) is A
    assert check_input(A.tocoo()).format == "coo"
    assert check_input(A.tolil()).format == "coo"            # converted, then checked
    arr = check_input([[1.0, 0.0], [0.0, 2.0]])
    assert isinstance(arr, np.ndarray) and arr.shape == (2, 2)


def test_ragged_list_is_a_shape_error():
    with pytest.raises(ShapeError) as err:
        formats.get("csr").encode([[1.0, 2.0], [3.0]])
    assert_names_the_problem(err.value, "rectangular", "same length")


# the malformed-input strategy: every format's encoders in the shared suite
# (tests/test_formats.py::test_malformed_input_raises_a_typed_error); here the other paths
def _expect(case, call):
    """``call()`` raises ``case.error``; a valid case encodes exactly or is refused as allowed."""
    if case.error is not None:
        with pytest.raises(case.error) as err:
            call()
        assert_names_the_problem(err.value)
        return None
    try:
        return call()
    except case.may_refuse as exc:
        assert_names_the_problem(exc)
        return None


@given(case=malformed_inputs())
@with_malformed_kinds
def test_malformed_input_through_the_planners_and_methods(case):
    strategy = GS.Strategy()
    with no_launch():
        for plan in (GS.plan, FGS.plan):
            P = _expect(case, lambda: plan(case.A, strategy))
            if P is not None:
                P.validate(expensive=True)
        _expect(case, lambda: methods.Problem.make(case.A, np.float32))
        # stats and bench: the matrix as stored, before any format sees it
        _expect(case, lambda: cli._stored(case.A, np.dtype(np.float32), False, sys.stderr, "stats"))


# ---------------------------------------------------------------------------------------------
# 2. GeneralSparse plans: validated and checksummed like the formats
# ---------------------------------------------------------------------------------------------

def _plans():
    """Plans of each storage: plain, compact with 16-bit columns, compact with column
    bases (a 70000-column matrix), sorted rows, interleaved cyclic."""
    A = sp.random(20, 40, density=0.3, format="csr", dtype=np.float32, random_state=3)
    A = sp.vstack([A, sp.csr_matrix((2, 40), dtype=np.float32)]).tocsr()      # empty rows
    whole = GS.Division("multi", False)
    cyc = GS.Strategy(warp=GS.Division("single", True), thread=GS.Division("single", True),
                      interleave=True, vector_width=2, cyclic=True, compact=True)
    return {
        "plain": GS.plan(A, GS.Strategy()),
        "compact16": GS.plan(A, GS.Strategy(compact=True)),
        "compact-bases": GS.plan(gs_wide_matrix(), GS.Strategy(
            block=whole, warp=whole, thread=GS.Division("multi", True), block_size=2,
            thread_cols=2, warp_cols=2, block_cols=2, compact=True, b_vector=2)),
        "sorted": GS.plan(A, GS.Strategy(block=GS.Division("multi", False), block_size=4,
                                         sort_rows=True, warps_per_block=4)),
        "cyclic": FGS.plan(A, cyc),
    }


PLANS = _plans()


def test_plans_are_checksummed_and_valid():
    assert PLANS["compact-bases"].col_base is not None and PLANS["compact16"].col_base is None
    for P in PLANS.values():
        assert P.validate(expensive=True) is P
        assert isinstance(P.checksum, int)
        assert all(not a.flags.writeable for _, a in P.arrays())


def _edited(P, name, index=3, value=None):
    a = getattr(P, name).copy()
    a[index % a.size] = value if value is not None else a[index % a.size] + 1
    return a


@pytest.mark.parametrize("which", sorted(PLANS))
def test_every_changed_entry_of_a_plan_is_caught(which):
    """A copy with one entry changed (``dataclasses.replace`` carries the old checksum):
    validate raises before anything reads it."""
    P = PLANS[which]
    for name, a in P.arrays():
        if not a.size:
            continue
        flipped = a.copy()
        flipped.view(np.uint8)[0] ^= 1
        for new in (_edited(P, name), flipped):
            with pytest.raises(FormatError):             # ChecksumError or a named field
                dataclasses.replace(P, **{name: new}).validate(expensive=True)
    for field, value in (("zero_init", not P.zero_init), ("shape", (P.shape[0], P.shape[1] + 1))):
        with pytest.raises(FormatError):                 # the field, or the checksum
            dataclasses.replace(P, **{field: value}).validate(expensive=True)


def _breaks(P):
    """(field, replacement) that put an index out of range or make the plan inconsistent."""
    m, k = P.shape
    out = [("cols", _edited(P, "cols", value=k)), ("rows", _edited(P, "rows", value=m)),
           ("storage", _edited(P, "storage", value=P.n_slots)),
           ("thread_offset", _edited(P, "thread_offset", index=-1, value=P.n_slots + 1)),
           ("row_order", _edited(P, "row_order", value=m)),
           ("values", P.values[:-1]), ("shape", (m, k - 1))]
    if P.strategy.compact:
        out += [("tg_row", _edited(P, "tg_row", value=m)),
                ("tg_len", _edited(P, "tg_len", index=0, value=10**6)),
                ("row_ptr", _edited(P, "row_ptr", index=-1, value=P.n_slots + 5))]
        if P.col_base is not None:
            out.append(("col_base", _edited(P, "col_base", index=0, value=-1)))
        if P.col_offset is not None:
            big = P.col_offset.copy()
            big[np.flatnonzero(~P.pad)[0]] = 65535
            out.append(("col_offset", big))
    return out


@pytest.mark.parametrize("which", sorted(PLANS))
def test_inconsistent_plans_are_refused_before_a_launch(which):
    """Plans built from edited arrays on purpose (``checksum=None``): a column past the
    width, a short value array, a wrong shape, ... are refused by name, never launched
    (they raised IndexError inside the generated kernel, or gave numbers off by 1.03)."""
    P = PLANS[which]
    B = np.ones((P.shape[1], 4), dtype=P.dtype)
    for field, value in _breaks(P):
        Q = dataclasses.replace(P, **{field: value}, checksum=None)
        with no_launch(), pytest.raises(FormatError) as err:
            codegen.spmm(Q, B)
        assert f"Plan.{field}" in str(err.value) or "Plan." in str(err.value), (field, err.value)


def test_plan_with_a_negative_column_is_refused_by_name():
    """The issue's reproduction: cols[3] = -5 in a replace copy."""
    P = GS.plan(sp.random(30, 50, density=0.3, format="csr", dtype=np.float32, random_state=1),
                GS.Strategy())
    cols = P.cols.copy()
    cols[3] = -5
    B = np.ones((50, 4), np.float32)
    for Q in (dataclasses.replace(P, cols=cols), dataclasses.replace(P, cols=cols, checksum=None)):
        with no_launch(), pytest.raises(FormatError) as err:
            codegen.spmm(Q, B)
        assert_names_the_problem(err.value, "Plan.cols", "[0, 50)", "-5")
    with pytest.raises(SpmvlabError, match="a reference.generalsparse.Plan"):
        codegen.upload("not a plan")


def test_a_valid_plan_still_multiplies():
    P = PLANS["compact-bases"]
    B = np.random.default_rng(0).standard_normal((P.shape[1], 4)).astype(np.float32)
    C = codegen.spmm(P, B)
    exact = gs_wide_matrix().toarray().astype(np.float64) @ B
    assert np.allclose(C, exact, rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------------------------------------
# 3. file readers: sizes from headers are checked before anything is allocated
# ---------------------------------------------------------------------------------------------

def _write(path, text):
    data = text.encode() if isinstance(text, str) else text
    if str(path).endswith(".gz"):
        data = gzip.compress(data)
    path.write_bytes(data)
    return path


def _peak_bytes(call):
    """(result or exception, the most bytes Python and NumPy held during ``call``)."""
    tracemalloc.start()
    try:
        try:
            out = call()
        except Exception as exc:  # noqa: BLE001
            out = exc
        return out, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("name", ["huge.mtx", "huge.mtx.gz"])
@pytest.mark.parametrize("side", [2**31, 10**12])
def test_mtx_header_asking_for_terabytes_is_refused(tmp_path, capsys, name, side):
    """A 78-byte .mtx declaring 2**31 x 2**31 allocated 16 GiB (10**12 rows: 7 TiB)."""
    path = _write(tmp_path / name, f"%%MatrixMarket matrix coordinate real general\n{side} {side} 1\n1 1 1.0\n")
    err, peak = _peak_bytes(lambda: datasets.load_matrix(path))
    assert isinstance(err, SizeLimitError) and peak < 16 << 20
    assert_names_the_problem(err, f"{side:,} x {side:,}", "SPMVLAB_MEMORY_LIMIT")
    assert cli.main(["stats", str(path)]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "memory" in lines[0]


def test_mtx_declaring_more_entries_than_it_holds(tmp_path):
    path = _write(tmp_path / "lie.mtx", "%%MatrixMarket matrix coordinate real general\n1000 1000 100000\n1 1 1.0\n")
    with pytest.raises(DatasetError) as err:
        datasets.load_matrix(path)
    assert_names_the_problem(err.value, "100,000 entries", "size line")


@pytest.mark.parametrize("content, words", [
    (os.urandom(300), "a file beginning with"),
    ("hello world\n", "hello world"),
    ("%%MatrixMarket matrix coordinate real general\n% only comments\n", "no size line"),
    ("%%MatrixMarket matrix circle real general\n2 2 1\n1 1 1\n", "the banner"),
    ("%%MatrixMarket matrix coordinate real general\n2 x 1\n1 1 1\n", "the size line"),
    ("%%MatrixMarket matrix coordinate real symmetric\n2 3 1\n1 1 1\n", "square"),
])
def test_mtx_that_is_not_matrix_market_says_so(tmp_path, content, words):
    """Random bytes said 'last line is cut (truncated?)', 'hello world' 'check that the file is
    complete'."""
    path = _write(tmp_path / "x.mtx", content)
    with pytest.raises(DatasetError) as err:
        datasets.load_matrix(path)
    assert_names_the_problem(err.value, "Matrix Market", words)
    assert "complete" not in str(err.value) and "truncated" not in str(err.value)


def _npy_header_only(path, shape, dtype="<f4", tail=64):
    buf = _io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": dtype, "fortran_order": False, "shape": shape})
    path.write_bytes(buf.getvalue() + b"\0" * tail)
    return path


def test_npy_header_claiming_terabytes_is_refused(tmp_path):
    """A 192-byte .npy claiming (10**6, 10**6) float32 asked for 3.6 TiB."""
    path = _npy_header_only(tmp_path / "huge.npy", (10**6, 10**6))
    err, peak = _peak_bytes(lambda: datasets.load_matrix(path))
    assert isinstance(err, DatasetError) and peak < 16 << 20
    assert_names_the_problem(err, "4,000,000,000,000 bytes", "truncated")


def test_npy_over_the_memory_limit_is_refused(tmp_path, monkeypatch):
    np.save(tmp_path / "w.npy", np.ones((64, 64), np.float32))
    monkeypatch.setenv("SPMVLAB_MEMORY_LIMIT", "4K")
    with pytest.raises(SizeLimitError) as err:
        datasets.load_dense(tmp_path / "w.npy")
    assert_names_the_problem(err.value, "(64, 64)", "16.0 KiB")
    monkeypatch.setenv("SPMVLAB_MEMORY_LIMIT", "1M")
    assert datasets.load_dense(tmp_path / "w.npy").shape == (64, 64)


def test_zip_and_garbage_saved_as_npy(tmp_path):
    """A zip saved as x.npy gave AttributeError; garbage passed numpy's 'load it unsafely'."""
    np.savez(tmp_path / "z.npz", a=np.ones((3, 3)))
    os.replace(tmp_path / "z.npz", tmp_path / "x.npy")
    with pytest.raises(DatasetError) as err:
        datasets.load_matrix(tmp_path / "x.npy")
    assert_names_the_problem(err.value, "zip archive")
    (tmp_path / "g.npy").write_bytes(os.urandom(200))
    with pytest.raises(DatasetError) as err:
        datasets.load_matrix(tmp_path / "g.npy")
    assert_names_the_problem(err.value, "numpy.save")
    assert "unsafe" not in str(err.value) and "pickle" not in str(err.value)


def test_io_load_refuses_a_file_over_the_memory_limit(tmp_path, monkeypatch):
    M = formats.get("csr").encode(sp.random(50, 50, density=0.5, format="csr",
                                            dtype=np.float32, random_state=0))
    io.save(M, tmp_path / "m.npz")
    monkeypatch.setenv("SPMVLAB_MEMORY_LIMIT", "2K")
    with pytest.raises(SizeLimitError):
        io.load(tmp_path / "m.npz")
    monkeypatch.setenv("SPMVLAB_MEMORY_LIMIT", "1M")
    assert io.load(tmp_path / "m.npz").checksum == M.checksum


@pytest.mark.parametrize("text, want", [("4096", 4096), ("512M", 512 << 20), ("1.5G", 3 << 29),
                                        ("2TiB", 2 << 40), ("16gb", 16 << 30)])
def test_memory_limit_spellings(monkeypatch, text, want):
    monkeypatch.setenv("SPMVLAB_MEMORY_LIMIT", text)
    assert memory_limit() == want


def test_memory_limit_bad_spelling(monkeypatch):
    monkeypatch.setenv("SPMVLAB_MEMORY_LIMIT", "lots")
    with pytest.raises(OptionError, match="SPMVLAB_MEMORY_LIMIT"):
        memory_limit()
    monkeypatch.delenv("SPMVLAB_MEMORY_LIMIT")
    assert memory_limit() > 0


# ---------------------------------------------------------------------------------------------
# 4. memory that grew with the column count
# ---------------------------------------------------------------------------------------------

WIDE = sp.csr_matrix((np.array([1.0, 2.0, 3.0, 4.0], np.float32),
                      np.array([0, 5, 2**31 + 1, 2**31 + 4]), np.array([0, 2, 3, 4])),
                     shape=(3, 2**31 + 5))


@pytest.mark.parametrize("fast", [False, True])
def test_ec_csr_of_a_wide_matrix_takes_memory_of_its_entries(fast):
    """3 x (2**31 + 5) with 4 nonzeros: int64[n_cols + 1] (16 GiB) in scipy's A @ A.T, and
    23.6 GB in the fast encoder's column table."""
    info = formats.get("ec_csr")
    info.encode(WIDE[:, :100], fast=fast)                       # compile outside the count
    M, peak = _peak_bytes(lambda: info.encode(WIDE, fast=fast))
    assert not isinstance(M, Exception), M
    assert (M.to_csr() != WIDE).nnz == 0
    assert peak < 32 << 20, peak


def test_macko_auto_width_stores_the_fewest_bytes():
    rng = np.random.default_rng(5)
    for density in (0.7, 0.3, 0.02, 0.002):
        A = sp.random(30, 3000, density=density, format="csr", dtype=np.float32, random_state=rng)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SizeWarning)
            sizes = {b: RM.encode(A, delta_bits=b).nbytes for b in RM.DELTA_BITS}
        for fast in (False, True):
            M = formats.get("macko").encode(A, fast=fast, delta_bits="auto")
            assert M.nbytes == min(sizes.values()) and sizes[M.delta_bits] == M.nbytes
            assert M.nbytes == RM.encoded_bytes(M.n_stored, 30, M.delta_bits, np.float32)


@pytest.mark.parametrize("fast", [False, True])
def test_macko_explicit_width_warns_once_with_sizes_and_refuses_terabytes(fast):
    """MACKO's default 4-bit steps on a wide sparse matrix inserted a zero every 16 columns
    (1.16 GB for soc-Slashdot0902, 1220 bytes per nonzero) without a word."""
    info = formats.get("macko")
    A = sp.random(40, 20000, density=0.001, format="csr", dtype=np.float32, random_state=2)
    with pytest.warns(SizeWarning) as seen:
        M = info.encode(A, fast=fast)
    assert len(seen) == 1 and M.delta_bits == 4
    text = str(seen[0].message)
    assert f"{M.nbytes:,} bytes" in text and "where CSR stores" in text and "'auto' picks 8" in text
    with warnings.catch_warnings():
        warnings.simplefilter("error")                  # auto: no warning
        assert info.encode(A, fast=fast, delta_bits="auto").delta_bits == 8
    with pytest.warns(SizeWarning), pytest.raises(SizeLimitError) as err:
        info.encode(WIDE, fast=fast)                    # 268 million inserted zeros
    assert_names_the_problem(err.value, "delta_bits=4", "delta_bits='auto'")


def test_stats_uses_the_auto_width_and_says_so(tmp_path, capsys):
    A = sp.random(40, 20000, density=0.001, format="coo", dtype=np.float64, random_state=2)
    import scipy.io
    scipy.io.mmwrite(tmp_path / "w.mtx", A)
    assert cli.main(["stats", str(tmp_path / "w.mtx")]) == 0
    out = capsys.readouterr()
    assert "macko delta_bits=8 (auto: the fewest bytes)" in out.out and "warning" not in out.err
    assert cli.main(["stats", str(tmp_path / "w.mtx"), "--delta-bits", "4"]) == 0
    err = capsys.readouterr().err
    assert "warning: macko: delta_bits=4" in err and "where CSR stores" in err


# ---------------------------------------------------------------------------------------------
# 5. valid matrices wider than an int64 row-major key
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("fmt", ["csr", "coo"])
def test_four_by_two_to_the_62_validates(fmt):
    """A valid 4 x 2**62 matrix failed its own validation: row * n_cols + col overflowed."""
    A = _csr([5, 2**62 - 1, 1], [0, 2, 2, 2, 3], (4, 2**62))      # rows 0 and 3
    M = formats.get(fmt).encode(A)
    assert M.validate(expensive=True) is M
    assert (M.to_csr() != A).nnz == 0


# ---------------------------------------------------------------------------------------------
# 6. errors that were generic or misleading
# ---------------------------------------------------------------------------------------------

def _dtype(info):
    """float32, or the format's kernel dtype where its kernels do not take float32."""
    return np.dtype(np.float32 if info.supports_dtype(np.float32) else info.kernel_dtypes[0])


def _small(info):
    A = sp.random(6, 9, density=0.5, format="csr", dtype=np.float32, random_state=4)
    dt = _dtype(info)
    return info.kernel_module().to_device(info.encode(A, dtype=dt)), np.ones(9, dt)


@pytest.mark.parametrize("info", formats.kernel_formats(), ids=lambda i: i.name)
def test_read_only_out_is_refused_before_the_kernel_runs(info, monkeypatch):
    D, x = _small(info)
    out = np.full(6, 7.0, _dtype(info))
    out.setflags(write=False)
    kernels = info.kernel_module()
    with pytest.raises(LayoutError) as err:
        kernels.spmv(D, x, out=out)
    assert_names_the_problem(err.value, "writeable")
    assert np.all(out == 7.0)


@pytest.mark.parametrize("info", formats.kernel_formats(), ids=lambda i: i.name)
def test_another_formats_config_is_refused(info):
    """A CSRConfig given to the COO kernel was taken silently; others gave AttributeError."""
    other = next(i for i in formats.kernel_formats() if i.name != info.name)
    D, x = _small(info)
    for call in (lambda c: info.kernel_module().spmv(D, x, config=c),
                 lambda c: info.kernel_module().spmm(D, x.reshape(-1, 1).repeat(2, 1), config=c)):
        with pytest.raises(OptionError) as err:
            call(other.make_config())
        assert_names_the_problem(err.value, "config", info.config)


def test_weights_name_suggests_close_matches():
    try:
        names = datasets.weights_names()
    except DatasetError:
        names = []
    if "mpnet_L00_ffn_up" not in names:
        pytest.skip("the mpnet weights are not in the data directory")
    with pytest.raises(DatasetError) as err:
        datasets.weights("mpnet_L00_ffn")
    assert "did you mean 'mpnet_L00_ffn_up'" in str(err.value)
    assert "SPMVLAB_DATA" not in str(err.value)


def test_unknown_flag_points_to_the_commands_own_help(capsys):
    with pytest.raises(SystemExit) as ex:
        cli.main(["bench", "X", "--frobnicate"])
    assert ex.value.code == 2
    err = capsys.readouterr().err
    assert "--frobnicate" in err and "spmvlab bench --help" in err


def test_dtype_errors_keep_their_type():
    with pytest.raises(DTypeError):
        formats.get("csr").encode(np.array([["a"]]))
