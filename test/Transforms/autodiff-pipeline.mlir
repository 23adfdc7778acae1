// Through the ms-opt stage (autodiff, inline, canonicalize) the value and the gradient of
// exp(x) * w share one forward computation: the backward re-uses exp(x).
// RUN: mscc %s --emit=ms-opt | FileCheck %s

func.func private @f(%x: tensor<8xf32>, %w: tensor<8xf32> {ms.parameter = "w"}) -> tensor<f32> {
  %0 = "ms.exp"(%x) : (tensor<8xf32>) -> tensor<8xf32>
  %1 = "ms.mul"(%0, %w) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %2 = "ms.reduce_sum"(%1) {axis = array<i64>, keep_dims = false} : (tensor<8xf32>) -> tensor<f32>
  return %2 : tensor<f32>
}

// CHECK-NOT: func.func private
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: (%[[X:.+]]: tensor<8xf32>, %[[W:.+]]: tensor<8xf32>)
// CHECK: %[[E:.+]] = "ms.exp"(%[[X]])
// CHECK-NOT: "ms.exp"
// CHECK: {kind = "reduction"}
// The product reads the seed as it is (numpy broadcasting: ms-simplify-broadcasts), not
// spread over the vector.
// CHECK-NOT: "ms.broadcast_to"
// CHECK: %[[SEED:.+]] = "ms.reshape"
// CHECK-NEXT: %[[DW:.+]] = "ms.mul"(%[[SEED]], %[[E]]) : (tensor<1xf32>, tensor<8xf32>)
// CHECK-NOT: "ms.exp"
// CHECK: return %{{.+}}, %[[DW]] : tensor<f32>, tensor<8xf32>
func.func @train_step(%x: tensor<8xf32>, %w: tensor<8xf32>) -> (tensor<f32>, tensor<8xf32>) {
  %g = "ms.grad"() {callee = @f, grad_position = array<i64>, get_by_list = true, sens_param = false, with_value = true} : () -> ((tensor<8xf32>, tensor<8xf32>) -> (tensor<f32>, tensor<8xf32>))
  %0:2 = func.call_indirect %g(%x, %w) : (tensor<8xf32>, tensor<8xf32>) -> (tensor<f32>, tensor<8xf32>)
  return %0#0, %0#1 : tensor<f32>, tensor<8xf32>
}
