"""ms-cpu-kernel-dest: a matmul kernel writes its caller's destination view in place.

Functions bufferize at the identity layout, so a kernel's output is a buffer of its own even
where the caller's result is a view of a larger buffer (a convolution's image of its batch
result, in the scf.forall over the images). The caller then allocates, zeroes, calls, copies
into the view and frees:

    %a = memref.alloc() : memref<32x784xf32>
    linalg.fill ins(%zero : f32) outs(%a : memref<32x784xf32>)
    func.call @k(%w, %col, %a)
    %e = memref.expand_shape %a [[0, 1], [2, 3]] ... into memref<1x32x28x28xf32>
    %v = memref.subview %out[%i, 0, 0, 0] [1, 32, 28, 28] [1, 1, 1, 1]
    memref.copy %e, %v
    memref.dealloc %a

This pass gives the kernel the view itself, collapsed to the kernel's shape (static strides,
innermost 1, a dynamic offset: `memref<32x784xf32, strided<[784, 1], offset: ?>>`), and
drops the buffer and the copy: per image, one loop nest less to compile and one pass over
the product's bytes less to run. It applies where the view collapses to the kernel's shape
with static strides, the operand is the kernel's only use of that argument in linalg ops,
and the kernel has that one call (kernels are outlined per matmul; it runs before
ms-cpu-merge-kernels).
"""
from __future__ import annotations

from mlir import ir
from mlir.dialects import memref

from .base import ModulePass, register
from ..dialects.ir_helpers import (MEMREF_VIEWS, calls_by_callee, collapsed_type,
                                   defined_functions, function_type, may_alias,
                                   set_function_type, symbol_name, view_root)
from .outline import is_kernel

_RESHAPES = ("memref.expand_shape", "memref.collapse_shape")


def _users(value):
    return [use.owner.operation if hasattr(use.owner, "operation") else use.owner
            for use in value.uses]


def _copy_out(alloc, call):
    """(the copy, the reshape of the buffer it reads or None) when the buffer's uses are
    fills before the call, the call, one memref.copy from it (or from its one reshape) after
    the call, and its dealloc; else None."""
    buffer, copy, reshape = alloc.results[0], None, None
    for user in _users(buffer):
        if user.name in _RESHAPES and reshape is None:
            reshape = user
            inner = _users(user.results[0])
            if len(inner) != 1 or inner[0].name != "memref.copy":
                return None
            copy = inner[0]
        elif user.name == "memref.copy" and copy is None:
            copy = user
        elif user.name == "linalg.fill":
            # (is_before_in_block asserts on ops of two blocks: checked first)
            if user.block != call.block or not user.is_before_in_block(call):
                return None
        elif user.name not in ("memref.dealloc", "func.call") or (
                user.name == "func.call" and user != call):
            return None
    if copy is None or copy.operands[0] != (reshape.results[0] if reshape else buffer):
        return None
    if copy.block != call.block or not call.is_before_in_block(copy):
        return None
    return copy, reshape


def _nothing_else_touches(alloc, copy, call, view) -> bool:
    """Whether the view may be written from the allocation on: the ops from the allocation
    to the copy are the buffer's fills, the call, views, deallocations and pure arithmetic
    (no other read or write of the view's buffer meanwhile), and no other operand of the
    call may be a view of the same buffer (the kernel would read what it writes)."""
    root, buffer = view_root(view), alloc.results[0]
    if any(operand != buffer and may_alias(view_root(operand), root) for operand in call.operands
           if isinstance(operand.type, ir.MemRefType)):
        return False
    ops = [o.operation for o in alloc.block.operations]
    for o in ops[ops.index(alloc) + 1:]:
        if o == copy:
            return True
        name = o.name
        if name == "linalg.fill" and o.operands[1] != buffer:
            return False
        if not (o == call or name in MEMREF_VIEWS or name in ("memref.dealloc", "linalg.fill")
                or name.startswith(("arith.", "index.", "affine.apply"))):
            return False
    return False


def _dominates(value, op) -> bool:
    """Whether `value` is available at `op`: a block argument of a block enclosing it, or the
    result of an op before it (or before the op that holds it) in an enclosing block."""
    owner = value.owner
    if isinstance(owner, ir.Block):
        inner = op
        while inner is not None:
            if inner.block == owner:
                return True
            inner = inner.parent
        return False
    definer = owner.operation
    inner = op
    while inner is not None:
        if inner.block == definer.block:
            return definer.is_before_in_block(inner)
        inner = inner.parent
    return False


def _view_for(buffer_type, view, reshape):
    """(the view's type as the kernel's operand, the reassociation collapsing it or None),
    or None where the view does not collapse to the buffer's shape with static strides and
    innermost stride 1."""
    view_type = ir.MemRefType(view.type)
    if reshape is None:
        groups = [[d] for d in range(view_type.rank)]
        if list(view_type.shape) != list(buffer_type.shape):
            return None
    elif reshape.name == "memref.expand_shape":
        groups = [list(ir.ArrayAttr(g)) for g in ir.ArrayAttr(reshape.attributes["reassociation"])]
        groups = [[ir.IntegerAttr(d).value for d in g] for g in groups]
    else:
        return None
    new_type = collapsed_type(view_type, groups, buffer_type.shape)
    if new_type is None or new_type.get_strides_and_offset()[0][-1] != 1:
        return None
    return new_type, groups if reshape is not None else None


def _kernel_takes_any_layout(kernel, index) -> bool:
    """The kernel's argument is used by linalg ops only (they take strided buffers)."""
    argument = kernel.regions[0].blocks[0].arguments[index]
    return all(user.name.startswith("linalg.") for user in _users(argument))


def _available_at(view, op) -> bool:
    """Whether the view can be used at `op`: it is, or it is a subview of values that are
    (then moved there)."""
    if _dominates(view, op):
        return True
    definer = view.owner
    if isinstance(definer, ir.Block) or definer.operation.name != "memref.subview":
        return False
    definer = definer.operation
    if not all(_dominates(v, op) for v in definer.operands):
        return False
    definer.move_before(op)
    return True


def _rewrite(call, index, alloc, copy, reshape, kernel):
    """The kernel reads and writes the copy's destination instead of the buffer."""
    buffer_type = ir.MemRefType(alloc.results[0].type)
    view = copy.operands[1]
    with alloc.location:
        found = _view_for(buffer_type, view, reshape)
    if (found is None or not _nothing_else_touches(alloc, copy, call, view)
            or not _available_at(view, alloc)):
        return False
    new_type, groups = found
    for user in _users(alloc.results[0]):
        if user.name == "memref.dealloc":
            user.erase()
    with ir.InsertionPoint(alloc), alloc.location:
        operand = view if groups is None else memref.collapse_shape(new_type, view, groups)
    for op in [copy] + ([reshape] if reshape is not None else []):
        op.erase()
    alloc.results[0].replace_all_uses_with(operand)
    alloc.erase()
    ftype = function_type(kernel)
    inputs = list(ftype.inputs)
    inputs[index] = new_type
    set_function_type(kernel, inputs, ftype.results)
    kernel.regions[0].blocks[0].arguments[index].set_type(new_type)
    return True


@register
class KernelDest(ModulePass):
    name = "ms-cpu-kernel-dest"
    summary = ("a matmul kernel whose output is copied into a view of a larger buffer writes "
               "that view in place (no buffer of its own, no copy)")

    def run(self, module):
        kernels = {symbol_name(fn): fn for fn in defined_functions(module) if is_kernel(fn)}
        for name, calls in calls_by_callee(module.operation).items():
            kernel = kernels.get(name)
            if kernel is None or len(calls) != 1:
                continue
            call = calls[0].operation
            for index, operand in enumerate(list(call.operands)):
                if isinstance(operand.owner, ir.Block):
                    continue
                alloc = operand.owner.operation
                if (alloc.name != "memref.alloc" or alloc.block != call.block
                        or not _kernel_takes_any_layout(kernel, index)):
                    continue
                found = _copy_out(alloc, call)
                if found is not None:
                    _rewrite(call, index, alloc, *found, kernel)
