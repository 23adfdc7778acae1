"""Hooks in PYNATIVE_MODE: ops.HookBackward and a Cell's forward and backward hooks, with
MindSpore 2.x's semantics, and the segmented backward that lets a PyNative gradient call them.

MindSpore's rules (its API pages for ops.HookBackward and nn.Cell.register_forward_pre_hook /
register_forward_hook / register_backward_hook, and the "Hook Programming" tutorial):
- `HookBackward(hook_fn, cell_id="")(*inputs)` returns its inputs unchanged; in the backward
  `hook_fn(grads)` is called with the tuple of the gradients flowing into those inputs, and
  what it returns (a tuple, or a Tensor for one input) replaces them; None keeps them. A
  non-empty cell_id is deprecated there and disables the hook (a warning says so).
- `register_forward_pre_hook(hook_fn, with_kwargs=False)`: `hook_fn(cell, args)` runs before
  construct and may return new args (a single value is wrapped in a tuple); with with_kwargs
  it is `hook_fn(cell, args, kwargs)` returning None or `(args, kwargs)`.
- `register_forward_hook(hook_fn, with_kwargs=False)`: `hook_fn(cell, args, output)` (or
  `(cell, args, kwargs, output)`) runs after construct and may return a new output.
- `register_backward_hook(hook_fn)`: `hook_fn(cell, grad_input, grad_output)`, where
  grad_input holds the gradients w.r.t. the Cell's Tensor inputs (MindSpore: "the Cell's
  backward output") and grad_output those w.r.t. its outputs ("the gradient passed to the
  Cell"), both tuples; a returned tuple replaces grad_input. The boundary is construct itself:
  ops added by forward (pre-)hooks lie outside it ("they do not affect the gradient capture
  range"), and the gradients of the Cell's own Parameters are not changed by a replacement.
- Each returns a handle whose `remove()` removes the hook (removing twice is harmless); the
  hook function receives the Cell object itself (MindSpore 2.3+; older versions passed an id).

Modes: hooks are Python calls made at run time, so they run in PYNATIVE_MODE outside jit. A
HookBackward, or a call of a Cell that has hooks, met while a function is compiled (ms.jit,
GRAPH_MODE, a Cell that is always compiled) raises an error that says so instead of dropping
the hook (MindSpore 2.0-2.2 ignore them in graph mode; ops.InsertGradientOf is the compiled
way to transform a gradient), and registering a hook while compiling is an error, as
MindSpore's `jit_forbidden_register` makes it. The forward of a Cell with bprop or recompute()
is compiled for its gradient, so hooked Cells inside one raise there too; and a gradient of a
gradient of a function with hooks is refused (see segmented_gradient).

The segmented backward: a PyNative gradient replays its recording under jit as one compiled
forward and backward (pynative.py), but compiled code cannot call a Python hook. A recording
with hook nodes is cut at them; each run of ops between two hooks is a segment, whose
vector-Jacobian product is GradFunction(sens_param=True) of a replay of just that segment,
taking the values it reads from before it as arguments; it is compiled once per recording
signature. The backward runs the segments in reverse order in Python, between them calling
the hooks with the cotangents and substituting what they return. Every value a segment reads
already exists from the eager run, so nothing is computed twice except inside a segment.
"""
from __future__ import annotations

import itertools
import warnings
from collections import OrderedDict

import numpy as np

from . import pytree
from .context import GRAPH_MODE, get_context
from .location import located, located_error, user_location
from .primitives import Primitive
from .state import active_tapes, active_traces
from .tensor import Tensor

_KINDS = {"forward_pre": "register_forward_pre_hook", "forward": "register_forward_hook",
          "backward": "register_backward_hook"}
_handle_ids = itertools.count()


def _runtime_error(message):
    return RuntimeError(located(message, user_location()))


# ------------------------------------------------------------------ handles and registries

class HookHandle:
    """What the register_*_hook methods return: `remove()` unregisters the hook."""

    def __init__(self, table):
        self.handle_id = next(_handle_ids)
        self._table = table

    def remove(self):
        self._table.pop(self.handle_id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


class CellHooks:
    """A Cell's hooks per kind, in registration order: handle id -> (hook_fn, with_kwargs).
    False when all were removed, so Cell.__call__ takes its usual path again."""

    __slots__ = tuple(_KINDS)

    def __init__(self):
        for kind in _KINDS:
            setattr(self, kind, OrderedDict())

    def __bool__(self):
        return bool(self.forward_pre or self.forward or self.backward)


def register(cell, kind, hook_fn, with_kwargs=False):
    """Cell.register_<kind>_hook: add `hook_fn` to the Cell's table of that kind."""
    api = f"Cell.{_KINDS[kind]}"
    if not callable(hook_fn):
        raise TypeError(f"For '{api}', hook_fn must be a Python function, got "
                        f"{type(hook_fn).__name__}")
    if not isinstance(with_kwargs, bool):
        raise TypeError(f"For '{api}', with_kwargs must be a bool, got "
                        f"{type(with_kwargs).__name__}")
    if active_traces.items:
        raise _runtime_error(f"For '{api}', hooks cannot be registered while a function is "
                             "being compiled (ms.jit, GRAPH_MODE): register them before "
                             "calling the Cell, in PYNATIVE_MODE")
    hooks = cell.__dict__.get("_hooks")
    if hooks is None:
        hooks = CellHooks()
        object.__setattr__(cell, "_hooks", hooks)
    table = getattr(hooks, kind)
    handle = HookHandle(table)
    table[handle.handle_id] = (hook_fn, with_kwargs)
    return handle


# ------------------------------------------------------------------ calling a hooked Cell

def call_hooked(cell, args):
    """Cell.__call__ of a Cell with hooks (PYNATIVE_MODE): the forward pre-hooks, construct
    between the two boundary nodes of its backward hooks (when a gradient is recording), then
    the forward hooks."""
    hooks = cell._hooks
    _refuse_when_compiled(cell, hooks)
    kwargs = {}
    for hook_fn, with_kwargs in list(hooks.forward_pre.values()):
        args, kwargs = _run_pre_hook(cell, hook_fn, with_kwargs, args, kwargs)
    if kwargs:
        raise TypeError(f"For 'nn.{type(cell).__name__}', a forward pre-hook returned keyword "
                        f"arguments {sorted(kwargs)}: mscc Cells take positional arguments "
                        "only")
    call = _CellCall(cell) if hooks.backward and active_tapes.items else None
    if call is not None:
        args = call.enter(args)
    output = cell._run(*args)
    if call is not None:
        output = call.exit(output)
    for hook_fn, with_kwargs in list(hooks.forward.values()):
        ret = hook_fn(cell, args, kwargs, output) if with_kwargs else hook_fn(cell, args, output)
        if ret is not None:
            output = ret
    return output


def _refuse_when_compiled(cell, hooks):
    """Hooks are run-time Python calls: a compiled Cell would run them once, while tracing."""
    if not (active_traces.items or cell.always_compiled or get_context("mode") == GRAPH_MODE):
        return
    kinds = " and ".join(api for kind, api in _KINDS.items() if getattr(hooks, kind))
    raise _runtime_error(
        f"For 'nn.{type(cell).__name__}', the hooks registered with {kinds} are Python "
        "functions called while the Cell runs, so they run only in PYNATIVE_MODE outside "
        "ms.jit: here the Cell is compiled (GRAPH_MODE, ms.jit, a Cell that is always "
        "compiled, or inside a Cell with bprop or recompute(), whose forward is compiled for "
        "its gradient) and compiled code cannot call them. Remove them first (handle.remove()), "
        "or call the Cell in PYNATIVE_MODE; ops.InsertGradientOf transforms a gradient in "
        "compiled code")


def _run_pre_hook(cell, hook_fn, with_kwargs, args, kwargs):
    if not with_kwargs:
        ret = hook_fn(cell, args)
        if ret is None:
            return args, kwargs
        return (ret if isinstance(ret, tuple) else (ret,)), kwargs
    ret = hook_fn(cell, args, kwargs)
    if ret is None:
        return args, kwargs
    if not (isinstance(ret, tuple) and len(ret) == 2):
        raise _runtime_error(f"For 'nn.{type(cell).__name__}', a forward pre-hook registered "
                             "with with_kwargs=True must return None or (args, kwargs), got "
                             f"{type(ret).__name__}")
    return tuple(ret[0]), dict(ret[1])


# ------------------------------------------------------------------ the hook nodes

def _record(node, tensors):
    """Record `node` (the identity on `tensors`, with a Python backward) on the innermost
    recording; returns the new Tensors (the same data) that later ops read instead."""
    aliases = [Tensor._make(t._spec, data=t._data, device=t._device) for t in tensors]
    if tensors:
        active_tapes[-1].record_hook(node, tensors, aliases)
    return aliases


class _TensorHook:
    """HookBackward's node: hook_fn gets the tuple of the gradients of its inputs."""
    kind = "HookBackward"

    def __init__(self, hook_fn):
        self.hook_fn = hook_fn

    def backward(self, grads):
        return _replacement(self.hook_fn(grads), grads, "HookBackward", "hook_fn")


class _CellCall:
    """One call of a Cell with backward hooks under a recording: an enter node on its Tensor
    inputs and an exit node on its Tensor outputs. The backward meets the exit first, which
    keeps grad_output for the enter node, which calls the hooks."""

    def __init__(self, cell):
        self.cell = cell
        self.grad_output = None
        self.outputs = []

    def enter(self, args):
        aliases = iter(_record(_CellBoundary(self, "enter"),
                               [a for a in args if isinstance(a, Tensor)]))
        return tuple(next(aliases) if isinstance(a, Tensor) else a for a in args)

    def exit(self, output):
        leaves, tree = pytree.flatten(output)
        self.outputs = _record(_CellBoundary(self, "exit"),
                               [x for x in leaves if isinstance(x, Tensor)])
        aliases = iter(self.outputs)
        return pytree.unflatten(tree, [next(aliases) if isinstance(x, Tensor) else x
                                       for x in leaves])


class _CellBoundary:
    def __init__(self, call, side):
        self.call, self.kind = call, f"Cell.{side}"

    def backward(self, grads):
        call = self.call
        if self.kind == "Cell.exit":
            call.grad_output = grads
            return grads
        cell = call.cell
        grad_output = call.grad_output
        if grad_output is None:  # its outputs got no gradient (a value it stored did)
            grad_output = tuple(_zeros(t) for t in call.outputs)
        table = cell._hooks.backward if cell._hooks is not None else {}
        for hook_fn, _ in list(table.values()):
            grads = _replacement(hook_fn(cell, grads, grad_output), grads,
                                 f"nn.{type(cell).__name__}", "the backward hook")
        return grads


def _replacement(ret, grads, owner, what):
    """The gradients a hook returned, checked against those it was given (None keeps them)."""
    if ret is None:
        return grads
    if isinstance(ret, (Tensor, np.ndarray)) and len(grads) == 1:
        ret = (ret,)
    if not isinstance(ret, (tuple, list)) or len(ret) != len(grads):
        got = (f"{len(ret)} values" if isinstance(ret, (tuple, list))
               else type(ret).__name__)
        raise located_error(ValueError, f"For '{owner}', {what} must return None or a tuple "
                            f"of {len(grads)} gradient(s), one per input; got {got}")
    out = []
    for i, (new, old) in enumerate(zip(ret, grads)):
        if isinstance(new, (np.ndarray, int, float)):
            new = Tensor(np.asarray(new, dtype=old.dtype.np))
        if not isinstance(new, Tensor):
            raise located_error(TypeError, f"For '{owner}', {what} returned a "
                                f"{type(new).__name__} as gradient #{i}; expected a Tensor")
        if new.shape != old.shape:
            raise located_error(ValueError, f"For '{owner}', {what} returned gradient #{i} of "
                                f"shape {new.shape} for a value of shape {old.shape}")
        if new.dtype is not old.dtype:
            from . import ops
            new = ops.cast(new, old.dtype)
        out.append(new)
    return tuple(out)


def _zeros(t):
    return Tensor._wrap(np.zeros(t.shape, t.dtype.np))


# ------------------------------------------------------------------ ops.HookBackward

_HOOK_BACKWARD_COMPILED = (
    "For 'HookBackward', hook_fn is a Python function called in the backward, which MindSpore "
    "supports only in PYNATIVE_MODE: under ms.jit or in GRAPH_MODE the backward is compiled "
    "and cannot call it. Call the function in PYNATIVE_MODE outside jit, or use "
    "ops.InsertGradientOf(fn), whose fn compiles")


class HookBackward(Primitive):
    """MindSpore's ops.HookBackward(hook_fn, cell_id=""): the identity on its inputs; in the
    backward of a PyNative gradient, `hook_fn(grads)` is called with the tuple of the
    gradients flowing into them and may return replacements (module doc)."""

    def __init__(self, hook_fn, cell_id=""):  # (Primitive's __init__ reads a table row)
        if not callable(hook_fn):
            raise TypeError(f"For 'HookBackward', hook_fn must be a Python function, got "
                            f"{type(hook_fn).__name__}")
        if not isinstance(cell_id, str):
            raise TypeError(f"For 'HookBackward', cell_id must be a str, got "
                            f"{type(cell_id).__name__}")
        self.name = "HookBackward"
        self.attrs = {}
        self.hook_fn = hook_fn
        self.add_prim_attr("cell_id", cell_id)
        if cell_id:
            warnings.warn("For 'HookBackward', the argument 'cell_id' is deprecated (MindSpore "
                          "will remove it); when it is set the hook function does not work, "
                          "as in MindSpore", stacklevel=2)

    def add_prim_attr(self, name, value):
        self.attrs[name] = value
        self.__dict__[name] = value
        return self

    def del_prim_attr(self, name):
        self.attrs.pop(name, None)
        self.__dict__.pop(name, None)
        return self

    def __call__(self, *inputs):
        if not inputs:
            raise located_error(TypeError, "For 'HookBackward', at least one input is needed")
        for i, x in enumerate(inputs):
            if not isinstance(x, Tensor):
                raise located_error(TypeError, f"For 'HookBackward', input #{i} must be a "
                                    f"Tensor, got {type(x).__name__}")
        if active_traces.items:
            raise _runtime_error(_HOOK_BACKWARD_COMPILED)
        outputs = inputs
        if active_tapes.items and not self.cell_id:
            outputs = _record(_TensorHook(self.hook_fn), list(inputs))
        return outputs[0] if len(outputs) == 1 else tuple(outputs)


# ------------------------------------------------------------------ the segmented backward

def segmented_gradient(pynative, tape, key, args, sens, outputs, output_refs, out_tree):
    """The gradient PyNativeGrad returns for a recording with hook nodes (module doc).
    `key` is the recording's cache key: its plan and compiled segments are reused."""
    gf = pynative.grad_fn
    if active_tapes.items:
        # An outer gradient is recording: it would see the segments' inputs as constants
        # (they come from this gradient's own eager run), not as functions of its arguments.
        raise _runtime_error(
            f"For '{gf.api_name}', a gradient of a function with hooks (HookBackward or a "
            "Cell's backward hook) is being differentiated again: mscc runs hooks between "
            "compiled segments of a first-order backward only; take the higher-order "
            "gradient without the hooks")
    plan = pynative._cache.get(key)
    if plan is None:
        plan = pynative._cache[key] = _Plan(tape)
        pynative.records += 1
    else:
        pynative.reuses += 1
    from_calls = [p.name for pid, (p, _) in tape.written.items() if pid not in plan.assigned]
    if from_calls:
        raise _runtime_error(
            f"For '{gf.api_name}', the function calls a compiled function that writes the "
            f"Parameter(s) {', '.join(from_calls)} and has hooks (HookBackward or a Cell's "
            "backward hook): mscc cannot replay that write between hooks; move the write out "
            "of the differentiated function or drop the hooks")
    run = _Backward(plan, tape, gf, args)
    try:
        run.seed(outputs, output_refs, sens)
        for step in reversed(plan.steps):
            if step[0] == "hook":
                run.hook(step[1])
            else:
                run.segment(step[1], step[2])
    finally:
        run.restore_parameters()
    return run.package(outputs, out_tree)


class _Plan:
    """What a recording's structure decides, shared by the recordings of one signature: the
    order of segments and hook nodes, which values each segment reads from before it, and the
    compiled vector-Jacobian products. A Parameter written by ops.assign during the run is
    versioned: a read after the write reads the assign's result (as the compiled whole-tape
    replay does), so each segment sees the value the eager run saw."""

    def __init__(self, tape):
        self.steps = []      # ("hook", node) and ("segment", start, end), in forward order
        self.reads = {}      # node -> its operand refs, Parameter reads resolved to versions
        self.inputs = {}     # segment start -> the refs it reads from before it, in order
        self.versions = {}   # segment start -> {written Parameter id: the ref of its value}
        self.has_call = {}   # segment start -> whether it calls a compiled function
        self.assigned = {}   # id(Parameter) written by ops.assign -> the Parameter
        self.assign_nodes = {}  # node -> the Parameter it writes
        self._vjps = {}
        params = {id(p): p for p in tape.params}
        version = {}
        start = None
        for index, (op_name, _, _, refs, _) in enumerate(tape.nodes):
            reads = tuple(version.get(r[1], r) if r[0] == "param" else r for r in refs)
            if op_name == "ms.assign":
                pid = refs[0][1]
                self.assigned[pid] = self.assign_nodes[index] = params[pid]
                reads = reads[1:]
            self.reads[index] = reads
            if index in (tape.hooks or ()):
                if start is not None:
                    self._close(start, index, tape)
                    start = None
                self.steps.append(("hook", index))
            elif start is None:
                start = index
                self.versions[start] = dict(version)
            if op_name == "ms.assign":
                version[pid] = ("node", index, 0)
        if start is not None:
            self._close(start, len(tape.nodes), tape)
        self.final_version = version
        for versions in self.versions.values():  # written later: the value before the write
            versions.update({pid: ("param", pid) for pid in self.assigned
                             if pid not in versions})

    def _close(self, start, end, tape):
        from .pynative import CALL
        seen = {}
        for index in range(start, end):
            for r in self.reads[index]:
                if r[0] != "scalar" and not (r[0] == "node" and r[1] >= start):
                    seen.setdefault(r, None)
        self.steps.append(("segment", start, end))
        self.inputs[start] = tuple(seen)
        self.has_call[start] = any(tape.nodes[i][0] == CALL for i in range(start, end))

    def vjp(self, tape, start, end, outs, diff, weights):
        """The compiled VJP of segment `start` for these outputs, differentiated inputs and
        weights (one jit function; it compiles once for the segment's input specs)."""
        key = (start, outs, diff, weights is not None)
        fn = self._vjps.get(key)
        if fn is None:
            from .grad import GradFunction
            from .jit import JitFunction
            replay = _segment_replay(tape, self, start, end, outs)
            inner = GradFunction(replay, diff, weights, False, False, True)
            fn = self._vjps[key] = JitFunction(lambda *a: inner.trace_into(active_traces[-1], a))
            fn.__name__ = f"pynative_segment{start}"
        return fn


def _segment_replay(tape, plan, start, end, outs):
    """A function of the segment's inputs (plan.inputs[start]) that re-emits its ops and
    returns the values `outs`. Its ms.assign ops only produce their value: the eager run has
    written the Parameter already."""
    from . import ops
    from .dispatch import call
    from .pynative import CALL
    nodes = [(i, tape.nodes[i], plan.reads[i]) for i in range(start, end)]
    calls = {i: tape._calls[i] for i in range(start, end) if i in tape._calls}
    slots = {r: k for k, r in enumerate(plan.inputs[start])}

    def replay(*args):
        env = {}

        def value(ref):
            k = slots.get(ref)
            if k is not None:
                return args[k]
            return env[ref[1]][ref[2]] if ref[0] == "node" else ref[1].value
        for index, (op_name, attrs, consts, _, _), reads in nodes:
            operands = [value(r) for r in reads]
            if op_name == CALL:
                out = pytree.flatten(calls[index](*pytree.unflatten(consts, operands)))[0]
            elif index in plan.assign_nodes:
                p, v = plan.assign_nodes[index], operands[0]
                out = (ops.full(p.shape, v, dtype=p.dtype) if not isinstance(v, Tensor)
                       else v if v.dtype is p.dtype else ops.cast(v, p.dtype))
            else:
                out = call(op_name, operands, dict(attrs), dict(consts))
            env[index] = out if isinstance(out, list) else [out]
        return tuple(value(r) for r in outs)
    replay.__name__ = "pynative_segment"
    return replay


class _Backward:
    """One run of a plan: the concrete values of the eager run and the cotangents so far."""

    def __init__(self, plan, tape, gf, args):
        self.plan, self.tape, self.gf, self.args = plan, tape, gf, args
        self.cot = {}
        self.weights = {id(w) for w in gf.weights} if gf.weights is not None else set()
        n = len(args)
        self.positions = (tuple(i for i, a in enumerate(args) if isinstance(a, Tensor))
                          if gf.get_all else tuple(p % n for p in gf.positions))
        self.values = _eager_values(tape, args)
        # The Parameters' values now, which the segments' temporary settings must not lose.
        self.final = {pid: p.asnumpy() for pid, p in plan.assigned.items()}
        self.moved = False

    def seed(self, outputs, output_refs, sens):
        """The output sensitivities: the user's (sens_param), else ones (for the first output
        only with has_aux), as GradFunction seeds the compiled gradient."""
        gf = self.gf
        given = pytree.flatten(sens[0])[0] if gf.sens_param else None
        if given is not None and len(given) != len(output_refs):
            raise located_error(ValueError, f"For '{gf.api_name}', sens has {len(given)} "
                                f"Tensors but the function returns {len(output_refs)}")
        for i, ref in enumerate(output_refs):
            out = outputs[i] if isinstance(outputs[i], Tensor) else self.values.get(ref)
            if out is None or not out.dtype.is_float or (gf.has_aux and i > 0):
                continue
            if given is None:
                s = Tensor._wrap(np.ones(out.shape, out.dtype.np))
            else:
                s = given[i] if isinstance(given[i], Tensor) else Tensor(np.asarray(
                    given[i], dtype=out.dtype.np))
            if ref[0] == "param":
                ref = self.plan.final_version.get(ref[1], ref)
            self.add(ref, s)

    def add(self, ref, g):
        """Accumulate cotangent `g` of the value `ref` (constants and unrequested values
        take none)."""
        kind = ref[0]
        if kind in ("ext", "scalar") or (kind == "param" and ref[1] not in self.weights):
            return
        if not g.dtype.is_float:
            return
        old = self.cot.get(ref)
        self.cot[ref] = g if old is None else old + g

    def wanted(self, ref, value) -> bool:
        """Whether a segment input's cotangent can matter: a value of the run, a requested
        argument or a requested weight (of a float dtype)."""
        if not value.dtype.is_float:
            return False
        kind = ref[0]
        return (kind == "node" or (kind == "in" and ref[1] in self.positions)
                or (kind == "param" and ref[1] in self.weights))

    def hook(self, index):
        """A hook node: the cotangents of its outputs go through the hook to its inputs. A
        hook whose outputs got no gradient is not called (no gradient flows through it)."""
        refs = self.plan.reads[index]
        outs = [("node", index, k) for k in range(len(refs))]
        if not any(o in self.cot for o in outs):
            return
        grads = tuple(self.cot.pop(o) if o in self.cot else _zeros(self.values[o])
                      for o in outs)
        for ref, g in zip(refs, self.tape.hooks[index].backward(grads)):
            self.add(ref, g)

    def segment(self, start, end):
        """Segment [start, end): its VJP given the cotangents of its values used later."""
        plan = self.plan
        outs = tuple(sorted(r for r in self.cot if r[0] == "node" and start <= r[1] < end))
        if not outs:
            return
        inputs = plan.inputs[start]
        in_values = [self.values[r] for r in inputs]
        diff = tuple(i for i, (r, v) in enumerate(zip(inputs, in_values)) if self.wanted(r, v))
        weights = self.gf.weights if plan.has_call[start] and self.gf.weights else None
        sens = tuple(self.cot.pop(o) for o in outs)
        if not diff and weights is None:
            return
        if plan.has_call[start] and plan.assigned:
            self.move_parameters(plan.versions[start])
        result = plan.vjp(self.tape, start, end, outs, diff, weights)(*in_values, sens)
        if weights is None:
            pos_grads, weight_grads = result, ()
        else:
            pos_grads, weight_grads = result if diff else ((), result)
        for i, g in zip(diff, pos_grads):
            self.add(inputs[i], g)
        for w, g in zip(weights or (), weight_grads):
            self.add(("param", id(w)), g)

    def move_parameters(self, versions):
        """Give the written Parameters the values they had when the segment ran: compiled
        functions it calls read them as Parameters."""
        for pid, ref in versions.items():
            self.plan.assigned[pid].set_data(self.values[ref])
        self.moved = True

    def restore_parameters(self):
        if self.moved:
            for pid, value in self.final.items():
                self.plan.assigned[pid].set_data(value)

    def package(self, outputs, out_tree):
        """MindSpore's result structure, as GradFunction builds it for the compiled path."""
        gf = self.gf
        outs = [o if isinstance(o, Tensor) else Tensor(o) for o in outputs]
        values = pytree.unflatten(out_tree, outs) if gf.with_value else None
        grads = [self.cot[("in", p)] if ("in", p) in self.cot else _zeros(self.args[p])
                 for p in self.positions]
        param_grads = {id(w): self.cot[("param", id(w))] for w in gf.weights or ()
                       if ("param", id(w)) in self.cot}
        return gf._package(values, grads, param_grads, outs, out_tree, None)


def _eager_values(tape, args):
    """ref -> the Tensor the eager run had for it. A Parameter the run wrote reads as its
    value before the write (later reads are of the assign's result)."""
    values = {("in", i): a for i, a in enumerate(args) if isinstance(a, Tensor)}
    for t in tape._keep:
        ref = tape.produced.get(id(t)) if isinstance(t, Tensor) else None
        if ref is not None:
            values[ref] = t
    for i, e in enumerate(tape.externals):
        values[("ext", i, e._spec)] = e
    for p in tape.params:
        before = tape.written.get(id(p))
        values[("param", id(p))] = (Tensor._wrap(before[1]) if before is not None else
                                    Tensor._make(p._spec, data=p._data, device=p._device))
    return values
