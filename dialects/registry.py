"""The ms op registry: one `OpDef` per op, looked up by name everywhere.

An op's structure lives in ms.irdl.mlir; everything IRDL cannot say lives in its OpDef, defined
in one block in dialects/ops/: the shape/dtype rule, const-input table, dtype signature groups
for implicit cast, scalar semantics (for elementwise ops), lowering and gradient rule. Passes
look rules up here by op name; a missing rule is an error naming the op (`rule`).

This module does not import mlir.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, NamedTuple

from . import dtypes as dt


class ShapeError(ValueError):
    """A shape or attribute rule failed; the message does not name the op yet."""


from .dtypes import DTypeError  # noqa: E402,F401  (defined there: dtypes.promote raises it)


class MissingRuleError(NotImplementedError):
    pass


class NotConstant:
    """Stands for a const input whose operand is not produced by ms.constant."""

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"<non-constant {self.name}>"


class Operand(NamedTuple):
    name: str
    kind: str = "single"  # "single" | "optional" (IRDL variadics must be homogeneous:
                          # see ms.irdl.mlir)


# Attribute kinds: how an attribute is spelled in IR and what Python value stands for it.
ATTR_KINDS = {
    "int": "an integer",
    "float": "a float",
    "ints": "a dense i64 array",
    "bool": "a boolean",
    "type": "a type",
    "dense": "dense elements",
    "symbol": "a symbol reference",
    "string": "a string",
}


# Result kinds: the builtin type a result has (IRDL base constraint).
RESULT_KINDS = {
    "tensor": "a ranked tensor",
    "function": "a function value (ms.grad)",
}


@dataclass(frozen=True)
class FusionRole:
    """How a non-elementwise op anchors a fused region (passes/fusion.py). Elementwise ops
    (those with a `scalar` rule) fuse anywhere and need no role."""
    kind: str               # the `kind` of the ms.fused region it anchors: "reduction", "matmul"
    prologue: bool = False  # elementwise producers of its data input fuse into its loops
    input_passes: int = 1   # how often its lowering reads that input (fused producers are
                            # recomputed that often, so only cheap ones are fused)
    epilogue_inside: bool = False  # its lowering takes the epilogue (`epilogue=`) and computes
                                   # it inside its own loops (a convolution's per-image loop)


@dataclass(eq=False)
class OpDef:
    name: str                                   # "ms.add"
    operands: tuple                             # Operand, in IR order
    infer: Callable | None                      # (in_specs, attrs) -> TensorSpec | [TensorSpec];
                                                # None: result types are given by the builder
    attrs: dict = field(default_factory=dict)   # required attribute -> kind (in the IRDL too)
    const_inputs: dict = field(default_factory=dict)  # operand name -> kind of its attribute form
    signature: tuple = ()                       # per data operand: dtype group name or None
    write: tuple = ()                           # data-operand indexes that write a Parameter
    dtypes: tuple = dt.ALL                      # element types the data operands may have
    scalar: Callable | None = None              # elementwise: (ScalarBuilder, *values) -> value
    cost: float | None = None                   # a primitive scalar rule's cost (an add is 1):
                                                # fusion recomputes cheap ops, not costly ones
    compute_dtype: Callable | None = None       # elementwise: in dtypes -> dtype the body computes in
    lower: Callable | None = None               # (LowerCtx, *operands) -> value | [values]
    expand: Callable | None = None              # (GradCtx, *operands) -> value: a composite
                                                # op as other ms ops; ms-expand-composites
                                                # replaces it after ms-autodiff, before fusion
    grad: Callable | None = None                # (GradCtx, ...) -> input cotangents
    batch: Callable | None = None               # (BatchCtx) -> (value, batch dim): the op
                                                # on batched operands (vmap; dialects/batching.py)
    verify: Callable | None = None              # extra checks: (in_specs, attrs) -> None or raise
    verify_op: Callable | None = None           # checks of the op itself (its regions):
                                                # op -> problem message or None
    canonicalize: Callable | None = None        # const-input values in normal form (negative
                                                # axes, -1 sizes): (in_specs, attrs) -> attrs
    pure: bool = True                           # False: never erased or merged by ms-canonicalize
    fusion: FusionRole | None = None            # anchors a fused region (reductions, matmuls)
    results: tuple = (("output", "tensor"),)    # (name, RESULT_KINDS key), in IR order
    regions: tuple = ()                         # names of single-block regions
    structure_note: str = ""                    # why the IR structure is as it is (IRDL comment)
    doc: str = ""

    @property
    def mnemonic(self):
        return self.name.split(".", 1)[1]

    @property
    def data_operands(self):
        """Operands that carry tensors (not const inputs)."""
        return tuple(o for o in self.operands if o.name not in self.const_inputs)

    @property
    def needs_segment_sizes(self):
        return sum(o.kind != "single" for o in self.operands) > 1

    def rule(self, which: str):
        fn = getattr(self, which)
        if fn is None:
            raise MissingRuleError(f"'{self.name}' has no {which} rule")
        return fn

    def infer_specs(self, in_specs, attrs):
        """Result specs as a list; `infer` may return one spec for single-result ops."""
        if self.verify is not None:
            self.verify(in_specs, attrs)
        out = self.rule("infer")(in_specs, attrs)
        return list(out) if isinstance(out, (list, tuple)) and not isinstance(out, dt.TensorSpec) else [out]


OPS: dict[str, OpDef] = {}


def define(name, operands, infer, **kw) -> OpDef:
    if name in OPS:
        raise ValueError(f"op {name} defined twice")
    ops = tuple(o if isinstance(o, Operand) else Operand(*o) if isinstance(o, tuple) else Operand(o)
                for o in operands)
    opdef = OpDef(name=name, operands=ops, infer=infer, **kw)
    data = opdef.data_operands
    if opdef.signature and len(opdef.signature) != len(data):
        raise ValueError(f"{name}: signature has {len(opdef.signature)} entries for {len(data)} operands")
    for n in opdef.const_inputs:
        if n not in {o.name for o in ops}:
            raise ValueError(f"{name}: const input {n} is not an operand")
    for n, kind in list(opdef.attrs.items()) + list(opdef.const_inputs.items()):
        if kind not in ATTR_KINDS:
            raise ValueError(f"{name}: attribute {n} has unknown kind {kind!r}")
    primitive = getattr(opdef.scalar, "primitive", False)
    if primitive != (opdef.cost is not None):
        raise ValueError(f"{name}: a primitive scalar rule (lowering.by_kind) declares its cost; "
                         "a composed one has none (it is the sum of its parts)")
    for n, kind in opdef.results:
        if kind not in RESULT_KINDS:
            raise ValueError(f"{name}: result {n} has unknown kind {kind!r}")
    OPS[name] = opdef
    return opdef


@dataclass(eq=False)
class UpstreamOpDef:
    """An upstream op that holds or feeds ms code at the ms stages: the control-flow ops
    (scf.for, scf.while, scf.if, whose regions hold ms ops; dialects/ops/control.py says why
    they are not ms ops) and the glue between ms tensors and their scalars (tensor.extract,
    tensor.from_elements). The passes look these up by op name, as they do OpDefs: what
    IRDL-free ops need beyond upstream's own verifier is said here, in one place per op."""
    name: str
    api: str = ""                      # how users know it (errors name it; the op's ms.api
                                       # attribute, set by the frontend, overrides)
    verify: Callable | None = None     # op -> problem message or None (ms-verify)
    lower: Callable | None = None      # (op, origin) -> None: storage types (convert-ms-to-linalg)
    prepare: Callable | None = None    # (op) -> the op replacing it, or None: what the forward
                                       # keeps for the backward (ms-autodiff, before the
                                       # backward is built)
    grad: Callable | None = None       # (backprop, op, douts, active) -> [(value, cotangent)]
    holds_ms: bool = False             # its regions hold ms ops (passes visit them)
    doc: str = ""


UPSTREAM: dict[str, UpstreamOpDef] = {}


def define_upstream(name, **kw) -> UpstreamOpDef:
    if name in UPSTREAM:
        raise ValueError(f"upstream op {name} defined twice")
    UPSTREAM[name] = d = UpstreamOpDef(name=name, **kw)
    return d


class ControlFlowError(ValueError):
    """A control-flow op cannot do what was asked (differentiate a loop whose trip count is
    known only at run time, ...); ms-autodiff reports it at the op."""


def plain_elementwise_ops() -> list[OpDef]:
    """Elementwise ops that take only tensors (no attributes, no const inputs), in definition
    order: the frontend's plain wrappers (ms.ops.add, ...) and the test tables derive from
    this list."""
    from . import ops  # noqa: F401  (fills the registry)
    return [d for d in OPS.values() if d.scalar is not None and not d.attrs
            and not d.const_inputs]


def lookup(name: str) -> OpDef:
    try:
        return OPS[name]
    except KeyError:
        raise MissingRuleError(f"'{name}' is not an ms op known to the registry") from None
