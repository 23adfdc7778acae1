// ms-late-alloc allocates each buffer just before its first use, ms-early-dealloc frees it
// right after its last use in its block (passes/buffer_lifetimes.py).
// RUN: ms-opt %s --ms-early-dealloc --split-input-file | FileCheck %s
// RUN: ms-opt %s --ms-late-alloc --split-input-file | FileCheck %s --check-prefix=LATE

// Each buffer is freed after its last reader; a view (the subview) is a use of its buffer;
// a use inside a loop counts as a use by the loop.
// CHECK-LABEL: func.func @chain
// CHECK: %[[A:.+]] = memref.alloc()
// CHECK: %[[B:.+]] = memref.alloc()
// CHECK: memref.copy %[[A]], %[[B]]
// CHECK-NEXT: memref.dealloc %[[A]]
// CHECK: %[[V:.+]] = memref.subview %[[B]]
// CHECK: scf.for
// CHECK: memref.load %[[V]]
// CHECK: }
// CHECK-NEXT: memref.dealloc %[[B]]
// CHECK-NEXT: memref.copy %arg0, %arg1
// CHECK-NEXT: return
func.func @chain(%x: memref<8xf32>, %out: memref<8xf32>) {
  %a = memref.alloc() : memref<8xf32>
  memref.copy %x, %a : memref<8xf32> to memref<8xf32>
  %b = memref.alloc() : memref<8xf32>
  memref.copy %a, %b : memref<8xf32> to memref<8xf32>
  %v = memref.subview %b[2] [4] [1] : memref<8xf32> to memref<4xf32, strided<[1], offset: 2>>
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %c4 step %c1 {
    %e = memref.load %v[%i] : memref<4xf32, strided<[1], offset: 2>>
    memref.store %e, %out[%i] : memref<8xf32>
  }
  memref.copy %x, %out : memref<8xf32> to memref<8xf32>
  memref.dealloc %a : memref<8xf32>
  memref.dealloc %b : memref<8xf32>
  return
}

// -----

// Left alone: a buffer the block did not allocate (a function argument) and a dealloc
// whose buffer is used by nothing after its allocation (already in place).
// CHECK-LABEL: func.func @untouched
// CHECK: memref.copy %arg0, %arg1
// CHECK-NEXT: memref.dealloc %arg0
// CHECK-NEXT: return
func.func @untouched(%x: memref<8xf32>, %out: memref<8xf32>) {
  memref.copy %x, %out : memref<8xf32> to memref<8xf32>
  memref.dealloc %x : memref<8xf32>
  return
}

// -----

// An allocation hoisted to the top (with the zero fill of a matmul output) moves down to
// its first use; the fill moves with it, to just before the op that reads the buffer.
// LATE-LABEL: func.func @hoisted
// LATE: memref.copy %arg0, %arg1
// LATE-NEXT: %[[C:.+]] = arith.constant
// LATE-NEXT: %[[A:.+]] = memref.alloc()
// LATE-NEXT: linalg.fill ins(%{{.+}} : f32) outs(%[[A]] : memref<8xf32>)
// LATE-NEXT: memref.copy %[[A]], %arg1
// LATE-NEXT: memref.dealloc %[[A]]
func.func @hoisted(%x: memref<8xf32>, %out: memref<8xf32>) {
  %a = memref.alloc() : memref<8xf32>
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%a : memref<8xf32>)
  memref.copy %x, %out : memref<8xf32> to memref<8xf32>
  %c = arith.constant 1 : index
  memref.copy %a, %out : memref<8xf32> to memref<8xf32>
  memref.dealloc %a : memref<8xf32>
  return
}
