"""mscc.ops.operations (MindSpore's `from mindspore.ops import operations as P`): the
Primitive classes of pyfront/primitives.py."""
from ..primitives import PRIMITIVES, Primitive

globals().update(PRIMITIVES)

__all__ = ["Primitive", *PRIMITIVES]
