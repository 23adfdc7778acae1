"""ms-opt: an mlir-opt style driver with the ms dialect and every mscc pass registered.

    ms-opt [FILE|-] [--pass-pipeline='builtin.module(...)'] [--PASS[=OPTIONS] ...]
           [--split-input-file] [--verify-diagnostics] [-o OUT]
           [--mlir-print-op-generic] [--mlir-print-debuginfo] [--list-passes]

Pass flags run in the order given; mscc passes and upstream MLIR passes mix freely.
"""
from __future__ import annotations

import sys

from .common import UsageError, guarded_main, print_diagnostics, read_input

SPLIT_MARKER = "// -----"
_FLAGS = {"--split-input-file", "--verify-diagnostics", "--mlir-print-op-generic",
          "--mlir-print-debuginfo", "--list-passes", "--help", "-h"}


def parse_args(argv):
    opts = {"input": None, "output": None, "steps": [], "flags": set()}
    from ..passes.pipeline import parse_pipeline, parse_step
    i = 0
    while i < len(argv):
        arg = argv[i]
        i += 1
        if arg in _FLAGS:
            opts["flags"].add({"-h": "--help"}.get(arg, arg))
        elif arg == "-o" or arg.startswith("-o="):
            if arg == "-o":
                if i >= len(argv):
                    raise UsageError("-o needs a file name")
                opts["output"], i = argv[i], i + 1
            else:
                opts["output"] = arg[3:]
        elif arg == "--pass-pipeline" or arg.startswith("--pass-pipeline="):
            if arg == "--pass-pipeline":
                if i >= len(argv):
                    raise UsageError("--pass-pipeline needs a value")
                text, i = argv[i], i + 1
            else:
                text = arg.split("=", 1)[1]
            try:
                opts["steps"] += parse_pipeline(text)
            except ValueError as e:
                raise UsageError(str(e)) from None
        elif arg.startswith("-") and arg != "-":
            name, _, options = arg.lstrip("-").partition("=")
            options = options.strip("'\"")
            try:
                opts["steps"].append(parse_step(f"{name}{{{options}}}" if options else name))
            except ValueError as e:
                raise UsageError(f"bad option '{arg}': {e}") from None
        else:
            if opts["input"] is not None:
                raise UsageError(f"more than one input file ('{opts['input']}', '{arg}')")
            opts["input"] = arg
    return opts


def split_chunks(text: str, split: bool):
    """(first_line, chunk_text) pairs; chunks keep their original line numbers."""
    if not split:
        return [(1, text)]
    chunks, start, cur = [], 1, []
    for n, line in enumerate(text.split("\n"), start=1):
        if line.strip() == SPLIT_MARKER:
            chunks.append((start, "\n".join(cur)))
            start, cur = n + 1, []
        else:
            cur.append(line)
    chunks.append((start, "\n".join(cur)))
    return chunks


def process_chunk(text, first_line, filename, steps, flags):
    """Returns (output text or None, diagnostics)."""
    from ..passes.compiler import parse_module
    from ..passes.diagnostics import CompileError
    from ..passes.pipeline import parse_step, run_steps
    padded = "\n" * (first_line - 1) + text  # diagnostics keep the file's line numbers
    try:
        module = parse_module(padded, filename)
        run_steps(module, [parse_step("ms-verify")] + list(steps), verify_each=True)
    except CompileError as e:
        return None, e.diagnostics
    asm = module.operation.get_asm(
        print_generic_op_form="--mlir-print-op-generic" in flags,
        enable_debug_info="--mlir-print-debuginfo" in flags)
    return asm, []


@guarded_main("ms-opt")
def main(argv):
    try:
        opts = parse_args(argv)
    except UsageError as e:
        print(f"ms-opt: error: {e}", file=sys.stderr)
        return 1
    flags = opts["flags"]
    if "--help" in flags:
        print(__doc__.strip())
        return 0
    if "--list-passes" in flags:
        from ..passes import base, pipeline
        pipeline.load_all_passes()
        for name, cls in sorted(base.PASSES.items()):
            print(f"  --{name:28s} {cls.summary}")
        return 0
    path = opts["input"] or "-"
    try:
        text = read_input(path)
    except UsageError as e:
        print(f"ms-opt: error: {e}", file=sys.stderr)
        return 1
    filename = "<stdin>" if path == "-" else path
    from .verify_diagnostics import check, parse_expectations
    verify = "--verify-diagnostics" in flags
    outputs, failed = [], False
    for first_line, chunk in split_chunks(text, "--split-input-file" in flags):
        asm, diags = process_chunk(chunk, first_line, filename, opts["steps"], flags)
        if verify:
            problems = check(diags, parse_expectations(chunk, first_line), filename)
            print_diagnostics(problems, {filename: text})
            failed |= bool(problems)
        else:
            print_diagnostics(diags, {filename: text})
            failed |= any(d.severity == "error" for d in diags)
        if asm is not None:
            outputs.append(asm)
    result = ("\n" + SPLIT_MARKER + "\n").join(o.rstrip("\n") for o in outputs)
    result += "\n" if outputs else ""
    if opts["output"] and opts["output"] != "-":
        with open(opts["output"], "w") as f:
            f.write(result)
    else:
        sys.stdout.write(result)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
