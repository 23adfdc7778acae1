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

`read(path)` validates everything the loaders rely on and raises ArtifactError naming what is
wrong. Imports neither mlir nor the compiler: a machine with numpy (and cuda-bindings for
CUDA artifacts) runs artifacts built elsewhere.
"""
from __future__ import annotations

import io
import json
import zipfile
from dataclasses import dataclass, field

import numpy as np

from ..dialects import dtypes as dt
from ..dialects.dtypes import TensorSpec
from .plan import LaunchPlan, PlanError

FORMAT = "mscc-executable"
FORMAT_VERSION = 1
MANIFEST = "manifest.json"
TARGETS = ("cpu", "cuda")


class ArtifactError(ValueError):
    """An artifact that cannot be loaded; the message says why."""


def spec_to_json(spec: TensorSpec) -> dict:
    return {"shape": list(spec.shape), "dtype": spec.dtype.name}


def spec_from_json(d: dict) -> TensorSpec:
    return TensorSpec(tuple(int(x) for x in d["shape"]), dt.by_name(d["dtype"]))


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
        return LaunchPlan.from_json(self.manifest["cuda"]["plan"])

    def save(self, path: str) -> str:
        validate(self.manifest, self.blobs)
        with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as z:
            z.writestr(MANIFEST, json.dumps(self.manifest, indent=1))
            for name, data in sorted(self.blobs.items()):
                z.writestr(name, data)
        self.path = path
        return path

    def to_bytes(self) -> bytes:
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as z:
            z.writestr(MANIFEST, json.dumps(self.manifest, indent=1))
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
    """Read and validate an .msx file."""
    try:
        with zipfile.ZipFile(path) as z:
            names = set(z.namelist())
            if MANIFEST not in names:
                raise ArtifactError(f"{path}: not an mscc executable (no {MANIFEST})")
            try:
                manifest = json.loads(z.read(MANIFEST))
            except ValueError as e:
                raise ArtifactError(f"{path}: {MANIFEST} is not valid JSON: {e}") from None
            blobs = {n: z.read(n) for n in names if n != MANIFEST}
    except FileNotFoundError:
        raise ArtifactError(f"{path}: no such file") from None
    except zipfile.BadZipFile:
        raise ArtifactError(f"{path}: not an mscc executable (not a zip file)") from None
    try:
        validate(manifest, blobs)
    except ArtifactError as e:
        raise ArtifactError(f"{path}: {e}") from None
    return Artifact(manifest, blobs, path)


def validate(manifest: dict, blobs: dict):
    """Raise ArtifactError unless the manifest is one this runtime can execute."""
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
    try:
        for d in manifest["inputs"] + manifest["outputs"]:
            spec_from_json(d)
    except (KeyError, TypeError, ValueError) as e:
        raise ArtifactError(f"bad input/output description: {e}") from None
    if target == "cpu":
        _validate_cpu(manifest["cpu"], blobs)
    else:
        _validate_cuda(manifest, blobs)


def _need_blob(blobs, name, what):
    if not name or name not in blobs:
        raise ArtifactError(f"{what} '{name}' is missing from the artifact")


def _validate_cpu(cpu: dict, blobs):
    _need_blob(blobs, cpu.get("library"), "shared library")
    if not cpu.get("symbol"):
        raise ArtifactError("the cpu section names no entry symbol")


def _validate_cuda(manifest, blobs):
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
            if tuple(b.shape) != spec.shape or np.dtype(b.dtype) != spec.dtype.np:
                raise ArtifactError(f"{kind} #{b.index}: plan buffer {b.dtype}{list(b.shape)} "
                                    f"does not match {spec}")
