"""The LLVM dialect's Python module as the bindings load it for mscc: no op classes.

mscc builds LLVM dialect ops only by parsing text (the MPI and print declarations) and reads
the ones the conversions make generically (symbol names, attributes), so it needs none of
`mlir.dialects.llvm`'s generated classes, whose import (~14 ms) the first compile of every
process paid when ms-cpu-loop-hints parsed its first LLVM attribute. Importing the upstream
module as well stays possible (its classes then register as usual).
"""
