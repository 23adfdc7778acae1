"""ms-cpu-cold-loops: outlined loop nests that do little work per call are compiled without
optimization.

LLVM's O3 pipeline and SelectionDAG cost about the same for a loop over 64 channels as for
one over a million elements: the loop passes, the vectorizer and its masked tail, unrolling.
A training step holds many small nests (a BatchNorm's statistics and the optimizer's update
of its scale and shift, the last steps of a loss), each in a function of its own
(ms-cpu-outline-loops); a MobileNetV2 block's step has 20 that run sequentially. Compiled
unoptimized (`optnone`: no IR optimization, FastISel), such a nest runs a few times slower,
a few microseconds per call, where O3 spent milliseconds on it.

Cold is measured, not guessed: an outlined function is cold when the operations its loops
execute per call of the program, counted from their constant trip counts over every call
site, are at most `max-ops`. A nest with a dynamic trip count, a call (its callee's work is
unknown) or a parallel loop is not cold, nor is one whose call sits in a loop or in a
function that something else calls (its count would be multiplied by unknown trips).
"""
from __future__ import annotations

from mlir import ir

from ..dialects.ir_helpers import (add_passthrough, calls_by_callee, defined_functions, passthrough,
                                   static_trip_count, symbol_name)
from .base import ModulePass, register
from .cpu_outline import OUTLINED_ATTR

# Operations of a nest that make its work unknown here (a callee's loops; a parallel loop is
# large by ms-cpu-parallelize's measure already).
_UNKNOWN_WORK = frozenset(("func.call", "scf.forall", "scf.parallel", "scf.while"))
NO_OPTIMIZATION = ("noinline", "optnone")  # LLVM requires optnone functions be noinline


def executed_ops(block, budget: int) -> int | None:
    """The operations `block` executes, its loops unrolled by their constant trip counts
    (a conditional's costlier branch), or None when that is unknown or exceeds `budget`."""
    total = 0
    for op in block.operations:
        op = op.operation
        if op.name in _UNKNOWN_WORK:
            return None
        work = 1
        if op.name == "scf.for":
            trips = static_trip_count(op)
            body = None if trips is None else executed_ops(op.regions[0].blocks[0], budget)
            if body is None:
                return None
            work += trips * body
        elif len(op.regions):
            branches = [executed_ops(b, budget) for r in op.regions for b in r.blocks]
            if None in branches:
                return None
            work += max(branches, default=0)
        total += work
        if total > budget:
            return None
    return total


def _calls_per_program_call(calls, callers_of) -> int | None:
    """How often the calls `calls` run per call of the program: one each when it sits in the
    body of a function nothing calls, else None."""
    for call in calls:
        parent = call.operation.parent
        if parent is None or parent.name != "func.func" or callers_of.get(symbol_name(parent)):
            return None
    return len(calls)


@register
class ColdLoops(ModulePass):
    name = "ms-cpu-cold-loops"
    summary = ("mark optnone (with noinline) the outlined loop functions whose loops execute "
               "at most max-ops operations per call of the program")
    # 4,096 operations: unoptimized, ~1 ns each (a spill or reload beside most), a few
    # microseconds per call at most. LeNet5's training step (~1.3 ms) has 16 such nests,
    # 22,000 operations per call: as fast as before (alternated in one process, 3,000 calls
    # each: best 1,295 against 1,300 us); at 16,384 (25 nests, 126,000 operations) 3% slower.
    options = {"max-ops": 4096}

    def run(self, module):
        limit = self.opts["max-ops"]
        calls = calls_by_callee(module.operation)
        for fn in defined_functions(module):
            if OUTLINED_ATTR not in fn.attributes:
                continue
            runs = _calls_per_program_call(calls.get(symbol_name(fn), []), calls)
            if not runs:
                continue
            work = executed_ops(fn.regions[0].blocks[0], limit // runs)
            if work is not None and work * runs <= limit:
                _mark_unoptimized(fn)


def _mark_unoptimized(fn):
    add_passthrough(fn, *NO_OPTIMIZATION)


def unoptimized(fn) -> bool:
    """Whether a func.func or llvm.func is marked to compile without optimization."""
    return any(isinstance(a, ir.StringAttr) and a.value == "optnone" for a in passthrough(fn))
