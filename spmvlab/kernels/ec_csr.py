"""EC-CSR SpMV/SpMM kernels (numba.cuda), paired with ``reference/ec_csr.py``.

This module holds the config, the device copy, the device check and the public wrappers;
the kernels live beside it: ``_ec_csr_spmv.py`` (SpMV, one source for uint32 and int64
positions),
``_ec_csr_spmm.py`` (SpMM) and ``_ec_csr_device.py`` (device functions both use).

Thread/data mapping
-------------------
One *group* of ``warp_size`` lanes per stored block (``warp_size`` is the matrix's own
option: 32 gives one hardware warp per block, smaller sizes pack ``32 / warp_size`` blocks
into a hardware warp, each group reducing with shuffles masked to its own lanes). Thread
``i`` of the grid works on block ``i // warp_size`` as its lane ``t = i % warp_size``. The
group finds its block's set by a linear scan of ``set_desc`` (a handful of sets), hence its
granularity ``g``, its vector width (``vector_size`` for long parts, 1 for short parts), its
rows and where its values start.

Lane ``t`` starts at column ``base_indices[block * warp_size + t]`` and walks its stored
columns ``vec`` at a time: the ``q``-th group of ``vec`` columns of every lane lies in one
chunk of ``warp_size * vec`` consecutive stored entries (the layout's interleaving), so the
group's loads of codes and values are contiguous across lanes. Per group of columns a lane
does one load of its ``vec`` delta codes (a word of ``vec * delta_bits`` bits, or a byte /
nibble for short parts) and one load, in pieces of up to 16 bytes, of their ``vec * g``
values (each column's g values together); each column is then ``column += delta``, one
gather of ``x[column]`` and g FMAs into g float32 accumulators (one per block row), so one
x value serves g rows.

Blocks of more than ``rows_per_pass`` rows (``ECCSRConfig``) are walked once per slice of
``rows_per_pass`` rows (re-decoding the columns), so a lane never holds more than that many
accumulators; granularities below it have exact specialisations (compiled per g).

Accumulation of y
-----------------
A row can be covered by blocks of several granularities (and by the pieces of a clipped
block), so y is accumulated with ``atomic.add`` in float32 after each group's reduction
(``shfl_xor_sync`` within the group). The reduction scatters the sums over the lanes: at each
butterfly level a lane keeps half of its accumulators and sends the other half to its
partner, so g row sums cost g - 1 + log2(warp_size / g) shuffles instead of g log2(warp_size)
(``kernels._common.reduce_scatter``); the first lane holding a row's sum adds it.
float32 output: y is zeroed by a small kernel first and the blocks add into it directly.
float16 output: the blocks add into a float32 scratch kept with the device matrix
(:class:`ZeroScratch`: zeroed when made), and a last kernel converts it into y and zeroes
it again for the next call, so a float16 product is two launches, as a float32 one (a
``DeviceECCSR`` must therefore not be used by two products at once on different streams).
On a GPU of compute capability 9.0 or above the second of the two launches is a
programmatic dependent one (``_spmm.launch_smem``'s ``after``): the float32 main kernel may
start while the zero pass runs and waits before its first add; the float16 finish pass may
start as the main kernel's blocks end and waits for all of them, so that part of the second
launch's fixed cost can overlap the first kernel (``docs/performance.md`` says what it
saves). Rows no block touches end up 0 either way: the output is fully written. The
summation order (blocks in whatever order their atomics land) is not fixed, so results can
differ in the last bits between runs; they stay within the tolerance of ``spmvlab.check``.

Padding zeros and Inf/NaN: the fast path multiplies every stored value, padding zeros
included, which is exact unless ``x`` is Inf/NaN at a padding column (0 * Inf = NaN). A
group with a reduced sum for a slice that is not finite (a vote over its lanes) discards
them and redoes that slice on a careful path that skips stored zeros, one row at a
time (CSR semantics, as the reference).

SpMM (Y = M @ X, X of shape (K, N))
-----------------------------------
Same mapping; each decoded column (its ``g`` values and its column index) is used for a
tile of ``spmm_tile`` columns of X: the lane loads row ``column`` of the X tile (vector
loads of up to 16 bytes when N allows, see ``kernels._spmm.group_for``) and updates
``rows x tile`` accumulators (``spmm_rows_per_pass`` rows per pass). The grid's second
dimension covers N in tiles; each tile re-reads the matrix. Y is accumulated as y above
(float32 atomics: a zero pass before a float32 Y, the kept scratch, grown to rows x N the
first time an N needs it, for a float16 one). N = 1 runs the SpMV kernel.

Alignment: the layout makes every long part's chunk start a multiple of ``warp_size *
vector_size`` entries inside its set, but a set can start at an odd multiple of
``warp_size`` after a short part. The device copy therefore records the widest code word
(``code_width``, codes per load) and value piece (``load_width``, elements) every set
allows. With warp_size >= vector_size (the default 32 / 4) both are always the full widths
(vector_size codes; 16 bytes of values, or vector_size x g values if fewer); warp_size 2
with vector_size 4 can narrow the code loads to 2 codes.

Cost model (SpMV; reasoned from the layout and the generated SASS, not profiled)
------------------------------------------------------------------------------
The counts for one shape (blocks, bytes, SASS instructions and registers per path) and the
timing that prompted the analysis are in ``docs/performance.md``, "EC-CSR kernels".

Work. One matrix block per warp at the default layout. Coarse-grained long blocks (g = 4,
g = 2) hold few columns per lane (a couple of loop iterations of ``vec``), g = 1 long
blocks more, and the short parts (vec 1) a handful each. At high sparsity nearly all stored
entries lie in g = 1 long blocks and the short blocks are about as many warps again,
carrying few of the entries.

Bytes. Per nonzero: its value, its delta code (``delta_bits`` plus the padding zeros of the
delta range) and the lane's base index (4 B per lane per block, shared by the lane's
columns). At equal bandwidth the bound over a dense GEMV is the ratio of the dense matrix's
bytes to these, so it grows with sparsity.

Per lane and loop iteration (vec columns): one 32-bit code word (4 deltas; 128 B per warp,
coalesced), one value load of vec x g values (g=1: 8 B, g=2: 16 B, g=4: 2 x 16 B;
coalesced), and vec 2-byte gathers of x. A lane's columns are its own 1/32 of the block's
columns, so a warp's gather touches up to 32 different 128-B lines (L1 hits, uncoalesced):
one lane gather per stored column. Atomics: one float32 RED per block row (negligible).

Instructions. With int64 positions most instructions are int64 position math and numba's
negative-index wraparound (SHF.R.S32.HI + LOP3 + IADD3/IADD3.X per index), and the register
count caps the resident warps per SM. ``index32`` (uint32 positions, unsigned indices) drops
the int64 math and the wraparound: fewer instructions per stored entry and fewer registers.
Both come from one source (``_ec_csr_spmv.py``), the position type a factory argument.

What most likely limits it: memory-level parallelism. Per iteration a warp has one
iteration's loads in flight (g=2: 32 x 20 B = 640 B), then a dependent chain code word
(DRAM) -> x gather (L1) -> FMA, and each warp starts with 2-3 dependent round trips
(set_desc scan; block_indptr and base; first codes). The resident warps' bytes in flight
fall short of what the DRAM bandwidth times the loaded latency requires per SM: the
kernel is latency-bound. The lower register count of ``index32`` attacks this (unrolling
a lane's column loop, for more loads in flight, and register caps were tried on a GPU and
left the code: ``docs/performance.md``, "EC-CSR kernels"). Second: instruction issue,
about halved by ``index32``. Third, likely the limit once streaming is fixed: the x
gathers; at L1's 4 tag lookups per cycle a 32-line gather costs 8 cycles, a cost that grows
with the stored columns and so with the matrix. ``x_in_shared`` stages x in shared memory
(a random 32-lane gather costs ~3.5 bank wavefronts) with a persistent grid so x is copied
once per CUDA block: the default, chosen over the L1 path by an A/B on a GPU, which also
showed fewer cycles stalled per issue and a higher achieved bandwidth with it
(``docs/performance.md``, "EC-CSR kernels": its entry on x in shared memory); the L1 path
remains for an x too long for one block's shared memory. Also: the short 1-grained parts
are stored last and are almost all setup latency, a tail of nearly idle SMs (about half the
warps at high sparsity). Fusing the finish/zero pass into the main
kernel (the last sum of a row writing y) was timed and lost (``docs/performance.md``).
"""
from __future__ import annotations

import dataclasses
import functools

import numpy as np

from reference._common import OptionError, problem
from reference.ec_csr import ECCSRMatrix

from .. import formats
from .._cuda import cuda
from ._common import (
    CHECK_THREADS, PTXTarget, array_sig, blocks_for, check_config, check_threads_per_block,
    check_value_dtype, checked_to_device, finish, prepare, prepare_spmm,
    run_device_check, scratch, to_dev,
)
from ._ec_csr_device import _NF, _code_parts
from ._ec_csr_spmm import _spmm_kernel
from ._ec_csr_spmv import _spmv_kernel
from ._intrinsics import grid_dependency_wait, launch_dependents
from ._spmm import (
    TILE_COLS, group_for, launch_smem, pdl_capable, persistent_grid, tile_for,
)

__all__ = ["ECCSRConfig", "DeviceECCSR", "to_device", "device_check", "launch_check", "spmv",
           "spmm", "ptx_targets"]

KERNEL_DTYPES = formats.get("ec_csr").kernel_dtypes
ROWS_PER_PASS = (1, 2, 4, 8)
#: arrays of at most this many entries can be indexed with uint32 positions (``index32``)
_MAX32 = 2**31 - 1
_WORD = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}


@dataclasses.dataclass(frozen=True)
class ECCSRConfig:
    """Launch settings.

    threads_per_block   multiple of 32 in [32, 1024] (``threads_per_block / warp_size``
                        blocks of the matrix per CUDA block)
    rows_per_pass       SpMV: accumulators per lane, 1, 2, 4 or 8; blocks with more rows are
                        walked once per slice of this many rows
    spmm_tile           SpMM: columns of X per pass, one of 1, 2, 4, 8, 16, 32
    spmm_rows_per_pass  SpMM: block rows per pass, 1, 2, 4 or 8 (a lane holds
                        ``spmm_rows_per_pass * spmm_tile`` accumulators)

    index32             SpMV and SpMM: positions, columns and array indices as uint32,
                        indexing without numba's negative-index wraparound (the module
                        docstring's "Cost model"); used when every array of the matrix has
                        fewer than 2**31 entries (SpMM: and X and Y have fewer than 2**31
                        elements), else int64 positions. The same kernel source and the
                        same products in the same order either way (False: int64 always, as
                        larger matrices get; tests use it to reach that instantiation).
    x_in_shared         SpMV: 0 gathers x from global memory (through L1); n > 0 first
                        copies x into shared memory in every CUDA block of a persistent grid
                        of at most n blocks per SM (fewer where the SM holds fewer at once:
                        registers, shared memory, threads; ``_spmm.persistent_grid``),
                        whose groups then step through the matrix blocks by the grid's
                        size. Used where x fits in one block's shared memory, else 0 (the
                        module docstring's "Cost model").
    x_in_shared_min     SpMV: x is staged only where at least this many blocks of the
                        x_in_shared kernel fit on an SM at once, else the L1 kernel runs:
                        with fewer, too few warps are left to hide the gathers' latency.

    Defaults: the H200 sweeps of ``tools/time_ec_csr.py`` over threads per block, rows per
    pass, unroll and register caps (``results/h200/time_ec_csr.json``,
    ``results/h200/time_ec_csr_launch.json``; ``docs/performance.md``) found no setting
    faster than them across their shapes (none faster on every case; index32 on: a pure
    instruction cut). x_in_shared 5 against 0 and 8
    (``results/h200/time_ec_csr_x_in_shared_*.json``): faster than 0 on every float16 case
    timed, and than 8 on most; caps 2-4 no faster on float16 at 80 and 90 %
    (``results/h200/time_ec_csr_xs_caps_*.json``). x_in_shared_min 3:
    the one shape where the staged kernel lost to the L1 one at every sparsity (fig7_ec's
    8192x28672 float32, an x of 112 KiB) holds 2 blocks per SM; those that won held 3 or more
    (docs/performance.md).
    """

    threads_per_block: int = 256
    rows_per_pass: int = 8
    spmm_tile: int = 8
    spmm_rows_per_pass: int = 4
    index32: bool = True
    x_in_shared: int = 5
    x_in_shared_min: int = 3

    def __post_init__(self):
        check_threads_per_block("ECCSRConfig", self.threads_per_block)
        for name, lo, note in (("x_in_shared", 0, "; 0: x from global memory"),
                               ("x_in_shared_min", 1, "")):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not lo <= v <= 32:
                raise OptionError(problem(f"ECCSRConfig.{name}", f"an integer in [{lo}, 32] "
                                          f"(CUDA blocks per SM{note})", repr(v)))
        if not isinstance(self.index32, (bool, np.bool_)):
            raise OptionError(problem("ECCSRConfig.index32", "True or False", repr(self.index32)))
        for name in ("rows_per_pass", "spmm_rows_per_pass"):
            v = getattr(self, name)
            if isinstance(v, bool) or v not in ROWS_PER_PASS:
                raise OptionError(problem(f"ECCSRConfig.{name}", f"one of {ROWS_PER_PASS}", repr(v)))
        if isinstance(self.spmm_tile, bool) or self.spmm_tile not in TILE_COLS:
            raise OptionError(problem("ECCSRConfig.spmm_tile", f"one of {TILE_COLS}",
                                      repr(self.spmm_tile)))


@dataclasses.dataclass(frozen=True, eq=False)
class DeviceECCSR:
    """An :class:`ECCSRMatrix` on the device. ``codes`` holds the packed deltas (padded to a
    multiple of 8 bytes, so it can be viewed as words of any width); ``scratch`` is the
    float32 accumulator of float16 products (a :class:`ZeroScratch`; None for float32);
    ``set_desc_host`` a host copy
    of the set descriptors (launch decisions); ``code_width``/``load_width`` the widest
    aligned code word (codes) and value load (elements) every set allows."""

    set_desc: object
    block_indptr: object
    row_indices: object
    base_indices: object
    codes: object
    values: object
    scratch: object
    set_desc_host: np.ndarray
    shape: tuple
    dtype: np.dtype
    delta_bits: int
    warp_size: int
    vector_size: int
    n_blocks: int
    n_row_entries: int
    code_width: int
    load_width: int
    nbytes: int
    fits32: bool = False

    @functools.cached_property
    def code_words(self):
        """The codes viewed as words of ``code_width`` codes (bytes when that is under 8
        bits), made once: a device view costs host time, and it was made on every launch."""
        bits = self.code_width * self.delta_bits
        return self.codes.view(_WORD[bits]) if bits >= 8 else self.codes


def to_device(M: ECCSRMatrix, check: str = "auto") -> DeviceECCSR:
    """``M`` on the device once ``kernels._common.checked_to_device`` has checked it: every
    row index, base index and decoded column in range (``check``: "auto", "host", "device")."""
    return checked_to_device(M, ECCSRMatrix, DeviceECCSR, _upload, device_check, check)


def _widths(M: ECCSRMatrix) -> tuple[int, int]:
    """(code_width, load_width): the largest power-of-two number of codes (at most
    ``vector_size``) and of values (at most 16 bytes' worth) whose loads are aligned in
    every set. Code words: a long set's chunks start at ``block_indptr[first_block]`` plus
    multiples of ``warp_size * vector_size``. Values: a set's lane groups start at
    ``first_value`` plus multiples of ``vec * g``; slices of blocks of many rows at
    multiples of g (always aligned)."""
    desc = M.set_desc.reshape(-1, _NF).astype(np.int64)
    ptr = M.block_indptr.astype(np.int64)
    vs = int(M.vector_size)
    cw = vs
    lw = 16 // M.dtype.itemsize
    for g, vec, first, _, val0 in desc:
        if vec > 1:
            while cw > 1 and ptr[first] % cw:
                cw //= 2
        while lw > 1 and val0 % min(lw, vec * g):
            lw //= 2
    if cw * int(M.delta_bits) < 8:
        cw = 1                       # 4-bit codes one at a time (nibbles)
    return cw, lw


def _upload(M: ECCSRMatrix) -> DeviceECCSR:
    check_value_dtype(M.dtype, KERNEL_DTYPES, "EC-CSR kernel")
    codes = np.zeros(max(8, -(-M.delta_indices.size // 8) * 8), np.uint8)
    codes[:M.delta_indices.size] = M.delta_indices
    vals = M.values if M.values.size else np.zeros(8, M.dtype)
    cw, lw = _widths(M)
    scratch = ZeroScratch(M.n_rows) if M.dtype == np.float16 else None
    desc = M.set_desc if M.set_desc.size else np.zeros(_NF, M.set_desc.dtype)
    return DeviceECCSR(
        set_desc=to_dev(desc), block_indptr=to_dev(M.block_indptr),
        row_indices=to_dev(M.row_indices if M.row_indices.size else np.zeros(1, M.row_indices.dtype)),
        base_indices=to_dev(M.base_indices if M.base_indices.size else np.zeros(1, M.base_indices.dtype)),
        codes=to_dev(codes), values=to_dev(vals), scratch=scratch,
        set_desc_host=np.array(M.set_desc, copy=True), shape=M.shape, dtype=M.dtype,
        delta_bits=int(M.delta_bits), warp_size=int(M.warp_size), vector_size=int(M.vector_size),
        n_blocks=M.n_blocks, n_row_entries=int(M.row_indices.size), code_width=cw, load_width=lw, nbytes=M.nbytes,
        fits32=_fits32(M, codes.size))


def _fits32(M: ECCSRMatrix, n_code_bytes: int) -> bool:
    """Whether every position the SpMV kernel computes (values, code entries, base and row
    entries, rows and columns) stays below 2**31, so ``index32`` can use uint32."""
    biggest = max(int(M.values.size), 2 * int(n_code_bytes), int(M.base_indices.size),
                  int(M.row_indices.size), int(M.n_columns), *map(int, M.shape))
    return biggest <= _MAX32


@functools.lru_cache(maxsize=None)
def _zero_kernel(pdl: bool = False):
    @cuda.jit
    def ec_csr_zero(a):
        """Grid-stride: a[i] = 0 (``pdl``: the main kernel, launched after it by
        ``_spmm.launch_smem(..., after=True)``, may start its blocks at once and waits before
        its adds)."""
        if pdl:
            launch_dependents()
        i = cuda.grid(1)
        while i < a.shape[0]:
            a[i] = 0
            i += cuda.gridsize(1)

    return ec_csr_zero


@functools.lru_cache(maxsize=None)
def _finish_kernel(pdl: bool = False):
    @cuda.jit
    def ec_csr_finish(acc, y):
        """Grid-stride: y[i] = acc[i] in y's dtype, then acc[i] = 0 (ready for the next call);
        ``pdl``: launched with ``after``, it first waits for the main kernel."""
        if pdl:
            grid_dependency_wait()
        i = cuda.grid(1)
        while i < y.shape[0]:
            y[i] = acc[i]
            acc[i] = 0
            i += cuda.gridsize(1)

    return ec_csr_finish


#: most CUDA blocks of the zero/finish passes (grid-stride loops)
_FLAT_BLOCKS = 1024


class ZeroScratch:
    """The float32 accumulator of a device matrix's float16 products, all zeros between
    calls: the blocks add into it and the finish pass converts each entry it reads and
    zeroes it. ``take(n, threads)`` returns the buffer (at least ``n`` entries; the kernels
    index only the first ``n``), first replacing it with a longer one where it is shorter:
    from ``_common.scratch`` (so from the allocator of ``launching``, e.g. torch's) and
    zeroed by a launch on the launch stream. An SpMV needs rows entries (made with the
    device matrix), an SpMM with N columns rows x N (grown at the first such N)."""

    def __init__(self, n: int):
        self.buf = cuda.to_device(np.zeros(max(int(n), 1), np.float32))

    def take(self, n: int, threads: int):
        if n > self.buf.shape[0]:
            buf = scratch((n,), np.float32)
            _flat(_zero_kernel(), n, threads, buf)
            self.buf = buf
        return self.buf


def _flat(kernel, n: int, threads: int, *args, after: bool = False):
    """A grid-stride pass over ``n`` entries (``after``: see ``_spmm.launch_smem``)."""
    if n:
        launch_smem(kernel, min(blocks_for(n, threads), _FLAT_BLOCKS), threads, 0, args, after)


# ---------------------------------------------------------------------------------------------
# the device check: every row, base index and decoded column in range
# ---------------------------------------------------------------------------------------------

#: in the order the host check (``ECCSRMatrix._check_entries``) tests them
CHECK_FIELDS = ("row_indices", "base_indices", "delta_indices")


@functools.lru_cache(maxsize=None)
def _check_kernel(delta_bits: int, ws: int):
    C = _code_parts(delta_bits, ws, 1, 1)
    short_code, find_set = C["short_code"], C["find_set"]

    @cuda.jit
    def ec_csr_check(set_desc, ptr, rows, base, bytes_, n_rows, n_cols, n_row_entries, flags):
        """Grid-stride over the row entries (flag ``row_indices`` outside [0, n_rows)) and
        over the lanes of all blocks: lane t of block b flags ``base_indices`` if its base is
        outside [0, n_cols), else sums its deltas (>= 0, so its last column is the largest)
        and flags ``delta_indices`` if that column is >= n_cols."""
        i = cuda.grid(1)
        step = cuda.gridsize(1)
        j = i
        while j < n_row_entries:
            if rows[j] < 0 or rows[j] >= n_rows:
                flags[0] = 1
            j += step
        n_lanes = (ptr.shape[0] - 1) * ws
        j = i
        while j < n_lanes:
            blk = j // ws
            t = j % ws
            col = np.int64(base[j])
            if col < 0 or col >= n_cols:
                flags[1] = 1
            else:
                vec = np.int64(set_desc[find_set(set_desc, blk) + 1])
                c0 = np.int64(ptr[blk])
                m = (np.int64(ptr[blk + 1]) - c0) // ws
                for k in range(m):
                    col += short_code(bytes_, c0 + (k // vec) * (ws * vec) + t * vec + k % vec)
                if col >= n_cols:
                    flags[2] = 1
            j += step

    return ec_csr_check


def launch_check(D: DeviceECCSR, flags):
    """Launch the check kernel (no wait): grid-stride over row entries and lanes."""
    n_rows_entries = D.n_row_entries
    n = max(n_rows_entries, D.n_blocks * D.warp_size)
    if n:
        _check_kernel(D.delta_bits, D.warp_size)[min(blocks_for(n, CHECK_THREADS), _FLAT_BLOCKS),
                                                 CHECK_THREADS](
            D.set_desc, D.block_indptr, D.row_indices, D.base_indices, D.codes, D.shape[0],
            D.shape[1], n_rows_entries, flags)


def device_check(D: DeviceECCSR) -> list[str]:
    """The first of :data:`CHECK_FIELDS` (host-check order) with an entry out of range, as
    a list (empty: none), checked on the device."""
    return run_device_check(CHECK_FIELDS, launch_check, D)[:1]


# ---------------------------------------------------------------------------------------------
# public wrappers
# ---------------------------------------------------------------------------------------------

def _kernel_key(D: DeviceECCSR):
    return (D.dtype.name, D.delta_bits, D.warp_size, D.vector_size, D.code_width, D.load_width)


def _position_type(D: DeviceECCSR, config: ECCSRConfig, k: int = 1) -> str:
    """"uint32" when ``index32`` is set, the matrix fits (``DeviceECCSR.fits32``) and so do
    the offsets into X and Y of ``k`` columns (``max(rows, columns) * k`` below 2**31), else
    "int64"."""
    fits = D.fits32 and max(D.shape) * k <= _MAX32
    return "uint32" if config.index32 and fits else "int64"


def _spmv_kernel_for(D: DeviceECCSR, config: ECCSRConfig, after: bool = False):
    """The SpMV kernel ``config`` asks for, on :func:`_position_type`'s positions; with
    ``x_in_shared``, x copied into shared memory in loads of the widest power of two of
    elements (at most 16 bytes) that divides its length. ``after``: the kernel is launched
    as the dependent of the zero pass (it waits for it)."""
    fg = 1
    while config.x_in_shared and fg * 2 * D.dtype.itemsize <= 16 and D.shape[1] % (fg * 2) == 0:
        fg *= 2
    return _spmv_kernel(*_kernel_key(D), config, _position_type(D, config), fg, after)


def _spmm_kernel_for(D: DeviceECCSR, config: ECCSRConfig, k: int, ct: int, gx: int,
                     after: bool = False, out_t: bool = False):
    """The SpMM kernel for X of ``k`` columns in tiles of ``ct``, on
    :func:`_position_type`'s positions; ``after`` as :func:`_spmv_kernel_for`'s; ``out_t``:
    it adds into Y's transpose."""
    return _spmm_kernel(*_kernel_key(D), config, ct, gx, _position_type(D, config, k), after,
                        out_t)


def _matrix_args(D: DeviceECCSR) -> tuple:
    return (D.set_desc, D.block_indptr, D.row_indices, D.base_indices, D.code_words, D.codes,
            D.values)


def _accumulate(D: DeviceECCSR, out, threads: int, main):
    """The launches around a product's main kernel into ``out`` (device, flat): float32 a
    zero pass, then ``main(out, after)``; float16 ``main(scratch, False)`` into the kept
    accumulator, then the finish pass into ``out``. The second launch of the two is the
    dependent one (``_spmm.launch_smem``'s ``after``) where :func:`pdl_capable`; ``main``
    builds its kernel with the wait exactly when it is (``after``). ``main`` is not called
    for a matrix without blocks (the zero or finish pass writes the zeros)."""
    n = out.shape[0]
    f16 = D.dtype == np.float16
    pdl = pdl_capable()
    if f16:
        acc = D.scratch.take(n, threads)
    else:
        acc = out
        _flat(_zero_kernel(pdl), n, threads, out)
    if D.n_blocks:
        main(acc, pdl and not f16)  # after a zero pass: may start early, waits before its adds
    if f16:
        _flat(_finish_kernel(pdl), n, threads, acc, out, after=pdl)


def _spmv_into(D: DeviceECCSR, x, y, config: ECCSRConfig):
    """y (device, n_rows) = D @ x (device)."""
    if not D.shape[0]:
        return
    threads = config.threads_per_block

    def main(yacc, after):
        blocks = blocks_for(D.n_blocks, threads // D.warp_size)
        nbytes = D.shape[1] * D.dtype.itemsize
        args = (*_matrix_args(D), x, yacc)
        grid = 0
        if config.x_in_shared:
            kernel = _spmv_kernel_for(D, config, after)
            grid = persistent_grid(kernel, args, blocks, threads, nbytes, config.x_in_shared,
                                   config.x_in_shared_min)
        if grid:
            launch_smem(kernel, grid, threads, nbytes, args, after)
        else:
            kernel = _spmv_kernel_for(D, dataclasses.replace(config, x_in_shared=0), after)
            launch_smem(kernel, blocks, threads, 0, args, after)

    _accumulate(D, y, threads, main)


def spmv(D, x, out=None, config: ECCSRConfig = ECCSRConfig()):
    """y = D @ x. ``D`` an :class:`ECCSRMatrix` or :class:`DeviceECCSR`; ``x`` host or device."""
    check_config(config, ECCSRConfig)
    D = to_device(D)
    n_rows, n_cols = D.shape
    ops = prepare(x, out, n_cols, (n_rows,), D.dtype)
    _spmv_into(D, ops.x, ops.out, config)
    return finish(ops, out)


def spmm(D, X, out=None, config: ECCSRConfig = ECCSRConfig(), out_t: bool = False):
    """Y = D @ X for X of shape (n_cols, k), any k (tiles of ``config.spmm_tile`` columns);
    ``out_t``: return Y's transpose, (k, n_rows), written by the kernel itself (the zero and
    finish passes are flat, so only the main kernel's adds change)."""
    check_config(config, ECCSRConfig)
    D = to_device(D)
    ops, k = prepare_spmm(D, X, out, out_t)
    n_rows, n_cols = D.shape
    if n_rows and k == 1:
        _spmv_into(D, ops.x.reshape(n_cols), ops.out.reshape(n_rows), config)
    elif n_rows and k:
        threads = config.threads_per_block

        def main(Yacc, after):
            ct = tile_for(k, config.spmm_tile)
            gx = group_for(D.dtype, k, ct)
            kernel = _spmm_kernel_for(D, config, k, ct, gx, after, out_t)
            grid = (blocks_for(D.n_blocks, threads // D.warp_size), blocks_for(k, ct))
            launch_smem(kernel, grid, threads, 0, (*_matrix_args(D), ops.x.reshape(n_cols * k),
                                                   Yacc, np.int64(k), np.int64(n_rows)), after)

        _accumulate(D, ops.out.reshape(n_rows * k), threads, main)
    return finish(ops, out)


def ptx_targets():
    """SpMV for every (dtype, delta_bits) at the default layout (warp_size 32, vector_size 4)
    (the uint32 path, x in shared memory; the int64 path and x from global memory for
    float16 8-bit codes) and
    SpMM for one delta width per dtype (uint32; int64 for float16 8-bit codes), float16's
    also writing Y's transpose (``out_t``, as ``SparseLinear`` runs it); sub-warp
    groups (warp_size 2, vector_size 2) for SpMV with 4-bit codes (nibble loads) and SpMM with 8-bit codes; the
    zero/finish passes and the check kernel. Every kernel as an sm_90 GPU runs it: the
    float32 main kernels with the dependent launch's wait (``pdl``), the float16 ones
    without it; and the default float32 SpMV once without it (older GPUs). (The delta width
    changes only the code loads, which SpMV and SpMM share, so not every pairing is
    compiled: each main kernel is slow to compile.)"""
    out = []
    idx = array_sig("int32")
    head = f"void({idx}, {idx}, {idx}, {idx}, "
    small = ECCSRConfig(rows_per_pass=2, spmm_rows_per_pass=1)
    cases = []
    for dt in KERNEL_DTYPES:
        for b in (4, 8):
            cases.append(("spmv", dt, b, 32, 4, 4, ECCSRConfig()))
        cases.append(("spmm", dt, 4 if dt == "float16" else 8, 32, 4, 4, ECCSRConfig()))
    cases.append(("spmm_t", "float16", 4, 32, 4, 4, ECCSRConfig()))
    cases += [("spmv", "float16", 4, 2, 2, 1, small), ("spmm", "float32", 8, 2, 2, 2, small),
              ("spmv", "float16", 8, 32, 4, 4, ECCSRConfig(index32=False)),
              ("spmv", "float16", 8, 32, 4, 4, ECCSRConfig(x_in_shared=0)),
              ("spmm", "float16", 8, 32, 4, 4, ECCSRConfig(index32=False))]
    cases = [c + (c[1] == "float32",) for c in cases] + [("spmv", "float32", 8, 32, 4, 4,
                                                           ECCSRConfig(), False)]
    griddep = (r"griddepcontrol\.wait", r"griddepcontrol\.launch_dependents")
    for kind, dt, b, ws, vs, cw, cfg, pdl in cases:
        P = 16 // np.dtype(dt).itemsize
        bits = cw * b
        word = np.dtype(_WORD[bits]).name if bits >= 8 else "uint8"
        args = head + f"{array_sig(word)}, {array_sig('uint8')}, {array_sig(dt)}, "
        wide = ((r"ld\.global(\.nc)?\.v4",) if ws == 32 else ()) + (griddep[:1] if pdl else ())
        variant = (("" if cfg.index32 else ",int64") + (",xs" if cfg.x_in_shared else "")
                   + (",wait" if pdl else ""))
        index = "uint32" if cfg.index32 else "int64"
        out_t = kind == "spmm_t"
        variant += ",out_t" if out_t else ""
        if kind == "spmv":
            out.append(PTXTarget(f"ec_csr.spmv[{dt},b{b},ws{ws},vs{vs},cw{cw}{variant}]",
                                 functools.partial(_spmv_kernel, dt, b, ws, vs, cw, P, cfg, index,
                                                   P if cfg.x_in_shared else 1, pdl),
                                 args + f"{array_sig(dt)}, {array_sig('float32')})", wide))
        else:
            ct, gx = cfg.spmm_tile, min(cfg.spmm_tile, P)
            out.append(PTXTarget(f"ec_csr.spmm[{dt},b{b},ws{ws},vs{vs},tile{ct}{variant}]",
                                 functools.partial(_spmm_kernel, dt, b, ws, vs, cw, P, cfg, ct, gx,
                                                   index, pdl, out_t),
                                 args + f"{array_sig(dt)}, {array_sig('float32')}, int64, int64)",
                                 wide))
    for dt in KERNEL_DTYPES:
        out.append(PTXTarget(f"ec_csr.finish[{dt}]", functools.partial(_finish_kernel, True),
                             f"void({array_sig('float32')}, {array_sig(dt)})", griddep[:1]))
    out.append(PTXTarget("ec_csr.zero[float32]", functools.partial(_zero_kernel, True),
                         f"void({array_sig('float32')})", griddep[1:]))
    for b, ws in ((4, 32), (8, 2)):
        out.append(PTXTarget(f"ec_csr.check[b{b},ws{ws}]", functools.partial(_check_kernel, b, ws),
                             f"void({idx}, {idx}, {idx}, {idx}, {array_sig('uint8')}, int64, "
                             f"int64, int64, {array_sig('int32')})"))
    return out
