"""Warp and block levels of a generated kernel: shuffles, the segmented scan over a
warp-group's thread-groups, row tails carried across warps through shared memory, and the
stores or atomic additions of the results. Called from ``_emit.kernel_source``.
"""
from __future__ import annotations

from ._spec import FULL, Spec, _Writer, _columns, _emit_write


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
