"""The shared suite: every registered format (``formats.all_formats()``) runs the same cases.

Per format: round trip bit exact for every encode option (``lossy=True`` where drawn values
overflow or underflow in the dtype, ``lossy=False`` then raising), lossy conversion errors
(counts, first entry) and warnings, ``validate`` rejects corrupted matrices, the checksum
catches every bit flip, reference functions and ``to_device`` refuse inconsistent matrices
(the device check kernel agreeing with the host check) and raw matrices, ``spmvlab.io`` round
trips and survives bit flips and truncations, the fast encoder equals the reference byte for
byte (and raises the same errors), reference products equal the CSR reference bit for bit,
kernels match reference and scipy for SpMV and SpMM with garbage-filled outputs (simulator on
CPU, real on a GPU), the golden encodings under ``tests/golden/<fmt>/``, operand errors,
device operands, NaN/Inf propagation. Edge cases are forced with ``@example`` (0x0, 0xN, Nx0,
empty rows, 1xN, Nx1, sizes not multiples of 32, NaN/Inf, wide SpMM batches); Hypothesis
draws the rest.

A format skips a test by naming it in its registry entry's ``opt_out`` (with the reason);
capabilities it lacks (no kernel, no SpMM, no fast encoder) skip the matching tests. What is
truly specific to one format (a paper's worked example) lives beside this file.
"""
from __future__ import annotations

import dataclasses
import glob
import inspect
import io as _io
import json
import os
import warnings
from unittest import mock

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import example, given, settings, strategies as st

import reference.csr as RC
from reference._common import (
    INDEX_DTYPES, ChecksumError, DTypeError, FormatError, LayoutError, LossyConversionError,
    LossyConversionWarning, NotEncodedError, ShapeError, SizeWarning, SpmvlabError, canonical_csr,
)
from spmvlab import formats, io, methods
from parity import assert_close, assert_same_csr, check_parity, garbage_like
from strategies import (
    Case, build_case, clustered_inputs, llm_like, malformed_inputs, power_law_case, sparse_inputs,
    with_malformed_kinds,
)

GOLDEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "golden")

# values that overflow, underflow to zero and to a subnormal in float16, duplicates summed
LOSSY_EDGE = build_case(10, 7, 50, 0.4, np.float16, duplicates=True, misfit=True,
                        label="float16 overflow and underflow")

# edge cases every format sees on every run (Hypothesis draws more of the same kinds)
EDGES = [
    build_case(1, 0, 0, 0.0, np.float32, label="0x0"),
    build_case(2, 0, 7, 0.0, np.float32, label="0xN"),
    build_case(3, 6, 0, 0.0, np.float64, label="Nx0"),
    build_case(4, 5, 9, 0.0, np.float16, label="no nonzeros"),
    build_case(5, 1, 70, 0.4, np.float32, label="1xN"),
    build_case(6, 70, 1, 0.4, np.float16, label="Nx1"),
    build_case(7, 33, 65, 0.3, np.float32, empty_rows=True, duplicates=True, label="33x65 empty rows"),
    build_case(8, 9, 40, 0.5, np.float64, special=True, extremes=True, label="NaN/Inf"),
    build_case(9, 3, 300, 0.02, np.float16, label="long gaps"),
    LOSSY_EDGE,
]


def params(test: str, need: str | None = None, per=None):
    """pytest params over the registered formats: ``need`` a capability ("spmv", "spmm",
    "fast_encoder"); ``per(info)`` expands each format into (id suffix, value) pairs. A
    format that opts out of ``test`` or lacks ``need`` is skipped with the reason."""
    out = []
    for info in formats.all_formats():
        marks = []
        if test in info.opt_out:
            marks.append(pytest.mark.skip(reason=f"{info.name} opts out: {info.opt_out[test]}"))
        elif need and need not in info.capabilities:
            marks.append(pytest.mark.skip(reason=f"{info.name} has no {need}"))
        for suffix, value in (per(info) if per else [("", None)]):
            out.append(pytest.param(info, value, id=info.name + suffix, marks=marks))
    return out


def _opt_id(opts: dict) -> str:
    return "".join(f"-{k}{v}" for k, v in opts.items())


def by_options(info):
    return [(_opt_id(o), o) for o in info.option_grid()]


def by_config(info):
    return [(f"-cfg{i}", c) for i, c in enumerate(info.test_configs)]


#: rows a kernel case keeps: the simulator runs every thread as Python, and 40 rows still
#: span several blocks and end in a partial one
KERNEL_MAX_ROWS = 40


def kernel_dtype(info) -> np.dtype:
    """The value dtype kernel tests use for ``info`` where a case does not fix one: float32,
    or the format's first kernel dtype if its kernels do not take float32 (split24)."""
    return np.dtype(np.float32 if info.supports_dtype(np.float32) else info.kernel_dtypes[0])


def kernel_case(info, case: Case) -> Case:
    """``case`` in a value dtype the format's kernels take (:func:`kernel_dtype` if its own
    is not), cut to its first :data:`KERNEL_MAX_ROWS` rows."""
    if case.A.shape[0] > KERNEL_MAX_ROWS:
        A = case.A.tocsr() if sp.issparse(case.A) else case.A
        case = dataclasses.replace(case, A=A[:KERNEL_MAX_ROWS])
    if info.supports_dtype(case.dtype):
        return case
    dt = kernel_dtype(info)
    with np.errstate(over="ignore"):
        return dataclasses.replace(case, dtype=dt, x=case.x.astype(dt), X=case.X.astype(dt))


def with_edges(fn=None, cycle: str | None = None):
    """Add every case of :data:`EDGES` as an explicit example; ``cycle`` names an integer
    argument given 0, 1, 2, ... over the examples."""
    def deco(f):
        for i, c in enumerate(EDGES):
            f = example(case=c, **({cycle: i} if cycle else {}))(f)
        return f
    return deco(fn) if fn is not None else deco


#: for tests that encode drawn cases with lossy=True on purpose (misfit values, summed extremes)
ACCEPT_LOSS = pytest.mark.filterwarnings("ignore::reference._common.LossyConversionWarning")


def encode_lossy(info, A, dtype, fast=False, **opts):
    """``info.encode(A, dtype, fast, lossy=True)`` and the loss it reported (None if none): at
    most one :class:`LossyConversionWarning`, and ``lossy=False`` raises
    :class:`LossyConversionError` with the same loss exactly when there was one, else encodes
    the same bytes."""
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        M = info.encode(A, dtype=dtype, fast=fast, lossy=True, **opts)
    losses = [w.message.loss for w in seen if issubclass(w.category, LossyConversionWarning)]
    assert len(losses) <= 1, f"{len(losses)} warnings for one encode"
    loss = losses[0] if losses else None
    if loss is None:
        S = info.encode(A, dtype=dtype, fast=fast, **opts)
        assert [a.tobytes() for _, a in S.arrays()] == [a.tobytes() for _, a in M.arrays()]
    else:
        with pytest.raises(LossyConversionError, match="lossy=True") as err:
            info.encode(A, dtype=dtype, fast=fast, **opts)
        assert err.value.loss == loss
    return M, loss


# ---------------------------------------------------------------------------------------------
# the registry entry itself
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("info, _", params("registry"))
def test_registry_entry_is_complete(info, _):
    ref = info.reference_module()
    for fn in ("encode", "spmv", "spmm"):
        assert callable(getattr(ref, fn)), f"{info.reference}.{fn}"
    M = ref.encode(np.eye(3, dtype=np.float32))
    assert M.format_name == info.name and M.options() == info.check_options({})
    assert info.matrix_class() is type(M) and set(M.option_names()) == set(info.options)
    for name, opt in info.options.items():
        assert opt.choices is None or opt.default in opt.choices, name
    if info.kernels:
        K = info.kernel_module()
        for fn in ("to_device", "device_check", "launch_check", "spmv", "ptx_targets") + (
                ("spmm",) if info.spmm else ()):
            assert callable(getattr(K, fn)), f"{info.kernels}.{fn}"
        if info.spmm:                               # spmvlab.torch asks for Y's transpose
            assert "out_t" in inspect.signature(K.spmm).parameters, f"{info.kernels}.spmm"
        assert set(K.CHECK_FIELDS) <= set(M.array_names())
        for cfg in info.test_configs:
            info.make_config(**cfg)
        for name in info.methods:
            assert methods.resolve(name).name == name
    if info.encoder:
        assert callable(info.encoder_module().encode)


# ---------------------------------------------------------------------------------------------
# encoding
# ---------------------------------------------------------------------------------------------

@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # NaN/Inf/overflow on purpose
@ACCEPT_LOSS
@pytest.mark.parametrize("info, opts", params("round_trip", per=by_options))
@given(case=st.one_of(sparse_inputs(max_rows=24, max_cols=120), llm_like(), clustered_inputs()))
@with_edges
def test_round_trip_is_the_canonical_input(info, opts, case):
    """With ``lossy=True`` (drawn values overflow and underflow in float16): the canonical
    input with the same conversion; ``lossy=False`` raises exactly then."""
    M, loss = encode_lossy(info, case.A, case.dtype, **opts)
    if case is LOSSY_EDGE:
        assert loss.overflow and loss.to_zero and loss.to_subnormal, loss
    M.validate(expensive=True)
    assert type(M).format_name == info.name and M.options() == info.check_options(opts)
    assert M.dtype == np.dtype(case.dtype) and M.shape == case.A.shape
    C = canonical_csr(case.A, case.dtype, lossy=True)
    assert_same_csr(M.to_csr(), C)
    assert M.nnz == C.nnz                              # spmvlab.torch and the CLI count on it
    assert M.nbytes == sum(a.nbytes for _, a in M.arrays())
    assert all(not a.flags.writeable for _, a in M.arrays())


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("info, opts", params("fast_encoder", need="fast_encoder", per=by_options))
@given(case=st.one_of(sparse_inputs(max_rows=24, max_cols=120), clustered_inputs()))
@with_edges
def test_fast_encoder_is_the_reference_byte_for_byte(info, opts, case):
    """Also for values that overflow or underflow: the same bytes with ``lossy=True`` and the
    same warning, the same error without."""
    coo = sp.coo_matrix(case.A)
    for A in (case.A, coo.tocsr(), coo.toarray()):
        R, loss_r = encode_lossy(info, A, case.dtype, **opts)
        F, loss_f = encode_lossy(info, A, case.dtype, fast=True, **opts)
        assert loss_f == loss_r
        assert type(F) is type(R) and F.shape == R.shape and F.options() == R.options()
        assert isinstance(F.shape[0], int) and isinstance(F.shape[1], int)
        assert [n for n, _ in F.arrays()] == [n for n, _ in R.arrays()]
        for (name, a), (_, b) in zip(F.arrays(), R.arrays()):
            assert a.dtype == b.dtype and a.shape == b.shape, name
            assert a.tobytes() == b.tobytes(), name


def _corruptions(M):
    """(what, corrupted matrix, needs expensive validate) for generic damage; built with
    ``dataclasses.replace``, so each carries the original checksum."""
    out = []
    for name, a in M.arrays():
        if a.size:
            out.append((f"{name} truncated", dataclasses.replace(M, **{name: a[:-1].copy()}), False))
        out.append((f"{name} lengthened", dataclasses.replace(
            M, **{name: np.concatenate([a, a[-1:] if a.size else np.ones(1, a.dtype)])}), False))
    out.append(("shape not 2-D", dataclasses.replace(M, shape=(M.shape[0],)), False))
    out.append(("one row fewer", dataclasses.replace(M, shape=(M.shape[0] - 1, M.shape[1])), True))
    out.append(("one column fewer", dataclasses.replace(M, shape=(M.shape[0], M.shape[1] - 1)), True))
    return out


def _index_corruptions(M):
    """(what, matrix) with one index out of range (-1 or the dtype's max, at the first, a
    middle and the last position of every index array) or the column count shrunk below
    the last column used; built with ``checksum=None``, so only the structural checks can
    catch them."""
    out = [("one column fewer", dataclasses.replace(M, shape=(M.shape[0], M.shape[1] - 1),
                                                    checksum=None))]
    for name, a in M.arrays():
        if a.dtype not in INDEX_DTYPES or not a.size:
            continue
        for at in sorted({0, a.size // 2, a.size - 1}):
            for v in (-1, np.iinfo(a.dtype).max):
                b = a.copy()
                b[at] = v
                out.append((f"{name}[{at}] = {v}", dataclasses.replace(M, **{name: b}, checksum=None)))
    return out


def corruption_matrix(info, opts, n_rows=13, n_cols=90, seed=3, dtype=None):
    """A small matrix whose last row and last column hold entries (so shrinking either
    leaves an entry out of range); ``dtype`` None: the input's (float32)."""
    A = sp.random(n_rows, n_cols, density=0.2, random_state=np.random.default_rng(seed),
                  format="lil", dtype=np.float32)
    A[n_rows // 3, n_cols - 1] = 1.5
    A[n_rows - 1, 7] = -2.0
    return info.encode(A.tocsr(), dtype=dtype, **opts).validate(expensive=True)


@pytest.mark.parametrize("info, opts", params("corruption", per=by_options))
def test_validate_rejects_corrupted_matrices(info, opts):
    """The structural checks alone (``checksum=False``): each corruption is caught by the
    cheap checks, or by the expensive ones where marked."""
    M = corruption_matrix(info, opts)
    for what, B, expensive in _corruptions(M):
        with pytest.raises(FormatError):
            B.validate(expensive=expensive, checksum=False)
            pytest.fail(f"{info.name}: validate accepted {what}")
    for what, B in _index_corruptions(M):
        with pytest.raises(FormatError):
            B.validate(expensive=True, canonical=False, checksum=False)
            pytest.fail(f"{info.name}: validate accepted {what}")


@pytest.mark.parametrize("info, opts", params("checksum", per=by_options))
def test_checksum_catches_every_bit_flip(info, opts):
    """Every one-bit flip of every array (made with dataclasses.replace, which carries the
    checksum), a changed shape and every other option value: the checksum no longer matches
    and ``validate()`` raises. Rebuilt with ``checksum=None`` (on purpose), it matches."""
    M = corruption_matrix(info, opts, n_rows=5, n_cols=30)
    assert "checksum" not in M.options() and isinstance(M.checksum, int)
    dataclasses.replace(M).validate(expensive=True)          # replacing nothing changes nothing
    for name, a in M.arrays():
        bits = np.unpackbits(a.view(np.uint8))
        if not bits.size:
            continue                                  # an empty array (CSR-dtANS: all escaped)
        for i in range(bits.size):
            flipped = bits.copy()
            flipped[i] ^= 1
            arr = np.packbits(flipped).view(a.dtype).reshape(a.shape)
            B = dataclasses.replace(M, **{name: arr})
            with pytest.raises(ChecksumError):
                B.verify_checksum()
            with pytest.raises(FormatError):
                B.validate()
        assert dataclasses.replace(M, **{name: arr}, checksum=None).verify_checksum()
    changed = [dataclasses.replace(M, shape=(M.shape[0], M.shape[1] + 1)),
               dataclasses.replace(M, shape=(M.shape[1], M.shape[0]))]
    for key, opt in info.options.items():
        changed += [dataclasses.replace(M, **{key: v}) for v in (opt.choices or ()) if v != opts[key]]
    for B in changed:
        with pytest.raises(ChecksumError):
            B.verify_checksum()
        with pytest.raises(FormatError):
            B.validate()


@pytest.mark.parametrize("info, opts", params("reference_rejects", per=by_options))
def test_reference_functions_raise_on_inconsistent_matrices(info, opts):
    """spmv, spmm and to_csr validate fully: any corruption (checksum carried or rebuilt)
    raises FormatError, never a NumPy error or a wrong result."""
    ref = info.reference_module()
    M = corruption_matrix(info, opts)
    x = np.ones(M.shape[1], M.dtype)
    bad = [(w, B) for w, B, _ in _corruptions(M)] + _index_corruptions(M)
    bad += [(f"{w} (fresh checksum)", dataclasses.replace(B, checksum=None)) for w, B, _ in _corruptions(M)]
    for what, B in bad:
        for call in (lambda: ref.spmv(B, x), lambda: ref.spmm(B, x[:, None].copy()), B.to_csr):
            with pytest.raises(FormatError):
                call()
                pytest.fail(f"{info.name}: accepted {what}")


def _field(exc) -> str:
    """The field a validate error names: 'CSRMatrix.indices: expected ...' -> 'indices'."""
    return str(exc).split(":", 1)[0].split(".", 1)[1]


@pytest.mark.parametrize("info, _", params("to_device_rejects", need="spmv"))
def test_to_device_rejects_inconsistent_matrices(info, _):
    """An index out of range or a column count shrunk below the last column never reaches a
    kernel: to_device raises on the host path and on the device path, and the device check
    kernel flags exactly the field the host check names. A corrupted matrix with its
    original checksum is refused too."""
    K = info.kernel_module()
    M = corruption_matrix(info, info.check_options({}), n_rows=4, n_cols=24, seed=5,
                          dtype=kernel_dtype(info))
    assert K.device_check(K._upload(M)) == []
    for what, B in _index_corruptions(M):
        for site in ("auto", "host", "device"):
            with pytest.raises(FormatError) as host:
                K.to_device(B, check=site)
                pytest.fail(f"{info.name}: to_device(check={site!r}) accepted {what}")
        with pytest.raises(FormatError):     # the checksum, if no structural check first
            K.to_device(dataclasses.replace(B, checksum=M.checksum))
        try:
            B.validate(checksum=False)
        except FormatError:
            continue                        # caught by the cheap checks: no launch
        assert K.device_check(K._upload(B)) == [_field(host.value)], what


@pytest.mark.filterwarnings("ignore::reference._common.LossyConversionWarning")  # lossy=True on purpose
@pytest.mark.parametrize("info, _", params("to_device_valid", need="spmv"))
def test_device_check_accepts_valid_matrices(info, _):
    """No false alarms: the edge cases (their first 4 rows: the simulator is slow) and two
    long rows (MACKO: whole 256-entry chunks inside a row take the check's unmasked path)."""
    K = info.kernel_module()
    grid = info.option_grid()
    long_rows = build_case(12, 2, 700, 0.6, np.float32, label="long rows")
    for i, case in enumerate(EDGES + [long_rows]):
        case = kernel_case(info, case)
        M = info.encode(case.A.tocsr()[:4], dtype=case.dtype, lossy=True, **grid[i % len(grid)])
        D = K.to_device(M, check="device")
        assert K.device_check(D) == [], case.label


@pytest.mark.parametrize("info, _", params("not_encoded"))
def test_raw_matrices_raise_how_to_encode(info, _):
    """A scipy matrix, a dense array or another format's matrix where this format's encoded
    matrix is expected: NotEncodedError naming the encoder, from the reference and from
    every kernel entry point."""
    A = sp.random(4, 6, density=0.5, random_state=2, dtype=np.float32, format="csr")
    other = next(f for f in formats.all_formats() if f.name != info.name).encode(A)
    x, X = np.ones(6, np.float32), np.ones((6, 2), np.float32)
    ref = info.reference_module()
    calls = [ref.spmv, lambda M, x: ref.spmm(M, X)]
    if info.kernels:
        K = info.kernel_module()
        calls += [lambda M, x: K.to_device(M), K.spmv] + ([lambda M, x: K.spmm(M, X)] if info.spmm else [])
    for raw in (A, A.toarray(), other):
        for call in calls:
            with pytest.raises(NotEncodedError, match=rf"Fix: encode it first: M = {info.reference}\.encode"):
                call(raw, x)


def _same_matrix(got, want):
    """Same class, shape, options, checksum and every array's dtype, shape and bytes."""
    assert type(got) is type(want) and got.shape == want.shape and got.options() == want.options()
    assert got.checksum == want.checksum
    assert [n for n, _ in got.arrays()] == [n for n, _ in want.arrays()]
    for (name, a), (_, b) in zip(got.arrays(), want.arrays()):
        assert a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes(), name


@pytest.mark.filterwarnings("ignore::reference._common.LossyConversionWarning")  # lossy=True on purpose
@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("info, opts", params("io_round_trip", per=by_options))
@given(case=sparse_inputs(max_rows=12, max_cols=60))
@with_edges
def test_io_round_trip(info, opts, case):
    M = info.encode(case.A, dtype=case.dtype, lossy=True, **opts)
    buf = _io.BytesIO()
    io.save(M, buf)
    buf.seek(0)
    L = io.load(buf, format=info.name)
    _same_matrix(L, M)
    assert_same_csr(L.to_csr(), M.to_csr())


@pytest.mark.parametrize("info, _", params("io_fuzz"))
def test_io_bit_flips_and_truncations(info, _):
    """A flip of one bit at every byte offset and a truncation at every offset of a small
    saved matrix: each load raises a typed error or returns the saved matrix exactly (a
    flip in a zip field nothing reads, e.g. a timestamp, is harmless)."""
    M = corruption_matrix(info, info.check_options({}), n_rows=3, n_cols=20)
    buf = _io.BytesIO()
    io.save(M, buf)
    data = buf.getvalue()
    harmless = 0
    for at in range(len(data)):
        flipped = bytearray(data)
        flipped[at] ^= 1 << (at % 8)
        try:
            L = io.load(_io.BytesIO(bytes(flipped)))
        except SpmvlabError:
            pass
        else:
            _same_matrix(L, M)
            harmless += 1
        with pytest.raises(SpmvlabError):
            io.load(_io.BytesIO(data[:at]))
            pytest.fail(f"loaded a file truncated to {at} of {len(data)} bytes")
    assert harmless < len(data) // 3          # most bytes matter (zip CRC, checksum, headers)


@pytest.mark.parametrize("info, _", params("io_fuzz"))
def test_io_load_refuses_indices_out_of_range(info, _):
    """A file written without validation whose matrix has an index out of range and a
    checksum that matches it (so only the structure can tell): load raises, naming the field."""
    M = corruption_matrix(info, info.check_options({}), n_rows=3, n_cols=20)
    for what, B in _index_corruptions(M):
        buf = _io.BytesIO()
        with mock.patch.object(type(B), "validate", lambda self, *a, **k: self):
            io.save(B, buf)
        with pytest.raises(FormatError):
            io.load(_io.BytesIO(buf.getvalue()))
            pytest.fail(f"{info.name}: io.load accepted {what}")


def by_speed(info):
    return [("", False)] + ([("-fast", True)] if info.encoder else [])


@pytest.mark.parametrize("info, fast", params("malformed_input", per=by_speed))
@settings(max_examples=max(4, settings().max_examples // 2))
@given(case=malformed_inputs())
@with_malformed_kinds
def test_malformed_input_raises_a_typed_error(info, fast, case):
    """scipy matrices with indices outside the shape or broken row pointers, ragged lists,
    huge shapes with few entries (``strategies.malformed_inputs``): the reference and the fast
    encoder raise the case's typed error naming the field before anything reads the arrays,
    and a valid wide matrix is encoded exactly or refused by the memory limit."""
    with mock.patch.dict(os.environ, {"SPMVLAB_MEMORY_LIMIT": "256M"}), \
            warnings.catch_warnings():
        warnings.simplefilter("ignore", SizeWarning)
        if case.error is not None:
            with pytest.raises(case.error, match="expected .* received .* Fix: "):
                info.encode(case.A, fast=fast)
            return
        try:
            M = info.encode(case.A, fast=fast)
        except case.may_refuse as exc:
            assert "Fix: " in str(exc)
            return
    assert_same_csr(M.to_csr(), canonical_csr(case.A))


def _golden_files(info):
    return [(f"-{os.path.splitext(os.path.basename(p))[0]}", p)
            for p in sorted(glob.glob(os.path.join(GOLDEN, info.name, "*.json")))]


def _unhex(d):
    return np.frombuffer(bytes.fromhex(d["hex"]), dtype=np.dtype(d["dtype"])).reshape(d["shape"])


def golden_input(doc) -> sp.coo_matrix:
    inp = doc["input"]
    return sp.coo_matrix((_unhex(inp["values"]), (np.array(inp["rows"], np.int64),
                                                  np.array(inp["cols"], np.int64))),
                         shape=tuple(inp["shape"]))


@pytest.mark.parametrize("info, path", params("golden", per=_golden_files))
def test_golden_encoding(info, path):
    """A pinned encoding (``tests/golden/make_golden.py`` wrote it once; a change of any byte
    fails here)."""
    with open(path) as f:
        doc = json.load(f)
    assert doc["format"] == info.name
    for fast in ((False, True) if info.encoder else (False,)):
        M = info.encode(golden_input(doc), dtype=doc["dtype"], fast=fast, **doc["options"])
        # an option added after the file was written sits at its default there
        assert M.options() == info.check_options(doc["options"]), M.options()
        assert list(M.shape) == doc["input"]["shape"]
        arrays = dict(M.arrays())
        assert sorted(arrays) == sorted(doc["arrays"])
        for name, want in doc["arrays"].items():
            assert arrays[name].dtype == np.dtype(want["dtype"]), name
            assert arrays[name].tobytes().hex() == want["hex"], f"{name} (fast={fast})"


def test_every_format_has_golden_files():
    for info in formats.all_formats():
        if "golden" not in info.opt_out:
            assert _golden_files(info), f"no tests/golden/{info.name}/*.json: run tests/golden/make_golden.py"


@pytest.mark.parametrize("info, _", params("bad_input"))
@pytest.mark.parametrize("bad, exc, words", [
    (np.zeros((2, 2, 2)), ShapeError, "2-D"),
    (np.zeros(4), ShapeError, "2-D"),
    (np.zeros((2, 2), np.complex64), DTypeError, "complex"),
    (np.zeros((2, 2), np.int32), DTypeError, "dtype=np.float32"),
    (np.array([["a"]]), DTypeError, "dtype"),
])
def test_bad_matrix_input_raises_typed_error(info, _, bad, exc, words):
    with pytest.raises(exc, match=words):
        info.encode(bad)
    if info.encoder:
        with pytest.raises(exc, match=words):
            info.encode(bad, fast=True)


def _lossy_matrix(dtype):
    """(dense float matrix in ``dtype``, what float16 makes of it). Lossy in float16: 1e-9 at
    (1, 2) (to zero, the first in row-major order), 7e4 at (1, 5) and -1e5 at (2, 1)
    (overflow), 1e-6 at (2, 0) (to a subnormal). Not lossy: 1.0001 (rounding only), 2**-24
    (an exact subnormal), NaN and +-inf."""
    A = np.zeros((4, 9), dtype=dtype)
    A[0, 0] = 1.0
    A[1, [2, 5]] = [1e-9, 7e4]
    A[2, [0, 1, 3, 4, 6, 7, 8]] = [1e-6, -1e5, np.nan, np.inf, 2.0**-24, 1.0001, -np.inf]
    want = np.zeros(A.shape, np.float32)
    want[0, 0] = 1.0
    want[1, 5] = np.inf                                   # (1, 2) is dropped
    want[2, [0, 1, 3, 4, 6, 7, 8]] = np.array(
        [1e-6, -np.inf, np.nan, np.inf, 2.0**-24, 1.0001, -np.inf]).astype(np.float16)
    return A, want


def by_input_and_speed(info):
    kinds = ("dense", "coo", "csr")
    return [(f"-{kind}" + ("-fast" if fast else ""), (kind, fast)) for kind in kinds
            for fast in ((False, True) if info.encoder else (False,))]


def _as(kind, A):
    return {"dense": A, "coo": sp.coo_matrix(A), "csr": sp.csr_matrix(A)}[kind]


@pytest.mark.parametrize("info, how", params("lossy", per=by_input_and_speed))
@pytest.mark.parametrize("source", [np.float32, np.float64])
def test_lossy_conversion_raises_with_counts_and_first_entry(info, how, source):
    kind, fast = how
    A, _ = _lossy_matrix(source)
    with pytest.raises(LossyConversionError) as err:
        info.encode(_as(kind, A), dtype=np.float16, fast=fast)
    loss = err.value.loss
    assert (loss.overflow, loss.to_zero, loss.to_subnormal) == (2, 1, 1)
    assert loss.first[:2] == (1, 2) and loss.first[2] == source(1e-9) and loss.first[3] == 0
    msg = str(err.value)
    for words in ("A: expected", "float16", "2 entries overflowing to +-inf", "1 underflowing to zero",
                  "1 underflowing to a subnormal", f"row 1, column 2, {source(1e-9)!s} -> 0.0",
                  "Fix: pass lossy=True", "scale the matrix"):
        assert words in msg, words
    assert isinstance(err.value, ValueError)


@pytest.mark.parametrize("info, how", params("lossy", per=by_input_and_speed))
def test_lossy_true_warns_once_and_stores_what_float16_makes_of_it(info, how):
    kind, fast = how
    A, want = _lossy_matrix(np.float32)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        M = info.encode(_as(kind, A), dtype=np.float16, fast=fast, lossy=True)
    assert [w.category for w in seen] == [LossyConversionWarning]
    assert issubclass(LossyConversionWarning, UserWarning)
    text = str(seen[0].message)
    assert "2 entries overflowing" in text and "1 underflowing to zero" in text
    assert "1 underflowing to a subnormal" in text and "row 1, column 2" in text
    M.validate(expensive=True)
    assert_same_csr(M.to_csr(), sp.csr_matrix(want))     # the 1e-9 is gone: nnz 10 -> 9
    assert M.to_csr().nnz == np.count_nonzero(A) - 1 == 9


@pytest.mark.parametrize("info, how", params("lossy", per=by_input_and_speed))
def test_what_is_not_lossy_encodes_without_warning(info, how):
    """Rounding, NaN/+-inf, exact subnormals, and any dtype that holds the values."""
    kind, fast = how
    A, _ = _lossy_matrix(np.float64)
    fits = np.where(np.isin(np.abs(A), [1e-9, 7e4, 1e5, 1e-6]), 0, A)
    tiny = np.array([[1e-40, 0, -1e-300]])               # fine in float64 only
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for B, dt in ((fits, np.float16), (A, np.float32), (A, np.float64),
                      (A.astype(np.float32), np.float32), (tiny, np.float64)):
            info.encode(_as(kind, B), dtype=dt, fast=fast)
        with pytest.raises(LossyConversionError, match="1 underflowing to a subnormal"):
            info.encode(_as(kind, tiny), dtype=np.float32, fast=fast)


@pytest.mark.parametrize("info, how", params("lossy", per=by_input_and_speed))
def test_lossy_is_judged_after_duplicates_are_summed(info, how):
    """Two 4e4 entries at one position sum to 8e4 (overflows float16), 7e4 and -6e4 to 1e4
    (fits); integers overflow too."""
    kind, fast = how
    dup = sp.coo_matrix(([4e4, 4e4, 7e4, -6e4, 3.0], ([0, 0, 1, 1, 1], [3, 3, 0, 0, 1])),
                        shape=(2, 5), dtype=np.float32)
    A = dup if kind == "coo" else _as(kind, dup.toarray())
    with pytest.raises(LossyConversionError, match=r"row 0, column 3, 80000.0 -> inf") as err:
        info.encode(A, dtype=np.float16, fast=fast)
    assert err.value.loss.counts == {"overflow": 1, "underflow to zero": 0,
                                     "underflow to subnormal": 0}
    ints = np.array([[0, 70000], [-3, 0]], dtype=np.int64)
    with pytest.raises(LossyConversionError,               # dense integers go through float64
                       match=r"1 entry overflowing.*row 0, column 1, 70000(\.0)? -> inf"):
        info.encode(_as(kind, ints), dtype=np.float16, fast=fast)


# ---------------------------------------------------------------------------------------------
# reference products
# ---------------------------------------------------------------------------------------------

@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@ACCEPT_LOSS
@pytest.mark.parametrize("info, opts", params("reference_products", per=by_options))
@given(case=st.one_of(sparse_inputs(max_rows=24, max_cols=120), llm_like(), clustered_inputs()))
@with_edges
def test_reference_products_equal_csr_reference(info, opts, case):
    """Within the tolerance of the exact product, and bit for bit the CSR reference's."""
    ref = info.reference_module()
    M = info.encode(case.A, dtype=case.dtype, lossy=True, **opts)
    C = M.to_csr()
    y, Y = ref.spmv(M, case.x), ref.spmm(M, case.X)
    assert_close(y, C, case.x, case.dtype, "reference spmv")
    assert_close(Y, C, case.X, case.dtype, "reference spmm")
    R = RC.encode(case.A, dtype=case.dtype, lossy=True)
    np.testing.assert_array_equal(y, RC.spmv(R, case.x))
    np.testing.assert_array_equal(Y, RC.spmm(R, case.X))


@pytest.mark.parametrize("info, _", params("operand_errors"))
def test_bad_operands_raise_and_change_nothing(info, _):
    modules = [info.reference_module()] + ([info.kernel_module()] if info.kernels else [])
    dt = kernel_dtype(info)
    M = info.encode(sp.random(5, 6, density=0.5, random_state=1, dtype=np.float32), dtype=dt)
    x = np.ones(6, dt)
    for mod in modules:
        with pytest.raises(ShapeError, match=r"x.shape\[0\]: expected 6"):
            mod.spmv(M, np.ones(5, dt))
        with pytest.raises(DTypeError, match=f"x.dtype: expected {dt.name}"):
            mod.spmv(M, np.ones(6, np.float64))
        with pytest.raises(LayoutError, match="C-contiguous"):
            mod.spmv(M, np.ones(12, dt)[::2])
        with pytest.raises(ShapeError, match="2-D"):
            mod.spmm(M, x)
    if info.kernels:
        K = info.kernel_module()
        out = garbage_like((5,), dt)
        before = out.copy()
        with pytest.raises(ShapeError, match="out.shape"):
            K.spmv(M, x, out=np.zeros(4, dt))
        with pytest.raises(DTypeError):
            K.spmv(M, x.astype(np.float16 if dt != np.float16 else np.float32), out=out)
        for name, shape, call in (("x", (6,), K.spmv), ("X", (6, 3), K.spmm)):
            with pytest.raises(LayoutError, match=f"{name}'s device address: expected a multiple of 16"):
                call(M, _MisalignedDeviceArray(shape, dt), out=out if name == "x" else None)
        assert np.array_equal(out, before)


class _MisalignedDeviceArray:
    """What the kernels' boundary sees of a CUDA array (shape, dtype, layout, address) whose
    data starts 2 bytes past a 16-byte boundary, as a view of a larger array can."""

    def __init__(self, shape, dtype):
        self.shape, self.dtype, self.ndim = tuple(shape), np.dtype(dtype), len(shape)
        self.flags = {"C_CONTIGUOUS": True}
        self.__cuda_array_interface__ = dict(shape=self.shape, typestr=self.dtype.str, strides=None,
                                             data=(0x7F0000000002, False), version=3)


# ---------------------------------------------------------------------------------------------
# kernels (simulator on CPU, real on a GPU)
# ---------------------------------------------------------------------------------------------

@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@ACCEPT_LOSS
def pick_config(info, pick: int):
    """The kernel config of example ``pick``: the format's test configs in turn (the
    simulator is slow, so the examples are spread over the configs rather than each
    config running them all)."""
    return info.make_config(**info.test_configs[pick % len(info.test_configs)])


@pytest.mark.parametrize("info, _", params("kernel_parity", need="spmv"))
@settings(max_examples=max(6, settings().max_examples // 2))   # the simulator is slow
@given(case=sparse_inputs(max_rows=10, max_cols=80), pick=st.integers(0, 2**16))
@example(case=build_case(11, 3, 50, 0.5, np.float16, k=24, label="k=24: several column tiles"),
         pick=1)
@example(case=build_case(12, 2, 40, 0.5, np.float32, k=20, label="k=20: several column tiles"),
         pick=0)
@example(case=power_law_case(seed=11, n_rows=6, n_cols=900, dtype=np.float32, alpha=1.2), pick=2)
@with_edges(cycle="pick")
def test_kernel_parity(info, _, case, pick):
    """``pick`` chooses the kernel config (:func:`pick_config`) and the encode options
    (every combination is drawn over the examples); ``lossy=True`` since a float64 case goes
    to float32 for a float16/float32-only kernel."""
    case = kernel_case(info, case)
    grid = info.option_grid()
    M = info.encode(case.A, dtype=case.dtype, lossy=True,
                    **grid[(pick // len(info.test_configs)) % len(grid)])
    check_parity(info.reference_module(), info.kernel_module(), M, case.x,
                 case.X if "spmm" in info.capabilities else None, config=pick_config(info, pick))


def by_gallery(info):
    from spmvlab import datasets
    return [(f"-{name}", (i, name)) for i, name in enumerate(datasets.gallery_names())]


@pytest.mark.parametrize("info, which", params("kernel_gallery", need="spmv", per=by_gallery))
def test_kernel_parity_on_the_gallery(info, which):
    """The structured matrices the experiments use too (banded, stencil, block, power law,
    uniform): the first 12 rows of the small size, float16 and float32 and the encode
    options taken in turn (the simulator is slow)."""
    from spmvlab import datasets
    i, name = which
    dtype = (np.float16, np.float32)[i % 2]
    if not info.supports_dtype(dtype):
        dtype = kernel_dtype(info)
    A = datasets.gallery(name, "small", seed=i, dtype=dtype)[:12]
    rng = np.random.default_rng(i)
    x = rng.standard_normal(A.shape[1]).astype(dtype)
    X = rng.standard_normal((A.shape[1], 2)).astype(dtype)
    grid = info.option_grid()
    M = info.encode(A, dtype=dtype, **grid[i % len(grid)]).validate(expensive=True)
    assert_same_csr(M.to_csr(), canonical_csr(A, dtype))
    check_parity(info.reference_module(), info.kernel_module(), M, x,
                 X if "spmm" in info.capabilities else None,
                 config=info.make_config(**info.test_configs[i % len(info.test_configs)]))


@pytest.mark.parametrize("info, _", params("kernel_llm_like", need="spmv"))
@given(case=llm_like(max_rows=8, max_cols=96, dtypes=(np.float16, np.float32)),
       pick=st.integers(0, 2**16))
def test_kernel_parity_llm_like(info, _, case, pick):
    case = kernel_case(info, case)
    check_parity(info.reference_module(), info.kernel_module(),
                 info.encode(case.A, dtype=case.dtype), case.x, config=pick_config(info, pick))


@pytest.mark.parametrize("info, cfg", params("nan_inf", need="spmv", per=by_config))
def test_nan_inf_propagate_like_scipy(info, cfg):
    """Inf and NaN in the matrix and in x, and a nonzero whose neighbours' columns hold an
    Inf of x (the last row: a format that multiplies stored zeros must not make 0 * Inf);
    the SpMM also into Y's transpose (``out_t``)."""
    dt = kernel_dtype(info)
    A = sp.csr_matrix(np.array([[np.inf, 1, 0, 0], [np.nan, 0, 2, 0], [1, -np.inf, 0, 0],
                                [0, 0, 3, 0], [0, 5, 0, 0]], dtype=np.float32))
    M = info.encode(A, dtype=dt)
    x = np.array([1, 2, np.inf, 1], np.float32)
    X = np.stack([x, x[::-1]], axis=1)
    K, ref, config = info.kernel_module(), info.reference_module(), info.make_config(**cfg)
    for y in (ref.spmv(M, x.astype(dt)), K.spmv(M, x.astype(dt), config=config)):
        np.testing.assert_array_equal(y, (A @ x).astype(dt))       # small integers: exact
    if "spmm" in info.capabilities:
        for Y in (ref.spmm(M, X.astype(dt)), K.spmm(M, X.astype(dt), config=config)):
            np.testing.assert_array_equal(Y, (A @ X).astype(dt))
        # the careful paths write the transpose too
        np.testing.assert_array_equal(K.spmm(M, X.astype(dt), config=config, out_t=True),
                                      (A @ X).T.astype(dt))


@pytest.mark.parametrize("info, _", params("device_operands", need="spmv"))
def test_device_arrays_in_device_out(info, _):
    from spmvlab._cuda import cuda
    K = info.kernel_module()
    cfg = info.make_config(**info.test_configs[0])
    dt = kernel_dtype(info)
    case = build_case(seed=1, n_rows=9, n_cols=13, density=0.4, dtype=dt)
    M = info.encode(case.A, dtype=dt)
    D = K.to_device(M)
    y_dev = K.spmv(D, cuda.to_device(case.x), config=cfg)
    assert not isinstance(y_dev, np.ndarray)
    assert_close(y_dev.copy_to_host(), M.to_csr(), case.x, dt, "device spmv")
    if "spmm" in info.capabilities:
        out = cuda.to_device(garbage_like((9, 3), dt))
        assert K.spmm(D, cuda.to_device(case.X), out=out, config=cfg) is out
        assert_close(out.copy_to_host(), M.to_csr(), case.X, dt, "device spmm")


@pytest.mark.parametrize("info, cfg", params("spmm_out_t", need="spmm", per=by_config))
def test_spmm_out_t_writes_the_transpose(info, cfg):
    """``spmm(..., out_t=True)`` writes Y's transpose, (k, rows), into a garbage-filled
    ``out`` (and returns it), or returns a new one: k = 1 (the SpMV), 5 (one value per
    gather) and 16 (several column tiles, or one shared tile filled 16 bytes at a time);
    the value types taken in turn over the configs (the simulator is slow)."""
    K = info.kernel_module()
    config = info.make_config(**cfg)
    i = list(info.test_configs).index(cfg)
    dt = np.dtype(info.kernel_dtypes[i % len(info.kernel_dtypes)])
    case = build_case(seed=30 + i, n_rows=7, n_cols=60, density=0.4, dtype=dt, k=16)
    M = info.encode(case.A, dtype=dt)
    csr = M.to_csr()
    for k in (1, 5, 16):
        X = np.ascontiguousarray(case.X[:, :k])
        out = garbage_like((k, 7), dt)
        assert K.spmm(M, X, out=out, config=config, out_t=True) is out
        assert_close(out.T, csr, X, dt, f"spmm out_t, k={k}")
    Yt = K.spmm(M, X, config=config, out_t=True)
    assert Yt.shape == (16, 7)
    assert_close(Yt.T, csr, X, dt, "spmm out_t, no out")
    with pytest.raises(ShapeError):
        K.spmm(M, X, out=garbage_like((7, 16), dt), config=config, out_t=True)


# ---------------------------------------------------------------------------------------------
# the same formats through the timed-method interface (checks only; timing needs a GPU)
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("info, _", params("method", need="spmv"))
def test_method_check_passes_and_catches_a_broken_kernel(info, _):
    dt = kernel_dtype(info)
    A = build_case(seed=2, n_rows=7, n_cols=40, density=0.3, dtype=dt).A
    for k in (None, 3) if "spmm" in info.capabilities else (None,):
        p = methods.Problem.make(A, dt, k=k)
        spec = methods.format_method(info.name, config=info.test_configs[0])
        m = methods.build(spec, p)
        assert m.check().passed and m.nbytes == m.format_bytes + p.operand_bytes
        y = m.result()
        y.reshape(-1)[0] = np.nan                    # NaN where the exact product is finite
        from spmvlab.check import compare
        assert not compare(y, p.reference(), p.dtype).passed


def test_opt_outs_and_missing_capabilities_skip(monkeypatch):
    toy = formats.FormatInfo(name="toy", reference="reference.coo", opt_out={"round_trip": "why"})
    monkeypatch.setattr(formats, "all_formats", lambda: [toy])
    (p,) = params("round_trip")
    assert [m.kwargs["reason"] for m in p.marks] == ["toy opts out: why"]
    (p,) = params("kernel_parity", need="spmv")
    assert [m.kwargs["reason"] for m in p.marks] == ["toy has no spmv"]
    (p,) = params("golden")
    assert not p.marks and p.id == "toy"
