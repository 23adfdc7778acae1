"""The one pipeline driver (passes/pipeline.run_pipeline): stage names are checked, a module
starts where it is, and every stage reports its time."""
import numpy as np
import pytest

from mscc.passes import pipeline
from mscc.passes.compiler import compile_module
from mstest import module_of, op, spec

SPECS = [spec((4, 8), "float32")]


def _tanh_module():
    return module_of(SPECS, lambda x: op("ms.tanh", x))


def test_stages_run_in_order_and_report_their_times():
    seen = []
    pipeline.run_pipeline(_tanh_module(), "cpu", stop_after="bufferized",
                          on_stage=lambda name, seconds: seen.append((name, seconds)))
    assert [name for name, _ in seen] == ["ms", "ms-opt", "linalg", "bufferized"]
    assert all(seconds >= 0 for _, seconds in seen)


def test_a_module_continues_from_the_stage_it_is_at():
    module = _tanh_module()
    pipeline.run_pipeline(module, "cpu", stop_after="linalg")
    seen = []
    pipeline.run_pipeline(module, "cpu", stop_after="llvm", start_after="linalg",
                          on_stage=lambda name, _: seen.append(name))
    assert seen == ["bufferized", "llvm"]
    # Already there: nothing to run, not an error.
    pipeline.run_pipeline(module, "cpu", stop_after="llvm", start_after="llvm",
                          on_stage=lambda name, _: seen.append(name))
    assert seen == ["bufferized", "llvm"]


@pytest.mark.parametrize("start_after, stop_after, message", [
    ("bogus", "llvm", "unknown start stage 'bogus'"),
    ("llvm", "linalg", "already at the later stage 'llvm'"),
    (None, "obj", "unknown stage 'obj' \\(an exported form"),
    ("gpu", "llvm", "unknown start stage 'gpu'"),  # a CUDA stage
])
def test_bad_stage_names_are_errors_not_silence(start_after, stop_after, message):
    module = _tanh_module()
    before = str(module)
    with pytest.raises(ValueError, match=message):
        pipeline.run_pipeline(module, "cpu", stop_after=stop_after, start_after=start_after)
    assert str(module) == before  # checked before anything ran


def test_compile_times_name_every_stage_run():
    module = _tanh_module()
    pipeline.run_pipeline(module, "cpu", stop_after="ms-opt")
    exe = compile_module(module, "f", start_after="ms-opt")
    assert list(exe.compile_times) == ["linalg", "bufferized", "llvm", "codegen"]
    x = np.linspace(-2, 2, 32, dtype=np.float32).reshape(4, 8)
    np.testing.assert_allclose(exe(x)[0], np.tanh(x), rtol=1e-5)


def _invalid_after_python_edit():
    """A valid module whose function type is then changed behind the verifier's back (its
    return no longer matches): what a faulty pass could leave."""
    from mlir import ir
    from mscc.dialects.builders import mlir_context
    with mlir_context():
        module = ir.Module.parse("func.func @f(%a: f32) -> f32 {\n  return %a : f32\n}")
        fn = module.body.operations[0]
        fn.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(
            [ir.F32Type.get()], [ir.IntegerType.get_signless(32)]))
    return module


@pytest.mark.parametrize("verify_each", [False, True])
def test_invalid_ir_left_by_a_pass_is_a_compile_error(verify_each):
    from mscc.passes.diagnostics import CompileError
    steps = [pipeline.parse_step("ms-inline"), pipeline.parse_step("canonicalize")]
    with pytest.raises(CompileError) as info:
        pipeline.run_steps(_invalid_after_python_edit(), steps, stage="ms-opt",
                           verify_each=verify_each)
    assert "i32" in str(info.value) and info.value.stage == "ms-opt"


class _BreaksReturnType:
    """A pass (mscc's kind) that leaves the IR invalid: the function's result type changed
    behind the verifier's back."""
    name = "test-breaks-return-type"

    @classmethod
    def from_text(cls, options):
        return cls()

    def run(self, module):
        from mlir import ir
        fn = module.regions[0].blocks[0].operations[0]
        fn.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(
            [ir.F32Type.get()], [ir.IntegerType.get_signless(32)]))


@pytest.mark.parametrize("verify_each", [False, True])
def test_invalid_ir_left_by_a_python_pass_is_a_compile_error(verify_each, monkeypatch):
    """The last step mscc's own pass: verified after it whether the upstream passes are
    verified each (ms-opt, the tests) or once per stage (compiles). With verify_each it was
    not: ms-opt printed the invalid module in generic form and exited 0."""
    from mlir import ir
    from mscc.dialects.builders import mlir_context
    from mscc.passes import base
    from mscc.passes.diagnostics import CompileError
    monkeypatch.setitem(base.PASSES, _BreaksReturnType.name, _BreaksReturnType)
    with mlir_context():
        module = ir.Module.parse("func.func @f(%a: f32) -> f32 {\n  return %a : f32\n}")
    with pytest.raises(CompileError) as info:
        pipeline.run_steps(module, [pipeline.parse_step(_BreaksReturnType.name)],
                           stage="llvm", verify_each=verify_each)
    assert "i32" in str(info.value) and info.value.stage == "llvm"


def _plain_walk(root, names):
    from mlir import ir
    found = []

    def visit(o):
        if o.name in names:
            found.append(o)
        return ir.WalkResult.ADVANCE
    root.operation.walk(visit, ir.WalkOrder.PRE_ORDER)
    return found


@pytest.mark.parametrize("names, in_a_body", [
    (("math.tanh",), True),  # linalg bodies are searched for what can be in them
    (("linalg.yield",), True),
    (("linalg.generic",), False),  # ...and skipped for what cannot
    (("func.func", "func.return"), False),
    (("linalg.generic", "math.tanh"), True),
])
def test_searches_skip_linalg_bodies_only_for_ops_that_cannot_be_in_one(names, in_a_body):
    from mscc.dialects.ir_helpers import has_op_of_kind, ops_of_kind
    module = _tanh_module()
    pipeline.run_pipeline(module, "cpu", stop_after="linalg")
    found = ops_of_kind(module, *names)
    assert found == _plain_walk(module, names) and found
    assert has_op_of_kind(module, *names)
    assert any(o.parent.name.startswith("linalg.") for o in found) is in_a_body


def _bad_option_values():
    """(pass, option, bad textual value) for every option of every mscc pass: a non-number,
    a negative number and one past the largest for integers, a word outside the choices."""
    from mscc.passes import base
    pipeline.load_all_passes()
    cases = []
    for name, cls in sorted(base.PASSES.items()):
        for option, default in cls.options.items():
            if isinstance(default, bool):
                bad = ["maybe", "2"]
            elif isinstance(default, int):
                high = cls.bounds.get(option, (0, base.MAX_OPTION_INT))[1]
                bad = ["x", "", "-1", str(high + 1), "99999999999999999999"]
            elif option in cls.choices:
                bad = ["x", ""]
            else:
                continue  # (a free string: a CPU name)
            cases += [(name, option, value) for value in bad]
    return cases


@pytest.mark.parametrize("name,option,value", _bad_option_values())
def test_a_bad_pass_option_is_an_error_naming_the_pass_and_the_option(name, option, value):
    with pytest.raises(ValueError) as e:
        pipeline.parse_step(f"{name}{{{option}={value}}}")
    assert f"option '{option}' of pass '{name}'" in str(e.value)


def test_every_integer_option_accepts_its_bounds():
    from mscc.passes import base
    for name, option, value in _bad_option_values():
        cls = base.PASSES[name]
        if value == "-1" and option not in cls.choices:
            low, high = cls.bounds.get(option, (0, base.MAX_OPTION_INT))
            for good in (low, high):
                assert pipeline.parse_step(f"{name}{{{option}={good}}}").mscc_pass.opts[option] == good
