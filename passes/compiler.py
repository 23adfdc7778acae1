"""Compiler driver shared by jit, the CLIs and the tests: parse, verify, choose the entry, run
the pipeline (pipeline.run_pipeline), build an executable.

CPU machine code is made three ways, each for a reason of its own:
- in process, by LLVM's C API into objects in memory (one thread for a small module, one per
  core for a large one: passes/cpu_codegen.py) that an ORC JIT links into the process
  (runtime/cpu.CpuExecutable; compile_module: jit and `mscc --run`): no files, no tools,
  no linker before the first call (the MLIR ExecutionEngine where the C API cannot be
  loaded);
- the same objects linked by `cc -shared` (or as + ld) into a library
  (passes/artifact.py: `mscc -o NAME.msx`, `Compiled.save`, the tier-up of
  passes/tiering.py): a position-independent library that loads without MLIR on another
  machine of the same kind; `--emit=obj/asm` runs opt + llc;
- by linking that in-process object code (passes/exe_cache.py, the disk cache): a
  second process loads what the first compiled, and the first does not compile the module a
  second time (opt + llc in the background halved the speed of its parallel loops on a
  two-core machine).
All three start from the same `llvm` stage; the libraries export only the entry
(artifact.link_shared).
"""
from __future__ import annotations

import functools
import os
import re
import sys
import time
from dataclasses import dataclass

from mlir import ir

from ..dialects.builders import mlir_context, spec_of
from ..runtime.artifact import FORMAT, FORMAT_VERSION, spec_to_json
from . import pipeline
from .diagnostics import CompileError, Diagnostic, DiagnosticCapture, file_location
from .cpu_target import current
from ..dialects.ir_helpers import function_type, public_functions, symbol_name

_MULTIPLE_TOP_LEVEL = "source must contain a single top-level operation"
# A one-line attribute or type alias definition (`#map = affine_map<...>`) at the top level.
_ALIAS_LINE = re.compile(r"^[#!][\w.$-]+\s*=[^\n]*$", re.M)


def _wrapped_in_module(text: str) -> str:
    """Several top-level ops inside `module { ... }`, as mlir-opt reads them, on the same
    lines. Alias definitions must stay at the top level, outside the module: one-line ones
    are moved ahead of it, onto its first line (their lines left empty)."""
    aliases = [m.group(0) for m in _ALIAS_LINE.finditer(text)
               if all(m.group(0).count(a) == m.group(0).count(b) for a, b in ("()", "[]", "{}"))]
    body = text
    for alias in aliases:
        body = body.replace(alias, "", 1)
    return " ".join(aliases + ["module {" + body + "\n}"])


def parse_module(text: str, source_name: str = "<stdin>") -> ir.Module:
    """Parse (and verify the structure of) MLIR text, wrapping several top-level ops in a
    module as mlir-opt does. Raises CompileError with located diagnostics."""
    from .source_checks import check_parsed, check_source  # (text only: the jit builds its IR)
    problems = check_source(text, source_name)  # what would crash the parser, not fail
    if problems:
        raise CompileError(problems)
    ctx = mlir_context()
    with ctx, DiagnosticCapture(ctx) as capture:
        try:
            op = ir.Operation.parse(text, source_name=source_name)
        except ir.MLIRError as e:
            if _MULTIPLE_TOP_LEVEL not in str(e):
                capture.add_error(e)
                raise CompileError(_located(capture.errors, source_name)) from None
            # Same line numbers: the wrapper opens on line 1 and closes after the text.
            try:
                op = ir.Operation.parse(_wrapped_in_module(text), source_name=source_name)
            except ir.MLIRError as e2:
                capture.add_error(e2)
                raise CompileError(_located(capture.errors, source_name)) from None
        if op.operation.name == "builtin.module":
            module = _adopt(op)
        else:
            module = ir.Module.create(ir.Location.unknown())
            module.body.append(op)  # a freshly parsed op has no parent
    problems = check_parsed(module)
    if problems:
        raise CompileError(problems)
    return module


def _located(diags, source_name):
    """The parser's errors, each with a location: one MLIR gave without any (it fails on some
    custom-form ops without a diagnostic) is put at the start of the input, so the user
    still learns which file failed."""
    return [d if d.file else d._replace(file=source_name, line=1, col=1,
                                        message=f"could not parse the input: {d.message}")
            for d in diags]


def _adopt(module_op) -> ir.Module:
    """An ir.Module owning a parsed builtin.module operation."""
    module = ir.Module.create(module_op.location)
    for name in list(module_op.attributes):
        module.operation.attributes[name] = module_op.attributes[name]
    for op in list(module_op.regions[0].blocks[0].operations):
        op.detach_from_parent()
        module.body.append(op)
    return module


def clone_module(module: ir.Module) -> ir.Module:
    """A deep copy (the pipeline changes modules in place)."""
    with module.context:
        return _adopt(module.operation.clone())


@dataclass
class EntrySignature:
    name: str
    inputs: list    # TensorSpec
    outputs: list   # TensorSpec


def entry_signatures(module: ir.Module) -> list[EntrySignature]:
    """Public functions of an ms/linalg-level module with their tensor signatures."""
    out = []
    for fn in public_functions(module.operation):
        ftype = function_type(fn)
        ins = [spec_of(t) for t in ftype.inputs]
        outs = [spec_of(t) for t in ftype.results]
        name = symbol_name(fn)
        if not name:  # nothing can call it, and LLVM cannot name it
            raise CompileError([Diagnostic("error", *_where(fn), "entry function has an empty "
                                           "name")])
        if any(s is None for s in ins + outs):
            raise CompileError([Diagnostic(
                "error", *_where(fn), f"entry '{name}' must take and return statically "
                "shaped tensors of supported element types")])
        out.append(EntrySignature(name, ins, outs))
    return out


def _where(op):
    return file_location(op.location)


def _module_where(module: ir.Module):
    """(file, line, col) for a problem with the module as a whole: its own location, else
    its first operation's (a module made around a parsed top-level op has none)."""
    where = _where(module.operation)
    ops = module.body.operations
    if not where[0] and len(ops):
        where = _where(ops[0])
    return where


def select_entry(module: ir.Module, entry: str | None = None) -> EntrySignature:
    """The signature of `entry` (default: the only public function)."""
    sigs = {s.name: s for s in entry_signatures(module)}
    if entry is None:
        if len(sigs) != 1:
            raise CompileError([Diagnostic("error", *_module_where(module),
                                           f"module has {len(sigs)} public functions "
                                           f"({', '.join(sigs) or 'none'}); name the entry")])
        entry = next(iter(sigs))
    if entry not in sigs:
        raise CompileError([Diagnostic("error", *_module_where(module),
                                       f"no public function '{entry}'")])
    return sigs[entry]


def compile_module(module: ir.Module, entry: str | None = None, target="cpu", opt_level=3,
                   start_after=None, tiered=False):
    """Lower an ms module (changed in place) and return an executable for `entry`
    (default: the only public function): in-process for the CPU; for CUDA the artifact's
    loaded executable (it needs a GPU and cuda-bindings). `start_after` names the stage the
    module is at already (None: as traced or parsed). `tiered`: the CPU executable may be
    unoptimized code whose optimized form is compiled in the background (passes/tiering.py:
    then its `tier_up` says when that is ready)."""
    sig = select_entry(module, entry)
    if target == "cuda":
        from .artifact import build_artifact
        return build_artifact(module, sig.name, "cuda", start_after=start_after).load()
    if target != "cpu":
        raise CompileError([Diagnostic("error", "", 0, 0, f"unknown target '{target}'")])
    from . import exe_cache
    t0 = time.perf_counter()
    key = exe_cache.key_for(module, sig.name, target, start_after) if exe_cache.cache_dir() else None
    cached = exe_cache.load(key) if key else None
    if cached is not None:
        cached.compile_times = {"disk-cache": time.perf_counter() - t0}
        return cached
    store = None
    if tiered:  # where the optimized code goes once the background compile has it
        store = functools.partial(exe_cache.store_artifact, key) if key else (lambda a: None)
    exe = _compile_in_process(module, sig, opt_level, start_after, store)
    if getattr(exe, "tier_up", None) is not None:
        pass  # (the unoptimized tier is never stored: its tier-up stores the optimized one)
    elif key:  # its machine code becomes the cache entry, linked in the background
        exe_cache.store_later(key, exe, entry_manifest(sig, target, exe.dynamic_description))
    if os.environ.get("MSCC_TIME_REPORT"):
        print(time_report(sig.name, exe.compile_times), file=sys.stderr)
        print(pass_report(sig.name, exe.pass_times), file=sys.stderr)
    return exe


def _compile_in_process(module, sig: EntrySignature, opt_level, start_after, tier_store=None):
    """The CPU pipeline through `llvm`, then the machine code (tiered when `tier_store` is
    given and tiering.should_tier says so: passes/tiering.py); the executable's
    `compile_times` holds the seconds of every stage and of the machine code, and under
    MSCC_TIME_REPORT `pass_times` those of every pass, in order ((name, seconds) pairs)."""
    from . import tiering
    times, passes = {}, []
    # Timing every pass runs each upstream pass in a PassManager of its own: only on request.
    on_pass = (lambda step, t: passes.append((step.name, t))) if os.environ.get(
        "MSCC_TIME_REPORT") else None
    run = functools.partial(pipeline.run_pipeline, module, "cpu", on_stage=times.__setitem__,
                            on_pass=on_pass)
    if (tier_store is not None and opt_level == 3
            and "bufferized" in pipeline.stages_between("cpu", start_after, "llvm")):
        # (whether to tier is decided on the module's buffers)
        run(stop_after="bufferized", start_after=start_after)
        start_after = "bufferized"
        if tiering.should_tier(module):
            exe = _tiered(module, sig, run, times, tier_store)
            exe.compile_times, exe.pass_times = times, passes
            return exe
    run(stop_after="llvm", start_after=start_after)
    t0 = time.perf_counter()
    exe = _machine_code(module, sig, opt_level)
    times["codegen"] = time.perf_counter() - t0  # LLVM optimization and machine code
    exe.compile_times, exe.pass_times = times, passes
    return exe


def _machine_code(module, sig: EntrySignature, opt_level):
    """The executable of a module at the `llvm` stage, its code linked into the process
    (`exe.artifact` None: the disk cache links a library of it in the background): compiled
    by several threads when the module is large (passes/cpu_codegen.py), else by one."""
    from ..runtime.cpu import in_process_executable
    from . import cpu_codegen
    parts, sizes = cpu_codegen.plan(module) if opt_level == 3 else (0, None)
    if parts > 1:
        exe = _threaded(module, sig, cpu_codegen.translate(module), sizes, parts,
                        current().cpu)
    else:
        with module.context:
            exe = in_process_executable(module, sig.name, sig.inputs, sig.outputs,
                                        opt_level=opt_level,
                                        dynamic=dynamic_description(module, sig.name))
    exe.artifact = None
    return exe


def _threaded(module, sig: EntrySignature, code, sizes, parts: int, cpu: str, quick=False):
    """The executable of `code` (the module's LLVM bitcode) compiled for `cpu` by `parts`
    threads into objects in memory, which the process links (runtime/jit_code.py): no
    linker before the first call (its ~20-30 ms now runs in the disk cache's background
    link)."""
    from ..runtime.cpu import CpuExecutable
    from . import cpu_codegen
    objects = cpu_codegen.compile_parts(code.bitcode, cpu_codegen.share_out(sizes, parts),
                                        parts, None, cpu, quick)
    return CpuExecutable.from_objects(objects, sig.name, sig.inputs, sig.outputs, code.openmp,
                                      code.prints, dynamic_description(module, sig.name))


def _tiered(module, sig: EntrySignature, run, times, tier_store):
    """The quick tier of a bufferized module (passes/tiering.py): lowered without the
    passes that only make code faster (pipeline.QUICK_STAGES) and compiled at -O0, not
    stored (`artifact` None); its `tier_up` lowers a copy of the module with every pass and
    compiles it at -O3 in the background."""
    from . import cpu_codegen, tiering
    target = current()  # (both tiers: the environment may change before the background one)
    optimized = clone_module(module)
    run(stop_after="llvm", start_after="bufferized", quick=True)
    t0 = time.perf_counter()
    parts, sizes = cpu_codegen.plan_with_sizes(module)
    if sizes is None:  # (an op without a translation: the optimized compile reports it)
        pipeline.run_pipeline(optimized, "cpu", stop_after="llvm", start_after="bufferized")
        return _machine_code(optimized, sig, 3)
    code = cpu_codegen.translate(module)
    exe = _threaded(module, sig, code, sizes, parts, target.cpu, quick=True)
    times["codegen"] = time.perf_counter() - t0
    exe.artifact = None
    manifest = entry_manifest(sig, "cpu", dynamic_description(module, sig.name))
    exe.tier_up = tiering.TierUp(
        functools.partial(_optimized_artifact, optimized, sig, manifest, target), tier_store)
    return exe


# The longest the tier-up's lowering waits, between two passes, for a thread blocked on the
# compiler lock to take it (it takes it in microseconds on an idle machine).
HANDOVER_SECONDS = 0.5


def _optimized_artifact(module, sig: EntrySignature, manifest, target):
    """The tier-up's build (in its background thread): the bufferized `module` through the
    `llvm` stage for `target`, then its library compiled at -O3 on the threads its size
    gives it. The MLIR part holds the compiler lock (the program's thread shares the
    context) but lets it go after every pass, so that the program's own compiles come first
    (a PyNative step's next graph waits one pass, not the whole stage: LeNet5's first
    PyNative step 0.93-1.14 s with the lock held through the stage, 0.62-0.64 s so);
    LLVM's part runs without it."""
    from ..pyfront.state import compiler_lock
    from . import cpu_codegen
    from .artifact import code_artifact
    from .cpu_target import pinned_target

    def let_the_program_compile(step, seconds):
        if not compiler_lock.waiting():
            return
        compiler_lock.release()
        # until the waiting thread has it (it then holds it through its compile); bounded,
        # in case the waiter gave up
        give_up = time.monotonic() + HANDOVER_SECONDS
        while compiler_lock.waiting() and time.monotonic() < give_up:
            time.sleep(0.0002)
        compiler_lock.acquire()
    with compiler_lock, pinned_target(target):
        pipeline.run_pipeline(module, "cpu", stop_after="llvm", start_after="bufferized",
                              on_pass=let_the_program_compile)
        parts, sizes = cpu_codegen.plan_with_sizes(module)
        code = cpu_codegen.translate(module)
    return code_artifact(code, sizes, parts, sig, manifest, target.cpu, target.features)


def dynamic_description(module, entry: str):
    """What convert-ms-to-linalg recorded about the entry's dynamic sizes (its results'
    sizes, the checks a call must pass: runtime/dynamic.py), or None for static shapes."""
    import json
    from .ms_to_linalg import DYNAMIC_ATTR
    attrs = module.operation.attributes
    name = DYNAMIC_ATTR + entry
    if name not in attrs:
        return None
    return json.loads(ir.StringAttr(attrs[name]).value)


def entry_manifest(sig: EntrySignature, target: str, dynamic=None) -> dict:
    """The artifact manifest's description of an entry (runtime/artifact.py); `dynamic`
    describes its dynamic sizes (dynamic_description)."""
    manifest = {"format": FORMAT, "version": FORMAT_VERSION, "target": target,
                "entry": sig.name, "inputs": [spec_to_json(s) for s in sig.inputs],
                "outputs": [spec_to_json(s) for s in sig.outputs]}
    if dynamic is not None:
        manifest["dynamic"] = dynamic
    return manifest


def time_report(entry, times) -> str:
    """Compile times of one entry by stage (MSCC_TIME_REPORT=1 prints it for every compile)."""
    total = sum(times.values())
    parts = ", ".join(f"{name} {t * 1e3:.1f}" for name, t in times.items())
    return f"mscc: compiled '{entry}' in {total * 1e3:.1f} ms ({parts})"


def pass_report(entry, pass_times) -> str:
    """Times of one entry's passes in pipeline order, in ms, options left out (printed after
    time_report under MSCC_TIME_REPORT=1)."""
    parts = ", ".join(f"{re.sub(r'{[^{}]*}', '', name)} {t * 1e3:.1f}" for name, t in pass_times)
    return f"mscc: passes of '{entry}' ({parts})"
