// RUN: ms-opt %s --split-input-file --ms-cpu-kernel-zero-init | FileCheck %s
// RUN: ms-opt %s --split-input-file --ms-cpu-kernel-zero-init | ms-opt --split-input-file > /dev/null

// The caller's fill of zeros of the product's output moves into the kernel, at its entry;
// ops between the fill and the call that do not touch C (a transpose of another buffer)
// stay where they are.
// CHECK-LABEL: func.func @caller(
// CHECK-SAME:    %[[A:[^:]+]]: memref<16x24xf32>, %[[B:[^:]+]]: memref<24x64xf32>, %[[C:[^:]+]]: memref<16x64xf32>
// CHECK-NOT:     linalg.fill
// CHECK:         linalg.transpose
// CHECK-NOT:     linalg.fill
// CHECK:         call @caller__matmul0(%[[A]], %[[B]], %[[C]])
// CHECK-LABEL: func.func private @caller__matmul0(
// CHECK-SAME:    %{{[^:]+}}: memref<16x24xf32>, %{{[^:]+}}: memref<24x64xf32>, %[[KC:[^:]+]]: memref<16x64xf32>)
// CHECK-NEXT:    %[[ZERO:.+]] = arith.constant 0.0{{0*}}e+00 : f32
// CHECK-NEXT:    linalg.fill ins(%[[ZERO]] : f32) outs(%[[KC]] : memref<16x64xf32>)
// CHECK-NEXT:    linalg.matmul
func.func @caller(%a: memref<16x24xf32>, %b: memref<24x64xf32>, %c: memref<16x64xf32>, %w: memref<8x4xf32>, %wt: memref<4x8xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<16x64xf32>)
  linalg.transpose ins(%w : memref<8x4xf32>) outs(%wt : memref<4x8xf32>) permutation = [1, 0]
  call @caller__matmul0(%a, %b, %c) : (memref<16x24xf32>, memref<24x64xf32>, memref<16x64xf32>) -> ()
  return
}
func.func private @caller__matmul0(%a: memref<16x24xf32>, %b: memref<24x64xf32>, %c: memref<16x64xf32>) attributes {ms.kernel = "matmul"} {
  linalg.matmul ins(%a, %b : memref<16x24xf32>, memref<24x64xf32>) outs(%c : memref<16x64xf32>)
  return
}

// -----

// An op between the fill and the call reads C (through a view): the fill stays with the
// caller, the kernel is unchanged.
// CHECK-LABEL: func.func @read_between(
// CHECK:         linalg.fill
// CHECK:         memref.copy
// CHECK:         call @read_between__matmul0
// CHECK-LABEL: func.func private @read_between__matmul0(
// CHECK-NEXT:    linalg.matmul
func.func @read_between(%a: memref<16x24xf32>, %b: memref<24x64xf32>, %c: memref<16x64xf32>, %row: memref<1x64xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<16x64xf32>)
  %first = memref.subview %c[0, 0] [1, 64] [1, 1] : memref<16x64xf32> to memref<1x64xf32, strided<[64, 1]>>
  memref.copy %first, %row : memref<1x64xf32, strided<[64, 1]>> to memref<1x64xf32>
  call @read_between__matmul0(%a, %b, %c) : (memref<16x24xf32>, memref<24x64xf32>, memref<16x64xf32>) -> ()
  return
}
func.func private @read_between__matmul0(%a: memref<16x24xf32>, %b: memref<24x64xf32>, %c: memref<16x64xf32>) attributes {ms.kernel = "matmul"} {
  linalg.matmul ins(%a, %b : memref<16x24xf32>, memref<24x64xf32>) outs(%c : memref<16x64xf32>)
  return
}

// -----

// A kernel called twice moves its fill only when both calls fill C with zeros: here one
// fills it with ones (C += A B onto a bias of ones), so both fills stay.
// CHECK-LABEL: func.func @two_calls(
// CHECK:         linalg.fill
// CHECK:         call @two_calls__matmul0
// CHECK:         linalg.fill
// CHECK:         call @two_calls__matmul0
// CHECK-LABEL: func.func private @two_calls__matmul0(
// CHECK-NEXT:    linalg.matmul
func.func @two_calls(%a: memref<16x24xf32>, %b: memref<24x64xf32>, %c: memref<16x64xf32>, %d: memref<16x64xf32>) {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<16x64xf32>)
  call @two_calls__matmul0(%a, %b, %c) : (memref<16x24xf32>, memref<24x64xf32>, memref<16x64xf32>) -> ()
  linalg.fill ins(%one : f32) outs(%d : memref<16x64xf32>)
  call @two_calls__matmul0(%a, %b, %d) : (memref<16x24xf32>, memref<24x64xf32>, memref<16x64xf32>) -> ()
  return
}
func.func private @two_calls__matmul0(%a: memref<16x24xf32>, %b: memref<24x64xf32>, %c: memref<16x64xf32>) attributes {ms.kernel = "matmul"} {
  linalg.matmul ins(%a, %b : memref<16x24xf32>, memref<24x64xf32>) outs(%c : memref<16x64xf32>)
  return
}

// -----

// A fill inside a loop body before a call in the same body (a convolution's image) moves.
// CHECK-LABEL: func.func @per_image(
// CHECK:         scf.forall
// CHECK-NOT:       linalg.fill
// CHECK:           call @per_image__matmul0
// CHECK-LABEL: func.func private @per_image__matmul0(
// CHECK:         linalg.fill
// CHECK-NEXT:    linalg.matmul
func.func @per_image(%a: memref<16x24xf32>, %b: memref<24x64xf32>, %c: memref<4x16x64xf32>) {
  %zero = arith.constant 0.0 : f32
  scf.forall (%i) in (4) {
    %ci = memref.subview %c[%i, 0, 0] [1, 16, 64] [1, 1, 1] : memref<4x16x64xf32> to memref<16x64xf32, strided<[64, 1], offset: ?>>
    linalg.fill ins(%zero : f32) outs(%ci : memref<16x64xf32, strided<[64, 1], offset: ?>>)
    func.call @per_image__matmul0(%a, %b, %ci) : (memref<16x24xf32>, memref<24x64xf32>, memref<16x64xf32, strided<[64, 1], offset: ?>>) -> ()
  }
  return
}
func.func private @per_image__matmul0(%a: memref<16x24xf32>, %b: memref<24x64xf32>, %c: memref<16x64xf32, strided<[64, 1], offset: ?>>) attributes {ms.kernel = "matmul"} {
  linalg.matmul ins(%a, %b : memref<16x24xf32>, memref<24x64xf32>) outs(%c : memref<16x64xf32, strided<[64, 1], offset: ?>>)
  return
}
