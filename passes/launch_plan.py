"""Read a host function after kernel outlining (the `gpu` stage) into a LaunchPlan
(runtime/plan.py), so that the runtime needs no MLIR.

The host function may only allocate, view, copy and launch: each op kind it can contain has
a reader in HOST_OPS; anything else is an error at the op's location, never a silent drop.
Kernel parameters follow the bare-pointer calling convention the ptx stage compiles with:
one device address per memref (views share their base buffer's address: the kernel applies
a view's static offset itself), one value per scalar.

Dynamic sizes: every index value of the host is an int or a size expression of the inputs'
and outputs' dimensions (runtime/plan.py); the reader follows each memref's sizes, strides
and offset (`Layout`) through allocations and views, so `memref.dim`, the metadata
ms-gpu-dynamic-kernel-params extracts for kernels, and the grid arithmetic of
passes/gpu_kernels.py become expressions the runtime evaluates per call.
"""
from __future__ import annotations

import numpy as np
from mlir import ir

from ..dialects import dtypes as dt
from ..dialects.builders import dense_to_numpy
import json

from ..runtime.plan import (Buffer, Copy, For, If, Launch, LaunchPlan, Param, While,
                            is_static, size_op)
from .base import PassFailure, fail
from .diagnostics import CompileError, Diagnostic, DiagnosticCapture, file_location
from .gpu import KERNEL_MODULE
from .gpu_control import CTL_ATTR, RESULTS_ATTR
from ..dialects.ir_helpers import (function_type, functions_by_name, identity_layout, symbol_name,
                         top_level_ops)

_INDEX_DTYPE = "int64"   # index is 64-bit in kernels (convert-gpu-to-nvvm default)


def np_dtype_of(t: ir.Type, op) -> str:
    if isinstance(t, ir.IndexType):
        return _INDEX_DTYPE
    d = dt.from_ir_name(str(t))
    if d is None:
        fail(op, f"the launch plan has no element type for {t}")
    return d.np.name


def _loc(op) -> str:
    file, line, col = file_location(op.location)
    return f"{file}:{line}:{col}" if file else ""


_DYNAMIC = ir.ShapedType.get_dynamic_size()


class Layout:
    """A memref value's sizes, strides and offset as plan sizes (ints or expressions)."""

    def __init__(self, shape, strides=None, offset=0):
        self.shape = tuple(shape)
        self.strides = tuple(strides) if strides is not None else _contiguous(self.shape)
        self.offset = offset


def _contiguous(shape):
    strides, stride = [], 1
    for d in reversed(shape):
        strides.append(stride)
        stride = size_op("mul", stride, d)
    return tuple(reversed(strides))


def _type_layout(t: ir.MemRefType, sizes=()):
    """The layout a memref type states, its dynamic sizes taken in order from `sizes`; None
    when a dynamic stride or offset is not contiguous-derivable (not an identity layout)."""
    sizes = iter(sizes)
    shape = [next(sizes, None) if d == _DYNAMIC else d for d in t.shape]
    if None in shape:
        return None  # (a dynamic size nobody gave)
    if identity_layout(t):
        return Layout(shape)
    strides, offset = t.get_strides_and_offset()
    dyn = ir.ShapedType.get_dynamic_stride_or_offset()
    if dyn in list(strides) + [offset]:
        return None
    return Layout(shape, strides, offset)


class PlanReader:
    """Walks the entry's body once, mapping each SSA value to a buffer name or a constant."""

    def __init__(self, module, fn, in_specs, out_specs, blob_prefix=""):
        self.module = module
        self.fn = fn
        self.blob_prefix = blob_prefix
        self.called: list = []   # the sub-plans (function names) its control nodes run
        self.plan = LaunchPlan(symbol_name(fn))
        self.blobs: dict[str, bytes] = {}
        self.values: dict = {}
        self.layouts: dict = {}   # memref value -> Layout (None: not derivable)
        self.kernels = _kernel_functions(module)
        self.globals = {symbol_name(op): op for op in top_level_ops(module, "memref.global")}
        args = list(fn.regions[0].blocks[0].arguments)
        if len(args) != len(in_specs) + len(out_specs):
            fail(fn, f"entry takes {len(args)} buffers, expected {len(in_specs)} inputs and "
                     f"{len(out_specs)} outputs (run ms-entry-dps)")
        for i, (arg, spec) in enumerate(zip(args, list(in_specs) + list(out_specs))):
            kind, index = ("input", i) if i < len(in_specs) else ("output", i - len(in_specs))
            name = f"{'in' if kind == 'input' else 'out'}{index}"
            shape = tuple(d if type(d) is int else None for d in spec.shape)
            self.plan.buffers.append(Buffer(name, kind, shape, spec.dtype.np.name, index))
            self.values[arg] = name
            self.layouts[arg] = Layout(["dim", name, k] if d is None else d
                                       for k, d in enumerate(shape))

    def buffer_of(self, value, op):
        name = self.values.get(value)
        if not isinstance(name, str):
            fail(op, "the launch plan cannot tell which buffer this operand is")
        return name

    def constant_of(self, value, op, what):
        c = self.values.get(value)
        if c is None or isinstance(c, str) or not is_static(c):
            fail(op, f"{what} is not a compile-time constant")
        return c

    def size_of(self, value, op, what):
        """An int, float or size expression (a size known per call)."""
        c = self.values.get(value)
        if c is None or isinstance(c, str):
            fail(op, f"{what} is neither a constant nor computed from the inputs' sizes")
        return c

    def layout_of(self, value, op) -> Layout:
        layout = self.layouts.get(value)
        if layout is None:
            layout = _type_layout(ir.MemRefType(value.type))
            if layout is None or not all(is_static(d) for d in layout.shape):
                fail(op, "the launch plan cannot tell the sizes and strides of this operand")
        return layout

    def read(self) -> LaunchPlan:
        for op in self.fn.regions[0].blocks[0].operations:
            reader = HOST_OPS.get(op.operation.name)
            if reader is None:
                fail(op, f"the launch plan cannot express host operation "
                         f"'{op.operation.name}'")
            reader(self, op)
        # validated by read_launch_plan, with its sub-plans
        return self.plan

    def new_buffer(self, prefix, t, op, sizes=(), **kw) -> str:
        """A buffer of memref type `t`, its dynamic sizes given in order by `sizes`."""
        t = ir.MemRefType(t)
        if not identity_layout(t) or (len(sizes) != sum(d == _DYNAMIC for d in t.shape)):
            fail(op, f"the launch plan needs contiguous buffers of known sizes, got {t}")
        layout = _type_layout(t, sizes)
        name = f"{prefix}{sum(b.kind == kw['kind'] for b in self.plan.buffers)}"
        self.plan.buffers.append(Buffer(name, shape=layout.shape,
                                        dtype=np_dtype_of(t.element_type, op), **kw))
        return name


# ------------------------------------------------------------------ host op readers

def _constant(r: PlanReader, op):
    a = op.attributes["value"]
    if isinstance(a, ir.IntegerAttr):
        r.values[op.result] = int(a.value)
    elif isinstance(a, ir.FloatAttr):
        r.values[op.result] = float(a.value)
    else:
        fail(op, f"the launch plan cannot hold host constant {a}")


def _alloc(r: PlanReader, op):
    if "symbolOperands" in op.attributes or len(op.operands) != sum(
            d == _DYNAMIC for d in ir.MemRefType(op.result.type).shape):
        fail(op, "the launch plan cannot express allocations with symbol operands")
    sizes = [r.size_of(v, op, "an allocation's size") for v in op.operands]
    name = r.new_buffer("tmp", op.result.type, op, sizes=sizes, kind="temp")
    r.values[op.result] = name
    r.layouts[op.result] = Layout(r.plan.buffer(name).shape)


def _get_global(r: PlanReader, op):
    sym = ir.FlatSymbolRefAttr(op.attributes["name"]).value
    glob = r.globals.get(sym)
    if glob is None or "initial_value" not in glob.attributes:
        fail(op, f"memref.global @{sym} has no initial value")
    name = r.new_buffer("const", op.result.type, op, kind="const")
    buf = r.plan.buffer(name)
    buf.data = f"consts/{r.blob_prefix}{name}.bin"
    r.blobs[buf.data] = dense_bytes(glob.attributes["initial_value"], buf.shape, buf.dtype)
    r.values[op.result] = name


def dense_bytes(attr, shape, dtype) -> bytes:
    a = ir.DenseElementsAttr(attr)
    if np.dtype(dtype) == dt.bfloat16.np:  # the bindings cannot read bf16 (builders reads it)
        return np.ascontiguousarray(dense_to_numpy(a).reshape(shape)).tobytes()
    if a.is_splat:
        value = np.array(a.get_splat_value().value if hasattr(a.get_splat_value(), "value")
                         else a.get_splat_value())
        arr = np.full(shape, value, dtype=dtype)
    else:
        arr = np.array(a).astype(dtype, copy=False).reshape(shape)
    return np.ascontiguousarray(arr, dtype=dtype).tobytes()


def _view(r: PlanReader, op):
    # Views keep their source's aligned base pointer: the kernel applies the view's offset.
    r.values[op.results[0]] = r.buffer_of(op.operands[0], op)
    t = ir.MemRefType(op.results[0].type)
    if not t.has_static_shape:
        r.layouts[op.results[0]] = VIEW_LAYOUTS.get(op.operation.name, _no_layout)(r, op)


def _no_layout(r, op):
    return None  # (layout_of fails at a use that needs it)


def _cast_layout(r, op):
    """memref.cast: the sizes its type leaves dynamic are the source's."""
    src = r.layout_of(op.operands[0], op)
    t = ir.MemRefType(op.results[0].type)
    shape = [s if d == _DYNAMIC else d for d, s in zip(t.shape, src.shape)]
    return Layout(shape, src.strides, src.offset) if not identity_layout(t) else Layout(shape)


def _reshape_layout(r, op):
    """collapse_shape/expand_shape of a contiguous buffer: a contiguous result whose
    dynamic sizes are the products of the source's groups (collapse) or the op's operands
    (expand)."""
    t = ir.MemRefType(op.results[0].type)
    if not identity_layout(t):
        return None
    if op.operation.name == "memref.expand_shape":
        sizes = [r.size_of(v, op, "a reshape's size") for v in list(op.operands)[1:]]
        return _type_layout(t, sizes)
    src = r.layout_of(op.operands[0], op)
    shape = []
    for group in op.attributes["reassociation"]:
        n = 1
        for k in group:
            n = size_op("mul", n, src.shape[ir.IntegerAttr(k).value])
        shape.append(n)
    return Layout(shape)


def _reinterpret_layout(r, op):
    t = ir.MemRefType(op.results[0].type)
    if not identity_layout(t):
        return None
    return _type_layout(t, [r.size_of(v, op, "a view's size")
                            for v in op.operation.opview.sizes])


def _subview_layout(r, op):
    """A subview: its sizes, the source's strides times its own, the source's offset plus
    its offsets along the source's strides (rank-reducing subviews are not followed)."""
    sv = op.operation.opview
    src = r.layout_of(sv.source, op)

    def values(static, dynamic):
        dynamic = iter(r.size_of(v, op, "a subview's size") for v in dynamic)
        return [next(dynamic) if x == _DYNAMIC else x for x in static]
    offsets = values(sv.static_offsets, sv.offsets)
    sizes = values(sv.static_sizes, sv.sizes)
    steps = values(sv.static_strides, sv.strides)
    if len(sizes) != ir.MemRefType(op.results[0].type).rank:
        return None
    offset = src.offset
    for o, stride in zip(offsets, src.strides):
        offset = size_op("add", offset, size_op("mul", o, stride))
    strides = [size_op("mul", a, b) for a, b in zip(src.strides, steps)]
    return Layout(sizes, strides, offset)


VIEW_LAYOUTS = {"memref.cast": _cast_layout, "memref.subview": _subview_layout,
                "memref.collapse_shape": _reshape_layout,
                "memref.expand_shape": _reshape_layout,
                "memref.reinterpret_cast": _reinterpret_layout}


def _dealloc(r: PlanReader, op):
    r.buffer_of(op.operands[0], op)  # buffers live for the whole call


def _copy(r: PlanReader, op):
    src, dst = op.operands
    for v in (src, dst):
        if not identity_layout(ir.MemRefType(v.type)):
            fail(op, "the launch plan copies whole contiguous buffers only (strided copies "
                     "become kernels in ms-gpu-map-linalg)")
    t = ir.MemRefType(dst.type)
    nbytes = np.dtype(np_dtype_of(t.element_type, op)).itemsize
    for d in r.layout_of(dst, op).shape:
        nbytes = size_op("mul", nbytes, d)
    r.plan.steps.append(Copy(r.buffer_of(src, op), r.buffer_of(dst, op), nbytes, _loc(op)))


def _launch(r: PlanReader, op):
    lf = op.operation.opview  # gpu.LaunchFuncOp: named operand groups
    ref = str(op.attributes["kernel"])
    module_name, kernel = (p.lstrip("@") for p in ref.split("::"))
    fn = r.kernels.get(kernel) if module_name == KERNEL_MODULE else None
    if fn is None:
        fail(op, f"kernel {ref} is not in the @{KERNEL_MODULE} module (run ms-gpu-single-module)")
    if lf.asyncDependencies or lf.asyncObject is not None:
        fail(op, "asynchronous launches are not supported in launch plans")
    grid = tuple(r.size_of(v, op, "the grid size")
                 for v in (lf.gridSizeX, lf.gridSizeY, lf.gridSizeZ))
    block = tuple(r.constant_of(v, op, "the block size")
                  for v in (lf.blockSizeX, lf.blockSizeY, lf.blockSizeZ))
    if lf.clusterSizeX is not None:
        fail(op, "thread block clusters are not supported in launch plans")
    smem = 0
    if lf.dynamicSharedMemorySize is not None:
        smem = r.constant_of(lf.dynamicSharedMemorySize, op, "the dynamic shared memory size")
    params = []
    for v in lf.kernelOperands:
        if isinstance(v.type, ir.MemRefType):
            params.append(Param(buffer=r.buffer_of(v, op)))
        else:
            params.append(Param(scalar=r.size_of(v, op, "a scalar kernel argument"),
                                dtype=np_dtype_of(v.type, op)))
    n_args = len(function_type(fn).inputs)
    if n_args != len(params):
        fail(op, f"kernel {kernel} takes {n_args} parameters, the launch passes {len(params)}")
    r.plan.steps.append(Launch(kernel, grid, block, params, smem, static_shared_bytes(fn),
                               _loc(op)))


def _metadata(r: PlanReader, op):
    # extract_strided_metadata: the base buffer (what the deallocation frees) is the buffer;
    # the offset, sizes and strides are sizes of the source's layout
    r.values[op.results[0]] = r.buffer_of(op.operands[0], op)
    results = list(op.results)[1:]
    if not any(True for v in results for _ in v.uses):
        return
    layout = r.layout_of(op.operands[0], op)
    for v, size in zip(results, (layout.offset, *layout.shape, *layout.strides)):
        r.values[v] = size


def _dim(r: PlanReader, op):
    axis = r.constant_of(op.operands[1], op, "the dimension of memref.dim")
    shape = r.layout_of(op.operands[0], op).shape
    if not 0 <= axis < len(shape):
        fail(op, f"memref.dim of dimension {axis} of a rank-{len(shape)} buffer")
    r.values[op.result] = shape[axis]


def _index_arith(kind):
    """A host integer op on sizes (the grid arithmetic of passes/gpu_kernels.py)."""
    def read(r: PlanReader, op):
        a, b = (r.size_of(v, op, "an operand of index arithmetic") for v in op.operands)
        if kind in ("floordiv", "ceildiv", "rem") and b == 0:
            fail(op, "division of a size by zero")
        r.values[op.result] = size_op(kind, a, b)
    return read


def _index_cast(r: PlanReader, op):
    r.values[op.result] = r.size_of(op.operands[0], op, "a cast size")


def _size_to_float(r: PlanReader, op):
    """A size as a float kernel parameter (a mean's run-time divisor)."""
    r.values[op.result] = size_op("float", r.size_of(op.operands[0], op, "a converted size"))


def _call(r: PlanReader, op):
    """A call of a declaration made by ms-gpu-outline-control-flow: a control node."""
    callee = ir.FlatSymbolRefAttr(op.attributes["callee"]).value
    decl = functions_by_name(r.module.operation).get(callee)
    if decl is None or CTL_ATTR not in decl.attributes:
        fail(op, f"the launch plan cannot call '{callee}' (only loops and conditionals "
                 "outlined by ms-gpu-outline-control-flow)")
    info = json.loads(ir.StringAttr(decl.attributes[CTL_ATTR]).value)
    if not all(ir.MemRefType(v.type).has_static_shape
               for v in list(op.operands) + list(op.results)):
        fail(op, f"'{info['api']}' with dynamic sizes: loops and conditionals on the CUDA "
                 "target run with static shapes only")
    ins = [r.buffer_of(v, op) for v in op.operands]
    results = [r.new_buffer("tmp", v.type, op, kind="temp") for v in op.results]
    for v, name in zip(op.results, results):
        r.values[v] = name
    kind, loc = info["kind"], _loc(op)
    if kind == "for":
        nb = [info["lower"], info["upper"]].count(None)
        k = info["carries"]
        step = For(info["body"], info["lower"], info["upper"], info["step"], ins[:nb],
                   ins[nb:nb + k], ins[nb + k:], results, info["api"], loc)
        r.called.append(info["body"])
    elif kind == "while":
        k = info["carries"]
        step = While(info["cond"], info["body"], ins[:k], ins[k:], results, info["api"], loc)
        r.called += [info["cond"], info["body"]]
    else:
        step = If(ins[0], info["then"], info["else"], ins[1:], results, info["api"], loc)
        r.called += [info["then"], info["else"]]
    r.plan.steps.append(step)


def _return(r: PlanReader, op):
    if len(op.operands):
        fail(op, "the entry must return its results through output buffers (ms-entry-dps)")


HOST_OPS = {
    "arith.constant": _constant,
    "memref.alloc": _alloc,
    "memref.get_global": _get_global,
    "memref.collapse_shape": _view,
    "memref.expand_shape": _view,
    "memref.subview": _view,
    "memref.cast": _view,
    "memref.reinterpret_cast": _view,
    "memref.dealloc": _dealloc,
    "memref.copy": _copy,
    "gpu.launch_func": _launch,
    "memref.extract_strided_metadata": _metadata,
    "memref.dim": _dim,
    "arith.index_cast": _index_cast,
    "arith.index_castui": _index_cast,
    "arith.extsi": _index_cast,
    "arith.extui": _index_cast,
    "arith.sitofp": _size_to_float,
    "arith.uitofp": _size_to_float,
    **{f"arith.{name}": _index_arith(kind) for name, kind in (
        ("addi", "add"), ("subi", "sub"), ("muli", "mul"), ("divui", "floordiv"),
        ("divsi", "floordiv"), ("floordivsi", "floordiv"), ("ceildivui", "ceildiv"),
        ("ceildivsi", "ceildiv"),
        ("remui", "rem"), ("remsi", "rem"), ("maxui", "max"), ("maxsi", "max"),
        ("minui", "min"), ("minsi", "min"))},
    "func.call": _call,
    "func.return": _return,
}


# ------------------------------------------------------------------ kernels

def _kernel_functions(module) -> dict:
    for gm in top_level_ops(module, "gpu.module"):
        if symbol_name(gm) == KERNEL_MODULE:
            return {symbol_name(f): f for f in top_level_ops(gm, "gpu.func")}
    return {}


def static_shared_bytes(fn) -> int:
    """Bytes of the kernel's workgroup attributions (static shared memory)."""
    if "workgroup_attributions" not in fn.attributes:
        return 0
    n = ir.IntegerAttr(fn.attributes["workgroup_attributions"]).value
    n_inputs = len(function_type(fn).inputs)
    args = list(fn.regions[0].blocks[0].arguments)[n_inputs:n_inputs + n]
    total = 0
    for a in args:
        t = ir.MemRefType(a.type)
        total += int(np.prod(t.shape, dtype=np.int64)) * max(1, t.element_type.width // 8)
    return total


def read_launch_plan(module: ir.Module, entry: str, in_specs, out_specs):
    """(LaunchPlan, {blob name: bytes}) of `entry` in a module at the gpu stage. Host code the
    plan cannot express raises CompileError located at the op."""
    fn = functions_by_name(module.operation).get(entry)
    if fn is None:
        raise CompileError([Diagnostic("error", "", 0, 0, f"no function '{entry}'")], "gpu")
    functions = functions_by_name(module.operation)
    with DiagnosticCapture(module.context) as capture:
        try:
            reader = PlanReader(module, fn, in_specs, out_specs)
            plan = reader.read()
            blobs = dict(reader.blobs)
            todo = list(reader.called)
            while todo:  # the sub-plans of loops and conditionals, nested ones too
                name = todo.pop(0)
                if name in plan.functions:
                    continue
                sub_fn = functions[name]
                sub_in, sub_out = _region_specs(sub_fn)
                sub = PlanReader(module, sub_fn, sub_in, sub_out, blob_prefix=f"{name}.")
                plan.functions[name] = sub.read()
                blobs.update(sub.blobs)
                todo += sub.called
            plan.validate()
            return plan, blobs
        except PassFailure:
            raise CompileError(capture.errors, "gpu") from None


class _Spec:
    """What PlanReader reads of a TensorSpec: shape and dtype.np.name."""

    def __init__(self, shape, dtype):
        self.shape = shape
        self.dtype = type("D", (), {"np": np.dtype(dtype)})


def _region_specs(fn):
    """(inputs, outputs) of an outlined region's function at the gpu stage (destination
    passing: its arguments are its inputs, then its outputs)."""
    n_out = ir.IntegerAttr(fn.attributes[RESULTS_ATTR]).value
    specs = []
    for t in function_type(fn).inputs:
        t = ir.MemRefType(t)
        specs.append(_Spec(tuple(t.shape), np_dtype_of(t.element_type, fn)))
    return specs[:len(specs) - n_out], specs[len(specs) - n_out:]
