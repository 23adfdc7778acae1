// ms-cpu-dynamic-matmul: a matmul kernel with a dynamic row count runs static clones of
// itself on blocks of 64, 8 and 1 rows; one with a dynamic depth accumulates blocks of 256, 8
// and 1 rows of K, then runs its epilogue once. Other dynamic kernels stay as they are.
// RUN: ms-opt %s --ms-cpu-dynamic-matmul=vector-bits=512 --split-input-file | FileCheck %s
// The output is valid IR.
// RUN: ms-opt %s --ms-cpu-dynamic-matmul=vector-bits=512 --split-input-file | ms-opt --split-input-file > /dev/null

// CHECK-LABEL: func.func @rows(
// CHECK-SAME:    %[[A:[^:]+]]: memref<?x16xf32>, %[[B:[^:]+]]: memref<16x32xf32>, %[[BIAS:[^:]+]]: memref<32xf32>, %[[C:[^:]+]]: memref<?x32xf32>)
// CHECK:         %[[M:.+]] = memref.dim %[[A]], %{{.+}} : memref<?x16xf32>
// CHECK:         scf.for %[[I:.+]] = %{{.+}} to %{{.+}} step %{{.+}} {
// CHECK:           %[[AV:.+]] = memref.subview %[[A]][%[[I]], 0] [64, 16] [1, 1] : memref<?x16xf32> to memref<64x16xf32, strided<[16, 1], offset: ?>>
// CHECK:           %[[CV:.+]] = memref.subview %[[C]][%[[I]], 0] [64, 32] [1, 1] : memref<?x32xf32> to memref<64x32xf32, strided<[32, 1], offset: ?>>
// CHECK:           func.call @rows__matmul0__64(%[[AV]], %[[B]], %[[CV]], %[[BIAS]])
// CHECK:         scf.for
// CHECK:           func.call @rows__matmul0__8(
// CHECK:         scf.for
// CHECK:           func.call @rows__matmul0__1(
// CHECK-NOT:     call @rows__matmul0(
// CHECK-LABEL: func.func private @rows__matmul0__64(
// CHECK-SAME:    memref<64x16xf32, strided<[16, 1], offset: ?>>, %{{.+}}: memref<16x32xf32>, %{{.+}}: memref<64x32xf32, strided<[32, 1], offset: ?>>, %{{.+}}: memref<32xf32>) attributes {ms.kernel = "matmul"}
// CHECK:         linalg.matmul
// CHECK:         linalg.generic
// CHECK-NOT:   func.func private @rows__matmul0(
func.func @rows(%a: memref<?x16xf32>, %b: memref<16x32xf32>, %bias: memref<32xf32>, %c: memref<?x32xf32>) {
  func.call @rows__matmul0(%a, %b, %c, %bias) : (memref<?x16xf32>, memref<16x32xf32>, memref<?x32xf32>, memref<32xf32>) -> ()
  return
}
func.func private @rows__matmul0(%a: memref<?x16xf32>, %b: memref<16x32xf32>, %c: memref<?x32xf32>, %bias: memref<32xf32>) attributes {ms.kernel = "matmul"} {
  linalg.matmul ins(%a, %b : memref<?x16xf32>, memref<16x32xf32>) outs(%c : memref<?x32xf32>)
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%bias : memref<32xf32>) outs(%c : memref<?x32xf32>) {
  ^bb0(%x: f32, %y: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  }
  return
}


// -----

// CHECK-LABEL: func.func @depth(
// CHECK-SAME:    %[[A:[^:]+]]: memref<32x?xf32>, %[[B:[^:]+]]: memref<?x16xf32>, %[[C:[^:]+]]: memref<32x16xf32>, %[[V:[^:]+]]: memref<32x16xf32>)
// CHECK:         %[[K:.+]] = memref.dim %[[B]], %{{.+}} : memref<?x16xf32>
// CHECK:         scf.for %[[I:.+]] = %{{.+}} to %{{.+}} step %{{.+}} {
// CHECK:           %[[AV:.+]] = memref.subview %[[A]][0, %[[I]]] [32, 256] [1, 1] : memref<32x?xf32> to memref<32x256xf32, strided<[?, 1], offset: ?>>
// CHECK:           %[[BV:.+]] = memref.subview %[[B]][%[[I]], 0] [256, 16] [1, 1] : memref<?x16xf32> to memref<256x16xf32, strided<[16, 1], offset: ?>>
// CHECK:           func.call @depth__matmul0__product__256(%[[AV]], %[[BV]], %[[C]], %[[V]])
// CHECK:         scf.for
// CHECK:           func.call @depth__matmul0__product__8(
// CHECK:         scf.for
// CHECK:           func.call @depth__matmul0__product__1(
// CHECK:         call @depth__matmul0__epilogue(%[[A]], %[[B]], %[[C]], %[[V]])
// CHECK-NEXT:    return
// CHECK-LABEL: func.func private @depth__matmul0__epilogue(
// CHECK-NOT:     linalg.matmul
// CHECK:         linalg.generic
// CHECK-LABEL: func.func private @depth__matmul0__product__256(
// CHECK-NEXT:    linalg.matmul
// CHECK-NEXT:    return

func.func @depth(%a: memref<32x?xf32>, %b: memref<?x16xf32>, %c: memref<32x16xf32>, %v: memref<32x16xf32>) {
  func.call @depth__matmul0(%a, %b, %c, %v) : (memref<32x?xf32>, memref<?x16xf32>, memref<32x16xf32>, memref<32x16xf32>) -> ()
  return
}
func.func private @depth__matmul0(%a: memref<32x?xf32>, %b: memref<?x16xf32>, %c: memref<32x16xf32>, %v: memref<32x16xf32>) attributes {ms.kernel = "matmul"} {
  linalg.matmul ins(%a, %b : memref<32x?xf32>, memref<?x16xf32>) outs(%c : memref<32x16xf32>)
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%v : memref<32x16xf32>) outs(%c : memref<32x16xf32>) {
  ^bb0(%x: f32, %y: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  }
  return
}


// -----

// Dynamic rows and depth at once: left as it is (plain loops).
// CHECK-LABEL: func.func @both(
// CHECK:         call @both__matmul0(
// CHECK-LABEL: func.func private @both__matmul0(

func.func @both(%a: memref<?x?xf32>, %b: memref<?x16xf32>, %c: memref<?x16xf32>) {
  func.call @both__matmul0(%a, %b, %c) : (memref<?x?xf32>, memref<?x16xf32>, memref<?x16xf32>) -> ()
  return
}
func.func private @both__matmul0(%a: memref<?x?xf32>, %b: memref<?x16xf32>, %c: memref<?x16xf32>) attributes {ms.kernel = "matmul"} {
  linalg.matmul ins(%a, %b : memref<?x?xf32>, memref<?x16xf32>) outs(%c : memref<?x16xf32>)
  return
}
