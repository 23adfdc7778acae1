// ms-simplify-broadcasts: an elementwise op reads the operand of an explicit broadcast when
// numpy broadcasting gives its result the same shape, and otherwise computes before
// broadcasting; broadcasts that feed other ops, and their sizes, stay.
// RUN: ms-opt %s --ms-simplify-broadcasts --ms-canonicalize --split-input-file | FileCheck %s

// A mean's loss seed spread over the activation: the product reads the seed itself.
// CHECK-LABEL: func.func @operand_of_full_shape
// CHECK-NOT:     "ms.broadcast_to"
// CHECK:         %[[P:.+]] = "ms.mul"(%arg0, %arg1) : (tensor<1x1xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
// CHECK-NEXT:    return %[[P]]
func.func @operand_of_full_shape(%seed: tensor<1x1xf32>, %y: tensor<4x3xf32>) -> tensor<4x3xf32> {
  %b = "ms.broadcast_to"(%seed) {shape = array<i64: 4, 3>} : (tensor<1x1xf32>) -> tensor<4x3xf32>
  %0 = "ms.mul"(%b, %y) : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

// Scaled first, at the seed's shape, then read by the next op without a broadcast.
// CHECK-LABEL: func.func @computed_before_broadcasting
// CHECK-NOT:     "ms.broadcast_to"
// CHECK:         %[[C:.+]] = "ms.constant"
// CHECK:         %[[S:.+]] = "ms.mul"(%arg0, %[[C]]) : (tensor<1x3xf32>, tensor<f32>) -> tensor<1x3xf32>
// CHECK:         %[[A:.+]] = "ms.add"(%[[S]], %arg1) : (tensor<1x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
// CHECK-NEXT:    return %[[A]]
func.func @computed_before_broadcasting(%row: tensor<1x3xf32>, %y: tensor<4x3xf32>) -> tensor<4x3xf32> {
  %b = "ms.broadcast_to"(%row) {shape = array<i64: 4, 3>} : (tensor<1x3xf32>) -> tensor<4x3xf32>
  %c = "ms.constant"() {value = dense<2.0> : tensor<f32>} : () -> tensor<f32>
  %0 = "ms.mul"(%b, %c) : (tensor<4x3xf32>, tensor<f32>) -> tensor<4x3xf32>
  %1 = "ms.add"(%0, %y) : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  return %1 : tensor<4x3xf32>
}

// -----

// A broadcast returned, or read by a reduction, stays; so does the one an elementwise op
// with no larger operand needs for its result's shape (computed before it, a cast here).
// CHECK-LABEL: func.func @needed_broadcasts
// CHECK:         %[[B:.+]] = "ms.broadcast_to"(%arg0) {shape = array<i64: 4, 3>}
// CHECK:         %[[R:.+]] = "ms.reduce_sum"(%[[B]])
// CHECK:         %[[C:.+]] = "ms.cast"(%arg0) {dtype = f64} : (tensor<3xf32>) -> tensor<3xf64>
// CHECK:         %[[CB:.+]] = "ms.broadcast_to"(%[[C]]) {shape = array<i64: 4, 3>} : (tensor<3xf64>) -> tensor<4x3xf64>
// CHECK:         return %[[B]], %[[R]], %[[CB]]
func.func @needed_broadcasts(%row: tensor<3xf32>) -> (tensor<4x3xf32>, tensor<f32>, tensor<4x3xf64>) {
  %b = "ms.broadcast_to"(%row) {shape = array<i64: 4, 3>} : (tensor<3xf32>) -> tensor<4x3xf32>
  %r = "ms.reduce_sum"(%b) {axis = array<i64>, keep_dims = false} : (tensor<4x3xf32>) -> tensor<f32>
  %c = "ms.cast"(%b) {dtype = f64} : (tensor<4x3xf32>) -> tensor<4x3xf64>
  return %b, %r, %c : tensor<4x3xf32>, tensor<f32>, tensor<4x3xf64>
}
