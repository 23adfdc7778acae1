"""The MLIR bindings' native libraries, loaded with lazy symbol binding.

Python opens extension modules with RTLD_NOW: the dynamic linker resolves every function
symbol of the library and of the libraries it needs before the import returns. The
bindings' extension `mlir._mlir_libs._mlir` needs libMLIRPythonCAPI.so (200 MB) and
libLLVM.so, so the first compile of a process spent ~60 ms importing it, ~12 ms of that
binding functions most programs never call (median of 8 fresh processes, Intel Emerald
Rapids: 60 -> 47 ms with RTLD_LAZY). With lazy binding a function's symbol is resolved on
its first call, by the same lookup; the libraries are those of one wheel, built together, so
nothing is missing that RTLD_NOW would have reported earlier.

Only the extensions under `mlir._mlir_libs` are opened this way; the process's dlopen flags
are set for the one call that opens the library and restored after (the import holds the
GIL meanwhile: no other thread's import sees them).
"""
from __future__ import annotations

import importlib.abc
import importlib.machinery
import os
import sys

PACKAGE = "mlir._mlir_libs."


class LazyExtensionLoader(importlib.machinery.ExtensionFileLoader):
    """An extension module's loader that opens the library with RTLD_LAZY."""

    def create_module(self, spec):
        flags = sys.getdlopenflags()
        sys.setdlopenflags((flags & ~os.RTLD_NOW) | os.RTLD_LAZY)
        try:
            return super().create_module(spec)
        finally:
            sys.setdlopenflags(flags)


class LazyBindingFinder(importlib.abc.MetaPathFinder):
    """Finds the bindings' extension modules as the path finder does, with the loader above."""

    def find_spec(self, name, path=None, target=None):
        if not name.startswith(PACKAGE):
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path, target)
        if spec is None or type(spec.loader) is not importlib.machinery.ExtensionFileLoader:
            return spec
        spec.loader = LazyExtensionLoader(spec.loader.name, spec.loader.path)
        return spec


def install():
    """Put the finder first on sys.meta_path (once); imports nothing of MLIR."""
    if not hasattr(os, "RTLD_LAZY"):  # (no dlopen: nothing to change)
        return
    if not any(isinstance(f, LazyBindingFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, LazyBindingFinder())
