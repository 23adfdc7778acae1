"""ms.grad, ms.value_and_grad and ms.ops.GradOperation, with MindSpore's conventions.

Inside a traced function (jit, or a Cell in GRAPH_MODE) a gradient call traces the
differentiated function into a private function of the same module and emits `ms.grad` plus a
call of the gradient function; ms-autodiff generates it, so forward and backward compile into
the caller (one executable for a whole training step). In GRAPH_MODE outside jit the call is
compiled through jit; in PYNATIVE_MODE it goes through pyfront/pynative.py, which records the
ops as they run.
"""
from __future__ import annotations

import numpy as np

from ..dialects.dtypes import TensorSpec
from ..dialects.symdim import Dim, has_dynamic
from . import pytree
from .context import GRAPH_MODE, get_context
from .location import user_api, user_location
from .state import active_traces
from .tensor import Parameter, Tensor


def _positions(grad_position):
    if grad_position is None:
        return ()
    if isinstance(grad_position, int):
        return (grad_position,)
    if isinstance(grad_position, (tuple, list)) and all(isinstance(p, int) for p in grad_position):
        return tuple(grad_position)
    raise TypeError(f"grad_position must be an int, a tuple of ints or None, got "
                    f"{grad_position!r}")


class GradFunction:
    """The function `grad`/`value_and_grad`/`GradOperation` return."""

    def __init__(self, fn, grad_position=0, weights=None, has_aux=False, return_value=False,
                 sens_param=False, get_all=False, api_name="ms.grad"):
        self.fn = fn
        self.api_name = api_name  # how errors name this gradient: ms.grad, ms.value_and_grad
        self.positions = _positions(grad_position)
        self.single_position = isinstance(grad_position, int) and not get_all
        self.get_all = get_all
        self.weights = None if weights is None else list(weights)
        if self.weights is not None and not all(isinstance(w, Parameter) for w in self.weights):
            raise TypeError("weights must be Parameters (e.g. net.trainable_params())")
        self.has_aux = has_aux
        self.return_value = return_value            # value_and_grad
        self.with_value = return_value or has_aux   # the gradient function returns outputs
        self.sens_param = sens_param
        self._jitted = None
        self._pynative = None
        self.__name__ = f"grad_{getattr(fn, '__name__', 'fn')}"

    @user_api(lambda self: self.api_name)
    def __call__(self, *args):
        self._check_positions(args[:-1] if self.sens_param else args)
        if active_traces:
            return self.trace_into(active_traces[-1], args)
        if get_context("mode") == GRAPH_MODE:
            if self._jitted is None:
                from .jit import JitFunction
                self._jitted = JitFunction(lambda *a: self.trace_into(active_traces[-1], a))
                self._jitted.__name__ = self.__name__
            return self._jitted(*args)
        if self._pynative is None:
            from .pynative import PyNativeGrad
            self._pynative = PyNativeGrad(self)
        return self._pynative(args)

    def _check_positions(self, args):
        """grad_position must name Tensor arguments: checked before the function runs, so
        both modes report it the same way (and PyNative does not run the function first)."""
        if self.get_all:
            return
        n = len(args)
        for p in self.positions:
            if not -n <= p < n:
                raise ValueError(f"grad_position {p} is out of range for a function of {n} "
                                 f"arguments")
            if not isinstance(args[p], (Tensor, np.ndarray)):
                raise TypeError(f"grad_position {p} names an argument of type "
                                f"{type(args[p]).__name__}; only Tensors are differentiated")

    # ------------------------------------------------------------------ tracing
    def trace_into(self, outer, args):
        """Emit the gradient computation into the trace `outer`; returns traced Tensors in
        MindSpore's structure."""
        from mlir import ir

        from ..dialects.builders import spec_of
        from ..dialects.grad_op import call_gradient, emit_grad
        from . import ops
        from .trace import _loc
        where = user_location()
        sens = None
        if self.sens_param:
            args, sens = args[:-1], args[-1]
        callee_args = list(args)
        positions = (tuple(i for i, a in enumerate(callee_args) if isinstance(a, Tensor))
                     if self.get_all else self.positions)  # (valid: see _check_positions)
        positions = tuple(p % len(callee_args) for p in positions)
        sub, tensor_index, outputs, out_tree = self._trace_callee(outer, callee_args, where)
        params = list(sub.param_order)
        # Parameters the function writes (BatchNorm's moving statistics, ...): the callee
        # returns their new values after its outputs; they get a zero sensitivity and are
        # written here, in the caller, so that the forward's updates are not lost.
        assigned = list(sub.assigned_params)
        operands = [outer.value_of(a) for a in callee_args if isinstance(a, Tensor)]
        operands += [outer.value_of(p) for p in params]
        operands += [outer.value_of(v) for v in self._sensitivities(sens, outputs, assigned)]
        grad_positions = tuple(tensor_index[p] for p in positions)
        with_value = self.with_value or bool(assigned)
        with outer.context, _loc(where, outer.context), ir.InsertionPoint(outer.block):
            gradfn = emit_grad(sub.name, grad_positions, get_by_list=self.weights is not None,
                               sens_param=self._uses_sensitivities(assigned),
                               with_value=with_value)
            results = call_gradient(gradfn, operands)
        n_ret = len(outputs) + len(assigned) if with_value else 0
        results = _traced_results(outer, results, _result_specs(
            outputs if with_value else [], len(assigned) if with_value else 0,
            [callee_args[p] for p in positions], callee_args, tensor_index))
        for p, new in zip(assigned, results[len(outputs):n_ret]):
            ops.assign(p, new)
        values = pytree.unflatten(out_tree, results[:len(outputs)]) if self.with_value else None
        grads = results[n_ret:n_ret + len(grad_positions)]
        param_grads = dict(zip((id(p) for p in params), results[n_ret + len(grad_positions):]))
        return self._package(values, grads, param_grads, outputs, out_tree, outer)

    def _trace_callee(self, outer, callee_args, where):
        """The differentiated function as a private function of `outer`'s module: explicit
        Tensor arguments in order, then the Parameters it reads. Returns (its Trace, Tensor
        argument index -> callee input index, its outputs, their tree)."""
        from .trace import Trace
        sub = Trace(getattr(self.fn, "__name__", "fn").strip("<>") or "fn", where,
                    module=outer.module)
        tensor_index = {}
        with sub:
            traced = []
            for i, a in enumerate(callee_args):
                if isinstance(a, Tensor):
                    tensor_index[i] = len(tensor_index)
                    traced.append(sub.add_input(a, keep_parameters=False))
                else:
                    traced.append(a)
            from .autograph import convert
            outputs, out_tree = pytree.flatten(convert(self.fn)(*traced))
            outputs = [o if isinstance(o, Tensor) else Tensor(o) for o in outputs]
            sub.finish(outputs)
        return sub, tensor_index, outputs, out_tree

    def _uses_sensitivities(self, assigned) -> bool:
        return self.sens_param or self.has_aux or bool(assigned)

    def _sensitivities(self, sens, outputs, assigned) -> list:
        """The sensitivity inputs of the gradient function: the user's (sens_param), or ones
        for the differentiated output (has_aux: zeros for the others) when some output must
        not be seeded with ones; zeros for the written Parameters. [] when MindSpore's
        default (ones_like of every output) applies."""
        from . import ops
        if not self._uses_sensitivities(assigned):
            return []
        if self.sens_param:
            values = [s if isinstance(s, Tensor) else Tensor(s) for s in pytree.flatten(sens)[0]]
        else:  # has_aux: only the first output is differentiated
            values = [ops.full(o.shape, 1 if i == 0 or not self.has_aux else 0, dtype=o.dtype)
                      for i, o in enumerate(outputs)]
        return values + [ops.full(p.shape, 0, dtype=p.dtype) for p in assigned]

    def _package(self, values, grads, param_grads, outputs, out_tree, outer):
        from . import ops
        pos_grads = grads[0] if self.single_position and grads else tuple(grads)
        if self.weights is not None:
            weight_grads = tuple(param_grads[id(w)] if id(w) in param_grads
                                 else ops.zeros_like(w) for w in self.weights)
            has_positions = bool(self.positions) or self.get_all
            grads_out = (pos_grads, weight_grads) if has_positions else weight_grads
        else:
            grads_out = pos_grads
        if self.return_value:
            return values, grads_out
        if self.has_aux:  # (gradients, the outputs after the first)
            flat = pytree.flatten(values)[0]
            return grads_out, tuple(flat[1:])
        return grads_out


@user_api("ms.grad")
def grad(fn, grad_position=0, weights=None, has_aux=False):
    """Gradients of fn (of its first output when has_aux) w.r.t. the arguments at
    grad_position (an int gives one gradient, a tuple a tuple, None none) and `weights`
    (Parameters; a second element). has_aux returns (gradients, aux outputs)."""
    return GradFunction(fn, grad_position, weights, has_aux)


@user_api("ms.value_and_grad")
def value_and_grad(fn, grad_position=0, weights=None, has_aux=False):
    """(fn's outputs, gradients), computed in one call."""
    return GradFunction(fn, grad_position, weights, has_aux, return_value=True,
                        api_name="ms.value_and_grad")


class GradOperation:
    """MindSpore's GradOperation(get_all=False, get_by_list=False, sens_param=False):
    `GradOperation(...)(fn, weights)` returns the gradient function. Without get_all it
    differentiates the first input; sens_param adds a last argument, the output sensitivity."""

    def __init__(self, get_all=False, get_by_list=False, sens_param=False):
        self.get_all, self.get_by_list, self.sens_param = get_all, get_by_list, sens_param

    @user_api("ms.GradOperation")
    def __call__(self, fn, weights=None):
        if self.get_by_list and weights is None:
            raise TypeError("GradOperation(get_by_list=True) needs the weights: "
                            "GradOperation(...)(fn, net.trainable_params())")
        position = None if self.get_by_list and not self.get_all else 0
        return GradFunction(fn, position, weights if self.get_by_list else None,
                            sens_param=self.sens_param, get_all=self.get_all,
                            api_name="ms.GradOperation")


def _result_specs(outputs, n_assigned, wrt, callee_args, tensor_index):
    """The specs the gradient's results have in the caller, where they have dynamic sizes:
    the function's outputs (their sizes renamed from the callee's arguments to the caller's),
    then None for the written Parameters, the gradients (their arguments' specs); None where
    the result type says it all."""
    sizes = {}
    for p, a in enumerate(callee_args):
        if isinstance(a, Tensor) and p in tensor_index:
            for i, d in enumerate(a._spec.shape):
                sizes[f"a{tensor_index[p]}.{i}"] = d
    specs = []
    for o in outputs:
        shape = o._spec.shape
        if has_dynamic(shape) and all(a in sizes for d in shape if isinstance(d, Dim)
                                      for a in d.atoms):
            shape = tuple(d.evaluate(sizes) if isinstance(d, Dim) else d for d in shape)
        specs.append(TensorSpec(shape, o._spec.dtype))
    return specs + [None] * n_assigned + [a._spec for a in wrt]


def _traced_results(outer, values, specs):
    """Traced Tensors of a gradient call's results, with `specs` where they fit the types."""
    from ..dialects.builders import spec_of
    out = []
    for i, v in enumerate(values):
        typed = spec_of(v.type)
        spec = specs[i] if i < len(specs) else None
        if (spec is None or not has_dynamic(typed.shape) or spec.dtype is not typed.dtype
                or len(spec.shape) != len(typed.shape)):
            spec = typed
        out.append(outer._traced_value(v, spec))
    return out
