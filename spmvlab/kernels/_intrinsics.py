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
