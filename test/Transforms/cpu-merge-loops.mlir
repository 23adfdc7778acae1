// RUN: ms-opt %s --split-input-file --ms-cpu-merge-loops | FileCheck %s

// Three outlined nests: the first two apply one loop to different buffers of one type (both
// calls go to the first function, the copy is erased); the third scales by another constant
// and stays.
// CHECK-LABEL: func.func @step(
// CHECK-SAME:    %[[A:.+]]: memref<64xf32>, %[[B:.+]]: memref<64xf32>, %[[C:.+]]: memref<64xf32>
// CHECK-NEXT:    call @step__loop0(%[[A]], %[[C]])
// CHECK-NEXT:    call @step__loop0(%[[B]], %[[C]])
// CHECK-NEXT:    call @step__loop2(%[[A]], %[[C]])
// CHECK:       func.func private @step__loop0(
// CHECK-NOT:   func.func private @step__loop1(
// CHECK:       func.func private @step__loop2(
// CHECK:         arith.constant 3.0
func.func @step(%a: memref<64xf32>, %b: memref<64xf32>, %c: memref<64xf32>) {
  call @step__loop0(%a, %c) : (memref<64xf32>, memref<64xf32>) -> ()
  call @step__loop1(%b, %c) : (memref<64xf32>, memref<64xf32>) -> ()
  call @step__loop2(%a, %c) : (memref<64xf32>, memref<64xf32>) -> ()
  return
}
func.func private @step__loop0(%x: memref<64xf32>, %y: memref<64xf32>) attributes {ms.outlined_loop} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %k = arith.constant 2.0 : f32
  scf.for %i = %c0 to %c64 step %c1 {
    %v = memref.load %x[%i] : memref<64xf32>
    %w = arith.mulf %v, %k : f32
    memref.store %w, %y[%i] : memref<64xf32>
  }
  return
}
func.func private @step__loop1(%x: memref<64xf32>, %y: memref<64xf32>) attributes {ms.outlined_loop} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %k = arith.constant 2.0 : f32
  scf.for %i = %c0 to %c64 step %c1 {
    %v = memref.load %x[%i] : memref<64xf32>
    %w = arith.mulf %v, %k : f32
    memref.store %w, %y[%i] : memref<64xf32>
  }
  return
}
func.func private @step__loop2(%x: memref<64xf32>, %y: memref<64xf32>) attributes {ms.outlined_loop} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %k = arith.constant 3.0 : f32
  scf.for %i = %c0 to %c64 step %c1 {
    %v = memref.load %x[%i] : memref<64xf32>
    %w = arith.mulf %v, %k : f32
    memref.store %w, %y[%i] : memref<64xf32>
  }
  return
}

// -----

// The same loop body reading its arguments the other way round is another function; a
// function the outlining did not make (no ms.outlined_loop) is never merged.
// CHECK-LABEL: func.func @swapped(
// CHECK-NEXT:    call @swapped__loop0(
// CHECK-NEXT:    call @swapped__loop1(
// CHECK-NEXT:    call @helper(
// CHECK-NEXT:    call @helper_copy(
// CHECK:       func.func private @swapped__loop0(
// CHECK:       func.func private @swapped__loop1(
// CHECK:       func.func private @helper(
// CHECK:       func.func private @helper_copy(
func.func @swapped(%a: memref<64xf32>, %b: memref<64xf32>) {
  call @swapped__loop0(%a, %b) : (memref<64xf32>, memref<64xf32>) -> ()
  call @swapped__loop1(%a, %b) : (memref<64xf32>, memref<64xf32>) -> ()
  call @helper(%a) : (memref<64xf32>) -> ()
  call @helper_copy(%a) : (memref<64xf32>) -> ()
  return
}
func.func private @swapped__loop0(%x: memref<64xf32>, %y: memref<64xf32>) attributes {ms.outlined_loop} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  scf.for %i = %c0 to %c64 step %c1 {
    %v = memref.load %x[%i] : memref<64xf32>
    memref.store %v, %y[%i] : memref<64xf32>
  }
  return
}
func.func private @swapped__loop1(%x: memref<64xf32>, %y: memref<64xf32>) attributes {ms.outlined_loop} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  scf.for %i = %c0 to %c64 step %c1 {
    %v = memref.load %y[%i] : memref<64xf32>
    memref.store %v, %x[%i] : memref<64xf32>
  }
  return
}
func.func private @helper(%x: memref<64xf32>) {
  %f = arith.constant 1.0 : f32
  %c0 = arith.constant 0 : index
  memref.store %f, %x[%c0] : memref<64xf32>
  return
}
func.func private @helper_copy(%x: memref<64xf32>) {
  %f = arith.constant 1.0 : f32
  %c0 = arith.constant 0 : index
  memref.store %f, %x[%c0] : memref<64xf32>
  return
}
