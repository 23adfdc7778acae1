"""convert-ms-to-linalg: every ms op to linalg/tensor/arith on tensors, by its `lower` rule.

A conversion in block order: each op's operands are already lowered, and the op's own
operand/result types still carry the ms dtypes. Lowered tensors hold storage types (uint8 and
bool become i8; dialects/ir.element_type says why), so the rules choose unsigned or boolean
semantics from the ms dtypes. Function signatures are converted the same way.
"""
import itertools
import json

from mlir import ir

from ..dialects import ops as _ops  # noqa: F401  (fills the registry)
from ..dialects.builders import (data_values, op_attrs, operand_groups, spec_of, tensor_type)
from ..dialects.lowering import (LowerCtx, lowered_spec, lowering_function, note_symbolic,
                                 result_specs, symbolic_specs)
from ..dialects.symdim import DynamicDimError, has_dynamic
from ..dialects.registry import OPS, UPSTREAM, MissingRuleError, NotConstant
from .base import ModulePass, fail, register
from .cpu_target import TARGET_CHOICES
from ..dialects.ir_helpers import function_type, functions, set_function_type


def storage(t: ir.Type) -> ir.Type:
    spec = spec_of(t)
    return tensor_type(spec, storage=True) if spec is not None else t


def check_const_inputs(op):
    """Lowering takes const inputs only as attributes. Checked before anything is lowered, so
    that an operand from ms.constant is still recognizable (and gets the hint)."""
    opdef = OPS[op.name]
    groups = operand_groups(opdef, op)
    for name in opdef.const_inputs:
        if groups.get(name) is not None:
            fail(op, f"'{op.name}' requires a compile-time constant {name}"
                     + (" (run ms-const-input-to-attr first)"
                        if not isinstance(op_attrs(opdef, op, groups).get(name), NotConstant)
                        else ""))


def lower_op(op, origin: dict, regions=None, options=None):
    """Replace one ms op by its lowering. `origin` maps lowered values whose type changed
    (uint8 or bool -> i8) back to their ms type, so rules see the ms dtypes; `regions`
    numbers the function's fused regions; `options` are the pass's."""
    opdef = OPS[op.name]
    groups = operand_groups(opdef, op)
    data = data_values(opdef, groups)
    ins = [lowered_spec(v, origin) for v in data]
    try:
        with op.location:
            outs = result_specs(opdef, op, ins, lambda: op_attrs(opdef, op, groups))
    except DynamicDimError as e:
        fail(op, str(e))
    sig = opdef.signature or ("T",) * len(ins)
    group_dtypes = {s.dtype for s, g in zip(ins, sig) if g == "T"}
    if len(group_dtypes) > 1:
        fail(op, f"'{op.name}' has operands of dtypes "
                 f"{', '.join(sorted(d.name for d in group_dtypes))}; run ms-implicit-cast first")
    try:
        lower = opdef.rule("lower")
    except MissingRuleError as e:
        fail(op, str(e))
    lc = LowerCtx(op, opdef, ins, outs, op_attrs(opdef, op, groups), origin, regions, options)
    with ir.InsertionPoint(op), op.location:
        try:
            new = lower(lc, *data)
        except DynamicDimError as e:
            fail(op, f"'{op.name}' has no form for dynamic dimensions yet: {e}")
        except TypeError as e:
            # a builder handed a run-time size where MLIR wants a number: a rule that has no
            # dynamic form for these sizes (a located error, not an internal one)
            if not any(has_dynamic(s.shape) for s in list(ins) + list(outs)):
                raise
            reason = str(e).strip().splitlines()[0] if str(e).strip() else "TypeError"
            fail(op, f"'{op.name}' has no form for these dynamic dimensions yet ({reason})")
    new = list(new) if isinstance(new, (list, tuple)) else [new]
    for old, value, spec in zip(op.results, new, outs):
        if value not in symbolic_specs():
            note_symbolic(value, spec)
        if old.type != value.type:
            origin[value] = old.type
        old.replace_all_uses_with(value)
    op.erase()


def convert_signature(fn, origin: dict):
    ftype = function_type(fn)
    ins = [storage(t) for t in ftype.inputs]
    outs = [storage(t) for t in ftype.results]
    if list(ftype.inputs) == ins and list(ftype.results) == outs:
        return
    set_function_type(fn, ins, outs)
    if fn.regions[0].blocks:
        for arg, t in zip(fn.regions[0].blocks[0].arguments, ins):
            if arg.type != t:
                origin[arg] = arg.type
                arg.set_type(t)


@register
class ConvertMsToLinalg(ModulePass):
    name = "convert-ms-to-linalg"
    summary = "lower ms ops to linalg, tensor, arith and math on tensors"
    # How data-dependent writes (unsorted_segment_sum) lower: "loops" (an scf.for writing
    # each row where its index says) or "reduction" (pure linalg, every output reduces over
    # all rows: for targets whose host code must stay straight-line, as CUDA's launch plans).
    # ms.cumsum follows the same choice: a loop over its axis, or one masked reduction.
    # How convolutions of a batch of images lower (dialects/ops/conv.py): "per-image" (an
    # scf.forall over the images, each one's im2col used while in cache) or "batched" (one
    # im2col and one product for the batch: straight-line host code, as CUDA needs) or
    # "implicit-gemm" (batched, but one-group static convolutions as a direct contraction
    # that ms-gpu-conv-implicit-gemm makes a kernel gathering its windows itself).
    # How ms.dynamic_index/dynamic_update_index (loop bodies' row access) lower: "slices"
    # (a slice at the offset the host reads from the index tensor) or "gather" (kernels that
    # read the index on the device: CUDA, whose host never reads device memory).
    # conv-block-bytes: per-image products whose im2col matrix is larger run in blocks of
    # output rows whose matrix fits (0: 3/4 of the CPU target's L2 with conv=per-image).
    # conv-vector-bits: the vectors the direct grouped loop nests are vectorized with, whose
    # rows must fill half of one for groups of 5-8 channels (dialects/ops/conv_direct.py;
    # 0: the CPU target's with conv=per-image).
    options = {"scatter": "loops", "conv": "per-image", "rows": "slices", "conv-block-bytes": 0,
               "conv-vector-bits": 0}
    choices = {"scatter": ("loops", "reduction"), "conv": ("per-image", "batched", "implicit-gemm"),
               "rows": ("slices", "gather"), "conv-vector-bits": TARGET_CHOICES["vector-bits"]}

    def run(self, module):
        options = dict(self.opts)
        if options["conv"] == "per-image":
            from .cpu_target import current
            options["conv-block-bytes"] = (options["conv-block-bytes"]
                                           or current().l2_bytes * 3 // 4)
            options["conv-vector-bits"] = options["conv-vector-bits"] or current().vector_bits
        for fn in functions(module):
            items = _items(fn)
            for op in items:
                if op.operation.name in OPS:
                    check_const_inputs(op)
            origin, regions = {}, itertools.count()
            convert_signature(fn, origin)
            with lowering_function(fn, origin) as sizes:
                for op in items:
                    if op.operation.name in OPS:
                        lower_op(op, origin, regions, options)
                    else:  # control flow and its glue: storage types (dialects/ops/control.py)
                        UPSTREAM[op.operation.name].lower(op, origin)
                if sizes.dynamic:
                    record_dynamic_sizes(fn, sizes, origin)
                    _verify_lowered(fn)
            leftover = []

            def find_leftover(op):
                if op.operation.name.startswith("ms."):
                    leftover.append(op)
                    return ir.WalkResult.INTERRUPT
                return ir.WalkResult.ADVANCE
            fn.walk(find_leftover)
            if leftover:
                fail(leftover[0], f"'{leftover[0].name}' could not be lowered here: ms ops are "
                                  "lowered in function bodies and in the regions of loops "
                                  "and conditionals")


DYNAMIC_ATTR = "ms.dynamic."  # + entry name: its result sizes and checks (JSON)


def record_dynamic_sizes(fn, sizes, origin):
    """For a public function with dynamic sizes: the sizes of its results as expressions of
    its arguments' sizes and the equalities a call must satisfy, as a module attribute the
    runtime reads (runtime/dynamic.py): outputs are allocated by the caller."""
    from ..dialects.ir_helpers import enclosing_module, symbol_name
    from ..runtime.dynamic import dim_to_json
    if "sym_visibility" in fn.attributes and \
            ir.StringAttr(fn.attributes["sym_visibility"]).value == "private":
        return
    from .destination_passing import check_entry_types
    check_entry_types(fn)  # (a memref result has no size to record)
    ret = fn.regions[0].blocks[0].operations[len(fn.regions[0].blocks[0].operations) - 1]
    n_inputs = len(fn.regions[0].blocks[0].arguments)
    results = []
    for i, v in enumerate(ret.operands):
        spec = lowered_spec(v, origin)
        shape = []
        for d in spec.shape:
            try:
                shape.append(dim_to_json(d))
            except ValueError:
                fail(ret, f"the size of result #{i} ({d}) is known only while the function "
                          "runs, not from its arguments' sizes: the caller cannot allocate it")
            _runtime_reads(shape[-1], n_inputs, ret, f"the size of result #{i} ({d})")
        results.append(shape)
    checks = []
    for c in sizes.checks:
        try:
            check = {"a": dim_to_json(c.a), "b": dim_to_json(c.b), "what": c.what,
                     "where": _where(c.location)}
        except ValueError:  # between sizes inside the function (a loop's): not checkable
            continue
        for side, d in (("a", c.a), ("b", c.b)):
            _runtime_reads(check[side], n_inputs, ret, f"the check that {c.what} agree ({d})")
        checks.append(check)
    module = enclosing_module(fn)
    module.attributes[DYNAMIC_ATTR + symbol_name(fn)] = ir.StringAttr.get(
        json.dumps({"results": results, "checks": checks}, sort_keys=True))


def _runtime_reads(size, n_inputs, op, what):
    """Fail unless the runtime reads `size` (its JSON) back: a size it cannot evaluate (a
    slice's clamp, where runtime/dynamic.py reads polynomials only) would leave an output
    unallocated or a check unmade, so the function compiles per shape instead."""
    from ..runtime.dynamic import dim_from_json
    try:
        dim_from_json(size, n_inputs)
    except ValueError as e:
        fail(op, f"{what} cannot be described to the runtime ({e})")


def _verify_lowered(fn):
    """Dynamic sizes give the lowerings' IR more ways to be wrong than static shapes (a size
    operand missing, two dynamic sizes in one reshape group), and an upstream pass given
    such IR may abort the process: it is verified here, a located error instead."""
    try:
        fn.operation.verify()
    except ir.MLIRError as e:
        fail(fn, "the lowering of dynamic sizes made invalid IR: "
                 + " ".join(str(e).split())[:400])


def _where(location) -> str:
    """`file:line:col` of a check's location ("" when it has none)."""
    from .diagnostics import file_location
    if location is None:
        return ""
    path, line, col = file_location(location)
    return f"{path}:{line}:{col}" if path else ""


def _items(fn) -> list:
    """What the conversion visits, in pre-order (a loop before the ops of its body, each
    op after the ops its operands come from): ms ops in the function body and in
    control-flow regions (not those inside ms.fused: lower_fused takes its region), and the
    control-flow ops and glue whose types follow the storage types."""
    items = []

    def visit(op):
        name = op.operation.name
        if name in OPS:
            items.append(op)
            return ir.WalkResult.SKIP  # (an ms op's region is its own lowering's business)
        upstream = UPSTREAM.get(name)
        if upstream is not None and upstream.lower is not None:
            items.append(op)
        if len(op.regions) and (upstream is None or not upstream.holds_ms):
            return ir.WalkResult.SKIP  # (other ops' regions hold no ms code)
        return ir.WalkResult.ADVANCE
    for block in fn.regions[0].blocks:
        for op in block.operations:
            op.operation.walk(visit, ir.WalkOrder.PRE_ORDER)
    return items
