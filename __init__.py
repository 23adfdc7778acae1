"""mscc: an MLIR-based multi-level compiler for numerical Python, in the style of MindSpore."""
__version__ = "0.1.0"
