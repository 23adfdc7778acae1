"""Where an ms op call goes: into the active trace, or eager execution (PyNative).

This module imports the compiler lazily, so `import mscc` stays free of mlir.
"""
from __future__ import annotations

import numpy as np

from .context import default_target
from .keys import static_key
from .location import located_error, user_location
from .state import active_tapes, active_traces, compiler_lock
from .tensor import Tensor

_EAGER_CACHE: dict = {}
eager_compiles = 0  # number of single-op compilations (tests count them)

_SCALARS = (bool, int, float, np.bool_, np.integer, np.floating)


def _bad_operand(op_name, i, x):
    return located_error(TypeError, f"For '{op_name}', input #{i} has unsupported type "
                         f"{type(x).__name__}; expected a Tensor, a numpy array or a Python number")


def _freeze(d):
    """Attributes or const inputs as part of a cache key (floats by their bits)."""
    return tuple(sorted((k, static_key(v)) for k, v in d.items())) if d else ()


def call(op_name: str, operands, attrs=None, consts=None):
    """Apply an ms op to Tensors / numpy arrays / Python numbers. `attrs` are the op's
    attributes, `consts` its const inputs (shape, axis, ...) as Python values."""
    attrs = attrs or {}
    consts = consts or {}
    if active_traces.items:  # (the list itself: no __bool__ call on the hot path)
        return _traced(active_traces[-1], op_name, operands, attrs, consts)
    return _eager(op_name, operands, attrs, consts)


def _traced(trace, op_name, operands, attrs, consts):
    where = user_location()
    values = []
    for i, x in enumerate(operands):
        if isinstance(x, np.ndarray):
            x = Tensor(x)
        if isinstance(x, Tensor):
            values.append(trace.value_of(x))
        elif isinstance(x, _SCALARS):
            values.append(trace.scalar(x, where))
        else:
            raise _bad_operand(op_name, i, x)
    outs = trace.emit(op_name, values, attrs, consts, where)
    return outs[0] if len(outs) == 1 else outs


def _eager(op_name, operands, attrs, consts):
    target = default_target()
    on_device = target == "cuda"
    parts, arrays = [], []
    operands = list(operands)
    for i, x in enumerate(operands):
        if isinstance(x, np.ndarray):
            x = operands[i] = Tensor(x)
        if isinstance(x, Tensor):
            if x.is_placeholder:
                raise located_error(TypeError, f"For '{op_name}', input #{i} is a placeholder "
                                    f"Tensor {x._spec} without data")
            parts.append(x._spec)
            arrays.append(x._device if on_device and x._device is not None else x.asnumpy())
        elif isinstance(x, _SCALARS):
            parts.append(("scalar", static_key(x)))
        else:
            raise _bad_operand(op_name, i, x)
    key = (op_name, _freeze(attrs), _freeze(consts), tuple(parts), target)
    exe = _EAGER_CACHE.get(key)
    if exe is None:
        with compiler_lock:  # (another thread may have compiled this key meanwhile)
            exe = _EAGER_CACHE.get(key)
            if exe is None:
                exe = _compile_single_op(op_name, operands, attrs, consts, target)
                _EAGER_CACHE[key] = exe
    if on_device:
        outs = [Tensor._wrap_device(o, s) for o, s in zip(exe.run(arrays), exe.out_specs)]
    else:
        outs = [Tensor._wrap(o) for o in exe.run(arrays)]
    if active_tapes.items:
        active_tapes[-1].record(op_name, attrs, consts, operands, outs)
    return outs[0] if len(outs) == 1 else outs


def _compile_single_op(op_name, operands, attrs, consts, target):
    global eager_compiles
    from ..passes.compiler import compile_module
    from .trace import Trace
    where = user_location()
    tr = Trace("eager_" + op_name.split(".", 1)[1], where)
    with tr:
        values = [tr.add_argument(x._spec)._value if isinstance(x, Tensor) else tr.scalar(x, where)
                  for x in operands]
        tr.finish(tr.emit(op_name, values, attrs, consts, where))
    eager_compiles += 1
    return compile_module(tr.module, tr.name, target=target)
