"""mscc.common.api (MindSpore's mindspore.common.api): jit, ms_function (its 1.x name), and
the private frontend-graph API of MindSpore 2.7.1, _frontend_compile and _graph_split
(pyfront/graph_split.py; run_fragments runs the fragments in order)."""
from ..graph_split import frontend_compile as _frontend_compile
from ..graph_split import graph_split as _graph_split
from ..graph_split import run_fragments
from ..jit import jit


def ms_function(fn=None, obj=None, input_signature=None):
    """MindSpore 1.x's ms_function: jit(fn, input_signature=...). `obj` (MindSpore's
    cache-identity object for methods) is not needed: mscc keys compiled code by the function
    and its arguments, so only obj=None is accepted."""
    if obj is not None:
        raise TypeError("ms_function(obj=...) is not supported by mscc: pass the bound method "
                        "itself (jit keys compiled code by the function and its arguments)")
    if fn is None:
        return lambda f: jit(f, input_signature=input_signature)
    return jit(fn, input_signature=input_signature)


__all__ = ["jit", "ms_function"]  # (and the private _frontend_compile, _graph_split)
