"""MLIR modules imported on first use.

The op registry (dialects/ops/) defines each op in one block: shape rule, dtype rule,
gradient rule and lowering side by side. Lowering rules build MLIR, but only when they run,
so the registry imports without MLIR: the Python frontend derives its op wrappers from it,
and a machine with only numpy (running compiled artifacts) imports `mscc` without the
compiler. The names below stand for MLIR's modules; the first attribute read imports the real
module and copies its namespace, so later reads cost what a module attribute costs.
"""
from __future__ import annotations

import importlib
import types


class LazyModule(types.ModuleType):
    """A module imported when one of its attributes is first read."""

    def __getattr__(self, attr):
        if attr.startswith("__"):  # (probes such as __path__ or __wrapped__: not the module's)
            raise AttributeError(attr)
        module = importlib.import_module(self.__name__)
        self.__dict__.update(module.__dict__)
        return getattr(module, attr)


ir = LazyModule("mlir.ir")
arith = LazyModule("mlir.dialects.arith")
func = LazyModule("mlir.dialects.func")
irdl = LazyModule("mlir.dialects.irdl")
linalg = LazyModule("mscc.dialects.upstream.linalg")  # (not mlir.dialects.linalg: its OpDSL)
math = LazyModule("mlir.dialects.math")
scf = LazyModule("mlir.dialects.scf")
tensor = LazyModule("mlir.dialects.tensor")
mlir_ext = LazyModule("mlir._mlir_libs._mlir")  # the bindings' C++ extension
