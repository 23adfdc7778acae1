// RUN: ms-opt %s --split-input-file --ms-cpu-kernel-dest | FileCheck %s

// A convolution's image: the kernel's zeroed output was copied into the image's slice of
// the batch result. The kernel now writes the slice, collapsed to its shape (rows 784
// floats apart at a dynamic offset); no buffer, no copy, no dealloc.
// CHECK-LABEL: func.func @image(
// CHECK-SAME:    %[[W:.+]]: memref<32x144xf32>, %[[COL:.+]]: memref<144x784xf32>, %[[OUT:.+]]: memref<64x32x28x28xf32>
// CHECK:         %[[SLICE:.+]] = memref.subview %[[OUT]][%{{.+}}, 0, 0, 0] [1, 32, 28, 28] [1, 1, 1, 1]
// CHECK:         %[[DEST:.+]] = memref.collapse_shape %[[SLICE]] {{\[}}[0, 1], [2, 3]]
// CHECK-SAME:      into memref<32x784xf32, strided<[784, 1], offset: ?>>
// CHECK-NEXT:    linalg.fill ins(%{{.+}} : f32) outs(%[[DEST]] : memref<32x784xf32, strided<[784, 1], offset: ?>>)
// CHECK-NEXT:    call @kernel(%[[W]], %[[COL]], %[[DEST]])
// CHECK-NOT:     memref.copy
// CHECK-NOT:     memref.dealloc
// CHECK:         return
// CHECK-LABEL: func.func private @kernel(
// CHECK-SAME:    %{{.+}}: memref<144x784xf32>, %[[C:.+]]: memref<32x784xf32, strided<[784, 1], offset: ?>>)
// CHECK:         linalg.matmul ins({{.+}}) outs(%[[C]] : memref<32x784xf32, strided<[784, 1], offset: ?>>)
func.func @image(%w: memref<32x144xf32>, %col: memref<144x784xf32>, %out: memref<64x32x28x28xf32>, %i: index) {
  %zero = arith.constant 0.0 : f32
  %a = memref.alloc() {alignment = 64 : i64} : memref<32x784xf32>
  linalg.fill ins(%zero : f32) outs(%a : memref<32x784xf32>)
  func.call @kernel(%w, %col, %a) : (memref<32x144xf32>, memref<144x784xf32>, memref<32x784xf32>) -> ()
  %e = memref.expand_shape %a [[0, 1], [2, 3]] output_shape [1, 32, 28, 28] : memref<32x784xf32> into memref<1x32x28x28xf32>
  %v = memref.subview %out[%i, 0, 0, 0] [1, 32, 28, 28] [1, 1, 1, 1] : memref<64x32x28x28xf32> to memref<1x32x28x28xf32, strided<[25088, 784, 28, 1], offset: ?>>
  memref.copy %e, %v : memref<1x32x28x28xf32> to memref<1x32x28x28xf32, strided<[25088, 784, 28, 1], offset: ?>>
  memref.dealloc %a : memref<32x784xf32>
  return
}
func.func private @kernel(%a: memref<32x144xf32>, %b: memref<144x784xf32>, %c: memref<32x784xf32>)
    attributes {ms.kernel = "matmul"} {
  linalg.matmul ins(%a, %b : memref<32x144xf32>, memref<144x784xf32>) outs(%c : memref<32x784xf32>)
  return
}

// -----

// A block of an image's rows (an input gradient's): each channel's 14 rows of 28 are
// contiguous, the channels 784 floats apart.
// CHECK-LABEL: func.func @rows(
// CHECK:         memref.collapse_shape {{.+}} into memref<16x392xf32, strided<[784, 1], offset: ?>>
// CHECK-NOT:     memref.copy
// CHECK:         return
// CHECK-LABEL: func.func private @rows_kernel(
// CHECK-SAME:    memref<16x392xf32, strided<[784, 1], offset: ?>>)
func.func @rows(%w: memref<16x288xf32>, %col: memref<288x392xf32>, %dx: memref<1x16x28x28xf32>, %first: index) {
  %zero = arith.constant 0.0 : f32
  %a = memref.alloc() : memref<16x392xf32>
  linalg.fill ins(%zero : f32) outs(%a : memref<16x392xf32>)
  func.call @rows_kernel(%w, %col, %a) : (memref<16x288xf32>, memref<288x392xf32>, memref<16x392xf32>) -> ()
  %e = memref.expand_shape %a [[0, 1], [2, 3]] output_shape [1, 16, 14, 28] : memref<16x392xf32> into memref<1x16x14x28xf32>
  %v = memref.subview %dx[0, 0, %first, 0] [1, 16, 14, 28] [1, 1, 1, 1] : memref<1x16x28x28xf32> to memref<1x16x14x28xf32, strided<[12544, 784, 28, 1], offset: ?>>
  memref.copy %e, %v : memref<1x16x14x28xf32> to memref<1x16x14x28xf32, strided<[12544, 784, 28, 1], offset: ?>>
  memref.dealloc %a : memref<16x392xf32>
  return
}
func.func private @rows_kernel(%a: memref<16x288xf32>, %b: memref<288x392xf32>, %c: memref<16x392xf32>)
    attributes {ms.kernel = "matmul"} {
  linalg.matmul ins(%a, %b : memref<16x288xf32>, memref<288x392xf32>) outs(%c : memref<16x392xf32>)
  return
}

// -----

// Left alone: the view is read between the call and the copy (its old contents are still
// needed); the destination's rows are two half rows of another buffer (they do not collapse
// into the kernel's rows); the kernel reads the view's buffer through another operand.
// CHECK-LABEL: func.func @read_between(
// CHECK:         memref.alloc
// CHECK:         memref.copy
// CHECK-LABEL: func.func @halves(
// CHECK:         memref.alloc
// CHECK:         memref.copy
// CHECK-LABEL: func.func @aliased(
// CHECK:         memref.alloc
// CHECK:         memref.copy
// CHECK-LABEL: func.func private @k1(
// CHECK-SAME:    %{{.+}}: memref<8x16xf32>)
// CHECK-LABEL: func.func private @k2(
// CHECK-SAME:    %{{.+}}: memref<8x16xf32>)
// CHECK-LABEL: func.func private @k3(
// CHECK-SAME:    %{{.+}}: memref<8x16xf32>)
func.func @read_between(%a: memref<8x4xf32>, %b: memref<4x16xf32>, %out: memref<4x8x16xf32>, %i: index) -> f32 {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %t = memref.alloc() : memref<8x16xf32>
  linalg.fill ins(%zero : f32) outs(%t : memref<8x16xf32>)
  func.call @k1(%a, %b, %t) : (memref<8x4xf32>, memref<4x16xf32>, memref<8x16xf32>) -> ()
  %old = memref.load %out[%i, %c0, %c0] : memref<4x8x16xf32>
  %e = memref.expand_shape %t [[0, 1], [2]] output_shape [1, 8, 16] : memref<8x16xf32> into memref<1x8x16xf32>
  %v = memref.subview %out[%i, 0, 0] [1, 8, 16] [1, 1, 1] : memref<4x8x16xf32> to memref<1x8x16xf32, strided<[128, 16, 1], offset: ?>>
  memref.copy %e, %v : memref<1x8x16xf32> to memref<1x8x16xf32, strided<[128, 16, 1], offset: ?>>
  memref.dealloc %t : memref<8x16xf32>
  return %old : f32
}
func.func @halves(%a: memref<8x4xf32>, %b: memref<4x16xf32>, %out: memref<1x8x2x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %t = memref.alloc() : memref<8x16xf32>
  linalg.fill ins(%zero : f32) outs(%t : memref<8x16xf32>)
  func.call @k2(%a, %b, %t) : (memref<8x4xf32>, memref<4x16xf32>, memref<8x16xf32>) -> ()
  %e = memref.expand_shape %t [[0, 1], [2, 3]] output_shape [1, 8, 2, 8] : memref<8x16xf32> into memref<1x8x2x8xf32>
  %v = memref.subview %out[0, 0, 0, 0] [1, 8, 2, 8] [1, 1, 1, 1] : memref<1x8x2x16xf32> to memref<1x8x2x8xf32, strided<[256, 32, 16, 1]>>
  memref.copy %e, %v : memref<1x8x2x8xf32> to memref<1x8x2x8xf32, strided<[256, 32, 16, 1]>>
  memref.dealloc %t : memref<8x16xf32>
  return
}
func.func @aliased(%a: memref<8x4xf32>, %buf: memref<2x8x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %t = memref.alloc() : memref<8x16xf32>
  linalg.fill ins(%zero : f32) outs(%t : memref<8x16xf32>)
  %src = memref.subview %buf[0, 0, 0] [1, 4, 16] [1, 1, 1] : memref<2x8x16xf32> to memref<4x16xf32, strided<[16, 1]>>
  func.call @k3(%a, %src, %t) : (memref<8x4xf32>, memref<4x16xf32, strided<[16, 1]>>, memref<8x16xf32>) -> ()
  %e = memref.expand_shape %t [[0, 1], [2]] output_shape [1, 8, 16] : memref<8x16xf32> into memref<1x8x16xf32>
  %v = memref.subview %buf[1, 0, 0] [1, 8, 16] [1, 1, 1] : memref<2x8x16xf32> to memref<1x8x16xf32, strided<[128, 16, 1], offset: 128>>
  memref.copy %e, %v : memref<1x8x16xf32> to memref<1x8x16xf32, strided<[128, 16, 1], offset: 128>>
  memref.dealloc %t : memref<8x16xf32>
  return
}
func.func private @k1(%a: memref<8x4xf32>, %b: memref<4x16xf32>, %c: memref<8x16xf32>)
    attributes {ms.kernel = "matmul"} {
  linalg.matmul ins(%a, %b : memref<8x4xf32>, memref<4x16xf32>) outs(%c : memref<8x16xf32>)
  return
}
func.func private @k2(%a: memref<8x4xf32>, %b: memref<4x16xf32>, %c: memref<8x16xf32>)
    attributes {ms.kernel = "matmul"} {
  linalg.matmul ins(%a, %b : memref<8x4xf32>, memref<4x16xf32>) outs(%c : memref<8x16xf32>)
  return
}
func.func private @k3(%a: memref<8x4xf32>, %b: memref<4x16xf32, strided<[16, 1]>>, %c: memref<8x16xf32>)
    attributes {ms.kernel = "matmul"} {
  linalg.matmul ins(%a, %b : memref<8x4xf32>, memref<4x16xf32, strided<[16, 1]>>) outs(%c : memref<8x16xf32>)
  return
}

// -----

// A fill of the buffer inside a loop (another block than the call's): left alone, no
// comparison of ops from two blocks.
// CHECK-LABEL: func.func @nested_fill(
// CHECK:         memref.alloc
// CHECK:         memref.copy
func.func @nested_fill(%a: memref<8x4xf32>, %b: memref<4x16xf32>, %out: memref<2x8x16xf32>, %i: index) {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %t = memref.alloc() : memref<8x16xf32>
  scf.for %k = %c0 to %c1 step %c1 {
    linalg.fill ins(%zero : f32) outs(%t : memref<8x16xf32>)
  }
  func.call @k4(%a, %b, %t) : (memref<8x4xf32>, memref<4x16xf32>, memref<8x16xf32>) -> ()
  %e = memref.expand_shape %t [[0, 1], [2]] output_shape [1, 8, 16] : memref<8x16xf32> into memref<1x8x16xf32>
  %v = memref.subview %out[%i, 0, 0] [1, 8, 16] [1, 1, 1] : memref<2x8x16xf32> to memref<1x8x16xf32, strided<[128, 16, 1], offset: ?>>
  memref.copy %e, %v : memref<1x8x16xf32> to memref<1x8x16xf32, strided<[128, 16, 1], offset: ?>>
  memref.dealloc %t : memref<8x16xf32>
  return
}
func.func private @k4(%a: memref<8x4xf32>, %b: memref<4x16xf32>, %c: memref<8x16xf32>)
    attributes {ms.kernel = "matmul"} {
  linalg.matmul ins(%a, %b : memref<8x4xf32>, memref<4x16xf32>) outs(%c : memref<8x16xf32>)
  return
}
