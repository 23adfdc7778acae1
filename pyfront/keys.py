"""Cache keys for static Python values: equal keys must mean the same compiled code.

Python's `==` is wrong for this in two ways: `0.0 == -0.0` (but `x / 0.0` and `x / -0.0`
differ), and `nan != nan` (a NaN argument would never hit its entry and recompile on every
call). Floats are therefore keyed by their bits; containers key their items.
"""
from __future__ import annotations

import struct

import numpy as np


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
