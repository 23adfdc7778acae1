// RUN: ms-opt %s --split-input-file --ms-cpu-distinct-buffers | FileCheck %s

// Three buffers that differ at both calls. Their aligned pointers' positions in the LLVM
// signature: a 2-D memref is 7 values (allocated, aligned, offset, 2 sizes, 2 strides: its
// aligned pointer 1), the index one (7), a 1-D memref 5 (8-12: 9, then 13-17: 14).
// CHECK-LABEL: func.func private @apart(
// CHECK-SAME:    ms.distinct_pointers = array<i64: 1, 9, 14>
func.func private @apart(%a: memref<4x8xf32>, %n: index, %b: memref<8xf32>, %c: memref<8xf32>) {
  return
}
func.func @calls_apart(%x: memref<4x8xf32>, %y: memref<8xf32>, %n: index) {
  %z = memref.alloc() : memref<8xf32>
  func.call @apart(%x, %n, %y, %z) : (memref<4x8xf32>, index, memref<8xf32>, memref<8xf32>) -> ()
  %w = memref.alloc() : memref<8xf32>
  func.call @apart(%x, %n, %w, %z) : (memref<4x8xf32>, index, memref<8xf32>, memref<8xf32>) -> ()
  memref.dealloc %w : memref<8xf32>
  memref.dealloc %z : memref<8xf32>
  return
}

// -----

// The second call passes views of one buffer as its second and third arguments: the third
// is left out (the first and second still differ everywhere).
// CHECK-LABEL: func.func private @overlapping(
// CHECK-SAME:    ms.distinct_pointers = array<i64: 1, 6>
func.func private @overlapping(%a: memref<8xf32>, %b: memref<4xf32, strided<[1], offset: ?>>, %c: memref<4xf32, strided<[1], offset: ?>>) {
  return
}
func.func @calls_overlapping(%x: memref<8xf32>, %y: memref<8xf32>, %i: index, %j: index) {
  %lo = memref.subview %y[%i] [4] [1] : memref<8xf32> to memref<4xf32, strided<[1], offset: ?>>
  %hi = memref.subview %y[%j] [4] [1] : memref<8xf32> to memref<4xf32, strided<[1], offset: ?>>
  %z = memref.alloc() : memref<8xf32>
  %zlo = memref.subview %z[%i] [4] [1] : memref<8xf32> to memref<4xf32, strided<[1], offset: ?>>
  func.call @overlapping(%x, %lo, %zlo) : (memref<8xf32>, memref<4xf32, strided<[1], offset: ?>>, memref<4xf32, strided<[1], offset: ?>>) -> ()
  func.call @overlapping(%x, %lo, %hi) : (memref<8xf32>, memref<4xf32, strided<[1], offset: ?>>, memref<4xf32, strided<[1], offset: ?>>) -> ()
  memref.dealloc %z : memref<8xf32>
  return
}

// -----

// Left alone: a public function, a function nobody calls, one called with the same buffer
// twice (one distinct argument is no information), one taking a vector.
// CHECK-LABEL: func.func @public(
// CHECK-NOT:     ms.distinct_pointers
// CHECK-LABEL: func.func private @uncalled(
// CHECK-NOT:     ms.distinct_pointers
// CHECK-LABEL: func.func private @same_twice(
// CHECK-NOT:     ms.distinct_pointers
// CHECK-LABEL: func.func private @vector_argument(
// CHECK-NOT:     ms.distinct_pointers
func.func @public(%a: memref<8xf32>, %b: memref<8xf32>) {
  return
}
func.func private @uncalled(%a: memref<8xf32>, %b: memref<8xf32>) {
  return
}
func.func private @same_twice(%a: memref<8xf32>, %b: memref<8xf32>) {
  return
}
func.func private @vector_argument(%a: memref<8xf32>, %b: memref<8xf32>, %v: vector<4xf32>) {
  return
}
func.func @caller(%x: memref<8xf32>, %y: memref<8xf32>, %v: vector<4xf32>) {
  func.call @public(%x, %y) : (memref<8xf32>, memref<8xf32>) -> ()
  func.call @same_twice(%x, %x) : (memref<8xf32>, memref<8xf32>) -> ()
  func.call @vector_argument(%x, %y, %v) : (memref<8xf32>, memref<8xf32>, vector<4xf32>) -> ()
  return
}
