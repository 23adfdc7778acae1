// ms.conv, ms.conv_input_grad and ms.conv_filter_grad: the verifier's shape and attribute
// rules (the frontend's MindSpore-level checks are in test/python/test_conv.py).
// RUN: ms-opt %s --split-input-file --verify-diagnostics

// The input's channels are not the weight's C/groups.
func.func @channels(%x: tensor<1x5x6x6xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x4x4xf32> {
  // expected-error@+1 {{'ms.conv' op input has 5 channels, the weight (4, 3, 3, 3) with groups=1 expects 3}}
  %0 = "ms.conv"(%x, %w) {stride = array<i64: 1, 1>, dilation = array<i64: 1, 1>, pad_lo = array<i64: 0, 0>, pad_hi = array<i64: 0, 0>, groups = 1 : i64} : (tensor<1x5x6x6xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x4x4xf32>
  return %0 : tensor<1x4x4x4xf32>
}

// -----

// A 4-D input needs a 4-D weight.
func.func @weight_rank(%x: tensor<1x3x6x6xf32>, %w: tensor<4x3x3xf32>) -> tensor<1x4x4x4xf32> {
  // expected-error@+1 {{'ms.conv' op expects x (N, C, *spatial) and weight (O, C/groups, *kernel) of the same rank 3, 4 or 5, got shapes (1, 3, 6, 6) and (4, 3, 3)}}
  %0 = "ms.conv"(%x, %w) {stride = array<i64: 1, 1>, dilation = array<i64: 1, 1>, pad_lo = array<i64: 0, 0>, pad_hi = array<i64: 0, 0>, groups = 1 : i64} : (tensor<1x3x6x6xf32>, tensor<4x3x3xf32>) -> tensor<1x4x4x4xf32>
  return %0 : tensor<1x4x4x4xf32>
}

// -----

func.func @negative_pad(%x: tensor<1x3x6x6xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x4x4xf32> {
  // expected-error@+1 {{'ms.conv' op pad_lo (-1, 0) must be non-negative}}
  %0 = "ms.conv"(%x, %w) {stride = array<i64: 1, 1>, dilation = array<i64: 1, 1>, pad_lo = array<i64: -1, 0>, pad_hi = array<i64: 1, 0>, groups = 1 : i64} : (tensor<1x3x6x6xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x4x4xf32>
  return %0 : tensor<1x4x4x4xf32>
}

// -----

// One stride per spatial dim.
func.func @stride_count(%x: tensor<1x3x6x6xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x4x4xf32> {
  // expected-error@+1 {{'ms.conv' op stride has 1 entries for 2 spatial dims}}
  %0 = "ms.conv"(%x, %w) {stride = array<i64: 1>, dilation = array<i64: 1, 1>, pad_lo = array<i64: 0, 0>, pad_hi = array<i64: 0, 0>, groups = 1 : i64} : (tensor<1x3x6x6xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x4x4xf32>
  return %0 : tensor<1x4x4x4xf32>
}

// -----

// groups must divide the weight's output channels.
func.func @groups(%x: tensor<1x4x6x6xf32>, %w: tensor<3x2x3x3xf32>) -> tensor<1x3x4x4xf32> {
  // expected-error@+1 {{'ms.conv' op weight's 3 output channels are not divisible by groups=2}}
  %0 = "ms.conv"(%x, %w) {stride = array<i64: 1, 1>, dilation = array<i64: 1, 1>, pad_lo = array<i64: 0, 0>, pad_hi = array<i64: 0, 0>, groups = 2 : i64} : (tensor<1x4x6x6xf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x4x4xf32>
  return %0 : tensor<1x3x4x4xf32>
}

// -----

func.func @groups_zero(%x: tensor<1x4x6x6xf32>, %w: tensor<3x2x3x3xf32>) -> tensor<1x3x4x4xf32> {
  // expected-error@+1 {{'ms.conv' op groups 0 must be positive}}
  %0 = "ms.conv"(%x, %w) {stride = array<i64: 1, 1>, dilation = array<i64: 1, 1>, pad_lo = array<i64: 0, 0>, pad_hi = array<i64: 0, 0>, groups = 0 : i64} : (tensor<1x4x6x6xf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x4x4xf32>
  return %0 : tensor<1x3x4x4xf32>
}

// -----

func.func @stride_zero(%x: tensor<1x3x6x6xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x4x4xf32> {
  // expected-error@+1 {{'ms.conv' op stride (0, 1) must be positive}}
  %0 = "ms.conv"(%x, %w) {stride = array<i64: 0, 1>, dilation = array<i64: 1, 1>, pad_lo = array<i64: 0, 0>, pad_hi = array<i64: 0, 0>, groups = 1 : i64} : (tensor<1x3x6x6xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x4x4xf32>
  return %0 : tensor<1x4x4x4xf32>
}

// -----

// The kernel does not fit the padded input.
func.func @kernel_too_large(%x: tensor<1x3x2x6xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x1x4xf32> {
  // expected-error@+1 {{'ms.conv' op the padded input (2, 6) (pads (0, 0), (0, 0)) is smaller than the kernel (3, 3) with dilation (1, 1)}}
  %0 = "ms.conv"(%x, %w) {stride = array<i64: 1, 1>, dilation = array<i64: 1, 1>, pad_lo = array<i64: 0, 0>, pad_hi = array<i64: 0, 0>, groups = 1 : i64} : (tensor<1x3x2x6xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x1x4xf32>
  return %0 : tensor<1x4x1x4xf32>
}

// -----

// The declared result is not the shape the rules give.
func.func @wrong_result(%x: tensor<1x3x6x6xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32> {
  // expected-error@+1 {{'ms.conv' op result #0 has type tensor<1x4x6x6xf32>, but its inputs give tensor<1x4x4x4xf32>}}
  %0 = "ms.conv"(%x, %w) {stride = array<i64: 1, 1>, dilation = array<i64: 1, 1>, pad_lo = array<i64: 0, 0>, pad_hi = array<i64: 0, 0>, groups = 1 : i64} : (tensor<1x3x6x6xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  return %0 : tensor<1x4x6x6xf32>
}

// -----

// Convolutions are floating-point only.
func.func @integer_conv(%x: tensor<1x3x6x6xi32>, %w: tensor<4x3x3x3xi32>) -> tensor<1x4x4x4xi32> {
  // expected-error@+1 {{'ms.conv' op operand #0 has element type i32, but ms.conv supports float16, bfloat16, float32, float64}}
  %0 = "ms.conv"(%x, %w) {stride = array<i64: 1, 1>, dilation = array<i64: 1, 1>, pad_lo = array<i64: 0, 0>, pad_hi = array<i64: 0, 0>, groups = 1 : i64} : (tensor<1x3x6x6xi32>, tensor<4x3x3x3xi32>) -> tensor<1x4x4x4xi32>
  return %0 : tensor<1x4x4x4xi32>
}

// -----

// dy must be the shape of the convolution of input_shape.
func.func @input_grad_dy(%dy: tensor<1x4x5x5xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x3x8x8xf32> {
  // expected-error@+1 {{'ms.conv_input_grad' op dy (1, 4, 5, 5) is not the shape of a convolution of (1, 3, 8, 8) by the weight (4, 3, 3, 3)}}
  %0 = "ms.conv_input_grad"(%dy, %w) {stride = array<i64: 2, 2>, dilation = array<i64: 1, 1>, pad_lo = array<i64: 1, 1>, pad_hi = array<i64: 0, 0>, groups = 1 : i64, input_shape = array<i64: 1, 3, 8, 8>} : (tensor<1x4x5x5xf32>, tensor<4x3x3x3xf32>) -> tensor<1x3x8x8xf32>
  return %0 : tensor<1x3x8x8xf32>
}

// -----

func.func @filter_grad_kernel(%x: tensor<2x3x6x6xf32>, %dy: tensor<2x4x4x4xf32>) -> tensor<4x3x3xf32> {
  // expected-error@+1 {{'ms.conv_filter_grad' op kernel_shape (4, 3, 3) does not match the input rank 4}}
  %0 = "ms.conv_filter_grad"(%x, %dy) {stride = array<i64: 1, 1>, dilation = array<i64: 1, 1>, pad_lo = array<i64: 0, 0>, pad_hi = array<i64: 0, 0>, groups = 1 : i64, kernel_shape = array<i64: 4, 3, 3>} : (tensor<2x3x6x6xf32>, tensor<2x4x4x4xf32>) -> tensor<4x3x3xf32>
  return %0 : tensor<4x3x3xf32>
}

// -----

func.func @missing_groups(%x: tensor<1x3x6x6xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x4x4xf32> {
  // expected-error@+1 {{attribute "groups" is expected but not provided}}
  %0 = "ms.conv"(%x, %w) {stride = array<i64: 1, 1>, dilation = array<i64: 1, 1>, pad_lo = array<i64: 0, 0>, pad_hi = array<i64: 0, 0>} : (tensor<1x3x6x6xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x4x4xf32>
  return %0 : tensor<1x4x4x4xf32>
}
