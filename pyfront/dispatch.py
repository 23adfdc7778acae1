"""Where an ms op call goes: into the active trace, or eager execution (PyNative).

This module imports the compiler lazily, so `import mscc` stays free of mlir.
"""
from __future__ import annotations

import numpy as np

from ..dialects.dtypes import TensorSpec
from ..runtime.calls import CallError
from .context import default_target
from .keys import generalized_parts, parts_fit, static_key
from .location import located_error, user_location
from .state import active_tapes, active_traces, compiler_lock, gc_paused
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
    tape = active_tapes.items[-1] if active_tapes.items else None
    operands = [Tensor(x) if isinstance(x, np.ndarray) else x for x in operands]
    outs = None
    if tape is not None and tape.pending is not None and default_target() == "cpu":
        outs = tape.pending.defer(op_name, operands, attrs, consts)
    if outs is None:
        outs = execute(op_name, operands, attrs, consts)
    if tape is not None:
        tape.record(op_name, attrs, consts, operands, outs)
    return outs[0] if len(outs) == 1 else outs


def execute(op_name, operands, attrs, consts):
    """Run one op now (its kernel compiled on first use): the result Tensors, in a list."""
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
                exe = _EAGER_CACHE[key] = _eager_executable(key, op_name, operands, attrs,
                                                            consts, target)
    if on_device:
        outs = [Tensor._wrap_device(o, s) for o, s in zip(exe.run(arrays), exe.out_specs)]
    else:
        try:
            results = exe.run(arrays)
        except CallError:
            if getattr(exe, "dynamic", None) is None:
                raise
            # sizes the shared dynamic kernel cannot combine: this shape's own compile
            # reports the mistake at the user's line, as without dynamic kernels
            with compiler_lock:
                exe = _EAGER_CACHE[key] = _compile_single_op(op_name, operands, attrs,
                                                             consts, target)
            results = exe.run(arrays)
        outs = [Tensor._wrap(o) for o in results]
    return outs


# An op's sizes seen before, per (op, attributes, const inputs, ranks and dtypes, target):
# after a second size, one kernel with the sizes that changed dynamic serves every size
# (as jit(dynamic=1)); the patterns (specs with ANY) and their executables.
_EAGER_SIZES: dict = {}


def _eager_executable(key, op_name, operands, attrs, consts, target):
    """The kernel for an eager call: a dynamic one serving this size when the op was called
    with other sizes before, else one for these shapes."""
    if target != "cpu":
        return _compile_single_op(op_name, operands, attrs, consts, target)
    loose = key[:3] + (tuple(_loose_part(p) for p in key[3]), target)
    seen = _EAGER_SIZES.setdefault(loose, [])
    for pattern, exe in seen:
        if exe is not None and parts_fit(pattern, key[3]):
            return exe
    general = next((g for g in (generalized_parts(p, key[3]) for p, _ in seen) if g), None)
    if general is not None and not any(p == general for p, _ in seen):
        try:
            exe = _compile_single_op(op_name, operands, attrs, consts, target, specs=general)
        except Exception:  # noqa: BLE001 - an op without a dynamic form: per shape
            seen.append((general, None))
        else:
            seen.append((general, exe))
            return exe
    seen.append((key[3], None))  # (a size seen: the next one generalizes)
    return _compile_single_op(op_name, operands, attrs, consts, target)


def _loose_part(p):
    return ("spec", len(p.shape), p.dtype) if isinstance(p, TensorSpec) else p


def _compile_single_op(op_name, operands, attrs, consts, target, specs=None):
    with gc_paused():
        return _trace_and_compile_op(op_name, operands, attrs, consts, target, specs)


def _trace_and_compile_op(op_name, operands, attrs, consts, target, specs):
    global eager_compiles
    from .trace import Trace, compile_traced
    where = user_location()
    tr = Trace("eager_" + op_name.split(".", 1)[1], where)
    with tr:
        specs = specs or [x._spec if isinstance(x, Tensor) else None for x in operands]
        values = [tr.add_argument(spec)._value if isinstance(x, Tensor) else tr.scalar(x, where)
                  for x, spec in zip(operands, specs)]
        tr.finish(tr.emit(op_name, values, attrs, consts, where))
    eager_compiles += 1
    return compile_traced(tr.module, tr.name, target)
