"""The cache-hit call of a compiled CPU entry in C (runtime/_fastcall.c), where it is built.

Through ctypes, a call patches each memref descriptor's data pointers field by field (~0.15
us each) and then calls the entry (~0.5 us); the C function does both in one call, and
builds the jit cache's key of a call with numpy arrays. It is built with the package
(setup.py, an optional extension against numpy's C API: without a C compiler the install goes
on); `call` and `array_key` are None where it is missing, and the runtime keeps its ctypes
path.
"""
from __future__ import annotations

try:
    from . import _fastcall
except ImportError:  # not built (an install without a C compiler, a bare checkout)
    _fastcall = None

# call(fn, packed, descriptors, inputs, outputs): packed 0 calls fn's C interface
call = _fastcall.call if _fastcall is not None else None
# array_key(target, args): (target, (shape, dtype), ...) or None
array_key = _fastcall.array_key if _fastcall is not None else None
MAX_C_INTERFACE_ARGS = 16
