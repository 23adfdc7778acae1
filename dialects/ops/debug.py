"""ms.print: MindSpore's graph-mode Print, which prints while the compiled code runs.

`ops.Print()('x:', x)` inside jit / GRAPH_MODE must print x's values each time the compiled
function runs, not once while it is traced: the values exist only then. So Print is an op of
the program (pure=False: ms-canonicalize neither erases nor merges it, and nothing reorders
ops with side effects, so prints keep their order), one per Tensor printed: `before` and
`after` are the texts printed around it (a Print of texts only is one ms.print without x).
Its result is an int32 scalar token, MindSpore's "invalid value, should be ignored".

Lowering (CPU): a call of a private wrapper that takes the operand's buffer (a flat view,
`bufferization.to_buffer`) and calls, through a function pointer held in the module's global
`@mscc_print_hook`, the runtime's printer with a C string that describes the print (JSON:
texts, shape, dtype, source line) and the data pointer. The runtime (runtime/debug_print.py)
sets the global when it loads the code (its address from `@mscc_print_hook_slot()`, since the
ExecutionEngine looks up functions only, or from the shared library's symbol table): the in-process ExecutionEngine, the disk cache's and
saved artifacts' shared libraries alike, so every way mscc runs CPU code prints the same; no
symbol needs resolving at load time. Why not a symbol the ExecutionEngine resolves
(`register_runtime`): the disk cache and artifacts are shared libraries loaded by dlopen,
which would need the symbol from a library; the global works for all three. Where nothing
sets the hook (a library called from C), the wrapper says so on stderr instead of crashing.
The printer formats as MindSpore's Print does (`Tensor(shape=[2, 1], dtype=Int32, value=
...)`, one item a line) and writes to fd 1, as MindSpore's C++ printer does.

Gradient: none (the token is not differentiable and x gets no cotangent from it). vmap: no
rule (a print per mapped element, or of the whole batch, are both not what the user wrote;
test_vmap.py's NO_RULE). The CUDA target
refuses it (ms-gpu-reject-collectives), naming the op and the line.
"""
from __future__ import annotations

import json

from ..lazy import LazyModule, arith, func, ir, scf, tensor

from .. import dtypes as dt
from .. import lowering
from ..builders import element_type
from ..dtypes import TensorSpec
from ..grad import no_grad
from ..ir_helpers import enclosing_module, fresh_symbol
from ..registry import ShapeError, define

bufferization = LazyModule("mlir.dialects.bufferization")
llvm = LazyModule("mlir.dialects.llvm")
memref = LazyModule("mlir.dialects.memref")

HOOK = "mscc_print_hook"       # the module global the runtime sets (runtime/debug_print.py)
PRINT_OPS = ("ms.print",)


def _print_infer(ins, attrs):
    for key in ("before", "after"):
        if not isinstance(attrs.get(key), str):
            raise ShapeError(f"{key} must be a string, got {attrs.get(key)!r}")
    return TensorSpec((), dt.int32)


def _where(lc):
    from ...passes.diagnostics import file_location
    file, line, _ = file_location(lc.loc)
    return f"{file}:{line}" if file else ""


_NO_PRINTER = (b"mscc: a Print runs where no printer is installed (the code was loaded outside "
               b"mscc's runtime); nothing printed\n\0")
# What the LLVM dialect's Python builders cannot spell (no array or function type builders);
# the linkages are attributes, parsed like ms-cpu-private-entry-bodies' (passes/symbols.py).
_DPRINTF_TYPE = "!llvm.func<i32 (i32, ptr, ...)>"
_SLOT_TYPE = "!llvm.func<ptr ()>"


def _i32(value):
    return ir.IntegerAttr.get(ir.IntegerType.get_signless(32), value)


def _string_global(name, data: bytes):
    """An internal constant global holding the bytes `data` (NUL included)."""
    llvm.GlobalOp(ir.Type.parse(f"!llvm.array<{len(data)} x i8>"), name,
                  ir.Attribute.parse("#llvm.linkage<internal>"), constant=True,
                  value=ir.StringAttr.get(data), addr_space=_i32(0))


def _declare_runtime(table):
    """The hook global (null until the runtime sets it), its address for the runtime
    (`@mscc_print_hook_slot()`: the ExecutionEngine looks up functions only) and dprintf,
    each unless the module has it already."""
    ptr = llvm.PointerType.get()
    if HOOK not in table:
        hook = llvm.GlobalOp(ptr, HOOK, ir.Attribute.parse("#llvm.linkage<external>"),
                             addr_space=_i32(0))
        with ir.InsertionPoint(hook.initializer.blocks.append()):
            llvm.ReturnOp(arg=llvm.ZeroOp(ptr).result)
    if f"{HOOK}_slot" not in table:
        slot = llvm.LLVMFuncOp(f"{HOOK}_slot", ir.TypeAttr.get(ir.Type.parse(_SLOT_TYPE)))
        with ir.InsertionPoint(slot.body.blocks.append()):
            llvm.ReturnOp(arg=llvm.AddressOfOp(ptr, HOOK).result)
    if "dprintf" not in table:
        llvm.LLVMFuncOp("dprintf", ir.TypeAttr.get(ir.Type.parse(_DPRINTF_TYPE)))


def _wrapper(name, desc_name, mtype):
    """The wrapper: load the hook; call it with (description, data) or, without one, say so
    on stderr. `mtype` is the flat buffer's memref type (None: no tensor)."""
    ptr, i32 = llvm.PointerType.get(), ir.IntegerType.get_signless(32)
    fn = func.FuncOp(name, ([mtype] if mtype else [], []), visibility="private")
    with ir.InsertionPoint(fn.add_entry_block()):
        if mtype:
            address = memref.ExtractAlignedPointerAsIndexOp(fn.arguments[0]).result
            data = llvm.IntToPtrOp(ptr, arith.index_cast(ir.IntegerType.get_signless(64),
                                                          address)).result
        else:
            data = llvm.ZeroOp(ptr).result
        desc = llvm.AddressOfOp(ptr, desc_name).result
        hook = llvm.LoadOp(ptr, llvm.AddressOfOp(ptr, HOOK).result).result
        is_set = llvm.ICmpOp(llvm.ICmpPredicate.ne, hook, llvm.ZeroOp(ptr).result).result
        branch = scf.IfOp(is_set, [], has_else=True)
        with ir.InsertionPoint(branch.then_block):
            llvm.CallOp(None, [hook, desc, data], [], [])
            scf.YieldOp([])
        with ir.InsertionPoint(branch.else_block):
            stderr = llvm.ConstantOp(i32, _i32(2)).result
            none = llvm.AddressOfOp(ptr, f"{desc_name}_none").result
            llvm.CallOp(i32, [stderr, none], [], [], callee=ir.FlatSymbolRefAttr.get("dprintf"),
                        var_callee_type=ir.TypeAttr.get(ir.Type.parse(_DPRINTF_TYPE)))
            scf.YieldOp([])
        func.ReturnOp([])


def _declare(module, name, desc_name, desc: bytes, mtype, loc):
    """The print's wrapper and its two strings at the end of the module, with the runtime's
    hook, slot and dprintf where the module has none yet."""
    table = ir.SymbolTable(module)
    with ir.InsertionPoint(module.regions[0].blocks[0]), loc:
        _declare_runtime(table)
        _string_global(desc_name, desc)
        _string_global(f"{desc_name}_none", _NO_PRINTER)
        _wrapper(name, desc_name, mtype)


def _flat_buffer(x, spec):
    """A 1-D memref of x's elements (row-major), for the printer to read."""
    elem = element_type(spec.dtype, storage=True)
    count = max(1, spec.size) if spec.size else 0
    flat_t = ir.RankedTensorType.get([count], elem)
    if spec.rank > 1:
        flat = tensor.collapse_shape(flat_t, x, [list(range(spec.rank))])
    elif spec.rank == 1:
        flat = x
    else:
        flat = tensor.expand_shape(flat_t, x, [], [], [1])
    mtype = ir.MemRefType.get([count], elem)
    return bufferization.to_buffer(mtype, flat, read_only=True), mtype


def _lower_print(lc, *operands):
    module = enclosing_module(lc.op)
    name, desc_name = fresh_symbol(module, "ms_print"), fresh_symbol(module, "ms_print_desc")
    item = {"before": lc.attrs["before"], "after": lc.attrs["after"], "where": _where(lc)}
    args, mtype = [], None
    if operands:
        spec = lc.ins[0]
        item.update(shape=list(spec.shape), dtype=spec.dtype.name)
        buf, mtype = _flat_buffer(operands[0], spec)
        args = [buf]
    desc = json.dumps(item).encode() + b"\0"
    _declare(module, name, desc_name, desc, mtype, lc.loc)
    func.CallOp([], ir.FlatSymbolRefAttr.get(name), args)
    return lowering.fill(TensorSpec((), dt.int32), 0)


define("ms.print", [("x", "optional")], _print_infer,
       attrs={"before": "string", "after": "string"}, pure=False, lower=_lower_print,
       grad=no_grad,
       doc="prints `before`, x (MindSpore's Print format) and `after` when the code runs; "
           "an int32 token (MindSpore's Print, graph mode)")
