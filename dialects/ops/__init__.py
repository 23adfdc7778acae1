"""Importing this package fills the op registry: one module per op family."""
from . import (control, conv, core, custom, elementwise, indexing, matmul, pooling,  # noqa: F401
               random, reduction, shape)
