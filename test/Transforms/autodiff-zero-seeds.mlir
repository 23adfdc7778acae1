// A sensitivity a call passes as zeros by construction (the frontend's zeros for the new
// values of Parameters a function writes, BatchNorm's moving statistics) seeds nothing: the
// generated function has no backward for that result. A call with another sensitivity gets
// its own function, which does.
// RUN: ms-opt %s --ms-autodiff --split-input-file | FileCheck %s

func.func private @loss_and_stat(%x: tensor<16x8xf32>, %w: tensor<8xf32> {ms.parameter = "w"}) -> (tensor<f32>, tensor<8xf32>) {
  %0 = "ms.mul"(%x, %w) : (tensor<16x8xf32>, tensor<8xf32>) -> tensor<16x8xf32>
  %1 = "ms.tanh"(%0) : (tensor<16x8xf32>) -> tensor<16x8xf32>
  %2 = "ms.reduce_sum"(%1) {axis = array<i64>, keep_dims = false} : (tensor<16x8xf32>) -> tensor<f32>
  %3 = "ms.reduce_max"(%0) {axis = array<i64: 0>, keep_dims = false} : (tensor<16x8xf32>) -> tensor<8xf32>
  return %2, %3 : tensor<f32>, tensor<8xf32>
}

// The statistic's sensitivity is a broadcast zero: its backward (reduce_max's: ms.equal) is
// not built, and the function does not read the sensitivity argument.
// CHECK:       func.func private @[[ZERO_GRAD:[a-z_0-9]+]](%{{.+}}, %[[SEED:[a-z0-9]+]]: tensor<8xf32>) -> tensor<8xf32>
// CHECK-NOT:     %[[SEED]]
// CHECK-NOT:     "ms.equal"
// CHECK:         return
// CHECK:       func.func private @[[FULL_GRAD:[a-z_0-9]+]](
// CHECK:         "ms.equal"
// CHECK:         return
// CHECK-LABEL: func.func @zero_sensitivity
// CHECK:         %[[ZEROS:.+]] = "ms.broadcast_to"
// CHECK:         call @[[ZERO_GRAD]](%{{.+}}, %{{.+}}, %{{.+}}, %[[ZEROS]])
// CHECK:         call @[[FULL_GRAD]](%{{.+}}, %{{.+}}, %{{.+}}, %arg2)
func.func @zero_sensitivity(%x: tensor<16x8xf32>, %w: tensor<8xf32>, %s: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %g = "ms.grad"() {callee = @loss_and_stat, grad_position = array<i64>, get_by_list = true, sens_param = true, with_value = false} : () -> ((tensor<16x8xf32>, tensor<8xf32>, tensor<f32>, tensor<8xf32>) -> tensor<8xf32>)
  %one = "ms.constant"() {value = dense<1.0> : tensor<f32>} : () -> tensor<f32>
  %zero = "ms.constant"() {value = dense<0.0> : tensor<f32>} : () -> tensor<f32>
  %zeros = "ms.broadcast_to"(%zero) {shape = array<i64: 8>} : (tensor<f32>) -> tensor<8xf32>
  %0 = func.call_indirect %g(%x, %w, %one, %zeros) : (tensor<16x8xf32>, tensor<8xf32>, tensor<f32>, tensor<8xf32>) -> tensor<8xf32>
  %1 = func.call_indirect %g(%x, %w, %one, %s) : (tensor<16x8xf32>, tensor<8xf32>, tensor<f32>, tensor<8xf32>) -> tensor<8xf32>
  return %0, %1 : tensor<8xf32>, tensor<8xf32>
}
