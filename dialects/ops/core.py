"""Ops outside the numeric families: constants, Parameter writes, gradients, fused regions."""
import numpy as np
from ..lazy import arith, ir

from .. import dtypes as dt
from .. import lowering
from ..dtypes import TensorSpec
from ..grad import each, no_grad
from ..builders import numpy_to_dense, tensor_type
from ..registry import ShapeError, define


def _constant_infer(ins, attrs):
    v = attrs["value"]
    return TensorSpec(tuple(v.shape), dt.from_numpy(v.dtype))


def _lower_constant(lc):
    attr = lc.op.attributes["value"]
    d = lc.out.dtype
    if d.kind == "uint" or d is dt.bool_:  # stored signless, bool as i8 (see element_type)
        bits = 8 if d is dt.bool_ else d.bits
        signed = dt.by_name(f"int{bits}")
        raw = lc.attrs["value"].astype(np.dtype(f"u{bits // 8}")).view(signed.np)
        attr = numpy_to_dense(raw, signed)
    return arith.constant(tensor_type(lc.out, storage=True), attr)


define("ms.constant", [], _constant_infer, attrs={"value": "dense"}, lower=_lower_constant,
       grad=no_grad, doc="a tensor literal; the unit attribute `is_scalar` marks a Python scalar")


def _assign_infer(ins, attrs):
    var, value = ins
    if var.shape != value.shape:
        raise ShapeError(f"cannot assign a value of shape {value.shape} to a Parameter of "
                         f"shape {var.shape}")
    return var


define("ms.assign", ["variable", "value"], _assign_infer, signature=("T", "T"), write=(0,),
       lower=lambda lc, var, value: value, pure=False,
       # the result is `value`; the variable's old value does not reach it
       grad=each(None, lambda g, d: d),
       doc="write `value` into the Parameter `variable`; under jit the new value is returned "
           "and the runtime stores it in the Parameter")

# No gradient rule: ms-autodiff replaces every ms.grad (callees first) before it differentiates
# a function, so grad of grad differentiates the generated code instead.
define("ms.grad", [], None,
       attrs={"callee": "symbol", "grad_position": "ints", "get_by_list": "bool",
              "sens_param": "bool", "with_value": "bool"},
       results=(("gradfn", "function"),),
       structure_note="A higher-order op, like MindSpore's GradOperation()(fn): its result is "
                      "the gradient\nfunction of @callee, called with func.call_indirect. "
                      "ms-autodiff generates that function\nand replaces this op with a "
                      "func.constant referring to it.",
       doc="the gradient function of @callee (a function value; ms-autodiff generates it)")

def _fused_structure(op):
    """What IRDL cannot say about a region: a known kind, ms ops inside (not fused regions
    or side effects), and a gpu.yield of exactly the op's result types."""
    from ..registry import OPS
    kinds = {"elementwise"} | {d.fusion.kind for d in OPS.values() if d.fusion is not None}
    kind = ir.StringAttr(op.attributes["kind"]).value
    if kind not in kinds:
        return f"kind '{kind}' is not one of {', '.join(sorted(kinds))}"
    block = op.regions[0].blocks[0]
    if len(block.arguments):
        return "region must not have block arguments (it reads values from above)"
    inner = list(block.operations)
    for o in inner[:-1]:
        name = o.operation.name
        if name not in OPS or name in ("ms.fused", "ms.grad") or not OPS[name].pure:
            return f"region may hold only pure ms ops, found '{name}'"
    term = inner[-1].operation
    if term.name != "gpu.yield":
        return f"region must end in gpu.yield, found '{term.name}'"
    yielded, results = [v.type for v in term.operands], [r.type for r in op.results]
    if yielded != results:
        return (f"region yields ({', '.join(map(str, yielded))}) but the op returns "
                f"({', '.join(map(str, results))})")
    return None


define("ms.fused", [], None, attrs={"kind": "string"}, lower=lambda lc: lowering.lower_fused(lc),
       verify_op=_fused_structure, regions=("body",),
       structure_note="A group of ops that becomes one loop nest (CPU) or one kernel (GPU). "
                      "The region reads\nvalues defined above it (IRDL variadics cannot hold "
                      "differently typed operands) and\nends in gpu.yield (IRDL ops cannot be "
                      "terminators).",
       doc="ops that lower to one loop nest (CPU) or one kernel (GPU); the region reads "
           "values from above and ends in gpu.yield")
