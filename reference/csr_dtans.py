"""CSR-dtANS (dtANS paper, Sections II and IV): CSR with delta-coded columns, entropy coded
with :mod:`reference.dtans`, row streams interleaved per warp.

Encoding: the canonical CSR matrix's column indices are delta coded per row (the first
nonzero's delta is its column, each further one the step from the previous column, so every
delta after the first is >= 1). Row ``i`` becomes one symbol stream ``delta_0, value_0,
delta_1, value_1, ...`` (a nonzero's delta and value adjacent; even positions use the delta
table, odd ones the value table; a segment of ``l = 8`` symbols holds four nonzeros). Each
stream is coded by :func:`reference.dtans.encode_events`. Values are symbols by their bit
pattern (so NaN payloads and signs survive); the two domains have their own tables, built
from the whole matrix's counts by :meth:`reference.dtans.Table.from_counts` with escapes:
an escaped value is stored raw (its 16, 32 or 64 bits), an escaped delta as 32 bits (64 for
more than 2**32 columns).

Layout: rows ``32 w .. 32 w + 31`` form warp ``w``; lane ``t`` decodes row ``32 w + t``.
With ``lanes_per_row = P > 1`` (the long-row layout, for rows of thousands of nonzeros such
as LLM weights) each row is cut into ``P`` contiguous pieces, piece ``p`` of a row of ``n``
nonzeros holding its nonzeros ``[p n // P, (p + 1) n // P)``, and every piece is a stream of
its own, decoded independently: stream ``P i + p`` is piece ``p`` of row ``i`` and streams
take the places of rows above (32 per warp, so a warp decodes ``32 / P`` rows). A piece's
first delta is its first column, as a row's is. What the pieces cost is in the stored bytes:
per piece its own initial words and end of stream, and a first delta that is a column (often
escaped). The piece lengths follow from ``row_lengths`` and are not stored. With
``rows_per_lane = R > 1`` (for short rows, the other way round) rows ``R j .. R j + R - 1``
are one stream ``j``, their symbols one after the other (each row's first delta its first
column): a lane decodes R rows, their segments shared, so a short row no longer pays for a
segment of its own, its initial words and stream end. The
warp's words are stored in the order its 32 decoders read them in lockstep: every read of
the decoder is an event (initial words, escape words, conditional checks, unconditional
loads; :mod:`reference.dtans`), the lanes meet the events in the same order, and at each
event the lanes that read a word take consecutive words, lane order: with ``mask`` the ballot
of the reading lanes, lane ``t`` reads word ``start + popc(mask & ((1 << t) - 1))`` and the
warp's position advances by ``popc(mask)``. Every warp-wide load is therefore one contiguous
(coalesced) run. :func:`decode_warp` simulates exactly that.

Arrays (index = int32 unless a count needs int64, one dtype for all index arrays):

    values        value dtype [m_v]   the value table's kept values, in slot order
    value_counts  uint16 [m_v + 1]    their slot counts (1..M), last: the escape's (0: none)
    deltas        index [m_d]         the delta table's kept deltas, in slot order
    delta_counts  uint16 [m_d + 1]    their slot counts, last: the escape's
    row_lengths   index [rows]        nonzeros per row (the decoder's ``n``; with
                                      ``lanes_per_row`` > 1 its pieces' lengths follow)
    warp_ptr      index [warps + 1]   warp w's words are ``words[warp_ptr[w]:warp_ptr[w+1]]``
    words         uint32 [...]        the interleaved word streams (``params="toy"``: 2-bit
                                      words in uint8)

``params`` (an option) names the dtANS parameters: ``"paper"`` (32-bit words, K = 4096,
M = 256, l = 8, o = 3, f = 2) or ``"toy"`` (the paper's 2-bit example, K = 8, M = 4, l = 2).
``lanes_per_row`` (an option, 1, 2, 4, 8, 16 or 32): streams per row, the layout above; 1 is
the paper's layout. ``rows_per_lane`` (an option, 1, 2, 4 or 8, or ``"auto"``): rows per
stream (``"auto"``: :func:`choose_rows_per_lane` picks from the mean row length and how
local the rows' columns are); at most
one of the two is above 1. ``first_delta`` (an option, ``"column"`` or ``"diagonal"``): what a
unit's first delta is relative to (column 0, the paper's, or its row index).

Choices the paper leaves open (this module is the specification; the coder's are in
:mod:`reference.dtans`):

* Tables are stored compactly, (symbol, slot count) per kept symbol, most frequent first,
  slots given out in stored order with the escape's last; a kernel expands them into the
  paper's ``K``-entry shared-memory tables (``K * (symbol bytes + 4)`` bytes per domain,
  :attr:`CSRDtansMatrix.expanded_table_bytes`). ``nbytes`` counts what is stored. In the
  escape decision a kept symbol costs its bytes plus 2 (``entry_bits``).
* Delta first, then value, within a nonzero (a decoder can issue the ``x`` load early).
* ``warp_ptr`` is stored (the paper does not say how a warp finds its words); the row
  lengths are stored as the paper's per-row ``n``.
* Escaped symbols sit in the word stream at the point of decoding (the paper's first
  option), so a lane decoding an escape takes part in extra warp-wide loads.

``spmv``/``spmm`` decode the matrix and sum each row's products in column order, the same
sums as ``reference.csr``, bit for bit.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import scipy.sparse as sp

from . import dtans
from ._common import (
    INDEX_DTYPES, DecodeError, SparseFormat, triplet_product, canonical_csr, check_operand,
    csr_from_arrays, csr_value_array, index_dtype_for, resolve_dtype,
)
from .dtans import ESCAPE, Params

__all__ = ["PARAMS", "WARP", "LANES_PER_ROW", "ROWS_PER_LANE", "FIRST_DELTAS", "CSRDtansMatrix",
           "encode", "spmv", "spmm", "decode_warp", "cusparse_bytes", "row_symbols", "unit_deltas",
           "stored_delta_table", "delta_raw_bits", "stream_ptr"]

#: the named parameter sets ``encode(params=...)`` takes
PARAMS = {"paper": Params.paper(), "toy": Params.toy()}
#: rows per warp
WARP = 32
#: the streams per row ``encode(lanes_per_row=...)`` takes
LANES_PER_ROW = (1, 2, 4, 8, 16, 32)
#: the rows per stream ``encode(rows_per_lane=...)`` takes
ROWS_PER_LANE = (1, 2, 4, 8)
#: ``encode(rows_per_lane=AUTO)``: :func:`choose_rows_per_lane` picks one of ROWS_PER_LANE
AUTO = "auto"
#: the nonzeros per stream :func:`choose_rows_per_lane` packs rows up to
STREAM_NNZ = 24
#: x's sectors per nonzero (:func:`x_sectors`) above which :func:`choose_rows_per_lane` keeps
#: one row per lane
X_SECTORS = 0.5
#: the bytes of a sector, the unit in which the GPU's caches and DRAM move x
SECTOR_BYTES = 32
#: the fewest streams :func:`choose_rows_per_lane` packs rows down to: about twice the lanes a
#: large GPU holds at once (an H200: 132 SMs of 2048 threads), so packing never starves it
MIN_STREAMS = 1 << 19
#: what a unit's first delta is relative to, ``encode(first_delta=...)``: column 0 (the
#: paper's) or the unit's row index
FIRST_DELTAS = ("column", "diagonal")
#: the dtype of the slot counts
COUNT_DTYPE = np.dtype(np.uint16)
_INDEX_ARRAYS = ("deltas", "row_lengths", "warp_ptr")


def _uint(dtype) -> np.dtype:
    return np.dtype(f"u{np.dtype(dtype).itemsize}")


@dataclasses.dataclass(frozen=True, eq=False, repr=False)
class CSRDtansMatrix(SparseFormat):
    """CSR-dtANS storage (module docstring)."""

    values: np.ndarray
    value_counts: np.ndarray
    deltas: np.ndarray
    delta_counts: np.ndarray
    row_lengths: np.ndarray
    warp_ptr: np.ndarray
    words: np.ndarray
    shape: tuple
    params: str
    lanes_per_row: int = 1
    rows_per_lane: int = 1
    first_delta: str = "column"

    format_name = "csr_dtans"

    # derived --------------------------------------------------------------------------------
    @property
    def dtans_params(self) -> Params:
        return PARAMS[self.params]

    @property
    def nnz(self) -> int:
        return int(self.row_lengths.astype(np.int64).sum())

    @property
    def n_streams(self) -> int:
        """Decoded streams: ``lanes_per_row`` per row, or one per ``rows_per_lane`` rows."""
        return -(-self.n_rows // int(self.rows_per_lane)) * int(self.lanes_per_row)

    @property
    def n_warps(self) -> int:
        return -(-self.n_streams // WARP)

    @property
    def table_bytes(self) -> int:
        """Bytes of the stored tables (symbols and slot counts)."""
        return int(sum(getattr(self, n).nbytes for n in ("values", "value_counts", "deltas", "delta_counts")))

    @property
    def expanded_table_bytes(self) -> int:
        """Bytes of the paper's ``K``-slot tables a kernel would build: per slot and domain
        the symbol plus a 4-byte digit/base entry."""
        K = int(self.dtans_params.K)
        return K * (self.values.dtype.itemsize + 4) + K * (self.deltas.dtype.itemsize + 4)

    def delta_symbols(self) -> np.ndarray:
        """The kept deltas as the coder's symbols (int64): the stored ones, or with
        ``first_delta = "diagonal"`` those modulo ``2**delta_raw_bits(cols)`` (as uint64)."""
        return _delta_symbols(self.deltas, self.first_delta, self.n_cols)

    def tables(self) -> tuple[dtans.Table, dtans.Table]:
        """(delta table, value table) as :class:`reference.dtans.Table` (cheap checks first)."""
        self.validate(checksum=False)
        return _tables(self.delta_symbols(), self.delta_counts, self.values, self.value_counts,
                       self.dtans_params, self.n_cols)

    def to_csr(self) -> sp.csr_matrix:
        """The canonical CSR matrix this encodes, exactly."""
        self.validate(expensive=True)
        indptr, cols, vals = _decode(self)
        return csr_from_arrays(self.shape, indptr, cols, vals)

    # validation -----------------------------------------------------------------------------
    def _check_arrays(self):
        """Option; dtypes and lengths; slot counts within M and K; deltas >= 0; row lengths in
        [0, cols]; ``warp_ptr`` from 0 to the word count, non-decreasing; words below W."""
        self._require(isinstance(self.params, str) and self.params in PARAMS, "params",
                      f"one of {sorted(PARAMS)}", repr(self.params))
        lpr = self.lanes_per_row
        self._require(isinstance(lpr, (int, np.integer)) and not isinstance(lpr, (bool, np.bool_))
                      and lpr in LANES_PER_ROW,
                      "lanes_per_row", f"one of {LANES_PER_ROW}", repr(self.lanes_per_row))
        rpl = self.rows_per_lane
        self._require(isinstance(rpl, (int, np.integer)) and not isinstance(rpl, (bool, np.bool_))
                      and rpl in ROWS_PER_LANE, "rows_per_lane", f"one of {ROWS_PER_LANE}", repr(rpl))
        self._require(lpr == 1 or rpl == 1, "rows_per_lane",
                      "1 when lanes_per_row is above 1", f"{rpl} with lanes_per_row {lpr}")
        P = self.dtans_params
        idx = self.warp_ptr.dtype
        for name in _INDEX_ARRAYS:
            a = getattr(self, name)
            self._require(a.ndim == 1 and a.dtype in INDEX_DTYPES, name, "a 1-D int32 or int64 array",
                          f"{a.ndim}-D {a.dtype}")
            self._require(a.dtype == idx, f"{name}.dtype", f"{idx} (as warp_ptr)", a.dtype)
        self._require(self.words.ndim == 1 and self.words.dtype == P.word_dtype, "words",
                      f"a 1-D {P.word_dtype} array ({self.params} params)",
                      f"{self.words.ndim}-D {self.words.dtype}")
        for sym, cnt in (("values", "value_counts"), ("deltas", "delta_counts")):
            s, c = getattr(self, sym), getattr(self, cnt)
            self._require(c.ndim == 1 and c.dtype == COUNT_DTYPE, cnt, "a 1-D uint16 array",
                          f"{c.ndim}-D {c.dtype}")
            self._require(c.size == s.size + 1, f"{cnt}.size",
                          f"{s.size + 1} ({sym}.size + 1: the escape's count last)", c.size)
            kept = c[:-1].astype(np.int64)
            self._require(bool(np.all((kept >= 1) & (kept <= P.M))) and int(c[-1]) <= P.M, cnt,
                          f"counts in [1, M = {P.M}] (the escape's in [0, {P.M}])", c.tolist()[:8])
            self._require(int(c.astype(np.int64).sum()) <= P.K, cnt, f"at most K = {P.K} slots in all",
                          int(c.astype(np.int64).sum()))
        self._require(self.first_delta in FIRST_DELTAS, "first_delta", f"one of {FIRST_DELTAS}",
                      repr(self.first_delta))
        if self.first_delta == "column":
            self._require(bool(np.all(self.deltas >= 0)), "deltas", "deltas >= 0", "a negative delta")
        else:                   # signed symbols of raw bits (int32 ones always are)
            raw, d = delta_raw_bits(self.n_cols), self.deltas
            if d.size and raw < d.dtype.itemsize * 8:
                half = 1 << (raw - 1)
                self._require(bool(np.all((d >= -half) & (d < half))), "deltas",
                              f"deltas in [-2**{raw - 1}, 2**{raw - 1}) (first_delta 'diagonal')",
                              f"range [{d.min()}, {d.max()}]")
        self._check_index_array("row_lengths", self.row_lengths, self.n_rows)
        rl = self.row_lengths
        self._require(bool(np.all((rl >= 0) & (rl <= self.n_cols))), "row_lengths",
                      f"lengths in [0, {self.n_cols}]", f"range [{rl.min()}, {rl.max()}]" if rl.size else "")
        self._check_indptr("warp_ptr", self.warp_ptr, self.n_warps, self.words.size)
        if self.words.size:
            top = int(self.words.max())
            self._require(top < P.W, "words", f"words below W = {P.W}", f"a word {top}")
        nnz = self.nnz
        for cnt in ("value_counts", "delta_counts"):
            used = int(getattr(self, cnt).astype(np.int64).sum())
            self._require((used > 0) == (nnz > 0), cnt, "slots exactly when there are nonzeros",
                          f"{used} slots for {nnz} nonzeros")
        want = index_dtype_for(nnz, self.words.size, *self.shape)
        self._require(idx == want, "warp_ptr.dtype", f"{want} (int64 only if a count needs it)", idx)

    def _check_entries(self, canonical: bool):
        """Every warp decodes (its words consumed exactly) and every column is in range;
        canonical: columns increasing within a row, no explicit zeros, table symbols
        distinct."""
        indptr, cols, vals = _decode(self)
        if cols.size:
            bad = int(cols.max()) if int(cols.max()) >= self.n_cols else int(cols.min())
            self._require(0 <= bad < self.n_cols, "words",
                          f"decoded columns in [0, {self.n_cols})", f"column {bad}",
                          "re-encode the matrix")
        if not canonical:
            return
        first = np.zeros(cols.size, bool)
        first[indptr[:-1][np.diff(indptr) > 0]] = True
        steps = np.diff(cols, prepend=0)
        self._require(bool(np.all(first | (steps > 0))), "words",
                      "strictly increasing columns within each row", "a repeated or decreasing column")
        self._require(bool(np.all(vals != 0)), "words", "no explicit zeros", "a stored zero")
        vbits = self.values.view(_uint(self.values.dtype))
        for name, syms in (("values", vbits), ("deltas", self.delta_symbols())):
            self._require(np.unique(syms).size == syms.size, name, "distinct table symbols",
                          "a symbol twice")


def delta_raw_bits(n_cols: int) -> int:
    """Bits of an escaped delta: 32, or 64 for more than 2**32 columns."""
    return 32 if int(n_cols) <= 1 << 32 else 64


def _delta_symbols(deltas: np.ndarray, first_delta: str, n_cols: int) -> np.ndarray:
    """The coder's symbols of ``deltas`` (a matrix's kept ones, or every nonzero's): the
    deltas themselves (int64), or for ``first_delta = "diagonal"`` modulo
    ``2**delta_raw_bits(n_cols)`` (uint64)."""
    if first_delta != "diagonal":
        return deltas.astype(np.int64)
    raw = delta_raw_bits(n_cols)
    u = deltas.astype(np.int64).view(np.uint64)
    return u if raw == 64 else u & np.uint64((1 << raw) - 1)


def stored_delta_table(q: dict, idx: np.dtype, n_cols: int, first_delta: str) -> tuple:
    """:func:`stored_table` of the delta multiplicities ``q`` (keyed by symbol) in index
    dtype ``idx``: for ``first_delta = "diagonal"`` the kept deltas are stored as the signed
    values their symbols modulo ``2**raw_bits`` stand for."""
    if first_delta == "diagonal":
        raw = delta_raw_bits(n_cols)
        half, full = 1 << (raw - 1), 1 << raw
        q = {s if s is ESCAPE or int(s) < half else int(s) - full: c for s, c in q.items()}
    return stored_table(q, idx)


def unit_deltas(indptr: np.ndarray, cols: np.ndarray, lanes_per_row: int = 1,
                first_delta: str = "column", n_cols: int = 0) -> np.ndarray:
    """Every nonzero's delta symbol in CSR order (int64; uint64 for ``"diagonal"``): its
    column minus the previous column of its unit (row, or piece with ``lanes_per_row``), for
    a unit's first nonzero minus 0 (``"column"``) or the unit's row (``"diagonal"``, modulo
    ``2**delta_raw_bits(n_cols)``)."""
    cols = np.asarray(cols, dtype=np.int64)
    uptr = stream_ptr(indptr, lanes_per_row)
    prev = np.empty_like(cols)
    prev[1:] = cols[:-1]
    starts = uptr[:-1][np.diff(uptr) > 0]
    base = np.arange(uptr.size - 1, dtype=np.int64)[np.diff(uptr) > 0] // int(lanes_per_row)
    if cols.size:
        prev[starts] = base if first_delta == "diagonal" else 0
    return _delta_symbols(cols - prev, first_delta, n_cols)


def _tables(deltas, delta_counts, values, value_counts, P: Params, n_cols: int) -> tuple:
    """(delta table, value table) from the kept delta symbols (:func:`_delta_symbols`), the
    stored values and the counts."""
    out = []
    for syms, cnt, raw in ((deltas, delta_counts, delta_raw_bits(n_cols)),
                           (values.view(_uint(values.dtype)), value_counts, values.dtype.itemsize * 8)):
        mult = {int(s): int(c) for s, c in zip(syms.tolist(), cnt[:-1].tolist())}
        if int(cnt[-1]):
            mult[ESCAPE] = int(cnt[-1])
        out.append(dtans.Table.from_multiplicities(mult, P, raw_bits=raw) if mult else None)
    return tuple(out)


# ---------------------------------------------------------------------------------------------
# decoding: one warp in lockstep
# ---------------------------------------------------------------------------------------------


def decode_warp(words: np.ndarray, lengths, tables, P: Params) -> list[list]:
    """The symbol streams of one warp's rows (``lengths[t]`` symbols for lane ``t``) from its
    interleaved ``words``, read as the lockstep decoders do (ballot + popc per event).
    :class:`~reference._common.DecodeError` if a lane runs past the words, or words are left."""
    lanes = {}
    out: list = [[] for _ in lengths]
    for t, n in enumerate(lengths):
        gen = dtans.decoder(int(n), tables, P)
        try:
            lanes[t] = (gen, next(gen))
        except StopIteration as stop:
            out[t] = stop.value
    pos = 0
    while lanes:
        event = min(ev for _, ev in lanes.values())
        ballot = sum(1 << t for t, (_, ev) in lanes.items() if ev == event)
        for t in [t for t, (_, ev) in lanes.items() if ev == event]:
            at = pos + bin(ballot & ((1 << t) - 1)).count("1")      # popc of the lower lanes
            if at >= words.size:
                raise DecodeError(f"words: expected more than {words.size} words in the warp, "
                                  f"received the end at lane {t}, event {event}")
            gen = lanes[t][0]
            try:
                lanes[t] = (gen, gen.send(int(words[at])))
            except StopIteration as stop:
                out[t] = stop.value
                del lanes[t]
        pos += bin(ballot).count("1")
    if pos != words.size:
        raise DecodeError(f"words: expected {pos} words in the warp, received {words.size}")
    return out


def stream_ptr(indptr: np.ndarray, lanes_per_row: int, rows_per_lane: int = 1) -> np.ndarray:
    """Where each stream's nonzeros start (int64): piece ``p`` of row ``i`` (``n`` nonzeros)
    starts at ``indptr[i] + p * n // lanes_per_row``; with ``rows_per_lane = R`` stream ``j``
    starts at row ``R j``. ``stream_ptr(indptr, lanes_per_row)`` alone gives the units whose
    first delta is a column (pieces, or rows)."""
    indptr = np.asarray(indptr, dtype=np.int64)
    if int(rows_per_lane) > 1:
        return np.concatenate((indptr[:-1][::int(rows_per_lane)], indptr[-1:]))
    P = int(lanes_per_row)
    n = np.diff(indptr)
    starts = indptr[:-1, None] + (np.arange(P, dtype=np.int64)[None, :] * n[:, None]) // P
    return np.concatenate((starts.reshape(-1), indptr[-1:]))


def row_symbols(cols: np.ndarray, value_bits: np.ndarray) -> list:
    """One row's symbol stream: delta, value, delta, value, ..."""
    deltas = np.diff(cols.astype(np.int64), prepend=0)
    out: list = []
    for d, v in zip(deltas.tolist(), value_bits.tolist()):
        out += [d, v]
    return out


def _decode(M: CSRDtansMatrix):
    """(indptr int64, columns int64, values) of every nonzero, decoded warp by warp."""
    P = M.dtans_params
    tables = _tables(M.delta_symbols(), M.delta_counts, M.values, M.value_counts, P, M.n_cols)
    lengths = M.row_lengths.astype(np.int64)
    indptr = np.concatenate(([0], np.cumsum(lengths)))
    sptr = stream_ptr(indptr, M.lanes_per_row, M.rows_per_lane)
    pieces = np.diff(sptr)
    ptr = M.warp_ptr.astype(np.int64)
    diag = M.first_delta == "diagonal"
    deltas, bits = [], []
    kept_v = M.values.view(_uint(M.values.dtype))
    for w in range(M.n_warps):
        n = pieces[w * WARP:(w + 1) * WARP]
        try:
            streams = decode_warp(M.words[ptr[w]:ptr[w + 1]], (2 * n).tolist(), tables, P)
        except DecodeError as exc:
            raise DecodeError(f"{type(M).__name__}.{exc} (warp {w}): re-encode the matrix") from None
        for s in streams:                 # the streams' nonzeros follow each other in CSR order
            deltas.append(np.array(s[0::2], dtype=np.uint64 if diag else np.int64))
            bits.append(np.array(s[1::2], dtype=kept_v.dtype))
    d = np.concatenate(deltas) if deltas else np.zeros(0, np.uint64 if diag else np.int64)
    # columns: each unit's (row's or piece's) deltas summed from its base (0 or its row;
    # modulo 2**raw_bits for "diagonal", in wrapping uint64)
    units = stream_ptr(indptr, M.lanes_per_row)
    per_unit = np.diff(units)
    unit_of = np.repeat(np.arange(per_unit.size, dtype=np.int64), per_unit)
    cum = np.cumsum(d, dtype=d.dtype)
    before = np.concatenate((np.zeros(1, d.dtype), cum))[units[:-1]]
    if diag:
        base = (np.arange(per_unit.size, dtype=np.int64) // int(M.lanes_per_row)).astype(np.uint64)
        cols = (base[unit_of] + cum - before[unit_of])
        raw = delta_raw_bits(M.n_cols)
        if raw < 64:
            cols &= np.uint64((1 << raw) - 1)
        cols = cols.view(np.int64)
    else:
        cols = cum - before[unit_of]
    vals = (np.concatenate(bits) if bits else kept_v[:0]).view(M.values.dtype)
    return indptr, cols, vals


# ---------------------------------------------------------------------------------------------
# encoding
# ---------------------------------------------------------------------------------------------


def stored_table(q: dict, dtype_out, view=None) -> tuple:
    """(kept symbols in ``dtype_out``, slot counts with the escape's last) of multiplicities
    ``q``; ``view``: the unsigned type the symbols are (value bit patterns), viewed as
    ``dtype_out``."""
    keys = [s for s in q if s is not ESCAPE]
    syms = np.array(keys, dtype=view or dtype_out)
    if view is not None:
        syms = syms.view(dtype_out)
    counts = np.array([q[s] for s in keys] + [q.get(ESCAPE, 0)], dtype=COUNT_DTYPE)
    return syms, counts


def check_lanes_per_row(lanes_per_row) -> int:
    """``lanes_per_row`` as an int, or OptionError naming the values it takes."""
    if isinstance(lanes_per_row, (bool, np.bool_)) or lanes_per_row not in LANES_PER_ROW:
        from ._common import OptionError, problem
        raise OptionError(problem("lanes_per_row", f"one of {LANES_PER_ROW}", repr(lanes_per_row),
                                  "pass 1 (a lane per row) or 32 (a warp per row)"))
    return int(lanes_per_row)


def check_rows_per_lane(rows_per_lane, lanes_per_row: int) -> int | str:
    """``rows_per_lane`` as an int (or :data:`AUTO` as given), or OptionError (a value it
    does not take, or above 1 with ``lanes_per_row`` above 1)."""
    from ._common import OptionError, problem
    if isinstance(rows_per_lane, str) and rows_per_lane == AUTO:
        return AUTO
    if isinstance(rows_per_lane, (bool, np.bool_)) or rows_per_lane not in ROWS_PER_LANE:
        raise OptionError(problem("rows_per_lane", f"one of {ROWS_PER_LANE} or {AUTO!r}",
                                  repr(rows_per_lane), "pass 1 (a lane per row), 2-8 for rows "
                                  "of a few nonzeros, or 'auto'"))
    if rows_per_lane > 1 and lanes_per_row > 1:
        raise OptionError(problem("rows_per_lane", "1 when lanes_per_row is above 1",
                                  f"{rows_per_lane} with lanes_per_row {lanes_per_row}",
                                  "choose one of the two layouts"))
    return int(rows_per_lane)


def x_sectors(indptr: np.ndarray, cols: np.ndarray, itemsize: int, warps: int = 4096) -> float:
    """The distinct :data:`SECTOR_BYTES`-byte sectors of x (of ``itemsize``-byte elements) that
    each warp's 32 consecutive rows read, per nonzero: near 1 where the rows' columns scatter
    (every gather its own sector), a small fraction where neighbouring rows read neighbouring
    columns (stencils, bands). Counted on up to ``warps`` warps spread evenly over the rows
    (0.0 without nonzeros)."""
    n_rows = int(indptr.size) - 1
    n_warps = -(-n_rows // WARP)
    if n_warps <= 0:
        return 0.0
    pick = np.unique(np.linspace(0, n_warps - 1, min(n_warps, warps)).astype(np.int64))
    lo = indptr[pick * WARP]
    hi = indptr[np.minimum((pick + 1) * WARP, n_rows)]
    lens = hi - lo
    total = int(lens.sum())
    if total == 0:
        return 0.0
    warp_of = np.repeat(np.arange(pick.size), lens)
    at = np.repeat(lo - (np.cumsum(lens) - lens), lens) + np.arange(total)
    sector = cols[at] * int(itemsize) // SECTOR_BYTES
    order = np.lexsort((sector, warp_of))
    sector, warp_of = sector[order], warp_of[order]
    new = (sector[1:] != sector[:-1]) | (warp_of[1:] != warp_of[:-1])
    return float(1 + int(np.count_nonzero(new))) / total


def choose_rows_per_lane(rows_per_lane: int | str, indptr: np.ndarray, lanes_per_row: int,
                         cols: np.ndarray, itemsize: int) -> int:
    """``rows_per_lane`` itself, or for :data:`AUTO` the most rows per stream (of
    :data:`ROWS_PER_LANE`) whose mean nonzeros stay within :data:`STREAM_NNZ` and that leave
    at least :data:`MIN_STREAMS` streams, where x's gathers are local (:func:`x_sectors` at
    most :data:`X_SECTORS` for values of ``itemsize`` bytes); else 1, as with
    ``lanes_per_row`` above 1. Why: a stream's fixed costs (its initial words, its final
    segment's unfilled slots and end) weigh on rows of a few nonzeros, and packing rows
    shares them; but it leaves fewer, longer streams: a warp's lockstep walk lengthens
    wherever its lanes' streams differ in length, a lane's rows are written at a stride, and
    a matrix of too few streams leaves the GPU's lanes idle. Where the rows' columns scatter,
    x's gathers (a sector per nonzero) outweigh the stream's bytes, so the bytes packing
    saves are a small share of the traffic and its costs win. The bounds come from timing
    1, 2, 4 and 8 rows per lane on stencils, bands, random graphs and the SuiteSparse
    matrices (docs/performance.md)."""
    if not (isinstance(rows_per_lane, str) and rows_per_lane == AUTO):
        return int(rows_per_lane)
    n_rows = int(indptr.size) - 1
    if lanes_per_row > 1 or n_rows <= 0:
        return 1
    mean = float(indptr[-1] - indptr[0]) / n_rows
    best = max([r for r in ROWS_PER_LANE
                if r * mean <= STREAM_NNZ and -(-n_rows // r) >= MIN_STREAMS], default=1)
    if best > 1 and x_sectors(indptr, cols, itemsize) > X_SECTORS:
        return 1
    return best


def check_first_delta(first_delta) -> str:
    """``first_delta`` as given, or OptionError naming the values it takes."""
    if not isinstance(first_delta, str) or first_delta not in FIRST_DELTAS:
        from ._common import OptionError, problem
        raise OptionError(problem("first_delta", f"one of {FIRST_DELTAS}", repr(first_delta),
                                  "pass 'column' (the paper's) or 'diagonal'"))
    return first_delta


def encode(A, dtype=None, lossy: bool = False, params: str = "paper",
           lanes_per_row: int = 1, rows_per_lane: int = 1,
           first_delta: str = "column") -> CSRDtansMatrix:
    """Any scipy.sparse matrix or dense 2-D array -> :class:`CSRDtansMatrix`.

    ``params``: ``"paper"`` or ``"toy"`` (:data:`PARAMS`); ``dtype`` the value dtype
    (default: A's own); ``lossy``: accept values that overflow or underflow in ``dtype``;
    ``lanes_per_row``: streams per row; ``rows_per_lane``: rows per stream, or ``"auto"``
    (:func:`choose_rows_per_lane`) (module docstring; 1 and 1: the paper's layout);
    ``first_delta``: a unit's first delta from column 0
    (``"column"``, the paper's) or from its row (``"diagonal"``)."""
    if params not in PARAMS:
        from ._common import OptionError, problem
        raise OptionError(problem("params", f"one of {sorted(PARAMS)}", repr(params)))
    lanes = check_lanes_per_row(lanes_per_row)
    rpl = check_rows_per_lane(rows_per_lane, lanes)
    first_delta = check_first_delta(first_delta)
    P = PARAMS[params]
    dt = resolve_dtype(A, dtype)
    csr = canonical_csr(A, dt, lossy)
    n_rows, n_cols = csr.shape
    vals = csr_value_array(csr, dt)
    vbits = vals.view(_uint(dt))
    indptr = csr.indptr.astype(np.int64)
    cols = csr.indices.astype(np.int64)
    rpl = choose_rows_per_lane(rpl, indptr, lanes, cols, dt.itemsize)
    uptr = stream_ptr(indptr, lanes)                  # units: rows or pieces
    dsym = unit_deltas(indptr, cols, lanes, first_delta, n_cols).tolist()
    vsym = vbits.tolist()
    units = [[x for pair in zip(dsym[uptr[i]:uptr[i + 1]], vsym[uptr[i]:uptr[i + 1]]) for x in pair]
             for i in range(uptr.size - 1)]
    streams = [sum(units[i:i + rpl], []) for i in range(0, len(units), rpl)]
    deltas_all = [s for st in streams for s in st[0::2]]
    vraw, draw = dt.itemsize * 8, delta_raw_bits(n_cols)
    vq = dtans.choose_multiplicities(dtans.count(vbits.tolist()), P, vraw, vraw + 16)
    dq = dtans.choose_multiplicities(dtans.count(deltas_all), P, draw,
                                     index_dtype_for(csr.nnz, n_rows, n_cols).itemsize * 8 + 16)
    vtab = dtans.Table.from_multiplicities(vq, P, vraw) if vq else None
    dtab = dtans.Table.from_multiplicities(dq, P, draw) if dq else None
    words, warp_ptr = [], [0]
    for w in range(-(-len(streams) // WARP)):
        merged = []
        for t, st in enumerate(streams[w * WARP:(w + 1) * WARP]):
            merged += [(ev, t, word) for ev, word in dtans.encode_events(st, (dtab, vtab), P)]
        merged.sort(key=lambda e: (e[0], e[1]))          # event by event, lanes in order
        words += [word for _, _, word in merged]
        warp_ptr.append(len(words))
    idx = index_dtype_for(csr.nnz, len(words), n_rows, n_cols)
    v_syms, v_counts = stored_table(vq, dt, _uint(dt))
    d_syms, d_counts = stored_delta_table(dq, idx, n_cols, first_delta)
    return CSRDtansMatrix(values=v_syms, value_counts=v_counts, deltas=d_syms, delta_counts=d_counts,
                          row_lengths=np.diff(indptr).astype(idx), warp_ptr=np.array(warp_ptr, dtype=idx),
                          words=np.array(words, dtype=P.word_dtype), shape=(int(n_rows), int(n_cols)),
                          params=params, lanes_per_row=lanes, rows_per_lane=rpl, first_delta=first_delta)


# ---------------------------------------------------------------------------------------------
# products and sizes
# ---------------------------------------------------------------------------------------------


def _nonzeros(M: CSRDtansMatrix):
    indptr, cols, vals = _decode(M)
    rows = np.repeat(np.arange(M.n_rows, dtype=np.int64), np.diff(indptr))
    return rows, cols, vals


def spmv(M: CSRDtansMatrix, x: np.ndarray) -> np.ndarray:
    """y = M @ x, products and sums in the accumulator type, y in M's value type
    (= ``reference.csr.spmv`` bit for bit). ``M`` is validated fully first."""
    M = CSRDtansMatrix.checked(M)
    x = check_operand(np.asarray(x) if not hasattr(x, "dtype") else x, M.n_cols, M.dtype)
    return triplet_product(*_nonzeros(M), M.n_rows, x, M.dtype)


def spmm(M: CSRDtansMatrix, X: np.ndarray) -> np.ndarray:
    """Y = M @ X for X of shape (n_cols, k); Y has shape (n_rows, k)."""
    M = CSRDtansMatrix.checked(M)
    X = check_operand(X, M.n_cols, M.dtype, name="X", ndim=2)
    return triplet_product(*_nonzeros(M), M.n_rows, X, M.dtype)


def cusparse_bytes(A, dtype=None, lossy: bool = False, slice_size: int = 32) -> dict:
    """Bytes cuSPARSE's CSR, COO and SELL (slices of ``slice_size`` rows) take for ``A`` with
    int32 indices and ``dtype`` values (the paper's baselines):

    * csr: ``(rows + 1) * 4 + nnz * (4 + value bytes)``
    * coo: ``nnz * (4 + 4 + value bytes)``
    * sell: ``(slices + 1) * 4`` slice offsets plus, per slice, ``slice_size`` rows padded to
      its longest row, a column index and a value each (the last slice padded to
      ``slice_size`` rows too)."""
    dt = resolve_dtype(A, dtype)
    csr = canonical_csr(A, dt, lossy)
    vb, n_rows = dt.itemsize, csr.shape[0]
    lengths = np.diff(csr.indptr.astype(np.int64))
    n_slices = -(-n_rows // slice_size)
    padded = np.zeros(n_slices * slice_size, np.int64)
    padded[:n_rows] = lengths
    width = padded.reshape(n_slices, slice_size).max(axis=1) if n_slices else padded
    sell_entries = int(width.sum()) * slice_size
    return {"csr": (n_rows + 1) * 4 + csr.nnz * (4 + vb), "coo": csr.nnz * (8 + vb),
            "sell": (n_slices + 1) * 4 + sell_entries * (4 + vb)}
