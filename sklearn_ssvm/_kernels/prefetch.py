"""Software prefetch: ask the CPU for the next block's data while it works on this one.

A block-coordinate step reads a few kilobytes scattered over large arrays (its rows of the dual
state, its CSR slice, its weight rows); in random block order each of those is a cache miss
that stalls the step. The solver knows the next block a few microseconds ahead, which is enough
for the memory system to fetch it in the background (measured on OCR-large: a BCFW pass takes
about 15% less time, and the same as visiting the blocks in storage order).
"""
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

#: bytes per cache line (x86-64 and most arm64)
LINE = 64


@intrinsic
def prefetch(typingctx, arr, index):
    """Hint that ``arr.ravel()[index]`` will be read soon (``llvm.prefetch``; no effect on
    results, never faults). ``arr`` must be C-contiguous."""
    if (not isinstance(arr, types.Array) or arr.layout != "C"
            or not isinstance(index, types.Integer)):
        return None
    sig = types.void(arr, index)

    def codegen(context, builder, signature, args):
        array = context.make_array(arr)(context, builder, args[0])
        item = context.get_abi_sizeof(context.get_data_type(arr.dtype))
        offset = builder.mul(context.cast(builder, args[1], index, types.intp),
                             context.get_constant(types.intp, item))
        byte_ptr = ir.IntType(8).as_pointer()
        address = builder.gep(builder.bitcast(array.data, byte_ptr), [offset])
        i32 = ir.IntType(32)
        hint = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.VoidType(), [byte_ptr, i32, i32, i32]),
            "llvm.prefetch.p0i8")
        # read access, keep in all cache levels, data (not instruction) cache
        builder.call(hint, [address, i32(0), i32(3), i32(1)])
        return context.get_dummy_value()

    return sig, codegen


@njit(cache=True, nogil=True)
def prefetch_span(arr, start, stop):
    """Prefetch the cache lines holding ``arr.ravel()[start:stop]``."""
    if stop <= start:
        return
    step = max(LINE // arr.itemsize, 1)
    for k in range(start, stop, step):
        prefetch(arr, k)
    prefetch(arr, stop - 1)


@njit(cache=True, nogil=True)
def prefetch_rows(indices, k0, k1, W):
    """Prefetch the rows ``W[indices[k]]`` for ``k0 <= k < k1`` (the weight rows of a CSR
    slice); ``indices[k0:k1]`` should already be in cache."""
    width = W.shape[1]
    for k in range(k0, k1):
        row = indices[k] * width
        prefetch_span(W, row, row + width)
