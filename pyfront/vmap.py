"""ops.vmap(fn, in_axes=0, out_axes=0): fn traced once on one element's values, its ms ops
replayed on the whole batch through each op's batching rule (dialects/batching.py).

JAX's design (a batched value is (value, where its batch dim is)), applied to mscc's traced
IR rather than to tracers: `fn` is traced into a function of its own on the unbatched specs;
ms-const-input-to-attr, ms-implicit-cast, ms-autodiff and ms-inline run on it (so a gradient
taken inside fn is ms ops by then: vmap of grad), and its ops are replayed into the caller's
trace, each one as it is when no operand is mapped, else through its rule. The caller's
program therefore has one op (or a few) per op of fn whatever the batch size, and is
differentiated like any other (grad of vmap). Nested vmap replays a replay.

Outside a trace, a mapped function is compiled through jit, once per shapes: eager calls run
one executable, and a PyNative gradient records the call as one node (jit's record_call).

MindSpore 2.x semantics: in_axes/out_axes are an int or None for everything, or tuples/lists
matching the arguments/outputs (nested: a prefix of their structure); at least one argument
is mapped, all mapped axes have one size; an output that does not depend on the mapped
inputs is broadcast along the batch when its out_axes is an int, and an output that does
needs an int. Random numbers drawn inside fn are the same for every element (MindSpore's
documented behaviour). Errors: ValueError for axes, MissingRuleError (a NotImplementedError)
naming an op without a rule (loops and conditionals have none yet).
"""
from __future__ import annotations

import numpy as np

from . import pytree
from .location import located, user_api, user_location
from .state import active_traces, compiler_lock
from .tensor import Parameter, Tensor

# The front-end passes the traced element function goes through before it is replayed: rules
# see attributes (not const-input operands), agreeing dtypes and no ms.grad.
_PASSES = ("ms-const-input-to-attr", "ms-implicit-cast", "ms-verify", "ms-autodiff",
           "ms-inline")
_SCALARS = (bool, int, float, np.bool_, np.integer, np.floating)


def vmap(fn, in_axes=0, out_axes=0):
    """`fn` mapped over axes of its arguments (see the module docstring)."""
    _check_axes(in_axes, "in_axes")
    _check_axes(out_axes, "out_axes")
    compiled = []

    @user_api("ops.vmap")
    def mapped(*args):
        if active_traces.items:
            return batch_call(fn, in_axes, out_axes, args)
        if not compiled:
            with compiler_lock:
                if not compiled:
                    from .jit import JitFunction
                    compiled.append(JitFunction(_program(fn, in_axes, out_axes)))
        return compiled[0](*args)
    mapped.__name__ = mapped.__qualname__ = _name(fn)
    mapped.__doc__ = getattr(fn, "__doc__", None)
    # eager calls' compiled program (jit's counters), for tests and the curious
    mapped.cache_info = lambda: compiled[0].cache_info() if compiled else None
    return mapped


def _name(fn):
    raw = getattr(fn, "__name__", type(fn).__name__)
    return "vmap_" + ("".join(c if c.isalnum() or c == "_" else "_" for c in raw) or "fn")


def _program(fn, in_axes, out_axes):
    """The function jit compiles for eager calls: the batched program of `fn`."""
    def vmapped(*args):
        return batch_call(fn, in_axes, out_axes, args)
    vmapped.__name__ = vmapped.__qualname__ = _name(fn)
    return vmapped


# ------------------------------------------------------------------ axes

def _check_axes(axes, what):
    """Every entry an int or None (nested tuples/lists allowed), as MindSpore requires."""
    if axes is None or type(axes) is int:
        return
    if isinstance(axes, (tuple, list)):
        for a in axes:
            _check_axes(a, what)
        return
    raise ValueError(f"For 'ops.vmap', {what} must be an int, None, or a tuple/list of them, "
                     f"got {axes!r}")


def _leaf_axes(axes, obj, what):
    """One axis (an int or None) per leaf of `obj`, `axes` being a prefix of its structure:
    an int or None stands for a whole subtree."""
    if axes is None or type(axes) is int:
        return [axes] * len(pytree.flatten(obj)[0])
    sequence = isinstance(obj, (tuple, list)) and not hasattr(obj, "_fields")  # as pytree's
    if not sequence and len(axes) == 1:  # one output, (axis,)
        return _leaf_axes(axes[0], obj, what)
    if not sequence or len(axes) != len(obj):
        count = len(obj) if sequence else 1
        whose = "arguments" if what == "in_axes" else "outputs"
        raise ValueError(f"For 'ops.vmap', {what} {axes!r} must be an int, None, or one "
                         f"int/None per entry of the {whose} ({count} here)")
    return [a for sub, o in zip(axes, obj) for a in _leaf_axes(sub, o, what)]


def _mapped_leaves(leaves, axes):
    """The argument leaves as Tensors where mapped (numpy arrays accepted), their axes
    normalized, and the batch size."""
    out, norm, sizes = [], [], []
    for x, a in zip(leaves, axes):
        if isinstance(x, np.ndarray):
            x = Tensor(x)
        if a is not None:
            if not isinstance(x, Tensor):
                raise ValueError(f"For 'ops.vmap', in_axes maps axis {a} of an argument of "
                                 f"type {type(x).__name__}; only Tensors can be mapped (use "
                                 "None)")
            rank = x.ndim
            if not -rank <= a < rank:
                raise ValueError(f"For 'ops.vmap', in_axes {a} is out of range for an argument "
                                 f"of rank {rank} (expected [-{rank}, {rank}))")
            a %= rank
            sizes.append(x.shape[a])
        out.append(x)
        norm.append(a)
    if len(set(sizes)) != 1:
        raise ValueError("For 'ops.vmap', the mapped axes must all have one size, got "
                         f"{sorted(set(sizes)) or 'no mapped argument (in_axes maps none)'}")
    return out, norm, sizes[0]


# ------------------------------------------------------------------ tracing one element

def batch_call(fn, in_axes, out_axes, args):
    """fn mapped over `args`, emitted into the active trace; returns its outputs there."""
    outer = active_traces[-1]
    where = user_location()
    args = tuple(args)
    leaves, tree = pytree.flatten(args)
    leaves, axes, size = _mapped_leaves(leaves, _leaf_axes(in_axes, args, "in_axes"))
    with compiler_lock:
        element, result, outputs, out_tree = _trace_element(fn, outer, leaves, axes, tree,
                                                            where)
        out_leaf_axes = _leaf_axes(out_axes, result, "out_axes")
        from ..passes.pipeline import parse_step, run_steps
        run_steps(element.module, [parse_step(s) for s in _PASSES])
        replay = Replay(outer, size, where)
        mapped = [(outer.value_of(x), a) for x, a in zip(leaves, axes) if a is not None]
        values = replay.run(element, mapped)[:len(outputs)]
        placed = [replay.place(v, d, a, i)
                  for i, ((v, d), a) in enumerate(zip(values, out_leaf_axes))]
    return pytree.unflatten(out_tree, placed)


def _trace_element(fn, outer, leaves, axes, tree, where):
    """fn traced on one element: the mapped leaves as arguments of their unbatched specs,
    the others as they are. Returns (its trace, fn's result, output Tensors, their tree)."""
    element = ElementTrace(outer, _name(fn), where)
    with element:
        traced = [x if a is None else element.add_argument(_element_spec(x, a))
                  for x, a in zip(leaves, axes)]
        result = fn(*pytree.unflatten(tree, traced))
        outputs, out_tree = pytree.flatten(result)
        outputs = [_as_tensor(o) for o in outputs]
        element.finish(outputs)
    return element, result, outputs, out_tree


def _element_spec(x, axis):
    from ..dialects.dtypes import TensorSpec
    return TensorSpec(x.shape[:axis] + x.shape[axis + 1:], x.dtype)


def _as_tensor(x):
    if isinstance(x, Tensor):
        return x
    if isinstance(x, _SCALARS + (np.ndarray,)):
        return Tensor(x)
    raise TypeError(f"For 'ops.vmap', the mapped function returned a {type(x).__name__}; it "
                    "must return Tensors, Python numbers, or tuples/lists of them")


def _element_trace_class():
    from .trace import Trace

    class _ElementTrace(Trace):
        """The trace of one element of a vmap: a function of its own, after the mapped
        arguments taking everything else it reads (Parameters, Tensors of the caller's
        traces, concrete Tensors) as further arguments, each an unmapped value of the
        caller's program (`sources`: block argument index -> the Tensor)."""

        def __init__(self, outer, name, where):
            super().__init__(name, where)
            self.outer = outer
            self.sources: dict[int, Tensor] = {}
            self._captured: dict[int, object] = {}
            self._keep = []  # ids stay unique while the trace lives

        def value_of(self, t):
            if t._trace is self:
                return t._value
            if isinstance(t, Parameter) and t._trace is None:
                fresh = id(t) not in self.params
                value = super().value_of(t)
                if fresh:
                    self.sources[len(self.block.arguments) - 1] = t
                return value
            value = self._captured.get(id(t))
            if value is None:
                self.outer.value_of(t)  # readable there (an error naming the problem if not)
                value = self._captured[id(t)] = self.add_argument(t._spec)._value
                self.sources[len(self.block.arguments) - 1] = t
                self._keep.append(t)
            return value
    return _ElementTrace


_TRACE_CLASS = []


def ElementTrace(outer, name, where):  # noqa: N802  (a class, made when mlir is loaded)
    if not _TRACE_CLASS:
        _TRACE_CLASS.append(_element_trace_class())
    return _TRACE_CLASS[0](outer, name, where)


# ------------------------------------------------------------------ replaying the batch

class Replay:
    """Replays an element function's ops into `outer`, batched: the walk over its ops and
    the builder (emit, constant, spec) that batching rules build with."""

    def __init__(self, outer, size, where):
        self.outer, self.size = outer, size
        self.call_site = self.where = where
        self.params = {}  # element value -> the Parameter it holds (arguments, ms.assign)

    # -------------------------------------------------------------- the builder
    def emit(self, name, operands, attrs):
        from ..dialects.registry import lookup
        opdef = lookup(name)
        consts = {k: v for k, v in attrs.items() if k in opdef.const_inputs}
        plain = {k: v for k, v in attrs.items() if k not in opdef.const_inputs}
        return self.outer.emit(name, list(operands), plain, consts, self.where)[0]._value

    def constant(self, value, dtype):
        from mlir import ir
        from ..dialects.builders import constant
        from .trace import _loc
        outer = self.outer
        with outer.context, _loc(self.where, outer.context), ir.InsertionPoint(outer.block):
            return constant(np.asarray(value), dtype)

    def spec(self, v):
        from ..dialects.builders import spec_of
        return spec_of(v.type)

    # -------------------------------------------------------------- the walk
    def run(self, element, mapped):
        """The batched values of the element function's results; `mapped`: (value, dim) of
        its mapped arguments, in order (the other arguments are element.sources)."""
        block = element.fn.regions[0].blocks[0]
        env = {}
        for i, arg in enumerate(block.arguments):
            if i < len(mapped):
                env[arg] = mapped[i]
                continue
            source = element.sources[i]
            env[arg] = (self.outer.value_of(source), None)
            if isinstance(source, Parameter):
                self.params[arg] = source
        for op in block.operations:
            name = op.operation.name
            if name == "func.return":
                return [env[v] for v in op.operands]
            self.where = _where(op, self.call_site)
            env.update(zip(op.results, self.replay_op(op, name, env)))
        raise RuntimeError("For 'ops.vmap', the traced function has no return")

    def replay_op(self, op, name, env):
        from ..dialects.registry import OPS
        if name == "ms.constant":
            from ..dialects.builders import dense_to_numpy
            value = dense_to_numpy(op.attributes["value"])
            return [(self.constant(value, self.spec(op.results[0]).dtype), None)]
        if name == "ms.assign":
            return [self.assign(op, env)]
        if name not in OPS and not len(op.regions) and all(
                env[v][1] is None for v in op.operands):
            return [(r, None) for r in self.clone(op, env)]
        if name not in OPS or len(op.results) != 1:
            hint = (" (loops and conditionals, ops.ForiLoop/WhileLoop/Scan/cond, cannot be "
                    "mapped yet)" if name.startswith("scf.") else
                    " (a call with a custom gradient or recompute cannot be mapped yet)"
                    if name == "func.call" else "")
            self.fail(f"{name} has no batching rule for vmap{hint}")
        return [self.batched(OPS[name], op, env)]

    def batched(self, opdef, op, env):
        """(value, dim) of one ms op, checked against the traced op's type."""
        from ..dialects.batching import batch_op, unbatched_spec
        from ..dialects.builders import data_values, op_attrs, operand_groups
        from ..dialects.registry import MissingRuleError
        groups = operand_groups(opdef, op)
        data = data_values(opdef, groups)
        inputs = [env[v] for v in data]
        out_spec = self.spec(op.results[0])
        try:
            value, dim = batch_op(opdef, [v for v, _ in inputs], [d for _, d in inputs],
                                  op_attrs(opdef, op, groups), [self.spec(v) for v in data],
                                  out_spec, self.size, self)
        except MissingRuleError as e:
            self.fail(str(e))
        got = self.spec(value)
        if dim is not None and (not 0 <= dim < got.rank or got.shape[dim] != self.size
                                or unbatched_spec(got, dim) != out_spec):
            raise RuntimeError(f"For 'ops.vmap', the batching rule of {opdef.name} built {got} "
                               f"with the batch at {dim} for the traced {out_spec} (a rule bug)")
        return value, dim

    def clone(self, op, env):
        """An upstream op without regions on unmapped values (an arith.constant, a
        tensor.extract): a copy of it in the caller's program."""
        from mlir import ir
        outer = self.outer
        with outer.context, ir.InsertionPoint(outer.block):
            new = op.operation.clone()
        for i, v in enumerate(op.operands):
            new.operands[i] = env[v][0]
        return list(new.results)

    def assign(self, op, env):
        var, new = op.operands
        param = self.params[var]
        value, dim = env[new]
        if dim is not None:
            self.fail(f"ms.assign has no batching rule for vmap: the mapped function writes a "
                      f"value that depends on the mapped inputs into the Parameter "
                      f"'{param.name}' (return it and assign after vmap)")
        out = self.outer.assign(param, Tensor._traced(value, self.spec(value), self.outer),
                                self.where)
        self.params[op.results[0]] = param
        return out._value, None

    def fail(self, message):
        from ..dialects.registry import MissingRuleError
        raise MissingRuleError(located(f"For 'ops.vmap', {message}", self.where)) from None

    # -------------------------------------------------------------- outputs
    def place(self, value, dim, axis, index):
        """An output as the caller sees it: its batch dim at `axis`; an unmapped output
        broadcast along the batch at `axis`, or left alone when `axis` is None."""
        from ..dialects.batching import BatchCtx
        self.where = self.call_site
        if axis is None and dim is not None:
            raise ValueError(f"For 'ops.vmap', output #{index} depends on the mapped inputs, "
                             "so its out_axes must be an int, not None")
        if axis is not None:
            rank = self.spec(value).rank + (dim is None)
            if not -rank <= axis < rank:
                raise ValueError(f"For 'ops.vmap', out_axes {axis} is out of range for output "
                                 f"#{index} of rank {rank} (expected [-{rank}, {rank}))")
            helper = BatchCtx(None, [value], [dim], {}, [], None, self.size, self)
            value = helper.materialized(value, dim, at=axis % rank)
        return Tensor._traced(value, self.spec(value), self.outer)


def _where(op, fallback):
    from ..passes.diagnostics import file_location
    file, line, col = file_location(op.location)
    return (file, line, col) if file else fallback
