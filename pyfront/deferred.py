"""Eager ops deferred while a PyNative gradient records (pyfront/pynative.py).

A PyNative gradient runs the function eagerly to record its ops, then runs the compiled
gradient, which computes the forward again: the eager forward's values are thrown away unless
Python reads one (`if loss > 0`, `print(x)`, `x.asnumpy()`). Compiling a kernel per eager op
for them was ~0.85 s of LeNet5's first PyNative step (20 kernels), the same ops the gradient's
compile then compiles again. So while a PyNativeGrad records, an op returns a DeferredTensor
at once: its shape and dtype come from the op's rules, traced into a scratch function that is
never compiled (the same rules, errors and locations as a compile), and the op runs only when
a value is read. Reading one runs every op deferred before it, in order, through the eager
kernels (dispatch.execute): what eager execution would have computed, later.

What is not deferred: an op with side effects (not `pure`: printing, collectives, ms.assign,
whose Parameter write reads the value at once), an op whose result size depends on values, and
anything but the CPU target. The operands of a deferred op are kept as they were: a Tensor's
array (a Parameter the optimizer updates later still reads as it did), a deferred Tensor itself.
MSCC_PYNATIVE_DEFER=0 runs every op at once.
"""
from __future__ import annotations

import os
import weakref

from ..dialects.registry import lookup
from ..dialects.symdim import has_dynamic
from .location import user_location
from .state import compiler_lock
from .tensor import Tensor

_DATA = Tensor.__dict__["_data"]  # the slot the property below reads and writes
ENV = "MSCC_PYNATIVE_DEFER"


def enabled() -> bool:
    return os.environ.get(ENV, "1").strip() != "0"


class DeferredTensor(Tensor):
    """A Tensor whose value an op deferred by `_pending` computes when it is first read."""

    __slots__ = ("_pending",)

    @property
    def _data(self):
        if self._pending is not None:
            self._pending.run()
        return _DATA.__get__(self)

    @_data.setter
    def _data(self, value):
        _DATA.__set__(self, value)

    @property
    def is_placeholder(self) -> bool:
        return self._pending is None and super().is_placeholder


class _Snapshot:
    """A concrete operand as it was when the op was deferred."""
    __slots__ = ("array", "spec")

    def __init__(self, t: Tensor):
        self.array, self.spec = t.asnumpy(), t._spec

    def tensor(self) -> Tensor:
        return Tensor._wrap_spec(self.array, self.spec)


class PendingOps:
    """The ops one recording deferred, in order."""

    def __init__(self):
        self.ops = []  # (op name, operands, attrs, consts, [weak references to the results])

    def defer(self, op_name, operands, attrs, consts):
        """The op's results as DeferredTensors, or None where it must run now."""
        specs = result_specs(op_name, operands, attrs, consts)
        if specs is None:
            return None
        outs = []
        for spec in specs:
            out = DeferredTensor._make(spec)
            out._pending = self
            outs.append(out)
        kept = [o if isinstance(o, DeferredTensor) and o._pending is not None
                else _Snapshot(o) if isinstance(o, Tensor) else o for o in operands]
        self.ops.append((op_name, kept, attrs, consts, [weakref.ref(o) for o in outs]))
        return outs

    def run(self):
        """Run every deferred op, in order, and give their results their values."""
        from .dispatch import execute
        ops, self.ops = self.ops, []
        for i, (op_name, kept, attrs, consts, results) in enumerate(ops):
            operands = [o.tensor() if isinstance(o, _Snapshot) else o for o in kept]
            try:
                values = execute(op_name, operands, attrs, consts)
            except BaseException:
                self.ops = ops[i:] + self.ops  # (still pending: a later read raises again)
                raise
            for ref, value in zip(results, values):
                out = ref()
                if out is not None:
                    out._pending = None
                    _DATA.__set__(out, value.asnumpy())


# (op, attributes, const inputs, operand specs and scalars) -> result specs, None where the
# op is not deferred; the misses are typed in one scratch function that is never compiled.
_SPECS: dict = {}
_scratch = None


def result_specs(op_name, operands, attrs, consts):
    """The specs of the op's results from its shape and dtype rules, or None where it must
    run now (side effects, sizes that depend on values). A mistake raises here, located at
    the user's line, as running it would."""
    from .dispatch import _freeze
    from .keys import static_key
    key = (op_name, _freeze(attrs), _freeze(consts),
           tuple(x._spec if isinstance(x, Tensor) else static_key(x) for x in operands))
    if key in _SPECS:
        return _SPECS[key]
    specs = None
    if lookup(op_name).pure:
        with compiler_lock:
            specs = [t._spec for t in _typed(op_name, operands, attrs, consts)]
        if any(has_dynamic(sp.shape) for sp in specs):
            specs = None
    _SPECS[key] = specs
    return specs


def _typed(op_name, operands, attrs, consts):
    """The op traced into the scratch function on arguments of its operands' specs."""
    global _scratch
    from .trace import Trace
    where = user_location()
    if _scratch is None:
        _scratch = Trace("deferred_types", where)
    values = [_scratch.add_argument(x._spec)._value if isinstance(x, Tensor)
              else _scratch.scalar(x, where) for x in operands]
    return _scratch.emit(op_name, values, attrs, consts, where)
