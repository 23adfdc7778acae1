"""mscc: an MLIR-based multi-level compiler for numerical Python, in the style of MindSpore.

    import mscc as ms

Importing mscc does not import mlir: the compiler loads on first use, so a machine with only
numpy (and cuda-bindings) can run compiled artifacts.

MindSpore's module layout (`import mscc.nn as nn`, `from mscc.ops import operations as P`,
`from mscc.common import dtype as mstype`, ...) is the alias table `_MODULE_ALIASES` below.
"""
import importlib as _importlib
import importlib.abc as _importlib_abc
import importlib.util as _importlib_util
import sys as _sys

from .dialects.dtypes import (bfloat16, bool_, float16, float32, float64, int8, int16, int32,
                              int64, uint8, uint16, uint32, uint64)
from .pyfront import amp, nn, ops
from .pyfront import primitives as _primitives
from .pyfront.custom_grad import InsertGradientOf as _InsertGradientOf
from .pyfront.custom_grad import recompute
from .pyfront.context import GRAPH_MODE, PYNATIVE_MODE, get_context, set_context, set_device
from .pyfront.grad import GradOperation, grad, value_and_grad
from .pyfront.hooks import HookBackward as _HookBackward
from .pyfront.jit import jit
from .pyfront.mindspore_modules import common, composite, functional, operations
from .pyfront.mindspore_modules.api import ms_function
from .pyfront.mindspore_modules.common import mutable, tensor
from .pyfront.mindspore_modules.dtype import *  # noqa: F401,F403  (MindSpore: ms.half, ...)
from .pyfront.mindspore_modules.dtype import __all__ as _dtype_names
from .pyfront.mindspore_modules.parameter import ParameterTuple
from .pyfront.nn.init import set_seed
from .pyfront import parallel as _parallel
from .pyfront.parallel import (ParallelMode, get_auto_parallel_context,
                               reset_auto_parallel_context, set_auto_parallel_context)
from .pyfront.tensor import Parameter, Tensor

__version__ = "0.1.0"

# MindSpore's module names (under mscc) -> the module that provides them, under mscc. Eager
# rows are sys.modules entries from the start (`import mscc.ops.operations` must find them
# there: mscc.ops is a module, not a package). Lazy rows are imported on first use, through
# the finder below (`import mscc.train`) or an attribute read (`mscc.train`): most programs
# never use them, so `import mscc` does not pay for them.
# A submodule of a package row (mscc.nn.optim) is that package's own submodule, not a copy.
_MODULE_ALIASES = {
    "nn": ("pyfront.nn", "eager"),
    "ops": ("pyfront.ops", "eager"),
    "ops.operations": ("pyfront.mindspore_modules.operations", "eager"),
    "ops.functional": ("pyfront.mindspore_modules.functional", "eager"),
    "ops.function": ("pyfront.mindspore_modules.functional", "eager"),
    "ops.composite": ("pyfront.mindspore_modules.composite", "eager"),
    "context": ("pyfront.context", "eager"),
    "amp": ("pyfront.amp", "eager"),
    "common": ("pyfront.mindspore_modules.common", "eager"),
    "common.dtype": ("pyfront.mindspore_modules.dtype", "eager"),
    "common.initializer": ("pyfront.mindspore_modules.initializer", "eager"),
    "common.api": ("pyfront.mindspore_modules.api", "eager"),
    "common.parameter": ("pyfront.mindspore_modules.parameter", "eager"),
    "common.tensor": ("pyfront.tensor", "eager"),
    "dtype": ("pyfront.mindspore_modules.dtype", "eager"),
    "train": ("pyfront.train", "lazy"),
    "dataset": ("pyfront.dataset", "lazy"),
    "communication": ("pyfront.communication", "eager"),
    "communication.management": ("pyfront.communication", "eager"),
}


def _target(alias_name):
    """The real module name for `mscc.<alias>[.<sub>]`, or None: the longest alias prefix
    of the name, its submodule path kept."""
    rel = alias_name[len(__name__) + 1:]
    parts = rel.split(".")
    for n in range(len(parts), 0, -1):
        row = _MODULE_ALIASES.get(".".join(parts[:n]))
        if row is not None:
            return ".".join([__name__, row[0], *parts[n:]])
    return None


class _AliasLoader(_importlib_abc.Loader):
    """Loads an alias as the real module itself (one module object under two names)."""

    def __init__(self, target):
        self.target = target

    def create_module(self, spec):
        module = _importlib.import_module(self.target)
        self.real_spec = module.__spec__
        return module

    def exec_module(self, module):
        module.__spec__ = self.real_spec  # (the import system stamped the alias spec on it)


class _AliasFinder(_importlib_abc.MetaPathFinder):
    """Finds `mscc.<alias>...` names that are not in sys.modules yet: lazy rows and
    submodules of aliased packages."""

    def find_spec(self, name, path=None, target=None):
        if not name.startswith(__name__ + "."):
            return None
        real = _target(name)
        if real is None or real == name or _importlib_util.find_spec(real) is None:
            return None
        return _importlib_util.spec_from_loader(name, _AliasLoader(real))


def _install_aliases():
    for alias, (real, when) in _MODULE_ALIASES.items():
        if when == "eager":
            _sys.modules[f"{__name__}.{alias}"] = _importlib.import_module(f"{__name__}.{real}")
    if not any(isinstance(f, _AliasFinder) for f in _sys.meta_path):
        _sys.meta_path.insert(0, _AliasFinder())


def _attach_to_ops():
    """MindSpore's names reached through mscc.ops: its submodules, the Primitive classes,
    the composite classes and the functional helpers ops.py does not define itself."""
    ops.operations, ops.functional, ops.function, ops.composite = (
        operations, functional, functional, composite)
    for name, cls in _primitives.PRIMITIVES.items():
        setattr(ops, name, cls)
    ops.Primitive = _primitives.Primitive
    ops.InsertGradientOf = operations.InsertGradientOf = _InsertGradientOf
    ops.HookBackward = operations.HookBackward = _HookBackward
    for name in ("HyperMap", "Map", "MultitypeFuncGraph"):
        setattr(ops, name, getattr(composite, name))
    # data parallel (pyfront/parallel.py): the collectives, and nn.DistributedGradReducer
    for name, cls in {**_parallel.PRIMITIVES, "ReduceOp": _parallel.ReduceOp}.items():
        setattr(ops, name, cls)
        setattr(operations, name, cls)
    nn.DistributedGradReducer = _parallel.DistributedGradReducer
    for name, fn in functional.EXTRAS.items():
        if not hasattr(ops, name):
            setattr(ops, name, fn)


_install_aliases()
_attach_to_ops()
context = _sys.modules[__name__ + ".context"]
context.ParallelMode, context.set_auto_parallel_context = ParallelMode, set_auto_parallel_context
context.get_auto_parallel_context = get_auto_parallel_context
context.reset_auto_parallel_context = reset_auto_parallel_context
communication = _sys.modules[__name__ + ".communication"]
dtype = _sys.modules[__name__ + ".dtype"]


# MindSpore's top level does `from .train import *` (ms.Model, ms.LossMonitor,
# ms.save_checkpoint, ...): these lazy rows' public names are read through mscc too.
_STAR_ROWS = ("train",)


def _lazy_module(alias):
    """The lazy row `alias` imported, or None while its module does not exist."""
    row = _MODULE_ALIASES.get(alias)
    if row is None or row[1] != "lazy":
        return None
    if _importlib_util.find_spec(f"{__name__}.{row[0]}") is None:
        return None
    return _importlib.import_module(f"{__name__}.{alias}")


def __getattr__(name):
    """The lazy rows without an import statement (`mscc.train`), and the public names of
    _STAR_ROWS (`mscc.Model`), imported on first use."""
    module = _lazy_module(name)
    if module is not None:
        return module
    if not name.startswith("_"):
        for alias in _STAR_ROWS:
            module = _lazy_module(alias)
            if module is not None and name in getattr(module, "__all__", ()):
                return getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def wait_optimized(timeout=None) -> bool:
    """Wait until the optimized code of every tiered jit compile is ready and serves its
    calls (passes/tiering.py: a large jit compile first returns unoptimized code); whether
    all were ready within `timeout` seconds (None: no limit). Benchmarks call it before
    timing."""
    tiering = _sys.modules.get(__name__ + ".passes.tiering")
    return True if tiering is None else tiering.wait_optimized(timeout)


__all__ = ["Tensor", "Parameter", "ParameterTuple", "tensor", "mutable", "ops", "nn", "amp",
           "context", "common", "jit", "ms_function", "grad", "value_and_grad",
           "GradOperation", "set_seed", "set_context", "get_context", "set_device",
           "GRAPH_MODE", "PYNATIVE_MODE", "ParallelMode", "set_auto_parallel_context",
           "get_auto_parallel_context", "reset_auto_parallel_context", "communication",
           "wait_optimized", *_dtype_names]
