"""MLIR memref descriptors as ctypes structs, and the prebuilt argument block of a call.

The C interface of an entry `f(memref..., memref...)` is `_mlir_ciface_f(desc*...)`: a shared
library built from the LLVM output is called that way (`descriptor_addresses`). The packed
wrapper the ExecutionEngine exposes takes `void**` whose entries point at those desc*
arguments (`address`). Building all of it once and only
patching the data pointers per call keeps a call at a few hundred nanoseconds (measured:
building fresh descriptors for every call cost ~100 µs a call).
"""
from __future__ import annotations

import ctypes

import numpy as np

from ..dialects.symdim import Dim

_DESCRIPTORS: dict[int, type] = {}


def _make_data_pointer():
    """The fastest way to read an ndarray's data pointer: `ndarray.ctypes.data` costs
    ~0.8 µs; reading PyArrayObject's first field (`char *data`, right after the object
    header) costs ~0.14 µs. The layout is checked once; the slow path is the fallback."""
    header = 2 * ctypes.sizeof(ctypes.c_void_p)  # ob_refcnt, ob_type
    read = ctypes.c_void_p.from_address
    probe = np.arange(3, dtype=np.int64)[1:]
    if read(id(probe) + header).value == probe.ctypes.data:
        return lambda a: read(id(a) + header).value
    return lambda a: a.ctypes.data


data_pointer = _make_data_pointer()


def descriptor_class(rank: int) -> type:
    cls = _DESCRIPTORS.get(rank)
    if cls is None:
        fields = [("allocated", ctypes.c_void_p), ("aligned", ctypes.c_void_p),
                  ("offset", ctypes.c_int64)]
        if rank:
            fields += [("sizes", ctypes.c_int64 * rank), ("strides", ctypes.c_int64 * rank)]
        cls = type(f"MemRef{rank}D", (ctypes.Structure,), {"_fields_": fields})
        _DESCRIPTORS[rank] = cls
    return cls


def contiguous_strides(shape):
    strides, acc = [], 1
    for d in reversed(shape):
        strides.append(acc)
        acc *= max(d, 1)
    return list(reversed(strides))


class ArgBlock:
    """Descriptors for a fixed list of shapes, and the packed `void**` that points at them."""

    def __init__(self, shapes):
        self.descriptors = []
        for shape in shapes:
            d = descriptor_class(len(shape))()
            if shape:  # (a dynamic size is set per call: runtime/dynamic.set_sizes)
                shape = [0 if isinstance(d, Dim) else d for d in shape]
                d.sizes[:] = list(shape)
                d.strides[:] = contiguous_strides(shape)
            self.descriptors.append(d)
        # Each packed entry points at a slot holding the descriptor's address (desc**).
        self._slots = [ctypes.c_void_p(ctypes.addressof(d)) for d in self.descriptors]
        self._packed = (ctypes.c_void_p * max(1, len(shapes)))(
            *[ctypes.addressof(s) for s in self._slots])
        self.address = ctypes.addressof(self._packed)
        self.descriptor_addresses = tuple(ctypes.addressof(d) for d in self.descriptors)

    def set(self, i: int, array: np.ndarray):
        d = self.descriptors[i]
        d.allocated = d.aligned = data_pointer(array)
