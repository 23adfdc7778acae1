"""Loops and conditionals: MindSpore 2.4+'s ops.WhileLoop, ops.ForiLoop, ops.Scan and JAX's
ops.cond (the building block `if` on a Tensor will compile to).

Under jit (or a Cell in GRAPH_MODE) each compiles to one scf.while / scf.for / scf.if whose
regions hold the body traced once (dialects/ops/control.py has the IR and why it is scf):
compile time does not grow with the trip count. `unroll=True` (MindSpore's default for
ForiLoop and Scan) keeps MindSpore's meaning where the trip count is a Python int: the loop
runs while tracing, one copy of the body per iteration. Tensor bounds and WhileLoop always
compile to a loop. In PYNATIVE_MODE the ops run the Python loop eagerly; a gradient
recording sees the ops of the iterations that ran (so its gradients are those of graph
mode), and a WhileLoop or a Tensor-bounded ForiLoop it would differentiate through raises
the same error as in graph mode.

Carries (init_val, init) are Tensors, Python numbers (0-d Tensors from the start: float32,
int64, bool as ms.Tensor makes them) or tuples/lists/dicts of them (pyfront/pytree.py); a
body must return the same structure, shapes and dtypes. Bodies read closed-over Tensors and
Parameters (from above the region); writing a Parameter in a body is an error, as in
MindSpore. Mistakes raise TypeError/ValueError naming the op and the user's line.

This module imports mlir only when it traces.
"""
from __future__ import annotations

import contextlib

import numpy as np

from ..dialects import dtypes as dt
from ..dialects.dtypes import TensorSpec
from ..dialects.symdim import is_dynamic
from . import pytree
from .location import user_location
from .state import active_bodies, active_tapes, active_traces
from .tensor import Tensor

_NUMBERS = (bool, int, float, np.bool_, np.integer, np.floating)


# ------------------------------------------------------------------ carries

def _paths(root: str, value) -> list[str]:
    """A name per leaf of `value`, in pytree.flatten's order (dict keys sorted)."""
    out = []

    def walk(x, path):
        if isinstance(x, (tuple, list)) and not hasattr(x, "_fields"):
            for i, v in enumerate(x):
                walk(v, f"{path}[{i}]")
        elif isinstance(x, dict):
            for k in sorted(x):
                walk(x[k], f"{path}[{k!r}]")
        elif x is not None:
            out.append(path)
    walk(value, root)
    return out


def _as_tensor(x, path: str) -> Tensor:
    if isinstance(x, Tensor):
        return x
    if isinstance(x, (np.ndarray, *_NUMBERS)):
        return Tensor(x)
    raise TypeError(f"{path} is a {type(x).__name__}; carries are Tensors, Python numbers "
                    "or tuples/lists/dicts of them")


def _fmt(spec: TensorSpec) -> str:
    return f"{spec.dtype.name} of shape {spec.shape}"


class Carry:
    """A loop's carried value: its leaves as Tensors, its structure, a name per leaf."""

    def __init__(self, what: str, value):
        leaves, self.tree = pytree.flatten(value)
        self.what = what
        self.paths = _paths(what, value)
        self.tensors = [_as_tensor(x, p) for x, p in zip(leaves, self.paths)]
        self.specs = [t._spec for t in self.tensors]

    def value(self, leaves):
        return pytree.unflatten(self.tree, list(leaves))

    def check(self, who: str, result) -> list:
        """The leaves of what a body returned, as Tensors: the structure, shapes and dtypes
        of the carry, or a ValueError saying what changed."""
        leaves, tree = pytree.flatten(result)
        if tree != self.tree:
            raise ValueError(f"{who} returned {_structure(result)}, but {self.what} is "
                             f"{_structure(self.value(self.tensors))}: the structure of the "
                             "carried value must not change")
        out = [_as_tensor(x, f"the value {who} returned for {p}")
               for x, p in zip(leaves, self.paths)]
        for t, spec, path in zip(out, self.specs, self.paths):
            if t._spec != spec:
                raise ValueError(f"{who} changed {path} from {_fmt(spec)} to {_fmt(t._spec)}: "
                                 "each carry keeps its shape and dtype")
        return out


def _structure(value) -> str:
    if isinstance(value, (tuple, list)) and not hasattr(value, "_fields"):
        return f"a {type(value).__name__} of {len(value)}"
    if isinstance(value, dict):
        return f"a dict with keys {sorted(value)}"
    return "a Tensor" if isinstance(value, Tensor) else f"a {type(value).__name__}"


def _callable(fn, name):
    if not callable(fn):
        raise TypeError(f"{name} must be a function, got {type(fn).__name__}")


@contextlib.contextmanager
def _body(api: str, role: str):
    """While a body runs: ops.assign refuses to write Parameters (eager mode; a traced body's
    RegionTrace refuses too)."""
    active_bodies.append((api, role))
    try:
        yield
    finally:
        active_bodies.pop()


def _truth(x, api, who) -> bool:
    """The Python truth of what a condition returned (eager mode)."""
    if isinstance(x, Tensor):
        if x.size != 1:
            raise ValueError(f"{who} must return a scalar (a Tensor with one element), got "
                             f"shape {x.shape}")
        return bool(x.asnumpy().reshape(()))
    if isinstance(x, _NUMBERS):
        return bool(x)
    raise TypeError(f"{who} must return a bool Tensor or a Python bool, got "
                    f"{type(x).__name__}")


# ------------------------------------------------------------------ tracing (MLIR from here)

def _current_trace():
    return active_traces[-1] if active_traces.items else None


def _loc(trace, where):
    from .trace import _loc as loc
    return loc(where, trace.context)


def _predicate(trace, x, who, where):
    """An i1 value of what a condition or `pred` is (a bool or numeric Tensor with one
    element: non-zero is true, or a Python bool), read at the end of trace.block."""
    from mlir import ir
    from mlir.dialects import tensor
    from . import ops
    if isinstance(x, (np.ndarray, *_NUMBERS)):
        x = Tensor(x)
    if not isinstance(x, Tensor):
        raise TypeError(f"{who} must be a bool Tensor or a Python bool, got {type(x).__name__}")
    if x.size != 1:
        raise ValueError(f"{who} must be a scalar (a Tensor with one element), got shape "
                         f"{x.shape}")
    if x.shape != ():
        x = ops.reshape(x, ())
    if x.dtype is not dt.bool_:
        x = ops.not_equal(x, 0)
    value = trace.value_of(x)
    with trace.context, _loc(trace, where), ir.InsertionPoint(trace.block):
        return tensor.extract(value, [])


def _region(trace, block, api, role, where):
    from .trace import RegionTrace
    return RegionTrace(trace, block, api, role, where)


def _traced_leaves(region, values, specs):
    """Tensors of a region's (or a loop's) values; dynamic sizes keep their names (the
    carries' specs), so the ops that read them compute with the same sizes."""
    return [region._traced_value(v, s) for v, s in zip(values, specs)]


def _yield(region, tensors, where, pred=None):
    from mlir import ir
    from mlir.dialects import scf
    values = [region.value_of(t) for t in tensors]
    with region.context, _loc(region, where), ir.InsertionPoint(region.block):
        if pred is not None:
            scf.ConditionOp(pred, values)
        else:
            scf.YieldOp(values)


def traced_while(trace, cond_func, loop_func, carry: Carry, where):
    from mlir import ir
    from mlir.dialects import scf
    from ..dialects.ops.control import set_api
    inits = [trace.value_of(t) for t in carry.tensors]
    types = [v.type for v in inits]
    with trace.context, _loc(trace, where) as loc, ir.InsertionPoint(trace.block):
        op = scf.WhileOp(types, inits)
        set_api(op, "WhileLoop")
        before = ir.Block.create_at_start(op.before, types, [loc] * len(types))
        after = ir.Block.create_at_start(op.after, types, [loc] * len(types))
    with _region(trace, before, "WhileLoop", "cond_func", where) as region:
        with _body("WhileLoop", "cond_func"):
            test = cond_func(carry.value(_traced_leaves(region, before.arguments, carry.specs)))
        pred = _predicate(region, test, "cond_func", where)
        _yield(region, _traced_leaves(region, before.arguments, carry.specs), where, pred=pred)
    with _region(trace, after, "WhileLoop", "loop_func", where) as region:
        with _body("WhileLoop", "loop_func"):
            out = loop_func(carry.value(_traced_leaves(region, after.arguments, carry.specs)))
        _yield(region, carry.check("loop_func", out), where)
    return _traced_leaves(trace, op.results, carry.specs)


def _bound_value(trace, b, dtype, where):
    """An index value of a loop bound: a constant for an int, else read from the Tensor."""
    from mlir import ir
    from mlir.dialects import arith, tensor
    from . import ops
    with trace.context, _loc(trace, where):
        if not isinstance(b, Tensor):
            with ir.InsertionPoint(trace.block):
                return arith.constant(ir.IndexType.get(), b)
    if b.shape != ():
        b = ops.reshape(b, ())
    if b.dtype is not dtype:
        b = ops.cast(b, dtype)
    value = trace.value_of(b)
    with trace.context, _loc(trace, where), ir.InsertionPoint(trace.block):
        return arith.index_cast(ir.IndexType.get(), tensor.extract(value, []))


def traced_for(trace, api, bounds, step_fn, carry: Carry, where):
    """One scf.for over `bounds` (lower, upper, index dtype) carrying `carry`. step_fn(region,
    i, carries) runs the body (i: the index as a 0-d Tensor) and returns (new carries,
    extra Tensors to stack: Scan's ys leaves). Returns (the loop, the extra leaves' values in
    the body, the index tensor's value there)."""
    from mlir import ir
    from mlir.dialects import scf
    from ..dialects.lowering import index_constant
    from ..dialects.ops.control import index_tensor, set_api
    lower, upper, idx_dtype = bounds
    lb = _bound_value(trace, lower, idx_dtype, where)
    ub = _bound_value(trace, upper, idx_dtype, where)
    inits = [trace.value_of(t) for t in carry.tensors]
    with trace.context, _loc(trace, where), ir.InsertionPoint(trace.block):
        op = scf.ForOp(lb, ub, index_constant(1), inits)
        set_api(op, api)
    with _region(trace, op.body, api, "loop_func", where) as region:
        with trace.context, _loc(trace, where), ir.InsertionPoint(op.body):
            i = index_tensor(op.induction_variable, idx_dtype)
        index = Tensor._traced(i, TensorSpec((), idx_dtype), region)
        args = _traced_leaves(region, list(op.body.arguments)[1:], carry.specs)
        with _body(api, "loop_func"):
            new, extra = step_fn(region, index, args)
        extra = [region.value_of(t) for t in extra]
        _yield(region, new, where)
    return op, extra, i


def _index_dtype(lower, upper):
    tensors = [b.dtype for b in (lower, upper) if isinstance(b, Tensor)]
    return dt.int32 if tensors and all(d is dt.int32 for d in tensors) else dt.int64


def _bound(b, name):
    """An int, or a Tensor with one integer element."""
    if isinstance(b, (bool, np.bool_)):
        raise TypeError(f"{name} must be an int or an integer Tensor, got bool")
    if isinstance(b, (int, np.integer)):
        if not -2**63 <= int(b) < 2**63:
            raise ValueError(f"{name} {b} is outside the int64 range")
        return int(b)
    if isinstance(b, np.ndarray):
        b = Tensor(b)
    if isinstance(b, Tensor):
        if b.dtype.kind not in ("int", "uint") or b.size != 1:
            raise TypeError(f"{name} must be an int or an integer Tensor with one element, got "
                            f"a {b.dtype.name} Tensor of shape {b.shape}")
        return b
    raise TypeError(f"{name} must be an int or an integer Tensor, got {type(b).__name__}")


# ------------------------------------------------------------------ PyNative: forward only

_MARKERS: dict = {}


def _forward_only(api, where, tensors):
    """Eager results of a loop a gradient cannot go through (WhileLoop, Tensor bounds): under
    a PyNative recording they pass through one recorded node whose replay is an empty
    scf.while named `api`, so that differentiating through it fails as in graph mode."""
    if not active_tapes.items or not tensors:
        return tensors
    key = (api, where)
    marker = _MARKERS.get(key)
    if marker is None:
        marker = _MARKERS[key] = _marker(api, where)
    outs = [Tensor._wrap(t.asnumpy()) for t in tensors]
    active_tapes[-1].record_call(marker, tuple(tensors), outs)
    return outs


def _marker(api, where):
    def replay(*xs):
        from mlir import ir
        from mlir.dialects import arith, scf
        from ..dialects.ops.control import set_api
        trace = active_traces[-1]
        inits = [trace.value_of(x) for x in xs]
        types = [v.type for v in inits]
        with trace.context, _loc(trace, where) as loc, ir.InsertionPoint(trace.block):
            op = scf.WhileOp(types, inits)
            set_api(op, api)
            before = ir.Block.create_at_start(op.before, types, [loc] * len(types))
            after = ir.Block.create_at_start(op.after, types, [loc] * len(types))
            with ir.InsertionPoint(before):
                scf.ConditionOp(arith.constant(ir.IntegerType.get_signless(1), 0),
                                list(before.arguments))
            with ir.InsertionPoint(after):
                scf.YieldOp(list(after.arguments))
        return _traced_leaves(trace, op.results, [x._spec for x in xs])
    replay.__name__ = f"{api}_forward_only"
    return replay


# ------------------------------------------------------------------ the APIs

def while_loop(cond_func, loop_func, init_val):
    """`while cond_func(val): val = loop_func(val)`; returns val (MindSpore's WhileLoop)."""
    _callable(cond_func, "cond_func")
    _callable(loop_func, "loop_func")
    where = user_location()
    carry = Carry("init_val", init_val)
    trace = _current_trace()
    if trace is not None:
        return carry.value(traced_while(trace, cond_func, loop_func, carry, where))
    leaves = carry.tensors
    while True:
        with _body("WhileLoop", "cond_func"):
            test = cond_func(carry.value(leaves))
        if not _truth(test, "WhileLoop", "cond_func"):
            break
        with _body("WhileLoop", "loop_func"):
            leaves = carry.check("loop_func", loop_func(carry.value(leaves)))
    return carry.value(_forward_only("WhileLoop", where, leaves))


def fori_loop(lower, upper, loop_func, init_val, unroll=True):
    """`for i in range(lower, upper): val = loop_func(i, val)`; returns val (MindSpore's
    ForiLoop). With Tensor bounds, or unroll=False, the body is traced once into a loop and
    `i` is a 0-d integer Tensor; unroll=True with int bounds runs the loop while tracing, `i`
    a Python int."""
    _callable(loop_func, "loop_func")
    if not isinstance(unroll, (bool, np.bool_)):
        raise TypeError(f"unroll must be a bool, got {type(unroll).__name__}")
    lower, upper = _bound(lower, "lower"), _bound(upper, "upper")
    where = user_location()
    carry = Carry("init_val", init_val)
    static = not isinstance(lower, Tensor) and not isinstance(upper, Tensor)
    idx_dtype = _index_dtype(lower, upper)
    trace = _current_trace()
    if trace is not None and not (static and unroll):
        def step(region, i, leaves):
            return carry.check("loop_func", loop_func(i, carry.value(leaves))), []
        op, _, _ = traced_for(trace, "ForiLoop", (lower, upper, idx_dtype), step, carry, where)
        return carry.value(_traced_leaves(trace, op.results, carry.specs))
    leaves = carry.tensors
    for i in range(int(lower), int(upper)):
        index = i if static and unroll else Tensor(np.array(i, idx_dtype.np))
        with _body("ForiLoop", "loop_func"):
            leaves = carry.check("loop_func", loop_func(index, carry.value(leaves)))
    if not static:
        leaves = _forward_only("ForiLoop", where, leaves)
    return carry.value(leaves)


def cond(pred, true_fn, false_fn, *operands):
    """`true_fn(*operands) if pred else false_fn(*operands)` for a scalar bool Tensor (or a
    Python bool) pred (JAX's lax.cond): under jit, one scf.if with both branches traced;
    they must return the same structure, shapes and dtypes."""
    _callable(true_fn, "true_fn")
    _callable(false_fn, "false_fn")
    where = user_location()
    trace = _current_trace()
    if trace is None:
        branch = true_fn if _truth(pred, "cond", "pred") else false_fn
        with _body("cond", "true_fn" if branch is true_fn else "false_fn"):
            out = branch(*operands)
        result = Carry("the result", out)
        return result.value(result.tensors)
    return traced_cond(trace, pred, true_fn, false_fn, operands, where)


def traced_cond(trace, pred, true_fn, false_fn, operands, where):
    """The branches are traced into a first scf.if without results; once their types are
    known the ops move into the final scf.if."""
    from mlir import ir
    from mlir.dialects import scf
    from ..dialects.ops.control import set_api
    p = _predicate(trace, pred, "pred", where)
    with trace.context, _loc(trace, where), ir.InsertionPoint(trace.block):
        draft = scf.IfOp(p, [], has_else=True)
    outs = []
    for block, fn, role in ((draft.then_block, true_fn, "true_fn"),
                            (draft.else_block, false_fn, "false_fn")):
        with _region(trace, block, "cond", role, where) as region:
            with _body("cond", role):
                result = fn(*operands)
            carry = Carry("the result", result)
            outs.append((carry, [region.value_of(t) for t in carry.tensors]))
    (first, values), (second, _) = outs
    if second.tree != first.tree:
        raise ValueError(f"true_fn returned {_structure(first.value(first.tensors))} and "
                         f"false_fn {_structure(second.value(second.tensors))}: both branches "
                         "must return the same structure")
    for a, b, path in zip(first.specs, second.specs, first.paths):
        if a != b:
            raise ValueError(f"true_fn returns {_fmt(a)} for {path} and false_fn {_fmt(b)}: "
                             "both branches must return the same shapes and dtypes")
    with trace.context, _loc(trace, where), ir.InsertionPoint(draft):
        op = scf.IfOp(p, [v.type for v in values], has_else=True)
        set_api(op, "cond")
    for (carry, vals), old, new in zip(outs, (draft.then_block, draft.else_block),
                                       (op.then_block, op.else_block)):
        for inner in list(old.operations):
            new.append(inner)
        with trace.context, _loc(trace, where), ir.InsertionPoint(new):
            scf.YieldOp(vals)
    draft.erase()
    return first.value(_traced_leaves(trace, op.results, first.specs))


def scan(loop_func, init, xs, length=None, unroll=True, reverse=False):
    """`carry, y = loop_func(carry, x)` for each x of xs; returns (carry, ys) (MindSpore's
    Scan). xs: a Tensor (iterated over axis 0; ys stacked on axis 0, as in JAX), a tuple or
    list (one x per element; ys a list, as in MindSpore), or None with `length` (x is None;
    ys a list). unroll=False traces the body once into a loop. reverse=True (JAX's) runs
    from the last x to the first, each y kept at its x's position."""
    _callable(loop_func, "loop_func")
    for name, flag in (("unroll", unroll), ("reverse", reverse)):
        if not isinstance(flag, (bool, np.bool_)):
            raise TypeError(f"{name} must be a bool, got {type(flag).__name__}")
    steps = _scan_steps(xs, length)
    where = user_location()
    carry = Carry("init", init)
    if not isinstance(xs, Tensor) and not steps:
        return carry.value(carry.tensors), []  # no step to run (or to learn a y from)
    trace = _current_trace()
    if trace is not None and (not unroll or is_dynamic(steps) or not steps):
        return traced_scan(trace, loop_func, carry, xs, steps, where, bool(reverse))
    leaves, ys = carry.tensors, []
    for t in (range(steps - 1, -1, -1) if reverse else range(steps)):
        x = None if xs is None else xs[t]
        with _body("Scan", "loop_func"):
            new, y = _pair(loop_func(carry.value(leaves), x))
        leaves = carry.check("loop_func", new)
        ys.append(y)
    ys = ys[::-1] if reverse else ys
    if not isinstance(xs, Tensor):
        return carry.value(leaves), ys
    return carry.value(leaves), _stacked(ys, loop_func, carry, xs)


def _scan_steps(xs, length):
    if length is not None and (isinstance(length, (bool, np.bool_))
                               or not isinstance(length, (int, np.integer)) or length < 0):
        raise TypeError(f"length must be a non-negative int or None, got {length!r}")
    if xs is None:
        if length is None:
            raise ValueError("xs is None, so length must be given")
        return int(length)
    if isinstance(xs, np.ndarray):
        raise TypeError("xs must be a Tensor, a tuple, a list or None, got a numpy array "
                        "(wrap it in ms.Tensor)")
    if isinstance(xs, Tensor):
        if not xs.shape:
            raise ValueError("xs must have a first axis to scan over, got a 0-d Tensor")
        n = xs.shape[0]
    elif isinstance(xs, (tuple, list)):
        n = len(xs)
    else:
        raise TypeError(f"xs must be a Tensor, a tuple, a list or None, got "
                        f"{type(xs).__name__}")
    if length is not None and int(length) != n:
        raise ValueError(f"length {length} differs from the {n} elements of xs")
    return n


def _pair(out):
    if not (isinstance(out, (tuple, list)) and len(out) == 2):
        raise ValueError(f"loop_func must return a pair (carry, y), got {_structure(out)}")
    return out


def _stacked(ys, loop_func, carry, xs):
    """ys of a Tensor xs stacked on a new axis 0 (leaf by leaf); for no steps, zeros of the
    shapes one step would give (found by tracing the body without running it)."""
    from . import ops
    if not ys:
        tree, specs = _step_shapes(loop_func, carry, xs)
        return pytree.unflatten(tree, [ops.zeros((0,) + s.shape, s.dtype) for s in specs])
    flat = [pytree.flatten(y) for y in ys]
    tree = flat[0][1]
    for leaves, t in flat[1:]:
        if t != tree:
            raise ValueError("loop_func returned ys of different structures at different "
                             "steps")
    columns = zip(*[[_as_tensor(x, "y") for x in leaves] for leaves, _ in flat])
    return pytree.unflatten(tree, [ops.stack(list(c), 0) for c in columns])


def _step_shapes(loop_func, carry, xs):
    """The structure and specs of one step's y, traced into a scratch function."""
    from .state import compiler_lock
    from .trace import Trace
    with compiler_lock, Trace("scan_step") as tr:
        leaves = [tr.add_argument(s) for s in carry.specs]
        x = tr.add_argument(TensorSpec(xs.shape[1:], xs.dtype))
        _, y = _pair(loop_func(carry.value(leaves), x))
        leaves, tree = pytree.flatten(y)
        return tree, [_as_tensor(v, "y")._spec for v in leaves]


def _xs_leaves(xs, steps):
    """(the Tensors to index at each step, the structure of one x)."""
    from . import ops
    if isinstance(xs, Tensor):
        return [xs], ("leaf",)
    flat = [pytree.flatten(x) for x in xs]
    tree = flat[0][1]
    if any(t != tree for _, t in flat):
        raise ValueError("the elements of xs must all have the same structure")
    columns = list(zip(*[[_as_tensor(v, "xs element") for v in leaves] for leaves, _ in flat]))
    for column in columns:
        if any(c._spec != column[0]._spec for c in column):
            raise ValueError("the elements of xs must all have the same shapes and dtypes, "
                             f"got {_fmt(column[0]._spec)} and others")
    return [ops.stack(list(c), 0) for c in columns], tree


def traced_scan(trace, loop_func, carry: Carry, xs, steps, where, reverse=False):
    """One scf.for over the steps: each x read at the step's position (ms.dynamic_index),
    each y written there into a stack carried by the loop (ms.dynamic_update_index). The
    position is the index, or steps - 1 - index in reverse."""
    from . import ops
    from .dispatch import call
    has_rows = is_dynamic(steps) or steps > 0
    xs_leaves, x_tree = ([], None) if xs is None or not has_rows else _xs_leaves(xs, steps)
    # a trip count known only at run time (a dynamic sequence length) is xs' row count
    trips = (call("ms.dim_size", (xs_leaves[0],), {"axis": (0,), "dtype": dt.int64})
             if is_dynamic(steps) else steps)
    found = {}

    def step(region, i, leaves):
        position = (trips - 1) - i if reverse else i
        found["position"] = region.value_of(position)
        if xs is None:
            x = None
        elif has_rows:
            x = pytree.unflatten(x_tree, [call("ms.dynamic_index", (v, position))
                                          for v in xs_leaves])
        else:  # a Tensor xs of no rows: the body never runs, any x of the right type will do
            x = ops.zeros(xs.shape[1:], xs.dtype)
        new, y = _pair(loop_func(carry.value(leaves), x))
        y_leaves, found["tree"] = pytree.flatten(y)
        ys = [_as_tensor(v, "y") for v in y_leaves]
        found["specs"] = [t._spec for t in ys]
        return carry.check("loop_func", new), ys
    op, ys, _ = traced_for(trace, "Scan", (0, trips, dt.int64), step, carry, where)
    n = len(carry.specs)
    if has_rows and ys:
        op = _stack_ys(trace, op, ys, found["position"], found["specs"], steps, where,
                       carry.tensors + xs_leaves)
    results = list(op.results)
    final = carry.value(_traced_leaves(trace, results[:n], carry.specs))
    if has_rows:
        stacked = _traced_leaves(trace, results[n:], [TensorSpec((steps,) + s.shape, s.dtype)
                                                      for s in found["specs"]])
    else:
        stacked = [ops.zeros((0,) + s.shape, s.dtype) for s in found["specs"]]
    if isinstance(xs, Tensor):
        return final, pytree.unflatten(found["tree"], stacked)
    return final, [pytree.unflatten(found["tree"], [leaf[t] for leaf in stacked])
                   for t in range(steps)]


def _stack_ys(trace, op, ys, index, specs, steps, where, candidates=()):
    """The loop again, with a (steps, ...) carry per leaf of y, written at the index (its
    zeros take their dynamic sizes from one of `candidates`, Tensors above the loop)."""
    from mlir import ir
    from ..dialects.builders import build_op
    from ..dialects.ops.control import extend_yield, rebuild_for, zeros
    stack_specs = [TensorSpec((steps,) + s.shape, s.dtype) for s in specs]
    sources = [_sizes_source(trace, s.shape, candidates) for s in stack_specs]
    with trace.context, _loc(trace, where) as loc, ir.InsertionPoint(op):
        inits = [zeros(s, loc, sizes_from=src) for s, src in zip(stack_specs, sources)]
    n = len(list(op.results))
    # A y that is a region argument (a carry) becomes the new loop's argument.
    old_args = list(op.body.arguments)
    positions = [next((k for k, a in enumerate(old_args) if a == y), None) for y in ys]
    # the old loop's arguments go away with it: their named sizes move to the new ones
    # (a stale entry, keyed by a freed value, could name a later value's sizes)
    sym_specs = trace.root.sym_specs
    moved = [sym_specs.pop(a, None) for a in old_args]
    op = rebuild_for(op, inits)
    body = op.body
    for a, spec in zip(body.arguments, moved):
        if spec is not None:
            sym_specs[a] = spec
    ys = [y if k is None else body.arguments[k] for y, k in zip(ys, positions)]
    term = list(body.operations)[-1]
    args = list(body.arguments)[1 + n:]
    with trace.context, _loc(trace, where) as loc, ir.InsertionPoint(term):
        updated = [build_op("ms.dynamic_update_index", [a, y, index], loc=loc).result
                   for a, y in zip(args, ys)]
    extend_yield(body, updated)
    return op


def _sizes_source(trace, shape, candidates):
    """For zeros of `shape` made before a loop: (a value defined above it, the axis of that
    value holding each dynamic size, -1 for a static one), or None for a static shape. The
    value is the first of `candidates` (the loop's initial carries and xs) holding every
    dynamic size, else the argument whose dimensions they are (Trace.size_source):
    ms.broadcast_like reads them from one tensor."""
    from ..dialects.symdim import DynamicDimError
    if not any(is_dynamic(d) for d in shape):
        return None
    for t in candidates:
        axes = [next((i for i, e in enumerate(t.shape) if e == d), None) if is_dynamic(d)
                else -1 for d in shape]
        if None not in axes:
            return trace.value_of(t), tuple(axes)
    found = [trace.size_source(d) if is_dynamic(d) else None for d in shape]
    tensors = {id(f[0]): f[0] for f in found if f is not None}
    if len(tensors) != 1:
        raise DynamicDimError(f"the dynamic sizes of {shape} come from different tensors")
    like, = tensors.values()
    return trace.value_of(like), tuple(-1 if f is None else f[1] for f in found)
