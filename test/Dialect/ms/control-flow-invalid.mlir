// Malformed loops and conditionals holding ms ops: scf's own verifier (region arguments and
// yields against the carries), the checks of dialects/ops/control.py, and the ms ops inside.
// RUN: ms-opt %s --split-input-file --verify-diagnostics

func.func @yield_type(%x: tensor<4xf32>) -> tensor<4xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  // expected-error@+1 {{'scf.for' op 0-th region iter_arg and 0-th yielded value have different type: 'tensor<4xf32>' != 'tensor<f32>'}}
  %r = scf.for %iv = %c0 to %c1 step %c1 iter_args(%a = %x) -> (tensor<4xf32>) {
    %0 = "ms.reduce_sum"(%a) {axis = array<i64>, keep_dims = false} : (tensor<4xf32>) -> tensor<f32>
    scf.yield %0 : tensor<f32>
  }
  return %r : tensor<4xf32>
}

// -----

func.func @region_argument(%x: tensor<4xf32>) -> tensor<4xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  // expected-error@+1 {{'scf.for' op 0-th init and 0-th region iter_arg have different type: 'tensor<4xf32>' != 'tensor<4xf64>'}}
  %r = "scf.for"(%c0, %c1, %c1, %x) ({
  ^bb0(%iv: index, %a: tensor<4xf64>):
    %0 = "ms.exp"(%a) : (tensor<4xf64>) -> tensor<4xf64>
    scf.yield %0 : tensor<4xf64>
  }) : (index, index, index, tensor<4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

func.func @branches_differ(%p: i1, %x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{'scf.if' op along control flow edge from Operation scf.yield to parent: successor operand type #0 'tensor<4xf64>' should match successor input type #0 'tensor<4xf32>'}}
  %r = scf.if %p -> (tensor<4xf32>) {
    scf.yield %x : tensor<4xf32>
  } else {
    %0 = "ms.cast"(%x) {dtype = f64} : (tensor<4xf32>) -> tensor<4xf64>
    scf.yield %0 : tensor<4xf64>
  }
  return %r : tensor<4xf32>
}

// -----

func.func @condition_carries(%x: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error@+1 {{'scf.while' op along control flow edge from Operation scf.condition to parent: region branch point has 0 operands, but region successor needs 1 inputs}}
  %r = scf.while (%a = %x) : (tensor<3xf32>) -> tensor<3xf32> {
    %t = arith.constant true
    scf.condition(%t)
  } do {
  ^bb0(%a: tensor<3xf32>):
    scf.yield %a : tensor<3xf32>
  }
  return %r : tensor<3xf32>
}

// -----

// A carry of a region holding ms ops must be an ms tensor.
func.func @scalar_carry(%x: tensor<4xf32>, %s: f32) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  // expected-error@+1 {{'scf.for' op holds ms ops, so its results and region arguments must be statically shaped tensors of supported element types, got f32}}
  %r = scf.for %iv = %c0 to %c1 step %c1 iter_args(%a = %s) -> (f32) {
    %0 = "ms.exp"(%x) : (tensor<4xf32>) -> tensor<4xf32>
    scf.yield %a : f32
  }
  return %r : f32
}

// -----

func.func @side_effect(%w: tensor<4xf32> {ms.parameter = "w"}, %p: i1) -> tensor<4xf32> {
  // expected-error@+1 {{'scf.if' op region writes a Parameter (ms.assign): the bodies of loops and conditionals must not have side effects}}
  %r = scf.if %p -> (tensor<4xf32>) {
    %0 = "ms.assign"(%w, %w) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    scf.yield %0 : tensor<4xf32>
  } else {
    scf.yield %w : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}

// -----

// The ms ops inside a body are checked like any other.
func.func @body_op(%x: tensor<4xf32>) -> tensor<4xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %iv = %c0 to %c1 step %c1 iter_args(%a = %x) -> (tensor<4xf32>) {
    // expected-error@+1 {{'ms.exp' op result #0 has type tensor<4xf16>, but its inputs give tensor<4xf32>}}
    %0 = "ms.exp"(%a) : (tensor<4xf32>) -> tensor<4xf16>
    %1 = "ms.cast"(%0) {dtype = f32} : (tensor<4xf16>) -> tensor<4xf32>
    scf.yield %1 : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}

// -----

func.func @row_index_type(%xs: tensor<5x3xf32>, %i: tensor<f32>) -> tensor<3xf32> {
  // expected-error@+1 {{'ms.dynamic_index' op index must be a 0-d int32 or int64 tensor, got float32 of shape ()}}
  %0 = "ms.dynamic_index"(%xs, %i) : (tensor<5x3xf32>, tensor<f32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @row_update_shape(%xs: tensor<5x3xf32>, %row: tensor<4xf32>, %i: tensor<i64>) -> tensor<5x3xf32> {
  // expected-error@+1 {{'ms.dynamic_update_index' op update of shape (4,) is not a row of x of shape (5, 3)}}
  %0 = "ms.dynamic_update_index"(%xs, %row, %i) : (tensor<5x3xf32>, tensor<4xf32>, tensor<i64>) -> tensor<5x3xf32>
  return %0 : tensor<5x3xf32>
}

// -----

func.func @row_of_empty(%xs: tensor<0x3xf32>, %i: tensor<i64>) -> tensor<3xf32> {
  // expected-error@+1 {{'ms.dynamic_index' op x must have a non-empty first axis, got shape (0, 3)}}
  %0 = "ms.dynamic_index"(%xs, %i) : (tensor<0x3xf32>, tensor<i64>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}
