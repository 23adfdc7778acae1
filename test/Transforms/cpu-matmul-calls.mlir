// ms-cpu-matmul-calls (the quick tier's matmuls, passes/tiering.py): a float32/float64
// linalg.matmul on buffers with contiguous rows becomes a call of the compiled matrix
// product, C += A @ B, each operand passed as the address of its first element (aligned
// pointer + offset * element bytes) and its row stride; sizes and strides come from the
// buffers' metadata. Other element types, transposed reads and strided rows stay matmuls.
// RUN: ms-opt %s --ms-cpu-matmul-calls --split-input-file | FileCheck %s

// CHECK-LABEL: func.func @plain_f32
// CHECK-SAME:    (%[[A:.+]]: memref<5x3xf32>, %[[B:.+]]: memref<3x7xf32>, %[[C:.+]]: memref<5x7xf32>)
// CHECK:         %{{.+}}, %[[AOFF:.+]], %[[ASIZE:.+]]:2, %[[ASTRIDE:.+]]:2 = memref.extract_strided_metadata %[[A]]
// CHECK:         %[[APTR:.+]] = memref.extract_aligned_pointer_as_index %[[A]]
// CHECK:         %[[FOUR:.+]] = arith.constant 4 : index
// CHECK:         %[[ABYTES:.+]] = arith.muli %[[AOFF]], %[[FOUR]] : index
// CHECK:         %[[AADDR:.+]] = arith.addi %[[APTR]], %[[ABYTES]] : index
// CHECK:         %{{.+}}, %{{.+}}, %[[BSIZE:.+]]:2, %[[BSTRIDE:.+]]:2 = memref.extract_strided_metadata %[[B]]
// CHECK:         %[[BADDR:.+]] = arith.addi
// CHECK:         %{{.+}}, %{{.+}}, %{{.+}}:2, %[[CSTRIDE:.+]]:2 = memref.extract_strided_metadata %[[C]]
// CHECK:         %[[CADDR:.+]] = arith.addi
// CHECK:         call @mscc_quick_matmul_f32(%[[ASIZE]]#0, %[[BSIZE]]#1, %[[ASIZE]]#1, %[[AADDR]], %[[ASTRIDE]]#0, %[[BADDR]], %[[BSTRIDE]]#0, %[[CADDR]], %[[CSTRIDE]]#0)
// CHECK-NOT:     linalg.matmul
// CHECK:         return
// The library functions are declared once, however many matmuls call them.
// CHECK-LABEL: func.func @twice
// CHECK-COUNT-2: call @mscc_quick_matmul_f32
// CHECK-NOT:     linalg.matmul
// CHECK:         func.func private @mscc_quick_matmul_f32(index, index, index, index, index, index, index, index, index)
// CHECK-NOT:     func.func private @mscc_quick_matmul_f32
func.func @plain_f32(%a: memref<5x3xf32>, %b: memref<3x7xf32>, %c: memref<5x7xf32>) {
  linalg.matmul ins(%a, %b : memref<5x3xf32>, memref<3x7xf32>) outs(%c : memref<5x7xf32>)
  return
}
func.func @twice(%a: memref<5x3xf32>, %b: memref<3x7xf32>, %c: memref<5x7xf32>) {
  linalg.matmul ins(%a, %b : memref<5x3xf32>, memref<3x7xf32>) outs(%c : memref<5x7xf32>)
  linalg.matmul ins(%a, %b : memref<5x3xf32>, memref<3x7xf32>) outs(%c : memref<5x7xf32>)
  return
}

// -----

// A view of float64 rows (offset 8, row stride 6) and dynamic sizes: both from the metadata.
// CHECK-LABEL: func.func @view_f64
// CHECK:         %[[VIEW:.+]] = memref.subview
// CHECK:         %{{.+}}, %[[OFF:.+]], %{{.+}}:2, %{{.+}}:2 = memref.extract_strided_metadata %[[VIEW]]
// CHECK:         %[[PTR:.+]] = memref.extract_aligned_pointer_as_index %[[VIEW]]
// CHECK:         %[[EIGHT:.+]] = arith.constant 8 : index
// CHECK:         arith.muli %[[OFF]], %[[EIGHT]] : index
// CHECK:         call @mscc_quick_matmul_f64(
// CHECK-NOT:     linalg.matmul
// CHECK:         func.func private @mscc_quick_matmul_f64
func.func @view_f64(%a: memref<8x6xf64>, %b: memref<4x?xf64>, %c: memref<2x?xf64>) {
  %v = memref.subview %a[1, 2] [2, 4] [1, 1] : memref<8x6xf64> to memref<2x4xf64, strided<[6, 1], offset: 8>>
  linalg.matmul ins(%v, %b : memref<2x4xf64, strided<[6, 1], offset: 8>>, memref<4x?xf64>) outs(%c : memref<2x?xf64>)
  return
}

// -----

// Integers, a transposed read and a column view (rows not contiguous) stay matmuls.
// CHECK-LABEL: func.func @stay
// CHECK-COUNT-3: linalg.matmul
// CHECK-NOT:     call
// CHECK-NOT:     func.func private @mscc_quick_matmul
#map_a = affine_map<(m, n, k) -> (k, m)>
#map_b = affine_map<(m, n, k) -> (k, n)>
#map_c = affine_map<(m, n, k) -> (m, n)>
func.func @stay(%ai: memref<5x3xi32>, %bi: memref<3x7xi32>, %ci: memref<5x7xi32>,
                %at: memref<3x5xf32>, %b: memref<3x7xf32>, %c: memref<5x7xf32>,
                %a: memref<5x3xf32>, %wide: memref<7x3xf32>) {
  linalg.matmul ins(%ai, %bi : memref<5x3xi32>, memref<3x7xi32>) outs(%ci : memref<5x7xi32>)
  linalg.matmul indexing_maps = [#map_a, #map_b, #map_c]
      ins(%at, %b : memref<3x5xf32>, memref<3x7xf32>) outs(%c : memref<5x7xf32>)
  %colview = memref.subview %wide[0, 0] [3, 2] [1, 2] : memref<7x3xf32> to memref<3x2xf32, strided<[3, 2]>>
  %cout = memref.alloc() : memref<5x2xf32>
  linalg.matmul ins(%a, %colview : memref<5x3xf32>, memref<3x2xf32, strided<[3, 2]>>) outs(%cout : memref<5x2xf32>)
  return
}
