"""Vector loads for kernels: one 8- or 16-byte load instead of several scalar ones.

``vload1/2/4/8(arr, i)`` return the tuple ``(arr[i], ..., arr[i + n - 1])``; on the GPU they
compile to a single vector load (``ld.global.v2/v4``), so ``i * itemsize`` must be a
multiple of ``n * itemsize`` and the elements must lie inside the array.
``sload1/2/4/8(arr, i)`` are the same for an array in shared memory (``ld.shared.v2/v4``).
``load_u32(arr8, i)`` reads 4 bytes of a uint8 array at byte ``i`` (a multiple of 4) as one
uint32 (little-endian, like the GPU). On the simulator each is a plain-indexing fallback
with the same results (and a bounds/alignment assertion the GPU does not make).
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

    def _make_vload(n):
        @intrinsic
        def _vload(typingctx, arr, idx):
            if not isinstance(arr, types.Array) or arr.ndim != 1 or not isinstance(idx, types.Integer):
                return None
            elty = arr.dtype
            sig = types.UniTuple(elty, n)(arr, idx)

            def codegen(context, builder, sig, args):
                arrty, idxty = sig.args
                ary = context.make_array(arrty)(context, builder, args[0])
                i = context.cast(builder, args[1], idxty, types.intp)
                ptr = builder.gep(ary.data, [i])
                vec = ir.VectorType(context.get_data_type(elty), n)
                total = n * elty.bitwidth
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
                    v = builder.bitcast(raw, vec)
                else:
                    v = builder.load(builder.bitcast(ptr, vec.as_pointer()), align=total // 8)
                vals = [builder.extract_element(v, ir.Constant(ir.IntType(32), k))
                        for k in range(n)]
                return context.make_tuple(builder, sig.return_type, vals)

            return sig, codegen
        return _vload

    vload1 = _make_vload(1)
    vload2 = _make_vload(2)
    vload4 = _make_vload(4)
    vload8 = _make_vload(8)

    def _make_sload(n):
        """A vector load from a shared-memory array: the generic pointer numba gives shared
        arrays is cast to the shared address space, and the load is done as 32-bit words
        (a 16-byte vector of halves would be split in two)."""
        @intrinsic
        def _sload(typingctx, arr, idx):
            if not isinstance(arr, types.Array) or arr.ndim != 1 or not isinstance(idx, types.Integer):
                return None
            elty = arr.dtype
            sig = types.UniTuple(elty, n)(arr, idx)

            def codegen(context, builder, sig, args):
                arrty, idxty = sig.args
                ary = context.make_array(arrty)(context, builder, args[0])
                i = context.cast(builder, args[1], idxty, types.intp)
                ptr = builder.gep(ary.data, [i])
                total = n * elty.bitwidth
                vec = ir.VectorType(context.get_data_type(elty), n)
                if total >= 32:
                    raw_t = ir.VectorType(ir.IntType(32), total // 32)
                else:
                    raw_t = ir.IntType(total)
                sptr = builder.addrspacecast(ptr, ir.PointerType(context.get_data_type(elty), 3))
                raw = builder.load(builder.bitcast(sptr, ir.PointerType(raw_t, 3)), align=total // 8)
                v = builder.bitcast(raw, vec)
                vals = [builder.extract_element(v, ir.Constant(ir.IntType(32), k))
                        for k in range(n)]
                return context.make_tuple(builder, sig.return_type, vals)

            return sig, codegen
        return _sload

    sload1 = _make_sload(1)
    sload2 = _make_sload(2)
    sload4 = _make_sload(4)
    sload8 = _make_sload(8)

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
