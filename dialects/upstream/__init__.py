"""Python modules the MLIR bindings load for a dialect before `mlir.dialects`' own.

When the bindings first meet an op or attribute of a dialect, they import its Python module
(`<prefix>.<namespace>` for each prefix of the dialect search path) to find its op classes.
`use()` puts this package first on that path, so for the dialects it has a module for
(linalg, llvm, gpu) the bindings load mscc's smaller one; for every other dialect the import here fails
and they fall through to `mlir.dialects`.
"""
from __future__ import annotations

PREFIX = __name__


def use():
    """Search this package before mlir.dialects (once per process)."""
    from mlir._mlir_libs import _mlir
    search = list(_mlir.globals.dialect_search_modules)
    if PREFIX not in search:
        _mlir.globals.dialect_search_modules = [PREFIX] + search
