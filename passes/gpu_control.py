"""ms-gpu-outline-control-flow: loops and conditionals on the CUDA target.

Why this design: a CUDA executable is a launch plan the runtime interprets without MLIR
(runtime/plan.py). Rather than making the host code's loops part of that plan (after
bufferization they carry memref iter_args, the deallocation pipeline's ownership flags and
conditional frees, none of which a plan can hold), every region of a loop or conditional is
outlined, on tensors right after convert-ms-to-linalg, into its own public function, which the
CUDA pipeline compiles like any entry into its own straight-line plan (its kernels go into the
one gpu.module). In its parent the region op becomes a call of a private declaration that
describes it (attribute `ms.ctl`, JSON); the launch plan reader turns that call into a control
node (`for`, `while`, `if`) whose bodies are the sub-plans, and the runtime runs them: carries
are device buffers handed from one iteration to the next, a loop's index is a 0-d int64 device
buffer the runtime writes, and a WhileLoop's condition or a cond's predicate is copied back to
the host (one small device-to-host copy per iteration or branch).

- scf.for: `body(i: tensor<i64>, carries..., captured...) -> carries`; bounds are constants or
  0-d integer tensors (ForiLoop's Tensor bounds), read on the host at the loop's start. Index
  arithmetic on the induction variable (the reverse loops of gradients compute trip-1-j) is
  rewritten to arithmetic on 0-d tensors, which convert-elementwise-to-linalg makes kernels.
- scf.while: `cond(carries..., captured...) -> tensor<i8>` and `body(carries...,
  captured...) -> carries` (the before region must forward its arguments unchanged, as
  WhileLoop's does).
- scf.if: `then(captured...) -> results`, `else(captured...) -> results`; the predicate is a
  0-d bool (i8) tensor.
Nested regions are outlined from the outlined functions in turn. Scalar constants read from
above are copied into the functions; other scalars from above are an error.
"""
from __future__ import annotations

import json

from mlir import ir
from mlir.dialects import arith, func

from .base import ModulePass, fail, register
from ..dialects.ops.control import api_name, free_values
from ..dialects.ir_helpers import (constant_int, public_functions, remap_operands, symbol_name,
                                  symbol_names)

CTL_ATTR = "ms.ctl"            # on the private declaration standing for a region op
RESULTS_ATTR = "ms.plan_results"  # on outlined functions: how many results they have
REGION_OPS = ("scf.for", "scf.while", "scf.if")


def _i64():
    return ir.IntegerType.get_signless(64)


def _defining(v):
    owner = v.owner
    return None if isinstance(owner, ir.Block) else owner.operation


def _constant_index(v):
    return constant_int(v) if isinstance(v.type, ir.IndexType) else None


def _tensor_source(v, loop, what):
    """The 0-d integer or bool tensor a host scalar was read from (index_cast/trunci of a
    tensor.extract), or a located error."""
    op = _defining(v)
    while op is not None and op.name in ("arith.index_cast", "arith.trunci", "arith.extui",
                                         "arith.extsi"):
        op = _defining(op.operands[0])
    if op is None or op.name != "tensor.extract" or len(op.operands) != 1:
        fail(loop, f"'{loop.name}' ({api_name(loop)}): its {what} is not read from a 0-d "
                   "tensor; the CUDA target cannot compute it on the host")
    return op.operands[0]


class _Outliner:
    def __init__(self, module):
        self.module = module
        self.count = 0
        self.body = module.regions[0].blocks[0]
        self.taken = symbol_names(module)

    def fresh(self, parent, kind):
        """A name for a region's functions (it and it + `_body`, `_cond`, ...) that no
        symbol of the input starts with: a module with `f__for1_body` got a second one."""
        while True:
            self.count += 1
            name = f"{parent}__{kind}{self.count}"
            if not any(taken.startswith(name) for taken in self.taken):
                return name

    # -------------------------------------------------------------- building functions

    def new_function(self, name, arg_types, result_types, loc):
        with ir.InsertionPoint(self.body), loc:
            fn = func.FuncOp(name, ir.FunctionType.get(arg_types, result_types))
            fn.attributes[RESULTS_ATTR] = ir.IntegerAttr.get(_i64(), len(result_types))
            block = fn.add_entry_block()
        return fn, block

    def declare(self, name, operands, results, info, loc):
        with ir.InsertionPoint(self.body), loc:
            decl = func.FuncOp(name, ir.FunctionType.get([v.type for v in operands],
                                                         [r.type for r in results]),
                               visibility="private")
            decl.attributes[CTL_ATTR] = ir.StringAttr.get(json.dumps(info))
            # the region functions only read their operands: no defensive copies
            read = ir.DictAttr.get({"bufferization.access": ir.StringAttr.get("read")})
            decl.attributes["arg_attrs"] = ir.ArrayAttr.get([read] * len(operands))
        return decl

    def fill(self, op, block, src_block, mapping, frees, skip=()):
        """Copy `src_block`'s ops into `block` (a fresh function's), region arguments and
        captured values read from `mapping`; the terminator becomes func.return of its
        operands."""
        with ir.InsertionPoint(block), op.location:
            for v in frees:
                if v in mapping:
                    continue
                src = _defining(v)
                if src is not None and src.name == "arith.constant":
                    mapping[v] = src.clone().results[0]
                else:
                    fail(op, f"'{op.name}' ({api_name(op)}): a scalar from outside its region "
                             f"({v.type}) cannot be passed to a region on the CUDA target")
            ops = [o.operation for o in src_block.operations]
            for inner in ops[:-1]:
                if inner in skip:
                    continue
                copy = inner.clone()
                remap_operands(copy, mapping)
                mapping.update(zip(inner.results, copy.results))
            term = ops[-1]
            returned = [mapping.get(v, v) for v in term.operands]
            return returned

    # -------------------------------------------------------------- the region ops

    def outline(self, fn):
        parent = symbol_name(fn)
        todo = [op.operation for op in fn.regions[0].blocks[0].operations
                if op.operation.name in REGION_OPS]
        made = []
        for op in todo:
            made += getattr(self, "_" + op.name.split(".")[1])(op, parent)
        return made

    def _captured(self, op):
        frees = free_values(op)
        tensors = [v for v in frees if isinstance(v.type, ir.RankedTensorType)]
        scalars = [v for v in frees if not isinstance(v.type, ir.RankedTensorType)]
        return tensors, scalars

    def _replace(self, op, decl, operands):
        with ir.InsertionPoint(op), op.location:
            call = func.CallOp(decl, operands)
        for old, new in zip(op.results, call.results if len(op.results) else []):
            old.replace_all_uses_with(new)
        op.erase()

    def _for(self, op, parent):
        loop = op.opview
        tensors, scalars = self._captured(op)
        carries = [a.type for a in list(loop.body.arguments)[1:]]
        info = {"kind": "for", "api": api_name(op), "carries": len(carries),
                "captured": len(tensors)}
        pre = []
        for key, v in (("lower", loop.lowerBound), ("upper", loop.upperBound),
                       ("step", loop.step)):
            c = _constant_index(v)
            if c is None:
                if key == "step":
                    fail(op, f"'{op.name}' ({api_name(op)}): its step must be a constant")
                pre.append(_tensor_source(v, op, f"{key} bound"))
                info[key] = None
            else:
                info[key] = c
        name = self.fresh(parent, "for")
        body_fn, block = self.new_function(
            name + "_body", [ir.RankedTensorType.get([], _i64())] + carries
            + [v.type for v in tensors], carries, op.location)
        args = list(block.arguments)
        mapping = dict(zip(list(loop.body.arguments)[1:], args[1:1 + len(carries)]))
        mapping.update(zip(tensors, args[1 + len(carries):]))
        iv = loop.induction_variable
        with ir.InsertionPoint(block), op.location:
            index = _IndexAsTensor(op, iv, args[0], mapping)
            index.rewrite_uses(loop.body)
        returned = self.fill(op, block, loop.body, mapping, scalars, index.done)
        with ir.InsertionPoint(block), op.location:
            func.ReturnOp(returned)
        info["body"] = name + "_body"
        decl = self.declare(name, pre + list(loop.initArgs) + tensors, list(op.results),
                            info, op.location)
        self._replace(op, decl, pre + list(loop.initArgs) + tensors)
        return [body_fn]

    def _while(self, op, parent):
        loop = op.opview
        tensors, scalars = self._captured(op)
        before, after = loop.before.blocks[0], loop.after.blocks[0]
        carries = [a.type for a in before.arguments]
        cond_op = list(before.operations)[-1]
        forwarded = list(cond_op.operands)[1:]
        if forwarded != list(before.arguments) or [a.type for a in after.arguments] != carries:
            fail(op, f"'{op.name}' ({api_name(op)}): on the CUDA target the condition region "
                     "must pass its arguments on unchanged")
        name = self.fresh(parent, "while")
        pred_src = None
        # the condition function: carries and captured tensors -> the predicate tensor
        cond_fn, block = self.new_function(name + "_cond", carries + [v.type for v in tensors],
                                           [], op.location)
        args = list(block.arguments)
        mapping = dict(zip(before.arguments, args[:len(carries)]))
        mapping.update(zip(tensors, args[len(carries):]))
        self.fill(op, block, before, mapping, scalars)
        pred_src = mapping.get(_tensor_source(cond_op.operands[0], op, "condition"))
        if pred_src is None:
            fail(op, f"'{op.name}' ({api_name(op)}): the condition is not computed in its "
                     "region")
        with ir.InsertionPoint(block), op.location:
            func.ReturnOp([pred_src])
        _set_results(cond_fn, [pred_src.type])
        body_fn, block = self.new_function(name + "_body", carries + [v.type for v in tensors],
                                           carries, op.location)
        args = list(block.arguments)
        mapping = dict(zip(after.arguments, args[:len(carries)]))
        mapping.update(zip(tensors, args[len(carries):]))
        returned = self.fill(op, block, after, mapping, scalars)
        with ir.InsertionPoint(block), op.location:
            func.ReturnOp(returned)
        info = {"kind": "while", "api": api_name(op), "carries": len(carries),
                "captured": len(tensors), "cond": name + "_cond", "body": name + "_body"}
        decl = self.declare(name, list(loop.inits) + tensors, list(op.results), info,
                            op.location)
        self._replace(op, decl, list(loop.inits) + tensors)
        return [cond_fn, body_fn]

    def _if(self, op, parent):
        tensors, scalars = self._captured(op)
        if not len(op.results):
            fail(op, f"'{op.name}' ({api_name(op)}): a conditional without results")
        pred = _tensor_source(op.operands[0], op, "predicate")
        results = [r.type for r in op.results]
        name = self.fresh(parent, "if")
        made = []
        for which, region in (("then", op.regions[0]), ("else", op.regions[1])):
            if not len(region.blocks):
                fail(op, f"'{op.name}' ({api_name(op)}): a conditional without an else branch")
            fn, block = self.new_function(f"{name}_{which}", [v.type for v in tensors],
                                          results, op.location)
            mapping = dict(zip(tensors, block.arguments))
            returned = self.fill(op, block, region.blocks[0], mapping, scalars)
            with ir.InsertionPoint(block), op.location:
                func.ReturnOp(returned)
            made.append(fn)
        info = {"kind": "if", "api": api_name(op), "captured": len(tensors),
                "then": name + "_then", "else": name + "_else"}
        decl = self.declare(name, [pred] + tensors, list(op.results), info, op.location)
        self._replace(op, decl, [pred] + tensors)
        return made


def _set_results(fn, types):
    ftype = ir.FunctionType(ir.TypeAttr(fn.attributes["function_type"]).value)
    fn.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(ftype.inputs, types))
    fn.attributes[RESULTS_ATTR] = ir.IntegerAttr.get(_i64(), len(types))


# Index arithmetic the induction variable may go through, as elementwise tensor ops.
_INDEX_OPS = ("arith.addi", "arith.subi", "arith.muli", "arith.divui", "arith.divsi",
              "arith.remui", "arith.remsi", "arith.maxsi", "arith.minsi")


class _IndexAsTensor:
    """The induction variable is the 0-d int64 tensor `arg`: every index value computed from
    it (and the index_cast/from_elements reading it as a tensor) gets a 0-d tensor twin built
    at the function's start; the region's own ops are then cloned reading the twins."""

    def __init__(self, loop, iv, arg, mapping):
        self.loop, self.mapping = loop, mapping
        self.twin = {iv: arg}
        self.done = []   # the region's ops replaced by twins (not cloned)

    def tensor_of(self, v):
        t = self.twin.get(v)
        if t is not None:
            return t
        c = _constant_index(v)
        if c is None:
            fail(self.loop, f"'{self.loop.name}' ({api_name(self.loop)}): an index computed "
                            "from its induction variable in a way the CUDA target cannot "
                            "run on the device")
        t = arith.constant(ir.RankedTensorType.get([], _i64()),
                           ir.DenseElementsAttr.get_splat(
                               ir.RankedTensorType.get([], _i64()),
                               ir.IntegerAttr.get(_i64(), c)))
        self.twin[v] = t
        return t

    def rewrite_uses(self, body):
        for op in [o.operation for o in body.operations]:
            ins = list(op.operands)
            if not any(v in self.twin for v in ins):
                continue
            name = op.name
            self.done.append(op)
            if name in _INDEX_OPS and isinstance(op.results[0].type, ir.IndexType):
                a, b = (self.tensor_of(v) for v in ins)
                self.twin[op.results[0]] = ir.Operation.create(
                    name, results=[a.type], operands=[a, b]).results[0]
            elif name == "arith.index_cast":
                a = self.twin[ins[0]]
                width = ir.IntegerType(op.results[0].type).width
                t = ir.RankedTensorType.get([], op.results[0].type)
                if width < 64:
                    a = arith.trunci(t, a)
                elif width > 64:
                    a = arith.extsi(t, a)
                self.twin[op.results[0]] = a
            elif name == "tensor.from_elements" and ir.RankedTensorType(
                    op.results[0].type).rank == 0:
                self.mapping[op.results[0]] = self.twin[ins[0]]
            else:
                fail(op, f"'{name}' reads the induction variable of '{self.loop.name}' "
                         f"({api_name(self.loop)}), which the CUDA target keeps on the device")


@register
class GpuOutlineControlFlow(ModulePass):
    name = "ms-gpu-outline-control-flow"
    summary = ("CUDA: each region of a loop or conditional into its own function (its own "
               "launch plan), the region op a call of a declaration describing it")

    def run(self, module):
        outliner = _Outliner(module)
        todo = list(public_functions(module))
        while todo:
            fn = todo.pop(0)
            todo += outliner.outline(fn)
        # the from_elements/index ops left in the bodies are dead: canonicalize drops them


def _owned_by_plan(v) -> bool:
    """Whether a buffer is one the launch plan makes itself: an allocation, or a result of a
    loop or conditional (through views of it)."""
    op = _defining(v)
    while op is not None and op.name in ("memref.extract_strided_metadata", "memref.cast"):
        op = _defining(op.operands[0])
    if op is None:
        return False
    if op.name == "memref.alloc":
        return True
    return (op.name == "func.call"
            and ir.FlatSymbolRefAttr(op.attributes["callee"]).value in _DECLS)


_DECLS: dict = {}


@register
class GpuDropControlDeallocs(ModulePass):
    name = "ms-gpu-drop-control-deallocs"
    summary = ("CUDA: in host functions with loops or conditionals, drop the deallocations "
               "of the buffers the launch plan owns (its temporaries live for the call; the "
               "ownership checks between a region's results would be host code)")

    def run(self, module):
        from ..dialects.ir_helpers import functions, ops_of_kind
        _DECLS.clear()
        _DECLS.update({symbol_name(f): f for f in functions(module) if CTL_ATTR in f.attributes})
        if not _DECLS:
            return
        for fn in public_functions(module):
            if not any(ir.FlatSymbolRefAttr(c.attributes["callee"]).value in _DECLS
                       for c in ops_of_kind(fn, "func.call")):
                continue
            for op in ops_of_kind(fn, "bufferization.dealloc"):
                if any(len(list(r.uses)) for r in op.results):
                    continue
                n = _n_memrefs(op)
                if all(_owned_by_plan(v) for v in list(op.operands)[:n]):
                    op.erase()


def _n_memrefs(op):
    """bufferization.dealloc's operands: memrefs, then as many conditions, then retained."""
    n_retained = len(op.results)
    return (len(op.operands) - n_retained) // 2
