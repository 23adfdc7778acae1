"""mscc.common.initializer (MindSpore's mindspore.common.initializer): the initializers of
pyfront/nn/init.py under MindSpore's names, those that mscc has."""
from ..nn import init as _init

# MindSpore's public names; the ones pyfront/nn/init.py defines are exported.
_MINDSPORE_NAMES = ("initializer", "Initializer", "Zero", "One", "Constant", "Normal",
                    "Uniform", "TruncatedNormal", "HeUniform", "HeNormal", "XavierUniform",
                    "XavierNormal", "Identity", "Orthogonal", "Dirac", "Sparse",
                    "VarianceScaling")

__all__ = [n for n in _MINDSPORE_NAMES if hasattr(_init, n)]
globals().update({n: getattr(_init, n) for n in __all__})
