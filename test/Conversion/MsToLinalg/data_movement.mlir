// Ops that move data: reshape, expand_dims and squeeze become tensor views (collapse to 1-D,
// expand to the target), transpose is linalg.transpose, broadcast_to and tile are copies
// through linalg.generic indexing maps, concat and the slices are tensor.insert/extract_slice.
// RUN: ms-opt %s --convert-ms-to-linalg --split-input-file | FileCheck %s
// The output is valid IR (re-parsed and verified, ms ops included).
// RUN: ms-opt %s --convert-ms-to-linalg --split-input-file | ms-opt --split-input-file > /dev/null

// CHECK-LABEL: func.func @reshape(
// CHECK-SAME:    %[[A:.+]]: tensor<2x3x4xf32>) -> tensor<4x6xf32>
// CHECK-NEXT:    %[[C:.+]] = tensor.collapse_shape %[[A]] {{\[}}[0, 1, 2]] : tensor<2x3x4xf32> into tensor<24xf32>
// CHECK-NEXT:    %[[E:.+]] = tensor.expand_shape %[[C]] {{\[}}[0, 1]] output_shape [4, 6] : tensor<24xf32> into tensor<4x6xf32>
// CHECK-NEXT:    return %[[E]] : tensor<4x6xf32>
func.func @reshape(%a: tensor<2x3x4xf32>) -> tensor<4x6xf32> {
  %0 = "ms.reshape"(%a) {shape = array<i64: 4, 6>} : (tensor<2x3x4xf32>) -> tensor<4x6xf32>
  return %0 : tensor<4x6xf32>
}

// -----

// From 1-D only the expand is needed; a reshape to the same shape is the input itself.
// CHECK-LABEL: func.func @reshape_from_1d_and_identity(
// CHECK-SAME:    %[[A:.+]]: tensor<6xi64>) -> tensor<2x3xi64>
// CHECK-NEXT:    %[[E:.+]] = tensor.expand_shape %[[A]] {{\[}}[0, 1]] output_shape [2, 3] : tensor<6xi64> into tensor<2x3xi64>
// CHECK-NEXT:    return %[[E]] : tensor<2x3xi64>
func.func @reshape_from_1d_and_identity(%a: tensor<6xi64>) -> tensor<2x3xi64> {
  %0 = "ms.reshape"(%a) {shape = array<i64: 2, 3>} : (tensor<6xi64>) -> tensor<2x3xi64>
  %1 = "ms.reshape"(%0) {shape = array<i64: 2, 3>} : (tensor<2x3xi64>) -> tensor<2x3xi64>
  return %1 : tensor<2x3xi64>
}

// -----

// To and from rank 0: an empty reassociation.
// CHECK-LABEL: func.func @reshape_rank0(
// CHECK-SAME:    %[[A:.+]]: tensor<1x1xf32>, %[[B:.+]]: tensor<f32>) -> (tensor<f32>, tensor<1x1xf32>)
// CHECK-NEXT:    %[[C:.+]] = tensor.collapse_shape %[[A]] [] : tensor<1x1xf32> into tensor<f32>
// CHECK-NEXT:    %[[E:.+]] = tensor.expand_shape %[[B]] [] output_shape [1, 1] : tensor<f32> into tensor<1x1xf32>
// CHECK-NEXT:    return %[[C]], %[[E]]
func.func @reshape_rank0(%a: tensor<1x1xf32>, %b: tensor<f32>) -> (tensor<f32>, tensor<1x1xf32>) {
  %0 = "ms.reshape"(%a) {shape = array<i64>} : (tensor<1x1xf32>) -> tensor<f32>
  %1 = "ms.reshape"(%b) {shape = array<i64: 1, 1>} : (tensor<f32>) -> tensor<1x1xf32>
  return %0, %1 : tensor<f32>, tensor<1x1xf32>
}

// -----

// CHECK-LABEL: func.func @expand_dims_squeeze(
// CHECK-SAME:    %[[A:.+]]: tensor<2x3xi8>, %[[B:.+]]: tensor<1x3x1xi8>) -> (tensor<2x1x3xi8>, tensor<3xi8>)
// CHECK-NEXT:    %[[C:.+]] = tensor.collapse_shape %[[A]] {{\[}}[0, 1]] : tensor<2x3xi8> into tensor<6xi8>
// CHECK-NEXT:    %[[E:.+]] = tensor.expand_shape %[[C]] {{\[}}[0, 1, 2]] output_shape [2, 1, 3] : tensor<6xi8> into tensor<2x1x3xi8>
// CHECK-NEXT:    %[[S:.+]] = tensor.collapse_shape %[[B]] {{\[}}[0, 1, 2]] : tensor<1x3x1xi8> into tensor<3xi8>
// CHECK-NEXT:    return %[[E]], %[[S]]
func.func @expand_dims_squeeze(%a: tensor<2x3xui8>, %b: tensor<1x3x1xui8>) -> (tensor<2x1x3xui8>, tensor<3xui8>) {
  %0 = "ms.expand_dims"(%a) {axis = 1 : i64} : (tensor<2x3xui8>) -> tensor<2x1x3xui8>
  %1 = "ms.squeeze"(%b) {axis = array<i64>} : (tensor<1x3x1xui8>) -> tensor<3xui8>
  return %0, %1 : tensor<2x1x3xui8>, tensor<3xui8>
}

// -----

// bool data moves in its i8 storage.
// CHECK-LABEL: func.func @transpose(
// CHECK-SAME:    %[[A:.+]]: tensor<2x3x4xi8>) -> tensor<4x2x3xi8>
// CHECK-NEXT:    %[[E:.+]] = tensor.empty() : tensor<4x2x3xi8>
// CHECK-NEXT:    %[[T:.+]] = linalg.transpose ins(%[[A]] : tensor<2x3x4xi8>) outs(%[[E]] : tensor<4x2x3xi8>) permutation = [2, 0, 1]
// CHECK-NEXT:    return %[[T]] : tensor<4x2x3xi8>
func.func @transpose(%a: tensor<2x3x4xi1>) -> tensor<4x2x3xi1> {
  %0 = "ms.transpose"(%a) {perm = array<i64: 2, 0, 1>} : (tensor<2x3x4xi1>) -> tensor<4x2x3xi1>
  return %0 : tensor<4x2x3xi1>
}

// -----

// A negative perm entry counts from the end.
// CHECK-LABEL: func.func @transpose_negative_perm(
// CHECK:         linalg.transpose ins(%{{.+}} : tensor<2x3xf32>) outs(%{{.+}} : tensor<3x2xf32>) permutation = [1, 0]
func.func @transpose_negative_perm(%a: tensor<2x3xf32>) -> tensor<3x2xf32> {
  %0 = "ms.transpose"(%a) {perm = array<i64: -1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// -----

// CHECK-DAG:   #[[$IN:.+]] = affine_map<(d0, d1, d2) -> (d1, 0)>
// CHECK-DAG:   #[[$OUT:.+]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-LABEL: func.func @broadcast_to(
// CHECK-SAME:    %[[A:.+]]: tensor<3x1xf32>) -> tensor<2x3x4xf32>
// CHECK:         %[[E:.+]] = tensor.empty() : tensor<2x3x4xf32>
// CHECK-NEXT:    %[[R:.+]] = linalg.generic {indexing_maps = [#[[$IN]], #[[$OUT]]], iterator_types = ["parallel", "parallel", "parallel"]}
// CHECK-SAME:      ins(%[[A]] : tensor<3x1xf32>) outs(%[[E]] : tensor<2x3x4xf32>)
// CHECK-NEXT:    ^bb0(%[[X:.+]]: f32, %{{.+}}: f32):
// CHECK-NEXT:      linalg.yield %[[X]] : f32
// CHECK:         return %[[R]]
func.func @broadcast_to(%a: tensor<3x1xf32>) -> tensor<2x3x4xf32> {
  %0 = "ms.broadcast_to"(%a) {shape = array<i64: 2, 3, 4>} : (tensor<3x1xf32>) -> tensor<2x3x4xf32>
  return %0 : tensor<2x3x4xf32>
}

// -----

// CHECK-LABEL: func.func @concat(
// CHECK-SAME:    %[[A:.+]]: tensor<2x3xf32>, %[[B:.+]]: tensor<2x5xf32>) -> tensor<2x8xf32>
// CHECK-NEXT:    %[[E:.+]] = tensor.empty() : tensor<2x8xf32>
// CHECK-NEXT:    %[[I:.+]] = tensor.insert_slice %[[A]] into %[[E]][0, 0] [2, 3] [1, 1] : tensor<2x3xf32> into tensor<2x8xf32>
// CHECK-NEXT:    %[[J:.+]] = tensor.insert_slice %[[B]] into %[[I]][0, 3] [2, 5] [1, 1] : tensor<2x5xf32> into tensor<2x8xf32>
// CHECK-NEXT:    return %[[J]] : tensor<2x8xf32>
func.func @concat(%a: tensor<2x3xf32>, %b: tensor<2x5xf32>) -> tensor<2x8xf32> {
  %0 = "ms.concat"(%a, %b) {axis = -1 : i64} : (tensor<2x3xf32>, tensor<2x5xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

// A chain of binary concats (the N-ary form) inserts link by link.
// CHECK-LABEL: func.func @concat_chain(
// CHECK-SAME:    %[[A:.+]]: tensor<1x4xi32>, %[[B:.+]]: tensor<2x4xi32>, %[[C:.+]]: tensor<3x4xi32>) -> tensor<6x4xi32>
// CHECK:         %[[I:.+]] = tensor.insert_slice %[[A]] into %{{.+}}[0, 0] [1, 4] [1, 1] : tensor<1x4xi32> into tensor<3x4xi32>
// CHECK-NEXT:    %[[AB:.+]] = tensor.insert_slice %[[B]] into %[[I]][1, 0] [2, 4] [1, 1] : tensor<2x4xi32> into tensor<3x4xi32>
// CHECK:         %[[K:.+]] = tensor.insert_slice %[[AB]] into %{{.+}}[0, 0] [3, 4] [1, 1] : tensor<3x4xi32> into tensor<6x4xi32>
// CHECK-NEXT:    %[[ABC:.+]] = tensor.insert_slice %[[C]] into %[[K]][3, 0] [3, 4] [1, 1] : tensor<3x4xi32> into tensor<6x4xi32>
// CHECK-NEXT:    return %[[ABC]]
func.func @concat_chain(%a: tensor<1x4xi32>, %b: tensor<2x4xi32>, %c: tensor<3x4xi32>) -> tensor<6x4xi32> {
  %0 = "ms.concat"(%a, %b) {axis = 0 : i64} : (tensor<1x4xi32>, tensor<2x4xi32>) -> tensor<3x4xi32>
  %1 = "ms.concat"(%0, %c) {axis = 0 : i64} : (tensor<3x4xi32>, tensor<3x4xi32>) -> tensor<6x4xi32>
  return %1 : tensor<6x4xi32>
}

// -----

// tile: broadcast to (m0, d0, m1, d1) and collapse each pair.
// CHECK-DAG:   #[[$IN:.+]] = affine_map<(d0, d1, d2, d3) -> (d1, d3)>
// CHECK-DAG:   #[[$OUT:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// CHECK-LABEL: func.func @tile(
// CHECK-SAME:    %[[A:.+]]: tensor<2x3xf32>) -> tensor<4x9xf32>
// CHECK:         %[[E:.+]] = tensor.empty() : tensor<2x2x3x3xf32>
// CHECK-NEXT:    %[[P:.+]] = linalg.generic {indexing_maps = [#[[$IN]], #[[$OUT]]], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
// CHECK-SAME:      ins(%[[A]] : tensor<2x3xf32>) outs(%[[E]] : tensor<2x2x3x3xf32>)
// CHECK-NEXT:    ^bb0(%[[X:.+]]: f32, %{{.+}}: f32):
// CHECK-NEXT:      linalg.yield %[[X]] : f32
// CHECK:         %[[R:.+]] = tensor.collapse_shape %[[P]] {{\[}}[0, 1], [2, 3]] : tensor<2x2x3x3xf32> into tensor<4x9xf32>
// CHECK-NEXT:    return %[[R]]
func.func @tile(%a: tensor<2x3xf32>) -> tensor<4x9xf32> {
  %0 = "ms.tile"(%a) {multiples = array<i64: 2, 3>} : (tensor<2x3xf32>) -> tensor<4x9xf32>
  return %0 : tensor<4x9xf32>
}

// -----

// More multiples than dims: the input gets leading size-1 dims first.
// CHECK-DAG:   #[[$IN:.+]] = affine_map<(d0, d1, d2, d3) -> (d1, d3)>
// CHECK-LABEL: func.func @tile_rank_extend(
// CHECK-SAME:    %[[A:.+]]: tensor<3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %[[X:.+]] = tensor.expand_shape %[[A]] {{\[}}[0, 1]] output_shape [1, 3] : tensor<3xf32> into tensor<1x3xf32>
// CHECK:         %[[P:.+]] = linalg.generic {indexing_maps = [#[[$IN]], #{{.+}}]
// CHECK-SAME:      ins(%[[X]] : tensor<1x3xf32>) outs(%{{.+}} : tensor<2x1x1x3xf32>)
// CHECK:         tensor.collapse_shape %[[P]] {{\[}}[0, 1], [2, 3]] : tensor<2x1x1x3xf32> into tensor<2x3xf32>
func.func @tile_rank_extend(%a: tensor<3xf32>) -> tensor<2x3xf32> {
  %0 = "ms.tile"(%a) {multiples = array<i64: 2, 1>} : (tensor<3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// A size of -1 runs to the end of the axis.
// CHECK-LABEL: func.func @slice(
// CHECK-SAME:    %[[A:.+]]: tensor<4x5xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %[[S:.+]] = tensor.extract_slice %[[A]][1, 2] [2, 3] [1, 1] : tensor<4x5xf32> to tensor<2x3xf32>
// CHECK-NEXT:    return %[[S]]
func.func @slice(%a: tensor<4x5xf32>) -> tensor<2x3xf32> {
  %0 = "ms.slice"(%a) {begin = array<i64: 1, 2>, size = array<i64: 2, -1>, operandSegmentSizes = array<i32: 1, 0, 0>} : (tensor<4x5xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// Python-slice semantics: negative begin counts from the end, strides become the slice's.
// CHECK-LABEL: func.func @strided_slice(
// CHECK-SAME:    %[[A:.+]]: tensor<6x5xf32>) -> tensor<3x2xf32>
// CHECK-NEXT:    %[[S:.+]] = tensor.extract_slice %[[A]][1, 1] [3, 2] [2, 3] : tensor<6x5xf32> to tensor<3x2xf32>
// CHECK-NEXT:    return %[[S]]
func.func @strided_slice(%a: tensor<6x5xf32>) -> tensor<3x2xf32> {
  %0 = "ms.strided_slice"(%a) {begin = array<i64: 1, -4>, end = array<i64: 6, 5>, strides = array<i64: 2, 3>, operandSegmentSizes = array<i32: 1, 0, 0, 0>} : (tensor<6x5xf32>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// -----

// Fewer entries than axes take the rest whole; an end past the axis is clamped.
// CHECK-LABEL: func.func @strided_slice_partial(
// CHECK-SAME:    %[[A:.+]]: tensor<6x5xi8>) -> tensor<2x5xi8>
// CHECK-NEXT:    %[[S:.+]] = tensor.extract_slice %[[A]][4, 0] [2, 5] [1, 1] : tensor<6x5xi8> to tensor<2x5xi8>
func.func @strided_slice_partial(%a: tensor<6x5xi1>) -> tensor<2x5xi1> {
  %0 = "ms.strided_slice"(%a) {begin = array<i64: -2>, end = array<i64: 100>, strides = array<i64: 1>, operandSegmentSizes = array<i32: 1, 0, 0, 0>} : (tensor<6x5xi1>) -> tensor<2x5xi1>
  return %0 : tensor<2x5xi1>
}
