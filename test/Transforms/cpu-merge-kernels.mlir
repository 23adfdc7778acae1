// RUN: ms-opt %s --split-input-file --ms-cpu-merge-kernels="vector-bits=512 l1d-bytes=49152 l1d-ways=12" | FileCheck %s

// Two kernels the same but for their names and fusion region ids: both calls go to the
// first, the copy is erased. A third differs in its epilogue's constant and stays.
// CHECK-LABEL: func.func @projections(
// CHECK-SAME:    %[[X:.+]]: memref<128x64xf32>, %[[W1:.+]]: memref<64x64xf32>, %[[W2:.+]]: memref<64x64xf32>, %[[B:.+]]: memref<64xf32>, %[[C1:.+]]: memref<128x64xf32>, %[[C2:.+]]: memref<128x64xf32>
// CHECK-NEXT:    call @projections__matmul0(%[[X]], %[[W1]], %[[C1]], %[[B]])
// CHECK-NEXT:    call @projections__matmul0(%[[X]], %[[W2]], %[[C2]], %[[B]])
// CHECK-NEXT:    call @projections__matmul2(%[[X]], %[[W2]], %[[C2]], %[[B]])
// CHECK:       func.func private @projections__matmul0(
// CHECK-NOT:   func.func private @projections__matmul1(
// CHECK:       func.func private @projections__matmul2(
// CHECK:         arith.constant 2.0
func.func @projections(%x: memref<128x64xf32>, %w1: memref<64x64xf32>, %w2: memref<64x64xf32>, %b: memref<64xf32>, %c1: memref<128x64xf32>, %c2: memref<128x64xf32>) {
  call @projections__matmul0(%x, %w1, %c1, %b) : (memref<128x64xf32>, memref<64x64xf32>, memref<128x64xf32>, memref<64xf32>) -> ()
  call @projections__matmul1(%x, %w2, %c2, %b) : (memref<128x64xf32>, memref<64x64xf32>, memref<128x64xf32>, memref<64xf32>) -> ()
  call @projections__matmul2(%x, %w2, %c2, %b) : (memref<128x64xf32>, memref<64x64xf32>, memref<128x64xf32>, memref<64xf32>) -> ()
  return
}
func.func private @projections__matmul0(%a: memref<128x64xf32>, %w: memref<64x64xf32>, %c: memref<128x64xf32>, %b: memref<64xf32>) attributes {ms.kernel = "matmul"} {
  %one = arith.constant 1.0 : f32
  linalg.matmul {ms.region = {id = 3 : i64, kind = "matmul"}} ins(%a, %w : memref<128x64xf32>, memref<64x64xf32>) outs(%c : memref<128x64xf32>)
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%b : memref<64xf32>) outs(%c : memref<128x64xf32>) attrs = {ms.region = {id = 3 : i64, kind = "matmul"}} {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %out, %in : f32
    %t = arith.mulf %s, %one : f32
    linalg.yield %t : f32
  }
  return
}
func.func private @projections__matmul1(%a: memref<128x64xf32>, %w: memref<64x64xf32>, %c: memref<128x64xf32>, %b: memref<64xf32>) attributes {ms.kernel = "matmul"} {
  %one = arith.constant 1.0 : f32
  linalg.matmul {ms.region = {id = 4 : i64, kind = "matmul"}} ins(%a, %w : memref<128x64xf32>, memref<64x64xf32>) outs(%c : memref<128x64xf32>)
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%b : memref<64xf32>) outs(%c : memref<128x64xf32>) attrs = {ms.region = {id = 4 : i64, kind = "matmul"}} {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %out, %in : f32
    %t = arith.mulf %s, %one : f32
    linalg.yield %t : f32
  }
  return
}
func.func private @projections__matmul2(%a: memref<128x64xf32>, %w: memref<64x64xf32>, %c: memref<128x64xf32>, %b: memref<64xf32>) attributes {ms.kernel = "matmul"} {
  %two = arith.constant 2.0 : f32
  linalg.matmul {ms.region = {id = 5 : i64, kind = "matmul"}} ins(%a, %w : memref<128x64xf32>, memref<64x64xf32>) outs(%c : memref<128x64xf32>)
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%b : memref<64xf32>) outs(%c : memref<128x64xf32>) attrs = {ms.region = {id = 5 : i64, kind = "matmul"}} {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %out, %in : f32
    %t = arith.mulf %s, %two : f32
    linalg.yield %t : f32
  }
  return
}

// -----

// The same products with their operands swapped in the epilogue (a value flows elsewhere):
// not the same kernel.
// CHECK-LABEL: func.func @operand_order(
// CHECK-NEXT:    call @operand_order__matmul0(
// CHECK-NEXT:    call @operand_order__matmul1(
// CHECK:       func.func private @operand_order__matmul1(
func.func @operand_order(%x: memref<8x8xf32>, %y: memref<8x8xf32>, %c: memref<8x8xf32>) {
  call @operand_order__matmul0(%x, %y, %c) : (memref<8x8xf32>, memref<8x8xf32>, memref<8x8xf32>) -> ()
  call @operand_order__matmul1(%x, %y, %c) : (memref<8x8xf32>, memref<8x8xf32>, memref<8x8xf32>) -> ()
  return
}
func.func private @operand_order__matmul0(%a: memref<8x8xf32>, %b: memref<8x8xf32>, %c: memref<8x8xf32>) attributes {ms.kernel = "matmul"} {
  linalg.matmul ins(%a, %b : memref<8x8xf32>, memref<8x8xf32>) outs(%c : memref<8x8xf32>)
  return
}
func.func private @operand_order__matmul1(%a: memref<8x8xf32>, %b: memref<8x8xf32>, %c: memref<8x8xf32>) attributes {ms.kernel = "matmul"} {
  linalg.matmul ins(%b, %a : memref<8x8xf32>, memref<8x8xf32>) outs(%c : memref<8x8xf32>)
  return
}

// -----

// The same kernel called inside a parallel loop (one image of a convolution per thread) and
// outside it: the schedule threads one and not the other, so both stay. Two calls inside the
// loop share one.
// CHECK-LABEL: func.func @contexts(
// CHECK:         scf.forall
// CHECK-NEXT:      func.call @contexts__matmul0(
// CHECK-NEXT:      func.call @contexts__matmul0(
// CHECK:         call @contexts__matmul2(
// CHECK-NOT:   func.func private @contexts__matmul1(
// CHECK:       func.func private @contexts__matmul2(
func.func @contexts(%x: memref<8x8xf32>, %y: memref<8x8xf32>, %c: memref<8x8xf32>) {
  scf.forall (%i) in (2) {
    func.call @contexts__matmul0(%x, %y, %c) : (memref<8x8xf32>, memref<8x8xf32>, memref<8x8xf32>) -> ()
    func.call @contexts__matmul1(%x, %y, %c) : (memref<8x8xf32>, memref<8x8xf32>, memref<8x8xf32>) -> ()
  }
  call @contexts__matmul2(%x, %y, %c) : (memref<8x8xf32>, memref<8x8xf32>, memref<8x8xf32>) -> ()
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
  linalg.matmul ins(%a, %b : memref<8x8xf32>, memref<8x8xf32>) outs(%c : memref<8x8xf32>)
  return
}

// -----

// B's rows 4 KiB apart: the schedule packs B at the one call site, so these identical
// kernels keep a call each.
// CHECK-LABEL: func.func @packed(
// CHECK-NEXT:    call @packed__matmul0(
// CHECK-NEXT:    call @packed__matmul1(
// CHECK:       func.func private @packed__matmul1(
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
