"""mscc.common.parameter (MindSpore's mindspore.common.parameter): Parameter and
ParameterTuple."""
from ..tensor import Parameter


class ParameterTuple(tuple):
    """A tuple of Parameters (MindSpore's ParameterTuple): what optimizers hold, with
    `clone(prefix, init)` for their per-parameter state (moments, ...)."""

    def __new__(cls, iterable):
        items = tuple(iterable)
        for i, p in enumerate(items):
            if not isinstance(p, Parameter):
                raise TypeError(f"For 'ParameterTuple', all elements must be Parameter, but "
                                f"element {i} is {type(p).__name__}")
        names = [p.name for p in items]
        duplicated = sorted({n for n in names if names.count(n) > 1})
        if duplicated:
            raise ValueError(f"For 'ParameterTuple', the names of the Parameters must be "
                             f"unique, but {', '.join(duplicated)} repeat")
        return super().__new__(cls, items)

    def clone(self, prefix, init="same"):
        """New Parameters named `prefix.<name>`: copies of the values (init='same') or
        initialized by `init` (a name such as 'zeros', a number, an Initializer) in each
        Parameter's shape and dtype."""
        if not isinstance(prefix, str) or not prefix:
            raise ValueError(f"For 'clone', prefix must be a non-empty str, got {prefix!r}")
        from ..nn import init as _init
        out = []
        for p in self:
            name = f"{prefix}.{p.name}"
            if isinstance(init, str) and init == "same":
                data = p.asnumpy().copy()
            else:
                data = _init.initializer(init, p.shape, p.dtype)
            out.append(Parameter(data, name=name, requires_grad=p.requires_grad,
                                 dtype=p.dtype))
        return ParameterTuple(out)


__all__ = ["Parameter", "ParameterTuple"]
