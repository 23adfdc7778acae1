"""The ms dialect as MLIR sees it: context, types, attributes and op construction.

One process-wide MLIR context holds every dialect plus ms (loaded from ms.irdl.mlir once:
loading twice aborts). Each ms op gets a registered OpView subclass so that turning an op into a
Python object does not retry a failing `import mlir.dialects.ms` (measured: 13 µs per op).
"""
from __future__ import annotations

import os
import sys
import threading
import types as _pytypes

import numpy as np
from .lazy import ir, irdl
from .lazy import mlir_ext as _cext

from . import dtypes as dt
from .registry import OPS, NotConstant, OpDef, lookup
from .symdim import ANY, Dim, has_dynamic

IRDL_PATH = os.path.join(os.path.dirname(__file__), "ms.irdl.mlir")

# Unit attribute that marks an ms.constant as a Python scalar (for implicit-cast's scalar rules).
SCALAR_ATTR = "is_scalar"
# Func argument attribute naming the Parameter a function argument stands for.
PARAM_ATTR = "ms.parameter"

_context: ir.Context | None = None


_OPVIEWS: dict[str, type] = {}
_DIALECT: list = []  # the registered ms Dialect class, once the context exists


def _register_dialect():
    """Register the ms dialect's Python classes with the bindings (with the context: this
    module imports without MLIR)."""
    if _DIALECT:
        return _DIALECT[0]

    class MsDialect(ir.Dialect):
        DIALECT_NAMESPACE = "ms"
    _cext.register_dialect(MsDialect)
    # The bindings look for `mlir.dialects.ms` before they consult registered OpViews; an
    # importable placeholder makes that lookup succeed once instead of failing on every op.
    sys.modules.setdefault("mlir.dialects.ms", _pytypes.ModuleType("mlir.dialects.ms"))
    _DIALECT.append(MsDialect)
    return MsDialect


def _register_opviews():
    dialect = _register_dialect()
    for name, opdef in OPS.items():
        if name in _OPVIEWS:
            continue
        cls_name = "".join(p.capitalize() for p in opdef.mnemonic.split("_")) + "Op"
        cls = type(cls_name, (ir.OpView,), {"OPERATION_NAME": name, "_ODS_REGIONS": (0, True),
                                            "opdef": opdef})
        _cext.register_operation(dialect)(cls)
        _OPVIEWS[name] = cls


def mlir_context() -> ir.Context:
    """The process-wide context with every upstream dialect and ms loaded."""
    global _context
    if _context is not None:
        return _context
    with _context_lock:  # two first calls must not make two contexts (types cached from
        if _context is None:  # one would then meet ops of the other: "same type" errors)
            from . import ops, upstream  # noqa: F401  (ops fills the registry)
            upstream.use()
            _register_opviews()
            ctx = ir.Context()
            with ctx:
                with open(IRDL_PATH) as f:
                    irdl_module = ir.Module.parse(f.read())
                irdl.load_dialects(irdl_module)
            _context = ctx
    return _context


_context_lock = threading.RLock()


def _stop_mlir_threads():
    """Before a fork: MLIR's thread pool (the verifier and nested pass pipelines run on it)
    does not survive one. The child has none of its threads, and its first parallel verify
    (any compile of a module with two functions) waited for them for ever: a data loader's
    forked worker that called an op it had not compiled hung. The pool is stopped before the
    fork, with the compiler lock held (no compile runs meanwhile), and started again on both
    sides of it (a new pool, its threads made when first needed)."""
    from ..pyfront.state import compiler_lock
    compiler_lock.acquire()
    if _context is not None:
        _context.enable_multithreading(False)


def _start_mlir_threads():
    from ..pyfront.state import compiler_lock
    try:
        if _context is not None:
            _context.enable_multithreading(True)
    finally:
        compiler_lock.release()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_stop_mlir_threads, after_in_parent=_start_mlir_threads,
                        after_in_child=_start_mlir_threads)


# ---------------------------------------------------------------------------- types

_ELEM_BUILDERS = {
    "i1": lambda: ir.IntegerType.get_signless(1),
    "ui8": lambda: ir.IntegerType.get_unsigned(8),
    "ui16": lambda: ir.IntegerType.get_unsigned(16),
    "ui32": lambda: ir.IntegerType.get_unsigned(32),
    "ui64": lambda: ir.IntegerType.get_unsigned(64),
    "i8": lambda: ir.IntegerType.get_signless(8),
    "i16": lambda: ir.IntegerType.get_signless(16),
    "i32": lambda: ir.IntegerType.get_signless(32),
    "i64": lambda: ir.IntegerType.get_signless(64),
    "f16": lambda: ir.F16Type.get(),
    "bf16": lambda: ir.BF16Type.get(),
    "f32": lambda: ir.F32Type.get(),
    "f64": lambda: ir.F64Type.get(),
}
_elem_cache: dict = {}
_spec_cache: dict = {}


def element_type(dtype: dt.DType, storage=False) -> ir.Type:
    """The ms IR element type of a dtype. With `storage`: the type lowered code keeps in
    memory, signless (arith has no unsigned integers) and i8 for bool (LLVM cannot load an
    i1 from memory; numpy's bools are bytes too)."""
    key = (dtype.name, storage)
    t = _elem_cache.get(key)
    if t is None:
        name = dtype.ir_name
        if storage and dtype.kind == "uint":
            name = f"i{dtype.bits}"  # signless: same bits, arith decides signedness per op
        elif storage and dtype is dt.bool_:
            name = "i8"
        t = _ELEM_BUILDERS[name]()
        _elem_cache[key] = t
    return t


def compute_type(dtype: dt.DType) -> ir.Type:
    """The scalar type lowered code computes in: i1 for bool, signless integers."""
    return element_type(dtype, storage=dtype is not dt.bool_)


def tensor_type(spec: dt.TensorSpec, storage=False) -> ir.Type:
    """The ranked tensor type of a spec; a dynamic dimension (symdim.Dim) is `?`."""
    dt.check_shape(spec.shape, spec.dtype)  # a ValueError here, not an abort in lowering
    return ir.RankedTensorType.get(ir_shape(spec.shape), element_type(spec.dtype, storage))


def ir_shape(shape) -> list:
    """A shape for MLIR types: dynamic dimensions as ShapedType's dynamic size."""
    if not has_dynamic(shape):
        return list(shape)
    dyn = ir.ShapedType.get_dynamic_size()
    return [dyn if isinstance(d, Dim) else d for d in shape]




def dtype_of(elem: ir.Type) -> dt.DType | None:
    return dt.from_ir_name(str(elem))


def spec_of(t: ir.Type) -> dt.TensorSpec | None:
    """Shape and dtype of a ranked tensor type; None for anything else. A dynamic dimension
    (`?`) reads as symdim.ANY, some size known at run time."""
    spec = _spec_cache.get(t)
    if spec is None:
        if not isinstance(t, ir.RankedTensorType):
            return None
        d = dtype_of(t.element_type)
        if d is None:
            return None
        shape = tuple(t.shape)
        if not t.has_static_shape:
            shape = tuple(ANY if ir.ShapedType.is_dynamic_size(n) else n for n in shape)
        spec = dt.TensorSpec(shape, d)
        _spec_cache[t] = spec
    return spec




# ---------------------------------------------------------------------------- attributes

class AttrError(ValueError):
    pass


def attr_to_py(kind: str, a: ir.Attribute):
    """The Python value of an attribute of the given kind; AttrError if it has another form."""
    if kind == "int":
        if isinstance(a, ir.IntegerAttr) and not isinstance(a, ir.BoolAttr):
            return a.value
    elif kind == "float":
        if isinstance(a, ir.FloatAttr):
            return a.value
    elif kind == "ints":
        if isinstance(a, ir.DenseI64ArrayAttr):
            return tuple(a)
    elif kind == "bool":
        if isinstance(a, ir.BoolAttr):
            return a.value
    elif kind == "type":
        if isinstance(a, ir.TypeAttr):
            d = dtype_of(a.value)
            if d is not None:
                return d
            raise AttrError(f"must be one of the supported element types, got {a.value}")
    elif kind == "dense":
        if isinstance(a, ir.DenseElementsAttr):
            return dense_to_numpy(a)
    elif kind == "symbol":
        if isinstance(a, ir.FlatSymbolRefAttr):
            return a.value
    elif kind == "string":
        if isinstance(a, ir.StringAttr):
            return a.value
    from .registry import ATTR_KINDS
    raise AttrError(f"must be {ATTR_KINDS[kind]}, got {a}")


def py_to_attr(kind: str, v) -> ir.Attribute:
    if kind == "int":
        return ir.IntegerAttr.get(ir.IntegerType.get_signless(64), int(v))
    if kind == "float":
        return ir.FloatAttr.get_f64(float(v))
    if kind == "ints":
        return ir.DenseI64ArrayAttr.get([int(x) for x in v])
    if kind == "bool":
        return ir.BoolAttr.get(bool(v))
    if kind == "type":
        return ir.TypeAttr.get(element_type(dt.as_dtype(v)))
    if kind == "dense":
        return numpy_to_dense(np.asarray(v))
    if kind == "symbol":
        return ir.FlatSymbolRefAttr.get(v)
    if kind == "string":
        return ir.StringAttr.get(v)
    raise ValueError(f"unknown attribute kind {kind}")


def _bf16_from_text(a: ir.DenseElementsAttr, shape) -> np.ndarray:
    """A bf16 attribute's values: the bindings give bf16 neither a buffer nor element access,
    so they are read from the printed form: hex bytes (large attributes) or decimals, with
    special values as 0x bit patterns (MLIR prints bf16 decimals exactly)."""
    body = str(a).rsplit("> : ", 1)[0][len("dense<"):].strip()
    if body.startswith('"0x'):
        raw = np.frombuffer(bytes.fromhex(body[3:-1]), dtype="<u2")
    else:
        toks = [t for t in body.replace("[", " ").replace("]", " ").replace(",", " ").split()]
        raw = np.array([int(t, 16) if t.startswith("0x") else
                        np.array(float(t), dtype=dt.bfloat16.np).view(np.uint16) for t in toks],
                       dtype=np.uint16)
    vals = raw.view(dt.bfloat16.np)
    return np.full(shape, vals[0], dtype=vals.dtype) if vals.size == 1 else vals.reshape(shape)


def dense_to_numpy(a: ir.DenseElementsAttr) -> np.ndarray:
    spec = spec_of(a.type)
    if spec is not None and spec.dtype is dt.bfloat16:
        return _bf16_from_text(a, spec.shape)
    element = ir.ShapedType(a.type).element_type
    if a.is_splat and isinstance(element, ir.IntegerType) and element.width == 1:
        # The bindings read an i1 splat's one stored byte as 8 elements and the rest as
        # false: `dense<true> : tensor<3x4xi1>` became 8 trues and 4 falses, and every
        # all-true bool constant of more than 8 elements computed wrong values (a select
        # under jit: API fuzzing, bench/fuzz_api.py, ops.triu(x, diagonal=-3)).
        return np.full(ir.ShapedType(a.type).shape, bool(ir.BoolAttr(a.get_splat_value()).value))
    arr = np.array(a)
    if spec is not None:
        arr = arr.astype(spec.dtype.np, copy=False).reshape(spec.shape)
    return arr


def numpy_to_dense(arr: np.ndarray, dtype: dt.DType | None = None) -> ir.DenseElementsAttr:
    dtype = dtype or dt.from_numpy(arr.dtype)
    arr = np.array(arr, dtype=dtype.np, order="C")  # (ascontiguousarray makes 0-d arrays 1-d)
    # numpy's dtype gives the element type, except that unsigned integers would become
    # signless and bfloat16 (a numpy void type to the bindings) would not be understood.
    if dtype is dt.bfloat16:  # its bit patterns, typed bf16
        return ir.DenseElementsAttr.get(arr.view(np.uint16), type=element_type(dtype))
    if dtype.kind == "uint":
        return ir.DenseElementsAttr.get(arr, type=element_type(dtype))
    return ir.DenseElementsAttr.get(arr)


# ---------------------------------------------------------------------------- ops



def operand_groups(opdef: OpDef, op) -> dict:
    """Operands by name: a Value, or None for an absent optional operand."""
    operands = list(op.operands)
    if opdef.needs_segment_sizes:
        if "operandSegmentSizes" not in op.attributes:
            raise AttrError("requires attribute 'operandSegmentSizes'")
        sizes = list(ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"]))
    else:
        extra = len(operands) - sum(o.kind == "single" for o in opdef.operands)
        sizes = [1 if o.kind == "single" else extra for o in opdef.operands]
    groups, i = {}, 0
    for o, n in zip(opdef.operands, sizes):
        groups[o.name] = operands[i] if n else None
        i += n
    return groups


def data_values(opdef: OpDef, groups: dict) -> list:
    return [groups[o.name] for o in opdef.data_operands if groups[o.name] is not None]


def constant_op(v: ir.Value):
    """The ms.constant operation producing `v`, else None."""
    owner = v.owner
    if isinstance(owner, ir.Block) or owner.operation.name != "ms.constant":
        return None
    return owner.operation


def constant_value(v: ir.Value):
    """The numpy value of a Value produced by ms.constant, else None."""
    op = constant_op(v)
    return None if op is None else dense_to_numpy(op.attributes["value"])


def known_zeros(v: ir.Value) -> bool:
    """Whether v is zeros by construction: a zero ms.constant, ms.zeros_like, or a
    broadcast, reshape or cast of one."""
    owner = v.owner
    if isinstance(owner, ir.Block):
        return False
    name = owner.operation.name
    if name in ("ms.broadcast_to", "ms.reshape", "ms.cast"):
        return known_zeros(owner.operands[0])
    if name == "ms.constant":
        return not np.any(constant_value(v))
    return name == "ms.zeros_like"


def const_to_py(kind: str, value: np.ndarray):
    if value.dtype.kind not in "iub":
        raise AttrError(f"must be an integer constant, got element type {value.dtype}")
    if kind == "int":
        if value.size != 1:
            raise AttrError(f"must be a scalar constant, got shape {value.shape}")
        return int(value.reshape(()))
    if value.ndim > 1:
        raise AttrError(f"must be a scalar or 1-D constant, got shape {value.shape}")
    return tuple(int(x) for x in value.reshape(-1))


def op_attrs(opdef: OpDef, op, groups=None) -> dict:
    """Python values of the op's attributes, const inputs included (from the attribute, or from
    a constant operand, or NotConstant). Missing required attributes are left out."""
    attrs = {}
    opattrs = op.attributes
    for name, kind in opdef.attrs.items():
        if name in opattrs:
            attrs[name] = attr_to_py(kind, opattrs[name])
    if opdef.const_inputs:
        groups = groups if groups is not None else operand_groups(opdef, op)
        for name, kind in opdef.const_inputs.items():
            if name in opattrs:
                attrs[name] = attr_to_py(kind, opattrs[name])
            elif groups.get(name) is not None:
                value = constant_value(groups[name])
                attrs[name] = NotConstant(name) if value is None else const_to_py(kind, value)
    return attrs


def scalar_kind(dtype: dt.DType) -> str:
    return "float" if dtype.is_float else "int" if dtype.is_int else "bool"


def cast_targets(opdef: OpDef, data: list) -> list:
    """Per data operand, the dtype MindSpore's implicit cast gives it (None: not in a group).

    Tensors of a signature group meet at their highest-priority dtype; Python scalars
    (constants marked is_scalar) follow the scalar rules of dt.promote."""
    sig = opdef.signature or ("T",) * len(data)
    specs = [spec_of(v.type) for v in data]
    members: dict = {}
    for i, g in enumerate(sig):
        if g is not None and g != "bool" and specs[i] is not None:
            members.setdefault(g, []).append(i)
    targets = [None] * len(data)
    for g, idxs in members.items():
        # A scalar of a uint16/32/64 dtype is a Python scalar implicit-cast has already
        # re-typed to its group's dtype (no Python number has one): it counts as that dtype.
        python = [is_scalar_constant(data[i]) and specs[i].dtype not in dt.WIDE_UNSIGNED
                  for i in idxs]
        tensors = [specs[i].dtype for i, p in zip(idxs, python) if not p]
        scalars = [scalar_kind(specs[i].dtype) for i, p in zip(idxs, python) if p]
        dest = dt.promote(tensors, scalars)
        for i in idxs:
            targets[i] = dest
    return targets


def write_conflict(opdef: OpDef, data: list, is_parameter) -> str | None:
    """MindSpore refuses to cast a value in a write position (ms.assign's variable): the
    message for the first such operand, or None. `is_parameter(value)` says how to name it."""
    for i, (v, target) in enumerate(zip(data, cast_targets(opdef, data))):
        spec = spec_of(v.type)
        if i in opdef.write and target is not None and spec is not None and spec.dtype is not target:
            kind = "Parameter" if is_parameter(v) else "tensor"
            return (f"For '{opdef.name}', the {i}th input is a {kind} of dtype {spec.dtype.name} "
                    f"that cannot be converted to {target.name}")
    return None


def resolved_specs(opdef: OpDef, data: list) -> list:
    """Specs of the data operands as the op sees them after implicit cast. Operands in a write
    position keep their dtype: implicit cast never casts them (it rejects a mismatch), so the
    result type of an in-place update is the Parameter's."""
    out = []
    for i, (v, target) in enumerate(zip(data, cast_targets(opdef, data))):
        spec = spec_of(v.type)
        keep = target is None or spec is None or i in opdef.write
        out.append(spec if keep else dt.TensorSpec(spec.shape, target))
    return out


def build_op(name: str, operands: dict | list, attrs: dict | None = None, *,
             result_types=None, loc=None, extra_attrs=None) -> ir.Operation:
    """Create an ms op at the current insertion point, result types from its shape rule.

    `operands` is a dict by operand name, or a list: in IR order (None for an absent optional
    operand), or just the data operands when it is shorter (const inputs then come from
    `attrs`). `attrs` holds Python values. Raises ShapeError/DTypeError from the op's rules.
    """
    opdef = lookup(name)
    attrs = dict(attrs or {})
    if not isinstance(operands, dict) and len(operands) < len(opdef.operands):
        operands = dict(zip((o.name for o in opdef.data_operands), operands))
    if isinstance(operands, dict):
        operands = [operands.get(o.name) for o in opdef.operands]
    infer_attrs = dict(attrs)
    flat, sizes, data = [], [], []
    for o, v in zip(opdef.operands, operands):
        vals = [] if v is None else [v]
        flat.extend(vals)
        sizes.append(len(vals))
        if o.name not in opdef.const_inputs:
            data.extend(vals)
        elif vals and o.name not in infer_attrs:
            value = constant_value(vals[0])
            infer_attrs[o.name] = (NotConstant(o.name) if value is None
                                   else const_to_py(opdef.const_inputs[o.name], value))
    if result_types is None:
        specs = resolved_specs(opdef, data)
        result_types = [tensor_type(s) for s in opdef.infer_specs(specs, infer_attrs)]
    ir_attrs = {}
    for k, v in attrs.items():
        kind = opdef.attrs.get(k) or opdef.const_inputs.get(k)
        if kind is None:
            raise ValueError(f"'{name}' has no attribute {k!r}")
        ir_attrs[k] = py_to_attr(kind, v)
    if opdef.needs_segment_sizes:
        ir_attrs["operandSegmentSizes"] = ir.DenseI32ArrayAttr.get(sizes)
    ir_attrs.update(extra_attrs or {})
    return ir.Operation.create(name, results=result_types, operands=flat, attributes=ir_attrs,
                               loc=loc)


def constant(value, dtype: dt.DType | None = None, *, scalar=False, loc=None) -> ir.Value:
    """An ms.constant holding `value` (numpy-convertible); `scalar` marks a Python scalar."""
    arr = np.asarray(value)
    dtype = dtype or dt.from_numpy(arr.dtype)
    extra = {SCALAR_ATTR: ir.UnitAttr.get()} if scalar else None
    attr = numpy_to_dense(arr, dtype)
    op = ir.Operation.create("ms.constant", results=[attr.type], operands=[],
                             attributes={"value": attr, **(extra or {})}, loc=loc)
    return op.result


def is_scalar_constant(v: ir.Value) -> bool:
    op = constant_op(v)
    return op is not None and SCALAR_ATTR in op.attributes


def build_function(module, name: str, in_specs, body, *, loc=None, arg_attrs=None):
    """Append `func.func @name` taking tensors of `in_specs` to `module`; `body(*args)` builds
    the ms ops (at the current insertion point) and returns the result value(s)."""
    from mlir.dialects import func
    loc = loc or ir.Location.unknown()
    with ir.InsertionPoint(module.body), loc:
        fn = func.FuncOp(name, ([tensor_type(s) for s in in_specs], []))
        if arg_attrs is not None:
            fn.arg_attrs = ir.ArrayAttr.get([ir.DictAttr.get(a) for a in arg_attrs])
        entry = fn.add_entry_block()
    with ir.InsertionPoint(entry), loc:
        results = body(*entry.arguments)
        results = list(results) if isinstance(results, (list, tuple)) else [results]
        func.ReturnOp(results)
    fn.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(
        [tensor_type(s) for s in in_specs], [r.type for r in results]))
    return fn
