"""Thread level of a generated kernel: the walk over a thread-group's slots (plain,
bitmap-compacted or software-prefetched loads of A and B) and the thread's own reduction
into its partial sums. Called from ``_emit.kernel_source``.
"""
from __future__ import annotations

from ._spec import PAD, ROW_START, Spec, _Writer, _columns, _emit_write


def _emit_thread(emit: _Writer, spec: Spec):
    acc = f"np.{spec.acc}"
    bitmap = spec.thread_alg == "THREAD_BITMAP"
    emit(f"# ---- thread level ({spec.thread_alg or 'at most one slot'}): walk the thread-group's slots")
    emit(f"lo = {spec.thread_offset.at('tg')}")
    emit(f"hi = {spec.thread_offset.at('tg + 1')}")
    if spec.interleave:
        emit(f"base = {spec.warp_offset.at('wg')}   # the warp-group's first slot")
    for j in _columns(spec):
        emit(f"a{j} = {acc}(0.0)")
        emit(f"ld{j} = {acc}(0.0)")
    emit("cur = np.int64(-1)        # row of the slots being summed")
    emit("lead_row = np.int64(-1)   # row of the lead (the slots before the first row start)")
    emit("started = False")
    emit("for s in range(lo, hi):")
    emit.indent()
    if spec.interleave:
        T, V = spec.groups_per_warp, spec.vector_width
        emit(f"p = base + ((s - lo) // {V}) * {T * V} + t * {V} + (s - lo) % {V}   # interleaved storage")
    else:
        emit("p = s")
    emit("f = flags[p]")
    emit("r = np.int64(rows[p])")
    emit(f"if f & {ROW_START}:")
    emit.indent()
    if bitmap:
        emit("if started:   # the row that began in this range ends here: complete")
        emit.indent()
        _emit_write(emit, spec, "cur", "a", False)
        emit.dedent()
        emit("else:         # the slots so far end a row that began before this range")
        emit.indent()
        for j in _columns(spec):
            emit(f"ld{j} = a{j}")
        emit("lead_row = cur")
        emit.dedent()
        for j in _columns(spec):
            emit(f"a{j} = {acc}(0.0)")
    emit("started = True")
    emit.dedent()
    emit("if r >= 0:\n    cur = r")
    emit(f"if (f & {PAD}) == 0:   # padding contributes an exact zero")
    emit.indent()
    emit(f"v = {acc}(values[p])")
    emit("k = np.int64(cols[p])")
    _emit_fma(emit, spec)
    emit.dedent()
    emit.dedent()
    _emit_partials(emit, spec)


def _emit_partials(emit: _Writer, spec: Spec):
    """After the walk: the thread-group's lead partial (before its first row start) and tail
    partial (from its last row start on)."""
    acc = f"np.{spec.acc}"
    emit("# the thread-group's partials: lead (before its first row start), tail (from its last)")
    emit("if started:")
    emit.indent()
    emit("tail_row = cur")
    for j in _columns(spec):
        emit(f"tl{j} = a{j}")
    emit.dedent()
    emit("else:")
    emit.indent()
    emit("tail_row = np.int64(-1)")
    emit("lead_row = cur")
    for j in _columns(spec):
        emit(f"tl{j} = {acc}(0.0)")
        emit(f"ld{j} = a{j}")
    emit.dedent()


def _emit_fma(emit: _Writer, spec: Spec):
    """``a{j} += v * B[k, col0 + j]`` for the thread's columns: one element at a time, or
    (``b_vector`` vec > 1, B flat) one vec-wide vector load per group of vec columns (N is a
    multiple of vec, so a group lies wholly inside or wholly beyond N)."""
    acc = f"np.{spec.acc}"
    vec = spec.b_vector
    if vec == 1:
        for j in _columns(spec):
            emit(f"a{j} += v * {acc}(B[k, cg{j}])")
        return
    emit("kb = k * n_cols")
    for i in range(spec.thread_cols // vec):
        emit(f"xs = vload{vec}(B, kb + cg{i})")
        for q in range(vec):
            emit(f"a{i * vec + q} += v * {acc}(xs[{q}])")


def _emit_batched_slots(emit: _Writer, spec: Spec, col: str, V: int):
    """The V slots of a full vector load (``vs``, ``ks``) with every gather of B written
    before the first product (``x{q}_{i}``: slot q's i-th vector of B), so that they are in
    flight together; the sums are formed in the same order as slot by slot."""
    acc = f"np.{spec.acc}"
    vec = spec.b_vector
    for q in range(V):
        emit(f"v{q} = {acc}(vs[{q}])")
        emit(f"kb{q} = ({col.format(f'ks[{q}]')}) * n_cols")   # the column with its block's base, times the row length
        for i in range(spec.thread_cols // vec):
            emit(f"x{q}_{i} = vload{vec}(B, kb{q} + cg{i})")
    for q in range(V):
        for i in range(spec.thread_cols // vec):
            for r in range(vec):
                emit(f"a{i * vec + r} += v{q} * {acc}(x{q}_{i}[{r}])")


def _emit_compact_start(emit: _Writer, spec: Spec, pos: str):
    """THREAD_BITMAP over compact rows: at slot ``pos`` == ``nxt`` a row (or several, the
    empty ones skipped) begins: hand over the sum as the reference does."""
    acc = f"np.{spec.acc}"
    emit(f"if {pos} == nxt:")
    emit.indent()
    emit("if started:   # the row that began in this range ends here: complete")
    emit.indent()
    emit(f"orow = {'np.int64(row_order[cur])' if spec.sort_out else 'cur'}")
    _emit_write(emit, spec, "orow", "a", False)
    emit.dedent()
    emit("else:         # the slots so far end a row that began before this range")
    emit.indent()
    for j in _columns(spec):
        emit(f"ld{j} = a{j}")
    emit("lead_row = cur")
    emit.dedent()
    for j in _columns(spec):
        emit(f"a{j} = {acc}(0.0)")
    emit("started = True")
    emit("cur += 1")
    emit("nxt = np.int64(row_ptr[cur + 1])")
    emit(f"while nxt <= {pos}:   # empty rows in between")
    emit.indent()
    emit("cur += 1")
    emit("nxt = np.int64(row_ptr[cur + 1])")
    emit.dedent()
    emit.dedent()


def _emit_thread_compact(emit: _Writer, spec: Spec):
    """The thread body over compact storage: the group's real slots [lo, lo + tg_len) (its
    padding never read), its first row from ``tg_row``, later row starts from ``row_ptr``,
    ``vector_width`` slots of values and columns per load."""
    acc = f"np.{spec.acc}"
    bitmap = spec.thread_alg == "THREAD_BITMAP"
    V = spec.vector_width
    emit(f"# ---- thread level ({spec.thread_alg or 'at most one slot'}, compact storage): the real slots")
    emit(f"lo = {spec.thread_offset.at('tg')}")
    emit("end = lo + np.int64(tg_len[tg])")
    emit("cur = np.int64(tg_row[tg])   # row of the group's first real slot (-1: none)")
    if spec.interleave:
        emit(f"base = {spec.warp_offset.at('wg')}   # the warp-group's first slot")
    if spec.col_mode == "u16base":
        emit("cb = np.int64(col_base[cuda.blockIdx.x])   # the block's first column")
    for j in _columns(spec):
        emit(f"a{j} = {acc}(0.0)")
        emit(f"ld{j} = {acc}(0.0)")
    emit("lead_row = np.int64(-1)")
    emit("started = False")
    if bitmap:
        emit("nxt = end   # the next row start")
    emit("if cur >= 0:")
    emit.indent()
    emit("started = np.int64(row_ptr[cur]) == lo")
    if bitmap:
        emit("nxt = np.int64(row_ptr[cur + 1])")
    emit.dedent()
    col = "np.int64({})" + (" + cb" if spec.col_mode == "u16base" else "")

    def slot(value: str, column: str):
        """One slot: its value and column, then its products with B."""
        emit(f"v = {acc}({value})")
        emit(f"k = {col.format(column)}")
        _emit_fma(emit, spec)

    if spec.prefetch and V > 1 and not bitmap:
        _emit_prefetched_loop(emit, spec, slot, col)
    else:
        _emit_plain_loop(emit, spec, slot, bitmap, col)
    _emit_partials(emit, spec)
    if spec.sort_out:
        emit("if lead_row >= 0:\n    lead_row = np.int64(row_order[lead_row])")
        emit("if tail_row >= 0:\n    tail_row = np.int64(row_order[tail_row])")


def _emit_plain_loop(emit: _Writer, spec: Spec, slot, bitmap: bool, col: str):
    """The walk over the thread-group's slots, ``vector_width`` at a time, each load of A
    used as soon as it arrives."""
    T, V = spec.groups_per_warp, spec.vector_width
    emit(f"for s0 in range(lo, end, {V}):")
    emit.indent()
    if spec.interleave:
        emit(f"p0 = base + ((s0 - lo) // {V}) * {T * V} + t * {V}   # interleaved storage")
    else:
        emit("p0 = s0")
    if V == 1:
        if bitmap:
            _emit_compact_start(emit, spec, "s0")
        slot("values[p0]", "cols[p0]")
    else:
        emit(f"vs = vload{V}(values, p0)")
        emit(f"ks = vload{V}(cols, p0)")
        if not bitmap:
            # a load wholly inside the group's slots: no masks, so the compiler may issue its
            # V gathers of B together (a mask per slot kept each behind its own branch)
            emit(f"if s0 + {V} <= end:")
            emit.indent()
            _emit_full_load(emit, spec, slot, col)
            emit("continue")
            emit.dedent()
        _emit_partial_load(emit, spec, slot, bitmap)
    emit.dedent()


def _emit_full_load(emit: _Writer, spec: Spec, slot, col: str):
    """The slots of a vector load wholly inside the thread-group's: slot by slot, or with
    ``batch`` (and vector loads of B) every gather first."""
    if spec.batch and spec.b_vector > 1:
        _emit_batched_slots(emit, spec, col, spec.vector_width)
    else:
        for q in range(spec.vector_width):
            slot(f"vs[{q}]", f"ks[{q}]")


def _emit_partial_load(emit: _Writer, spec: Spec, slot, bitmap: bool):
    """The slots of a vector load that may run past the thread-group's last: each behind its
    mask (slot 0 of a load is always real)."""
    for q in range(spec.vector_width):
        if q:
            emit(f"if s0 + {q} < end:")
            emit.indent()
        if bitmap:
            _emit_compact_start(emit, spec, f"s0 + {q}")
        slot(f"vs[{q}]", f"ks[{q}]")
        if q:
            emit.dedent()


def _emit_prefetched_loop(emit: _Writer, spec: Spec, slot, col: str):
    """:func:`_emit_plain_loop` for THREAD_TOTAL with vector loads, software-pipelined: the
    values and columns of the next load of A are requested before the products of the
    current one, so a lane waits for memory once per load of B rather than once for A and
    again for B. Only slots of the thread-group are read (the next load only while one
    remains); the sums are formed in the same order as without."""
    T, V = spec.groups_per_warp, spec.vector_width
    step = T * V if spec.interleave else V
    emit("if lo < end:")
    emit.indent()
    emit(f"p0 = base + t * {V}   # interleaved storage" if spec.interleave else "p0 = lo")
    emit(f"nvs = vload{V}(values, p0)")
    emit(f"nks = vload{V}(cols, p0)")
    emit("s0 = lo")
    emit("while s0 < end:")
    emit.indent()
    emit("vs = nvs")
    emit("ks = nks")
    emit(f"if s0 + {V} < end:   # the next load of A, issued before this one's products")
    emit.indent()
    emit(f"p0 += {step}")
    emit(f"nvs = vload{V}(values, p0)")
    emit(f"nks = vload{V}(cols, p0)")
    emit.dedent()
    emit(f"if s0 + {V} <= end:")
    emit.indent()
    _emit_full_load(emit, spec, slot, col)
    emit.dedent()
    emit("else:")
    emit.indent()
    _emit_partial_load(emit, spec, slot, False)
    emit.dedent()
    emit(f"s0 += {V}")
    emit.dedent()
    emit.dedent()
