"""The one compilation pipeline: pass order and the named stages where it can stop.

Stages, in order (DESIGN.md): ms (as traced or parsed) -> ms-opt (front-end passes) -> linalg
-> bufferized -> llvm (LLVM dialect) -> llvm-ir (textual LLVM IR) for the CPU; for CUDA the
same stages through bufferized, then gpu (host functions launching outlined gpu.func kernels)
-> ptx (kernels compiled to PTX in gpu.binary ops; the host side stays at the memref level and
becomes the launch plan, passes/launch_plan.py); then obj for both (the CPU's ELF object, the
kernels' cubin: passes/artifact.emit_stage). jit, the mscc CLI, ms-opt and the tests all take
their pass lists from here.

A step is written in MLIR's textual pipeline syntax; names of mscc passes (passes.base.PASSES)
run as Python passes, everything else runs in an upstream PassManager.
"""
from __future__ import annotations

import contextlib
import os
import re
import time
from dataclasses import dataclass

from mlir import ir, passmanager

from ..dialects.builders import mlir_context
from . import base
from .diagnostics import CompileError, Diagnostic, DiagnosticCapture, file_location
# Importing the pass modules registers them.
from . import (autodiff, canonicalize, const_input_to_attr, cpu, cpu_alias_scopes, cpu_cold_loops, cpu_matmul_calls, cpu_dynamic, cpu_fuse_pairs, cpu_fuse_siblings, cpu_kernel_dest, cpu_loops, cpu_memset, cpu_merge, cpu_merge_constants, cpu_outline, cpu_prefetch, cpu_target,  # noqa: F401,E402
               buffer_lifetimes, cpu_collapse, cpu_huge_pages, cpu_rows, cpu_terms, cpu_transpose, cpu_zero_init, destination_passing, expand, fusion,
               implicit_cast, inline, math_approx, ms_to_linalg, outline, simplify_broadcasts, split_deallocs, symbols, verify)

# The CUDA target's pass modules register their passes when a pipeline first names one: the
# CPU target's first compile does not import the gpu dialect's Python modules for them.
_CUDA_PASS_MODULES = ("gpu", "gpu_control", "gpu_conv")


def mscc_pass(name: str):
    """The class of the mscc pass `name`, or None for an upstream pass."""
    if name not in base.PASSES and name.startswith("ms-"):
        load_all_passes()
    return base.PASSES.get(name)


def load_all_passes():
    import importlib
    for module in _CUDA_PASS_MODULES:
        importlib.import_module(f"{__package__}.{module}")

# allow-return-allocs-from-loops: a loop body that yields a new buffer (its carry computed
# into a fresh tensor, not in place) gets it handed to the next iteration; the deallocation
# pipeline frees the previous one.
BUFFERIZE = ("one-shot-bufferize{bufferize-function-boundaries=1 "
             "function-boundary-type-conversion=identity-layout-map "
             "allow-return-allocs-from-loops=1}")

# buffer-deallocation-pipeline, step by step. The CPU target takes the buffers that need no
# runtime alias check out of each bufferization.dealloc before the simplification, whose
# time grows with the square of a dealloc's buffers (passes/split_deallocs.py: MobileNetV2's
# step 240 -> 25 ms); the CUDA target drops some deallocations between the simplification
# and their lowering to host code.
_OWNERSHIP = ("canonicalize", "ownership-based-buffer-deallocation", "canonicalize")
_DEALLOC_LOWER = ("bufferization-lower-deallocations", "cse", "canonicalize")
_CPU_DEALLOC = (("expand-realloc{emit-deallocs=false}",) + _OWNERSHIP
                + ("ms-split-fresh-deallocs", "buffer-deallocation-simplification")
                + _DEALLOC_LOWER)
_CUDA_DEALLOC = (("expand-realloc",) + _OWNERSHIP
                 + ("buffer-deallocation-simplification", "ms-gpu-drop-control-deallocs")
                 + _DEALLOC_LOWER)


def _bufferize(*extra, dealloc=_CPU_DEALLOC):
    """Destination-passing entries, then one-shot bufferization with caller-owned outputs
    and the `dealloc` steps."""
    return ("bufferized", ("ms-entry-dps", "eliminate-empty-tensors", BUFFERIZE,
                           "drop-equivalent-buffer-results") + dealloc
            + ("ms-bool-buffers-as-bytes", "convert-bufferization-to-memref") + extra
            + ("canonicalize",))


# The stages every target shares: tracing, the front-end passes, autodiff, fusion, linalg.
_FRONT_STAGES = (
    ("ms", ("ms-verify",)),
    ("ms-opt", ("ms-const-input-to-attr", "ms-implicit-cast", "ms-verify", "ms-autodiff",
                "ms-inline", "ms-expand-composites", "ms-simplify-broadcasts", "ms-canonicalize",
                "ms-fuse")),
)
# bfloat16 math (exp, erf, ...) has neither polynomials here nor LLVM/libm forms: it is
# computed in float32 (extf, the float32 op, truncf), before the float32 polynomials are made.
_BF16_MATH = "func.func(math-extend-to-supported-types{extra-types=f16 target-type=f32})"

_CPU_STAGES = _FRONT_STAGES + (
    ("linalg", ("convert-ms-to-linalg", "ms-cpu-materialize-transposes", "ms-outline-matmul",
                "canonicalize", "cse")),
    # small buffers (per-row results of small reductions, scalars) go on the stack
    _bufferize("func.func(promote-buffers-to-stack{max-alloc-size-in-bytes=4096})",
               "ms-keep-heap-buffers", "ms-late-alloc", "ms-early-dealloc"),
    ("llvm", ("ms-cpu-kernel-dest", "ms-cpu-kernel-zero-init", "ms-cpu-internal-symbols", "ms-cpu-fuse-elementwise-pairs", "ms-cpu-fuse-sibling-loops", "ms-cpu-tile-rows", "ms-cpu-store-terms", "ms-cpu-merge-kernels", "ms-cpu-dynamic-matmul", "ms-cpu-matmul-schedule", "ms-cpu-merge-scheduled-kernels", "ms-cpu-vectorize-transposes",
              "ms-cpu-strided-copies", "ms-cpu-parallelize", _BF16_MATH, "ms-cpu-math-approx", "ms-cpu-collapse-dims", "ms-cpu-fills-as-memset", "func.func(convert-linalg-to-loops)", "ms-cpu-promote-accumulators", "ms-cpu-prefetch-b",
              "ms-cpu-outline-loops", "ms-cpu-merge-loops", "ms-cpu-local-functions", "ms-cpu-cold-loops", "ms-cpu-distinct-buffers", "ms-cpu-lower-forall",
              # Lowerings that work within a function run nested in func.func: MLIR's pass
              # manager runs them on the functions in parallel (LeNet5's step: the llvm
              # stage 333-401 -> 312-338 ms on 2 cores); the others need the module.
              "func.func(convert-vector-to-scf)", "convert-math-to-funcs",
              "ms-cpu-huge-pages", "func.func(expand-strided-metadata,lower-affine)",
              # before convert-scf-to-cf: the OpenMP regions hold memref.alloca_scope ops,
              # whose region must stay a single block ("expects region #0 to have 0 or 1
              # blocks" otherwise)
              "finalize-memref-to-llvm", "ms-cpu-loop-hints",
              "func.func(convert-scf-to-cf,convert-vector-to-llvm)", "convert-to-llvm",
              "reconcile-unrealized-casts",
              # The lowerings build a memref descriptor (a struct of insertvalues) for every
              # view and take it apart again at each use: folded here, LLVM translates,
              # optimizes and compiles a quarter to a third less IR (a LeNet5 step's -O0
              # code: insert/extractvalue 6.3K -> 1.1K, its quick compile ~8% sooner), and
              # the OpenMP fork wrappers, whose packed arguments LLVM does not fold, shrink
              # by half. (Region simplification finds nothing here and costs a third more.)
              "llvm.func(canonicalize{region-simplify=disabled},cse)",
              "ms-cpu-merge-constant-variants", "ms-cpu-alias-scopes", "ms-cpu-c-interface-names", "ms-cpu-private-entry-bodies",
              "ms-cpu-target-attributes")),
)

# The GPU architecture the CUDA target compiles for (PTX ISA 8.0: CUDA 12 and later drivers).
CUDA_CHIP = "sm_90"
CUDA_FEATURES = "+ptx80"

_CUDA_STAGES = _FRONT_STAGES + (
    # Each region of a loop or conditional becomes a function with its own launch plan
    # (passes/gpu_control.py); index arithmetic on 0-d tensors it leaves becomes kernels.
    ("linalg", ("ms-gpu-reject-collectives",
                "convert-ms-to-linalg{scatter=reduction conv=implicit-gemm rows=gather}",
                "ms-gpu-outline-control-flow", "func.func(convert-elementwise-to-linalg)",
                "ms-outline-matmul{epilogues=false}", "canonicalize", "cse")),
    _bufferize(dealloc=_CUDA_DEALLOC),
    # Matmul kernel functions are scheduled while still isolated, then everything is inlined
    # into the entry, whose remaining linalg ops each become one gpu.launch; linalg left
    # inside launches (the per-thread matmul tiles and tile copies) becomes loops.
    ("gpu", ("ms-gpu-matmul-schedule", "inline", "symbol-dce", "canonicalize",
             "linalg-generalize-named-ops", "ms-gpu-conv-implicit-gemm", "ms-gpu-map-linalg",
             "func.func(convert-linalg-to-loops)", _BF16_MATH, "convert-math-to-funcs",
             "gpu-launch-sink-index-computations", "ms-gpu-dynamic-kernel-params",
             "gpu-kernel-outlining", "ms-gpu-single-module", "ms-gpu-fma-contract",
             "canonicalize", "cse")),
    # Device code only: the host functions stay at the memref level for the launch plan.
    # Kernel parameters are bare pointers (one .u64 per memref).
    ("ptx", ("gpu.module(convert-vector-to-scf,convert-scf-to-cf,"
             "expand-strided-metadata,lower-affine,"
             "convert-gpu-to-nvvm{use-bare-ptr-memref-call-conv=1},"
             # What convert-gpu-to-nvvm leaves: strided vector inserts of the matmul
             # tiles, integer abs. (Before it, workgroup memory spaces cannot convert.)
             "convert-vector-to-llvm,convert-math-to-llvm,"
             "canonicalize,cse,reconcile-unrealized-casts)",
             f"nvvm-attach-target{{chip={CUDA_CHIP} features={CUDA_FEATURES} O=3}}",
             "gpu-module-to-binary{format=isa}")),
)

TARGET_STAGES = {"cpu": _CPU_STAGES, "cuda": _CUDA_STAGES}

# The CPU passes that only make the code faster (the IR is valid and computes the same
# without them): the first tier of a tiered compile (passes/tiering.py) lowers without them,
# for LLVM to compile at -O0. Dropped together, LeNet5's training step's llvm stage took
# ~130 ms instead of ~380 and its -O0 code generation ~40 ms instead of ~135 (one thread):
# the matmul schedule's register tiles are most of both.
CPU_SPEED_ONLY = frozenset((
    "ms-cpu-kernel-dest", "ms-cpu-kernel-zero-init", "ms-cpu-fuse-elementwise-pairs",
    "ms-cpu-fuse-sibling-loops", "ms-cpu-tile-rows", "ms-cpu-store-terms",
    "ms-cpu-merge-kernels", "ms-cpu-dynamic-matmul", "ms-cpu-matmul-schedule",
    "ms-cpu-merge-scheduled-kernels", "ms-cpu-vectorize-transposes", "ms-cpu-parallelize",
    "ms-cpu-collapse-dims", "ms-cpu-promote-accumulators", "ms-cpu-prefetch-b",
    "ms-cpu-outline-loops", "ms-cpu-merge-loops", "ms-cpu-distinct-buffers",
    "ms-cpu-huge-pages", "ms-cpu-loop-hints", "ms-cpu-merge-constant-variants",
    "ms-cpu-alias-scopes"))
# What the quick tier runs instead: its matmuls call a compiled matrix product.
_CPU_QUICK_INSTEAD = {"ms-cpu-matmul-schedule": "ms-cpu-matmul-calls"}
# {target: {stage: its steps in the quick tier}}: the stages a quick compile runs differently.
QUICK_STAGES = {"cpu": {"llvm": tuple(_CPU_QUICK_INSTEAD.get(step, step)
                                      for step in dict(_CPU_STAGES)["llvm"]
                                      if step not in CPU_SPEED_ONLY
                                      or step in _CPU_QUICK_INSTEAD)}}
# Stages produced by exporting the final module rather than by passes, per target.
EXPORT_STAGES = {"cpu": ("llvm-ir", "asm", "obj"), "cuda": ("plan", "obj")}


def stage_names(target="cpu"):
    return [name for name, _ in TARGET_STAGES[target]] + list(EXPORT_STAGES[target])


# ------------------------------------------------------------------ steps

@dataclass
class Step:
    """One pipeline element: an mscc pass instance, or upstream pipeline text."""
    text: str
    mscc_pass: base.ModulePass | None = None

    @property
    def name(self):
        return self.mscc_pass.name if self.mscc_pass else self.text


def split_top_level(text: str) -> list[str]:
    """Split `a,b{x=1},func.func(c,d)` at the commas outside brackets."""
    parts, depth, cur = [], 0, []
    for ch in text:
        if ch in "({":
            depth += 1
        elif ch in ")}":
            depth -= 1
            if depth < 0:
                raise ValueError(f"unbalanced ')' or '}}' in pipeline '{text}'")
        if ch == "," and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    if depth:
        raise ValueError(f"unbalanced '(' or '{{' in pipeline '{text}'")
    if "".join(cur).strip():
        parts.append("".join(cur).strip())
    return [p for p in parts if p]


_valid_upstream: set = set()  # upstream step texts that parsed


def parse_step(text: str) -> Step:
    name, _, rest = text.partition("{")
    name = name.strip()
    cls = mscc_pass(name)
    if cls is not None:
        options = rest[:-1] if rest.endswith("}") else ""
        return Step(text, cls.from_text(options))
    if "(" not in name:
        if text in _valid_upstream:  # (every compile parses the pipeline's steps again)
            return Step(text)
        # Validate upstream names now, so a typo is reported before anything runs.
        try:
            passmanager.PassManager.parse(f"builtin.module({text})", context=mlir_context())
            _valid_upstream.add(text)
        except (ValueError, ir.MLIRError) as e:
            lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
            reason = next((ln.split("error: ", 1)[1] for ln in lines if "error: " in ln),
                          "; ".join(lines))
            raise ValueError(reason) from None
    else:
        for inner in split_top_level(text[text.index("(") + 1:text.rindex(")")]):
            if mscc_pass(inner.partition("{")[0].strip()) is not None:
                raise ValueError(f"mscc pass '{inner}' runs on the module; schedule it at "
                                 f"the top level, not inside '{name.partition('(')[0]}'")
    return Step(text)


def parse_pipeline(text: str) -> list[Step]:
    """Parse `builtin.module(...)` (or a bare comma-separated list) into steps."""
    text = text.strip()
    if text.startswith("builtin.module(") and text.endswith(")"):
        text = text[len("builtin.module("):-1]
    return [parse_step(p) for p in split_top_level(text)]


def stage_steps(target="cpu") -> list[tuple[str, list[Step]]]:
    return [(name, [parse_step(s) for s in steps]) for name, steps in TARGET_STAGES[target]]


# ------------------------------------------------------------------ running

VERIFY_EACH_ENV = "MSCC_VERIFY_EACH"


def run_steps(module: ir.Module, steps, *, after_each=None, stage=None, on_pass=None,
              verify_each=None):
    """Run steps in order; consecutive upstream steps share one PassManager unless
    `after_each(step, module)` wants to see the IR after every step, or `on_pass(step,
    seconds)` wants the time of every step (MSCC_TIME_REPORT).

    `verify_each` (default: MSCC_VERIFY_EACH=1, or `after_each` given) verifies the IR
    after every pass, as mlir-opt does (ms-opt and the test suite turn it on);
    otherwise the module is verified once, after the last step: the verifier after every
    pass was 8% of a training step's compile (ViT layer 1.12-1.21 -> 1.03-1.07 s).

    Raises CompileError with the located diagnostics on failure."""
    ctx = module.context
    one_by_one = after_each is not None or on_pass is not None
    if verify_each is None:
        verify_each = after_each is not None or os.environ.get(VERIFY_EACH_ENV) == "1"
    with DiagnosticCapture(ctx) as capture:
        pending: list[Step] = []

        def flush():
            if not pending:
                return
            pm = passmanager.PassManager.parse(
                "builtin.module(" + ",".join(s.text for s in pending) + ")", context=ctx)
            pm.enable_verifier(verify_each)
            t0 = time.perf_counter()
            try:
                with _codegen_settings(pending):
                    pm.run(module.operation)
            except ir.MLIRError as e:
                capture.add_error(e)
                raise CompileError(capture.errors or capture.diagnostics, stage) from None
            else:
                if on_pass:  # one step pending: one_by_one flushes each
                    on_pass(pending[0], time.perf_counter() - t0)
            finally:
                if after_each:
                    for s in pending:
                        after_each(s, module)
                pending.clear()

        for step in steps:
            if step.mscc_pass is None:
                pending.append(step)
                if one_by_one:
                    flush()
                continue
            flush()
            t0 = time.perf_counter()
            _run_mscc_pass(step, module, capture, stage)
            if on_pass:
                on_pass(step, time.perf_counter() - t0)
            if verify_each:  # (the PassManager verifies after the upstream passes)
                _verify(module, capture, stage)
            if after_each:
                after_each(step, module)
        flush()
        if not verify_each and steps:
            _verify(module, capture, stage)


def _codegen_settings(steps):
    """gpu-module-to-binary's NVPTX code generation with LLVM's loop strength reduction, which
    the CPU code generation turns off process-wide while it runs (passes/llvm_capi.py)."""
    if not any(s.text.split("{")[0] == "gpu-module-to-binary" for s in steps):
        return contextlib.nullcontext()
    from .llvm_capi import codegen_strength_reduction
    return codegen_strength_reduction(True)


def _run_mscc_pass(step: Step, module: ir.Module, capture, stage):
    """One of mscc's Python passes; its failure a CompileError with what `capture` caught."""
    try:
        with module.context, ir.Location.unknown():
            step.mscc_pass.run(module.operation)
    except base.PassFailure:
        raise CompileError(capture.errors, stage) from None
    except ir.MLIRError as e:
        capture.add_error(e)
        raise CompileError(capture.errors, stage) from None


def _verify(module: ir.Module, capture, stage):
    """The MLIR verifier on the whole module; invalid IR is a located CompileError."""
    try:
        module.operation.verify()
    except ir.MLIRError as e:
        capture.add_error(e)
        raise CompileError(capture.errors or capture.diagnostics, stage) from None


def stages_between(target: str, start_after: str | None, stop_after: str) -> list[str]:
    """The names of the pass stages that take a module at `start_after` (None: as traced or
    parsed) to `stop_after`, in order: empty when it is there already. Unknown names, and a
    module already past `stop_after`, are errors (ValueError)."""
    if target not in TARGET_STAGES:
        raise ValueError(f"unknown target '{target}'; targets: {', '.join(TARGET_STAGES)}")
    names = [n for n, _ in TARGET_STAGES[target]]
    for what, name in (("stage", stop_after), ("start stage", start_after)):
        if name is not None and name not in names:
            exported = " (an exported form, not a pass stage)" if name in stage_names(target) else ""
            raise ValueError(f"unknown {what} '{name}'{exported}; pass stages of {target}: "
                             f"{', '.join(names)}")
    first = names.index(start_after) + 1 if start_after is not None else 0
    last = names.index(stop_after)
    if first > last + 1:
        raise ValueError(f"cannot stop after '{stop_after}': the module is already at the "
                         f"later stage '{start_after}'")
    return names[first:last + 1]


def run_pipeline(module: ir.Module, target="cpu", stop_after="llvm", after_each=None,
                 start_after=None, on_stage=None, on_pass=None, quick=False):
    """The pipeline driver: run the stages after `start_after` (None: from the beginning)
    through `stop_after` (see stages_between). `after_each(step, module)` sees the IR after
    every pass; `on_stage(name, seconds)` is told how long each stage took, `on_pass(step,
    seconds)` each pass. `quick`: the stages of QUICK_STAGES without the passes that only
    make the code faster. Returns the module (changed in place); raises CompileError at the
    first failing pass."""
    steps = dict(TARGET_STAGES[target]) if target in TARGET_STAGES else {}
    if quick:
        steps.update(QUICK_STAGES.get(target, {}))
    for name in stages_between(target, start_after, stop_after):
        t0 = time.perf_counter()
        run_steps(module, [parse_step(s) for s in steps[name]], after_each=after_each,
                  stage=name, on_pass=on_pass)
        if on_stage is not None:
            on_stage(name, time.perf_counter() - t0)
    return module


# ------------------------------------------------------------------ export

# What LLVM IR has no type for, though MLIR's LLVM dialect may hold it: integers of 0 bits
# or more than 2**23 (MLIR's go to 2**24 - 1), signed or unsigned integers, floats other
# than f16, bf16, f32, f64, f80 and f128 (tf32, the f8/f6/f4 kinds), index, none, complex,
# tensor and memref. mlir-translate asserts or crashes on them (IR fuzzing, bench/fuzz_ir.py
# --own-passes: `llvm.alloca ... x i0`, seed 44; a getelementptr's element type tf32, seed
# 58). mscc makes none of them; IR read from a file may hold any.
_TYPE_WORD = re.compile(r"(?<![\w$.%#!@^-])(?:[su]?i\d+|f\d+\w*|bf16|tf32|index|none|complex|"
                        r"tensor|memref)\b")
_QUOTED = re.compile(r'"(?:[^"\\]|\\.)*"')
_LLVM_FLOATS = frozenset(("f16", "bf16", "f32", "f64", "f80", "f128"))
LLVM_MAX_INT_BITS = 1 << 23


def _llvm_has_type(word: str) -> bool:
    if word in _LLVM_FLOATS:
        return True
    return word[0] == "i" and word[1:].isdigit() and 1 <= int(word[1:]) <= LLVM_MAX_INT_BITS


def check_llvm_types(module):
    """A located CompileError at the first operation with a value, block argument or type
    attribute whose type holds one LLVM IR has no type for (see _TYPE_WORD)."""
    found = []

    def types_of(op):
        yield from (v.type for v in op.results)
        for region in op.regions:
            for block in region.blocks:
                yield from (a.type for a in block.arguments)
        for name in op.attributes:
            attr = op.attributes[name]
            if isinstance(attr, ir.TypeAttr):
                yield attr.value

    def visit(op):
        for t in types_of(op):
            for m in _TYPE_WORD.finditer(_QUOTED.sub('""', str(t))):
                if not _llvm_has_type(m.group(0)):
                    found.append((op, m.group(0)))
                    return ir.WalkResult.INTERRUPT
        return ir.WalkResult.ADVANCE
    module.operation.walk(visit)
    if found:
        op, word = found[0]
        file, line, col = file_location(op.location)
        raise CompileError([Diagnostic(
            "error", file, line, col, f"'{op.name}' op uses the type {word}, which LLVM IR has "
            f"no type for (its integers are i1 to i{LLVM_MAX_INT_BITS}; its floats f16, bf16, "
            "f32, f64, f80, f128)")], "llvm-ir")


def mlir_tool(name: str) -> str:
    import mlir
    return os.path.join(list(mlir.__path__)[0], "bin", name)


def translate_to_llvm_ir(module) -> str:
    """LLVM IR text of a module (or its text) in the LLVM dialect (mlir-translate; the
    bindings have no translation API)."""
    import subprocess  # (here: ~5 ms to import, which a jit compile does not need)
    if not isinstance(module, str):
        check_llvm_types(module)
    proc = subprocess.run([mlir_tool("mlir-translate"), "--mlir-to-llvmir"],
                          input=module if isinstance(module, str) else str(module),
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise CompileError([Diagnostic("error", "", 0, 0,
                                       "mlir-translate failed: " + proc.stderr.strip())],
                           "llvm-ir")
    return proc.stdout
