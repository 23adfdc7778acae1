"""Small readers and writers of MLIR structure that the passes share.

The Python bindings expose most attributes only as generic `ir.Attribute`s: reading a
function's name is `ir.StringAttr(fn.attributes["sym_name"]).value`, a linalg op's loop kinds
are only available as text (`#linalg.iterator_type<parallel>`: the bindings have no attribute
class for them). Written once here, each of these has one meaning and one place to fix.

(Several would belong with dialects/builders.py; they live in passes/ because only passes use them.)
"""
from __future__ import annotations

import math
import os

from . import capi
from .lazy import ir

# ------------------------------------------------------------------ symbols and functions


def symbol_name(op) -> str:
    """The `sym_name` of a symbol op (func.func, gpu.module, memref.global, ...)."""
    return ir.StringAttr(op.attributes["sym_name"]).value


def set_symbol_name(op, name: str):
    op.attributes["sym_name"] = ir.StringAttr.get(name)


def symbol_names(module) -> set[str]:
    """The names of the symbols directly in a module's body (functions, globals)."""
    return {ir.StringAttr(op.attributes["sym_name"]).value
            for op in module.operation.regions[0].blocks[0].operations
            if "sym_name" in op.operation.attributes}


def unique_symbol(taken: set[str], name: str) -> str:
    """`name`, or `name_<n>` with the first n that is not in `taken` (the names a pass may
    not reuse: a module's symbol_names), which gains it. A pass naming what it makes after
    its source (`f__loop0`) met a symbol of that name in the input: two definitions, an
    invalid module (and an abort in MLIR's symbol table after)."""
    unique, n = name, 0
    while unique in taken:
        n += 1
        unique = f"{name}_{n}"
    taken.add(unique)
    return unique


def passthrough(fn) -> list:
    """The LLVM function attributes a func.func or llvm.func passes through (its
    `passthrough` array: names, or [key, value] pairs)."""
    if "passthrough" not in fn.attributes:
        return []
    return list(ir.ArrayAttr(fn.attributes["passthrough"]))


def add_passthrough(fn, *names: str):
    """Add the LLVM function attributes `names` to `fn`'s passthrough, those it lacks."""
    kept = passthrough(fn)
    present = {ir.StringAttr(a).value for a in kept if isinstance(a, ir.StringAttr)}
    fn.attributes["passthrough"] = ir.ArrayAttr.get(
        kept + [ir.StringAttr.get(n) for n in names if n not in present])


def is_private(op) -> bool:
    return ("sym_visibility" in op.attributes
            and ir.StringAttr(op.attributes["sym_visibility"]).value == "private")


def is_public(op) -> bool:
    return ("sym_visibility" not in op.attributes
            or ir.StringAttr(op.attributes["sym_visibility"]).value == "public")


def enclosing_module(op):
    """The builtin.module holding `op` (at any depth)."""
    m = op.operation
    while m.name != "builtin.module":
        m = m.parent
    return m


def fresh_symbol(module, base: str) -> str:
    """`base`, or `base_<n>` for the first n the module's symbol table does not have."""
    return unique_symbol(symbol_names(module), base)


def remap_operands(op, mapping):
    """Replace, in `op` and the ops nested in it, every operand found in `mapping` (a copy
    of ops made to read other values: clones, outlined regions)."""
    def visit(inner):
        for i, v in enumerate(inner.operands):
            new = mapping.get(v)
            if new is not None:
                inner.operands[i] = new
        return ir.WalkResult.ADVANCE
    op.operation.walk(visit)


def callee_name(call) -> str:
    """The function a func.call (or a direct llvm.call) calls."""
    return ir.FlatSymbolRefAttr(call.attributes["callee"]).value


def calls_by_callee(root, op_name: str = "func.call") -> dict:
    """{callee name: [the direct calls of it]} for the calls named `op_name` (func.call,
    llvm.call; an indirect call has no callee and is left out) nested in `root`."""
    calls: dict = {}
    for call in ops_of_kind(root, op_name):
        if "callee" in call.attributes:
            calls.setdefault(callee_name(call), []).append(call)
    return calls


def function_type(fn) -> ir.FunctionType:
    return ir.FunctionType(ir.TypeAttr(fn.attributes["function_type"]).value)


def set_function_type(fn, inputs, results):
    fn.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(list(inputs),
                                                                          list(results)))


def top_level_ops(module, op_name: str) -> list:
    """The ops named `op_name` directly in the body of a module (or of another op with one
    single-block region, as gpu.module); ir.Module, ir.Operation or an op view."""
    return [op for op in module.operation.regions[0].blocks[0].operations
            if op.operation.name == op_name]


def functions(module) -> list:
    """The func.func ops of a module (its top level)."""
    return top_level_ops(module, "func.func")


def defined_functions(module, op_name: str = "func.func") -> list:
    """Top-level functions with a body (declarations of external functions have none)."""
    return [op for op in top_level_ops(module, op_name) if len(op.regions[0].blocks)]


def functions_by_name(module) -> dict:
    """Module-level func.func ops by symbol name."""
    return {symbol_name(op): op for op in functions(module)}


def public_functions(module) -> list:
    """The defined public functions of a module: its entries."""
    return [op for op in defined_functions(module) if is_public(op)]


# ------------------------------------------------------------------ walking

def ops_of_kind(root, *names: str, post_order: bool = False) -> list:
    """Every op named one of `names` nested in `root` (at any depth, `root` included), in
    walk order: pre-order, or with `post_order` an op after the ops it contains."""
    skip = _skip_linalg_bodies(names) if not post_order else ir.WalkResult.ADVANCE
    search = _native_search()
    if search is not None and len(names) <= MAX_SEARCH_NAMES:
        return search(root, names, skip == ir.WalkResult.SKIP, post_order, False)
    found = []
    advance = ir.WalkResult.ADVANCE

    def visit(op):
        name = op.name
        if name in names:
            found.append(op)
        return skip if name.startswith("linalg.") else advance
    order = ir.WalkOrder.POST_ORDER if post_order else ir.WalkOrder.PRE_ORDER
    root.operation.walk(visit, order)
    return found


def has_op_of_kind(root, *names: str) -> bool:
    """Whether an op named one of `names` is nested in `root` (the walk stops at the first)."""
    skip = _skip_linalg_bodies(names)
    search = _native_search()
    if search is not None and len(names) <= MAX_SEARCH_NAMES:
        return bool(search(root, names, skip == ir.WalkResult.SKIP, False, True))
    found = [False]
    advance = ir.WalkResult.ADVANCE

    def visit(op):
        name = op.name
        if name in names:
            found[0] = True
            return ir.WalkResult.INTERRUPT
        return skip if name.startswith("linalg.") else advance
    root.operation.walk(visit)
    return found[0]


def _native_search():
    """The searches' walk in C (dialects/_walk.c, ~10x faster: the bindings' walk wraps
    every op for a Python callback), as search(root, names, skip_linalg_bodies, post_order,
    first_only) -> [ir.Operation]; None where the extension was not built.
    MSCC_PYTHON_WALK=1 keeps the Python walk (tests compare the two)."""
    if os.environ.get(PYTHON_WALK_ENV) == "1":
        return None
    find = capi.native_search()
    if find is None:
        return None
    create = ir.Operation._CAPICreate

    def search(root, names, skip_linalg_bodies, post_order, first_only):
        return [create(c) for c in find(root.operation._CAPIPtr, names, skip_linalg_bodies,
                                        post_order, first_only)]
    return search


PYTHON_WALK_ENV = "MSCC_PYTHON_WALK"
MAX_SEARCH_NAMES = 32  # names one native search takes (_walk.c's MAX_NAMES); more: Python's


# What a linalg op's region holds is its scalar body (arith, math, tensor.extract,
# linalg.yield, linalg.index...), never these: a search for them skips linalg bodies, which
# were ~a fifth of the ops the passes' searches visited (a ViT step: 6.6K of 36K).
_OUTSIDE_LINALG_BODIES = ("func.", "scf.", "ms.", "gpu.", "memref.alloc", "memref.dealloc",
                          "tensor.empty")


def _skip_linalg_bodies(names):
    """What a (pre-order) search for `names` returns at a linalg op: SKIP its body when none
    of them can be in one."""
    def outside(name):
        if name.startswith("linalg."):
            return name not in ("linalg.yield", "linalg.index")
        return name.startswith(_OUTSIDE_LINALG_BODIES)
    return ir.WalkResult.SKIP if all(map(outside, names)) else ir.WalkResult.ADVANCE


def nested_blocks(op) -> list:
    """The blocks of the control-flow regions inside `op` (at any depth, not those of
    ms.fused), innermost first."""
    from .registry import UPSTREAM
    found = []

    def visit(inner):
        if inner.operation.name in UPSTREAM and UPSTREAM[inner.operation.name].holds_ms:
            for region in inner.regions:
                found.extend(region.blocks)
        return ir.WalkResult.ADVANCE
    op.operation.walk(visit, ir.WalkOrder.POST_ORDER)
    return found


def ms_blocks(module, inner_first: bool = False) -> list:
    """The blocks holding a module's ms ops: each function's body and the blocks of the
    control-flow regions in it (nested_blocks), those inner blocks first with `inner_first`."""
    blocks = []
    for fn in functions(module):
        outer, inner = list(fn.regions[0].blocks), nested_blocks(fn)
        blocks += inner + outer if inner_first else outer + inner
    return blocks


def called_in_parallel(calls) -> bool:
    """Whether one of `calls` (a function's func.call ops) is inside a parallel loop (a
    convolution's loop over images): the loop's threads already share the work, so the
    function's own loops stay sequential."""
    return any(in_parallel_loop(call) for call in calls)


def in_parallel_loop(op) -> bool:
    """Whether `op` is nested in an scf.forall or scf.parallel of its function: the loop's
    threads already share the work, so what is inside stays on one thread."""
    parent = op.operation.parent
    while parent is not None and parent.name != "func.func":
        if parent.name in ("scf.forall", "scf.parallel"):
            return True
        parent = parent.parent
    return False


# ------------------------------------------------------------------ linalg structure

PARALLEL, REDUCTION = "parallel", "reduction"


def iterator_kinds(op) -> list[str]:
    """"parallel" or "reduction" per loop of a linalg op with `iterator_types`."""
    return [str(a).split("<")[-1].rstrip(">")
            for a in ir.ArrayAttr(op.attributes["iterator_types"])]


def iterator_types_attr(kinds) -> ir.ArrayAttr:
    """The `iterator_types` attribute for a list of "parallel" / "reduction"."""
    return ir.ArrayAttr.get([ir.Attribute.parse(f"#linalg.iterator_type<{k}>") for k in kinds])


def indexing_maps(op, attr=None) -> list[ir.AffineMap]:
    """The indexing maps of a linalg op (or of the `indexing_maps` attribute `attr`)."""
    attr = op.attributes["indexing_maps"] if attr is None else attr
    return [ir.AffineMapAttr(a).value for a in ir.ArrayAttr(attr)]


def projection(n_dims: int, dims, context=None) -> ir.AffineMap:
    """(d0, ..., d{n_dims-1}) -> (d{dims[0]}, d{dims[1]}, ...)."""
    return ir.AffineMap.get(n_dims, 0, [ir.AffineDimExpr.get(d, context=context) for d in dims],
                            context=context)


def constant_int(value) -> int | None:
    """The integer an arith.constant of an integer or index type gives `value`, else None."""
    owner = value.owner
    if isinstance(owner, ir.Block) or owner.operation.name != "arith.constant":
        return None
    attr = owner.operation.attributes["value"]
    return ir.IntegerAttr(attr).value if isinstance(attr, ir.IntegerAttr) else None


def static_trip_count(loop) -> int | None:
    """The number of iterations of an scf.for whose bounds and step are constants, else
    None."""
    lb, ub, step = (constant_int(v) for v in list(loop.operation.operands)[:3])
    if None in (lb, ub, step) or step <= 0:
        return None
    return max(0, -(-(ub - lb) // step))


def is_identity_map(m: ir.AffineMap) -> bool:
    return m == ir.AffineMap.get_identity(m.n_dims, context=m.context)


def uses_dim(expr: ir.AffineExpr, dim: int) -> bool:
    """Whether an affine expression depends on loop dimension `dim`."""
    expr = expr.maybe_downcast()
    if isinstance(expr, ir.AffineDimExpr):
        return expr.position == dim
    if isinstance(expr, ir.AffineBinaryExpr):
        return uses_dim(expr.lhs, dim) or uses_dim(expr.rhs, dim)
    return False


def loop_sizes(maps, operands) -> list:
    """The size of every loop of a linalg op, read from the shapes of its memref operands
    through their indexing maps: a loop that indexes a dimension directly has that
    dimension's size (a static one preferred over a dynamic one); None for a loop no memref
    dimension gives."""
    sizes = [None] * (maps[0].n_dims if maps else 0)
    for value, amap in zip(operands, maps):
        if not isinstance(value.type, ir.MemRefType):
            continue
        for expr, size in zip(amap.results, ir.MemRefType(value.type).shape):
            expr = expr.maybe_downcast()
            if not isinstance(expr, ir.AffineDimExpr):
                continue
            known = sizes[expr.position]
            if known is None or (ir.ShapedType.is_dynamic_size(known)
                                 and not ir.ShapedType.is_dynamic_size(size)):
                sizes[expr.position] = size
    return sizes


def identity_layout(t) -> bool:
    """A memref type without a layout (or with the identity map): contiguous from offset 0."""
    mt = ir.MemRefType(t)
    layout = mt.layout
    return (isinstance(layout, ir.AffineMapAttr)
            and layout.value == ir.AffineMap.get_identity(mt.rank, context=mt.context))


# Ops whose result is a view of their first operand's buffer (no copy).
MEMREF_VIEWS = ("memref.subview", "memref.expand_shape", "memref.collapse_shape",
                "memref.cast", "memref.reinterpret_cast")


def defined_before(value, op, position: dict) -> bool:
    """Whether `value` exists at `op` (a block argument, or made by an op before it;
    `position`: the block's ops by index, ops outside it counted as before)."""
    owner = value.owner
    if isinstance(owner, ir.Block):
        return True
    index = position.get(owner.operation)
    return index is None or index < position[op]


def view_root(value):
    """The buffer a memref value views (through subviews, reshapes and casts): an
    allocation's result or a block argument."""
    while not isinstance(value.owner, ir.Block) and value.owner.operation.name in MEMREF_VIEWS:
        value = value.owner.operation.operands[0]
    return value


def may_alias(a, b) -> bool:
    """Whether two root buffers (view_root) may be one: the same value, or block arguments
    other than a function's (a function's arguments are distinct buffers, One-Shot
    Bufferize's assumption too; a loop's buffer arguments may be anything)."""
    if a == b:
        return True
    return any(isinstance(r.owner, ir.Block) and r.owner.owner is not None
               and r.owner.owner.operation.name != "func.func" for r in (a, b))


def collapsed_strides(view_type, groups):
    """The static strides of a memref type collapsed by `groups` (runs of its dims), or None
    where a group is not contiguous or a stride is dynamic (dims of size 1 aside)."""
    strides, _ = view_type.get_strides_and_offset()
    shape, dynamic = view_type.shape, ir.ShapedType.get_dynamic_stride_or_offset()
    out = []
    for group in groups:
        kept = [d for d in group if shape[d] != 1] or group[:1]  # (as MLIR infers)
        if any(strides[d] == dynamic for d in kept):
            return None
        for outer, inner in zip(kept, kept[1:]):
            if strides[outer] != strides[inner] * shape[inner]:
                return None
        out.append(strides[kept[-1]])
    return out


def collapsed_type(view_type, groups, shape=None):
    """The type memref.collapse_shape gives a static-stride `view_type` collapsed by `groups`
    (of `shape`, the groups' sizes multiplied by default): the identity layout for a source
    of the identity layout, else a strided one (even one equal to the identity), or None
    where a group is not contiguous."""
    strides = collapsed_strides(view_type, groups)
    if strides is None:
        return None
    if shape is None:
        shape = [math.prod(view_type.shape[d] for d in g) for g in groups]
    element, offset = view_type.element_type, view_type.get_strides_and_offset()[1]
    if identity_layout(view_type):
        return ir.MemRefType.get(list(shape), element)
    return ir.MemRefType.get(list(shape), element, ir.StridedLayoutAttr.get(offset, strides))


def aligned_pointer(buffer, loc):
    """An !llvm.ptr to the first element of an identity-layout memref (its aligned pointer:
    offset 0)."""
    from mlir.dialects import arith, memref
    from .upstream import llvm
    index = memref.extract_aligned_pointer_as_index(buffer, loc=loc)
    i64 = ir.IntegerType.get_signless(64)
    with loc:
        return llvm.int_to_ptr(arith.index_cast(i64, index))


def element_bytes(t: ir.Type) -> int:
    """Bytes of one element of a shaped type (at least 1: i1 is stored as a byte)."""
    return max(1, getattr(ir.ShapedType(t).element_type, "width", 32) // 8)
