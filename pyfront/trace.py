"""Tracing Python functions into ms IR.

While a function runs under a Trace, ms ops on traced Tensors append ms ops to one func.func,
in MindSpore's form: constant inputs as `ms.constant` operands, Python scalars as scalar
constants, mixed dtypes left to ms-implicit-cast. Each op carries the user's file:line:col.
Parameters the function reads become extra arguments (arg attribute `ms.parameter`); values
written with ms.assign become extra results the runtime stores back.

Which trace an op goes to, if any, is pyfront/dispatch.py's decision: outside a trace an op
runs eagerly there, traced alone into a Trace of its own and compiled once per (op,
attributes, input specs, scalar values), as MindSpore's PyNative mode does. Traces are
per thread (pyfront/state.py); building one holds the compiler lock.
"""
from __future__ import annotations
from ..dialects.symdim import Dim, DynamicDimError, has_dynamic

import numpy as np
from mlir import ir
from mlir.dialects import func

from ..dialects import dtypes as dt
from ..dialects.builders import (PARAM_ATTR, build_op, constant, mlir_context, spec_of, tensor_type,
                           write_conflict)
from ..dialects.ir_helpers import fresh_symbol
from ..dialects.registry import DTypeError, ShapeError, lookup
from ..dialects.verifier import check_dtypes
from .location import LocatedIndexError, LocatedTypeError, LocatedValueError  # noqa: F401
from .location import located as _located
from .location import user_location
from .state import active_traces
from .tensor import Parameter, Tensor


# The pipeline stage a traced module is at (passes/pipeline.py): the tracer builds each op
# with builders.build_op, whose result types come from the op's shape and dtype rules, the
# ones ms-verify checks; the `ms` stage (that verify alone) has nothing left to find. It was
# 9-10 ms of a ResNet block step's compile and ~0.2 s of MobileNetV2's; ms-verify still runs
# after ms-const-input-to-attr and ms-implicit-cast, whose folding can expose a bad shape.
TRACED_STAGE = "ms"


def compile_traced(module, entry: str, target: str, **options):
    """passes.compiler.compile_module for a module the tracer built (at TRACED_STAGE)."""
    from ..passes.compiler import compile_module
    return compile_module(module, entry, target=target, start_after=TRACED_STAGE, **options)


def current_trace():
    return active_traces[-1] if active_traces else None


class Trace:
    """Builds one func.func of ms ops from a Python function run on traced Tensors."""

    def __init__(self, name: str, where=None, module=None):
        """A new function `name`, in a new module or (for a callee such as the function a
        gradient is taken of) as a private function of `module`."""
        self.context = mlir_context()
        file, line, col = where or user_location()
        self.fn_loc = ir.Location.file(file, line, col, context=self.context)
        with self.context, self.fn_loc:
            if module is None:
                self.module = ir.Module.create()
            else:
                self.module = module
                name = fresh_symbol(module, name)
            with ir.InsertionPoint(self.module.body):
                self.fn = func.FuncOp(name, ([], []),
                                      visibility="private" if module is not None else None)
            self.block = self.fn.add_entry_block()
        self.name = name
        self.arg_attrs: list[dict] = []
        self.params: dict[int, tuple] = {}       # id(Parameter) -> (Parameter, current value)
        self.param_order: list[Parameter] = []   # in argument order (after explicit args)
        self.assigned: dict[int, Parameter] = {}
        self.constants: dict[int, tuple] = {}    # id(concrete Tensor) -> (Tensor, value)
        self.explicit_params: dict[int, int] = {}  # id(Parameter) -> explicit argument index
        self.n_explicit = 0
        # a dynamic size of an argument (its atom a<arg>.<axis>) -> (the traced Tensor, axis):
        # where ops that make a tensor of a dynamic shape (zeros, a dropout mask) take it from
        self.dim_sources: dict[str, tuple] = {}
        self.sym_specs: dict = {}  # ir.Value -> its spec with named dynamic sizes

    # ------------------------------------------------------------------ context manager
    def __enter__(self):
        active_traces.append(self)
        return self

    def __exit__(self, *exc):
        active_traces.pop()
        return False

    # ------------------------------------------------------------------ values
    def add_argument(self, spec: dt.TensorSpec, attrs=None) -> Tensor:
        with self.context, self.fn_loc:
            value = self.block.add_argument(tensor_type(spec), self.fn_loc)
        k = len(self.arg_attrs)
        self.arg_attrs.append(attrs or {})
        if not has_dynamic(spec.shape):
            return Tensor._traced(value, spec, self)
        # each dynamic size gets its name (what the shape rules compute with)
        shape = tuple(Dim.atom(f"a{k}.{i}") if isinstance(d, Dim) else d
                      for i, d in enumerate(spec.shape))
        t = self._traced_value(value, dt.TensorSpec(shape, spec.dtype))
        for i, d in enumerate(shape):
            if isinstance(d, Dim):
                self.dim_sources[f"a{k}.{i}"] = (t, i)
        return t

    def size_source(self, d):
        """(traced Tensor, axis) holding the dynamic size `d` (one argument's dimension);
        DynamicDimError for a size computed from several."""
        sources = getattr(self, "root", self).dim_sources
        if isinstance(d, Dim) and len(d.terms) == 1:
            (mono, c), = d.terms.items()
            if c == 1 and len(mono) == 1 and mono[0] in sources:
                return sources[mono[0]]
        raise DynamicDimError(f"a tensor of size {d!r} needs that size at run time, and no "
                              "argument's dimension is it")

    def add_input(self, x, keep_parameters=True) -> Tensor:
        """An explicit argument of the traced function. A Parameter passed explicitly keeps
        its identity (unless `keep_parameters` is False), so ms.assign to it is stored back
        into the object passed."""
        if keep_parameters and isinstance(x, Parameter):
            with self.context:
                t = self.add_argument(x._spec, {PARAM_ATTR: ir.StringAttr.get(x.name)})
            self.params[id(x)] = (x, t._value)
            self.param_order.append(x)
            self.explicit_params[id(x)] = self.n_explicit
            self.n_explicit += 1
            return x
        self.n_explicit += 1
        return self.add_argument(x._spec)

    def value_of(self, t: Tensor) -> ir.Value:
        """The SSA value standing for `t` in this function."""
        if t._trace is self:
            return t._value
        if t._trace is not None:
            return self.outer_value(t)
        if isinstance(t, Parameter):
            entry = self.params.get(id(t))
            if entry is None:
                with self.context:
                    arg = self.add_argument(t._spec, {PARAM_ATTR: ir.StringAttr.get(t.name)})
                entry = self.params[id(t)] = (t, arg._value)
                self.param_order.append(t)
            return entry[1]
        if t._data is None:
            raise TypeError(f"a placeholder Tensor {t._spec} holds no data: pass it as an "
                            "argument of the jit function, or give it data")
        entry = self.constants.get(id(t))
        if entry is None:
            with self.context, self.fn_loc, ir.InsertionPoint(self.block):
                entry = self.constants[id(t)] = (t, constant(t._data, t.dtype))
        return entry[1]

    def outer_value(self, t: Tensor) -> ir.Value:
        """The value of a Tensor traced elsewhere: an error here (a RegionTrace reads the
        values of the traces that enclose it)."""
        raise _foreign_tensor(t)

    @property
    def root(self):
        """The Trace building the function (a RegionTrace's is its outermost trace's)."""
        return self

    def is_parameter(self, value: ir.Value) -> bool:
        return any(v == value for _, v in self.params.values())

    def scalar(self, x, where) -> ir.Value:
        """A Python bool/int/float as a scalar constant (MindSpore's scalar rules apply)."""
        dtype = dt.bool_ if isinstance(x, (bool, np.bool_)) else (
            dt.int64 if isinstance(x, (int, np.integer)) else dt.float64)
        if dtype is dt.int64 and not _INT64_MIN <= x <= _INT64_MAX:
            # (checked here, where the IR is built, so a cached eager call never pays for it)
            raise ValueError(f"the Python int {x} is outside the int64 range of a scalar operand")
        with self.context, _loc(where, self.context), ir.InsertionPoint(self.block):
            return constant(np.array(x, dtype.np), dtype, scalar=True)

    def const_input(self, values, kind: str, where) -> ir.Value:
        """A shape/axis/perm argument as an ms.constant operand (before const-input-to-attr)."""
        arr = np.array(values if kind == "ints" else int(values), dtype=np.int64)
        with self.context, _loc(where, self.context), ir.InsertionPoint(self.block):
            return constant(arr, dt.int64)

    # ------------------------------------------------------------------ ops
    def emit(self, op_name: str, operands: list, attrs: dict, consts: dict, where):
        """Append one ms op; `operands` are ir.Values of the data operands (in order),
        `consts` the const inputs by name (Python values). Returns result Tensors."""
        opdef = lookup(op_name)
        ir_operands = {o.name: v for o, v in zip(opdef.data_operands, operands)}
        for name, value in consts.items():
            try:
                ir_operands[name] = self.const_input(value, opdef.const_inputs[name], where)
            except OverflowError:
                raise LocatedValueError(_located(
                    f"For '{op_name}', {name} {value} is outside the int64 range", where),
                    where) from None
        with self.context:
            problem = check_dtypes(opdef, [spec_of(v.type) for v in operands])
            if problem:
                raise LocatedTypeError(_located(f"For '{op_name}', {problem}", where), where)
            conflict = write_conflict(opdef, operands, self.is_parameter)
            if conflict:
                raise LocatedTypeError(_located(conflict, where), where)
            try:
                # with named dynamic sizes, the rule runs on them (a reshape of (5*n, 64) to
                # (5, -1, 64) is (5, n, 64); of (?, 64) it would not be known)
                symbolic = self._symbolic_specs(opdef, operands, {**attrs, **consts})
                with _loc(where, self.context), ir.InsertionPoint(self.block):
                    op = build_op(op_name, ir_operands, attrs, result_types=None if symbolic
                                  is None else [tensor_type(sp) for sp in symbolic])
            except ShapeError as e:
                raise LocatedValueError(_located(f"For '{op_name}', {e}", where), where) from None
            except DTypeError as e:
                raise LocatedTypeError(_located(f"For '{op_name}', {e}", where), where) from None
        specs = symbolic or [spec_of(r.type) for r in op.results]
        return [self._traced_value(r, sp) for r, sp in zip(op.results, specs)]

    def _traced_value(self, value, spec):
        """A traced Tensor; its symbolic spec remembered for the ops that read it."""
        if has_dynamic(spec.shape):
            getattr(self, "root", self).sym_specs[value] = spec
        return Tensor._traced(value, spec, self)

    def _symbolic_specs(self, opdef, operands, attrs):
        """The results' specs from the shape rule on the operands' named dynamic sizes (an op
        that makes a tensor of such a size finds where it comes from: size_source), or None
        when no operand has any (the result types then come from the IR types)."""
        known = getattr(self, "root", self).sym_specs
        ins = [known.get(v) for v in operands]
        if all(sp is None for sp in ins) or opdef.infer is None:
            return None
        from ..dialects.builders import resolved_specs
        typed = resolved_specs(opdef, list(operands))
        ins = [dt.TensorSpec(sp.shape, t.dtype) if sp is not None else t
               for sp, t in zip(ins, typed)]
        try:
            return opdef.infer_specs(ins, attrs)
        except DynamicDimError:  # (the IR types' `?` may still allow it)
            return None

    def assign(self, param: Parameter, value: Tensor, where):
        """ms.assign into a Parameter: later reads see the new value; it becomes a result."""
        var = self.value_of(param)
        out, = self.emit("ms.assign", [var, self.value_of(value)], {}, {}, where)
        self.params[id(param)] = (param, out._value)
        self.assigned[id(param)] = param
        return out

    # ------------------------------------------------------------------ finishing
    def finish(self, outputs: list):
        """Return `outputs` (Tensors) and the final values of assigned Parameters."""
        values = [self.value_of(t) for t in outputs]
        values += [self.params[id(p)][1] for p in self.assigned_params]
        with self.context, self.fn_loc, ir.InsertionPoint(self.block):
            func.ReturnOp(values)
        with self.context:
            arg_types = [a.type for a in self.block.arguments]
            self.fn.attributes["function_type"] = ir.TypeAttr.get(
                ir.FunctionType.get(arg_types, [v.type for v in values]))
            if any(self.arg_attrs):
                self.fn.arg_attrs = ir.ArrayAttr.get([ir.DictAttr.get(a) for a in self.arg_attrs])
        return self.module

    @property
    def assigned_params(self):
        return [p for p in self.param_order if id(p) in self.assigned]


_INT64_MIN, _INT64_MAX = -2**63, 2**63 - 1


def _foreign_tensor(t: Tensor) -> Exception:
    owner = t._trace
    if isinstance(owner, RegionTrace) and owner.closed:
        file, line, _ = owner.where
        return LocatedValueError(_located(
            f"For '{owner.api}', a Tensor computed inside its {owner.role} (called at "
            f"{file}:{line}) was used outside it: return it from the {owner.role} instead",
            user_location()), user_location())
    return RuntimeError("a Tensor traced by another jit function was used here; return it "
                        "from that function instead")


class RegionTrace(Trace):
    """Traces one region (a loop body, a condition, a branch) of the function that `parent`
    (a Trace or another RegionTrace) is building: ops go into `block`, Tensors of the
    enclosing traces are read from above, Parameters are the function's arguments, and
    writing a Parameter is refused (MindSpore forbids side effects in these bodies). Its
    Tensors must not escape: once `closed`, using one is an error naming the API."""

    def __init__(self, parent: Trace, block, api: str, role: str, where):
        self.parent = parent
        self.context, self.module, self.fn = parent.context, parent.module, parent.fn
        self.fn_loc, self.name = parent.fn_loc, parent.name
        self.block = block
        self.api, self.role, self.where = api, role, where
        self.constants: dict[int, tuple] = {}  # constants made here live in this region
        self.closed = False

    def __exit__(self, *exc):
        self.closed = True
        return super().__exit__(*exc)

    @property
    def root(self):
        return self.parent.root

    # what belongs to the function: its arguments, Parameters and writes
    @property
    def params(self):
        return self.root.params

    @property
    def assigned(self):
        return self.root.assigned

    def add_argument(self, spec, attrs=None):
        return self.root.add_argument(spec, attrs)

    def value_of(self, t: Tensor) -> ir.Value:
        if t._trace is self:
            return t._value
        if t._trace is None and isinstance(t, Parameter):
            return self.root.value_of(t)
        return super().value_of(t)

    def outer_value(self, t: Tensor) -> ir.Value:
        trace = self.parent
        while True:
            if t._trace is trace:
                return t._value  # defined above this region
            if not isinstance(trace, RegionTrace):
                raise _foreign_tensor(t)
            trace = trace.parent

    def assign(self, param: Parameter, value: Tensor, where):
        raise LocatedTypeError(_located(
            f"For '{self.api}', {self.role} assigns the Parameter '{param.name}': the "
            "bodies of loops and conditionals must not have side effects (MindSpore forbids "
            "them); return the new value and assign it after the loop", where), where)

    def finish(self, outputs):
        raise RuntimeError("a RegionTrace ends in its region's terminator, not a return")


def _loc(where, context):
    file, line, col = where
    return ir.Location.file(file, line, col, context=context)
