// gather reads params with tensor.extract at an index taken from `indices` (out-of-range
// indices give 0); one_hot compares each index with the position along the new axis.
// RUN: ms-opt %s --convert-ms-to-linalg --split-input-file | FileCheck %s
// The output is valid IR (re-parsed and verified, ms ops included).
// RUN: ms-opt %s --convert-ms-to-linalg --split-input-file | ms-opt --split-input-file > /dev/null

// out[i, j, k, l] = params[i, indices[j, k], l]: indices are read through (d1, d2).
// CHECK-DAG:   #[[$IDX:.+]] = affine_map<(d0, d1, d2, d3) -> (d1, d2)>
// CHECK-DAG:   #[[$OUT:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// CHECK-LABEL: func.func @gather_axis1(
// CHECK-SAME:    %[[P:.+]]: tensor<4x5x3xf32>, %[[I:.+]]: tensor<2x2xi32>) -> tensor<4x2x2x3xf32>
// CHECK:         %[[E:.+]] = tensor.empty() : tensor<4x2x2x3xf32>
// CHECK-NEXT:    %[[R:.+]] = linalg.generic {indexing_maps = [#[[$IDX]], #[[$OUT]]], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
// CHECK-SAME:      ins(%[[I]] : tensor<2x2xi32>) outs(%[[E]] : tensor<4x2x2x3xf32>)
// CHECK-NEXT:    ^bb0(%[[X:.+]]: i32, %{{.+}}: f32):
// CHECK-NEXT:      %[[ZERO:.+]] = arith.constant 0 : i32
// CHECK-NEXT:      %[[GE:.+]] = arith.cmpi sge, %[[X]], %[[ZERO]] : i32
// CHECK-NEXT:      %[[BOUND:.+]] = arith.constant 5 : i32
// CHECK-NEXT:      %[[LT:.+]] = arith.cmpi slt, %[[X]], %[[BOUND]] : i32
// CHECK-NEXT:      %[[OK:.+]] = arith.andi %[[GE]], %[[LT]] : i1
// CHECK-NEXT:      %[[ZERO2:.+]] = arith.constant 0 : i32
// CHECK-NEXT:      %[[SAFE:.+]] = arith.select %[[OK]], %[[X]], %[[ZERO2]] : i32
// CHECK-NEXT:      %[[D0:.+]] = linalg.index 0 : index
// CHECK-NEXT:      %[[AT:.+]] = arith.index_cast %[[SAFE]] : i32 to index
// CHECK-NEXT:      %[[D3:.+]] = linalg.index 3 : index
// CHECK-NEXT:      %[[V:.+]] = tensor.extract %[[P]][%[[D0]], %[[AT]], %[[D3]]] : tensor<4x5x3xf32>
// CHECK-NEXT:      %[[F:.+]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:      %[[Y:.+]] = arith.select %[[OK]], %[[V]], %[[F]] : f32
// CHECK-NEXT:      linalg.yield %[[Y]] : f32
// CHECK:         return %[[R]]
func.func @gather_axis1(%p: tensor<4x5x3xf32>, %i: tensor<2x2xi32>) -> tensor<4x2x2x3xf32> {
  %0 = "ms.gather"(%p, %i) {axis = 1 : i64} : (tensor<4x5x3xf32>, tensor<2x2xi32>) -> tensor<4x2x2x3xf32>
  return %0 : tensor<4x2x2x3xf32>
}

// -----

// bool params: extracted from i8 storage, selected as i1, stored back as i8.
// CHECK-DAG:   #[[$IDX:.+]] = affine_map<(d0, d1) -> (d0)>
// CHECK-LABEL: func.func @gather_bool_axis0(
// CHECK-SAME:    %[[P:.+]]: tensor<4x2xi8>, %[[I:.+]]: tensor<3xi64>) -> tensor<3x2xi8>
// CHECK:         linalg.generic {indexing_maps = [#[[$IDX]], #{{.+}}]
// CHECK-SAME:      ins(%[[I]] : tensor<3xi64>)
// CHECK:           %[[BOUND:.+]] = arith.constant 4 : i64
// CHECK:           %[[OK:.+]] = arith.andi
// CHECK:           %[[SAFE:.+]] = arith.select %[[OK]], %{{.+}}, %{{.+}} : i64
// CHECK-NEXT:      %[[AT:.+]] = arith.index_cast %[[SAFE]] : i64 to index
// CHECK-NEXT:      %[[D1:.+]] = linalg.index 1 : index
// CHECK-NEXT:      %[[V:.+]] = tensor.extract %[[P]][%[[AT]], %[[D1]]] : tensor<4x2xi8>
// CHECK-NEXT:      %[[B:.+]] = arith.trunci %[[V]] : i8 to i1
// CHECK-NEXT:      %[[F:.+]] = arith.constant false
// CHECK-NEXT:      %[[Y:.+]] = arith.select %[[OK]], %[[B]], %[[F]] : i1
// CHECK-NEXT:      %[[S:.+]] = arith.extui %[[Y]] : i1 to i8
// CHECK-NEXT:      linalg.yield %[[S]] : i8
func.func @gather_bool_axis0(%p: tensor<4x2xi1>, %i: tensor<3xi64>) -> tensor<3x2xi1> {
  %0 = "ms.gather"(%p, %i) {axis = 0 : i64} : (tensor<4x2xi1>, tensor<3xi64>) -> tensor<3x2xi1>
  return %0 : tensor<3x2xi1>
}

// -----

// The new axis last (axis = -1): indices are read through the other dims, on/off through ().
// CHECK-DAG:   #[[$IDX:.+]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-DAG:   #[[$SCALAR:.+]] = affine_map<(d0, d1, d2) -> ()>
// CHECK-DAG:   #[[$OUT:.+]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-LABEL: func.func @one_hot_last(
// CHECK-SAME:    %[[I:.+]]: tensor<2x3xi32>, %[[ON:.+]]: tensor<f32>, %[[OFF:.+]]: tensor<f32>) -> tensor<2x3x4xf32>
// CHECK:         %[[E:.+]] = tensor.empty() : tensor<2x3x4xf32>
// CHECK-NEXT:    %[[R:.+]] = linalg.generic {indexing_maps = [#[[$IDX]], #[[$SCALAR]], #[[$SCALAR]], #[[$OUT]]], iterator_types = ["parallel", "parallel", "parallel"]}
// CHECK-SAME:      ins(%[[I]], %[[ON]], %[[OFF]] : tensor<2x3xi32>, tensor<f32>, tensor<f32>) outs(%[[E]] : tensor<2x3x4xf32>)
// CHECK-NEXT:    ^bb0(%[[X:.+]]: i32, %[[VON:.+]]: f32, %[[VOFF:.+]]: f32, %{{.+}}: f32):
// CHECK-NEXT:      %[[POS:.+]] = linalg.index 2 : index
// CHECK-NEXT:      %[[POS64:.+]] = arith.index_cast %[[POS]] : index to i64
// CHECK-NEXT:      %[[X64:.+]] = arith.extsi %[[X]] : i32 to i64
// CHECK-NEXT:      %[[HIT:.+]] = arith.cmpi eq, %[[X64]], %[[POS64]] : i64
// CHECK-NEXT:      %[[Y:.+]] = arith.select %[[HIT]], %[[VON]], %[[VOFF]] : f32
// CHECK-NEXT:      linalg.yield %[[Y]] : f32
// CHECK:         return %[[R]]
func.func @one_hot_last(%i: tensor<2x3xi32>, %on: tensor<f32>, %off: tensor<f32>) -> tensor<2x3x4xf32> {
  %0 = "ms.one_hot"(%i, %on, %off) {axis = -1 : i64, depth = 4 : i64} : (tensor<2x3xi32>, tensor<f32>, tensor<f32>) -> tensor<2x3x4xf32>
  return %0 : tensor<2x3x4xf32>
}

// -----

// The new axis first; int64 indices need no extension; int32 values.
// CHECK-DAG:   #[[$IDX:.+]] = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @one_hot_first(
// CHECK:         linalg.generic {indexing_maps = [#[[$IDX]], #{{.+}}, #{{.+}}, #{{.+}}]
// CHECK-SAME:      outs(%{{.+}} : tensor<4x2xi32>)
// CHECK-NEXT:    ^bb0(%[[X:.+]]: i64, %[[VON:.+]]: i32, %[[VOFF:.+]]: i32, %{{.+}}: i32):
// CHECK-NEXT:      %[[POS:.+]] = linalg.index 0 : index
// CHECK-NEXT:      %[[POS64:.+]] = arith.index_cast %[[POS]] : index to i64
// CHECK-NEXT:      %[[HIT:.+]] = arith.cmpi eq, %[[X]], %[[POS64]] : i64
// CHECK-NEXT:      %[[Y:.+]] = arith.select %[[HIT]], %[[VON]], %[[VOFF]] : i32
func.func @one_hot_first(%i: tensor<2xi64>, %on: tensor<i32>, %off: tensor<i32>) -> tensor<4x2xi32> {
  %0 = "ms.one_hot"(%i, %on, %off) {axis = 0 : i64, depth = 4 : i64} : (tensor<2xi64>, tensor<i32>, tensor<i32>) -> tensor<4x2xi32>
  return %0 : tensor<4x2xi32>
}
