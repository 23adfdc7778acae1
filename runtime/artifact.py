"""Executable artifacts (`.msx`): one zip file holding a JSON manifest and blobs.

    manifest.json   format, version, target, entry, inputs/outputs (shape, dtype), and
                    cpu:  the shared library and its C-interface symbol
                    cuda: the GPU architecture, PTX (and cubin) blob names, the kernels and
                          the launch plan (runtime/plan.py)
    kernels.ptx     CUDA: the PTX of every kernel (always kept: the driver JIT-compiles it
                    for GPUs the cubin was not built for)
    kernels.cubin   CUDA: ptxas output for the manifest's architecture, when ptxas was found
    consts/*.bin    CUDA: contents of constant buffers
    lib/ENTRY.so    CPU: the compiled entry (mlir-translate, llc, cc -shared)
    manifest.sha256 the sha256 of manifest.json's bytes

Integrity: the manifest's `digests` hold the sha256 of every blob and manifest.sha256 that of
the manifest, so damage anywhere (a flipped byte, a truncated library whose zip checksums were
redone) is found before anything is loaded. A CPU library also carries its own signature: the
exported string `mscc_signature_<entry>` (signature_text: entry, symbol, input and output
shapes and dtypes), which runtime/cpu_aot.py compares with the manifest before the first call,
so a manifest edited on purpose (digests recomputed) cannot make the code read or write
buffers of other sizes.

`read(path)` validates everything the loaders rely on and raises ArtifactError naming what is
wrong, whatever the damage. Imports neither mlir nor the compiler: a machine with numpy (and
cuda-bindings for CUDA artifacts) runs artifacts built elsewhere.
"""
from __future__ import annotations

import hashlib
import io
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from ..dialects import dtypes as dt
from ..dialects.dtypes import TensorSpec
from ..dialects.symdim import ANY, Dim

if TYPE_CHECKING:  # (imported where a plan is read: _validate_cuda says why)
    from .plan import LaunchPlan

FORMAT = "mscc-executable"
FORMAT_VERSION = 2  # 2: blob and manifest digests, the library's signature
MANIFEST = "manifest.json"
MANIFEST_DIGEST = "manifest.sha256"
TARGETS = ("cpu", "cuda")


class ArtifactError(ValueError):
    """An artifact that cannot be loaded; the message says why."""


def spec_to_json(spec: TensorSpec) -> dict:
    """A spec for the manifest: a dynamic size as null (the manifest's "dynamic" says how
    outputs' sizes follow from the inputs', runtime/dynamic.py)."""
    return {"shape": [None if isinstance(d, Dim) else d for d in spec.shape],
            "dtype": spec.dtype.name}


def spec_from_json(d: dict) -> TensorSpec:
    shape = d["shape"]
    if not isinstance(shape, list) or not all(x is None or (type(x) is int and x >= 0)
                                              for x in shape):
        raise ValueError(f"shape {shape!r} is not a list of sizes")
    return TensorSpec(tuple(ANY if x is None else x for x in shape), dt.by_name(d["dtype"]))


def entry_symbol(entry: str) -> str:
    """The C-interface function of a CPU library (llvm.emit_c_interface)."""
    return f"_mlir_ciface_{entry}"


def signature_symbol(entry: str) -> str:
    """The exported NUL-terminated string holding the library's signature_text."""
    return f"mscc_signature_{entry}"


def signature_text(entry: str, symbol: str, inputs, outputs) -> str:
    """What a CPU library says it is (compiled into it, passes/artifact.link_shared): the
    entry, its symbol and the shapes and dtypes of its descriptors, in one canonical form."""
    return json.dumps({"entry": entry, "symbol": symbol,
                       "inputs": [spec_to_json(s) for s in inputs],
                       "outputs": [spec_to_json(s) for s in outputs]},
                      sort_keys=True, separators=(",", ":"))


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass
class Artifact:
    """A manifest and its blobs, in memory. `save` writes the .msx file, `load` makes the
    callable."""
    manifest: dict
    blobs: dict = field(default_factory=dict)
    path: str | None = None

    @property
    def target(self) -> str:
        return self.manifest["target"]

    @property
    def entry(self) -> str:
        return self.manifest["entry"]

    @property
    def inputs(self) -> list:
        return [spec_from_json(d) for d in self.manifest["inputs"]]

    @property
    def outputs(self) -> list:
        return [spec_from_json(d) for d in self.manifest["outputs"]]

    def plan(self) -> LaunchPlan:
        from .plan import LaunchPlan
        return LaunchPlan.from_json(self.manifest["cuda"]["plan"])

    def save(self, path: str) -> str:
        with open(path, "wb") as f:
            f.write(self.to_bytes())
        self.path = path
        return path

    def to_bytes(self) -> bytes:
        """The .msx file: the manifest (with the blobs' digests), its digest, the blobs."""
        self.manifest["digests"] = {n: _sha256(d) for n, d in sorted(self.blobs.items())}
        validate(self.manifest, self.blobs)
        import zipfile  # (here: a process that only compiles and runs imports none of it)
        text = json.dumps(self.manifest, indent=1).encode()
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as z:
            z.writestr(MANIFEST, text)
            z.writestr(MANIFEST_DIGEST, _sha256(text))
            for name, data in sorted(self.blobs.items()):
                z.writestr(name, data)
        return buf.getvalue()

    def load(self, **options):
        """The callable for this artifact (CPU: a shared library; CUDA: needs a GPU)."""
        if self.target == "cpu":
            from .cpu_aot import CpuLibraryExecutable
            return CpuLibraryExecutable.from_artifact(self)
        from .cuda import CudaExecutable
        return CudaExecutable.from_artifact(self, **options)


def read(path: str) -> Artifact:
    """Read and validate an .msx file. Anything wrong with it, damage included, is an
    ArtifactError: zipfile, zlib and json raise a dozen kinds of exceptions on damaged input
    (BadZipFile, zlib.error, EOFError, struct.error, UnicodeDecodeError, NotImplementedError
    for a garbled compression method...), so all of them are caught here."""
    import zipfile
    try:
        with zipfile.ZipFile(path) as z:
            files = {n: z.read(n) for n in z.namelist()}
    except FileNotFoundError:
        raise ArtifactError(f"{path}: no such file") from None
    except zipfile.BadZipFile as e:  # not a zip, or a damaged one ("Bad CRC-32 for ...")
        raise ArtifactError(f"{path}: not an mscc executable, or damaged ({e})") from None
    except Exception as e:  # noqa: BLE001 - see the docstring
        raise ArtifactError(f"{path}: damaged ({type(e).__name__}: {e})") from None
    try:
        manifest = _checked_manifest(files)
        blobs = {n: d for n, d in files.items() if n not in (MANIFEST, MANIFEST_DIGEST)}
        _check_digests(manifest, blobs)
        validate(manifest, blobs)
    except ArtifactError as e:
        raise ArtifactError(f"{path}: {e}") from None
    return Artifact(manifest, blobs, path)


def _checked_manifest(files: dict) -> dict:
    if MANIFEST not in files:
        raise ArtifactError(f"not an mscc executable (no {MANIFEST})")
    text = files[MANIFEST]
    try:
        manifest = json.loads(text)
    except (ValueError, RecursionError) as e:  # JSONDecodeError, UnicodeDecodeError, nesting
        raise ArtifactError(f"{MANIFEST} is not valid JSON: {e}") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise ArtifactError("not an mscc executable (no mscc manifest)")
    if manifest.get("version") != FORMAT_VERSION:  # older ones have no digests
        validate(manifest, {})
    if MANIFEST_DIGEST not in files:
        raise ArtifactError(f"no {MANIFEST_DIGEST}: the manifest cannot be verified")
    if files[MANIFEST_DIGEST] != _sha256(text).encode():
        raise ArtifactError(f"damaged: {MANIFEST} does not match {MANIFEST_DIGEST}")
    return manifest


def _check_digests(manifest: dict, blobs: dict):
    digests = manifest.get("digests")
    if not isinstance(digests, dict):
        raise ArtifactError("the manifest has no blob digests")
    if set(digests) != set(blobs):
        missing, extra = sorted(set(digests) - set(blobs)), sorted(set(blobs) - set(digests))
        raise ArtifactError(f"the blobs are not those of the manifest (missing {missing}, "
                            f"not listed {extra})")
    for name, data in blobs.items():
        if digests[name] != _sha256(data):
            raise ArtifactError(f"damaged: blob '{name}' does not match its digest")


def validate(manifest: dict, blobs: dict):
    """Raise ArtifactError unless the manifest is one this runtime can execute."""
    try:
        _validate(manifest, blobs)
    except (KeyError, TypeError, AttributeError, ValueError) as e:
        if isinstance(e, ArtifactError):
            raise
        # a field of the wrong kind (a number where an object belongs...): never a crash
        raise ArtifactError(f"malformed manifest ({type(e).__name__}: {e})") from None


def _validate(manifest, blobs):
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise ArtifactError(f"not an mscc executable (format {manifest.get('format')!r})"
                            if isinstance(manifest, dict) else "manifest is not an object")
    version = manifest.get("version")
    if version != FORMAT_VERSION:
        raise ArtifactError(f"format version {version} is not supported by this runtime "
                            f"(it reads version {FORMAT_VERSION}); rebuild the artifact")
    target = manifest.get("target")
    if target not in TARGETS:
        raise ArtifactError(f"unknown target {target!r}; expected one of {', '.join(TARGETS)}")
    for key in ("entry", "inputs", "outputs", target):
        if key not in manifest:
            raise ArtifactError(f"manifest has no '{key}'")
    if not (isinstance(manifest["entry"], str) and manifest["entry"].isascii()
            and manifest["entry"].isidentifier()):
        raise ArtifactError(f"entry {manifest['entry']!r} is not a C identifier")
    try:
        for d in manifest["inputs"] + manifest["outputs"]:
            spec_from_json(d)
    except (KeyError, TypeError, ValueError) as e:
        raise ArtifactError(f"bad input/output description: {e}") from None
    if "dynamic" in manifest:
        _validate_dynamic(manifest)
    elif any(x is None for d in manifest["inputs"] + manifest["outputs"] for x in d["shape"]):
        raise ArtifactError("dynamic sizes (null) without a description of them")
    if target == "cpu":
        _validate_cpu(manifest["entry"], manifest["cpu"], blobs)
    else:
        _validate_cuda(manifest, blobs)


def _validate_dynamic(manifest):
    """The description of dynamic sizes must fit the inputs and outputs it describes."""
    from .dynamic import DynamicShapes
    try:
        DynamicShapes.from_description(manifest["entry"],
                                       [spec_from_json(d) for d in manifest["inputs"]],
                                       [spec_from_json(d) for d in manifest["outputs"]],
                                       manifest["dynamic"])
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise ArtifactError(f"bad description of dynamic sizes: {e}") from None


def _need_blob(blobs, name, what):
    if not isinstance(name, str) or name not in blobs:
        raise ArtifactError(f"{what} '{name}' is missing from the artifact")


def _validate_cpu(entry, cpu: dict, blobs):
    _need_blob(blobs, cpu.get("library"), "shared library")
    if not cpu.get("symbol"):
        raise ArtifactError("the cpu section names no entry symbol")
    features = cpu.get("features", [])
    if not isinstance(features, list) or not all(isinstance(f, str) for f in features):
        raise ArtifactError(f"the cpu section's features must be a list of names, not "
                            f"{features!r}")
    if cpu["symbol"] != entry_symbol(entry):
        raise ArtifactError(f"symbol '{cpu['symbol']}' is not the entry's "
                            f"('{entry_symbol(entry)}')")


def _validate_cuda(manifest, blobs):
    # (the launch plan's module, ~5 ms of dataclasses to import, only where a plan is read:
    # a CPU program's first compile imports this module for its disk cache entry)
    from .plan import LaunchPlan, PlanError
    cuda = manifest["cuda"]
    try:
        plan = LaunchPlan.from_json(cuda["plan"])
    except (KeyError, PlanError) as e:
        raise ArtifactError(f"launch plan: {e}") from None
    if plan.launches or cuda.get("ptx"):
        _need_blob(blobs, cuda.get("ptx"), "PTX")
    if cuda.get("cubin"):
        _need_blob(blobs, cuda["cubin"], "cubin")
    ptx = blobs[cuda["ptx"]].decode(errors="replace") if cuda.get("ptx") else ""
    declared = set(cuda.get("kernels", []))
    for k in plan.kernels():
        if k not in declared or f".entry {k}(" not in ptx:
            raise ArtifactError(f"kernel '{k}' used by the launch plan is missing from the PTX")
    for b in plan.buffers:
        if b.kind == "const":
            _need_blob(blobs, b.data, f"data of constant buffer {b.name}")
            if len(blobs[b.data]) != b.nbytes:
                raise ArtifactError(f"constant buffer {b.name} holds {len(blobs[b.data])} "
                                    f"bytes, its shape needs {b.nbytes}")
    for kind, specs in (("input", manifest["inputs"]), ("output", manifest["outputs"])):
        bufs = sorted((b for b in plan.buffers if b.kind == kind), key=lambda b: b.index)
        if len(bufs) != len(specs):
            raise ArtifactError(f"the plan has {len(bufs)} {kind} buffers, the manifest "
                                f"{len(specs)} {kind}s")
        for b, s in zip(bufs, specs):
            spec = spec_from_json(s)
            if list(b.shape) != s["shape"] or np.dtype(b.dtype) != spec.dtype.np:
                raise ArtifactError(f"{kind} #{b.index}: plan buffer {b.dtype}{list(b.shape)} "
                                    f"does not match {spec}")
