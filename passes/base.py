"""What an mscc pass is: a small class with a kebab-case `name`, options, and either a `run`
method or a table of patterns keyed by op name (modeled on xDSL's ModulePass and upstream
MLIR's Python rewrite tests).

A pass reports bad input by emitting an error at the offending op's location
(`fail(op, msg)`), which raises PassFailure; drivers turn that into `file:line:col: error:`.
"""
from __future__ import annotations

from mlir import ir, passmanager
from mlir.rewrite import RewritePatternSet, walk_and_apply_patterns

PASSES: dict[str, type] = {}
# The largest value of an integer option without bounds of its own: mscc's integer options
# are counts and sizes (0: the target's), and a larger one reached MLIR's 64-bit attributes
# (an internal error in the bindings) or asked OpenMP for 10**20 threads.
MAX_OPTION_INT = 2**31 - 1


class PassFailure(Exception):
    """A pass found bad input; its diagnostics were already emitted."""


def fail(op_or_loc, message: str):
    loc = op_or_loc if isinstance(op_or_loc, ir.Location) else op_or_loc.location
    loc.emit_error(message)
    raise PassFailure(message)


def run_upstream(module, *passes: str):
    """Upstream passes (as a pipeline spells them: `func.func(scf-forall-to-for)`) on the
    module, in one PassManager, from inside an mscc pass that needs them between its own
    steps. Op handles taken before may be invalid after: look the ops up again."""
    passmanager.PassManager.parse(f"builtin.module({','.join(passes)})",
                                  context=module.context).run(module)


def register(cls):
    if not cls.name or cls.name in PASSES:
        raise ValueError(f"pass name {cls.name!r} is empty or taken")
    PASSES[cls.name] = cls
    return cls


class ModulePass:
    name = ""
    summary = ""
    options: dict = {}  # option name -> default value (its type parses the textual form)
    choices: dict = {}  # option name -> the values an option may take
    bounds: dict = {}  # integer option name -> (lowest, highest); others 0..MAX_OPTION_INT

    def __init__(self, **options):
        unknown = set(options) - set(self.options)
        if unknown:
            raise ValueError(f"pass '{self.name}' has no option {', '.join(sorted(unknown))}; "
                             f"options: {', '.join(self.options) or 'none'}")
        for key, value in options.items():
            self._check_option(key, value)
        self.opts = {**self.options, **options}

    def _check_option(self, key, value):
        """A ValueError naming the pass and the option unless `value` is of the default's
        type, one of its choices and within its bounds."""
        default = self.options[key]
        if key in self.choices and value not in self.choices[key]:
            raise ValueError(f"option '{key}' of pass '{self.name}' is one of "
                             f"{', '.join(map(str, self.choices[key]))}, not '{value}'")
        if isinstance(default, bool) or not isinstance(default, int):
            if type(value) is not type(default):
                raise ValueError(f"option '{key}' of pass '{self.name}' is a "
                                 f"{type(default).__name__}, not {value!r}")
            return
        low, high = self.bounds.get(key, (0, MAX_OPTION_INT))
        if type(value) is not int or not low <= value <= high:
            raise ValueError(f"option '{key}' of pass '{self.name}' is an integer from {low} "
                             f"to {high}, not '{value}'")

    @classmethod
    def from_text(cls, text: str):
        """Options as written in a pipeline: `{a=1 b=true}` without braces."""
        values = {}
        for item in text.split():
            key, _, raw = item.partition("=")
            if key not in cls.options:
                raise ValueError(f"pass '{cls.name}' has no option '{key}'")
            default = cls.options[key]
            if isinstance(default, bool):
                if raw not in ("true", "false", "1", "0", ""):
                    raise ValueError(f"option '{key}' of pass '{cls.name}' expects true or false")
                values[key] = raw in ("true", "1", "")
            elif isinstance(default, int):
                try:
                    values[key] = int(raw)
                except ValueError:
                    raise ValueError(f"option '{key}' of pass '{cls.name}' is an integer, "
                                     f"not '{raw}'") from None
            else:
                values[key] = raw
        return cls(**values)

    def run(self, module: ir.Operation) -> None:
        raise NotImplementedError

    def __repr__(self):
        opts = " ".join(f"{k}={v}" for k, v in self.opts.items() if v != self.options[k])
        return f"{self.name}{{{opts}}}" if opts else self.name


class PatternPass(ModulePass):
    """Applies `patterns` (op name -> fn(op, rewriter)) in one walk over the module.

    Upstream convention: a pattern returns a falsy value when it rewrote the op and a truthy
    value when it did not match.
    """

    patterns: dict = {}

    def run(self, module):
        patterns = RewritePatternSet()
        for op_name, fn in self.patterns.items():
            patterns.add(op_name, fn)
        walk_and_apply_patterns(module, patterns.freeze())
