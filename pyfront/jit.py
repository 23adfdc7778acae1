"""ms.jit: trace once per cache key, compile through the one pipeline, run from the cache.

The cache key is MindSpore's phase key: the function, the shapes and dtypes of the Tensor
arguments, the values of the other arguments, and the target. A cache hit neither traces nor
verifies: it patches the prebuilt argument block and calls the compiled code.
"""
from __future__ import annotations

import functools
import inspect
import operator
import os
import sys
import time
import weakref

import numpy as np

from ..dialects import dtypes as dt
from ..dialects.dtypes import TensorSpec
from ..dialects.symdim import ANY, has_dynamic
from . import pytree
from .context import _context, default_target
from .keys import generalized_parts, parts_fit, static_key
from .location import user_api, user_location
from .state import active_tapes, active_traces, compiler_lock, gc_paused, jit_options
from ..runtime.calls import CallError
from ..runtime import fastcall
from ..runtime.fastcall import (JitBase, array_key as _array_key, jit_setup,
                                spec_key as _c_spec_key)
from .tensor import Parameter, Tensor


_NONE_ID = id(None)
_SPEC, _DATA = operator.attrgetter("_spec"), operator.attrgetter("_data")


def _python_spec_key(target, args):
    return (target, *map(_SPEC, args))


# the key of a call with Tensors: in C where runtime/_fastcall.c is built
_spec_key = _c_spec_key or _python_spec_key
# Compiled specializations kept per jit function (least recently used evicted first);
# ms.jit(cache_size=N) overrides it per function. Each CPU entry holds ~1.5 MiB of code.
DEFAULT_CACHE_SIZE = int(os.environ.get("MSCC_JIT_CACHE_SIZE", "64"))


class CompiledEntry:
    """One specialization: the executable and how Python values map onto its arguments."""

    __slots__ = ("exe", "tensor_leaves", "params", "treedef", "n_outputs", "writebacks",
                 "out_specs", "single_output", "on_device", "last_used", "sized_per_call",
                 "fast", "tier_up", "quick_call_done")

    def __init__(self, exe, tensor_leaves, params, treedef, n_outputs, writebacks,
                 on_device=False):
        self.exe = exe
        self.tensor_leaves = tensor_leaves  # indexes of the argument leaves that are Tensors
        self.params = params                # implicit Parameter inputs, in argument order
        self.treedef = treedef              # structure of the returned value
        self.n_outputs = n_outputs
        self.writebacks = writebacks        # per assigned Parameter: the object or a leaf index
        self.out_specs = exe.out_specs[:n_outputs]
        # dynamic sizes: each call's outputs have their own (runtime/dynamic.py)
        self.sized_per_call = getattr(exe, "dynamic", None) is not None
        self.single_output = treedef == ("leaf",)
        self.on_device = on_device  # a CUDA executable: inputs and outputs in GPU memory
        self.last_used = 0          # JitFunction's call counter at the last use (LRU)
        # unoptimized code, its optimized form compiling in the background: calls take
        # run() (not `fast`) until the optimized code serves them (_next_tier)
        self.tier_up = getattr(exe, "tier_up", None)
        self.quick_call_done = False
        self.fast = self._fast_form() if self.tier_up is None else None

    def _fast_form(self):
        """run() written out for the common entry (the cache-hit path of calls whose
        arguments are all Tensors): host code called through runtime/_fastcall.c, which
        rejects an argument that is not an array (a placeholder: TypeError before anything
        runs), one output of fixed size, no implicit Parameters or write-backs. None for
        any other entry."""
        if (self.on_device or self.params or self.writebacks or self.sized_per_call
                or not self.single_output or getattr(self.exe, "_fast", None) is None):
            return None
        spec, new, cls = self.out_specs[0], object.__new__, Tensor
        small = getattr(self.exe, "_small", None)
        if small is not None:  # the executable's run(), one frame less
            run_small, outputs = fastcall.run_small, self.exe._outputs

            def fast(arrays):
                t = new(cls)
                t._data, t._spec, t._device, t._value, t._trace = \
                    run_small(*small, arrays, outputs.reuse)[0], spec, None, None, None
                return t
            return fast
        exe_run = self.exe.run

        def fast(arrays):
            t = new(cls)
            t._data, t._spec, t._device, t._value, t._trace = exe_run(arrays)[0], spec, \
                None, None, None
            return t
        return fast

    def _quick_call(self, leaves, arrays):
        """The first call of a tiered entry: the unoptimized code runs, then the optimized
        compile starts (passes/tiering.TierUp says why not before)."""
        self.quick_call_done = True
        try:
            return self._run(leaves, arrays)
        finally:
            self.tier_up.start()

    def _next_tier(self):
        """Tiered compiles (passes/tiering.py): the unoptimized executable serves the first
        call (_quick_call); the second waits for the optimized one, which serves every call
        from then on."""
        optimized = self.tier_up.result()
        self.tier_up = None
        if optimized is not None:  # (None: its compile failed, and a warning said why)
            self.exe = optimized
        self.fast = self._fast_form()

    def run(self, leaves, arrays=None):
        if self.tier_up is not None:
            if not self.quick_call_done:
                return self._quick_call(leaves, arrays)
            self._next_tier()
        return self._run(leaves, arrays)

    def _run(self, leaves, arrays):
        if self.on_device:
            return self.run_on_device(leaves)
        if arrays is None:
            arrays = [leaves[i]._data for i in self.tensor_leaves]
        if self.params:
            arrays += [p._data for p in self.params]
        if _NONE_ID in map(id, arrays):  # (`None in arrays` would compare arrays elementwise)
            arrays = self._host_arrays(leaves)
        outs = self.exe.run(arrays)
        n = self.n_outputs
        if self.writebacks:
            for target, new in zip(self.writebacks, outs[n:]):
                t = leaves[target] if type(target) is int else target
                t._data, t._device = new, None  # a GPU copy of the old value is stale
        wrap = Tensor._wrap_spec
        specs = self._specs_of(outs)
        if self.single_output:
            return wrap(outs[0], specs[0])
        return pytree.unflatten(self.treedef, [wrap(o, s) for o, s in zip(outs, specs)])

    def _host_arrays(self, leaves):
        """The inputs when some are not plain host arrays: Tensors in GPU memory are copied
        back; a placeholder is an error."""
        tensors = [leaves[i] for i in self.tensor_leaves] + self.params
        if any(t.is_placeholder for t in tensors):
            raise TypeError("a placeholder Tensor (no data) was passed to a compiled function")
        return [t.asnumpy() for t in tensors]

    def run_on_device(self, leaves):
        """Tensors already in GPU memory are passed as they are; host Tensors are copied by
        the executable; Parameters are copied once and stay resident; outputs stay on the
        device until asnumpy()."""
        inputs = [_device_input(leaves[i]) for i in self.tensor_leaves]
        inputs += [_resident(p) for p in self.params]
        outs = self.exe(*inputs)
        n = self.n_outputs
        for target, new in zip(self.writebacks, outs[n:]):
            t = leaves[target] if type(target) is int else target
            t._device, t._data = new, None
        wrap = Tensor._wrap_device
        specs = self._specs_of(outs)
        return pytree.unflatten(self.treedef, [wrap(o, s) for o, s in zip(outs, specs)])

    def _specs_of(self, outs):
        """The outputs' specs: those compiled, or (dynamic sizes) this call's own shapes."""
        if not self.sized_per_call:
            return self.out_specs
        return [TensorSpec(o.shape, s.dtype) for o, s in zip(outs, self.out_specs)]


def _generalized(old_key, new_key):
    """The cache key serving both calls with dynamic dimensions where their Tensors' sizes
    differ (same structure, target, static values, ranks and dtypes), else None."""
    if old_key[:2] != new_key[:2]:
        return None
    parts = generalized_parts(old_key[2], new_key[2])
    return None if parts is None else (old_key[0], old_key[1], parts)


def _matches(pattern, key) -> bool:
    """Whether a call's key fits a key with dynamic=1's dynamic dimensions (sizes the
    executable's checks refuse get their own compile: _run_shared)."""
    return pattern[:2] == key[:2] and parts_fit(pattern[2], key[2])


def _device_input(t):
    if t._device is not None:
        return t._device
    if t._data is None:
        raise TypeError("a placeholder Tensor (no data) was passed to a compiled function")
    return t._data


def _resident(p):
    """A Parameter's device copy, made on first use and kept (ms.assign updates it there)."""
    if p._device is None:
        from ..runtime.cuda import device
        p._device = device().to_device(p.asnumpy())
    return p._device


def _plain_parameters(fn):
    """The parameter names of `fn` when all are plain (positional or keyword, no *args,
    **kwargs or keyword-only ones), else ()."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return ()
    if any(p.kind is not inspect.Parameter.POSITIONAL_OR_KEYWORD for p in params):
        return ()
    return tuple(p.name for p in params)


def _serves_arrays(entry, leaves, args) -> bool:
    """Whether numpy-array calls may skip Tensors for this entry: a host executable that
    writes back into no argument, whose inputs have exactly the arrays' dtypes."""
    return (not entry.on_device and len(leaves) == len(args)
            and not any(type(t) is int for t in entry.writebacks)
            and all(leaf._spec.dtype.np == a.dtype for leaf, a in zip(leaves, args)))


def _leaf_key(x, i, name):
    if isinstance(x, Tensor):
        if x.is_placeholder:
            raise TypeError(f"argument #{i} of '{name}' is a placeholder Tensor without data")
        # A Parameter is traced as itself (ms.assign writes it back): its entry must not
        # serve a plain Tensor, which a fresh trace would refuse to assign.
        return ("param", x._spec) if isinstance(x, Parameter) else x._spec
    try:
        return ("static", static_key(x))
    except TypeError:
        raise TypeError(f"argument #{i} of '{name}' has type {type(x).__name__}, which jit can "
                        "neither trace (not a Tensor) nor use as a static value (not "
                        "hashable)") from None


if jit_setup is not None:  # what JitBase's call in C reads (runtime/jit_call.h)
    jit_setup(_context, active_traces, active_tapes)


class JitFunction(JitBase):
    """A function compiled per cache key. Use as `@ms.jit`, `@ms.jit(input_signature=...)` or
    `ms.jit(fn)`.

    Calling one runs JitBase's call (runtime/jit_call.h), which serves the cache hits of
    `_call_python`'s fast paths in C and calls `_call_python` for everything else."""

    @user_api("ms.jit")
    def __init__(self, fn, input_signature=None, target=None, cache_size=None, loops="auto",
                 fullgraph=False, dynamic=0):
        from .autograph import LOOP_MODES, JitOptions
        functools.update_wrapper(self, fn)
        if not hasattr(self, "__name__"):  # a Cell or another callable object
            self.__name__ = type(fn).__name__
        self.fn = fn
        self.target = target
        if loops not in LOOP_MODES:
            raise ValueError(f"For 'jit', loops must be one of {', '.join(LOOP_MODES)}, got "
                             f"{loops!r}")
        self.options = JitOptions(loops, fullgraph)
        self.input_signature = None
        if input_signature is not None:
            sig = input_signature if isinstance(input_signature, (tuple, list)) else (input_signature,)
            specs = []
            for i, t in enumerate(sig):
                if not isinstance(t, Tensor):
                    raise TypeError(f"input_signature entry #{i} must be a Tensor, got {type(t).__name__}")
                specs.append(t._spec)
            self.input_signature = tuple(specs)
        # dynamic=1: after a second size, one compile with those dimensions dynamic
        self.dynamic = dynamic
        self._patterns: list = []    # keys with dynamic dimensions (ANY), newest first
        self._static_only: set = set()  # generalized keys whose dynamic compile failed
        self._static_only_warned = False
        self.cache_size = DEFAULT_CACHE_SIZE if cache_size is None else int(cache_size)
        if self.cache_size < 1:
            raise ValueError(f"cache_size must be at least 1, got {cache_size}")
        self._cache: dict = {}
        self._flat_cache: dict = {}  # calls whose arguments are all Tensors: key by specs only
        self._calls = 0              # a counter stamped on entries as they are used (LRU)
        self.compile_count = 0
        self.trace_count = 0
        self.evictions = 0
        # Executables die with the function; their native memory goes back to the system.
        weakref.finalize(self, _release, self._cache, self._flat_cache)

    @functools.cached_property
    def _plain_parameters(self):
        return _plain_parameters(self.fn)

    @functools.cached_property
    def _keyword_getter(self):
        """(kwargs -> the arguments by position, the parameter count) for calls that pass
        every parameter by keyword; count -1 (never matched) for fewer than two plain
        parameters (itemgetter of one name returns no tuple)."""
        names = self._plain_parameters
        if len(names) < 2:
            return None, -1
        return operator.itemgetter(*names), len(names)

    def __get__(self, obj, objtype=None):
        return self if obj is None else functools.partial(self.__call__, obj)

    # -------------------------------------------------------------- calling
    def _leaves(self, args):
        leaves, treedef = pytree.flatten(args)
        for i, x in enumerate(leaves):
            if isinstance(x, np.ndarray):
                leaves[i] = Tensor(x)
        return leaves, treedef

    def _key(self, leaves, treedef):
        name = self.__name__
        return (treedef, self.target or default_target(),
                tuple(_leaf_key(x, i, name) for i, x in enumerate(leaves)))

    def _call_python(self, *args, **kwargs):
        if kwargs:  # keyword arguments become positional (part of the key like any other)
            getter, count = self._keyword_getter
            if not args and len(kwargs) == count:
                try:  # every parameter by keyword: one C-level lookup of them all
                    args = getter(kwargs)
                except KeyError:
                    args = self._positional(args, kwargs)
            else:
                args = self._positional(args, kwargs)
        if active_traces.items:  # (the lists themselves: no __bool__ call per call)
            return self.converted()(*args)  # called from another traced function: inline
        if active_tapes.items:  # inside a PyNative gradient's recording: one replayable node
            result = self._call_general(args, tape=active_tapes[-1])
            active_tapes[-1].record_call(self.fn, args, result)
            return result
        if args and type(args[0]) is np.ndarray:  # (no exception raised and caught)
            return self._call_arrays(args)
        try:  # the cache-hit fast path: every argument is a Tensor
            entry = self._flat_cache[_spec_key(_context["target"], args)]
        except (AttributeError, KeyError, TypeError):
            return self._call_arrays(args)
        self._calls += 1
        entry.last_used = self._calls
        if entry.fast is not None:
            try:
                return entry.fast(list(map(_DATA, args)))
            except TypeError:  # a Tensor without host data: run() says which
                pass
        return entry.run(args, None if entry.on_device else [a._data for a in args])

    if JitBase is object:  # (no C extension: the whole call in Python)
        __call__ = _call_python

    def _positional(self, args, kwargs):
        """The arguments by position: keywords naming the parameters after `args` are placed
        directly when the function takes only plain parameters (the common case, without
        inspect's binding on every call); anything else goes through Signature.bind."""
        names = self._plain_parameters
        rest = names[len(args):] if names else ()
        if names and len(rest) == len(kwargs):
            try:  # (C-level lookups: this runs on every call with keywords)
                return args + tuple(map(kwargs.__getitem__, rest))
            except KeyError:
                pass  # a name that is not the next parameter's: bind reports it
        bound = inspect.signature(self.fn).bind(*args, **kwargs)
        bound.apply_defaults()
        if bound.kwargs:  # (keyword-only parameters or **kwargs: they would be dropped)
            raise TypeError(f"'{self.__name__}' takes keyword-only arguments "
                            f"({', '.join(bound.kwargs)}); ms.jit passes arguments by "
                            "position: make them positional-or-keyword parameters")
        return bound.args

    def _call_arrays(self, args):
        """A call with C-contiguous numpy arrays only: served from the flat cache by their
        shapes and dtypes, the arrays passed to the executable as they are (no Tensor, no
        copy); anything else takes the general path."""
        if _array_key is not None:  # (runtime/_fastcall.c: the same key, built in C)
            key = _array_key(_context["target"], args)
            if key is None:
                return self._call_general(args)
        elif all(type(a) is np.ndarray and a.flags.c_contiguous for a in args):
            key = (_context["target"], *[(a.shape, a.dtype) for a in args])
        else:
            return self._call_general(args)
        entry = self._flat_cache.get(key)
        if entry is None:
            return self._call_general(args, array_key=key)
        self._calls += 1
        entry.last_used = self._calls
        if entry.fast is not None:
            return entry.fast(list(args))
        return entry.run(args, list(args))

    @user_api(lambda self: f"ms.jit ({self.__name__})")
    def _call_general(self, args, tape=None, array_key=None):
        leaves, treedef = self._leaves(args)
        key = self._key(leaves, treedef)
        entry = self._cache.get(key)
        shared = entry is None and self._dynamic_entry(key) is not None
        if entry is None:
            with compiler_lock:  # one thread compiles a key; the others then find it
                entry = self._cache.get(key) or self._dynamic_entry(key)
                if entry is None:
                    entry = self._compile_for(args, leaves, key)
        self._calls += 1
        entry.last_used = self._calls
        if tape is not None:  # the replay performs these writes again: it needs the old values
            for target in entry.writebacks:
                tape.note_write(leaves[target] if type(target) is int else target)
        if shared:  # dynamic=1's executable, first used for these sizes
            result, entry = self._run_shared(entry, args, leaves, key)
        else:
            result = entry.run(leaves)
        if len(leaves) == len(args) and all(type(a) is Tensor for a in args):
            flat = (_context["target"], *[a._spec for a in args])
            self._flat_cache[flat] = entry
        if array_key is not None and _serves_arrays(entry, leaves, args):
            self._flat_cache[array_key] = entry
        return result

    def _run_shared(self, entry, args, leaves, key):
        """Run dynamic=1's executable for sizes it has not served: sizes its checks refuse
        (a size of 1 the function broadcasts, say) get a compile of their own, which either
        serves them or reports the mistake at the user's line."""
        try:
            return entry.run(leaves), entry
        except CallError:
            with compiler_lock:
                entry = self._cache.get(key) or self._compile(args, leaves, key)
            return entry.run(leaves), entry

    # -------------------------------------------------------------- dynamic dimensions
    def _dynamic_entry(self, key):
        """The entry compiled with dynamic dimensions that serves this call, if any."""
        for pattern in self._patterns:
            if _matches(pattern, key):
                return self._cache.get(pattern)
        return None

    def _compile_for(self, args, leaves, key):
        """Compile for a call no entry serves: with the dynamic dimensions of the
        input_signature, or (dynamic=1) of the sizes in which it differs from an earlier
        call; static when that compile cannot be made (an op without a dynamic form yet:
        one warning names it)."""
        self._check_signature(leaves)  # (a call that does not fit it: ValueError)
        general = self._signature_key(leaves, key)
        if general is not None and general in self._cache:
            return self._cache[general]
        if general is None and self.dynamic:
            general = next((g for g in (_generalized(k, key) for k in reversed(self._cache))
                            if g is not None and g not in self._static_only), None)
        if general is not None and general not in self._static_only:
            try:
                entry = self._compile(args, _as_traced(leaves, general), general)
            except Exception as e:  # noqa: BLE001 - the static compile reports real errors
                if os.environ.get("MSCC_DEBUG"):
                    import traceback
                    traceback.print_exc()
                self._static_only.add(general)
                if not self._static_only_warned:
                    self._static_only_warned = True
                    _warn_static(self.__name__, e)
            else:
                if self._signature_key(leaves, key) is None:  # (automatic: dynamic=1)
                    self._patterns.insert(0, general)
                return entry
        return self._compile(args, leaves, key)

    def _signature_key(self, leaves, key):
        """The call's key with the input_signature's dynamic dimensions (None without
        them); a ValueError naming the argument that does not fit the signature."""
        if self.input_signature is None or not any(
                has_dynamic(s.shape) for s in self.input_signature):
            return None
        specs = iter(self.input_signature)
        out = []
        for k in key[2]:
            out.append(next(specs, k) if type(k) is TensorSpec else k)
        return (key[0], key[1], tuple(out))

    def _check_signature(self, leaves):
        if self.input_signature is None:
            return
        specs = tuple(x._spec for x in leaves if isinstance(x, Tensor))
        if len(specs) != len(self.input_signature):
            raise TypeError(
                f"'{self.__name__}' was declared with input_signature "
                f"({', '.join(map(str, self.input_signature))}) but called with "
                f"({', '.join(map(str, specs))})")
        for i, (want, got) in enumerate(zip(self.input_signature, specs)):
            if want.dtype is not got.dtype or len(want.shape) != len(got.shape) or any(
                    w is not ANY and w != g for w, g in zip(want.shape, got.shape)):
                raise ValueError(
                    f"argument #{i} of '{self.__name__}' is {got}, but its input_signature "
                    f"says {want}" + (" (None: any size)" if has_dynamic(want.shape) else ""))

    # -------------------------------------------------------------- tracing and compiling
    def trace(self, args, leaves=None):
        """Trace for these arguments; returns (Trace, output treedef, tensor leaf indexes)."""
        from .trace import Trace
        if leaves is None:
            leaves, _ = self._leaves(args)
        self._check_signature(leaves)
        self.trace_count += 1
        where = _definition_site(self.fn)
        tr = Trace(_symbol(self.__name__), where)
        jit_options.append(self.options)
        try:
            with tr:
                traced_leaves = [tr.add_input(x) if isinstance(x, Tensor) else x for x in leaves]
                _, in_tree = pytree.flatten(args)
                result = _call_converted(self.converted(), self.fn,
                                         pytree.unflatten(in_tree, traced_leaves))
                outputs, out_tree = pytree.flatten(result)
                outputs = [_as_tensor(o, self.__name__) for o in outputs]
                tr.finish(outputs)
        finally:
            jit_options.pop()
        tensor_leaves = [i for i, x in enumerate(leaves) if isinstance(x, Tensor)]
        return tr, out_tree, tensor_leaves, len(outputs)

    def converted(self):
        """The function with its if/while/for on Tensors rewritten (pyfront/autograph.py),
        made on the first trace."""
        conv = self.__dict__.get("_converted_fn")
        if conv is None or self.options.fullgraph:  # (fullgraph: convert() checks again)
            from .autograph import convert
            conv = self._converted_fn = convert(self.fn)
        return conv

    def lower(self, *args) -> "Lowered":
        with compiler_lock:
            tr, out_tree, tensor_leaves, n_out = self.trace(args)
        return Lowered(tr, self.target or default_target())

    def _compile(self, args, leaves, key):
        with gc_paused():
            return self._trace_and_compile(args, leaves, key)

    def _trace_and_compile(self, args, leaves, key):
        from .trace import compile_traced
        t0 = time.perf_counter()
        tr, out_tree, tensor_leaves, n_out = self.trace(args, leaves)
        if os.environ.get("MSCC_TIME_REPORT"):  # the stage before the compiler's own report
            print(f"mscc: traced '{tr.name}' in {(time.perf_counter() - t0) * 1e3:.1f} ms",
                  file=sys.stderr)
        from . import communication
        # tiered (passes/tiering.py), except for data-parallel ranks: each must update its
        # weights with the same code as the others
        exe = compile_traced(tr.module, tr.name, key[1],
                             tiered=not communication.is_initialized())
        self.compile_count += 1
        writebacks = [tr.explicit_params.get(id(p), p) for p in tr.assigned_params]
        implicit = [p for p in tr.param_order if id(p) not in tr.explicit_params]
        entry = CompiledEntry(exe, tensor_leaves, implicit, out_tree, n_out, writebacks,
                              on_device=key[1] == "cuda")
        if len(self._cache) >= self.cache_size:
            self._evict_least_recently_used()
        self._cache[key] = entry
        return entry

    def _evict_least_recently_used(self):
        victim = min(self._cache.values(), key=lambda e: e.last_used)
        for cache in (self._cache, self._flat_cache):
            for k in [k for k, e in cache.items() if e is victim]:
                del cache[k]
        self.evictions += 1
        del victim
        _return_memory()

    def cache_info(self):
        return {"entries": len(self._cache), "compiles": self.compile_count,
                "traces": self.trace_count, "evictions": self.evictions,
                "max_entries": self.cache_size}


def _as_traced(leaves, key):
    """The leaves to trace for a key with dynamic dimensions: placeholders of its specs in
    place of the Tensors (Parameters keep their identity and shapes)."""
    out = list(leaves)
    for i, k in enumerate(key[2]):
        if type(k) is TensorSpec and has_dynamic(k.shape) and type(leaves[i]) is Tensor:
            out[i] = Tensor._make(k)
    return out


def _warn_static(name, error):
    import logging
    reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    logging.getLogger("mscc").warning(
        "jit: '%s' is compiled for each input shape, not once with dynamic dimensions "
        "(%s)", name, reason)


class Lowered:
    """A traced function at the `ms` stage; `as_text(stage)` shows any later stage."""

    def __init__(self, trace, target):
        self._trace = trace
        self.target = target

    def as_text(self, stage: str = "ms", debug_info: bool = False) -> str:
        """The IR at a named stage (passes/pipeline.py); `debug_info` prints locations."""
        if stage == "obj":
            raise ValueError("stage 'obj' is machine code, not text: use as_bytes('obj')")
        with compiler_lock:
            return self._emit(stage, debug_info)

    def as_bytes(self, stage: str = "obj") -> bytes:
        """Object code: the CPU's ELF object (position independent), or CUDA's cubin."""
        with compiler_lock:
            out = self._emit(stage, False)
        return out if isinstance(out, bytes) else out.encode()

    def _emit(self, stage, debug_info):
        from ..passes.artifact import emit_stage
        from ..passes.compiler import clone_module
        return emit_stage(clone_module(self._trace.module), self.target, stage,
                          debug_info=debug_info)

    def compile(self) -> "Compiled":
        return Compiled(self._trace, self.target)


class Compiled:
    """One compiled specialization: call it here, or `save(path)` it as an .msx artifact that
    `mscc.runtime.load` runs without the compiler (its inputs: the function's Tensor
    arguments, then the Parameters it reads, in the order of `parameters`)."""

    def __init__(self, trace, target):
        self._module = trace.module
        self.entry = trace.name
        self.target = target
        self.parameters = list(trace.param_order)
        self._exe = None

    def __call__(self, *arrays):
        if self._exe is None:
            from ..passes.compiler import clone_module
            from .trace import compile_traced
            with compiler_lock:
                if self._exe is None:
                    self._exe = compile_traced(clone_module(self._module), self.entry,
                                               self.target)
        return self._exe(*arrays)

    def save(self, path: str) -> str:
        from ..passes.artifact import build_artifact
        from ..passes.compiler import clone_module
        with compiler_lock:
            artifact = build_artifact(clone_module(self._module), self.entry, self.target)
        return artifact.save(path)


def jit(function=None, *, input_signature=None, target=None, cache_size=None,
        capture_mode="ast", jit_level="O0", dynamic=0, fullgraph=False, backend="",
        loops="auto", **options):
    """Compile `function` on first call per cache key (shapes, dtypes, static values,
    target); keep at most `cache_size` specializations (default MSCC_JIT_CACHE_SIZE or 64),
    evicting the least recently used. MindSpore 2.x's keywords are checked and mean what
    mscc can do (see _check_mindspore_keywords). `fullgraph=True` (MindSpore's
    jit_syntax_level STRICT) refuses an if/while/for that cannot be compiled as written;
    `loops` ("auto", "rolled", "unrolled") says how a `for` over an int range or a Tensor's
    rows compiles (pyfront/autograph.py). With MS_JIT=0 in the environment (MindSpore's
    switch) the function is returned as it is and runs as plain Python."""
    if target is not None and target not in ("cpu", "cuda"):
        raise ValueError(f"target must be 'cpu' or 'cuda', got {target!r}")
    _check_mindspore_keywords(capture_mode, jit_level, dynamic, fullgraph, backend, options)
    if os.environ.get("MS_JIT") == "0":
        return (lambda f: f) if function is None else function
    if function is None:
        return lambda f: JitFunction(f, input_signature, target, cache_size, loops, fullgraph,
                                     dynamic)
    return JitFunction(function, input_signature, target, cache_size, loops, fullgraph, dynamic)


_CAPTURE_MODES = ("ast", "bytecode", "trace")


def _check_mindspore_keywords(capture_mode, jit_level, dynamic, fullgraph, backend, options):
    """MindSpore's jit options. mscc captures a function the one way it has, by tracing it
    whole (its control flow converted first), so every capture_mode compiles the same graph;
    it always fuses (O0 and O1 alike) on its own backend. dynamic=1: the first call compiles
    for its shapes; a call differing only in some sizes compiles once with those dimensions
    dynamic, and that executable serves every later size."""
    if capture_mode not in _CAPTURE_MODES:
        raise ValueError(f"For 'jit', capture_mode must be one of {', '.join(_CAPTURE_MODES)}, "
                         f"got {capture_mode!r}")
    if jit_level not in ("O0", "O1"):
        raise ValueError(f"For 'jit', jit_level must be 'O0' or 'O1', got {jit_level!r}")
    if dynamic not in (0, 1) or isinstance(dynamic, bool):
        raise ValueError(f"For 'jit', dynamic must be 0 or 1, got {dynamic!r}")
    if not isinstance(fullgraph, bool):
        raise TypeError(f"For 'jit', fullgraph must be a bool, got {type(fullgraph).__name__}")
    if backend not in ("", "ms_backend"):
        raise ValueError(f"For 'jit', backend {backend!r} is not available in mscc (it "
                         "compiles with its own backend: '' or 'ms_backend')")
    if options:
        raise ValueError(f"For 'jit', backend options are not supported by mscc: "
                         f"{', '.join(sorted(options))}")


_released = [0]  # executables released since malloc last returned memory
_RELEASES_PER_TRIM = 8  # ~12 MiB: a trim walks the whole heap (~15 ms on a large one)


def _return_memory(n_released=1):
    _released[0] += n_released
    if _released[0] >= _RELEASES_PER_TRIM:
        _released[0] = 0
        from ..runtime.malloc import return_freed_memory
        return_freed_memory()


def _release(cache, flat_cache):
    """A collected JitFunction: drop its executables and return their memory."""
    if cache:
        n = len(cache)
        cache.clear()
        flat_cache.clear()
        _return_memory(n)


def _call_converted(fn, original, args):
    """fn(*args); where the source of `original` could not be converted, a Tensor
    condition's error says why."""
    from .autograph import unconverted_reason
    from .location import LocatedTypeError
    try:
        return fn(*args)
    except LocatedTypeError as e:
        reason = unconverted_reason(original)
        if fn is not original or reason is None or "Python `if`" not in str(e):
            raise
        message, _, at = str(e).rpartition(" (at ")
        raise LocatedTypeError(f"{message} ({reason}) (at {at}", e.location) from None


def _as_tensor(x, name):
    from .autograph import check_defined
    check_defined(x, name)
    if isinstance(x, Tensor):
        return x
    if isinstance(x, (bool, int, float, np.generic, np.ndarray)):
        return Tensor(x)
    raise TypeError(f"'{name}' returned a {type(x).__name__}; jit functions return Tensors, "
                    "Python numbers, or tuples/lists/dicts of them")


def _symbol(name: str) -> str:
    return "".join(c if c.isalnum() or c == "_" else "_" for c in name) or "fn"


def _definition_site(fn):
    code = getattr(inspect.unwrap(fn), "__code__", None)
    if code is None:
        return user_location()
    return code.co_filename, code.co_firstlineno, 1


__all__ = ["jit", "JitFunction", "Lowered", "Parameter", "dt"]
