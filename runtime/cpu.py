"""In-process CPU executables: an LLVM-dialect module in the MLIR ExecutionEngine.

The entry follows the destination-passing convention of passes/cpu.py: inputs then outputs,
all memrefs, C interface. Calls go through a prebuilt argument block and a ctypes function
pointer to the packed wrapper.
"""
from __future__ import annotations

import ctypes
import os
import sys

import numpy as np

from ..dialects.dtypes import TensorSpec
from .calls import CallError
from .memref import ArgBlock, data_pointer

_PACKED = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


def mlir_lib(name: str) -> str:
    import mlir
    return os.path.join(list(mlir.__path__)[0], "lib", name)


class CpuExecutable:
    """A compiled entry point: `exe(*arrays) -> list of numpy arrays`."""

    def __init__(self, llvm_module, entry: str, in_specs, out_specs, opt_level=3):
        from mlir.execution_engine import ExecutionEngine
        self.entry = entry
        self.in_specs = [TensorSpec(tuple(s.shape), s.dtype) for s in in_specs]
        self.out_specs = [TensorSpec(tuple(s.shape), s.dtype) for s in out_specs]
        libs = [mlir_lib("libmlir_c_runner_utils.so")]
        if "ms.openmp" in llvm_module.operation.attributes:  # passes/cpu_loops.OPENMP_ATTR
            from .openmp import openmp_library
            libs.append(openmp_library())
        self.engine = ExecutionEngine(llvm_module, opt_level=opt_level, shared_libs=libs)
        addr = self.engine.raw_lookup("_mlir_ciface_" + entry)
        if not addr:
            raise CallError(f"entry point '{entry}' not found in the compiled module")
        self._fn = _PACKED(addr)
        self._args = ArgBlock([s.shape for s in self.in_specs + self.out_specs])
        self._in_np = [(s.shape, s.dtype.np) for s in self.in_specs]
        self._out_np = [(s.shape, s.dtype.np) for s in self.out_specs]
        self._n_in = len(self.in_specs)
        self._out_cache = [None] * len(self.out_specs)

    def check_inputs(self, arrays):
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

    # Off by default: merged with the autodiff tests, re-use made gradient checks fail at
    # random (see the fusion branch report); enable per executable once that is understood.
    reuse_outputs = False

    def fresh_outputs(self):
        """Output arrays for a call. With `reuse_outputs`, the previous call's arrays are used
        again when nobody else holds them any more (a fresh large array costs page faults on
        every call: ~4 ms for 16 MiB); an output the caller still holds, directly or through a
        view, is never written again."""
        if not self.reuse_outputs:
            return [np.empty(shape, dtype) for shape, dtype in self._out_np]
        cache = self._out_cache
        for j, spec in enumerate(self.out_specs):
            # References: the cache's and getrefcount's argument; any other is a holder.
            if cache[j] is None or sys.getrefcount(cache[j]) > 2:
                cache[j] = np.empty(spec.shape, spec.dtype.np)
        return list(cache)

    def __call__(self, *arrays):
        """Checked call: inputs are converted to the entry's dtypes; returns new arrays."""
        return self.run(self.check_inputs(arrays))

    def run(self, arrays):
        """Unchecked call (the jit cache-hit path): `arrays` are C-contiguous with the entry's
        shapes and dtypes."""
        outputs = self.fresh_outputs()
        ptr = data_pointer
        for d, a in zip(self._args.descriptors, arrays + outputs):
            d.allocated = d.aligned = ptr(a)
        self._fn(self._args.address)
        return outputs

    def dump_object(self, path: str):
        self.engine.dump_to_object_file(path)
