"""spmvlab/generalsparse/codegen: every generated kernel against the reference
(reference.generalsparse.spmm) and the exact product, on small matrices in the simulator (or
the GPU).

The sample: for fixed-seed matrices with forced edge cases (an empty row, one row longer than
a warp, sizes not multiples of 32) and N = 1 and N = 3 (not a multiple of the thread
columns), the first strategy of ``strategies(A, N)`` for each combination of (thread, warp,
block reduction, atomic, row adjustment (sort or pad), slot adjustment (interleave or
vector width)) the generator supports (9x20: N = 3 only), in float32 and float16 alternately, outputs pre-filled with garbage. Then: the
source holds its folded constants; a compressible offset array is not loaded; the cache;
the typed errors for the parts not generated; padding never multiplies B.
"""
import dataclasses

import numpy as np
import pytest
import scipy.sparse as sp

import reference.generalsparse as GS
from parity import assert_close, garbage_like
from reference._common import DTypeError, OptionError, ShapeError, canonical_csr
from spmvlab.generalsparse import codegen
from spmvlab.generalsparse.codegen import UnsupportedStrategy

D = GS.Division


def _matrix(seed: int, m: int, k: int, density: float, long_row: int | None = None) -> sp.csr_matrix:
    rng = np.random.default_rng(seed)
    A = sp.random(m, k, density=density, format="lil", random_state=rng, dtype=np.float64)
    A[1, :] = 0                                   # an empty row
    if long_row is not None:
        A[long_row, :] = rng.standard_normal(k)   # a row longer than a warp
    return A.tocsr()


MATRICES = {
    "13x37": lambda: _matrix(7, 13, 37, 0.12, long_row=4),
    "9x20": lambda: _matrix(8, 9, 20, 0.3),
}


def _key(s: GS.Strategy, p: GS.Plan):
    r = p.reduction
    return (r.thread, r.warp, r.block, r.atomic, s.sort_rows or s.pad_empty_rows,
            s.interleave or s.vector_width > 1, s.cyclic)


def _sample():
    """(matrix name, N, strategy, dtype) cases: one per supported key and (matrix, N)."""
    cases = []
    for name, make in MATRICES.items():
        A = make()
        for N in ((1, 3) if name == "13x37" else (3,)):
            seen = set()
            for s in GS.strategies(A, N):
                p = GS.plan(A, s, dtype=np.float32)
                if p.reduction.block is not None and s.groups_per_block > 1:
                    continue                      # block reductions: test_block_reduction_* below
                k = _key(s, p)
                if k in seen:
                    continue
                seen.add(k)
                cases.append((name, N, s, (np.float32, np.float16)[len(cases) % 2]))
    # rows too short here for strategies() to list a cyclic one: one row per warp, given
    ss, ws = GS.Division("single", True), GS.Division("single", False)
    cases += [("13x37", N, GS.Strategy(block=ws, warp=ws, thread=ss, thread_cols=1, warp_cols=4, block_cols=4,
                                       interleave=True, vector_width=v, cyclic=True), dt)
              for N, v, dt in ((3, 2, np.float32), (1, 1, np.float16))]
    return cases


SAMPLE = _sample()


def _run(A, s, dtype, N, seed=3, B=None):
    p = GS.plan(A, s, dtype=dtype, lossy=True)
    if B is None:
        B = np.random.default_rng(seed).standard_normal((A.shape[1], N)).astype(dtype)
    out = garbage_like((A.shape[0], N), dtype)
    C = codegen.spmm(p, B, out=out)
    assert C is out, "spmm did not return its out"
    return p, B, C


def test_sample_covers_the_supported_reductions():
    keys = {(GS.plan(MATRICES[m](), s, dtype=np.float32).reduction.thread,
             GS.plan(MATRICES[m](), s, dtype=np.float32).reduction.warp) for m, _, s, _ in SAMPLE}
    for want in [(GS.THREAD_TOTAL, None), (GS.THREAD_BITMAP, GS.WARP_SEGMENT), (GS.THREAD_TOTAL, GS.WARP_TOTAL),
                 (GS.THREAD_TOTAL, GS.WARP_BITMAP), (None, GS.WARP_TOTAL)]:
        assert want in keys, want
    assert any(s.block.split for _, _, s, _ in SAMPLE) and any(not s.block.split for _, _, s, _ in SAMPLE)
    assert any(s.interleave for _, _, s, _ in SAMPLE) and any(s.pad_empty_rows for _, _, s, _ in SAMPLE)
    assert any(s.cyclic for _, _, s, _ in SAMPLE)
    assert 20 <= len(SAMPLE) <= 90, len(SAMPLE)


@pytest.mark.parametrize("name,N,s,dtype", SAMPLE,
                         ids=[f"{m}-N{n}-{np.dtype(d).name}-{s.label}" for m, n, s, d in SAMPLE])
def test_generated_kernel_equals_reference(name, N, s, dtype):
    A = MATRICES[name]()
    p, B, C = _run(A, s, dtype, N)
    csr = canonical_csr(A, dtype, lossy=True)
    assert_close(C, csr, B, dtype, f"generated kernel ({s.label})")
    R = GS.spmm(p, B)
    assert_close(R, csr, B, dtype, "reference")
    tol = 1e-5 if dtype == np.float32 else 2e-3
    np.testing.assert_allclose(C.astype(np.float64), R.astype(np.float64), rtol=tol, atol=tol)


def _out_t_sample():
    """SAMPLE's first case of each (atomic, sorted rows, dtype): the store sites the
    transposed kernel changes (plain stores, atomic adds, rows through row_order)."""
    seen, out = set(), []
    for name, N, s, dt in SAMPLE:
        p = GS.plan(MATRICES[name](), s, dtype=np.float32)
        k = (p.reduction.atomic, s.sort_rows, np.dtype(dt).name)
        if k not in seen:
            seen.add(k)
            out.append((name, N, s, dt))
    return out


@pytest.mark.parametrize("name,N,s,dtype", _out_t_sample(),
                         ids=[f"{m}-N{n}-{np.dtype(d).name}-{s.label}" for m, n, s, d in _out_t_sample()])
def test_out_t_writes_the_transpose(name, N, s, dtype):
    """``spmm(out_t=True)`` (what SparseLinear runs): the kernel writes C's transpose into a
    garbage-filled (N, M) array, the product the plain kernel writes; a (M, N) out is refused."""
    A = MATRICES[name]()
    p, B, C = _run(A, s, dtype, N)
    Ct = garbage_like((N, A.shape[0]), dtype)
    assert codegen.spmm(p, B, out=Ct, out_t=True) is Ct
    assert_close(Ct.T, canonical_csr(A, dtype, lossy=True), B, dtype, f"out_t ({s.label})")
    tol = 1e-5 if dtype == np.float32 else 2e-3
    np.testing.assert_allclose(Ct.T.astype(np.float64), C.astype(np.float64), rtol=tol, atol=tol)
    if N != A.shape[0]:
        with pytest.raises(ShapeError):
            codegen.spmm(p, B, out=garbage_like(C.shape, dtype), out_t=True)


def _uniform_matrix(rows=64, per_row=5, k=40, seed=11):
    rng = np.random.default_rng(seed)
    cols = np.concatenate([rng.choice(k, per_row, replace=False) for _ in range(rows)])
    indptr = np.arange(rows + 1) * per_row
    return sp.csr_matrix((rng.standard_normal(rows * per_row), cols, indptr), shape=(rows, k))


ROW_PER_THREAD = GS.Strategy(block=D("multi", False), warp=D("multi", False), thread=D("single", False),
                             block_size=32, warps_per_block=1, thread_cols=1, warp_cols=1, block_cols=1)


def test_compressible_offsets_are_computed_not_loaded():
    A = _uniform_matrix()
    p = GS.plan(A, ROW_PER_THREAD, dtype=np.float32)
    assert np.array_equal(p.thread_offset, 5 * np.arange(65))
    g = codegen.generate(p)
    assert "lo = 5 * tg" in g.source and "hi = 5 * (tg + 1)" in g.source
    header = next(line for line in g.source.splitlines() if line.startswith("def spmm_kernel("))
    assert "thread_offset" not in header
    assert "thread_offset[" not in g.source and not g.loads_offsets
    assert "thread_offset" not in g.args
    _, B, C = _run(A, ROW_PER_THREAD, np.float32, 2)
    assert_close(C, canonical_csr(A, np.float32), B, np.float32, "linear offsets")


def test_stored_offsets_are_loaded():
    A = MATRICES["13x37"]()
    g = codegen.generate(GS.plan(A, GS.Strategy(), dtype=np.float32))
    assert "int(thread_offset[tg])" in g.source and "thread_offset" in g.args and g.loads_offsets


def test_source_holds_the_folded_constants():
    A = MATRICES["13x37"]()
    s = GS.Strategy(block=D("multi", True), warp=D("multi", False), thread=D("multi", True), block_size=64,
                    warps_per_block=2, thread_cols=4, warp_cols=16, block_cols=32, interleave=True)
    p = GS.plan(A, s, dtype=np.float16)
    g = codegen.generate(p)
    src = g.source
    assert s.group_lanes == 4 and s.groups_per_warp == 8 and s.group_warps == 2 and s.groups_per_block == 1
    for text in ("@cuda.jit", "def spmm_kernel(", "lane % 4) * 4", "t = lane // 4", "tg = wg * 8 + t",
                 "np.int64(cuda.blockIdx.y) * 32", "(warp % 2) * 16", "ok3 = col0 + 3 < n_cols",
                 "* 8 + t * 1", "cuda.shfl_down_sync(0xFFFFFFFF, v0, 4)", "cuda.atomic.add(C,",
                 "Who handles what", "np.float32(values[p])"):
        assert text in src, text
    assert "ok4" not in src                        # exactly thread_cols accumulators
    compile(src, g.filename, "exec")               # plain Python text
    _, B, C = _run(A, s, np.float16, 5)            # N = 5: two blocks along y, a partial warp
    assert_close(C, canonical_csr(A, np.float16, lossy=True), B, np.float16, "folded")


def test_cache_returns_the_same_kernel():
    A = _uniform_matrix()
    p1 = GS.plan(A, ROW_PER_THREAD, dtype=np.float32)
    p2 = GS.plan(_uniform_matrix(seed=12), ROW_PER_THREAD, dtype=np.float32)   # same offsets
    g1, g2 = codegen.generate(p1), codegen.generate(p2)
    assert g1 is g2
    assert g1._kernel is None or g1._kernel is g1.kernel     # compiled lazily
    assert g1.kernel is g2.kernel
    assert codegen.generate(GS.plan(A, ROW_PER_THREAD, dtype=np.float16)) is not g1
    other = GS.plan(_uniform_matrix(per_row=6), ROW_PER_THREAD, dtype=np.float32)
    assert codegen.generate(other) is not g1                  # another pattern: another kernel
    assert codegen.upload(p1) is codegen.upload(p1)           # uploaded once


def test_kernel_cache_file_is_the_text_named_by_its_hash(tmp_path, monkeypatch):
    g = codegen.generate(GS.plan(_uniform_matrix(), ROW_PER_THREAD, dtype=np.float32))
    other = codegen.generate(GS.plan(_uniform_matrix(), ROW_PER_THREAD, dtype=np.float16))
    monkeypatch.delenv(codegen.CACHE_ENV, raising=False)
    assert codegen.source_file(g.source) is None                      # off unless asked for
    monkeypatch.setenv(codegen.CACHE_ENV, str(tmp_path / "k"))
    path = codegen.source_file(g.source)
    assert open(path).read() == g.source and path.startswith(str(tmp_path / "k"))
    stamp = (tmp_path / "k" / path.rsplit("/", 1)[1]).stat().st_mtime_ns
    assert codegen.source_file(g.source) == path                      # the same file, not rewritten
    assert (tmp_path / "k" / path.rsplit("/", 1)[1]).stat().st_mtime_ns == stamp
    assert codegen.source_file(other.source) != path
    assert sorted(p.name for p in (tmp_path / "k").iterdir()) == sorted(
        [path.rsplit("/", 1)[1], codegen.source_file(other.source).rsplit("/", 1)[1]])  # no temporaries left
    assert codegen.source_file(g.source, str(tmp_path / "d")).startswith(str(tmp_path / "d"))


def test_strategy_only_kernel_loads_offsets_and_runs_any_plan():
    A = MATRICES["13x37"]()
    s = GS.Strategy(thread_cols=2, warp_cols=8, block_cols=8)
    g = codegen.generate(s, np.float32)
    assert "int(thread_offset[tg])" in g.source
    p = GS.plan(A, s, dtype=np.float32)
    B = np.random.default_rng(5).standard_normal((A.shape[1], 3)).astype(np.float32)
    C = codegen.spmm(p, B, generated=g)
    assert_close(C, canonical_csr(A, np.float32), B, np.float32, "strategy-only kernel")
    with pytest.raises(OptionError, match="generated"):
        codegen.spmm(GS.plan(A, GS.Strategy(), dtype=np.float32), B, generated=g)
    with pytest.raises(DTypeError, match="dtype"):
        codegen.generate(s)


def test_unsupported_parts_raise_a_typed_error():
    # block slots beyond the static shared memory: 32 warp-groups x 256 columns x 2 x 4 bytes
    big = GS.Strategy(block=D("multi", False), block_size=32, warp=D("single", True), thread=D("single", False),
                      warps_per_block=32, thread_cols=8, warp_cols=256, block_cols=256)
    assert GS.select_reduction(big, 2).block == GS.BLOCK_BITMAP
    assert codegen.shared_bytes(big, np.float32) > codegen.SHARED_LIMIT
    with pytest.raises(UnsupportedStrategy, match=r"reduction\.block.*shared"):
        codegen.generate(big, np.float32)
    from spmvlab.generalsparse import tune
    assert not tune.supported(big)
    A = MATRICES["13x37"]()
    with pytest.raises(UnsupportedStrategy, match="dtype"):
        codegen.generate(GS.plan(A, GS.Strategy(), dtype=np.float64))
    assert issubclass(UnsupportedStrategy, OptionError)


def test_padding_never_multiplies_B():
    """Padding slots hold column 0; with B[0] = inf only rows with a real column 0 may be inf/NaN."""
    A = _matrix(21, 10, 16, 0.3, long_row=3).tolil()
    A[:, 0] = 0
    A[6, 0] = 2.0
    A = A.tocsr()
    A.eliminate_zeros()
    s = GS.Strategy(block=D("multi", True), block_size=32, warp=D("multi", False), thread=D("multi", True),
                    thread_cols=1, warp_cols=2, block_cols=2, vector_width=4)
    B = np.random.default_rng(2).standard_normal((16, 2)).astype(np.float32)
    B[0] = np.inf
    p, _, C = _run(A, s, np.float32, 2, B=B)
    assert p.pad.any()
    assert_close(C, canonical_csr(A, np.float32), B, np.float32, "padding with inf in B")
    assert np.isfinite(np.delete(C, 6, axis=0)).all() and np.isinf(C[6]).all()


def test_ptx_targets_listed():
    targets = codegen.ptx_targets()
    labels = [t.label for t in targets]
    assert any("float16" in s for s in labels) and any("float32" in s for s in labels)
    assert any("WARP_SEGMENT" in s for s in labels) and any("atomic" in s for s in labels)
    for alg in ("BLOCK_TOTAL", "BLOCK_BITMAP", "BLOCK_SEGMENT"):
        assert any(alg in s for s in labels), alg
    assert "spmvlab.generalsparse.codegen" in __import__("spmvlab.ptxcheck", fromlist=["x"]).EXTRA_MODULES


# --------------------------------------------------------------------------------------
# compact storage and vector loads (Strategy.compact, vector_width, b_vector)
# --------------------------------------------------------------------------------------

COMPACT_DTYPES = {1: np.float32, 3: np.float16, 8: np.float16, 16: np.float32}


def _compact_sample():
    """(N, strategy) cases on 13x37: one compact strategy of ``strategies`` per (reductions,
    atomic, sort, interleave, vector loads of A, vector loads of B) and N, plus the compact
    strategies of the default shortlist."""
    from spmvlab.generalsparse import tune
    A = MATRICES["13x37"]()
    cases, seen = [], set()
    for N, dt in COMPACT_DTYPES.items():
        short = [s for s in tune.default_shortlist(N, dt) if s.compact]
        cases += [(N, s) for s in short[:1 if N < 8 else 2]]
        for s in GS.strategies(A, N, dtype=dt):
            if not s.compact or not tune.supported(s) or s.block.split and s.block_size < 8:
                continue                  # (tiny split blocks: many blocks, slow on the simulator)
            r = GS.plan(A, s, dtype=dt, lossy=True).reduction
            if r.block is not None and s.groups_per_block > 1:
                continue                  # block reductions: the block tests below
            keys = {(r.thread, r.warp, r.atomic), ("opts", s.sort_rows, s.interleave, s.vector_width > 1,
                                                   s.b_vector > 1), ("cyclic", s.cyclic)}
            if keys <= seen:
                continue
            seen |= keys
            cases.append((N, s))
    return cases


COMPACT = _compact_sample()


def test_compact_sample_covers_the_options():
    assert any(s.b_vector == 8 for _, s in COMPACT) and any(s.b_vector == 4 for _, s in COMPACT)
    assert any(s.vector_width == 8 and s.interleave for _, s in COMPACT) and any(s.cyclic for _, s in COMPACT)
    assert any(s.sort_rows for _, s in COMPACT) and any(s.block.split for _, s in COMPACT)
    algs = {GS.select_reduction(s, 2).thread for _, s in COMPACT}
    assert {GS.THREAD_TOTAL, GS.THREAD_BITMAP} <= algs
    assert 12 <= len(COMPACT) <= 30, len(COMPACT)


@pytest.mark.parametrize("N,s", COMPACT, ids=[f"N{n}-{s.label}" for n, s in COMPACT])
def test_compact_kernel_equals_reference(N, s):
    A = MATRICES["13x37"]()
    dtype = COMPACT_DTYPES[N]
    p, B, C = _run(A, s, dtype, N)
    g = codegen.generate(p)
    assert "flags" not in g.args and "rows" not in g.args and g.spec.col_mode == "u16"
    assert (f"vload{s.b_vector}(B, kb" in g.source) == (s.b_vector > 1)
    assert (f"vload{s.vector_width}(values, p0)" in g.source) == (s.vector_width > 1)
    csr = canonical_csr(A, dtype, lossy=True)
    assert_close(C, csr, B, dtype, f"compact kernel ({s.label})")
    R = GS.spmm(p, B)
    tol = 1e-5 if dtype == np.float32 else 2e-3
    np.testing.assert_allclose(C.astype(np.float64), R.astype(np.float64), rtol=tol, atol=tol)


def _long_rows():
    """Rows long enough that each lane of a row-per-warp strategy gets several full vector
    loads (the unmasked path), beside empty rows, one-entry rows and ragged ends."""
    rng = np.random.default_rng(11)
    lengths = [0, 1, 600, 257, 9, 0, 333, 1]
    rows = np.repeat(np.arange(len(lengths)), lengths)
    cols = np.concatenate([np.sort(rng.choice(700, n, replace=False)) for n in lengths])
    vals = rng.standard_normal(rows.size)
    return sp.csr_matrix((vals, (rows, cols)), shape=(len(lengths), 700))


@pytest.mark.parametrize("N,dtype,name", [(8, np.float16, "row/warp cv"), (12, np.float16, "row/wg x4 cv"),
                                          (3, np.float32, "row/warp cv"), (4, np.float32, "row/wg x4 cv"),
                                          (8, np.float16, "row/warp cv cyc"), (12, np.float16, "row/wg x4 cv cyc"),
                                          (3, np.float32, "row/warp cv cyc")])
def test_unmasked_vector_path_and_clamped_columns(N, dtype, name):
    """The search's anchors on long rows: a vector load wholly inside the thread-group's slots
    takes the path without masks, no gather of B sits behind a branch, and lanes whose
    columns lie beyond N (N = 12 with 8 columns per thread, N = 3 with 4) re-read valid
    columns of B but write nothing: the product equals scipy's and the reference's."""
    from spmvlab.generalsparse import shortlist
    s = shortlist._compact_variant(N, np.dtype(dtype).name, name)
    A = _long_rows()
    p, B, C = _run(A, s, dtype, N)
    src = codegen.generate(p).source
    assert f"if s0 + {s.vector_width} <= end:" in src, src
    assert "if ok" not in src.split("def spmm_kernel")[1].split("# the thread-group's partials")[0]
    if (N, name.removesuffix(" cyc")) in ((12, "row/wg x4 cv"), (3, "row/warp cv")):
        assert N % s.thread_cols, "no lane has columns beyond N"
    assert_close(C, canonical_csr(A, dtype, lossy=True), B, dtype, f"long rows ({s.label})")
    tol = 1e-5 if dtype == np.float32 else 2e-3
    np.testing.assert_allclose(C.astype(np.float64), GS.spmm(p, B).astype(np.float64), rtol=tol, atol=tol)


@pytest.mark.parametrize("N,dtype,name,opts", [
    (8, np.float16, "row/warp cv", dict(prefetch=True, batch=False)),
    (12, np.float16, "row/wg x4 cv cyc", dict(prefetch=True, batch=False)),
    (3, np.float32, "row/warp cv cyc", dict(prefetch=True)), (32, np.float16, "row/wg x4 cv16", dict(prefetch=True)),
    (8, np.float16, "row/wg x4 cv cyc", dict(batch=True)), (32, np.float16, "row/wg x4 cv16", dict()),
    (8, np.float32, "row/wg x4 cv cyc", dict(batch=True)),
    (12, np.float16, "row/warp cv cyc", dict(prefetch=True, batch=True))])
def test_code_options_equal_the_plain_kernel(N, dtype, name, opts):
    """generate(plan, prefetch=True): the next load of A issued before the current one's
    products; batch=True (the default): a full load's gathers of B written before
    its products. On rows of 0 to 600 entries (groups with no slot, one partial load, several
    full ones and a ragged end): the same sums as the kernel with neither (bit for bit: the
    products are formed in the same order), and equal to scipy's."""
    from spmvlab.generalsparse import shortlist
    s = shortlist._compact_variant(N, np.dtype(dtype).name, name)
    A = _long_rows()
    p = GS.plan(A, s, dtype=dtype, lossy=True)
    B = np.random.default_rng(5).standard_normal((A.shape[1], N)).astype(dtype)
    g = codegen.generate(p, **opts)
    bare = codegen.generate(p, prefetch=False, batch=False)
    assert g is not bare and g is codegen.generate(p, **opts)
    batch = opts.get("batch", True) and s.b_vector > 1
    assert g.spec.prefetch == opts.get("prefetch", False) and g.spec.batch == batch
    last = f"x{s.vector_width - 1}_0 = vload"       # the batch writes a load's last gather first
    assert ("nvs = vload" in g.source) == g.spec.prefetch and (last in g.source) == g.spec.batch
    assert not bare.spec.prefetch and not bare.spec.batch and "nvs" not in bare.source
    out = garbage_like((A.shape[0], N), dtype)
    C = codegen.spmm(p, B, out=out, generated=g)
    plain = codegen.spmm(p, B, out=garbage_like((A.shape[0], N), dtype), generated=bare)
    np.testing.assert_array_equal(C, plain)
    assert_close(C, canonical_csr(A, dtype, lossy=True), B, dtype, f"code options {opts} ({s.label})")


def test_batch_is_the_default():
    """batch=True (the default) batches the gathers of both dtypes (measured faster for
    float16 and float32); the plain kernel stays one keyword away."""
    from spmvlab.generalsparse import shortlist
    A = _long_rows()
    for dt in (np.float16, np.float32):
        s = shortlist._compact_variant(8, np.dtype(dt).name, "row/warp cv cyc")
        assert s.b_vector > 1
        p = GS.plan(A, s, dtype=dt, lossy=True)
        assert codegen.generate(p).spec.batch is True
        assert codegen.generate(p) is codegen.generate(p, batch=True)
        assert codegen.generate(p, batch=False).spec.batch is False
        assert codegen.generate(s, dt).spec.batch is True       # the bare strategy's kernel too


def _long_wide():
    """_long_rows' pattern with every column moved past 16 bits (64000 + c of 70000): each
    block's span fits 16 bits from a nonzero base (col_base), the columns stored as offsets."""
    A = _long_rows().tocoo()
    return sp.csr_matrix((A.data, (A.row, A.col + 64000)), shape=(A.shape[0], 70000))


@pytest.mark.parametrize("N,dtype,name", [(8, np.float16, "row/warp cv cyc"), (8, np.float16, "row/wg x4 cv"),
                                          (4, np.float32, "row/warp cv cyc")])
def test_batched_gathers_with_a_column_base(N, dtype, name):
    """Batched gathers where the column is an offset from the block's base: the strategy-only
    kernel (the search times these; its columns always carry a base, 0 where none is
    needed) and the plan's kernel on columns past 16 bits (a base above 0). Each gives the
    plain kernel's sums bit for bit and scipy's within the tolerance. (The batch once
    multiplied only the base by the row length: wrong rows of B, and on the GPU a misaligned
    vector load, fig14_gs at 041ff09.)"""
    from spmvlab.generalsparse import shortlist
    s = shortlist._compact_variant(N, np.dtype(dtype).name, name)
    for A, plan_mode in ((_long_rows(), "u16"), (_long_wide(), "u16base")):
        p = GS.plan(A, s, dtype=dtype, lossy=True)
        B = np.random.default_rng(7).standard_normal((A.shape[1], N)).astype(dtype)
        want = canonical_csr(A, dtype, lossy=True)
        kernels = dict(bare_batch=codegen.generate(s, dtype, col_bits=16),
                       bare_plain=codegen.generate(s, dtype, col_bits=16, batch=False),
                       plan_batch=codegen.generate(p), plan_plain=codegen.generate(p, batch=False))
        assert kernels["bare_batch"].spec.col_mode == "u16base" and kernels["bare_batch"].spec.batch
        assert kernels["plan_batch"].spec.col_mode == plan_mode and kernels["plan_batch"].spec.batch
        out = {k: codegen.spmm(p, B, out=garbage_like((A.shape[0], N), dtype), generated=g)
               for k, g in kernels.items()}
        for k, C in out.items():
            assert_close(C, want, B, dtype, f"{k} {plan_mode} ({s.label})")
        np.testing.assert_array_equal(out["bare_batch"], out["bare_plain"])
        np.testing.assert_array_equal(out["plan_batch"], out["plan_plain"])


def test_prefetch_reads_no_load_past_the_group():
    """A row of 512 entries under a row-per-warp strategy (32 lanes x 8 x 2 steps) fills its
    warp-group's slots to the end of the value array: a prefetch one load too far would read
    past it (the simulator's vector load checks its bounds)."""
    from spmvlab.generalsparse import shortlist
    s = shortlist._compact_variant(8, "float16", "row/warp cv cyc")
    rng = np.random.default_rng(2)
    A = sp.csr_matrix((rng.standard_normal(512), (np.zeros(512, int), np.arange(512))), shape=(1, 520))
    p = GS.plan(A, s, dtype=np.float16, lossy=True)
    assert p.device_arrays()["values"].size == 512, "the layout this test relies on changed"
    B = rng.standard_normal((520, 8)).astype(np.float16)
    C = codegen.spmm(p, B, out=garbage_like((1, 8), np.float16), generated=codegen.generate(p, prefetch=True))
    assert_close(C, canonical_csr(A, np.float16, lossy=True), B, np.float16, "one full row, prefetched")


def test_code_options_apply_only_to_vector_loads_with_thread_total():
    A = MATRICES["13x37"]()
    bitmap = next(s for s in COMPACT if GS.select_reduction(s[1], 2).thread == GS.THREAD_BITMAP)[1]
    scalar = next(s for N, s in COMPACT if s.vector_width == 1 and
                  GS.select_reduction(s, 2).thread == GS.THREAD_TOTAL)
    for s in (bitmap, scalar):
        g = codegen.generate(GS.plan(A, s, dtype=np.float32, lossy=True), prefetch=True, batch=True)
        assert not g.spec.prefetch and not g.spec.batch and "nvs" not in g.source


def _wide(seed=4):
    """6 x 70000 (columns past 16 bits): in blocks of 2 rows every span fits, in 4 not."""
    A = sp.lil_matrix((6, 70000), dtype=np.float32)
    A[0, [3, 60000]] = [1.0, 2.0]
    A[1, [40, 41]] = [3.0, -1.0]
    A[2, 65000] = -2.0
    A[3, [69999, 65010, 65011]] = [4.0, 5.0, 0.5]
    A[4, 10] = 0.5
    return A.tocsr()


@pytest.mark.parametrize("block_size,mode", [(2, "u16base"), (4, "i32")])
def test_compact_wide_columns(block_size, mode):
    M = D("multi", False)
    s = GS.Strategy(block=M, warp=M, thread=D("multi", True), block_size=block_size, thread_cols=4,
                    warp_cols=8, block_cols=8, compact=True, b_vector=4, vector_width=2)
    p, B, C = _run(_wide(), s, np.float32, 8)
    assert codegen.generate(p).spec.col_mode == mode
    assert_close(C, canonical_csr(_wide(), np.float32), B, np.float32, f"wide columns ({mode})")


def test_compact_strategy_only_kernels_and_errors():
    A = MATRICES["13x37"]()
    s = GS.Strategy(thread=D("single", True), thread_cols=4, warp_cols=16, block_cols=16, compact=True,
                    b_vector=2, interleave=True, vector_width=4)
    p = GS.plan(A, s, dtype=np.float32)
    B = np.random.default_rng(6).standard_normal((A.shape[1], 6)).astype(np.float32)
    for bits, mode in ((16, "u16base"), (32, "i32")):
        g = codegen.generate(s, np.float32, col_bits=bits)
        assert g.spec.col_mode == mode and "int(thread_offset[tg])" in g.source
        C = codegen.spmm(p, B, generated=g)
        assert_close(C, canonical_csr(A, np.float32), B, np.float32, f"strategy-only compact {mode}")
    with pytest.raises(OptionError, match="col_bits"):
        codegen.generate(s, np.float32, col_bits=8)
    from reference._common import ShapeError
    with pytest.raises(ShapeError, match="b_vector"):
        codegen.spmm(p, np.ascontiguousarray(B[:, :5]))    # N = 5 is no multiple of 2


def test_compact_padding_never_multiplies_B():
    """Vector-width and interleave padding (column 0) is never read as a nonzero."""
    A = _matrix(21, 10, 16, 0.3, long_row=3).tolil()
    A[:, 0] = 0
    A[6, 0] = 2.0
    A = A.tocsr()
    A.eliminate_zeros()
    s = GS.Strategy(block=D("multi", True), block_size=32, warp=D("multi", False), thread=D("multi", True),
                    thread_cols=2, warp_cols=4, block_cols=4, interleave=True, vector_width=4,
                    compact=True, b_vector=2)
    B = np.random.default_rng(2).standard_normal((16, 4)).astype(np.float32)
    B[0] = np.inf
    p, _, C = _run(A, s, np.float32, 4, B=B)
    assert p.pad.any()
    assert_close(C, canonical_csr(A, np.float32), B, np.float32, "compact padding with inf in B")
    assert np.isfinite(np.delete(C, 6, axis=0)).all() and np.isinf(C[6]).all()


# --------------------------------------------------------------------------------------
# block reductions over several warp-groups (shared memory, one barrier)
# --------------------------------------------------------------------------------------

SS, MS = D("single", True), D("multi", True)


def _block_matrix(seed=9):
    """10 x 64, fp16-exact values: empty rows 1 and 6, a row of 64 nonzeros (3; it spans a
    whole block in every strategy below but bitmap), rows of 1 to 12 nonzeros."""
    rng = np.random.default_rng(seed)
    lengths = [5, 0, 9, 64, 1, 12, 0, 3, 7, 2]
    A = sp.lil_matrix((10, 64))
    for r, n in enumerate(lengths):
        cols = rng.choice(64, n, replace=False)
        A[r, cols] = rng.integers(-8, 9, n) / 4 + 0.125
    return A.tocsr()


def _block_strategy(kind: str, g: int, N: int) -> GS.Strategy:
    """A strategy with g warp-groups of one warp per block whose rules select a block
    reduction: total (one row per block), bitmap (g rows per block, a warp-group per row
    piece), segment (2g rows), and the nonzero-split variants (block ends atomic)."""
    dense = dict(thread_cols=1, warp_cols=1, block_cols=1) if N == 1 else \
        dict(thread_cols=2, warp_cols=8, block_cols=8)
    T = GS.WARP // (dense["warp_cols"] // dense["thread_cols"])
    common = dict(warps_per_block=g, **dense)
    if kind == "total":
        return GS.Strategy(block=D("single", False), warp=SS, thread=SS, block_size=1, **common)
    if kind == "total/atomic":
        return GS.Strategy(block=SS, warp=SS, thread=SS, block_size=g * 8, **common)
    if kind == "bitmap":
        return GS.Strategy(block=D("multi", False), warp=SS, thread=SS, block_size=g, **common)
    if kind == "segment":
        return GS.Strategy(block=D("multi", False), warp=MS, thread=MS, block_size=2 * g, **common)
    if kind == "segment/atomic":
        return GS.Strategy(block=MS, warp=MS, thread=MS, block_size=g * T * 2 if T < 32 else 4 * g,
                           **common)
    raise AssertionError(kind)


BLOCK_KINDS = {"total": GS.BLOCK_TOTAL, "total/atomic": GS.BLOCK_TOTAL, "bitmap": GS.BLOCK_BITMAP,
               "segment": GS.BLOCK_SEGMENT, "segment/atomic": GS.BLOCK_SEGMENT}
# (kind, warp-groups, N, dtype): every kind with 2 and 4 warp-groups, N and dtype alternating
BLOCK_CASES = [(kind, g, N, dt) for i, kind in enumerate(BLOCK_KINDS) for g in (2, 4)
               for N, dt in [((1, np.float32), (8, np.float16))[(i + g // 2) % 2]]]


def _row_spans(p: GS.Plan):
    """Per row: how many warp-groups of one block hold its slots (the most over blocks)."""
    rows = p.logical("rows")
    wg = np.searchsorted(p.warp_offset, np.arange(p.n_slots), side="right") - 1
    real = ~p.logical("pad") & (rows >= 0)
    block = wg // p.strategy.groups_per_block
    spans = np.zeros(p.shape[0], dtype=np.int64)
    for r in np.unique(rows[real]):
        at = real & (rows == r)
        spans[r] = max(np.unique(wg[at & (block == b)]).size for b in np.unique(block[at]))
    return spans


@pytest.mark.parametrize("kind,g,N,dtype", BLOCK_CASES,
                         ids=[f"{k}-g{g}-N{n}-{np.dtype(d).name}" for k, g, n, d in BLOCK_CASES])
def test_block_reduction_kernel_equals_reference(kind, g, N, dtype):
    A = _block_matrix()
    s = _block_strategy(kind, g, N)
    assert s.groups_per_block == g
    p = GS.plan(A, s, dtype=dtype, lossy=True)
    assert p.reduction.block == BLOCK_KINDS[kind] and p.reduction.atomic == kind.endswith("atomic")
    spans = _row_spans(p)
    assert spans.max() >= 2                      # rows spanning warp-groups
    if kind != "bitmap":                         # (bitmap: g rows share the g warp-groups)
        assert spans[3] == g                     # the long row spans a whole block
    src = codegen.generate(p).source
    assert src.count("cuda.syncthreads()") == 1 and "return" not in src
    assert f"cuda.shared.array(({g}, {s.block_cols}), np.float32)" in src
    _, B, C = _run(A, s, dtype, N)
    csr = canonical_csr(A, dtype, lossy=True)
    assert_close(C, csr, B, dtype, f"block reduction ({s.label})")
    R = GS.spmm(p, B)
    tol = 1e-5 if dtype == np.float32 else 2e-3
    np.testing.assert_allclose(C.astype(np.float64), R.astype(np.float64), rtol=tol, atol=tol)
    assert not C[[1, 6]].any()                   # the empty rows


def test_block_reduction_compact_and_strategy_only():
    """Compact storage and a kernel built from the bare strategy (offsets loaded) take the
    same block reduction."""
    A = _block_matrix()
    s = dataclasses.replace(_block_strategy("segment/atomic", 2, 8), compact=True, b_vector=2)
    p = GS.plan(A, s, dtype=np.float32)
    B = np.random.default_rng(4).standard_normal((64, 8)).astype(np.float32)
    for g in (codegen.generate(p), codegen.generate(s, np.float32, col_bits=16)):
        assert g.spec.block_alg == GS.BLOCK_SEGMENT and "sh_tail" in g.source
        C = codegen.spmm(p, B, generated=g)
        assert_close(C, canonical_csr(A, np.float32), B, np.float32, f"compact block ({g.spec.col_mode})")


def test_block_reductions_are_candidates():
    from spmvlab.generalsparse import tune
    A = MATRICES["13x37"]()
    algs = {GS.plan(A, s, dtype=np.float32).reduction.block for s in tune.candidates(A, 4)
            if s.groups_per_block > 1}
    assert {GS.BLOCK_TOTAL, GS.BLOCK_BITMAP, GS.BLOCK_SEGMENT} <= algs
