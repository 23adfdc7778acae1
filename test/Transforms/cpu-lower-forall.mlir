// RUN: ms-opt %s --ms-cpu-lower-forall="threads=2" | FileCheck %s
// RUN: ms-opt %s --ms-cpu-lower-forall="threads=1" | FileCheck %s --check-prefix=SEQ

// scf.forall becomes an OpenMP worksharing loop. One whose iterations call a function (a
// convolution's images, each a matmul kernel) and that has more iterations than threads
// hands them out one at a time (schedule(dynamic)); one iteration per thread, and many
// short iterations without calls (row tiles), stay static (no schedule clause). With one
// thread every forall is a plain loop.
// CHECK:       module attributes {ms.openmp}
// CHECK-LABEL: func.func @images(
// CHECK:         omp.parallel
// CHECK:           omp.wsloop schedule(dynamic) {
// CHECK:             omp.loop_nest
// CHECK:               func.call @kernel
// CHECK-LABEL: func.func @halves(
// CHECK:           omp.wsloop {
// CHECK:             func.call @kernel
// CHECK-LABEL: func.func @rows(
// CHECK:           omp.wsloop {
// CHECK-NOT:         func.call
// CHECK:           memref.store
// SEQ-NOT:     omp.
// SEQ-LABEL:   func.func @images(
// SEQ:           scf.for
// SEQ:             func.call @kernel
func.func private @kernel(%x: memref<16xf32>)
func.func @images(%x: memref<64x16xf32>) {
  scf.forall (%i) in (64) {
    %v = memref.subview %x[%i, 0] [1, 16] [1, 1] : memref<64x16xf32> to memref<16xf32, strided<[1], offset: ?>>
    %a = memref.alloc() : memref<16xf32>
    memref.copy %v, %a : memref<16xf32, strided<[1], offset: ?>> to memref<16xf32>
    func.call @kernel(%a) : (memref<16xf32>) -> ()
    memref.dealloc %a : memref<16xf32>
  }
  return
}
func.func @halves(%a: memref<16xf32>) {
  scf.forall (%i) in (2) {
    func.call @kernel(%a) : (memref<16xf32>) -> ()
  }
  return
}
func.func @rows(%x: memref<512xf32>) {
  %f = arith.constant 1.0 : f32
  scf.forall (%i) in (512) {
    memref.store %f, %x[%i] : memref<512xf32>
  }
  return
}
