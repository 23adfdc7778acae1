// convert-ms-to-linalg in the regions of loops and conditionals: the ms ops lower in place,
// the scf ops stay and their carries take the storage types (bool as i8), a predicate read
// from a stored bool is read as a byte and truncated; the run-time row ops become slices at
// a clamped offset.
// RUN: ms-opt %s --convert-ms-to-linalg --split-input-file | FileCheck %s

// CHECK-LABEL: func.func @bool_carry
// CHECK-SAME: (%{{.+}}: tensor<4xf32>, %[[FLAG:.+]]: tensor<i8>) -> (tensor<4xf32>, tensor<i8>)
// CHECK: %[[R:.+]]:2 = scf.for %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%[[A:.+]] = %{{.+}}, %[[F:.+]] = %[[FLAG]]) -> (tensor<4xf32>, tensor<i8>)
// CHECK-NEXT: %[[BYTE:.+]] = tensor.extract %[[F]][] : tensor<i8>
// CHECK-NEXT: %[[P:.+]] = arith.trunci %[[BYTE]] : i8 to i1
// CHECK-NEXT: %[[B:.+]] = scf.if %[[P]] -> (tensor<4xf32>) {
// CHECK: math.exp
// CHECK: } else {
// CHECK-NEXT: scf.yield %[[A]] : tensor<4xf32>
// CHECK: %[[NF:.+]] = linalg.generic {{.*}} ins(%[[F]] : tensor<i8>)
// CHECK: scf.yield %[[B]], %[[NF]] : tensor<4xf32>, tensor<i8>
// CHECK: return %[[R]]#0, %[[R]]#1 : tensor<4xf32>, tensor<i8>
func.func @bool_carry(%x: tensor<4xf32>, %flag: tensor<i1>) -> (tensor<4xf32>, tensor<i1>) {
  %c0 = arith.constant 0 : index
  %c3 = arith.constant 3 : index
  %c1 = arith.constant 1 : index
  %r:2 = scf.for %iv = %c0 to %c3 step %c1 iter_args(%a = %x, %f = %flag) -> (tensor<4xf32>, tensor<i1>) {
    %p = tensor.extract %f[] : tensor<i1>
    %b = scf.if %p -> (tensor<4xf32>) {
      %0 = "ms.exp"(%a) : (tensor<4xf32>) -> tensor<4xf32>
      scf.yield %0 : tensor<4xf32>
    } else {
      scf.yield %a : tensor<4xf32>
    }
    %nf = "ms.logical_not"(%f) : (tensor<i1>) -> tensor<i1>
    scf.yield %b, %nf : tensor<4xf32>, tensor<i1>
  }
  return %r#0, %r#1 : tensor<4xf32>, tensor<i1>
}

// -----

// CHECK-LABEL: func.func @rows
// CHECK: %[[I:.+]] = tensor.extract %arg1[] : tensor<i32>
// CHECK-NEXT: %[[IDX:.+]] = arith.index_cast %[[I]] : i32 to index
// CHECK-DAG: %[[ZERO:.+]] = arith.constant 0 : index
// CHECK-DAG: %[[LAST:.+]] = arith.constant 4 : index
// CHECK: %[[LO:.+]] = arith.maxsi %[[IDX]], %[[ZERO]] : index
// CHECK-NEXT: %[[OFF:.+]] = arith.minsi %[[LO]], %[[LAST]] : index
// CHECK-NEXT: %[[ROW:.+]] = tensor.extract_slice %arg0[%[[OFF]], 0] [1, 3] [1, 1] : tensor<5x3xf32> to tensor<3xf32>
// CHECK: %[[OFF2:.+]] = arith.minsi
// CHECK-NEXT: tensor.insert_slice %[[ROW]] into %arg0[%[[OFF2]], 0] [1, 3] [1, 1] : tensor<3xf32> into tensor<5x3xf32>
func.func @rows(%xs: tensor<5x3xf32>, %i: tensor<i32>) -> (tensor<3xf32>, tensor<5x3xf32>) {
  %row = "ms.dynamic_index"(%xs, %i) : (tensor<5x3xf32>, tensor<i32>) -> tensor<3xf32>
  %0 = "ms.dynamic_update_index"(%xs, %row, %i) : (tensor<5x3xf32>, tensor<3xf32>, tensor<i32>) -> tensor<5x3xf32>
  return %row, %0 : tensor<3xf32>, tensor<5x3xf32>
}

// -----

// A while loop's condition and body lower in their regions.
// CHECK-LABEL: func.func @while
// CHECK: scf.while (%[[A:.+]] = %arg0) : (tensor<3xf32>) -> tensor<3xf32> {
// CHECK: linalg.generic
// CHECK: %[[C:.+]] = tensor.extract %{{.+}}[] : tensor<i8>
// CHECK-NEXT: %[[P:.+]] = arith.trunci %[[C]] : i8 to i1
// CHECK-NEXT: scf.condition(%[[P]]) %[[A]] : tensor<3xf32>
// CHECK: } do {
// CHECK: linalg.generic
// CHECK: scf.yield
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
