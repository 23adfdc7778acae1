"""ms-fuse: group ops into ms.fused regions, each of which becomes one loop nest on the CPU
(and one kernel on a GPU), in the manner of MindSpore's graph-kernel fusion.

Three kinds of region, classified from the op registry only:
- "elementwise": a chain of ops with a `scalar` rule, numpy broadcasting included;
- "reduction": an op whose `fusion` role is "reduction" (reduce_*, softmax) with the
  elementwise producers of its input (its `prologue`) and an elementwise epilogue on its
  result (mean/var patterns: x - mean, square, reduce_mean, + eps, rsqrt);
- "matmul": matmul/batch_matmul with an elementwise epilogue (bias, activation, scale).

Regions grow backwards from a root (the last op of the region, its only result: IRDL keeps
ms.fused to one result) through the producers of its operands. A producer joins when
- it is elementwise, or it is an anchor (reduction, matmul) feeding the epilogue, at most one
  per region, evaluated exactly once per element of its result;
- all its users are in the region (it moves in); or it is cheap and its value is still used
  outside (it is duplicated, a copy moves in): expensive work is never duplicated;
- it is evaluated no more often in the region than on its own (a producer broadcast into a
  larger loop, or read by a softmax's three loops, is recomputed per read), unless cheap;
- inside a reduction's loops (its prologue), it does not create dimensions its operands lack
  (broadcast_to): each reduced loop must be spanned by some input;
- the region stays within `max-ops` ops (bounded loop bodies and compile time).
Producers are visited latest first, so every user that can join has been decided before its
producer is, and because a producer only moves when all its users are inside, no value
leaves a region and comes back: regions cannot form cycles.
"""
from __future__ import annotations

import heapq

from mlir import ir

from ..dialects.symdim import estimated_numel

from ..dialects import ops as _ops  # noqa: F401  (fills the registry)
from ..dialects.builders import data_values, operand_groups, spec_of
from ..dialects.lowering import scalar_cost
from ..dialects.registry import OPS
from .base import ModulePass, register
from ..dialects.ir_helpers import ms_blocks

# Ops whose scalar rule costs at most this much may be recomputed (duplicated into several
# regions, or evaluated per element of a broadcast): add, mul, select, cast, relu, ...
CHEAP = 2


def _numel(value) -> int:
    """Elements of a value, for the cost rules (a dynamic size estimated: symdim.estimate)."""
    return estimated_numel(spec_of(value.type).shape)


class Region:
    def __init__(self, root, position):
        self.root = root
        self.moved = {root}      # ops that move into the region
        self.copied = set()      # cheap ops whose copy moves in (the original stays)
        self.anchor = None
        self.prologue = set()    # members computed inside the anchor's loops
        self.position = position

    @property
    def members(self):
        return self.moved | self.copied

    @property
    def kind(self):
        return OPS[self.anchor.name].fusion.kind if self.anchor is not None else "elementwise"


class BlockFuser:
    def __init__(self, block, max_ops):
        self.block = block
        self.max_ops = max_ops
        self.ops = [op.operation for op in block.operations]
        self.position = {op: i for i, op in enumerate(self.ops)}
        self.taken = set()       # ops moved into a region
        self.pinned = set()      # values read by a copied op: their producer stays outside
        self.copy_users = {}     # copied op -> the members of regions that read its copy

    # -- classification (registry only)
    @staticmethod
    def opdef(op):
        return OPS.get(op.name)

    def is_elementwise(self, op):
        d = self.opdef(op)
        return d is not None and d.scalar is not None and len(op.results) == 1

    def role(self, op):
        d = self.opdef(op)
        return d.fusion if d is not None and len(op.results) == 1 else None

    def cost(self, op):
        return scalar_cost(self.opdef(op), [spec_of(v.type) for v in self.data(op)],
                           spec_of(op.results[0].type))

    def data(self, op):
        d = self.opdef(op)
        return data_values(d, operand_groups(d, op))

    def expands(self, op):
        """Whether a dimension of op's result comes from none of its operands (broadcast_to
        does that; numpy broadcasting does not): inside a reduction's loops such an op would
        leave a reduced loop that no input spans."""
        out = spec_of(op.results[0].type).shape
        covered = set()
        for v in self.data(op):
            shape = spec_of(v.type).shape
            offset = len(out) - len(shape)
            covered |= {offset + i for i, d in enumerate(shape) if d == out[offset + i]}
        return any(d != 1 and i not in covered for i, d in enumerate(out))

    # -- growing one region
    def reads(self, region, member, evals):
        """(producer, times it would be evaluated) for each data operand of a member."""
        if member is region.anchor:
            role = self.role(member)
            if not role.prologue:
                return []
            return [(v, _numel(v) * role.input_passes) for v in self.data(member)]
        return [(v, evals) for v in self.data(member)]

    def grow(self, root):
        region = Region(root, self.position[root])
        if self.role(root) is not None:
            region.anchor = root
        evals = {root: _numel(root.results[0])}
        queue = [(-self.position[root], root)]
        while queue:
            _, member = heapq.heappop(queue)
            for value, times in self.reads(region, member, evals.get(member)):
                producer = value.owner
                if isinstance(producer, ir.Block):
                    continue
                producer = producer.operation
                if producer in region.members or producer in self.taken:
                    continue
                if producer.parent != root.parent or producer not in self.position:
                    continue
                how = self.admit(region, member, producer, times)
                if how is None:
                    continue
                (region.moved if how == "move" else region.copied).add(producer)
                if member is region.anchor or member in region.prologue:
                    region.prologue.add(producer)
                if how == "move" and self.role(producer) is not None:
                    region.anchor = producer
                evals[producer] = times
                heapq.heappush(queue, (-self.position[producer], producer))
        return region

    def admit(self, region, member, producer, times):
        """"move", "copy" or None: how `producer` may join the region at `member`."""
        if len(region.members) >= self.max_ops:
            return None
        inside = (producer.results[0] not in self.pinned
                  and all(u.owner.operation in region.moved for u in producer.results[0].uses))
        if self.is_elementwise(producer):
            if (member is region.anchor or member in region.prologue) and self.expands(producer):
                return None
            cheap = self.cost(producer) <= CHEAP
            if times > _numel(producer.results[0]) and not cheap:
                return None  # expensive work evaluated more often than on its own
            if inside:
                return "move"
            return "copy" if cheap and not self.stored_anyway(region, producer) else None
        role = self.role(producer)
        if (role is None or region.anchor is not None or not inside
                or not self.is_elementwise(member) or times != _numel(producer.results[0])):
            return None
        return "move"

    def stored_anyway(self, region, producer):
        """Whether a copy of `producer` would only re-read more: some user outside this
        region needs its value stored, and recomputing it reads as much as reading it (no
        operand is smaller: a broadcast of a small tensor is cheaper to recompute). Reading
        the stored value then also frees the operands sooner (a residual `y + x` recomputed
        in the backward kept both y and x alive). A user needs the value stored when it
        cannot take a copy (not elementwise, not an anchor reading it in its loops), or when
        it was decided already (it comes after this region's root) without one."""
        n = _numel(producer.results[0])
        if any(_numel(v) < n for v in self.data(producer)):
            return False
        covered = region.members | self.copy_users.get(producer, set())
        root = self.position[region.root]
        for use in producer.results[0].uses:
            user = use.owner.operation
            if user in covered:
                continue
            role = self.role(user) if user in self.position else None
            fusable = user in self.position and (self.is_elementwise(user)
                                                 or (role is not None and role.prologue))
            if not fusable or self.position[user] > root:
                return True
        return False

    def copied_into_every_user(self, op):
        """Whether every user of op's result is a member of a region holding a copy of op
        (a region grown from it would compute a value nothing reads)."""
        readers = self.copy_users.get(op, ())
        uses = list(op.results[0].uses)
        return bool(uses) and all(u.owner.operation in readers for u in uses)

    # -- building the regions
    def run(self):
        regions = []
        for op in reversed(self.ops):
            if op in self.taken or not (self.is_elementwise(op) or self.role(op)):
                continue
            if self.copied_into_every_user(op):
                continue  # nothing reads the original: it is erased below
            region = self.grow(op)
            if len(region.members) < 2:
                continue
            self.taken |= region.moved
            # A copy reads its operands where the original did: from outside the region,
            # where they must stay (a later region may not move them in).
            members = region.members
            for copied in region.copied:
                self.copy_users.setdefault(copied, set()).update(
                    u.owner.operation for u in copied.results[0].uses
                    if u.owner.operation in members)
            for copied in region.copied:
                for v in self.data(copied):
                    if isinstance(v.owner, ir.Block) or v.owner.operation not in members:
                        self.pinned.add(v)
            regions.append(region)
        # Originals of copied ops whose every user moved into regions with a copy, latest
        # first (a copied chain's original goes once its original users have gone). (Not
        # while building: an op copied into one region may be the root of another. Ordered
        # before it: once ops have moved into regions, the position table does not find all
        # of them.)
        originals = sorted({op for region in regions for op in region.copied
                            if op not in self.taken}, key=self.position.__getitem__, reverse=True)
        for region in regions:
            build_region(region, self.position)
        for op in originals:
            if all(not list(r.uses) for r in op.results):
                op.erase()
        return len(regions)


def build_region(region, position):
    """Replace the region's ops by an ms.fused op at the root's place."""
    root = region.root
    result = root.results[0]
    with ir.InsertionPoint(root), root.location:
        fused = ir.Operation.create("ms.fused", results=[result.type],
                                    attributes={"kind": ir.StringAttr.get(region.kind)},
                                    regions=1)
    result.replace_all_uses_with(fused.results[0])
    body = fused.regions[0].blocks.append()
    remap = {}
    for op in sorted(region.members, key=position.__getitem__):
        if op in region.copied:
            copy = op.clone(ir.InsertionPoint(body))
            remap[op.results[0]] = copy.results[0]
            op = copy
        else:
            body.append(op)
        for i, v in enumerate(op.operands):
            if v in remap:
                op.operands[i] = remap[v]
    with ir.InsertionPoint(body), root.location:
        # (the generic form: importing mlir.dialects.gpu costs every first compile ~6 ms)
        ir.Operation.create("gpu.yield", operands=[remap.get(result, result)])


@register
class Fuse(ModulePass):
    name = "ms-fuse"
    summary = ("group elementwise chains, reductions with their producers and epilogues, and "
               "matmul epilogues into ms.fused regions")
    options = {"max-ops": 32}

    def run(self, module):
        # Function bodies and the regions of loops and conditionals in them: ops fuse
        # within one block, never across a region's boundary (a producer outside a loop
        # is not in the body's block; one whose user is inside a region stays outside).
        for block in ms_blocks(module):
            BlockFuser(block, self.opts["max-ops"]).run()
