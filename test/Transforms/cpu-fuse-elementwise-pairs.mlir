// RUN: ms-opt %s --split-input-file --ms-cpu-fuse-elementwise-pairs | FileCheck %s

// Momentum: v' = v * 0.9 + g, then p' = p - 0.01 * v' reading v' back; a deallocation of
// the gradient between them. One loop in the first's place writes both, the second body
// taking v' from the first's yield, the dealloc after it.
// CHECK-LABEL: func.func @momentum(
// CHECK-SAME:    %[[P:[^:]+]]: memref<8x16xf32>, %[[V:[^:]+]]: memref<8x16xf32>, %[[G0:[^:]+]]: memref<8x16xf32>, %[[PO:[^:]+]]: memref<8x16xf32>, %[[VO:[^:]+]]: memref<8x16xf32>
// CHECK:         %[[G:.+]] = memref.alloc()
// CHECK:         memref.copy %[[G0]], %[[G]]
// CHECK-NEXT:    linalg.generic
// CHECK-SAME:      ins(%[[V]], %[[G]], %[[P]] :
// CHECK-SAME:      outs(%[[VO]], %[[PO]] :
// CHECK-NEXT:    ^bb0(%[[IV:[^:]+]]: f32, %[[IG:[^:]+]]: f32, %[[IP:[^:]+]]: f32, %{{[^:]+}}: f32, %{{[^:]+}}: f32):
// CHECK-NEXT:      %[[M:.+]] = arith.mulf %[[IV]], %{{.+}} : f32
// CHECK-NEXT:      %[[NV:.+]] = arith.addf %[[M]], %[[IG]] : f32
// CHECK-NEXT:      %[[S:.+]] = arith.mulf %[[NV]], %{{.+}} : f32
// CHECK-NEXT:      %[[NP:.+]] = arith.subf %[[IP]], %[[S]] : f32
// CHECK-NEXT:      linalg.yield %[[NV]], %[[NP]] : f32, f32
// CHECK:         memref.dealloc %[[G]]
// CHECK-NOT:     linalg.generic
// CHECK:         return
func.func @momentum(%p: memref<8x16xf32>, %v: memref<8x16xf32>, %g0: memref<8x16xf32>, %p_out: memref<8x16xf32>, %v_out: memref<8x16xf32>) {
  %m = arith.constant 0.9 : f32
  %lr = arith.constant 0.01 : f32
  %g = memref.alloc() : memref<8x16xf32>
  memref.copy %g0, %g : memref<8x16xf32> to memref<8x16xf32>
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%v, %g : memref<8x16xf32>, memref<8x16xf32>) outs(%v_out : memref<8x16xf32>) {
  ^bb0(%in: f32, %in_1: f32, %out: f32):
    %0 = arith.mulf %in, %m : f32
    %1 = arith.addf %0, %in_1 : f32
    linalg.yield %1 : f32
  }
  memref.dealloc %g : memref<8x16xf32>
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%p, %v_out : memref<8x16xf32>, memref<8x16xf32>) outs(%p_out : memref<8x16xf32>) {
  ^bb0(%in: f32, %in_1: f32, %out: f32):
    %0 = arith.mulf %in_1, %lr : f32
    %1 = arith.subf %in, %0 : f32
    linalg.yield %1 : f32
  }
  return
}

// -----

// The second reads the first's output transposed: iteration (i, j) would need element
// (j, i), written later. Not fused.
// CHECK-LABEL: func.func @transposed(
// CHECK-COUNT-2: linalg.generic
func.func @transposed(%x: memref<8x8xf32>, %y: memref<8x8xf32>, %z: memref<8x8xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x : memref<8x8xf32>) outs(%y : memref<8x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.addf %in, %in : f32
    linalg.yield %0 : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%y : memref<8x8xf32>) outs(%z : memref<8x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.mulf %in, %in : f32
    linalg.yield %0 : f32
  }
  return
}

// -----

// The second's other input is a view of the first's output (a row it reads for every
// row): fused, it would read rows the first has not written yet. Not fused.
// CHECK-LABEL: func.func @aliased(
// CHECK-COUNT-2: linalg.generic
func.func @aliased(%x: memref<8x8xf32>, %y: memref<8x8xf32>, %z: memref<8x8xf32>) {
  %last = memref.subview %y[7, 0] [1, 8] [1, 1] : memref<8x8xf32> to memref<8xf32, strided<[1], offset: 56>>
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x : memref<8x8xf32>) outs(%y : memref<8x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.addf %in, %in : f32
    linalg.yield %0 : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%y, %last : memref<8x8xf32>, memref<8xf32, strided<[1], offset: 56>>) outs(%z : memref<8x8xf32>) {
  ^bb0(%in: f32, %in_1: f32, %out: f32):
    %0 = arith.mulf %in, %in_1 : f32
    linalg.yield %0 : f32
  }
  return
}

// -----

// An op between them that is not a deallocation (a copy into the second's input): not fused.
// CHECK-LABEL: func.func @copy_between(
// CHECK-COUNT-2: linalg.generic
func.func @copy_between(%x: memref<8x8xf32>, %y: memref<8x8xf32>, %w: memref<8x8xf32>, %z: memref<8x8xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x : memref<8x8xf32>) outs(%y : memref<8x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.addf %in, %in : f32
    linalg.yield %0 : f32
  }
  memref.copy %x, %w : memref<8x8xf32> to memref<8x8xf32>
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%y, %w : memref<8x8xf32>, memref<8x8xf32>) outs(%z : memref<8x8xf32>) {
  ^bb0(%in: f32, %in_1: f32, %out: f32):
    %0 = arith.mulf %in, %in_1 : f32
    linalg.yield %0 : f32
  }
  return
}

// -----

// The second writes a buffer the first reads through a broadcast (every row of the first
// reads row 0 of %x, which the second overwrites): not fused.
// CHECK-LABEL: func.func @overwrites_input(
// CHECK-COUNT-2: linalg.generic
func.func @overwrites_input(%x: memref<8x8xf32>, %y: memref<8x8xf32>) {
  %row0 = memref.subview %x[0, 0] [1, 8] [1, 1] : memref<8x8xf32> to memref<8xf32, strided<[1]>>
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%row0 : memref<8xf32, strided<[1]>>) outs(%y : memref<8x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%y : memref<8x8xf32>) outs(%x : memref<8x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.addf %in, %in : f32
    linalg.yield %0 : f32
  }
  return
}
