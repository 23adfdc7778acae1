"""MindSpore's frontend graph and graph split (`mindspore/common/api.py` 2.7.1, private names
`_frontend_compile` and `_graph_split`), over mscc's tracing and its one pipeline.

    graph = _frontend_compile(func)(Tensor(1.0), Tensor(2.0))
    graph.print()                  # the ms IR after the front-end passes
    fragments = _graph_split(graph)
    result = run_fragments(fragments, Tensor(1.0), Tensor(2.0))

Marking. A Primitive object (pyfront/primitives.py) with `add_prim_attr("split_op", True)`
(and `add_prim_attr("func_id", key)`) called while `_frontend_compile` traces gets its op
marked in the IR: the ms op that defines the Primitive's result carries the discardable
attributes `ms.split_op = true`, `ms.func_id = "<key>"` and `ms.split_index` (the call's
position in the graph's side table, which holds the Primitive object and its non-Tensor
arguments). The seam is Primitive.__call__, wrapped once, on the first `_frontend_compile`
(primitives.py is not edited): the wrapper does nothing but call the original unless this
thread is recording a frontend graph and the call belongs to that graph's trace, so marked
Primitives behave as before everywhere else (eagerly, under ms.jit, in grad callees). Only a
Primitive computed by one ms op whose data operands are its traced Tensor arguments can be
marked (MindSpore's split op is one CNode); a composition (BiasAdd, Argmax to int64) is a
ValueError at the call.

Passes. The graph is the traced function after the `ms` stage and the `ms-opt` stage's
passes except ms-fuse (const-input-to-attr, implicit-cast, verify, autodiff, inline,
canonicalize: front_end_passes()), so the split sees single ops, never a fused region holding
a marked op. The passes keep discardable attributes, and CSE never merges a marked op (its
split index differs from every other op's).

Fragments, in execution order (MindSpore's C++ side was not available to copy its
conventions from; these are mscc's): each maximal run of unmarked ops is a compiled graph
fragment (its own func.func, compiled through the jit pipeline on first call); each marked
op is a Python fragment that runs the Primitive object itself, eagerly. Conventions:
- id(): the fragment's position in the list (0, 1, ...).
- is_graph(): True for compiled fragments, False for split-op (Python) fragments.
- py_key(): the split op's func_id (the Primitive's name if it had none); "" for graphs.
- args_list(): indexes into the running value list: the function's inputs first (its Tensor
  arguments in argument order, then the Parameters it reads but was not passed), then each
  fragment's outputs, appended in fragment order (outputs_list() gives a fragment's own).
- calling a fragment with the values its args_list names returns a tuple of its outputs.
Constants never cross a split: a graph fragment gets its own copy, a Python fragment the
value. A marked op whose result nothing uses was removed by ms-canonicalize and makes no
fragment. A Python fragment receives the Primitive's own arguments: casts that implicit-cast
put before the marked op are looked through, and the Primitive casts again when it runs.
"""
from __future__ import annotations

import functools
import inspect
import threading

import numpy as np

from . import pytree
from .context import default_target
from .jit import JitFunction
from .location import LocatedValueError, located, user_location
from .state import active_traces, compiler_lock
from .tensor import Parameter, Tensor

SPLIT_ATTR = "ms.split_op"
FUNC_ID_ATTR = "ms.func_id"
INDEX_ATTR = "ms.split_index"
# The front-end passes a frontend graph has been through (see the module doc).
FRONT_END_STAGES = ("ms", "ms-opt")
SKIPPED_PASSES = ("ms-fuse",)


def front_end_passes() -> list:
    """The pipeline's own `ms` and `ms-opt` steps (passes/pipeline.py), ms-fuse left out."""
    from ..passes.pipeline import TARGET_STAGES
    stages = dict(TARGET_STAGES["cpu"])
    return [s for name in FRONT_END_STAGES for s in stages[name] if s not in SKIPPED_PASSES]


# ---------------------------------------------------------------- marking split ops

class _Recording:
    """One _frontend_compile trace in progress on this thread: the depth of its Trace on the
    trace stack (so ops of other traces, such as grad callees, are not marked) and the split
    calls recorded so far (the graph's side table)."""

    def __init__(self):
        self.depth = len(active_traces)
        self.calls: list[SplitCall] = []

    def owns(self, trace) -> bool:
        return len(active_traces) > self.depth and trace.root is active_traces[self.depth]


class _Recordings(threading.local):
    def __init__(self):
        self.stack: list[_Recording] = []


_recordings = _Recordings()
_original_call: list = []  # Primitive.__call__ before the wrapper, once installed


def _install_hook():
    """Wrap Primitive.__call__ once (see the module doc for why this is the seam)."""
    if _original_call:
        return
    from .primitives import Primitive
    original = Primitive.__call__

    @functools.wraps(original)
    def __call__(self, *args, **kwargs):
        stack = _recordings.stack
        if stack and active_traces.items and _is_split(self):
            trace = active_traces[-1]
            if stack[-1].owns(trace):
                return _marked_call(stack[-1], trace, self, original, args, kwargs)
        return original(self, *args, **kwargs)

    _original_call.append(original)
    Primitive.__call__ = __call__


def _is_split(prim) -> bool:
    value = prim.attrs.get("split_op", False)
    return isinstance(value, (bool, np.bool_, int)) and bool(value)


def _marked_call(recording, trace, prim, original, args, kwargs):
    """Trace the Primitive as usual, then mark the op that defines its result."""
    where = user_location()
    before = _last_op(trace.block)
    result = original(prim, *args, **kwargs)
    call = SplitCall(prim, args, kwargs, where, len(recording.calls))
    op = call.bind(trace, before, result)
    from mlir import ir
    with op.context:
        op.attributes[SPLIT_ATTR] = ir.BoolAttr.get(True)
        op.attributes[FUNC_ID_ATTR] = ir.StringAttr.get(call.func_id)
        op.attributes[INDEX_ATTR] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64),
                                                       call.index)
    recording.calls.append(call)
    return result


def _last_op(block):
    ops = block.operations
    n = len(ops)
    return ops[n - 1] if n else None


class SplitCall:
    """One call of a split-op Primitive: the Primitive object (the Python fragment runs it),
    its arguments as pytree leaves, which leaves are traced Tensors and which data operand of
    the marked op each is, and which op result each returned Tensor is."""

    def __init__(self, prim, args, kwargs, where, index):
        self.prim, self.where, self.index = prim, where, index
        self.func_id = str(prim.attrs.get("func_id", prim.name))
        self.leaves, self.treedef = pytree.flatten((tuple(args), dict(kwargs)))
        self.operand_of: dict[int, int] = {}  # leaf position -> data operand index
        self.results: list[int] = []          # op result index of each returned leaf
        self.out_tree = None

    def error(self, message, where=None) -> LocatedValueError:
        where = where or self.where
        return LocatedValueError(located(
            f"For '{self.prim.name}' (split_op, func_id '{self.func_id}'), {message}", where),
            where)

    def bind(self, trace, before, result):
        """The op that defines `result`, checked: one ms op made by this call, whose data
        operands hold every traced Tensor argument."""
        from mlir import ir
        outs, self.out_tree = pytree.flatten(result)
        if not outs or not all(isinstance(t, Tensor) and t._trace is trace for t in outs):
            raise self.error("its result is not a Tensor computed by an ms op, so it "
                             "cannot be split")
        op = outs[0]._value.owner
        made_here = (not isinstance(op, ir.Block) and op.name.startswith("ms.")
                     and (before is None or before.is_before_in_block(op)))
        if made_here:
            results = list(op.results)
            self.results = [next((i for i, r in enumerate(results) if r == t._value), -1)
                            for t in outs]
        if not made_here or -1 in self.results:
            raise self.error("its call does not make one ms op that defines its result; "
                             "only a Primitive computed by one ms op can be split")
        if trace is trace.root:  # (in a region the split refuses it: see _check_regions)
            self._bind_operands(trace, op)
        return op

    def _bind_operands(self, trace, op):
        data = _data_operands(op)
        for pos, leaf in enumerate(self.leaves):
            if not isinstance(leaf, Tensor) or (leaf._trace is None
                                                and not isinstance(leaf, Parameter)):
                continue  # a Python value or a concrete Tensor: passed as it is
            value = trace.value_of(leaf)
            k = next((i for i, v in enumerate(data) if v == value), None)
            if k is None:
                raise self.error(f"its argument #{pos} is not an operand of the '{op.name}' "
                                 "op it traces to (the Primitive is a composition of several "
                                 "ms ops); only a Primitive computed by one ms op can be split")
            self.operand_of[pos] = k


def _data_operands(op) -> list:
    from ..dialects.builders import data_values, operand_groups
    from ..dialects.registry import lookup
    opdef = lookup(op.name)
    return data_values(opdef, operand_groups(opdef, op))


# ---------------------------------------------------------------- the frontend graph

class FrontendGraph:
    """What `_frontend_compile(fn)(*args)` returns: the traced function as ms IR after the
    front-end passes (`passes`: front_end_passes(), ms-fuse left out), with the side table of
    its split calls. `print()` shows it, as MindSpore's dump_func_graph shows MindIR."""

    def __init__(self, trace, out_tree, calls, target):
        self.module = trace.module
        self.name = trace.name
        self.out_tree = out_tree
        self.calls = calls
        self.target = target
        self.n_inputs = len(trace.block.arguments)
        self.parameters = [p for p in trace.param_order if id(p) not in trace.explicit_params]
        self.assigned = [p.name for p in trace.assigned_params]
        self.passes = front_end_passes()

    def print(self, debug_info: bool = False) -> str:
        """Print the IR (with `debug_info`, the user's file:line of every op) and return it."""
        text = self.text(debug_info)
        print(text)
        return text

    def text(self, debug_info: bool = False) -> str:
        with compiler_lock:
            return self.module.operation.get_asm(enable_debug_info=debug_info)

    def __str__(self):
        return self.text()

    def __repr__(self):
        return f"<frontend graph '{self.name}': {len(self.calls)} split call(s)>"


def frontend_compile(fn):
    """MindSpore's `_frontend_compile(fn)`: a function that traces `fn` for its arguments
    (as ms.jit would, Tensor if/while/for converted) and returns the FrontendGraph. `fn` may
    be an ms.jit function already."""
    jf = fn if isinstance(fn, JitFunction) else JitFunction(fn)

    @functools.wraps(jf.fn)
    def compile_graph(*args, **kwargs):
        if kwargs:
            bound = inspect.signature(jf.fn).bind(*args, **kwargs)
            bound.apply_defaults()
            args = bound.args
        return _trace_graph(jf, args)
    return compile_graph


def _trace_graph(jf, args) -> FrontendGraph:
    from ..passes.pipeline import parse_step, run_steps
    _install_hook()
    with compiler_lock:
        recording = _Recording()
        _recordings.stack.append(recording)
        try:
            trace, out_tree, _, _ = jf.trace(args)
        finally:
            _recordings.stack.pop()
        run_steps(trace.module, [parse_step(s) for s in front_end_passes()], stage="ms-opt")
    return FrontendGraph(trace, out_tree, recording.calls, jf.target or default_target())


# ---------------------------------------------------------------- the split

class _GraphFragment:
    """A fragment of a split graph (MindSpore's _GraphFragment); see the module doc."""

    def __init__(self, index, args, outs):
        self._id, self._args, self._outs = index, list(args), list(outs)

    def id(self) -> int:  # noqa: A003  (MindSpore's name)
        return self._id

    def args_list(self) -> list:
        return list(self._args)

    def outputs_list(self) -> list:
        """Where this fragment's outputs go in the running value list."""
        return list(self._outs)


class _CompiledFragment(_GraphFragment):
    """A run of unmarked ops as its own ms function, compiled (on first call) by the same
    compile_module as ms.jit, for the graph's target."""

    def __init__(self, index, args, outs, module, name, target):
        super().__init__(index, args, outs)
        self.module, self.name, self.target = module, name, target
        self._exe = None

    def is_graph(self) -> bool:
        return True

    def py_key(self) -> str:
        return ""

    def print(self) -> str:
        with compiler_lock:
            text = str(self.module)
        print(text)
        return text

    def __call__(self, *values):
        from ..passes.compiler import clone_module
        from .trace import compile_traced
        if self._exe is None:
            with compiler_lock:
                if self._exe is None:
                    self._exe = compile_traced(clone_module(self.module), self.name,
                                               self.target)
        exe = self._exe
        if self.target == "cuda":
            arrays = [v._device if v._device is not None else v.asnumpy()
                      for v in map(_as_tensor, values)]
            return tuple(Tensor._wrap_device(o, s) for o, s in zip(exe(*arrays), exe.out_specs))
        return tuple(Tensor._wrap(o) for o in exe(*[_as_tensor(v).asnumpy() for v in values]))

    def __repr__(self):
        return f"<graph fragment {self._id} @{self.name} args={self._args}>"


class _PythonFragment(_GraphFragment):
    """A split op: calls the Primitive object recorded at trace time, eagerly, on its
    arguments (static ones as traced, Tensors from the running value list)."""

    def __init__(self, index, args, outs, call, statics):
        super().__init__(index, args, outs)
        self.call, self._statics = call, statics  # leaf position -> value, for non-inputs

    def is_graph(self) -> bool:
        return False

    def py_key(self) -> str:
        return self.call.func_id

    def __call__(self, *values):
        it = iter(values)
        leaves = [self._statics[i] if i in self._statics else next(it)
                  for i in range(len(self.call.leaves))]
        args, kwargs = pytree.unflatten(self.call.treedef, leaves)
        outs, _ = pytree.flatten(self.call.prim(*args, **kwargs))
        if len(outs) != len(self._outs):
            raise self.call.error(f"the Python fragment returned {len(outs)} value(s); the "
                                  f"graph expects {len(self._outs)}")
        return tuple(outs)

    def __repr__(self):
        return f"<python fragment {self._id} '{self.py_key()}' args={self._args}>"


class Fragments(list):
    """`_graph_split`'s result: the fragments in execution order (a list), with what running
    them needs: the graph (its inputs) and `outputs`, the function's results as indexes into
    the running value list (or constant Tensors)."""

    def __init__(self, fragments, graph, outputs):
        super().__init__(fragments)
        self.graph, self.outputs = graph, outputs


def _as_tensor(v):
    return v if isinstance(v, Tensor) else Tensor(np.asarray(v))


def graph_split(graph) -> Fragments:
    """MindSpore's `_graph_split(graph)`: the fragments of a FrontendGraph (module doc)."""
    if not isinstance(graph, FrontendGraph):
        raise TypeError(f"_graph_split expects the graph that _frontend_compile(fn)(*args) "
                        f"returns, got {type(graph).__name__}")
    if graph.assigned:
        raise ValueError(f"_graph_split: '{graph.name}' assigns the Parameter(s) "
                         f"{', '.join(graph.assigned)}; graphs that write Parameters cannot "
                         "be split")
    with compiler_lock:
        return _Splitter(graph).fragments()


class _Splitter:
    """The split of one FrontendGraph's entry function: which top-level ops are live, how
    they group into fragments, what each fragment reads and which of its values later
    fragments (or the return) read."""

    def __init__(self, graph):
        from ..dialects.ir_helpers import functions_by_name
        self.graph = graph
        self.fn = functions_by_name(graph.module)[graph.name]
        _check_regions(self.fn, graph)
        self.block = self.fn.regions[0].blocks[0]
        ops = list(self.block.operations)
        self.body, self.ret = ops[:-1], ops[-1]
        self.constants = {op.result: op for op in self.body if op.name == "ms.constant"}
        self.top = set(self.block.arguments) | {r for op in self.body for r in op.results}
        self.python = {}  # body index of a marked op -> (call, input values, statics)
        self.reads = {i: self._reads(i, op) for i, op in enumerate(self.body)
                      if op.name != "ms.constant"}

    def _reads(self, i, op) -> list:
        """The top-level values op `i` reads (those of its regions' ops too), in order; for
        a marked op, its Primitive's Tensor arguments (implicit casts looked through)."""
        from mlir import ir
        if SPLIT_ATTR not in op.attributes:
            found = {}

            def visit(inner):
                for v in inner.operands:
                    if v in self.top:
                        found.setdefault(v)
                return ir.WalkResult.ADVANCE
            op.operation.walk(visit)
            return list(found)
        call = self.graph.calls[ir.IntegerAttr(op.attributes[INDEX_ATTR]).value]
        data, inputs, statics = _data_operands(op), [], {}
        for pos, leaf in enumerate(call.leaves):
            k = call.operand_of.get(pos)
            v = None if k is None else _through_implicit_cast(data[k])
            if v is None:
                statics[pos] = leaf
            elif v in self.constants:
                statics[pos] = _constant_tensor(self.constants[v])
            else:
                inputs.append(v)
        self.python[i] = (call, inputs, statics)
        return inputs

    def _units(self) -> list:
        """Live ops (constants aside) grouped: [is_graph, [body indexes]] in order. A marked
        op is live always, another op when something live or the return reads it."""
        needed, live = set(self.ret.operands), set()
        for i in reversed(range(len(self.body))):
            op = self.body[i]
            if i in self.reads and (i in self.python or any(r in needed for r in op.results)):
                live.add(i)
                needed.update(self.reads[i])
        units = []
        for i in sorted(live):
            if i not in self.python and units and units[-1][0]:
                units[-1][1].append(i)
            else:
                units.append([i not in self.python, [i]])
        return units

    def fragments(self) -> Fragments:
        units = self._units()
        after, read_later = [], set(self.ret.operands)  # what units after each one read
        for _, members in reversed(units):
            after.append(set(read_later))
            for i in members:
                read_later.update(self.reads[i])
        after.reverse()
        index = {v: n for n, v in enumerate(self.block.arguments)}  # value -> position
        count, fragments = len(index), []
        for n, ((is_graph, members), later) in enumerate(zip(units, after)):
            make = self._graph_fragment if is_graph else self._python_fragment
            fragment, out_values = make(n, members, later, index, count)
            for v in out_values:
                index.setdefault(v, count)
                count += 1
            fragments.append(fragment)
        outputs = [index[v] if v in index else _constant_tensor(self.constants[v])
                   for v in self.ret.operands]
        return Fragments(fragments, self.graph, outputs)

    def _graph_fragment(self, n, members, later, index, count):
        """A compiled fragment of ops `members`: its inputs are what they read from before
        (constants copied in), its outputs what is read `later`."""
        ops = [self.body[i] for i in members]
        reads = list(dict.fromkeys(v for i in members for v in self.reads[i]))
        inside = {r for op in ops for r in op.results}
        inputs = [v for v in reads if v not in inside and v not in self.constants]
        clones = [self.constants[v] for v in reads if v in self.constants]
        outputs = [r for op in ops for r in op.results if r in later]
        name = f"{self.graph.name}_fragment{n}"
        module = self._fragment_module(name, ops, inputs, clones, outputs)
        fragment = _CompiledFragment(n, [index[v] for v in inputs],
                                     range(count, count + len(outputs)), module, name,
                                     self.graph.target)
        return fragment, outputs

    def _python_fragment(self, n, members, later, index, count):
        """The split op `members[0]`: its inputs are its Primitive's Tensor arguments, its
        outputs the op results the Primitive returns (in the order it returns them)."""
        op = self.body[members[0]]
        call, inputs, statics = self.python[members[0]]
        outputs = [op.results[k] for k in call.results]
        missing = [r for r in op.results if r in later and r not in outputs]
        if missing:
            raise call.error(f"a result of its op '{op.name}' that the Primitive does not "
                             "return is used later; it cannot be split")
        fragment = _PythonFragment(n, [index[v] for v in inputs],
                                   range(count, count + len(outputs)), call, statics)
        return fragment, outputs

    def _fragment_module(self, name, ops, inputs, clones, outputs):
        """A module holding func @name(inputs) -> outputs with copies of `clones` and `ops`
        (and of the graph's other functions, which calls may name), built with the bindings."""
        from mlir import ir
        from mlir.dialects import func
        from ..dialects.ir_helpers import remap_operands, symbol_name
        with self.fn.context, self.fn.location:
            module = ir.Module.create()
            with ir.InsertionPoint(module.body):
                fn = func.FuncOp(name, ([v.type for v in inputs], [v.type for v in outputs]))
                for other in self.graph.module.body.operations:
                    if symbol_name(other) != self.graph.name:
                        other.operation.clone()
            block = fn.add_entry_block()
            mapping = dict(zip(inputs, block.arguments))
            with ir.InsertionPoint(block):
                for op in clones + ops:
                    copy = op.operation.clone()
                    remap_operands(copy, mapping)
                    mapping.update(zip(op.results, copy.results))
                func.ReturnOp([mapping[v] for v in outputs])
        return module


def _through_implicit_cast(v):
    """The value an ms.cast made by ms-implicit-cast (it carries a reason) casts, else v."""
    from mlir import ir
    from ..passes.implicit_cast import REASON_ATTR
    owner = v.owner
    if (not isinstance(owner, ir.Block) and owner.name == "ms.cast"
            and REASON_ATTR in owner.attributes):
        return owner.operands[0]
    return v


def _constant_tensor(op) -> Tensor:
    from ..dialects.builders import dense_to_numpy
    return Tensor(dense_to_numpy(op.attributes["value"]))


def _check_regions(fn, graph):
    """A marked op inside a loop or conditional region cannot be split: a ValueError naming
    the op, the region's op and the user's line."""
    from mlir import ir
    found = []

    def visit(op):
        if SPLIT_ATTR in op.attributes and op.parent.name != "func.func":
            index = ir.IntegerAttr(op.attributes[INDEX_ATTR]).value
            found.append((op.name, op.parent.name, index))
        return ir.WalkResult.ADVANCE
    fn.operation.walk(visit)
    if found:
        name, region, index = found[0]
        raise graph.calls[index].error(
            f"its op '{name}' is inside the region of '{region}' (a loop or conditional); "
            "_graph_split splits only at ops of the function's own body")


def run_fragments(fragments, *args):
    """Run split fragments in order on the function's arguments (as passed to the graph's
    _frontend_compile call): each fragment gets the values its args_list names and appends
    its outputs; returns the function's result, structured as the function returns it."""
    if not isinstance(fragments, Fragments):
        raise TypeError(f"run_fragments expects what _graph_split returns, got "
                        f"{type(fragments).__name__}")
    graph = fragments.graph
    leaves, _ = pytree.flatten(args)
    values = [_as_tensor(x) for x in leaves if isinstance(x, (Tensor, np.ndarray))]
    values += graph.parameters
    if len(values) != graph.n_inputs:
        raise TypeError(f"'{graph.name}' was traced with {graph.n_inputs - len(graph.parameters)} "
                        f"Tensor argument(s), got {len(values) - len(graph.parameters)}")
    for fragment in fragments:
        values.extend(fragment(*[values[i] for i in fragment.args_list()]))
    results = [values[r] if isinstance(r, int) else r for r in fragments.outputs]
    if graph.out_tree == ("leaf",):
        return results[0]
    return pytree.unflatten(graph.out_tree, results)
