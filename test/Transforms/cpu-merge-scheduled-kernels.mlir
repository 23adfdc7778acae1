// RUN: ms-opt %s --split-input-file --ms-cpu-merge-scheduled-kernels | FileCheck %s
// RUN: ms-opt %s --split-input-file --ms-cpu-merge-kernels="vector-bits=512 l1d-bytes=49152 l1d-ways=12" --ms-cpu-matmul-schedule="vector-bits=512 l1d-bytes=49152 l1d-ways=12" --ms-cpu-merge-scheduled-kernels | FileCheck %s --check-prefix=SCHED

// B's rows 4 KiB apart: ms-cpu-merge-kernels leaves both kernels (the schedule packs B at
// each one's call site); scheduled, they are the same, and both calls go to the first.
// CHECK-LABEL: func.func @packed(
// CHECK-NEXT:    call @packed__matmul0(
// CHECK-NEXT:    call @packed__matmul0(
// CHECK-NOT:   func.func private @packed__matmul1(
// SCHED-LABEL: func.func @packed(
// SCHED:         call @packed__matmul0(
// SCHED:         call @packed__matmul0(
// SCHED:       func.func private @packed__matmul0(
// SCHED:         vector.fma
// SCHED-NOT:   func.func private @packed__matmul1(
func.func @packed(%a: memref<128x128xf32>, %b: memref<128x1024xf32>, %c: memref<128x1024xf32>, %d: memref<128x1024xf32>) {
  call @packed__matmul0(%a, %b, %c) : (memref<128x128xf32>, memref<128x1024xf32>, memref<128x1024xf32>) -> ()
  call @packed__matmul1(%a, %b, %d) : (memref<128x128xf32>, memref<128x1024xf32>, memref<128x1024xf32>) -> ()
  return
}
func.func private @packed__matmul0(%a: memref<128x128xf32>, %b: memref<128x1024xf32>, %c: memref<128x1024xf32>) attributes {ms.kernel = "matmul"} {
  linalg.matmul ins(%a, %b : memref<128x128xf32>, memref<128x1024xf32>) outs(%c : memref<128x1024xf32>)
  return
}
func.func private @packed__matmul1(%a: memref<128x128xf32>, %b: memref<128x1024xf32>, %c: memref<128x1024xf32>) attributes {ms.kernel = "matmul"} {
  linalg.matmul ins(%a, %b : memref<128x128xf32>, memref<128x1024xf32>) outs(%c : memref<128x1024xf32>)
  return
}

// -----

// Called inside a parallel loop and outside it: after the schedule a kernel's body holds
// its threading decision (an scf.forall where it was threaded), so the same bodies merge
// whatever their calls' context; a kernel that differs (its operands swapped) stays, and so
// do functions that are not kernels, the same or not.
// CHECK-LABEL: func.func @contexts(
// CHECK:         scf.forall
// CHECK-NEXT:      func.call @contexts__matmul0(
// CHECK:         call @contexts__matmul0(
// CHECK-NEXT:    call @contexts__matmul2(
// CHECK-NEXT:    call @helper(
// CHECK-NEXT:    call @helper_copy(
// CHECK:       func.func private @contexts__matmul0(
// CHECK-NOT:   func.func private @contexts__matmul1(
// CHECK:       func.func private @contexts__matmul2(
// CHECK:       func.func private @helper(
// CHECK:       func.func private @helper_copy(
// CHECK-NOT:     ms.distinct
func.func @contexts(%x: memref<8x8xf32>, %y: memref<8x8xf32>, %c: memref<8x8xf32>) {
  scf.forall (%i) in (2) {
    func.call @contexts__matmul0(%x, %y, %c) : (memref<8x8xf32>, memref<8x8xf32>, memref<8x8xf32>) -> ()
  }
  call @contexts__matmul1(%x, %y, %c) : (memref<8x8xf32>, memref<8x8xf32>, memref<8x8xf32>) -> ()
  call @contexts__matmul2(%x, %y, %c) : (memref<8x8xf32>, memref<8x8xf32>, memref<8x8xf32>) -> ()
  call @helper(%x, %y, %c) : (memref<8x8xf32>, memref<8x8xf32>, memref<8x8xf32>) -> ()
  call @helper_copy(%x, %y, %c) : (memref<8x8xf32>, memref<8x8xf32>, memref<8x8xf32>) -> ()
  return
}
func.func private @contexts__matmul0(%a: memref<8x8xf32>, %b: memref<8x8xf32>, %c: memref<8x8xf32>) attributes {ms.kernel = "matmul"} {
  linalg.matmul ins(%a, %b : memref<8x8xf32>, memref<8x8xf32>) outs(%c : memref<8x8xf32>)
  return
}
func.func private @contexts__matmul1(%a: memref<8x8xf32>, %b: memref<8x8xf32>, %c: memref<8x8xf32>) attributes {ms.kernel = "matmul"} {
  linalg.matmul ins(%a, %b : memref<8x8xf32>, memref<8x8xf32>) outs(%c : memref<8x8xf32>)
  return
}
func.func private @contexts__matmul2(%a: memref<8x8xf32>, %b: memref<8x8xf32>, %c: memref<8x8xf32>) attributes {ms.kernel = "matmul"} {
  linalg.matmul ins(%b, %a : memref<8x8xf32>, memref<8x8xf32>) outs(%c : memref<8x8xf32>)
  return
}
func.func private @helper(%a: memref<8x8xf32>, %b: memref<8x8xf32>, %c: memref<8x8xf32>) {
  linalg.matmul ins(%a, %b : memref<8x8xf32>, memref<8x8xf32>) outs(%c : memref<8x8xf32>)
  return
}
func.func private @helper_copy(%a: memref<8x8xf32>, %b: memref<8x8xf32>, %c: memref<8x8xf32>) {
  linalg.matmul ins(%a, %b : memref<8x8xf32>, memref<8x8xf32>) outs(%c : memref<8x8xf32>)
  return
}
