"""The MindSpore coverage table: which of MindSpore's public names mscc has.

    python -m mscc.pyfront.mindspore_modules.coverage           # rewrite COVERAGE.md + README
    python -m mscc.pyfront.mindspore_modules.coverage --check   # exit 1 if either is stale

It compares the snapshot `mindspore_api.txt` beside this file (MindSpore's names per
category) with what mscc exports now, and writes the full per-name page `COVERAGE.md` beside
this file and the per-category counts into README.md between the coverage markers. Both also
show how many of the 150 ops MindSpore's models use most (`usage_rank.txt` beside this file,
counted in the model zoo by bench/rank_mindspore_ops.py) mscc has, in every form models use.

The snapshot itself is made from an installed MindSpore, in an environment that has one
(mscc is not imported for it, and -P keeps this folder's dtype.py etc. off sys.path):

    python -P pyfront/mindspore_modules/coverage.py --snapshot
"""
import inspect
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SNAPSHOT_PATH = os.path.join(HERE, "mindspore_api.txt")
RANK_PATH = os.path.join(HERE, "usage_rank.txt")
TOP = 150
PAGE_PATH = os.path.join(HERE, "COVERAGE.md")
README_PATH = os.path.join(ROOT, "README.md")
BEGIN, END = "<!-- coverage:begin -->", "<!-- coverage:end -->"
REGENERATE = "python -m mscc.pyfront.mindspore_modules.coverage"

# category key -> (title, the mscc namespace that must have the name, what kind it must be).
CATEGORIES = {
    "ops": ("mindspore.ops functions", "mscc.ops", "function"),
    "primitives": ("mindspore.ops Primitive classes", "mscc.ops.operations", "class"),
    "nn.layers": ("mindspore.nn cells and layers", "mscc.nn", "callable"),
    "nn.losses": ("mindspore.nn losses", "mscc.nn", "callable"),
    "nn.optimizers": ("mindspore.nn optimizers", "mscc.nn", "callable"),
    "nn.lr_schedules": ("mindspore.nn learning-rate schedules", "mscc.nn", "callable"),
    "nn.wrappers": ("mindspore.nn wrappers", "mscc.nn", "callable"),
    "Tensor": ("mindspore.Tensor methods and properties", "mscc.Tensor", "member"),
}


# ---------------------------------------------------------------- the snapshot (MindSpore side)

def _documented(obj):
    # The docs' API pages list the names that have a docstring; undocumented entries of an
    # __all__ (inplace helpers such as tanh_, private re-exports) are not what users read.
    return bool((getattr(obj, "__doc__", None) or "").strip())


def _public(module, names):
    return sorted({n for n in names if not n.startswith("_")
                   and _documented(getattr(module, n, None))})


def _tensor_members(tensor_cls):
    """Tensor's public methods and the properties defined in Python. The C++ base's
    getset descriptors (init_flag, parent_tensor_, param_info, ...) are plumbing between
    Tensor and Parameter, and plain data attributes (delta_seed) are not API."""
    out = set()
    for name in dir(tensor_cls):
        if name.startswith("_"):
            continue
        static = inspect.getattr_static(tensor_cls, name)
        if isinstance(static, property) or (callable(static) and _documented(static)):
            out.add(name)
    return sorted(out)


def snapshot_from_mindspore():
    """{category: names} read from the installed MindSpore's own export lists."""
    import mindspore
    from mindspore import nn
    from mindspore.ops import function, operations
    prims = [n for n in operations.__all__ if inspect.isclass(getattr(operations, n, None))]
    return {
        "ops": _public(function, function.__all__),
        "primitives": _public(operations, prims),
        "nn.layers": _public(nn, ["Cell", "GraphCell", *nn.layer.__all__]),
        "nn.losses": _public(nn, nn.loss.__all__),
        "nn.optimizers": _public(nn, nn.optim.__all__),
        "nn.lr_schedules": _public(nn, [*nn.learning_rate_schedule.__all__,
                                        *nn.dynamic_lr.__all__]),
        "nn.wrappers": _public(nn, nn.wrap.__all__),
        "Tensor": _tensor_members(mindspore.Tensor),
    }, mindspore.__version__


def snapshot_text(snapshot, version):
    lines = [
        f"# MindSpore {version}'s public API names: the snapshot mscc's coverage table",
        "# (COVERAGE.md beside this file) is measured against. No network at test time.",
        f"# Source: the PyPI release mindspore=={version}, imported; per category:",
        "#   ops: mindspore.ops.function.__all__ (the functional interface);",
        "#   primitives: the classes in mindspore.ops.operations.__all__;",
        "#   nn.layers: Cell, GraphCell and mindspore.nn.layer.__all__; nn.losses: nn.loss;",
        "#   nn.optimizers: nn.optim; nn.lr_schedules: nn.learning_rate_schedule and",
        "#   nn.dynamic_lr; nn.wrappers: nn.wrap (each its __all__);",
        "#   Tensor: public methods of mindspore.Tensor and its Python-defined properties.",
        "# Kept: names without a leading underscore that have a docstring (what the API",
        "# pages document). Regenerate (needs mindspore installed; mscc is not imported):",
        "#   python -P pyfront/mindspore_modules/coverage.py --snapshot",
        f"# mindspore-version: {version}",
    ]
    for key in CATEGORIES:
        lines += ["", f"[{key}]", *snapshot[key]]
    return "\n".join(lines) + "\n"


def read_snapshot(path=None):
    """({category: [names]}, MindSpore's version) from the checked-in snapshot file."""
    snapshot, version, current = {}, "unknown", None
    with open(path or SNAPSHOT_PATH) as f:
        for raw in f:
            line = raw.strip()
            if line.startswith("# mindspore-version:"):
                version = line.split(":", 1)[1].strip()
            elif line.startswith("#"):
                continue
            elif line.startswith("[") and line.endswith("]"):
                current = snapshot.setdefault(line[1:-1], [])
            elif line:
                current.append(line)
    return snapshot, version


# ---------------------------------------------------------------- the table (mscc side)

def _namespace(dotted):
    import importlib
    module, _, attr = dotted.rpartition(".")
    if attr[:1].isupper():                       # mscc.Tensor: a class, not a module
        return getattr(importlib.import_module(module), attr)
    return importlib.import_module(dotted)


def _spelling(name):
    # Case and inner underscores only: a trailing one is a different API (clamp_ is
    # MindSpore's in-place clamp, print_ its print), not another spelling.
    core = name.rstrip("_")
    return core.lower().replace("_", "") + name[len(core):]


def _has(ns, name, kind):
    """Whether mscc has the name in the form MindSpore users call it."""
    if kind == "member":
        static = inspect.getattr_static(ns, name, None)
        return isinstance(static, property) or callable(static)
    obj = getattr(ns, name, None)
    if kind == "function":
        return callable(obj) and not inspect.isclass(obj)
    if kind == "class":
        return inspect.isclass(obj)
    return callable(obj)


def _public_names(ns):
    return [n for n in dir(ns) if not n.startswith("_")
            and not inspect.ismodule(getattr(ns, n, None))]


def category_rows(key, names):
    """[(name, supported, note)] for one category: a missing name whose spelling differs
    only in case or underscores from one mscc has is noted with mscc's spelling, unless
    MindSpore has that spelling too (Tensor.t and Tensor.T are two APIs, not one)."""
    _, where, kind = CATEGORIES[key]
    ns = _namespace(where)
    spellings = {}
    for n in _public_names(ns):
        if _has(ns, n, kind) and n not in names:
            spellings.setdefault(_spelling(n), []).append(n)
    rows = []
    for name in names:
        if _has(ns, name, kind):
            doc = kind != "function" or _documented(getattr(ns, name))
            rows.append((name, True, "" if doc else "no docstring"))
        else:
            other = [n for n in spellings.get(_spelling(name), []) if n != name]
            rows.append((name, False, "mscc has " + ", ".join(f"`{n}`" for n in other)
                         if other else ""))
    return rows


def extras(snapshot):
    """{mscc namespace: its public names of the category's kind that no category of the
    snapshot names}: mscc's own additions, or misspellings of MindSpore's names."""
    out = {}
    for key, (_, where, kind) in CATEGORIES.items():
        known = {n for k, (_, w, _) in CATEGORIES.items() if w == where for n in snapshot[k]}
        ns = _namespace(where)
        names = [n for n in _public_names(ns) if _has(ns, n, kind) and n not in known]
        out.setdefault(where, set()).update(names)
    return {where: sorted(names) for where, names in out.items()}


def coverage(snapshot):
    return {key: category_rows(key, snapshot.get(key, [])) for key in CATEGORIES}


# ---------------------------------------------------------------- the ranking (usage_rank.txt)

# Forms models use that MindSpore has outside the snapshot's documented lists: functions of
# mindspore.ops.functional that function.__all__ lacks, and MindSpore 1.x Primitives.
OUTSIDE_SNAPSHOT = {"ops.cast", "ops.dtype", "ops.reduce_sum", "ops.reduce_mean",
                    "ops.make_range", "ops.tuple_len", "ops.add_flags",
                    "ops.mixed_precision_cast", "P.ResizeBilinear"}

# Why an op of the top 150 is missing (the ranking table's note).
WHY_MISSING = {
    "AllReduce": "a collective: mscc has no collective ms ops yet (MPI inside the compiled "
                 "step, DESIGN.md)",
    "AllGather": "a collective: mscc has no collective ms ops yet",
}

_FORM_CATEGORY = {"ops": "ops", "P": "primitives", "Tensor": "Tensor"}


def read_rank(path=None):
    """[(rank, op, models, calls, category, {form: calls})] from usage_rank.txt."""
    rows, section = [], None
    with open(path or RANK_PATH) as f:
        for raw in f:
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            if line.startswith("["):
                section = line[1:-1]
            elif section == "ranking":
                rank, op, models, calls, category, forms = line.split(" ", 5)
                rows.append((int(rank), op, int(models), int(calls), category,
                             {f: int(n) for f, n in (x.rsplit(":", 1)
                                                     for x in forms.split(","))}))
    return rows


def _is_api(form, snapshot):
    """Whether MindSpore has the form (`P.Concat`, `ops.concat`, `Tensor.view`, `C.X`)."""
    kind, name = form.split(".", 1)
    if kind == "C" or form in OUTSIDE_SNAPSHOT:
        return True
    return name in snapshot.get(_FORM_CATEGORY[kind], ())


def required_forms(op, forms, snapshot):
    """The forms of one ranked op mscc must have: the MindSpore API forms models use, the
    functional op of the op's name and the Tensor method of that name where MindSpore has
    them. Forms that are no MindSpore API (dead code such as P.Sum) are left out."""
    want = {f for f in forms if _is_api(f, snapshot)}
    if not op.startswith("Tensor.") and op[:1].islower():
        if op in snapshot.get("ops", ()):
            want.add("ops." + op)
        if op in snapshot.get("Tensor", ()):
            want.add("Tensor." + op)
    return sorted(want, key=lambda f: (-forms.get(f, 0), f))


def _mscc_has(form):
    kind, name = form.split(".", 1)
    if kind == "ops":
        return _has(_namespace("mscc.ops"), name, "function")
    if kind == "P":
        return _has(_namespace("mscc.ops.operations"), name, "class")
    if kind == "Tensor":
        return _has(_namespace("mscc.Tensor"), name, "member")
    return callable(getattr(_namespace("mscc.ops"), name, None))


def ranking_rows(snapshot, rank_rows=None, top=TOP):
    """[(rank, op, models, calls, [(form, mscc has it)], ignored forms, covered, note)] for
    the top `top` ops of the ranking."""
    out = []
    for rank, op, models, calls, _, forms in (rank_rows or read_rank())[:top]:
        want = required_forms(op, forms, snapshot)
        marks = [(f, _mscc_has(f)) for f in want]
        ignored = sorted(f for f in forms if not _is_api(f, snapshot))
        covered = all(ok for _, ok in marks)
        out.append((rank, op, models, calls, marks, ignored, covered,
                    "" if covered else WHY_MISSING.get(op, "")))
    return out


def ranking_summary(rows):
    ok = sum(1 for r in rows if r[6])
    return ok, len(rows)


def _ranking_section(rows):
    ok, n = ranking_summary(rows)
    lines = ["", '<a id="top150"></a>', "",
             f"## The {n} ops MindSpore's models use most: {ok} of {n}", "",
             "Ranked in `usage_rank.txt` (by bench/rank_mindspore_ops.py, in the model zoo "
             "mindspore-ai/models",
             "and mindformers; how and when: its header) by the number of models that use "
             "the op.",
             "An op counts when mscc has each of its forms listed: the Primitive classes and "
             "functions",
             "models call (a Primitive and its functional form count as one op), and "
             "MindSpore's",
             "functional op and Tensor method of the op's name. A missing form is marked "
             "*no*.", "",
             "| rank | op | models | calls | forms | mscc | note |",
             "| ---: | --- | ---: | ---: | --- | --- | --- |"]
    for rank, op, models, calls, marks, ignored, covered, note in rows:
        forms = ", ".join(f"`{f}`" if has else f"`{f}` *no*" for f, has in marks)
        notes = [note] if note else []
        if ignored:
            notes.append(", ".join(f"`{f}`" for f in ignored) + " (used, but no MindSpore "
                         "API: not counted)")
        lines.append(f"| {rank} | `{op}` | {models} | {calls} | {forms} | "
                     f"{'yes' if covered else 'no'} | {'; '.join(notes)} |")
    return lines


# ---------------------------------------------------------------- the page and README

def _counts(rows):
    return sum(1 for _, ok, _ in rows if ok), len(rows)


def summary_table(table, link=None):
    lines = ["| MindSpore API | mscc has | of | share |", "| --- | ---: | ---: | ---: |"]
    total_ok = total = 0
    for key, rows in table.items():
        ok, n = _counts(rows)
        total_ok, total = total_ok + ok, total + n
        title = CATEGORIES[key][0]
        name = f"[{title}]({link}#{key.replace('.', '')})" if link else title
        lines.append(f"| {name} | {ok} | {n} | {100 * ok // max(n, 1)}% |")
    lines.append(f"| all | {total_ok} | {total} | {100 * total_ok // max(total, 1)}% |")
    return lines


def _category_section(key, rows):
    title, where, kind = CATEGORIES[key]
    ok, n = _counts(rows)
    lines = ["", f'<a id="{key.replace(".", "")}"></a>', "",
             f"## {title}: {ok} of {n}", "",
             f"Counted as supported when `{where}` has the name as a {kind}"
             + (" (property or method)" if kind == "member" else "") + ".", "",
             "| name | mscc | note |", "| --- | --- | --- |"]
    lines += [f"| `{name}` | {'yes' if good else 'no'} | {note} |" for name, good, note in rows]
    return lines


def page_text(snapshot, version):
    table = coverage(snapshot)
    lines = ["# MindSpore API coverage", "",
             f"Generated by `{REGENERATE}` from `mindspore_api.txt` (do not edit by hand).",
             f"Measured against MindSpore {version}'s public names (how they were chosen: the",
             "header of `mindspore_api.txt`).",
             "A name counts only if mscc has it under MindSpore's spelling and of the kind",
             "MindSpore's is (a function, a Primitive class, a Cell or function, a Tensor",
             "method or property);",
             "a missing name that mscc spells differently (case, underscores) notes mscc's name.",
             "", *summary_table(table), "", _ranking_sentence(snapshot)]
    for key, rows in table.items():
        lines += _category_section(key, rows)
    lines += _ranking_section(ranking_rows(snapshot))
    lines += ["", "## mscc names that the snapshot lacks", "",
              "Names mscc exports that no list above has: mscc's own additions, MindSpore",
              "names outside its documented lists (such as `F.cast`), or misspellings.", ""]
    for where, names in extras(snapshot).items():
        lines.append(f"- `{where}` ({len(names)}): " + ", ".join(f"`{n}`" for n in names))
    return "\n".join(lines) + "\n"


def _ranking_sentence(snapshot, link=""):
    ok, n = ranking_summary(ranking_rows(snapshot))
    where = f"[the ranking]({link}#top150)" if link else "[the ranking](#top150)"
    return (f"Of the {n} ops MindSpore's models use most ({where}, counted in the model "
            f"zoo), mscc has {ok} ({100 * ok // max(n, 1)}%) in every form models use.")


def readme_section(snapshot, version):
    rel = os.path.relpath(PAGE_PATH, ROOT)
    lines = [BEGIN, "",
             f"Coverage of MindSpore {version}'s public names, generated by",
             f"`{REGENERATE}`; every name, with what mscc lacks, in",
             f"[{rel}]({rel}):", "",
             *summary_table(coverage(snapshot), link=rel), "", _ranking_sentence(snapshot, rel), "",
             END]
    return "\n".join(lines)


def readme_text(readme, snapshot, version):
    """README with its coverage section replaced; a README without the markers is an
    error (where the section goes is README's choice, not the generator's)."""
    start, stop = readme.find(BEGIN), readme.find(END)
    if start < 0 or stop < start:
        raise ValueError(f"README.md has no {BEGIN} ... {END} section")
    return readme[:start] + readme_section(snapshot, version) + readme[stop + len(END):]


def _write(path, text):
    with open(path, "w") as f:
        f.write(text)


def main(argv=None):
    args = sys.argv[1:] if argv is None else argv
    if "--snapshot" in args:
        snapshot, version = snapshot_from_mindspore()
        _write(SNAPSHOT_PATH, snapshot_text(snapshot, version))
        return 0
    snapshot, version = read_snapshot()
    with open(README_PATH) as f:
        readme = f.read()
    wanted = {PAGE_PATH: page_text(snapshot, version),
              README_PATH: readme_text(readme, snapshot, version)}
    if "--check" in args:
        stale = [p for p, text in wanted.items() if not os.path.exists(p) or open(p).read() != text]
        for p in stale:
            print(f"{os.path.relpath(p, ROOT)} is stale: run {REGENERATE}", file=sys.stderr)
        return 1 if stale else 0
    for p, text in wanted.items():
        _write(p, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
