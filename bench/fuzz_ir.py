"""Fuzz the IR tools with mutants of the repository's own .mlir files.

    python bench/fuzz_ir.py --mutants 1000 --seed 0 [--jobs N] [--show 5] [--own-passes]

Every mutant goes through the three commands a user runs on IR (`ms-opt`, `ms-opt
--convert-ms-to-linalg`, `mscc --emit=llvm-ir`); with --own-passes also through `ms-opt`
with the passes its seed's file tests (the first RUN line naming any), so that every pass
meets broken variants of the IR it is written for. The contract (DESIGN.md, CLI): exit code 0,
or 1 with a located diagnostic; never a signal, a Python traceback or an internal compiler
error. Prints the counts of each outcome and the first few offenders of each bad kind.

The tools run in-process (through their main() functions) in worker subprocesses, many mutants
per worker: a signal kills only its worker, which the parent notices, records against the
command it was running, and restarts after it. test/python/test_fuzz_ir.py runs a small,
seeded share of the same mutants.
"""
from __future__ import annotations

import argparse
import functools
import json
import os
import random
import re
import select
import shlex
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COMMANDS = (("ms-opt",), ("ms-opt", "--convert-ms-to-linalg"), ("mscc", "--emit=llvm-ir"))
# Outcomes: the first three keep the contract.
OUTCOMES = ("ok", "located", "unlocated-no-loc-input", "unlocated", "signal", "traceback",
            "ice", "timeout", "bad-exit")
BAD = ("unlocated", "signal", "traceback", "ice", "timeout", "bad-exit")
JOB_TIMEOUT_S = 60.0

# ------------------------------------------------------------------ seeds and mutations

def seeds(repo=REPO) -> list[str]:
    """Every `// -----` chunk of the repository's test and example .mlir files, in a fixed
    order (the mutants of one seed are the same on every machine). Not lit's scratch folders
    (`Output`: what earlier runs dumped there made the seeds, and so the mutants, of a
    working tree differ from a clean clone's)."""
    return [chunk for chunk, _ in _seeds_with_passes(_seed_paths(repo))]


def _seed_paths(repo) -> tuple:
    """The .mlir files of the repository's test and examples folders, in a fixed order."""
    paths = []
    for top in ("test", "examples"):
        for root, dirs, files in os.walk(os.path.join(repo, top)):
            dirs[:] = sorted(d for d in dirs if d != "Output")
            paths += [os.path.join(root, f) for f in sorted(files) if f.endswith(".mlir")]
    return tuple(paths)


@functools.lru_cache(maxsize=None)
def _seeds_with_passes(paths: tuple) -> list[tuple[str, tuple]]:
    """(chunk, the ms-opt pass flags of its file's RUN lines) for every chunk of `paths`."""
    chunks = []
    for p in paths:
        with open(p, encoding="utf-8") as f:
            text = f.read()
        flags = run_line_passes(text)
        chunks += [(c, flags) for c in re.split(r"^// -----\s*$", text, flags=re.M)
                   if c.strip()]
    return chunks


def seed_passes(repo=REPO) -> list[tuple]:
    """The ms-opt pass flags of each seed of seeds() (its file's first `ms-opt %s` RUN line
    that names a pass; () where none does), in the same order."""
    return [flags for _, flags in _seeds_with_passes(_seed_paths(repo))]


_RUN_MS_OPT = re.compile(r"^// RUN: ms-opt %s ([^|\n]*)", re.M)
_NOT_PASSES = ("--split-input-file", "--verify-diagnostics")


def run_line_passes(text: str) -> tuple:
    """The pass flags (`--ms-autodiff`, `--cpu-pipeline=...`) of the first RUN line of
    `text` that runs ms-opt on the file with at least one."""
    for m in _RUN_MS_OPT.finditer(text):
        try:
            words = shlex.split(m.group(1))  # (options in quotes: "vector-bits=512 threads=2")
        except ValueError:
            continue
        flags = tuple(f for f in words if f.startswith("--") and f not in _NOT_PASSES)
        if flags:
            return flags
    return ()


_TOKEN = re.compile(r'"(?:\\.|[^"\\\n])*"|[%@#!^]?[\w.$-]+|\S')
_NUMBER = re.compile(r"(?<![\w.%#@!^])\d+")
_DIMS = re.compile(r"(?<=[<x])\d+(?=x)")
_OPNAME = re.compile(r'"[a-z_]+\.[a-z_.]+"(?=\()|(?<== )[a-z_]+\.[a-z_.]+')
_FUNC = re.compile(r"func\.func (?:private )?@([\w.$-]+|\"[^\"]*\")")
_TENSOR = re.compile(r"tensor<[^<>]*>")
_ELEM = re.compile(r"\b(f32|f16|f64|i1|i8|i32|i64|ui8)\b")
_NUMBERS = ("0", "1", "-1", "7", "4294967296", "2147483648", "99999999999", "9223372036854775807",
            "18446744073709551616", "99999999999999999999999", "00", "1e9", "0x10")
_OPNAMES = ('"ms."', '"ms"', '"func."', '"builtin"', '"."', '""', '".ms"', '"ms.bogus"',
            '"ms.add.x"', '"linalg."', '"arith"', '"x.y"', "ms.", "ms.add", "func.")
_TYPES = ("f32", "i64", "index", "memref<2xf32>", "tensor<?xf32>", "tensor<*xf32>", "none",
          "vector<4xf32>", "complex<f32>", "tuple<>", "!llvm.ptr", "tensor<0xf32>",
          "tensor<2x0x3xf32>", "tensor<99999999999x99999999xf32>", "tensor<2xbf16>",
          "tensor<2xi128>", "tensor<2x!ms.t>", "(tensor<2xf32>) -> tensor<2xf32>")
_ELEMS = ("bf16", "f8E4M3FN", "i2", "i128", "ui32", "si8", "index", "complex<f32>", "f80",
          "tf32", "i0")
_CHARS = '{}()[]<>"%@#!^:,=-.\\/\x00\t\u00e9\U0001f600'


def _token_spans(text):
    return [m.span() for m in _TOKEN.finditer(text)]


def _pick(rng, seq):
    return seq[rng.randrange(len(seq))] if seq else None


def _replace_match(text, rng, pattern, choices):
    found = list(pattern.finditer(text))
    m = _pick(rng, found)
    if m is None:
        return text
    return text[:m.start()] + _pick(rng, choices) + text[m.end():]


def _delete_span(text, rng, _seeds):
    i = rng.randrange(len(text) + 1)
    return text[:i] + text[i + rng.randint(1, 20):]


def _duplicate_span(text, rng, _seeds):
    i = rng.randrange(len(text) + 1)
    span = text[i:i + rng.randint(1, 60)]
    j = rng.randrange(len(text) + 1)
    return text[:j] + span + text[j:]


def _token_edit(text, rng, _seeds):
    """Delete, duplicate or swap tokens (swaps keep the rest of the text byte for byte)."""
    spans = _token_spans(text)
    if len(spans) < 2:
        return text
    a, b = sorted(rng.sample(range(len(spans)), 2))
    (s1, e1), (s2, e2) = spans[a], spans[b]
    kind = rng.randrange(3)
    if kind == 0:
        return text[:s1] + text[e1:]
    if kind == 1:
        return text[:s2] + text[s1:e1] + " " + text[s2:]
    return text[:s1] + text[s2:e2] + text[e1:s2] + text[s1:e1] + text[e2:]


def _shape_digits(text, rng, _seeds):
    pattern = _DIMS if _DIMS.search(text) and rng.random() < 0.7 else _NUMBER
    return _replace_match(text, rng, pattern, _NUMBERS + (str(rng.randrange(10 ** 12)),))


def _bogus_op_name(text, rng, _seeds):
    return _replace_match(text, rng, _OPNAME, _OPNAMES)


def _function_name(text, rng, _seeds):
    m = _pick(rng, list(_FUNC.finditer(text)))
    if m is None:
        return text
    name = _pick(rng, ('""', '"with space"', '"0"', "_", '"\\n"', "a" * 300))
    return text[:m.start(1)] + name + text[m.end(1):]


def _entry_type(text, rng, _seeds):
    return _replace_match(text, rng, _TENSOR, _TYPES)


def _element_type(text, rng, _seeds):
    return _replace_match(text, rng, _ELEM, _ELEMS)


def _splice(text, rng, all_seeds):
    lines, other = text.split("\n"), _pick(rng, all_seeds).split("\n")
    i = rng.randrange(len(lines) + 1)
    j = rng.randrange(len(other))
    return "\n".join(lines[:i] + other[j:j + rng.randint(1, 4)] + lines[i:])


# The values mscc's own attributes on upstream ops (ms.region, ms.kernel, ms.windows,
# ms.implicit_gemm, ms.distinct_pointers, ...) are replaced with: each pass reads the ones it
# wrote, and IR from a file may hold anything there.
_MS_ATTRIBUTE = re.compile(r"\b(ms\.[\w.]+)\s*=\s*")
_MS_VALUES = ('"x"', "0 : i64", "-1", "array<i64: 99>", "array<i64>", "{}", "unit", "[1, 2]",
              "{kind = 5}", '{id = "a", kind = "matmul"}', "true", "@nowhere", "dense<1> : "
              "tensor<2xi32>", "affine_map<(d0) -> (d0)>", "f32")


def _ms_attribute(text, rng, _seeds):
    """Replace the value of an `ms.<name> = ...` attribute (up to its end: the next `,` or
    `}` at its nesting level) with one of _MS_VALUES."""
    m = _pick(rng, list(_MS_ATTRIBUTE.finditer(text)))
    if m is None:
        return text
    depth, end = 0, m.end()
    while end < len(text):
        c = text[end]
        if c in "([{<":
            depth += 1
        elif c in ")]}>":
            if depth == 0:
                break
            depth -= 1
        elif c in ",\n" and depth == 0:
            break
        end += 1
    return text[:m.end()] + _pick(rng, _MS_VALUES) + text[end:]


# Upstream attributes whose values passes compute with (linalg's indexing maps and iterator
# types, dense arrays of sizes and strides): each is rewritten into a variant that still
# parses, so that the verifiers and the passes, not the parser, meet it.
_AFFINE_MAP = re.compile(r"affine_map<\(([^()]*)\)(\[[^\]]*\])? -> \(((?:[^()]|\([^()]*\))*)\)>")
_DENSE_I64 = re.compile(r"array<i64(?:: [^>]*)?>")
_ITERATORS = re.compile(r"#linalg\.iterator_type<(parallel|reduction)>|\b(parallel|reduction)\b")
_MAP_RESULTS = ("0", "d0 * 2 + 1", "d0 floordiv 0", "d0 mod -1", "-d0", "d0 * 9223372036854775807",
                "s0", "d0 + d0")
_I64_ARRAYS = ("array<i64>", "array<i64: 0>", "array<i64: -1, 2>", "array<i64: 1, 1, 1, 1, 1>",
               "array<i64: 9223372036854775807>", "array<i64: -9223372036854775808, 0>")


def _map_variant(m, rng) -> str:
    dims = [d.strip() for d in m.group(1).split(",") if d.strip()]
    results = [r.strip() for r in split_top_level_commas(m.group(3)) if r.strip()]
    kind = rng.randrange(5)
    if kind == 0 and results:
        rng.shuffle(results)
    elif kind == 1 and results:
        results.pop(rng.randrange(len(results)))
    elif kind == 2 and results:
        results.insert(rng.randrange(len(results) + 1), _pick(rng, results))
    elif kind == 3:
        new = _pick(rng, _MAP_RESULTS)
        if results:
            results[rng.randrange(len(results))] = new
        else:
            results = [new]
    else:
        dims = dims[:-1] if dims and rng.random() < 0.5 else dims + [f"d{len(dims)}"]
    return f"affine_map<({', '.join(dims)}){m.group(2) or ''} -> ({', '.join(results)})>"


def split_top_level_commas(text: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for i, c in enumerate(text):
        depth += c in "([{<"
        depth -= c in ")]}>"
        if c == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    return parts + [text[start:]]


def _upstream_attribute(text, rng, _seeds):
    """An affine map's results or dimensions, an iterator type or a dense i64 array changed."""
    kinds = [k for k, pattern in (("map", _AFFINE_MAP), ("array", _DENSE_I64),
                                  ("iterator", _ITERATORS)) if pattern.search(text)]
    kind = _pick(rng, kinds)
    if kind == "map":
        m = _pick(rng, list(_AFFINE_MAP.finditer(text)))
        return text[:m.start()] + _map_variant(m, rng) + text[m.end():]
    if kind == "array":
        return _replace_match(text, rng, _DENSE_I64, _I64_ARRAYS)
    if kind == "iterator":
        m = _pick(rng, list(_ITERATORS.finditer(text)))
        word = "reduction" if "parallel" in m.group(0) else "parallel"
        return text[:m.start()] + m.group(0).replace(m.group(1) or m.group(2), word) + text[m.end():]
    return text


def _insert_char(text, rng, _seeds):
    i = rng.randrange(len(text) + 1)
    return text[:i] + _pick(rng, _CHARS) + text[i:]


def deep_nesting(kind: str, depth: int) -> str:
    """A module whose nesting (attributes, types, regions, aliases) is `depth` deep."""
    t = "tensor<2xf32>"
    if kind == "attr":
        attr = "[" * depth + "1" + "]" * depth
        return (f"func.func @f(%a: {t}) -> {t} attributes {{deep = {attr}}} {{\n"
                f"  return %a : {t}\n}}\n")
    if kind == "type":
        ty = "tuple<" * depth + "f32" + ">" * depth
        return f"func.func private @f() -> {ty}\n"
    if kind == "alias":
        lines = ["#a0 = [1]"] + [f"#a{i} = [#a{i - 1}]" for i in range(1, depth)]
        return "\n".join(lines) + f"\nfunc.func @f(%a: {t}) -> {t} attributes {{deep = #a{depth - 1}}} {{\n  return %a : {t}\n}}\n"
    body = f'%r = "ms.exp"(%a) : ({t}) -> {t}\n'
    for _ in range(depth):  # regions
        body = f'%r = "ms.fused"() ({{\n{body}gpu.yield %r : {t}\n}}) {{kind = "elementwise"}} : () -> {t}\n'
    return f"func.func @f(%a: {t}) -> {t} {{\n{body}return %r : {t}\n}}\n"


def _deep(text, rng, _seeds):
    return deep_nesting(_pick(rng, ("attr", "type", "alias", "region")),
                        _pick(rng, (8, 200, 3000, 10000)))


MUTATORS = (_delete_span, _duplicate_span, _token_edit, _token_edit, _shape_digits,
            _shape_digits, _bogus_op_name, _function_name, _entry_type, _entry_type,
            _element_type, _splice, _insert_char, _ms_attribute, _ms_attribute,
            _upstream_attribute, _upstream_attribute)


def mutants(n: int, seed: int) -> list[str]:
    """`n` mutants, the same for the same seed: one to three mutations of a seed chunk; one in
    forty a deeply nested module."""
    return [text for text, _ in mutants_with_origin(n, seed)]


def mutants_with_origin(n: int, seed: int) -> list[tuple[str, int | None]]:
    """mutants(n, seed), each with the index in seeds() of the chunk it was made from (None
    for a deeply nested module)."""
    rng = random.Random(seed)
    all_seeds = seeds()
    out = []
    for _ in range(n):
        if rng.random() < 0.025:
            out.append((_deep("", rng, all_seeds), None))
            continue
        origin = rng.randrange(len(all_seeds))
        text = all_seeds[origin]
        for _ in range(rng.randint(1, 3)):
            text = _pick(rng, MUTATORS)(text, rng, all_seeds)
        out.append((text, origin))
    return out


# ------------------------------------------------------------------ running

@dataclass
class Result:
    mutant: int
    command: tuple
    rc: int
    stderr: str
    outcome: str = ""


def _run_in_process(command, path):
    """(exit code, stderr text) of one tool run in this process."""
    import contextlib
    import io
    from mscc.tools import ms_opt, mscc_main
    main = ms_opt.main if command[0] == "ms-opt" else mscc_main.main
    argv = [path] + list(command[1:])
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        try:
            rc = main(argv)
        except SystemExit as e:
            rc = e.code if isinstance(e.code, int) else 1
        except BaseException:  # noqa: BLE001  (what escapes main is what we look for)
            import traceback
            traceback.print_exc()
            rc = 1
    return rc, err.getvalue()


def worker(job_file: str, start: int):
    """Run jobs [start:] of `job_file` in this process, one JSON line per finished job on
    stdout. Whatever C++ writes to fd 2 is attributed to the job that wrote it."""
    with open(job_file) as f:
        jobs = json.load(f)
    out = sys.stdout
    for i in range(start, len(jobs)):
        path, command = jobs[i]
        before = os.lseek(2, 0, os.SEEK_END)
        rc, err = _run_in_process(command, path)
        raw = b""
        after = os.lseek(2, 0, os.SEEK_END)
        if after > before:
            with open("/proc/self/fd/2", "rb") as f2:
                f2.seek(before)
                raw = f2.read(after - before)
        out.write(json.dumps({"i": i, "rc": rc, "stderr": err + raw.decode("utf-8", "replace")})
                  + "\n")
        out.flush()


def _spawn(job_file, start, err_path):
    env = dict(os.environ, MSCC_CACHE_DIR="", PYTHONUNBUFFERED="1")
    env.pop("MSCC_DEBUG", None)
    with open(err_path, "w+b") as err:  # the worker keeps its own copy of the descriptor
        return subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "--worker", job_file, str(start)],
            stdout=subprocess.PIPE, stderr=err, env=env, cwd=REPO)


def _tail(path, limit=2000):
    with open(path, "rb") as f:
        f.seek(max(0, os.path.getsize(path) - limit))
        return f.read().decode("utf-8", "replace")


def run_shard(jobs, workdir, tag, timeout=JOB_TIMEOUT_S):
    """Results of `jobs` ((mutant, path, command) triples), restarting the worker after a
    signal or a timeout."""
    job_file = os.path.join(workdir, f"jobs{tag}.json")
    with open(job_file, "w") as f:
        json.dump([(p, c) for _, p, c in jobs], f)
    results, start = [], 0
    while start < len(jobs):
        err_path = os.path.join(workdir, f"worker{tag}.{start}.err")
        proc = _spawn(job_file, start, err_path)
        buf, deadline = b"", time.monotonic() + timeout + 30  # the first job pays the imports
        while True:
            ready, _, _ = select.select([proc.stdout], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:  # a hang: record it and go on after it
                proc.kill()
                proc.wait()
                results.append(Result(jobs[start][0], jobs[start][2], -9, _tail(err_path), "timeout"))
                start += 1
                break
            chunk = os.read(proc.stdout.fileno(), 1 << 16)
            if not chunk:  # the worker died (or finished)
                rc = proc.wait()
                if start < len(jobs):
                    results.append(Result(jobs[start][0], jobs[start][2], rc, _tail(err_path)))
                    start += 1
                break
            buf += chunk
            *lines, buf = buf.split(b"\n")
            for line in lines:
                r = json.loads(line)
                results.append(Result(jobs[r["i"]][0], jobs[r["i"]][2], r["rc"], r["stderr"]))
                start = r["i"] + 1
            deadline = time.monotonic() + timeout
        proc.stdout.close()
    return results


_LOCATED = re.compile(r"^\S.*?:\d+:\d+: error: ", re.M)


def classify(r: Result, text: str) -> str:
    if r.outcome == "timeout":
        return "timeout"
    if r.rc < 0 or r.rc > 128:
        return "signal"
    if "Traceback (most recent call last)" in r.stderr:
        return "traceback"
    if re.search(r"^\S*: error: internal compiler error", r.stderr, re.M):
        return "ice"
    if r.rc == 0:
        return "ok"
    if r.rc != 1:
        return "bad-exit"
    if _LOCATED.search(r.stderr):
        return "located"
    # An input that states its own locations (loc(...)) may state unknown ones.
    return "unlocated-no-loc-input" if "loc(" in text else "unlocated"


def run_texts(texts, n_workers: int = 2, workdir: str | None = None,
              extra=None) -> list[Result]:
    """Every text through every command (COMMANDS, and `extra[k]`, a command of its own for
    text k where given), in `n_workers` worker processes; the results in text order, with
    their outcomes."""
    own = workdir is None
    workdir = workdir or tempfile.mkdtemp(prefix="mscc-fuzz-")
    os.makedirs(workdir, exist_ok=True)
    jobs = []
    for k, text in enumerate(texts):
        path = os.path.join(workdir, f"m{k:05d}.mlir")
        with open(path, "w", encoding="utf-8", errors="surrogatepass") as f:
            f.write(text)
        jobs += [(k, path, c) for c in COMMANDS + ((extra[k],) if extra and extra[k] else ())]
    shards = [jobs[i::n_workers] for i in range(n_workers)]
    if n_workers == 1:
        results = run_shard(shards[0], workdir, 0)
    else:
        from concurrent.futures import ThreadPoolExecutor
        with ThreadPoolExecutor(n_workers) as pool:
            parts = list(pool.map(lambda a: run_shard(a[1], workdir, a[0]), enumerate(shards)))
        results = [r for part in parts for r in part]
    for r in results:
        r.outcome = classify(r, texts[r.mutant])
    order = {c: i for i, c in enumerate(COMMANDS)}
    results.sort(key=lambda r: (r.mutant, order.get(tuple(r.command), len(COMMANDS))))
    if own:
        import shutil
        shutil.rmtree(workdir, ignore_errors=True)
    return results


def fuzz(n_mutants: int, seed: int, n_workers: int = 2, workdir: str | None = None,
         own_passes: bool = False):
    """(mutant texts, results) for `n_mutants` mutants of `seed`; `own_passes`: each mutant
    also through `ms-opt` with the passes its seed's file tests (its RUN line), which puts
    every pass, not only the pipelines, in front of broken variants of its own inputs."""
    made = mutants_with_origin(n_mutants, seed)
    texts = [text for text, _ in made]
    extra = None
    if own_passes:
        flags = seed_passes()
        extra = [("ms-opt",) + flags[o] if o is not None and flags[o] else None
                 for _, o in made]
    return texts, run_texts(texts, n_workers, workdir, extra)


def report(results, show=3) -> str:
    counts = Counter(r.outcome for r in results)
    lines = [f"{len(results)} runs: " + ", ".join(f"{k} {counts.get(k, 0)}" for k in OUTCOMES)]
    for kind in BAD:
        for r in [r for r in results if r.outcome == kind][:show]:
            first = r.stderr.strip().split("\n")[-1 if kind == "signal" else 0][:200]
            lines.append(f"  {kind}: mutant {r.mutant} {' '.join(r.command)} rc={r.rc}: {first}")
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--mutants", type=int, default=1000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    p.add_argument("--show", type=int, default=3, help="offenders shown per bad outcome")
    p.add_argument("--keep", help="write the mutants (and worker logs) into this folder")
    p.add_argument("--own-passes", action="store_true",
                   help="also run each mutant through the passes its seed's file tests")
    p.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        worker(args.worker[0], int(args.worker[1]))
        return 0
    if args.keep:
        os.makedirs(args.keep, exist_ok=True)
    t0 = time.perf_counter()
    _, results = fuzz(args.mutants, args.seed, args.jobs, args.keep, args.own_passes)
    print(report(results, args.show))
    print(f"{args.mutants} mutants (seed {args.seed}) in {time.perf_counter() - t0:.1f} s")
    return 1 if any(r.outcome in BAD for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
