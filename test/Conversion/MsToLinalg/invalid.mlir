// Errors of convert-ms-to-linalg itself, located at the op: const inputs that are not
// compile-time constants (or were not folded into attributes), signature groups whose dtypes
// were not unified by ms-implicit-cast, ms ops it cannot reach.
// RUN: ms-opt %s --convert-ms-to-linalg --split-input-file --verify-diagnostics

func.func @reshape_runtime_shape(%a: tensor<2x3xf32>, %s: tensor<2xi64>) -> tensor<3x2xf32> {
  // expected-error@+1 {{'ms.reshape' requires a compile-time constant shape}}
  %0 = "ms.reshape"(%a, %s) : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// -----

func.func @reduce_runtime_axis(%a: tensor<2x3xf32>, %axis: tensor<1xi64>) -> tensor<2xf32> {
  // expected-error@+1 {{'ms.reduce_sum' requires a compile-time constant axis}}
  %0 = "ms.reduce_sum"(%a, %axis) {keep_dims = false} : (tensor<2x3xf32>, tensor<1xi64>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @slice_runtime_size(%a: tensor<4x5xf32>, %size: tensor<2xi64>) -> tensor<2x3xf32> {
  // expected-error@+1 {{'ms.slice' requires a compile-time constant size}}
  %0 = "ms.slice"(%a, %size) {begin = array<i64: 1, 2>, operandSegmentSizes = array<i32: 1, 0, 1>} : (tensor<4x5xf32>, tensor<2xi64>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @const_operand_not_folded(%a: tensor<2x3xf32>) -> tensor<3x2xf32> {
  %p = "ms.constant"() {value = dense<[1, 0]> : tensor<2xi64>} : () -> tensor<2xi64>
  // expected-error@+1 {{'ms.transpose' requires a compile-time constant perm (run ms-const-input-to-attr first)}}
  %0 = "ms.transpose"(%a, %p) : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// -----

func.func @mixed_float_dtypes(%a: tensor<4xf32>, %b: tensor<4xf16>) -> tensor<4xf32> {
  // expected-error@+1 {{'ms.add' has operands of dtypes float16, float32; run ms-implicit-cast first}}
  %0 = "ms.add"(%a, %b) : (tensor<4xf32>, tensor<4xf16>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @mixed_int_dtypes(%a: tensor<4xi8>, %b: tensor<4xui8>) -> tensor<4xi16> {
  // expected-error@+1 {{'ms.mul' has operands of dtypes int8, uint8; run ms-implicit-cast first}}
  %0 = "ms.mul"(%a, %b) : (tensor<4xi8>, tensor<4xui8>) -> tensor<4xi16>
  return %0 : tensor<4xi16>
}

// -----

func.func @mixed_scalar_dtype(%a: tensor<4xi32>) -> tensor<4xf32> {
  %s = "ms.constant"() {value = dense<0.5> : tensor<f64>, is_scalar} : () -> tensor<f64>
  // expected-error@+1 {{'ms.mul' has operands of dtypes float64, int32; run ms-implicit-cast first}}
  %0 = "ms.mul"(%a, %s) : (tensor<4xi32>, tensor<f64>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// The condition of select is not in the group; its branches are.
func.func @mixed_select_branches(%c: tensor<4xi1>, %a: tensor<4xi32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{'ms.select' has operands of dtypes float32, int32; run ms-implicit-cast first}}
  %0 = "ms.select"(%c, %a, %b) : (tensor<4xi1>, tensor<4xi32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// (scf.execute_region is not one of the control-flow ops whose regions hold ms code:
// dialects/ops/control.py)
func.func @nested_in_region(%a: tensor<4xf32>) -> tensor<4xf32> {
  %r = scf.execute_region -> tensor<4xf32> {
    // expected-error@+1 {{'ms.exp' could not be lowered here: ms ops are lowered in function bodies and in the regions of loops and conditionals}}
    %0 = "ms.exp"(%a) : (tensor<4xf32>) -> tensor<4xf32>
    scf.yield %0 : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}
