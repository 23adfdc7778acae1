"""Launch plans: what a CUDA executable does, in order, with no MLIR.

The compiler reads the host function after kernel outlining (passes/launch_plan.py) into a
LaunchPlan: the buffers the entry uses (inputs, outputs, temporaries, constants; sizes from
shapes) and the steps, in program order: kernel launches (grid, block, shared memory,
parameters in the kernel's bare-pointer layout), device-to-device copies, and the control
nodes of loops and conditionals (`For`, `While`, `If`), whose bodies are sub-plans of their
own (LaunchPlan.functions, by name: passes/gpu_control.py says why). The runtime
(runtime/cuda.py) executes it; runtime/artifact.py stores it as JSON.

With dynamic sizes (an entry compiled for `tensor<?x64xf32>`), a size in the plan may be a
size expression instead of an int: `["dim", "in0", 0]` (dimension 0 of the call's input #0
or, with "out", of an output, sized from runtime/dynamic.py's description), or
`[op, a, b]` with op one of SIZE_OPS over two sizes, or `["float", a]` (a size as a float
kernel parameter: a mean's divisor). Temporaries' shapes, copies' byte
counts, grids and scalar kernel parameters may be such expressions; the runtime evaluates
them once per call (`evaluate`). An input's or output's dynamic size is null in its shape.

Imports neither mlir nor the compiler.
"""
from __future__ import annotations

import operator
from dataclasses import asdict, dataclass, field

import numpy as np

BUFFER_KINDS = ("input", "output", "temp", "const")


class PlanError(ValueError):
    """A launch plan that is inconsistent (a corrupt or hand-edited artifact)."""


# ------------------------------------------------------------------ size expressions

def _ceildiv(a, b):
    return -(-a // b)


SIZE_OPS = {"add": operator.add, "sub": operator.sub, "mul": operator.mul,
            "floordiv": operator.floordiv, "ceildiv": _ceildiv, "rem": operator.mod,
            "max": max, "min": min, "float": float}
UNARY_SIZE_OPS = ("float",)


def size_op(op: str, a, b=None):
    """The size expression `op(a, b)` (or `op(a)`), folded when the operands are numbers
    (static plans stay numbers)."""
    if op in UNARY_SIZE_OPS:
        return SIZE_OPS[op](a) if is_static(a) else [op, a]
    if type(a) is int and type(b) is int:
        return SIZE_OPS[op](a, b)
    if op == "mul" and 1 in (a, b):
        return b if a == 1 else a
    if op in ("add", "sub") and b == 0:
        return a
    return [op, a, b]


def is_static(size) -> bool:
    return not isinstance(size, list)


def evaluate(size, shapes: dict):
    """The value of a size (an int, float or expression) given each input's and output's
    shape by buffer name; ValueError for a division by a zero size."""
    if not isinstance(size, list):
        return size
    if size[0] == "dim":
        return int(shapes[size[1]][size[2]])
    operands = [evaluate(x, shapes) for x in size[1:]]
    try:
        return SIZE_OPS[size[0]](*operands)
    except ZeroDivisionError:
        raise ValueError(f"the size {size} divides by zero for the shapes {shapes}") from None


def validate_size(size, buffers: dict, where: str):
    """A size is an int or float, or a well-formed expression over input/output buffers."""
    if not isinstance(size, list):
        if not isinstance(size, (int, float)) or isinstance(size, bool):
            raise PlanError(f"{where}: size {size!r} is not a number or an expression")
        return
    if size and size[0] == "dim":
        if (len(size) != 3 or size[1] not in buffers or type(size[2]) is not int
                or buffers[size[1]].kind not in ("input", "output")
                or not 0 <= size[2] < len(buffers[size[1]].shape)):
            raise PlanError(f"{where}: {size!r} is not a dimension of an input or output")
        return
    arity = 1 if size and size[0] in UNARY_SIZE_OPS else 2
    if len(size) != 1 + arity or size[0] not in SIZE_OPS:
        raise PlanError(f"{where}: {size!r} is not a size expression")
    for operand in size[1:]:
        validate_size(operand, buffers, where)


def nbytes_of(shape, dtype, shapes=None) -> int:
    """Bytes of a buffer of `shape`, its size expressions evaluated in `shapes`."""
    n = 1
    for d in shape:
        n *= evaluate(d, shapes)
    return int(n) * np.dtype(dtype).itemsize


@dataclass
class Buffer:
    name: str                 # "in0", "out0", "tmp3", "const1"
    kind: str                 # one of BUFFER_KINDS
    shape: tuple
    dtype: str                # numpy dtype name of the stored elements
    index: int | None = None  # position among the entry's inputs or outputs
    data: str | None = None   # constants: name of the blob holding the bytes

    @property
    def dynamic(self) -> bool:
        return not all(type(d) is int for d in self.shape)

    @property
    def nbytes(self) -> int:
        if self.dynamic:
            raise PlanError(f"buffer '{self.name}' has dynamic sizes {list(self.shape)}")
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
class For:
    """`for i in range(lower, upper, step): carries = body(i, *carries, *captured)`. A bound
    that is None is read at the loop's start from the 0-d integer buffer in `bounds` (in
    order lower, upper). The body's inputs: a 0-d int64 buffer holding i, the carries, the
    captured buffers; its outputs: the new carries. The final carries go to `results`."""
    body: str
    lower: int | None
    upper: int | None
    step: int
    bounds: list           # buffers of the bounds that are None
    inits: list
    captured: list
    results: list
    api: str = "ForiLoop"
    loc: str = ""
    op: str = "for"


@dataclass
class While:
    """`while cond(*carries, *captured): carries = body(*carries, *captured)`; cond's one
    output is a 0-d bool (uint8) buffer, copied to the host each iteration."""
    cond: str
    body: str
    inits: list
    captured: list
    results: list
    api: str = "WhileLoop"
    loc: str = ""
    op: str = "while"


@dataclass
class If:
    """`results = (then if pred else orelse)(*captured)`; pred is a 0-d bool (uint8)
    buffer, copied to the host."""
    pred: str
    then: str
    orelse: str
    captured: list
    results: list
    api: str = "cond"
    loc: str = ""
    op: str = "if"


CONTROL = (For, While, If)


def _step_from_json(s):
    if s["op"] == "launch":
        return Launch(s["kernel"], tuple(s["grid"]), tuple(s["block"]),
                      [Param(**p) for p in s["params"]], s.get("dynamic_smem", 0),
                      s.get("static_smem", 0), s.get("loc", ""))
    if s["op"] == "copy":
        return Copy(s["src"], s["dst"], s["nbytes"], s.get("loc", ""))
    if s["op"] == "for":
        return For(s["body"], s.get("lower"), s.get("upper"), s["step"], s["bounds"],
                   s["inits"], s["captured"], s["results"], s.get("api", "ForiLoop"),
                   s.get("loc", ""))
    if s["op"] == "while":
        return While(s["cond"], s["body"], s["inits"], s["captured"], s["results"],
                     s.get("api", "WhileLoop"), s.get("loc", ""))
    if s["op"] == "if":
        return If(s["pred"], s["then"], s["orelse"], s["captured"], s["results"],
                  s.get("api", "cond"), s.get("loc", ""))
    raise PlanError(f"unknown step '{s['op']}'")


@dataclass
class LaunchPlan:
    entry: str
    buffers: list = field(default_factory=list)
    steps: list = field(default_factory=list)
    # the sub-plans control nodes run, by name (only the outermost plan has them)
    functions: dict = field(default_factory=dict)

    def buffer(self, name) -> Buffer:
        for b in self.buffers:
            if b.name == name:
                return b
        raise PlanError(f"launch plan of '{self.entry}' has no buffer '{name}'")

    @property
    def launches(self):
        return [s for s in self.steps if isinstance(s, Launch)]

    def all_launches(self):
        """The launches of this plan and of every sub-plan."""
        out = list(self.launches)
        for sub in self.functions.values():
            out += sub.launches
        return out

    @property
    def dynamic(self) -> bool:
        """Whether some size is known only per call (its inputs' sizes)."""
        return any(b.dynamic for b in self.buffers)

    def kernels(self) -> list:
        seen = []
        for s in self.all_launches():
            if s.kernel not in seen:
                seen.append(s.kernel)
        return seen

    # -------------------------------------------------------------- text

    def describe(self) -> str:
        """One line per buffer and step (`mscc --target cuda --emit=plan`), sub-plans after
        the entry's: what the lit tests FileCheck."""
        lines = [f"plan @{self.entry}"]
        for b in self.buffers:
            shape = ", ".join("?" if d is None else format_size(d) for d in b.shape)
            lines.append(f"  {b.name}: {b.kind} {b.dtype}[{shape}]")
        for s in self.steps:
            lines.append("  " + _describe_step(s))
        for sub in self.functions.values():
            lines.append(sub.describe())
        return "\n".join(lines)

    # -------------------------------------------------------------- JSON

    def to_json(self) -> dict:
        d = {"entry": self.entry,
             "buffers": [_drop_none(asdict(b)) for b in self.buffers],
             "steps": [_drop_none(asdict(s)) for s in self.steps]}
        if self.functions:
            d["functions"] = {k: f.to_json() for k, f in self.functions.items()}
        return d

    @classmethod
    def from_json(cls, d: dict, top: bool = True) -> "LaunchPlan":
        try:
            buffers = [Buffer(b["name"], b["kind"], tuple(b["shape"]), b["dtype"],
                              b.get("index"), b.get("data")) for b in d["buffers"]]
            steps = [_step_from_json(s) for s in d["steps"]]
            functions = {k: cls.from_json(f, top=False)
                         for k, f in d.get("functions", {}).items()}
            plan = cls(d["entry"], buffers, steps, functions)
        except (KeyError, TypeError, AttributeError) as e:
            raise PlanError(f"malformed launch plan: {type(e).__name__}: {e}") from None
        if top:
            plan.validate()
        return plan

    def validate(self, functions=None):
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
        for b in self.buffers:
            _validate_shape(b, names)
        for kind in ("input", "output"):
            idx = sorted(b.index for b in self.buffers if b.kind == kind)
            if idx != list(range(len(idx))):
                raise PlanError(f"{kind} buffers are numbered {idx}, expected 0..{len(idx) - 1}")
        functions = self.functions if functions is None else functions
        for sub in self.functions.values():
            if sub.functions:
                raise PlanError(f"sub-plan '{sub.entry}' has sub-plans of its own")
            if any(b.dynamic for b in sub.buffers):
                raise PlanError(f"sub-plan '{sub.entry}' has dynamic sizes")
            sub.validate(functions)
        for i, s in enumerate(self.steps):
            if isinstance(s, CONTROL):
                _validate_control(self, i, s, names, functions)
            elif isinstance(s, Launch):
                where = f"launch #{i} of '{s.kernel}'"
                for g in s.grid:
                    validate_size(g, names, where)
                static = [d for d in s.grid if is_static(d)] + list(s.block)
                if (len(s.grid) != 3 or len(s.block) != 3 or min(static) < 1
                        or not all(type(d) is int for d in s.block)):
                    raise PlanError(f"{where} has grid {s.grid} and block {s.block}")
                for p in s.params:
                    if p.buffer is None:
                        validate_size(p.scalar, names, where)
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
                validate_size(s.nbytes, names, f"copy #{i}")
                if is_static(s.nbytes) and not (names[s.src].dynamic or names[s.dst].dynamic) \
                        and s.nbytes > min(names[s.src].nbytes, names[s.dst].nbytes):
                    raise PlanError(f"copy #{i} of {s.nbytes} bytes overruns its buffers")


def _validate_shape(b, names):
    """An input's or output's size is an int or null (dynamic: the call's arrays give it);
    a temporary's an int or a size expression; a constant's an int."""
    for d in b.shape:
        if d is None and b.kind in ("input", "output"):
            continue
        if isinstance(d, list) and b.kind == "temp":
            validate_size(d, names, f"buffer '{b.name}'")
        elif type(d) is not int or d < 0:
            raise PlanError(f"buffer '{b.name}' has shape {list(b.shape)}")


def format_size(size) -> str:
    """`dim(in0, 0)`, `ceildiv(dim(in0, 0), 256)`, or the number."""
    if not isinstance(size, list):
        return str(size)
    if size[0] == "dim":
        return f"dim({size[1]}, {size[2]})"
    return f"{size[0]}({', '.join(format_size(x) for x in size[1:])})"


def _describe_step(s) -> str:
    def sizes(xs):
        return "[" + ", ".join(format_size(x) for x in xs) + "]"
    if isinstance(s, Launch):
        params = ", ".join(p.buffer if p.buffer is not None
                           else f"{format_size(p.scalar)}: {p.dtype}" for p in s.params)
        return f"launch {s.kernel} grid {sizes(s.grid)} block {sizes(s.block)} ({params})"
    if isinstance(s, Copy):
        return f"copy {s.src} -> {s.dst} ({format_size(s.nbytes)} bytes)"
    fields = {k: v for k, v in asdict(s).items() if k not in ("op", "loc")}
    return f"{s.op} " + " ".join(f"{k}={v}" for k, v in fields.items())


def _io(plan, kind):
    return sorted((b for b in plan.buffers if b.kind == kind), key=lambda b: b.index)


def _validate_control(plan, i, s, names, functions):
    """A control node's buffers exist and match its sub-plans' inputs and outputs."""
    where = f"step #{i} ({s.op}, {s.api}) of '{plan.entry}'"

    def sub(name):
        f = functions.get(name)
        if f is None:
            raise PlanError(f"{where} runs unknown sub-plan '{name}'")
        return f

    def same(bufs, specs, what):
        if len(bufs) != len(specs):
            raise PlanError(f"{where}: {len(bufs)} {what}, its sub-plan takes {len(specs)}")
        for n, spec in zip(bufs, specs):
            if n not in names:
                raise PlanError(f"{where} uses unknown buffer '{n}'")
            b = names[n]
            if tuple(b.shape) != tuple(spec.shape) or b.dtype != spec.dtype:
                raise PlanError(f"{where}: buffer '{n}' is {b.dtype}{list(b.shape)}, its "
                                f"sub-plan wants {spec.dtype}{list(spec.shape)}")
    for n in (s.bounds if isinstance(s, For) else [s.pred] if isinstance(s, If) else []):
        if n not in names or names[n].shape != () or names[n].nbytes > 8:
            raise PlanError(f"{where}: '{n}' is not a 0-d buffer")
    if isinstance(s, For):
        if s.step <= 0 or len(s.bounds) != [s.lower, s.upper].count(None):
            raise PlanError(f"{where} has step {s.step} and {len(s.bounds)} bound buffers")
        body = sub(s.body)
        ins = _io(body, "input")
        same(s.inits + s.captured, ins[1:], "inputs")
        same(s.results, _io(body, "output"), "results")
        same(s.inits, _io(body, "output"), "carries")
    elif isinstance(s, While):
        cond, body = sub(s.cond), sub(s.body)
        same(s.inits + s.captured, _io(cond, "input"), "inputs")
        same(s.inits + s.captured, _io(body, "input"), "inputs")
        same(s.results, _io(body, "output"), "results")
        same(s.inits, _io(body, "output"), "carries")
        if len(_io(cond, "output")) != 1:
            raise PlanError(f"{where}: its condition must have one output")
    else:
        for name in (s.then, s.orelse):
            f = sub(name)
            same(s.captured, _io(f, "input"), "inputs")
            same(s.results, _io(f, "output"), "results")


def _drop_none(d: dict) -> dict:
    """JSON form of a dataclass dict: tuples as lists, None fields left out (nested too)."""
    def clean(v):
        if isinstance(v, dict):
            return _drop_none(v)
        if isinstance(v, (list, tuple)):
            return [clean(x) for x in v]
        return v
    return {k: clean(v) for k, v in d.items() if v is not None}
