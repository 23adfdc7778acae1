"""Loops and conditionals on the CUDA target (passes/gpu_control.py): every program of the
control-flow table (test_control_flow.py) and its gradients compile for CUDA, their PTX passes
ptxas, their launch plans hold the control nodes with sub-plans, and the plan run by the CUDA
runtime on a fake driver whose kernels run on the CPU (gpu_emulation.emulated_plan_executable)
gives numpy's results; an artifact with control flow saves, loads and runs there."""
import numpy as np
import pytest

import mscc as ms
from mscc import ops
from mscc.passes.artifact import build_artifact, find_ptxas
from mscc.passes.compiler import clone_module
from mscc.runtime.plan import For, If, LaunchPlan, While

from gpu_emulation import emulated_plan_executable, emulating_driver
from test_control_flow import GRADS, PROGRAMS, T, _leaves, central


def _trace(fn, inputs):
    return ms.jit(fn, target="cuda").lower(*[T(a) for a in inputs])._trace


def _arrays(trace, inputs):
    return [np.asarray(a) for a in inputs] + [p.asnumpy() for p in trace.param_order]


def _control_nodes(plan):
    return [s for p in [plan, *plan.functions.values()] for s in p.steps
            if isinstance(s, (For, While, If))]


def _run(trace, inputs):
    exe = emulated_plan_executable(clone_module(trace.module), trace.name)
    return exe, [o.asnumpy() for o in exe(*_arrays(trace, inputs))]


@pytest.mark.parametrize("case", PROGRAMS, ids=[c.name for c in PROGRAMS])
def test_program_on_the_emulated_gpu(case):
    trace = _trace(case.fn, case.inputs)
    exe, got = _run(trace, case.inputs)
    want = _leaves(case.ref(*[a.copy() for a in case.inputs]))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == np.shape(w)
        np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-5)
    text = trace.module.operation.get_asm()
    if "scf." in text and case.name != "scan_no_steps":  # (its loop of 0 steps is folded)
        assert _control_nodes(exe.plan)
        assert exe.device.driver.launches  # the kernels ran, through the plan


@pytest.mark.parametrize("case", PROGRAMS, ids=[c.name for c in PROGRAMS])
def test_program_ptx_passes_ptxas(case):
    if find_ptxas() is None:
        pytest.skip("ptxas is not installed")
    trace = _trace(case.fn, case.inputs)
    art = build_artifact(clone_module(trace.module), trace.name, "cuda")
    assert art.manifest["cuda"]["cubin"]  # ptxas compiled every kernel
    plan = art.plan()
    assert set(plan.kernels()) <= set(art.manifest["cuda"]["kernels"])


@pytest.mark.parametrize("name,fn,ref,inputs", GRADS, ids=[g[0] for g in GRADS])
def test_gradient_on_the_emulated_gpu(name, fn, ref, inputs):
    positions = tuple(range(len(inputs)))
    trace = _trace(lambda *a: ms.grad(fn, positions)(*a), inputs)
    _, got = _run(trace, inputs)
    for k, g in enumerate(got):
        np.testing.assert_allclose(g, central(ref, inputs, k), rtol=1e-6, atol=1e-8,
                                   err_msg=f"gradient of input {k}")


def _loop_with_cond(x):
    body = lambda i, c: ops.cond(c.sum() > 0, lambda a: a * 0.5, lambda a: a + 1.0, c)  # noqa
    return ops.ForiLoop()(0, 4, body, x, unroll=False)


def test_plan_of_a_loop_holding_a_conditional():
    trace = _trace(_loop_with_cond, [np.ones(3, np.float32)])
    art = build_artifact(clone_module(trace.module), trace.name, "cuda")
    plan = art.plan()
    loop, = [s for s in plan.steps if isinstance(s, For)]
    assert (loop.lower, loop.upper, loop.step, loop.api) == (0, 4, 1, "ForiLoop")
    body = plan.functions[loop.body]
    branch, = [s for s in body.steps if isinstance(s, If)]
    assert branch.api == "cond" and {branch.then, branch.orelse} <= set(plan.functions)
    assert plan.functions[branch.then].launches  # each branch is its own straight-line plan
    # the JSON form round-trips, sub-plans and all
    again = LaunchPlan.from_json(plan.to_json())
    assert again.to_json() == plan.to_json()


def test_artifact_with_control_flow_runs_without_the_compiler(tmp_path):
    """The .msx holds the plan's control nodes and sub-plans; mscc.runtime reads and runs
    it (no MLIR on the runtime side) on a driver whose kernels are emulated."""
    import mscc.runtime.artifact as artifact_io
    from mscc.runtime.cuda import CudaExecutable, Device
    from gpu_emulation import EmulatedKernels
    from mscc.passes import pipeline
    x = np.array([1.0, -3.0, 0.5], np.float32)
    trace = _trace(_loop_with_cond, [x])
    path = build_artifact(clone_module(trace.module), trace.name, "cuda").save(
        str(tmp_path / "loop.msx"))
    # the same kernels, compiled for the CPU (the compiler side of the emulation)
    module = clone_module(trace.module)
    pipeline.run_pipeline(module, "cuda", stop_after="gpu")
    dev = Device(emulating_driver(EmulatedKernels(module)))
    exe = CudaExecutable.from_artifact(artifact_io.read(path), dev)
    got, = exe(x)
    want = x
    for _ in range(4):
        want = want * 0.5 if want.sum() > 0 else want + 1.0
    np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-6)
    # one predicate copied back per iteration
    assert sum(c[0] == "dtoh" for c in dev.driver.calls) >= 4


def test_tampered_plan_is_refused():
    from mscc.runtime.plan import PlanError
    trace = _trace(_loop_with_cond, [np.ones(3, np.float32)])
    plan = build_artifact(clone_module(trace.module), trace.name, "cuda").plan().to_json()
    loop = next(s for s in plan["steps"] if s["op"] == "for")
    loop["body"] = "missing"
    with pytest.raises(PlanError, match="unknown sub-plan 'missing'"):
        LaunchPlan.from_json(plan)


def test_region_function_names_are_new_to_the_module():
    """The CUDA outlining names a loop's functions <parent>__for<n> (+ _body, _cond, ...): a
    name the input already starts with is skipped (a module with f__for1_body got two)."""
    from mlir import ir
    from mscc.dialects.builders import mlir_context
    from mscc.passes.gpu_control import _Outliner
    with mlir_context():
        module = ir.Module.parse("func.func private @f__for1_body()\n"
                                 "func.func private @f__for3_cond()\n")
        outliner = _Outliner(module.operation)
        assert [outliner.fresh("f", "for") for _ in range(3)] == ["f__for2", "f__for4",
                                                                  "f__for5"]
        assert outliner.fresh("g", "for") == "g__for6"
