// Slices along a dynamic dimension (`?`): the bounds clamp as Python's do, computed at run
// time from tensor.dim (arith.minsi/maxsi/floordivsi: symdim's clamps and quotients), and
// two slices of the same size need no run-time check that they agree. +-(2**63-1) is an
// open end (Python's None).
// RUN: ms-opt %s --convert-ms-to-linalg --canonicalize --cse --split-input-file | FileCheck %s
// The output is valid IR.
// RUN: ms-opt %s --convert-ms-to-linalg --split-input-file | ms-opt --split-input-file > /dev/null

// x[1:] * x[:-1], summed over the rows: x[1:] starts at min(1, ?), both have max(? - 1, 0)
// rows (the same size, so no check), and the sum's result is static.
// CHECK:       ms.dynamic.shifted_rows = "{\22checks\22: [], \22results\22: {{\[\[}}4]]}"
// CHECK-LABEL: func.func @shifted_rows(
// CHECK-SAME:    %[[X:.+]]: tensor<?x4xf32>) -> tensor<4xf32>
// CHECK-DAG:     %[[M1:.+]] = arith.constant -1 : index
// CHECK-DAG:     %[[C1:.+]] = arith.constant 1 : index
// CHECK-DAG:     %[[C0:.+]] = arith.constant 0 : index
// CHECK:         %[[N:.+]] = tensor.dim %[[X]], %[[C0]] : tensor<?x4xf32>
// CHECK:         %[[START:.+]] = arith.minsi %[[N]], %[[C1]] : index
// CHECK:         %[[NM1:.+]] = arith.addi %[[N]], %[[M1]] : index
// CHECK:         %[[ROWS:.+]] = arith.maxsi %[[NM1]], %[[C0]] : index
// CHECK:         %[[TAIL:.+]] = tensor.extract_slice %[[X]][%[[START]], 0] [%[[ROWS]], 4] [1, 1] : tensor<?x4xf32> to tensor<?x4xf32>
// CHECK:         %[[HEAD:.+]] = tensor.extract_slice %[[X]][0, 0] [%[[ROWS]], 4] [1, 1] : tensor<?x4xf32> to tensor<?x4xf32>
// CHECK:         %[[INIT:.+]] = tensor.empty(%[[ROWS]]) : tensor<?x4xf32>
// CHECK:         linalg.generic
// CHECK-SAME:      ins(%[[TAIL]], %[[HEAD]] : tensor<?x4xf32>, tensor<?x4xf32>) outs(%[[INIT]] : tensor<?x4xf32>)
func.func @shifted_rows(%x: tensor<?x4xf32>) -> tensor<4xf32> {
  %a = "ms.strided_slice"(%x) {begin = array<i64: 1, 0>, end = array<i64: 9223372036854775807, 4>, strides = array<i64: 1, 1>, operandSegmentSizes = array<i32: 1, 0, 0, 0>} : (tensor<?x4xf32>) -> tensor<?x4xf32>
  %b = "ms.strided_slice"(%x) {begin = array<i64: 0, 0>, end = array<i64: -1, 4>, strides = array<i64: 1, 1>, operandSegmentSizes = array<i32: 1, 0, 0, 0>} : (tensor<?x4xf32>) -> tensor<?x4xf32>
  %0 = "ms.mul"(%a, %b) : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  %1 = "ms.reduce_sum"(%0) {axis = array<i64: 0>, keep_dims = false} : (tensor<?x4xf32>) -> tensor<4xf32>
  return %1 : tensor<4xf32>
}

// -----

// x[::-2] and its gradient: from row ? - 1 backwards, (? + 1) // 2 rows, scattered back into
// zeros whose sizes come from `like` (x): the result's size is x's, a0.0.
// CHECK:       ms.dynamic.every_other_row_kept = "{\22checks\22: [], \22results\22: {{\[\[\[\[}}1, [\22a0.0\22]]], 4]]}"
// CHECK-LABEL: func.func @every_other_row_kept(
// CHECK-SAME:    %[[X:.+]]: tensor<?x4xf32>) -> tensor<?x4xf32>
// CHECK-DAG:     %[[ZERO:.+]] = arith.constant 0.000000e+00 : f32
// CHECK-DAG:     %[[C2:.+]] = arith.constant 2 : index
// CHECK-DAG:     %[[C1:.+]] = arith.constant 1 : index
// CHECK-DAG:     %[[M1:.+]] = arith.constant -1 : index
// CHECK-DAG:     %[[C0:.+]] = arith.constant 0 : index
// CHECK:         %[[N:.+]] = tensor.dim %[[X]], %[[C0]] : tensor<?x4xf32>
// CHECK:         %[[LAST:.+]] = arith.addi %[[N]], %[[M1]] : index
// CHECK:         %[[NP1:.+]] = arith.addi %[[N]], %[[C1]] : index
// CHECK:         %[[ROWS:.+]] = arith.floordivsi %[[NP1]], %[[C2]] : index
// CHECK:         %[[SLICE:.+]] = tensor.extract_slice %[[X]][%[[LAST]], 0] [%[[ROWS]], 4] [-2, 1] : tensor<?x4xf32> to tensor<?x4xf32>
// CHECK:         %[[EMPTY:.+]] = tensor.empty(%[[N]]) : tensor<?x4xf32>
// CHECK:         %[[ZEROS:.+]] = linalg.fill ins(%[[ZERO]] : f32) outs(%[[EMPTY]] : tensor<?x4xf32>) -> tensor<?x4xf32>
// CHECK:         %[[BACK:.+]] = tensor.insert_slice %[[SLICE]] into %[[ZEROS]][%[[LAST]], 0] [%[[ROWS]], 4] [-2, 1] : tensor<?x4xf32> into tensor<?x4xf32>
// CHECK:         return %[[BACK]] : tensor<?x4xf32>
func.func @every_other_row_kept(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %s = "ms.strided_slice"(%x) {begin = array<i64: -1, 0>, end = array<i64: -9223372036854775807, 4>, strides = array<i64: -2, 1>, operandSegmentSizes = array<i32: 1, 0, 0, 0>} : (tensor<?x4xf32>) -> tensor<?x4xf32>
  %0 = "ms.strided_slice_grad"(%s, %x) {shape = array<i64: -1, 4>, begin = array<i64: -1, 0>, end = array<i64: -9223372036854775807, 4>, strides = array<i64: -2, 1>} : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}
