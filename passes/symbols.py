"""The machine code's own function names cannot collide with C's.

A compiled function kept the user's name (`step`, `exp`, `erf`) down to the machine code, in
the one symbol space it shares with the C libraries: ms-cpu-math-approx declares libm's `erf`
for float64 (a module with an entry named `erf` then declared it twice), a float64 `math.exp`
becomes a call of libm's `exp` (an entry named `exp` called itself for ever), and a shared
library's reference to its own `step` was bound to glibc's `step()`.

ms-cpu-internal-symbols, before the CPU passes that declare library functions, renames every
defined function to `mscc.<name>`: the dot makes it a name no C library defines.
ms-cpu-c-interface-names, after the conversion to LLVM, gives the C interfaces back the
names the runtime looks up (`_mlir_ciface_<entry>`, not `_mlir_ciface_mscc.<entry>`).
"""
from __future__ import annotations

from mlir import ir
from mlir.dialects import func

from .base import ModulePass, fail, register
from ..dialects.ir_helpers import (add_passthrough, defined_functions, set_symbol_name,
                                   symbol_name, symbol_names)

PREFIX = "mscc."
C_INTERFACE = "_mlir_ciface_"


def declare_external(module, name: str, inputs: list, results: list, at_start: bool = False):
    """A private declaration of the library function `name` (a C symbol a pass calls: libc's
    madvise, the quick tier's matrix product), made once: at the module's start or end. A
    symbol the module already has under that name with another type is a located error
    (the pass's calls would not match it; they were invalid IR, reported at the call)."""
    wanted = ir.FunctionType.get(inputs, results)
    for op in module.regions[0].blocks[0].operations:
        if "sym_name" in op.attributes and symbol_name(op) == name:
            if op.name != "func.func" or len(op.regions[0].blocks) or (
                    ir.TypeAttr(op.attributes["function_type"]).value != wanted):
                fail(op, f"'{name}' is the C library function {wanted} that this compile "
                         "calls; the module defines another symbol of that name")
            return
    body = module.regions[0].blocks[0]
    point = ir.InsertionPoint.at_block_begin(body) if at_start else ir.InsertionPoint(body)
    with point, ir.Location.unknown():
        func.FuncOp(name, wanted, visibility="private")


def _rename(module, fn, new):
    ir.SymbolTable.replace_all_symbol_uses(symbol_name(fn), new, module)
    set_symbol_name(fn, new)


@register
class InternalSymbols(ModulePass):
    name = "ms-cpu-internal-symbols"
    summary = "rename every defined function to mscc.<name>, a name no C library defines"

    def run(self, module):
        renamed = {}
        for fn in defined_functions(module, "func.func"):
            if not symbol_name(fn).startswith(PREFIX):
                renamed[symbol_name(fn)] = fn
        if not renamed:
            return
        taken = symbol_names(module)
        for name, fn in renamed.items():
            if PREFIX + name in taken:
                fail(fn, f"function '{name}' becomes '{PREFIX + name}' in the machine code, a "
                         f"name this module already has (names starting '{PREFIX}' are mscc's)")
        # One walk for every call (SymbolTable.replace_all_symbol_uses per function walked
        # the module once each: 0.28 s for MobileNetV2's step, 100 functions). At this
        # stage func.call is the only op that names a function; a use this missed would
        # fail verification (a call of an undefined function), not run.

        def visit(op):
            if op.name == "func.call":
                callee = ir.FlatSymbolRefAttr(op.attributes["callee"]).value
                if callee in renamed:
                    op.attributes["callee"] = ir.FlatSymbolRefAttr.get(PREFIX + callee)
            return ir.WalkResult.ADVANCE
        module.operation.walk(visit)
        for name, fn in renamed.items():
            set_symbol_name(fn, PREFIX + name)


@register
class CInterfaceNames(ModulePass):
    name = "ms-cpu-c-interface-names"
    summary = "name the C interface of mscc.<entry> _mlir_ciface_<entry>, as the runtime expects"

    def run(self, module):
        mangled = C_INTERFACE + PREFIX
        for fn in defined_functions(module, "llvm.func"):
            if symbol_name(fn).startswith(mangled):
                _rename(module, fn, C_INTERFACE + symbol_name(fn)[len(mangled):])


INTERNAL_LINKAGE = "#llvm.linkage<internal>"  # (llvm.func's, and func.func's llvm.linkage)


@register
class PrivateEntryBodies(ModulePass):
    name = "ms-cpu-private-entry-bodies"
    summary = ("make each entry's body (the function its C interface calls with every memref "
               "field as an argument) internal and always inlined: LLVM merges it into the C "
               "interface")
    # A ViT layer's training step passes its 70 memrefs to mscc.train_step as 403 scalar
    # arguments: LLVM's instruction selection of that call (and of the ExecutionEngine's
    # packed wrapper of the function) took ~0.1 s of every compile. Inlined into its C
    # interface, the fields are read from the descriptors where they are used. LLVM's
    # always-inliner (in its O0 and O3 pipelines) does it in a few ms; MLIR's inliner, run
    # on the LLVM dialect before, took ~40 ms of LeNet5's step and this pass a walk of the
    # module for the calls. Internal is safe whoever calls the body: nothing outside the
    # module does (the runtime and the libraries' exports name the C interfaces only).

    def run(self, module):
        internal = ir.Attribute.parse(INTERNAL_LINKAGE)
        table = ir.SymbolTable(module.operation)
        for fn in defined_functions(module, "llvm.func"):
            wrapper = symbol_name(fn)
            if not wrapper.startswith(C_INTERFACE):
                continue
            body = entry_body(wrapper)
            callee = table[body] if body in table else None
            if callee is None or not callee.regions[0].blocks:
                continue  # (no body here: a declaration)
            callee.attributes["linkage"] = internal
            callee.attributes["sym_visibility"] = ir.StringAttr.get("private")
            add_passthrough(callee, "alwaysinline")


def entry_body(c_interface: str) -> str:
    """The name of the function the C interface `c_interface` calls (mscc.<entry>)."""
    return PREFIX + c_interface[len(C_INTERFACE):]
