// The pooling ops' shape and dtype rules, as located verifier errors.
// RUN: ms-opt %s --split-input-file --verify-diagnostics

func.func @kernel_larger_than_padded_input(%x: tensor<1x1x3x3xf32>) -> tensor<1x1x1x1xf32> {
  // expected-error@+1 {{'ms.max_pool' op kernel (5, 2) (extent 5 along spatial dim 0) is larger than the padded input: 3 + 1 + 0 for the input of shape (1, 1, 3, 3)}}
  %0 = "ms.max_pool"(%x) {kernel = array<i64: 5, 2>, stride = array<i64: 1, 1>, dilation = array<i64: 1, 1>, pad_lo = array<i64: 1, 0>, pad_hi = array<i64: 0, 0>, ceil_mode = false} : (tensor<1x1x3x3xf32>) -> tensor<1x1x1x1xf32>
  return %0 : tensor<1x1x1x1xf32>
}

// -----

func.func @no_spatial_dims(%x: tensor<4x3xf32>) -> tensor<4x3xf32> {
  // expected-error@+1 {{'ms.avg_pool' op expects an (N, C, *spatial) input with 1, 2 or 3 spatial dims, got shape (4, 3)}}
  %0 = "ms.avg_pool"(%x) {kernel = array<i64>, stride = array<i64>, pad_lo = array<i64>, pad_hi = array<i64>, ceil_mode = false, count_include_pad = true, divisor_override = 0} : (tensor<4x3xf32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

func.func @kernel_per_spatial_dim(%x: tensor<1x1x4x4xf32>) -> tensor<1x1x2x2xf32> {
  // expected-error@+1 {{'ms.max_pool' op kernel (2,) must have one entry per spatial dim: 2 for the input of shape (1, 1, 4, 4)}}
  %0 = "ms.max_pool"(%x) {kernel = array<i64: 2>, stride = array<i64: 2, 2>, dilation = array<i64: 1, 1>, pad_lo = array<i64: 0, 0>, pad_hi = array<i64: 0, 0>, ceil_mode = false} : (tensor<1x1x4x4xf32>) -> tensor<1x1x2x2xf32>
  return %0 : tensor<1x1x2x2xf32>
}

// -----

func.func @stride_zero(%x: tensor<1x1x4x4xf32>) -> tensor<1x1x2x2xf32> {
  // expected-error@+1 {{'ms.max_pool' op stride (2, 0) must be positive}}
  %0 = "ms.max_pool"(%x) {kernel = array<i64: 2, 2>, stride = array<i64: 2, 0>, dilation = array<i64: 1, 1>, pad_lo = array<i64: 0, 0>, pad_hi = array<i64: 0, 0>, ceil_mode = false} : (tensor<1x1x4x4xf32>) -> tensor<1x1x2x2xf32>
  return %0 : tensor<1x1x2x2xf32>
}

// -----

func.func @negative_padding(%x: tensor<1x1x4x4xf32>) -> tensor<1x1x2x2xf32> {
  // expected-error@+1 {{'ms.avg_pool' op pad_hi (0, -1) must be non-negative}}
  %0 = "ms.avg_pool"(%x) {kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>, pad_lo = array<i64: 0, 0>, pad_hi = array<i64: 0, -1>, ceil_mode = false, count_include_pad = true, divisor_override = 0} : (tensor<1x1x4x4xf32>) -> tensor<1x1x2x2xf32>
  return %0 : tensor<1x1x2x2xf32>
}

// -----

func.func @padding_as_large_as_the_kernel(%x: tensor<1x1x4x4xf32>) -> tensor<1x1x3x3xf32> {
  // expected-error@+1 {{'ms.max_pool' op padding (2, 2) of spatial dim 1 must be smaller than the kernel's extent 2}}
  %0 = "ms.max_pool"(%x) {kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>, dilation = array<i64: 1, 1>, pad_lo = array<i64: 1, 2>, pad_hi = array<i64: 1, 2>, ceil_mode = false} : (tensor<1x1x4x4xf32>) -> tensor<1x1x3x3xf32>
  return %0 : tensor<1x1x3x3xf32>
}

// -----

func.func @wrong_result_shape(%x: tensor<1x1x5x5xf32>) -> tensor<1x1x2x2xf32> {
  // expected-error@+1 {{'ms.max_pool' op result #0 has type tensor<1x1x2x2xf32>, but its inputs give tensor<1x1x3x3xf32>}}
  %0 = "ms.max_pool"(%x) {kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>, dilation = array<i64: 1, 1>, pad_lo = array<i64: 0, 0>, pad_hi = array<i64: 0, 0>, ceil_mode = true} : (tensor<1x1x5x5xf32>) -> tensor<1x1x2x2xf32>
  return %0 : tensor<1x1x2x2xf32>
}

// -----

func.func @avg_pool_of_integers(%x: tensor<1x1x4x4xi32>) -> tensor<1x1x2x2xi32> {
  // expected-error@+1 {{'ms.avg_pool' op operand #0 has element type i32, but ms.avg_pool supports float16, bfloat16, float32, float64}}
  %0 = "ms.avg_pool"(%x) {kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>, pad_lo = array<i64: 0, 0>, pad_hi = array<i64: 0, 0>, ceil_mode = false, count_include_pad = true, divisor_override = 0} : (tensor<1x1x4x4xi32>) -> tensor<1x1x2x2xi32>
  return %0 : tensor<1x1x2x2xi32>
}

// -----

func.func @max_pool_of_bools(%x: tensor<1x1x4x4xi1>) -> tensor<1x1x2x2xi1> {
  // expected-error@+1 {{'ms.max_pool' op operand #0 has element type i1, but ms.max_pool supports uint8}}
  %0 = "ms.max_pool"(%x) {kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>, dilation = array<i64: 1, 1>, pad_lo = array<i64: 0, 0>, pad_hi = array<i64: 0, 0>, ceil_mode = false} : (tensor<1x1x4x4xi1>) -> tensor<1x1x2x2xi1>
  return %0 : tensor<1x1x2x2xi1>
}

// -----

func.func @grad_of_another_pooling(%x: tensor<1x1x4x4xf32>, %y: tensor<1x1x2x2xf32>, %dy: tensor<1x1x3x3xf32>) -> tensor<1x1x4x4xf32> {
  // expected-error@+1 {{'ms.max_pool_grad' op dy has shape (1, 1, 3, 3), but pooling gives (1, 1, 2, 2)}}
  %0 = "ms.max_pool_grad"(%x, %y, %dy) {kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>, dilation = array<i64: 1, 1>, pad_lo = array<i64: 0, 0>, pad_hi = array<i64: 0, 0>, ceil_mode = false} : (tensor<1x1x4x4xf32>, tensor<1x1x2x2xf32>, tensor<1x1x3x3xf32>) -> tensor<1x1x4x4xf32>
  return %0 : tensor<1x1x4x4xf32>
}

// -----

func.func @negative_divisor(%dy: tensor<1x1x2x2xf32>) -> tensor<1x1x4x4xf32> {
  // expected-error@+1 {{'ms.avg_pool_grad' op divisor_override -2 must be positive (or 0: none)}}
  %0 = "ms.avg_pool_grad"(%dy) {kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>, pad_lo = array<i64: 0, 0>, pad_hi = array<i64: 0, 0>, ceil_mode = false, count_include_pad = true, divisor_override = -2, input_shape = array<i64: 1, 1, 4, 4>} : (tensor<1x1x2x2xf32>) -> tensor<1x1x4x4xf32>
  return %0 : tensor<1x1x4x4xf32>
}

// -----

func.func @missing_ceil_mode(%x: tensor<1x1x4x4xf32>) -> tensor<1x1x2x2xf32> {
  // expected-error@+1 {{attribute "ceil_mode" is expected but not provided}}
  %0 = "ms.max_pool"(%x) {kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>, dilation = array<i64: 1, 1>, pad_lo = array<i64: 0, 0>, pad_hi = array<i64: 0, 0>} : (tensor<1x1x4x4xf32>) -> tensor<1x1x2x2xf32>
  return %0 : tensor<1x1x2x2xf32>
}
