// RUN: ms-opt %s --split-input-file --ms-cpu-loop-hints | FileCheck %s
// RUN: ms-opt %s --split-input-file --ms-cpu-loop-hints --convert-scf-to-cf --convert-to-llvm | FileCheck %s --check-prefix=LLVM

// Every scf.for, nested ones included, tells LLVM not to unroll it; after lowering the hint
// sits on the loop's back edge.
// CHECK:       #[[UNROLL:.+]] = #llvm.loop_unroll<disable = true>
// CHECK:       #[[HINT:.+]] = #llvm.loop_annotation<unroll = #[[UNROLL]]>
// CHECK-LABEL: func.func @nest(
// CHECK:         scf.for
// CHECK:           scf.for
// CHECK:           } {loop_annotation = #[[HINT]]}
// CHECK-NEXT:    } {loop_annotation = #[[HINT]]}
// LLVM:       #[[HINT:.+]] = #llvm.loop_annotation<unroll = #{{.+}}>
// LLVM-LABEL: llvm.func @nest(
// LLVM-COUNT-2: llvm.br {{.*}} {loop_annotation = #[[HINT]]}
// LLVM-NOT:     loop_annotation
func.func @nest(%x: memref<4x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %f = arith.constant 1.0 : f32
  scf.for %i = %c0 to %c4 step %c1 {
    scf.for %j = %c0 to %c8 step %c1 {
      memref.store %f, %x[%i, %j] : memref<4x8xf32>
    }
  }
  return
}
