"""Rank the MindSpore ops that MindSpore models use most (issue 22), offline:

    python bench/rank_mindspore_ops.py --models PATH [--mindformers PATH] [-o OUT]
    python bench/rank_mindspore_ops.py --recount OUT    # the sample OUT lists, counted again

PATH is a local git clone (a bare one is enough) of github.com/mindspore-ai/models and of
github.com/mindspore-lab/mindformers; nothing is downloaded. The sample is every Python file
of every model in them (see `models_of`), read at the clone's HEAD with `git cat-file`, parsed
with `ast` (no model code is imported or run). In each file the script counts:

- calls of MindSpore's functional ops: `ops.<name>(...)`, `F.<name>(...)`,
  `mindspore.ops.<name>(...)`, `ops.function.<name>`, and names imported from those modules,
  whatever alias the file gives the module (`import mindspore.ops as P`, `from mindspore.ops
  import functional as F`, `from mindspore import ops`, ...);
- uses of Primitive classes (`P.Concat(axis=1)`, `ops.ReduceSum(keep_dims=True)`, ...): each
  call of the instance (`self.concat = P.Concat(1)` ... `self.concat((a, b))` counts once per
  `self.concat(...)` in the class; an instance that is never called in its class or module, or
  one called in place as `P.Shape()(x)`, counts once);
- Tensor methods: `<expr>.<name>(...)` where <name> is a method of MindSpore's Tensor (the
  [Tensor] list of pyfront/mindspore_modules/mindspore_api.txt), only inside a `construct`
  method (the code MindSpore runs on Tensors; elsewhere `x.reshape(...)` is as likely numpy's)
  and not on `self` or on a module alias.

Forms of one op count together (`ops_of`): a Primitive class and the functional op MindSpore's
documentation names as its functional form (P.ReduceSum and ops.sum, P.Concat and ops.concat,
P.RealDiv and ops.div, ...), a functional alias and the op it aliases (ops.cat and
ops.concat, ops.ne and ops.not_equal, ...), and a Tensor method and the functional op of the
same name (x.reshape and ops.reshape). Ops are ranked by the number of models that use them
(a model that calls an op 200 times counts once), then by calls. The output, written to
pyfront/mindspore_modules/usage_rank.txt, has a header saying how and when, the ranking (one
line per op: rank, name, models, calls, category, the forms seen with their calls) and the
sample (each model directory with its number of files). `--recount` reads the clones' paths
and commits from such a file and counts the same models at those commits.
"""
from __future__ import annotations

import argparse
import ast
import collections
import datetime
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SNAPSHOT = os.path.join(ROOT, "pyfront", "mindspore_modules", "mindspore_api.txt")
OUT = os.path.join(ROOT, "pyfront", "mindspore_modules", "usage_rank.txt")

# ------------------------------------------------------------------ MindSpore's names

def read_snapshot(path=SNAPSHOT):
    """{category: set of names} of the API snapshot (coverage.py's format)."""
    out, current = {}, None
    with open(path) as f:
        for raw in f:
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            if line.startswith("[") and line.endswith("]"):
                current = out.setdefault(line[1:-1], set())
            else:
                current.add(line)
    return out


# Module paths whose attributes are functional ops, Primitive classes, composites.
FUNCTIONAL_MODULES = ("mindspore.ops", "mindspore.ops.functional", "mindspore.ops.function")
PRIMITIVE_MODULES = ("mindspore.ops", "mindspore.ops.operations")
COMPOSITE_MODULES = ("mindspore.ops", "mindspore.ops.composite")
# Receivers whose `.name(...)` is no Tensor method however it is spelled.
NOT_TENSORS = {"self", "np", "numpy", "math", "os", "sys", "json", "time", "random", "re"}


def _module_kind(path):
    """'functional' / 'primitive' / 'composite' / 'ops' (all three) / None for a module
    path; submodules of operations/function/composite (nn_ops, math_func, ...) count as
    theirs."""
    if path == "mindspore.ops":
        return "ops"
    for kind, prefix in (("primitive", "mindspore.ops.operations"),
                         ("functional", "mindspore.ops.functional"),
                         ("functional", "mindspore.ops.function"),
                         ("composite", "mindspore.ops.composite")):
        if path == prefix or path.startswith(prefix + "."):
            return kind
    return None


def _is_submodule(name):
    """Whether `from <ops module> import name` imports a module (operations, nn_ops,
    _inner_ops, math_func, ...) rather than an op."""
    return name in ("operations", "functional", "function", "composite", "primitive") or \
        name.endswith(("_ops", "_func", "_impl"))


def _target_of(module_kind, name):
    """(kind, name) of an attribute `name` of a module of `module_kind`: a capitalized name
    is a Primitive class (or a composite class such as GradOperation), a lower-case one a
    functional op; private names and submodules are None."""
    if name.startswith("_") or name in NOT_OPS:
        return None
    if name in COMPOSITES and module_kind in ("ops", "composite"):
        return ("composite", name)
    if module_kind == "composite":
        module_kind = "functional"  # C.clip_by_value, C.ones_like: functions
    if name[:1].isupper():
        return ("primitive", name) if module_kind in ("ops", "primitive") else None
    return ("functional", name) if module_kind in ("ops", "functional") else None


# The classes of mindspore.ops.composite (its functions count as functional ops).
COMPOSITES = {"GradOperation", "HyperMap", "Map", "MultitypeFuncGraph"}
# Attributes of the ops modules that are no ops: submodules, decorators, base classes.
NOT_OPS = {"operations", "functional", "function", "composite", "primitive", "constexpr",
           "Primitive", "PrimitiveWithInfer", "PrimitiveWithCheck", "prim_attr_register",
           "signature", "op_info_register", "DataType", "CustomRegOp", "AiCPURegOp",
           "TBERegOp", "kernel", "ms_kernel"}


class FileCounter(ast.NodeVisitor):
    """The forms used in one module: Counter of (kind, name) -> uses."""

    def __init__(self, tensor_methods):
        self.tensor_methods = tensor_methods
        self.aliases = {}          # local name -> module path ("mindspore.ops.operations")
        self.direct = {}           # local name -> (kind, name) imported from an ops module
        self.uses = collections.Counter()
        self.in_construct = 0
        self.instances = []        # scopes of Primitive instances: {attr: [target, calls]}

    # -------------------------------------------------------------- imports
    def visit_Import(self, node):
        for a in node.names:
            if a.name == "mindspore" or a.name.startswith("mindspore."):
                if a.asname:
                    self.aliases[a.asname] = a.name
                else:
                    self.aliases["mindspore"] = "mindspore"

    def visit_ImportFrom(self, node):
        module = node.module or ""
        if node.level or not (module == "mindspore" or module.startswith("mindspore.")):
            return
        kind = _module_kind(module)
        for a in node.names:
            local = a.asname or a.name
            path = f"{module}.{a.name}"
            if kind is None or _is_submodule(a.name):  # from mindspore import ops, ...
                if _module_kind(path) is not None:
                    self.aliases[local] = path
                continue
            target = _target_of(kind, a.name)  # from mindspore.ops import Concat, cast
            if target:
                self.direct[local] = target

    # -------------------------------------------------------------- resolution
    def _path(self, node):
        """The dotted module path an expression names (`P`, `ms.ops`, `mindspore.ops.
        operations`), or None."""
        if isinstance(node, ast.Name):
            return self.aliases.get(node.id)
        if isinstance(node, ast.Attribute):
            base = self._path(node.value)
            return f"{base}.{node.attr}" if base else None
        return None

    def target(self, func):
        """(kind, name) of the op a call's function names, or None."""
        if isinstance(func, ast.Name):
            return self.direct.get(func.id)
        if isinstance(func, ast.Attribute):
            base = self._path(func.value)
            if base:
                kind = _module_kind(base)
                return _target_of(kind, func.attr) if kind else None
        return None

    # -------------------------------------------------------------- scopes
    def visit_Module(self, node):
        self._scope(node)

    def visit_ClassDef(self, node):
        self._scope(node)

    def _scope(self, node):
        """Primitive instances bound in this class (self.x = P.X()) or module (x = P.X()):
        their calls are counted as uses; see the module doc."""
        self.instances.append({})
        self.generic_visit(node)
        for target, calls in self.instances.pop().values():
            self.uses[target] += max(calls, 1)

    def visit_FunctionDef(self, node):
        construct = node.name == "construct"
        self.in_construct += construct
        self.generic_visit(node)
        self.in_construct -= construct

    visit_AsyncFunctionDef = visit_FunctionDef

    def _binding(self, node):
        """'self.attr' / 'name' for an assignment target that can hold an instance."""
        if isinstance(node, ast.Name):
            return node.id
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.value.id == "self"):
            return "self." + node.attr
        return None

    def visit_Assign(self, node):
        value = node.value
        if isinstance(value, ast.Call):
            target = self.target(value.func)
            if target and target[0] in ("primitive", "composite") and len(node.targets) == 1:
                key = self._binding(node.targets[0])
                if key:
                    scope = self.instances[-1]
                    if key in scope:  # rebound: the earlier instance counts as it was used
                        old, calls = scope[key]
                        self.uses[old] += max(calls, 1)
                    scope[key] = [target, 0]
                    for arg in [*value.args, *(k.value for k in value.keywords)]:
                        self.visit(arg)
                    return
        self.generic_visit(node)

    def _instance(self, func):
        key = self._binding(func)
        if key is None:
            return None
        for scope in reversed(self.instances):
            if key in scope:
                return scope[key]
        return None

    def visit_Call(self, node):
        func = node.func
        target = self.target(func)
        if target:
            self.uses[target] += 1
        else:
            instance = self._instance(func)
            if instance is not None:
                instance[1] += 1
            elif (self.in_construct and isinstance(func, ast.Attribute)
                  and func.attr in self.tensor_methods and not self._not_tensor(func.value)):
                self.uses[("tensor", func.attr)] += 1
        self.generic_visit(node)

    def _not_tensor(self, node):
        if isinstance(node, ast.Name):
            return node.id in NOT_TENSORS or node.id in self.aliases or node.id in self.direct
        if isinstance(node, (ast.Constant, ast.JoinedStr, ast.List, ast.Dict, ast.Set)):
            return True  # "..".join, [..].index: not Tensors
        return self._path(node) is not None


def count_source(text, tensor_methods):
    """Counter of (kind, name) for one file's text; None if it does not parse."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    counter = FileCounter(tensor_methods)
    counter.visit(tree)
    return counter.uses


# ------------------------------------------------------------------ the sample

SKIP_PARTS = {".ipynb_checkpoints", "tests", "test", "__pycache__"}


def models_of(source, path):
    """The model a file of a clone belongs to (a directory), or None when the file is no
    model code. models: <official|research|community>/<domain>/<model>/... and
    benchmark/ascend/<model>; mindformers: mindformers/models/<model>, research/<model> and
    each other package of mindformers/ (modules, core, ...) as one unit."""
    parts = path.split("/")
    if not path.endswith(".py") or SKIP_PARTS & set(parts[:-1]):
        return None
    if source == "models":
        if parts[0] in ("official", "research", "community") and len(parts) >= 4:
            return "/".join(parts[:3])
        if parts[0] == "benchmark" and len(parts) >= 4:
            return "/".join(parts[:3])
        return None
    if parts[0] == "mindformers" and len(parts) >= 3:
        if parts[1] == "models" and len(parts) >= 4:
            return "/".join(parts[:3])
        return "/".join(parts[:2])
    if parts[0] == "research" and len(parts) >= 3:
        return "/".join(parts[:2])
    return None


def domain_of(source, model):
    if source == "mindformers":
        return "llm"
    parts = model.split("/")
    domain = parts[1]
    return {"cvtmodel": "cv", "3d": "cv", "ascend": "benchmark"}.get(domain, domain)


def git(repo, *args, input=None):
    return subprocess.run(["git", "-C", repo, *args], input=input, capture_output=True,
                          check=True).stdout


def read_files(repo, commit, paths):
    """{path: text} of the blobs at commit (one git cat-file --batch)."""
    request = "".join(f"{commit}:{p}\n" for p in paths).encode()
    out = git(repo, "cat-file", "--batch", input=request)
    texts, at = {}, 0
    for p in paths:
        end = out.index(b"\n", at)
        header = out[at:end].split()
        if header[-1] == b"missing":
            at = end + 1
            continue
        size = int(header[2])
        texts[p] = out[end + 1:end + 1 + size].decode("utf-8", "replace")
        at = end + 1 + size + 1
    return texts


def count_clone(source, repo, commit, tensor_methods, only_models=None):
    """{model: (domain, files, Counter)} over a clone's files at commit, and the number of
    files that did not parse."""
    paths = git(repo, "ls-tree", "-r", "--name-only", commit).decode().splitlines()
    by_model = collections.defaultdict(list)
    for p in paths:
        model = models_of(source, p)
        if model and (only_models is None or model in only_models):
            by_model[model].append(p)
    texts = read_files(repo, commit, [p for ps in by_model.values() for p in ps])
    result, unparsed = {}, 0
    for model, ps in sorted(by_model.items()):
        total = collections.Counter()
        for p in ps:
            uses = count_source(texts.get(p, ""), tensor_methods)
            if uses is None:
                unparsed += 1
                continue
            total.update(uses)
        result[model] = (domain_of(source, model), len(ps), total)
    return result, unparsed


# ------------------------------------------------------------------ forms -> ops

def _snake(name):
    s = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name)
    s = re.sub(r"(?<=[A-Z])([A-Z][a-z])", r"_\1", s)
    return s.lower()


# Primitive class -> its functional op where MindSpore's documentation names one (the
# Primitive's API page: "Refer to mindspore.ops.<op> for more details") and its name is not
# the class name in snake case. A Primitive whose snake-case name is a functional op of the
# snapshot (Concat -> concat, ExpandDims -> expand_dims, Shape -> shape) needs no row; any
# other Primitive is its own op (P.L2Normalize, P.ResizeBilinear, ...).
PRIMITIVE_TO_OP = {
    "ReduceSum": "sum", "ReduceMean": "mean", "ReduceMax": "amax", "ReduceMin": "amin",
    "ReduceProd": "prod", "ReduceAll": "all", "ReduceAny": "any", "RealDiv": "div",
    "Div": "div", "MatMul": "matmul", "BatchMatMul": "bmm", "ArgMaxWithValue": "max",
    "ArgMinWithValue": "min", "ReLU": "relu", "ReLU6": "relu6", "GeLU": "gelu",
    "FastGeLU": "fast_gelu", "HSwish": "hardswish", "HSigmoid": "hardsigmoid", "SeLU": "selu",
    "PReLU": "prelu", "SiLU": "silu", "ACos": "acos", "TopK": "topk", "CumSum": "cumsum",
    "CumProd": "cumprod", "GatherD": "gather_elements", "GatherV2": "gather",
    "ReverseV2": "flip", "LinSpace": "linspace", "FloorDiv": "floor_divide",
    "IsNan": "isnan", "IsInf": "isinf", "IsFinite": "isfinite", "DType": "dtype",
    "AddN": "addn", "NonZero": "nonzero", "KLDivLoss": "kl_div", "InTopK": "intopk",
    "Conv2D": "conv2d", "Conv3D": "conv3d", "Print": "print_", "Cast": "cast",
    "RandomChoiceWithMask": "choice_with_mask",
}
# MindSpore's functional aliases ("Alias for ops.<op>" in its documentation) -> the op.
FUNCTIONAL_ALIASES = {
    "cat": "concat", "clip": "clamp", "absolute": "abs", "arccos": "acos", "arcsin": "asin",
    "arctan": "atan", "arctan2": "atan2", "arccosh": "acosh", "arcsinh": "asinh",
    "arctanh": "atanh", "ne": "not_equal", "ge": "greater_equal", "gt": "greater",
    "le": "less_equal", "lt": "less", "eq": "equal", "multiply": "mul", "divide": "div",
    "true_divide": "div", "subtract": "sub", "negative": "neg", "swapdims": "swapaxes",
    "moveaxis": "movedim", "reduce_sum": "sum", "reduce_mean": "mean", "reduce_max": "amax",
    "reduce_min": "amin", "reduce_prod": "prod", "tensor_add": "add", "tensor_mul": "mul",
    "tensor_sub": "sub", "tensor_div": "div", "concatenate": "concat", "batch_matmul": "bmm",
    "tensor_pow": "pow",
}
# Tensor methods that are another spelling of a functional op (MindSpore's Tensor page:
# "For details, please refer to mindspore.ops.<op>").
TENSOR_TO_OP = {"astype": "cast", "view": "reshape", "top_k": "topk"}


def op_of(kind, name, snapshot):
    """The op key (the functional op's name, or the Primitive's/Tensor method's own name
    when MindSpore has no functional twin) and its category for one form."""
    functions = snapshot["ops"]
    if kind == "primitive":
        op = PRIMITIVE_TO_OP.get(name)
        if op is None:
            op = _snake(name) if _snake(name) in functions else name
        return FUNCTIONAL_ALIASES.get(op, op)
    if kind == "functional":
        return FUNCTIONAL_ALIASES.get(name, name)
    if kind == "tensor":
        if name in TENSOR_TO_OP:
            return TENSOR_TO_OP[name]
        if name in functions or name in FUNCTIONAL_ALIASES:
            return FUNCTIONAL_ALIASES.get(name, name)
        return "Tensor." + name
    return name  # composite


# Tensor properties of MindSpore's (x.size is a number, x.size() no Tensor method call).
TENSOR_PROPERTIES = {"shape", "dtype", "size", "ndim", "itemsize", "nbytes", "strides", "T",
                     "H", "mT", "mH", "has_init", "hooks", "init_flag"}

FORM_PREFIX = {"functional": "ops.", "primitive": "P.", "tensor": "Tensor.",
               "composite": "C."}


def rank(counts, snapshot):
    """[(op, models, calls, forms Counter)] best first, from {model: (domain, files,
    Counter of (kind, name))}."""
    models = collections.defaultdict(set)
    calls = collections.Counter()
    forms = collections.defaultdict(collections.Counter)
    for model, (_, _, uses) in counts.items():
        for (kind, name), n in uses.items():
            op = op_of(kind, name, snapshot)
            models[op].add(model)
            calls[op] += n
            forms[op][FORM_PREFIX[kind] + name] += n
    rows = [(op, len(models[op]), calls[op], forms[op]) for op in calls]
    rows.sort(key=lambda r: (-r[1], -r[2], r[0]))
    return rows


def category(op, forms, snapshot):
    """Which of MindSpore's APIs the op is: function (ops.<op>), primitive (a Primitive class
    only), tensor (a Tensor method only), composite."""
    if any(f.startswith("C.") for f in forms):
        return "composite"
    if op.startswith("Tensor."):
        return "tensor"
    if op in snapshot["ops"] or any(f.startswith("ops.") for f in forms):
        return "function"
    return "primitive"


# ------------------------------------------------------------------ the file

def write(path, clones, counts_by_source, unparsed, snapshot, today):
    merged = {}
    for source, counts in counts_by_source.items():
        merged.update({f"{source}:{m}": v for m, v in counts.items()})
    rows = rank(merged, snapshot)
    files = sum(v[1] for v in merged.values())
    domains = collections.Counter(v[0] for v in merged.values())
    lines = [
        "# The MindSpore ops that MindSpore models use most, counted by",
        "# bench/rank_mindspore_ops.py (its docstring says how) in every Python file of every",
        "# model of these clones, read at the commits below (no network, no model code run):",
        *(f"# clone: {source} {url} {commit} ({date})" for source, (url, commit, date)
          in clones.items()),
        f"# sampled: {today}; {len(merged)} models, {files} files ({unparsed} did not parse);",
        "# models per domain: " + ", ".join(f"{d} {n}" for d, n in sorted(domains.items())),
        "# Ranked by the number of models that use the op, then by calls. Forms of one op count",
        "# together: a Primitive class (P.X), the functional op (ops.x), its functional aliases,",
        "# the Tensor method of the same name (Tensor.x, counted inside construct only).",
        "# category: function (MindSpore has ops.<name>), primitive (a Primitive class only),",
        "# tensor (a Tensor method only), composite (mindspore.ops.composite).",
        "# Read by pyfront/mindspore_modules/coverage.py (the top-150 table of COVERAGE.md).",
        "#",
        "# rank name models calls category forms(calls)",
        "[ranking]",
    ]
    for i, (op, n_models, n_calls, forms) in enumerate(rows, 1):
        form_text = ",".join(f"{f}:{c}" for f, c in sorted(forms.items(),
                                                           key=lambda kv: (-kv[1], kv[0])))
        lines.append(f"{i} {op} {n_models} {n_calls} {category(op, forms, snapshot)} "
                     f"{form_text}")
    lines += ["", "# the sample: source:model files", "[sample]"]
    lines += [f"{m} {v[1]}" for m, v in sorted(merged.items())]
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return rows


def read_rank(path=OUT):
    """([(rank, name, models, calls, category, {form: calls})], {source: (url, commit)},
    [sampled models]) from a usage_rank.txt."""
    rows, clones, sample, section = [], {}, [], None
    with open(path) as f:
        for raw in f:
            line = raw.strip()
            if line.startswith("# clone:"):
                source, url, commit = line.split()[2:5]
                clones[source] = (url, commit)
            if not line or line.startswith("#"):
                continue
            if line.startswith("["):
                section = line[1:-1]
            elif section == "ranking":
                r, name, models, calls, cat, forms = line.split(" ", 5)
                rows.append((int(r), name, int(models), int(calls), cat,
                             {f: int(c) for f, c in (x.rsplit(":", 1)
                                                     for x in forms.split(","))}))
            elif section == "sample":
                sample.append(line.split()[0])
    return rows, clones, sample


def _clone_info(repo):
    commit = git(repo, "rev-parse", "HEAD").decode().strip()
    date = git(repo, "log", "-1", "--format=%cs", commit).decode().strip()
    return commit, date


URLS = {"models": "github.com/mindspore-ai/models",
        "mindformers": "github.com/mindspore-lab/mindformers"}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", help="a clone of mindspore-ai/models")
    parser.add_argument("--mindformers", help="a clone of mindspore-lab/mindformers")
    parser.add_argument("--recount", help="a usage_rank.txt: count its sample again "
                        "(needs --models/--mindformers clones that have its commits)")
    parser.add_argument("-o", "--output", default=OUT)
    parser.add_argument("--top", type=int, default=40, help="rows to print")
    args = parser.parse_args(argv)
    snapshot = read_snapshot()
    tensor_methods = {n for n in snapshot["Tensor"] if not n.endswith("_")} - TENSOR_PROPERTIES
    repos = {"models": args.models, "mindformers": args.mindformers}
    wanted = {}
    commits = {}
    if args.recount:
        _, saved, sample = read_rank(args.recount)
        for source, (_, commit) in saved.items():
            commits[source] = commit
            wanted[source] = {m.split(":", 1)[1] for m in sample if m.startswith(source + ":")}
    counts, clones, unparsed = {}, {}, 0
    for source, repo in repos.items():
        if repo is None:
            continue
        commit = commits.get(source) or _clone_info(repo)[0]
        date = git(repo, "log", "-1", "--format=%cs", commit).decode().strip()
        clones[source] = (URLS[source], commit, date)
        counts[source], bad = count_clone(source, repo, commit, tensor_methods,
                                          wanted.get(source))
        unparsed += bad
    if not counts:
        parser.error("give --models and/or --mindformers (local clones)")
    rows = write(args.output, clones, counts, unparsed, snapshot,
                 datetime.date.today().isoformat())
    for i, (op, n_models, n_calls, forms) in enumerate(rows[:args.top], 1):
        top = ", ".join(f"{f} {c}" for f, c in forms.most_common(3))
        print(f"{i:4d} {op:28s} {n_models:4d} {n_calls:6d}  {top}")
    print(f"{len(rows)} ops; written to {os.path.relpath(args.output)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
