// RUN: ms-opt %s --split-input-file --ms-cpu-loop-hints | FileCheck %s
// RUN: ms-opt %s --split-input-file --ms-cpu-loop-hints --convert-scf-to-cf --convert-to-llvm | FileCheck %s --check-prefix=LLVM

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

// An innermost loop carrying an accumulator may be vectorized and interleaved (independent
// partial sums); the loops LLVM makes of it are not unrolled. Its outer loop is not unrolled.
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
