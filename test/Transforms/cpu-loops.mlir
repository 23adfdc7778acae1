// CPU loop passes: reduction accumulators carried in registers, float32 math expanded to
// polynomials, large loops split across threads.
// RUN: ms-opt %s --split-input-file --ms-cpu-promote-accumulators | FileCheck %s --check-prefix=PROMOTE
// RUN: ms-opt %s --split-input-file --ms-cpu-math-approx | FileCheck %s --check-prefix=MATH
// RUN: ms-opt %s --split-input-file --ms-cpu-parallelize=threads=2 | FileCheck %s --check-prefix=PAR

// PROMOTE-LABEL: func.func @row_sum
// PROMOTE: scf.for %[[I:.+]] =
// PROMOTE-NEXT: %[[INIT:.+]] = memref.load %arg1[%[[I]]]
// PROMOTE-NEXT: %[[SUM:.+]] = scf.for %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%[[ACC:.+]] = %[[INIT]]) -> (f32)
// PROMOTE-NEXT: %[[X:.+]] = memref.load %arg0
// PROMOTE-NEXT: %[[NEW:.+]] = arith.addf %[[ACC]], %[[X]]
// PROMOTE-NEXT: scf.yield %[[NEW]]
// PROMOTE: memref.store %[[SUM]], %arg1[%[[I]]]
// MATH-LABEL: func.func @row_sum
// PAR-LABEL: func.func @row_sum
func.func @row_sum(%x: memref<4x8xf32>, %out: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  scf.for %i = %c0 to %c4 step %c1 {
    scf.for %j = %c0 to %c8 step %c1 {
      %a = memref.load %out[%i] : memref<4xf32>
      %v = memref.load %x[%i, %j] : memref<4x8xf32>
      %s = arith.addf %a, %v fastmath<reassoc,contract> : f32
      memref.store %s, %out[%i] : memref<4xf32>
    }
  }
  return
}

// -----

// An element written at an index that changes in the loop is no accumulator.
// PROMOTE-LABEL: func.func @copy
// PROMOTE-NOT: iter_args
// MATH-LABEL: func.func @copy
// PAR-LABEL: func.func @copy
func.func @copy(%x: memref<8xf32>, %out: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  scf.for %j = %c0 to %c8 step %c1 {
    %v = memref.load %x[%j] : memref<8xf32>
    %a = memref.load %out[%j] : memref<8xf32>
    %s = arith.addf %a, %v : f32
    memref.store %s, %out[%j] : memref<8xf32>
  }
  return
}

// -----

// MATH-LABEL: func.func @math
// MATH-NOT: math.exp {{.*}} : f32
// MATH-NOT: math.tanh {{.*}} : vector<16xf32>
// MATH: math.floor
// MATH: arith.bitcast
// MATH: arith.divf
// MATH: math.exp %{{.*}} : f64
// PROMOTE-LABEL: func.func @math
// PAR-LABEL: func.func @math
func.func @math(%x: f32, %v: vector<16xf32>, %d: f64) -> (f32, vector<16xf32>, f64) {
  %0 = math.exp %x : f32
  %1 = math.tanh %v : vector<16xf32>
  %2 = math.exp %d : f64
  return %0, %1, %2 : f32, vector<16xf32>, f64
}

// -----

// A large elementwise loop is split across the threads; a small one is not.
// PAR-LABEL: func.func @large_and_small
// PAR: scf.forall ({{.*}}) in (2)
// PAR: linalg.generic {{.*}} ins(%{{.*}} : memref<256x1024xf32, strided<[1024, 1], offset: ?>>)
// PAR: linalg.generic {{.*}} ins(%arg2 : memref<16xf32>)
// PROMOTE-LABEL: func.func @large_and_small
// MATH-LABEL: func.func @large_and_small
#id = affine_map<(d0, d1) -> (d0, d1)>
#id1 = affine_map<(d0) -> (d0)>
func.func @large_and_small(%x: memref<512x1024xf32>, %y: memref<512x1024xf32>, %a: memref<16xf32>, %b: memref<16xf32>) {
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : memref<512x1024xf32>) outs(%y : memref<512x1024xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.negf %in : f32
    linalg.yield %0 : f32
  }
  linalg.generic {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]} ins(%a : memref<16xf32>) outs(%b : memref<16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.negf %in : f32
    linalg.yield %0 : f32
  }
  return
}

// -----

// A large op in an scf.if branch runs at most once per call, so it is split over the threads
// as at the function's top level (ms-cpu-dynamic-matmul packs B for a large batch in one);
// one in a loop's body would fork at every iteration and stays as it is.
// PAR-LABEL: func.func @in_a_branch
// PAR:         scf.if %{{.+}} {
// PAR-NEXT:      scf.forall ({{.*}}) in (2)
// PAR:             linalg.generic {{.*}} ins(%{{.*}} : memref<256x1024xf32, strided<[1024, 1], offset: ?>>)
// PAR:         scf.for
// PAR-NEXT:      linalg.generic {{.*}} ins(%{{.*}} : memref<512x1024xf32>)
// PROMOTE-LABEL: func.func @in_a_branch
// MATH-LABEL: func.func @in_a_branch
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @in_a_branch(%x: memref<512x1024xf32>, %y: memref<512x1024xf32>, %large: i1) {
  scf.if %large {
    linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : memref<512x1024xf32>) outs(%y : memref<512x1024xf32>) {
    ^bb0(%in: f32, %out: f32):
      %0 = arith.negf %in : f32
      linalg.yield %0 : f32
    }
  }
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  scf.for %i = %c0 to %c2 step %c1 {
    linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : memref<512x1024xf32>) outs(%y : memref<512x1024xf32>) {
    ^bb0(%in: f32, %out: f32):
      %0 = arith.negf %in : f32
      linalg.yield %0 : f32
    }
  }
  return
}
