"""Importing this package fills the op registry: one module per op family."""
from . import (collective, control, conv, core, custom, debug, elementwise,  # noqa: F401
               indexing, matmul, normalization, pooling, random, reduction, shape)
