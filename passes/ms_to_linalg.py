"""convert-ms-to-linalg: every ms op to linalg/tensor/arith on tensors, by its `lower` rule.

A conversion in block order: each op's operands are already lowered, and the op's own
operand/result types still carry the ms dtypes. Lowered tensors hold storage types (uint8 and
bool become i8; dialects/ir.element_type says why), so the rules choose unsigned or boolean
semantics from the ms dtypes. Function signatures are converted the same way.
"""
import itertools

from mlir import ir

from ..dialects import ops as _ops  # noqa: F401  (fills the registry)
from ..dialects.ir import (data_values, op_attrs, operand_groups, spec_of, tensor_type)
from ..dialects.lowering import LowerCtx
from ..dialects.registry import OPS, MissingRuleError, NotConstant
from .base import ModulePass, fail, register


def storage(t: ir.Type) -> ir.Type:
    spec = spec_of(t)
    return tensor_type(spec, storage=True) if spec is not None else t


def lower_op(op, origin: dict, regions=None):
    """Replace one ms op by its lowering. `origin` maps lowered values whose type changed
    (uint8 or bool -> i8) back to their ms type, so rules see the ms dtypes; `regions`
    numbers the function's fused regions."""
    opdef = OPS[op.name]
    groups = operand_groups(opdef, op)
    for name in opdef.const_inputs:
        if groups.get(name) is not None:
            fail(op, f"'{op.name}' requires a compile-time constant {name}"
                     + (" (run ms-const-input-to-attr first)"
                        if not isinstance(op_attrs(opdef, op, groups).get(name), NotConstant)
                        else ""))
    data = data_values(opdef, groups)
    ins = [spec_of(origin.get(v, v.type)) for v in data]
    outs = [spec_of(r.type) for r in op.results]
    sig = opdef.signature or ("T",) * len(ins)
    group_dtypes = {s.dtype for s, g in zip(ins, sig) if g == "T"}
    if len(group_dtypes) > 1:
        fail(op, f"'{op.name}' has operands of dtypes "
                 f"{', '.join(sorted(d.name for d in group_dtypes))}; run ms-implicit-cast first")
    try:
        lower = opdef.rule("lower")
    except MissingRuleError as e:
        fail(op, str(e))
    lc = LowerCtx(op, opdef, ins, outs, op_attrs(opdef, op, groups), origin, regions)
    with ir.InsertionPoint(op), op.location:
        new = lower(lc, *data)
    new = list(new) if isinstance(new, (list, tuple)) else [new]
    for old, value in zip(op.results, new):
        if old.type != value.type:
            origin[value] = old.type
        old.replace_all_uses_with(value)
    op.erase()


def convert_signature(fn, origin: dict):
    ftype = ir.FunctionType(ir.TypeAttr(fn.attributes["function_type"]).value)
    ins = [storage(t) for t in ftype.inputs]
    outs = [storage(t) for t in ftype.results]
    if list(ftype.inputs) == ins and list(ftype.results) == outs:
        return
    fn.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(ins, outs))
    if fn.regions[0].blocks:
        for arg, t in zip(fn.regions[0].blocks[0].arguments, ins):
            if arg.type != t:
                origin[arg] = arg.type
                arg.set_type(t)


@register
class ConvertMsToLinalg(ModulePass):
    name = "convert-ms-to-linalg"
    summary = "lower ms ops to linalg, tensor, arith and math on tensors"

    def run(self, module):
        funcs = []

        def collect(op):
            if op.operation.name == "func.func":
                funcs.append(op)
                return ir.WalkResult.SKIP
            return ir.WalkResult.ADVANCE
        module.walk(collect)
        for fn in funcs:
            origin, regions = {}, itertools.count()
            convert_signature(fn, origin)
            for block in fn.regions[0].blocks:
                for op in list(block.operations):
                    if op.operation.name in OPS:
                        lower_op(op, origin, regions)
            for block in fn.regions[0].blocks:
                for op in block.operations:
                    if op.operation.name.startswith("ms."):
                        fail(op, f"'{op.name}' could not be lowered here")
