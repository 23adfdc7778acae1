"""ms-const-input-to-attr: MindSpore's ConstInputToAttr.

Operands listed in an op's `const_inputs` table that come from ms.constant become attributes
of the same name (negative axes normalized by the op's rule); constants left without uses are
erased. Non-constant operands stay, and lowering reports them.
"""
from ..dialects import ops as _ops  # noqa: F401  (fills the registry)
from ..dialects.builders import (build_op, constant_value, data_values, op_attrs, operand_groups,
                           resolved_specs)
from ..dialects.registry import OPS, DTypeError, ShapeError
from .base import PatternPass, fail, register


def fold_const_inputs(op, rewriter):
    opdef = OPS[op.name]
    groups = operand_groups(opdef, op)
    constants = {name: groups[name].owner for name in opdef.const_inputs
                 if groups.get(name) is not None and constant_value(groups[name]) is not None}
    if not constants:
        return True  # did not match: no constant operand to fold
    attrs = {k: v for k, v in op_attrs(opdef, op, groups).items()
             if k in opdef.attrs or k in constants or k in op.attributes}
    specs = resolved_specs(opdef, data_values(opdef, groups))
    run_time = [n for n in opdef.const_inputs if groups.get(n) is not None and n not in constants]
    try:
        # With a run-time operand left the rules cannot run; lowering reports that operand.
        if not run_time:
            opdef.infer_specs(specs, attrs)  # rejects bad axes, perms, shapes at this op
            if opdef.canonicalize is not None:
                attrs = opdef.canonicalize(specs, attrs)
    except (ShapeError, DTypeError) as e:
        fail(op, f"'{op.name}' op {e}")
    operands = [None if o.name in constants else groups[o.name] for o in opdef.operands]
    discardable = {name: op.attributes[name] for name in op.attributes
                   if name not in attrs and name != "operandSegmentSizes"}
    with rewriter.ip:
        new = build_op(op.name, operands, attrs, result_types=[r.type for r in op.results],
                       loc=op.location, extra_attrs=discardable)
    rewriter.replace_op(op, new)
    for value in {groups[name] for name in constants}:  # one constant may feed two inputs
        if not list(value.uses):
            rewriter.erase_op(value.owner.operation)


@register
class ConstInputToAttr(PatternPass):
    name = "ms-const-input-to-attr"
    summary = "turn constant shape/axis/perm/... operands into attributes"
    patterns = {name: fold_const_inputs for name, d in OPS.items() if d.const_inputs}
