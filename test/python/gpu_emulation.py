"""Run the CUDA pipeline's kernels on the CPU, to check their numerics without a GPU.

The module goes through the cuda stages up to ms-gpu-map-linalg (the kernels are gpu.launch
ops in the host function), then each gpu.launch becomes serial loops over its blocks and
threads, and the CPU `llvm` stage compiles the result into an ExecutionEngine. A launch may
contain one top-level gpu.all_reduce (the block reductions): the body is split there, each
thread's values that cross it are kept in per-thread buffers, and the partials are combined
serially, as the tree would. A launch with gpu.barrier ops (the implicit-GEMM convolution,
passes/gpu_conv.py) runs in phases: the body is cut at its barriers, at the top level or at
the top level of a loop with uniform bounds there (run as one loop around its phases), and
each phase runs for every thread of the block before the next one starts, which is what a
barrier guarantees; values a phase uses from another live in per-thread buffers, workgroup
attributions in one buffer per launch (blocks run one after the other), private ones in one
slot per thread. The shared-memory matmul schedule runs with map-to-gpu=false (block and
thread loops as sequential scf.for, tiles in ordinary memory), which checks its tiling and
promotion but not the mapping to blocks, threads and shared memory; bench/gpu_check.py
covers those on a GPU.
"""
from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, memref, scf

from mscc.passes import pipeline
from mscc.passes.compiler import dynamic_description, select_entry
from mscc.dialects.ir_helpers import ops_of_kind, public_functions
from mscc.dialects.ir_helpers import remap_operands
from mscc.runtime.cpu import CpuExecutable

# The matmul schedule's loops stay scf.forall, run sequentially.
REPLACED = {"ms-gpu-matmul-schedule": ["ms-gpu-matmul-schedule{map-to-gpu=false}",
                                       "func.func(scf-forall-to-for)"]}
STOP_AFTER = "ms-gpu-map-linalg"

# gpu.all_reduce kind -> arith op by element kind (float, integer).
_COMBINE = {
    "add": (arith.addf, arith.addi), "mul": (arith.mulf, arith.muli),
    "maximumf": (arith.maximumf, None), "minimumf": (arith.minimumf, None),
    "maxnumf": (arith.maxnumf, None), "minnumf": (arith.minnumf, None),
    "maxsi": (None, arith.maxsi), "minsi": (None, arith.minsi),
    "maxui": (None, arith.maxui), "minui": (None, arith.minui),
    "and": (None, arith.andi), "or": (None, arith.ori), "xor": (None, arith.xori),
}


def _index(v):
    return arith.constant(ir.IndexType.get(), v)


def _const_value(v) -> int:
    return ir.IntegerAttr(v.owner.attributes["value"]).value


def _clone_ops(ops, mapping):
    for op in ops:
        new = op.clone()
        remap_operands(new, mapping)
        for old, res in zip(op.results, new.results):
            mapping[old] = res


def _defined_in(value, ops_set):
    owner = value.owner
    return not isinstance(owner, ir.Block) and owner.operation in ops_set


def emulate_launch(launch):
    grid = [_const_value(v) for v in list(launch.operands)[0:3]]
    block = [_const_value(v) for v in list(launch.operands)[3:6]]
    if grid[1:] != [1, 1] or block[1:] != [1, 1]:
        raise NotImplementedError("only 1-D launches are emulated")
    body = launch.regions[0].blocks[0]
    ops = [op.operation for op in body.operations][:-1]  # without gpu.terminator
    if ops_of_kind(launch, "gpu.barrier"):
        _emulate_phases(launch, grid[0], block[0])
        return
    reduces = [i for i, op in enumerate(ops) if op.name == "gpu.all_reduce"]
    if len(reduces) > 1 or len(list(body.arguments)) > 12:
        raise NotImplementedError("several all_reduce, or memory attributions without "
                                  "barriers, are not emulated")
    with ir.InsertionPoint(launch), launch.location:
        zero = _index(0)
        base = {body.arguments[i]: zero for i in (1, 2, 4, 5)}
        for i, v in zip(range(6, 12), grid + block):
            base[body.arguments[i]] = _index(v)
        split = _Split(ops, reduces[0], block[0]) if reduces else None
        blocks = scf.ForOp(zero, _index(grid[0]), _index(1))
        with ir.InsertionPoint(blocks.body):
            mapping = {**base, body.arguments[0]: blocks.induction_variable}
            if split is None:
                _thread_loop(block[0], ops, mapping, body)
            else:
                split.emit(mapping, body)
            scf.YieldOp([])
        if split is not None:
            for buf in split.buffers.values():
                memref.dealloc(buf)
    launch.erase()


def _thread_loop(n, ops, mapping, body, before=None, after=None):
    threads = scf.ForOp(_index(0), _index(n), _index(1))
    with ir.InsertionPoint(threads.body):
        m = {**mapping, body.arguments[3]: threads.induction_variable}
        if before:
            before(m, threads.induction_variable)
        _clone_ops(ops, m)
        if after:
            after(m, threads.induction_variable)
        scf.YieldOp([])


class _Split:
    """A launch body cut at its gpu.all_reduce: per-thread buffers (allocated once, at the
    insertion point) for the values that cross the cut and for the partials."""

    def __init__(self, ops, at, n):
        self.reduce_op = ops[at]
        self.pre, self.post, self.n = ops[:at], ops[at + 1:], n
        pre_set = set(self.pre)
        self.crossing = []

        def collect(op):
            for v in op.operands:
                if _defined_in(v, pre_set) and v not in self.crossing:
                    self.crossing.append(v)
            return ir.WalkResult.ADVANCE
        for op in self.post:
            op.walk(collect)
        self.partial = self.reduce_op.operands[0]
        self.buffers = {v: memref.alloc(ir.MemRefType.get([n], v.type), [], [])
                        for v in self.crossing + [self.partial]}

    def emit(self, mapping, body):
        def save(m, tid):
            for v, buf in self.buffers.items():
                memref.store(m.get(v, v), buf, [tid])
        _thread_loop(self.n, self.pre, mapping, body, after=save)
        # Serial combination of the partials, in thread order.
        kind = str(self.reduce_op.attributes["op"]).split()[-1].rstrip(">")
        t = self.partial.type
        combine = _COMBINE[kind][0 if isinstance(t, ir.FloatType) else 1]
        first = memref.load(self.buffers[self.partial], [_index(0)])
        loop = scf.ForOp(_index(1), _index(self.n), _index(1), [first])
        with ir.InsertionPoint(loop.body):
            elem = memref.load(self.buffers[self.partial], [loop.induction_variable])
            scf.YieldOp([combine(loop.inner_iter_args[0], elem)])
        total = loop.results[0]

        def restore(m, tid):
            for v in self.crossing:
                m[v] = memref.load(self.buffers[v], [tid])
            m[self.reduce_op.results[0]] = total
        _thread_loop(self.n, self.post, mapping, body, before=restore)


class _Segment:
    """Ops of a launch body between two barriers (`ops`), or a loop whose body holds barriers
    (`loop`, with the segments of its body in `inner`)."""

    def __init__(self, ops=None, loop=None, inner=None):
        self.ops, self.loop, self.inner = ops or [], loop, inner or []
        self.uses, self.defines = [], []  # values crossing from / to other segments


def _segments(ops):
    """Cut `ops` at their gpu.barrier ops; a loop holding barriers becomes a segment of its own
    (its body cut the same way). A barrier anywhere else cannot be emulated."""
    out, current = [], []
    for op in ops:
        if op.name == "gpu.barrier":
            out.append(_Segment(current))
            current = []
        elif ops_of_kind(op, "gpu.barrier"):
            if op.name != "scf.for" or len(op.results):
                raise NotImplementedError(f"a barrier inside '{op.name}' is not emulated "
                                          "(only in scf.for loops without results)")
            out.append(_Segment(current))
            current = []
            body = [o.operation for o in op.regions[0].blocks[0].operations][:-1]
            out.append(_Segment(loop=op, inner=_segments(body)))
        else:
            current.append(op)
    out.append(_Segment(current))
    return out  # (empty phases kept: a loop segment always has one before and after it)


def _leaf_segments(segments):
    for seg in segments:
        if seg.loop is None:
            yield seg
        else:
            yield from _leaf_segments(seg.inner)


def _find_crossing(segments):
    """Fill each segment's `uses` and `defines`: the values an op of one segment (at any
    depth) reads from a top-level op of another."""
    leaves = list(_leaf_segments(segments))
    owner = {op: seg for seg in leaves for op in seg.ops}
    for seg in leaves:
        def visit(op, seg=seg):
            for v in op.operands:
                src = None if isinstance(v.owner, ir.Block) else owner.get(v.owner.operation)
                if src is not None and src is not seg and v not in seg.uses:
                    seg.uses.append(v)
                    if v not in src.defines:
                        src.defines.append(v)
            return ir.WalkResult.ADVANCE
        for op in seg.ops:
            op.walk(visit)
    return leaves


def _emulate_phases(launch, grid: int, threads: int):
    """Emulate a launch with barriers (see the module docstring) in place of it."""
    body = launch.regions[0].blocks[0]
    ops = [op.operation for op in body.operations][:-1]
    constants = [op for op in ops if op.name == "arith.constant"]
    segments = _segments([op for op in ops if op.name != "arith.constant"])
    leaves = _find_crossing(segments)
    n_wg = 0
    if "workgroup_attributions" in launch.attributes:
        n_wg = ir.IntegerAttr(launch.attributes["workgroup_attributions"]).value
    attributions = list(body.arguments)[12:]
    with ir.InsertionPoint(launch), launch.location:
        mapping = {}
        _clone_ops(constants, mapping)  # uniform: one copy for every thread (loop bounds)
        zero = _index(0)
        mapping.update({body.arguments[i]: zero for i in (1, 2, 4, 5)})
        for i, v in zip(range(6, 12), [grid, 1, 1, threads, 1, 1]):
            mapping[body.arguments[i]] = _index(v)
        buffers = {v: memref.alloc(ir.MemRefType.get([threads], v.type), [], [])
                   for seg in leaves for v in seg.defines}
        shared = {a: memref.alloc(_plain(a.type), [], []) for a in attributions[:n_wg]}
        private = {a: memref.alloc(_plain(a.type, lead=threads), [], [])
                   for a in attributions[n_wg:]}
        mapping.update(shared)
        blocks = scf.ForOp(zero, _index(grid), _index(1))
        with ir.InsertionPoint(blocks.body):
            mapping[body.arguments[0]] = blocks.induction_variable
            _Phases(body, threads, buffers, private).run(segments, mapping)
            scf.YieldOp([])
        for buf in list(buffers.values()) + list(shared.values()) + list(private.values()):
            memref.dealloc(buf)
    launch.erase()


def _plain(t, lead=None):
    """A memory attribution's type in default memory (with a leading per-thread dim)."""
    t = ir.MemRefType(t)
    shape = ([lead] if lead else []) + list(t.shape)
    return ir.MemRefType.get(shape, t.element_type)


def _thread_slot(buf, tid):
    """Thread tid's private array: buf[tid] as a view of the attribution's rank."""
    t = ir.MemRefType(buf.type)
    shape = list(t.shape[1:])
    strides = [1] * len(shape)
    for i in reversed(range(len(shape) - 1)):
        strides[i] = strides[i + 1] * shape[i + 1]
    layout = ir.StridedLayoutAttr.get(ir.ShapedType.get_dynamic_stride_or_offset(), strides)
    view = ir.MemRefType.get(shape, t.element_type, layout=layout)
    return memref.subview(buf, [tid] + [0] * len(shape), [1] + shape, [1] * (len(shape) + 1),
                          result_type=view)


class _Phases:
    """Emits a launch body's segments: each phase (the code between two barriers a thread
    passes) as one loop over the threads. A loop holding barriers is rotated so that its
    back edge is no barrier: the phase ending one iteration and the phase starting the next
    run as one (the first iteration's start joins the phase before the loop), so a missing
    barrier before the next iteration's shared-memory writes shows as wrong results. The
    loop's exit still separates phases (stricter than a GPU there)."""

    def __init__(self, body, threads, buffers, private):
        self.body, self.threads = body, threads
        self.buffers, self.private = buffers, private

    def run(self, segments, mapping, last_then=None):
        for i, seg in enumerate(segments):
            if seg.loop is not None:
                self.loop(seg, mapping)
                continue
            then = None
            if i + 1 < len(segments) and segments[i + 1].loop is not None:
                head = segments[i + 1]
                then = (lambda m, head=head: self.head(head, m, self.bounds(head, m)[0]))
            elif i + 1 == len(segments):
                then = last_then
            self.phase(seg, mapping, then)

    def phase(self, seg, mapping, then=None):
        """seg's ops for every thread (then `then(thread's mapping)` in the same phase)."""
        if not seg.ops and then is None:
            return
        loop = scf.ForOp(_index(0), _index(self.threads), _index(1))
        with ir.InsertionPoint(loop.body):
            tid = loop.induction_variable
            m = {**mapping, self.body.arguments[3]: tid}
            m.update({a: _thread_slot(buf, tid) for a, buf in self.private.items()})
            self.clone(seg, m, tid)
            if then is not None:
                then(m)
            scf.YieldOp([])

    def clone(self, seg, m, tid):
        for v in seg.uses:
            m[v] = memref.load(self.buffers[v], [tid])
        _clone_ops(seg.ops, m)
        for v in seg.defines:
            memref.store(m[v], self.buffers[v], [tid])

    def bounds(self, seg, mapping):
        values = list(seg.loop.operands)[:3]
        if any(v not in mapping and not isinstance(v.owner, ir.Block)
               and _inside(v.owner.operation, self.body) for v in values):
            raise NotImplementedError("a loop with barriers needs uniform bounds")
        return [mapping.get(v, v) for v in values]

    def head(self, seg, m, iv):
        """The first phase of loop `seg`'s iteration `iv`, if it runs (iv < upper bound)."""
        first = seg.inner[0]
        if first.loop is not None or seg.inner[-1].loop is not None:
            raise NotImplementedError("a loop body starting or ending with a loop")
        guard = scf.IfOp(arith.cmpi(arith.CmpIPredicate.slt, iv, self.bounds(seg, m)[1]))
        with ir.InsertionPoint(guard.then_block):
            inner = {**m, seg.loop.regions[0].blocks[0].arguments[0]: iv}
            self.clone(first, inner, m[self.body.arguments[3]])
            scf.YieldOp([])

    def loop(self, seg, mapping):
        """The iterations of `seg` from its second phase on; each iteration's last phase runs
        the next iteration's first (see the class docstring)."""
        lb, ub, step = self.bounds(seg, mapping)
        loop = scf.ForOp(lb, ub, step)
        with ir.InsertionPoint(loop.body):
            iv = loop.induction_variable
            inner = {**mapping, seg.loop.regions[0].blocks[0].arguments[0]: iv}
            self.run(seg.inner[1:], inner,
                     last_then=lambda m: self.head(seg, m, arith.addi(iv, step)))
            scf.YieldOp([])


def _inside(op, block) -> bool:
    while op is not None:
        if op.block == block:
            return True
        op = op.parent
    return False


def emulated_executable(module, entry=None, replaced=None):
    """A CPU executable computing what the CUDA kernels of `module` (ms level) compute;
    `replaced` maps more gpu-stage pass names to the steps that run instead (options)."""
    sig = select_entry(module, entry)
    replaced = {**REPLACED, **(replaced or {})}
    for name, steps in pipeline.stage_steps("cuda"):
        if name != "gpu":
            pipeline.run_steps(module, steps, stage=name)
            continue
        kept = []
        for s in steps:
            if s.name in replaced:
                kept += [pipeline.parse_step(t) for t in replaced[s.name]]
                continue
            kept.append(s)
            if s.name == STOP_AFTER:
                break
        pipeline.run_steps(module, kept, stage=name)
        break
    with module.context, ir.Location.unknown():
        for fn in public_functions(module.operation):
            launches = [op for op in fn.regions[0].blocks[0].operations
                        if op.operation.name == "gpu.launch"]
            for launch in launches:
                emulate_launch(launch)
    cpu_llvm = dict(pipeline.stage_steps("cpu"))["llvm"]
    pipeline.run_steps(module, cpu_llvm, stage="llvm")
    with module.context:
        return CpuExecutable(module, sig.name, sig.inputs, sig.outputs)


# ------------------------------------------------------------------ through the launch plan

# The kernels after outlining (gpu.func, bare-pointer parameters) compiled for the CPU, each
# `emu_<kernel>(params..., grid_x, block_x)` looping over its blocks and threads; a fake
# driver (fake_cuda.py) whose launches call them on host memory. The CUDA runtime
# (runtime/cuda.py) then runs the launch plan itself: its copies, its control nodes (loops
# and conditionals: sub-plans, carries handed between iterations, predicates copied back)
# and its launches. Without the passes whose kernels use barriers and shared memory: matmuls
# and convolutions are thread-per-output kernels here.
_SHARED_MEMORY_PASSES = ("ms-gpu-matmul-schedule", "ms-gpu-conv-implicit-gemm")
import ctypes  # noqa: E402

from mlir import passmanager  # noqa: E402

_IDS = ("gpu.block_id", "gpu.thread_id", "gpu.block_dim", "gpu.grid_dim")
# (libm has no rsqrtf: the NVVM lowering's __nv_rsqrtf becomes 1/sqrt here)
_EMU_LOWERING = ("builtin.module(func.func(convert-linalg-to-loops,math-expand-ops{ops=rsqrt}),"
                 "convert-math-to-funcs,"
                 "convert-math-to-libm,expand-strided-metadata,lower-affine,"
                 "finalize-memref-to-llvm,convert-scf-to-cf,convert-math-to-llvm,"
                 "convert-to-llvm,reconcile-unrealized-casts)")


def _dim_of(op):
    return str(op.attributes["dimension"]).split()[-1].rstrip(">")


class _KernelBody:
    """Clones a kernel's ops for one (block, thread), its id ops read from `ids`."""

    def __init__(self, ops, ids):
        self.ops, self.ids = ops, ids

    def clone(self, ops, mapping, block_iv, thread_iv):
        for op in ops:
            if op.name in _IDS:
                d = _dim_of(op)
                if d != "x":
                    mapping[op.results[0]] = _index(0 if op.name.endswith("_id") else 1)
                else:
                    mapping[op.results[0]] = {"gpu.block_id": block_iv,
                                              "gpu.thread_id": thread_iv,
                                              "gpu.block_dim": self.ids["bx"],
                                              "gpu.grid_dim": self.ids["gx"]}[op.name]
                continue
            new = op.clone()
            remap_operands(new, mapping)
            for old, res in zip(op.results, new.results):
                mapping[old] = res


def _emulate_kernel(kernel, module_body):
    """func.func @emu_<name>(kernel params..., gx: index, bx: index) in `module_body`."""
    idx = ir.IndexType.get()
    body = kernel.regions[0].blocks[0]
    arg_types = [a.type for a in body.arguments]
    ops = [op.operation for op in body.operations][:-1]  # without gpu.return
    if any(op.name == "gpu.barrier" for op in ops) or any(
            "workgroup" in str(t) for t in arg_types):
        raise NotImplementedError("barriers and shared memory are not emulated")
    from mlir.dialects import func
    name = "emu_" + ir.StringAttr(kernel.attributes["sym_name"]).value
    with ir.InsertionPoint(module_body):
        fn = func.FuncOp(name, ir.FunctionType.get(arg_types + [idx, idx], []))
        entry = fn.add_entry_block()
    with ir.InsertionPoint(entry):
        args = list(entry.arguments)
        ids = {"gx": args[-2], "bx": args[-1]}
        base = dict(zip(body.arguments, args[:-2]))
        kb = _KernelBody(ops, ids)
        reduces = [i for i, op in enumerate(ops) if op.name == "gpu.all_reduce"]
        if len(reduces) > 1:
            raise NotImplementedError("several all_reduce are not emulated")
        blocks = scf.ForOp(_index(0), ids["gx"], _index(1))
        with ir.InsertionPoint(blocks.body):
            b = blocks.induction_variable
            if not reduces:
                threads = scf.ForOp(_index(0), ids["bx"], _index(1))
                with ir.InsertionPoint(threads.body):
                    kb.clone(ops, dict(base), b, threads.induction_variable)
                    scf.YieldOp([])
            else:
                _split_kernel(kb, ops, reduces[0], base, b, ids["bx"])
            scf.YieldOp([])
        func.ReturnOp([])
    return name, arg_types


def _split_kernel(kb, ops, at, base, block_iv, bx):
    """As _Split, for an outlined kernel: per-thread buffers of a dynamic size (the block)."""
    reduce_op, pre, post = ops[at], ops[:at], ops[at + 1:]
    pre_set = set(pre)
    crossing = []

    def collect(op):
        for v in op.operands:
            if _defined_in(v, pre_set) and v not in crossing:
                crossing.append(v)
        return ir.WalkResult.ADVANCE
    for op in post:
        op.walk(collect)
    partial = reduce_op.operands[0]
    dyn = ir.ShapedType.get_dynamic_size()
    buffers = {v: memref.alloc(ir.MemRefType.get([dyn], v.type), [bx], [])
               for v in crossing + [partial]}
    loop = scf.ForOp(_index(0), bx, _index(1))
    with ir.InsertionPoint(loop.body):
        m = dict(base)
        kb.clone(pre, m, block_iv, loop.induction_variable)
        for v, buf in buffers.items():
            memref.store(m.get(v, v), buf, [loop.induction_variable])
        scf.YieldOp([])
    kind = str(reduce_op.attributes["op"]).split()[-1].rstrip(">")
    t = partial.type
    combine = _COMBINE[kind][0 if isinstance(t, ir.FloatType) else 1]
    first = memref.load(buffers[partial], [_index(0)])
    acc = scf.ForOp(_index(1), bx, _index(1), [first])
    with ir.InsertionPoint(acc.body):
        elem = memref.load(buffers[partial], [acc.induction_variable])
        scf.YieldOp([combine(acc.inner_iter_args[0], elem)])
    total = acc.results[0]
    loop = scf.ForOp(_index(0), bx, _index(1))
    with ir.InsertionPoint(loop.body):
        m = dict(base)
        for v in crossing:
            m[v] = memref.load(buffers[v], [loop.induction_variable])
        m[reduce_op.results[0]] = total
        kb.clone(post, m, block_iv, loop.induction_variable)
        scf.YieldOp([])
    for buf in buffers.values():
        memref.dealloc(buf)


class EmulatedKernels:
    """Every kernel of a module at the gpu stage, compiled for the CPU."""

    def __init__(self, module):
        from mlir import execution_engine
        from mscc.dialects.ir_helpers import top_level_ops
        ctx = module.context
        with ctx, ir.Location.unknown():
            emu = ir.Module.create()
            self.signatures = {}
            for gm in top_level_ops(module.operation, "gpu.module"):
                for op in gm.regions[0].blocks[0].operations:
                    if op.operation.name == "gpu.func" and "gpu.kernel" in op.attributes:
                        kname = ir.StringAttr(op.attributes["sym_name"]).value
                        self.signatures[kname] = _emulate_kernel(op.operation, emu.body)
                    elif op.operation.name == "func.func":
                        emu.body.append(op.operation.clone())
            passmanager.PassManager.parse(_EMU_LOWERING).run(emu.operation)
            self.engine = execution_engine.ExecutionEngine(emu, opt_level=2)
        self._fns = {}

    def launch(self, kernel, grid, block, params_address):
        if tuple(grid[1:]) != (1, 1) or tuple(block[1:]) != (1, 1):
            raise NotImplementedError(f"kernel {kernel}: only 1-D launches are emulated")
        name, types = self.signatures[kernel]
        fn = self._fns.get(name)
        if fn is None:
            fn = self._fns[name] = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(
                self.engine.raw_lookup(name))
        slots = (ctypes.c_void_p * max(1, len(types))).from_address(params_address)
        keep, packed = [], []
        for t, slot in zip(types, slots):
            if isinstance(t, ir.MemRefType):
                ptr = ctypes.c_uint64.from_address(slot).value
                strides, offset = t.get_strides_and_offset()
                vals = [ctypes.c_void_p(ptr), ctypes.c_void_p(ptr), ctypes.c_int64(offset)]
                vals += [ctypes.c_int64(d) for d in t.shape]
                vals += [ctypes.c_int64(s) for s in strides]
                keep += vals
                packed += [ctypes.addressof(v) for v in vals]
            else:
                packed.append(slot)  # the slot holds the scalar's bytes
        dims = [ctypes.c_int64(grid[0]), ctypes.c_int64(block[0])]
        keep += dims
        packed += [ctypes.addressof(v) for v in dims]
        arr = (ctypes.c_void_p * len(packed))(*packed)
        fn(ctypes.addressof(arr))


def emulating_driver(kernels):
    from fake_cuda import FakeDriver

    class EmulatingDriver(FakeDriver):
        def module_get_function(self, module, name):
            return ("function", name)

        def launch(self, fn, grid, block, smem, stream, params_address, context=""):
            super().launch(fn, grid, block, smem, stream, params_address, context)
            kernels.launch(fn[1], grid, block, params_address)
    return EmulatingDriver()


def emulated_plan_executable(module, entry=None):
    """A CudaExecutable running `module`'s launch plan (control nodes included) on a fake
    driver whose kernels run on the CPU."""
    from mscc.passes.launch_plan import read_launch_plan
    from mscc.runtime.cuda import CudaExecutable, Device
    sig = select_entry(module, entry)
    for name, steps in pipeline.stage_steps("cuda"):
        steps = [s for s in steps if s.name not in _SHARED_MEMORY_PASSES]
        pipeline.run_steps(module, steps, stage=name)
        if name == "gpu":
            break
    plan, blobs = read_launch_plan(module, sig.name, sig.inputs, sig.outputs)
    kernels = EmulatedKernels(module)
    dev = Device(emulating_driver(kernels))
    exe = CudaExecutable(plan, sig.inputs, sig.outputs, {"ptx": b"emulated"}, blobs, dev,
                         dynamic=dynamic_description(module, sig.name))
    exe.kernels = kernels
    return exe
