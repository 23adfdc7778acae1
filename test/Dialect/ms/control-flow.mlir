// Loops and conditionals at the ms stage: scf.for / scf.while / scf.if holding ms ops
// (dialects/ops/control.py says why scf), with the ms.api attribute naming the API, and the
// two run-time row ops. They parse, verify (ms-verify runs first) and print back.
// RUN: ms-opt %s --split-input-file | FileCheck %s
// RUN: ms-opt %s --split-input-file --ms-verify --ms-const-input-to-attr --ms-implicit-cast | FileCheck %s --check-prefix=FRONT

// CHECK-LABEL: func.func @fori
// CHECK: %[[R:.+]]:2 = scf.for %[[IV:.+]] = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%[[A:.+]] = %{{.+}}, %[[N:.+]] = %{{.+}}) -> (tensor<4xf32>, tensor<i64>)
// CHECK-NEXT: %[[I:.+]] = arith.index_cast %[[IV]] : index to i64
// CHECK-NEXT: %[[T:.+]] = tensor.from_elements %[[I]] : tensor<i64>
// CHECK: "ms.mul"(%[[A]], %{{.+}})
// CHECK: scf.yield
// CHECK-NEXT: } {ms.api = "ForiLoop"}
// The scalar 2.0 of a float32 carry is re-typed inside the body; the reshape's shape
// operand becomes an attribute there.
// FRONT-LABEL: func.func @fori
// FRONT: scf.for
// FRONT: "ms.constant"() {is_scalar, value = dense<2.000000e+00> : tensor<f32>}
// FRONT: "ms.reshape"(%{{.+}}) {shape = array<i64: 4>}
// FRONT: } {ms.api = "ForiLoop"}
func.func @fori(%x: tensor<4xf32>, %n: tensor<i64>) -> (tensor<4xf32>, tensor<i64>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %u = tensor.extract %n[] : tensor<i64>
  %ub = arith.index_cast %u : i64 to index
  %zero = "ms.constant"() {value = dense<0> : tensor<i64>} : () -> tensor<i64>
  %r:2 = scf.for %iv = %c0 to %ub step %c1 iter_args(%a = %x, %k = %zero) -> (tensor<4xf32>, tensor<i64>) {
    %i = arith.index_cast %iv : index to i64
    %t = tensor.from_elements %i : tensor<i64>
    %two = "ms.constant"() {is_scalar, value = dense<2.0> : tensor<f64>} : () -> tensor<f64>
    %0 = "ms.mul"(%a, %two) : (tensor<4xf32>, tensor<f64>) -> tensor<4xf32>
    %s = "ms.constant"() {value = dense<4> : tensor<1xi64>} : () -> tensor<1xi64>
    %1 = "ms.reshape"(%0, %s) : (tensor<4xf32>, tensor<1xi64>) -> tensor<4xf32>
    %k1 = "ms.add"(%k, %t) : (tensor<i64>, tensor<i64>) -> tensor<i64>
    scf.yield %1, %k1 : tensor<4xf32>, tensor<i64>
  } {ms.api = "ForiLoop"}
  return %r#0, %r#1 : tensor<4xf32>, tensor<i64>
}

// -----

// CHECK-LABEL: func.func @while
// CHECK: scf.while (%[[A:.+]] = %{{.+}}) : (tensor<3xf32>) -> tensor<3xf32> {
// CHECK: %[[C:.+]] = "ms.less"
// CHECK: %[[P:.+]] = tensor.extract %[[C]][] : tensor<i1>
// CHECK: scf.condition(%[[P]]) %[[A]] : tensor<3xf32>
// CHECK: } do {
// CHECK: "ms.mul"
// CHECK: scf.yield
// CHECK: } attributes {ms.api = "WhileLoop"}
func.func @while(%x: tensor<3xf32>, %limit: tensor<f32>) -> tensor<3xf32> {
  %r = scf.while (%a = %x) : (tensor<3xf32>) -> tensor<3xf32> {
    %s = "ms.reduce_sum"(%a) {axis = array<i64>, keep_dims = false} : (tensor<3xf32>) -> tensor<f32>
    %c = "ms.less"(%s, %limit) : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %p = tensor.extract %c[] : tensor<i1>
    scf.condition(%p) %a : tensor<3xf32>
  } do {
  ^bb0(%a: tensor<3xf32>):
    %0 = "ms.mul"(%a, %a) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    scf.yield %0 : tensor<3xf32>
  } attributes {ms.api = "WhileLoop"}
  return %r : tensor<3xf32>
}

// -----

// The branches read %x from above.
// CHECK-LABEL: func.func @cond
// CHECK: %[[P:.+]] = tensor.extract %{{.+}}[] : tensor<i1>
// CHECK: scf.if %[[P]] -> (tensor<3xf32>) {
// CHECK: "ms.exp"(%{{.+}})
// CHECK: } else {
// CHECK: "ms.neg"(%{{.+}})
// CHECK: } {ms.api = "cond"}
func.func @cond(%pred: tensor<i1>, %x: tensor<3xf32>) -> tensor<3xf32> {
  %p = tensor.extract %pred[] : tensor<i1>
  %r = scf.if %p -> (tensor<3xf32>) {
    %0 = "ms.exp"(%x) : (tensor<3xf32>) -> tensor<3xf32>
    scf.yield %0 : tensor<3xf32>
  } else {
    %0 = "ms.neg"(%x) : (tensor<3xf32>) -> tensor<3xf32>
    scf.yield %0 : tensor<3xf32>
  } {ms.api = "cond"}
  return %r : tensor<3xf32>
}

// -----

// CHECK-LABEL: func.func @rows
// CHECK: %[[ROW:.+]] = "ms.dynamic_index"(%{{.+}}, %{{.+}}) : (tensor<5x3xf32>, tensor<i32>) -> tensor<3xf32>
// CHECK: "ms.dynamic_update_index"(%{{.+}}, %[[ROW]], %{{.+}}) : (tensor<5x3xf32>, tensor<3xf32>, tensor<i32>) -> tensor<5x3xf32>
func.func @rows(%xs: tensor<5x3xf32>, %i: tensor<i32>, %j: tensor<i32>) -> tensor<5x3xf32> {
  %row = "ms.dynamic_index"(%xs, %i) : (tensor<5x3xf32>, tensor<i32>) -> tensor<3xf32>
  %0 = "ms.dynamic_update_index"(%xs, %row, %j) : (tensor<5x3xf32>, tensor<3xf32>, tensor<i32>) -> tensor<5x3xf32>
  return %0 : tensor<5x3xf32>
}
