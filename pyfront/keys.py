"""Cache keys for static Python values: equal keys must mean the same compiled code.

Python's `==` is wrong for this in two ways: `0.0 == -0.0` (but `x / 0.0` and `x / -0.0`
differ), and `nan != nan` (a NaN argument would never hit its entry and recompile on every
call). Floats are therefore keyed by their bits; containers key their items.
"""
from __future__ import annotations

import struct

import numpy as np

from ..dialects.dtypes import TensorSpec
from ..dialects.symdim import ANY


def static_key(x):
    """A hashable key for the static value `x` (raises TypeError if `x` is not hashable)."""
    t = type(x)
    if t is float:
        return (float, struct.pack("<d", x))
    if isinstance(x, (np.floating, np.complexfloating)):
        return (t, x.tobytes())
    if t is complex:
        return (complex, struct.pack("<dd", x.real, x.imag))
    if t is tuple or t is list:
        return (t, tuple(static_key(v) for v in x))
    hash(x)
    return (t, x)


class Static:
    """A static value that compares and hashes by `static_key`, and keeps the value itself
    (a recorded Python number that is both part of a cache key and replayed)."""

    __slots__ = ("value", "key")

    def __init__(self, value):
        self.value = value
        self.key = static_key(value)

    def __eq__(self, other):
        return type(other) is Static and self.key == other.key

    def __hash__(self):
        return hash(self.key)

    def __repr__(self):
        return f"Static({self.value!r})"


# ------------------------------------------------------------------ dynamic sizes
# jit(dynamic=1) and the eager kernels (dispatch.py) key calls by their Tensors' specs; these
# compare two calls' specs and make the spec with the sizes that differ dynamic.

def generalized_parts(old, new):
    """`old` with ANY where a TensorSpec's sizes differ from `new`'s (same ranks, dtypes and
    other items), or None: nothing differs, something else does, or a differing size is
    under 2 (sizes 0 and 1 stay specialized: a 1 may be a broadcast, which a dynamic size
    never is)."""
    if len(old) != len(new):
        return None
    out, changed = [], False
    for a, b in zip(old, new):
        if a == b:
            out.append(a)
            continue
        if not (type(a) is TensorSpec and type(b) is TensorSpec and a.dtype is b.dtype
                and len(a.shape) == len(b.shape)):
            return None
        if any(x != y and (x is ANY or x < 2 or y < 2) for x, y in zip(a.shape, b.shape)):
            return None
        out.append(TensorSpec(tuple(x if x == y else ANY for x, y in zip(a.shape, b.shape)),
                              a.dtype))
        changed = True
    return tuple(out) if changed else None


def parts_fit(pattern, parts) -> bool:
    """Whether a call's items fit a pattern of generalized_parts (ANY: any size; sizes an
    executable's checks refuse get a compile of their own)."""
    if len(pattern) != len(parts):
        return False
    for p, k in zip(pattern, parts):
        if p == k:
            continue
        if not (type(p) is TensorSpec and type(k) is TensorSpec and p.dtype is k.dtype
                and len(p.shape) == len(k.shape)
                and all(x is ANY or x == y for x, y in zip(p.shape, k.shape))):
            return False
    return True
