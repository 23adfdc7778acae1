// ms-gpu-conv-implicit-gemm: a convolution's direct contraction (tagged ms.implicit_gemm by
// convert-ms-to-linalg{conv=implicit-gemm}) becomes one gpu.launch: a block per 32x32 tile of
// C (M = N*OH*OW rows, F columns), A and B tiles of 16 K-steps in workgroup memory, filled
// by all threads, a barrier, each thread's 2x2 accumulators (private memory) updated from
// the tiles, a barrier, and the accumulators added into the NCHW output.
// RUN: ms-opt %s --ms-gpu-conv-implicit-gemm --canonicalize --split-input-file | FileCheck %s

// M = 2*4*6 = 48, F = 5, K = 3*3*2 = 18: ragged against 32x32x16, so the gathers clamp
// their indices and store zero outside (select), and the output adds are guarded. The
// window of row m = (n, oh, ow), k = (c, kh, kw) is x[n, c, oh*2 + kh, ow + kw*2].
// CHECK-LABEL: func.func @ragged
// CHECK-SAME: (%[[X:.+]]: memref<2x3x9x8xf32>, %[[W:.+]]: memref<5x3x3x2xf32>, %[[Y:.+]]: memref<2x5x4x6xf32>)
// CHECK-DAG: %[[C2:.+]] = arith.constant 2 : index
// CHECK-DAG: %[[C256:.+]] = arith.constant 256 : index
// CHECK: gpu.launch blocks(%[[BID:[^,]+]], {{.*}} in (%{{[^ ]+}} = %[[C2]], {{.*}} threads(%[[TID:[^,]+]], {{.*}} in (%{{[^ ]+}} = %[[C256]],
// CHECK-SAME: workgroup(%[[A:[^ ]+]] : memref<16x32xf32, #gpu.address_space<workgroup>>, %[[B:[^ ]+]] : memref<16x32xf32, #gpu.address_space<workgroup>>)
// CHECK-SAME: private(%[[ACC:[^ ]+]] : memref<2x2xf32, #gpu.address_space<private>>)
// CHECK: %[[M0:.+]] = arith.muli %[[BID]], %{{.+}} : index
// CHECK-COUNT-4: memref.store %{{.+}}, %[[ACC]]
// CHECK: scf.for %[[K0:.+]] = %{{.+}} to %{{.+}} step %{{.+}} {
// CHECK: %[[MM:.+]] = arith.remui %[[TID]], %{{.+}} : index
// CHECK: %[[KK:.+]] = arith.divui %[[TID]], %{{.+}} : index
// CHECK: %[[M:.+]] = arith.addi %[[M0]], %[[MM]] : index
// CHECK: %[[K:.+]] = arith.addi %[[K0]], %[[KK]] : index
// CHECK: %[[MC:.+]] = arith.minui %[[M]], %{{.+}} : index
// CHECK: %[[KC:.+]] = arith.minui %[[K]], %{{.+}} : index
// CHECK: %[[XV:.+]] = memref.load %[[X]][%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}] : memref<2x3x9x8xf32>
// CHECK: %[[AV:.+]] = arith.select %{{.+}}, %[[XV]], %{{.+}} : f32
// CHECK: memref.store %[[AV]], %[[A]][%[[KK]], %[[MM]]]
// CHECK: memref.load %[[W]]
// CHECK: memref.store %{{.+}}, %[[B]]
// CHECK: gpu.barrier
// CHECK: scf.for %[[KS:.+]] = %{{.+}} to %{{.+}} step %{{.+}} {
// CHECK: %[[AE:.+]] = memref.load %[[A]][%[[KS]], %{{.+}}]
// CHECK: %[[BE:.+]] = memref.load %[[B]][%[[KS]], %{{.+}}]
// CHECK: %[[OLD:.+]] = memref.load %[[ACC]][%{{.+}}, %{{.+}}]
// CHECK: %[[PROD:.+]] = arith.mulf %[[AE]], %[[BE]] : f32
// CHECK: %[[SUM:.+]] = arith.addf %[[OLD]], %[[PROD]] : f32
// CHECK: memref.store %[[SUM]], %[[ACC]]
// CHECK-COUNT-3: arith.mulf
// CHECK: }
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: }
// CHECK: scf.if %{{.+}} {
// CHECK: %[[YV:.+]] = memref.load %[[Y]]
// CHECK: %[[CV:.+]] = memref.load %[[ACC]]
// CHECK: %[[YN:.+]] = arith.addf %[[YV]], %[[CV]] : f32
// CHECK: memref.store %[[YN]], %[[Y]]
// CHECK-COUNT-3: scf.if
// CHECK-NOT: linalg.generic
#x = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d4, d2 * 2 + d5, d3 + d6 * 2)>
#w = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d1, d4, d5, d6)>
#y = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>
func.func @ragged(%x: memref<2x3x9x8xf32>, %w: memref<5x3x3x2xf32>, %y: memref<2x5x4x6xf32>) {
  linalg.generic {indexing_maps = [#x, #w, #y], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%x, %w : memref<2x3x9x8xf32>, memref<5x3x3x2xf32>) outs(%y : memref<2x5x4x6xf32>)
      attrs = {ms.implicit_gemm = {stride = array<i64: 2, 1>, dilation = array<i64: 1, 2>}} {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// M = 32, F = 32, K = 16: one block, tiles divide the problem: no clamps, selects or guards.
// float16 operands are widened once, as the tiles are filled (tiles and accumulators f32).
// CHECK-LABEL: func.func @exact_half
// CHECK: gpu.launch
// CHECK-SAME: workgroup(%[[A:[^ ]+]] : memref<16x32xf32, #gpu.address_space<workgroup>>, %{{[^ ]+}} : memref<16x32xf32, #gpu.address_space<workgroup>>)
// CHECK-NOT: arith.minui
// CHECK-NOT: arith.select
// CHECK: %[[H:.+]] = memref.load %{{.+}} : memref<2x16x4x4xf16>
// CHECK: %[[F:.+]] = arith.extf %[[H]] : f16 to f32
// CHECK: memref.store %[[F]], %[[A]]
// CHECK-NOT: arith.select
// CHECK-NOT: scf.if
// CHECK: return
#x1 = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d4, d2 + d5, d3 + d6)>
#w = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d1, d4, d5, d6)>
#y = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>
func.func @exact_half(%x: memref<2x16x4x4xf16>, %w: memref<32x16x1x1xf16>, %y: memref<2x32x4x4xf32>) {
  linalg.generic {indexing_maps = [#x1, #w, #y], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%x, %w : memref<2x16x4x4xf16>, memref<32x16x1x1xf16>) outs(%y : memref<2x32x4x4xf32>)
      attrs = {ms.implicit_gemm = {stride = array<i64: 1, 1>, dilation = array<i64: 1, 1>}} {
  ^bb0(%a: f16, %b: f16, %o: f32):
    %a32 = arith.extf %a : f16 to f32
    %b32 = arith.extf %b : f16 to f32
    %p = arith.mulf %a32, %b32 : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// An untagged contraction is left to ms-gpu-map-linalg.
// CHECK-LABEL: func.func @untagged
// CHECK-NOT: gpu.launch
// CHECK: linalg.generic
#x1 = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d4, d2 + d5, d3 + d6)>
#w = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d1, d4, d5, d6)>
#y = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>
func.func @untagged(%x: memref<2x16x4x4xf32>, %w: memref<32x16x1x1xf32>, %y: memref<2x32x4x4xf32>) {
  linalg.generic {indexing_maps = [#x1, #w, #y], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%x, %w : memref<2x16x4x4xf32>, memref<32x16x1x1xf32>) outs(%y : memref<2x32x4x4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  }
  return
}
