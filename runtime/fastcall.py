"""The cache-hit call of a compiled CPU entry in C (runtime/_fastcall.c), where it is built.

Through ctypes, a call patches each memref descriptor's data pointers field by field (~0.15
us each) and then calls the entry (~0.5 us); the C function does both in one call, and
builds the jit cache's key of a call with numpy arrays; JitBase serves a jit function's cache
hits before any Python frame runs. It is built with the package
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
# call_sized(...): call, each descriptor's sizes and strides also set from its array (dynamic
# sizes); None for an extension built before it had one
call_sized = getattr(_fastcall, "call_sized", None)
# run_small(fn, packed, descriptors, cache, specs, inputs, reuse) -> outputs, the GIL held
run_small = _fastcall.run_small if _fastcall is not None else None
# spec_key(target, args): (target, args[0]._spec, ...); AttributeError without a _spec
spec_key = _fastcall.spec_key if _fastcall is not None else None
# array_key(target, args): (target, (shape, dtype), ...) or None
array_key = _fastcall.array_key if _fastcall is not None else None
# JitFunction's base class: its cache-hit call in C (runtime/jit_call.h), which calls
# `_call_python` for everything else; `object` where the extension is missing or older, and
# JitFunction's call is then `_call_python` itself
JitBase = getattr(_fastcall, "JitBase", object)
jit_setup = getattr(_fastcall, "jit_setup", None)
MAX_C_INTERFACE_ARGS = 16
# Entries whose inputs and outputs together are at most this many bytes run with the GIL
# held (run_small: no lock; their run time is of the order of the call's), the others with
# the GIL released and the executable's lock held (call).
SMALL_CALL_BYTES = 1 << 16


def bind(fn, packed, descriptors, specs, outputs, dynamic):
    """(call's, run_small's) leading arguments for an executable's entry, each None where it
    does not apply: no extension; a C interface (packed 0) of no or too many descriptors; for
    run_small, dynamic sizes or more than SMALL_CALL_BYTES of buffers. `specs`: the inputs'
    and outputs' TensorSpecs; `outputs`: its OutputArrays."""
    import numpy as np
    n = len(specs)
    if call is None or (packed == 0 and not 1 <= n <= MAX_C_INTERFACE_ARGS):
        return None, None
    fast = (fn, packed, descriptors)
    if (dynamic is not None or n > MAX_C_INTERFACE_ARGS or
            sum(s.size * np.dtype(s.dtype.np).itemsize for s in specs) > SMALL_CALL_BYTES):
        return fast, None
    return fast, (fn, packed, descriptors, outputs._cache,
                  tuple((shape, dtype) for shape, dtype in outputs._specs))
