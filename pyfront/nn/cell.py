"""nn.Cell: the unit of a network, as in MindSpore.

Parameters and sub-cells assigned as attributes are registered (and named "sub.weight");
`__call__` runs `construct`, compiled through jit in GRAPH_MODE and op by op in PYNATIVE_MODE
(except cells with `always_compiled`, such as optimizers: MindSpore's carry `@jit`).
`to_float(dtype)` makes a cell compute in that dtype: its float inputs and its own Parameters
are cast (ms.cast ops, visible in the IR) while the Parameters stay float32 masters.
"""
from __future__ import annotations

from collections import OrderedDict

from ..context import GRAPH_MODE, get_context
from ..location import CONVERTED, as_user_error, mark_boundary, user_api
from ..state import active_traces
from ..tensor import Parameter, Tensor


_PLAIN = (bool, int, float, str)
# Bumped whenever a Cell gains or loses a sub-cell: cached lists of sub-cells are then stale.
_structure_version = [0]
_PACKAGE = __name__.split(".")[0]  # "mscc": its cells' __init__ are user-API boundaries
_HAS_BPROP: dict = {}  # Cell class -> whether it defines bprop (a custom backward)


def _cell_name(cell):
    """How errors name a cell: nn.Dense (its class, also when called through a base class)."""
    return f"nn.{type(cell).__name__}"


class Cell:
    always_compiled = False  # construct compiled through jit in PYNATIVE_MODE too

    def __init_subclass__(cls, **kwargs):
        """mscc's own cells (Dense, Conv2d, the losses, the optimizers) check their arguments
        in __init__: make it a user-API boundary, as __call__ is for every cell. A user's
        subclass is user code: its own exceptions stay as they are."""
        super().__init_subclass__(**kwargs)
        own_init = cls.__dict__.get("__init__")
        if own_init is not None and cls.__module__.split(".")[0] == _PACKAGE:
            cls.__init__ = user_api(_cell_name)(own_init)

    def __init__(self):
        object.__setattr__(self, "_params", OrderedDict())
        object.__setattr__(self, "_cells", OrderedDict())
        object.__setattr__(self, "training", False)
        object.__setattr__(self, "_compute_dtype", None)
        object.__setattr__(self, "_graph_fn", None)
        object.__setattr__(self, "_hooks", None)  # forward/backward hooks (pyfront/hooks.py)

    def __setattr__(self, name, value):
        if "_params" not in self.__dict__:
            raise AttributeError(f"{type(self).__name__}.__init__ must call super().__init__() "
                                 "before assigning attributes")
        if name in self._params and not isinstance(value, Parameter) and value is not None:
            self._write_param(name, value)
            return
        self._params.pop(name, None)
        if self._cells.pop(name, None) is not None or isinstance(value, Cell):
            _structure_version[0] += 1
        if isinstance(value, Parameter):
            self._params[name] = value
        elif isinstance(value, Cell):
            self._cells[name] = value
        object.__setattr__(self, name, value)

    def _write_param(self, name, value):
        """MindSpore's rule: a Tensor assigned to an attribute holding a Parameter
        (`self.w = x`, `self.step += 1`) writes the Parameter, which stays registered (and in
        trainable_params()); inside compiled code that is an ms.assign."""
        if not isinstance(value, Tensor):
            raise TypeError(f"For 'Cell', the type of {name} must be Parameter or Tensor "
                            f"(it holds a Parameter), but got {type(value).__name__}.")
        from .. import ops
        ops.assign(self._params[name], value)

    def construct(self, *args):
        raise NotImplementedError(f"{type(self).__name__} must define construct()")

    # ------------------------------------------------------------------ calling
    def __call__(self, *args):
        # A user-API boundary (location.py) for every cell, written out rather than as the
        # user_api wrapper: each layer of a PyNative network goes through here.
        try:
            if self._hooks:  # registered hooks run around construct, in PYNATIVE_MODE only
                from ..hooks import call_hooked
                return call_hooked(self, args)
            if (self.always_compiled or get_context("mode") == GRAPH_MODE) and not active_traces.items:
                if self._graph_fn is None:
                    from ..jit import JitFunction
                    # MindSpore's rule for graphs: a second input size compiles once with
                    # that dimension dynamic; set_inputs declares the dynamic dimensions
                    object.__setattr__(self, "_graph_fn", JitFunction(
                        lambda static_state, *a: self._run(*a),
                        input_signature=self.__dict__.get("_declared_inputs"), dynamic=1))
                    self._graph_fn.__name__ = type(self).__name__
                return self._graph_fn(self._static_state(), *args)
            return self._run(*args)
        except CONVERTED as e:
            better = as_user_error(e, _cell_name(self))
            if better is e:
                raise
            raise better

    mark_boundary(__call__.__code__)

    def _static_state(self):
        """The plain Python values among the attributes of this cell and its sub-cells
        (training flags, hyperparameters such as a learning rate, Primitives' attributes):
        part of the compiled
        function's cache key, so that changing one recompiles rather than running with the
        value traced before. It is read on every call: the list of sub-cells is cached
        until some Cell's structure changes."""
        cached = self.__dict__.get("_state_cells")
        if cached is None or cached[0] != _structure_version[0]:
            cached = (_structure_version[0], [cell for _, cell in self.cells_and_names()])
            object.__setattr__(self, "_state_cells", cached)
        # Plain values, and objects that say what part of them compiled code depends on
        # (a Primitive's attributes: pyfront/primitives.py).
        return tuple((name, v if type(v) in _PLAIN else v._static_key())
                     for cell in cached[1] for name, v in cell.__dict__.items()
                     if name[0] != "_" and (type(v) in _PLAIN or hasattr(type(v), "_static_key")))

    def _construct(self):
        """construct, with if/while/for on Tensors rewritten when it is being traced
        (GRAPH_MODE, or called by a jit function): pyfront/autograph.py."""
        if not active_traces.items:
            return self.construct
        from ..autograph import convert
        return convert(self.construct)

    def _run(self, *args):
        dtype = self._compute_dtype
        if dtype is None:
            return self._construct_call(args)
        from .. import ops
        args = [ops.cast(a, dtype) if isinstance(a, Tensor) and a.dtype.is_float
                and a.dtype is not dtype else a for a in args]
        masters = dict(self._params)
        try:  # inside construct, self.<param> reads the cast copy
            for name, p in masters.items():
                if p.dtype.is_float and p.dtype is not dtype:
                    object.__setattr__(self, name, ops.cast(p, dtype))
            return self._construct_call(args)
        finally:
            for name, p in masters.items():
                object.__setattr__(self, name, p)

    def _construct_call(self, args):
        """construct(*args), through its custom gradient when the Cell defines `bprop` or
        was marked with recompute() (pyfront/custom_grad.py)."""
        cls = type(self)
        has_bprop = _HAS_BPROP.get(cls)
        if has_bprop is None:
            has_bprop = _HAS_BPROP[cls] = callable(getattr(cls, "bprop", None))
        if not has_bprop and not self.__dict__.get("_recompute"):
            return self._construct()(*args)
        from .. import custom_grad
        spec = custom_grad.cell_specs(self)
        return self._construct()(*args) if spec is None else custom_grad.custom_call(spec, args)

    def recompute(self, **kwargs):
        """MindSpore's Cell.recompute(): the backward recomputes this Cell's forward instead
        of keeping its intermediates (less memory, one more forward). The keyword arguments
        (mp_comm_recompute, parallel_optimizer_comm_recompute) concern model parallelism,
        which mscc does not have: they are accepted and must be booleans."""
        for name, value in kwargs.items():
            if name not in ("mp_comm_recompute", "parallel_optimizer_comm_recompute"):
                raise TypeError(f"For 'Cell.recompute', unexpected keyword argument '{name}'")
            if not isinstance(value, bool):
                raise TypeError(f"For 'Cell.recompute', {name} must be a bool, got "
                                f"{type(value).__name__}")
        object.__setattr__(self, "_recompute", True)
        self.__dict__.pop("_custom_spec", None)

    # ------------------------------------------------------------------ parameters
    def cells_and_names(self, prefix=""):
        yield prefix, self
        for name, cell in self._cells.items():
            yield from cell.cells_and_names(f"{prefix}.{name}" if prefix else name)

    def parameters_and_names(self, prefix="", expand=True):
        seen = set()
        for cell_prefix, cell in self.cells_and_names(prefix):
            for name, p in cell._params.items():
                if id(p) not in seen:
                    seen.add(id(p))
                    yield (f"{cell_prefix}.{name}" if cell_prefix else name), p
            if not expand:
                break

    def parameters_dict(self) -> OrderedDict:
        return OrderedDict(self.parameters_and_names())

    def get_parameters(self):
        for _, p in self.parameters_and_names():
            yield p

    def trainable_params(self):
        """Parameters that take gradients, named by their path ("fc1.weight") as MindSpore
        names them once a network is built."""
        out = []
        for name, p in self.parameters_and_names():
            if p.name.startswith("Parameter") or "." not in p.name:
                p.name = name
            if p.requires_grad:
                out.append(p)
        return out

    def untrainable_params(self):
        return [p for p in self.get_parameters() if not p.requires_grad]

    def cells(self):
        return list(self._cells.values())

    def name_cells(self):
        return OrderedDict(self._cells)

    def insert_param_to_cell(self, param_name, param, check_name_contain_dot=True):
        """Register `param` under `param_name` (MindSpore's checks: a name without '.', a
        Parameter or None, no other attribute of that name)."""
        if not isinstance(param_name, str) or not param_name:
            raise KeyError(f"For 'insert_param_to_cell', the argument 'param_name' must be a "
                           f"non-empty str, got {param_name!r}.")
        if check_name_contain_dot and "." in param_name:
            raise KeyError(f"For 'insert_param_to_cell', the argument 'param_name' should not "
                           f"contain '.', got {param_name!r}.")
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"For 'insert_param_to_cell', the argument 'param' must be a "
                            f"Parameter or None, got {type(param).__name__}.")
        if param_name in self.__dict__ and param_name not in self._params:
            raise KeyError(f"For 'insert_param_to_cell', the {param_name!r} attribute "
                           f"already exists and is not a Parameter.")
        if param is None:
            self._params.pop(param_name, None)
            object.__setattr__(self, param_name, None)
            return
        if param.name.startswith("Parameter"):
            param.name = param_name
        self._params[param_name] = param
        object.__setattr__(self, param_name, param)

    def insert_child_to_cell(self, child_name, child_cell):
        if not isinstance(child_name, str) or not child_name or "." in child_name:
            raise KeyError(f"Child cell name must be a non-empty str without '.', got "
                           f"{child_name!r}")
        if child_cell is not None and not isinstance(child_cell, Cell):
            raise TypeError(f"Child cell type must be a Cell, got {type(child_cell).__name__}")
        setattr(self, child_name, child_cell)

    def set_grad(self, requires_grad=True):
        """MindSpore marks a network for gradient construction; mscc builds gradients
        whenever grad/value_and_grad asks, so this records the flag and returns the cell."""
        object.__setattr__(self, "requires_grad", bool(requires_grad))
        return self

    def set_inputs(self, *inputs):
        """MindSpore's declaration of the inputs a graph is compiled for: Tensors, or
        placeholders `Tensor(shape=[None, 784], dtype=...)` whose None (or -1) dimensions
        take any size. In GRAPH_MODE the Cell then compiles once for every size there, and a
        call whose rank, dtype or static sizes differ raises ValueError naming the argument."""
        from ..tensor import Tensor
        for i, t in enumerate(inputs):
            if not isinstance(t, Tensor):
                raise TypeError(f"For 'set_inputs', input #{i} must be a Tensor, got "
                                f"{type(t).__name__}")
        object.__setattr__(self, "_declared_inputs", tuple(inputs))
        object.__setattr__(self, "_graph_fn", None)  # compiled anew for the declaration
        return self

    def get_inputs(self):
        """The inputs given to set_inputs (None when it was not called)."""
        return self.__dict__.get("_declared_inputs")

    def set_train(self, mode=True):
        for _, cell in self.cells_and_names():
            object.__setattr__(cell, "training", bool(mode))
        return self

    def to_float(self, dtype):
        """Compute this cell (and its sub-cells) in `dtype`."""
        from ...dialects.dtypes import as_dtype
        for _, cell in self.cells_and_names():
            object.__setattr__(cell, "_compute_dtype", as_dtype(dtype))
        return self

    def __repr__(self):
        lines = [f"{type(self).__name__}("]
        for name, cell in self._cells.items():
            lines.append(f"  ({name}): " + repr(cell).replace("\n", "\n  "))
        return "\n".join(lines) + ")" if len(lines) > 1 else f"{type(self).__name__}()"

    # ------------------------------------------------------------------ hooks
    # MindSpore 2.x's Cell hooks, PYNATIVE_MODE only; semantics in pyfront/hooks.py.
    def register_forward_pre_hook(self, hook_fn, with_kwargs=False):
        """`hook_fn(cell, args)` (with_kwargs: `hook_fn(cell, args, kwargs)`) runs before
        construct and may return new args; returns a handle whose remove() unregisters it."""
        from ..hooks import register
        return register(self, "forward_pre", hook_fn, with_kwargs)

    def register_forward_hook(self, hook_fn, with_kwargs=False):
        """`hook_fn(cell, args, output)` (with_kwargs: `hook_fn(cell, args, kwargs, output)`)
        runs after construct and may return a new output; returns a removable handle."""
        from ..hooks import register
        return register(self, "forward", hook_fn, with_kwargs)

    def register_backward_hook(self, hook_fn):
        """`hook_fn(cell, grad_input, grad_output)` runs in the backward of a PyNative
        gradient: grad_input are the gradients w.r.t. the Cell's Tensor inputs, grad_output
        those w.r.t. its outputs (tuples); a returned tuple replaces grad_input. Returns a
        removable handle."""
        from ..hooks import register
        return register(self, "backward", hook_fn)


class SequentialCell(Cell):
    def __init__(self, *cells):
        super().__init__()
        if len(cells) == 1 and isinstance(cells[0], (list, tuple)):
            cells = cells[0]
        for i, cell in enumerate(cells):
            if not isinstance(cell, Cell):
                raise TypeError(f"cells[{i}] has type {type(cell).__name__}, not a Cell")
            setattr(self, str(i), cell)

    def construct(self, x):
        for cell in self._cells.values():
            x = cell(x)
        return x

    def __len__(self):
        return len(self._cells)

    def __getitem__(self, i):
        return list(self._cells.values())[i]


class CellList(Cell):
    """A list of cells, registered as sub-cells "0", "1", ... (MindSpore's nn.CellList):
    append, extend, insert, indexing (ints and slices), len, iteration. It has no construct:
    a network calls its items."""

    def __init__(self, *args, **kwargs):
        super().__init__()
        if len(args) > 1:
            raise TypeError(f"CellList takes at most one iterable of Cells, got {len(args)}")
        if kwargs:
            raise TypeError(f"CellList got unexpected arguments {sorted(kwargs)}")
        if args:
            self.extend(args[0])

    def _check(self, cell, what="cell"):
        if not isinstance(cell, Cell):
            raise TypeError(f"For 'CellList', the {what} must be a Cell, got "
                            f"{type(cell).__name__}")
        return cell

    def _reset(self, cells):
        for name in list(self._cells):
            self._cells.pop(name)
            object.__delattr__(self, name)
        for i, cell in enumerate(cells):
            setattr(self, str(i), cell)
        _structure_version[0] += 1

    def append(self, cell):
        setattr(self, str(len(self)), self._check(cell))
        return self

    def extend(self, cells):
        if isinstance(cells, Cell) or not hasattr(cells, "__iter__"):
            raise TypeError(f"For 'CellList', extend takes an iterable of Cells, got "
                            f"{type(cells).__name__}")
        for cell in cells:
            self.append(cell)
        return self

    def insert(self, index, cell):
        cells = list(self._cells.values())
        cells.insert(index, self._check(cell))
        self._reset(cells)

    def __getitem__(self, index):
        cells = list(self._cells.values())
        if isinstance(index, slice):
            return CellList(cells[index])
        return cells[index]

    def __setitem__(self, index, cell):
        cells = list(self._cells.values())
        cells[index] = self._check(cell)
        self._reset(cells)

    def __delitem__(self, index):
        cells = list(self._cells.values())
        del cells[index]
        self._reset(cells)

    def __len__(self):
        return len(self._cells)

    def __iter__(self):
        return iter(list(self._cells.values()))


class CellDict(Cell):
    """A dict of named cells, registered as sub-cells (MindSpore's nn.CellDict): indexing,
    `in`, len, iteration over keys, keys/values/items, update, pop, clear."""

    def __init__(self, *args, **kwargs):
        super().__init__()
        if len(args) > 1:
            raise TypeError(f"CellDict takes at most one dict or iterable of (name, Cell), "
                            f"got {len(args)} arguments")
        if args:
            self.update(args[0])

    def __setitem__(self, key, cell):
        if not isinstance(key, str) or not key or "." in key:
            raise KeyError(f"For 'CellDict', a key must be a non-empty str without '.', got "
                           f"{key!r}")
        if hasattr(type(self), key):
            raise KeyError(f"For 'CellDict', the key {key!r} is the name of a CellDict "
                           "method or attribute")
        if not isinstance(cell, Cell):
            raise TypeError(f"For 'CellDict', the value of {key!r} must be a Cell, got "
                            f"{type(cell).__name__}")
        setattr(self, key, cell)

    def __getitem__(self, key):
        return self._cells[key]

    def __delitem__(self, key):
        self._cells.pop(key)
        object.__delattr__(self, key)
        _structure_version[0] += 1

    def __contains__(self, key):
        return key in self._cells

    def __len__(self):
        return len(self._cells)

    def __iter__(self):
        return iter(list(self._cells))

    def keys(self):
        return self._cells.keys()

    def values(self):
        return self._cells.values()

    def items(self):
        return self._cells.items()

    def update(self, cells):
        pairs = cells.items() if hasattr(cells, "items") else cells
        for pair in pairs:
            if len(pair) != 2:
                raise ValueError(f"For 'CellDict', update takes (name, Cell) pairs, got {pair!r}")
            self[pair[0]] = pair[1]

    def pop(self, key):
        cell = self._cells[key]
        del self[key]
        return cell

    def clear(self):
        for key in list(self._cells):
            del self[key]
