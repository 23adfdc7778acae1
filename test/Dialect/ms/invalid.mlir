// Every verifier error of the ms dialect: IRDL's structural checks and the registry's
// element-type, attribute and shape rules.
// RUN: ms-opt %s --split-input-file --verify-diagnostics

func.func @operand_count(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{op expects exactly 2 operands, but got 1}}
  %0 = "ms.add"(%a) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @unknown_op(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{unregistered operation 'ms.frobnicate'}}
  %0 = "ms.frobnicate"(%a) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @missing_attribute(%a: tensor<4xf32>) -> tensor<f32> {
  // expected-error@+1 {{attribute "keep_dims" is expected but not provided}}
  %0 = "ms.reduce_sum"(%a) {axis = array<i64>} : (tensor<4xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @attribute_base(%a: tensor<4xf32>) -> tensor<4xf16> {
  // expected-error@+1 {{expected base attribute 'builtin.type' but got 'builtin.string'}}
  %0 = "ms.cast"(%a) {dtype = "f16"} : (tensor<4xf32>) -> tensor<4xf16>
  return %0 : tensor<4xf16>
}

// -----

func.func @not_a_tensor(%a: memref<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{expected base type 'builtin.tensor' but got 'builtin.memref'}}
  %0 = "ms.exp"(%a) : (memref<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// A dynamic size agrees with any size, but static sizes must still broadcast.
func.func @dynamic_shape_static_mismatch(%a: tensor<?x4xf32>, %b: tensor<?x5xf32>) -> tensor<?x4xf32> {
  // expected-error@+1 {{'ms.add' op shapes (?, 4), (?, 5) cannot be broadcast together}}
  %0 = "ms.add"(%a, %b) : (tensor<?x4xf32>, tensor<?x5xf32>) -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}

// -----

func.func @dynamic_shape_wrong_result(%a: tensor<?x4xf32>) -> tensor<?x5xf32> {
  // expected-error@+1 {{'ms.exp' op result #0 has type tensor<?x5xf32>, but its inputs give tensor<?x4xf32>}}
  %0 = "ms.exp"(%a) : (tensor<?x4xf32>) -> tensor<?x5xf32>
  return %0 : tensor<?x5xf32>
}

// -----

func.func @unranked(%a: tensor<*xf32>) -> tensor<*xf32> {
  // expected-error@+1 {{expected base type 'builtin.tensor' but got 'builtin.unranked_tensor'}}
  %0 = "ms.exp"(%a) : (tensor<*xf32>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}

// -----

func.func @unsupported_element_type(%a: tensor<4xf8E4M3FN>) -> tensor<4xf8E4M3FN> {
  // expected-error@+1 {{'ms.exp' op operand #0 must be a ranked tensor of a supported element type, got tensor<4xf8E4M3FN>}}
  %0 = "ms.exp"(%a) : (tensor<4xf8E4M3FN>) -> tensor<4xf8E4M3FN>
  return %0 : tensor<4xf8E4M3FN>
}

// -----

func.func @wrong_element_type(%a: tensor<4xi1>) -> tensor<4xi1> {
  // expected-error@+1 {{'ms.sub' op operand #0 has element type i1, but ms.sub supports uint8, int8, int16, int32, int64, uint16, uint32, uint64, float16, bfloat16, float32, float64}}
  %0 = "ms.sub"(%a, %a) : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
  return %0 : tensor<4xi1>
}

// -----

func.func @float_only(%a: tensor<4xi32>) -> tensor<4xi32> {
  // expected-error@+1 {{'ms.softmax' op operand #0 has element type i32, but ms.softmax supports float16, bfloat16, float32, float64}}
  %0 = "ms.softmax"(%a) {axis = 0 : i64} : (tensor<4xi32>) -> tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

func.func @select_condition(%c: tensor<4xf32>, %a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{'ms.select' op operand #0 must be a bool tensor, got float32}}
  %0 = "ms.select"(%c, %a, %a) : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @result_type(%a: tensor<4xf32>) -> tensor<4xf64> {
  // expected-error@+1 {{'ms.add' op result #0 has type tensor<4xf64>, but its inputs give tensor<4xf32>}}
  %0 = "ms.add"(%a, %a) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf64>
  return %0 : tensor<4xf64>
}

// -----

func.func @broadcast(%a: tensor<4xf32>, %b: tensor<3xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{'ms.mul' op shapes (4,), (3,) cannot be broadcast together}}
  %0 = "ms.mul"(%a, %b) : (tensor<4xf32>, tensor<3xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @matmul_contraction(%a: tensor<3x4xf32>, %b: tensor<5x6xf32>) -> tensor<3x6xf32> {
  // expected-error@+1 {{'ms.matmul' op contracting dimensions differ: (3, 4) @ (5, 6)}}
  %0 = "ms.matmul"(%a, %b) {transpose_a = false, transpose_b = false} : (tensor<3x4xf32>, tensor<5x6xf32>) -> tensor<3x6xf32>
  return %0 : tensor<3x6xf32>
}

// -----

func.func @matmul_rank(%a: tensor<3xf32>, %b: tensor<3x2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{'ms.matmul' op expects 2-D inputs, got shapes (3,) and (3, 2)}}
  %0 = "ms.matmul"(%a, %b) {transpose_a = false, transpose_b = false} : (tensor<3xf32>, tensor<3x2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @bool_attribute_kind(%a: tensor<3x3xf32>) -> tensor<3x3xf32> {
  // expected-error@+1 {{'ms.matmul' op attribute 'transpose_a' must be a boolean, got 1 : i64}}
  %0 = "ms.matmul"(%a, %a) {transpose_a = 1, transpose_b = false} : (tensor<3x3xf32>, tensor<3x3xf32>) -> tensor<3x3xf32>
  return %0 : tensor<3x3xf32>
}

// -----

func.func @i32_array(%a: tensor<2x3xf32>) -> tensor<3x2xf32> {
  // expected-error@+1 {{'ms.transpose' op attribute 'perm' must be a dense i64 array, got array<i32: 1, 0>}}
  %0 = "ms.transpose"(%a) {perm = array<i32: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// -----

func.func @const_input_twice(%a: tensor<2x3xf32>) -> tensor<3x2xf32> {
  %p = "ms.constant"() {value = dense<[1, 0]> : tensor<2xi64>} : () -> tensor<2xi64>
  // expected-error@+1 {{'ms.transpose' op has both an operand and an attribute 'perm'}}
  %0 = "ms.transpose"(%a, %p) {perm = array<i64: 1, 0>} : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// -----

func.func @const_input_missing(%a: tensor<2x3xf32>) -> tensor<3x2xf32> {
  // expected-error@+1 {{'ms.transpose' op requires 'perm' as an attribute or a constant operand}}
  %0 = "ms.transpose"(%a) : (tensor<2x3xf32>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// -----

func.func @const_input_float(%a: tensor<2x3xf32>) -> tensor<6xf32> {
  %s = "ms.constant"() {value = dense<[6.0]> : tensor<1xf32>} : () -> tensor<1xf32>
  // expected-error@+1 {{'ms.reshape' op operand 'shape' must be an integer constant, got element type float32}}
  %0 = "ms.reshape"(%a, %s) : (tensor<2x3xf32>, tensor<1xf32>) -> tensor<6xf32>
  return %0 : tensor<6xf32>
}

// -----

func.func @constant_type(%a: tensor<2xf32>) -> tensor<3xf32> {
  // expected-error@+1 {{'ms.constant' op result type tensor<3xf32> does not match the value's type tensor<2xf32>}}
  %0 = "ms.constant"() {value = dense<[1.0, 2.0]> : tensor<2xf32>} : () -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @reduce_axis(%a: tensor<2x3xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{'ms.reduce_sum' op axis 2 is out of range for a tensor of rank 2}}
  %0 = "ms.reduce_sum"(%a) {axis = array<i64: 2>, keep_dims = false} : (tensor<2x3xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @reduce_duplicate_axis(%a: tensor<2x3xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{'ms.reduce_max' op axis (1, -1) has duplicate entries}}
  %0 = "ms.reduce_max"(%a) {axis = array<i64: 1, -1>, keep_dims = false} : (tensor<2x3xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @reshape_count(%a: tensor<2x3xf32>) -> tensor<4x2xf32> {
  // expected-error@+1 {{'ms.reshape' op cannot reshape (2, 3) (6 elements) into (4, 2)}}
  %0 = "ms.reshape"(%a) {shape = array<i64: 4, 2>} : (tensor<2x3xf32>) -> tensor<4x2xf32>
  return %0 : tensor<4x2xf32>
}

// -----

func.func @transpose_perm(%a: tensor<2x3xf32>) -> tensor<3x2xf32> {
  // expected-error@+1 {{'ms.transpose' op perm (1, 1) is not a permutation of the 2 axes}}
  %0 = "ms.transpose"(%a) {perm = array<i64: 1, 1>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// -----

func.func @broadcast_to(%a: tensor<2x3xf32>) -> tensor<2x4xf32> {
  // expected-error@+1 {{'ms.broadcast_to' op cannot broadcast (2, 3) to (2, 4)}}
  %0 = "ms.broadcast_to"(%a) {shape = array<i64: 2, 4>} : (tensor<2x3xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

func.func @expand_dims(%a: tensor<2x3xf32>) -> tensor<2x3x1xf32> {
  // expected-error@+1 {{'ms.expand_dims' op axis 4 is out of range for inserting into rank 2}}
  %0 = "ms.expand_dims"(%a) {axis = 4 : i64} : (tensor<2x3xf32>) -> tensor<2x3x1xf32>
  return %0 : tensor<2x3x1xf32>
}

// -----

func.func @squeeze(%a: tensor<2x1xf32>) -> tensor<1xf32> {
  // expected-error@+1 {{'ms.squeeze' op cannot squeeze axis 0 of size 2 (shape (2, 1))}}
  %0 = "ms.squeeze"(%a) {axis = array<i64: 0>} : (tensor<2x1xf32>) -> tensor<1xf32>
  return %0 : tensor<1xf32>
}

// -----

func.func @concat(%a: tensor<2x3xf32>, %b: tensor<3x3xf32>) -> tensor<2x6xf32> {
  // expected-error@+1 {{'ms.concat' op shapes (2, 3) and (3, 3) cannot be joined along axis 1}}
  %0 = "ms.concat"(%a, %b) {axis = 1 : i64} : (tensor<2x3xf32>, tensor<3x3xf32>) -> tensor<2x6xf32>
  return %0 : tensor<2x6xf32>
}

// -----

func.func @tile(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error@+1 {{'ms.tile' op multiples (1,) has fewer entries than the rank 2 of the input}}
  %0 = "ms.tile"(%a) {multiples = array<i64: 1>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @slice(%a: tensor<4xf32>) -> tensor<3xf32> {
  // expected-error@+1 {{'ms.slice' op slice [2, 2+3) is out of range for axis 0 of size 4}}
  %0 = "ms.slice"(%a) {begin = array<i64: 2>, size = array<i64: 3>, operandSegmentSizes = array<i32: 1, 0, 0>} : (tensor<4xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

// A negative stride takes Python's elements: x[3:0:-1] holds three.
func.func @strided_slice(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{'ms.strided_slice' op result #0 has type tensor<4xf32>, but its inputs give tensor<3xf32>}}
  %0 = "ms.strided_slice"(%a) {begin = array<i64: 3>, end = array<i64: 0>, strides = array<i64: -1>, operandSegmentSizes = array<i32: 1, 0, 0, 0>} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @gather_indices(%p: tensor<4x3xf32>, %i: tensor<2xf32>) -> tensor<2x3xf32> {
  // expected-error@+1 {{'ms.gather' op indices must be int32 or int64, got float32}}
  %0 = "ms.gather"(%p, %i) {axis = 0 : i64} : (tensor<4x3xf32>, tensor<2xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @one_hot_values(%i: tensor<2xi32>, %on: tensor<2xf32>) -> tensor<2x3xf32> {
  // expected-error@+1 {{'ms.one_hot' op on_value and off_value must be scalars, got shapes (2,) and (2,)}}
  %0 = "ms.one_hot"(%i, %on, %on) {axis = -1 : i64, depth = 3 : i64} : (tensor<2xi32>, tensor<2xf32>, tensor<2xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @assign_shape(%w: tensor<3xf32> {ms.parameter = "w"}, %v: tensor<4xf32>) -> tensor<3xf32> {
  // expected-error@+1 {{'ms.assign' op cannot assign a value of shape (4,) to a Parameter of shape (3,)}}
  %0 = "ms.assign"(%w, %v) : (tensor<3xf32>, tensor<4xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @fused_kind(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{'ms.fused' op kind 'bogus' is not one of conv, elementwise, matmul, reduction}}
  %0 = "ms.fused"() ({
    %1 = "ms.exp"(%a) : (tensor<4xf32>) -> tensor<4xf32>
    "gpu.yield"(%1) : (tensor<4xf32>) -> ()
  }) {kind = "bogus"} : () -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @fused_foreign_op(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{'ms.fused' op region may hold only pure ms ops, found 'arith.addf'}}
  %0 = "ms.fused"() ({
    %1 = "arith.addf"(%a, %a) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    "gpu.yield"(%1) : (tensor<4xf32>) -> ()
  }) {kind = "elementwise"} : () -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @fused_nested(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{'ms.fused' op region may hold only pure ms ops, found 'ms.fused'}}
  %0 = "ms.fused"() ({
    %1 = "ms.fused"() ({
      "gpu.yield"(%a) : (tensor<4xf32>) -> ()
    }) {kind = "elementwise"} : () -> tensor<4xf32>
    "gpu.yield"(%1) : (tensor<4xf32>) -> ()
  }) {kind = "elementwise"} : () -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @fused_yield(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{'ms.fused' op region yields (tensor<4xf32>, tensor<4xf32>) but the op returns (tensor<4xf32>)}}
  %0 = "ms.fused"() ({
    %1 = "ms.exp"(%a) : (tensor<4xf32>) -> tensor<4xf32>
    "gpu.yield"(%1, %1) : (tensor<4xf32>, tensor<4xf32>) -> ()
  }) {kind = "elementwise"} : () -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @segment_ids_dtype(%d: tensor<4x3xf32>, %i: tensor<4xf32>) -> tensor<2x3xf32> {
  // expected-error@+1 {{'ms.unsorted_segment_sum' op segment_ids must be int32 or int64, got float32}}
  %0 = "ms.unsorted_segment_sum"(%d, %i) {num_segments = 2 : i64} : (tensor<4x3xf32>, tensor<4xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @segment_ids_shape(%d: tensor<4x3xf32>, %i: tensor<3xi32>) -> tensor<2x3xf32> {
  // expected-error@+1 {{'ms.unsorted_segment_sum' op segment_ids of shape (3,) must match the leading dimensions of data (4, 3)}}
  %0 = "ms.unsorted_segment_sum"(%d, %i) {num_segments = 2 : i64} : (tensor<4x3xf32>, tensor<3xi32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @segment_count(%d: tensor<4x3xf32>, %i: tensor<4xi32>) -> tensor<2x3xf32> {
  // expected-error@+1 {{'ms.unsorted_segment_sum' op result #0 has type tensor<2x3xf32>, but its inputs give tensor<5x3xf32>}}
  %0 = "ms.unsorted_segment_sum"(%d, %i) {num_segments = 5 : i64} : (tensor<4x3xf32>, tensor<4xi32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @argmax_axis(%x: tensor<4x3xf32>) -> tensor<4xi32> {
  // expected-error@+1 {{'ms.argmax' op axis 2 is out of range for a tensor of rank 2}}
  %0 = "ms.argmax"(%x) {axis = 2 : i64, keep_dims = false} : (tensor<4x3xf32>) -> tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

func.func @argmin_result(%x: tensor<4x3xf32>) -> tensor<4xi64> {
  // expected-error@+1 {{'ms.argmin' op result #0 has type tensor<4xi64>, but its inputs give tensor<4xi32>}}
  %0 = "ms.argmin"(%x) {axis = 1 : i64, keep_dims = false} : (tensor<4x3xf32>) -> tensor<4xi64>
  return %0 : tensor<4xi64>
}

// -----

func.func @random_counter(%k: tensor<i32>) -> tensor<4xf32> {
  // expected-error@+1 {{'ms.random_uniform' op operand #0 has element type i32, but ms.random_uniform supports int64}}
  %0 = "ms.random_uniform"(%k) {shape = array<i64: 4>, seed = 0 : i64} : (tensor<i32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
