// RUN: ms-opt %s --split-input-file --ms-cpu-vectorize-transposes="threads=2 l1d-bytes=2048 blocks=shuffle-16x16" | FileCheck %s
// RUN: ms-opt %s --split-input-file --ms-cpu-vectorize-transposes="threads=1 l1d-bytes=2048 blocks=shuffle-16x16" | FileCheck %s --check-prefix=SEQ
// RUN: ms-opt %s --split-input-file --ms-cpu-vectorize-transposes="threads=1 l1d-bytes=2048 blocks=avx2-8x8" | FileCheck %s --check-prefix=AVX2

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
// With AVX2 the blocks are 8x8: 8 rows loaded, three rounds of 8-lane shuffles and blends (the
// blends as inline assembly), 8 rows stored.
// AVX2-LABEL: func.func @small(
// AVX2-SAME:    %[[X:.+]]: memref<64x32xf32>, %[[Y:.+]]: memref<32x64xf32>)
// AVX2:         scf.for %{{.+}} = %{{.+}} to %{{.+}} step %[[C8:.+]] {
// AVX2-NEXT:      scf.for
// AVX2-NEXT:        %[[IN:.+]] = memref.subview %[[X]][%{{.+}}, %{{.+}}] [8, 8] [1, 1]
// AVX2-NEXT:        %[[OUT:.+]] = memref.subview %[[Y]][%{{.+}}, %{{.+}}] [8, 8] [1, 1]
// AVX2-COUNT-8:     vector.load %[[IN]]{{.*}} vector<8xf32>
// AVX2-COUNT-8:     vector.shuffle
// AVX2-COUNT-8:     llvm.inline_asm asm_dialect = intel "vblendps
// AVX2-COUNT-8:     vector.shuffle
// AVX2-COUNT-8:     vector.store %{{.+}}, %[[OUT]]{{.*}} vector<8xf32>
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

// Multiples of 16 whose input spans no more than the L1 data cache (2 KiB pinned) stay scalar
// loops: 32x16 floats (2,048 bytes). The same 32x16 view of rows 32 floats apart spans 4 KiB
// and is blocked.
// CHECK-LABEL: func.func @in_l1(
// CHECK-NEXT:    linalg.transpose
// CHECK-NEXT:    return
// CHECK-LABEL: func.func @view_beyond_l1(
// CHECK-NOT:     linalg.transpose
// CHECK-COUNT-64: vector.shuffle
// CHECK-NOT:     linalg.transpose
// CHECK:         return
func.func @in_l1(%x: memref<32x16xf32>, %y: memref<16x32xf32>) {
  linalg.transpose ins(%x : memref<32x16xf32>) outs(%y : memref<16x32xf32>) permutation = [1, 0]
  return
}
func.func @view_beyond_l1(%x: memref<32x16xf32, strided<[32, 1]>>, %y: memref<16x32xf32>) {
  linalg.transpose ins(%x : memref<32x16xf32, strided<[32, 1]>>) outs(%y : memref<16x32xf32>) permutation = [1, 0]
  return
}


// -----

// A dynamic row count: strips of 16 rows of the output (the static size) over the threads,
// each copied in 16x16 register blocks along the dynamic size, then its remaining elements one
// at a time: the output's rows are written whole, as in the static schedule.
// CHECK-LABEL: func.func @dynamic_rows(
// CHECK-SAME:    %[[X:.+]]: memref<?x64xf32>, %[[Y:.+]]: memref<64x?xf32>)
// CHECK:         scf.forall (%{{.+}}) in (4) {
// CHECK:           %[[S:.+]] = arith.addi
// CHECK:           scf.for %[[J:.+]] = %{{.+}} to %{{.+}} step %{{.+}} {
// CHECK-NEXT:        memref.subview %[[X]][%[[J]], %[[S]]] [16, 16] [1, 1] : memref<?x64xf32> to memref<16x16xf32, strided<[64, 1], offset: ?>>
// CHECK-NEXT:        memref.subview %[[Y]][%[[S]], %[[J]]] [16, 16] [1, 1] : memref<64x?xf32> to memref<16x16xf32, strided<[?, 1], offset: ?>>
// CHECK:             vector.shuffle
// CHECK-NOT:         linalg.transpose
// CHECK:           scf.for %[[R:.+]] = %{{.+}} to %{{.+}} step %{{.+}} {
// CHECK-NEXT:        memref.subview %[[X]][%[[R]], %[[S]]] [1, 16] [1, 1]
// CHECK-NEXT:        memref.subview %[[Y]][%[[S]], %[[R]]] [16, 1] [1, 1]
// CHECK-NEXT:        linalg.transpose ins(%{{.+}} : memref<1x16xf32, strided<[64, 1], offset: ?>>) outs(%{{.+}} : memref<16x1xf32, strided<[?, 1], offset: ?>>)
// SEQ-LABEL:   func.func @dynamic_rows(
// SEQ-NOT:       scf.forall
// SEQ:           vector.shuffle
func.func @dynamic_rows(%x: memref<?x64xf32>, %y: memref<64x?xf32>) {
  linalg.transpose ins(%x : memref<?x64xf32>) outs(%y : memref<64x?xf32>) permutation = [1, 0]
  return
}

// -----

// A dynamic column count: the output's rows are the dynamic size, so its strips are full
// blocks of it over the threads (each a static transpose in register blocks), then the
// remaining output rows one at a time.
// CHECK-LABEL: func.func @dynamic_columns(
// CHECK-SAME:    %[[X:.+]]: memref<64x?xf32>, %[[Y:.+]]: memref<?x64xf32>)
// CHECK:         scf.forall
// CHECK:           memref.subview %[[X]][0, %{{.+}}] [64, 16] [1, 1] : memref<64x?xf32> to memref<64x16xf32, strided<[?, 1], offset: ?>>
// CHECK:           memref.subview %[[Y]][%{{.+}}, 0] [16, 64] [1, 1] : memref<?x64xf32> to memref<16x64xf32, strided<[64, 1], offset: ?>>
// CHECK:           vector.shuffle
// CHECK-NOT:       linalg.transpose
// CHECK:         scf.for
// CHECK:           linalg.transpose ins(%{{.+}} : memref<64x1xf32, strided<[?, 1], offset: ?>>) outs(%{{.+}} : memref<1x64xf32, strided<[64, 1], offset: ?>>)
// SEQ-LABEL:   func.func @dynamic_columns(
// SEQ-NOT:       scf.forall
// SEQ:           vector.shuffle
func.func @dynamic_columns(%x: memref<64x?xf32>, %y: memref<?x64xf32>) {
  linalg.transpose ins(%x : memref<64x?xf32>) outs(%y : memref<?x64xf32>) permutation = [1, 0]
  return
}

// -----

// Ragged static sizes (not multiples of 16), the input (3,200 bytes) larger than the L1 data
// cache (2 KiB pinned): the aligned 16x32 part is blocked; the rows and the columns beyond it
// stay transposes of views of their own (plain loops).
// CHECK-LABEL: func.func @ragged_static(
// CHECK-SAME:    %[[X:.+]]: memref<20x40xf32>, %[[Y:.+]]: memref<40x20xf32>)
// CHECK:         %[[IN:.+]] = memref.subview %[[X]][0, 0] [16, 32] [1, 1]
// CHECK-SAME:      to memref<16x32xf32, strided<[40, 1]>>
// CHECK-NEXT:    %[[OUT:.+]] = memref.subview %[[Y]][0, 0] [32, 16] [1, 1]
// CHECK:         scf.for
// CHECK:           memref.subview %[[IN]]
// CHECK-COUNT-64:  vector.shuffle
// CHECK:         %[[ROWS_IN:.+]] = memref.subview %[[X]][16, 0] [4, 40] [1, 1]
// CHECK-SAME:      to memref<4x40xf32, strided<[40, 1], offset: 640>>
// CHECK-NEXT:    %[[ROWS_OUT:.+]] = memref.subview %[[Y]][0, 16] [40, 4] [1, 1]
// CHECK-NEXT:    linalg.transpose ins(%[[ROWS_IN]] : {{.+}}) outs(%[[ROWS_OUT]] : {{.+}}) permutation = [1, 0]
// CHECK-NEXT:    %[[COLS_IN:.+]] = memref.subview %[[X]][0, 32] [16, 8] [1, 1]
// CHECK-NEXT:    %[[COLS_OUT:.+]] = memref.subview %[[Y]][32, 0] [8, 16] [1, 1]
// CHECK-NEXT:    linalg.transpose ins(%[[COLS_IN]] : {{.+}}) outs(%[[COLS_OUT]] : {{.+}}) permutation = [1, 0]
// CHECK-NEXT:    return
// SEQ-LABEL: func.func @ragged_static(
func.func @ragged_static(%x: memref<20x40xf32>, %y: memref<40x20xf32>) {
  linalg.transpose ins(%x : memref<20x40xf32>) outs(%y : memref<40x20xf32>) permutation = [1, 0]
  return
}

// -----

// A ragged transpose whose input fits in the L1 data cache (1,920 bytes) stays whole.
// CHECK-LABEL: func.func @ragged_in_l1(
// CHECK-NEXT:    linalg.transpose
// CHECK-NEXT:    return
func.func @ragged_in_l1(%x: memref<20x24xf32>, %y: memref<24x20xf32>) {
  linalg.transpose ins(%x : memref<20x24xf32>) outs(%y : memref<24x20xf32>) permutation = [1, 0]
  return
}
