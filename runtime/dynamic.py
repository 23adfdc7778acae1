"""Calls of executables with dynamic dimensions: sizes from the arrays, checks, outputs.

An entry compiled with `tensor<?x784xf32>` arguments accepts any size there. Before the code
runs, the sizes the arrays bring are checked against what the program needs (two dynamic
dimensions an add or a matmul combines must agree: each check names the op and the user's
line it came from), and the outputs, which the caller owns, are allocated with the sizes the
shape rules derived (`4 * a0.0` is four times dimension 0 of argument #0). Nothing here needs
MLIR: artifacts carry the same description in their manifest.

A size is written in JSON as an int, or as a list of terms `[coefficient, [atom, ...]]`
(no atoms: the constant term), an atom `a<k>.<i>` being dimension i of input k, or a clamp
or quotient of such sizes spelled out (`max(-1+a0.0,0)`: a slice's size, dialects/symdim.py).
"""
from __future__ import annotations

import operator

import numpy as np

from ..dialects.dtypes import TensorSpec
from ..dialects.symdim import Dim, atom_leaves
from . import fastcall
from .calls import CallError
from .memref import data_pointer
from .outputs import _UNSHARED, _refs


def dim_to_json(d):
    """A size for the manifest; ValueError for one not computed from the inputs' sizes."""
    if not isinstance(d, Dim):
        return int(d)
    if not all(a.startswith("a") for a in d.atoms):
        raise ValueError(f"size {d} is not a function of the inputs' sizes")
    return [[c, list(mono)] for mono, c in sorted(d.terms.items())]


def dim_from_json(x, n_inputs=None):
    """The inverse of dim_to_json; ValueError for anything else (a damaged manifest)."""
    if type(x) is int:
        if x < 0:
            raise ValueError(f"size {x} is negative")
        return x
    if not isinstance(x, list) or not x:
        raise ValueError(f"size {x!r} is neither an int nor a list of terms")
    terms = {}
    for term in x:
        if (not isinstance(term, list) or len(term) != 2 or type(term[0]) is not int
                or not isinstance(term[1], list)
                or not all(isinstance(a, str) and _size_atom(a, n_inputs) for a in term[1])):
            raise ValueError(f"size term {term!r} is not [coefficient, [atom, ...]]")
        terms[tuple(sorted(term[1]))] = term[0]
    if set(terms) <= {()}:
        raise ValueError(f"size {x!r} is a constant written as terms")
    return Dim(terms)


def _size_atom(atom: str, n_inputs=None) -> bool:
    """An input's size, or a clamp or quotient of them (a slice's: symdim.atom_leaves)."""
    try:
        leaves = atom_leaves(atom)
    except ValueError:
        return False
    return all(_atom_position(a, n_inputs) for a in leaves)


def _atom_position(atom: str, n_inputs=None):
    """(input, axis) of an atom `a<k>.<i>`, or None."""
    if not atom.startswith("a") or "." not in atom:
        return None
    k, _, i = atom[1:].partition(".")
    if not (k.isdigit() and i.isdigit()):
        return None
    if n_inputs is not None and int(k) >= n_inputs:
        return None
    return int(k), int(i)


class DynamicShapes:
    """The run-time side of an entry's dynamic dimensions: where they are in the inputs, how
    the outputs' sizes follow from them, and the checks a call must pass."""

    def __init__(self, entry: str, in_specs, out_specs, checks):
        self.entry = entry
        self.in_specs = in_specs
        self.out_specs = out_specs
        self.dynamic_inputs = [(k, i) for k, s in enumerate(in_specs)
                               for i, d in enumerate(s.shape) if isinstance(d, Dim)]
        self.static_inputs = [(k, i, d) for k, s in enumerate(in_specs)
                              for i, d in enumerate(s.shape) if not isinstance(d, Dim)]
        self.checks = _distinct_checks(checks)  # (Dim or int, Dim or int, what, where)
        # evaluated per call: the names, the checks' and the outputs' sizes, made once
        self._names = [(f"a{k}.{i}", k, i) for k, i in self.dynamic_inputs]
        self._check_values = [(_evaluator(a), _evaluator(b)) for a, b, _, _ in self.checks]
        self._out_sizes = [[_evaluator(d) for d in spec.shape] for spec in out_specs]

    @classmethod
    def from_description(cls, entry, in_specs, out_specs, description: dict):
        """From the compiler's (or a manifest's) description: `results` (the sizes of each
        output) and `checks`; the specs give the dtypes and ranks, None or a Dim where a
        size is dynamic. ValueError for a description that does not fit them."""
        n = len(in_specs)
        ins = [TensorSpec(tuple(Dim.atom(f"a{k}.{i}") if d is None or isinstance(d, Dim)
                                else d for i, d in enumerate(s.shape)), s.dtype)
               for k, s in enumerate(in_specs)]
        results = description.get("results")
        if not isinstance(results, list) or len(results) != len(out_specs):
            raise ValueError("the dynamic sizes do not describe every output")
        outs = []
        for shape, spec in zip(results, out_specs):
            if not isinstance(shape, list) or len(shape) != len(spec.shape):
                raise ValueError(f"the sizes {shape!r} do not fit an output {spec}")
            outs.append(TensorSpec(tuple(dim_from_json(d, n) for d in shape), spec.dtype))
        checks = description.get("checks")
        if not isinstance(checks, list):
            raise ValueError("the dynamic checks are not a list")
        checks = [(dim_from_json(c["a"], n), dim_from_json(c["b"], n), str(c["what"]),
                   str(c["where"])) for c in checks]
        return cls(entry, ins, outs, checks)

    def sizes(self, arrays) -> dict:
        """The atoms' sizes in this call; CallError for a wrong rank or static size."""
        for k, (a, spec) in enumerate(zip(arrays, self.in_specs)):
            if a.ndim != len(spec.shape):
                raise CallError(f"input #{k} of '{self.entry}' has rank {a.ndim} (shape "
                                f"{a.shape}), expected {spec}")
        for k, i, d in self.static_inputs:
            if arrays[k].shape[i] != d:
                raise CallError(f"input #{k} of '{self.entry}' has shape {arrays[k].shape}, "
                                f"expected {self.in_specs[k]} (dimension {i} is static)")
        sizes = {name: arrays[k].shape[i] for name, k, i in self._names}
        for (value_a, value_b), (a, b, what, where) in zip(self._check_values, self.checks):
            va, vb = value_a(sizes), value_b(sizes)
            if va != vb:
                raise CallError(f"{where + ': ' if where else ''}{what} must be equal, got "
                                f"{va} and {vb} (the dynamic sizes {a} and {b} of a call of "
                                f"'{self.entry}')")
        return sizes

    def output_shapes(self, sizes) -> list:
        return [tuple(size(sizes) for size in shape) for shape in self._out_sizes]


def _distinct_checks(checks) -> list:
    """The checks that can fail, each pair of sizes once (the first op's, its line): the
    shape rules record one per op that combines two sizes, so the nine ops of one layer's
    broadcasts had checked the same pair nine times per call."""
    seen, out = set(), []
    for check in checks:
        a, b = check[0], check[1]
        if a == b or frozenset((a, b)) in seen:
            continue
        seen.add(frozenset((a, b)))
        out.append(check)
    return out


def _evaluator(d):
    """sizes -> the value of `d` (an int, a Dim): a constant, one input's size read from the
    call's sizes, or the polynomial evaluated."""
    if not isinstance(d, Dim):
        return lambda sizes: d
    if len(d.terms) == 1:
        (mono, c), = d.terms.items()
        if c == 1 and len(mono) == 1 and _atom_position(mono[0]) is not None:
            return operator.itemgetter(mono[0])
    return d.evaluate


def set_sizes(descriptor, shape):
    """A memref descriptor's sizes and contiguous strides for one call's array."""
    stride = 1
    for j in range(len(shape) - 1, -1, -1):
        descriptor.sizes[j] = shape[j]
        descriptor.strides[j] = stride
        stride *= max(shape[j], 1)


def outputs_for(shapes, dtypes, previous):
    """Output arrays of these shapes, re-using the previous call's where the shape is the
    same and nothing else holds them (runtime/outputs.py's rule)."""
    out = []
    for j, (shape, dtype) in enumerate(zip(shapes, dtypes)):
        old = previous[j]
        if old is not None and old.shape == shape and _refs(previous, j) <= _UNSHARED:
            out.append(old)
        else:
            out.append(np.empty(shape, dtype))
    return out


class DynamicCalls:
    """What an executable with dynamic sizes adds (runtime/cpu.py, runtime/cpu_aot.py):
    `_setup_dynamic` at construction, `_run_dynamic` for each call (runtime/cuda.py takes
    the setup and sizes its device outputs itself)."""

    dynamic = None

    def _setup_dynamic(self, description):
        """Take the entry's description (None: static shapes, nothing changes)."""
        self.dynamic_description = description
        if description is None:
            return
        self.dynamic = DynamicShapes.from_description(self.entry, self.in_specs,
                                                      self.out_specs, description)
        self.in_specs, self.out_specs = self.dynamic.in_specs, self.dynamic.out_specs
        self._last = [None] * len(self.out_specs)
        self._out_dtypes = [s.dtype.np for s in self.out_specs]

    def _run_dynamic(self, arrays, invoke, fast=None):
        """A call: sizes checked against what the program needs, outputs sized from the
        inputs, each descriptor's sizes and strides set, then `invoke()`; or all of that but
        the checks in C, where `fast` holds fastcall.call_sized's leading arguments (~1 us
        where setting the descriptors through ctypes took ~5 for three arrays)."""
        dyn = self.dynamic
        shapes = dyn.output_shapes(dyn.sizes(arrays))
        with self._outputs.lock:
            outputs = outputs_for(shapes, self._out_dtypes, self._last)
            self._last = list(outputs)
            if fast is not None and fastcall.call_sized is not None:
                fastcall.call_sized(*fast, arrays, outputs)
                return outputs
            for d, a in zip(self._args.descriptors, list(arrays) + outputs):
                d.allocated = d.aligned = data_pointer(a)
                if a.ndim:
                    set_sizes(d, a.shape)
            invoke()
        return outputs
