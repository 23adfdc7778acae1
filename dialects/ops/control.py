"""Control flow: loops and conditionals as scf.for / scf.while / scf.if holding ms ops, and
the two ops that read and write one row of a tensor at a position known only at run time
(ms.dynamic_index, ms.dynamic_update_index: Scan reads xs and stacks ys with them, and the
gradient of a loop stacks what its backward needs).

Why the loops are scf ops and not ms ops: IRDL binds every use of a constraint variable to
one type, so a variadic operand or result list must be homogeneous. Checked with mlir-opt:
an op declared `irdl.operands(x: variadic %t)` with `%t = irdl.base "!builtin.tensor"`
rejects the operands (tensor<2xf32>, tensor<i64>) with "expected 'tensor<2xf32>' but got
'tensor<i64>'". A loop's carries have different types, so no IRDL op can take or return them
(ms.fused has one result for the same reason), and IRDL ops cannot be terminators either.
scf.for, scf.while and scf.if take any carries, their upstream verifiers check that region
arguments and yields match them (located diagnostics), and they are what the lowering makes
of loops anyway: they hold ms ops in their regions from the `ms` stage on. Everything IRDL
cannot say about them lives in their `define_upstream` block below, as for ms ops: the extra
checks (ms-verify), the lowering (storage types), the gradient rule (ms-autodiff) and the name
users know them by (the `ms.api` attribute the frontend sets: "ForiLoop", "WhileLoop",
"Scan", "cond").

The `ms` stage form (built by pyfront/control_flow.py; regions read other values from above,
such as closed-over Tensors and Parameters):

    %r:2 = scf.for %iv = %lb to %ub step %c1 iter_args(%a = %x, %b = %y) -> (...) {
      %i = arith.index_cast %iv : index to i64
      %t = tensor.from_elements %i : tensor<i64>      // the index the body reads
      ... ms ops ...
      scf.yield %a1, %b1 : ...
    } {ms.api = "ForiLoop"}
    %p = tensor.extract %pred[] : tensor<i1>
    %s = scf.if %p -> (tensor<4xf32>) { ... scf.yield } else { ... scf.yield } {ms.api = "cond"}
    %w = scf.while (%a = %x) : (...) -> (...) { ... scf.condition(%c) %a } do { ... scf.yield }

Gradients (ms-autodiff, passes/autodiff.py calls the rules below with its `backprop`):
- scf.if: the backward is an scf.if on the same predicate; each branch recomputes its forward
  ops (values inside a region are not visible outside it) and emits their backward.
- scf.for with a static trip count: before the backward is built, the forward loop is
  extended with one stack per carry whose value the backward needs: a carry of shape
  (trip, ...) written at the iteration's position by ms.dynamic_update_index. The backward is
  a reverse scf.for that reads each iteration's carries back (ms.dynamic_index), recomputes
  the body's forward ops from them and emits their backward, carrying the carries'
  cotangents and accumulating those of the values the body reads from above (closed-over
  Tensors, Parameters, xs). Storing the carries and recomputing the body (rather than storing
  every intermediate the rules read) keeps the memory at trip x carries and leaves the op
  rules unchanged; it costs one more evaluation of the body per iteration. A carry that is
  only yielded or only written into (a stack of ys) needs no stack: no rule reads its value.
- scf.while and scf.for with run-time bounds are forward only (like JAX's while_loop): the
  error names the loop and suggests ForiLoop or Scan with a static trip count.
"""
from __future__ import annotations

import numpy as np

from ..lazy import arith, ir, linalg, scf, tensor

from .. import dtypes as dt
from .. import lowering
from .. import shape_rules as rules
from ..builders import build_op, constant, spec_of, tensor_type
from ..dtypes import TensorSpec
from ..grad import each
from ..ir_helpers import remap_operands, static_trip_count
from ..registry import ControlFlowError, DTypeError, ShapeError, define, define_upstream
from ..symdim import DynamicDimError, has_dynamic, is_dynamic

API_ATTR = "ms.api"       # on scf ops made by the frontend: the API users called
STACKS_ATTR = "ms.stacks"  # on scf.for: per carry, the carry holding its per-iteration stack


# ------------------------------------------------------------------ dynamic row access

_INDEX_DTYPES = (dt.int32, dt.int64)


def _check_row_access(x, index):
    if index.rank != 0 or index.dtype not in _INDEX_DTYPES:
        raise DTypeError(f"index must be a 0-d int32 or int64 tensor, got {index.dtype.name} "
                         f"of shape {index.shape}")
    if x.rank == 0 or x.shape[0] == 0:
        raise ShapeError(f"x must have a non-empty first axis, got shape {x.shape}")


def _dynamic_index_infer(ins, attrs):
    x, index = ins
    _check_row_access(x, index)
    return TensorSpec(x.shape[1:], x.dtype)


def _dynamic_update_infer(ins, attrs):
    x, update, index = ins
    _check_row_access(x, index)
    row = x.shape[1:]  # (a dynamic size of update and x's must agree: a run-time check)
    if update.rank != len(row) or any(
            rules.same_size(u, r, "the sizes of a row and of the update written into it")
            is None for u, r in zip(update.shape, row)):
        raise ShapeError(f"update of shape {update.shape} is not a row of x of shape {x.shape}")
    return TensorSpec(x.shape, x.dtype)


def _last_row(rows):
    """rows - 1 as an index value; rows may be a size known only at run time."""
    idx_t = ir.IndexType.get()
    if not is_dynamic(rows):
        return arith.constant(idx_t, rows - 1)
    return arith.subi(lowering.index_value(rows), arith.constant(idx_t, 1))


def _row_offset(index, spec: TensorSpec, rows):
    """The 0-d integer tensor `index` as an index value clamped into [0, rows) (JAX's
    dynamic_update_slice clamps too): the lowered code never touches memory outside x."""
    idx_t = ir.IndexType.get()
    i = tensor.extract(index, [])
    i = arith.index_cast(idx_t, i)
    zero, last = arith.constant(idx_t, 0), _last_row(rows)
    return arith.minsi(arith.maxsi(i, zero), last)


def _row_slice(spec: TensorSpec):
    """(offsets, static sizes, strides, dynamic sizes) of one row of a tensor of `spec`; a
    row's dynamic sizes (a dynamic batch) are read at run time."""
    rank, dyn = spec.rank, ir.ShapedType.get_dynamic_size()
    row = spec.shape[1:]
    return ([ir.ShapedType.get_dynamic_stride_or_offset()] + [0] * (rank - 1),
            [1] + [dyn if is_dynamic(d) else d for d in row], [1] * rank,
            [lowering.index_value(d) for d in row if is_dynamic(d)])


def _device_row(index, rows):
    """Inside a linalg body: the 0-d index tensor read and clamped into [0, rows)."""
    idx_t = ir.IndexType.get()
    i = arith.index_cast(idx_t, tensor.extract(index, []))
    low = arith.maxsi(i, arith.constant(idx_t, 0))
    return arith.minsi(low, _last_row(rows))


def _gather_row(lc, x, index):
    """dynamic_index as a kernel that reads the index on the device (rows=gather)."""
    n = lc.out.rank

    def body(_out):
        row = _device_row(index, lc.ins[0].shape[0])
        coords = [row] + [linalg.IndexOp(d).result for d in range(n)]
        return lowering.to_compute(tensor.extract(x, coords), lc.out.dtype)
    return lowering.generic([], [lowering.empty(lc.out)], [lowering.identity_map(n)],
                            ["parallel"] * n, body, [lc.out.dtype])


def _select_row(lc, x, update, index):
    """dynamic_update_index as one kernel over x: the row the index names (read on the
    device) from update, the others from x (rows=gather)."""
    n = lc.out.rank
    upd_map = lowering.affine_map(n, [ir.AffineDimExpr.get(d) for d in range(1, n)])

    def body(xv, uv, _out):
        row = _device_row(index, lc.ins[0].shape[0])
        here = arith.cmpi(arith.CmpIPredicate.eq, linalg.IndexOp(0).result, row)
        return arith.select(here, uv, xv)
    return lowering.generic([x, update], [lowering.empty(lc.out)],
                            [lowering.identity_map(n), upd_map, lowering.identity_map(n)],
                            ["parallel"] * n, body, [lc.out.dtype] * 3)


def _lower_dynamic_index(lc, x, index):
    if lc.options.get("rows") == "gather":
        return _gather_row(lc, x, index)
    offsets, sizes, strides, dyn_sizes = _row_slice(lc.ins[0])
    off = _row_offset(index, lc.ins[1], lc.ins[0].shape[0])
    return tensor.extract_slice(tensor_type(lc.out, storage=True), x, [off], dyn_sizes, [],
                                offsets, sizes, strides)


def _lower_dynamic_update(lc, x, update, index):
    if lc.options.get("rows") == "gather":
        return _select_row(lc, x, update, index)
    offsets, sizes, strides, dyn_sizes = _row_slice(lc.ins[0])
    off = _row_offset(index, lc.ins[2], lc.ins[0].shape[0])
    return tensor.insert_slice(update, x, [off], dyn_sizes, [], offsets, sizes, strides)


def _clamped_index(b):
    """The mapped index clamped into x's rows, as dynamic_index reads them (a gather would
    read zeros out of range)."""
    n, dtype = b.in_specs[0].shape[0], b.in_specs[-1].dtype
    low = b.emit("ms.minimum", b.inputs[-1], b.const(n - 1, dtype))
    return b.emit("ms.maximum", low, b.const(0, dtype))


def _dynamic_index_batch(b):
    """index unmapped: x's batch dim moved to dim 1, so the row read holds every element's.
    index mapped: a gather of the clamped indices (its own rule batches it)."""
    if b.dims[1] is None:
        return b.emit("ms.dynamic_index", b.moved(b.x, b.dims[0], 1), b.y), 0
    return b.bind("ms.gather", [b.x, _clamped_index(b)], b.dims, axis=0)


define("ms.dynamic_index", ["x", "index"], _dynamic_index_infer, signature=(None, None),
       lower=_lower_dynamic_index,
       grad=each(lambda g, d: g.emit("ms.dynamic_update_index", g.zeros_like(g.x), d, g.y),
                 None), batch=_dynamic_index_batch,
       doc="x[index] along axis 0, for a 0-d integer index known at run time (clamped into "
           "range); a view after bufferization")

def _dynamic_update_batch(b):
    """index unmapped: x's batch dim at 1 and update's first, one row written for all.
    index mapped: update selected into x where a one-hot mask of the clamped rows holds."""
    x, update = b.in_specs[:2]
    if b.dims[2] is None:
        rows = b.materialized(b.x, b.dims[0], at=1)
        return b.emit("ms.dynamic_update_index", rows, b.front(1), b.inputs[2]), 1
    index = b.moved(_clamped_index(b), b.dims[2], 0)
    one = b.const(1, dt.int32)
    hot = b.emit("ms.one_hot", index, one, b.const(0, dt.int32), depth=x.shape[0], axis=-1)
    mask = b.reshape(b.emit("ms.equal", hot, one), (b.size, x.shape[0]) + (1,) * update.rank)
    new = b.reshape(b.front(1), (b.size, 1) + update.shape)
    return b.emit("ms.select", mask, new, b.front(0)), 0


define("ms.dynamic_update_index", ["x", "update", "index"], _dynamic_update_infer,
       signature=("T", "T", None), lower=_lower_dynamic_update,
       grad=each(lambda g, d: g.emit("ms.dynamic_update_index", d,
                                     g.zeros_like(g.inputs[1]), g.inputs[2]),
                 lambda g, d: g.emit("ms.dynamic_index", d, g.inputs[2]), None),
       batch=_dynamic_update_batch,
       doc="x with row `index` (axis 0, clamped into range) replaced by update; in place "
           "after bufferization when x is not used afterwards")


# ------------------------------------------------------------------ reading the IR

def api_name(op) -> str:
    """The API a control-flow op stands for (its ms.api attribute), else its op name."""
    from ..registry import UPSTREAM
    if API_ATTR in op.attributes:
        return ir.StringAttr(op.attributes[API_ATTR]).value
    d = UPSTREAM.get(op.name)
    return d.api if d is not None and d.api else op.name


def _defined_inside(v, op) -> bool:
    owner = v.owner
    parent = owner.owner if isinstance(owner, ir.Block) else owner.operation
    target = op.operation
    while parent is not None:
        if parent == target:
            return True
        parent = parent.parent
    return False


def free_values(op) -> list:
    """Values the ops in `op`'s regions read that are defined outside `op`, in first-use
    order (closed-over Tensors, Parameters, xs)."""
    found, seen = [], set()

    def visit(inner):
        for v in inner.operands:
            if v not in seen:
                seen.add(v)
                if not _defined_inside(v, op):
                    found.append(v)
        return ir.WalkResult.ADVANCE
    for region in op.regions:
        for block in region.blocks:
            for inner in block.operations:
                inner.operation.walk(visit)
    return found


def holds_ms_ops(op) -> bool:
    return any(inner.operation.name.startswith("ms.") for region in op.regions
               for block in region.blocks for inner in block.operations)


def is_float(v) -> bool:
    spec = spec_of(v.type)
    return spec is not None and spec.dtype.is_float


def clone_body(block, mapping):
    """Copies of a region block's ops, its terminator left out, at the current insertion
    point, reading mapping[v] for every v in it (mapping grows with the copies' results).
    Returns (the copies, the terminator's operands as the copies see them)."""
    ops = [o.operation for o in block.operations]
    copies = []
    for op in ops[:-1]:
        copy = op.clone()
        remap_operands(copy, mapping)
        mapping.update(zip(op.results, copy.results))
        copies.append(copy)
    return copies, [mapping.get(v, v) for v in ops[-1].operands]


# ------------------------------------------------------------------ building

def index_tensor(i, dtype=dt.int64):
    """An index value as the 0-d integer tensor ms ops read."""
    scalar = arith.index_cast(ir.IntegerType.get_signless(dtype.bits), i)
    return tensor.from_elements(ir.RankedTensorType.get([], scalar.type), [scalar])


def zeros(spec: TensorSpec, loc=None, sizes_from=None):
    """A fresh tensor of zeros (ms ops, const inputs as attributes). A spec with dynamic
    sizes needs `sizes_from`, (value, axes): dimension i takes the size of axis axes[i] of
    value (-1: the static size in spec), one ms.broadcast_like."""
    zero = constant(np.zeros((), spec.dtype.np), spec.dtype, loc=loc)
    if not spec.shape:
        return zero
    if not has_dynamic(spec.shape):
        return build_op("ms.broadcast_to", [zero], {"shape": spec.shape}, loc=loc).result
    if sizes_from is None:
        raise DynamicDimError(f"zeros of shape {spec.shape} need their sizes at run time")
    like, axes = sizes_from
    static = tuple(-1 if a >= 0 else d for d, a in zip(spec.shape, axes))
    return build_op("ms.broadcast_like", [zero, like], {"shape": static, "axes": tuple(axes)},
                    loc=loc).result


def stack_zeros(trip: int, row, loc=None):
    """Zeros of shape (trip,) + row's shape, row's dynamic sizes read from row itself (a
    loop's stack of a carry whose initial value is row)."""
    spec = spec_of(row.type)
    return zeros(TensorSpec((trip,) + spec.shape, spec.dtype), loc,
                 sizes_from=(row, (-1,) + tuple(range(spec.rank))))


def set_api(op, api: str):
    op.attributes[API_ATTR] = ir.StringAttr.get(api)


def rebuild_for(loop, extra_inits):
    """A new scf.for in `loop`'s place with `extra_inits` appended to its carries: the body
    moves over (its terminator still yields the old carries: the caller extends it), uses of
    the old results read the new ones, and `loop` is erased."""
    with ir.InsertionPoint(loop), loop.location:
        new = scf.ForOp(loop.lowerBound, loop.upperBound, loop.step,
                        list(loop.initArgs) + list(extra_inits))
    for a in list(loop.attributes):
        name = a if isinstance(a, str) else a.name
        new.attributes[name] = loop.attributes[name]
    old_body, body = loop.body, new.body
    for old, arg in zip(old_body.arguments, body.arguments):
        old.replace_all_uses_with(arg)
    for op in list(old_body.operations):
        body.append(op)
    for old, result in zip(loop.results, new.results):
        old.replace_all_uses_with(result)
    loop.erase()
    return new


def extend_yield(block, extra):
    """Replace a block's scf.yield by one that yields `extra` after its operands."""
    term = list(block.operations)[-1]
    with ir.InsertionPoint(term), term.location:
        scf.YieldOp(list(term.operands) + list(extra))
    term.erase()


def iteration_position(loop, iv):
    """(iv - lower) / step: which iteration `iv` is, as an index value."""
    return arith.divui(arith.subi(iv, loop.lowerBound), loop.step)


# ------------------------------------------------------------------ verification

def _check_carries(op) -> str | None:
    """What IRDL-free regions holding ms ops need beyond scf's own verifier: every carry and
    result an ms tensor, no Parameter write inside (MindSpore forbids side effects in the
    bodies of loops and conditionals)."""
    if not holds_ms_ops(op):
        return None
    values = list(op.results) + [a for region in op.regions for block in region.blocks
                                 for a in block.arguments]
    for v in values:
        if isinstance(v.type, ir.IndexType) and op.name == "scf.for":
            continue  # the induction variable
        if spec_of(v.type) is None:
            return (f"holds ms ops, so its results and region arguments must be statically "
                    f"shaped tensors of supported element types, got {v.type}")
    for region in op.regions:
        for block in region.blocks:
            for inner in block.operations:
                if inner.operation.name == "ms.assign":
                    return ("region writes a Parameter (ms.assign): the bodies of loops and "
                            "conditionals must not have side effects")
    if API_ATTR in op.attributes and not isinstance(op.attributes[API_ATTR], ir.StringAttr):
        return f"attribute '{API_ATTR}' must be a string"
    return None


# ------------------------------------------------------------------ lowering

def _to_storage(v, origin):
    spec = spec_of(v.type)
    if spec is None:
        return
    t = tensor_type(spec, storage=True)
    if t != v.type:  # bool and unsigned carries are stored as signless (builders.element_type)
        origin[v] = v.type
        v.set_type(t)


def _lower_region_op(op, origin):
    """The op stays; its carries take their storage types (the ms ops in its regions are
    lowered in place by convert-ms-to-linalg, which records the ms types in `origin`)."""
    _carries_keep_sizes(op, origin)
    for r in op.results:
        _to_storage(r, origin)
    for region in op.regions:
        for block in region.blocks:
            for a in block.arguments:
                _to_storage(a, origin)


def _carries_keep_sizes(op, origin):
    """A loop's carries keep their shapes (the frontend checks each body's), so a dynamic
    size of a carry inside the body and after the loop is its initial value's: the shape
    rules then see the body's `h @ w + x[t]` as sizes of one batch, not fresh unknowns."""
    blocks = [region.blocks[0] for region in op.regions if len(region.blocks)]
    if op.name == "scf.for":  # (lower, upper, step, carries...), body (iv, carries...)
        inits, groups = list(op.operands)[3:], [list(blocks[0].arguments)[1:]]
    elif op.name == "scf.while":  # before and after both take the carries
        inits, groups = list(op.operands), [list(b.arguments) for b in blocks]
    else:
        return
    groups.append(list(op.results))
    specs = [lowering.lowered_spec(v, origin) for v in inits]
    for group in groups:
        for v, init, spec in zip(group, inits, specs):
            if spec is not None and v.type == init.type:
                lowering.note_symbolic(v, spec)


def _lower_extract(op, origin):
    """A bool predicate read from a tensor now stored as i8: read the byte, then test it."""
    source = op.operands[0]
    elem = ir.RankedTensorType(source.type).element_type
    if elem == op.result.type:
        return
    with ir.InsertionPoint(op), op.location:
        byte = tensor.extract(source, list(op.operands)[1:])
        value = arith.trunci(op.result.type, byte)
    op.result.replace_all_uses_with(value)
    op.erase()


# ------------------------------------------------------------------ gradients

def _value_needed(v, loop) -> bool:
    """Whether a rule of the backward reads the value of `v` (a carry of `loop` at some
    iteration): not when it is only yielded by the body, or only the destination of
    dynamic_update_index whose result is again not needed (a stack of ys or of residuals:
    the update's rule does not read it). A yield of a region nested in the body passes the
    value on: that is a use."""
    for use in v.uses:
        owner = use.owner.operation
        if owner.name == "scf.yield" and owner.parent == loop.operation:
            continue
        if (owner.name == "ms.dynamic_update_index" and use.operand_number == 0
                and not _value_needed(owner.results[0], loop)):
            continue
        return True
    return False


def stacks_of(loop) -> list:
    """Per carry of an scf.for, the index of the carry holding its stack, or -1."""
    n = len(loop.initArgs)
    if STACKS_ATTR not in loop.attributes:
        return [-1] * n
    known = list(ir.DenseI64ArrayAttr(loop.attributes[STACKS_ATTR]))
    return known + [-1] * (n - len(known))


def _prepare_for(loop):
    """Extend a forward scf.for (static trip count) with a stack for every carry whose value
    the backward needs: at each iteration the carry is written at the iteration's position
    of a (trip, ...) carry, before the body changes it. Returns the new loop (`loop` is
    erased), or None when there is nothing to store."""
    trip = static_trip_count(loop)
    if not trip:
        return None
    stacks = stacks_of(loop)
    args = list(loop.body.arguments)[1:]
    need = [j for j, a in enumerate(args) if stacks[j] < 0 and _value_needed(a, loop)]
    if not need:
        return None
    loc = loop.location
    with ir.InsertionPoint(loop), loc:
        inits = [stack_zeros(trip, loop.initArgs[j], loc) for j in need]
    n = len(args)
    loop = rebuild_for(loop, inits)
    body = loop.body
    term = list(body.operations)[-1]
    with ir.InsertionPoint(term), loc:
        pos = index_tensor(iteration_position(loop, loop.induction_variable))
        new_args = list(body.arguments)[1:]
        updated = [build_op("ms.dynamic_update_index", [new_args[n + m], new_args[j], pos],
                            loc=loc).result for m, j in enumerate(need)]
    extend_yield(body, updated)
    for m, j in enumerate(need):
        stacks[j] = n + m
    loop.attributes[STACKS_ATTR] = ir.DenseI64ArrayAttr.get(stacks + [-1] * len(need))
    return loop


def _accumulate(acc, g, loc):
    """acc + g; when g is one row written into zeros (the gradient of a dynamic_index of a
    value from above: xs in a Scan), only that row of acc is updated, so a loop of n
    iterations costs n rows, not n full-size adds."""
    owner = g.owner
    if (not isinstance(owner, ir.Block) and owner.operation.name == "ms.dynamic_update_index"
            and not isinstance(owner.operation.operands[0].owner, ir.Block)
            and owner.operation.operands[0].owner.operation.name == "ms.zeros_like"):
        _, row, index = owner.operation.operands
        old = build_op("ms.dynamic_index", [acc, index], loc=loc).result
        new = build_op("ms.add", [old, row], loc=loc).result
        return build_op("ms.dynamic_update_index", [acc, new, index], loc=loc).result
    return build_op("ms.add", [acc, g], loc=loc).result


def _zeros_like(v, loc):
    return build_op("ms.zeros_like", [v], loc=loc).result


def used_values(op) -> list:
    """Operands of `op` and of the ops in its regions."""
    values = list(op.operands)
    for region in op.regions:
        for block in region.blocks:
            for inner in block.operations:
                values += used_values(inner)
    return values


def _carry_flow(loop) -> list:
    """Per carry of an scf.for, the carries its next value depends on (through the body)."""
    args = list(loop.body.arguments)[1:]
    deps = {a: {j} for j, a in enumerate(args)}
    ops = list(loop.body.operations)
    for op in ops[:-1]:
        found = set()
        for v in used_values(op):
            found |= deps.get(v, set())
        for r in op.results:
            deps[r] = found
    return [deps.get(v, set()) for v in ops[-1].operands]


def _live_carries(loop, douts) -> list:
    """The float carries whose cotangent is not zero at every iteration: those with a
    cotangent at the end and those these depend on. A stack of residuals nobody
    differentiates stays out of the backward loop (its cotangent would be zeros of
    trip x its size)."""
    results = list(loop.results)
    floats = {j for j, r in enumerate(results) if is_float(r)}
    live = {j for j in floats if douts[j] is not None}
    flow = _carry_flow(loop)
    pending = list(live)
    while pending:
        for c in flow[pending.pop()]:
            if c in floats and c not in live:
                live.add(c)
                pending.append(c)
    return sorted(live)


def _for_grad(backprop, loop, douts, active):
    """The reverse loop of an scf.for with a static trip count (see the module doc)."""
    trip = static_trip_count(loop)
    if trip is None:
        raise ControlFlowError(
            f"'{api_name(loop)}' with Tensor bounds cannot be differentiated: its trip count "
            "is known only at run time (like a WhileLoop, it is forward only). Use ForiLoop "
            "with int bounds or Scan, whose trip count is static")
    loc = loop.location
    inits, results = list(loop.initArgs), list(loop.results)
    floats = _live_carries(loop, douts)
    if trip == 0:
        return [(inits[j], douts[j]) for j in floats if douts[j] is not None]
    free = [v for v in free_values(loop) if v in active and is_float(v)]
    seeds = [douts[j] if douts[j] is not None else _zeros_like(results[j], loc) for j in floats]
    seeds += [_zeros_like(v, loc) for v in free]
    with loc:
        c = lowering.index_constant
        back = scf.ForOp(c(0), c(trip), c(1), seeds)
    set_api(back, api_name(loop))
    with ir.InsertionPoint(back.body), loc:
        _reverse_body(backprop, loop, back, trip, floats, free)
    res = list(back.results)
    return ([(inits[j], res[a]) for a, j in enumerate(floats)]
            + [(v, res[len(floats) + b]) for b, v in enumerate(free)])


def _reverse_body(backprop, loop, back, trip, floats, free):
    """One backward iteration: the forward iteration trip-1-j, recomputed from its stacked
    carries, then its backward; yields the carries' cotangents and the accumulators."""
    loc = loop.location
    j = back.induction_variable
    k = arith.subi(lowering.index_constant(trip - 1), j)
    i = arith.addi(loop.lowerBound, arith.muli(k, loop.step))
    position = index_tensor(k)
    results = list(loop.results)
    body_args = list(loop.body.arguments)
    mapping = {body_args[0]: i}
    for c, (arg, stack) in enumerate(zip(body_args[1:], stacks_of(loop))):
        # a carry no rule reads (see _value_needed) may stand for any value of its type
        mapping[arg] = (results[c] if stack < 0 else
                        build_op("ms.dynamic_index", [results[stack], position], loc=loc).result)
    copies, yielded = clone_body(loop.body, mapping)
    dargs = list(back.body.arguments)[1:]
    wrt = [mapping[body_args[1 + c]] for c in floats] + free
    grads = backprop(copies, [yielded[c] for c in floats], dargs[:len(floats)], wrt, loc,
                     zeros=False)
    out = [g if g is not None else _zeros_like(w, loc)
           for g, w in zip(grads[:len(floats)], wrt)]
    out += [acc if g is None else _accumulate(acc, g, loc)
            for acc, g in zip(dargs[len(floats):], grads[len(floats):])]
    scf.YieldOp(out)


def _if_grad(backprop, op, douts, active):
    """An scf.if on the same predicate whose branches recompute the forward branch and emit
    its backward; its results are the cotangents of the values the branches read."""
    free = [v for v in free_values(op) if v in active and is_float(v)]
    wanted = [i for i, d in enumerate(douts) if d is not None]
    if not free or not wanted:
        return []
    loc = op.location
    with loc:
        back = scf.IfOp(op.operation.operands[0], [v.type for v in free], has_else=True)
    set_api(back, api_name(op))
    for forward, backward in ((op.then_block, back.then_block), (op.else_block, back.else_block)):
        with ir.InsertionPoint(backward), loc:
            copies, yielded = clone_body(forward, {})
            grads = backprop(copies, [yielded[i] for i in wanted], [douts[i] for i in wanted],
                             free, loc)
            scf.YieldOp(grads)
    return list(zip(free, back.results))


def _while_grad(backprop, op, douts, active):
    raise ControlFlowError(
        f"'{api_name(op)}' cannot be differentiated: its trip count is known only at run "
        "time, so a reverse pass would have to store an unknown number of iterations (JAX's "
        "while_loop is forward only too). Use ForiLoop with int bounds or Scan, whose trip "
        "count is static")


# ------------------------------------------------------------------ the definitions

define_upstream("scf.for", api="ForiLoop", holds_ms=True, verify=_check_carries,
                lower=_lower_region_op, prepare=_prepare_for, grad=_for_grad,
                doc="ForiLoop, Scan: the body reads its index as a 0-d tensor (from_elements "
                    "of the induction variable) and its carries as region arguments")
define_upstream("scf.while", api="WhileLoop", holds_ms=True, verify=_check_carries,
                lower=_lower_region_op, grad=_while_grad,
                doc="WhileLoop: the before region computes the condition, the after region "
                    "the body; forward only")
define_upstream("scf.if", api="cond", holds_ms=True, verify=_check_carries,
                lower=_lower_region_op, grad=_if_grad,
                doc="cond: both branches yield the same types")
define_upstream("tensor.extract", lower=_lower_extract,
                doc="a predicate or bound read from a 0-d ms tensor")
define_upstream("tensor.from_elements", doc="a loop index as the 0-d tensor ms ops read")

