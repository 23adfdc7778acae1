// Calls that carry a custom gradient (dialects/ops/custom.py): ms-autodiff keeps them and
// builds the backward from their rule; ms-inline then inlines them like any call.
// RUN: ms-opt %s --ms-autodiff --split-input-file | FileCheck %s
// RUN: ms-opt %s --ms-autodiff --ms-inline --split-input-file | FileCheck %s --check-prefix=INLINED

// ms.bprop: the backward calls the bprop on (outputs, their cotangents, operands); the
// operand past ms.bprop_inputs (a Parameter the Cell reads) gets zeros.
// CHECK-LABEL: func.func private @f_grad
// CHECK-SAME: (%[[X:.+]]: tensor<3xf32>, %[[W:.+]]: tensor<3xf32> {ms.parameter = "w"}, %[[S:.+]]: tensor<3xf32>)
// CHECK-NEXT: %[[OUT:.+]] = call @cell(%[[X]], %[[W]]) {ms.bprop = @cell_bprop, ms.bprop_inputs = 1 : i64}
// CHECK-NEXT: %[[E:.+]] = "ms.exp"(%[[OUT]])
// CHECK-NEXT: %[[D:.+]] = "ms.mul"(%[[S]], %[[E]])
// CHECK-NEXT: %[[G:.+]] = call @cell_bprop(%[[OUT]], %[[D]], %[[X]], %[[W]])
// CHECK-NEXT: %[[Z:.+]] = "ms.zeros_like"(%[[W]])
// CHECK-NEXT: return %[[G]], %[[Z]]
// INLINED-LABEL: func.func @grad_f
// INLINED-NOT: call
// INLINED: "ms.neg"
// INLINED-NOT: func.func private @cell_bprop
func.func private @cell(%x: tensor<3xf32>, %w: tensor<3xf32>) -> tensor<3xf32> {
  %0 = "ms.mul"(%x, %w) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}
func.func private @cell_bprop(%out: tensor<3xf32>, %dout: tensor<3xf32>, %x: tensor<3xf32>, %w: tensor<3xf32>) -> tensor<3xf32> {
  %0 = "ms.neg"(%dout) : (tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}
func.func private @f(%x: tensor<3xf32>, %w: tensor<3xf32> {ms.parameter = "w"}) -> tensor<3xf32> {
  %0 = func.call @cell(%x, %w) {ms.bprop = @cell_bprop, ms.bprop_inputs = 1 : i64} : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %1 = "ms.exp"(%0) : (tensor<3xf32>) -> tensor<3xf32>
  return %1 : tensor<3xf32>
}
func.func @grad_f(%x: tensor<3xf32>, %w: tensor<3xf32>, %s: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>) {
  %g = "ms.grad"() {callee = @f, grad_position = array<i64: 0>, get_by_list = true, sens_param = true, with_value = false} : () -> ((tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>))
  %0:2 = func.call_indirect %g(%x, %w, %s) : (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>)
  return %0#0, %0#1 : tensor<3xf32>, tensor<3xf32>
}

// -----

// ms.recompute: the forward keeps the call; the backward reads the operands through
// ms.barrier, recomputes the body on them and differentiates that copy (so the forward's
// tanh is not what the backward uses: two tanh ops).
// CHECK-LABEL: func.func private @g_grad
// CHECK-SAME: (%[[X:.+]]: tensor<3xf32>, %[[S:.+]]: tensor<3xf32>)
// CHECK-NEXT: %[[OUT:.+]] = call @block(%[[X]]) {ms.recompute}
// CHECK-NEXT: %[[B:.+]] = "ms.barrier"(%[[X]])
// CHECK-NEXT: %[[T:.+]] = "ms.tanh"(%[[B]])
// CHECK-NEXT: "ms.mul"(%[[T]], %[[B]])
// CHECK: "ms.mul"(%[[S]], %[[B]])
// CHECK: return
// INLINED-LABEL: func.func @grad_g
// INLINED-NOT: call
// INLINED-COUNT-2: "ms.tanh"
// INLINED-NOT: func.func private @block
func.func private @block(%x: tensor<3xf32>) -> tensor<3xf32> {
  %0 = "ms.tanh"(%x) : (tensor<3xf32>) -> tensor<3xf32>
  %1 = "ms.mul"(%0, %x) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %1 : tensor<3xf32>
}
func.func private @g(%x: tensor<3xf32>) -> tensor<3xf32> {
  %0 = func.call @block(%x) {ms.recompute} : (tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}
func.func @grad_g(%x: tensor<3xf32>, %s: tensor<3xf32>) -> tensor<3xf32> {
  %g = "ms.grad"() {callee = @g, grad_position = array<i64: 0>, get_by_list = false, sens_param = true, with_value = false} : () -> ((tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>)
  %0 = func.call_indirect %g(%x, %s) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}
