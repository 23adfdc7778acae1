// RUN: ms-opt %s --ms-inline --split-input-file --verify-diagnostics

// The call that closes the cycle is reported.
func.func private @ping(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = func.call @pong(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
func.func private @pong(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{recursive call to @ping cannot be inlined}}
  %0 = func.call @ping(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = func.call @ping(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func private @external(%x: tensor<4xf32>) -> tensor<4xf32>
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{function @external has no body; ms functions are a single block}}
  %0 = func.call @external(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
