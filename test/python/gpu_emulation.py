"""Run the CUDA pipeline's kernels on the CPU, to check their numerics without a GPU.

The module goes through the cuda stages up to ms-gpu-map-linalg (the kernels are gpu.launch
ops in the host function), then each gpu.launch becomes serial loops over its blocks and
threads, and the CPU `llvm` stage compiles the result into an ExecutionEngine. A launch may
contain one top-level gpu.all_reduce (the block reductions): the body is split there, each
thread's values that cross it are kept in per-thread buffers, and the partials are combined
serially, as the tree would. Barriers are not emulated: the shared-memory matmul schedule
runs with map-to-gpu=false (block and thread loops as sequential scf.for, tiles in ordinary
memory), which checks its tiling and promotion but not the mapping to blocks, threads and
shared memory; bench/gpu_check.py covers those on a GPU.
"""
from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, memref, scf

from mscc.passes import pipeline
from mscc.passes.compiler import select_entry
from mscc.dialects.ir_helpers import public_functions
from mscc.passes.gpu_kernels import _remap
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
        _remap(new, mapping)
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
    reduces = [i for i, op in enumerate(ops) if op.name == "gpu.all_reduce"]
    if len(reduces) > 1 or any(op.name == "gpu.barrier" for op in ops):
        raise NotImplementedError("barriers and several all_reduce are not emulated")
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


def emulated_executable(module, entry=None):
    """A CPU executable computing what the CUDA kernels of `module` (ms level) compute."""
    sig = select_entry(module, entry)
    for name, steps in pipeline.stage_steps("cuda"):
        if name != "gpu":
            pipeline.run_steps(module, steps, stage=name)
            continue
        kept = []
        for s in steps:
            if s.name in REPLACED:
                kept += [pipeline.parse_step(t) for t in REPLACED[s.name]]
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
