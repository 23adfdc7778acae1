"""The quick tier's matrix products (runtime/_quick_kernels.c), loaded so that JIT-linked code
finds them by name: ms-cpu-matmul-calls writes calls of these functions, and only the quick
tier of passes/tiering.py runs that pass (its code is never stored or shipped)."""
from __future__ import annotations

import ctypes
import functools
import os

# ms-cpu-matmul-calls's callee for each element type it calls for.
MATMUL = {"f32": "mscc_quick_matmul_f32", "f64": "mscc_quick_matmul_f64"}


@functools.lru_cache(maxsize=None)
def load() -> bool:
    """Whether the functions are loaded into the process's global symbols (False where the
    optional extension was not built: then nothing tiers)."""
    try:
        from . import _quick_kernels
    except ImportError:
        return False
    try:  # (Python loaded it with its symbols local; this makes them global)
        library = ctypes.CDLL(_quick_kernels.__file__, mode=os.RTLD_GLOBAL | os.RTLD_NOW)
    except OSError:
        return False
    return all(hasattr(library, name) for name in MATMUL.values())
