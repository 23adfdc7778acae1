"""CPU executables from artifacts: the entry compiled into a shared library.

The library is compiled for the CPU of the machine that built it (manifest `mcpu`, default
the host's, like the ExecutionEngine); loading checks the architecture. It exports
`_mlir_ciface_<entry>(desc*...)` (llvm.emit_c_interface): one pointer to
a memref descriptor per input and output, in the destination-passing order of
passes/cpu.py. The packed `void**` wrapper only exists under the ExecutionEngine, so calls go
to the C interface directly: a ctypes function with one pointer argument per descriptor,
descriptors prebuilt once (runtime/memref.ArgBlock) and only their data pointers patched.
"""
from __future__ import annotations

import ctypes
import os
import platform
import tempfile

from .calls import CallError, check_inputs
from .memref import ArgBlock, data_pointer
from .outputs import OutputArrays


def _preload_openmp(entry):
    """Parallel code needs the OpenMP runtime's symbols: load it globally before the library
    (which names it by soname)."""
    from .openmp import openmp_library
    lib = openmp_library()
    if lib is None:
        raise CallError(f"'{entry}' was compiled with parallel loops and needs an OpenMP "
                        "runtime (pip install intel-openmp)")
    ctypes.CDLL(lib, mode=ctypes.RTLD_GLOBAL)


class CpuLibraryExecutable:
    """`exe(*arrays) -> list of numpy arrays`, running the entry of a shared library."""

    def __init__(self, library_path: str, symbol: str, entry: str, in_specs, out_specs,
                 openmp=False):
        from .malloc import keep_freed_memory
        keep_freed_memory()
        self.entry = entry
        self.openmp = openmp  # the library calls the OpenMP runtime (preloaded)
        self.in_specs, self.out_specs = list(in_specs), list(out_specs)
        try:
            self._lib = ctypes.CDLL(library_path)
        except OSError as e:
            raise CallError(f"cannot load the library of '{entry}': {e}") from None
        try:
            fn = getattr(self._lib, symbol)
        except AttributeError:
            raise CallError(f"the library of '{entry}' has no symbol '{symbol}'") from None
        fn.restype = None
        n = len(self.in_specs) + len(self.out_specs)
        fn.argtypes = [ctypes.c_void_p] * n
        self._fn = fn
        self._args = ArgBlock([s.shape for s in self.in_specs + self.out_specs])
        self._ptrs = self._args.descriptor_addresses
        self._n_in = len(self.in_specs)
        self._outputs = OutputArrays([(s.shape, s.dtype.np) for s in self.out_specs])

    @classmethod
    def from_artifact(cls, artifact):
        cpu = artifact.manifest["cpu"]
        built_for = cpu.get("machine")
        if built_for and built_for != platform.machine():
            from .artifact import ArtifactError
            raise ArtifactError(f"the library of '{artifact.entry}' was built for {built_for} "
                                f"({cpu.get('mcpu', '?')}), this machine is "
                                f"{platform.machine()}")
        if cpu.get("openmp"):
            _preload_openmp(artifact.entry)
        # dlopen needs a file: the library goes to a private temporary folder, removed when
        # the executable is collected (the mapping stays valid after unlinking on Linux).
        folder = tempfile.mkdtemp(prefix="mscc-")
        path = os.path.join(folder, os.path.basename(cpu["library"]))
        with open(path, "wb") as f:
            f.write(artifact.blobs[cpu["library"]])
        try:
            return cls(path, cpu["symbol"], artifact.entry, artifact.inputs, artifact.outputs,
                       openmp=bool(cpu.get("openmp")))
        finally:
            os.unlink(path)
            os.rmdir(folder)

    def __call__(self, *arrays):
        """Checked call: inputs are converted to the entry's dtypes; returns new arrays."""
        return self.run(check_inputs(self.entry, self.in_specs, arrays))

    def run(self, arrays):
        """Unchecked call (as runtime/cpu.CpuExecutable.run)."""
        with self._outputs.lock:
            outputs = self._outputs.take()
            descriptors = self._args.descriptors
            for d, a in zip(descriptors, list(arrays) + outputs):
                d.allocated = d.aligned = data_pointer(a)
            self._fn(*self._ptrs)
        return outputs
