// RUN: ms-opt %s --split-input-file --ms-cpu-fuse-sibling-loops | FileCheck %s

// BatchNorm's backward: two sums over the batch and the positions of the same two inputs.
// Between them the first's second stage (its own fill and loop), a deallocation, and the
// second's allocation and zero fill. One loop in the first's place writes both sums, the
// shared inputs read once; the second's allocation and fill move before it, the first's
// second stage stays after it.
// CHECK-LABEL: func.func @bn_sums(
// CHECK-SAME:    %[[DY:[^:]+]]: memref<4x8x16xf32>, %[[X:[^:]+]]: memref<4x8x16xf32>, %[[OUT:[^:]+]]: memref<8xf32>
// CHECK:         %[[A:.+]] = memref.alloc() : memref<4x8xf32>
// CHECK-NEXT:    linalg.fill ins(%{{.+}} : f32) outs(%[[A]] :
// CHECK-NEXT:    %[[B:.+]] = memref.alloc() : memref<4x8xf32>
// CHECK-NEXT:    linalg.fill ins(%{{.+}} : f32) outs(%[[B]] :
// CHECK-NEXT:    linalg.generic
// CHECK-SAME:      iterator_types = ["parallel", "parallel", "reduction"]
// CHECK-SAME:      ins(%[[DY]], %[[X]] :
// CHECK-SAME:      outs(%[[A]], %[[B]] :
// CHECK-NEXT:    ^bb0(%[[IDY:[^:]+]]: f32, %[[IX:[^:]+]]: f32, %[[OA:[^:]+]]: f32, %[[OB:[^:]+]]: f32):
// CHECK-NEXT:      %[[SA:.+]] = arith.addf %[[OA]], %[[IDY]] : f32
// CHECK-NEXT:      %[[P:.+]] = arith.mulf %[[IDY]], %[[IX]] : f32
// CHECK-NEXT:      %[[SB:.+]] = arith.addf %[[OB]], %[[P]] : f32
// CHECK-NEXT:      linalg.yield %[[SA]], %[[SB]] : f32, f32
// CHECK:         linalg.fill ins(%{{.+}} : f32) outs(%[[OUT]] :
// CHECK-NEXT:    linalg.generic
// CHECK-SAME:      ins(%[[A]] :
// CHECK:         memref.dealloc %[[A]]
// CHECK-NOT:     linalg.generic
// CHECK:         memref.dealloc %[[B]]
// CHECK-NEXT:    return
func.func @bn_sums(%dy: memref<4x8x16xf32>, %x: memref<4x8x16xf32>, %out: memref<8xf32>) {
  %zero = arith.constant 0.0 : f32
  %a = memref.alloc() : memref<4x8xf32>
  linalg.fill ins(%zero : f32) outs(%a : memref<4x8xf32>)
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%dy : memref<4x8x16xf32>) outs(%a : memref<4x8xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %0 = arith.addf %acc, %in : f32
    linalg.yield %0 : f32
  }
  linalg.fill ins(%zero : f32) outs(%out : memref<8xf32>)
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>], iterator_types = ["reduction", "parallel"]} ins(%a : memref<4x8xf32>) outs(%out : memref<8xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %0 = arith.addf %acc, %in : f32
    linalg.yield %0 : f32
  }
  memref.dealloc %a : memref<4x8xf32>
  %b = memref.alloc() : memref<4x8xf32>
  linalg.fill ins(%zero : f32) outs(%b : memref<4x8xf32>)
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%dy, %x : memref<4x8x16xf32>, memref<4x8x16xf32>) outs(%b : memref<4x8xf32>) {
  ^bb0(%in: f32, %in_1: f32, %acc: f32):
    %0 = arith.mulf %in, %in_1 : f32
    %1 = arith.addf %acc, %0 : f32
    linalg.yield %1 : f32
  }
  memref.dealloc %b : memref<4x8xf32>
  return
}

// -----

// Three elementwise loops reading %x: one loop writing the three outputs.
// CHECK-LABEL: func.func @three(
// CHECK-SAME:    %[[X:[^:]+]]: memref<64xf32>, %[[Y:[^:]+]]: memref<64xf32>, %[[P:[^:]+]]: memref<64xf32>, %[[Q:[^:]+]]: memref<64xf32>, %[[R:[^:]+]]: memref<64xf32>
// CHECK-NEXT:    linalg.generic
// CHECK-SAME:      ins(%[[X]], %[[Y]] :
// CHECK-SAME:      outs(%[[P]], %[[Q]], %[[R]] :
// CHECK:           linalg.yield %{{.+}}, %{{.+}}, %{{.+}} : f32, f32, f32
// CHECK-NOT:     linalg.generic
func.func @three(%x: memref<64xf32>, %y: memref<64xf32>, %p: memref<64xf32>, %q: memref<64xf32>, %r: memref<64xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%x : memref<64xf32>) outs(%p : memref<64xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.addf %in, %in : f32
    linalg.yield %0 : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%x, %y : memref<64xf32>, memref<64xf32>) outs(%q : memref<64xf32>) {
  ^bb0(%in: f32, %in_1: f32, %out: f32):
    %0 = arith.mulf %in, %in_1 : f32
    linalg.yield %0 : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%x : memref<64xf32>) outs(%r : memref<64xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.mulf %in, %in : f32
    linalg.yield %0 : f32
  }
  return
}

// -----

// The second reads what the first writes: not siblings.
// CHECK-LABEL: func.func @dependent(
// CHECK-COUNT-2: linalg.generic
func.func @dependent(%x: memref<64xf32>, %p: memref<64xf32>, %q: memref<64xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%x : memref<64xf32>) outs(%p : memref<64xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.addf %in, %in : f32
    linalg.yield %0 : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%x, %p : memref<64xf32>, memref<64xf32>) outs(%q : memref<64xf32>) {
  ^bb0(%in: f32, %in_1: f32, %out: f32):
    %0 = arith.mulf %in, %in_1 : f32
    linalg.yield %0 : f32
  }
  return
}

// -----

// The second writes the buffer the first reads (%x, in place): the first must read all of
// it before. Not fused.
// CHECK-LABEL: func.func @overwrites_input(
// CHECK-COUNT-2: linalg.generic
func.func @overwrites_input(%x: memref<64xf32>, %y: memref<64xf32>, %p: memref<64xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%x, %y : memref<64xf32>, memref<64xf32>) outs(%p : memref<64xf32>) {
  ^bb0(%in: f32, %in_1: f32, %out: f32):
    %0 = arith.addf %in, %in_1 : f32
    linalg.yield %0 : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%y : memref<64xf32>) outs(%x : memref<64xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.mulf %in, %in : f32
    linalg.yield %0 : f32
  }
  return
}

// -----

// A copy into the second's input between them, other loop sizes, a call between them, the
// same output: none fused.
// CHECK-LABEL: func.func @kept_apart(
// CHECK-COUNT-7: linalg.generic
// CHECK-NOT:     linalg.generic
func.func private @opaque(memref<64xf32>)
func.func @kept_apart(%x: memref<64xf32>, %y: memref<64xf32>, %w: memref<64xf32>, %s: memref<32xf32>, %p: memref<64xf32>, %q: memref<64xf32>, %r: memref<32xf32>, %t: memref<64xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%x : memref<64xf32>) outs(%p : memref<64xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }
  memref.copy %y, %w : memref<64xf32> to memref<64xf32>
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%x, %w : memref<64xf32>, memref<64xf32>) outs(%q : memref<64xf32>) {
  ^bb0(%in: f32, %in_1: f32, %out: f32):
    %0 = arith.addf %in, %in_1 : f32
    linalg.yield %0 : f32
  }
  %head = memref.subview %x[0] [32] [1] : memref<64xf32> to memref<32xf32, strided<[1]>>
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%head : memref<32xf32, strided<[1]>>) outs(%r : memref<32xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%y : memref<64xf32>) outs(%t : memref<64xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }
  func.call @opaque(%y) : (memref<64xf32>) -> ()
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%y : memref<64xf32>) outs(%w : memref<64xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.addf %in, %in : f32
    linalg.yield %0 : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%s : memref<32xf32>) outs(%r : memref<32xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%s : memref<32xf32>) outs(%r : memref<32xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.mulf %in, %in : f32
    linalg.yield %0 : f32
  }
  return
}
