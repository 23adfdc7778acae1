"""ms-outline-matmul: each matmul (with its fused epilogue) in a kernel function of its own.

Target-neutral: the CPU and CUDA pipelines both outline matmuls at the linalg stage and
schedule the kernel functions later (passes/cpu.py, passes/gpu.py). A kernel function is
private and carries `ms.kernel = "<kind>"`; a transform script applied to it cannot touch the
rest of the program.
"""
from __future__ import annotations

from mlir import ir
from mlir.dialects import func

from ..dialects.lowering import REGION_ATTR, region_kind
from .base import ModulePass, fail, register
from ..dialects.ir_helpers import (function_type, functions, ops_of_kind, symbol_name, symbol_names,
                                  unique_symbol)

KERNEL_ATTR = "ms.kernel"


def is_kernel(fn) -> bool:
    return KERNEL_ATTR in fn.attributes


def kernel_kind(fn) -> str | None:
    """A kernel function's kind ("matmul"), None for any other function; a located error
    where the attribute is no string (IR read from a file may say anything there: a
    dictionary, an integer or a type was a ValueError in every pass that asked)."""
    if not is_kernel(fn):
        return None
    attr = fn.attributes[KERNEL_ATTR]
    if not isinstance(attr, ir.StringAttr):
        fail(fn, f"'{KERNEL_ATTR}' must be a string naming the kernel's kind, like "
                 f"\"matmul\", not {attr}")
    return attr.value


def static_kernel(fn) -> bool:
    """Whether every buffer a kernel function takes has a static shape."""
    return all(ir.MemRefType(t).has_static_shape for t in function_type(fn).inputs
               if isinstance(t, ir.MemRefType))


def kernel_functions(module, kind: str) -> list:
    """The module's kernel functions of one kind ("matmul")."""
    return [fn for fn in functions(module) if kernel_kind(fn) == kind]


def _live_ins(ops, inside):
    """Values the ops use that are defined outside them, in first-use order."""
    args, seen = [], set()
    for op in ops:
        for v in op.operands:
            owner = v.owner
            if (isinstance(owner, ir.Block) or owner.operation not in inside) and v not in seen:
                seen.add(v)
                args.append(v)
    return args


def _clone_into(entry, ops, args, results, loc):
    """Copies of `ops` in `entry`, reading its arguments for `args`, returning `results`."""
    remap = dict(zip(args, entry.arguments))
    with ir.InsertionPoint(entry), loc:
        for op in ops:
            copy = op.clone()
            for i, v in enumerate(copy.operands):
                if v in remap:
                    copy.operands[i] = remap[v]
            remap.update(zip(op.results, copy.results))
        func.ReturnOp([remap[r] for r in results])


def outline(ops, name: str, kind: str, module_block):
    """Move `ops` (in block order) into a private function carrying `ms.kernel = kind` and
    call it: values they use from outside become its arguments, values used after them its
    results."""
    inside = set(ops)
    args = _live_ins(ops, inside)
    results = [r for op in ops for r in op.results
               if any(u.owner.operation not in inside for u in r.uses)]
    loc = ops[-1].location
    with ir.InsertionPoint(module_block), loc:
        fn = func.FuncOp(name, ([v.type for v in args], [r.type for r in results]),
                         visibility="private")
        fn.attributes[KERNEL_ATTR] = ir.StringAttr.get(kind)
        entry = fn.add_entry_block()
    _clone_into(entry, ops, args, results, loc)
    with ir.InsertionPoint(ops[-1]), loc:
        call = func.CallOp([r.type for r in results], ir.FlatSymbolRefAttr.get(name), args)
    for old, new in zip(results, call.results):
        old.replace_all_uses_with(new)
    for op in reversed(ops):
        op.erase()


# Ops of a fused matmul region that stay with the caller: its output's allocation and
# initialization (so that the kernel's result is the caller's buffer: no copy), and the
# sizes that allocation reads (tensor.dim and index arithmetic, for dynamic sizes).
_CALLER_SIDE = {"tensor.empty", "linalg.fill", "arith.constant", "tensor.dim"}


def _caller_side(op) -> bool:
    results = list(op.results)
    return op.name in _CALLER_SIDE or (
        bool(results) and all(isinstance(r.type, ir.IndexType) for r in results))


def kernel_ops(matmul):
    """The matmul and, when it anchors a fused region, the region's other linalg ops (its
    epilogue), in block order."""
    region = matmul.attributes[REGION_ATTR] if REGION_ATTR in matmul.attributes else None
    if region is not None and region_kind(region) is None:
        fail(matmul, f"'{REGION_ATTR}' must be a dictionary with a string 'kind' (a fused "
                     f"region's), not {region}")
    # (a matmul inside another anchor's lowering, a convolution's, keeps its region's ops)
    if region is None or region_kind(region) != "matmul":
        return [matmul]
    return [op.operation for op in matmul.operation.block.operations
            if REGION_ATTR in op.attributes and op.attributes[REGION_ATTR] == region
            and not _caller_side(op.operation)]


@register
class OutlineMatmul(ModulePass):
    name = "ms-outline-matmul"
    summary = "move each linalg.matmul, with its fused epilogue, into its own kernel function"
    # epilogues=false leaves a fused epilogue in the caller (the CUDA target maps it to a
    # kernel of its own: its matmul schedule tiles the product alone).
    options = {"epilogues": True}

    def run(self, module):
        block = module.regions[0].blocks[0]
        taken = symbol_names(module)
        for fn in [fn for fn in functions(module) if not is_kernel(fn)]:
            fn_name = symbol_name(fn)
            for i, op in enumerate(ops_of_kind(fn, "linalg.matmul")):
                ops = kernel_ops(op) if self.opts["epilogues"] else [op.operation]
                outline(ops, unique_symbol(taken, f"{fn_name}__matmul{i}"), "matmul", block)
