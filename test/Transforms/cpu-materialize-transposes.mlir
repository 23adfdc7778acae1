// RUN: ms-opt %s --ms-cpu-materialize-transposes --split-input-file | FileCheck %s

// x @ w^T (a Dense layer): w is transposed once into a copy, and the matmul reads it plainly.
// CHECK-LABEL: func.func @transpose_b(
// CHECK-SAME:    %[[X:.+]]: tensor<4x3xf32>, %[[W:.+]]: tensor<5x3xf32>, %[[C:.+]]: tensor<4x5xf32>)
// CHECK:         %[[E:.+]] = tensor.empty() : tensor<3x5xf32>
// CHECK-NEXT:    %[[T:.+]] = linalg.transpose ins(%[[W]] : tensor<5x3xf32>) outs(%[[E]] : tensor<3x5xf32>) permutation = [1, 0]
// CHECK-NEXT:    %[[R:.+]] = linalg.matmul ins(%[[X]], %[[T]] : tensor<4x3xf32>, tensor<3x5xf32>) outs(%[[C]] : tensor<4x5xf32>) -> tensor<4x5xf32>
// CHECK-NEXT:    return %[[R]]
#a = affine_map<(d0, d1, d2) -> (d0, d2)>
#bt = affine_map<(d0, d1, d2) -> (d1, d2)>
#c = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @transpose_b(%x: tensor<4x3xf32>, %w: tensor<5x3xf32>, %c: tensor<4x5xf32>) -> tensor<4x5xf32> {
  %0 = linalg.matmul indexing_maps = [#a, #bt, #c] ins(%x, %w : tensor<4x3xf32>, tensor<5x3xf32>) outs(%c : tensor<4x5xf32>) -> tensor<4x5xf32>
  return %0 : tensor<4x5xf32>
}

// -----

// Both operands transposed; an attribute of the op (here the fused region tag) is kept.
// CHECK-LABEL: func.func @transpose_both(
// CHECK-COUNT-2: linalg.transpose
// CHECK:         linalg.matmul {ms.region = {id = 0 : i64, kind = "matmul"}} ins
func.func @transpose_both(%a: tensor<3x4xf32>, %b: tensor<5x3xf32>, %c: tensor<4x5xf32>) -> tensor<4x5xf32> {
  %0 = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d2, d0)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%a, %b : tensor<3x4xf32>, tensor<5x3xf32>) outs(%c : tensor<4x5xf32>) {ms.region = {id = 0 : i64, kind = "matmul"}} -> tensor<4x5xf32>
  return %0 : tensor<4x5xf32>
}

// -----

// The plain form is left alone.
// CHECK-LABEL: func.func @plain(
// CHECK-NOT:     linalg.transpose
// CHECK:         linalg.matmul ins
func.func @plain(%a: tensor<4x3xf32>, %b: tensor<3x5xf32>, %c: tensor<4x5xf32>) -> tensor<4x5xf32> {
  %0 = linalg.matmul ins(%a, %b : tensor<4x3xf32>, tensor<3x5xf32>) outs(%c : tensor<4x5xf32>) -> tensor<4x5xf32>
  return %0 : tensor<4x5xf32>
}

// -----

// On buffers (IR read at a later stage) a transposed read stays: the pass makes tensor
// copies (it cast a memref to a tensor type: an internal compiler error of `mscc`).
// CHECK-LABEL: func.func @on_buffers(
// CHECK-NOT:     linalg.transpose
// CHECK:         linalg.matmul indexing_maps = [#{{.+}}, #{{.+}}, #{{.+}}] ins(%{{.+}}, %{{.+}} : memref<3x5xf32>, memref<3x7xf32>)
#at = affine_map<(m, n, k) -> (k, m)>
#b = affine_map<(m, n, k) -> (k, n)>
#mc = affine_map<(m, n, k) -> (m, n)>
func.func @on_buffers(%a: memref<3x5xf32>, %b: memref<3x7xf32>, %c: memref<5x7xf32>) {
  linalg.matmul indexing_maps = [#at, #b, #mc]
      ins(%a, %b : memref<3x5xf32>, memref<3x7xf32>) outs(%c : memref<5x7xf32>)
  return
}
