"""ms-autodiff: reverse-mode automatic differentiation of ms functions.

`%g = "ms.grad"() {callee = @f, grad_position, get_by_list, sens_param, with_value}` is the
gradient function of @f as a function value, called with func.call_indirect. Its type
(`dialects/grad_op.grad_function_type`) is
    inputs:  @f's inputs, then one sensitivity per @f result when sens_param
    results: @f's results when with_value, then one gradient per grad_position (the type of
             that input), then when get_by_list one per argument of @f marked
             {ms.parameter = "name"} (the Parameters it reads), in argument order.
Without sens_param the sensitivity of each result is ones_like(result), as in MindSpore, so
non-scalar outputs are differentiated as the sum of their elements.

For each distinct request the pass generates a private function `@f_grad` holding a copy of
@f's body (the forward) followed by the backward program that each op's gradient rule
(OpDef.grad, dialects/grad.py) emits in reverse order, replaces the ms.grad by
`func.constant @f_grad` and its call_indirect uses by `func.call @f_grad`; ms-inline then moves
the generated code into the callers. Forward values are computed once and shared by the results
(with_value) and the backward; forward ops the gradients do not need are dead and left to
ms-canonicalize.

Callees are prepared first: their own ms.grad ops are replaced and their calls inlined, so @f is
one block of ms ops and the gradient of a function that itself takes gradients (grad of grad)
is the gradient of the generated code. Calls marked with a custom gradient (`ms.bprop`, a
Cell's bprop or InsertGradientOf; `ms.recompute`) stay calls: their rule, not their body's,
makes the backward (dialects/ops/custom.py); ms-inline inlines them afterwards.

Only float values carry gradients: an integer or bool input's gradient is zeros of its type,
and ops whose rule is `no_grad` (comparisons, zeros_like, stop_gradient, ...) stop the flow.
An op on the path from a differentiated input to a result without a rule is an error at it.
"""
from __future__ import annotations

import math

import numpy as np
from mlir import ir
from mlir.dialects import func

from ..dialects import ops as _ops  # noqa: F401  (fills the registry)
from ..dialects.grad import GradCtx, GradRuleError, no_grad
from ..dialects.builders import build_op, constant, known_zeros, spec_of
from ..dialects.registry import OPS, UPSTREAM, ControlFlowError, DTypeError, ShapeError
from ..dialects.ops.custom import custom_kind
from ..dialects.grad_op import GradRequest, grad_function_type, parameter_positions
from .base import ModulePass, fail, register
from .inline import Inliner, body_block
from ..dialects.ir_helpers import function_type, ops_of_kind, set_symbol_name, symbol_name


# ------------------------------------------------------------------ reverse mode

def _is_float(v) -> bool:
    spec = spec_of(v.type)
    return spec is not None and spec.dtype.is_float


def _used_values(op):
    """Operands of `op` and of the ops in its regions (ms.fused reads values from above)."""
    values = list(op.operands)
    for region in op.regions:
        for block in region.blocks:
            for inner in block.operations:
                values += _used_values(inner)
    return values


def _active_ops(ops, wrt) -> tuple[set, list]:
    """Float values that depend on a differentiated input, and the ops computing them."""
    active = {v for v in wrt if _is_float(v)}
    chain = []
    for op in ops:
        opdef = OPS.get(op.operation.name)
        if opdef is not None and opdef.grad is no_grad:
            continue  # a constant as far as gradients go
        if any(v in active for v in _used_values(op)):
            floats = [r for r in op.results if _is_float(r)]
            if floats:
                active.update(floats)
                chain.append(op)
    return active, chain


def _rule_context(op, active):
    """The GradCtx of a forward op and its rule; a located error if it has none."""
    name = op.operation.name
    opdef = OPS.get(name)
    if opdef is None or opdef.grad is None:
        fail(op, f"'{name}' op has no gradient rule, but a differentiated input reaches it"
             + ("" if opdef is not None else " (ms-autodiff differentiates ms ops)"))
    if len(op.results) != 1:
        fail(op, f"'{name}' op has {len(op.results)} results; gradient rules take one")
    ctx, unknown = GradCtx.of(op, opdef, lambda v: v in active)
    if unknown is not None:
        fail(op, f"'{name}' op needs a compile-time constant '{unknown}' to be differentiated")
    return ctx, opdef.grad


def _prepare_control_flow(ops, wrt):
    """Let each active control-flow op change its forward before the backward is built (a
    loop stores what its backward reads: dialects/ops/control.py). `ops` is updated in
    place; returns {old value: new value} for the results of replaced ops."""
    _, chain = _active_ops(ops, wrt)
    replaced = {}
    for op in chain:
        upstream = UPSTREAM.get(op.operation.name)
        if upstream is None or upstream.prepare is None:
            continue
        old, at = list(op.results), ops.index(op)
        new = upstream.prepare(op.opview)
        if new is not None:  # (op is erased)
            ops[at] = new.operation
            replaced.update(zip(old, new.results))
    return replaced


def _control_cotangents(op, douts, active):
    """(value, cotangent) pairs from a control-flow op's rule; a located error if it has
    none or cannot differentiate it."""
    name = op.operation.name
    upstream = UPSTREAM.get(name)
    if upstream is None or upstream.grad is None:
        fail(op, f"'{name}' op has no gradient rule, but a differentiated input reaches it")
    try:
        return upstream.grad(backprop, op.opview, douts, active)
    except ControlFlowError as e:
        fail(op, str(e))
    except (ShapeError, DTypeError, GradRuleError) as e:
        fail(op, f"gradient rule of '{name}' failed: {e}")


# Results of at most this many elements get their default sensitivity as a constant.
SEED_CONSTANT_ELEMENTS = 1024


def _ones(v, loc):
    """The default sensitivity of the result v: ones of its shape. A constant where the shape
    is static and small (a loss), so that the sensitivity does not read v: ones_like(v) kept
    the loss's own computation (a training step's last reduction over the whole batch) alive
    in a gradient taken without the value."""
    spec = spec_of(v.type)
    if (spec is not None and all(isinstance(d, int) for d in spec.shape)
            and math.prod(spec.shape) <= SEED_CONSTANT_ELEMENTS):
        return constant(np.ones(spec.shape), spec.dtype, loc=loc)
    return build_op("ms.ones_like", [v], loc=loc).result


# A seed known to be zeros: the output contributes no cotangent at all (JAX's symbolic zero),
# rather than zeros multiplied through its backward.
ZERO_SEED = object()


def backprop(ops, outputs, seeds, wrt, loc, zeros=True) -> list:
    """Emit the backward program of `ops` (one block's forward ops, in order) at the current
    insertion point. `seeds[i]` is the cotangent of `outputs[i]` (None: ones_like; ZERO_SEED:
    none). Returns the cotangent of each value in `wrt` (where nothing flows: zeros_like, or
    None without `zeros`). Control-flow ops in `ops` may be replaced first (their forward extended)."""
    replaced = _prepare_control_flow(ops, wrt)
    outputs = [replaced.get(v, v) for v in outputs]
    active, chain = _active_ops(ops, wrt)
    cotangent = {}

    def accumulate(v, g, at):
        old = cotangent.get(v)
        cotangent[v] = g if old is None else build_op("ms.add", [old, g], loc=at).result

    for v, seed in zip(outputs, seeds):
        if v in active and seed is not ZERO_SEED:
            accumulate(v, seed if seed is not None else _ones(v, loc), loc)
    for op in reversed(chain):
        douts = [cotangent.get(r) for r in op.results]
        if all(d is None for d in douts):
            continue  # does not reach a result
        if op.operation.name not in OPS:  # loops and conditionals
            for v, g in _control_cotangents(op, douts, active):
                accumulate(v, g, op.location)
            continue
        ctx, rule = _rule_context(op, active)
        name = op.operation.name
        try:
            grads = rule(ctx, douts[0])
        except (ShapeError, DTypeError, GradRuleError) as e:
            fail(op, f"gradient rule of '{name}' failed: {e}")
        for i, (v, g) in enumerate(zip(ctx.inputs, grads)):
            if g is None or not ctx.needs[i]:
                continue
            if g.type != v.type:
                fail(op, f"gradient rule of '{name}' returned {g.type} for operand #{i} of "
                         f"type {v.type}")
            accumulate(v, g, op.location)
    if not zeros:
        return [cotangent.get(v) for v in wrt]
    return [cotangent[v] if v in cotangent else build_op("ms.zeros_like", [v], loc=loc).result
            for v in wrt]


def differentiate(callee, req: GradRequest, name: str, ftype: ir.FunctionType,
                  zero_seeds=frozenset()):
    """A new private function `name` after `callee`: its forward copy, then the backward.
    The sensitivities at `zero_seeds` (result indexes) are zeros at every call: they seed
    nothing."""
    fn = callee.operation.clone(ip=ir.InsertionPoint.after(callee.operation))
    n_args = len(function_type(callee).inputs)
    set_symbol_name(fn, name)
    fn.attributes["sym_visibility"] = ir.StringAttr.get("private")
    fn.attributes["function_type"] = ir.TypeAttr.get(ftype)
    if "res_attrs" in fn.attributes:
        del fn.attributes["res_attrs"]
    if "arg_attrs" in fn.attributes:
        attrs = list(ir.ArrayAttr(fn.attributes["arg_attrs"]))
        attrs += [ir.DictAttr.get({})] * (len(ftype.inputs) - len(attrs))
        fn.attributes["arg_attrs"] = ir.ArrayAttr.get(attrs)
    block = fn.regions[0].blocks[0]
    ops = list(block.operations)
    ret, forward = ops[-1], ops[:-1]
    outputs = list(ret.operands)
    loc = ret.location
    seeds = [None] * len(outputs)
    if req.sens_param:
        seeds = [block.add_argument(t, loc) for t in ftype.inputs[n_args:]]
        seeds = [ZERO_SEED if i in zero_seeds else s for i, s in enumerate(seeds)]
    args = list(block.arguments)[:n_args]
    wrt = [args[p] for p in req.grad_position]
    if req.get_by_list:
        wrt += [args[i] for i in parameter_positions(callee)]
    with ir.InsertionPoint(ret):
        grads = backprop(forward, outputs, seeds, wrt, loc)
        # (the return's operands, not `outputs`: a loop the backward extended is replaced)
        func.ReturnOp((list(ret.operands) if req.with_value else []) + grads, loc=loc)
    ret.erase()
    return fn


# ------------------------------------------------------------------ the pass

class Resolver:
    """Replaces the ms.grad ops of a module, callees before callers."""

    def __init__(self, module):
        self.inliner = Inliner(module, prepare=self.resolve, keep=custom_kind)
        self.funcs = self.inliner.funcs
        self.generated: dict = {}   # GradRequest -> name of the generated function
        self.state: dict = {}       # function name -> "resolving" | "done"

    def resolve(self, fn, user=None):
        """Replace every ms.grad in `fn` (`user`: the op that needs fn differentiable)."""
        name = symbol_name(fn)
        if self.state.get(name) == "done" or not len(fn.regions[0].blocks):
            return
        if self.state.get(name) == "resolving":
            fail(user or fn, f"@{name} depends on its own gradient")
        self.state[name] = "resolving"
        # The ms.grad ops first: replacing one erases the calls that use it, and a list of
        # every op would then hold erased ops (reading one was a use after free: SIGSEGV).
        body_block(fn)
        for op in ops_of_kind(fn, "ms.grad"):  # (at any depth: inside loop bodies too)
            self.replace(op)
        self.state[name] = "done"

    def gradient_function(self, op, req: GradRequest, ftype, zero_seeds=frozenset()):
        name = self.generated.get((req, zero_seeds))
        if name is None:
            callee = self.funcs[req.callee]
            self.resolve(callee, op)
            self.inliner.inline_into(callee)
            name = self._fresh_name(f"{req.callee}_grad")
            self.funcs[name] = differentiate(callee, req, name, ftype, zero_seeds)
            self.generated[(req, zero_seeds)] = name
        return name

    def _fresh_name(self, base):
        name, n = base, 0
        while name in self.funcs:
            n += 1
            name = f"{base}_{n}"
        return name

    def replace(self, op):
        req = GradRequest.of(op)
        callee = self.funcs.get(req.callee)
        if callee is None:
            fail(op, f"'ms.grad' op callee @{req.callee} is not a function of this module")
        body_block(callee, op)
        try:
            ftype = grad_function_type(callee, *req[1:])
        except ValueError as e:
            fail(op, f"'ms.grad' op {e}")
        if op.result.type != ftype:
            fail(op, f"'ms.grad' op has type {op.result.type}, but the gradient function of "
                     f"@{req.callee} has type {ftype}")
        for use in list(op.result.uses):
            call = use.owner
            if call.name != "func.call_indirect" or use.operand_number != 0:
                continue
            operands = list(call.operands)[1:]
            seeds = _zero_seeds(len(function_type(callee).inputs), operands)
            name = self.gradient_function(op, req, ftype, seeds)
            with ir.InsertionPoint(call), call.location:
                direct = func.CallOp(list(ftype.results), name, operands)
            for old, new in zip(call.results, direct.results):
                old.replace_all_uses_with(new)
            call.erase()
        if list(op.result.uses):  # used otherwise than called: the function as a value
            name = self.gradient_function(op, req, ftype)
            with ir.InsertionPoint(op), op.location:
                fnval = func.ConstantOp(ftype, ir.FlatSymbolRefAttr.get(name)).result
            op.result.replace_all_uses_with(fnval)
        op.erase()


def _zero_seeds(n_args, operands) -> frozenset:
    """Indexes of the results whose sensitivity a call (its operands: the arguments, then
    the sensitivities) passes as zeros by construction: the frontend's zeros for the new
    values of the Parameters a function writes (BatchNorm's moving statistics)."""
    return frozenset(i for i, v in enumerate(operands[n_args:]) if known_zeros(v))


@register
class AutoDiff(ModulePass):
    name = "ms-autodiff"
    summary = "generate gradient functions for ms.grad (reverse mode) and call them"

    def run(self, module):
        resolver = Resolver(module)
        for fn in list(resolver.funcs.values()):
            resolver.resolve(fn)
