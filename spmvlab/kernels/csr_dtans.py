"""CSR-dtANS SpMV/SpMM kernels (numba.cuda), paired with ``reference/csr_dtans.py``: the
matrix is decoded on the fly; only the word streams, the row lengths and the tables are read.

Thread and data mapping
-----------------------
* A warp per 32-row slice: warp ``w`` decodes rows ``32 w .. 32 w + 31``, lane ``t`` row
  ``32 w + t`` alone (its stream delta, value, delta, value, ...), so lane ``t`` owns y[32w + t]
  (SpMM: row 32w + t of Y for the block's column tile). Lanes past the last row take part
  in every warp collective with an empty row.
* Blocks are persistent: a block copies both tables into shared memory once, then its warps
  take slices ``blockIdx.x * warps + warp``, stepping by the grid's warps. The grid has at
  most as many blocks as fit on the device at once (shared memory and threads per SM).
* Shared memory (dynamic, one buffer): a slot's symbol and its ``digit | (base - 1) << 8``
  packed into one word (:func:`packed_tables`), so that a decoded symbol costs one
  shared-memory load instead of two: K uint64 delta slots, then K value slots (uint32 for
  float16, uint64 for float32; float64 values keep their uint16 infos apart), 48/64/72 KiB
  for float16/32/64 with the paper's K = 4096. The device copies of the tables are expanded
  on the host by ``to_device`` (slots in stored order, the escape's last; only the used
  slots are copied, the rest is never read by a valid stream).
* Words: every read of the decoder is a warp-wide event in the order of
  :func:`reference.csr_dtans.decode_warp`: the lanes that read at an event are the ballot
  of a predicate (``ballot_sync``), lane ``t`` reads word ``pos + popc(ballot & lanes below
  t)`` and the warp's position advances by ``popc(ballot)``. Per segment ``j`` the events
  are: the escape words (position ``k`` of the segment, word ``e``; only for the domains
  whose table has escape slots; the words of one escape are consecutive events of the same
  lanes, so one ballot per position ``k`` serves all of them, taken without a branch around
  it so that a segment's positions stay one block of code),
  the ``f = 2`` checks (lanes whose radix stays below W after the digit group), the
  unconditional load of the third word (lanes not in their last segment). The ``o = 3``
  initial words are three events with one ballot (lanes with a nonempty row). With
  ``first_delta = "diagonal"`` (rows' columns from their row index; banded and stencil rows
  then escape only at the matrix's edges) each segment's code exists twice: a warp whose
  lanes find no escape slot among their valid positions (each lane scans its slots, one
  vote) takes the copy without escape events, which would read nothing. The paper's first
  deltas escape at nearly every row start, so its kernels keep one copy.
* State: between digit groups the digit ``d`` and radix ``r`` are below W (32 bits); a
  group's four digits (bases up to M = 256) are folded into one pair ``(D, B)`` with
  ``B - 1`` in 32 bits, and ``d * B + D`` is one 32 x 32 -> 64-bit product (low half and
  ``umulhi``), whose high half is the extracted state when ``r * B >= W`` (else the word is
  read). Both parameter sets of the format run (``paper``: 32-bit words, ``toy``: 2-bit
  words in uint8), with ``o = 3`` and ``f = 2``.
* Columns: a row's (or piece's) first delta counts from column 0, or from its row index
  with ``first_delta = "diagonal"`` (sums in wrapping int32, the format's modulo 2**32).
* Sums: each lane adds its row's products in column order in float32 (float16/float32
  values) or float64, as ``reference.csr``; y has the matrix's value dtype. Only stored
  nonzeros are multiplied, so NaN/Inf propagate as in CSR.
* SpMM (Y = M @ X): the same walk; each decoded nonzero multiplies its row of X's column
  tile (``kernels/_spmm.tile_parts``: ``ct`` accumulators per lane, ``g`` values per
  vector load), the grid's second dimension covers X's columns (the matrix is decoded once
  per tile); N = 1 launches the SpMV kernel.

The device check (:func:`device_check`) runs the same walk without X: every word read
inside the warp's words, the warp's words consumed exactly, no unused slot, escaped raw
words within the symbol's bits and every decoded column in ``[0, cols)``; else it flags
``words`` (the field the host's decode names).
"""
from __future__ import annotations

import dataclasses
import functools

import numpy as np

from reference._common import OptionError, problem
from reference.csr_dtans import PARAMS, CSRDtansMatrix, delta_raw_bits

from .. import formats
from .._cuda import cuda, inline_device, libdevice
from ._common import (
    DEVICE_CHECK_MIN_ENTRIES, FULL_MASK, WARP, PTXTarget, acc_type, array_sig, blocks_for, check_int32,
    check_threads_per_block, check_value_dtype, checked_to_device, finish, jit_options, numba_type,
    prepare,
    prepare_spmm,
    run_device_check, to_dev,
    check_config,
)
from ._intrinsics import float_from_bits
from ._spmm import (
    TILE_COLS, accumulator_np, group_for, launch_smem, persistent_grid, ptx_cases, tile_for,
    tile_parts,
)

__all__ = ["CSRDtansConfig", "DeviceCSRDtans", "to_device", "device_check", "launch_check",
           "spmv", "spmm", "ptx_targets", "table_layout"]

KERNEL_DTYPES = formats.get("csr_dtans").kernel_dtypes
CHECK_FIELDS = ("words",)
#: the kernels' ``escapes``: which tables have escape slots (a domain without them has no
#: escape events in the walk at all)
ESC_DELTAS, ESC_VALUES = 1, 2
ESC_BOTH = ESC_DELTAS | ESC_VALUES


@dataclasses.dataclass(frozen=True)
class CSRDtansConfig:
    """Launch settings.

    threads_per_block  multiple of 32 in [32, 1024] (32 rows per warp)
    spmm_tile          SpMM: columns of X per pass (kernels/_spmm.py), one of 1, 2, 4, 8,
                       16, 32; N <= spmm_tile decodes the matrix once
    blocks_per_sm      blocks of the persistent grid per SM (0: as many as are resident at
                       once: registers, shared memory and threads)
    max_registers      SpMV: register cap per thread (None: the compiler's choice); with
                       the tables' 48-72 KiB of shared memory per block, 768 threads at 40
                       registers keep two blocks (48 warps) on an SM. The SpMM, whose tile
                       of accumulators needs 48-69 registers, is not capped (at 40 it spills)

    Defaults from the H100 sweep of tools/time_csr_dtans.py over 128-1024 threads and
    register caps (results/h100/time_csr_dtans_configs.json): the SpMV is latency-bound at
    the 24 warps per SM that 256 threads leave beside a 64 KiB table, and 768 threads at 40
    registers (two blocks, 48 warps per SM, no spills) was the fastest on every matrix and
    value type there; 32 registers spill and lost on the irregular matrices. spmm_tile
    and the grid size are not tuned yet.
    """

    threads_per_block: int = 768
    spmm_tile: int = 8
    blocks_per_sm: int = 0
    max_registers: int | None = 40

    def __post_init__(self):
        check_threads_per_block("CSRDtansConfig", self.threads_per_block)
        if self.spmm_tile not in TILE_COLS:
            raise OptionError(problem("CSRDtansConfig.spmm_tile", f"one of {TILE_COLS}", self.spmm_tile))
        if not isinstance(self.blocks_per_sm, int) or isinstance(self.blocks_per_sm, bool) \
                or not 0 <= self.blocks_per_sm <= 32:
            raise OptionError(problem("CSRDtansConfig.blocks_per_sm", "an int in [0, 32] (0: auto)",
                                      repr(self.blocks_per_sm)))
        mr = self.max_registers
        if mr is not None and (isinstance(mr, bool) or not isinstance(mr, (int, np.integer))
                               or not 16 <= mr <= 255):
            raise OptionError(problem("CSRDtansConfig.max_registers", "None or an int in [16, 255]",
                                      repr(mr)))


@dataclasses.dataclass(frozen=True, eq=False)
class DeviceCSRDtans:
    """A :class:`CSRDtansMatrix` on the device, its tables expanded to one entry per used
    slot (:func:`table_layout`: ``vsym`` the value symbols, ``vinfo`` their
    ``digit | (base - 1) << 8``; escape slots hold symbol 0) and packed for the kernels
    (:func:`packed_tables`: ``dtab`` one word per delta slot, ``vtab`` per value slot);
    ``*_esc`` is the escape's first slot, ``*_used`` the used slots (equal when the table
    has no escape)."""

    vsym: object
    vinfo: object
    vtab: object
    dtab: object
    v_esc: int
    v_used: int
    d_esc: int
    d_used: int
    row_lengths: object
    lanes_per_row: int
    rows_per_lane: int
    first_delta: str
    warp_ptr: object
    words: object
    shape: tuple
    dtype: np.dtype
    params: str
    nbytes: int

    @property
    def n_streams(self) -> int:
        """Decoded streams (``reference.csr_dtans.CSRDtansMatrix.n_streams``)."""
        return -(-int(self.shape[0]) // self.rows_per_lane) * self.lanes_per_row


def table_layout(symbols: np.ndarray, counts: np.ndarray):
    """(symbol per used slot, info per used slot, escape's first slot, used slots) of a
    stored table (kept symbols, slot counts with the escape's last): slots given out in
    stored order, each symbol's adjacent, digits counting its slots (the layout of
    ``reference.dtans.Table.from_multiplicities``); ``info = digit | (base - 1) << 8``."""
    c = counts.astype(np.int64)
    used = int(c.sum())
    first = np.concatenate(([0], np.cumsum(c)[:-1]))
    owner = np.repeat(np.arange(c.size), c)
    digit = np.arange(used) - first[owner]
    info = (digit | ((c[owner] - 1) << 8)).astype(np.uint16)
    sym = np.zeros(used, symbols.dtype)
    kept = owner < symbols.size
    sym[kept] = symbols[owner[kept]]
    return sym, info, int(c[:-1].sum()), used


#: ``to_device(check="auto")`` checks on the host (the reference's Python decoder, two
#: symbols per nonzero, each decoded in Python) only below this many nonzeros and with the
#: device check kernel from here on. ``M.values`` is the value table here, a handful of
#: symbols, so the generic rule (``values.size`` below 2^20) would send every matrix to the
#: host decoder, whose cost grows with the nonzeros: on matrices of the experiments' size
#: the host check, not the kernels, would take most of a run (docs/performance.md,
#: "CSR-dtANS kernels").
HOST_CHECK_MAX_NNZ = 1 << 16


def _host_entries(M: CSRDtansMatrix) -> int:
    """The host check's work in the units of ``DEVICE_CHECK_MIN_ENTRIES``: none below
    :data:`HOST_CHECK_MAX_NNZ` nonzeros, more than the device threshold from there on."""
    return 0 if M.nnz < HOST_CHECK_MAX_NNZ else max(M.nnz, DEVICE_CHECK_MIN_ENTRIES)


def to_device(M: CSRDtansMatrix, check: str = "auto") -> DeviceCSRDtans:
    """``M`` on the device once ``kernels._common.checked_to_device`` has checked it: every
    warp decodes exactly and every decoded column is in range, on the host or with the
    device check (``check``: "auto": on the host below :data:`HOST_CHECK_MAX_NNZ` nonzeros or
    in the simulator, else on the device; "host", "device")."""
    return checked_to_device(M, CSRDtansMatrix, DeviceCSRDtans, _upload, device_check, check,
                             host_entries=_host_entries)


def packed_tables(vsym: np.ndarray, vinfo: np.ndarray, dsym: np.ndarray, dinfo: np.ndarray):
    """(value table, delta table) as the kernels read them, one entry per used slot, so that
    a slot costs one shared-memory load: a delta slot is the uint64 ``delta | info << 32``
    (the delta's 32 bits, int32); a float16 or float32 value slot the uint32 or uint64
    ``bits | info << (16 or 32)``; float64 values stay as they are (the kernel reads their
    infos from ``vinfo``: 80 bits do not fit a word)."""
    dtab = dsym.astype(np.int32).view(np.uint32).astype(np.uint64) | (dinfo.astype(np.uint64) << np.uint64(32))
    width = vsym.dtype.itemsize * 8
    if width == 64:
        return vsym, dtab
    word = np.uint32 if width == 16 else np.uint64
    bits = vsym.view(f"u{vsym.dtype.itemsize}").astype(word)
    return bits | (vinfo.astype(word) << word(width)), dtab


def _nonempty(a: np.ndarray) -> np.ndarray:
    """``a``, or one zero of its dtype when empty (the kernels take no empty arrays)."""
    return a if a.size else np.zeros(1, a.dtype)


def _upload(M: CSRDtansMatrix) -> DeviceCSRDtans:
    check_value_dtype(M.dtype, KERNEL_DTYPES, "CSR-dtANS kernel")
    check_int32("shape[1] (columns)", M.n_cols)      # columns are decoded in int32
    check_int32("words.size", M.words.size)          # words are addressed in 32 bits
    vsym, vinfo, v_esc, v_used = table_layout(M.values, M.value_counts)
    # deltas fit int32 in a valid matrix (< cols; "diagonal": signed 32-bit); larger ones
    # are clipped, still out of range
    deltas = np.minimum(M.deltas.astype(np.int64), np.iinfo(np.int32).max).astype(np.int32)
    dsym, dinfo, d_esc, d_used = table_layout(deltas, M.delta_counts)
    vtab, dtab = packed_tables(vsym, vinfo, dsym, dinfo)
    return DeviceCSRDtans(
        vsym=to_dev(_nonempty(vsym)), vinfo=to_dev(_nonempty(vinfo)), vtab=to_dev(_nonempty(vtab)),
        dtab=to_dev(_nonempty(dtab)), v_esc=v_esc, v_used=v_used, d_esc=d_esc, d_used=d_used,
        row_lengths=to_dev(_nonempty(M.row_lengths)), lanes_per_row=int(M.lanes_per_row),
        rows_per_lane=int(M.rows_per_lane), first_delta=M.first_delta,
        warp_ptr=to_dev(M.warp_ptr),
        words=to_dev(_nonempty(M.words)), shape=M.shape, dtype=M.dtype, params=M.params,
        nbytes=M.nbytes)


def shared_bytes(dtype, params: str) -> int:
    """Dynamic shared memory per block (:func:`packed_tables`): K uint64 delta slots and K
    value slots (4 or 8 bytes; float64: the value and a uint16 info)."""
    vb = np.dtype(dtype).itemsize
    return int(PARAMS[params].K) * (8 + {2: 4, 4: 8, 8: 10}[vb])


# ---------------------------------------------------------------------------------------------
# the decoder: one warp walks its slice in lockstep
# ---------------------------------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def _walk(dtype_name: str, params: str, check: bool, ct: int = 1, g: int = 1,
          escapes: int = ESC_BOTH, rows: int = 1, spmv: bool = False, out_t: bool = False,
          diag: bool = False):
    """``fill(...)`` (the tables into shared memory) and ``walk(...)`` (one slice) for value
    dtype, parameter set and mode: products into ``ct`` accumulators (``check=False``) or
    the device check's tests (``check=True``). ``escapes``: the tables with escape slots
    (:data:`ESC_DELTAS` | :data:`ESC_VALUES`; the positions of a domain without them have
    no escape events at all). ``rows``: rows per stream (the
    matrix's ``rows_per_lane``). ``spmv``: x is a vector (one accumulator, gathered
    directly), else X is flat with ``ct`` accumulators per stream; ``out_t``: Y is the
    product's transpose, (columns, rows); ``diag``: a row's columns start from its row index
    (``first_delta = "diagonal"``; 32-bit wrapping sums, as the format's modulo 2**32).

    The l positions of a segment are written out one by one (a chain of device functions,
    each specialised on its position), so every slot's bit offset, table and domain are
    constants: the compiler leaves a rolled loop over the positions otherwise, and each
    position then pays for its offset arithmetic, the domain tests and both branches'
    code. Table and x indices are unsigned (numba adds a negative-index wraparound to every
    signed index)."""
    P = PARAMS[params]
    WB, SB, K, L, O, F = (int(P.word_bits), int(P.slot_bits), int(P.K), int(P.l), int(P.o), int(P.f))
    if O != 3 or F != 2 or L % 2:
        raise OptionError(problem(f"CSR-dtANS params {params!r}", "o = 3, f = 2 and an even l",
                                  f"o = {O}, f = {F}, l = {L}"))
    W = 1 << WB
    HALF = L // 2                       # digit group 0: positions [0, HALF), group 1 the rest
    vbits = np.dtype(dtype_name).itemsize * 8
    dbits = delta_raw_bits(1)           # 32: the kernels take int32 columns only
    RAW_V, RAW_D = P.raw_words(vbits), P.raw_words(dbits)
    SPILL_V = RAW_V * WB > vbits        # escaped words may hold bits beyond the symbol's
    SPILL_D = RAW_D * WB > dbits
    acc = acc_type(dtype_name)
    fma_row, zero, put_at = (tile_parts(dtype_name, ct, g, out_t=out_t)[k]
                             for k in ("fma_row", "zero", "put_at"))

    @inline_device
    def store(Y, row, j0, nvalid, accs):
        """A finished row's sums into y (``spmv``) or Y[row, j0:j0 + nvalid] (``out_t``: its
        transpose), then zeroed."""
        if spmv:
            Y[row] = accs[0]
            accs[0] = acc(0)
        else:
            for j in range(ct):
                if j < nvalid:
                    put_at(Y, row, j0 + j, accs[j])
            zero(accs)
    u64, u32, i32, i64 = np.uint64, np.uint32, np.int32, np.int64
    colt = np.int64 if check else np.int32
    # shared memory (packed_tables): K uint64 delta slots from byte 0, then the value slots
    # from byte 8 K: packed words (float16, float32) or float64 values and, from byte 16 K,
    # their uint16 infos
    PACKED = vbits < 64
    VWORD = np.uint32 if vbits == 16 else np.uint64       # a packed value slot
    VOFF = 8 * K // np.dtype(VWORD).itemsize if PACKED else K   # value slots' first element
    IOFF = 8 * K                                          # float64: infos' first uint16
    vtype = numba_type(dtype_name)
    t_u64, t_uint16 = numba_type("uint64"), numba_type("uint16")
    t_vword = numba_type(np.dtype(VWORD).name)

    @inline_device
    def tables(vtab, vinfo, dtab, v_used, d_used):
        """The block's threads copy the used slots into shared memory, then meet at a
        barrier; returns (value slots, delta slots, float64 infos), views of the one
        dynamic buffer (the third is the first for packed values)."""
        sdel = cuda.shared.array(0, t_u64)
        i = cuda.threadIdx.x
        while i < d_used:
            sdel[i] = dtab[i]
            i += cuda.blockDim.x
        if PACKED:
            sval = cuda.shared.array(0, t_vword)
            sinfo = sval
        else:
            sval = cuda.shared.array(0, vtype)
            sinfo = cuda.shared.array(0, t_uint16)
        i = cuda.threadIdx.x
        while i < v_used:
            sval[VOFF + i] = vtab[i]
            if not PACKED:
                sinfo[IOFF + i] = vinfo[i]
            i += cuda.blockDim.x
        cuda.syncthreads()
        return sval, sdel, sinfo

    def unpacker(k: int):
        """``unpack(w0, w1, w2)``: slot ``k`` of the segment, bits [k SB, k SB + SB) of
        w0 w1 w2 (w0 most significant), as uint32; k is a constant, so one or two shifts."""
        p = k * SB

        @inline_device
        def unpack(w0, w1, w2):
            lo = (w1 << u64(WB)) | w2
            if p + SB <= 2 * WB:
                s = lo >> u64(p)
            elif p >= 2 * WB:
                s = w0 >> u64(p - 2 * WB)
            else:
                s = (lo >> u64(p)) | (w0 << u64(2 * WB - p))
            return u32(u32(s) & u32(K - 1))      # numba widens u32 & u32 to 64 bits

        return unpack

    @inline_device
    def wide(a, b):
        """a * b of two uint32 as uint64: the low half and the multiply-high."""
        lo = u32(a * b)
        hi = libdevice.umulhi(a, b)
        return (u64(hi) << u64(32)) | u64(lo)

    if check:
        @inline_device
        def to_base(start):
            """The warp's first word (64-bit: a corrupt warp_ptr may point anywhere)."""
            return i64(start)

        @inline_device
        def read(words, start, i, end, bad):
            """Word ``start + i`` as uint64; an index past the warp's words is flagged and
            clamped into the array."""
            j = i64(start) + i64(i)
            if j >= end:
                bad = True
            j = min(j, i64(words.shape[0] - 1))
            return u64(words[u64(j)]), bad
    else:
        @inline_device
        def to_base(start):
            """The warp's first word as the 32-bit base of its positions."""
            return u32(start)

        @inline_device
        def read(words, start, i, end, bad):
            """Word ``start + i`` as uint64 (``to_device`` keeps the words below 2**31: one
            32-bit add and a wide multiply-add make the address)."""
            return u64(words[u32(start + i)]), bad

    def position(k: int, esc_mask: int):
        """``step(...)``: position k of a segment (a delta for even k, a value for odd):
        its slot, table entry, escape event (with ``escapes``), column or product, and its
        digit folded into its group's (D, B)."""
        unpack = unpacker(k)
        is_delta = k % 2 == 0
        nraw = RAW_D if is_delta else RAW_V
        spill = SPILL_D if is_delta else SPILL_V
        bits = dbits if is_delta else vbits
        esc_here = bool(esc_mask & (ESC_DELTAS if is_delta else ESC_VALUES))

        @inline_device
        def step(w0, w1, w2, rem, col, D, B, pos, bad, start, below, words, end,
                 sval, sdel, sinfo, vsym, v_esc, v_used, d_esc, d_used, Xf, nx, j0, nvalid,
                 accs, n_cols, rowleft, ri, lens, Y, row0):
            valid = k < rem
            slot = unpack(w0, w1, w2)
            if check:
                used = d_used if is_delta else v_used
                if valid and slot >= u32(used):
                    bad = True
                    slot = u32(0)
            # the slot's table entry: one shared-memory load (float64 values: two)
            if is_delta:
                ent = u64(sdel[slot])
                info = u32(ent >> u64(32))
            elif PACKED:
                ent = sval[u32(u32(VOFF) + slot)]
                info = u32(ent >> VWORD(vbits))
            else:
                info = u32(sinfo[u32(u32(IOFF) + slot)])
            escaped = False
            raw = u64(0)
            if esc_here:
                first = d_esc if is_delta else v_esc
                escaped = valid and slot >= u32(first)
                # events (k, e) for e = 0 .. nraw - 1 follow each other with the same
                # lanes: one ballot, word e of lane t at pos + e * popc + rank; no branch
                # around it, so the positions' code stays one block the compiler schedules
                eb = u32(cuda.ballot_sync(FULL_MASK, escaped))
                ecnt = u32(cuda.popc(eb))
                if escaped:
                    at = u32(pos + u32(cuda.popc(eb & below)))
                    for e in range(nraw):
                        wd, bad = read(words, start, u32(at + u32(e) * ecnt), end, bad)
                        raw |= wd << u64(e * WB)
                pos = u32(pos + u32(nraw) * ecnt)
                if check and escaped:
                    if spill and (raw >> u64(bits)) != u64(0):
                        bad = True
            if is_delta:
                if valid:
                    if escaped:
                        col = colt(col + colt(raw))
                    else:
                        col = colt(col + colt(i32(u32(ent & u64(0xFFFFFFFF)))))
                    if check and diag:                    # the format's sums modulo 2**32
                        col = colt(col & colt(0xFFFFFFFF))
            elif valid:
                if check:
                    if col < 0 or col >= n_cols:
                        bad = True
                else:
                    if escaped:
                        v = float_from_bits(raw, vsym[0])
                    elif PACKED:
                        v = float_from_bits(ent, vsym[0])
                    else:
                        v = sval[u32(u32(VOFF) + slot)]
                    if spmv:
                        accs[0] += acc(v) * acc(Xf[u32(col)])
                    else:
                        fma_row(Xf, i64(col) * nx + j0, nvalid, acc(v), accs)
                if rows > 1:                              # the row's last nonzero: its sum out
                    rowleft -= 1
                    if rowleft == 0:
                        if not check:
                            store(Y, row0 + ri, j0, nvalid, accs)
                        ri += 1
                        while ri < rows and lens[ri] == 0:
                            ri += 1
                        col = colt(row0 + ri) if diag else colt(0)
                        if ri < rows:
                            rowleft = lens[ri]
            bm1 = info >> u32(8)                          # base - 1
            D = u32(D * bm1 + D + (info & u32(0xFF)))
            B = u32(B * bm1 + B)
            return col, D, B, pos, bad, rowleft, ri

        return step

    def chain(k: int, stop: int, esc_mask: int):
        """Positions [k, stop) of a segment, one after another, (D, B) restarting at k."""
        step = position(k, esc_mask)
        if k + 1 == stop:
            @inline_device
            def last(w0, w1, w2, rem, col, D, B, pos, bad, start, below, words, end, sval,
                     sdel, sinfo, vsym, v_esc, v_used, d_esc, d_used, Xf, nx, j0, nvalid, accs,
                     n_cols, rowleft, ri, lens, Y, row0):
                return step(w0, w1, w2, rem, col, D, B, pos, bad, start, below, words, end,
                            sval, sdel, sinfo, vsym, v_esc, v_used, d_esc, d_used, Xf, nx, j0,
                            nvalid, accs, n_cols, rowleft, ri, lens, Y, row0)
            return last
        rest = chain(k + 1, stop, esc_mask)

        @inline_device
        def walk_from(w0, w1, w2, rem, col, D, B, pos, bad, start, below, words, end, sval,
                      sdel, sinfo, vsym, v_esc, v_used, d_esc, d_used, Xf, nx, j0, nvalid, accs,
                      n_cols, rowleft, ri, lens, Y, row0):
            col, D, B, pos, bad, rowleft, ri = step(
                w0, w1, w2, rem, col, D, B, pos, bad, start, below, words, end, sval, sdel,
                sinfo, vsym, v_esc, v_used, d_esc, d_used, Xf, nx, j0, nvalid, accs, n_cols, rowleft,
                ri, lens, Y, row0)
            return rest(w0, w1, w2, rem, col, D, B, pos, bad, start, below, words, end,
                        sval, sdel, sinfo, vsym, v_esc, v_used, d_esc, d_used, Xf, nx, j0, nvalid,
                        accs, n_cols, rowleft, ri, lens, Y, row0)
        return walk_from

    # with escape events (the domains in ``escapes``) and without: a segment in which no
    # lane of the warp meets an escape slot takes the second, shorter code (its escape
    # events would read nothing)
    def segment(esc_mask: int):
        """``groups(...)``: a segment's two digit groups, positions [0, l/2) and [l/2, l),
        each with its (D, B) from (0, 1)."""
        group0, group1 = chain(0, HALF, esc_mask), chain(HALF, L, esc_mask)

        @inline_device
        def groups(w0, w1, w2, rem, col, pos, bad, start, below, words, end, sval, sdel,
                   sinfo, vsym, v_esc, v_used, d_esc, d_used, Xf, nx, j0, nvalid, accs, n_cols,
                   rowleft, ri, lens, Y, row0):
            col, D0, B0, pos, bad, rowleft, ri = group0(
                w0, w1, w2, rem, col, u32(0), u32(1), pos, bad, start, below, words, end,
                sval, sdel, sinfo, vsym, v_esc, v_used, d_esc, d_used, Xf, nx, j0, nvalid,
                accs, n_cols, rowleft, ri, lens, Y, row0)
            col, D1, B1, pos, bad, rowleft, ri = group1(
                w0, w1, w2, rem, col, u32(0), u32(1), pos, bad, start, below, words, end,
                sval, sdel, sinfo, vsym, v_esc, v_used, d_esc, d_used, Xf, nx, j0, nvalid,
                accs, n_cols, rowleft, ri, lens, Y, row0)
            return col, D0, B0, D1, B1, pos, bad, rowleft, ri
        return groups

    with_escapes, plain = segment(escapes), segment(0)

    def scan(k: int):
        """``hit(...)``: whether one of this lane's valid positions k .. l - 1 of the segment
        holds an escape slot of a domain in ``escapes``."""
        unpack = unpacker(k)
        mine = bool(escapes & (ESC_DELTAS if k % 2 == 0 else ESC_VALUES))

        @inline_device
        def here(w0, w1, w2, rem, v_esc, d_esc):
            h = False
            if mine:
                h = k < rem and unpack(w0, w1, w2) >= u32(d_esc if k % 2 == 0 else v_esc)
            return h
        if k + 1 == L:
            return here
        rest = scan(k + 1)

        @inline_device
        def hit(w0, w1, w2, rem, v_esc, d_esc):
            return here(w0, w1, w2, rem, v_esc, d_esc) or rest(w0, w1, w2, rem, v_esc, d_esc)
        return hit

    any_escape = scan(0)
    # two codes per segment only where segments without escapes are common: the paper's
    # first deltas (columns) escape at nearly every row start, where the second copy would
    # only double the compile time
    split = diag and escapes != 0 and not check

    @inline_device
    def walk(words, start, end, n, lane, sval, sdel, sinfo, vsym, v_esc, v_used, d_esc, d_used,
             Xf, nx, j0, nvalid, accs, n_cols, lens, Y, row0):
        """Decode this lane's stream of ``n`` symbols from the warp's words ``[start, end)``
        (every lane of the warp calls it; see the module docstring) and add its products
        to ``accs`` (row ``c`` of X at ``Xf[c * nx + j0:]``); returns True where the check
        found an error (always False for products). With ``rows`` > 1 the stream holds the
        rows ``row0 ..`` of lengths ``lens`` (a local array of ``rows``): each row's sums go
        to ``Y`` when its last nonzero is in, and its columns restart at 0. The walk's
        positions are 32-bit offsets from ``start`` (64-bit in the check)."""
        bad = False
        below = u32((u64(1) << u64(lane)) - u64(1))   # lanes below this one
        nseg = i32((n + (L - 1)) // L)
        most = nseg
        off = 16
        while off > 0:
            most = max(most, cuda.shfl_xor_sync(FULL_MASK, most, off))
            off //= 2
        pos = u32(0)                   # this warp's words read so far
        base = to_base(start)
        # initial words: three events, the same lanes
        bal = cuda.ballot_sync(FULL_MASK, nseg > 0)
        cnt = u32(cuda.popc(bal))
        rank = u32(cuda.popc(u32(bal) & below))
        w0 = u64(0)
        w1 = u64(0)
        w2 = u64(0)
        if nseg > 0:
            w0, bad = read(words, base, u32(pos + rank), end, bad)
            w1, bad = read(words, base, u32(pos + cnt + rank), end, bad)
            w2, bad = read(words, base, u32(pos + u32(2) * cnt + rank), end, bad)
        pos = u32(pos + u32(3) * cnt)
        d = u32(0)
        r = u32(1)
        col = colt(0)
        j = i32(0)
        left = i64(n)                  # symbols of the stream from this segment on
        ri = 0                         # rows > 1: the row being decoded, nonzeros left in it
        rowleft = i64(0)
        if rows > 1:
            while ri < rows and lens[ri] == 0:
                ri += 1
            if ri < rows:
                rowleft = lens[ri]
        if diag:                       # the first row's columns count from its index
            col = colt(row0 + ri)
        while j < most:
            notlast = j < nseg - 1
            rem = i32(max(min(left, i64(L)), i64(0)))
            if split and not cuda.any_sync(FULL_MASK, any_escape(w0, w1, w2, rem, v_esc, d_esc)):
                col, D0, B0, D1, B1, pos, bad, rowleft, ri = plain(
                    w0, w1, w2, rem, col, pos, bad, base, below, words, end, sval, sdel, sinfo,
                    vsym, v_esc, v_used, d_esc, d_used, Xf, nx, j0, nvalid, accs, n_cols, rowleft,
                    ri, lens, Y, row0)
            else:
                col, D0, B0, D1, B1, pos, bad, rowleft, ri = with_escapes(
                    w0, w1, w2, rem, col, pos, bad, base, below, words, end, sval, sdel, sinfo,
                    vsym, v_esc, v_used, d_esc, d_used, Xf, nx, j0, nvalid, accs, n_cols, rowleft,
                    ri, lens, Y, row0)
            # the two checks: group g's digits join the state, then word g is extracted
            # from it (radix >= W) or read
            for grp in range(2):
                Dg = D0 if grp == 0 else D1
                Bm1 = u32((B0 if grp == 0 else B1) - u32(1))     # B may be W: B - 1 fits
                rp = wide(r, Bm1) + u64(r)
                dp = wide(d, Bm1) + u64(d) + u64(Dg)
                take = (rp >> u64(WB)) != u64(0)
                need = notlast and not take
                cb = cuda.ballot_sync(FULL_MASK, need)
                # a lane past its last segment updates d, r and its words too: it reads
                # nothing more, and they are not used again
                wg = dp & u64(W - 1)
                if need:
                    wg, bad = read(words, base, u32(pos + u32(cuda.popc(u32(cb) & below))),
                                   end, bad)
                if take:
                    d = u32(dp >> u64(WB))
                    r = u32(rp >> u64(WB))
                else:
                    d = u32(dp)
                    r = u32(rp)
                if grp == 0:
                    w0 = wg
                else:
                    w1 = wg
                pos = u32(pos + u32(cuda.popc(cb)))
            lb = cuda.ballot_sync(FULL_MASK, notlast)
            if notlast:
                w2, bad = read(words, base, u32(pos + u32(cuda.popc(u32(lb) & below))), end,
                               bad)
            pos = u32(pos + u32(cuda.popc(lb)))
            left -= L
            j += 1
        if check and i64(start) + i64(pos) != end:
            bad = True
        return bad

    return dict(tables=tables, walk=walk)


def _launch(kernel, D: DeviceCSRDtans, cfg: CSRDtansConfig, args: tuple, col_blocks: int = 0):
    """Launch ``kernel`` with ``args`` over the persistent grid: one block per
    ``threads // 32`` slices, at most the blocks resident at once
    (:func:`~spmvlab.kernels._spmm.persistent_grid`: registers, shared memory, threads) or
    ``blocks_per_sm``; ``col_blocks`` > 0: a second grid dimension of column tiles."""
    nbytes = shared_bytes(D.dtype, D.params)
    threads = cfg.threads_per_block
    slices = -(-D.n_streams // WARP)
    blocks = persistent_grid(kernel, args, blocks_for(slices, threads // WARP), threads, nbytes,
                             cfg.blocks_per_sm)
    launch_smem(kernel, (blocks, col_blocks) if col_blocks else blocks, threads, nbytes, args)


def _streams(lanes: int, rows: int):
    """Device functions for the streams of a layout (``lanes`` streams per row, or ``rows``
    rows per stream; at most one above 1):

    ``locate(row_lengths, st, n_rows, lens)`` -> (first row, piece, symbols) of stream ``st``
    (piece ``st % lanes`` of row ``st // lanes``, ``reference.csr_dtans.stream_ptr``, or rows
    ``rows * st ..``, whose lengths go to the local array ``lens``); no symbols past the
    last row;
    ``row_sum(v)``: the sum of ``v`` over the ``lanes`` lanes of a row (all of them hold it;
    ``lanes`` divides 32, so a row's lanes are one aligned group);
    ``count(n_rows)``: the streams of ``n_rows`` rows (``DeviceCSRDtans.n_streams``)."""
    @inline_device
    def count(n_rows):
        return (n_rows + rows - 1) // rows * lanes

    @inline_device
    def locate(row_lengths, st, n_rows, lens):
        n = np.int64(0)
        if rows > 1:
            row = st * rows
            for q in range(rows):
                ln = np.int64(0)
                if row + q < n_rows:
                    ln = np.int64(row_lengths[row + q])
                lens[q] = ln
                n += 2 * ln
            return row, 0, n
        row = st // lanes
        p = st % lanes
        if row < n_rows:
            ln = np.int64(row_lengths[row])
            n = 2 * ((p + 1) * ln // lanes - p * ln // lanes)
        return row, p, n

    @inline_device
    def row_sum(v):
        off = lanes // 2
        while off > 0:
            v += cuda.shfl_xor_sync(FULL_MASK, v, off)
            off //= 2
        return v

    return locate, row_sum, count


@functools.lru_cache(maxsize=None)
def _spmv_kernel(dtype_name: str, params: str, cfg: CSRDtansConfig, escapes: int = ESC_BOTH,
                 lanes: int = 1, rows: int = 1, diag: bool = False):
    W_ = _walk(dtype_name, params, False, escapes=escapes, rows=rows, spmv=True, diag=diag)
    tables, walk = W_["tables"], W_["walk"]
    locate, row_sum, count = _streams(lanes, rows)
    accnp = accumulator_np(dtype_name)

    @cuda.jit(**jit_options(max_registers=cfg.max_registers))
    def csr_dtans_spmv(vsym, vinfo, vtab, dtab, v_esc, v_used, d_esc, d_used,
                       row_lengths, warp_ptr, words, x, y):
        """Warp w of block b decodes slices b * warps + w, + grid warps, ...; lane t of a
        slice s decodes stream 32 s + t (row 32 s + t in the paper's layout): with several
        lanes per row they add up their pieces and the row's first writes y[row]; with
        several rows per lane the walk writes each row as it ends (empty ones here)."""
        sval, sdel, sinfo = tables(vtab, vinfo, dtab, v_used, d_used)
        lane = cuda.threadIdx.x % WARP
        wpb = cuda.blockDim.x // WARP
        n_rows = y.shape[0]
        n_streams = count(n_rows)
        accs = cuda.local.array(1, accnp)
        lens = cuda.local.array(rows, np.int64)
        s = cuda.blockIdx.x * wpb + cuda.threadIdx.x // WARP
        while s * WARP < n_streams:
            row, p, n = locate(row_lengths, s * WARP + lane, n_rows, lens)
            accs[0] = accnp(0)
            if rows > 1:
                for q in range(rows):
                    if row + q < n_rows and lens[q] == 0:
                        y[row + q] = 0
            walk(words, warp_ptr[s], warp_ptr[s + 1], n, lane, sval, sdel, sinfo, vsym,
                 v_esc, v_used, d_esc, d_used, x, 1, 0, 1, accs, 0, lens, y, row)
            if rows == 1:
                v = row_sum(accs[0])
                if row < n_rows and p == 0:
                    y[row] = v
            s += cuda.gridDim.x * wpb

    return csr_dtans_spmv


@functools.lru_cache(maxsize=None)
def _spmm_kernel(dtype_name: str, params: str, cfg: CSRDtansConfig, ct: int, g: int,
                 escapes: int = ESC_BOTH, lanes: int = 1, rows: int = 1, out_t: bool = False,
                 diag: bool = False):
    W_ = _walk(dtype_name, params, False, ct, g, escapes, rows, out_t=out_t, diag=diag)
    tables, walk = W_["tables"], W_["walk"]
    locate, row_sum, count = _streams(lanes, rows)
    zero, put_at, dims = (tile_parts(dtype_name, ct, g, out_t=out_t)[k]
                          for k in ("zero", "put_at", "dims"))
    accnp = accumulator_np(dtype_name)

    @cuda.jit
    def csr_dtans_spmm(vsym, vinfo, vtab, dtab, v_esc, v_used, d_esc, d_used,
                       row_lengths, warp_ptr, words, Xf, Y, nx):
        """As the SpMV for X's columns [ct * blockIdx.y, + ct): lane t of slice s keeps ct
        accumulators for its stream; rows are written as in the SpMV (``out_t``: into Y's
        transpose, (nx, rows))."""
        sval, sdel, sinfo = tables(vtab, vinfo, dtab, v_used, d_used)
        lane = cuda.threadIdx.x % WARP
        wpb = cuda.blockDim.x // WARP
        n_rows, _ = dims(Y)
        n_streams = count(n_rows)
        j0 = cuda.blockIdx.y * ct
        nvalid = min(ct, nx - j0)
        accs = cuda.local.array(ct, accnp)
        lens = cuda.local.array(rows, np.int64)
        s = cuda.blockIdx.x * wpb + cuda.threadIdx.x // WARP
        while s * WARP < n_streams:
            row, p, n = locate(row_lengths, s * WARP + lane, n_rows, lens)
            zero(accs)
            if rows > 1:
                for q in range(rows):
                    if row + q < n_rows and lens[q] == 0:
                        for j in range(ct):
                            if j < nvalid:
                                put_at(Y, row + q, j0 + j, 0)
            walk(words, warp_ptr[s], warp_ptr[s + 1], n, lane, sval, sdel, sinfo, vsym,
                 v_esc, v_used, d_esc, d_used, Xf, nx, j0, nvalid, accs, 0, lens, Y, row)
            if rows == 1:
                for j in range(ct):
                    accs[j] = row_sum(accs[j])
                if row < n_rows and p == 0:
                    for j in range(ct):
                        if j < nvalid:
                            put_at(Y, row, j0 + j, accs[j])
            s += cuda.gridDim.x * wpb

    return csr_dtans_spmm


@functools.lru_cache(maxsize=None)
def _check_kernel(dtype_name: str, params: str, lanes: int = 1, rows: int = 1,
                  diag: bool = False):
    W_ = _walk(dtype_name, params, True, rows=rows, diag=diag)
    tables, walk = W_["tables"], W_["walk"]
    locate, _, count = _streams(lanes, rows)
    accnp = accumulator_np(dtype_name)

    @cuda.jit
    def csr_dtans_check(vsym, vinfo, vtab, dtab, v_esc, v_used, d_esc, d_used,
                        row_lengths, warp_ptr, words, n_rows, n_cols, flags):
        """The SpMV's walk with the check's tests instead of products (slices as in the
        SpMV); a lane that finds an error sets flags[0] (``words``)."""
        sval, sdel, sinfo = tables(vtab, vinfo, dtab, v_used, d_used)
        lane = cuda.threadIdx.x % WARP
        wpb = cuda.blockDim.x // WARP
        n_streams = count(n_rows)
        accs = cuda.local.array(1, accnp)
        lens = cuda.local.array(rows, np.int64)
        s = cuda.blockIdx.x * wpb + cuda.threadIdx.x // WARP
        while s * WARP < n_streams:
            row, _, n = locate(row_lengths, s * WARP + lane, n_rows, lens)
            if walk(words, warp_ptr[s], warp_ptr[s + 1], n, lane, sval, sdel, sinfo, vsym,
                    v_esc, v_used, d_esc, d_used, vsym, 1, 0, 1, accs, n_cols, lens, flags, row):
                flags[0] = 1
            s += cuda.gridDim.x * wpb

    return csr_dtans_check


def _escapes(D: DeviceCSRDtans) -> int:
    """The tables with escape slots (:data:`ESC_DELTAS` | :data:`ESC_VALUES`): the kernels
    are built with escape events for those domains only; the check kernel always has both."""
    return (ESC_DELTAS if D.d_esc < D.d_used else 0) | (ESC_VALUES if D.v_esc < D.v_used else 0)


def _diag(D: DeviceCSRDtans) -> bool:
    """Whether rows' columns start from their row index (``first_delta = "diagonal"``)."""
    return D.first_delta == "diagonal"


def _table_args(D: DeviceCSRDtans) -> tuple:
    i32 = np.int32
    return (D.vsym, D.vinfo, D.vtab, D.dtab, i32(D.v_esc), i32(D.v_used), i32(D.d_esc),
            i32(D.d_used), D.row_lengths, D.warp_ptr, D.words)


CHECK_CONFIG = CSRDtansConfig(threads_per_block=128)


def launch_check(D: DeviceCSRDtans, flags):
    """Launch the check kernel (no wait): the SpMV's persistent grid of 128-thread blocks."""
    n_rows = D.shape[0]
    if n_rows:
        _launch(_check_kernel(D.dtype.name, D.params, D.lanes_per_row, D.rows_per_lane,
                              _diag(D)), D,
                CHECK_CONFIG, (*_table_args(D), np.int64(n_rows), np.int64(D.shape[1]), flags))


def device_check(D: DeviceCSRDtans) -> list[str]:
    """:data:`CHECK_FIELDS` if a warp does not decode exactly or a decoded column is out of
    range (empty: none), checked on the device."""
    return run_device_check(CHECK_FIELDS, launch_check, D)


# ---------------------------------------------------------------------------------------------
# public wrappers
# ---------------------------------------------------------------------------------------------

def spmv(D, x, out=None, config: CSRDtansConfig = CSRDtansConfig()):
    """y = D @ x. ``D`` a :class:`CSRDtansMatrix` or :class:`DeviceCSRDtans`; ``x`` host or
    device."""
    check_config(config, CSRDtansConfig)
    D = to_device(D)
    n_rows, n_cols = D.shape
    ops = prepare(x, out, n_cols, (n_rows,), D.dtype)
    _launch_spmv(D, ops.x, ops.out, config)
    return finish(ops, out)


def _launch_spmv(D, x, y, config):
    n_rows = D.shape[0]
    if n_rows:
        _launch(_spmv_kernel(D.dtype.name, D.params, config, _escapes(D), D.lanes_per_row,
                             D.rows_per_lane, _diag(D)), D, config, (*_table_args(D), x, y))


def spmm(D, X, out=None, config: CSRDtansConfig = CSRDtansConfig(), out_t: bool = False):
    """Y = D @ X for X of shape (n_cols, k); any k (tiles of ``config.spmm_tile`` columns,
    the matrix decoded once per tile; k = 1 runs the SpMV kernel); ``out_t``: return Y's
    transpose, (k, n_rows), written by the kernel."""
    check_config(config, CSRDtansConfig)
    D = to_device(D)
    ops, k_cols = prepare_spmm(D, X, out, out_t)
    n_rows = D.shape[0]
    if n_rows and k_cols == 1:
        _launch_spmv(D, ops.x.reshape(ops.x.shape[0]), ops.out.reshape(n_rows), config)
    elif n_rows and k_cols:
        ct = tile_for(k_cols, config.spmm_tile)
        g = group_for(D.dtype, k_cols, ct)
        flat = ops.x.reshape(ops.x.shape[0] * k_cols)
        _launch(_spmm_kernel(D.dtype.name, D.params, config, ct, g, _escapes(D),
                             D.lanes_per_row, D.rows_per_lane, out_t, _diag(D)), D, config,
                (*_table_args(D), flat, ops.out, np.int64(k_cols)), blocks_for(k_cols, ct))
    return finish(ops, out)


def ptx_targets():
    """SpMV, SpMM and the check: every value dtype with the paper's parameters and int32
    indices (SpMM with one-column tiles and with one and several vector groups); int64
    indices (float64) and the toy parameters (float32) once each; the kernels with escape
    events for deltas only (float64), with 32 lanes per row (float16: LLM weights; its SpMM
    also into Y's transpose, ``out_t``), with 4 rows per lane (float64) and the SpMV of
    ``first_delta = "diagonal"`` (float64, delta escapes). The walk is long to compile, so
    the combinations that change no typing are left out."""
    out = []
    cfg = CSRDtansConfig()
    cases = [("paper", dt, "int32") for dt in KERNEL_DTYPES]
    cases += [("paper", "float64", "int64"), ("toy", "float32", "int32")]
    for params, dt, it in cases:
        word = PARAMS[params].word_dtype.name
        vtab = {2: "uint32", 4: "uint64", 8: "float64"}[np.dtype(dt).itemsize]
        head = (f"void({array_sig(dt)}, {array_sig('uint16')}, {array_sig(vtab)}, "
                f"{array_sig('uint64')}, int32, int32, int32, int32, {array_sig(it)}, "
                f"{array_sig(it)}, {array_sig(word)}, ")
        spmv_sig = head + f"{array_sig(dt)}, {array_sig(dt)})"
        spmm_sig = head + f"{array_sig(dt)}, {array_sig(dt, 2)}, int64)"
        check_sig = head + f"int64, int64, {array_sig('int32')})"
        tag = f"{dt},{it},{params}"
        mul = (r"mul\.hi\.u32|mul\.wide\.u32",) if params == "paper" else ()
        layouts = [("", ESC_BOTH, 1, 1, False)]
        if (params, it) == ("paper", "int32"):
            if dt == "float64":
                layouts += [(",deltaesc", ESC_DELTAS, 1, 1, False),
                            (",rows4", ESC_BOTH, 1, 4, False),
                            (",deltaesc,diag", ESC_DELTAS, 1, 1, True)]
            if dt == "float16":
                layouts += [(",lanes32", ESC_BOTH, 32, 1, False)]
        for suffix, esc, lanes, rows, diag in layouts:
            out.append(PTXTarget(f"csr_dtans.spmv[{tag}{suffix}]",
                                 functools.partial(_spmv_kernel, dt, params, cfg, esc, lanes, rows,
                                                   diag), spmv_sig, mul))
            if diag:
                continue
            tiles = [(8, 1)]
            if (params, it, suffix) == ("paper", "int32", ""):    # one-column, one and several groups
                tiles = [(1, 1)] + [c for c in ptx_cases(dt) if c[0] in (8, 32) and c[1] > 1]
            for ct, g in tiles:
                out.append(PTXTarget(f"csr_dtans.spmm[{tag},tile{ct},g{g}{suffix}]",
                                     functools.partial(_spmm_kernel, dt, params, cfg, ct, g, esc,
                                                       lanes, rows), spmm_sig))
            if suffix == ",lanes32":                 # as SparseLinear runs it: Y's transpose
                out.append(PTXTarget(f"csr_dtans.spmm[{tag},tile8,g1{suffix},out_t]",
                                     functools.partial(_spmm_kernel, dt, params, cfg, 8, 1, esc,
                                                       lanes, rows, True), spmm_sig))
            if esc == ESC_BOTH:
                out.append(PTXTarget(f"csr_dtans.check[{tag}{suffix}]",
                                     functools.partial(_check_kernel, dt, params, lanes, rows),
                                     check_sig))
    return out
