"""Keep freed memory in the process: compiled code allocates its intermediate buffers with
malloc on every call, and with glibc's defaults a large buffer is a fresh mmap each time,
page-faulted in again (a 16 MiB buffer costs ~4 ms of faults; an im2col convolution with nine
2.8 MiB windows ran at 31 ms instead of 6). Raising the mmap and trim thresholds lets malloc
re-use the same pages call after call, at the price of the process keeping its peak heap.

MSCC_MALLOC_TUNING=0 leaves the allocator alone. Without glibc this does nothing.
"""
from __future__ import annotations

import ctypes
import os

_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
_done = False


def _libc():
    """The C library the process runs on: its symbols are the process's own (no search:
    ctypes.util.find_library runs `ldconfig -p`, ~3 ms of a process's first compile)."""
    return ctypes.CDLL(None)


def keep_freed_memory() -> bool:
    """Tune glibc's malloc once per process; True if it was tuned."""
    global _done
    if _done:
        return True
    _done = True
    if os.environ.get("MSCC_MALLOC_TUNING", "1") == "0":
        return False
    try:
        mallopt = _libc().mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    # glibc refuses an mmap threshold above its maximum (32 MiB on older versions)
    tuned = any(mallopt(_M_MMAP_THRESHOLD, size) for size in (1 << 30, 32 << 20))
    return bool(mallopt(_M_TRIM_THRESHOLD, 2**31 - 1)) and tuned


def return_freed_memory() -> bool:
    """Give the pages malloc keeps (see above) back to the system: called when executables
    are released (a jit cache eviction, a collected jit function), whose code and buffers
    would otherwise stay in the process's footprint. True if glibc's malloc_trim ran."""
    try:
        trim = _libc().malloc_trim
    except (OSError, AttributeError):
        return False
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    trim(0)
    return True
