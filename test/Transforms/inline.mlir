// ms-inline: calls of module functions are replaced by the callee's body (callees first);
// private functions nothing refers to afterwards are dropped, public ones stay.
// RUN: ms-opt %s --ms-inline --split-input-file | FileCheck %s

// CHECK-NOT: func.func private @square
// CHECK-NOT: func.func private @twice
func.func private @square(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "ms.mul"(%x, %x) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
func.func private @twice(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = func.call @square(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %1 = func.call @square(%0) : (tensor<4xf32>) -> tensor<4xf32>
  return %1 : tensor<4xf32>
}
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[A:.+]]: tensor<4xf32>)
// CHECK-NEXT: %[[E:.+]] = "ms.exp"(%[[A]])
// CHECK-NEXT: %[[S1:.+]] = "ms.mul"(%[[E]], %[[E]])
// CHECK-NEXT: %[[S2:.+]] = "ms.mul"(%[[S1]], %[[S1]])
// CHECK-NEXT: return %[[S2]]
func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "ms.exp"(%a) : (tensor<4xf32>) -> tensor<4xf32>
  %1 = func.call @twice(%0) : (tensor<4xf32>) -> tensor<4xf32>
  return %1 : tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @public_callee
// CHECK-NEXT: "ms.neg"
func.func @public_callee(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "ms.neg"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
// CHECK-LABEL: func.func @caller
// CHECK-NEXT: %[[N:.+]] = "ms.neg"(%arg0)
// CHECK-NEXT: return %[[N]], %arg0
func.func @caller(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %0 = func.call @public_callee(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %0, %x : tensor<4xf32>, tensor<4xf32>
}
