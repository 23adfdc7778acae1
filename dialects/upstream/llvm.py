"""The LLVM dialect's Python module as the bindings load it for mscc: no op classes.

The pipeline reads the LLVM dialect ops the conversions make generically (symbol names,
attributes), so a compile needs none of `mlir.dialects.llvm`'s generated classes, whose import
(~14 ms) the first compile of every process paid when ms-cpu-loop-hints parsed its first LLVM
attribute. The collectives (dialects/ops/collective.py) build their MPI calls with the
upstream module's builders and import it when a collective is lowered; its classes then
register as usual. (The print declarations of dialects/ops/debug.py are still parsed text.)
"""
