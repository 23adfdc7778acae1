"""CPU machine code of a large module on every core, in this process: the module is
translated to LLVM IR once (as bitcode) and cut into `parts`; a thread per core takes one
part at a time, parses its own copy into an LLVMContext of its own, keeps the bodies of the
part's functions (the others become declarations), optimizes it (`default<O3>`) and
compiles it into an object file through LLVM's C API (passes/llvm_capi.py: the calls
release the GIL), and the objects are linked into the process (runtime/jit_code.py) or
into one shared library (artifact.link_shared). A large network's entry (descriptor
plumbing and calls) gets a part of its own, compiled at O0 (PLAIN_ENTRY_OPS); one that
shares a part is compiled with FastISel (FAST_ISEL_INSTRUCTIONS).

One thread optimizes and compiles a small module into an object in memory
(`compile_object`, linked into the process by runtime/jit_code.py). LLVM's time grows with
the code (a Conv2d's forward and backward, 3,500 lines of LLVM dialect: 0.18 s); two threads
on 2 cores take about half. Below `MIN_PART_COST` per thread a module is compiled whole in
memory unless its functions share out into two parts of at least MIN_SECOND_PART_COST.
(This used llvm-split and an `opt | llc` process per part before: starting the processes
and splitting cost ~50 ms more than threads.)

Functions are shared out by their estimated cost to LLVM (FunctionWork: costliest first,
each to the part with the least so far). A function defined in one part and called from
another is made external with hidden visibility (the library exports only the entry); a
global variable that is not a private constant is defined in part 0 alone. What the
translation adds (OpenMP's outlined bodies) stays with the function that calls it.

MSCC_CODEGEN_THREADS caps the number of threads (`1`: always one, in memory).
The disk cache links the objects into its entry's library in the background.
"""
from __future__ import annotations

import ctypes
import functools
import os
import shutil
import threading
from typing import NamedTuple

from mlir import ir

from .diagnostics import CompileError, Diagnostic

ENV = "MSCC_CODEGEN_THREADS"
# Estimated LLVM cost (FunctionWork.cost) per thread, at least: below it the link and the
# second parse cost more than the thread saves. AMD EPYC, one thread (compile_object and the
# JIT's link) against two threads and the link: nn.Momentum's update of LeNet5's ten
# parameters (cost 15,000) 100 -> 75 ms, a Conv2d forward (8,800) 58 against 57 ms (the
# ExecutionEngine, before: 94-106 -> 74-80 and 54 against 54).
MIN_PART_COST = 6000
# A smaller module takes two threads where its functions share out evenly enough: the
# lighter part costs at least this much (~20 ms of LLVM's time), against each part's own
# parse, target setup and object (~4 ms) and no link (the objects are linked into the
# process, runtime/jit_code.py). Intel Xeon (Emerald Rapids), alternated in one process: a
# Conv2d forward (costs 3,242 for its entry and 2,243 for its matmul kernel) 81 -> 55 ms of
# LLVM, its whole compile 116 -> 93 ms. One costly function and small ones stay one part.
MIN_SECOND_PART_COST = 1500
# What LLVM IR translation has an implementation for: the C function that translates in
# process crashes on anything else (the pipeline leaves nothing else; this is the check).
_TRANSLATED = ("llvm.", "omp.", "builtin.")


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def parts_for(module, sizes=None) -> int:
    """How many threads should compile `module` (an LLVM-dialect module; `sizes`: its
    function_sizes when known): 0 for one thread in memory (small module, one core, no C
    compiler or no libLLVM)."""
    return plan(module, sizes)[0]


# A large module is cut into more parts than threads, each thread taking the next part
# when it finishes one: the estimated costs (FunctionWork) are off by up to ~40% for a
# part of a large network, and with one part per thread the other waited (MobileNetV2's
# training step: parts of 4.7 and 2.8 s). Each part beyond the threads costs a parse of the
# module and a link (~60 ms for MobileNetV2's 0.6 MB of bitcode), so only parts of at least
# PIECE_COST, and at most PARTS_PER_THREAD per thread.
PIECE_COST = 50_000
PARTS_PER_THREAD = 3


def codegen_threads() -> int:
    """The most threads machine code may use (MSCC_CODEGEN_THREADS, else the cores)."""
    limit = os.environ.get(ENV, "").strip()
    return int(limit) if limit.isdigit() else _cores()


def plan(module, sizes=None) -> tuple[int, dict | None]:
    """(parts_for(module), the function_sizes it read, None where it read none): one walk
    of the module for both (17 ms for a ViT step's 18,000 operations)."""
    cap = codegen_threads()
    if cap < 2 or not available():
        return 0, sizes
    sizes = function_sizes(module) if sizes is None else sizes
    if sizes is None:
        return 0, sizes
    cost = sum(work.cost for work in sizes.values())
    if cost < 2 * MIN_PART_COST and min(part_costs(sizes, 2)) < MIN_SECOND_PART_COST:
        return 0, sizes
    threads = min(cap, max(2, cost // MIN_PART_COST))
    return max(threads, min(threads * PARTS_PER_THREAD, cost // PIECE_COST)), sizes


def plan_with_sizes(module) -> tuple[int, dict | None]:
    """plan's threads, at least one, and the module's function_sizes, read even where plan
    needed none (share_out and code_artifact take them whatever the threads)."""
    parts, sizes = plan(module)
    return max(1, parts), function_sizes(module) if sizes is None else sizes


def part_costs(sizes: dict, parts: int) -> list[int]:
    """The estimated cost of each part as share_out shares `sizes` out among `parts`."""
    loads = [0] * parts
    for name, part in share_out(sizes, parts).items():
        loads[part] += sizes[name].cost
    return loads


def available() -> bool:
    """Whether this process can compile a library itself (libLLVM's C API and a C compiler
    to link with)."""
    from . import llvm_capi
    return shutil.which("cc") is not None and llvm_capi.library() is not None


class FunctionWork(NamedTuple):
    ops: int   # LLVM-dialect operations
    cost: int  # LLVM's time to optimize and compile it, estimated (MIN_PART_COST's and
    #            share_out's unit)


# What LLVM's time for a function grows with, in units of one descriptor operation
# (extractvalue, insertvalue, constants: nearly free), fitted on the functions of the LeNet5,
# MLP, ResNet-block and ViT training steps, each compiled alone (AMD EPYC): a loop's
# branches (the loop passes, the vectorizer and its masked tail) 28, any other operation 4,
# and each function 800. Shared out by operation count, the entry (thousands of descriptor
# operations) outweighed its cost and the threads finished 0.1 s apart: by these costs,
# two threads compiled the ViT step's module in 0.36 s instead of 0.42, the ResNet block's
# in 0.33 instead of 0.44.
_DESCRIPTOR_OPS = frozenset(("llvm.extractvalue", "llvm.insertvalue", "llvm.mlir.constant",
                             "llvm.mlir.undef", "llvm.mlir.poison"))
_BRANCHES = frozenset(("llvm.br", "llvm.cond_br"))
BRANCH_COST, OP_COST, FUNCTION_COST = 28, 4, 800
# A function compiled at O0 (_straight_line_at_o0: the entry of a program whose loops were
# outlined; the small loop nests ms-cpu-cold-loops marks), whose operations then cost 1
# each: a Conv2d step's entry, ~200 operations, took ~1 ms at O0 against ~14 at O3 (AMD
# EPYC, compiled alone).
O0_FUNCTION_COST = 100


def function_sizes(module) -> dict[str, FunctionWork] | None:
    """The work of each llvm.func of `module` by name (its globals under ""), or None if
    an operation has no LLVM IR translation."""
    from .cpu_cold_loops import unoptimized
    sizes: dict[str, FunctionWork] = {}
    at_o0 = _entries_at_o0(module)
    for op in module.body.operations:
        op = op.operation
        is_function = op.name == "llvm.func"
        name = ir.StringAttr(op.attributes["sym_name"]).value if is_function else ""
        plain = name in at_o0 or (is_function and unoptimized(op))
        # (a declaration, malloc or free, costs nothing: no FUNCTION_COST)
        count = [0, (O0_FUNCTION_COST if plain else FUNCTION_COST)
                 if is_function and op.regions[0].blocks else 0]

        def visit(inner):
            kind = inner.name
            if not kind.startswith(_TRANSLATED):
                count[0] = None
                return ir.WalkResult.INTERRUPT
            count[0] += 1
            count[1] += (1 if plain or kind in _DESCRIPTOR_OPS else
                         BRANCH_COST if kind in _BRANCHES else OP_COST)
            return ir.WalkResult.ADVANCE
        op.walk(visit)
        if count[0] is None:
            return None
        old = sizes.get(name, FunctionWork(0, 0))
        sizes[name] = FunctionWork(old.ops + count[0], old.cost + count[1])
    return sizes


def share_out(sizes: dict[str, FunctionWork | int], parts: int) -> dict[str, int]:
    """Function name -> part: costliest first, each to the part with the least cost so far
    (`sizes`: function_sizes, or plain costs). An entry's body goes with its C interface,
    into which LLVM inlines it (ms-cpu-private-entry-bodies): apart, the C interface would
    call it with every memref field as an argument."""
    from .symbols import C_INTERFACE, entry_body
    load = [0] * parts
    assignment = {}
    costs = {name: getattr(work, "cost", work) for name, work in sizes.items()}
    with_body = {name: entry_body(name) for name in costs
                 if name.startswith(C_INTERFACE) and entry_body(name) in costs}
    for name, body in with_body.items():
        costs[name] += costs.pop(body)
    if parts > 1:  # a large entry alone in part 0 (compiled at O0 there: _plain_entries)
        for name, body in with_body.items():
            if sum(getattr(sizes[n], "ops", 0) for n in (name, body)) >= PLAIN_ENTRY_OPS:
                assignment[name] = 0
                load[0] = float("inf")
                del costs[name]
    for name, cost in sorted(costs.items(), key=lambda kv: -kv[1]):
        if name:
            part = load.index(min(load))
            assignment[name] = part
            load[part] += cost
    for name, body in with_body.items():
        assignment[body] = assignment[name]
    return assignment


class LLVMCode:
    """A module translated to LLVM bitcode, with what linking it needs to know: whether it
    calls the OpenMP runtime, whether it defines the hook of compiled Print ops."""

    def __init__(self, bitcode: bytes, openmp: bool, prints: bool = False):
        self.bitcode, self.openmp, self.prints = bitcode, openmp, prints


def translate(module) -> LLVMCode:
    """The LLVM bitcode of an LLVM-dialect module, translated by the MLIR C API in this
    process into a context of the libLLVM.so it shares with LLVM's C API (mlir-translate in
    a process of its own took 0.7 s for a ViT step's 1.4 MB of text). Only for modules
    function_sizes() accepts: the translation crashes on anything else."""
    from ..runtime.debug_print import HOOK
    from . import llvm_capi
    lib = llvm_capi.library()
    from ..dialects.capi import capsule_pointer
    to_llvm = _translate_to_llvm()
    glue = _glue_candidates(module)
    op = capsule_pointer(module.operation._CAPIPtr, b"mlir.ir.Operation._CAPIPtr")
    context = lib.LLVMContextCreate()
    try:
        llvm_module = to_llvm(op, context)
        if not llvm_module:
            raise CompileError([Diagnostic("error", "", 0, 0, "LLVM IR translation failed")],
                               "llvm-ir")
        _straight_line_at_o0(lib, llvm_module, glue)
        openmp = any(llvm_capi.name_of(lib, f).startswith("__kmpc_")
                     for f in llvm_capi.functions(lib, llvm_module))
        prints = any(llvm_capi.name_of(lib, g) == HOOK
                     for g in llvm_capi.globals_of(lib, llvm_module))
        code = LLVMCode(llvm_capi.bitcode(lib, llvm_module), openmp, prints)
        lib.LLVMDisposeModule(llvm_module)
        return code
    finally:
        lib.LLVMContextDispose(context)


# Glue: an outlined loop function whose loop is parallel holds only the OpenMP fork call once
# translated (the loop's body is the region function the translation outlines), and the entry
# of a program whose loops were outlined only allocates and calls. LLVM's O3 pipeline and
# SelectionDAG cost ~1.5 ms per function whatever it holds (AMD EPYC; 20 copies of a
# two-loop fill: 33 ms): such straight-line functions are marked optnone (FastISel, no
# optimization; their code runs once per call, next to the loops it starts). A Conv2d's
# forward and backward, 8 of 27 functions: single-thread O3 and code generation ~222 -> ~210
# ms (median of 6, alternated).
def _glue_candidates(module) -> set[str]:
    """Names of the llvm.funcs that are glue if they have no loop: the outlined loop
    functions, and the C interfaces of a module that has any."""
    from .cpu_outline import OUTLINED_ATTR
    from .symbols import C_INTERFACE
    outlined, interfaces = set(), set()
    for op in module.body.operations:
        op = op.operation
        if op.name != "llvm.func" or not op.regions[0].blocks:
            continue
        name = ir.StringAttr(op.attributes["sym_name"]).value
        if OUTLINED_ATTR in op.attributes:
            outlined.add(name)
        elif name.startswith(C_INTERFACE):
            interfaces.add(name)
    return outlined | interfaces if outlined else set()


def _entries_at_o0(module) -> set[str]:
    """The C interfaces (and their bodies, which LLVM inlines into them) that
    _straight_line_at_o0 will mark: glue candidates without a loop or a nested region."""
    from .symbols import C_INTERFACE, entry_body
    glue = {n for n in _glue_candidates(module) if n.startswith(C_INTERFACE)}
    names = glue | {entry_body(n) for n in glue}
    return {ir.StringAttr(op.attributes["sym_name"]).value for op in module.body.operations
            if op.operation.name == "llvm.func"
            and ir.StringAttr(op.attributes["sym_name"]).value in names
            and _straight_line(op.operation)}


def _straight_line(function) -> bool:
    """Whether an llvm.func's body has neither a nested region nor a cycle of blocks."""
    blocks = list(function.regions[0].blocks)
    if any(len(inner.regions) for b in blocks for inner in b.operations):
        return False
    return not blocks or not _has_cycle(blocks[0], lambda b: b.successors)


def _has_cycle(entry, successors) -> bool:
    """Whether a depth-first walk of the blocks reachable from `entry` (`successors(block)`:
    where a block branches; MLIR's or LLVM's) meets a block still on its path: a loop."""
    on_path, done = {entry}, set()
    stack = [(entry, iter(successors(entry)))]
    while stack:
        block, following = stack[-1]
        successor = next(following, None)
        if successor is None:
            stack.pop()
            on_path.discard(block)
            done.add(block)
        elif successor in on_path:
            return True
        elif successor not in done:
            on_path.add(successor)
            stack.append((successor, iter(successors(successor))))
    return False


def _straight_line_at_o0(lib, llvm_module, names: set[str]):
    """Mark optnone the functions of `names` without a loop (see _glue_candidates). (The
    region functions the OpenMP translation outlines carry other names.)"""
    from . import llvm_capi
    for f in llvm_capi.functions(lib, llvm_module):
        if (names and llvm_capi.name_of(lib, f) in names and not lib.LLVMIsDeclaration(f)
                and not _has_cycle(lib.LLVMGetFirstBasicBlock(f),
                                   lambda block: llvm_capi.successors(lib, block))):
            llvm_capi.set_optnone(lib, f)


@functools.lru_cache(maxsize=None)
def _translate_to_llvm():
    """mlirTranslateModuleToLLVMIR of the bindings' C API, bound once."""
    from ..dialects import capi
    to_llvm = capi.library().mlirTranslateModuleToLLVMIR
    to_llvm.restype = ctypes.c_void_p
    to_llvm.argtypes = [ctypes.c_void_p, ctypes.c_void_p]  # (MlirOperation: one pointer)
    return to_llvm


def compile_parts(code: bytes | str, assignment: dict[str, int], parts: int,
                  folder: str | None, cpu: str, quick: bool = False) -> list:
    """Object files of the LLVM module `code` (bitcode or IR text), the functions shared
    out among `parts` threads by `assignment` (share_out), each part optimized at O3 and
    compiled for `cpu`, position independent: their paths in `folder`, or (folder None)
    their bytes. `quick`: no optimization and LLVM's fast code generation (-O0) instead, the
    first tier of passes/tiering.py: 5-8x less time, 10-20x slower code."""
    from . import llvm_capi
    from .artifact import host_triple
    lib = llvm_capi.library()
    data = code.encode() if isinstance(code, str) else code
    paths = [folder and os.path.join(folder, f"part{i}.o") for i in range(parts)]
    objects: list = paths[:]
    failures: list[str] = []

    def compile_part(index):
        try:
            made = _compile_part(lib, data, index, parts, assignment, host_triple(), cpu,
                                 paths[index], quick)
            objects[index] = paths[index] or made
        except llvm_capi.LLVMError as e:
            failures.append(f"LLVM failed on part {index}: {e}")
    host_triple()  # (its first call loads nothing in the threads)
    pending = iter(range(parts))
    lock = threading.Lock()

    def worker():
        while True:
            with lock:
                index = next(pending, None)
            if index is None:
                return
            compile_part(index)
    threads = [threading.Thread(target=worker) for _ in range(1, min(parts, codegen_threads()))]
    for t in threads:
        t.start()
    worker()
    for t in threads:
        t.join()
    if failures:
        raise CompileError([Diagnostic("error", "", 0, 0, failures[0])], "obj")
    return objects


def _compile_part(lib, data, index, parts, assignment, triple, cpu, path, quick=False):
    keep = (lambda module: _keep_part(lib, module, index, assignment)) if parts > 1 else None
    return _compile(lib, data, triple, cpu, 0 if quick else 3, keep, path)


def compile_object(code: bytes, cpu: str, opt_level: int = 3) -> bytes:
    """The position-independent object file of the whole LLVM module `code` (bitcode),
    optimized at `opt_level` (`default<On>`, code generation at the same level) for `cpu`:
    the code of a module too small for threads (runtime/cpu.CpuExecutable links it into
    the process)."""
    from . import llvm_capi
    from .artifact import host_triple
    try:
        return _compile(llvm_capi.library(), code, host_triple(), cpu, opt_level)
    except llvm_capi.LLVMError as e:
        raise CompileError([Diagnostic("error", "", 0, 0, f"LLVM failed: {e}")], "obj") from None


def _compile(lib, data, triple, cpu, opt_level, keep=None, path=None) -> bytes | None:
    """Parse, optimize and compile `data` in an LLVMContext of its own (so that threads may
    run it at once): into the file `path`, or returned as bytes. `keep(module)` first
    reduces the module to a part of it (_keep_part)."""
    from . import llvm_capi
    context = lib.LLVMContextCreate()
    module = machine = None
    try:
        module = llvm_capi.parse(lib, context, data)
        lib.LLVMSetTarget(module, triple.encode())
        if keep is not None:
            keep(module)
            if opt_level and _plain_entries(lib, module):
                opt_level = 0
        # (the C API's code generation levels are LLVM's: None 0 ... Aggressive 3)
        machine = llvm_capi.target_machine(lib, triple, cpu, opt_level)
        # (globaldce at O0 too: the bodies of what other parts define, OpenMP's outlined
        # regions of their functions and an entry's inlined body are dead here.
        # always-inline first: the entry's body, thousands of descriptor fields as its
        # parameters, is inlined before O3's interprocedural passes see it; there,
        # CalledValuePropagation took 1 s of MobileNetV2's step, 0.35 s in all after)
        llvm_capi.optimize(lib, module, machine,
                           f"always-inline,default<O{opt_level}>,globaldce")
        if not opt_level:
            return _emit(lib, module, machine, path)
        _entries_with_fast_isel(lib, module)
        _strength_reduce_marked(lib, module, machine)
        with llvm_capi.codegen_strength_reduction(False):
            return _emit(lib, module, machine, path)
    finally:
        if machine:
            lib.LLVMDisposeTargetMachine(machine)
        if module:
            lib.LLVMDisposeModule(module)
        lib.LLVMContextDispose(context)


def _emit(lib, module, machine, path):
    """The object code: into the file `path`, or returned as bytes (path None)."""
    from . import llvm_capi
    if path is None:
        return llvm_capi.emit_to_memory(lib, module, machine)
    llvm_capi.emit(lib, module, machine, path)
    return None


# LLVM's code generation starts with loop strength reduction (LSR) of every loop: 9-12% of
# the optimizing compile of a ResNet block's or LeNet5's training step, the most of any
# pass after instruction selection, and ~16% with what it makes the later passes do. It
# pays in the matmul kernels' register-tile loops (nine address streams over k: 512^3 and
# 100x300x200 matmuls 5-7% slower without it) and nowhere measurable else (the ResNet,
# MobileNetV2 and LeNet5 steps and a conv forward the same within noise, Intel Emerald
# Rapids). So code generation runs without it and the functions marked for it
# (ms-cpu-target-attributes: the matmul kernels) get it at the end of their optimization,
# as code generation would have run it (after canonicalizing freezes in loops): single-thread
# LLVM time of the ResNet step -10%, LeNet5's -8%, their matmuls as fast.
_STRENGTH_REDUCTION = "loop(canon-freeze,loop-reduce)"


def _strength_reduce_marked(lib, module, machine) -> list[str]:
    """LSR on the defined functions of `module` that carry STRENGTH_REDUCE_ATTR; their
    names."""
    from . import llvm_capi
    from .cpu_target import STRENGTH_REDUCE_ATTR
    done = []
    for function in llvm_capi.functions(lib, module):
        if not lib.LLVMIsDeclaration(function) and llvm_capi.has_string_attribute(
                lib, function, STRENGTH_REDUCE_ATTR):
            llvm_capi.optimize_function(lib, function, machine, _STRENGTH_REDUCTION)
            done.append(llvm_capi.name_of(lib, function))
    return done


# LLVM-dialect operations of an entry (its C interface and body) from which share_out gives
# it a part of its own, compiled at O0 (_plain_entries): a large network's entry is one
# basic block of descriptor fields, allocations and calls, and LLVM's O3 took seconds on it
# (MobileNetV2's training step with BatchNorm in training mode: 18,000 instructions after
# inlining; O3 0.85 s, then greedy register allocation 1.2 s even with FastISel).
PLAIN_ENTRY_OPS = 4000


def _plain_entries(lib, module) -> bool:
    """Whether a part defines entries only (C interfaces and their bodies), at least one of
    FAST_ISEL_INSTRUCTIONS instructions or more: share_out's part of a large entry."""
    from . import llvm_capi
    from .symbols import C_INTERFACE, PREFIX
    local = (llvm_capi.INTERNAL_LINKAGE, llvm_capi.PRIVATE_LINKAGE)
    # (the OpenMP bodies of functions other parts define are still here, unused: globaldce
    # drops them after)
    defined = [f for f in llvm_capi.functions(lib, module) if not lib.LLVMIsDeclaration(f)
               and not (lib.LLVMGetLinkage(f) in local and not lib.LLVMGetFirstUse(f))]
    names = [llvm_capi.name_of(lib, f) for f in defined]
    entries = {n[len(C_INTERFACE):] for n in names if n.startswith(C_INTERFACE)}
    if not entries or any(not n.startswith(C_INTERFACE) and n[len(PREFIX):] not in entries
                          for n in names):
        return False
    return any(llvm_capi.has_instructions(lib, f, FAST_ISEL_INSTRUCTIONS) for f in defined)


# Instructions of an optimized entry (its C interface, the body inlined) from which code
# generation selects its instructions with FastISel. A large network's entry is one basic
# block of descriptor fields, allocations and calls, and SelectionDAG's time grows faster
# than the block (MobileNetV2's training step: 7,300 instructions, 2,000 calls, llc 1.6 s
# against 0.37 s with FastISel, while the other thread waited). What the entry runs is the
# kernels' and loops' code, compiled as before (the step's time did not change).
FAST_ISEL_INSTRUCTIONS = 3000


def _entries_with_fast_isel(lib, module):
    from . import llvm_capi
    from .symbols import C_INTERFACE
    for f in llvm_capi.functions(lib, module):
        if (not lib.LLVMIsDeclaration(f) and llvm_capi.name_of(lib, f).startswith(C_INTERFACE)
                and llvm_capi.has_instructions(lib, f, FAST_ISEL_INSTRUCTIONS)):
            llvm_capi.set_optnone(lib, f)


def _keep_part(lib, module, index, assignment):
    """Part `index` of the module: its functions defined (external, hidden, when local and
    another part calls them), the others' declared; global variables that are not private
    constants defined in part 0 only (hidden where they were local)."""
    from . import llvm_capi as c
    local = (c.INTERNAL_LINKAGE, c.PRIVATE_LINKAGE)
    # (read before any body is removed: a local function that only this part calls stays
    # local, so LLVM may drop it once inlined, as it does an entry's body)
    called_here = {c.name_of(lib, f) for f in c.functions(lib, module)
                   if assignment.get(c.name_of(lib, f)) == index
                   and lib.LLVMGetLinkage(f) in local
                   and _only_called_in(lib, f, index, assignment)}
    for f in c.functions(lib, module):
        name = c.name_of(lib, f)
        part = assignment.get(name)
        if part is None or lib.LLVMIsDeclaration(f):
            continue  # (a declaration, or what the translation added: with its caller)
        if part != index:
            _declare_instead(lib, module, f, name, hidden=lib.LLVMGetLinkage(f) in local)
        elif lib.LLVMGetLinkage(f) in local and name not in called_here:
            lib.LLVMSetLinkage(f, c.EXTERNAL_LINKAGE)
            lib.LLVMSetVisibility(f, c.HIDDEN_VISIBILITY)
    for g in c.globals_of(lib, module):
        linkage = lib.LLVMGetLinkage(g)
        if lib.LLVMIsDeclaration(g) or (linkage in local and lib.LLVMIsGlobalConstant(g)):
            continue
        if index != 0:
            lib.LLVMSetInitializer(g, None)
        if linkage in local or index != 0:
            lib.LLVMSetLinkage(g, c.EXTERNAL_LINKAGE)
        if linkage in local:  # (a global of the module's own: hidden in every part; an
            # external one keeps its visibility, which the most hidden reference would set
            # for the library: the Print hook must stay exportable)
            lib.LLVMSetVisibility(g, c.HIDDEN_VISIBILITY)


def _only_called_in(lib, function, index, assignment) -> bool:
    """Whether every use of `function` is a call from a function of part `index` (not from
    what the translation added, such as OpenMP's outlined bodies, which are in every part
    with their callers' calls)."""
    from . import llvm_capi as c
    callers = c.calling_functions(lib, function)
    return callers is not None and all(
        assignment.get(c.name_of(lib, caller)) == index for caller in callers)


def _declare_instead(lib, module, function, name: str, hidden: bool):
    """Replace a function defined in another part by a declaration of it (`hidden` for one
    local to the module: hidden where it is defined; the entry must keep its visibility,
    the linker would hide its definition too)."""
    from . import llvm_capi as c
    declaration = lib.LLVMAddFunction(module, b"", lib.LLVMGlobalGetValueType(function))
    lib.LLVMSetFunctionCallConv(declaration, lib.LLVMGetFunctionCallConv(function))
    lib.LLVMReplaceAllUsesWith(function, declaration)
    lib.LLVMDeleteFunction(function)
    encoded = name.encode()
    lib.LLVMSetValueName2(declaration, encoded, len(encoded))
    if hidden:
        lib.LLVMSetVisibility(declaration, c.HIDDEN_VISIBILITY)
