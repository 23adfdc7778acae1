// ms.batch_norm's shape, attribute and dtype rules, as located verifier errors.
// RUN: ms-opt %s --split-input-file --verify-diagnostics

func.func @gamma_per_channel(%x: tensor<4x3x5x5xf32>, %g: tensor<4xf32>, %b: tensor<3xf32>) -> tensor<4x3x5x5xf32> {
  // expected-error@+1 {{'ms.batch_norm' op gamma must have shape (3,) for the 3 channels of axis 1, got (4,)}}
  %0 = "ms.batch_norm"(%x, %g, %b) {epsilon = 1.0e-5 : f64} : (tensor<4x3x5x5xf32>, tensor<4xf32>, tensor<3xf32>) -> tensor<4x3x5x5xf32>
  return %0 : tensor<4x3x5x5xf32>
}

// -----

func.func @rank_one(%x: tensor<6xf32>, %g: tensor<6xf32>) -> tensor<6xf32> {
  // expected-error@+1 {{'ms.batch_norm' op expects an input (N, C, ...) of rank >= 2, got shape (6,)}}
  %0 = "ms.batch_norm"(%x, %g, %g) {epsilon = 1.0e-5 : f64} : (tensor<6xf32>, tensor<6xf32>, tensor<6xf32>) -> tensor<6xf32>
  return %0 : tensor<6xf32>
}

// -----

func.func @epsilon_positive(%x: tensor<4x3xf32>, %g: tensor<3xf32>) -> tensor<4x3xf32> {
  // expected-error@+1 {{'ms.batch_norm' op epsilon must be > 0, got 0.0}}
  %0 = "ms.batch_norm"(%x, %g, %g) {epsilon = 0.0 : f64} : (tensor<4x3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

func.func @epsilon_is_a_float(%x: tensor<4x3xf32>, %g: tensor<3xf32>) -> tensor<4x3xf32> {
  // expected-error@+1 {{expected base attribute 'builtin.float' but got 'builtin.integer'}}
  %0 = "ms.batch_norm"(%x, %g, %g) {epsilon = 1 : i64} : (tensor<4x3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

func.func @float_input(%x: tensor<4x3xi32>, %g: tensor<3xi32>) -> tensor<4x3xi32> {
  // expected-error@+1 {{'ms.batch_norm' op operand #0 has element type i32, but ms.batch_norm supports float16, bfloat16, float32, float64}}
  %0 = "ms.batch_norm"(%x, %g, %g) {epsilon = 1.0e-5 : f64} : (tensor<4x3xi32>, tensor<3xi32>, tensor<3xi32>) -> tensor<4x3xi32>
  return %0 : tensor<4x3xi32>
}
