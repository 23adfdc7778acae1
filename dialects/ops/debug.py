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

from ..lazy import LazyModule, func, ir, tensor

from .. import dtypes as dt
from .. import lowering
from ..builders import element_type
from ..dtypes import TensorSpec
from ..grad import no_grad
from ..ir_helpers import enclosing_module, fresh_symbol, llvm_string_literal
from ..registry import ShapeError, define

bufferization = LazyModule("mlir.dialects.bufferization")

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


def _wrapper_text(name, desc_name, desc: bytes, mtype):
    """The wrapper: load the hook; call it with (description, data) or, without one, say so
    on stderr. `mtype` is the flat buffer's memref type (None: no tensor)."""
    n = len(desc)
    arg = f"%buf: {mtype}" if mtype else ""
    data = ([f"%i = memref.extract_aligned_pointer_as_index %buf : {mtype} -> index",
             "%w = arith.index_cast %i : index to i64",
             "%data = llvm.inttoptr %w : i64 to !llvm.ptr"] if mtype
            else ["%data = llvm.mlir.zero : !llvm.ptr"])
    msg = b"mscc: a Print runs where no printer is installed (the code was loaded outside " \
          b"mscc's runtime); nothing printed\n\0"
    text = llvm_string_literal(desc)
    return f"""llvm.mlir.global internal constant @{desc_name}("{text}")
    {{addr_space = 0 : i32}} : !llvm.array<{n} x i8>
llvm.mlir.global internal constant @{desc_name}_none("{llvm_string_literal(msg)}")
    {{addr_space = 0 : i32}} : !llvm.array<{len(msg)} x i8>
func.func private @{name}({arg}) {{
  {chr(10).join('  ' + line for line in data).strip()}
  %desc = llvm.mlir.addressof @{desc_name} : !llvm.ptr
  %hook_p = llvm.mlir.addressof @{HOOK} : !llvm.ptr
  %hook = llvm.load %hook_p : !llvm.ptr -> !llvm.ptr
  %null = llvm.mlir.zero : !llvm.ptr
  %set = llvm.icmp "ne" %hook, %null : !llvm.ptr
  scf.if %set {{
    llvm.call %hook(%desc, %data) : !llvm.ptr, (!llvm.ptr, !llvm.ptr) -> ()
  }} else {{
    %none = llvm.mlir.addressof @{desc_name}_none : !llvm.ptr
    %fd = llvm.mlir.constant(2 : i32) : i32
    %r = llvm.call @dprintf(%fd, %none) vararg(!llvm.func<i32 (i32, ptr, ...)>)
        : (i32, !llvm.ptr) -> i32
  }}
  return
}}"""


def _declare(module, text):
    """Parse `text` with the hook global and dprintf declared; move into the module the ops
    whose symbols it does not have yet."""
    table = ir.SymbolTable(module)
    head = (f"llvm.mlir.global external @{HOOK}() {{addr_space = 0 : i32}} : !llvm.ptr {{\n"
            "  %z = llvm.mlir.zero : !llvm.ptr\n  llvm.return %z : !llvm.ptr\n}\n"
            f"llvm.func @{HOOK}_slot() -> !llvm.ptr {{\n"
            f"  %a = llvm.mlir.addressof @{HOOK} : !llvm.ptr\n  llvm.return %a : !llvm.ptr\n}}\n"
            "llvm.func @dprintf(i32, !llvm.ptr, ...) -> i32\n")
    parsed = ir.Module.parse("module {\n" + head + text + "\n}")
    body = module.regions[0].blocks[0]
    for op in list(parsed.body.operations):
        if ir.StringAttr(op.attributes["sym_name"]).value not in table:
            op.detach_from_parent()
            body.append(op)


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
    _declare(module, _wrapper_text(name, desc_name, desc, mtype))
    func.CallOp([], ir.FlatSymbolRefAttr.get(name), args)
    return lowering.fill(TensorSpec((), dt.int32), 0)


define("ms.print", [("x", "optional")], _print_infer,
       attrs={"before": "string", "after": "string"}, pure=False, lower=_lower_print,
       grad=no_grad,
       doc="prints `before`, x (MindSpore's Print format) and `after` when the code runs; "
           "an int32 token (MindSpore's Print, graph mode)")
