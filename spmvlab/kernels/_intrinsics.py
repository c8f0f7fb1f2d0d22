"""Vector loads for kernels: one 8- or 16-byte load instead of several scalar ones.

``vload1/2/4/8(arr, i)`` return the tuple ``(arr[i], ..., arr[i + n - 1])``; on the GPU they
compile to a single vector load (``ld.global.v2/v4``), so ``i * itemsize`` must be a
multiple of ``n * itemsize`` and the elements must lie inside the array.
``sload1/2/4/8(arr, i)`` are the same for an array in shared memory (``ld.shared.v2/v4``).
``load_u32(arr8, i)`` reads 4 bytes of a uint8 array at byte ``i`` (a multiple of 4) as one
uint32 (little-endian, like the GPU). On the simulator each is a plain-indexing fallback
with the same results (and a bounds/alignment assertion the GPU does not make).
``float_from_bits(bits, like)`` reinterprets the low bits of an unsigned integer as a float
of ``like``'s type (one LLVM bitcast on the GPU, a NumPy view on the simulator).

Tensor-core pieces (the MACKO SpMM's dense-tile path, ``kernels/macko.py``):
``vwords4(arr, i)`` the 16 bytes at element i of a global float16 array as 4 uint32 words
(one ``ld.global.nc.v4``); ``sword(arr, i)`` the 4 bytes at element i (even) of a shared
float16 array as one uint32 (``ld.shared.u32``); ``sstore4(arr, i, w0, w1, w2, w3)`` 16 bytes
at element i (a multiple of 8) of a shared float16 array (``st.shared.v4.u32``);
``pack_half2(lo, hi)`` two float16 as one uint32 (lo in the low 16 bits); ``sput(arr, i, v)`` /
``sget(arr, i)`` store / load one float16 of a shared array at element i (no negative-index
wrap-around, so an unsigned 32-bit i costs one address instruction);
``mma16816(a0, a1, a2, a3, b0, b1, c0, c1, c2, c3)`` one warp-wide
``mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32``: D (16 x 8, float32) = A (16 x 16,
float16) @ B (16 x 8, float16) + C, returned as this lane's (d0, d1, d2, d3). With g = lane // 4
and t = lane % 4 a lane holds (low half first): a0 = A[g, 2t:2t+2], a1 = A[g+8, 2t:2t+2],
a2 = A[g, 2t+8:2t+10], a3 = A[g+8, 2t+8:2t+10]; b0 = B[2t:2t+2, g], b1 = B[2t+8:2t+10, g];
c0, c1 = C[g, 2t:2t+2], c2, c3 = C[g+8, 2t:2t+2] (D likewise). Every lane of the warp must
call it together (on the simulator: a rendezvous of the 32 lanes, ``spmvlab.cudasim``, that
computes the product in float64 and rounds it to float32).
``mma_sp16832(a0, a1, a2, a3, b0, b1, b2, b3, c0, c1, c2, c3, e)`` one warp-wide
``mma.sp.sync.aligned.m16n8k32.row.col.f32.f16.f16.f32`` with sparsity selector 0: D (16 x 8)
= A (16 x 32, two nonzeros in every group of four columns) @ B (32 x 8) + C. The a registers
are the dense m16n8k16 A fragment of the 16 x 16 kept values (kept value 2j of a row is
the first of group j); b0..b3 = B[2t + 8i : 2t + 8i + 2, g] for i = 0..3; C and D as above.
``e``: in lane 4g + h (h = 0, 1) the positions of the kept values of rows g (bits 0-15)
and g + 8 (bits 16-31) in the groups 4h .. 4h + 3 (a nibble per group at bit 4j: first
position in bits 0-1, the larger second in bits 2-3); the other lanes' ``e`` is not read.
Layouts: ``reference/split24.py``.

``grid_dependency_wait()`` / ``launch_dependents()``: the two sides of a programmatic
dependent launch (``_spmm.launch_smem``, ``after``; sm_90 and above), at the end of this file.
"""
from __future__ import annotations

import numpy as np

from .._cuda import SIMULATOR

if SIMULATOR:
    def _check(arr, i, n):
        assert i % n == 0, f"vector load at element {i} is not aligned to {n} elements"
        assert 0 <= i and i + n <= arr.shape[0], f"vector load [{i}, {i + n}) outside {arr.shape[0]}"

    def vload1(arr, i):
        _check(arr, i, 1)
        return (arr[i],)

    def vload2(arr, i):
        _check(arr, i, 2)
        return (arr[i], arr[i + 1])

    def vload4(arr, i):
        _check(arr, i, 4)
        return (arr[i], arr[i + 1], arr[i + 2], arr[i + 3])

    def vload8(arr, i):
        _check(arr, i, 8)
        return (arr[i], arr[i + 1], arr[i + 2], arr[i + 3],
                arr[i + 4], arr[i + 5], arr[i + 6], arr[i + 7])

    sload1, sload2, sload4, sload8 = vload1, vload2, vload4, vload8

    def load_u32(arr, i):
        _check(arr, i, 4)
        return np.uint32(int(arr[i]) | (int(arr[i + 1]) << 8) | (int(arr[i + 2]) << 16)
                         | (int(arr[i + 3]) << 24))

    def _bits16(h):
        return int(np.float16(h).view(np.uint16))

    def _halves(w):
        return np.array([int(w) & 0xFFFFFFFF], np.uint32).view(np.float16)

    def vwords4(arr, i):
        _check(arr, i, 8)
        return tuple(np.uint32(v) for v in np.ascontiguousarray(arr[i:i + 8]).view(np.uint32))

    def sword(arr, i):
        _check(arr, i, 2)
        return np.uint32(_bits16(arr[i]) | (_bits16(arr[i + 1]) << 16))

    def sstore4(arr, i, w0, w1, w2, w3):
        _check(arr, i, 8)
        arr[i:i + 8] = np.array([int(w0), int(w1), int(w2), int(w3)], np.uint32).view(np.float16)

    def pack_half2(lo, hi):
        return np.uint32(_bits16(lo) | (_bits16(hi) << 16))

    def sput(arr, i, v):
        assert 0 <= i < arr.shape[0], f"store at element {i} outside {arr.shape[0]}"
        arr[i] = v

    def sget(arr, i):
        assert 0 <= i < arr.shape[0], f"load at element {i} outside {arr.shape[0]}"
        return arr[i]

    def _warp_mma(regs, n_b):
        """The rendezvous of a warp-wide mma: every lane's registers ``regs`` (4 A words,
        ``n_b`` B words, 4 C floats, then any more); returns (lane, {lane: regs}, the
        16 x 16 A fragment, B (8 n_b x 8), C (16 x 8)) in float64."""
        from ..cudasim import FULL_MASK, _exchange
        lane, frags = _exchange(FULL_MASK, regs)
        A = np.zeros((16, 16))
        B = np.zeros((8 * n_b, 8))
        C = np.zeros((16, 8))
        for ln, f in frags.items():
            g, t = ln // 4, ln % 4
            A[g, 2 * t:2 * t + 2] = _halves(f[0])
            A[g + 8, 2 * t:2 * t + 2] = _halves(f[1])
            A[g, 2 * t + 8:2 * t + 10] = _halves(f[2])
            A[g + 8, 2 * t + 8:2 * t + 10] = _halves(f[3])
            for i in range(n_b):
                B[2 * t + 8 * i:2 * t + 8 * i + 2, g] = _halves(f[4 + i])
            C[g, 2 * t:2 * t + 2] = f[4 + n_b], f[5 + n_b]
            C[g + 8, 2 * t:2 * t + 2] = f[6 + n_b], f[7 + n_b]
        return lane, frags, A, B, C

    def _lane_d(lane, A, B, C):
        """This lane's four elements of D = A @ B + C, rounded to float32."""
        with np.errstate(invalid="ignore", over="ignore"):
            D = (A @ B + C).astype(np.float32)
        g, t = lane // 4, lane % 4
        return D[g, 2 * t], D[g, 2 * t + 1], D[g + 8, 2 * t], D[g + 8, 2 * t + 1]

    def mma16816(a0, a1, a2, a3, b0, b1, c0, c1, c2, c3):
        lane, _, A, B, C = _warp_mma((a0, a1, a2, a3, b0, b1, c0, c1, c2, c3), 2)
        return _lane_d(lane, A, B, C)

    def mma_sp16832(a0, a1, a2, a3, b0, b1, b2, b3, c0, c1, c2, c3, e):
        lane, frags, K, B, C = _warp_mma((a0, a1, a2, a3, b0, b1, b2, b3, c0, c1, c2, c3, e), 4)
        P = np.zeros((16, 16), np.int64)            # the kept values' positions in their group
        for ln, f in frags.items():
            g, t = ln // 4, ln % 4
            if t < 2:                               # sparsity selector 0: lanes 4g, 4g + 1
                w = int(f[12]) & 0xFFFFFFFF
                for up in range(2):
                    for j in range(4):
                        nib = (w >> (16 * up + 4 * j)) & 15
                        p0, p1 = nib & 3, nib >> 2
                        assert p0 < p1, f"metadata nibble {nib:#06b} (lane {ln}) is not valid"
                        grp = 4 * t + j
                        P[g + 8 * up, 2 * grp:2 * grp + 2] = p0, p1
        A = np.zeros((16, 32))                      # K holds the kept values, two per group
        for r in range(16):
            for c in range(16):
                A[r, 4 * (c // 2) + P[r, c]] += K[r, c]
        return _lane_d(lane, A, B, C)

else:
    from llvmlite import ir
    from numba import types
    from numba.cuda.extending import intrinsic

    def _global_load(builder, ptr, elty_ir, n, total):
        """``n`` elements at ``ptr`` (global memory) as a vector."""
        vec = ir.VectorType(elty_ir, n)
        if total == 128:
            # inline PTX: LLVM splits a <8 x half> load into two 8-byte loads
            i32 = ir.IntType(32)
            asm = ir.InlineAsm(ir.FunctionType(ir.LiteralStructType([i32] * 4),
                                               [ir.IntType(64)]),
                               "ld.global.nc.v4.u32 {$0, $1, $2, $3}, [$4];",
                               "=r,=r,=r,=r,l", side_effect=False)
            addr = builder.ptrtoint(ptr, ir.IntType(64))
            st = builder.call(asm, [addr])
            words = ir.VectorType(i32, 4)
            raw = ir.Constant(words, None)
            for k in range(4):
                raw = builder.insert_element(raw, builder.extract_value(st, k),
                                             ir.Constant(i32, k))
            return builder.bitcast(raw, vec)
        return builder.load(builder.bitcast(ptr, vec.as_pointer()), align=total // 8)

    def _shared_load(builder, ptr, elty_ir, n, total):
        """``n`` elements at ``ptr`` (a generic pointer into shared memory) as a vector: the
        pointer is cast to the shared address space and the load done as 32-bit words (a
        16-byte vector of halves would be split in two)."""
        raw_t = ir.VectorType(ir.IntType(32), total // 32) if total >= 32 else ir.IntType(total)
        sptr = builder.addrspacecast(ptr, ir.PointerType(elty_ir, 3))
        raw = builder.load(builder.bitcast(sptr, ir.PointerType(raw_t, 3)), align=total // 8)
        return builder.bitcast(raw, ir.VectorType(elty_ir, n))

    def _make_load(n, body):
        """An intrinsic ``(arr, i) -> (arr[i], ..., arr[i + n - 1])`` doing one vector load
        with ``body``."""
        @intrinsic
        def _load(typingctx, arr, idx):
            if not isinstance(arr, types.Array) or arr.ndim != 1 or not isinstance(idx, types.Integer):
                return None
            elty = arr.dtype
            sig = types.UniTuple(elty, n)(arr, idx)

            def codegen(context, builder, sig, args):
                arrty, idxty = sig.args
                ary = context.make_array(arrty)(context, builder, args[0])
                i = context.cast(builder, args[1], idxty, types.intp)
                ptr = builder.gep(ary.data, [i])
                v = body(builder, ptr, context.get_data_type(elty), n, n * elty.bitwidth)
                vals = [builder.extract_element(v, ir.Constant(ir.IntType(32), k))
                        for k in range(n)]
                return context.make_tuple(builder, sig.return_type, vals)

            return sig, codegen
        return _load

    vload1, vload2, vload4, vload8 = (_make_load(n, _global_load) for n in (1, 2, 4, 8))
    sload1, sload2, sload4, sload8 = (_make_load(n, _shared_load) for n in (1, 2, 4, 8))

    @intrinsic
    def load_u32(typingctx, arr, idx):
        if not isinstance(arr, types.Array) or arr.dtype != types.uint8 or not isinstance(idx, types.Integer):
            return None
        sig = types.uint32(arr, idx)

        def codegen(context, builder, sig, args):
            arrty, idxty = sig.args
            ary = context.make_array(arrty)(context, builder, args[0])
            i = context.cast(builder, args[1], idxty, types.intp)
            ptr = builder.bitcast(builder.gep(ary.data, [i]), ir.IntType(32).as_pointer())
            return builder.load(ptr, align=4)

        return sig, codegen


    def _elem_ptr(context, builder, arrty, arr, idxty, idx):
        ary = context.make_array(arrty)(context, builder, arr)
        i = context.cast(builder, idx, idxty, types.intp)
        return builder.gep(ary.data, [i])

    def _is_half_array(arr, idx):
        return (isinstance(arr, types.Array) and arr.ndim == 1 and arr.dtype == types.float16
                and isinstance(idx, types.Integer))

    @intrinsic
    def vwords4(typingctx, arr, idx):
        if not _is_half_array(arr, idx):
            return None
        sig = types.UniTuple(types.uint32, 4)(arr, idx)

        def codegen(context, builder, sig, args):
            ptr = _elem_ptr(context, builder, sig.args[0], args[0], sig.args[1], args[1])
            i32 = ir.IntType(32)
            asm = ir.InlineAsm(ir.FunctionType(ir.LiteralStructType([i32] * 4), [ir.IntType(64)]),
                               "ld.global.nc.v4.u32 {$0, $1, $2, $3}, [$4];",
                               "=r,=r,=r,=r,l", side_effect=False)
            st = builder.call(asm, [builder.ptrtoint(ptr, ir.IntType(64))])
            return context.make_tuple(builder, sig.return_type,
                                      [builder.extract_value(st, k) for k in range(4)])

        return sig, codegen

    @intrinsic
    def sword(typingctx, arr, idx):
        if not _is_half_array(arr, idx):
            return None
        sig = types.uint32(arr, idx)

        def codegen(context, builder, sig, args):
            ptr = _elem_ptr(context, builder, sig.args[0], args[0], sig.args[1], args[1])
            sptr = builder.addrspacecast(ptr, ir.PointerType(ptr.type.pointee, 3))
            return builder.load(builder.bitcast(sptr, ir.PointerType(ir.IntType(32), 3)), align=4)

        return sig, codegen

    @intrinsic
    def sstore4(typingctx, arr, idx, w0, w1, w2, w3):
        if not _is_half_array(arr, idx) or not all(isinstance(w, types.Integer) for w in (w0, w1, w2, w3)):
            return None
        sig = types.none(arr, idx, w0, w1, w2, w3)

        def codegen(context, builder, sig, args):
            ptr = _elem_ptr(context, builder, sig.args[0], args[0], sig.args[1], args[1])
            i32 = ir.IntType(32)
            vec_t = ir.VectorType(i32, 4)
            vec = ir.Constant(vec_t, None)
            for k in range(4):
                w = context.cast(builder, args[2 + k], sig.args[2 + k], types.uint32)
                vec = builder.insert_element(vec, w, ir.Constant(i32, k))
            sptr = builder.addrspacecast(ptr, ir.PointerType(ptr.type.pointee, 3))
            builder.store(vec, builder.bitcast(sptr, ir.PointerType(vec_t, 3)), align=16)
            return context.get_dummy_value()

        return sig, codegen

    @intrinsic
    def sput(typingctx, arr, idx, v):
        if not _is_half_array(arr, idx) or v != types.float16:
            return None
        sig = types.none(arr, idx, v)

        def codegen(context, builder, sig, args):
            ptr = _elem_ptr(context, builder, sig.args[0], args[0], sig.args[1], args[1])
            elt = ptr.type.pointee
            v = args[2] if args[2].type == elt else builder.bitcast(args[2], elt)
            builder.store(v, builder.addrspacecast(ptr, ir.PointerType(elt, 3)), align=2)
            return context.get_dummy_value()

        return sig, codegen

    @intrinsic
    def sget(typingctx, arr, idx):
        if not _is_half_array(arr, idx):
            return None
        sig = types.float16(arr, idx)

        def codegen(context, builder, sig, args):
            ptr = _elem_ptr(context, builder, sig.args[0], args[0], sig.args[1], args[1])
            elt = ptr.type.pointee
            v = builder.load(builder.addrspacecast(ptr, ir.PointerType(elt, 3)), align=2)
            want = context.get_value_type(types.float16)
            return v if v.type == want else builder.bitcast(v, want)

        return sig, codegen

    @intrinsic
    def pack_half2(typingctx, lo, hi):
        if lo != types.float16 or hi != types.float16:
            return None
        sig = types.uint32(lo, hi)

        def codegen(context, builder, sig, args):
            i16, i32 = ir.IntType(16), ir.IntType(32)
            a = builder.zext(builder.bitcast(args[0], i16), i32)
            b = builder.zext(builder.bitcast(args[1], i16), i32)
            return builder.or_(a, builder.shl(b, ir.Constant(i32, 16)))

        return sig, codegen

    @intrinsic
    def mma16816(typingctx, a0, a1, a2, a3, b0, b1, c0, c1, c2, c3):
        if not all(isinstance(v, types.Integer) for v in (a0, a1, a2, a3, b0, b1)):
            return None
        if not all(v == types.float32 for v in (c0, c1, c2, c3)):
            return None
        sig = types.UniTuple(types.float32, 4)(a0, a1, a2, a3, b0, b1, c0, c1, c2, c3)

        def codegen(context, builder, sig, args):
            i32, f32 = ir.IntType(32), ir.FloatType()
            ins = [context.cast(builder, args[k], sig.args[k], types.uint32) for k in range(6)]
            asm = ir.InlineAsm(
                ir.FunctionType(ir.LiteralStructType([f32] * 4), [i32] * 6 + [f32] * 4),
                "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {$0, $1, $2, $3}, "
                "{$4, $5, $6, $7}, {$8, $9}, {$10, $11, $12, $13};",
                "=f,=f,=f,=f,r,r,r,r,r,r,f,f,f,f", side_effect=True)
            st = builder.call(asm, ins + list(args[6:]))
            return context.make_tuple(builder, sig.return_type,
                                      [builder.extract_value(st, k) for k in range(4)])

        return sig, codegen


    @intrinsic
    def mma_sp16832(typingctx, a0, a1, a2, a3, b0, b1, b2, b3, c0, c1, c2, c3, e):
        words = (a0, a1, a2, a3, b0, b1, b2, b3)
        if not all(isinstance(v, types.Integer) for v in words + (e,)):
            return None
        if not all(v == types.float32 for v in (c0, c1, c2, c3)):
            return None
        sig = types.UniTuple(types.float32, 4)(*words, c0, c1, c2, c3, e)

        def codegen(context, builder, sig, args):
            i32, f32 = ir.IntType(32), ir.FloatType()
            ins = [context.cast(builder, args[k], sig.args[k], types.uint32) for k in range(8)]
            meta = context.cast(builder, args[12], sig.args[12], types.uint32)
            asm = ir.InlineAsm(
                ir.FunctionType(ir.LiteralStructType([f32] * 4), [i32] * 8 + [f32] * 4 + [i32]),
                "mma.sp.sync.aligned.m16n8k32.row.col.f32.f16.f16.f32 {$0, $1, $2, $3}, "
                "{$4, $5, $6, $7}, {$8, $9, $10, $11}, {$12, $13, $14, $15}, $16, 0x0;",
                "=f,=f,=f,=f,r,r,r,r,r,r,r,r,f,f,f,f,r", side_effect=True)
            st = builder.call(asm, ins + list(args[8:12]) + [meta])
            return context.make_tuple(builder, sig.return_type,
                                      [builder.extract_value(st, k) for k in range(4)])

        return sig, codegen


# ---------------------------------------------------------------------------------------------
# bit patterns -> floats (escaped values of entropy-coded formats)
# ---------------------------------------------------------------------------------------------
# ``float_from_bits(bits, like)``: the float of ``like``'s type (float16/32/64) whose bit
# pattern is the low 16/32/64 bits of the unsigned integer ``bits``. ``like`` only selects the
# type (pass a value of the wanted dtype, e.g. ``values[0]``).

if SIMULATOR:
    _UINT_OF = {2: np.uint16, 4: np.uint32, 8: np.uint64}

    def float_from_bits(bits, like):
        dt = np.asarray(like).dtype
        u = _UINT_OF[dt.itemsize](int(bits) & ((1 << (8 * dt.itemsize)) - 1))
        return u.view(dt)

else:
    @intrinsic
    def float_from_bits(typingctx, bits, like):
        if not isinstance(bits, types.Integer) or not isinstance(like, types.Float):
            return None
        sig = like(bits, like)

        def codegen(context, builder, sig, args):
            width = sig.return_type.bitwidth
            v = args[0]
            src = sig.args[0].bitwidth
            ity = ir.IntType(width)
            if src > width:
                v = builder.trunc(v, ity)
            elif src < width:
                v = builder.zext(v, ity)
            return builder.bitcast(v, context.get_value_type(sig.return_type))

        return sig, codegen


# ---------------------------------------------------------------------------------------------
# programmatic dependent launch (compute capability 9.0+): ``_spmm.launch_smem``, ``after``
# ---------------------------------------------------------------------------------------------
# ``grid_dependency_wait()`` waits until the grid launched before this one on the stream has
# ended and its writes are visible (``griddepcontrol.wait``); ``launch_dependents()`` lets a grid
# launched after this one with ``after`` start its blocks once every block of this grid
# has issued it or ended (``griddepcontrol.launch_dependents``). Both do nothing in a grid with
# no such neighbour. The instructions exist from sm_90 on, so the kernel factories call them
# only under their ``pdl`` flag (``_common.pdl_capable``). The simulator runs grids one after
# another: both are no-ops there.

if SIMULATOR:
    def grid_dependency_wait():
        pass

    def launch_dependents():
        pass

else:
    def _griddepcontrol(text: str):
        @intrinsic
        def op(typingctx):
            sig = types.none()

            def codegen(context, builder, sig, args):
                asm = ir.InlineAsm(ir.FunctionType(ir.VoidType(), []), text, "~{memory}",
                                   side_effect=True)
                builder.call(asm, [])
                return context.get_dummy_value()

            return sig, codegen
        return op

    grid_dependency_wait = _griddepcontrol("griddepcontrol.wait;")
    launch_dependents = _griddepcontrol("griddepcontrol.launch_dependents;")
