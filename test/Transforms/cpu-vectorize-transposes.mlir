// RUN: ms-opt %s --split-input-file --ms-cpu-vectorize-transposes=threads=2 | FileCheck %s
// RUN: ms-opt %s --split-input-file --ms-cpu-vectorize-transposes=threads=1 | FileCheck %s --check-prefix=SEQ

// A small transpose: 16x16 blocks, each loaded as 16 rows, transposed with shuffles and stored
// as 16 rows; no threads.
// CHECK-LABEL: func.func @small(
// CHECK-SAME:    %[[X:.+]]: memref<64x32xf32>, %[[Y:.+]]: memref<32x64xf32>)
// CHECK-NOT:     scf.forall
// CHECK:         scf.for %[[I:.+]] = %{{.+}} to %{{.+}} step %[[C16:.+]] {
// CHECK-NEXT:      scf.for %[[J:.+]] = %{{.+}} to %{{.+}} step %{{.+}} {
// CHECK-NEXT:        %[[IN:.+]] = memref.subview %[[X]][%[[J]], %[[I]]] [16, 16] [1, 1]
// CHECK-NEXT:        %[[OUT:.+]] = memref.subview %[[Y]][%[[I]], %[[J]]] [16, 16] [1, 1]
// CHECK-COUNT-16:    vector.load %[[IN]]{{.*}} vector<16xf32>
// CHECK-COUNT-64:    vector.shuffle
// CHECK-COUNT-16:    vector.store %{{.+}}, %[[OUT]]{{.*}} vector<16xf32>
// CHECK-NOT:     linalg.transpose
// SEQ-LABEL: func.func @small(
func.func @small(%x: memref<64x32xf32>, %y: memref<32x64xf32>) {
  linalg.transpose ins(%x : memref<64x32xf32>) outs(%y : memref<32x64xf32>) permutation = [1, 0]
  return
}

// -----

// A large one: rows of blocks are spread over the threads (one block row per iteration).
// CHECK-LABEL: func.func @large(
// CHECK:         scf.forall (%[[I:.+]]) in (32) {
// CHECK:           scf.for %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} {
// CHECK-NEXT:        scf.for
// CHECK-COUNT-16:      vector.load
// CHECK-COUNT-64:      vector.shuffle
// CHECK-COUNT-16:      vector.store
// SEQ-LABEL: func.func @large(
// SEQ-NOT:     scf.forall
// SEQ:         vector.shuffle
func.func @large(%x: memref<256x512xf32>, %y: memref<512x256xf32>) {
  linalg.transpose ins(%x : memref<256x512xf32>) outs(%y : memref<512x256xf32>) permutation = [1, 0]
  return
}

// -----

// Left alone: sizes that are not multiples of 16, 64-bit elements, matmul kernel functions
// (scheduled by ms-cpu-matmul-schedule).
// CHECK-LABEL: func.func @ragged(
// CHECK-NEXT:    linalg.transpose
// CHECK-LABEL: func.func @wide_elements(
// CHECK-NEXT:    linalg.transpose
// CHECK-LABEL: func.func @kernel(
// CHECK-NEXT:    linalg.transpose
func.func @ragged(%x: memref<10x512xf32>, %y: memref<512x10xf32>) {
  linalg.transpose ins(%x : memref<10x512xf32>) outs(%y : memref<512x10xf32>) permutation = [1, 0]
  return
}
func.func @wide_elements(%x: memref<32x32xf64>, %y: memref<32x32xf64>) {
  linalg.transpose ins(%x : memref<32x32xf64>) outs(%y : memref<32x32xf64>) permutation = [1, 0]
  return
}
func.func @kernel(%x: memref<32x32xf32>, %y: memref<32x32xf32>) attributes {ms.kernel = "matmul"} {
  linalg.transpose ins(%x : memref<32x32xf32>) outs(%y : memref<32x32xf32>) permutation = [1, 0]
  return
}


// -----

// A dynamic size: static strips of 16 rows of the input (over the threads), each transposed in
// register blocks, then the remaining rows one at a time.
// CHECK-LABEL: func.func @dynamic_rows(
// CHECK-SAME:    %[[X:.+]]: memref<?x64xf32>, %[[Y:.+]]: memref<64x?xf32>)
// CHECK:         scf.forall
// CHECK:           memref.subview %[[X]][%{{.+}}, 0] [16, 64] [1, 1] : memref<?x64xf32> to memref<16x64xf32, strided<[64, 1], offset: ?>>
// CHECK:           memref.subview %[[Y]][0, %{{.+}}] [64, 16] [1, 1] : memref<64x?xf32> to memref<64x16xf32, strided<[?, 1], offset: ?>>
// CHECK:           vector.shuffle
// CHECK-NOT:       linalg.transpose
// CHECK:         scf.for
// CHECK:           linalg.transpose ins(%{{.+}} : memref<1x64xf32, strided<[64, 1], offset: ?>>) outs(%{{.+}} : memref<64x1xf32, strided<[?, 1], offset: ?>>)
// SEQ-LABEL:   func.func @dynamic_rows(
// SEQ-NOT:       scf.forall
// SEQ:           vector.shuffle
func.func @dynamic_rows(%x: memref<?x64xf32>, %y: memref<64x?xf32>) {
  linalg.transpose ins(%x : memref<?x64xf32>) outs(%y : memref<64x?xf32>) permutation = [1, 0]
  return
}
