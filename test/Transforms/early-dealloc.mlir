// ms-early-dealloc frees each buffer right after its last use in its block.
// RUN: ms-opt %s --ms-early-dealloc --split-input-file | FileCheck %s

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
