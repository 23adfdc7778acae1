"""Custom gradients: a Cell's `bprop`, ops.InsertGradientOf, and recompute (MindSpore's
Cell.recompute / ms.recompute, JAX's checkpoint).

Both are calls of a private function the frontend traced, marked so that ms-autodiff
differentiates the call itself instead of the callee's body:

    %out = func.call @MyCell_construct(%x, %w) {ms.bprop = @MyCell_bprop, ms.bprop_inputs = 1,
                                                ms.api = "nn.MyCell"}
    %out = func.call @Block_construct(%x, %w) {ms.recompute, ms.api = "nn.Block"}

A call is the natural form: the front-end passes (const-input-to-attr, implicit-cast,
ms-verify) already treat every function of a module, and the callee's Parameters are its
arguments. ms-autodiff keeps marked calls while it prepares a function (passes/inline.py,
`keeps_call`) and ms-inline inlines them afterwards, like any call.

- `ms.bprop = @g`: @g takes (the call's results, one cotangent per result, the call's
  operands) and returns one cotangent per explicit input, the first `ms.bprop_inputs`
  operands. The other operands are the Parameters the forward and the bprop read; as in
  MindSpore they get no gradient through the Cell (zeros).
- `ms.recompute`: the backward recomputes the callee's body instead of keeping the
  forward's intermediates (gradient checkpointing). The recomputed body reads its inputs
  through `ms.barrier`, so that ms-canonicalize and the later CSE cannot merge it with the
  forward copy (the job of XLA's and JAX's optimization_barrier); every operand, Parameters
  included, gets its gradient.
"""
from __future__ import annotations

from ..lazy import func, ir

from .. import batching
from ..builders import build_op, spec_of
from ..ir_helpers import enclosing_module, fresh_symbol, ops_of_kind
from ..grad import each
from ..registry import ControlFlowError, define, define_upstream

BPROP_ATTR = "ms.bprop"
BPROP_INPUTS_ATTR = "ms.bprop_inputs"
RECOMPUTE_ATTR = "ms.recompute"
API_ATTR = "ms.api"


# ------------------------------------------------------------------ ms.barrier

def _lower_barrier(lc, x):
    """A call of a private identity function: CSE leaves calls alone, bufferization sees the
    result is the argument (drop-equivalent-buffer-results), and LLVM inlines it, so the
    barrier costs nothing at run time."""
    module = enclosing_module(lc.op)
    name = fresh_symbol(module, "ms_barrier")
    with ir.InsertionPoint(module.regions[0].blocks[0]), lc.loc:
        fn = func.FuncOp(name, ([x.type], [x.type]), visibility="private")
        entry = fn.add_entry_block()
        with ir.InsertionPoint(entry):
            func.ReturnOp([entry.arguments[0]])
    return func.CallOp([x.type], ir.FlatSymbolRefAttr.get(name), [x]).result


define("ms.barrier", ["x"], lambda ins, attrs: ins[0], pure=False, lower=_lower_barrier,
       grad=each(lambda g, dout: dout), batch=batching.elementwise,
       doc="identity that the ms-level and linalg-level CSE cannot see through (the inputs "
           "of a recomputed forward)")


# ------------------------------------------------------------------ marked calls

def custom_kind(call) -> str | None:
    """Which custom gradient a func.call carries: BPROP_ATTR, RECOMPUTE_ATTR or None."""
    attrs = call.attributes
    for kind in (BPROP_ATTR, RECOMPUTE_ATTR):
        if kind in attrs:
            return kind
    return None


def api_name(call) -> str:
    attrs = call.attributes
    name = attrs[API_ATTR] if API_ATTR in attrs else None
    return name.value if isinstance(name, ir.StringAttr) else "the call"


def _module_function(call, name):
    table = ir.SymbolTable(enclosing_module(call))
    return table[name] if name in table else None


def _bprop_of(call):
    return ir.FlatSymbolRefAttr(call.attributes[BPROP_ATTR]).value


def _n_inputs(call) -> int:
    return ir.IntegerAttr(call.attributes[BPROP_INPUTS_ATTR]).value


def _verify_call(call) -> str | None:
    """A marked call's bprop function has the type the gradient rule calls it with."""
    kind = custom_kind(call)
    if kind == RECOMPUTE_ATTR:
        return _recompute_problem(call)
    if kind != BPROP_ATTR:
        return None
    attrs = call.attributes
    if not isinstance(attrs[BPROP_ATTR], ir.FlatSymbolRefAttr):
        return f"{BPROP_ATTR} must be a function symbol (@name), got {attrs[BPROP_ATTR]}"
    if BPROP_INPUTS_ATTR not in attrs:
        return f"carries {BPROP_ATTR} but not {BPROP_INPUTS_ATTR}"
    if not isinstance(attrs[BPROP_INPUTS_ATTR], ir.IntegerAttr):
        return f"{BPROP_INPUTS_ATTR} must be an integer, got {attrs[BPROP_INPUTS_ATTR]}"
    n, name = _n_inputs(call), _bprop_of(call)
    operands, results = list(call.operands), list(call.results)
    if not 0 <= n <= len(operands):
        return f"{BPROP_INPUTS_ATTR} = {n} is not between 0 and its {len(operands)} operands"
    bprop = _module_function(call, name)
    if bprop is None:
        return f"{BPROP_ATTR} names @{name}, which is not a function of this module"
    ftype = ir.FunctionType(ir.TypeAttr(bprop.attributes["function_type"]).value)
    want_in = [r.type for r in results] * 2 + [v.type for v in operands]
    want_out = [v.type for v in operands[:n]]
    if list(ftype.inputs) != want_in or list(ftype.results) != want_out:
        return (f"{BPROP_ATTR} function @{name} has type {ftype}, but {api_name(call)}'s bprop "
                f"must have type {ir.FunctionType.get(want_in, want_out)}")
    return None


def _recompute_problem(call) -> str | None:
    """The backward runs a recomputed callee a second time: it must not write Parameters."""
    name = ir.FlatSymbolRefAttr(call.attributes["callee"]).value
    callee = _module_function(call, name)
    if callee is None or not len(callee.regions[0].blocks):
        return f"{RECOMPUTE_ATTR} calls @{name}, which has no body in this module"
    writes = ops_of_kind(callee, "ms.assign")
    if writes:
        return (f"{RECOMPUTE_ATTR} calls @{name}, which writes a Parameter (ms.assign): the "
                "backward would write it again")
    return None


def _bprop_cotangents(backprop, call, douts, active):
    """Call the bprop function on (outputs, their cotangents, inputs)."""
    loc = call.location
    douts = [d if d is not None else build_op("ms.zeros_like", [r], loc=loc).result
             for d, r in zip(douts, call.results)]
    n, operands = _n_inputs(call), list(call.operands)
    with loc:
        grads = func.CallOp([v.type for v in operands[:n]],
                            ir.FlatSymbolRefAttr.get(_bprop_of(call)),
                            list(call.results) + douts + operands).results
    return [(v, g) for v, g in zip(operands[:n], grads) if v in active]


def _is_float(v) -> bool:
    spec = spec_of(v.type)
    return spec is not None and spec.dtype.is_float


def _recomputed_body(call, callee, inputs):
    """A copy of the callee's body at the current insertion point, reading `inputs`;
    returns (its ops, the values it returns)."""
    copy = callee.operation.clone(ip=False)
    block = copy.regions[0].blocks[0]
    for arg, value in zip(block.arguments, inputs):
        arg.replace_all_uses_with(value)
    ops = list(block.operations)
    ret, body = ops[-1], ops[:-1]
    here = ir.InsertionPoint.current
    for op in body:
        op.detach_from_parent()
        here.insert(op)
    outputs = list(ret.operands)
    copy.erase()
    return body, outputs


def _recompute_cotangents(backprop, call, douts, active):
    """Differentiate a fresh copy of the callee's body, fed through barriers."""
    name = ir.FlatSymbolRefAttr(call.attributes["callee"]).value
    callee = _module_function(call, name)
    if callee is None or not len(callee.regions[0].blocks):
        raise ControlFlowError(f"{api_name(call)} recomputes @{name}, which has no body here")
    loc = call.location
    operands = list(call.operands)
    inputs = [build_op("ms.barrier", [v], loc=loc).result if _is_float(v) else v
              for v in operands]
    body, outputs = _recomputed_body(call, callee, inputs)
    seeded = [(o, d) for o, d in zip(outputs, douts) if d is not None]
    wanted = [i for i, v in enumerate(operands) if v in active]
    cots = backprop(body, [o for o, _ in seeded], [d for _, d in seeded],
                    [inputs[i] for i in wanted], loc, zeros=False)
    return [(operands[i], g) for i, g in zip(wanted, cots) if g is not None]


_RULES = {BPROP_ATTR: _bprop_cotangents, RECOMPUTE_ATTR: _recompute_cotangents}


def _call_cotangents(backprop, call, douts, active):
    kind = custom_kind(call)
    if kind is None:  # (ms-autodiff inlines every other call before differentiating)
        raise ControlFlowError("a call of a function that was not inlined")
    return _RULES[kind](backprop, call, douts, active)


define_upstream("func.call", api="func.call", verify=_verify_call, grad=_call_cotangents,
                doc="a call; with ms.bprop or ms.recompute, a custom gradient (this module)")

