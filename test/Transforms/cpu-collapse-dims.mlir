// RUN: ms-opt %s --split-input-file --ms-cpu-collapse-dims | FileCheck %s

// An elementwise op on images with a per-channel operand: the image's rows and columns are
// one loop (the per-channel operand indexes neither: it stays as it is, its map over the
// joined loops), the channels another.
// CHECK-DAG:   #[[ID:.+]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG:   #[[CHANNEL:.+]] = affine_map<(d0, d1, d2) -> (0, d1, 0, 0)>
// CHECK-LABEL: func.func @bias(
// CHECK-SAME:    %[[X:.+]]: memref<2x32x28x28xf32>, %[[B:.+]]: memref<1x32x1x1xf32>, %[[Y:.+]]: memref<2x32x28x28xf32>)
// CHECK:         %[[XC:.+]] = memref.collapse_shape %[[X]] {{\[}}[0], [1], [2, 3]] : memref<2x32x28x28xf32> into memref<2x32x784xf32>
// CHECK:         %[[YC:.+]] = memref.collapse_shape %[[Y]] {{\[}}[0], [1], [2, 3]]
// CHECK:         linalg.generic {indexing_maps = [#[[ID]], #[[CHANNEL]], #[[ID]]], iterator_types = ["parallel", "parallel", "parallel"]}
// CHECK-SAME:      ins(%[[XC]], %[[B]] : memref<2x32x784xf32>, memref<1x32x1x1xf32>) outs(%[[YC]] : memref<2x32x784xf32>)
// CHECK:           arith.addf
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#ch4 = affine_map<(d0, d1, d2, d3) -> (0, d1, 0, 0)>
func.func @bias(%x: memref<2x32x28x28xf32>, %b: memref<1x32x1x1xf32>, %y: memref<2x32x28x28xf32>) {
  linalg.generic {indexing_maps = [#id4, #ch4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x, %b : memref<2x32x28x28xf32>, memref<1x32x1x1xf32>) outs(%y : memref<2x32x28x28xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %s = arith.addf %a, %c : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A sum over the last three dims of a strided view (rows of a larger buffer): the reduced
// dims are contiguous, so they are one reduction loop; the kept dim stays.
// CHECK-LABEL: func.func @row_sums(
// CHECK:         memref.collapse_shape %{{.+}} {{\[}}[0], [1, 2, 3]] : memref<8x4x28x28xf32, strided<[6272, 784, 28, 1], offset: 3136>> into memref<8x3136xf32, strided<[6272, 1], offset: 3136>>
// CHECK:         linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]
#in = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#out = affine_map<(d0, d1, d2, d3) -> (d0)>
func.func @row_sums(%x: memref<8x4x28x28xf32, strided<[6272, 784, 28, 1], offset: 3136>>, %y: memref<8xf32>) {
  linalg.generic {indexing_maps = [#in, #out], iterator_types = ["parallel", "reduction", "reduction", "reduction"]}
      ins(%x : memref<8x4x28x28xf32, strided<[6272, 784, 28, 1], offset: 3136>>) outs(%y : memref<8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %a, %o : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A unit dim joins its neighbour whatever its stride, but the rows (100 floats apart, 8
// used) stay a loop of their own: the group is checked whole, not pair by pair.
// Dims that are all of size 1 join too (the collapsed stride is the outer one's, as
// memref.collapse_shape infers it).
// CHECK-LABEL: func.func @unit_dim(
// CHECK:         memref.collapse_shape %{{.+}} {{\[}}[0, 1], [2]] : memref<4x1x8xf32, strided<[100, 8, 1]>> into memref<4x8xf32, strided<[100, 1]>>
// CHECK:         iterator_types = ["parallel", "parallel"]
// CHECK-LABEL: func.func @unit_dims(
// CHECK:         memref.collapse_shape %{{.+}} {{\[}}[0, 1]] : memref<1x1xf32, strided<[4, 1]>> into memref<1xf32, strided<[4]>>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @unit_dim(%x: memref<4x1x8xf32, strided<[100, 8, 1]>>) {
  linalg.generic {indexing_maps = [#id3], iterator_types = ["parallel", "parallel", "parallel"]}
      outs(%x : memref<4x1x8xf32, strided<[100, 8, 1]>>) {
  ^bb0(%o: f32):
    %s = arith.addf %o, %o : f32
    linalg.yield %s : f32
  }
  return
}
#id2u = affine_map<(d0, d1) -> (d0, d1)>
func.func @unit_dims(%x: memref<1x1xf32, strided<[4, 1]>>) {
  linalg.generic {indexing_maps = [#id2u], iterator_types = ["parallel", "parallel"]}
      outs(%x : memref<1x1xf32, strided<[4, 1]>>) {
  ^bb0(%o: f32):
    %s = arith.addf %o, %o : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Left alone: a copy into the interior of a padded buffer (its rows are 30 floats apart, 28
// used), a body that reads linalg.index, a dynamic size, a transposing map (the dims are
// not consecutive in the output), and a matmul kernel.
// CHECK-LABEL: func.func @padded_rows(
// CHECK-NOT:     memref.collapse_shape
// CHECK:         iterator_types = ["parallel", "parallel"]
// CHECK-LABEL: func.func @indexed(
// CHECK-NOT:     memref.collapse_shape
// CHECK-LABEL: func.func @dynamic(
// CHECK-NOT:     memref.collapse_shape
// CHECK-LABEL: func.func @transposed(
// CHECK-NOT:     memref.collapse_shape
// CHECK-LABEL: func.func @kernel(
// CHECK-NOT:     memref.collapse_shape
// CHECK:         return
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#t2 = affine_map<(d0, d1) -> (d1, d0)>
func.func @padded_rows(%x: memref<28x28xf32>, %y: memref<28x28xf32, strided<[30, 1], offset: 31>>) {
  linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<28x28xf32>) outs(%y : memref<28x28xf32, strided<[30, 1], offset: 31>>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  }
  return
}
func.func @indexed(%y: memref<4x8xf32>) {
  linalg.generic {indexing_maps = [#id2], iterator_types = ["parallel", "parallel"]} outs(%y : memref<4x8xf32>) {
  ^bb0(%o: f32):
    %i = linalg.index 1 : index
    %n = arith.index_cast %i : index to i64
    %f = arith.sitofp %n : i64 to f32
    linalg.yield %f : f32
  }
  return
}
func.func @dynamic(%x: memref<?x8xf32>, %y: memref<?x8xf32>) {
  linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<?x8xf32>) outs(%y : memref<?x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  }
  return
}
func.func @transposed(%x: memref<8x8xf32>, %y: memref<8x8xf32>) {
  linalg.generic {indexing_maps = [#id2, #t2], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<8x8xf32>) outs(%y : memref<8x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  }
  return
}
func.func @kernel(%x: memref<4x8xf32>, %y: memref<4x8xf32>) attributes {ms.kernel = "matmul"} {
  linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<4x8xf32>) outs(%y : memref<4x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  }
  return
}
