"""What IRDL cannot check about an ms op: element types, attribute kinds and values, const
inputs, and that the result types agree with the op's shape rule."""
from __future__ import annotations

from mlir import ir

from . import dtypes as dt
from .ir import (AttrError, attr_to_py, const_to_py, constant_value, data_values, operand_groups,
                 resolved_specs, spec_of, tensor_type)
from .registry import DTypeError, NotConstant, OpDef, ShapeError


def check_op(opdef: OpDef, op) -> str | None:
    """The first problem with `op` as a message (without the "'ms.x' op" prefix), or None."""
    try:
        groups = operand_groups(opdef, op)
    except AttrError as e:
        return str(e)
    opattrs = op.attributes
    attrs = {}
    for name, kind in opdef.attrs.items():
        if name not in opattrs:
            return f"requires attribute '{name}'"
        try:
            attrs[name] = attr_to_py(kind, opattrs[name])
        except AttrError as e:
            return f"attribute '{name}' {e}"
    for name, kind in opdef.const_inputs.items():
        has_attr, operand = name in opattrs, groups.get(name)
        if has_attr and operand is not None:
            return f"has both an operand and an attribute '{name}'"
        if has_attr:
            try:
                attrs[name] = attr_to_py(kind, opattrs[name])
            except AttrError as e:
                return f"attribute '{name}' {e}"
        elif operand is not None:
            value = constant_value(operand)
            try:
                attrs[name] = NotConstant(name) if value is None else const_to_py(kind, value)
            except AttrError as e:
                return f"operand '{name}' {e}"
        else:
            return f"requires '{name}' as an attribute or a constant operand"

    data = data_values(opdef, groups)
    specs = []
    for i, v in enumerate(data):
        spec = spec_of(v.type)
        if spec is None:
            return (f"operand #{i} must be a statically shaped tensor of a supported element "
                    f"type, got {v.type}")
        specs.append(spec)
    if opdef.name == "ms.constant" and not (spec_of(op.results[0].type)
                                             and op.results[0].type == opattrs["value"].type):
        return (f"result type {op.results[0].type} does not match the value's type "
                f"{opattrs['value'].type}")
    problem = check_dtypes(opdef, specs) or (opdef.verify_op and opdef.verify_op(op))
    if problem:
        return problem
    if opdef.infer is None:
        return None
    if any(isinstance(v, NotConstant) for v in attrs.values()):
        # The rules need that value: the op is valid IR until lowering, which reports it.
        return None
    try:
        expected = opdef.infer_specs(resolved_specs(opdef, data), attrs)
    except (ShapeError, DTypeError) as e:
        return str(e)
    results = list(op.results)
    if len(results) != len(expected):
        return f"has {len(results)} results, but its shape rule gives {len(expected)}"
    for i, (r, e) in enumerate(zip(results, expected)):
        if spec_of(r.type) != e:
            return f"result #{i} has type {r.type}, but its inputs give {tensor_type(e)}"
    return None


def check_dtypes(opdef: OpDef, specs) -> str | None:
    sig = opdef.signature or (None,) * len(specs)
    for i, (spec, group) in enumerate(zip(specs, sig)):
        if group == "bool":
            if spec.dtype is not dt.bool_:
                return f"operand #{i} must be a bool tensor, got {spec.dtype.name}"
        elif spec.dtype not in opdef.dtypes:
            return (f"operand #{i} has element type {spec.dtype.ir_name}, but {opdef.name} "
                    f"supports {', '.join(d.name for d in opdef.dtypes)}")
    return None


def verify_module(module_op) -> bool:
    """Check every ms op; report problems at the op's location. True if all are valid."""
    from .registry import OPS
    ok = True

    def visit(op):
        nonlocal ok
        opdef = OPS.get(op.operation.name)
        if opdef is not None:
            problem = check_op(opdef, op)
            if problem:
                op.location.emit_error(f"'{op.name}' op {problem}")
                ok = False
        return ir.WalkResult.ADVANCE

    module_op.walk(visit)
    return ok
