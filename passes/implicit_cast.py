"""ms-implicit-cast: MindSpore's implicit type promotion within dtype signature groups.

Each op's `signature` names the group of every data operand; dialects/ir.cast_targets gives
the destination dtype (dtypes.promote has the rules). Tensor operands that differ get an
`ms.cast` whose `reason` attribute says which op and input caused it; Python-scalar constants
are re-typed instead. A Parameter in a write position (ms.assign's variable) is never cast.
"""
from mlir import ir

from ..dialects import ops as _ops  # noqa: F401  (fills the registry)
from ..dialects.builders import (PARAM_ATTR, build_op, cast_targets, constant, data_values,
                           dense_to_numpy,
                           is_scalar_constant, op_attrs, operand_groups, spec_of,
                           write_conflict)
from ..dialects.registry import OPS, DTypeError
from .base import PatternPass, fail, register

REASON_ATTR = "reason"


def parameter_name(v: ir.Value):
    """The Parameter a function argument stands for (arg attribute ms.parameter), or None."""
    if not isinstance(v.owner, ir.Block):
        return None
    parent = v.owner.owner
    if parent.operation.name != "func.func" or "arg_attrs" not in parent.attributes:
        return None
    attrs = ir.DictAttr(ir.ArrayAttr(parent.attributes["arg_attrs"])[ir.BlockArgument(v).arg_number])
    if PARAM_ATTR not in attrs:
        return None
    name = attrs[PARAM_ATTR]
    if not isinstance(name, ir.StringAttr):  # (IR read from a file may say anything here)
        fail(parent, f"argument #{ir.BlockArgument(v).arg_number}'s '{PARAM_ATTR}' must be "
                     f"the Parameter's name, a string, not {name}")
    return name.value


def _retyped_scalar(v: ir.Value, dtype, loc):
    value = dense_to_numpy(v.owner.attributes["value"]).astype(dtype.np)  # (bf16 too)
    return constant(value, dtype, scalar=True, loc=loc)


def insert_casts(op, rewriter):
    opdef = OPS[op.name]
    groups = operand_groups(opdef, op)
    data = data_values(opdef, groups)
    try:  # dtypes MindSpore does not promote together (uint16 with int32, ...): a diagnostic
        targets = cast_targets(opdef, data)
    except DTypeError as e:
        fail(op, str(e))
    conflict = write_conflict(opdef, data, parameter_name)
    if conflict:
        fail(op, conflict)
    changes = {}
    for i, (v, target) in enumerate(zip(data, targets)):
        spec = spec_of(v.type)
        if target is None or spec is None or spec.dtype is target:
            continue
        changes[i] = (v, spec, target)
    if not changes:
        return True  # did not match: every group already agrees
    new_data = list(data)
    converted = {}  # one cast or re-typed scalar per value: an operand may appear twice
    with rewriter.ip:
        for i, (v, spec, target) in changes.items():
            if v in converted:
                pass
            elif is_scalar_constant(v):
                converted[v] = _retyped_scalar(v, target, op.location)
            else:
                reason = (f"operand #{i} of '{op.name}' is {spec.dtype.name}; its dtype group "
                          f"promotes to {target.name}")
                converted[v] = build_op("ms.cast", [v], {"dtype": target}, loc=op.location,
                                        extra_attrs={REASON_ATTR: ir.StringAttr.get(reason)}).result
            new_data[i] = converted[v]
        operands, it = [], iter(new_data)
        for o in opdef.operands:
            if o.name in opdef.const_inputs:
                operands.append(groups[o.name])
            else:
                operands.append(next(it) if groups[o.name] is not None else None)
        attrs = {k: v for k, v in op_attrs(opdef, op, groups).items() if k in op.attributes}
        keep = {name: op.attributes[name] for name in op.attributes
                if name not in attrs and name != "operandSegmentSizes"}
        new = build_op(op.name, operands, attrs, result_types=[r.type for r in op.results],
                       loc=op.location, extra_attrs=keep)
    rewriter.replace_op(op, new)
    for v in converted:
        if is_scalar_constant(v) and not list(v.uses):
            rewriter.erase_op(v.owner.operation)


@register
class ImplicitCast(PatternPass):
    name = "ms-implicit-cast"
    summary = "cast the operands of each dtype signature group to their common dtype"
    patterns = {name: insert_casts for name, d in OPS.items()
                if any(g not in (None, "bool") for g in d.signature)}
