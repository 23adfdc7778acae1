"""CPU executables from artifacts: the entry compiled into a shared library.

The library is compiled for the CPU of the machine that built it (manifest `mcpu`, default
the host's, like the ExecutionEngine); loading checks the architecture. It exports
`_mlir_ciface_<entry>(desc*...)` (llvm.emit_c_interface): one pointer to
a memref descriptor per input and output, in the destination-passing order of
passes/destination_passing.py. The packed `void**` wrapper only exists under the ExecutionEngine, so calls go
to the C interface directly: a ctypes function with one pointer argument per descriptor,
descriptors prebuilt once (runtime/memref.ArgBlock) and only their data pointers patched.

Before that function is touched, the library's own signature (the exported string
`mscc_signature_<entry>`, runtime/artifact.signature_text) must equal the manifest's: a
manifest that claims other shapes, dtypes, counts or another symbol would have the code read
and write past the buffers it is given. A mismatch is an ArtifactError, never a call.
The library exports nothing else (passes/artifact.link_shared): its internal functions, named
like the user's (`step`, `exp`), must not be bound to libc's symbols of the same name.
"""
from __future__ import annotations

import ctypes
import functools
import os
import platform
import struct
import tempfile
import weakref

from . import fastcall
from .artifact import ArtifactError, signature_symbol, signature_text
from .calls import CallError, check_dtypes, check_inputs
from .dynamic import DynamicCalls
from .memref import ArgBlock, data_pointer
from .outputs import OutputArrays, ReusedOutputs


def preload_openmp(entry):
    """Parallel code needs the OpenMP runtime's symbols: load it globally before the library
    (which names it by soname)."""
    from .openmp import openmp_library
    lib = openmp_library()
    if lib is None:
        raise CallError(f"'{entry}' was compiled with parallel loops and needs an OpenMP "
                        "runtime (pip install intel-openmp)")
    ctypes.CDLL(lib, mode=ctypes.RTLD_GLOBAL)


@functools.lru_cache(maxsize=1)
def host_cpu_flags() -> frozenset:
    """The instruction-set flags of /proc/cpuinfo (empty where there is none)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return frozenset(line.split(":", 1)[1].split())
    except OSError:
        pass
    return frozenset()


def _check_features(entry, cpu):
    """The library may only use instruction sets this CPU has (an AVX-512 library on an
    AVX2 machine would die of SIGILL at its first vector instruction)."""
    flags = host_cpu_flags()
    missing = [f for f in cpu.get("features", ()) if flags and f not in flags]
    if missing:
        raise ArtifactError(f"the library of '{entry}' was compiled for {cpu.get('mcpu', '?')} "
                            f"and uses {', '.join(missing)}, which this CPU lacks; compile it "
                            "here, or for this CPU with MSCC_CPU=<LLVM CPU name>")


def check_elf(data: bytes, entry: str):
    """Raise ArtifactError unless `data` is a 64-bit little-endian ELF file whose program
    headers (what the loader maps) and section headers lie inside it: the loader maps a
    truncated library anyway, and touching its missing pages is a SIGBUS."""
    if len(data) < 64 or data[:4] != b"\x7fELF" or data[4:6] != b"\x02\x01":
        raise ArtifactError(f"the library of '{entry}' is not a 64-bit little-endian ELF file")
    phoff, shoff = struct.unpack_from("<QQ", data, 0x20)
    phentsize, phnum, shentsize, shnum = struct.unpack_from("<HHHH", data, 0x36)
    if phoff + phnum * phentsize > len(data) or shoff + shnum * shentsize > len(data):
        raise ArtifactError(f"the library of '{entry}' is truncated (its headers are missing)")
    for i in range(phnum):
        offset, = struct.unpack_from("<Q", data, phoff + i * phentsize + 8)
        filesz, = struct.unpack_from("<Q", data, phoff + i * phentsize + 0x20)
        if offset + filesz > len(data):
            raise ArtifactError(f"the library of '{entry}' is truncated ({len(data)} bytes, a "
                                f"segment ends at {offset + filesz})")


def _unload(handle):
    import _ctypes
    _ctypes.dlclose(handle)


class CpuLibraryExecutable(DynamicCalls, ReusedOutputs):
    """`exe(*arrays) -> list of numpy arrays`, running the entry of a shared library."""

    def __init__(self, library_path: str, symbol: str, entry: str, in_specs, out_specs,
                 openmp=False, dynamic=None):
        from .malloc import keep_freed_memory
        keep_freed_memory()
        self.entry = entry
        self.openmp = openmp  # the library calls the OpenMP runtime (preloaded)
        self.in_specs, self.out_specs = list(in_specs), list(out_specs)
        try:
            self._lib = ctypes.CDLL(library_path)
        except OSError as e:
            raise CallError(f"cannot load the library of '{entry}': {e}") from None
        # ctypes never unloads a library: without this every executable loaded from the
        # disk cache stayed mapped after its jit cache entry was evicted or collected.
        weakref.finalize(self, _unload, self._lib._handle)
        self._check_signature(symbol)
        from .debug_print import install_in_library
        install_in_library(self._lib)  # compiled Print ops (runtime/debug_print.py)
        self._bind_entry(ctypes.cast(getattr(self._lib, symbol), ctypes.c_void_p).value,
                         dynamic)

    def _bind_entry(self, address: int, dynamic):
        """Calls go to the C interface at `address`: fn(desc0, desc1, ...) (`dynamic`: the
        entry's dynamic sizes, runtime/dynamic.py; None: static shapes)."""
        self._setup_dynamic(dynamic)
        n = len(self.in_specs) + len(self.out_specs)
        self._fn = ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * n)(address)
        self._args = ArgBlock([s.shape for s in self.in_specs + self.out_specs])
        self._ptrs = self._args.descriptor_addresses
        self._n_in = len(self.in_specs)
        self._outputs = OutputArrays([(s.shape, s.dtype.np) for s in self.out_specs])
        # the C interface through runtime/_fastcall.c: fn(desc0, desc1, ...)
        self._fast, self._small = fastcall.bind(
            address, 0, self._ptrs,
            self.in_specs + self.out_specs, self._outputs, self.dynamic)

    def _check_signature(self, symbol):
        """Raise ArtifactError unless the library describes itself as the manifest does."""
        want = signature_text(self.entry, symbol, self.in_specs, self.out_specs)
        try:
            address = ctypes.addressof(ctypes.c_char.in_dll(self._lib,
                                                            signature_symbol(self.entry)))
        except ValueError:  # ctypes' "symbol not found"
            raise ArtifactError(f"the library of '{self.entry}' carries no signature "
                                f"({signature_symbol(self.entry)}): not built for this entry, "
                                "or by an older mscc; rebuild it") from None
        # NUL-terminated: the library was verified against its digest (artifact.read), or built
        # in this process
        have = ctypes.string_at(address).decode(errors="replace")
        if have != want:
            raise ArtifactError(f"the library of '{self.entry}' does not match its manifest: "
                                f"the library is {have}, the manifest says {want}")

    @classmethod
    def from_artifact(cls, artifact):
        cpu = artifact.manifest["cpu"]
        built_for = cpu.get("machine")
        if built_for and built_for != platform.machine():
            raise ArtifactError(f"the library of '{artifact.entry}' was built for {built_for} "
                                f"({cpu.get('mcpu', '?')}), this machine is "
                                f"{platform.machine()}")
        _check_features(artifact.entry, cpu)
        check_elf(artifact.blobs[cpu["library"]], artifact.entry)
        if cpu.get("openmp"):
            preload_openmp(artifact.entry)
        # dlopen needs a file: the library goes to a private temporary folder, removed when
        # the executable is collected (the mapping stays valid after unlinking on Linux).
        folder = tempfile.mkdtemp(prefix="mscc-")
        path = os.path.join(folder, os.path.basename(cpu["library"]))
        with open(path, "wb") as f:
            f.write(artifact.blobs[cpu["library"]])
        try:
            return cls(path, cpu["symbol"], artifact.entry, artifact.inputs, artifact.outputs,
                       openmp=bool(cpu.get("openmp")), dynamic=artifact.manifest.get("dynamic"))
        finally:
            os.unlink(path)
            os.rmdir(folder)

    def __call__(self, *arrays):
        """Checked call: inputs are converted to the entry's dtypes; returns new arrays."""
        if self.dynamic is not None:
            return self.run(check_dtypes(self.entry, self.in_specs, arrays))
        return self.run(check_inputs(self.entry, self.in_specs, arrays))

    def run(self, arrays):
        """Unchecked call (as runtime/cpu.CpuExecutable.run)."""
        if self.dynamic is not None:
            return self._run_dynamic(arrays, lambda: self._fn(*self._ptrs), self._fast)
        if self._small is not None:  # (the GIL held: no lock)
            return fastcall.run_small(*self._small, arrays, self._outputs.reuse)
        with self._outputs.lock:
            outputs = self._outputs.take()
            if self._fast is not None:
                fastcall.call(*self._fast, arrays, outputs)
                return outputs
            descriptors = self._args.descriptors
            for d, a in zip(descriptors, list(arrays) + outputs):
                d.allocated = d.aligned = data_pointer(a)
            self._fn(*self._ptrs)
        return outputs
