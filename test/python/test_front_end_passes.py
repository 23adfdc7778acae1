"""The front-end passes check their own input: run alone on IR that ms-verify has not seen
(ms-opt and the pipeline verify first, so lit cannot reach these checks), a bad const input
still gives the located error and leaves the op unchanged."""
import pytest

from mscc.dialects.builders import mlir_context
from mscc.passes.base import PassFailure
from mscc.passes.compiler import parse_module
from mscc.passes.const_input_to_attr import ConstInputToAttr
from mscc.passes.diagnostics import DiagnosticCapture

CASES = [
    ('%c = "ms.constant"() {value = dense<[2]> : tensor<1xi64>} : () -> tensor<1xi64>\n'
     '%r = "ms.reduce_sum"(%a, %c) {keep_dims = false} : (tensor<2x3xf32>, tensor<1xi64>) -> tensor<2xf32>',
     "'ms.reduce_sum' op axis 2 is out of range for a tensor of rank 2"),
    ('%c = "ms.constant"() {value = dense<[0, -2]> : tensor<2xi64>} : () -> tensor<2xi64>\n'
     '%r = "ms.reduce_max"(%a, %c) {keep_dims = false} : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<3xf32>',
     "'ms.reduce_max' op axis (0, -2) has duplicate entries"),
    ('%c = "ms.constant"() {value = dense<[4, 2]> : tensor<2xi64>} : () -> tensor<2xi64>\n'
     '%r = "ms.reshape"(%a, %c) : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<4x2xf32>',
     "'ms.reshape' op cannot reshape (2, 3) (6 elements) into (4, 2)"),
    ('%c = "ms.constant"() {value = dense<[1, 1]> : tensor<2xi64>} : () -> tensor<2xi64>\n'
     '%r = "ms.transpose"(%a, %c) : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<3x3xf32>',
     "'ms.transpose' op perm (1, 1) is not a permutation of the 2 axes"),
]


@pytest.mark.parametrize("body,message", CASES,
                         ids=["axis_range", "duplicate_axes", "reshape_count", "perm"])
def test_const_input_to_attr_rejects_bad_constants(body, message):
    text = ("func.func @f(%a: tensor<2x3xf32>) {\n" + body + "\nreturn\n}")
    module = parse_module(text, "in.mlir")
    with mlir_context() as ctx, DiagnosticCapture(ctx) as capture:
        with pytest.raises(PassFailure):
            ConstInputToAttr().run(module.operation)
    error, = capture.errors
    assert (error.file, error.line, error.col, error.message) == ("in.mlir", 3, 6, message)
    assert "ms.constant" in str(module)  # nothing was folded
