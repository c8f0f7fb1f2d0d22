"""EC-CSR kernel specifics (simulator on CPU, real on a GPU): a row covered by blocks of
several granularities (exact and row-sliced paths), float16 sums accumulated in float32,
SpMM with N not a multiple of the tile, Inf in X at padding columns, narrowed loads after a
misaligned set, config/dtype guards. The shared suite (test_formats.py) runs the parity,
corruption and device-check cases."""
import dataclasses

import numpy as np
import pytest
import scipy.sparse as sp

import reference.ec_csr as R
from reference._common import DTypeError, OptionError
from spmvlab.kernels import ec_csr as K
from parity import assert_close, garbage_like


def _layered(n_cols=160, seed=0):
    """Rows 0-7 share columns 0..127 (an 8-grained block), rows 0 and 1 also share 128..159
    of a further run (a 2-grained block), row 0 has columns 130..136 alone... so row 0 lies in
    blocks of granularity 8, 2 and 1; rows 8-9 are a 1-grained long part and a short part;
    row 10 is empty. Built for warp_size 2, vector_size 4 (unit 8)."""
    rng = np.random.default_rng(seed)
    A = np.zeros((11, n_cols), np.float32)
    A[:8, :128] = rng.standard_normal((8, 128))
    A[:2, 128:144] = rng.standard_normal((2, 16))
    A[0, 144:153] = rng.standard_normal(9)
    A[8, ::3] = 1.0 + rng.random(A[8, ::3].size)
    A[9, [5, 70, 150]] = [2.0, -3.0, 0.5]
    return A


@pytest.mark.parametrize("dtype, opts, cfg", [
    (np.float32, dict(warp_size=2, vector_size=4), K.ECCSRConfig(threads_per_block=32)),
    (np.float16, dict(warp_size=2, vector_size=4, delta_bits=4),
     K.ECCSRConfig(threads_per_block=32, rows_per_pass=2, spmm_tile=4, spmm_rows_per_pass=2)),
    (np.float32, dict(warp_size=2, vector_size=2, delta_bits=4),
     K.ECCSRConfig(threads_per_block=64, rows_per_pass=1, spmm_tile=2, spmm_rows_per_pass=1)),
    (np.float32, dict(warp_size=2, vector_size=4), K.ECCSRConfig(threads_per_block=32,
                                                                 x_in_shared=0)),
])
def test_row_in_blocks_of_several_granularities(dtype, opts, cfg):
    """Row 0's sum comes from an 8-, a 2- and a 1-grained block (atomics into one row),
    with rows_per_pass 8 (exact paths), 2 and 1 (the 8-row block walked in slices); the
    empty row is 0 although the output starts as garbage; SpMM with a partial last tile."""
    A = _layered()
    M = R.encode(A, dtype=dtype, **opts)
    grans = {s["granularity"] for s in M.sets()}
    assert {8, 2, 1} <= grans, M.sets()
    rows = M.row_indices.tolist()
    covering = {s["granularity"] for s in M.sets()
                if 0 in rows[s["first_row"]:s["first_row"] + s["granularity"] * s["n_blocks"]]}
    assert {8, 2, 1} <= covering
    rng = np.random.default_rng(1)
    x = rng.standard_normal(A.shape[1]).astype(dtype)
    X = rng.standard_normal((A.shape[1], 6)).astype(dtype)
    csr = M.to_csr()
    y = K.spmv(M, x, out=garbage_like((11,), dtype), config=cfg)
    assert_close(y, csr, x, dtype, "kernel spmv")
    assert_close(R.spmv(M, x), csr, x, dtype, "reference spmv")
    assert y[10] == 0
    Y = K.spmm(M, X, out=garbage_like((11, 6), dtype), config=cfg)
    assert_close(Y, csr, X, dtype, "kernel spmm")
    assert not Y[10].any()


@pytest.mark.parametrize("warp_size", [32, 2])
def test_float16_sums_are_accumulated_in_float32(warp_size):
    """4096 and 256 ones in one row: a float16 running sum stalls at 4096 (its spacing there
    is 4), a float32 one reaches 4352, which float16 holds exactly."""
    A = np.zeros((2, 300), np.float32)
    A[0, 0] = 4096.0
    A[0, 1:257] = 1.0
    A[1, 3] = 1.0
    M = R.encode(A, dtype=np.float16, warp_size=warp_size)
    x = np.ones(300, np.float16)
    cfg = K.ECCSRConfig(threads_per_block=32)
    assert K.spmv(M, x, config=cfg).tolist() == [4352.0, 1.0]
    assert K.spmm(M, np.ones((300, 2), np.float16), config=cfg).tolist() == [[4352.0] * 2, [1.0] * 2]


@pytest.mark.parametrize("dtype, k, tile", [(np.float32, 12, 8), (np.float16, 24, 16),
                                            (np.float16, 5, 4), (np.float32, 64, 32)])
def test_spmm_with_n_not_a_multiple_of_the_tile(dtype, k, tile):
    """Several column tiles, the last partial: 16-byte gathers of X (N a multiple of 8
    float16 / 4 float32 values, the last group clamped) and scalar ones (N = 5); N = 64."""
    rng = np.random.default_rng(k)
    A = sp.random(6, 90, density=0.3, random_state=k, format="csr", dtype=np.float64)
    M = R.encode(A, dtype=dtype, warp_size=2, vector_size=2)
    X = rng.standard_normal((90, k)).astype(dtype)
    cfg = K.ECCSRConfig(threads_per_block=32, spmm_tile=tile)
    Y = K.spmm(M, X, out=garbage_like((6, k), dtype), config=cfg)
    assert_close(Y, M.to_csr(), X, dtype, "kernel spmm")


def test_temporaries_come_from_the_callers_allocator():
    """Inside ``launching(stream, alloc)`` the float16 SpMM's float32 accumulator, grown for
    its first N (and an output the caller did not give) come from ``alloc``, as spmvlab.torch
    needs for CUDA-graph capture; the result is the same."""
    from spmvlab._cuda import cuda
    from spmvlab.kernels._common import launch_stream, launching
    rng = np.random.default_rng(5)
    A = sp.random(6, 90, density=0.3, random_state=5, format="csr", dtype=np.float64)
    M = R.encode(A, dtype=np.float16, warp_size=2, vector_size=2)
    X = rng.standard_normal((90, 12)).astype(np.float16)
    cfg = K.ECCSRConfig(threads_per_block=32, spmm_tile=8)
    asked = []

    def alloc(shape, dtype):
        asked.append((shape, np.dtype(dtype)))
        return cuda.device_array(shape, dtype=dtype)
    stream = cuda.stream()
    with launching(stream, alloc):
        assert launch_stream() is stream
        Y = K.spmm(M, cuda.to_device(X), config=cfg).copy_to_host()
    assert launch_stream() == 0
    assert asked == [((6, 12), np.dtype(np.float16)), ((6 * 12,), np.dtype(np.float32))]
    assert_close(Y, M.to_csr(), X, np.float16, "kernel spmm on the caller's stream")


def test_float16_accumulator_is_kept_zero_between_products(monkeypatch):
    """The float16 products share one float32 accumulator kept with the device matrix: an
    SpMM grows it to rows x N the first time an N needs it (here from an allocator whose
    arrays start as garbage, so the growth must zero it), every product leaves it all zeros,
    and SpMVs and SpMMs of growing and shrinking N in a row on one device matrix, each into
    an output full of garbage, all give the product."""
    from spmvlab._cuda import cuda
    monkeypatch.setattr(K, "scratch", lambda shape, dtype: cuda.to_device(
        np.full(shape, 7.0, np.dtype(dtype))))
    rng = np.random.default_rng(8)
    A = np.where(rng.random((37, 50)) < 0.3, rng.standard_normal((37, 50)), 0)
    M = R.encode(A.astype(np.float16), warp_size=2, vector_size=4)
    D = K.to_device(M)
    cfg = K.ECCSRConfig(threads_per_block=32, spmm_tile=4)
    sizes = []
    for k in (3, 1, 9, 2, 9, 16):
        X = rng.standard_normal((50, k)).astype(np.float16)
        if k == 1:
            y = K.spmv(D, X[:, 0], out=garbage_like((37,), np.float16), config=cfg)
            assert_close(y, M.to_csr(), X[:, 0], np.float16, "spmv after spmm")
        else:
            Y = K.spmm(D, X, out=garbage_like((37, k), np.float16), config=cfg)
            assert_close(Y, M.to_csr(), X, np.float16, f"spmm, N = {k}")
        buf = D.scratch.buf.copy_to_host()
        assert not buf.any(), k
        sizes.append(buf.size)
    assert sizes == [37 * 3, 37 * 3, 37 * 9, 37 * 9, 37 * 9, 37 * 16]


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_kernels_built_for_dependent_launches_give_the_product(monkeypatch, dtype):
    """On an sm_90 GPU the kernel after a zero pass or before a finish pass is launched with
    ``after`` (a programmatic dependent launch): float32 zero pass -> main kernel (after,
    built with the wait), float16 main kernel (built without it) -> finish (after).
    Forced here (the simulator runs the calls as no-ops and ``after`` as a plain launch):
    SpMV with x staged and from global memory, SpMM, into garbage outputs, give the
    product, and the launches go that way."""
    monkeypatch.setattr(K, "pdl_capable", lambda: True)
    after, mains = [], []
    real = K.launch_smem

    def launch(kernel, grid, threads, nbytes, args, later=False):
        if later:
            after.append(kernel.py_func.__name__)
        if kernel.py_func.__name__ != "ec_csr_finish":
            mains.append((kernel, later))
        return real(kernel, grid, threads, nbytes, args, later)

    monkeypatch.setattr(K, "launch_smem", launch)
    rng = np.random.default_rng(9)
    A = np.where(rng.random((70, 48)) < 0.3, rng.standard_normal((70, 48)), 0)
    M = R.encode(A.astype(dtype), warp_size=2, vector_size=4)
    D = K.to_device(M)
    f16 = dtype == np.float16
    for xs in (0, 5):
        cfg = K.ECCSRConfig(threads_per_block=32, x_in_shared=xs, spmm_tile=4)
        x = rng.standard_normal(48).astype(dtype)
        after.clear()
        y = K.spmv(D, x, out=garbage_like((70,), dtype), config=cfg)
        assert_close(y, M.to_csr(), x, dtype, f"pdl spmv, x_in_shared {xs}")
        assert after == ["ec_csr_finish" if f16 else "ec_csr_spmv_xs" if xs else "ec_csr_spmv"]
        staged = mains[-1][0].py_func.__name__ == "ec_csr_spmv_xs"
        want = K._spmv_kernel_for(D, cfg if staged else dataclasses.replace(cfg, x_in_shared=0),
                                  not f16)
        assert mains[-1] == (want, not f16)
    X = rng.standard_normal((48, 6)).astype(dtype)
    after.clear()
    Y = K.spmm(D, X, out=garbage_like((70, 6), dtype), config=cfg)
    assert_close(Y, M.to_csr(), X, dtype, "pdl spmm")
    assert after == ["ec_csr_finish" if f16 else "ec_csr_spmm"]
    ct = K.tile_for(6, cfg.spmm_tile)
    assert mains[-1] == (K._spmm_kernel_for(D, cfg, 6, ct, K.group_for(D.dtype, 6, ct), not f16),
                         not f16)


def test_inf_in_x_at_padding_columns_is_skipped():
    """Alignment zeros repeat a block's last column, gap zeros sit between columns: where X
    holds Inf there, the fast path's 0 * Inf = NaN is discarded and the careful path gives
    CSR's result (SpMV and SpMM, float32 and float16; the SpMM also into Y's transpose)."""
    A = np.zeros((3, 40), np.float32)
    A[0, [1, 2, 39]] = [1.0, 2.0, 3.0]
    A[1, 5] = 4.0
    A[2, [0, 20]] = [1.0, 1.0]
    for dtype in (np.float32, np.float16):
        M = R.encode(A, dtype=dtype, delta_bits=4, warp_size=2, vector_size=2)
        assert M.n_padding > 0
        x = np.ones(40, dtype)
        x[[5, 10, 39]] = np.inf          # column 5 is row 1's last; gap zeros near 10 in row 2
        X = np.stack([x, np.ones(40, dtype)], axis=1)
        want = (sp.csr_matrix(A) @ x.astype(np.float64)).astype(dtype)
        cfg = K.ECCSRConfig(threads_per_block=32, spmm_tile=2)
        np.testing.assert_array_equal(K.spmv(M, x, config=cfg), want)
        np.testing.assert_array_equal(K.spmm(M, X, config=cfg)[:, 0], want)
        np.testing.assert_array_equal(K.spmm(M, X, config=cfg, out_t=True)[0], want)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("opts, per_sm, threads, n_cols", [
    (dict(warp_size=2, vector_size=4), 1, 32, 160),
    (dict(warp_size=32, vector_size=4), 2, 64, 162),
    (dict(warp_size=2, vector_size=2, delta_bits=4), 1, 32, 161)])
def test_x_in_shared_memory_gives_the_product(dtype, opts, per_sm, threads, n_cols):
    """x_in_shared: x copied into shared memory (in loads of 8 or 4, 2 and 1 elements for 160,
    162 and 161 columns), a persistent grid smaller than the blocks (the simulator has 2 SMs,
    so 2 or 4 CUDA blocks step through every block of the matrix): rows in blocks of several
    granularities, the empty rows over garbage, Inf at a padding column redone on the careful
    path from the shared copy."""
    A = np.concatenate([_layered(n_cols, seed=s) for s in range(6)])
    A[(A != 0) & (np.abs(A) < 1e-3)] = 1e-3        # no float16 subnormals
    A[[1, 8, 30, 52], -1] = 2.0                     # x's last element counts
    A[5:7] = 0.0
    M = R.encode(A, dtype=dtype, **opts)
    cfg = K.ECCSRConfig(threads_per_block=threads, rows_per_pass=2, x_in_shared=per_sm)
    groups = threads // M.warp_size
    assert M.n_blocks > 2 * per_sm * groups, "the grid must step"
    x = np.random.default_rng(5).standard_normal(A.shape[1]).astype(dtype)
    y = K.spmv(M, x, out=garbage_like((A.shape[0],), dtype), config=cfg)
    assert_close(y, M.to_csr(), x, dtype, "x in shared memory")
    assert np.all(y[[5, 6, 21]] == 0)
    x = np.ones(A.shape[1], dtype)
    x[[5, 10, 150]] = np.inf
    with np.errstate(invalid="ignore"):
        want = (M.to_csr().astype(np.float64) @ x.astype(np.float64)).astype(dtype)
    np.testing.assert_array_equal(K.spmv(M, x, config=cfg), want)


def test_x_too_long_for_shared_memory_is_gathered_from_global(monkeypatch):
    """The default stages x in shared memory; an x longer than one block's shared memory
    takes the global-memory kernel (a device whose blocks hold 256 bytes: 100 float32
    columns do not fit, 60 do), with the same product."""
    from spmvlab.kernels import _spmm
    monkeypatch.setattr(_spmm, "_device_limits", lambda: (2, 256, 4096))
    launched = []
    real = K.launch_smem
    monkeypatch.setattr(K, "launch_smem",                  # launches that stage x: bytes > 0
                        lambda *a: (a[3] and launched.append(a[1])) or real(*a))
    rng = np.random.default_rng(3)
    for n_cols, shared in ((100, False), (60, True)):
        A = np.where(rng.random((24, n_cols)) < 0.4, rng.standard_normal((24, n_cols)), 0)
        M = R.encode(A.astype(np.float32), warp_size=2, vector_size=4)
        x = rng.standard_normal(n_cols).astype(np.float32)
        launched.clear()
        y = K.spmv(M, x, out=garbage_like((24,), np.float32),
                   config=K.ECCSRConfig(threads_per_block=32))
        assert_close(y, M.to_csr(), x, np.float32, f"{n_cols} columns")
        assert bool(launched) == shared, (n_cols, launched)


@pytest.mark.parametrize("seed, ws, vs, widths", [(7, 1, 4, (1, 2)), (16, 2, 8, (2, 4))])
def test_loads_narrow_after_a_misaligned_set(seed, ws, vs, widths):
    """A short part of a 2-grained block (a multiple of warp_size columns, not of
    warp_size x vector_size) moves the next long set off the vector alignment: codes are
    then loaded fewer at a time (1: nibble by nibble) and float16 values in narrower pieces.
    warp_size 1: groups of one lane, no reduction. (Random dense-ish patterns found by a
    search; 4-bit deltas.)"""
    rng = np.random.default_rng(seed)
    nr, nc = rng.integers(3, 7), rng.integers(20, 70)
    A = (rng.random((nr, nc)) < rng.uniform(0.3, 0.9)).astype(np.float32)
    A *= np.linspace(0.5, 2.0, A.size).reshape(A.shape)
    M = R.encode(A, dtype=np.float16, warp_size=ws, vector_size=vs, delta_bits=4)
    assert (2, 1) in [(s["granularity"], s["vector"]) for s in M.sets()]
    D = K.to_device(M)
    assert (D.code_width, D.load_width) == widths
    x = np.linspace(-2, 2, nc).astype(np.float16)
    X = np.stack([x, x[::-1]], axis=1)
    cfg = K.ECCSRConfig(threads_per_block=32, spmm_tile=2)
    assert_close(K.spmv(D, x, out=garbage_like((nr,), np.float16), config=cfg), M.to_csr(), x,
                 np.float16, "kernel spmv")
    assert_close(K.spmm(D, X, config=cfg), M.to_csr(), X, np.float16, "kernel spmm")


def test_unsupported_dtype_and_config():
    M = R.encode(np.eye(3), dtype=np.float64)
    with pytest.raises(DTypeError, match="float16, float32"):
        K.spmv(M, np.ones(3))
    with pytest.raises(OptionError, match="threads_per_block"):
        K.ECCSRConfig(threads_per_block=48)
    with pytest.raises(OptionError, match="rows_per_pass: expected one of"):
        K.ECCSRConfig(rows_per_pass=3)
    with pytest.raises(OptionError, match="spmm_rows_per_pass"):
        K.ECCSRConfig(spmm_rows_per_pass=16)
    with pytest.raises(OptionError, match="spmm_tile"):
        K.ECCSRConfig(spmm_tile=64)
    for bad in (-1, 33, True, 1.5):
        with pytest.raises(OptionError, match="x_in_shared: expected an integer in"):
            K.ECCSRConfig(x_in_shared=bad)
    for bad in (0, 33, True, 2.0):
        with pytest.raises(OptionError, match="x_in_shared_min: expected an integer in"):
            K.ECCSRConfig(x_in_shared_min=bad)


def test_index32_gives_the_int64_result():
    """Per-lane column counts from 1 to 13 iterations (warp_size 2, vector_size 4: unit 8),
    in long and short parts of 1-, 2- and 4-grained blocks and the 8-row block walked in
    slices: uint32 and int64 positions, x gathered from global memory (the base) or from
    its copy in shared memory (the default), give the same numbers bit for bit (each row gets at
    most a few atomics, each a sum of the same products in the same order) and match CSR;
    the same for SpMM (N = 11: a partial last tile)."""
    rng = np.random.default_rng(5)
    A = np.zeros((16, 240), np.float32)
    A[:8, :96] = rng.standard_normal((8, 96))          # an 8-grained block
    A[8:12, 16:80] = rng.standard_normal((4, 64))      # a 4-grained one
    A[12:14, 100:140] = rng.standard_normal((2, 40))   # 2-grained (+ short parts)
    for r, n in zip(range(14, 16), (9, 213)):          # 1-grained: short only, long + short
        A[r, rng.choice(240, n, replace=False)] = rng.standard_normal(n)
    A = np.where(A != 0, np.copysign(0.25 + np.abs(A), A), 0).astype(np.float32)  # no subnormals
    for dtype, bits in ((np.float16, 8), (np.float32, 4)):
        M = R.encode(A, dtype=dtype, warp_size=2, vector_size=4, delta_bits=bits, clip=0)
        assert {8, 4, 2, 1} <= {s["granularity"] for s in M.sets()}
        x = rng.standard_normal(240).astype(dtype)
        base = K.spmv(M, x, config=K.ECCSRConfig(threads_per_block=32, index32=False,
                                                 x_in_shared=0))
        assert_close(base, M.to_csr(), x, dtype, "int64 path, x from global memory")
        for rpp, i32 in ((8, True), (4, True), (4, False)):
            cfg = K.ECCSRConfig(threads_per_block=32, rows_per_pass=rpp, index32=i32)
            y = K.spmv(M, x, out=garbage_like((16,), dtype), config=cfg)
            np.testing.assert_array_equal(y, base, err_msg=f"{dtype} {cfg}")
        X = rng.standard_normal((240, 11)).astype(dtype)
        cfg64 = K.ECCSRConfig(threads_per_block=32, spmm_tile=4, index32=False)
        base = K.spmm(M, X, config=cfg64)
        assert_close(base, M.to_csr(), X, dtype, "int64 spmm")
        Y = K.spmm(M, X, out=garbage_like((16, 11), dtype),
                   config=dataclasses.replace(cfg64, index32=True))
        np.testing.assert_array_equal(Y, base, err_msg=f"{dtype} uint32 spmm")
        cfg = K.ECCSRConfig(threads_per_block=32, spmm_tile=4, spmm_rows_per_pass=2)
        Y = K.spmm(M, X, out=garbage_like((16, 11), dtype), config=cfg)
        assert_close(Y, M.to_csr(), X, dtype, f"uint32 spmm {cfg}")


def test_index32_falls_back_and_options_are_checked():
    M = R.encode(np.eye(4, dtype=np.float32) + 1)
    D = K.to_device(M)
    assert D.fits32
    D64 = K.DeviceECCSR(**{**{f.name: getattr(D, f.name) for f in
                              __import__("dataclasses").fields(D)}, "fits32": False})
    cfg = K.ECCSRConfig(x_in_shared=0)
    for pdl in (False, True):
        assert K._spmv_kernel_for(D, cfg, pdl) is K._spmv_kernel(*K._kernel_key(D), cfg, "uint32",
                                                                 1, pdl)
        assert K._spmv_kernel_for(D64, cfg, pdl) is K._spmv_kernel(*K._kernel_key(D), cfg,
                                                                   "int64", 1, pdl)
    np.testing.assert_allclose(K.spmv(D64, np.ones(4, np.float32), config=cfg), [5.0] * 4)
    # SpMM: also int64 where X or Y has 2**31 elements or more
    key = (*K._kernel_key(D), cfg, 8, 8)
    assert K._spmm_kernel_for(D, cfg, 8, 8, 8) is K._spmm_kernel(*key, "uint32", False, False)
    assert K._spmm_kernel_for(D64, cfg, 8, 8, 8, True) is K._spmm_kernel(*key, "int64", True, False)
    assert K._spmm_kernel_for(D, cfg, 2**29, 8, 8) is K._spmm_kernel(*key, "int64", False, False)
    assert K._spmm_kernel_for(D, cfg, 8, 8, 8, False, True) is K._spmm_kernel(*key, "uint32", False,
                                                                                True)
    np.testing.assert_allclose(K.spmm(D64, np.ones((4, 3), np.float32), config=cfg), [[5.0] * 3] * 4)
    with pytest.raises(OptionError, match="index32"):
        K.ECCSRConfig(index32=1)


def test_persistent_grid_is_no_larger_than_the_blocks_resident_at_once(monkeypatch):
    """The x-in-shared grid takes at most the blocks an SM holds at once (the driver's count,
    which includes registers) times the SMs, and at most ``x_in_shared`` per SM: a block
    beyond them would start only after others end, with a whole share of the work. The
    count is forced to 3 on a device of 2 SMs (on a GPU too: the launch then takes the
    smaller grid). Where fewer than ``x_in_shared_min`` fit, the L1 kernel runs (no
    shared-memory launch), with the same product."""
    from spmvlab.kernels import _spmm
    monkeypatch.setattr(_spmm, "_device_limits",
                        lambda: (2, _spmm.SMEM_BLOCK_BYTES, _spmm.SMEM_SM_BYTES))
    monkeypatch.setattr(_spmm, "resident_per_sm", lambda kernel, args, threads, nbytes: 3)
    grids = []
    real = K.launch_smem
    monkeypatch.setattr(K, "launch_smem",                  # launches that stage x: bytes > 0
                        lambda *a: (a[3] and grids.append(a[1])) or real(*a))
    rng = np.random.default_rng(4)
    A = np.where(rng.random((700, 40)) < 0.3, rng.standard_normal((700, 40)), 0)
    M = R.encode(A.astype(np.float32), warp_size=2, vector_size=4)
    x = rng.standard_normal(40).astype(np.float32)
    for cap, least, want in ((5, 3, [6]), (2, 3, [4]), (5, 4, [])):
        grids.clear()
        y = K.spmv(M, x, out=garbage_like((700,), np.float32),
                   config=K.ECCSRConfig(threads_per_block=32, x_in_shared=cap,
                                        x_in_shared_min=least))
        assert_close(y, M.to_csr(), x, np.float32, f"cap {cap}, at least {least}")
        assert grids == want, (cap, least, grids, K.to_device(M).n_blocks)
