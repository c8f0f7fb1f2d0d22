"""GeneralSparse's code generator (paper Sec. 3.5): from a strategy and a plan of
``reference.generalsparse``, the Python source of a ``numba.cuda`` SpMM kernel, built with
``exec`` and compiled once per (strategy, dtype, offset-pattern signature).

    g = generate(plan)              # or generate(strategy, dtype): offsets loaded, not computed
    print(g.source)                 # the kernel text; g.kernel compiles it (lazily, once)
    C = spmm(plan, B)               # uploads the plan once, launches, returns C (M x N)

What is generated
-----------------
One kernel per key, written top down (``_emit.kernel_source``): the block prologue (the
block's warp-groups along ``blockIdx.x``, its ``block_cols`` columns along ``blockIdx.y``),
the warp prologue (each lane's thread-group and columns), the thread body (the walk over
the thread-group's slots with THREAD_TOTAL or THREAD_BITMAP, ``thread_cols`` accumulators
unrolled as scalars), then the warp reduction over the thread-groups of a warp-group
(shuffles ``group_lanes`` lanes apart) and the writes. Every size (warps, lanes per
thread-group, thread-groups per warp-group, column widths, vector width) is a literal in
the text. The thread-group offsets come from ``reference.offsets.compress(plan.thread_offset)``:
a Linear, Quasilinear, Cyclicity or Branch pattern is pasted as an expression of the
thread-group id (no load), a Stored pattern (or a residual/cycle table) is read from a device
array passed to the kernel. Interleaved layouts also need each warp-group's first slot,
compressed the same way from ``plan.warp_offset``.

Data the kernel reads (:class:`DevicePlan`, uploaded once per plan; ``Plan.device_arrays``):
``flags`` (uint8 per slot: bit 0 row start, bit 1 padding), ``rows`` (the slot's row of C,
sort order already undone; -1 none), ``cols``, ``values`` (storage order), the pattern
arrays, B (K x N, row-major) and C. Accumulation is float32 for float16 and float32 values.

Compact storage (``Strategy.compact``): ``values``, ``cols`` as uint16 (``col_mode`` "u16":
every column fits; "u16base": plus the block's ``col_base``) or int32 ("i32", where a block
spans more than 16 bits), ``row_ptr``, ``tg_row``, ``tg_len`` (and ``row_order`` with sorted
rows). A thread walks only its real slots (padding is never read): ``vector_width`` slots
of values and columns per vector load (aligned: every thread-group range starts at a
multiple of it). THREAD_BITMAP threads find the next row start in ``row_ptr``. A kernel
built from a bare compact strategy (``generate(strategy, dtype, col_bits=16)``) reads
"u16base" columns (any 16-bit plan of the strategy; a zero base where the plan has none);
with ``col_bits=32`` int32 columns (any plan).

Vector loads of B (``Strategy.b_vector`` g > 1): B is passed flat and each thread reads its
``thread_cols`` columns of a row of B in loads of g values (``vload{g}``, 16 bytes for 8
float16 or 4 float32); N must be a multiple of g (``spmm``/``launcher`` raise
``ShapeError`` otherwise), so a group is wholly inside or beyond N.

Compiled kernels across processes
---------------------------------
Compiling one generated kernel takes numba about a second. With the environment variable
``SPMVLAB_KERNEL_CACHE`` set to a directory (on a GPU; the simulator compiles nothing),
each kernel text is written there once (:func:`source_file`, named by its hash) and numba
keeps its compiled code beside it, so other processes load it instead of compiling: a
campaign can compile its kernels in parallel processes first (``experiments/search_gs.py``)
and a later run on the same machine starts warm.

Supported
---------
* every Division at the three levels:
  thread reductions THREAD_TOTAL, THREAD_BITMAP (and None: at most one slot per
  thread-group), warp reductions WARP_TOTAL, WARP_BITMAP, WARP_SEGMENT (and None),
  block reductions BLOCK_TOTAL, BLOCK_BITMAP, BLOCK_SEGMENT over the warp-groups of a
  block (with one warp-group per block they are the identity and generated as such);
* block reductions over g >= 2 warp-groups (``_reduce._emit_warp_block``/``_emit_block``):
  each warp-group reduces as above, but passes the pieces at its two ends (its *lead*, the
  end of a row begun before it, found at thread-group 0; its *tail*, from its last row
  start on, held by that thread-group) to shared slots, one per warp-group and block
  column (rows complete inside a warp-group are stored at once); after a
  ``cuda.syncthreads()`` that every thread reaches, thread-group 0 of warp-group 0 walks
  the g slots in order: BLOCK_TOTAL sums them into the block's one row; BLOCK_BITMAP and
  BLOCK_SEGMENT close a run of leads at each warp-group with a row start (rows spanning
  warp-groups stored whole, the leads before the first start the block's lead, the run
  after the last start its tail). The block's lead and tail are then written as the
  reference's ``execute`` does (added atomically where blocks split rows). The slots take
  ``shared_bytes(strategy, dtype)`` of static shared memory, at most ``SHARED_LIMIT``;
* blocks that split rows: the pieces a block passes up are added atomically
  (``cuda.atomic.add``) to a zeroed float32 C (for float16 values a float32 buffer that
  is rounded to float16 once at the end), rows complete inside a block are stored;
* warp-groups of several warps (``block_cols > warp_cols``), several warp-groups per block;
* the adjustments sort_rows, pad_empty_rows, interleave and vector_width as layouts.

Not supported (``generate`` raises :class:`UnsupportedStrategy`, naming the part)
-------------------------------------------------------------------------------
* block reductions whose shared slots exceed ``SHARED_LIMIT`` (more than 6144
  warp-groups x block columns with a float32 accumulator; :func:`strategies` lists none);
* value dtypes other than float16 and float32.

Not done yet (correct, but slower than the paper's kernel)
----------------------------------------------------------
* vector loads of the sparse arrays only with compact storage: in the plain layout
  ``vector_width`` pads and places the slots, but the kernel reads them one at a time;
* no reuse of B through shared memory; C is zeroed and (float16 with atomics) converted by
  two small fixed kernels around the generated one.
"""
from __future__ import annotations

import dataclasses
import hashlib
import itertools
import linecache
import os
import tempfile
import threading
import weakref

import numpy as np

import reference.generalsparse as GS
from reference._common import (
    DTypeError, NotEncodedError, OptionError, ShapeError, accumulator_dtype, check_operand,
    check_out, describe, problem,
)
from reference.offsets import compress

from ...kernels._common import launch_stream, scratch
from ..planner import decode_compact
from ..shortlist import default_shortlist
from . import _emit, _runtime
from ._spec import Offset, Spec

__all__ = ["UnsupportedStrategy", "Generated", "DevicePlan", "generate", "checked_plan", "checked_elsewhere", "upload", "spmm", "launcher",
           "cache_info", "clear_cache", "source_file", "CACHE_ENV", "ptx_targets", "SUPPORTED_DTYPES", "shared_bytes", "SHARED_LIMIT"]

SUPPORTED_DTYPES = (np.dtype(np.float16), np.dtype(np.float32))
_BLOCK_ALGS = (GS.BLOCK_TOTAL, GS.BLOCK_BITMAP, GS.BLOCK_SEGMENT)
#: the static shared memory a kernel may declare (bytes)
SHARED_LIMIT = 48 * 1024


class UnsupportedStrategy(OptionError):
    """The code generator does not (yet) generate this part of the strategy space."""


# --------------------------------------------------------------------------------------
# the generated kernel and its cache
# --------------------------------------------------------------------------------------

_counter = itertools.count()


class Generated:
    """One generated kernel: ``source`` (module text), ``strategy`` and ``spec`` (what it
    was generated from), ``kernel`` (the ``cuda.jit`` dispatcher, built from the text on first access),
    ``args`` (kernel argument names in order)."""

    def __init__(self, strategy: GS.Strategy, spec: Spec, source: str):
        self.strategy = strategy
        self.spec = spec
        self.source = source
        self.args = tuple(_emit.kernel_args(spec))
        self.filename = f"<spmvlab.generalsparse.codegen #{next(_counter)}: {spec.label} [{spec.dtype}]>"
        self._kernel = None
        self._lock = threading.Lock()

    @property
    def kernel(self):
        with self._lock:
            if self._kernel is None:
                from ..._cuda import SIMULATOR, cuda
                cached = None if SIMULATOR else source_file(self.source)
                filename = cached or self.filename
                code = compile(self.source, filename, "exec")
                # tracebacks and numba's error messages show the generated lines
                linecache.cache[filename] = (len(self.source), None, self.source.splitlines(True), filename)
                namespace = {"__name__": "spmvlab.generalsparse.codegen.generated", "cuda": cuda, "np": np}
                exec(code, namespace)
                self._kernel = namespace["spmm_kernel"]
                if cached:          # numba keeps the compiled code beside the file (__pycache__)
                    self._kernel.enable_caching()
            return self._kernel

    @property
    def loads_offsets(self) -> bool:
        """The kernel reads an offset table from memory (a pattern that holds an array)."""
        return bool(self.spec.pattern_arrays)

    def __repr__(self):
        return f"Generated({self.spec.label!r}, {self.spec.dtype}, thread_offset={self.spec.thread_offset.expr!r})"


_CACHE: dict = {}
_CACHE_LOCK = threading.Lock()

#: environment variable naming a directory for compiled kernels kept across processes
CACHE_ENV = "SPMVLAB_KERNEL_CACHE"


def source_file(source: str, directory: str | None = None) -> str | None:
    """Where the compiled code of a kernel text is kept across processes: the text written
    once to ``<directory>/gs_<sha256 of the text>.py`` (``directory`` default: the
    ``SPMVLAB_KERNEL_CACHE`` environment variable), whose ``__pycache__`` then holds numba's
    compiled kernels (one per signature and GPU). None when no directory is set. The file
    is written only if missing (numba checks the file's time stamp), through a temporary
    file, so processes compiling the same text at once do not see a partial file."""
    directory = os.environ.get(CACHE_ENV) if directory is None else directory
    if not directory:
        return None
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(os.path.abspath(directory),
                        f"gs_{hashlib.sha256(source.encode()).hexdigest()[:24]}.py")
    if not os.path.isfile(path):
        fd, tmp = tempfile.mkstemp(dir=directory, suffix=".tmp")
        with os.fdopen(fd, "w") as f:
            f.write(source)
        os.replace(tmp, path)
    return path


def cache_info() -> int:
    """Number of generated kernels held."""
    return len(_CACHE)


def clear_cache():
    with _CACHE_LOCK:
        _CACHE.clear()


def _offset(name: str, arr) -> Offset:
    pat = compress(np.asarray(arr))
    arrays = tuple((k, np.dtype(v.dtype).name) for k, v in pat.arrays(name).items())
    return Offset(name=name, expr=pat.expression("ID", name), arrays=arrays)


def _stored(name: str, dtype) -> Offset:
    return Offset(name=name, expr=f"int({name}[ID])", arrays=((name, np.dtype(dtype).name),), raw=True)


def _check_supported(s: GS.Strategy, red: GS.Reduction, dtype: np.dtype):
    if dtype not in SUPPORTED_DTYPES:
        raise UnsupportedStrategy(problem("dtype", "float16 or float32 (what the generator emits)",
                                          dtype, "convert A and B to float32"))
    if red.block in _BLOCK_ALGS and s.groups_per_block > 1:
        need = shared_bytes(s, dtype)
        if need > SHARED_LIMIT:
            raise UnsupportedStrategy(problem(
                "reduction.block", f"shared slots of at most {SHARED_LIMIT} bytes (2 x warp-groups x "
                "block_cols accumulators)", f"{need} bytes for {s.groups_per_block} warp-groups x "
                f"{s.block_cols} columns", "fewer warps per block or fewer columns per block"))


def shared_bytes(s: GS.Strategy, dtype) -> int:
    """Static shared memory of a block-reduction kernel: a lead and a tail slot per
    warp-group and block column (accumulator type), and a row and flag per warp-group."""
    acc = np.dtype(accumulator_dtype(np.dtype(dtype))).itemsize
    g = s.groups_per_block
    return 2 * g * s.block_cols * acc + g * (8 + 8 + 4)


def _col_mode(compact: bool, col_bits: int, has_base: bool) -> str:
    if not compact or col_bits == 32:
        return "i32"
    return "u16base" if has_base else "u16"


def generate(target, dtype=None, col_bits: int = 16, prefetch: bool = False,
             batch: bool = True) -> Generated:
    """The kernel for a :class:`~reference.generalsparse.Plan` (offsets compressed into
    expressions where ``reference.offsets.compress`` finds a pattern) or for a bare
    :class:`~reference.generalsparse.Strategy` with ``dtype`` (offsets loaded from memory;
    the most general reductions of the strategy, so it runs any of its plans). Cached:
    the same key returns the same :class:`Generated` (and so the same compiled kernel).
    ``prefetch``: where the thread level walks compact storage with vector loads and
    THREAD_TOTAL, the next load of A is issued before the current one's products (a code
    option, not a point of the strategy space; ``spec.prefetch`` says whether it applied).
    ``batch``: there, with vector loads of B too, a full load's gathers of B are all written
    before its first product (``spec.batch``); on by default: it won its A/B in every case
    timed, float16 and float32 (docs/probes.md), though float32 pays a few more registers
    (``results/cpu/sass_gs_batch.txt``).
    Raises :class:`UnsupportedStrategy` for the parts listed in the module docstring."""
    if isinstance(target, GS.Plan):
        p = target
        dt = np.dtype(p.dtype if dtype is None else dtype)
        if dt != np.dtype(p.dtype):
            raise DTypeError(problem("dtype", f"None or the plan's dtype {np.dtype(p.dtype)}", dt,
                                     "plan A with the dtype you want"))
        s, red = p.strategy, p.reduction
        thread_off = _offset("thread_offset", p.thread_offset)
        warp_off = _offset("warp_offset", p.warp_offset) if s.interleave else None
        col_mode = _col_mode(s.compact, p.col_bits, p.col_base is not None)
    elif isinstance(target, GS.Strategy):
        if dtype is None:
            raise DTypeError(problem("dtype", "the value dtype (float16 or float32)", None,
                                     "pass generate(strategy, np.float32)"))
        s, dt = target, np.dtype(dtype)
        red = GS.select_reduction(s, 2)
        thread_off = _stored("thread_offset", np.int64)
        warp_off = _stored("warp_offset", np.int64) if s.interleave else None
        if col_bits not in (16, 32):
            raise OptionError(problem("col_bits", "16 or 32 (the plans this kernel will run)", col_bits))
        col_mode = _col_mode(s.compact, col_bits, True)
    else:
        raise OptionError(problem("target", "a Plan or a Strategy", type(target).__name__,
                                  "pass reference.generalsparse.plan(A, strategy)"))
    _check_supported(s, red, dt)
    spec = Spec(label=s.label, dtype=dt.name, acc=np.dtype(accumulator_dtype(dt)).name,
                thread_alg=red.thread, warp_alg=red.warp, block_alg=red.block, atomic=red.atomic,
                warps_per_block=s.warps_per_block, group_lanes=s.group_lanes,
                groups_per_warp=s.groups_per_warp, group_warps=s.group_warps,
                groups_per_block=s.groups_per_block, thread_cols=s.thread_cols, warp_cols=s.warp_cols,
                block_cols=s.block_cols, interleave=s.interleave, vector_width=s.vector_width,
                thread_offset=thread_off, warp_offset=warp_off, compact=s.compact, col_mode=col_mode,
                b_vector=s.b_vector, sort_out=s.compact and s.sort_rows,
                prefetch=bool(prefetch) and s.compact and s.vector_width > 1 and red.thread == GS.THREAD_TOTAL,
                batch=bool(batch) and s.compact and s.vector_width > 1 and s.b_vector > 1
                and red.thread == GS.THREAD_TOTAL)
    return _cached(s, spec)


def _cached(s: GS.Strategy, spec: Spec) -> Generated:
    """The one :class:`Generated` of (strategy, spec), made from its text on first use."""
    key = (s, spec.dtype, spec)
    with _CACHE_LOCK:
        g = _CACHE.get(key)
        if g is None:
            g = _CACHE[key] = Generated(s, spec, _emit.kernel_source(spec))
    return g


# --------------------------------------------------------------------------------------
# upload and launch
# --------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, eq=False)
class DevicePlan:
    """A plan on the device, with its generated kernel: ``arrays`` the kernel's sparse
    arguments in order (flags, rows, cols, values, pattern arrays)."""

    generated: Generated
    shape: tuple
    dtype: np.dtype
    grid_x: int
    block_cols: int
    threads: int
    atomic: bool
    zero_init: bool
    arrays: tuple


_UPLOADS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _host_arrays(p: GS.Plan, g: Generated) -> list:
    spec = g.spec
    arrays = p.device_arrays()
    if spec.compact:                # a strategy-only kernel: the columns the way it reads them
        if spec.col_mode == "i32":
            arrays["cols"] = np.asarray(p.cols, dtype=np.int32)
        elif spec.col_mode == "u16base" and "col_base" not in arrays:
            arrays["col_base"] = np.zeros(p.n_blocks, dtype=np.int32)
    out = [arrays[name] for name in _emit.sparse_args(spec)]
    tables = {}
    for off, arr in ((spec.thread_offset, p.thread_offset), (spec.warp_offset, p.warp_offset)):
        if off is None or not off.loads:
            continue
        if off.raw:                      # a strategy-only kernel reads the whole array
            tables[off.name] = np.asarray(arr, dtype=np.int64)
        else:
            tables.update(compress(np.asarray(arr)).arrays(off.name))
    for name, dt in spec.pattern_arrays:
        out.append(np.ascontiguousarray(tables[name], dtype=dt))
    return [a if a.size else np.zeros(1, dtype=a.dtype) for a in out]   # no 0-length device arrays


_CHECKED: "weakref.WeakSet" = weakref.WeakSet()


def _checked(p, expensive: bool) -> GS.Plan:
    if not isinstance(p, GS.Plan):
        raise NotEncodedError(problem("plan", "a reference.generalsparse.Plan", describe(p),
                                      "plan it first: reference.generalsparse.plan(A, strategy)"))
    if p not in _CHECKED:
        p.validate(expensive=expensive, decode=decode_compact)     # the compiled decoding
        _CHECKED.add(p)
    return p


def checked_plan(p) -> GS.Plan:
    """``p`` validated fully (``Plan.validate(expensive=True)``: every index a kernel reads
    in range, the compact arrays consistent, the checksum; the compact arrays decoded by
    ``planner.decode_compact``, the reference's decoding compiled), once per plan object
    (plans are frozen and their arrays read-only). :class:`NotEncodedError` for anything but a Plan."""
    return _checked(p, expensive=True)


def checked_elsewhere(p) -> GS.Plan:
    """``p`` as :func:`checked_plan` leaves it, for a plan that :func:`checked_plan`
    validated fully in another process of this program and that arrived here pickled
    (``spmvlab.torch.sparsify``'s worker processes plan and validate the layers): the
    cheap checks and the checksum, here, prove its arrays are the ones validated there, so
    the expensive pass is not repeated. Only for plans of that origin; anything else goes
    through :func:`checked_plan`."""
    return _checked(p, expensive=False)


def upload(p: GS.Plan, generated: Generated | None = None) -> DevicePlan:
    """Copy the plan's arrays to the device once (kept while the plan lives), after
    :func:`checked_plan`: a damaged or inconsistent plan never reaches a kernel."""
    from ..._cuda import cuda
    p = checked_plan(p)
    g = generate(p) if generated is None else generated
    own = generate(p, prefetch=g.spec.prefetch, batch=g.spec.batch)
    if g is not own and not (g.spec.thread_offset.raw and g.strategy == p.strategy
                             and g.spec.dtype == np.dtype(p.dtype).name
                             and (g.spec.col_mode == "i32" or p.col_bits == 16)):
        raise OptionError(problem("generated", "generate(plan) or generate(plan.strategy, plan.dtype)",
                                  repr(g), "leave generated=None"))
    held = _UPLOADS.get(p)
    if held is not None and held.generated is g:
        return held
    arrays = tuple(cuda.to_device(np.ascontiguousarray(a)) for a in _host_arrays(p, g))
    d = DevicePlan(generated=g, shape=p.shape, dtype=np.dtype(p.dtype), grid_x=p.n_blocks,
                   block_cols=p.strategy.block_cols, threads=p.strategy.threads_per_block,
                   atomic=p.reduction.atomic, zero_init=p.zero_init, arrays=arrays)
    _UPLOADS[p] = d
    return d


def _check_b_vector(d: DevicePlan, N: int):
    g = d.generated.spec.b_vector
    if N % g:
        raise ShapeError(problem("B.shape[1]", f"a multiple of the strategy's b_vector ({g}): B is "
                                 "read g values at a time", N, "plan a strategy with b_vector=1"))


def _b_arg(d: DevicePlan, dB):
    """B as the kernel takes it: flat (K * N, row-major) for vector loads, else 2-D."""
    if d.generated.spec.b_vector == 1:
        return dB
    return dB.reshape(int(dB.shape[0]) * int(dB.shape[1]))


def transposed(g: Generated) -> Generated:
    """``g``'s kernel writing the product's transpose (``Spec.out_t``: C of shape N x M,
    what ``spmvlab.torch.SparseLinear`` wants: tokens x features), generated once."""
    return _cached(g.strategy, dataclasses.replace(g.spec, out_t=True))


def spmm(plan, B, out=None, generated: Generated | None = None, out_t: bool = False):
    """C = A @ B with the generated kernel of ``plan`` (a Plan, or a :class:`DevicePlan`
    from :func:`upload`). ``B`` (K x N, the plan's dtype, C-contiguous, host or device);
    ``out`` (M x N) is written and returned when given (host or device), else a new host
    array is returned for a host B and a device array for a device B. ``out_t``: the result
    is C's transpose (N x M, ``out`` of that shape), written by the kernel itself
    (:func:`transposed`)."""
    from ..._cuda import cuda
    d = plan if isinstance(plan, DevicePlan) else upload(plan, generated)
    M, K = d.shape
    B = check_operand(B, K, d.dtype, name="B", ndim=2, allow_device=True)
    N = int(B.shape[1])
    if N < 1:
        raise ShapeError(problem("B.shape[1]", "at least 1 column", N))
    _check_b_vector(d, N)
    shape = (N, M) if out_t else (M, N)
    if out is not None:
        check_out(out, shape, d.dtype)
    host = isinstance(B, np.ndarray)
    dB = cuda.to_device(B) if host else B
    dC = (cuda.to_device(out) if isinstance(out, np.ndarray) else out) if out is not None else \
        scratch(shape, d.dtype)
    acc = np.dtype(accumulator_dtype(d.dtype))
    target = dC
    if d.atomic and acc != d.dtype:
        target = scratch(shape, acc)
    stream = launch_stream()
    if (d.zero_init or d.atomic) and M:
        g2, b2 = _runtime.grid2(shape)
        _runtime.zero2[g2, b2, stream](target)
    grid = (d.grid_x, -(-N // d.block_cols))
    kernel = (transposed(d.generated) if out_t else d.generated).kernel
    if grid[0] and M:
        kernel[grid, d.threads, stream](*d.arrays, _b_arg(d, dB), target, np.int64(N))
    if target is not dC and M:
        g2, b2 = _runtime.grid2(shape)
        _runtime.narrow[g2, b2, stream](target, dC)
    if isinstance(out, np.ndarray):
        dC.copy_to_host(out)
        return out
    if out is not None:
        return out
    return dC.copy_to_host() if host else dC


def launcher(plan, dB, dC, generated: Generated | None = None):
    """A zero-argument callable that enqueues one C = A @ B with everything allocated up
    front (what a timing loop calls): ``plan`` a Plan or :class:`DevicePlan`, ``dB`` (K x N)
    and ``dC`` (M x N) device arrays of the plan's dtype. The same launches as :func:`spmm`
    (zero C, the generated kernel, narrow a float32 sum buffer into a float16 C)."""
    d = plan if isinstance(plan, DevicePlan) else upload(plan, generated)
    M, K = d.shape
    if tuple(dB.shape)[:1] != (K,) or len(dB.shape) != 2 or np.dtype(dB.dtype) != d.dtype:
        raise ShapeError(problem("dB", f"a ({K}, N) device array of {d.dtype}",
                                 f"{tuple(dB.shape)} {np.dtype(dB.dtype)}"))
    N = int(dB.shape[1])
    _check_b_vector(d, N)
    if tuple(dC.shape) != (M, N) or np.dtype(dC.dtype) != d.dtype:
        raise ShapeError(problem("dC", f"a ({M}, {N}) device array of {d.dtype}",
                                 f"{tuple(dC.shape)} {np.dtype(dC.dtype)}"))
    from ..._cuda import cuda
    acc = np.dtype(accumulator_dtype(d.dtype))
    target = cuda.device_array((M, N), dtype=acc) if (d.atomic and acc != d.dtype) else dC
    g2, b2 = _runtime.grid2((M, N))
    zero = bool((d.zero_init or d.atomic) and M and N)
    narrow = target is not dC and M and N
    grid = (d.grid_x, -(-N // d.block_cols))
    kernel = d.generated.kernel[grid, d.threads] if grid[0] and M and N else None
    args = (*d.arrays, _b_arg(d, dB), target, np.int64(N))
    zero_k = _runtime.zero2[g2, b2]
    narrow_k = _runtime.narrow[g2, b2]

    def run():
        if zero:
            zero_k(target)
        if kernel is not None:
            kernel(*args)
        if narrow:
            narrow_k(target, dC)

    return run


# --------------------------------------------------------------------------------------
# compile check targets
# --------------------------------------------------------------------------------------


def _ptx_matrices():
    """Small fixed matrices whose strategies cover the supported reductions."""
    import scipy.sparse as sp
    rng = np.random.default_rng(20261122)
    A = sp.random(40, 48, density=0.15, format="csr", random_state=rng)
    A = A.tolil()
    A[3, :] = 0
    A[7, :] = 1.0                      # one long row
    return [A.tocsr()]


def _sig(g: Generated, p, dt: str) -> str:
    """The numba signature text of a generated kernel's arguments (``p`` None: the
    strategy-only kernel, int64 offsets and int32 per-row arrays)."""
    from ...kernels._common import array_sig
    spec = g.spec
    types = dict(flags="uint8", values=dt, col_base="int32", tg_row="int32", tg_len="int32",
                 row_order="int32")
    types["cols"] = {"i32": "int32"}.get(spec.col_mode, "uint16") if spec.compact else \
        (str(p.cols.dtype) if p is not None else "int32")
    types["rows"] = types["row_ptr"] = str(p.rows.dtype) if p is not None else "int32"
    acc = "float32" if spec.atomic else dt
    args = [array_sig(types[n]) for n in _emit.sparse_args(spec)]
    args += [array_sig(t) for _, t in spec.pattern_arrays]
    args += [array_sig(dt, 1 if spec.b_vector > 1 else 2), array_sig(acc, 2), "int64"]
    return f"void({', '.join(args)})"


def ptx_targets():
    """A fixed sample of generated kernels (float16 and float32): the first strategy of
    ``strategies(A, N)`` (N = 64, then 1) for each combination of thread reduction, warp
    reduction, atomic or not, interleaved or not, one or several columns per thread (and the
    first for each block reduction over several warp-groups with each warp reduction, atomic
    or not, in one dtype, the two alternating); one
    kernel from a bare strategy per dtype (offsets loaded); the two fixed kernels; two
    kernels writing C's transpose (``out_t``: atomic adds, and a compact N = 8 float16 one)."""
    from ...kernels._common import PTXTarget, array_sig
    out = []
    seen = set()
    for A in _ptx_matrices():
        for N in (64, 1):
            for s in GS.strategies(A, N):
                for dt in ("float16", "float32"):
                    p = GS.plan(A, s, dtype=dt, lossy=True)
                    red = p.reduction
                    blk = red.block if s.groups_per_block > 1 else None
                    if blk is None:
                        key = (red.thread, red.warp, red.atomic, s.interleave, s.thread_cols > 1, dt)
                    else:           # block reductions: one per (block, warp, atomic), either dtype
                        key = (blk, red.warp, red.atomic)
                        if dt == ("float16", "float32")[len([k for k in seen if len(k) == 3]) % 2]:
                            continue
                    if key in seen:
                        continue
                    seen.add(key)
                    g = generate(p)
                    acc = "float32" if red.atomic else dt
                    sig_args = [array_sig("uint8"), array_sig(p.rows.dtype), array_sig(p.cols.dtype),
                                array_sig(dt)] + [array_sig(t) for _, t in g.spec.pattern_arrays] + \
                               [array_sig(dt, 2), array_sig(acc, 2), "int64"]
                    label = (f"codegen[{dt}] {red.thread}/{red.warp}{'/' + blk if blk else ''}"
                             f"{'/atomic' if red.atomic else ''}"
                             f" tc{s.thread_cols}{' ilv' if s.interleave else ''} <{s.label}>")
                    out.append(PTXTarget(label, (lambda g=g: g.kernel), f"void({', '.join(sig_args)})"))
                    if red.atomic and blk is None and not any("out_t" in t.label for t in out):
                        t = transposed(g)         # SparseLinear's transposed stores, atomic adds
                        out.append(PTXTarget(label.replace("<", "out_t <", 1), (lambda t=t: t.kernel),
                                             f"void({', '.join(sig_args)})"))
    # compact storage with vector loads: the shortlist's compact strategies (N = 64 and 8,
    # both dtypes; 16-bit columns as they are), and strategy-only kernels (u16 + base, int32)
    A = _ptx_matrices()[0]
    for dt in ("float16", "float32"):
        for N in ((64, 8) if dt == "float16" else (64,)):
            for s in default_shortlist(N, dt):
                if not s.compact:
                    continue
                p = GS.plan(A, s, dtype=dt, lossy=True)
                g = generate(p)
                out.append(PTXTarget(f"codegen[{dt}] compact N{N} <{s.label}>", (lambda g=g: g.kernel),
                                     _sig(g, p, dt), expects=(r"ld\.global(\.nc)?\.v4\.",)))
                if N == 8 and s.cyclic and s.groups_per_block > 1:     # the fig14 picks' kind, code options
                    t = transposed(g)                                    # as SparseLinear runs it
                    out.append(PTXTarget(f"codegen[{dt}] compact N{N} out_t <{s.label}>",
                                         (lambda t=t: t.kernel), _sig(g, p, dt),
                                         expects=(r"ld\.global(\.nc)?\.v4\.",)))
                    for tag, opts in (("plain", dict(batch=False)), ("prefetch", dict(prefetch=True, batch=False)),
                                      ("prefetch+batch", dict(prefetch=True, batch=True))):
                        g = generate(p, **opts)
                        out.append(PTXTarget(f"codegen[{dt}] compact N{N} {tag} <{s.label}>",
                                             (lambda g=g: g.kernel), _sig(g, p, dt),
                                             expects=(r"ld\.global(\.nc)?\.v4\.",)))
        s = next(s for s in default_shortlist(64, dt) if s.compact)
        bitmap = dataclasses.replace(s, block=GS.Division("multi", True), warp=GS.Division("multi", False),
                                     thread=GS.Division("multi", True), block_size=4 * s.groups_per_warp,
                                     warps_per_block=1, sort_rows=False)
        variants = ((s, 16), (bitmap, 32)) + (((dataclasses.replace(s, sort_rows=True), 16),)
                                              if dt == "float16" else ())
        for strat, bits in variants:
            g = generate(strat, dt, col_bits=bits)
            out.append(PTXTarget(f"codegen[{dt}] compact strategy-only {g.spec.col_mode} <{strat.label}>",
                                 (lambda g=g: g.kernel), _sig(g, None, dt)))
    # one strategy-only kernel per dtype (offsets loaded)
    for dt in ("float16", "float32"):
        g = generate(GS.Strategy(), dt)
        sig_args = [array_sig("uint8"), array_sig("int32"), array_sig("int32"), array_sig(dt),
                    array_sig("int64"), array_sig(dt, 2), array_sig(dt, 2), "int64"]
        out.append(PTXTarget(f"codegen[{dt}] strategy-only <{GS.Strategy().label}>", (lambda g=g: g.kernel),
                             f"void({', '.join(sig_args)})"))
    for dt in ("float16", "float32"):
        out.append(PTXTarget(f"codegen.zero2[{dt}]", lambda: _runtime.zero2, f"void({array_sig(dt, 2)})"))
    out.append(PTXTarget("codegen.narrow[float32->float16]", lambda: _runtime.narrow,
                         f"void({array_sig('float32', 2)}, {array_sig('float16', 2)})"))
    return out
