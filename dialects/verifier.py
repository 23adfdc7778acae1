"""What IRDL cannot check about an ms op: element types, attribute kinds and values, const
inputs, and that the result types agree with the op's shape rule."""
from __future__ import annotations

from .lazy import ir

from . import dtypes as dt
from .builders import (AttrError, attr_to_py, const_to_py, constant_op, constant_value,
                       data_values, operand_groups, resolved_specs, spec_of, tensor_type)
from .registry import DTypeError, NotConstant, OpDef, ShapeError
from .symdim import Dim, DynamicDimError


def check_op(opdef: OpDef, op) -> str | None:
    """The first problem with `op` as a message (without the "'ms.x' op" prefix), or None."""
    try:
        groups = operand_groups(opdef, op)
    except AttrError as e:
        return str(e)
    opattrs = op.attributes
    attrs = {}
    for name, kind in opdef.attrs.items():
        if name not in opattrs:
            return f"requires attribute '{name}'"
        try:
            attrs[name] = _convert(kind, _read_attr(opattrs, name))
        except AttrError as e:
            return f"attribute '{name}' {e}"
    problem = _const_inputs(opdef, opattrs, groups, attrs)
    if problem:
        return problem

    data = data_values(opdef, groups)
    specs = []
    for i, v in enumerate(data):
        spec = spec_of(v.type)
        if spec is None:
            return (f"operand #{i} must be a ranked tensor of a supported element "
                    f"type, got {v.type}")
        specs.append(spec)
    if opdef.name == "ms.constant" and not (spec_of(op.results[0].type)
                                             and op.results[0].type == opattrs["value"].type):
        return (f"result type {op.results[0].type} does not match the value's type "
                f"{opattrs['value'].type}")
    problem = check_dtypes(opdef, specs) or (opdef.verify_op and opdef.verify_op(op))
    if problem:
        return problem
    if opdef.infer is None:
        return None
    if any(isinstance(v, NotConstant) for v in attrs.values()):
        # The rules need that value: the op is valid IR until lowering, which reports it.
        return None
    try:
        expected = opdef.infer_specs(resolved_specs(opdef, data), attrs)
    except (ShapeError, DTypeError) as e:
        return str(e)
    except DynamicDimError as e:
        return f"has no form for dynamic dimensions yet ({e})"
    results = list(op.results)
    if len(results) != len(expected):
        return f"has {len(results)} results, but its shape rule gives {len(expected)}"
    for i, (r, e) in enumerate(zip(results, expected)):
        if not compatible(spec_of(r.type), e):
            given = tensor_type(e) if not dt.shape_problem(e.shape, e.dtype.itemsize) else e
            return f"result #{i} has type {r.type}, but its inputs give {given}"
    return None


def compatible(declared, inferred) -> bool:
    """Whether a declared result spec agrees with the one the shape rule gives: the same
    dtype and rank, and equal sizes wherever both are static (a `?` in the IR, or a size
    known only at run time, agrees with any size, as MLIR's types do)."""
    if declared is None or declared.dtype is not inferred.dtype \
            or len(declared.shape) != len(inferred.shape):
        return False
    return all(a == b or isinstance(a, Dim) or isinstance(b, Dim)
               for a, b in zip(declared.shape, inferred.shape))


# Const inputs are shapes, axes, permutations: tiny. The verifier reads them into numpy, and
# a splat `dense<1> : tensor<4000000000xi64>` would be materialized whole.
MAX_CONST_INPUT_ELEMENTS = 1 << 16


def _read_attr(opattrs, name):
    """opattrs[name]; AttrError for an attribute the bindings cannot represent (reading
    `array<i128: ...>` raises TypeError)."""
    try:
        return opattrs[name]
    except TypeError as e:
        raise AttrError(f"has an unsupported form ({e})") from None


# The largest constant mscc reads into memory (and would embed in the code): a splat such as
# `dense<1> : tensor<4294967296xi64>` is a few bytes of text and 32 GiB as an array.
MAX_CONSTANT_BYTES = 2**31


def _convert(kind, a):
    """attr_to_py, with AttrError (not TypeError from numpy, nor MemoryError) for a dense
    attribute of an element type mscc does not support or of more than MAX_CONSTANT_BYTES."""
    if kind == "dense" and isinstance(a, ir.DenseElementsAttr):
        spec = spec_of(a.type)
        if spec is None:
            raise AttrError(f"must have a statically shaped tensor type of a supported "
                            f"element type, got {a.type}")
        size = _element_count(a.type) * spec.dtype.np.itemsize
        if size > MAX_CONSTANT_BYTES:
            raise AttrError(f"holds {size} bytes ({a.type}); constants are limited to "
                            f"{MAX_CONSTANT_BYTES} bytes")
    return attr_to_py(kind, a)


def _element_count(t):
    if not isinstance(t, ir.ShapedType) or not t.has_rank:
        return None
    n = 1
    for d in t.shape:
        n *= max(d, 1)  # a dynamic dimension reads as a negative number
    return n


def _const_inputs(opdef: OpDef, opattrs, groups, attrs) -> str | None:
    """Read each const input (an attribute, or a constant operand) into `attrs`; the first
    problem as a message."""
    for name, kind in opdef.const_inputs.items():
        has_attr, operand = name in opattrs, groups.get(name)
        if has_attr and operand is not None:
            return f"has both an operand and an attribute '{name}'"
        try:
            if has_attr:
                attrs[name] = _convert(kind, _read_attr(opattrs, name))
            elif operand is not None:
                attrs[name] = _const_operand(name, kind, operand)
            else:
                return f"requires '{name}' as an attribute or a constant operand"
        except AttrError as e:
            return f"{'attribute' if has_attr else 'operand'} '{name}' {e}"
    return None


def _const_operand(name, kind, operand):
    """The value of a const input given as an operand (NotConstant if it is not produced by
    ms.constant); AttrError for what numpy cannot (or should not) read."""
    count = _element_count(operand.type)
    if count is not None and count > MAX_CONST_INPUT_ELEMENTS:
        raise AttrError(f"has {count} elements; a const input (a shape, axes, ...) holds at "
                        f"most {MAX_CONST_INPUT_ELEMENTS}")
    if spec_of(operand.type) is None:  # numpy cannot hold it (i128, f8E4M3, ...)
        raise AttrError(f"must be a statically shaped tensor of a supported element type, "
                        f"got {operand.type}")
    # (the constant's value may be far larger than its result type says: a splat of 2**32
    # elements behind a tensor<1xi64> was a MemoryError; IR fuzzing, seed 108)
    held = _constant_elements(operand)
    if held is not None and held > MAX_CONST_INPUT_ELEMENTS:
        raise AttrError(f"comes from a constant of {held} elements; a const input holds at "
                        f"most {MAX_CONST_INPUT_ELEMENTS}")
    try:
        value = constant_value(operand)
    except TypeError:  # its ms.constant's value has another (unreadable) type
        raise AttrError("comes from a constant whose value numpy cannot read") from None
    return NotConstant(name) if value is None else const_to_py(kind, value)


def _constant_elements(operand) -> int | None:
    """How many elements the value attribute of the ms.constant producing `operand` holds
    (None where no ms.constant with a shaped value produces it)."""
    op = constant_op(operand)
    if op is None or "value" not in op.attributes:
        return None
    value = op.attributes["value"]
    return _element_count(value.type) if isinstance(value, ir.DenseElementsAttr) else None


def check_dtypes(opdef: OpDef, specs) -> str | None:
    sig = opdef.signature or (None,) * len(specs)
    for i, (spec, group) in enumerate(zip(specs, sig)):
        if group == "bool":
            if spec.dtype is not dt.bool_:
                return f"operand #{i} must be a bool tensor, got {spec.dtype.name}"
        elif spec.dtype not in opdef.dtypes:
            return (f"operand #{i} has element type {spec.dtype.ir_name}, but {opdef.name} "
                    f"supports {', '.join(d.name for d in opdef.dtypes)}")
    return None


def _type_bytes(t, depth=0):
    """Bytes of one value of type `t` (None where it has no fixed size), for types nested
    in shaped and function types; a problem string where a shaped type is too big."""
    if isinstance(t, ir.ShapedType):
        elem = _type_bytes(t.element_type, depth + 1)
        if isinstance(elem, str) or not t.has_rank:
            return elem
        shape = [None if d == ir.ShapedType.get_dynamic_size() else d for d in t.shape]
        return dt.shape_problem(shape, elem or 1) or _product(shape, elem or 1)
    if isinstance(t, (ir.IntegerType, ir.FloatType)):
        return max(1, (t.width + 7) // 8)
    if isinstance(t, ir.ComplexType):
        elem = _type_bytes(t.element_type, depth + 1)
        return elem if isinstance(elem, str) else 2 * (elem or 8)
    if isinstance(t, ir.FunctionType) and depth < 8:
        for sub in list(t.inputs) + list(t.results):
            found = _type_bytes(sub, depth + 1)
            if isinstance(found, str):
                return found
    return None if not isinstance(t, ir.IndexType) else 8


def _product(shape, n):
    for d in shape:
        n *= d or 1
    return n


def type_problem(t, cache={}) -> str | None:  # noqa: B006  (types are interned: one cache)
    """Why a type cannot be compiled (a tensor, memref or vector too big for int64 sizes)."""
    if t not in cache:
        found = _type_bytes(t)
        cache[t] = found if isinstance(found, str) else None
    return cache[t]


def structure_problem(op) -> str | None:
    """What is wrong with any op (ms or not) that would abort MLIR later: an empty symbol
    name, or a type too big (of a result, a block argument, a type or elements attribute)."""
    attrs = op.attributes
    if "sym_name" in attrs:
        name = attrs["sym_name"]
        if isinstance(name, ir.StringAttr) and not name.value:
            return "has an empty symbol name"
    types = [r.type for r in op.results]
    types += [a.type for region in op.regions for block in region.blocks for a in block.arguments]
    for name in list(attrs):
        try:  # by name: NamedAttribute.attr on such a form terminates the process
            a = attrs[name]
        except TypeError:  # a form the bindings cannot read; ms ops report theirs
            continue
        if isinstance(a, ir.TypeAttr):
            types.append(a.value)
        elif isinstance(a, ir.DenseElementsAttr):
            types.append(a.type)
    for t in types:
        problem = type_problem(t)
        if problem:
            return f"type {t}: {problem}"
    return None


def verify_module(module_op) -> bool:
    """Check every op's types and symbol name, then every ms op; report problems at the op's
    location. True if all are valid. (The ms checks read const inputs into numpy: they only
    run on a module whose sizes are sane.)"""
    from .registry import OPS, UPSTREAM
    ok = True

    def visit_structure(op):
        nonlocal ok
        problem = structure_problem(op.operation)
        if problem:
            op.location.emit_error(f"'{op.operation.name}' op {problem}")
            ok = False
        return ir.WalkResult.ADVANCE

    module_op.walk(visit_structure)
    if not ok:
        return False

    def visit(op):
        nonlocal ok
        name = op.operation.name
        opdef = OPS.get(name)
        if opdef is not None:
            problem = check_op(opdef, op)
        else:  # control flow holding ms ops (dialects/ops/control.py)
            upstream = UPSTREAM.get(name)
            problem = upstream.verify(op) if upstream is not None and upstream.verify else None
        if problem:
            op.location.emit_error(f"'{name}' op {problem}")
            ok = False
        return ir.WalkResult.ADVANCE

    module_op.walk(visit)
    return ok
