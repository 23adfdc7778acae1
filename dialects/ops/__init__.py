"""Importing this package fills the op registry: one module per op family."""
from . import conv, core, elementwise, indexing, matmul, pooling, random, reduction, shape  # noqa: F401
