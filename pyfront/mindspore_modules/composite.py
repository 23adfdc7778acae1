"""mscc.ops.composite (MindSpore's `from mindspore.ops import composite as C`): GradOperation,
HyperMap, Map and MultitypeFuncGraph.

These are Python-level here: HyperMap and MultitypeFuncGraph choose and apply functions while
a function is traced (or eagerly), so what they apply compiles as if written out by hand.
"""
import numpy as np

from ..grad import GradOperation, grad, value_and_grad
from ..tensor import Tensor

# MultitypeFuncGraph's type names -> the test of an argument. MindSpore's Bool is a Number.
_TYPE_TESTS = {
    "Tensor": lambda a: isinstance(a, (Tensor, np.ndarray)),
    "Number": lambda a: isinstance(a, (bool, int, float, np.number, np.bool_)),
    "Bool": lambda a: isinstance(a, bool),
    "Int": lambda a: isinstance(a, int) and not isinstance(a, bool),
    "Float": lambda a: isinstance(a, float),
    "String": lambda a: isinstance(a, str),
    "Tuple": lambda a: isinstance(a, tuple),
    "List": lambda a: isinstance(a, list),
    "Dict": lambda a: isinstance(a, dict),
    "None": lambda a: a is None,
    "Function": lambda a: callable(a) and not isinstance(a, (Tensor, type)),
}


class MultitypeFuncGraph:
    """A function chosen by its arguments' types: `@f.register("Tensor", "Number")` adds an
    implementation; a call runs the first registered one whose types all match."""

    def __init__(self, name, read_value=False):
        if read_value:
            raise ValueError("MultitypeFuncGraph(read_value=True) is not supported by mscc "
                             "(its Parameters are read as Tensors already)")
        self.name = name
        self.entries = []

    def register(self, *type_names):
        unknown = [t for t in type_names if t not in _TYPE_TESTS]
        if unknown:
            raise ValueError(f"For '{self.name}', unknown type names {unknown}; mscc knows "
                             f"{', '.join(_TYPE_TESTS)}")

        def deco(fn):
            self.entries.append((tuple(_TYPE_TESTS[t] for t in type_names), type_names, fn))
            return fn
        return deco

    def __call__(self, *args):
        for tests, _, fn in self.entries:
            if len(tests) == len(args) and all(t(a) for t, a in zip(tests, args)):
                return fn(*args)
        got = ", ".join(type(a).__name__ for a in args)
        raise TypeError(f"For '{self.name}', no registered function matches arguments of "
                        f"types ({got}); registered: "
                        f"{[names for _, names, _ in self.entries]}")


def _check_reduce_one(reduce_one):
    if reduce_one:
        raise ValueError("reduce_one=True is not supported by mscc")


class HyperMap:
    """Apply `ops` (or the first argument) to the leaves of equally structured (nested)
    tuples/lists, returning tuples: HyperMap()(f, (a, b), (c, d)) == (f(a, c), f(b, d))."""

    def __init__(self, ops=None, reduce_one=False):
        _check_reduce_one(reduce_one)
        self.ops = ops

    def __call__(self, *args):
        fn, seqs = (self.ops, args) if self.ops is not None else (args[0], args[1:])
        return self._map(fn, seqs)

    def _map(self, fn, seqs):
        if not seqs or not isinstance(seqs[0], (tuple, list)):
            return fn(*seqs)
        lengths = {len(s) for s in seqs if isinstance(s, (tuple, list))}
        if len(lengths) != 1 or not all(isinstance(s, (tuple, list)) for s in seqs):
            raise ValueError(f"HyperMap needs sequences of one length, got "
                             f"{[type(s).__name__ for s in seqs]} of lengths {sorted(lengths)}")
        return tuple(self._map(fn, items) for items in zip(*seqs))


class Map:
    """Apply `ops` (or the first argument) to the items of equally long sequences (one level,
    unlike HyperMap), returning a tuple."""

    def __init__(self, ops=None, reduce_one=False):
        _check_reduce_one(reduce_one)
        self.ops = ops

    def __call__(self, *args):
        fn, seqs = (self.ops, args) if self.ops is not None else (args[0], args[1:])
        if len({len(s) for s in seqs}) > 1:
            raise ValueError(f"Map needs sequences of one length, got lengths "
                             f"{[len(s) for s in seqs]}")
        return tuple(map(fn, *seqs))


__all__ = ["GradOperation", "HyperMap", "Map", "MultitypeFuncGraph", "grad", "value_and_grad"]
