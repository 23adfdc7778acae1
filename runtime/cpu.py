"""In-process CPU executables of an LLVM-dialect module: its code compiled by LLVM's C API
and linked into the process by ORC (CpuExecutable), or, where the C API cannot be loaded,
run by the MLIR ExecutionEngine (EngineExecutable).

The entry follows the destination-passing convention of passes/destination_passing.py: inputs
then outputs, all memrefs, C interface. Calls go through prebuilt memref descriptors and the C
interface (CpuExecutable, as a library's: runtime/cpu_aot.py), or a ctypes function pointer
to the engine's packed wrapper (EngineExecutable).
"""
from __future__ import annotations

import ctypes
import os

import numpy as np

from ..dialects.dtypes import TensorSpec
from . import fastcall
from .calls import CallError, check_dtypes
from .artifact import entry_symbol
from .cpu_aot import CpuLibraryExecutable, preload_openmp
from .dynamic import DynamicCalls
from .memref import ArgBlock, data_pointer
from .outputs import OutputArrays, ReusedOutputs

_PACKED = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


def mlir_lib(name: str) -> str:
    import mlir
    return os.path.join(list(mlir.__path__)[0], "lib", name)


_runner_utils_loaded = False
# Conversions LLVM may lower to compiler-rt calls (__truncdfbf2, __extendhfsf2, ...), which
# libmlir_c_runner_utils carries.
_HALF_CONVERSIONS = ("llvm.fptrunc", "llvm.fpext", "llvm.sitofp", "llvm.uitofp",
                     "llvm.fptosi", "llvm.fptoui")


def load_runtime_library(llvm_module):
    """Load libmlir_c_runner_utils into the process (globally: every later engine finds its
    symbols there) the first time some code needs it: a declared function this process does
    not define (memrefCopy & co.) or a conversion from or to a 16-bit float. Loading it costs
    ~30 ms, passing it to every engine another ~3 ms each; most programs need neither."""
    if not _runner_utils_loaded and (_calls_outside(llvm_module)
                                     or _converts_half_floats(llvm_module)):
        load_runner_utils()


def load_runner_utils() -> bool:
    """Load libmlir_c_runner_utils globally; False if it was loaded already."""
    global _runner_utils_loaded
    if _runner_utils_loaded:
        return False
    ctypes.CDLL(mlir_lib("libmlir_c_runner_utils.so"), mode=ctypes.RTLD_GLOBAL)
    _runner_utils_loaded = True
    return True


def _calls_outside(llvm_module) -> bool:
    process = ctypes.CDLL(None)
    for op in llvm_module.body.operations:
        op = op.operation
        if op.name != "llvm.func" or len(op.regions[0].blocks):
            continue  # (a definition)
        name = str(op.attributes["sym_name"]).strip('"')
        try:
            getattr(process, name)
        except AttributeError:
            return True
    return False


def _converts_half_floats(llvm_module) -> bool:
    from mlir import ir
    found = [False]

    def visit(op):
        if op.name in _HALF_CONVERSIONS and any(
                "f16" in str(v.type) for v in list(op.operands) + list(op.results)):
            found[0] = True
            return ir.WalkResult.INTERRUPT
        return ir.WalkResult.ADVANCE
    llvm_module.operation.walk(visit)
    return found[0]


def in_process_executable(llvm_module, entry: str, in_specs, out_specs, opt_level=3,
                          dynamic=None):
    """The executable of an LLVM-dialect module compiled in this process: CpuExecutable, or
    where LLVM's C API is not available (another architecture), EngineExecutable."""
    from ..passes import llvm_capi
    cls = CpuExecutable if llvm_capi.library() is not None else EngineExecutable
    return cls(llvm_module, entry, in_specs, out_specs, opt_level=opt_level, dynamic=dynamic)


def link_in_process(objects: list, symbol: str):
    """(the JitCode of `objects`, the address of `symbol` in it). A symbol the process lacks
    (memrefCopy, a half-float conversion LLVM made a call of) loads the runtime library and
    links again: trying costs ~1 ms, and the walks of the module that found such code before
    compiling it cost 6-20 ms in every compile."""
    from ..passes.llvm_capi import LLVMError
    from .jit_code import JitCode
    try:
        code = JitCode(objects)
        return code, code.address(symbol)
    except LLVMError:
        if not load_runner_utils():  # (loaded already: the symbol is nowhere)
            raise
    code = JitCode(objects)
    return code, code.address(symbol)


class CpuExecutable(CpuLibraryExecutable):
    """A compiled entry point: `exe(*arrays) -> list of numpy arrays`. LLVM's C API optimizes
    and compiles the module into an object in memory (passes/cpu_codegen.compile_object, as
    each thread does for a large module) and an ORC JIT links it into this process
    (runtime/jit_code.py); calls go to its C interface as they go to a library's
    (runtime/cpu_aot.py). The MLIR ExecutionEngine took ~16 ms for a trivial function against
    ~7 (its LLJIT's setup, and the code generated for every function's packed wrapper).
    `from_objects` loads a large module's objects, compiled by several threads, the same way
    (no linker run before the first call: the disk cache links them in the background)."""

    position_independent = True  # (its objects, linked by the disk cache)

    def __init__(self, llvm_module, entry: str, in_specs, out_specs, opt_level=3,
                 dynamic=None):
        from ..passes import cpu_codegen
        from ..passes.cpu_target import current
        code = cpu_codegen.translate(llvm_module)
        objects = [cpu_codegen.compile_object(code.bitcode, current().cpu, opt_level)]
        self._load(objects, entry, in_specs, out_specs, code.openmp, code.prints, dynamic)

    @classmethod
    def from_objects(cls, objects: list, entry: str, in_specs, out_specs, openmp: bool,
                     prints: bool, dynamic=None):
        """The executable of object files in memory that together define the entry
        (passes/cpu_codegen.compile_parts)."""
        exe = cls.__new__(cls)
        exe._load(objects, entry, in_specs, out_specs, openmp, prints, dynamic)
        return exe

    def _load(self, objects, entry, in_specs, out_specs, openmp, prints, dynamic):
        from ..passes.diagnostics import CompileError, Diagnostic
        from ..passes.llvm_capi import LLVMError
        from .debug_print import HOOK, install_at
        from .malloc import keep_freed_memory
        keep_freed_memory()
        self.entry, self.openmp, self.objects = entry, openmp, list(objects)
        self.in_specs = [TensorSpec(tuple(s.shape), s.dtype) for s in in_specs]
        self.out_specs = [TensorSpec(tuple(s.shape), s.dtype) for s in out_specs]
        if openmp:
            preload_openmp(entry)  # (the JIT resolves symbols in the process)
        try:
            self._code, address = link_in_process(self.objects, entry_symbol(entry))
        except LLVMError as e:  # (a symbol the code calls is not in the process)
            raise CompileError([Diagnostic("error", "", 0, 0, f"cannot link '{entry}': {e}")],
                               "obj") from None
        self._bind_entry(address, dynamic)
        if prints:  # compiled Print ops (runtime/debug_print.py)
            install_at(self._code.address(HOOK))

    def write_objects(self, stem: str) -> list[str]:
        """Write the machine code as object files `stem.N.o`; their paths."""
        paths = []
        for i, obj in enumerate(self.objects):
            paths.append(f"{stem}.{i}.o")
            with open(paths[-1], "wb") as f:
                f.write(obj)
        return paths


class EngineExecutable(DynamicCalls, ReusedOutputs):
    """A compiled entry point in the MLIR ExecutionEngine (where LLVM's C API cannot be
    loaded): `exe(*arrays) -> list of numpy arrays`."""

    position_independent = False  # (its object: large code model, absolute relocations)

    def __init__(self, llvm_module, entry: str, in_specs, out_specs, opt_level=3,
                 dynamic=None):
        from mlir.execution_engine import ExecutionEngine

        from .malloc import keep_freed_memory
        keep_freed_memory()
        self.entry = entry
        self.in_specs = [TensorSpec(tuple(s.shape), s.dtype) for s in in_specs]
        self.out_specs = [TensorSpec(tuple(s.shape), s.dtype) for s in out_specs]
        load_runtime_library(llvm_module)
        libs = []
        # passes/cpu_loops.OPENMP_ATTR: the code calls the OpenMP runtime
        self.openmp = "ms.openmp" in llvm_module.operation.attributes
        if self.openmp:
            from .openmp import openmp_library
            libs.append(openmp_library())
        self.engine = ExecutionEngine(llvm_module, opt_level=opt_level, shared_libs=libs)
        addr = self.engine.raw_lookup(entry_symbol(entry))
        if not addr:
            raise CallError(f"entry point '{entry}' not found in the compiled module")
        self._fn = _PACKED(addr)
        from .debug_print import install_in_engine
        install_in_engine(self.engine)  # compiled Print ops (runtime/debug_print.py)
        self._setup_dynamic(dynamic)  # (runtime/dynamic.py; None: static shapes)
        self._args = ArgBlock([s.shape for s in self.in_specs + self.out_specs])
        self._in_np = [(s.shape, s.dtype.np) for s in self.in_specs]
        self._out_np = [(s.shape, s.dtype.np) for s in self.out_specs]
        self._n_in = len(self.in_specs)
        self._outputs = OutputArrays(self._out_np)
        # the packed wrapper through runtime/_fastcall.c: fn(void **args)
        self._fast, self._small = fastcall.bind(
            addr, self._args.address, self._args.descriptor_addresses,
            self.in_specs + self.out_specs, self._outputs, self.dynamic)

    def check_inputs(self, arrays):
        if self.dynamic is not None:  # (run() checks the sizes)
            return check_dtypes(self.entry, self.in_specs, arrays)
        if len(arrays) != self._n_in:
            raise CallError(f"'{self.entry}' takes {self._n_in} inputs, got {len(arrays)}")
        out = []
        for i, (a, (shape, dtype)) in enumerate(zip(arrays, self._in_np)):
            a = np.asarray(a)
            if a.shape != shape:
                raise CallError(f"input #{i} of '{self.entry}' has shape {a.shape}, "
                                f"expected {shape}")
            if a.dtype != dtype or not a.flags.c_contiguous:
                a = np.asarray(a, dtype=dtype, order="C")
            out.append(a)
        return out

    def __call__(self, *arrays):
        """Checked call: inputs are converted to the entry's dtypes; returns new arrays."""
        return self.run(self.check_inputs(arrays))

    def run(self, arrays):
        """Unchecked call (the jit cache-hit path): `arrays` are C-contiguous with the entry's
        shapes and dtypes."""
        if self.dynamic is not None:
            return self._run_dynamic(arrays, lambda: self._fn(self._args.address),
                                      self._fast)
        if self._small is not None:  # (the GIL held: no lock)
            return fastcall.run_small(*self._small, arrays, self._outputs.reuse)
        ptr = data_pointer
        with self._outputs.lock:
            outputs = self._outputs.take()
            if self._fast is not None:
                fastcall.call(*self._fast, arrays, outputs)
                return outputs
            for d, a in zip(self._args.descriptors, arrays + outputs):
                d.allocated = d.aligned = ptr(a)
            self._fn(self._args.address)
        return outputs

    def write_objects(self, stem: str) -> list[str]:
        """Write the machine code as an object file `stem.o` (not position independent:
        large code model with absolute relocations); its path."""
        self.engine.dump_to_object_file(f"{stem}.o")
        return [f"{stem}.o"]
