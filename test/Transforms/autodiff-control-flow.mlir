// ms-autodiff through loops and conditionals (dialects/ops/control.py): a loop's forward
// stacks the carries its backward reads, the backward is a reverse scf.for that reads them
// back, recomputes the body and accumulates the gradient of what the body reads from above;
// a conditional's backward is an scf.if on the same predicate.
// RUN: ms-opt %s --ms-autodiff --ms-canonicalize --split-input-file | FileCheck %s

// CHECK-LABEL: func.func private @loop_grad
// CHECK-SAME: (%[[X:.+]]: tensor<3xf32>, %[[W:.+]]: tensor<3xf32>)
// CHECK: %[[ZERO:.+]] = "ms.constant"() {value = dense<0.000000e+00> : tensor<f32>}
// CHECK-NEXT: %[[INIT:.+]] = "ms.broadcast_to"(%[[ZERO]]) {shape = array<i64: 4, 3>}
// CHECK-NEXT: %[[FWD:.+]]:2 = scf.for %[[IV:.+]] = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%[[A:.+]] = %[[X]], %[[STACK:.+]] = %[[INIT]]) -> (tensor<3xf32>, tensor<4x3xf32>)
// CHECK: %[[POS:.+]] = tensor.from_elements
// CHECK-NEXT: %[[PUT:.+]] = "ms.dynamic_update_index"(%[[STACK]], %[[A]], %[[POS]])
// CHECK-NEXT: scf.yield %{{.+}}, %[[PUT]]
// CHECK-NEXT: } {ms.api = "ForiLoop", ms.stacks = array<i64: 1, -1>}
// CHECK: %[[SEED:.+]] = "ms.constant"() {value = dense<1.000000e+00> : tensor<3xf32>}
// CHECK-NEXT: %[[ACC:.+]] = "ms.zeros_like"(%[[W]])
// CHECK: %[[BWD:.+]]:2 = scf.for %[[J:.+]] = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%[[DA:.+]] = %[[SEED]], %[[DW:.+]] = %[[ACC]])
// CHECK: %[[K:.+]] = arith.subi %{{.+}}, %[[J]] : index
// CHECK: %[[AK:.+]] = "ms.dynamic_index"(%[[FWD]]#1, %{{.+}}) : (tensor<4x3xf32>, tensor<i64>) -> tensor<3xf32>
// CHECK-NEXT: %[[Z:.+]] = "ms.mul"(%[[AK]], %[[W]])
// CHECK-NEXT: %[[COS:.+]] = "ms.cos"(%[[Z]])
// CHECK-NEXT: %[[DZ:.+]] = "ms.mul"(%[[DA]], %[[COS]])
// CHECK-NEXT: %[[DAK:.+]] = "ms.mul"(%[[DZ]], %[[W]])
// CHECK-NEXT: %[[DWK:.+]] = "ms.mul"(%[[DZ]], %[[AK]])
// CHECK-NEXT: %[[DW1:.+]] = "ms.add"(%[[DW]], %[[DWK]])
// CHECK-NEXT: scf.yield %[[DAK]], %[[DW1]]
// CHECK: return %[[BWD]]#0, %[[BWD]]#1
func.func private @loop(%x: tensor<3xf32>, %w: tensor<3xf32>) -> tensor<3xf32> {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %iv = %c0 to %c4 step %c1 iter_args(%a = %x) -> (tensor<3xf32>) {
    %0 = "ms.mul"(%a, %w) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    %1 = "ms.sin"(%0) : (tensor<3xf32>) -> tensor<3xf32>
    scf.yield %1 : tensor<3xf32>
  } {ms.api = "ForiLoop"}
  return %r : tensor<3xf32>
}
func.func @grad_loop(%x: tensor<3xf32>, %w: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>) {
  %g = "ms.grad"() {callee = @loop, grad_position = array<i64: 0, 1>, get_by_list = false, sens_param = false, with_value = false} : () -> ((tensor<3xf32>, tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>))
  %0:2 = func.call_indirect %g(%x, %w) : (tensor<3xf32>, tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>)
  return %0#0, %0#1 : tensor<3xf32>, tensor<3xf32>
}

// -----

// The branch that returns its operand passes the cotangent through.
// CHECK-LABEL: func.func private @branch_grad
// CHECK: %[[P:.+]] = tensor.extract
// CHECK: %[[SEED:.+]] = "ms.constant"() {value = dense<1.000000e+00> : tensor<3xf32>}
// CHECK-NEXT: %[[G:.+]] = scf.if %[[P]] -> (tensor<3xf32>) {
// CHECK-NEXT: %[[E:.+]] = "ms.exp"(%arg1)
// CHECK-NEXT: %[[D:.+]] = "ms.mul"(%[[SEED]], %[[E]])
// CHECK-NEXT: scf.yield %[[D]]
// CHECK-NEXT: } else {
// CHECK-NEXT: scf.yield %[[SEED]]
// CHECK-NEXT: } {ms.api = "cond"}
// CHECK-NEXT: return %[[G]]
func.func private @branch(%p: tensor<i1>, %x: tensor<3xf32>) -> tensor<3xf32> {
  %c = tensor.extract %p[] : tensor<i1>
  %r = scf.if %c -> (tensor<3xf32>) {
    %0 = "ms.exp"(%x) : (tensor<3xf32>) -> tensor<3xf32>
    scf.yield %0 : tensor<3xf32>
  } else {
    scf.yield %x : tensor<3xf32>
  } {ms.api = "cond"}
  return %r : tensor<3xf32>
}
func.func @grad_branch(%p: tensor<i1>, %x: tensor<3xf32>) -> tensor<3xf32> {
  %g = "ms.grad"() {callee = @branch, grad_position = array<i64: 1>, get_by_list = false, sens_param = false, with_value = false} : () -> ((tensor<i1>, tensor<3xf32>) -> tensor<3xf32>)
  %0 = func.call_indirect %g(%p, %x) : (tensor<i1>, tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

// Scan's ys stack is only written: it needs no stack of its own; xs is read at the index
// and its gradient is accumulated one row at a time.
// CHECK-LABEL: func.func private @scan_grad
// CHECK: scf.for
// CHECK: } {ms.api = "Scan", ms.stacks = array<i64: 2, -1, -1>}
// CHECK: scf.for
// CHECK: %[[SUM:.+]] = "ms.add"(%[[ROW:[0-9]+]], %{{.+}})
// CHECK-NEXT: %{{.+}} = "ms.dynamic_update_index"(%[[ACC:arg[0-9]+]], %[[SUM]], %{{.+}})
// CHECK: return %[[G:.+]]#2, %[[G]]#0
func.func private @scan(%xs: tensor<5x3xf32>, %h0: tensor<3xf32>) -> (tensor<3xf32>, tensor<5x3xf32>) {
  %c0 = arith.constant 0 : index
  %c5 = arith.constant 5 : index
  %c1 = arith.constant 1 : index
  %z = "ms.constant"() {value = dense<0.0> : tensor<f32>} : () -> tensor<f32>
  %ys0 = "ms.broadcast_to"(%z) {shape = array<i64: 5, 3>} : (tensor<f32>) -> tensor<5x3xf32>
  %r:2 = scf.for %iv = %c0 to %c5 step %c1 iter_args(%h = %h0, %ys = %ys0) -> (tensor<3xf32>, tensor<5x3xf32>) {
    %i = arith.index_cast %iv : index to i64
    %t = tensor.from_elements %i : tensor<i64>
    %x = "ms.dynamic_index"(%xs, %t) : (tensor<5x3xf32>, tensor<i64>) -> tensor<3xf32>
    %0 = "ms.mul"(%h, %x) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    %1 = "ms.tanh"(%0) : (tensor<3xf32>) -> tensor<3xf32>
    %ys1 = "ms.dynamic_update_index"(%ys, %1, %t) : (tensor<5x3xf32>, tensor<3xf32>, tensor<i64>) -> tensor<5x3xf32>
    scf.yield %1, %ys1 : tensor<3xf32>, tensor<5x3xf32>
  } {ms.api = "Scan"}
  return %r#0, %r#1 : tensor<3xf32>, tensor<5x3xf32>
}
func.func @grad_scan(%xs: tensor<5x3xf32>, %h0: tensor<3xf32>) -> (tensor<5x3xf32>, tensor<3xf32>) {
  %g = "ms.grad"() {callee = @scan, grad_position = array<i64: 0, 1>, get_by_list = false, sens_param = false, with_value = false} : () -> ((tensor<5x3xf32>, tensor<3xf32>) -> (tensor<5x3xf32>, tensor<3xf32>))
  %0:2 = func.call_indirect %g(%xs, %h0) : (tensor<5x3xf32>, tensor<3xf32>) -> (tensor<5x3xf32>, tensor<3xf32>)
  return %0#0, %0#1 : tensor<5x3xf32>, tensor<3xf32>
}
