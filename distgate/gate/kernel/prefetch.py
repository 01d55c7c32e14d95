"""A prefetch hint for the compiled gate: ask the processor for an array element before it
is needed."""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic


@intrinsic
def prefetch(typingctx, array, index):
    """Ask the processor to bring array[index] into its cache (LLVM's prefetch: a hint,
    never a fault, no effect on results)."""

    def codegen(context, builder, signature, args):
        array_type = signature.args[0]
        data = context.make_array(array_type)(context, builder, args[0])
        pointer = cgutils.get_item_pointer(context, builder, array_type, data, [args[1]])
        i32 = ir.IntType(32)
        hint = ir.FunctionType(ir.VoidType(), [cgutils.voidptr_t, i32, i32, i32])
        # named by llvmlite from the pointer type, as numba's own memcpy is: the name the
        # LLVM of every supported numba accepts
        prefetch = builder.module.declare_intrinsic("llvm.prefetch", [cgutils.voidptr_t], hint)
        # read access, keep in every cache level, data (not instructions)
        builder.call(
            prefetch, [builder.bitcast(pointer, cgutils.voidptr_t), i32(0), i32(3), i32(1)]
        )
        return context.get_dummy_value()

    return types.void(array, index), codegen
