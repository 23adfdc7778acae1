"""Building and reading `ms.grad`, the higher-order op of the autodiff contract: the Python
frontend (pyfront/grad.py) emits it, ms-autodiff (passes/autodiff.py) replaces it. Both use
this module, so the type of a gradient function is computed in one place.
"""
from __future__ import annotations

from typing import NamedTuple

from .builders import PARAM_ATTR, spec_of
from .ir_helpers import function_type, symbol_name
from .lazy import func, ir


class GradRequest(NamedTuple):
    callee: str
    grad_position: tuple
    get_by_list: bool
    sens_param: bool
    with_value: bool

    @classmethod
    def of(cls, op):
        a = op.attributes
        return cls(ir.FlatSymbolRefAttr(a["callee"]).value, tuple(ir.DenseI64ArrayAttr(
            a["grad_position"])), *(ir.BoolAttr(a[k]).value
                                    for k in ("get_by_list", "sens_param", "with_value")))


def parameter_positions(fn) -> list:
    """Indexes of the arguments that stand for Parameters (arg attribute ms.parameter)."""
    if "arg_attrs" not in fn.attributes:
        return []
    return [i for i, a in enumerate(ir.ArrayAttr(fn.attributes["arg_attrs"]))
            if PARAM_ATTR in ir.DictAttr(a)]


def grad_function_type(callee, grad_position, get_by_list=False, sens_param=False,
                       with_value=False) -> ir.FunctionType:
    """The type of the gradient function of `callee` (a func.func); ValueError for a bad
    request."""
    ftype = function_type(callee)
    name, inputs, results = symbol_name(callee), list(ftype.inputs), list(ftype.results)
    for p in grad_position:
        if not 0 <= p < len(inputs):
            raise ValueError(f"grad_position {p} is out of range for @{name}, which takes "
                             f"{len(inputs)} argument{'s' if len(inputs) != 1 else ''}")
    if len(set(grad_position)) != len(grad_position):
        raise ValueError(f"grad_position {list(grad_position)} names an argument twice")
    for i, t in enumerate(results):
        if spec_of(t) is None:
            raise ValueError(f"result #{i} of @{name} has type {t}; only statically shaped "
                             "tensors can be differentiated")
    grads = [inputs[p] for p in grad_position]
    if get_by_list:
        grads += [inputs[i] for i in parameter_positions(callee)]
    return ir.FunctionType.get(inputs + (results if sens_param else []),
                               (results if with_value else []) + grads)


def emit_grad(callee, grad_position=0, *, get_by_list=False, sens_param=False,
              with_value=False, loc=None) -> ir.Value:
    """Build `ms.grad` of `callee` at the current insertion point and return the gradient
    function value (call it with call_gradient or func.call_indirect). `callee` is a func.func
    or the symbol name of one in the module being built. The frontend's entry point: it never
    computes the gradient function's type itself. ValueError for a bad grad_position or an
    unknown callee."""
    if isinstance(callee, str):
        callee = _enclosing_module_function(callee)
    positions = (grad_position,) if isinstance(grad_position, int) else tuple(grad_position)
    ftype = grad_function_type(callee, positions, get_by_list, sens_param, with_value)
    op = ir.Operation.create("ms.grad", results=[ftype], attributes={
        "callee": ir.FlatSymbolRefAttr.get(symbol_name(callee)),
        "grad_position": ir.DenseI64ArrayAttr.get(list(positions)),
        "get_by_list": ir.BoolAttr.get(get_by_list), "sens_param": ir.BoolAttr.get(sens_param),
        "with_value": ir.BoolAttr.get(with_value)}, loc=loc)
    return op.result


def _enclosing_module_function(name):
    """The func.func @name of the module around the current insertion point."""
    op = ir.InsertionPoint.current.block.owner
    while op is not None and op.name != "builtin.module":
        op = op.parent
    if op is not None:
        for fn in op.regions[0].blocks[0].operations:
            if fn.operation.name == "func.func" and symbol_name(fn) == name:
                return fn
    raise ValueError(f"no function @{name} in the module being built")


def call_gradient(gradfn: ir.Value, operands, loc=None) -> list:
    """func.call_indirect of a gradient function value; its results."""
    results = list(ir.FunctionType(gradfn.type).results)
    return list(func.CallIndirectOp(results, gradfn, list(operands), loc=loc).results)
