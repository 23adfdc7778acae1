"""CUDA passes: linalg on memrefs to gpu.launch kernels.

- ms-gpu-matmul-schedule: each matmul kernel function (ms.kernel = "matmul", see
  passes/outline.py) tiled for shared memory with the transform dialect: a block per
  BMxBN tile of C, a loop over K in BK steps whose A and B tiles are promoted to workgroup
  memory and copied by all threads, a TMxTN sub-tile of C per thread. Shapes the tiles do not
  divide stay linalg.matmul and become thread-reduction kernels (passes/gpu_kernels.py).
- ms-gpu-map-linalg: every other linalg op (generalized) and every non-contiguous memref.copy
  of a host function becomes one gpu.launch (passes/gpu_kernels.py chooses the mapping).
"""
from __future__ import annotations

from mlir import ir
from mlir.dialects import memref, transform
from mlir.dialects.transform import gpu as tgpu
from mlir.dialects.transform import structured

from . import gpu_kernels
from ..dialects.ops.indexing import SCATTER_ADD_ATTR
from .base import ModulePass, fail, register
from ..dialects.ir_helpers import (identity_layout, ops_of_kind, public_functions, set_symbol_name,
                         symbol_name, top_level_ops)
from .outline import kernel_functions
from .transforms import apply_script, transform_script, vectorize_register_tiles

WORKGROUP = "#gpu.address_space<workgroup>"


# ------------------------------------------------------------------ matmul

class MatmulTiles:
    """One shared-memory tiling: BM x BN per block, BK per step, (TY, TX) threads."""

    def __init__(self, bm, bn, bk, threads=(16, 16)):
        self.bm, self.bn, self.bk, self.threads = bm, bn, bk, threads

    def fits(self, m, n, k):
        return m % self.bm == 0 and n % self.bn == 0 and k % self.bk == 0

    def __repr__(self):
        return f"MatmulTiles({self.bm}x{self.bn}x{self.bk}, threads={self.threads})"


# Largest first: 128x128 gives each of the 256 threads an 8x8 tile of C (8 FMAs per shared
# load); smaller tiles keep more blocks busy on small matrices.
MATMUL_TILES = (MatmulTiles(128, 128, 16), MatmulTiles(64, 64, 16), MatmulTiles(32, 32, 16))
# Enough blocks to occupy every SM of a large GPU (132 on an H100/H200) once.
MIN_BLOCKS = 128


def matmul_tiles(m, n, k):
    """The largest tiling that divides the problem and still gives MIN_BLOCKS blocks, else
    the one giving the most blocks; None when no tiling divides it."""
    fitting = [t for t in MATMUL_TILES if t.fits(m, n, k)]
    for t in fitting:
        if (m // t.bm) * (n // t.bn) >= MIN_BLOCKS:
            return t
    return fitting[-1] if fitting else None


def matmul_schedule(tiles: MatmulTiles, map_to_gpu: bool = True):
    """Transform script applied to one matmul kernel function (see the module docstring).

    map_nested_forall_to_threads puts a barrier after each thread loop: after the copies
    (tiles complete before use) and after the product (tiles consumed before the next copy).
    Then, as on the CPU (passes/cpu.py, passes/transforms.py), the function is vectorized and the thread's C tile
    hoisted out of the K loop: it stays in registers for the whole product, and each step
    is outer products of an A column and a B row read from shared memory.

    Without `map_to_gpu` the block and thread loops stay scf.forall and the tiles are in
    ordinary memory: run as sequential loops, that is the same computation (a barrier between
    sibling thread loops is what sequential execution gives), which lets the tests check the
    tiling's numerics on the CPU."""
    any_op = transform.AnyOpType.get()
    ty, tx = tiles.threads

    def build(kernel):
        mm = structured.MatchOp.match_op_names(kernel, ["linalg.matmul"]).result
        blocks = structured.TileUsingForallOp(
            mm, tile_sizes=[tiles.bm, tiles.bn],
            mapping=ir.Attribute.parse("[#gpu.block<y>, #gpu.block<x>]"))
        ksteps = structured.TileUsingForOp(blocks.tiled_op, sizes=[0, 0, tiles.bk])
        promoted = structured.PromoteOp(
            any_op, ksteps.tiled_linalg_op, operands_to_promote=[0, 1],
            memory_space=ir.Attribute.parse(WORKGROUP) if map_to_gpu else None)
        threads = ir.Attribute.parse("[#gpu.thread<y>, #gpu.thread<x>]")
        copies = structured.MatchOp.match_op_names(kernel, ["linalg.copy"]).result
        structured.TileUsingForallOp(copies, num_threads=[ty, tx], mapping=threads)
        structured.TileUsingForallOp(promoted.transformed, num_threads=[ty, tx], mapping=threads)
        if map_to_gpu:
            launch = tgpu.MapForallToBlocks(any_op, blocks.forall_op, generate_gpu_launch=True)
            tgpu.MapNestedForallToThreads(any_op, launch.result, block_dims=[tx, ty, 1])
        vectorize_register_tiles(kernel)
    return transform_script(build)


def _matmul_shape(fn):
    """(m, n, k) of the one linalg.matmul in a kernel function (memrefs)."""
    found = ops_of_kind(fn, "linalg.matmul")
    if len(found) != 1:
        return None
    a, _, c = (ir.MemRefType(v.type) for v in found[0].operands)
    if not (a.has_static_shape and c.has_static_shape):
        return None  # a dynamic size: a thread-reduction kernel (passes/gpu_kernels.py)
    m, n = c.shape
    # A is m x k, or k x m under transpose_a: k is the dimension that is not m.
    k = a.shape[1] if a.shape[0] == m else a.shape[0]
    return m, n, k


def allocs_to_workgroup_attributions(launch):
    """The promoted tiles are `memref.alloc` in workgroup memory inside the launch; a kernel
    needs them as workgroup attributions of the launch (static shared memory)."""
    body = launch.regions[0].blocks[0]
    allocs = [op for op in ops_of_kind(launch, "memref.alloc")
              if "workgroup" in str(op.results[0].type)]
    deallocs = [op for op in ops_of_kind(launch, "memref.dealloc")
                if "workgroup" in str(op.operands[0].type)]
    for op in deallocs:
        op.erase()
    n = 0
    if "workgroup_attributions" in launch.attributes:
        n = ir.IntegerAttr(launch.attributes["workgroup_attributions"]).value
    for op in allocs:
        arg = body.add_argument(op.results[0].type, op.location)
        op.results[0].replace_all_uses_with(arg)
        op.erase()
        n += 1
    launch.attributes["workgroup_attributions"] = ir.IntegerAttr.get(
        ir.IntegerType.get_signless(64), n)


@register
class GpuMatmulSchedule(ModulePass):
    name = "ms-gpu-matmul-schedule"
    summary = "tile matmul kernel functions for GPU blocks, shared memory and threads"
    options = {"map-to-gpu": True}  # false: scf.forall loops, for checking on the CPU

    def run(self, module):
        for fn in kernel_functions(module, "matmul"):
            shape = _matmul_shape(fn)
            tiles = shape and matmul_tiles(*shape)
            if tiles is None:
                continue  # mapped later as a thread-reduction kernel
            apply_script(fn, matmul_schedule(tiles, self.opts["map-to-gpu"]),
                         f"GPU matmul schedule {tiles}")
            for launch in ops_of_kind(fn, "gpu.launch"):  # none without map-to-gpu
                allocs_to_workgroup_attributions(launch)


# ------------------------------------------------------------------ everything else

@register
class GpuMapLinalg(ModulePass):
    name = "ms-gpu-map-linalg"
    summary = ("each linalg.generic, strided memref.copy and memref.store of a host function "
               "as a gpu.launch")

    def run(self, module):
        handlers = {"linalg.generic": self.generic, "memref.copy": self.copy,
                    "memref.store": self.store}
        for fn in public_functions(module):
            for op in list(fn.regions[0].blocks[0].operations):
                name = op.operation.name
                handler = handlers.get(name)
                if handler is not None:
                    handler(op)
                elif name.startswith("linalg."):
                    fail(op, f"'{name}' has no GPU mapping (run linalg-generalize-named-ops "
                             "first)")

    @staticmethod
    def _map(op, make_nest, choose):
        try:
            with ir.InsertionPoint(op), op.location:  # (dynamic sizes are read here)
                nest = make_nest(op)
                choose(nest)(nest)
        except gpu_kernels.KernelError as e:
            fail(op, f"cannot map to the GPU: {e}")
        op.operation.erase()

    def generic(self, op):
        if SCATTER_ADD_ATTR in op.attributes:
            self._map(op, gpu_kernels.nest_of_generic, lambda nest: gpu_kernels.map_scatter_add)
            return
        self._map(op, gpu_kernels.nest_of_generic, gpu_kernels.choose_mapping)

    def store(self, op):
        """A host store into device memory (a run-time size as a 0-d tensor, which only
        dynamic shapes leave) becomes a one-thread kernel."""
        with ir.InsertionPoint(op), op.location:
            gpu_kernels.map_store(op)
        op.operation.erase()

    def copy(self, op):
        src, dst = op.operands
        if src == dst:
            op.operation.erase()  # bufferization leaves no-op self copies
            return
        if identity_layout(src.type) and identity_layout(dst.type):
            return  # a device-to-device copy in the launch plan
        self._map(op, gpu_kernels.nest_of_copy, lambda nest: gpu_kernels.map_parallel)


# ------------------------------------------------------------------ dynamic sizes

@register
class GpuDynamicKernelParams(ModulePass):
    name = "ms-gpu-dynamic-kernel-params"
    summary = ("a dynamically shaped memref used in a gpu.launch enters it as its base buffer "
               "(0-d) and index scalars for its offset, sizes and strides")

    def run(self, module):
        """Kernels take memrefs as bare pointers (the ptx stage), which only statically
        shaped memrefs can be. A memref<?x64xf32> from the host is split there by
        memref.extract_strided_metadata; the kernel rebuilds it with
        memref.reinterpret_cast, so outlining passes the pointer and the sizes (index
        scalars the launch plan computes per call)."""
        for launch in ops_of_kind(module, "gpu.launch"):
            for value in _dynamic_memrefs_from_above(launch):
                _pass_as_metadata(launch, value)


def _dynamic_memrefs_from_above(launch):
    """The dynamically shaped memrefs defined outside the launch that ops inside it use (the
    launch's own operands are its index sizes)."""
    found = []

    def visit(op):
        for v in op.operands:
            if (isinstance(v.type, ir.MemRefType) and not _static_memref(v.type)
                    and not _inside(v, launch) and v not in found):
                found.append(v)
        return ir.WalkResult.ADVANCE
    launch.operation.walk(visit)
    return found


def _static_memref(t) -> bool:
    strides, offset = ir.MemRefType(t).get_strides_and_offset()
    dynamic = ir.ShapedType.get_dynamic_stride_or_offset()
    return ir.MemRefType(t).has_static_shape and dynamic not in strides + [offset]


def _inside(value, launch) -> bool:
    owner = value.owner
    return _inside_op(owner.owner if isinstance(owner, ir.Block) else owner, launch)


def _pass_as_metadata(launch, value):
    t = ir.MemRefType(value.type)
    dynamic = ir.ShapedType.get_dynamic_size()
    with ir.InsertionPoint(launch), launch.location:
        meta = memref.ExtractStridedMetadataOp(value)
    strides, offset = t.get_strides_and_offset()
    body = launch.regions[0].blocks[0]
    with ir.InsertionPoint.at_block_begin(body), launch.location:
        def dynamic_only(static, values):
            return [v for s, v in zip(static, values) if s == dynamic]
        view = memref.ReinterpretCastOp(
            t, meta.base_buffer, dynamic_only([offset], [meta.offset]),
            dynamic_only(t.shape, meta.sizes), dynamic_only(strides, meta.strides),
            [offset], list(t.shape), list(strides)).result
    uses = [(u.owner, u.operand_number) for u in value.uses]
    for owner, number in uses:
        if owner != view.owner and _inside_op(owner, launch):
            owner.operands[number] = view


def _inside_op(op, launch) -> bool:
    while op is not None:
        if op == launch.operation:
            return True
        op = op.parent
    return False


# ------------------------------------------------------------------ after outlining

KERNEL_MODULE = "kernels"


@register
class GpuSingleModule(ModulePass):
    name = "ms-gpu-single-module"
    summary = "move every outlined kernel into one gpu.module, each named after its module"

    def run(self, module):
        """gpu-kernel-outlining makes a gpu.module per launch, all kernels named after the
        host function; one module with unique kernel names gives one PTX file, one module
        load at run time and readable launch plans."""
        gpu_modules = top_level_ops(module, "gpu.module")
        if not gpu_modules:
            return
        with ir.InsertionPoint(gpu_modules[0]), gpu_modules[0].location:
            target = ir.Operation.create("gpu.module", regions=1, attributes={
                "sym_name": ir.StringAttr.get(KERNEL_MODULE)})
            body = target.regions[0].blocks.append()
        renamed = {}  # (outlined module, kernel) -> the kernel's name in KERNEL_MODULE
        seen = set()
        for gm in gpu_modules:
            _merge_outlined_module(gm, body, renamed, seen)
            gm.operation.erase()

        def retarget(op):
            if op.name == "gpu.launch_func":
                ref = str(op.attributes["kernel"])  # @module::@kernel
                gm_name, sym = (p.lstrip("@") for p in ref.split("::"))
                op.attributes["kernel"] = ir.SymbolRefAttr.get(
                    [KERNEL_MODULE, renamed[(gm_name, sym)]])
            return ir.WalkResult.ADVANCE
        module.walk(retarget)


def _merge_outlined_module(gm, body, renamed, seen):
    """Move the symbols of one outlined gpu.module into `body`: its kernel renamed after the
    module (unique: outlining names modules after their launch), helpers once each."""
    gm_name = symbol_name(gm)
    for op in list(gm.regions[0].blocks[0].operations):
        sym = symbol_name(op)
        if op.operation.name == "gpu.func" and "gpu.kernel" in op.attributes:
            renamed[(gm_name, sym)] = gm_name
            set_symbol_name(op, gm_name)
        elif sym in seen:
            continue  # a helper every outlined module copied (e.g. ipowi)
        seen.add(symbol_name(op))
        op.operation.detach_from_parent()
        body.append(op.operation)


_CONTRACTIBLE = ("arith.mulf", "arith.addf", "arith.subf")


@register
class GpuContract(ModulePass):
    name = "ms-gpu-fma-contract"
    summary = "allow FMA contraction of float mul/add/sub in kernels"

    def run(self, module):
        """The ms lowering marks its float arithmetic fastmath<contract>; bodies that come from
        named linalg ops (matmul) have no flags, and without them NVPTX keeps mul and add
        apart. Kernels contract everywhere, as nvcc does by default (--fmad=true)."""
        contract = ir.Attribute.parse("#arith.fastmath<contract>")
        none = ir.Attribute.parse("#arith.fastmath<none>")

        def visit(op):
            if op.name in _CONTRACTIBLE and (
                    "fastmath" not in op.attributes or op.attributes["fastmath"] == none):
                op.attributes["fastmath"] = contract
            return ir.WalkResult.ADVANCE
        for gm in top_level_ops(module, "gpu.module"):
            gm.operation.walk(visit)


@register
class GpuRejectCollectives(ModulePass):
    name = "ms-gpu-reject-collectives"
    summary = ("a located error at the first collective or print of an ms module (the CUDA "
               "target has neither; loops and conditionals: ms-gpu-outline-control-flow)")

    def run(self, module):
        from ..dialects.ops.collective import COLLECTIVES
        for op in ops_of_kind(module, *COLLECTIVES):
            fail(op, f"'{op.name}': collectives run on the CPU target over MPI; the CUDA "
                     "target has none (GPU data parallel would need NCCL: README)")
        for op in ops_of_kind(module, "ms.print"):
            fail(op, "'ms.print' (Print): printing from compiled code runs on the CPU target "
                     "only; the CUDA target does not print yet (compile for the CPU, or print "
                     "the results after the call)")
