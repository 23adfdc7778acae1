// ms-cpu-strided-copies: a memref.copy from or to a strided view becomes a linalg.generic
// copy (a loop nest LLVM vectorizes and ms-cpu-parallelize can split); a contiguous copy stays
// a memref.copy (one memcpy).
// RUN: ms-opt %s --ms-cpu-strided-copies --split-input-file | FileCheck %s

// CHECK-DAG:   #[[$ID:.+]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-LABEL: func.func @slice_copy
// CHECK-SAME:    (%[[SRC:.+]]: memref<4x30x30xf32>, %[[DST:.+]]: memref<4x28x28xf32>)
// CHECK:         %[[VIEW:.+]] = memref.subview %[[SRC]][0, 1, 1] [4, 28, 28] [1, 1, 1]
// CHECK-NEXT:    linalg.generic {indexing_maps = [#[[$ID]], #[[$ID]]], iterator_types = ["parallel", "parallel", "parallel"]}
// CHECK-SAME:      ins(%[[VIEW]] : memref<4x28x28xf32, strided<[900, 30, 1], offset: 31>>) outs(%[[DST]] : memref<4x28x28xf32>)
// CHECK-NEXT:    ^bb0(%[[IN:.+]]: f32, %{{.+}}: f32):
// CHECK-NEXT:      linalg.yield %[[IN]] : f32
// CHECK-NOT:     memref.copy
func.func @slice_copy(%src: memref<4x30x30xf32>, %dst: memref<4x28x28xf32>) {
  %view = memref.subview %src[0, 1, 1] [4, 28, 28] [1, 1, 1] : memref<4x30x30xf32> to memref<4x28x28xf32, strided<[900, 30, 1], offset: 31>>
  memref.copy %view, %dst : memref<4x28x28xf32, strided<[900, 30, 1], offset: 31>> to memref<4x28x28xf32>
  return
}

// -----

// CHECK-LABEL: func.func @contiguous_copy
// CHECK-NEXT:    memref.copy %{{.+}}, %{{.+}} : memref<8x16xi32> to memref<8x16xi32>
// CHECK-NOT:     linalg.generic
func.func @contiguous_copy(%src: memref<8x16xi32>, %dst: memref<8x16xi32>) {
  memref.copy %src, %dst : memref<8x16xi32> to memref<8x16xi32>
  return
}
