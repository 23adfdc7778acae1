"""Flatten nested tuples/lists/dicts of leaves and rebuild them (a tiny JAX-style pytree)."""
from __future__ import annotations


def flatten(obj):
    """(leaves, treedef); treedef is hashable and rebuilds the structure."""
    leaves = []

    def walk(x):
        if isinstance(x, tuple) and not hasattr(x, "_fields"):
            return ("tuple", tuple(walk(v) for v in x))
        if isinstance(x, list):
            return ("list", tuple(walk(v) for v in x))
        if isinstance(x, dict):
            keys = tuple(sorted(x))
            return ("dict", keys, tuple(walk(x[k]) for k in keys))
        if x is None:
            return ("none",)
        leaves.append(x)
        return ("leaf",)
    return leaves, walk(obj)


def unflatten(treedef, leaves):
    it = iter(leaves)

    def build(node):
        kind = node[0]
        if kind == "leaf":
            return next(it)
        if kind == "none":
            return None
        if kind == "tuple":
            return tuple(build(n) for n in node[1])
        if kind == "list":
            return [build(n) for n in node[1]]
        return {k: build(n) for k, n in zip(node[1], node[2])}
    return build(treedef)
