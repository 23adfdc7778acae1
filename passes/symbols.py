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

from .base import ModulePass, register
from ..dialects.ir_helpers import calls_by_callee, defined_functions, set_symbol_name, symbol_name

PREFIX = "mscc."
C_INTERFACE = "_mlir_ciface_"


def _rename(module, fn, new):
    ir.SymbolTable.replace_all_symbol_uses(symbol_name(fn), new, module)
    set_symbol_name(fn, new)


@register
class InternalSymbols(ModulePass):
    name = "ms-cpu-internal-symbols"
    summary = "rename every defined function to mscc.<name>, a name no C library defines"

    def run(self, module):
        for fn in defined_functions(module, "func.func"):
            if not symbol_name(fn).startswith(PREFIX):
                _rename(module, fn, PREFIX + symbol_name(fn))


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
               "field as an argument) private and internal, for the inliner to merge them; "
               "functions LLVM must not inline get the no_inline MLIR's inliner reads")
    # A ViT layer's training step passes its 70 memrefs to mscc.train_step as 403 scalar
    # arguments: LLVM's instruction selection of that call (and of the ExecutionEngine's
    # packed wrapper of the function) took ~0.1 s of every compile. Inlined into its C
    # interface, the fields are read from the descriptors where they are used.

    def run(self, module):
        internal = ir.Attribute.parse(INTERNAL_LINKAGE)
        noinline = ir.StringAttr.get("noinline")
        calls_of = calls_by_callee(module.operation, "llvm.call")
        table = ir.SymbolTable(module.operation)
        for fn in defined_functions(module, "llvm.func"):
            # what ms-cpu-local-functions keeps apart (LLVM's noinline) MLIR's inliner
            # reads from no_inline, which the conversion to LLVM does not carry over
            if "passthrough" in fn.attributes and noinline in list(
                    ir.ArrayAttr(fn.attributes["passthrough"])):
                fn.attributes["no_inline"] = ir.UnitAttr.get()
            wrapper = symbol_name(fn)
            if not wrapper.startswith(C_INTERFACE):
                continue
            body = PREFIX + wrapper[len(C_INTERFACE):]
            calls = calls_of.get(body, [])
            if len(calls) != 1 or calls[0].parent != fn.operation:
                continue  # called from elsewhere too: it stays a function of its own
            callee = table[body]
            callee.attributes["linkage"] = internal
            callee.attributes["sym_visibility"] = ir.StringAttr.get("private")
