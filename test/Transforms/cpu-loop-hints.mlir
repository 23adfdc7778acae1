// RUN: ms-opt %s --split-input-file --ms-cpu-loop-hints="vector-bits=512" | FileCheck %s
// RUN: ms-opt %s --split-input-file --ms-cpu-loop-hints="vector-bits=512" --convert-scf-to-cf --convert-to-llvm | FileCheck %s --check-prefix=LLVM
// RUN: ms-opt %s --split-input-file --ms-cpu-loop-hints="vector-bits=256" | FileCheck %s --check-prefix=AVX2

// Loops without accumulators, nested or not, are not unrolled (nor interleaved); after
// lowering the hint sits on the loop's back edge. (64 iterations: not a short loop.)
// CHECK:       #[[UNROLL:.+]] = #llvm.loop_unroll<disable = true>
// CHECK:       #[[NO_UNROLL:.+]] = #llvm.loop_annotation<unroll = #[[UNROLL]]>
// CHECK-LABEL: func.func @nest(
// CHECK:         scf.for
// CHECK:           scf.for
// CHECK:           } {loop_annotation = #[[NO_UNROLL]]}
// CHECK-NEXT:    } {loop_annotation = #[[NO_UNROLL]]}
// LLVM:       #[[HINT:.+]] = #llvm.loop_annotation<unroll = #{{.+}}>
// LLVM-LABEL: llvm.func @nest(
// LLVM-COUNT-2: llvm.br {{.*}} {loop_annotation = #[[HINT]]}
// LLVM-NOT:     llvm.br {{.*}}loop_annotation
// LLVM:         llvm.return
func.func @nest(%x: memref<4x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c64 = arith.constant 64 : index
  %f = arith.constant 1.0 : f32
  scf.for %i = %c0 to %c4 step %c1 {
    scf.for %j = %c0 to %c64 step %c1 {
      memref.store %f, %x[%i, %j] : memref<4x64xf32>
    }
  }
  return
}

// -----

// An innermost loop of a few constant iterations (14, an im2col row) asks LLVM to fold its
// tail into masked vectors and to unroll the vector loop it makes completely (constant
// masks); one of 32 iterations, one with a dynamic bound and the outer loop are plain
// no-unroll loops.
// CHECK-DAG:   #[[FULL:.+]] = #llvm.loop_unroll<full = true>
// CHECK-DAG:   #[[UNROLL:.+]] = #llvm.loop_unroll<disable = true>
// CHECK-DAG:   #[[UNROLLED:.+]] = #llvm.loop_annotation<unroll = #[[FULL]]>
// CHECK-DAG:   #[[NO_UNROLL:.+]] = #llvm.loop_annotation<unroll = #[[UNROLL]]>
// CHECK-DAG:   #[[PRED:.+]] = #llvm.loop_vectorize<predicateEnable = true, followupVectorized = #[[UNROLLED]]>
// CHECK-DAG:   #[[MASKED:.+]] = #llvm.loop_annotation<vectorize = #[[PRED]], unroll = #[[UNROLL]]>
// CHECK-LABEL: func.func @short_rows(
// CHECK:         scf.for
// CHECK:           scf.for
// CHECK:           } {loop_annotation = #[[MASKED]]}
// CHECK:           scf.for
// CHECK:           } {loop_annotation = #[[NO_UNROLL]]}
// CHECK:           scf.for
// CHECK:           } {loop_annotation = #[[NO_UNROLL]]}
// CHECK:         } {loop_annotation = #[[NO_UNROLL]]}
func.func @short_rows(%x: memref<4x32xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c14 = arith.constant 14 : index
  %c32 = arith.constant 32 : index
  %f = arith.constant 1.0 : f32
  scf.for %i = %c0 to %c4 step %c1 {
    scf.for %j = %c0 to %c14 step %c1 {
      memref.store %f, %x[%i, %j] : memref<4x32xf32>
    }
    scf.for %j = %c0 to %c32 step %c1 {
      memref.store %f, %x[%i, %j] : memref<4x32xf32>
    }
    scf.for %j = %c0 to %n step %c1 {
      memref.store %f, %x[%i, %j] : memref<4x32xf32>
    }
  }
  return
}

// -----

// An innermost loop carrying an accumulator of a few iterations (8, under the 4 x 16 floats of
// one interleaved 512-bit vector iteration) keeps LLVM's own choices: the followup hints that
// the loops LLVM makes of it are not unrolled do not reach LLVM's loop IDs (cpu_loops.py).
// Its outer loop is not unrolled.
// CHECK:       #[[UNROLL:.+]] = #llvm.loop_unroll<disable = true>
// CHECK:       #[[NO_UNROLL:.+]] = #llvm.loop_annotation<unroll = #[[UNROLL]]>
// CHECK:       #[[VEC:.+]] = #llvm.loop_vectorize<followupVectorized = #[[NO_UNROLL]], followupEpilogue = #[[NO_UNROLL]]>
// CHECK:       #[[AFTER_VEC:.+]] = #llvm.loop_annotation<vectorize = #[[VEC]]>
// CHECK-LABEL: func.func @row_sums(
// CHECK:         scf.for
// CHECK:           scf.for {{.*}} iter_args
// CHECK:           } {loop_annotation = #[[AFTER_VEC]]}
// CHECK:         } {loop_annotation = #[[NO_UNROLL]]}
func.func @row_sums(%x: memref<4x8xf32>, %out: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %zero = arith.constant 0.0 : f32
  scf.for %i = %c0 to %c4 step %c1 {
    %s = scf.for %j = %c0 to %c8 step %c1 iter_args(%acc = %zero) -> (f32) {
      %v = memref.load %x[%i, %j] : memref<4x8xf32>
      %n = arith.addf %acc, %v fastmath<reassoc> : f32
      scf.yield %n : f32
    }
    memref.store %s, %out[%i] : memref<4xf32>
  }
  return
}

// -----

// Scalar reductions of at least 4 vector iterations (64 floats with 512-bit vectors, 32 with
// 256-bit ones) or of an unknown count are not unrolled and are interleaved 4 times (their
// vector loop is unrolled no more: LLVM had unrolled a 784-long one 12 times); 48 floats are
// one with 256-bit vectors only. A loop carrying vectors (a register tile's accumulators)
// keeps LLVM's unrolling.
// CHECK-DAG:   #[[UNROLL:.+]] = #llvm.loop_unroll<disable = true>
// CHECK-DAG:   #[[FOUR:.+]] = #llvm.loop_interleave<count = 4 : i32>
// CHECK-DAG:   #[[REDUCTION:.+]] = #llvm.loop_annotation<interleave = #[[FOUR]], unroll = #[[UNROLL]]>
// CHECK-DAG:   #[[AFTER_VEC:.+]] = #llvm.loop_annotation<vectorize = #{{.+}}>
// CHECK-LABEL: func.func @long_sums(
// CHECK:         scf.for {{.*}} to %c64 {{.*}} iter_args
// CHECK:         } {loop_annotation = #[[REDUCTION]]}
// CHECK:         scf.for {{.*}} to %{{.+}} {{.*}} iter_args
// CHECK:         } {loop_annotation = #[[REDUCTION]]}
// CHECK:         scf.for {{.*}} to %c48 {{.*}} iter_args
// CHECK:         } {loop_annotation = #[[AFTER_VEC]]}
// CHECK:         scf.for {{.*}} iter_args({{.*}}) -> (vector<16xf32>)
// CHECK:         } {loop_annotation = #[[AFTER_VEC]]}
// LLVM-DAG:    #[[REDUCTION:.+]] = #llvm.loop_annotation<interleave = #{{.+}}, unroll = #{{.+}}>
// LLVM-LABEL:  llvm.func @long_sums(
// LLVM-COUNT-2:  llvm.br {{.*}} : i64, f32) {loop_annotation = #[[REDUCTION]]}
// AVX2-DAG:    #[[REDUCTION:.+]] = #llvm.loop_annotation<interleave = #{{.+}}, unroll = #{{.+}}>
// AVX2-LABEL:  func.func @long_sums(
// AVX2:          scf.for {{.*}} to %c48 {{.*}} iter_args
// AVX2:          } {loop_annotation = #[[REDUCTION]]}
func.func @long_sums(%x: memref<64xf32>, %n: index, %v: memref<64x16xf32>) -> (f32, f32, f32, vector<16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c48 = arith.constant 48 : index
  %c64 = arith.constant 64 : index
  %zero = arith.constant 0.0 : f32
  %zeros = arith.constant dense<0.0> : vector<16xf32>
  %a = scf.for %j = %c0 to %c64 step %c1 iter_args(%acc = %zero) -> (f32) {
    %e = memref.load %x[%j] : memref<64xf32>
    %s = arith.addf %acc, %e fastmath<reassoc> : f32
    scf.yield %s : f32
  }
  %b = scf.for %j = %c0 to %n step %c1 iter_args(%acc = %zero) -> (f32) {
    %e = memref.load %x[%j] : memref<64xf32>
    %s = arith.addf %acc, %e fastmath<reassoc> : f32
    scf.yield %s : f32
  }
  %c = scf.for %j = %c0 to %c48 step %c1 iter_args(%acc = %zero) -> (f32) {
    %e = memref.load %x[%j] : memref<64xf32>
    %s = arith.addf %acc, %e fastmath<reassoc> : f32
    scf.yield %s : f32
  }
  %d = scf.for %j = %c0 to %c64 step %c1 iter_args(%acc = %zeros) -> (vector<16xf32>) {
    %e = vector.load %v[%j, %c0] : memref<64x16xf32>, vector<16xf32>
    %s = arith.addf %acc, %e : vector<16xf32>
    scf.yield %s : vector<16xf32>
  }
  return %a, %b, %c, %d : f32, f32, f32, vector<16xf32>
}
