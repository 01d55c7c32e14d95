"""Bit operations on 64-bit words for the compiled gate's queue maps."""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

ONE = np.uint64(1)
FULL = np.uint64(0xFFFF_FFFF_FFFF_FFFF)


@intrinsic
def trailing_zeros(typingctx, word):
    """The index of the lowest set bit of a non-zero uint64 (LLVM's cttz: one instruction
    on current processors)."""

    def codegen(context, builder, signature, args):
        i64 = ir.IntType(64)
        count = builder.module.declare_intrinsic("llvm.cttz", [i64, ir.IntType(1)])
        # the caller never passes 0, so the result at 0 may be left undefined
        return builder.call(count, [args[0], ir.IntType(1)(1)])

    return types.int64(types.uint64), codegen


@njit(cache=True, inline="always", _nrt=False)
def bit(j):
    """The word with bit j (0..63) set."""
    return ONE << np.uint64(j)


@njit(cache=True, inline="always", _nrt=False)
def from_bit(j):
    """The word with bits j..63 set (j in 0..63)."""
    return FULL << np.uint64(j)
