"""CPU-specific passes: destination-passing entry points and the matmul schedule."""
from mlir import ir
from mlir.dialects import arith, bufferization, func, linalg, memref, tensor
from mlir.dialects.transform import interpreter
from mlir.dialects.transform import structured

from ..dialects.lowering import REGION_ATTR
from .cpu_loops import MIN_PARALLEL_ITERATIONS, loop_ranges
from .base import ModulePass, PatternPass, fail, register
from .transforms import transform_script as _script
from .transforms import vectorize_register_tiles

C_INTERFACE = "llvm.emit_c_interface"


def public_functions(module):
    return [op for op in module.regions[0].blocks[0].operations
            if op.operation.name == "func.func" and len(op.regions[0].blocks)
            and ("sym_visibility" not in op.attributes
                 or ir.StringAttr(op.attributes["sym_visibility"]).value == "public")]


def unshare_inits(fn):
    """Give every user of a `linalg.fill` or `tensor.empty` result its own copy.

    CSE merges identical init tensors (two reductions of one shape share one fill). Then
    eliminate-empty-tensors lets the first result's output buffer stand for the shared
    init, and one-shot bufferization writes the second result into that same buffer: a
    function returning two same-shaped reductions returned the first one twice."""
    for kind in ("linalg.fill", "tensor.empty"):
        found = []

        def visit(op):
            if op.name == kind:
                found.append(op)
            return ir.WalkResult.ADVANCE
        fn.operation.walk(visit)
        for op in found:
            if not len(op.results):  # a fill of a memref: nothing shared to unshare
                continue
            users = []
            for use in op.results[0].uses:
                if use.owner not in users:
                    users.append(use.owner)
            for user in users[1:]:
                copy = op.clone(ip=ir.InsertionPoint(user))
                user.operation.replace_uses_of_with(op.results[0], copy.results[0])


def make_destination_passing(fn):
    """(tensor...) -> (tensor...)  becomes  (memref... inputs, memref... outputs) -> ().

    The caller owns every buffer: inputs are read through `to_tensor restrict` and results
    are materialized into the output buffers, so bufferization needs no result allocation
    and the runtime can hand in (and re-use) numpy arrays."""
    unshare_inits(fn)
    ftype = ir.FunctionType(ir.TypeAttr(fn.attributes["function_type"]).value)
    block = fn.regions[0].blocks[0]
    n_in = len(ftype.inputs)

    def as_memref(t):
        t = ir.RankedTensorType(t)
        return ir.MemRefType.get(t.shape, t.element_type)
    in_memrefs = [block.add_argument(as_memref(t), fn.location) for t in ftype.inputs]
    out_memrefs = [block.add_argument(as_memref(t), fn.location) for t in ftype.results]
    ret = block.operations[len(block.operations) - 1]
    with ir.InsertionPoint.at_block_begin(block), fn.location:
        for old, buf in zip(list(block.arguments)[:n_in], in_memrefs):
            old.replace_all_uses_with(
                bufferization.to_tensor(old.type, buf, restrict=True))
    with ir.InsertionPoint(ret), fn.location:
        for value, buf in zip(ret.operands, out_memrefs):
            bufferization.materialize_in_destination(None, value, buf, restrict=True,
                                                     writable=True)
        func.ReturnOp([])
    ret.erase()
    for _ in range(n_in):
        block.erase_argument(0)
    fn.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(
        [a.type for a in block.arguments], []))
    for name in ("arg_attrs", "res_attrs"):
        if name in fn.attributes:
            del fn.attributes[name]
    fn.attributes[C_INTERFACE] = ir.UnitAttr.get()


@register
class EntryDestinationPassing(ModulePass):
    name = "ms-entry-dps"
    summary = "public functions take their outputs as memref arguments (C interface)"

    def run(self, module):
        functions = public_functions(module)
        for fn in functions:
            check_entry_types(fn)
        for fn in functions:
            make_destination_passing(fn)


def check_entry_types(fn):
    """A public function is an entry the runtime calls with arrays: it must take and return
    ranked tensors (scalars, memrefs or vectors at the boundary have no buffer to pass)."""
    ftype = ir.FunctionType(ir.TypeAttr(fn.attributes["function_type"]).value)
    name = ir.StringAttr(fn.attributes["sym_name"]).value
    for kind, types in (("argument", ftype.inputs), ("result", ftype.results)):
        for i, t in enumerate(types):
            if not isinstance(t, ir.RankedTensorType):
                fail(fn, f"entry function '{name}' {kind} #{i} has type {t}; entry functions "
                         "take and return ranked tensors")


KERNEL_ATTR = "ms.kernel"


def outline(ops, name: str, kind: str, module_block):
    """Move `ops` (in block order) into a private function carrying `ms.kernel = kind` and
    call it: values they use from outside become its arguments, values used after them its
    results. A kernel function is scheduled on its own: a transform applied to it cannot
    touch the rest of the program."""
    inside = {op for op in ops}
    args, seen = [], set()
    for op in ops:
        for v in op.operands:
            owner = v.owner
            if (isinstance(owner, ir.Block) or owner.operation not in inside) and v not in seen:
                seen.add(v)
                args.append(v)
    results = [r for op in ops for r in op.results
               if any(u.owner.operation not in inside for u in r.uses)]
    loc = ops[-1].location
    with ir.InsertionPoint(module_block), loc:
        fn = func.FuncOp(name, ([v.type for v in args], [r.type for r in results]),
                         visibility="private")
        fn.attributes[KERNEL_ATTR] = ir.StringAttr.get(kind)
        entry = fn.add_entry_block()
    remap = dict(zip(args, entry.arguments))
    with ir.InsertionPoint(entry), loc:
        for op in ops:
            copy = op.clone()
            for i, v in enumerate(copy.operands):
                if v in remap:
                    copy.operands[i] = remap[v]
            remap.update(zip(op.results, copy.results))
        func.ReturnOp([remap[r] for r in results])
    with ir.InsertionPoint(ops[-1]), loc:
        call = func.CallOp([r.type for r in results], ir.FlatSymbolRefAttr.get(name), args)
    for old, new in zip(results, call.results):
        old.replace_all_uses_with(new)
    for op in reversed(ops):
        op.erase()


# Ops of a fused matmul region that stay with the caller: its output's allocation and
# initialization (so that the kernel's result is the caller's buffer: no copy).
_CALLER_SIDE = {"tensor.empty", "linalg.fill", "arith.constant"}


def kernel_ops(matmul):
    """The matmul and, when it anchors a fused region, the region's other linalg ops (its
    epilogue), in block order."""
    region = matmul.attributes[REGION_ATTR] if REGION_ATTR in matmul.attributes else None
    if region is None:
        return [matmul]
    return [op.operation for op in matmul.operation.block.operations
            if REGION_ATTR in op.attributes and op.attributes[REGION_ATTR] == region
            and op.operation.name not in _CALLER_SIDE]


_TRANSPOSED_A = "(d0, d1, d2) -> (d2, d0)"
_TRANSPOSED_B = "(d0, d1, d2) -> (d1, d2)"


def _transposed(value):
    t = ir.RankedTensorType(value.type)
    out = tensor.empty(list(reversed(t.shape)), t.element_type)
    return linalg.transpose(value, outs=[out], permutation=[1, 0]).results[0]


def materialize_transposes(op, rewriter):
    """linalg.matmul reading A or B transposed (ms.matmul's transpose_a/b folded into its
    indexing maps) -> one transpose copy and a plain matmul: the CPU schedule vectorizes along
    contiguous rows of B, and a strided B ran 2.4x slower (x @ W^T of a Dense layer)."""
    if "indexing_maps" not in op.attributes:
        return True  # did not match: already the plain form
    maps = [str(ir.AffineMapAttr(m).value) for m in ir.ArrayAttr(op.attributes["indexing_maps"])]
    a_t, b_t = maps[0] == _TRANSPOSED_A, maps[1] == _TRANSPOSED_B
    if not (a_t or b_t):
        return True  # did not match: no transposed operand
    keep = {n: op.attributes[n] for n in op.attributes
            if n not in ("indexing_maps", "operandSegmentSizes")}
    with rewriter.ip, op.location:
        a, b, c = op.operands
        new = linalg.matmul(_transposed(a) if a_t else a, _transposed(b) if b_t else b, outs=[c])
        new_op = new.owner
        for name, attr in keep.items():
            new_op.attributes[name] = attr
    rewriter.replace_op(op, [new])


@register
class MaterializeTransposes(PatternPass):
    name = "ms-cpu-materialize-transposes"
    summary = "matmuls with transposed operands read a transposed copy instead (CPU)"
    patterns = {"linalg.matmul": materialize_transposes}


@register
class OutlineMatmul(ModulePass):
    name = "ms-outline-matmul"
    summary = "move each linalg.matmul, with its fused epilogue, into its own kernel function"
    # epilogues=false leaves a fused epilogue in the caller (the CUDA target maps it to a
    # kernel of its own: its matmul schedule tiles the product alone).
    options = {"epilogues": True}

    def run(self, module):
        block = module.regions[0].blocks[0]
        for fn in [op for op in block.operations if op.operation.name == "func.func"
                   and KERNEL_ATTR not in op.attributes]:
            fn_name = ir.StringAttr(fn.attributes["sym_name"]).value
            matmuls = []

            def find(op):
                if op.name == "linalg.matmul":
                    matmuls.append(op)
                return ir.WalkResult.ADVANCE
            fn.operation.walk(find)
            for i, op in enumerate(matmuls):
                ops = kernel_ops(op) if self.opts["epilogues"] else [op.operation]
                outline(ops, f"{fn_name}__matmul{i}", "matmul", block)


# Register tile: MR x NR accumulators (16 zmm for f32) stay in registers across k.
MR, NR_BYTES = 8, 128
# Cache tiles: an MC x NC block of C per thread, K in KC-deep panels.
MC, NC, KC = 64, 256, 256


def _apply(target, script, what):
    mod, seq = script
    try:
        interpreter.apply_named_sequence(target, seq, mod)
    except ValueError as e:
        fail(target, f"{what} failed: {str(e).splitlines()[-1]}")


def _largest_tile(size, unit, limit):
    """The largest multiple of `unit` that divides `size` and is at most `limit` (the whole
    size when it is smaller than one unit)."""
    if size <= unit:
        return size
    best = unit
    for t in range(unit, min(size, limit) + 1, unit):
        if size % t == 0:
            best = t
    return best


def _elem_bytes(op):
    t = ir.MemRefType(op.operands[len(op.operands) - 1].type).element_type
    return max(1, getattr(t, "width", 32) // 8)


def split_script(dimension, chunk):
    return _script(lambda root: structured.SplitOp(root, dimension, chunk))


# Matmuls with fewer flops than this run on one thread: a fork and join costs a few
# microseconds. (The training step's 2.6 MFLOP products, ~20 us on one thread, saved ~40 us per
# step on two threads, even on a loaded machine.)
MIN_PARALLEL_FLOPS = 1 << 21


def tile_matmul_script(tm, tn, tk, mr, nr, parallel):
    def build(root):
        if parallel:  # threads share the C tiles (scf.forall -> OpenMP)
            tiled = structured.TileUsingForallOp(root, tile_sizes=[tm, tn]).tiled_op
        else:
            tiled = structured.TileUsingForOp(root, sizes=[tm, tn]).tiled_linalg_op
        panel = structured.TileUsingForOp(tiled, sizes=[0, 0, tk])
        structured.TileUsingForOp(panel.tiled_linalg_op, sizes=[mr, nr, 1])
    return _script(build)


def tile_epilogue_script(rows, cols, parallel):
    def build(root):
        if parallel:
            tiled = structured.TileUsingForallOp(root, tile_sizes=[rows, 0]).tiled_op
        else:
            tiled = root
        structured.TileUsingForOp(tiled, sizes=[1, cols])
    return _script(build)


def vectorize_script():
    return _script(vectorize_register_tiles)


def _ops(fn, name):
    found = []

    def visit(op):
        if op.name == name:
            found.append(op)
        return ir.WalkResult.ADVANCE
    fn.operation.walk(visit)
    return found


def matmul_ranges(op):
    """(m, n, k) of a linalg.matmul on static memrefs, whatever its indexing maps."""
    if "indexing_maps" in op.attributes:
        return loop_ranges(op, op.attributes["indexing_maps"])[0]
    (m, k), (_, n) = (ir.MemRefType(v.type).shape for v in list(op.operands)[:2])
    return [m, n, k]


# B is packed when its rows are a multiple of this many bytes apart: a K-panel's rows then
# fall into a few L2 sets and evict each other (1024^3: ~365 GFLOP/s unpacked, ~480 packed,
# the copy included; 256x1024x256 with B^T: 335-835 us -> 315 us)...
PACK_ROW_BYTES = 4096
# ...when A has enough rows to amortize the copy of B (one pass over B per call), and the
# K-panels are deep enough to conflict (64x1024x64 was slower packed: 27 -> 29-105 us).
PACK_MIN_ROWS = 128
PACK_MIN_DEPTH = 128


def _plain_matmul(op) -> bool:
    if "indexing_maps" not in op.attributes:
        return True
    maps = [str(ir.AffineMapAttr(m).value) for m in ir.ArrayAttr(op.attributes["indexing_maps"])]
    return maps == ["(d0, d1, d2) -> (d0, d2)", "(d0, d1, d2) -> (d2, d1)",
                    "(d0, d1, d2) -> (d0, d1)"]


def _should_pack(mm, nr) -> bool:
    a, b, _ = (ir.MemRefType(v.type) for v in mm.operands)
    if not (_plain_matmul(mm) and a.has_static_shape and b.has_static_shape):
        return False
    k, n = b.shape
    return (n % nr == 0 and n > nr and (n * _elem_bytes(mm)) % PACK_ROW_BYTES == 0
            and a.shape[0] >= PACK_MIN_ROWS and k >= PACK_MIN_DEPTH)


def _calls_of(module_block, fn):
    name = ir.StringAttr(fn.attributes["sym_name"]).value
    found = []

    def visit(op):
        if op.name == "func.call" and ir.FlatSymbolRefAttr(op.attributes["callee"]).value == name:
            found.append(op)
        return ir.WalkResult.ADVANCE
    for other in module_block.operations:
        if other.operation.name == "func.func" and other != fn:
            other.operation.walk(visit)
    return found


def pack_b(module_block, fn, mm, nr) -> bool:
    """C += A B with B (K x N) read from a copy packed into strips of nr columns,
    Bp[N/nr][K][nr], so that register tiles read B contiguously. The caller packs (a
    linalg.transpose of B's expand_shape into a buffer freed after the call; parallel loops
    make it a parallel copy) and passes Bp for B and C as C[M][N/nr][nr]; the product becomes
    a linalg.generic over (i, strip, column, k). Only where B and C are kernel arguments that
    only the matmul uses (no epilogue), with one call. (A view of C made inside the kernel
    sent the vectorization's alias folding into an endless loop, or, as a reinterpret_cast,
    kept C's register tile from staying in registers.)"""
    a, b, c = mm.operands
    calls = _calls_of(module_block, fn)
    if (len(calls) != 1 or any(not isinstance(v.owner, ir.Block) or len(list(v.uses)) != 1
                               for v in (b, c))):
        return False
    (m, k), n = ir.MemRefType(a.type).shape, ir.MemRefType(b.type).shape[1]
    elem = ir.MemRefType(b.type).element_type
    packed = ir.MemRefType.get([n // nr, k, nr], elem)
    strips = ir.MemRefType.get([m, n // nr, nr], elem)
    call = calls[0]
    bi, ci = b.arg_number, c.arg_number
    with ir.InsertionPoint(call), call.location:
        bp = memref.alloc(packed, [], [], alignment=64)
        bv = memref.expand_shape(ir.MemRefType.get([k, n // nr, nr], elem), call.operands[bi],
                                 [[0], [1, 2]], [], [k, n // nr, nr])
        linalg.transpose(bv, outs=[bp], permutation=[1, 0, 2])
        cv = memref.expand_shape(strips, call.operands[ci], [[0], [1, 2]], [], [m, n // nr, nr])
    call.operands[bi] = bp
    call.operands[ci] = cv
    with ir.InsertionPoint.after(call), call.location:
        memref.dealloc(bp)
    b.set_type(packed)
    c.set_type(strips)
    ftype = ir.FunctionType(ir.TypeAttr(fn.attributes["function_type"]).value)
    inputs = list(ftype.inputs)
    inputs[bi], inputs[ci] = packed, strips
    fn.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(inputs, ftype.results))
    loc = mm.location
    with ir.InsertionPoint(mm), loc:
        maps = [ir.Attribute.parse(f"affine_map<(i, s, j, k) -> ({e})>")
                for e in ("i, k", "s, k, j", "i, s, j")]
        kinds = [ir.Attribute.parse(f"#linalg.iterator_type<{t}>")
                 for t in ("parallel", "parallel", "parallel", "reduction")]
        gen = linalg.GenericOp([], [a, b], [c], ir.ArrayAttr.get(maps), ir.ArrayAttr.get(kinds))
        if REGION_ATTR in mm.attributes:
            gen.attributes[REGION_ATTR] = mm.attributes[REGION_ATTR]
        gen.attributes[PACKED_ATTR] = ir.UnitAttr.get()
        body = gen.regions[0].blocks.append(elem, elem, elem)
    with ir.InsertionPoint(body), loc:
        x, y, acc = body.arguments
        linalg.YieldOp([arith.addf(acc, arith.mulf(x, y))])
    mm.erase()
    return True


PACKED_ATTR = "ms.packed_b"  # a product made by pack_b (kept by its tiles and split pieces)


def _is_packed(op) -> bool:
    """A product made by pack_b, not yet tiled (at the kernel's top level)."""
    return PACKED_ATTR in op.attributes and op.parent.name == "func.func"


def tile_packed_script(tm, strips, tk, mr, nr, parallel):
    """tile_matmul_script for pack_b's generic: loops (i, strip, column, k)."""
    def build(root):
        if parallel:
            tiled = structured.TileUsingForallOp(root, tile_sizes=[tm, strips]).tiled_op
        else:
            tiled = structured.TileUsingForOp(root, sizes=[tm, strips]).tiled_linalg_op
        panel = structured.TileUsingForOp(tiled, sizes=[0, 0, 0, tk])
        structured.TileUsingForOp(panel.tiled_linalg_op, sizes=[mr, 1, nr, 1])
    return _script(build)


@register
class CpuMatmulSchedule(ModulePass):
    name = "ms-cpu-matmul-schedule"
    summary = ("tile (threads, cache, registers) and vectorize matmul kernels and their "
               "epilogues (transform dialect); ragged edges are split off as static pieces")

    def run(self, module):
        block = module.regions[0].blocks[0]
        kernels = [op for op in block.operations if op.operation.name == "func.func"
                   and KERNEL_ATTR in op.attributes
                   and ir.StringAttr(op.attributes[KERNEL_ATTR]).value == "matmul"]
        scripts = {}

        def script(key, make):
            if key not in scripts:
                scripts[key] = make()
            return scripts[key]

        for fn in kernels:
            if not _ops(fn, "linalg.matmul"):
                continue  # folded away (an epilogue that ignores the product): plain loops
            nr = max(8, NR_BYTES // _elem_bytes(_ops(fn, "linalg.matmul")[0]))
            for mm in _ops(fn, "linalg.matmul"):
                if _should_pack(mm, nr):
                    pack_b(block, fn, mm, nr)
            # Split off the rows and columns beyond the last full register tile, so that
            # every piece has static tile shapes (dynamic tiles would not vectorize). (Packed
            # products have whole strips of columns.)
            for dim, unit in ((0, MR), (1, nr)):
                products = _ops(fn, "linalg.matmul")
                if dim == 0:
                    products += [op for op in _ops(fn, "linalg.generic") if _is_packed(op)]
                for mm in products:
                    size = (loop_ranges(mm)[0][0] if mm.name == "linalg.generic"
                            else matmul_ranges(mm)[dim])
                    if size > unit and size % unit:
                        _apply(mm, script(("split", dim, size // unit * unit),
                                          lambda: split_script(dim, size // unit * unit)),
                               "matmul split")
            for mm in _ops(fn, "linalg.matmul"):
                m, n, k = matmul_ranges(mm)
                tiles = (_largest_tile(m, MR, MC), _largest_tile(n, nr, NC), min(k, KC),
                         min(m, MR), min(n, nr), 2 * m * n * k >= MIN_PARALLEL_FLOPS)
                _apply(mm, script(("tile",) + tiles, lambda: tile_matmul_script(*tiles)),
                       "matmul tiling")
            for gen in [op for op in _ops(fn, "linalg.generic") if _is_packed(op)]:
                m, strips, nr_, k = loop_ranges(gen)[0]
                tiles = (_largest_tile(m, MR, MC), _largest_tile(strips * nr_, nr_, NC) // nr_,
                         min(k, KC), min(m, MR), nr_,
                         2 * m * strips * nr_ * k >= MIN_PARALLEL_FLOPS)
                _apply(gen, script(("packed",) + tiles, lambda: tile_packed_script(*tiles)),
                       "matmul tiling")
            for ep in _ops(fn, "linalg.generic"):
                ranges = loop_ranges(ep)
                if ranges is None or len(ranges[0]) != 2:
                    continue
                rows, cols = ranges[0]
                tiles = (max(1, -(-rows // 8)), _largest_tile(cols, 1, 64),
                         rows * cols >= MIN_PARALLEL_ITERATIONS)
                _apply(ep, script(("epilogue",) + tiles, lambda: tile_epilogue_script(*tiles)),
                       "epilogue tiling")
            _apply(fn, script("vectorize", vectorize_script), "matmul vectorization")
