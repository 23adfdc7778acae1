// The backward programs ms-autodiff generates, and how it rewrites the ms.grad and its calls.
// RUN: ms-opt %s --ms-autodiff --split-input-file | FileCheck %s

// The gradient function holds the forward copy, then the backward: the cotangent of the
// broadcast operand is summed over the stretched axis. The ms.grad becomes a direct call.
// CHECK-LABEL: func.func private @mul_grad
// CHECK-SAME: (%[[X:.+]]: tensor<3x4xf32>, %[[Y:.+]]: tensor<4xf32>, %[[S:.+]]: tensor<3x4xf32>) -> (tensor<3x4xf32>, tensor<4xf32>)
// CHECK-NEXT: "ms.mul"(%[[X]], %[[Y]])
// CHECK-NEXT: %[[DX:.+]] = "ms.mul"(%[[S]], %[[Y]]) : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3x4xf32>
// CHECK-NEXT: %[[SX:.+]] = "ms.mul"(%[[S]], %[[X]]) : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
// CHECK-NEXT: %[[DY:.+]] = "ms.reduce_sum"(%[[SX]]) {axis = array<i64: 0>, keep_dims = false} : (tensor<3x4xf32>) -> tensor<4xf32>
// CHECK-NEXT: return %[[DX]], %[[DY]]
// CHECK-LABEL: func.func @grad_mul
// CHECK-NOT: ms.grad
// CHECK: %[[R:.+]]:2 = call @mul_grad(%arg0, %arg1, %arg2)
// CHECK-NEXT: return %[[R]]#0, %[[R]]#1
func.func private @mul(%x: tensor<3x4xf32>, %y: tensor<4xf32>) -> tensor<3x4xf32> {
  %0 = "ms.mul"(%x, %y) : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}
func.func @grad_mul(%x: tensor<3x4xf32>, %y: tensor<4xf32>, %s: tensor<3x4xf32>) -> (tensor<3x4xf32>, tensor<4xf32>) {
  %g = "ms.grad"() {callee = @mul, grad_position = array<i64: 0, 1>, get_by_list = false, sens_param = true, with_value = false} : () -> ((tensor<3x4xf32>, tensor<4xf32>, tensor<3x4xf32>) -> (tensor<3x4xf32>, tensor<4xf32>))
  %0:2 = func.call_indirect %g(%x, %y, %s) : (tensor<3x4xf32>, tensor<4xf32>, tensor<3x4xf32>) -> (tensor<3x4xf32>, tensor<4xf32>)
  return %0#0, %0#1 : tensor<3x4xf32>, tensor<4xf32>
}

// -----

// with_value: the forward product is computed once and returned with the gradients; each
// gradient is one more matmul with flipped transpose flags, seeded with a constant of ones.
// CHECK-LABEL: func.func private @matmul_grad
// CHECK-SAME: (%[[A:.+]]: tensor<2x3xf32>, %[[B:.+]]: tensor<4x3xf32>)
// CHECK-NEXT: %[[Z:.+]] = "ms.matmul"(%[[A]], %[[B]]) {transpose_a = false, transpose_b = true}
// CHECK-NEXT: %[[ONES:.+]] = "ms.constant"() {value = dense<1.000000e+00> : tensor<2x4xf32>}
// CHECK-NEXT: %[[DA:.+]] = "ms.matmul"(%[[ONES]], %[[B]]) {transpose_a = false, transpose_b = false} : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: %[[DB:.+]] = "ms.matmul"(%[[ONES]], %[[A]]) {transpose_a = true, transpose_b = false} : (tensor<2x4xf32>, tensor<2x3xf32>) -> tensor<4x3xf32>
// CHECK-NEXT: return %[[Z]], %[[DA]], %[[DB]]
// CHECK-LABEL: func.func @grad_matmul
// CHECK: call @matmul_grad
func.func private @matmul(%a: tensor<2x3xf32>, %b: tensor<4x3xf32>) -> tensor<2x4xf32> {
  %0 = "ms.matmul"(%a, %b) {transpose_a = false, transpose_b = true} : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}
func.func @grad_matmul(%a: tensor<2x3xf32>, %b: tensor<4x3xf32>) -> (tensor<2x4xf32>, tensor<2x3xf32>, tensor<4x3xf32>) {
  %g = "ms.grad"() {callee = @matmul, grad_position = array<i64: 0, 1>, get_by_list = false, sens_param = false, with_value = true} : () -> ((tensor<2x3xf32>, tensor<4x3xf32>) -> (tensor<2x4xf32>, tensor<2x3xf32>, tensor<4x3xf32>))
  %0:3 = func.call_indirect %g(%a, %b) : (tensor<2x3xf32>, tensor<4x3xf32>) -> (tensor<2x4xf32>, tensor<2x3xf32>, tensor<4x3xf32>)
  return %0#0, %0#1, %0#2 : tensor<2x4xf32>, tensor<2x3xf32>, tensor<4x3xf32>
}

// -----

// reduce_sum spreads the cotangent back over the reduced axes; the add's broadcast operand
// (3x1 into 2x3x4) gets it summed over axes 0 and 2 and reshaped back to 3x1.
// CHECK-LABEL: func.func private @sum_of_broadcast_grad
// CHECK: %[[ONES:.+]] = "ms.constant"() {value = dense<1.000000e+00> : tensor<f32>} : () -> tensor<f32>
// CHECK-NEXT: %[[R1:.+]] = "ms.reshape"(%[[ONES]]) {shape = array<i64: 1, 1>}
// CHECK-NEXT: %[[D1:.+]] = "ms.broadcast_to"(%[[R1]]) {shape = array<i64: 2, 4>}
// CHECK-NEXT: %[[R2:.+]] = "ms.reshape"(%[[D1]]) {shape = array<i64: 2, 1, 4>}
// CHECK-NEXT: %[[D2:.+]] = "ms.broadcast_to"(%[[R2]]) {shape = array<i64: 2, 3, 4>}
// CHECK-NEXT: %[[S:.+]] = "ms.reduce_sum"(%[[D2]]) {axis = array<i64: 0, 2>, keep_dims = false} : (tensor<2x3x4xf32>) -> tensor<3xf32>
// CHECK-NEXT: %[[DB:.+]] = "ms.reshape"(%[[S]]) {shape = array<i64: 3, 1>} : (tensor<3xf32>) -> tensor<3x1xf32>
// CHECK-NEXT: return %[[DB]] : tensor<3x1xf32>
func.func private @sum_of_broadcast(%x: tensor<2x1x4xf32>, %b: tensor<3x1xf32>) -> tensor<f32> {
  %0 = "ms.add"(%x, %b) : (tensor<2x1x4xf32>, tensor<3x1xf32>) -> tensor<2x3x4xf32>
  %1 = "ms.reduce_sum"(%0) {axis = array<i64: 1>, keep_dims = false} : (tensor<2x3x4xf32>) -> tensor<2x4xf32>
  %2 = "ms.reduce_sum"(%1) {axis = array<i64>, keep_dims = false} : (tensor<2x4xf32>) -> tensor<f32>
  return %2 : tensor<f32>
}
func.func @grad_sum_of_broadcast(%x: tensor<2x1x4xf32>, %b: tensor<3x1xf32>) -> tensor<3x1xf32> {
  %g = "ms.grad"() {callee = @sum_of_broadcast, grad_position = array<i64: 1>, get_by_list = false, sens_param = false, with_value = false} : () -> ((tensor<2x1x4xf32>, tensor<3x1xf32>) -> tensor<3x1xf32>)
  %0 = func.call_indirect %g(%x, %b) : (tensor<2x1x4xf32>, tensor<3x1xf32>) -> tensor<3x1xf32>
  return %0 : tensor<3x1xf32>
}

// -----

// get_by_list appends the gradient of the {ms.parameter} argument; the integer input gets
// zeros of its type, and nothing flows through stop_gradient.
// CHECK-LABEL: func.func private @weights_grad
// CHECK-SAME: (%[[X:.+]]: tensor<4xf32>, %[[W:.+]]: tensor<4xf32> {ms.parameter = "w"}, %[[N:.+]]: tensor<4xi32>) -> (tensor<4xi32>, tensor<4xf32>)
// CHECK: %[[NF:.+]] = "ms.cast"(%[[N]])
// CHECK: %[[ONES:.+]] = "ms.constant"() {value = dense<1.000000e+00> : tensor<4xf32>}
// CHECK-NEXT: %[[D3:.+]] = "ms.mul"(%[[ONES]], %[[NF]])
// CHECK-NEXT: %[[DW:.+]] = "ms.mul"(%[[D3]], %[[X]])
// CHECK-NEXT: %[[DN:.+]] = "ms.zeros_like"(%[[N]]) : (tensor<4xi32>) -> tensor<4xi32>
// CHECK-NEXT: return %[[DN]], %[[DW]] : tensor<4xi32>, tensor<4xf32>
func.func private @weights(%x: tensor<4xf32>, %w: tensor<4xf32> {ms.parameter = "w"}, %n: tensor<4xi32>) -> tensor<4xf32> {
  %0 = "ms.cast"(%n) {dtype = f32} : (tensor<4xi32>) -> tensor<4xf32>
  %1 = "ms.mul"(%x, %w) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %2 = "ms.stop_gradient"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %3 = "ms.add"(%1, %2) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %4 = "ms.mul"(%3, %0) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %4 : tensor<4xf32>
}
func.func @grad_weights(%x: tensor<4xf32>, %w: tensor<4xf32>, %n: tensor<4xi32>) -> (tensor<4xi32>, tensor<4xf32>) {
  %g = "ms.grad"() {callee = @weights, grad_position = array<i64: 2>, get_by_list = true, sens_param = false, with_value = false} : () -> ((tensor<4xf32>, tensor<4xf32>, tensor<4xi32>) -> (tensor<4xi32>, tensor<4xf32>))
  %0:2 = func.call_indirect %g(%x, %w, %n) : (tensor<4xf32>, tensor<4xf32>, tensor<4xi32>) -> (tensor<4xi32>, tensor<4xf32>)
  return %0#0, %0#1 : tensor<4xi32>, tensor<4xf32>
}

// -----

// grad of grad: the callee @dcube takes a gradient itself, so its ms.grad is replaced and the
// generated @cube_grad inlined into it first; @dcube_grad differentiates that plain code.
// CHECK-LABEL: func.func private @cube_grad
// CHECK-LABEL: func.func private @dcube(
// CHECK-NOT: ms.grad
// CHECK-NOT: call
// CHECK: "ms.constant"() {value = dense<1.000000e+00> : tensor<4xf32>}
// CHECK: return
// CHECK-LABEL: func.func private @dcube_grad(
// CHECK-COUNT-2: "ms.constant"() {value = dense<1.000000e+00> : tensor<4xf32>}
// CHECK: return
// CHECK-LABEL: func.func @second_derivative
// CHECK-NEXT: call @dcube_grad(%arg0)
func.func private @cube(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "ms.mul"(%x, %x) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = "ms.mul"(%0, %x) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %1 : tensor<4xf32>
}
func.func private @dcube(%x: tensor<4xf32>) -> tensor<4xf32> {
  %g = "ms.grad"() {callee = @cube, grad_position = array<i64: 0>, get_by_list = false, sens_param = false, with_value = false} : () -> ((tensor<4xf32>) -> tensor<4xf32>)
  %0 = func.call_indirect %g(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
func.func @second_derivative(%x: tensor<4xf32>) -> tensor<4xf32> {
  %g = "ms.grad"() {callee = @dcube, grad_position = array<i64: 0>, get_by_list = false, sens_param = false, with_value = false} : () -> ((tensor<4xf32>) -> tensor<4xf32>)
  %0 = func.call_indirect %g(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
