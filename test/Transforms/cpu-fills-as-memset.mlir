// ms-cpu-fills-as-memset: a zero fill of a whole contiguous buffer (at any depth of a function)
// becomes llvm.intr.memset of the buffer's bytes; fills of other values, of strided views or
// in matmul kernels stay linalg.fill.
// RUN: ms-opt %s --ms-cpu-fills-as-memset --split-input-file | FileCheck %s

// CHECK-LABEL: func.func @zero_f32
// CHECK-SAME:    (%[[BUF:.+]]: memref<32x64xf32>)
// CHECK:         %[[INDEX:.+]] = memref.extract_aligned_pointer_as_index %[[BUF]] : memref<32x64xf32> -> index
// CHECK:         %[[INT:.+]] = arith.index_cast %[[INDEX]] : index to i64
// CHECK:         %[[PTR:.+]] = llvm.inttoptr %[[INT]] : i64 to !llvm.ptr
// CHECK-DAG:     %[[ZERO:.+]] = llvm.mlir.constant(0 : i8) : i8
// CHECK-DAG:     %[[BYTES:.+]] = llvm.mlir.constant(8192 : i64) : i64
// CHECK:         "llvm.intr.memset"(%[[PTR]], %[[ZERO]], %[[BYTES]]) <{isVolatile = false}>
// CHECK-NOT:     linalg.fill
func.func @zero_f32(%buf: memref<32x64xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%buf : memref<32x64xf32>)
  return
}

// -----

// An allocation, of 16-bit integers: 3 x 5 x 2 bytes.
// CHECK-LABEL: func.func @zero_i16_alloc
// CHECK:         %[[BUF:.+]] = memref.alloc() : memref<3x5xi16>
// CHECK:         memref.extract_aligned_pointer_as_index %[[BUF]]
// CHECK:         %[[BYTES:.+]] = llvm.mlir.constant(30 : i64) : i64
// CHECK:         "llvm.intr.memset"(%{{.+}}, %{{.+}}, %[[BYTES]])
// CHECK-NOT:     linalg.fill
// CHECK:         return %[[BUF]]
func.func @zero_i16_alloc() -> memref<3x5xi16> {
  %zero = arith.constant 0 : i16
  %buf = memref.alloc() : memref<3x5xi16>
  linalg.fill ins(%zero : i16) outs(%buf : memref<3x5xi16>)
  return %buf : memref<3x5xi16>
}

// -----

// Not all-zero bytes (-0.0, 1.0), not contiguous from the start (a strided view), not a
// whole-byte element (i1), a dynamic size: each fill stays.
// CHECK-LABEL: func.func @kept
// CHECK-COUNT-5: linalg.fill
// CHECK-NOT:     llvm.intr.memset
func.func @kept(%a: memref<8x8xf32>, %b: memref<4x4xi1>, %n: index) {
  %negative_zero = arith.constant -0.0 : f32
  %one = arith.constant 1.0 : f32
  %zero = arith.constant 0.0 : f32
  %false = arith.constant false
  linalg.fill ins(%negative_zero : f32) outs(%a : memref<8x8xf32>)
  linalg.fill ins(%one : f32) outs(%a : memref<8x8xf32>)
  %view = memref.subview %a[0, 0] [8, 4] [1, 1] : memref<8x8xf32> to memref<8x4xf32, strided<[8, 1]>>
  linalg.fill ins(%zero : f32) outs(%view : memref<8x4xf32, strided<[8, 1]>>)
  linalg.fill ins(%false : i1) outs(%b : memref<4x4xi1>)
  %d = memref.alloc(%n) : memref<?xf32>
  linalg.fill ins(%zero : f32) outs(%d : memref<?xf32>)
  memref.dealloc %d : memref<?xf32>
  return
}

// -----

// Inside a loop (a per-image padded copy's zeros) the fill of a whole buffer is a memset too,
// the fill of a row (a strided view) stays; in a matmul kernel, at any depth, it is the
// register tiles' (their first panel starts from zeros).
// CHECK-LABEL: func.func @in_loop
// CHECK:         scf.for %[[I:[a-z0-9]+]] =
// CHECK:           "llvm.intr.memset"
// CHECK:           %[[ROW:.+]] = memref.subview %{{.+}}[%[[I]], 0] [1, 8]
// CHECK-NEXT:      linalg.fill ins(%{{.+}} : f32) outs(%[[ROW]]
// CHECK-LABEL: func.func private @kernel
// CHECK:         linalg.fill
// CHECK-NEXT:    linalg.matmul
// CHECK-NEXT:    scf.for
// CHECK-NEXT:      linalg.fill
// CHECK-NOT:     llvm.intr.memset
func.func @in_loop(%a: memref<8x8xf32>, %b: memref<8x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %c4 step %c1 {
    linalg.fill ins(%zero : f32) outs(%a : memref<8x8xf32>)
    %row = memref.subview %b[%i, 0] [1, 8] [1, 1] : memref<8x8xf32> to memref<1x8xf32, strided<[8, 1], offset: ?>>
    linalg.fill ins(%zero : f32) outs(%row : memref<1x8xf32, strided<[8, 1], offset: ?>>)
  }
  return
}

func.func private @kernel(%a: memref<8x8xf32>, %b: memref<8x8xf32>, %c: memref<8x8xf32>) attributes {ms.kernel = "matmul"} {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c1 = arith.constant 1 : index
  linalg.fill ins(%zero : f32) outs(%c : memref<8x8xf32>)
  linalg.matmul ins(%a, %b : memref<8x8xf32>, memref<8x8xf32>) outs(%c : memref<8x8xf32>)
  scf.for %i = %c0 to %c2 step %c1 {
    linalg.fill ins(%zero : f32) outs(%c : memref<8x8xf32>)
  }
  return
}
