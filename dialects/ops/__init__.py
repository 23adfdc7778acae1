"""Importing this package fills the op registry: one module per op family."""
from . import control, conv, core, elementwise, indexing, matmul, random, reduction, shape  # noqa: F401
