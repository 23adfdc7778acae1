// ms-implicit-cast never casts an operand in a write position (a Parameter updated in place):
// if the group promotes it to another dtype, that is an error at the op, as in MindSpore.
// RUN: ms-opt %s --ms-implicit-cast --split-input-file --verify-diagnostics

func.func @assign_parameter_float16(%w: tensor<3xf16> {ms.parameter = "w"}, %v: tensor<3xf32>) -> tensor<3xf16> {
  // expected-error@+1 {{For 'ms.assign', the 0th input is a Parameter of dtype float16 that cannot be converted to float32}}
  %0 = "ms.assign"(%w, %v) : (tensor<3xf16>, tensor<3xf32>) -> tensor<3xf16>
  return %0 : tensor<3xf16>
}

// -----

// A Python float promotes an integer group to float32, and the Parameter cannot follow.
func.func @assign_parameter_python_float(%w: tensor<i32> {ms.parameter = "step"}) -> tensor<i32> {
  %s = "ms.constant"() {value = dense<1.5> : tensor<f64>, is_scalar} : () -> tensor<f64>
  // expected-error@+1 {{For 'ms.assign', the 0th input is a Parameter of dtype int32 that cannot be converted to float32}}
  %0 = "ms.assign"(%w, %s) : (tensor<i32>, tensor<f64>) -> tensor<i32>
  return %0 : tensor<i32>
}

// -----

// int8 written with uint8: the group is int16.
func.func @assign_parameter_int8_uint8(%w: tensor<3xi8> {ms.parameter = "w"}, %v: tensor<3xui8>) -> tensor<3xi8> {
  // expected-error@+1 {{For 'ms.assign', the 0th input is a Parameter of dtype int8 that cannot be converted to int16}}
  %0 = "ms.assign"(%w, %v) : (tensor<3xi8>, tensor<3xui8>) -> tensor<3xi8>
  return %0 : tensor<3xi8>
}

// -----

// The write position is checked for any tensor, not only function arguments marked as Parameters.
func.func @assign_tensor(%w: tensor<3xf16>, %v: tensor<3xf64>) -> tensor<3xf16> {
  // expected-error@+1 {{For 'ms.assign', the 0th input is a tensor of dtype float16 that cannot be converted to float64}}
  %0 = "ms.assign"(%w, %v) : (tensor<3xf16>, tensor<3xf64>) -> tensor<3xf16>
  return %0 : tensor<3xf16>
}

// -----

// select's condition is not part of any group: a non-bool condition is rejected, not cast.
func.func @select_condition_not_cast(%c: tensor<4xi32>, %a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{'ms.select' op operand #0 must be a bool tensor, got int32}}
  %0 = "ms.select"(%c, %a, %a) : (tensor<4xi32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// The result type must be the promoted one.
func.func @result_not_promoted(%a: tensor<4xi8>, %b: tensor<4xui8>) -> tensor<4xi8> {
  // expected-error@+1 {{'ms.add' op result #0 has type tensor<4xi8>, but its inputs give tensor<4xi16>}}
  %0 = "ms.add"(%a, %b) : (tensor<4xi8>, tensor<4xui8>) -> tensor<4xi8>
  return %0 : tensor<4xi8>
}

// -----

// MindSpore promotes uint16/32/64 only with bool and themselves.
func.func @uint16_with_int32(%a: tensor<3xui16>, %b: tensor<3xi32>) -> tensor<3xi32> {
  // expected-error@+1 {{Type implicit conversion between uint16 and int32 is not supported}}
  %0 = "ms.add"(%a, %b) : (tensor<3xui16>, tensor<3xi32>) -> tensor<3xi32>
  return %0 : tensor<3xi32>
}

// -----

// ... nor with a Python int.
func.func @uint64_with_python_int(%a: tensor<3xui64>) -> tensor<3xui64> {
  %s = "ms.constant"() {value = dense<1> : tensor<i64>, is_scalar} : () -> tensor<i64>
  // expected-error@+1 {{Type implicit conversion between Tensor[uint64] and a Python int is not supported}}
  %0 = "ms.mul"(%a, %s) : (tensor<3xui64>, tensor<i64>) -> tensor<3xui64>
  return %0 : tensor<3xui64>
}

// -----

// ms.parameter on a function argument names the Parameter it stands for: anything but a
// string read from a file is a located error (a ValueError in ms-implicit-cast; IR fuzzing,
// seed 86 with --own-passes).
// expected-error@+1 {{argument #0's 'ms.parameter' must be the Parameter's name, a string, not f32}}
func.func @assign(%w: tensor<i32> {ms.parameter = f32}) -> tensor<i32> {
  %v = "ms.constant"() {value = dense<1.5> : tensor<f32>} : () -> tensor<f32>
  %0 = "ms.assign"(%w, %v) : (tensor<i32>, tensor<f32>) -> tensor<i32>
  return %0 : tensor<i32>
}
