"""Importing this package fills the op registry: one module per op family."""
from . import (collective, control, conv, core, custom, elementwise, indexing,  # noqa: F401
               matmul, pooling, random, reduction, shape)
