"""The gpu dialect's Python module as the bindings load it for mscc: no op classes.

The CPU target meets one gpu op, the `gpu.yield` ending every ms.fused region, built and
read generically; the CUDA passes import `mlir.dialects.gpu` themselves, which registers its
op classes (~6 ms the CPU's first compile no longer pays).
"""
