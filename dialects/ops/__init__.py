"""Importing this package fills the op registry: one module per op family."""
from . import (control, conv, core, elementwise, indexing, matmul, pooling, random,  # noqa: F401
               reduction, shape)
