// A gradient taken without the value does not compute the value: its default sensitivity
// is a constant of ones, not ones_like(loss), so after ms-canonicalize nothing reads the
// forward's last reduction (a training step's loss over the whole batch).
// RUN: mscc %s --emit=ms-opt | FileCheck %s

func.func private @loss(%x: tensor<16x8xf32>, %w: tensor<8xf32> {ms.parameter = "w"}) -> tensor<f32> {
  %0 = "ms.mul"(%x, %w) : (tensor<16x8xf32>, tensor<8xf32>) -> tensor<16x8xf32>
  %1 = "ms.tanh"(%0) : (tensor<16x8xf32>) -> tensor<16x8xf32>
  %2 = "ms.reduce_mean"(%1) {axis = array<i64>, keep_dims = false} : (tensor<16x8xf32>) -> tensor<f32>
  return %2 : tensor<f32>
}

// CHECK-LABEL: func.func @gradient_only
// CHECK-NOT:     "ms.reduce_mean"
// CHECK:         "ms.tanh"
// CHECK-NOT:     "ms.reduce_mean"
// CHECK:         return
func.func @gradient_only(%x: tensor<16x8xf32>, %w: tensor<8xf32>) -> tensor<8xf32> {
  %g = "ms.grad"() {callee = @loss, grad_position = array<i64>, get_by_list = true, sens_param = false, with_value = false} : () -> ((tensor<16x8xf32>, tensor<8xf32>) -> tensor<8xf32>)
  %0 = func.call_indirect %g(%x, %w) : (tensor<16x8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// CHECK-LABEL: func.func @with_value
// CHECK:         "ms.reduce_mean"
// CHECK:         return
func.func @with_value(%x: tensor<16x8xf32>, %w: tensor<8xf32>) -> (tensor<f32>, tensor<8xf32>) {
  %g = "ms.grad"() {callee = @loss, grad_position = array<i64>, get_by_list = true, sens_param = false, with_value = true} : () -> ((tensor<16x8xf32>, tensor<8xf32>) -> (tensor<f32>, tensor<8xf32>))
  %0:2 = func.call_indirect %g(%x, %w) : (tensor<16x8xf32>, tensor<8xf32>) -> (tensor<f32>, tensor<8xf32>)
  return %0#0, %0#1 : tensor<f32>, tensor<8xf32>
}
