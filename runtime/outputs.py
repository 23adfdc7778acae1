"""Output arrays re-used across calls of one executable once the caller has released them.

A fresh large array costs page faults on every call (~4 ms for 16 MiB with glibc's malloc,
which returns big blocks to the system), so an executable keeps the arrays of its previous
call and hands them out again when nothing else refers to them. "Nothing else" is read from
the reference count: a Tensor, a numpy view (its base), a list or a frame holding an output
all count, and such an output is never written again. What the count cannot see is memory
reached without a Python reference (a raw pointer taken from `arr.ctypes.data` and kept, an
asynchronous copy still reading the array): such users must keep the array referenced until
they are done, as numpy itself requires.

The count an unshared output has is measured once, through the same code path as the check
(Python 3.14 no longer counts some references the interpreter holds on its stack, so the
number is not a constant). Calls from several threads are serialized by a lock held while the
outputs are chosen and the compiled code runs: two calls would otherwise get the same arrays,
and they also share one block of memref descriptors.
"""
from __future__ import annotations

import sys
import threading

import numpy as np


def _refs(items, j):
    return sys.getrefcount(items[j])


# References to an array held only by the cache list (and the count's own argument).
_UNSHARED = _refs([np.empty(0)], 0)


class OutputArrays:
    """The output arrays of one executable's calls: `take()` returns arrays to write."""

    def __init__(self, shapes_and_dtypes):
        self._specs = [(tuple(shape), np.dtype(dtype)) for shape, dtype in shapes_and_dtypes]
        self._cache = [None] * len(self._specs)
        self.reuse = True
        self.lock = threading.Lock()

    def take(self):
        """Arrays for one call (hold `lock` from here until the call has written them)."""
        if not self.reuse:
            return [np.empty(shape, dtype) for shape, dtype in self._specs]
        cache = self._cache
        for j, (shape, dtype) in enumerate(self._specs):
            if cache[j] is None or _refs(cache, j) > _UNSHARED:
                cache[j] = np.empty(shape, dtype)
        return list(cache)


class ReusedOutputs:
    """The `reuse_outputs` switch of an executable that keeps its OutputArrays in
    `self._outputs` (runtime/cpu.py, runtime/cpu_aot.py)."""

    @property
    def reuse_outputs(self) -> bool:
        """Whether calls re-use the previous call's output arrays once nothing else refers to
        them (on by default)."""
        return self._outputs.reuse

    @reuse_outputs.setter
    def reuse_outputs(self, value: bool):
        self._outputs.reuse = bool(value)
