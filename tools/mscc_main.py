"""mscc: compile an ms module (.mlir) or jit functions of a Python file (.py).

    mscc FILE [--entry NAME] [--input-signature "f32[8,16],f32[16]"] [--emit=STAGE]
         [--target cpu|cuda] [-o OUT] [--dump-dir DIR] [--run] [--inputs a.npy b.npy] [--seed N]

--emit stops at a named stage of the one pipeline (passes/pipeline.py) and prints it (or writes
it to -o); for --target cuda, --emit=ptx prints the kernels' PTX. `-o NAME.msx` (without
--emit) writes an executable artifact for the target (passes/artifact.py), which
`mscc.runtime.load` runs without MLIR. --run compiles the entry and runs it on random inputs
(or --inputs), printing each result's shape, dtype and checksum. --dump-dir writes the IR after every pass, numbered in
order. Bad input gets a located diagnostic and exit code 1.
"""
from __future__ import annotations

import argparse
import os
import sys

from .common import UsageError, guarded_main, print_diagnostics, read_input


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise UsageError(message)


def _parser():
    p = _Parser(prog="mscc", description=__doc__.split("\n\n")[0], add_help=True)
    p.add_argument("file", help="an ms module (.mlir) or a Python file (.py)")
    p.add_argument("--entry", help="function to compile (default: the only one)")
    p.add_argument("--input-signature", help='e.g. "f32[8,16],f32[16]"; ? for a dynamic size, "f32[?,784]" (for .py entries)')
    p.add_argument("--emit", default=None, help="stage to print: " + ", ".join(_stages()))
    p.add_argument("--target", default="cpu", choices=["cpu", "cuda"])
    p.add_argument("-o", dest="output",
                   help="write the emitted stage here (NAME.msx: an executable artifact)")
    p.add_argument("--dump-dir", help="write the IR after every pass into this folder")
    p.add_argument("--mlir-print-debuginfo", dest="debug_info", action="store_true",
                   help="print source locations (the Python lines ops came from)")
    p.add_argument("--run", action="store_true", help="compile and run the entry")
    p.add_argument("--inputs", nargs="+", help=".npy files for --run")
    p.add_argument("--seed", type=int, default=0, help="seed for random --run inputs")
    return p


def _stages(target=None):
    from ..passes.pipeline import stage_names
    if target is None:  # every target's stages, in order (for --help)
        return list(dict.fromkeys(stage_names("cpu") + stage_names("cuda")))
    return stage_names(target)


# `-o FILE` without --emit writes the stage its extension names; any other extension gets the
# target's last text stage (LLVM IR for the CPU, PTX for CUDA).
_STAGE_OF_EXTENSION = {".msx": "executable", ".ll": "llvm-ir", ".s": "asm", ".ptx": "ptx", ".o": "obj",
                       ".cubin": "obj"}
_TEXT_STAGE = {"cpu": "llvm-ir", "cuda": "ptx"}


def default_stage(output, target):
    """The stage to emit when --emit is not given: ms-opt to stdout; for -o, by the output's
    extension and the target. A file kind the target cannot produce is a usage error."""
    if not output:
        return "ms-opt"
    ext = os.path.splitext(output)[1].lower()
    stage = _STAGE_OF_EXTENSION.get(ext, _TEXT_STAGE[target])
    if stage != "executable" and stage not in _stages(target):
        raise UsageError(f"-o {output}: a {ext} file holds the '{stage}' stage, which "
                         f"--target {target} does not produce; give --emit=STAGE "
                         f"({', '.join(_stages(target))})")
    return stage


def parse_input_signature(text: str):
    """`f32[8,16],i64[],bool[3]` -> TensorSpecs; `f32[?,784]`: dimension 0 dynamic."""
    from ..dialects import dtypes as dt
    from ..dialects.symdim import ANY
    specs = []
    for item in _split_signature(text):
        name, _, rest = item.partition("[")
        if not rest.endswith("]"):
            raise UsageError(f"bad input signature entry '{item}': expected like f32[8,16]")
        try:
            dtype = dt.by_name(name.strip())
            # `?` (or -1): a dynamic dimension, any size at run time
            dims = tuple(ANY if d.strip() in ("?", "-1") else int(d)
                         for d in rest[:-1].split(",") if d.strip())
        except (TypeError, ValueError) as e:
            raise UsageError(f"bad input signature entry '{item}': {e}") from None
        if any(d is not ANY and d < 0 for d in dims):
            raise UsageError(f"bad input signature entry '{item}': negative dimension")
        specs.append(dt.TensorSpec(dims, dtype))
    return specs


def _split_signature(text):
    items, depth, cur = [], 0, ""
    for ch in text:
        depth += ch == "["
        depth -= ch == "]"
        if ch == "," and depth == 0:
            items.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        items.append(cur.strip())
    return items


def load_module(args, text):
    """(ms module, Parameter values per entry) from the source text of args.file."""
    path = args.file
    if path.endswith(".py"):
        from ..pyfront.cli_support import trace_python_file
        module, parameters = trace_python_file(
            path, text, args.entry,
            parse_input_signature(args.input_signature) if args.input_signature else None)
        return module, parameters
    if args.input_signature:
        raise UsageError("--input-signature applies to .py files; an .mlir entry has its own")
    from ..passes.compiler import parse_module
    return parse_module(text, path), {}


def _dumper(folder):
    os.makedirs(folder, exist_ok=True)
    counter = [0]

    def dump(step, module):
        counter[0] += 1
        name = step.name.split("{")[0].split("(")[-1].rstrip(")")
        with open(os.path.join(folder, f"{counter[0]:02d}_{name}.mlir"), "w") as f:
            f.write(str(module))
    return dump


def _write(content, output):
    """Text, or bytes (object code: only to a file, never to a terminal)."""
    binary = isinstance(content, bytes)
    if output and output != "-":
        try:
            with open(output, "wb" if binary else "w") as f:
                f.write(content)
        except OSError as e:
            raise UsageError(f"could not write '{output}': {e.strerror}") from None
    elif binary:
        if sys.stdout.isatty():
            raise UsageError("--emit=obj writes binary object code: give -o FILE")
        sys.stdout.flush()
        sys.stdout.buffer.write(content)
    else:
        sys.stdout.write(content if content.endswith("\n") else content + "\n")


def write_artifact(module, args):
    """`-o NAME.msx`: the entry compiled for --target into an executable artifact."""
    from ..passes.artifact import build_artifact
    artifact = build_artifact(module, args.entry, args.target)
    try:
        artifact.save(args.output)
    except OSError as e:
        raise UsageError(f"could not write '{args.output}': {e.strerror}") from None


def run_entry(module, args, parameters):
    """--run: compile the entry for --target and run it on --inputs or random inputs (plus
    the current values of the Parameters it reads); prints and returns the results."""
    import numpy as np
    from ..passes.compiler import select_entry
    sig = select_entry(module, args.entry)
    arrays = _run_inputs(args, sig, parameters.get(sig.name, []))
    try:
        outputs = _compile_and_call(module, sig.name, args.target, arrays)
    except ValueError as e:
        raise UsageError(str(e)) from None
    for i, out in enumerate(outputs):
        print(f"result #{i}: shape={tuple(out.shape)} dtype={out.dtype} "
              f"checksum={float(np.asarray(out, np.float64).sum()):.6g}")
    return outputs


def _run_inputs(args, sig, params):
    """The arrays --run passes: the --inputs files, else seeded random data for the explicit
    inputs followed by the Parameter values."""
    import numpy as np
    if not args.inputs:
        rng = np.random.default_rng(args.seed)
        explicit = sig.inputs[:len(sig.inputs) - len(params)]
        from ..dialects.symdim import has_dynamic
        for i, s in enumerate(explicit):
            if has_dynamic(s.shape):
                raise UsageError(f"input #{i} of '{sig.name}' ({s}) has a dynamic size: "
                                 "give the arrays with --inputs")
        return [random_input(rng, s) for s in explicit] + list(params)
    if len(args.inputs) != len(sig.inputs):
        raise UsageError(f"'{sig.name}' takes {len(sig.inputs)} inputs, got "
                         f"{len(args.inputs)} files")
    try:
        return [np.load(p) for p in args.inputs]
    except (OSError, ValueError) as e:
        raise UsageError(f"could not read inputs: {e}") from None


def _compile_and_call(module, entry, target, arrays):
    """The entry's results as numpy arrays (a CUDA executable's come back from the device)."""
    from ..passes.compiler import compile_module
    if target != "cuda":
        return compile_module(module, entry, target)(*arrays)
    from ..runtime.cuda import CudaError
    try:
        return [o.asnumpy() for o in compile_module(module, entry, target)(*arrays)]
    except CudaError as e:
        raise UsageError(f"cannot run on CUDA: {e}") from None


def random_input(rng, spec):
    import numpy as np
    d = spec.dtype
    if d.is_bool:
        return rng.random(spec.shape) < 0.5
    if d.is_float:
        return rng.standard_normal(spec.shape).astype(d.np)
    return rng.integers(0 if d.kind == "uint" else -8, 9, spec.shape).astype(d.np)


def _check_cpu_target():
    """MSCC_CPU and MSCC_VECTOR_BITS name a CPU LLVM knows (passes/cpu_target.py)."""
    from ..passes.cpu_target import CpuTargetError, current
    try:
        current()
    except CpuTargetError as e:
        raise UsageError(str(e)) from None


@guarded_main("mscc")
def main(argv):
    from ..passes.diagnostics import CompileError
    try:
        args = _parser().parse_args(argv)
        if args.emit is not None and args.emit not in _stages(args.target):
            raise UsageError(f"unknown stage '{args.emit}'; stages: "
                             f"{', '.join(_stages(args.target))}")
        if args.emit is None and not args.run:
            args.emit = default_stage(args.output, args.target)
        if args.target == "cpu":
            _check_cpu_target()
    except UsageError as e:
        print(f"mscc: error: {e}", file=sys.stderr)
        return 1
    text = ""
    try:
        text = read_input(args.file)
        module, parameters = load_module(args, text)
        if args.run:
            run_entry(module, args, parameters)
            return 0
        after = _dumper(args.dump_dir) if args.dump_dir else None
        if args.emit == "executable":
            if after is not None:
                raise UsageError("--dump-dir applies to --emit stages, not to .msx outputs")
            write_artifact(module, args)
        else:
            from ..passes.artifact import emit_stage
            _write(emit_stage(module, args.target, args.emit, after_each=after,
                              debug_info=args.debug_info, entry=args.entry), args.output)
    except UsageError as e:
        print(f"mscc: error: {e}", file=sys.stderr)
        return 1
    except CompileError as e:
        print_diagnostics(e.diagnostics, {args.file: text})
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
