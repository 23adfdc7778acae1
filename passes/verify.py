"""ms-verify: the checks IRDL cannot express (dialects/verifier.py), as a pass."""
from ..dialects.verifier import verify_module
from .base import ModulePass, PassFailure, register


@register
class MsVerify(ModulePass):
    name = "ms-verify"
    summary = "check element types, attributes and shapes of every ms op"

    def run(self, module):
        if not verify_module(module):
            raise PassFailure("ms-verify failed")
