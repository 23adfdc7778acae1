"""mscc.ops.functional (MindSpore's `from mindspore.ops import functional as F`): every
functional op of mscc.ops, and the helpers MindSpore code reaches through F (depend, partial,
shape, rank, size, dtype, fill, grad, value_and_grad)."""
import functools as _functools

from .. import ops as _ops
from .. import primitives as _p
from ..grad import grad, value_and_grad
from ..location import user_api as _user_api
from ..nn.wrap import clip_by_global_norm  # (a composition of ops, written beside nn.ClipByNorm)

_OPS_NAMES = [n for n in dir(_ops) if not n.startswith("_") and callable(getattr(_ops, n))
              and not isinstance(getattr(_ops, n), type)]
globals().update({n: getattr(_ops, n) for n in _OPS_NAMES})


def depend(value, expr):
    """`value` (MindSpore's ops.depend). mscc runs side effects in Python order in both
    modes, so the ordering MindSpore's Depend adds already holds."""
    return _p._depend(value, expr)


def shape(input_x):
    """The static shape of input_x, a tuple of ints."""
    return _p._shape(input_x)


def rank(input_x):
    """The number of dimensions of input_x."""
    return _p._rank(input_x)


def size(input_x):
    """The number of elements of input_x."""
    return _p._size(input_x)


def dtype(input_x):
    """The dtype of input_x."""
    return _p._dtype(input_x)


@_user_api("fill")
def fill(type, shape, value):  # noqa: A002  (MindSpore's argument names)
    """A tensor of `shape` and dtype `type` filled with `value` (MindSpore's ops.fill)."""
    return _ops.full(shape, value, dtype=type)


partial = _functools.partial  # MindSpore's F.partial binds leading arguments, as this does

# What this module adds to mscc.ops where mscc.ops does not define the name itself (MindSpore
# 2.x has them as ops.<name>).
EXTRAS = {"depend": depend, "shape": shape, "rank": rank, "size": size, "dtype": dtype,
          "fill": fill, "partial": partial, "grad": grad, "value_and_grad": value_and_grad,
          "clip_by_global_norm": clip_by_global_norm}

__all__ = sorted(set(_OPS_NAMES) | set(EXTRAS))
