"""mscc.common.api (MindSpore's mindspore.common.api): jit, and ms_function, its 1.x name."""
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


__all__ = ["jit", "ms_function"]
