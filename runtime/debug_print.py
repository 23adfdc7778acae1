"""The printer of compiled Print ops (dialects/ops/debug.py), and its installation.

Compiled code that prints calls, through its module's global `mscc_print_hook`, the ctypes
callback below with a JSON description (texts, shape, dtype) and a pointer to the data; the
loaders of CPU code (runtime/cpu.py's ExecutionEngine, runtime/cpu_aot.py's shared libraries)
call `install` after loading, which sets the global when the code has one. numpy and ctypes
only: the runtime imports no MLIR.

Format: MindSpore's (each item on its own line; a Tensor as `Tensor(shape=[2, 1],
dtype=Int32, value=\\n[[1],\\n [1]])`, the value as numpy prints it with ', ' separators). The
text goes to fd 1 directly (os.write), as MindSpore's C++ printer writes to stdout: the output
of a compiled print is not held in Python's sys.stdout buffer, and Python's own prints before
it are flushed first so the order on the terminal is the program's order.
"""
from __future__ import annotations

import ctypes
import json
import os
import sys

import numpy as np

from ..dialects import dtypes as dt

HOOK = "mscc_print_hook"
_HOOK_TYPE = ctypes.CFUNCTYPE(None, ctypes.c_char_p, ctypes.c_void_p)

# MindSpore's dtype names in printed Tensors.
_MS_NAMES = {"bool": "Bool", "bfloat16": "BFloat16"}


def ms_dtype_name(d: dt.DType) -> str:
    name = d.name
    if name in _MS_NAMES:
        return _MS_NAMES[name]
    if name.startswith("uint"):
        return "UInt" + name[4:]
    return name[0].upper() + name[1:]


def format_tensor(array: np.ndarray, dtype: dt.DType) -> str:
    """MindSpore's printed form of a Tensor."""
    value = np.array2string(np.asarray(array), separator=", ")
    sep = "\n" if array.ndim else ""
    return (f"Tensor(shape={list(array.shape)}, dtype={ms_dtype_name(dtype)}, value={sep}"
            f"{value})")


def write(text: str):
    """Text to fd 1 after whatever Python has buffered for stdout (see the module doc)."""
    try:
        sys.stdout.flush()
    except (AttributeError, ValueError):
        pass
    os.write(1, text.encode())


_descriptions: dict = {}


def _read(desc: bytes, data: int) -> str:
    item = _descriptions.get(desc)
    if item is None:
        item = _descriptions[desc] = json.loads(desc.decode())
    parts = [item["before"]] if item["before"] else []
    if "dtype" in item:
        d = dt.by_name(item["dtype"])
        shape = tuple(item["shape"])
        count = int(np.prod(shape, dtype=np.int64))
        itemsize = np.dtype(d.np).itemsize
        raw = (ctypes.c_char * (count * itemsize)).from_address(data) if count else b""
        array = np.frombuffer(bytes(raw), dtype=d.np).reshape(shape)
        parts.append(format_tensor(array, d))
    if item["after"]:
        parts.append(item["after"])
    return "".join(p + "\n" for p in parts)


def _print(desc, data):
    try:
        write(_read(desc, data))
    except Exception as e:  # noqa: BLE001 - an exception cannot cross the C frames
        os.write(2, f"mscc: a compiled Print failed: {type(e).__name__}: {e}\n".encode())


_CALLBACK = _HOOK_TYPE(_print)  # kept alive for the process: compiled code may call it
CALLBACK_ADDRESS = ctypes.cast(_CALLBACK, ctypes.c_void_p).value


def install_in_engine(engine):
    """Set the hook of code in an ExecutionEngine: its `mscc_print_hook_slot()` (a packed
    call, as the engine wraps every function) gives the global's address."""
    fn = engine.raw_lookup(HOOK + "_slot")
    if not fn:  # no Print in this code
        return
    slot = ctypes.c_void_p()
    args = (ctypes.c_void_p * 1)(ctypes.cast(ctypes.pointer(slot), ctypes.c_void_p))
    ctypes.CFUNCTYPE(None, ctypes.c_void_p)(fn)(ctypes.addressof(args))
    ctypes.c_void_p.from_address(slot.value).value = CALLBACK_ADDRESS


def install_at(address: int):
    """Set the hook whose address the loader found (runtime/jit_code.py's code)."""
    ctypes.c_void_p.from_address(address).value = CALLBACK_ADDRESS


def install_in_library(lib: ctypes.CDLL):
    """Set the hook of a shared library's code (the disk cache, saved artifacts)."""
    try:
        slot = ctypes.c_void_p.in_dll(lib, HOOK)
    except ValueError:  # no Print in this library
        return
    slot.value = CALLBACK_ADDRESS
