"""Gradient-checking helpers: build ms IR with ms.grad, compile it through the CPU pipeline and
compare reverse-mode gradients (first and second order) with central finite differences."""
from dataclasses import dataclass

import numpy as np
from mlir import ir

from mscc.dialects.builders import PARAM_ATTR, build_function, mlir_context, spec_of
from mscc.dialects.grad_op import call_gradient, emit_grad
from mscc.dialects.ir_helpers import function_type
from mscc.passes.compiler import compile_module


def private(fn):
    fn.attributes["sym_visibility"] = ir.StringAttr.get("private")
    return fn


def parameter_attrs(names):
    """arg_attrs for build_function: a Parameter name per argument (None: a plain input)."""
    return [{PARAM_ATTR: ir.StringAttr.get(n)} if n else {} for n in names]


def result_specs(fn):
    return [spec_of(t) for t in function_type(fn).results]


def grad_module(in_specs, body, wrt, second_order=True):
    """A module whose public @main(x..., v..., w...) returns
        f(x)...                           (f = body, through with_value)
        d<f(x), v>/dx_p        for p in wrt  (first order, sensitivities v)
        d<g1(x, v), w>/dx_p    for p in wrt  (second order: grad of the gradient function)
    """
    module = ir.Module.create()
    f = private(build_function(module, "f", in_specs, body))
    outs = result_specs(f)
    n, m = len(in_specs), len(outs)
    g = private(build_function(module, "g", in_specs + outs, lambda *a: call_gradient(
        emit_grad(f, wrt, sens_param=True), a)))
    grad_specs = [in_specs[p] for p in wrt]

    def main(*a):
        xs, vs, ws = a[:n], a[n:n + m], a[n + m:]
        results = call_gradient(emit_grad(f, wrt, sens_param=True, with_value=True), xs + vs)
        if second_order:
            results += call_gradient(emit_grad(g, wrt, sens_param=True), xs + vs + ws)
        return results
    build_function(module, "main", in_specs + outs + (grad_specs if second_order else []), main)
    return module, outs


def compile_main(module):
    module.operation.verify()
    return compile_module(module, "main")


@dataclass
class GradCheck:
    eps: float = 1e-6
    rtol: float = 1e-6
    atol: float = 1e-7


def random_like(spec, rng):
    return rng.uniform(-1, 1, spec.shape).astype(spec.dtype.np)


def check_gradients(in_specs, body, inputs, wrt, second_order=True, tol=GradCheck(), seed=0):
    """Compile body's first- (and second-) order gradients and compare them with central
    differences of the compiled forward (and first-order gradient) in float64."""
    with mlir_context(), ir.Location.unknown():
        module, outs = grad_module(in_specs, body, wrt, second_order)
        exe = compile_main(module)
    rng = np.random.default_rng(seed)
    vs = [random_like(s, rng) for s in outs]
    ws = [random_like(in_specs[p], rng) for p in wrt] if second_order else []
    m, k = len(outs), len(wrt)

    def run(xs):
        res = exe(*xs, *vs, *ws)
        return res[:m], res[m:m + k], res[m + k:]

    values, g1, g2 = run(inputs)

    def phi(xs):
        f, grads, _ = run(xs)
        first = sum(np.sum(np.asarray(a, np.float64) * b) for a, b in zip(f, vs))
        second = sum(np.sum(np.asarray(a, np.float64) * b) for a, b in zip(grads, ws))
        return first, second

    for slot, p in enumerate(wrt):
        fd1 = np.zeros(in_specs[p].shape)
        fd2 = np.zeros(in_specs[p].shape)
        for idx in np.ndindex(*in_specs[p].shape):
            plus = [x.copy() for x in inputs]
            minus = [x.copy() for x in inputs]
            plus[p][idx] += tol.eps
            minus[p][idx] -= tol.eps
            (a1, a2), (b1, b2) = phi(plus), phi(minus)
            fd1[idx] = (a1 - b1) / (2 * tol.eps)
            fd2[idx] = (a2 - b2) / (2 * tol.eps)
        assert g1[slot].dtype == inputs[p].dtype
        np.testing.assert_allclose(g1[slot], fd1, rtol=tol.rtol, atol=tol.atol,
                                   err_msg=f"first-order gradient of input {p}")
        if second_order:
            np.testing.assert_allclose(g2[slot], fd2, rtol=tol.rtol, atol=tol.atol,
                                       err_msg=f"second-order gradient of input {p}")
    return values, g1, g2


def compile_grad(in_specs, body, *, wrt=(0,), parameters=None, **flags):
    """The executable of @main(args...) returning the gradient function of body (flags:
    get_by_list, sens_param, with_value); `parameters` names the Parameter arguments."""
    with mlir_context(), ir.Location.unknown():
        module = ir.Module.create()
        f = private(build_function(module, "f", in_specs, body, arg_attrs=parameter_attrs(
            parameters) if parameters else None))
        outs = result_specs(f)
        extra = outs if flags.get("sens_param") else []
        build_function(module, "main", list(in_specs) + extra, lambda *a: call_gradient(
            emit_grad(f, wrt, **flags), a))
        return compile_main(module)
