"""Source text of one generated SpMM kernel (see :mod:`spmvlab.codegen` for what is covered).

:func:`kernel_source` writes the text level by level, top down: the block prologue (which
columns, which warp-groups), the warp prologue (which thread-group, which lanes), the thread
body (the walk over the thread-group's slots with its thread reduction), then the way up:
the warp reduction over the thread-groups of a warp-group and the block epilogue (plain
stores, or atomic additions where blocks split rows). Every size is written as a literal.
Plain Python string building; nothing here imports numba.
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
    vector_width: int
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


def _cols(sp: Spec):
    return range(sp.thread_cols)


def _emit_write(w: _Writer, sp: Spec, row: str, vals: str, atomic: bool):
    """Write (or atomically add) the accumulators ``vals{j}`` to row ``row`` of C."""
    for j in _cols(sp):
        if atomic:
            w(f"if ok{j}:\n    cuda.atomic.add(C, ({row}, col0 + {j}), {vals}{j})")
        else:
            w(f"if ok{j}:\n    C[{row}, col0 + {j}] = {vals}{j}")


def _emit_docstring(w: _Writer, sp: Spec):
    T, L = sp.groups_per_warp, sp.group_lanes
    w('"""SpMM C = A @ B for one GeneralSparse strategy:')
    w(f"    {sp.label}")
    w(f"values {sp.dtype}, accumulation {sp.acc}; reductions: thread {sp.thread_alg}, warp "
      f"{sp.warp_alg}, block {sp.block_alg or 'None'}"
      f"{_block_note(sp)}{' (block ends added atomically)' if sp.atomic else ''}.")
    w("")
    w("Who handles what:")
    w(f"* block (x, y): warp-groups x*{sp.groups_per_block} .. x*{sp.groups_per_block}+"
      f"{sp.groups_per_block - 1} of the plan and columns y*{sp.block_cols} .. "
      f"y*{sp.block_cols}+{sp.block_cols - 1} of C;")
    w(f"* warp w of a block: warp-group w // {sp.group_warps} of the block, columns "
      f"(w % {sp.group_warps})*{sp.warp_cols} onwards;")
    w(f"* lane l of a warp: thread-group l // {L} of the warp-group ({T} per warp-group), "
      f"columns (l % {L})*{sp.thread_cols} .. +{sp.thread_cols - 1} of the warp's; it walks "
      f"the thread-group's slots [thread_offset(g), thread_offset(g + 1)) in order.")
    w("Lanes whose columns lie beyond n_cols still walk their slots (they take part in")
    w("the warp shuffles), re-reading B's last valid columns, and write nothing.")
    w('"""')


def _emit_prologue(w: _Writer, sp: Spec):
    w("# ---- block level: this block's warp-groups and columns")
    w("tid = cuda.threadIdx.x")
    w(f"warp = tid // {WARP}")
    w(f"lane = tid % {WARP}")
    w(f"wg = np.int64(cuda.blockIdx.x) * {sp.groups_per_block} + warp // {sp.group_warps}")
    w(f"col0 = np.int64(cuda.blockIdx.y) * {sp.block_cols} + (warp % {sp.group_warps}) * {sp.warp_cols}"
      f" + (lane % {sp.group_lanes}) * {sp.thread_cols}")
    for j in _cols(sp):
        w(f"ok{j} = col0 + {j} < n_cols")
    g = sp.b_vector
    w("# B's columns read: clamped into B, so that no gather waits behind a branch (columns")
    w("# beyond n_cols re-read the last valid ones; their sums are never written)")
    for i in range(sp.thread_cols // g):
        w(f"cg{i} = min(col0 + {i * g}, n_cols - {g})")
    w("# ---- warp level: this lane's thread-group")
    w(f"t = lane // {sp.group_lanes}")
    w(f"tg = wg * {sp.groups_per_warp} + t")


def _emit_thread(w: _Writer, sp: Spec):
    acc = f"np.{sp.acc}"
    bitmap = sp.thread_alg == "THREAD_BITMAP"
    w(f"# ---- thread level ({sp.thread_alg or 'at most one slot'}): walk the thread-group's slots")
    w(f"lo = {sp.thread_offset.at('tg')}")
    w(f"hi = {sp.thread_offset.at('tg + 1')}")
    if sp.interleave:
        w(f"base = {sp.warp_offset.at('wg')}   # the warp-group's first slot")
    for j in _cols(sp):
        w(f"a{j} = {acc}(0.0)")
        w(f"ld{j} = {acc}(0.0)")
    w("cur = np.int64(-1)        # row of the slots being summed")
    w("lead_row = np.int64(-1)   # row of the lead (the slots before the first row start)")
    w("started = False")
    w("for s in range(lo, hi):")
    w.indent()
    if sp.interleave:
        T, V = sp.groups_per_warp, sp.vector_width
        w(f"p = base + ((s - lo) // {V}) * {T * V} + t * {V} + (s - lo) % {V}   # interleaved storage")
    else:
        w("p = s")
    w("f = flags[p]")
    w("r = np.int64(rows[p])")
    w(f"if f & {ROW_START}:")
    w.indent()
    if bitmap:
        w("if started:   # the row that began in this range ends here: complete")
        w.indent()
        _emit_write(w, sp, "cur", "a", False)
        w.dedent()
        w("else:         # the slots so far end a row that began before this range")
        w.indent()
        for j in _cols(sp):
            w(f"ld{j} = a{j}")
        w("lead_row = cur")
        w.dedent()
        for j in _cols(sp):
            w(f"a{j} = {acc}(0.0)")
    w("started = True")
    w.dedent()
    w("if r >= 0:\n    cur = r")
    w(f"if (f & {PAD}) == 0:   # padding contributes an exact zero")
    w.indent()
    w(f"v = {acc}(values[p])")
    w("k = np.int64(cols[p])")
    _emit_fma(w, sp)
    w.dedent()
    w.dedent()
    _emit_partials(w, sp)


def _emit_partials(w: _Writer, sp: Spec):
    """After the walk: the thread-group's lead partial (before its first row start) and tail
    partial (from its last row start on)."""
    acc = f"np.{sp.acc}"
    w("# the thread-group's partials: lead (before its first row start), tail (from its last)")
    w("if started:")
    w.indent()
    w("tail_row = cur")
    for j in _cols(sp):
        w(f"tl{j} = a{j}")
    w.dedent()
    w("else:")
    w.indent()
    w("tail_row = np.int64(-1)")
    w("lead_row = cur")
    for j in _cols(sp):
        w(f"tl{j} = {acc}(0.0)")
        w(f"ld{j} = a{j}")
    w.dedent()


def _emit_fma(w: _Writer, sp: Spec):
    """``a{j} += v * B[k, col0 + j]`` for the thread's columns: one element at a time, or
    (``b_vector`` g > 1, B flat) one g-wide vector load per group of g columns (N is a
    multiple of g, so a group lies wholly inside or wholly beyond N)."""
    acc = f"np.{sp.acc}"
    g = sp.b_vector
    if g == 1:
        for j in _cols(sp):
            w(f"a{j} += v * {acc}(B[k, cg{j}])")
        return
    w("kb = k * n_cols")
    for i in range(sp.thread_cols // g):
        w(f"xs = vload{g}(B, kb + cg{i})")
        for q in range(g):
            w(f"a{i * g + q} += v * {acc}(xs[{q}])")


def _emit_batched_slots(w: _Writer, sp: Spec, col: str, V: int):
    """The V slots of a full vector load (``vs``, ``ks``) with every gather of B written
    before the first product (``x{q}_{i}``: slot q's i-th vector of B), so that they are in
    flight together; the sums are formed in the same order as slot by slot."""
    acc = f"np.{sp.acc}"
    g = sp.b_vector
    for q in range(V):
        w(f"v{q} = {acc}(vs[{q}])")
        w(f"kb{q} = ({col.format(f'ks[{q}]')}) * n_cols")   # the column with its block's base, times the row length
        for i in range(sp.thread_cols // g):
            w(f"x{q}_{i} = vload{g}(B, kb{q} + cg{i})")
    for q in range(V):
        for i in range(sp.thread_cols // g):
            for r in range(g):
                w(f"a{i * g + r} += v{q} * {acc}(x{q}_{i}[{r}])")


def _emit_compact_start(w: _Writer, sp: Spec, s: str):
    """THREAD_BITMAP over compact rows: at slot ``s`` == ``nxt`` a row (or several, the
    empty ones skipped) begins: hand over the sum as the reference does."""
    acc = f"np.{sp.acc}"
    w(f"if {s} == nxt:")
    w.indent()
    w("if started:   # the row that began in this range ends here: complete")
    w.indent()
    w(f"orow = {'np.int64(row_order[cur])' if sp.sort_out else 'cur'}")
    _emit_write(w, sp, "orow", "a", False)
    w.dedent()
    w("else:         # the slots so far end a row that began before this range")
    w.indent()
    for j in _cols(sp):
        w(f"ld{j} = a{j}")
    w("lead_row = cur")
    w.dedent()
    for j in _cols(sp):
        w(f"a{j} = {acc}(0.0)")
    w("started = True")
    w("cur += 1")
    w("nxt = np.int64(row_ptr[cur + 1])")
    w(f"while nxt <= {s}:   # empty rows in between")
    w.indent()
    w("cur += 1")
    w("nxt = np.int64(row_ptr[cur + 1])")
    w.dedent()
    w.dedent()


def _emit_thread_compact(w: _Writer, sp: Spec):
    """The thread body over compact storage: the group's real slots [lo, lo + tg_len) (its
    padding never read), its first row from ``tg_row``, later row starts from ``row_ptr``,
    ``vector_width`` slots of values and columns per load."""
    acc = f"np.{sp.acc}"
    bitmap = sp.thread_alg == "THREAD_BITMAP"
    T, V = sp.groups_per_warp, sp.vector_width
    w(f"# ---- thread level ({sp.thread_alg or 'at most one slot'}, compact storage): the real slots")
    w(f"lo = {sp.thread_offset.at('tg')}")
    w("end = lo + np.int64(tg_len[tg])")
    w("cur = np.int64(tg_row[tg])   # row of the group's first real slot (-1: none)")
    if sp.interleave:
        w(f"base = {sp.warp_offset.at('wg')}   # the warp-group's first slot")
    if sp.col_mode == "u16base":
        w("cb = np.int64(col_base[cuda.blockIdx.x])   # the block's first column")
    for j in _cols(sp):
        w(f"a{j} = {acc}(0.0)")
        w(f"ld{j} = {acc}(0.0)")
    w("lead_row = np.int64(-1)")
    w("started = False")
    if bitmap:
        w("nxt = end   # the next row start")
    w("if cur >= 0:")
    w.indent()
    w("started = np.int64(row_ptr[cur]) == lo")
    if bitmap:
        w("nxt = np.int64(row_ptr[cur + 1])")
    w.dedent()
    col = "np.int64({})" + (" + cb" if sp.col_mode == "u16base" else "")

    def slot(value: str, column: str):
        """One slot: its value and column, then its products with B."""
        w(f"v = {acc}({value})")
        w(f"k = {col.format(column)}")
        _emit_fma(w, sp)

    if sp.prefetch and V > 1 and not bitmap:
        _emit_prefetched_loop(w, sp, slot, col)
    else:
        _emit_plain_loop(w, sp, slot, bitmap, col)
    _emit_partials(w, sp)
    if sp.sort_out:
        w("if lead_row >= 0:\n    lead_row = np.int64(row_order[lead_row])")
        w("if tail_row >= 0:\n    tail_row = np.int64(row_order[tail_row])")


def _emit_plain_loop(w: _Writer, sp: Spec, slot, bitmap: bool, col: str):
    """The walk over the thread-group's slots, ``vector_width`` at a time, each load of A
    used as soon as it arrives."""
    T, V = sp.groups_per_warp, sp.vector_width
    w(f"for s0 in range(lo, end, {V}):")
    w.indent()
    if sp.interleave:
        w(f"p0 = base + ((s0 - lo) // {V}) * {T * V} + t * {V}   # interleaved storage")
    else:
        w("p0 = s0")
    if V == 1:
        if bitmap:
            _emit_compact_start(w, sp, "s0")
        slot("values[p0]", "cols[p0]")
    else:
        w(f"vs = vload{V}(values, p0)")
        w(f"ks = vload{V}(cols, p0)")
        if not bitmap:
            # a load wholly inside the group's slots: no masks, so the compiler may issue its
            # V gathers of B together (a mask per slot kept each behind its own branch)
            w(f"if s0 + {V} <= end:")
            w.indent()
            _emit_full_load(w, sp, slot, col)
            w("continue")
            w.dedent()
        _emit_partial_load(w, sp, slot, bitmap)
    w.dedent()


def _emit_full_load(w: _Writer, sp: Spec, slot, col: str):
    """The slots of a vector load wholly inside the thread-group's: slot by slot, or with
    ``batch`` (and vector loads of B) every gather first."""
    if sp.batch and sp.b_vector > 1:
        _emit_batched_slots(w, sp, col, sp.vector_width)
    else:
        for q in range(sp.vector_width):
            slot(f"vs[{q}]", f"ks[{q}]")


def _emit_partial_load(w: _Writer, sp: Spec, slot, bitmap: bool):
    """The slots of a vector load that may run past the thread-group's last: each behind its
    mask (slot 0 of a load is always real)."""
    for q in range(sp.vector_width):
        if q:
            w(f"if s0 + {q} < end:")
            w.indent()
        if bitmap:
            _emit_compact_start(w, sp, f"s0 + {q}")
        slot(f"vs[{q}]", f"ks[{q}]")
        if q:
            w.dedent()


def _emit_prefetched_loop(w: _Writer, sp: Spec, slot, col: str):
    """:func:`_emit_plain_loop` for THREAD_TOTAL with vector loads, software-pipelined: the
    values and columns of the next load of A are requested before the products of the
    current one, so a lane waits for memory once per load of B rather than once for A and
    again for B. Only slots of the thread-group are read (the next load only while one
    remains); the sums are formed in the same order as without."""
    T, V = sp.groups_per_warp, sp.vector_width
    step = T * V if sp.interleave else V
    w("if lo < end:")
    w.indent()
    w(f"p0 = base + t * {V}   # interleaved storage" if sp.interleave else "p0 = lo")
    w(f"nvs = vload{V}(values, p0)")
    w(f"nks = vload{V}(cols, p0)")
    w("s0 = lo")
    w("while s0 < end:")
    w.indent()
    w("vs = nvs")
    w("ks = nks")
    w(f"if s0 + {V} < end:   # the next load of A, issued before this one's products")
    w.indent()
    w(f"p0 += {step}")
    w(f"nvs = vload{V}(values, p0)")
    w(f"nks = vload{V}(cols, p0)")
    w.dedent()
    w(f"if s0 + {V} <= end:")
    w.indent()
    _emit_full_load(w, sp, slot, col)
    w.dedent()
    w("else:")
    w.indent()
    _emit_partial_load(w, sp, slot, False)
    w.dedent()
    w(f"s0 += {V}")
    w.dedent()
    w.dedent()


def _emit_shuffles(w: _Writer, sp: Spec, names, delta: str, prefix: str = "n"):
    for name in names:
        w(f"{prefix}{name} = cuda.shfl_down_sync({FULL}, {name}, {delta})")


def _emit_segmented_scan(w: _Writer, sp: Spec, v: str, row: str):
    """Segmented suffix sum over the thread-groups of the warp-group (lanes L apart):
    afterwards ``{v}{j}`` holds the sum from this thread-group to the end of its segment
    (``e`` says where segments end; the last thread-group ends one) and ``{row}`` the largest
    row seen over the same lanes."""
    T, L = sp.groups_per_warp, sp.group_lanes
    step = 1
    while step < T:
        names = [f"{v}{j}" for j in _cols(sp)] + [row, "e"]
        _emit_shuffles(w, sp, names, str(step * L))
        w(f"if t + {step} < {T}:")
        w.indent()
        w("if e == 0:")
        w.indent()
        for j in _cols(sp):
            w(f"{v}{j} += n{v}{j}")
        w(f"{row} = max({row}, n{row})")
        w.dedent()
        w("e |= ne")
        w.dedent()
        step *= 2


def _emit_later(w: _Writer, sp: Spec):
    """``later``: some later thread-group of the warp-group holds a row start."""
    T, L = sp.groups_per_warp, sp.group_lanes
    w("o = hs")
    step = 1
    while step < T:
        w(f"no = cuda.shfl_down_sync({FULL}, o, {step * L})")
        w(f"if t + {step} < {T}:\n    o |= no")
        step *= 2
    if T > 1:
        w(f"later = cuda.shfl_down_sync({FULL}, o, {L})")
        w(f"if t == {T - 1}:\n    later = np.int32(0)")
    else:
        w("later = np.int32(0)")


def _emit_tail_out(w: _Writer, sp: Spec, vals: str):
    """A thread-group holding a row start writes its row's result ``vals``: plainly where
    the row ends inside the warp-group (or nothing is atomic), atomically otherwise."""
    w("if started and tail_row >= 0:")
    w.indent()
    if sp.atomic:
        w("if later != 0:")
        w.indent()
        _emit_write(w, sp, "tail_row", vals, False)
        w.dedent()
        w("else:   # may go on in the next block")
        w.indent()
        _emit_write(w, sp, "tail_row", vals, True)
        w.dedent()
    else:
        _emit_write(w, sp, "tail_row", vals, False)
    w.dedent()


def block_mode(sp: Spec) -> bool:
    """A block reduction over two or more warp-groups: each warp-group passes its end pieces
    (lead, tail) through shared memory instead of writing them."""
    return sp.block_alg is not None and sp.groups_per_block > 1


def _block_note(sp: Spec) -> str:
    if sp.block_alg is None:
        return ""
    if sp.groups_per_block == 1:
        return " (one warp-group: nothing to combine)"
    return f" (over {sp.groups_per_block} warp-groups in shared memory)"


def _emit_shared_decl(w: _Writer, sp: Spec):
    """One slot per warp-group (and column of the block) for the lead and tail pieces."""
    g, n = sp.groups_per_block, sp.block_cols
    w(f"# ---- shared slots of the block reduction: one per warp-group ({g}) and column ({n})")
    w(f"sh_lead = cuda.shared.array(({g}, {n}), np.{sp.acc})")
    w(f"sh_tail = cuda.shared.array(({g}, {n}), np.{sp.acc})")
    w(f"sh_lrow = cuda.shared.array({g}, np.int64)")
    w(f"sh_trow = cuda.shared.array({g}, np.int64)")
    w(f"sh_hs = cuda.shared.array({g}, np.int32)")
    w(f"wgi = warp // {sp.group_warps}   # this warp's warp-group within the block")
    w(f"bc0 = (warp % {sp.group_warps}) * {sp.warp_cols} + (lane % {sp.group_lanes}) * {sp.thread_cols}"
      "   # first column within the block")


def _emit_share_lead(w: _Writer, sp: Spec, anyhs: str, vals: str, row: str):
    """At thread-group 0: the warp-group's start flag and lead (``vals``, ``row``); its tail
    slot emptied where no thread-group holds a row start (else the tail holder fills it)."""
    acc = f"np.{sp.acc}"
    w("if t == 0:   # the warp-group's lead (and an empty tail where it holds no row start)")
    w.indent()
    w(f"sh_hs[wgi] = {anyhs}")
    w(f"sh_lrow[wgi] = {row}")
    for j in _cols(sp):
        w(f"sh_lead[wgi, bc0 + {j}] = {vals}{j}")
    w(f"if {anyhs} == 0:")
    w.indent()
    w("sh_trow[wgi] = np.int64(-1)")
    for j in _cols(sp):
        w(f"sh_tail[wgi, bc0 + {j}] = {acc}(0.0)")
    w.dedent()
    w.dedent()


def _emit_share_tail(w: _Writer, sp: Spec, vals: str):
    """The thread-group holding the warp-group's last row start (none later) passes its
    row's piece up instead of writing it."""
    w("if hs != 0 and later == 0:   # the warp-group's tail: the row may go on in the next warp-group")
    w.indent()
    w("sh_trow[wgi] = tail_row")
    for j in _cols(sp):
        w(f"sh_tail[wgi, bc0 + {j}] = {vals}{j}")
    w.dedent()


def _emit_complete_tails(w: _Writer, sp: Spec, vals: str):
    """Rows that begin at a thread-group and end inside the warp-group: stored."""
    w("if hs != 0 and later != 0 and tail_row >= 0:   # complete inside the warp-group")
    w.indent()
    _emit_write(w, sp, "tail_row", vals, False)
    w.dedent()


def _emit_block(w: _Writer, sp: Spec):
    """The block level over the warp-groups' slots, after a barrier every thread reaches:
    thread-group 0 of warp-group 0 (one lane per column of the block) walks the warp-groups
    in order. BLOCK_TOTAL: one row, the sum of all pieces. BLOCK_BITMAP / BLOCK_SEGMENT: a
    run of leads is closed by the next warp-group with a row start (Algorithm 2; under
    BITMAP a warp-group with a start passes no lead, so it is Algorithm 1's segmented sum):
    the leads before the first start are the block's lead, a run between two starts a row
    complete inside the block (stored), the run after the last start the block's tail.
    Then the block ends, as the reference's ``execute``: added atomically where blocks split
    rows, the tail stored otherwise."""
    g = sp.groups_per_block
    acc = f"np.{sp.acc}"
    w(f"# ---- block level ({sp.block_alg}) over the {g} warp-groups")
    w("cuda.syncthreads()")
    w(f"if warp < {sp.group_warps} and t == 0:")
    w.indent()
    if sp.block_alg == "BLOCK_TOTAL":
        for j in _cols(sp):
            w(f"bt{j} = {acc}(0.0)")
        w("brow = np.int64(-1)")
        w("bhs = np.int32(0)")
        w(f"for i in range({g}):")
        w.indent()
        w("tr = sh_trow[i]")
        for j in _cols(sp):
            w(f"bt{j} += sh_tail[i, bc0 + {j}] if tr >= 0 else sh_lead[i, bc0 + {j}]")
        w("brow = max(brow, max(sh_lrow[i], tr))")
        w("bhs |= sh_hs[i]")
        w.dedent()
        w("if brow >= 0:")
        w.indent()
        if sp.atomic:
            _emit_write(w, sp, "brow", "bt", True)
        else:
            w("if bhs != 0:")
            w.indent()
            _emit_write(w, sp, "brow", "bt", False)
            w.dedent()
        w.dedent()
    else:
        for j in _cols(sp):
            w(f"run{j} = {acc}(0.0)")
            w(f"hd{j} = {acc}(0.0)")
        w("hrow = np.int64(-1)   # row of the block's lead")
        w("crow = np.int64(-1)   # row of the run since the last start")
        w("seen = False")
        w(f"for i in range({g}):")
        w.indent()
        for j in _cols(sp):
            w(f"run{j} += sh_lead[i, bc0 + {j}]")
        w("if not seen:\n    hrow = max(hrow, sh_lrow[i])")
        w("if sh_hs[i] != 0:")
        w.indent()
        w("if seen:   # the row begun at the previous start ends here: complete")
        w.indent()
        w("if crow >= 0:")
        w.indent()
        _emit_write(w, sp, "crow", "run", False)
        w.dedent()
        w.dedent()
        w("else:      # the leads so far end a row begun before the block")
        w.indent()
        for j in _cols(sp):
            w(f"hd{j} = run{j}")
        w.dedent()
        w("seen = True")
        w("crow = sh_trow[i]")
        for j in _cols(sp):
            w(f"run{j} = sh_tail[i, bc0 + {j}]")
        w.dedent()
        w.dedent()
        w("if not seen:")
        w.indent()
        for j in _cols(sp):
            w(f"hd{j} = run{j}")
        w.dedent()
        if sp.atomic:
            w("if hrow >= 0:   # the end of a row from an earlier block")
            w.indent()
            _emit_write(w, sp, "hrow", "hd", True)
            w.dedent()
        w("if seen and crow >= 0:   # may go on in the next block" if sp.atomic else "if seen and crow >= 0:")
        w.indent()
        _emit_write(w, sp, "crow", "run", sp.atomic)
        w.dedent()
    w.dedent()


def _emit_warp_block(w: _Writer, sp: Spec):
    """The warp level of a block-reduction kernel: as :func:`_emit_warp`, but the pieces at
    the warp-group's two ends go to the shared slots (rows complete inside it are stored)."""
    T, L = sp.groups_per_warp, sp.group_lanes
    acc = f"np.{sp.acc}"
    alg = sp.warp_alg
    w(f"# ---- warp level ({alg or 'no reduction'}) over the {T} thread-groups of the warp-group;"
      " its end pieces go to the block")
    w("hs = np.int32(1) if started else np.int32(0)")
    if alg in ("WARP_TOTAL", None):
        # WARP_TOTAL: every piece of one row, summed; None: at most one thread-group holds a
        # lead (before any start), summed the same way (the others add zero)
        if alg == "WARP_TOTAL":
            for j in _cols(sp):
                w(f"pc{j} = tl{j} if tail_row >= 0 else ld{j}")
            w("rw = max(lead_row, tail_row)")
        else:
            for j in _cols(sp):
                w(f"pc{j} = ld{j} if lead_row >= 0 else {acc}(0.0)")
            w("rw = lead_row")
        w("ah = hs")
        d = T // 2
        while d >= 1:
            _emit_shuffles(w, sp, [f"pc{j}" for j in _cols(sp)] + ["rw", "ah"], str(d * L))
            for j in _cols(sp):
                w(f"pc{j} += npc{j}")
            w("rw = max(rw, nrw)")
            w("ah |= nah")
            d //= 2
        if alg == "WARP_TOTAL":
            zero = {j: f"{acc}(0.0)" for j in _cols(sp)}
            w("if t == 0:   # thread-group 0 holds the warp-group's total: its tail or its lead")
            w.indent()
            w("sh_hs[wgi] = ah")
            w("if ah != 0:")
            w.indent()
            w("sh_trow[wgi] = rw")
            w("sh_lrow[wgi] = np.int64(-1)")
            for j in _cols(sp):
                w(f"sh_tail[wgi, bc0 + {j}] = pc{j}")
                w(f"sh_lead[wgi, bc0 + {j}] = {zero[j]}")
            w.dedent()
            w("else:")
            w.indent()
            w("sh_trow[wgi] = np.int64(-1)")
            w("sh_lrow[wgi] = rw")
            for j in _cols(sp):
                w(f"sh_tail[wgi, bc0 + {j}] = {zero[j]}")
                w(f"sh_lead[wgi, bc0 + {j}] = pc{j}")
            w.dedent()
            w.dedent()
            return
        _emit_later(w, sp)
        _emit_complete_tails(w, sp, "tl")
        _emit_share_tail(w, sp, "tl")
        _emit_share_lead(w, sp, "ah", "pc", "rw")
        return
    if alg == "WARP_SEGMENT":
        w(f"e = hs if t < {T - 1} else np.int32(1)")
        for j in _cols(sp):
            w(f"v{j} = ld{j}")
        w("vr = lead_row")
        _emit_segmented_scan(w, sp, "v", "vr")
        _emit_later(w, sp)
        for j in _cols(sp):
            if T > 1:
                w(f"f{j} = cuda.shfl_down_sync({FULL}, v{j}, {L})")
                w(f"if t == {T - 1}:\n    f{j} = {acc}(0.0)")
            else:
                w(f"f{j} = {acc}(0.0)")
            w(f"res{j} = tl{j} + f{j}")
        _emit_complete_tails(w, sp, "res")
        _emit_share_tail(w, sp, "res")
        _emit_share_lead(w, sp, "o", "v", "vr")    # o at thread-group 0: some start in the warp-group
        return
    if alg == "WARP_BITMAP":
        for j in _cols(sp):
            w(f"v{j} = tl{j} if tail_row >= 0 else ld{j}")
        w("vr = max(lead_row, tail_row)")
        if T > 1:
            w(f"e = cuda.shfl_down_sync({FULL}, hs, {L})")
            w(f"if t == {T - 1}:\n    e = np.int32(1)")
        else:
            w("e = np.int32(1)")
        _emit_segmented_scan(w, sp, "v", "vr")
        _emit_later(w, sp)
        _emit_complete_tails(w, sp, "v")
        _emit_share_tail(w, sp, "v")
        w("if hs != 0:   # thread-group 0 begins a row: the warp-group passes no lead")
        w.indent()
        w("vr = np.int64(-1)")
        for j in _cols(sp):
            w(f"v{j} = {acc}(0.0)")
        w.dedent()
        _emit_share_lead(w, sp, "o", "v", "vr")
        return
    raise AssertionError(f"unreachable: warp algorithm {alg}")


def _emit_warp(w: _Writer, sp: Spec):
    T, L = sp.groups_per_warp, sp.group_lanes
    acc = f"np.{sp.acc}"
    alg = sp.warp_alg
    w(f"# ---- warp level ({alg or 'no reduction'}) over the {T} thread-groups of the warp-group")
    if alg is None:
        # every piece is complete, or a block end (atomic)
        if sp.atomic:
            w("if lead_row >= 0:   # the end of a row from an earlier block")
            w.indent()
            _emit_write(w, sp, "lead_row", "ld", True)
            w.dedent()
            w("if tail_row >= 0:   # may go on in the next block")
            w.indent()
            _emit_write(w, sp, "tail_row", "tl", True)
            w.dedent()
        else:
            w("if tail_row >= 0:")
            w.indent()
            _emit_write(w, sp, "tail_row", "tl", False)
            w.dedent()
        return
    w("hs = np.int32(1) if started else np.int32(0)")
    if alg == "WARP_TOTAL":
        for j in _cols(sp):
            w(f"pc{j} = tl{j} if tail_row >= 0 else ld{j}")
        w("rw = max(lead_row, tail_row)")
        d = T // 2
        while d >= 1:
            _emit_shuffles(w, sp, [f"pc{j}" for j in _cols(sp)] + ["rw", "hs"], str(d * L))
            for j in _cols(sp):
                w(f"pc{j} += npc{j}")
            w("rw = max(rw, nrw)")
            w("hs |= nhs")
            d //= 2
        w("if t == 0 and rw >= 0:   # thread-group 0 holds the warp-group's total")
        w.indent()
        if sp.atomic:
            _emit_write(w, sp, "rw", "pc", True)
        else:
            w("if hs != 0:")
            w.indent()
            _emit_write(w, sp, "rw", "pc", False)
            w.dedent()
        w.dedent()
        return
    if alg == "WARP_SEGMENT":
        # Algorithm 2: a thread-group with a row start adds to its tail the leads of the
        # following thread-groups up to and including the next one with a row start
        w(f"e = hs if t < {T - 1} else np.int32(1)")
        for j in _cols(sp):
            w(f"v{j} = ld{j}")
        w("vr = lead_row")
        _emit_segmented_scan(w, sp, "v", "vr")
        _emit_later(w, sp)
        for j in _cols(sp):
            if T > 1:
                w(f"f{j} = cuda.shfl_down_sync({FULL}, v{j}, {L})")
                w(f"if t == {T - 1}:\n    f{j} = {acc}(0.0)")
            else:
                w(f"f{j} = {acc}(0.0)")
            w(f"res{j} = tl{j} + f{j}")
        _emit_tail_out(w, sp, "res")
        if sp.atomic:
            w("if t == 0 and vr >= 0:   # the leads up to the first row start: a row from an earlier block")
            w.indent()
            _emit_write(w, sp, "vr", "v", True)
            w.dedent()
        return
    if alg == "WARP_BITMAP":
        # Algorithm 1: a segmented suffix sum of the pieces, segments ending before each
        # thread-group with a row start
        for j in _cols(sp):
            w(f"v{j} = tl{j} if tail_row >= 0 else ld{j}")
        w("vr = max(lead_row, tail_row)")
        if T > 1:
            w(f"e = cuda.shfl_down_sync({FULL}, hs, {L})")
            w(f"if t == {T - 1}:\n    e = np.int32(1)")
        else:
            w("e = np.int32(1)")
        _emit_segmented_scan(w, sp, "v", "vr")
        _emit_later(w, sp)
        _emit_tail_out(w, sp, "v")
        if sp.atomic:
            w("if t == 0 and hs == 0 and vr >= 0:   # a row from an earlier block")
            w.indent()
            _emit_write(w, sp, "vr", "v", True)
            w.dedent()
        return
    raise AssertionError(f"unreachable: warp algorithm {alg}")


def sparse_args(sp: Spec) -> list:
    """The names of the plan arrays the kernel reads (``Plan.device_arrays`` keys)."""
    if not sp.compact:
        return ["flags", "rows", "cols", "values"]
    return (["values", "cols"] + (["col_base"] if sp.col_mode == "u16base" else [])
            + ["row_ptr", "tg_row", "tg_len"] + (["row_order"] if sp.sort_out else []))


def kernel_args(sp: Spec) -> list:
    return [*sparse_args(sp), *[n for n, _ in sp.pattern_arrays], "B", "C", "n_cols"]


def kernel_source(sp: Spec) -> str:
    """The module text: imports, one ``@cuda.jit`` kernel ``spmm_kernel``."""
    w = _Writer()
    w(f'"""Generated by spmvlab.codegen for {sp.label} ({sp.dtype})."""')
    w("import numpy as np")
    w("from numba import cuda")
    if sp.compact and sp.vector_width > 1 or sp.b_vector > 1:
        w("from spmvlab.kernels._intrinsics import vload2, vload4, vload8")
    w("")
    w("")
    w("@cuda.jit")
    w(f"def spmm_kernel({', '.join(kernel_args(sp))}):")
    w.indent()
    _emit_docstring(w, sp)
    _emit_prologue(w, sp)
    if block_mode(sp):
        _emit_shared_decl(w, sp)
    (_emit_thread_compact if sp.compact else _emit_thread)(w, sp)
    if block_mode(sp):
        _emit_warp_block(w, sp)
        _emit_block(w, sp)
    else:
        _emit_warp(w, sp)
    w.dedent()
    return w.text()
