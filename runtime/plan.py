"""Launch plans: what a CUDA executable does, in order, with no MLIR.

The compiler reads the host function after kernel outlining (passes/launch_plan.py) into a
LaunchPlan: the buffers the entry uses (inputs, outputs, temporaries, constants; sizes from
shapes) and the steps, in program order: kernel launches (grid, block, shared memory,
parameters in the kernel's bare-pointer layout) and device-to-device copies. The runtime
(runtime/cuda.py) executes it; runtime/artifact.py stores it as JSON.

Imports neither mlir nor the compiler.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np

BUFFER_KINDS = ("input", "output", "temp", "const")


class PlanError(ValueError):
    """A launch plan that is inconsistent (a corrupt or hand-edited artifact)."""


@dataclass
class Buffer:
    name: str                 # "in0", "out0", "tmp3", "const1"
    kind: str                 # one of BUFFER_KINDS
    shape: tuple
    dtype: str                # numpy dtype name of the stored elements
    index: int | None = None  # position among the entry's inputs or outputs
    data: str | None = None   # constants: name of the blob holding the bytes

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * np.dtype(self.dtype).itemsize


@dataclass
class Param:
    """One kernel parameter: a buffer's device address, or a scalar of a numpy dtype."""
    buffer: str | None = None
    scalar: float | int | None = None
    dtype: str | None = None   # for scalars


@dataclass
class Launch:
    kernel: str
    grid: tuple
    block: tuple
    params: list
    dynamic_smem: int = 0     # bytes of dynamic shared memory
    static_smem: int = 0      # bytes of workgroup memory the kernel declares (informative)
    loc: str = ""             # source location of the op the kernel computes
    op: str = "launch"


@dataclass
class Copy:
    src: str
    dst: str
    nbytes: int
    loc: str = ""
    op: str = "copy"


@dataclass
class LaunchPlan:
    entry: str
    buffers: list = field(default_factory=list)
    steps: list = field(default_factory=list)

    def buffer(self, name) -> Buffer:
        for b in self.buffers:
            if b.name == name:
                return b
        raise PlanError(f"launch plan of '{self.entry}' has no buffer '{name}'")

    @property
    def launches(self):
        return [s for s in self.steps if isinstance(s, Launch)]

    def kernels(self) -> list:
        seen = []
        for s in self.launches:
            if s.kernel not in seen:
                seen.append(s.kernel)
        return seen

    # -------------------------------------------------------------- JSON

    def to_json(self) -> dict:
        return {"entry": self.entry,
                "buffers": [_drop_none(asdict(b)) for b in self.buffers],
                "steps": [_drop_none(asdict(s)) for s in self.steps]}

    @classmethod
    def from_json(cls, d: dict) -> "LaunchPlan":
        try:
            buffers = [Buffer(b["name"], b["kind"], tuple(b["shape"]), b["dtype"],
                              b.get("index"), b.get("data")) for b in d["buffers"]]
            steps = []
            for s in d["steps"]:
                if s["op"] == "launch":
                    steps.append(Launch(s["kernel"], tuple(s["grid"]), tuple(s["block"]),
                                        [Param(**p) for p in s["params"]],
                                        s.get("dynamic_smem", 0), s.get("static_smem", 0),
                                        s.get("loc", "")))
                elif s["op"] == "copy":
                    steps.append(Copy(s["src"], s["dst"], s["nbytes"], s.get("loc", "")))
                else:
                    raise PlanError(f"unknown step '{s['op']}'")
            plan = cls(d["entry"], buffers, steps)
        except (KeyError, TypeError) as e:
            raise PlanError(f"malformed launch plan: {type(e).__name__}: {e}") from None
        plan.validate()
        return plan

    def validate(self):
        """Every reference resolves, sizes agree, launch shapes are positive."""
        names = {}
        for b in self.buffers:
            if b.kind not in BUFFER_KINDS:
                raise PlanError(f"buffer '{b.name}' has unknown kind '{b.kind}'")
            if b.name in names:
                raise PlanError(f"buffer '{b.name}' is declared twice")
            try:
                np.dtype(b.dtype)
            except TypeError:
                raise PlanError(f"buffer '{b.name}' has unknown dtype '{b.dtype}'") from None
            if b.kind == "const" and not b.data:
                raise PlanError(f"constant buffer '{b.name}' has no data")
            names[b.name] = b
        for kind in ("input", "output"):
            idx = sorted(b.index for b in self.buffers if b.kind == kind)
            if idx != list(range(len(idx))):
                raise PlanError(f"{kind} buffers are numbered {idx}, expected 0..{len(idx) - 1}")
        for i, s in enumerate(self.steps):
            if isinstance(s, Launch):
                if len(s.grid) != 3 or len(s.block) != 3 or min(s.grid + s.block) < 1:
                    raise PlanError(f"launch #{i} of '{s.kernel}' has grid {s.grid} and "
                                    f"block {s.block}")
                for p in s.params:
                    if p.buffer is not None and p.buffer not in names:
                        raise PlanError(f"launch #{i} of '{s.kernel}' uses unknown buffer "
                                        f"'{p.buffer}'")
                    if p.buffer is None and (p.scalar is None or p.dtype is None):
                        raise PlanError(f"launch #{i} of '{s.kernel}' has a parameter "
                                        "without buffer or scalar value")
            else:
                for n in (s.src, s.dst):
                    if n not in names:
                        raise PlanError(f"copy #{i} uses unknown buffer '{n}'")
                if s.nbytes > min(names[s.src].nbytes, names[s.dst].nbytes):
                    raise PlanError(f"copy #{i} of {s.nbytes} bytes overruns its buffers")


def _drop_none(d: dict) -> dict:
    """JSON form of a dataclass dict: tuples as lists, None fields left out (nested too)."""
    def clean(v):
        if isinstance(v, dict):
            return _drop_none(v)
        if isinstance(v, (list, tuple)):
            return [clean(x) for x in v]
        return v
    return {k: clean(v) for k, v in d.items() if v is not None}
