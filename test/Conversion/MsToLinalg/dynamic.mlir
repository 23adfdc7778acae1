// Dynamic dimensions (`?`): each size a lowering needs is read from the function's arguments
// with tensor.dim, and the module records, per function, its results' sizes as expressions of
// the arguments' sizes and the equalities a call must satisfy (the runtime checks them and
// allocates the outputs: runtime/dynamic.py).
// RUN: ms-opt %s --convert-ms-to-linalg --split-input-file | FileCheck %s
// The output is valid IR.
// RUN: ms-opt %s --convert-ms-to-linalg --split-input-file | ms-opt --split-input-file > /dev/null
// The bufferized stage keeps the dynamic sizes in the entry's memrefs (destination passing).
// RUN: mscc %s --entry bias_add --emit bufferized | FileCheck %s --check-prefix=BUF

// CHECK:       ms.dynamic.bias_add = "{\22checks\22: [], \22results\22: {{\[\[\[\[}}1, [\22a0.0\22]]], 4]]}"
// CHECK-LABEL: func.func @bias_add(
// CHECK-SAME:    %[[X:.+]]: tensor<?x4xf32>, %[[B:.+]]: tensor<4xf32>) -> tensor<?x4xf32>
// CHECK:         %[[C0:.+]] = arith.constant 0 : index
// CHECK:         %[[N:.+]] = tensor.dim %[[X]], %[[C0]] : tensor<?x4xf32>
// CHECK:         %[[INIT:.+]] = tensor.empty(%[[N]]) : tensor<?x4xf32>
// CHECK:         linalg.generic
// CHECK-SAME:      ins(%[[X]], %[[B]] : tensor<?x4xf32>, tensor<4xf32>) outs(%[[INIT]] : tensor<?x4xf32>)
// BUF-LABEL:   func.func @bias_add(
// BUF-SAME:      memref<?x4xf32>, %{{.+}}: memref<4xf32>, %[[OUT:.+]]: memref<?x4xf32>)
// BUF:           linalg.generic
// BUF-SAME:        outs(%[[OUT]] : memref<?x4xf32>)
func.func @bias_add(%x: tensor<?x4xf32>, %b: tensor<4xf32>) -> tensor<?x4xf32> {
  %0 = "ms.add"(%x, %b) : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}

// -----

// A mean over a dynamic dimension divides by its run-time size (summed in float64: a count
// known only at run time gets no blocked sum).
// CHECK-LABEL: func.func @mean_rows(
// CHECK-SAME:    %[[X:.+]]: tensor<?x4xf32>) -> tensor<4xf32>
// CHECK:         %[[SUM:.+]] = linalg.generic {{.+}} iterator_types = ["reduction", "parallel"]
// CHECK-SAME:      ins(%[[X]] : tensor<?x4xf32>) outs(%{{.+}} : tensor<4xf64>)
// CHECK:         %[[N:.+]] = tensor.dim %[[X]], %{{.+}} : tensor<?x4xf32>
// CHECK:         %[[NI:.+]] = arith.index_cast %[[N]] : index to i64
// CHECK:         %[[NF:.+]] = arith.sitofp %[[NI]] : i64 to f64
// CHECK:         linalg.generic
// CHECK-SAME:      ins(%[[SUM]] : tensor<4xf64>)
// CHECK:           arith.divf %{{.+}}, %[[NF]]
func.func @mean_rows(%x: tensor<?x4xf32>) -> tensor<4xf32> {
  %0 = "ms.reduce_mean"(%x) {axis = array<i64: 0>, keep_dims = false} : (tensor<?x4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Two dynamic sizes an op combines must agree: a check the call must pass, located at the op.
// CHECK:       ms.dynamic.two_batches = "{\22checks\22: [{\22a\22: {{\[\[}}1, [\22a0.0\22]]], \22b\22: {{\[\[}}1, [\22a1.0\22]]], \22what\22: \22dimension 0 of broadcast operands\22, \22where\22: \22{{.*}}dynamic.mlir:[[@LINE+3]]:8\22}]
// CHECK-LABEL: func.func @two_batches(
func.func @two_batches(%x: tensor<?x4xf32>, %y: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %0 = "ms.mul"(%x, %y) : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}

// -----

// reshape to -1 of a dynamic batch: a view whose dynamic size is the batch's.
// CHECK-LABEL: func.func @flatten(
// CHECK-SAME:    %[[X:.+]]: tensor<?x4x4xf32>) -> tensor<?x16xf32>
// CHECK:         %[[FLAT:.+]] = tensor.collapse_shape %[[X]] {{\[\[}}0, 1, 2]] : tensor<?x4x4xf32> into tensor<?xf32>
// CHECK:         %[[N:.+]] = tensor.dim %[[X]], %{{.+}} : tensor<?x4x4xf32>
// CHECK:         tensor.expand_shape %[[FLAT]] {{\[\[}}0, 1]] output_shape [%[[N]], 16] : tensor<?xf32> into tensor<?x16xf32>
func.func @flatten(%x: tensor<?x4x4xf32>) -> tensor<?x16xf32> {
  %0 = "ms.reshape"(%x) {shape = array<i64: -1, 16>} : (tensor<?x4x4xf32>) -> tensor<?x16xf32>
  return %0 : tensor<?x16xf32>
}
