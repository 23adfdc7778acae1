// ms-outline-matmul: each linalg.matmul moves into a kernel function of its own
// (ms.kernel = "matmul"), named after its function and its place (@f__matmul0, ...), called
// where it was. A symbol the input already has under such a name keeps it: the kernel takes
// the first free name (one definition per name; before, two @f__matmul0 and an invalid
// module).
// RUN: ms-opt %s --ms-outline-matmul --split-input-file | FileCheck %s

// CHECK-LABEL: func.func @f(
// CHECK-SAME:    %[[A:.+]]: memref<4x3xf32>, %[[B:.+]]: memref<3x5xf32>, %[[C:.+]]: memref<4x5xf32>
// CHECK:         call @f__matmul0(%[[A]], %[[B]], %[[C]])
// CHECK-NOT:     linalg.matmul
// CHECK:         func.func private @f__matmul0({{.+}}) attributes {ms.kernel = "matmul"}
// CHECK-NEXT:      linalg.matmul
func.func @f(%a: memref<4x3xf32>, %b: memref<3x5xf32>, %c: memref<4x5xf32>) {
  linalg.matmul ins(%a, %b : memref<4x3xf32>, memref<3x5xf32>) outs(%c : memref<4x5xf32>)
  return
}

// -----

// CHECK-LABEL: func.func private @g__matmul0()
// CHECK-LABEL: func.func @g(
// CHECK:         call @g__matmul0_1(
// CHECK:         call @g__matmul0()
// CHECK:         func.func private @g__matmul0_1({{.+}}) attributes {ms.kernel = "matmul"}
func.func private @g__matmul0() {
  return
}
func.func @g(%a: memref<4x3xf32>, %b: memref<3x5xf32>, %c: memref<4x5xf32>) {
  linalg.matmul ins(%a, %b : memref<4x3xf32>, memref<3x5xf32>) outs(%c : memref<4x5xf32>)
  call @g__matmul0() : () -> ()
  return
}
