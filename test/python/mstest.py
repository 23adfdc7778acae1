"""Test helpers: build ms IR in Python, compile it through the one pipeline, run it."""
import numpy as np
from mlir import ir

from mscc.dialects import dtypes as dt
from mscc.dialects.builders import build_function, build_op, mlir_context
from mscc.passes import pipeline
from mscc.passes.compiler import compile_module

TOLERANCE = {"float16": dict(rtol=2e-3, atol=2e-3), "float32": dict(rtol=2e-5, atol=1e-6),
             "float64": dict(rtol=1e-12, atol=1e-13),
             # bfloat16 keeps 8 significant bits (float16: 11): about two of its ulps
             "bfloat16": dict(rtol=2e-2, atol=2e-2)}


def op(name, *operands, **attrs):
    """One ms op at the current insertion point (const inputs as attributes); its result."""
    return build_op(name, list(operands), attrs).result


def spec(shape, dtype):
    return dt.TensorSpec(tuple(shape), dt.as_dtype(dtype))


def module_of(in_specs, body, name="f"):
    """An ms module with one function `body(*args) -> value(s)` over tensors of in_specs."""
    with mlir_context(), ir.Location.unknown():
        module = ir.Module.create()
        build_function(module, name, in_specs, body)
        module.operation.verify()
        return module


def compile_fn(in_specs, body, name="f", linalg_options=""):
    """Compile `body(*args) -> value(s)` over tensors of in_specs into a CPU executable;
    `linalg_options` are convert-ms-to-linalg options to use instead of the pipeline's."""
    module = module_of(in_specs, body, name)
    if not linalg_options:
        return compile_module(module, name)
    pipeline.run_pipeline(module, "cpu", stop_after="ms-opt")
    steps = [f"convert-ms-to-linalg{{{linalg_options}}}" if s == "convert-ms-to-linalg" else s
             for s in dict(pipeline.TARGET_STAGES["cpu"])["linalg"]]
    pipeline.run_steps(module, pipeline.parse_pipeline(",".join(steps)))
    return compile_module(module, name, start_after="linalg")


def assert_matches(got, want, dtype=None):
    """`got` (our result) has `want`'s dtype (or `dtype`) and its values within the dtype's
    tolerance (exact for integers and bools)."""
    want = np.asarray(want)
    expected_dtype = np.dtype(dtype.np if isinstance(dtype, dt.DType) else dtype or want.dtype)
    assert got.dtype == expected_dtype, f"dtype {got.dtype}, expected {expected_dtype}"
    assert got.shape == want.shape, f"shape {got.shape}, expected {want.shape}"
    if expected_dtype.name in TOLERANCE:  # the floats (bfloat16 is a numpy void kind)
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64),
                                   **TOLERANCE[expected_dtype.name])
    else:
        np.testing.assert_array_equal(got, want.astype(expected_dtype))


def finite_differences(f, x, eps=1e-6):
    """Central finite differences of a scalar numpy function `f` at the array `x`."""
    out = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        d = np.zeros_like(x)
        d[i] = eps
        out[i] = (f(x + d) - f(x - d)) / (2 * eps)
    return out


def line_of(path, marker):
    """The number of the first line of file `path` containing `marker` (not a line_of call):
    tests of error locations name the line they expect this way."""
    for n, text in enumerate(open(path), start=1):
        if marker in text and "line_of(" not in text:
            return n
    raise AssertionError(f"{marker!r} is not in {path}")


def op_counts(text):
    """How often each op occurs in printed IR, parsed with the MLIR bindings (tests count
    ops rather than compare IR strings)."""
    counts = {}
    with mlir_context():
        module = ir.Module.parse(text)

        def visit(o):
            counts[o.name] = counts.get(o.name, 0) + 1
            return ir.WalkResult.ADVANCE
        module.operation.walk(visit)
    return counts


def check_weighted_gradient(case, inputs, mode):
    """d/dx0 of sum(w_i * float output_i) of `case.fn` (a table case with `fn`, `ref`,
    `dtypes`) in float64, under jit or eagerly, against central differences of `case.ref`
    (the other inputs held fixed)."""
    import mscc as ms
    from mscc import ops
    rng = np.random.default_rng(1)
    outs = case.ref(*inputs)
    outs = list(outs) if isinstance(outs, tuple) else [outs]
    floats = [i for i, o in enumerate(outs) if np.asarray(o).dtype.kind == "f"
              and (not case.dtypes or np.dtype(case.dtypes[i]).kind == "f")]
    weights = [rng.uniform(-1, 1, np.shape(outs[i])) for i in floats]

    def loss(*xs):
        out = case.fn(*xs)
        out = out if isinstance(out, (tuple, list)) else (out,)
        return sum(ops.reduce_sum(out[i] * ms.Tensor(w)) for i, w in zip(floats, weights))

    def ref_loss(x0):
        r = case.ref(x0, *inputs[1:])
        r = list(r) if isinstance(r, tuple) else [r]
        return sum(np.sum(np.asarray(r[i]) * w) for i, w in zip(floats, weights))

    grad_fn = ms.grad(loss, grad_position=0)
    if mode == "jit":
        grad_fn = ms.jit(grad_fn)
    got = grad_fn(*[ms.Tensor(a) for a in inputs]).asnumpy()
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, finite_differences(ref_loss, inputs[0]), rtol=1e-6,
                               atol=1e-7)
