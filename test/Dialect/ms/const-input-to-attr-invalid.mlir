// Bad constant inputs give located errors: out-of-range and duplicate axes, reshapes that
// change the element count, perms that are not permutations, and the like. (ms-opt verifies
// its input first, so most of these come from the same rules in ms-verify; the pass applies
// them again before folding.) An operand that is not constant passes both and is reported by
// convert-ms-to-linalg.
// RUN: ms-opt %s --ms-const-input-to-attr --convert-ms-to-linalg --split-input-file --verify-diagnostics

func.func @reduce_axis_out_of_range(%a: tensor<2x3xf32>) -> tensor<2xf32> {
  %axis = "ms.constant"() {value = dense<[2]> : tensor<1xi64>} : () -> tensor<1xi64>
  // expected-error@+1 {{'ms.reduce_sum' op axis 2 is out of range for a tensor of rank 2}}
  %0 = "ms.reduce_sum"(%a, %axis) {keep_dims = false} : (tensor<2x3xf32>, tensor<1xi64>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @reduce_negative_axis_out_of_range(%a: tensor<2x3xf32>) -> tensor<3xf32> {
  %axis = "ms.constant"() {value = dense<-3> : tensor<i64>} : () -> tensor<i64>
  // expected-error@+1 {{'ms.reduce_max' op axis -3 is out of range for a tensor of rank 2}}
  %0 = "ms.reduce_max"(%a, %axis) {keep_dims = false} : (tensor<2x3xf32>, tensor<i64>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @reduce_duplicate_axes(%a: tensor<2x3xf32>) -> tensor<2xf32> {
  %axis = "ms.constant"() {value = dense<[1, -1]> : tensor<2xi64>} : () -> tensor<2xi64>
  // expected-error@+1 {{'ms.reduce_mean' op axis (1, -1) has duplicate entries}}
  %0 = "ms.reduce_mean"(%a, %axis) {keep_dims = false} : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @reduce_min_duplicate_axes(%a: tensor<2x3xi32>) -> tensor<2xi32> {
  %axis = "ms.constant"() {value = dense<[0, 0]> : tensor<2xi32>} : () -> tensor<2xi32>
  // expected-error@+1 {{'ms.reduce_min' op axis (0, 0) has duplicate entries}}
  %0 = "ms.reduce_min"(%a, %axis) {keep_dims = false} : (tensor<2x3xi32>, tensor<2xi32>) -> tensor<2xi32>
  return %0 : tensor<2xi32>
}

// -----

func.func @reshape_element_count(%a: tensor<2x3xf32>) -> tensor<4x2xf32> {
  %s = "ms.constant"() {value = dense<[4, 2]> : tensor<2xi64>} : () -> tensor<2xi64>
  // expected-error@+1 {{'ms.reshape' op cannot reshape (2, 3) (6 elements) into (4, 2)}}
  %0 = "ms.reshape"(%a, %s) : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<4x2xf32>
  return %0 : tensor<4x2xf32>
}

// -----

func.func @reshape_inferred_size_does_not_divide(%a: tensor<2x3xf32>) -> tensor<4x2xf32> {
  %s = "ms.constant"() {value = dense<[4, -1]> : tensor<2xi64>} : () -> tensor<2xi64>
  // expected-error@+1 {{'ms.reshape' op cannot reshape (2, 3) (6 elements) into (4, -1)}}
  %0 = "ms.reshape"(%a, %s) : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<4x2xf32>
  return %0 : tensor<4x2xf32>
}

// -----

func.func @reshape_two_unknown_sizes(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %s = "ms.constant"() {value = dense<[-1, -1]> : tensor<2xi64>} : () -> tensor<2xi64>
  // expected-error@+1 {{'ms.reshape' op shape (-1, -1) may hold one -1 and otherwise sizes >= 0}}
  %0 = "ms.reshape"(%a, %s) : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @perm_repeats_an_axis(%a: tensor<2x3xf32>) -> tensor<2x2xf32> {
  %p = "ms.constant"() {value = dense<[0, 0]> : tensor<2xi64>} : () -> tensor<2xi64>
  // expected-error@+1 {{'ms.transpose' op perm (0, 0) is not a permutation of the 2 axes}}
  %0 = "ms.transpose"(%a, %p) : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}

// -----

func.func @perm_wrong_length(%a: tensor<2x3xf32>) -> tensor<3x2xf32> {
  %p = "ms.constant"() {value = dense<[1, 0, 2]> : tensor<3xi64>} : () -> tensor<3xi64>
  // expected-error@+1 {{'ms.transpose' op perm (1, 0, 2) is not a permutation of the 2 axes}}
  %0 = "ms.transpose"(%a, %p) : (tensor<2x3xf32>, tensor<3xi64>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// -----

func.func @broadcast_to_incompatible(%a: tensor<2x3xf32>) -> tensor<2x4xf32> {
  %s = "ms.constant"() {value = dense<[2, 4]> : tensor<2xi64>} : () -> tensor<2xi64>
  // expected-error@+1 {{'ms.broadcast_to' op cannot broadcast (2, 3) to (2, 4)}}
  %0 = "ms.broadcast_to"(%a, %s) : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

func.func @expand_dims_axis_out_of_range(%a: tensor<2x3xf32>) -> tensor<2x3x1xf32> {
  %axis = "ms.constant"() {value = dense<-4> : tensor<i64>} : () -> tensor<i64>
  // expected-error@+1 {{'ms.expand_dims' op axis -4 is out of range for inserting into rank 2}}
  %0 = "ms.expand_dims"(%a, %axis) : (tensor<2x3xf32>, tensor<i64>) -> tensor<2x3x1xf32>
  return %0 : tensor<2x3x1xf32>
}

// -----

func.func @tile_multiples_not_positive(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %m = "ms.constant"() {value = dense<[1, 0]> : tensor<2xi64>} : () -> tensor<2xi64>
  // expected-error@+1 {{'ms.tile' op multiples (1, 0) must be positive}}
  %0 = "ms.tile"(%a, %m) : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @one_hot_negative_depth(%i: tensor<2xi32>, %on: tensor<f32>, %off: tensor<f32>) -> tensor<2x3xf32> {
  %d = "ms.constant"() {value = dense<-3> : tensor<i64>} : () -> tensor<i64>
  // expected-error@+1 {{'ms.one_hot' op depth -3 must be non-negative}}
  %0 = "ms.one_hot"(%i, %d, %on, %off) {axis = -1 : i64} : (tensor<2xi32>, tensor<i64>, tensor<f32>, tensor<f32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @one_hot_depth_not_scalar(%i: tensor<2xi32>, %on: tensor<f32>, %off: tensor<f32>) -> tensor<2x3xf32> {
  %d = "ms.constant"() {value = dense<[3, 4]> : tensor<2xi64>} : () -> tensor<2xi64>
  // expected-error@+1 {{'ms.one_hot' op operand 'depth' must be a scalar constant, got shape (2,)}}
  %0 = "ms.one_hot"(%i, %d, %on, %off) {axis = -1 : i64} : (tensor<2xi32>, tensor<2xi64>, tensor<f32>, tensor<f32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @slice_out_of_range(%a: tensor<4x5xf32>) -> tensor<2x3xf32> {
  %b = "ms.constant"() {value = dense<[3, 0]> : tensor<2xi64>} : () -> tensor<2xi64>
  %s = "ms.constant"() {value = dense<[2, 3]> : tensor<2xi64>} : () -> tensor<2xi64>
  // expected-error@+1 {{'ms.slice' op slice [3, 3+2) is out of range for axis 0 of size 4}}
  %0 = "ms.slice"(%a, %b, %s) {operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<4x5xf32>, tensor<2xi64>, tensor<2xi64>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @slice_rank_mismatch(%a: tensor<4x5xf32>) -> tensor<2x5xf32> {
  %b = "ms.constant"() {value = dense<[1]> : tensor<1xi64>} : () -> tensor<1xi64>
  %s = "ms.constant"() {value = dense<[2]> : tensor<1xi64>} : () -> tensor<1xi64>
  // expected-error@+1 {{'ms.slice' op begin (1,) and size (2,) must have one entry per axis of the rank-2 input}}
  %0 = "ms.slice"(%a, %b, %s) {operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<4x5xf32>, tensor<1xi64>, tensor<1xi64>) -> tensor<2x5xf32>
  return %0 : tensor<2x5xf32>
}

// -----

func.func @strided_slice_zero_stride(%a: tensor<6xf32>) -> tensor<6xf32> {
  %b = "ms.constant"() {value = dense<[0]> : tensor<1xi64>} : () -> tensor<1xi64>
  %e = "ms.constant"() {value = dense<[6]> : tensor<1xi64>} : () -> tensor<1xi64>
  %s = "ms.constant"() {value = dense<[0]> : tensor<1xi64>} : () -> tensor<1xi64>
  // expected-error@+1 {{'ms.strided_slice' op stride 0 on axis 0 must be nonzero}}
  %0 = "ms.strided_slice"(%a, %b, %e, %s) {operandSegmentSizes = array<i32: 1, 1, 1, 1>} : (tensor<6xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<6xf32>
  return %0 : tensor<6xf32>
}

// -----

func.func @strided_slice_length_mismatch(%a: tensor<6x5xf32>) -> tensor<6x5xf32> {
  %b = "ms.constant"() {value = dense<[0, 0]> : tensor<2xi64>} : () -> tensor<2xi64>
  %e = "ms.constant"() {value = dense<[6]> : tensor<1xi64>} : () -> tensor<1xi64>
  %s = "ms.constant"() {value = dense<[1, 1]> : tensor<2xi64>} : () -> tensor<2xi64>
  // expected-error@+1 {{'ms.strided_slice' op begin (0, 0), end (6,) and strides (1, 1) differ in length}}
  %0 = "ms.strided_slice"(%a, %b, %e, %s) {operandSegmentSizes = array<i32: 1, 1, 1, 1>} : (tensor<6x5xf32>, tensor<2xi64>, tensor<1xi64>, tensor<2xi64>) -> tensor<6x5xf32>
  return %0 : tensor<6x5xf32>
}

// -----

func.func @gather_axis_out_of_range(%p: tensor<4x5xf32>, %i: tensor<3xi32>) -> tensor<3x5xf32> {
  %axis = "ms.constant"() {value = dense<2> : tensor<i64>} : () -> tensor<i64>
  // expected-error@+1 {{'ms.gather' op axis 2 is out of range for a tensor of rank 2}}
  %0 = "ms.gather"(%p, %i, %axis) : (tensor<4x5xf32>, tensor<3xi32>, tensor<i64>) -> tensor<3x5xf32>
  return %0 : tensor<3x5xf32>
}

// -----

func.func @float_constant(%a: tensor<2x3xf32>) -> tensor<6xf32> {
  %s = "ms.constant"() {value = dense<[6.0]> : tensor<1xf32>} : () -> tensor<1xf32>
  // expected-error@+1 {{'ms.reshape' op operand 'shape' must be an integer constant, got element type float32}}
  %0 = "ms.reshape"(%a, %s) : (tensor<2x3xf32>, tensor<1xf32>) -> tensor<6xf32>
  return %0 : tensor<6xf32>
}

// -----

func.func @two_dimensional_constant(%a: tensor<2x3xf32>) -> tensor<3x2xf32> {
  %p = "ms.constant"() {value = dense<[[1, 0]]> : tensor<1x2xi64>} : () -> tensor<1x2xi64>
  // expected-error@+1 {{'ms.transpose' op operand 'perm' must be a scalar or 1-D constant, got shape (1, 2)}}
  %0 = "ms.transpose"(%a, %p) : (tensor<2x3xf32>, tensor<1x2xi64>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// -----

func.func @result_type_disagrees(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %s = "ms.constant"() {value = dense<[3, 2]> : tensor<2xi64>} : () -> tensor<2xi64>
  // expected-error@+1 {{'ms.reshape' op result #0 has type tensor<2x3xf32>, but its inputs give tensor<3x2xf32>}}
  %0 = "ms.reshape"(%a, %s) : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// Not a constant: left in place by the pass, reported by the lowering.
func.func @runtime_shape(%a: tensor<2x3xf32>, %s: tensor<2xi64>) -> tensor<3x2xf32> {
  // expected-error@+1 {{'ms.reshape' requires a compile-time constant shape}}
  %0 = "ms.reshape"(%a, %s) : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// -----

func.func @runtime_perm(%a: tensor<2x3xf32>, %p: tensor<2xi32>) -> tensor<3x2xf32> {
  // expected-error@+1 {{'ms.transpose' requires a compile-time constant perm}}
  %0 = "ms.transpose"(%a, %p) : (tensor<2x3xf32>, tensor<2xi32>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}
