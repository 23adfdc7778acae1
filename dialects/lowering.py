"""Building blocks for op lowerings: scalar arithmetic by dtype and linalg on tensors.

An op's `lower` rule receives a LowerCtx (its specs, attributes and these helpers) and the
already-lowered operands. Lowered tensors hold storage types (unsigned as signless, bool as i8, see
dialects/ir.element_type); linalg bodies compute in compute types (bool as i1), and
`generic` converts between the two, so rules never see the storage form of a bool.
"""
from __future__ import annotations

import contextlib
from typing import NamedTuple

from .lazy import arith, ir, linalg, tensor

from . import dtypes as dt
from .dtypes import TensorSpec
from .shape_rules import broadcast_shapes
from .symdim import Dim, DynamicDimError, derived_parts, has_dynamic, recording_constraints
from .builders import compute_type, element_type, ir_shape, spec_of, tensor_type

_PARALLEL = "#linalg.iterator_type<parallel>"
_REDUCTION = "#linalg.iterator_type<reduction>"


def _contract(reassoc=False):
    # contract lets LLVM fuse mul+add into FMA (see the notes on fastmath); reassoc lets it
    # vectorize a reduction (partial sums in vector lanes).
    return ir.Attribute.parse("#arith.fastmath<reassoc,contract>" if reassoc
                              else "#arith.fastmath<contract>")


class ScalarBuilder:
    """Scalar arithmetic in one dtype, emitted at the current insertion point.

    Elementwise ops define their semantics as scalar rules (OpDef.scalar), which serve the
    per-op lowering and fused regions alike. A rule calls other elementwise ops by mnemonic
    (`s.exp(x)`, `s.add(x, y)`: the op's own rule, in this builder's dtype) and the few
    primitives that are not ops of their own: `const`, `cast`, `select`, `cmp`.
    """

    def __init__(self, dtype: dt.DType, out_dtype: dt.DType | None = None, reassoc=False):
        self.dtype = dtype
        self.out_dtype = out_dtype or dtype  # the op's result dtype (cast needs it)
        self.type = compute_type(dtype)
        # reassoc: for the combining step of reductions (sums may be reordered)
        self.fm = _contract(reassoc) if dtype.is_float else None

    def __getattr__(self, mnemonic):
        if mnemonic.startswith("__"):  # (copy/pickle probes are not op names)
            raise AttributeError(mnemonic)
        rule = elementwise_rule(mnemonic)
        bound = self.__dict__[mnemonic] = lambda *args: rule(self, *args)
        return bound

    # -- the primitives that are not ops
    def const(self, value, dtype=None):
        d = dtype or self.dtype
        t = compute_type(d)
        if d.is_float:
            return arith.constant(t, float(value))
        if d.is_bool:
            return arith.constant(t, ir.IntegerAttr.get(t, 1 if value else 0))
        value = int(value)
        if d.kind == "uint" and value >= 1 << (d.bits - 1):
            value -= 1 << d.bits  # the signless bit pattern of an unsigned value
        return arith.constant(t, ir.IntegerAttr.get(t, value))

    def cast(self, v, src: dt.DType, dst: dt.DType | None = None):
        return cast_scalar(v, src, dst or self.dtype)

    def select(self, c, x, y):
        return arith.select(c, x, y)

    # comparisons (results are i1)
    _CMPF = {"eq": "OEQ", "ne": "UNE", "lt": "OLT", "le": "OLE", "gt": "OGT", "ge": "OGE"}
    _CMPI = {"eq": "eq", "ne": "ne", "lt": "slt", "le": "sle", "gt": "sgt", "ge": "sge"}
    _CMPU = {"eq": "eq", "ne": "ne", "lt": "ult", "le": "ule", "gt": "ugt", "ge": "uge"}

    def cmp(self, pred, x, y):
        d = self.dtype
        if d.is_float:
            return arith.cmpf(getattr(arith.CmpFPredicate, self._CMPF[pred]), x, y)
        table = self._CMPI if d.kind == "int" else self._CMPU
        return arith.cmpi(getattr(arith.CmpIPredicate, table[pred]), x, y)


def by_kind(float=None, int=None, uint=None, bool=None):  # noqa: A002 (the dtype kinds)
    """A primitive scalar rule: one emitter `(ScalarBuilder, *values) -> value` per dtype
    kind (uint and bool default to the int form). The op declares its cost beside it."""
    forms = {"float": float, "int": int, "uint": uint or int, "bool": bool or int}

    def scalar(s, *args):
        form = forms[s.dtype.kind]
        if form is None:
            raise TypeError(f"no {s.dtype.name} form of this operation")
        return form(s, *args)
    scalar.primitive = True
    return scalar


def elementwise_rule(mnemonic: str):
    """The scalar rule of the elementwise op ms.<mnemonic> (an error naming it if none)."""
    from .registry import OPS
    opdef = OPS.get("ms." + mnemonic)
    if opdef is None or opdef.scalar is None:
        raise AttributeError(f"'ms.{mnemonic}' is not an elementwise ms op (no scalar rule)")
    return opdef.scalar


class _Cost(float):
    pass


def _total(own, args):
    return _Cost(own + sum(a for a in args if isinstance(a, _Cost)))


class ScalarCost:
    """Stands in for a ScalarBuilder: running a scalar rule on it adds up what the rule
    would emit, relative to an add (passes/fusion.py recomputes cheap ops rather than storing
    them, never expensive ones). A primitive rule costs what its op declares; a composed one
    the sum of its parts."""

    def __init__(self, dtype: dt.DType, out_dtype: dt.DType | None = None):
        self.dtype = dtype
        self.out_dtype = out_dtype or dtype

    def __getattr__(self, mnemonic):
        from .registry import lookup
        opdef = lookup("ms." + mnemonic)
        return lambda *args: evaluate_cost(opdef, self, args)

    def const(self, *args):
        return _Cost(0)

    def cast(self, v, *dtypes):
        return _total(1, [v])

    def select(self, c, x, y):
        return _total(1, [c, x, y])

    def cmp(self, pred, x, y):
        return _total(1, [x, y])


def evaluate_cost(opdef, s: ScalarCost, args):
    rule = opdef.rule("scalar")
    if getattr(rule, "primitive", False):
        return _total(opdef.cost, args)
    return rule(s, *args)


def scalar_cost(opdef, in_specs, out_spec: TensorSpec) -> float:
    """The cost of one evaluation of an elementwise op's scalar rule."""
    compute = group_dtype(opdef, in_specs)
    if opdef.compute_dtype is not None:
        compute = opdef.compute_dtype(compute)
    return float(evaluate_cost(opdef, ScalarCost(compute, out_spec.dtype),
                               [_Cost(0)] * len(in_specs)))


def cast_scalar(v, src: dt.DType, dst: dt.DType):
    """Convert a scalar between any two dtypes with numpy's semantics (bool: != 0)."""
    if src is dst:
        return v
    t = compute_type(dst)
    if dst.is_bool:
        zero = ScalarBuilder(src).const(0)
        if src.is_float:
            return arith.cmpf(arith.CmpFPredicate.UNE, v, zero)
        return arith.cmpi(arith.CmpIPredicate.ne, v, zero)
    if src.is_float and dst.is_float:
        if src.bits == dst.bits:  # float16 <-> bfloat16: neither holds the other
            return arith.truncf(t, arith.extf(compute_type(dt.float32), v))
        return arith.extf(t, v) if dst.bits > src.bits else arith.truncf(t, v)
    if src.is_float:
        return _float_to_int(v, src, dst)
    unsigned_src = src.kind in ("uint", "bool")
    if dst.is_float:
        return arith.uitofp(t, v) if unsigned_src else arith.sitofp(t, v)
    if dst.bits > src.bits:
        return arith.extui(t, v) if unsigned_src else arith.extsi(t, v)
    if dst.bits < src.bits:
        return arith.trunci(t, v)
    return v  # intN <-> uintN: same bits


def _float_to_int(v, src: dt.DType, dst: dt.DType):
    """A float converted to an integer dtype, defined where LLVM's fptosi/fptoui are poison
    (nan, infinities, out of range) as x86 and numpy's casts on it define it: the integer
    indefinite value (the minimum of the 32- or 64-bit conversion), the narrower types
    wrapping from it. A poison quotient, once LLVM could see it, made the two modes differ
    (eagerly the op runs alone and the CPU converts; API fuzzing, bench/fuzz_api.py)."""
    bits = 64 if dst.kind == "uint" or dst.bits == 64 else 32  # the conversion x86 does
    wide = ir.IntegerType.get_signless(bits)
    const = ScalarBuilder(src).const
    # (float16's range is inside int32's: its bound -2**31 would be -inf, which must not fit)
    low = -65504.0 if src is dt.float16 else -2.0 ** (bits - 1)
    fits = arith.andi(arith.cmpf(arith.CmpFPredicate.OGE, v, const(low)),
                      arith.cmpf(arith.CmpFPredicate.OLT, v, const(2.0 ** (bits - 1))))
    zero = const(0)
    w = arith.select(fits, arith.fptosi(wide, arith.select(fits, v, zero)),
                     arith.constant(wide, -2 ** (bits - 1)))
    if dst is dt.uint64:  # [2**63, 2**64) is in range too
        high = arith.andi(arith.cmpf(arith.CmpFPredicate.OGE, v, const(2.0 ** 63)),
                          arith.cmpf(arith.CmpFPredicate.OLT, v, const(2.0 ** 64)))
        w = arith.select(high, arith.fptoui(wide, arith.select(high, v, zero)), w)
    return arith.trunci(compute_type(dst), w) if dst.bits < bits else w


# ------------------------------------------------------------------ tensors

def _dim(i):
    return ir.AffineDimExpr.get(i)


def affine_map(n_dims, exprs):
    return ir.AffineMap.get(n_dims, 0, list(exprs))


def broadcast_map(in_shape, out_shape):
    """Indexing map reading an input broadcast (numpy rules) to out_shape."""
    n, r = len(out_shape), len(in_shape)
    exprs = []
    for k, size in enumerate(in_shape):
        j = n - r + k
        exprs.append(ir.AffineConstantExpr.get(0) if size == 1 and out_shape[j] != 1 else _dim(j))
    return affine_map(n, exprs)


def to_compute(v, dtype: dt.DType):
    """A scalar loaded from storage, in its compute type (bool: i8 -> i1)."""
    return arith.trunci(compute_type(dtype), v) if dtype.is_bool else v


def to_storage(v, dtype: dt.DType):
    return arith.extui(element_type(dtype, storage=True), v) if dtype.is_bool else v


def empty(spec: TensorSpec):
    """A tensor.empty of `spec`; its dynamic sizes (symdim.Dim) are computed at run time
    from the sizes of the function being lowered (DimValues)."""
    shape = list(spec.shape)
    if has_dynamic(shape):
        shape = [index_value(d) if isinstance(d, Dim) else d for d in shape]
    return tensor.empty(shape, element_type(spec.dtype, storage=True))


# ------------------------------------------------------------------ dynamic sizes

class DimValues:
    """The dynamic sizes of the function being lowered: each atom (symdim) names a tensor
    and an axis, read with tensor.dim where a size is needed (CSE merges the repeats)."""

    def __init__(self):
        self.atoms = {}   # atom name -> (tensor value, axis)
        self._fresh = 0

    def bind(self, name: str, value, axis: int):
        self.atoms[name] = (value, axis)

    def fresh(self, value, axis: int) -> Dim:
        """A new atom for dimension `axis` of `value` (a size no rule derives)."""
        self._fresh += 1
        name = f"v{self._fresh}.{axis}"
        self.bind(name, value, axis)
        return Dim.atom(name)

    def value(self, d):
        """The index value of a size (an int or a Dim over bound atoms), at the current
        insertion point."""
        idx = ir.IndexType.get()
        if not isinstance(d, Dim):
            return arith.constant(idx, int(d))
        total = None
        for mono, c in sorted(d.terms.items()):
            term = None if c == 1 and mono else arith.constant(idx, c)
            for a in mono:
                size = self._atom_value(a, d)
                term = size if term is None else arith.muli(term, size)
            total = term if total is None else arith.addi(total, term)
        return total

    def _atom_value(self, atom, whole):
        """An atom's index value: a tensor.dim, or a clamp or quotient of other sizes."""
        parts = derived_parts(atom)
        if parts is not None:
            op, args = parts
            return getattr(arith, _DERIVED_OPS[op])(*(self.value(a) for a in args))
        if atom not in self.atoms:
            raise DynamicDimError(f"the size {whole} is not derived from the function's "
                                  "arguments")
        v, axis = self.atoms[atom]
        return tensor.dim(v, arith.constant(ir.IndexType.get(), axis))


# How a clamp's or quotient's atom (symdim) is computed from its arguments' index values.
_DERIVED_OPS = {"min": "minsi", "max": "maxsi", "fdiv": "floordivsi"}


_DIM_VALUES: list = []  # the DimValues of the functions being lowered (innermost last)


def index_value(d):
    """A size as an index value: a constant, or computed from the dynamic sizes of the
    function being lowered."""
    if not isinstance(d, Dim):
        return arith.constant(ir.IndexType.get(), int(d))
    if not _DIM_VALUES:
        raise DynamicDimError(f"the size {d} is known only at run time, and nothing here "
                              "computes it")
    return _DIM_VALUES[-1].value(d)


def _mixed(values, dynamic_marker):
    """(operands, static entries) of slice offsets or sizes: each dynamic one (symdim.Dim)
    an index value computed at run time, marked in the static list."""
    return ([index_value(v) for v in values if isinstance(v, Dim)],
            [dynamic_marker if isinstance(v, Dim) else v for v in values])


def insert_slice(source, dest, offsets, sizes, strides=None):
    """tensor.insert_slice of `source` at `offsets` (unit strides unless given); offsets and
    sizes may be dynamic (symdim.Dim), computed at run time. A slice with no elements
    inserts nothing: `dest` (MLIR's verifier rejects its offset in a dimension of size 0)."""
    if any(not isinstance(s, Dim) and s == 0 for s in sizes):
        return dest
    offset_values, static_offsets = _mixed(offsets, ir.ShapedType.get_dynamic_stride_or_offset())
    size_values, static_sizes = _mixed(sizes, ir.ShapedType.get_dynamic_size())
    return tensor.insert_slice(source, dest, offset_values, size_values, [], static_offsets,
                               static_sizes, list(strides or [1] * len(sizes)))


def extract_slice(x, result_spec: TensorSpec, offsets, sizes, strides=None):
    """tensor.extract_slice of x (unit strides unless given); offsets and sizes may be
    dynamic (symdim.Dim)."""
    offset_values, static_offsets = _mixed(offsets, ir.ShapedType.get_dynamic_stride_or_offset())
    size_values, static_sizes = _mixed(sizes, ir.ShapedType.get_dynamic_size())
    return tensor.extract_slice(tensor_type(result_spec, storage=True), x, offset_values,
                                size_values, [], static_offsets, static_sizes,
                                list(strides or [1] * len(sizes)))


def index_constant(n: int):
    """An arith.constant of index type."""
    return arith.constant(ir.IndexType.get(), int(n))


def loop_bound(n):
    """A size as a loop bound: the int when static, else its index value."""
    return index_value(n) if isinstance(n, Dim) else n


def size_scalar(n, dtype: dt.DType):
    """A size (an int or a Dim) as a scalar of `dtype`'s compute type (a mean's count)."""
    if not isinstance(n, Dim):
        return ScalarBuilder(dtype).const(n)
    v = arith.index_cast(ir.IntegerType.get_signless(64), index_value(n))
    return cast_scalar(v, dt.int64, dtype)


def fill(spec: TensorSpec, value):
    """A tensor of `spec` filled with the Python scalar `value`."""
    out = empty(spec)
    scalar = to_storage(ScalarBuilder(spec.dtype).const(value), spec.dtype)
    op = linalg.FillOp(result_tensors=[tensor_type(spec, storage=True)], inputs=[scalar],
                       outputs=[out])
    linalg.fill_builtin_region(op.operation)
    return op.result


def generic(inputs, outputs, maps, iterators, body, dtypes):
    """linalg.generic on tensors. `dtypes` are the ms dtypes of inputs then outputs;
    `body(*scalars)` gets the block arguments in compute types and returns the yielded
    scalar(s) in compute types. An input may be an `Expr` (an unmaterialized elementwise
    value): its leaves become inputs and the body computes it per element."""
    if any(isinstance(x, Expr) for x in inputs):
        return _generic_with_exprs(inputs, outputs, maps, iterators, body, dtypes)
    result_types = [o.type for o in outputs]
    op = linalg.GenericOp(
        result_types, list(inputs), list(outputs),
        ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in maps]),
        ir.ArrayAttr.get([ir.Attribute.parse(_PARALLEL if it == "parallel" else _REDUCTION)
                          for it in iterators]))
    block = op.regions[0].blocks.append(
        *[ir.RankedTensorType(v.type).element_type for v in list(inputs) + list(outputs)])
    with ir.InsertionPoint(block):
        args = [to_compute(a, d) for a, d in zip(block.arguments, dtypes)]
        res = body(*args)
        res = list(res) if isinstance(res, (list, tuple)) else [res]
        out_dtypes = dtypes[len(inputs):]
        linalg.YieldOp([to_storage(r, d) for r, d in zip(res, out_dtypes)])
    return op.results[0] if len(result_types) == 1 else list(op.results)


def identity_map(rank):
    return affine_map(rank, map(_dim, range(rank)))


def elementwise(inputs, in_specs, out_spec: TensorSpec, body):
    """One parallel linalg.generic over out_spec's shape; inputs broadcast numpy-style."""
    shape = out_spec.shape
    maps = [broadcast_map(s.shape, shape) for s in in_specs] + [identity_map(len(shape))]
    return generic(inputs, [empty(out_spec)], maps, ["parallel"] * len(shape),
                   lambda *args: body(*args[:-1]),
                   [s.dtype for s in in_specs] + [out_spec.dtype])


# ------------------------------------------------------------------ unmaterialized values

class Expr:
    """An elementwise tensor that has not been materialized: `fn` applied to its operands
    (lowered tensors or other Exprs), each broadcast numpy-style to `spec.shape`.

    Fused regions (ms.fused) build Exprs from the ops' scalar rules; the loop nest that
    consumes one (`generic`) computes it per element, so a chain of elementwise ops and the
    reduction or output loop it feeds become one linalg.generic."""

    def __init__(self, spec: TensorSpec, operands, in_specs, fn):
        self.spec = spec
        self.operands = list(operands)
        self.in_specs = list(in_specs)
        self.fn = fn  # (*operand scalars in compute types) -> scalar in compute type
        self.maps = [_broadcast_dims(s.shape, spec.shape) for s in self.in_specs]


# Index maps as tuples: one entry per result, a loop dimension or None (the constant 0 of a
# broadcast dimension); this is all Expr maps need and they compose without MLIR.
def _broadcast_dims(in_shape, out_shape):
    n, r = len(out_shape), len(in_shape)
    return tuple(None if size == 1 and out_shape[n - r + k] != 1 else n - r + k
                 for k, size in enumerate(in_shape))


def _map_dims(m: ir.AffineMap):
    out = []
    for e in m.results:
        e = e.maybe_downcast()
        if isinstance(e, ir.AffineDimExpr):
            out.append(e.position)
        elif isinstance(e, ir.AffineConstantExpr) and e.value == 0:
            out.append(None)
        else:
            return None  # not a projection: materialize the Expr first
    return tuple(out)


def _dims_map(n_dims, dims):
    return affine_map(n_dims, [ir.AffineConstantExpr.get(0) if d is None else _dim(d)
                               for d in dims])


def _compose(inner, outer):
    """Read through `outer` (loop dims -> tensor dims), then `inner` (tensor dims -> operand
    dims)."""
    return tuple(None if d is None else outer[d] for d in inner)


def _splat_scalar(v, dtype):
    """A scalar constant for a splat tensor constant, else None (inlined in loop bodies)."""
    owner = v.owner
    if isinstance(owner, ir.Block) or owner.name != "arith.constant":
        return None
    attr = owner.attributes["value"]
    if not isinstance(attr, ir.DenseElementsAttr) or not attr.is_splat:
        return None
    return lambda: to_compute(arith.constant(ir.RankedTensorType(v.type).element_type,
                                             attr.get_splat_value()), dtype)


class _Eval(NamedTuple):
    """Computing an Expr read through `dims` inside a loop body, from its operands' plans."""
    expr: Expr
    dims: tuple
    operands: list


def _generic_with_exprs(inputs, outputs, maps, iterators, body, dtypes):
    """generic() with Expr inputs: their leaf tensors become the inputs (deduplicated, maps
    composed), splat constants become scalar constants, and the body evaluates each Expr
    once per element and read map."""
    n_loops = len(iterators)
    leaves, leaf_maps, leaf_dtypes = [], [], []
    slot, consts = {}, {}  # consts: the splat leaves, (scalar builder, dtype) each
    out_dims = [_map_dims(m) for m in maps[len(inputs):]]

    def leaf(value, dims, dtype, opaque_map=None):
        key = (value, dims)
        if key in slot or key in consts:
            return key
        splat = _splat_scalar(value, dtype)
        if splat is not None:
            consts[key] = (splat, dtype)
        elif value in outputs and out_dims[outputs.index(value)] == dims:
            slot[key] = ("out", outputs.index(value))  # updated in place: read its block arg
        else:
            slot[key] = ("in", len(leaves))
            leaves.append(value)
            leaf_maps.append(opaque_map or _dims_map(n_loops, dims))
            leaf_dtypes.append(dtype)
        return key

    def plan(x, dtype, dims):
        if not isinstance(x, Expr):
            return leaf(x, dims, dtype)
        return _Eval(x, dims, [plan(o, s.dtype, _compose(m, dims))
                               for o, s, m in zip(x.operands, x.in_specs, x.maps)])

    plans = []
    for x, m, d in zip(inputs, maps, dtypes):
        dims = _map_dims(m)
        if dims is None:  # a map Exprs cannot be composed with: read a materialized tensor
            plans.append(leaf(materialize(x), ("map", m), d, opaque_map=m))
        else:
            plans.append(plan(x, d, dims))
    for key in _splats_spanning_alone(consts, leaf_maps + list(maps[len(inputs):])):
        slot[key] = ("in", len(leaves))
        leaves.append(key[0])
        leaf_maps.append(_dims_map(n_loops, key[1]))
        leaf_dtypes.append(consts.pop(key)[1])

    def full_body(*args):
        n_in = len(leaves)
        memo = {}

        def value(p):
            if isinstance(p, _Eval):
                key = (id(p.expr), p.dims)
                if key not in memo:
                    memo[key] = p.expr.fn(*[value(q) for q in p.operands])
                return memo[key]
            if p in consts:
                if p not in memo:
                    memo[p] = consts[p][0]()
                return memo[p]
            where, i = slot[p]
            return args[i] if where == "in" else args[n_in + i]
        return body(*[value(p) for p in plans], *args[n_in:])

    return generic(leaves, outputs, leaf_maps + list(maps[len(inputs):]), iterators, full_body,
                   leaf_dtypes + list(dtypes[len(inputs):]))


def _splats_spanning_alone(consts, maps) -> list:
    """The splat leaves (value, dims) that must stay inputs: each reads a loop that neither
    `maps` nor a splat kept before spans. Without an operand over it, a generic has nothing
    to take that loop's size from (a fused reduction of a constant did not verify)."""
    spanned, kept = _loop_dims(maps), []
    for key in consts:
        dims = {d for d in key[1] if d is not None}
        if not dims <= spanned:
            kept.append(key)
            spanned |= dims
    return kept


def _loop_dims(maps) -> set:
    """The loop dimensions the results of `maps` read by themselves."""
    return {e.position for m in maps for e in m.results
            if isinstance(e.maybe_downcast(), ir.AffineDimExpr)}


def materialize(x, out=None):
    """The tensor of an Expr: one parallel linalg.generic (into `out`, updated in place,
    when given). Tensors pass through."""
    if not isinstance(x, Expr):
        return x
    rank = len(x.spec.shape)
    return generic([x], [empty(x.spec) if out is None else out],
                   [identity_map(rank)] * 2, ["parallel"] * rank,
                   lambda v, _out: v, [x.spec.dtype, x.spec.dtype])


def elementwise_expr(opdef, in_specs, out_spec: TensorSpec, operands) -> Expr:
    """An elementwise op as an Expr: its scalar rule, computing in its compute dtype."""
    compute = group_dtype(opdef, in_specs)
    if opdef.compute_dtype is not None:
        compute = opdef.compute_dtype(compute)
    sig = opdef.signature or ("T",) * len(in_specs)

    def fn(*args):
        s = ScalarBuilder(compute, out_spec.dtype)
        vals = [cast_scalar(a, spec.dtype, compute) if g == "T" else a
                for a, spec, g in zip(args, in_specs, sig)]
        return opdef.scalar(s, *vals)

    return Expr(out_spec, operands, in_specs, fn)


def reduce(x, in_spec: TensorSpec, axes, out_dtype: dt.DType, init, combine):
    """Reduce `axes` of x (result without the reduced dims). `combine(acc, elem) -> acc`
    works on scalars of out_dtype; x's elements are cast to out_dtype first."""
    rank = in_spec.rank
    out_shape = tuple(d for i, d in enumerate(in_spec.shape) if i not in axes)
    out_spec = TensorSpec(out_shape, out_dtype)
    acc = fill(out_spec, init)
    kept = [i for i in range(rank) if i not in axes]
    maps = [identity_map(rank), affine_map(rank, map(_dim, kept))]
    iters = ["reduction" if i in axes else "parallel" for i in range(rank)]
    return generic([x], [acc], maps, iters,
                   lambda e, a: combine(a, cast_scalar(e, in_spec.dtype, out_dtype)),
                   [in_spec.dtype, out_dtype])


def regroup(x, spec: TensorSpec, groups, new_shape):
    """x (a tensor or an Expr) of `spec` seen as `new_shape`: `groups` pairs, in order, runs
    of spec's dims with the dims of new_shape they become, `(old dims, new dims)`, each either
    one dim split into several or several adjacent dims merged into one. A tensor becomes a
    view (expand/collapse_shape); an Expr is rebuilt over views of its leaves, so that it stays
    unmaterialized (a fused reduction's prologue). None when an Expr's operand broadcasts over
    part of a merged group only (it has no such view)."""
    old_shape, new_shape = tuple(spec.shape), tuple(new_shape)
    rank = len(old_shape)
    memo = {}

    def shape_of(aligned):
        """The new shape of an operand broadcast (numpy-style, `aligned` to the full rank)."""
        out = []
        for olds, news in groups:
            sizes = [aligned[i] for i in olds]
            if all(s == old_shape[i] for s, i in zip(sizes, olds)):
                out.extend(new_shape[j] for j in news)
            elif all(s == 1 for s in sizes):
                out.extend([1] * len(news))
            else:
                return None
        return tuple(out)

    def view(v, s: TensorSpec, build):
        shape = tuple(s.shape)
        aligned = (1,) * (rank - len(shape)) + shape
        if all(d == 1 for d in shape) and len(shape) <= len(new_shape):
            return v, s  # broadcasts to any shape as it is
        to = shape_of(aligned)
        if to is None:
            return None
        key = (id(v) if isinstance(v, Expr) else v, to, build)  # (the Exprs outlive the memo)
        if key in memo:
            return memo[key]
        if isinstance(v, Expr):
            parts = [view(o, os, build) for o, os in zip(v.operands, v.in_specs)]
            if any(p is None for p in parts):
                return None
            out = Expr(TensorSpec(to, s.dtype), [p[0] for p in parts], [p[1] for p in parts],
                       v.fn) if build else v
        elif build:
            out = _view(v, shape, to, s.dtype, groups if len(shape) == rank else None)
        else:
            out = v
        memo[key] = (out, TensorSpec(to, s.dtype))
        return memo[key]

    whole = TensorSpec(old_shape, spec.dtype)
    if view(x, whole, build=False) is None:  # (no view ops are left behind)
        return None
    return view(x, whole, build=True)[0]


def _view(x, from_shape, to_shape, dtype: dt.DType, groups):
    """A tensor as `to_shape`: one expand/collapse_shape along `groups` where they only split
    or only merge dims, else through reshape(). A splat constant becomes a new constant."""
    elem = element_type(dtype, storage=True)
    if _splat_scalar(x, dtype) is not None:  # stays a constant (inlined in loop bodies)
        t = ir.RankedTensorType.get(list(to_shape), elem)
        value = x.owner.attributes["value"].get_splat_value()
        return arith.constant(t, ir.DenseElementsAttr.get_splat(t, value))
    if groups is not None and all(len(olds) == 1 for olds, _ in groups):
        return expand_shape(x, to_shape, elem, [list(news) for _, news in groups])
    if groups is not None and all(len(news) == 1 for _, news in groups):
        return tensor.collapse_shape(ir.RankedTensorType.get(ir_shape(to_shape), elem), x,
                                     [list(olds) for olds, _ in groups])
    return reshape(x, from_shape, to_shape, dtype)


def reshape(x, from_shape, to_shape, dtype: dt.DType):
    """Reshape through views (collapse to 1-D, expand to the target): no copy after
    bufferization."""
    from_shape, to_shape = tuple(from_shape), tuple(to_shape)
    if from_shape == to_shape:
        return x
    elem = element_type(dtype, storage=True)
    if has_dynamic(from_shape) or has_dynamic(to_shape):
        return _reshape_dynamic(x, from_shape, to_shape, elem)
    if len(from_shape) > 1 or (len(from_shape) == 1 and len(to_shape) == 0):
        # (a zero-element tensor collapses to 0 elements: 1 was an invalid collapse_shape,
        # unnoticed while mscc's passes went unverified)
        flat = () if len(to_shape) == 0 else (_prod(from_shape),)
        reassoc = [list(range(len(from_shape)))] if flat else []
        x = tensor.collapse_shape(ir.RankedTensorType.get(ir_shape(flat), elem), x, reassoc)
        from_shape = flat
    if from_shape == to_shape:
        return x
    if len(to_shape) == 0:
        return x
    reassoc = [list(range(len(to_shape)))] if from_shape else []
    return expand_shape(x, to_shape, elem, reassoc)


def _reshape_dynamic(x, from_shape, to_shape, elem):
    """reshape() with dynamic sizes, through views whose every group holds at most one
    dynamic size (MLIR's reshapes need that): unit dims added or removed (expand_dims,
    squeeze) collapse to the common dims and expand again; a merge of runs into one dynamic
    dim (a flatten of the batch) or a split off a dynamic one goes through 1-D; two dynamic
    sizes in one group have no view (DynamicDimError)."""
    def nonunit(shape):
        return [i for i, d in enumerate(shape) if isinstance(d, Dim) or d != 1]

    def groups(shape):
        keep = nonunit(shape)
        return [list(range(0 if k == 0 else keep[k - 1] + 1,
                           len(shape) if k == len(keep) - 1 else j + 1))
                for k, j in enumerate(keep)]
    core = tuple(from_shape[i] for i in nonunit(from_shape))
    if core == tuple(to_shape[i] for i in nonunit(to_shape)):
        if core != from_shape:
            x = tensor.collapse_shape(ir.RankedTensorType.get(ir_shape(core), elem), x,
                                      groups(from_shape))
        return x if core == to_shape else expand_shape(x, to_shape, elem, groups(to_shape))
    if sum(isinstance(d, Dim) for d in from_shape) > 1 or \
            sum(isinstance(d, Dim) for d in to_shape) > 1:
        raise DynamicDimError(f"a reshape of {from_shape} to {to_shape} merges or splits "
                              "several sizes known only at run time")
    flat = (_prod(from_shape),)
    if len(from_shape) != 1:
        x = tensor.collapse_shape(ir.RankedTensorType.get(ir_shape(flat), elem), x,
                                  [list(range(len(from_shape)))] if from_shape else [])
    if len(to_shape) == 1:
        return x
    return expand_shape(x, to_shape, elem, [list(range(len(to_shape)))] if to_shape else [])


def expand_shape(x, to_shape, elem, reassoc):
    """tensor.expand_shape of x to `to_shape`; its dynamic sizes are computed (index_value)."""
    static = ir_shape(to_shape)
    dynamic = [index_value(d) for d in to_shape if isinstance(d, Dim)]
    return tensor.expand_shape(ir.RankedTensorType.get(static, elem), x, reassoc, dynamic,
                               static)


def _prod(shape):
    n = 1
    for d in shape:
        n *= d
    return n


# Symbolic specs of lowered values with dynamic sizes: value -> TensorSpec whose Dims are
# over the atoms of the function's DimValues (set by convert-ms-to-linalg per function).
_SYMBOLIC: list = []


def lowered_spec(value, origin) -> TensorSpec:
    """The spec of a lowered value: static from its type, or with the symbolic sizes the
    shape rules derived for it (fresh atoms for a size nothing derived, read from the value
    itself)."""
    spec = spec_of(origin.get(value, value.type))
    if spec is None or not has_dynamic(spec.shape) or not _SYMBOLIC:
        return spec
    known = _SYMBOLIC[-1].get(value)
    if known is None:
        dims = _DIM_VALUES[-1]
        known = TensorSpec(tuple(dims.fresh(value, i) if isinstance(d, Dim) else d
                                 for i, d in enumerate(spec.shape)), spec.dtype)
        _SYMBOLIC[-1][value] = known
    return known


def result_specs(opdef, op, ins, attrs) -> list:
    """An op's result specs for lowering: from its result types, or, when an operand has
    dynamic sizes, from its shape rule on the operands' symbolic specs (so each result
    size is known as an expression of the function's sizes). `attrs()` gives the op's
    attribute values."""
    outs = [spec_of(r.type) for r in op.results]
    if not any(has_dynamic(s.shape) for s in ins) or opdef.infer is None:
        return outs
    try:
        inferred = opdef.infer_specs(ins, attrs())
    except DynamicDimError as e:
        raise DynamicDimError(f"'{opdef.name}' has no form for dynamic dimensions yet: "
                              f"{e}") from None
    # a static result type stays as declared; a dynamic one takes the rule's sizes
    return [o if not has_dynamic(o.shape) else i for i, o in zip(inferred, outs)]


class FunctionSizes:
    """What lowering one function learned about its dynamic sizes: the DimValues, the
    symbolic specs, and the run-time checks its shape rules asked for."""

    def __init__(self):
        self.dims = DimValues()
        self.specs = {}
        self.checks = []
        self.dynamic = False


@contextlib.contextmanager
def lowering_function(fn, origin):
    """Lower `fn` with its arguments' dynamic dimensions named `a<arg>.<axis>`."""
    sizes = FunctionSizes()
    block = fn.regions[0].blocks[0] if len(fn.regions[0].blocks) else None
    for k, arg in enumerate(block.arguments if block is not None else []):
        spec = spec_of(origin.get(arg, arg.type))
        if spec is not None and has_dynamic(spec.shape):
            sizes.dynamic = True
            shape = []
            for i, d in enumerate(spec.shape):
                if isinstance(d, Dim):
                    sizes.dims.bind(f"a{k}.{i}", arg, i)
                    d = Dim.atom(f"a{k}.{i}")
                shape.append(d)
            sizes.specs[arg] = TensorSpec(tuple(shape), spec.dtype)
    _DIM_VALUES.append(sizes.dims)
    _SYMBOLIC.append(sizes.specs)
    try:
        with recording_constraints(sizes.checks, lambda: ir.Location.current):
            yield sizes
    finally:
        _DIM_VALUES.pop()
        _SYMBOLIC.pop()
    sizes.dynamic = sizes.dynamic or bool(sizes.dims.atoms)


def symbolic_specs() -> dict:
    return _SYMBOLIC[-1] if _SYMBOLIC else {}


def note_symbolic(value, spec: TensorSpec):
    """Record the symbolic spec a rule derived for a lowered value."""
    if _SYMBOLIC and has_dynamic(spec.shape):
        _SYMBOLIC[-1][value] = spec


class LowerCtx:
    """What an op's lower rule sees: the op, its specs (ms dtypes) and attributes."""

    def __init__(self, op, opdef, ins, outs, attrs, origin=None, regions=None, options=None):
        self.op = op
        self.opdef = opdef
        self.ins = ins      # TensorSpec of each data operand
        self.outs = outs    # TensorSpec of each result
        self.attrs = attrs  # Python values; const inputs are known here
        self.loc = op.location
        self.origin = origin if origin is not None else {}  # lowered value -> its ms type
        self.regions = regions  # numbers the fused regions of the function being lowered
        self.options = options or {}  # convert-ms-to-linalg's options (target choices)

    @property
    def out(self) -> TensorSpec:
        return self.outs[0]

    def spec_of(self, value) -> TensorSpec:
        """The ms spec of an already-lowered value (uint8 and bool are stored as i8), its
        dynamic sizes as the function's symbolic sizes (lowered_spec)."""
        return lowered_spec(value, self.origin)


def group_dtype(opdef, in_specs) -> dt.DType:
    """The common dtype of the operands in signature group "T" (after implicit cast)."""
    group = [s.dtype for s, g in zip(in_specs, opdef.signature or ["T"] * len(in_specs)) if g == "T"]
    return dt.promote(group) if group else in_specs[0].dtype


def lower_elementwise(lc: LowerCtx, *operands):
    """Lowering shared by every elementwise op: one linalg.generic whose body is the op's
    scalar rule (the same Expr a fused region builds)."""
    return materialize(elementwise_expr(lc.opdef, lc.ins, lc.out, operands))


# ------------------------------------------------------------------ fused regions

class Deferred(NamedTuple):
    """The anchor of a fused region whose op computes the epilogue inside its own loops
    (FusionRole.epilogue_inside): a leaf of the epilogue's Exprs standing for the op's
    result until the op is lowered with it (its lowering gets `epilogue=(root, deferred)`
    and substitutes this leaf with `rebind`)."""
    lc: "LowerCtx"
    data: list


def rebind(x, leaf):
    """An Expr like x with each leaf tensor v replaced by `leaf(v, spec)` -> (value, spec)
    (or None to keep it): the same elementwise computation over other tensors, each result
    spec rebuilt as the broadcast of its new operand specs."""
    if not isinstance(x, Expr):
        return x
    parts = []
    for v, spec in zip(x.operands, x.in_specs):
        if isinstance(v, Expr):
            sub = rebind(v, leaf)
            parts.append((sub, sub.spec))
        else:
            parts.append(leaf(v, spec) or (v, spec))
    shape = broadcast_shapes(*[s.shape for _, s in parts])
    shape = (1,) * (len(x.spec.shape) - len(shape)) + shape
    return Expr(TensorSpec(shape, x.spec.dtype), [p for p, _ in parts], [s for _, s in parts],
                x.fn)


REGION_ATTR = "ms.region"  # on the ops a fused region lowered to: {id, kind}


def region_kind(attr) -> str | None:
    """The `kind` of an REGION_ATTR value, or None where it has none (IR read from a file
    may carry any attribute under that name: a dictionary without `kind` was a KeyError in
    ms-outline-matmul)."""
    if not isinstance(attr, ir.DictAttr) or "kind" not in attr:
        return None
    kind = attr["kind"]
    return kind.value if isinstance(kind, ir.StringAttr) else None


def lower_fused(lc: LowerCtx):
    """An ms.fused region: elementwise ops become Exprs, so that they are computed inside the
    loops that consume them: the region's output loop, the anchor reduction's loop (its
    `fusion.prologue`), or the epilogue loop after a matmul, which updates the matmul's
    result in place. Every op it produces carries REGION_ATTR, so that later passes (kernel
    outlining, GPU mapping) see the region."""
    from .builders import data_values, op_attrs, operand_groups
    from .registry import lookup
    region = lc.op.regions[0]
    kind = lc.attrs["kind"]
    # Lower into a scratch block, then move the ops before the fused op and tag them.
    scratch = region.blocks.append()
    env = {}  # ms value inside the region -> (lowered tensor or Expr, its ms spec)
    anchor = deferred = None
    with ir.InsertionPoint(scratch):
        for op in region.blocks[0].operations:
            if op.operation.name == "gpu.yield":
                root = env[op.operands[0]][0] if op.operands[0] in env else op.operands[0]
                break
            opdef = lookup(op.operation.name)
            groups = operand_groups(opdef, op)
            data, ins = [], []
            for v in data_values(opdef, groups):
                value, spec = env.get(v) or (v, lc.spec_of(v))
                data.append(value)
                ins.append(spec)
            outs = result_specs(opdef, op, ins, lambda: op_attrs(opdef, op, groups))
            with op.location:
                if opdef.scalar is not None:
                    value = elementwise_expr(opdef, ins, outs[0], data)
                else:
                    if opdef.fusion is None or not opdef.fusion.prologue:
                        data = [materialize(v) for v in data]
                    inner = LowerCtx(op, opdef, ins, outs, op_attrs(opdef, op, groups),
                                     lc.origin, lc.regions, lc.options)
                    if opdef.fusion is not None and opdef.fusion.epilogue_inside:
                        # lowered last, given the epilogue to compute inside its loops
                        value = deferred = Deferred(inner, data)
                    else:
                        value = anchor = opdef.rule("lower")(inner, *data)
            env[op.results[0]] = (value, outs[0])
        with lc.loc:
            if deferred is not None:
                with deferred.lc.loc:
                    result = deferred.lc.opdef.rule("lower")(deferred.lc, *deferred.data,
                                                             epilogue=(root, deferred))
                root = None
            into = None
            if (kind == "matmul" and anchor is not None and isinstance(root, Expr)
                    and tensor_type(root.spec, storage=True) == anchor.type):
                into = anchor  # the epilogue updates the matmul's result in place
            if root is not None:
                result = materialize(root, out=into)
    yielded = region.blocks[0].operations[len(region.blocks[0].operations) - 1].operands[0]
    if yielded in env:
        note_symbolic(result, env[yielded][1])
    _move_tagged(scratch, lc, kind)
    return result


def _move_tagged(scratch, lc: LowerCtx, kind: str):
    """The ops a fused region lowered to, from its scratch block to before the fused op,
    each tagged with REGION_ATTR (the region's number and kind)."""
    ident = ir.DictAttr.get({"id": ir.IntegerAttr.get(ir.IntegerType.get_signless(64),
                                                      next(lc.regions) if lc.regions else 0),
                             "kind": ir.StringAttr.get(kind)})
    for op in list(scratch.operations):
        op.move_before(lc.op)
        op.attributes[REGION_ATTR] = ident
