"""Source text of one generated SpMM kernel (see :mod:`spmvlab.generalsparse.codegen` for
what is covered).

:func:`kernel_source` writes the text level by level, top down: the block prologue (which
columns, which warp-groups), the warp prologue (which thread-group, which lanes), the thread
body (the walk over the thread-group's slots with its thread reduction), then the way up:
the warp reduction over the thread-groups of a warp-group and the block epilogue (plain
stores, or atomic additions where blocks split rows). Every size is written as a literal.
Plain Python string building; nothing here imports numba.

Every ``_emit_*`` function takes ``emit`` (the :class:`_Writer`: ``emit(text)`` adds lines at
the current indentation, ``emit.indent()``/``emit.dedent()`` change it) and ``spec`` (the
:class:`Spec`). Sizes keep the paper's letters: T thread-groups per warp-group, L lanes per
thread-group, V the vector width. Loop indices follow the names of
the kernel variables they write: ``j`` a column of the thread (``a{j}``, ``ok{j}``), ``i`` a
vector load of B (``cg{i}``), ``q`` a slot within a vector load of A (``vs[q]``).
"""
from __future__ import annotations

import dataclasses

WARP = 32
FULL = "0xFFFFFFFF"

# flag bits of the per-slot ``flags`` array the kernel reads
ROW_START, PAD = 1, 2


@dataclasses.dataclass(frozen=True)
class Offset:
    """How the kernel finds one offset array's value at an id: ``expr`` is a Python
    expression over the variable ``ID`` (from ``reference.offsets``), ``arrays`` the
    (name, dtype name) of the device arrays it reads, in kernel-argument order."""

    name: str
    expr: str
    arrays: tuple
    raw: bool = False          # the whole offset array, int64 (kernels built from a bare strategy)

    def at(self, var: str) -> str:
        """The expression with the id replaced by ``var`` (itself an expression)."""
        import ast

        tree = ast.parse(self.expr, mode="eval")

        class _Sub(ast.NodeTransformer):
            def visit_Name(self, node):
                if node.id == "ID":
                    return ast.parse(f"({var})", mode="eval").body
                return node

        return ast.unparse(_Sub().visit(tree))

    @property
    def loads(self) -> bool:
        return bool(self.arrays)


@dataclasses.dataclass(frozen=True)
class Spec:
    """Everything the text depends on (also the cache key, with the strategy's fields)."""

    label: str                 # the strategy's label, for the docstring
    dtype: str                 # value dtype name ('float16', 'float32')
    acc: str                   # accumulator dtype name
    thread_alg: str | None     # THREAD_TOTAL / THREAD_BITMAP / None (<= 1 slot per thread-group)
    warp_alg: str | None       # WARP_TOTAL / WARP_BITMAP / WARP_SEGMENT / None
    block_alg: str | None      # BLOCK_*: over the warp-groups of a block, in shared memory
    atomic: bool               # blocks split rows: the pieces passed to the top are added atomically
    warps_per_block: int
    group_lanes: int           # L: lanes of a thread-group (adjacent)
    groups_per_warp: int       # T: thread-groups per warp-group
    group_warps: int           # warps of a warp-group (adjacent)
    groups_per_block: int      # warp-groups per block
    thread_cols: int
    warp_cols: int
    block_cols: int
    interleave: bool
    vector_width: int          # V: the vector width (slots per load of compact storage; interleaving unit)
    thread_offset: Offset
    warp_offset: Offset | None  # only read where interleaved
    compact: bool = False      # compact storage (reference Plan.device_arrays)
    col_mode: str = "i32"      # compact columns: "u16" (as they are), "u16base" (+ col_base), "i32"
    b_vector: int = 1          # values of B per load (B passed flat, N a multiple of it)
    sort_out: bool = False     # compact with sorted rows: row_order maps rows to C
    prefetch: bool = False     # compact vector loads (THREAD_TOTAL): the next load of A issued first
    batch: bool = False        # compact vector loads: a full load's gathers of B all issued first

    @property
    def pattern_arrays(self) -> tuple:
        out = list(self.thread_offset.arrays)
        if self.warp_offset is not None:
            out += [a for a in self.warp_offset.arrays if a not in out]
        return tuple(out)


class _Writer:
    def __init__(self):
        self.lines = []
        self.depth = 0

    def __call__(self, text=""):
        for line in text.splitlines() or [""]:
            self.lines.append(("    " * self.depth + line) if line else "")

    def indent(self):
        self.depth += 1

    def dedent(self):
        self.depth -= 1

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


def _columns(spec: Spec):
    """The thread's columns j = 0 .. thread_cols - 1 (one accumulator ``a{j}`` each)."""
    return range(spec.thread_cols)


def _emit_write(emit: _Writer, spec: Spec, row: str, vals: str, atomic: bool):
    """Write (or atomically add) the accumulators ``vals{j}`` to row ``row`` of C."""
    for j in _columns(spec):
        if atomic:
            emit(f"if ok{j}:\n    cuda.atomic.add(C, ({row}, col0 + {j}), {vals}{j})")
        else:
            emit(f"if ok{j}:\n    C[{row}, col0 + {j}] = {vals}{j}")


def _emit_docstring(emit: _Writer, spec: Spec):
    T, L = spec.groups_per_warp, spec.group_lanes
    emit('"""SpMM C = A @ B for one GeneralSparse strategy:')
    emit(f"    {spec.label}")
    emit(f"values {spec.dtype}, accumulation {spec.acc}; reductions: thread {spec.thread_alg}, warp "
         f"{spec.warp_alg}, block {spec.block_alg or 'None'}"
         f"{_block_note(spec)}{' (block ends added atomically)' if spec.atomic else ''}.")
    emit("")
    emit("Who handles what:")
    emit(f"* block (x, y): warp-groups x*{spec.groups_per_block} .. x*{spec.groups_per_block}+"
         f"{spec.groups_per_block - 1} of the plan and columns y*{spec.block_cols} .. "
         f"y*{spec.block_cols}+{spec.block_cols - 1} of C;")
    emit(f"* warp w of a block: warp-group w // {spec.group_warps} of the block, columns "
         f"(w % {spec.group_warps})*{spec.warp_cols} onwards;")
    emit(f"* lane l of a warp: thread-group l // {L} of the warp-group ({T} per warp-group), "
         f"columns (l % {L})*{spec.thread_cols} .. +{spec.thread_cols - 1} of the warp's; it walks "
         f"the thread-group's slots [thread_offset(g), thread_offset(g + 1)) in order.")
    emit("Lanes whose columns lie beyond n_cols still walk their slots (they take part in")
    emit("the warp shuffles), re-reading B's last valid columns, and write nothing.")
    emit('"""')


def _emit_prologue(emit: _Writer, spec: Spec):
    emit("# ---- block level: this block's warp-groups and columns")
    emit("tid = cuda.threadIdx.x")
    emit(f"warp = tid // {WARP}")
    emit(f"lane = tid % {WARP}")
    emit(f"wg = np.int64(cuda.blockIdx.x) * {spec.groups_per_block} + warp // {spec.group_warps}")
    emit(f"col0 = np.int64(cuda.blockIdx.y) * {spec.block_cols}"
         f" + (warp % {spec.group_warps}) * {spec.warp_cols}"
         f" + (lane % {spec.group_lanes}) * {spec.thread_cols}")
    for j in _columns(spec):
        emit(f"ok{j} = col0 + {j} < n_cols")
    vec = spec.b_vector
    emit("# B's columns read: clamped into B, so that no gather waits behind a branch (columns")
    emit("# beyond n_cols re-read the last valid ones; their sums are never written)")
    for i in range(spec.thread_cols // vec):
        emit(f"cg{i} = min(col0 + {i * vec}, n_cols - {vec})")
    emit("# ---- warp level: this lane's thread-group")
    emit(f"t = lane // {spec.group_lanes}")
    emit(f"tg = wg * {spec.groups_per_warp} + t")


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


def _emit_shuffles(emit: _Writer, spec: Spec, names, delta: str, prefix: str = "n"):
    for name in names:
        emit(f"{prefix}{name} = cuda.shfl_down_sync({FULL}, {name}, {delta})")


def _emit_segmented_scan(emit: _Writer, spec: Spec, vals: str, row: str):
    """Segmented suffix sum over the thread-groups of the warp-group (lanes L apart):
    afterwards ``{vals}{j}`` holds the sum from this thread-group to the end of its segment
    (``e`` says where segments end; the last thread-group ends one) and ``{row}`` the largest
    row seen over the same lanes."""
    T, L = spec.groups_per_warp, spec.group_lanes
    step = 1
    while step < T:
        names = [f"{vals}{j}" for j in _columns(spec)] + [row, "e"]
        _emit_shuffles(emit, spec, names, str(step * L))
        emit(f"if t + {step} < {T}:")
        emit.indent()
        emit("if e == 0:")
        emit.indent()
        for j in _columns(spec):
            emit(f"{vals}{j} += n{vals}{j}")
        emit(f"{row} = max({row}, n{row})")
        emit.dedent()
        emit("e |= ne")
        emit.dedent()
        step *= 2


def _emit_later(emit: _Writer, spec: Spec):
    """``later``: some later thread-group of the warp-group holds a row start."""
    T, L = spec.groups_per_warp, spec.group_lanes
    emit("o = hs")
    step = 1
    while step < T:
        emit(f"no = cuda.shfl_down_sync({FULL}, o, {step * L})")
        emit(f"if t + {step} < {T}:\n    o |= no")
        step *= 2
    if T > 1:
        emit(f"later = cuda.shfl_down_sync({FULL}, o, {L})")
        emit(f"if t == {T - 1}:\n    later = np.int32(0)")
    else:
        emit("later = np.int32(0)")


def _emit_tail_out(emit: _Writer, spec: Spec, vals: str):
    """A thread-group holding a row start writes its row's result ``vals``: plainly where
    the row ends inside the warp-group (or nothing is atomic), atomically otherwise."""
    emit("if started and tail_row >= 0:")
    emit.indent()
    if spec.atomic:
        emit("if later != 0:")
        emit.indent()
        _emit_write(emit, spec, "tail_row", vals, False)
        emit.dedent()
        emit("else:   # may go on in the next block")
        emit.indent()
        _emit_write(emit, spec, "tail_row", vals, True)
        emit.dedent()
    else:
        _emit_write(emit, spec, "tail_row", vals, False)
    emit.dedent()


def block_mode(spec: Spec) -> bool:
    """A block reduction over two or more warp-groups: each warp-group passes its end pieces
    (lead, tail) through shared memory instead of writing them."""
    return spec.block_alg is not None and spec.groups_per_block > 1


def _block_note(spec: Spec) -> str:
    if spec.block_alg is None:
        return ""
    if spec.groups_per_block == 1:
        return " (one warp-group: nothing to combine)"
    return f" (over {spec.groups_per_block} warp-groups in shared memory)"


def _emit_shared_decl(emit: _Writer, spec: Spec):
    """One slot per warp-group (and column of the block) for the lead and tail pieces."""
    groups, cols = spec.groups_per_block, spec.block_cols
    emit(f"# ---- shared slots of the block reduction: one per warp-group ({groups}) and column ({cols})")
    emit(f"sh_lead = cuda.shared.array(({groups}, {cols}), np.{spec.acc})")
    emit(f"sh_tail = cuda.shared.array(({groups}, {cols}), np.{spec.acc})")
    emit(f"sh_lrow = cuda.shared.array({groups}, np.int64)")
    emit(f"sh_trow = cuda.shared.array({groups}, np.int64)")
    emit(f"sh_hs = cuda.shared.array({groups}, np.int32)")
    emit(f"wgi = warp // {spec.group_warps}   # this warp's warp-group within the block")
    emit(f"bc0 = (warp % {spec.group_warps}) * {spec.warp_cols}"
         f" + (lane % {spec.group_lanes}) * {spec.thread_cols}   # first column within the block")


def _emit_share_lead(emit: _Writer, spec: Spec, any_start: str, vals: str, row: str):
    """At thread-group 0: the warp-group's start flag and lead (``vals``, ``row``); its tail
    slot emptied where no thread-group holds a row start (else the tail holder fills it)."""
    acc = f"np.{spec.acc}"
    emit("if t == 0:   # the warp-group's lead (and an empty tail where it holds no row start)")
    emit.indent()
    emit(f"sh_hs[wgi] = {any_start}")
    emit(f"sh_lrow[wgi] = {row}")
    for j in _columns(spec):
        emit(f"sh_lead[wgi, bc0 + {j}] = {vals}{j}")
    emit(f"if {any_start} == 0:")
    emit.indent()
    emit("sh_trow[wgi] = np.int64(-1)")
    for j in _columns(spec):
        emit(f"sh_tail[wgi, bc0 + {j}] = {acc}(0.0)")
    emit.dedent()
    emit.dedent()


def _emit_share_tail(emit: _Writer, spec: Spec, vals: str):
    """The thread-group holding the warp-group's last row start (none later) passes its
    row's piece up instead of writing it."""
    emit("if hs != 0 and later == 0:   # the warp-group's tail: the row may go on in the next warp-group")
    emit.indent()
    emit("sh_trow[wgi] = tail_row")
    for j in _columns(spec):
        emit(f"sh_tail[wgi, bc0 + {j}] = {vals}{j}")
    emit.dedent()


def _emit_complete_tails(emit: _Writer, spec: Spec, vals: str):
    """Rows that begin at a thread-group and end inside the warp-group: stored."""
    emit("if hs != 0 and later != 0 and tail_row >= 0:   # complete inside the warp-group")
    emit.indent()
    _emit_write(emit, spec, "tail_row", vals, False)
    emit.dedent()


def _emit_block(emit: _Writer, spec: Spec):
    """The block level over the warp-groups' slots, after a barrier every thread reaches:
    thread-group 0 of warp-group 0 (one lane per column of the block) walks the warp-groups
    in order. BLOCK_TOTAL: one row, the sum of all pieces. BLOCK_BITMAP / BLOCK_SEGMENT: a
    run of leads is closed by the next warp-group with a row start (Algorithm 2; under
    BITMAP a warp-group with a start passes no lead, so it is Algorithm 1's segmented sum):
    the leads before the first start are the block's lead, a run between two starts a row
    complete inside the block (stored), the run after the last start the block's tail.
    Then the block ends, as the reference's ``execute``: added atomically where blocks split
    rows, the tail stored otherwise."""
    groups = spec.groups_per_block
    acc = f"np.{spec.acc}"
    emit(f"# ---- block level ({spec.block_alg}) over the {groups} warp-groups")
    emit("cuda.syncthreads()")
    emit(f"if warp < {spec.group_warps} and t == 0:")
    emit.indent()
    if spec.block_alg == "BLOCK_TOTAL":
        for j in _columns(spec):
            emit(f"bt{j} = {acc}(0.0)")
        emit("brow = np.int64(-1)")
        emit("bhs = np.int32(0)")
        emit(f"for i in range({groups}):")
        emit.indent()
        emit("tr = sh_trow[i]")
        for j in _columns(spec):
            emit(f"bt{j} += sh_tail[i, bc0 + {j}] if tr >= 0 else sh_lead[i, bc0 + {j}]")
        emit("brow = max(brow, max(sh_lrow[i], tr))")
        emit("bhs |= sh_hs[i]")
        emit.dedent()
        emit("if brow >= 0:")
        emit.indent()
        if spec.atomic:
            _emit_write(emit, spec, "brow", "bt", True)
        else:
            emit("if bhs != 0:")
            emit.indent()
            _emit_write(emit, spec, "brow", "bt", False)
            emit.dedent()
        emit.dedent()
    else:
        for j in _columns(spec):
            emit(f"run{j} = {acc}(0.0)")
            emit(f"hd{j} = {acc}(0.0)")
        emit("hrow = np.int64(-1)   # row of the block's lead")
        emit("crow = np.int64(-1)   # row of the run since the last start")
        emit("seen = False")
        emit(f"for i in range({groups}):")
        emit.indent()
        for j in _columns(spec):
            emit(f"run{j} += sh_lead[i, bc0 + {j}]")
        emit("if not seen:\n    hrow = max(hrow, sh_lrow[i])")
        emit("if sh_hs[i] != 0:")
        emit.indent()
        emit("if seen:   # the row begun at the previous start ends here: complete")
        emit.indent()
        emit("if crow >= 0:")
        emit.indent()
        _emit_write(emit, spec, "crow", "run", False)
        emit.dedent()
        emit.dedent()
        emit("else:      # the leads so far end a row begun before the block")
        emit.indent()
        for j in _columns(spec):
            emit(f"hd{j} = run{j}")
        emit.dedent()
        emit("seen = True")
        emit("crow = sh_trow[i]")
        for j in _columns(spec):
            emit(f"run{j} = sh_tail[i, bc0 + {j}]")
        emit.dedent()
        emit.dedent()
        emit("if not seen:")
        emit.indent()
        for j in _columns(spec):
            emit(f"hd{j} = run{j}")
        emit.dedent()
        if spec.atomic:
            emit("if hrow >= 0:   # the end of a row from an earlier block")
            emit.indent()
            _emit_write(emit, spec, "hrow", "hd", True)
            emit.dedent()
        emit("if seen and crow >= 0:   # may go on in the next block" if spec.atomic
             else "if seen and crow >= 0:")
        emit.indent()
        _emit_write(emit, spec, "crow", "run", spec.atomic)
        emit.dedent()
    emit.dedent()


def _emit_warp_block(emit: _Writer, spec: Spec):
    """The warp level of a block-reduction kernel: as :func:`_emit_warp`, but the pieces at
    the warp-group's two ends go to the shared slots (rows complete inside it are stored)."""
    T, L = spec.groups_per_warp, spec.group_lanes
    acc = f"np.{spec.acc}"
    alg = spec.warp_alg
    emit(f"# ---- warp level ({alg or 'no reduction'}) over the {T} thread-groups of the warp-group;"
         " its end pieces go to the block")
    emit("hs = np.int32(1) if started else np.int32(0)")
    if alg in ("WARP_TOTAL", None):
        # WARP_TOTAL: every piece of one row, summed; None: at most one thread-group holds a
        # lead (before any start), summed the same way (the others add zero)
        if alg == "WARP_TOTAL":
            for j in _columns(spec):
                emit(f"pc{j} = tl{j} if tail_row >= 0 else ld{j}")
            emit("rw = max(lead_row, tail_row)")
        else:
            for j in _columns(spec):
                emit(f"pc{j} = ld{j} if lead_row >= 0 else {acc}(0.0)")
            emit("rw = lead_row")
        emit("ah = hs")
        dist = T // 2
        while dist >= 1:
            _emit_shuffles(emit, spec, [f"pc{j}" for j in _columns(spec)] + ["rw", "ah"], str(dist * L))
            for j in _columns(spec):
                emit(f"pc{j} += npc{j}")
            emit("rw = max(rw, nrw)")
            emit("ah |= nah")
            dist //= 2
        if alg == "WARP_TOTAL":
            zero = {j: f"{acc}(0.0)" for j in _columns(spec)}
            emit("if t == 0:   # thread-group 0 holds the warp-group's total: its tail or its lead")
            emit.indent()
            emit("sh_hs[wgi] = ah")
            emit("if ah != 0:")
            emit.indent()
            emit("sh_trow[wgi] = rw")
            emit("sh_lrow[wgi] = np.int64(-1)")
            for j in _columns(spec):
                emit(f"sh_tail[wgi, bc0 + {j}] = pc{j}")
                emit(f"sh_lead[wgi, bc0 + {j}] = {zero[j]}")
            emit.dedent()
            emit("else:")
            emit.indent()
            emit("sh_trow[wgi] = np.int64(-1)")
            emit("sh_lrow[wgi] = rw")
            for j in _columns(spec):
                emit(f"sh_tail[wgi, bc0 + {j}] = {zero[j]}")
                emit(f"sh_lead[wgi, bc0 + {j}] = pc{j}")
            emit.dedent()
            emit.dedent()
            return
        _emit_later(emit, spec)
        _emit_complete_tails(emit, spec, "tl")
        _emit_share_tail(emit, spec, "tl")
        _emit_share_lead(emit, spec, "ah", "pc", "rw")
        return
    if alg == "WARP_SEGMENT":
        emit(f"e = hs if t < {T - 1} else np.int32(1)")
        for j in _columns(spec):
            emit(f"v{j} = ld{j}")
        emit("vr = lead_row")
        _emit_segmented_scan(emit, spec, "v", "vr")
        _emit_later(emit, spec)
        for j in _columns(spec):
            if T > 1:
                emit(f"f{j} = cuda.shfl_down_sync({FULL}, v{j}, {L})")
                emit(f"if t == {T - 1}:\n    f{j} = {acc}(0.0)")
            else:
                emit(f"f{j} = {acc}(0.0)")
            emit(f"res{j} = tl{j} + f{j}")
        _emit_complete_tails(emit, spec, "res")
        _emit_share_tail(emit, spec, "res")
        _emit_share_lead(emit, spec, "o", "v", "vr")    # o at thread-group 0: some start in the warp-group
        return
    if alg == "WARP_BITMAP":
        for j in _columns(spec):
            emit(f"v{j} = tl{j} if tail_row >= 0 else ld{j}")
        emit("vr = max(lead_row, tail_row)")
        if T > 1:
            emit(f"e = cuda.shfl_down_sync({FULL}, hs, {L})")
            emit(f"if t == {T - 1}:\n    e = np.int32(1)")
        else:
            emit("e = np.int32(1)")
        _emit_segmented_scan(emit, spec, "v", "vr")
        _emit_later(emit, spec)
        _emit_complete_tails(emit, spec, "v")
        _emit_share_tail(emit, spec, "v")
        emit("if hs != 0:   # thread-group 0 begins a row: the warp-group passes no lead")
        emit.indent()
        emit("vr = np.int64(-1)")
        for j in _columns(spec):
            emit(f"v{j} = {acc}(0.0)")
        emit.dedent()
        _emit_share_lead(emit, spec, "o", "v", "vr")
        return
    raise AssertionError(f"unreachable: warp algorithm {alg}")


def _emit_warp(emit: _Writer, spec: Spec):
    T, L = spec.groups_per_warp, spec.group_lanes
    acc = f"np.{spec.acc}"
    alg = spec.warp_alg
    emit(f"# ---- warp level ({alg or 'no reduction'}) over the {T} thread-groups of the warp-group")
    if alg is None:
        # every piece is complete, or a block end (atomic)
        if spec.atomic:
            emit("if lead_row >= 0:   # the end of a row from an earlier block")
            emit.indent()
            _emit_write(emit, spec, "lead_row", "ld", True)
            emit.dedent()
            emit("if tail_row >= 0:   # may go on in the next block")
            emit.indent()
            _emit_write(emit, spec, "tail_row", "tl", True)
            emit.dedent()
        else:
            emit("if tail_row >= 0:")
            emit.indent()
            _emit_write(emit, spec, "tail_row", "tl", False)
            emit.dedent()
        return
    emit("hs = np.int32(1) if started else np.int32(0)")
    if alg == "WARP_TOTAL":
        for j in _columns(spec):
            emit(f"pc{j} = tl{j} if tail_row >= 0 else ld{j}")
        emit("rw = max(lead_row, tail_row)")
        dist = T // 2
        while dist >= 1:
            _emit_shuffles(emit, spec, [f"pc{j}" for j in _columns(spec)] + ["rw", "hs"], str(dist * L))
            for j in _columns(spec):
                emit(f"pc{j} += npc{j}")
            emit("rw = max(rw, nrw)")
            emit("hs |= nhs")
            dist //= 2
        emit("if t == 0 and rw >= 0:   # thread-group 0 holds the warp-group's total")
        emit.indent()
        if spec.atomic:
            _emit_write(emit, spec, "rw", "pc", True)
        else:
            emit("if hs != 0:")
            emit.indent()
            _emit_write(emit, spec, "rw", "pc", False)
            emit.dedent()
        emit.dedent()
        return
    if alg == "WARP_SEGMENT":
        # Algorithm 2: a thread-group with a row start adds to its tail the leads of the
        # following thread-groups up to and including the next one with a row start
        emit(f"e = hs if t < {T - 1} else np.int32(1)")
        for j in _columns(spec):
            emit(f"v{j} = ld{j}")
        emit("vr = lead_row")
        _emit_segmented_scan(emit, spec, "v", "vr")
        _emit_later(emit, spec)
        for j in _columns(spec):
            if T > 1:
                emit(f"f{j} = cuda.shfl_down_sync({FULL}, v{j}, {L})")
                emit(f"if t == {T - 1}:\n    f{j} = {acc}(0.0)")
            else:
                emit(f"f{j} = {acc}(0.0)")
            emit(f"res{j} = tl{j} + f{j}")
        _emit_tail_out(emit, spec, "res")
        if spec.atomic:
            emit("if t == 0 and vr >= 0:"
                 "   # the leads up to the first row start: a row from an earlier block")
            emit.indent()
            _emit_write(emit, spec, "vr", "v", True)
            emit.dedent()
        return
    if alg == "WARP_BITMAP":
        # Algorithm 1: a segmented suffix sum of the pieces, segments ending before each
        # thread-group with a row start
        for j in _columns(spec):
            emit(f"v{j} = tl{j} if tail_row >= 0 else ld{j}")
        emit("vr = max(lead_row, tail_row)")
        if T > 1:
            emit(f"e = cuda.shfl_down_sync({FULL}, hs, {L})")
            emit(f"if t == {T - 1}:\n    e = np.int32(1)")
        else:
            emit("e = np.int32(1)")
        _emit_segmented_scan(emit, spec, "v", "vr")
        _emit_later(emit, spec)
        _emit_tail_out(emit, spec, "v")
        if spec.atomic:
            emit("if t == 0 and hs == 0 and vr >= 0:   # a row from an earlier block")
            emit.indent()
            _emit_write(emit, spec, "vr", "v", True)
            emit.dedent()
        return
    raise AssertionError(f"unreachable: warp algorithm {alg}")


def sparse_args(spec: Spec) -> list:
    """The names of the plan arrays the kernel reads (``Plan.device_arrays`` keys)."""
    if not spec.compact:
        return ["flags", "rows", "cols", "values"]
    return (["values", "cols"] + (["col_base"] if spec.col_mode == "u16base" else [])
            + ["row_ptr", "tg_row", "tg_len"] + (["row_order"] if spec.sort_out else []))


def kernel_args(spec: Spec) -> list:
    return [*sparse_args(spec), *[name for name, _ in spec.pattern_arrays], "B", "C", "n_cols"]


def kernel_source(spec: Spec) -> str:
    """The module text: imports, one ``@cuda.jit`` kernel ``spmm_kernel``."""
    emit = _Writer()
    emit(f'"""Generated by spmvlab.generalsparse.codegen for {spec.label} ({spec.dtype})."""')
    emit("import numpy as np")
    emit("from numba import cuda")
    if spec.compact and spec.vector_width > 1 or spec.b_vector > 1:
        emit("from spmvlab.kernels._intrinsics import vload2, vload4, vload8")
    emit("")
    emit("")
    emit("@cuda.jit")
    emit(f"def spmm_kernel({', '.join(kernel_args(spec))}):")
    emit.indent()
    _emit_docstring(emit, spec)
    _emit_prologue(emit, spec)
    if block_mode(spec):
        _emit_shared_decl(emit, spec)
    (_emit_thread_compact if spec.compact else _emit_thread)(emit, spec)
    if block_mode(spec):
        _emit_warp_block(emit, spec)
        _emit_block(emit, spec)
    else:
        _emit_warp(emit, spec)
    emit.dedent()
    return emit.text()
