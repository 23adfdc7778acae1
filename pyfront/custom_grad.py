"""Custom gradients in the frontend: a Cell's `bprop(self, *inputs, out, dout)`,
ops.InsertGradientOf(fn), Cell.recompute() and ms.recompute(block, *args, **kwargs).

Traced (jit, GRAPH_MODE), each call becomes a call of a private function marked with its
custom gradient (dialects/ops/custom.py has the IR and how ms-autodiff treats it): the
forward and the bprop are ms ops, so they compile into the same executable as the rest.
In PYNATIVE_MODE the forward runs eagerly; a gradient recording (pyfront/pynative.py) sees
the call as one node whose replay traces the same marked call, so the custom gradient is
the one graph mode uses. Outside any gradient the forward just runs.

MindSpore's rules for bprop: it receives the forward's inputs, `out` (the forward's output)
and `dout` (its sensitivity, same structure) and returns one gradient per input, as a tuple;
Parameters the Cell reads get no gradient through it (zeros). Gradients are taken of float
Tensors only (an int Tensor input's gradient is zeros, whatever bprop returns for it).
"""
from __future__ import annotations

import contextlib

from . import pytree
from .location import located_error, user_location
from .state import active_tapes, active_traces
from .tensor import Tensor


@contextlib.contextmanager
def _not_recording():
    """While a custom call's forward runs eagerly under a PyNative recording, its ops are
    not recorded one by one (the call is recorded as one node)."""
    saved = list(active_tapes.items)
    active_tapes.items.clear()
    try:
        yield
    finally:
        active_tapes.items.extend(saved)


def custom_call(spec, args):
    """Run `spec` (a _Bprop or _Recompute) on `args` in the current mode."""
    if active_traces.items:
        return spec.trace(active_traces[-1], args)
    if not active_tapes.items:
        return spec.forward(*args)
    with _not_recording():
        result = spec.forward(*args)
    outs = pytree.flatten(result)[0]
    active_tapes[-1].record_call(spec.replay, tuple(args), result)
    if not all(isinstance(o, Tensor) for o in outs):
        raise located_error(TypeError, f"For '{spec.api}', the forward must return Tensors "
                                       "(or tuples of them) to be differentiated")
    return result


# ------------------------------------------------------------------ tracing

def _trace_forward(outer, spec, args, where):
    """The forward as a private function of `outer`'s module (not finished: the bprop may
    add Parameters). Returns (its Trace, its output Tensors, their tree)."""
    from .trace import Trace
    sub = Trace(f"{spec.symbol}_construct", where, module=outer.module)
    with sub:
        traced = [sub.add_input(a, keep_parameters=False) if isinstance(a, Tensor) else a
                  for a in args]
        outputs, tree = pytree.flatten(spec.forward(*traced))
    if not all(isinstance(o, Tensor) for o in outputs):
        raise located_error(TypeError, f"For '{spec.api}', the forward must return Tensors "
                                       "(or tuples of them)", where)
    if sub.assigned:
        names = ", ".join(p.name for p in sub.assigned_params)
        raise located_error(TypeError, f"For '{spec.api}', the forward assigns the Parameter "
                                       f"{names}: a Cell with a custom gradient or recompute "
                                       "must not write Parameters", where)
    return sub, outputs, tree


def _emit_call(outer, spec, sub, outputs, tree, args, attrs, where):
    """finish `sub`, call it from `outer` with `attrs`; the results as `tree`."""
    from mlir import ir
    from mlir.dialects import func

    from ..dialects.builders import spec_of
    from .trace import _loc
    sub.finish(outputs)
    operands = [outer.value_of(a) for a in args if isinstance(a, Tensor)]
    operands += [outer.value_of(p) for p in sub.param_order]
    with outer.context, _loc(where, outer.context), ir.InsertionPoint(outer.block):
        call = func.CallOp([o._value.type for o in outputs], ir.FlatSymbolRefAttr.get(sub.name),
                           operands)
        for name, value in attrs().items():
            call.attributes[name] = value
    results = [Tensor._traced(r, spec_of(r.type), outer) for r in call.results]
    return pytree.unflatten(tree, results)


class _Recompute:
    """ms.recompute / Cell.recompute: the backward recomputes `forward` on its inputs."""

    def __init__(self, forward, api, symbol):
        self.forward, self.api, self.symbol = forward, api, symbol
        self.replay = lambda *a: custom_call(self, a)

    def trace(self, outer, args):
        from mlir import ir

        from ..dialects.ops.custom import API_ATTR, RECOMPUTE_ATTR
        where = user_location()
        sub, outputs, tree = _trace_forward(outer, self, args, where)
        return _emit_call(outer, self, sub, outputs, tree, args,
                          lambda: {RECOMPUTE_ATTR: ir.UnitAttr.get(),
                                   API_ATTR: ir.StringAttr.get(self.api)}, where)


class _Bprop:
    """A forward with a user-written backward `bprop(*inputs, out, dout) -> gradients`."""

    def __init__(self, forward, bprop, api, symbol):
        self.forward, self.bprop, self.api, self.symbol = forward, bprop, api, symbol
        self.replay = lambda *a: custom_call(self, a)

    def trace(self, outer, args):
        from mlir import ir

        from ..dialects.ops.custom import API_ATTR, BPROP_ATTR, BPROP_INPUTS_ATTR
        where = user_location()
        fwd, outputs, tree = _trace_forward(outer, self, args, where)
        bwd = self._trace_bprop(outer, fwd, outputs, tree, args, where)
        for p in bwd.param_order[len(fwd.param_order):]:
            fwd.value_of(p)  # (the call passes the bprop's Parameters to both functions)
        n = sum(isinstance(a, Tensor) for a in args)
        return _emit_call(outer, self, fwd, outputs, tree, args,
                          lambda: {BPROP_ATTR: ir.FlatSymbolRefAttr.get(bwd.name),
                                   BPROP_INPUTS_ATTR: ir.IntegerAttr.get(
                                       ir.IntegerType.get_signless(64), n),
                                   API_ATTR: ir.StringAttr.get(self.api)}, where)

    def _trace_bprop(self, outer, fwd, outputs, tree, args, where):
        """bprop as a private function taking (outputs, their cotangents, the inputs, the
        Parameters: the forward's first)."""
        from .trace import Trace
        sub = Trace(f"{self.symbol}_bprop", where, module=outer.module)
        with sub:
            outs = [sub.add_argument(o._spec) for o in outputs]
            douts = [sub.add_argument(o._spec) for o in outputs]
            traced = [sub.add_input(a, keep_parameters=False) if isinstance(a, Tensor) else a
                      for a in args]
            for p in fwd.param_order:
                sub.value_of(p)
            grads = self.bprop(*traced, pytree.unflatten(tree, outs),
                               pytree.unflatten(tree, douts))
            sub.finish(self._checked(grads, traced, where))
        return sub

    def _checked(self, grads, inputs, where):
        """One gradient per input, each a Tensor of its input's shape and dtype (None or
        a Python number: zeros / that value, broadcast), for the Tensor inputs."""
        from . import ops
        if not isinstance(grads, (tuple, list)):
            grads = (grads,)
        if len(grads) != len(inputs):
            raise located_error(ValueError, f"For '{self.api}', bprop returned {len(grads)} "
                                            f"gradient{'s' if len(grads) != 1 else ''}, but "
                                            f"the Cell has {len(inputs)} input"
                                            f"{'s' if len(inputs) != 1 else ''}", where)
        out = []
        for i, (g, x) in enumerate(zip(grads, inputs)):
            if not isinstance(x, Tensor):
                continue
            if g is None:
                g = ops.zeros_like(x)
            elif not isinstance(g, Tensor):
                raise located_error(TypeError, f"For '{self.api}', bprop's gradient #{i} is a "
                                               f"{type(g).__name__}; input #{i} is a Tensor, "
                                               "so its gradient must be a Tensor", where)
            if g.shape != x.shape or g.dtype is not x.dtype:
                raise located_error(ValueError, f"For '{self.api}', bprop's gradient #{i} is a "
                                                f"{g.dtype.name} Tensor of shape {g.shape}, but "
                                                f"input #{i} is {x.dtype.name} of shape "
                                                f"{x.shape}", where)
            out.append(g)
        return out


# ------------------------------------------------------------------ the APIs

def cell_specs(cell):
    """The custom-gradient wrapper of a Cell's construct (its bprop, or recompute), cached
    on the cell so PyNative recordings of the same Cell share their compiled gradients;
    None for a plain Cell."""
    has_bprop = callable(getattr(type(cell), "bprop", None))
    if not has_bprop and not cell.__dict__.get("_recompute", False):
        return None
    cached = cell.__dict__.get("_custom_spec")
    if cached is None:
        name = type(cell).__name__
        forward = lambda *a: cell._construct()(*a)  # noqa: E731  (converted when traced)
        cached = (_Bprop(forward, cell.bprop, f"nn.{name}", name) if has_bprop
                  else _Recompute(forward, f"nn.{name}", name))
        cell.__dict__["_custom_spec"] = cached
    return cached


class InsertGradientOf:
    """MindSpore's ops.InsertGradientOf(f): the identity forward; in the backward, the
    gradient flowing into its input is f(gradient) (gradient clipping, scaling, ...). f is
    traced as ms ops, so it works under jit and in GRAPH_MODE as in PyNative."""

    def __init__(self, f):
        if not callable(f):
            raise TypeError(f"For 'InsertGradientOf', f must be callable, got "
                            f"{type(f).__name__}")
        self.f = f
        self.name = "InsertGradientOf"
        self._spec = _Bprop(lambda x: x, lambda x, out, dout: (f(dout),), "InsertGradientOf",
                            "InsertGradientOf")

    def __call__(self, x):
        if not isinstance(x, Tensor):
            raise located_error(TypeError, "For 'InsertGradientOf', the input must be a Tensor, "
                                           f"got {type(x).__name__}")
        return custom_call(self._spec, (x,))


def recompute(block, *args, **kwargs):
    """MindSpore's ms.recompute(block, *args, **kwargs): block(*args, **kwargs), whose
    intermediates the backward recomputes instead of keeping (gradient checkpointing)."""
    if not callable(block):
        raise TypeError(f"For 'recompute', block must be a Cell or a function, got "
                        f"{type(block).__name__}")
    return custom_call(_recompute_spec(block, kwargs), args)


# One spec per (block, keyword arguments): PyNative recordings key their compiled gradients
# by the recorded function's identity, which must therefore live as long as the block.
_RECOMPUTE_SPECS: dict = {}


def _recompute_spec(block, kwargs):
    key = (block, tuple(sorted((k, v if _hashable(v) else id(v)) for k, v in kwargs.items())))
    spec = _RECOMPUTE_SPECS.get(key)
    if spec is None:
        name = type(block).__name__ if hasattr(block, "construct") else getattr(
            block, "__name__", "block").strip("<>")
        spec = _Recompute(lambda *a: block(*a, **kwargs), "ms.recompute", name or "block")
        spec.kwargs = kwargs  # (keeps unhashable values alive while their id is a key)
        _RECOMPUTE_SPECS[key] = spec
    return spec


def _hashable(v) -> bool:
    try:
        hash(v)
    except TypeError:
        return False
    return True
