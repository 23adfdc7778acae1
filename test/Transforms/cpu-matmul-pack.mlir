// RUN: ms-opt %s --split-input-file --ms-cpu-matmul-schedule="vector-bits=512 l1d-bytes=49152 l1d-ways=12" | FileCheck %s
// RUN: ms-opt %s --split-input-file --ms-cpu-matmul-schedule="vector-bits=256 l1d-bytes=32768 l1d-ways=8" | FileCheck %s --check-prefix=AVX2

// The target is pinned by the options: a 48 KiB, 12-way L1 data cache (64 sets of 64-byte
// lines; Intel Xeon, AMD Zen 5) and 512-bit vectors, then 32 KiB, 8-way and 256-bit.

// B's rows are 4 KiB apart: the caller copies B into strips of 32 columns (Bp[32][128][32])
// and passes C as C[128][32][32]; the kernel computes the product from the strips, tiled
// and vectorized.
// CHECK-LABEL: func.func @main(
// CHECK-SAME:    %[[A:.+]]: memref<128x128xf32>, %[[B:.+]]: memref<128x1024xf32>, %[[C:.+]]: memref<128x1024xf32>)
// CHECK:         %[[BP:.+]] = memref.alloc() {alignment = 64 : i64} : memref<32x128x32xf32>
// CHECK-NEXT:    %[[BV:.+]] = memref.expand_shape %[[B]] {{\[}}[0], [1, 2]] output_shape [128, 32, 32]
// CHECK-NEXT:    linalg.transpose ins(%[[BV]] : memref<128x32x32xf32>) outs(%[[BP]] : memref<32x128x32xf32>) permutation = [1, 0, 2]
// CHECK-NEXT:    %[[CV:.+]] = memref.expand_shape %[[C]] {{\[}}[0], [1, 2]] output_shape [128, 32, 32]
// CHECK-NEXT:    call @main__matmul0(%[[A]], %[[BP]], %[[CV]]) : (memref<128x128xf32>, memref<32x128x32xf32>, memref<128x32x32xf32>) -> ()
// CHECK-NEXT:    memref.dealloc %[[BP]]
// CHECK-LABEL: func.func private @main__matmul0(
// CHECK-SAME:    %{{.+}}: memref<128x128xf32>, %{{.+}}: memref<32x128x32xf32>, %{{.+}}: memref<128x32x32xf32>)
// CHECK:         scf.forall
// CHECK:           vector.fma {{.*}} : vector<32xf32>
// CHECK-NOT:     linalg.matmul
// CHECK-NOT:     linalg.generic
// With 256-bit vectors the strips are 16 columns wide.
// AVX2-LABEL: func.func @main(
// AVX2:         memref.alloc() {alignment = 64 : i64} : memref<64x128x16xf32>
// AVX2:         vector.fma {{.*}} : vector<16xf32>
func.func @main(%a: memref<128x128xf32>, %b: memref<128x1024xf32>, %c: memref<128x1024xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<128x1024xf32>)
  call @main__matmul0(%a, %b, %c) : (memref<128x128xf32>, memref<128x1024xf32>, memref<128x1024xf32>) -> ()
  return
}
func.func private @main__matmul0(%a: memref<128x128xf32>, %b: memref<128x1024xf32>, %c: memref<128x1024xf32>) attributes {ms.kernel = "matmul"} {
  linalg.matmul ins(%a, %b : memref<128x128xf32>, memref<128x1024xf32>) outs(%c : memref<128x1024xf32>)
  return
}

// -----

// Packed too: B's rows 2 KiB apart, so a K-panel's rows start in 2 of the 64 sets. Not
// packed: rows 3200 bytes apart (800 floats) start in 32 sets, enough for the 128-row panel;
// too few rows of A (64) to pay for the copy.
// CHECK-LABEL: func.func @narrow(
// CHECK:         linalg.transpose
// CHECK:         call @narrow__matmul0(%{{.+}}, %{{.+}}, %{{.+}}) : (memref<128x128xf32>, memref<16x128x32xf32>, memref<128x16x32xf32>) -> ()
// CHECK-LABEL: func.func @odd_stride(
// CHECK-NOT:     linalg.transpose
// CHECK:         call @odd_stride__matmul0(%{{.+}}, %{{.+}}, %{{.+}}) : (memref<128x128xf32>, memref<128x800xf32>, memref<128x800xf32>) -> ()
// CHECK-LABEL: func.func @short(
// CHECK-NOT:     linalg.transpose
// CHECK:         call @short__matmul0(%{{.+}}, %{{.+}}, %{{.+}}) : (memref<64x128xf32>, memref<128x1024xf32>, memref<64x1024xf32>) -> ()
func.func @narrow(%a: memref<128x128xf32>, %b: memref<128x512xf32>, %c: memref<128x512xf32>) {
  call @narrow__matmul0(%a, %b, %c) : (memref<128x128xf32>, memref<128x512xf32>, memref<128x512xf32>) -> ()
  return
}
func.func private @narrow__matmul0(%a: memref<128x128xf32>, %b: memref<128x512xf32>, %c: memref<128x512xf32>) attributes {ms.kernel = "matmul"} {
  linalg.matmul ins(%a, %b : memref<128x128xf32>, memref<128x512xf32>) outs(%c : memref<128x512xf32>)
  return
}
func.func @odd_stride(%a: memref<128x128xf32>, %b: memref<128x800xf32>, %c: memref<128x800xf32>) {
  call @odd_stride__matmul0(%a, %b, %c) : (memref<128x128xf32>, memref<128x800xf32>, memref<128x800xf32>) -> ()
  return
}
func.func private @odd_stride__matmul0(%a: memref<128x128xf32>, %b: memref<128x800xf32>, %c: memref<128x800xf32>) attributes {ms.kernel = "matmul"} {
  linalg.matmul ins(%a, %b : memref<128x128xf32>, memref<128x800xf32>) outs(%c : memref<128x800xf32>)
  return
}
func.func @short(%a: memref<64x128xf32>, %b: memref<128x1024xf32>, %c: memref<64x1024xf32>) {
  call @short__matmul0(%a, %b, %c) : (memref<64x128xf32>, memref<128x1024xf32>, memref<64x1024xf32>) -> ()
  return
}
func.func private @short__matmul0(%a: memref<64x128xf32>, %b: memref<128x1024xf32>, %c: memref<64x1024xf32>) attributes {ms.kernel = "matmul"} {
  linalg.matmul ins(%a, %b : memref<64x128xf32>, memref<128x1024xf32>) outs(%c : memref<64x1024xf32>)
  return
}

// -----

// B = W^T, materialized by the caller (x @ W.T, Dense's layout): the strips are copied from W
// itself, one 2-D transpose of each strip of 32 rows of W over the threads, in place of the
// transpose; W^T is never written. A buffer with another use is packed from as above.
// CHECK-LABEL: func.func @from_transpose(
// CHECK-SAME:    %[[A:.+]]: memref<128x128xf32>, %[[W:.+]]: memref<1024x128xf32>, %[[C:.+]]: memref<128x1024xf32>)
// CHECK-NEXT:    %[[BP:.+]] = memref.alloc() {alignment = 64 : i64} : memref<32x128x32xf32>
// CHECK-NEXT:    scf.forall (%[[S:.+]]) in (32) {
// CHECK:           %[[ROWS:.+]] = memref.subview %[[W]][%{{.+}}, 0] [32, 128] [1, 1] : memref<1024x128xf32> to memref<32x128xf32, strided<[128, 1], offset: ?>>
// CHECK-NEXT:      %[[STRIP:.+]] = memref.subview %[[BP]][%[[S]], 0, 0] [1, 128, 32] [1, 1, 1] : memref<32x128x32xf32> to memref<128x32xf32, strided<[32, 1], offset: ?>>
// CHECK-NEXT:      linalg.transpose ins(%[[ROWS]] : {{.+}}) outs(%[[STRIP]] : {{.+}}) permutation = [1, 0]
// CHECK:         %[[CV:.+]] = memref.expand_shape %[[C]]
// CHECK-NEXT:    call @from_transpose__matmul0(%[[A]], %[[BP]], %[[CV]])
// CHECK-NEXT:    memref.dealloc %[[BP]]
// CHECK-NOT:     memref.alloc() {{.*}} : memref<128x1024xf32>
// CHECK-LABEL: func.func @transpose_kept(
// CHECK:         linalg.transpose ins(%{{.+}} : memref<1024x128xf32>) outs(%[[BT:.+]] : memref<128x1024xf32>) permutation = [1, 0]
// CHECK:         memref.expand_shape %[[BT]]
// CHECK:         linalg.transpose ins(%{{.+}} : memref<128x32x32xf32>) {{.*}} permutation = [1, 0, 2]
func.func @from_transpose(%a: memref<128x128xf32>, %w: memref<1024x128xf32>, %c: memref<128x1024xf32>) {
  %bt = memref.alloc() {alignment = 64 : i64} : memref<128x1024xf32>
  linalg.transpose ins(%w : memref<1024x128xf32>) outs(%bt : memref<128x1024xf32>) permutation = [1, 0]
  call @from_transpose__matmul0(%a, %bt, %c) : (memref<128x128xf32>, memref<128x1024xf32>, memref<128x1024xf32>) -> ()
  memref.dealloc %bt : memref<128x1024xf32>
  return
}
func.func private @from_transpose__matmul0(%a: memref<128x128xf32>, %b: memref<128x1024xf32>, %c: memref<128x1024xf32>) attributes {ms.kernel = "matmul"} {
  linalg.matmul ins(%a, %b : memref<128x128xf32>, memref<128x1024xf32>) outs(%c : memref<128x1024xf32>)
  return
}
func.func @transpose_kept(%a: memref<128x128xf32>, %w: memref<1024x128xf32>, %c: memref<128x1024xf32>, %d: memref<128x1024xf32>) {
  %bt = memref.alloc() {alignment = 64 : i64} : memref<128x1024xf32>
  linalg.transpose ins(%w : memref<1024x128xf32>) outs(%bt : memref<128x1024xf32>) permutation = [1, 0]
  call @transpose_kept__matmul0(%a, %bt, %c) : (memref<128x128xf32>, memref<128x1024xf32>, memref<128x1024xf32>) -> ()
  memref.copy %bt, %d : memref<128x1024xf32> to memref<128x1024xf32>
  memref.dealloc %bt : memref<128x1024xf32>
  return
}
func.func private @transpose_kept__matmul0(%a: memref<128x128xf32>, %b: memref<128x1024xf32>, %c: memref<128x1024xf32>) attributes {ms.kernel = "matmul"} {
  linalg.matmul ins(%a, %b : memref<128x128xf32>, memref<128x1024xf32>) outs(%c : memref<128x1024xf32>)
  return
}

// -----

// Too few rows of A to pay for a copy of B (64, as @short above), but B = W^T is a copy the
// caller makes anyway: packed from W, at no cost.
// CHECK-LABEL: func.func @short_from_transpose(
// CHECK:         scf.forall
// CHECK:           linalg.transpose {{.*}} permutation = [1, 0]
// CHECK:         call @short_from_transpose__matmul0(%{{.+}}, %{{.+}}, %{{.+}}) : (memref<64x128xf32>, memref<32x128x32xf32>, memref<64x32x32xf32>) -> ()
func.func @short_from_transpose(%a: memref<64x128xf32>, %w: memref<1024x128xf32>, %c: memref<64x1024xf32>) {
  %bt = memref.alloc() {alignment = 64 : i64} : memref<128x1024xf32>
  linalg.transpose ins(%w : memref<1024x128xf32>) outs(%bt : memref<128x1024xf32>) permutation = [1, 0]
  call @short_from_transpose__matmul0(%a, %bt, %c) : (memref<64x128xf32>, memref<128x1024xf32>, memref<64x1024xf32>) -> ()
  memref.dealloc %bt : memref<128x1024xf32>
  return
}
func.func private @short_from_transpose__matmul0(%a: memref<64x128xf32>, %b: memref<128x1024xf32>, %c: memref<64x1024xf32>) attributes {ms.kernel = "matmul"} {
  linalg.matmul ins(%a, %b : memref<64x128xf32>, memref<128x1024xf32>) outs(%c : memref<64x1024xf32>)
  return
}

// -----

// A call inside a parallel loop (one per image of a convolution, say) keeps its transpose:
// the strips' scf.forall would nest in the loop.
// CHECK-LABEL: func.func @in_parallel_loop(
// CHECK:         scf.forall
// CHECK:           linalg.transpose ins(%{{.+}} : memref<1024x128xf32>) outs(%{{.+}} : memref<128x1024xf32>) permutation = [1, 0]
// CHECK:           linalg.transpose ins(%{{.+}} : memref<128x32x32xf32>) {{.*}} permutation = [1, 0, 2]
func.func @in_parallel_loop(%a: memref<128x128xf32>, %w: memref<1024x128xf32>, %c: memref<128x1024xf32>) {
  scf.forall (%i) in (2) {
    %bt = memref.alloc() {alignment = 64 : i64} : memref<128x1024xf32>
    linalg.transpose ins(%w : memref<1024x128xf32>) outs(%bt : memref<128x1024xf32>) permutation = [1, 0]
    func.call @in_parallel_loop__matmul0(%a, %bt, %c) : (memref<128x128xf32>, memref<128x1024xf32>, memref<128x1024xf32>) -> ()
    memref.dealloc %bt : memref<128x1024xf32>
  }
  return
}
func.func private @in_parallel_loop__matmul0(%a: memref<128x128xf32>, %b: memref<128x1024xf32>, %c: memref<128x1024xf32>) attributes {ms.kernel = "matmul"} {
  linalg.matmul ins(%a, %b : memref<128x128xf32>, memref<128x1024xf32>) outs(%c : memref<128x1024xf32>)
  return
}

// -----

// An epilogue (bias and ReLU) reads and writes C after the product: the call passes C twice,
// as it is for the epilogue and as the strips view for the product (an extra argument), and
// B = W^T is packed from W as above; K is one panel, so the register tiles compute the
// epilogue on their rows (bias loaded once per tile) and store into C, at the tile's column
// (its strip times 32): no loop of its own.
// CHECK-LABEL: func.func @with_epilogue(
// CHECK-SAME:    %[[A:.+]]: memref<128x128xf32>, %[[W:.+]]: memref<1024x128xf32>, %[[BIAS:.+]]: memref<1024xf32>, %[[C:.+]]: memref<128x1024xf32>)
// CHECK-NEXT:    %[[BP:.+]] = memref.alloc() {alignment = 64 : i64} : memref<32x128x32xf32>
// CHECK-NEXT:    scf.forall
// CHECK:         %[[CV:.+]] = memref.expand_shape %[[C]] {{\[}}[0], [1, 2]] output_shape [128, 32, 32]
// CHECK-NEXT:    call @with_epilogue__matmul0(%[[A]], %[[BP]], %[[BIAS]], %[[C]], %[[CV]]) : (memref<128x128xf32>, memref<32x128x32xf32>, memref<1024xf32>, memref<128x1024xf32>, memref<128x32x32xf32>) -> ()
// CHECK-NEXT:    memref.dealloc %[[BP]]
// CHECK-LABEL: func.func private @with_epilogue__matmul0(
// CHECK-SAME:    %{{.+}}: memref<128x128xf32>, %{{.+}}: memref<32x128x32xf32>, %[[KB:.+]]: memref<1024xf32>, %[[KC:.+]]: memref<128x1024xf32>, %[[KCV:.+]]: memref<128x32x32xf32>)
// CHECK:         scf.forall
// CHECK:           vector.load %[[KCV]]
// CHECK:           vector.fma {{.*}} : vector<32xf32>
// CHECK:           %[[STRIP:.+]] = arith.muli %{{.+}}, %{{.+}} : index
// CHECK:           %[[COL:.+]] = arith.addi %[[STRIP]], %{{.+}} : index
// CHECK:           %[[BV:.+]] = vector.load %[[KB]][%[[COL]]] : memref<1024xf32>, vector<32xf32>
// CHECK:           arith.addf %{{.+}}, %[[BV]] : vector<32xf32>
// CHECK:           arith.maximumf {{.*}} : vector<32xf32>
// CHECK:           vector.store {{.+}}, %[[KC]][%{{.+}}, %[[COL]]] : memref<128x1024xf32>, vector<32xf32>
// CHECK-COUNT-7:   vector.store {{.+}}, %[[KC]][%{{.+}}, %[[COL]]]
// CHECK-NOT:     scf.forall
// CHECK-NOT:     linalg.generic
// CHECK:         return
func.func @with_epilogue(%a: memref<128x128xf32>, %w: memref<1024x128xf32>, %bias: memref<1024xf32>, %c: memref<128x1024xf32>) {
  %bt = memref.alloc() {alignment = 64 : i64} : memref<128x1024xf32>
  linalg.transpose ins(%w : memref<1024x128xf32>) outs(%bt : memref<128x1024xf32>) permutation = [1, 0]
  call @with_epilogue__matmul0(%a, %bt, %bias, %c) : (memref<128x128xf32>, memref<128x1024xf32>, memref<1024xf32>, memref<128x1024xf32>) -> ()
  memref.dealloc %bt : memref<128x1024xf32>
  return
}
func.func private @with_epilogue__matmul0(%a: memref<128x128xf32>, %b: memref<128x1024xf32>, %bias: memref<1024xf32>, %c: memref<128x1024xf32>) attributes {ms.kernel = "matmul"} {
  %zero = arith.constant 0.0 : f32
  linalg.matmul ins(%a, %b : memref<128x128xf32>, memref<128x1024xf32>) outs(%c : memref<128x1024xf32>)
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%bias : memref<1024xf32>) outs(%c : memref<128x1024xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %out, %in : f32
    %r = arith.maximumf %s, %zero : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// The same with C zeroed at the kernel's entry (ms-cpu-kernel-zero-init): the fill applies to
// the strips view the product writes, whose tiles then start from zeros (one K panel) and
// the fill goes; C is written once, by the epilogue on the tiles.
// CHECK-LABEL: func.func private @zeroed_epilogue__matmul0(
// CHECK-SAME:    %{{.+}}: memref<128x128xf32>, %{{.+}}: memref<32x128x32xf32>, %[[KB:.+]]: memref<1024xf32>, %[[KC:.+]]: memref<128x1024xf32>, %[[KCV:.+]]: memref<128x32x32xf32>)
// CHECK-NOT:     linalg.fill
// CHECK:         scf.forall
// CHECK-NOT:       vector.load %[[KCV]]
// CHECK:           arith.constant dense<0.0{{0*}}e+00> : vector<32xf32>
// CHECK-NOT:       vector.load %[[KCV]]
// CHECK:           vector.fma {{.*}} : vector<32xf32>
// CHECK:           arith.maximumf {{.*}} : vector<32xf32>
// CHECK:           vector.store {{.+}}, %[[KC]]
// CHECK-NOT:     vector.load %[[KC]]
// CHECK-NOT:     scf.forall
// CHECK-NOT:     linalg.
// CHECK:         return
func.func @zeroed_epilogue(%a: memref<128x128xf32>, %w: memref<1024x128xf32>, %bias: memref<1024xf32>, %c: memref<128x1024xf32>) {
  %bt = memref.alloc() {alignment = 64 : i64} : memref<128x1024xf32>
  linalg.transpose ins(%w : memref<1024x128xf32>) outs(%bt : memref<128x1024xf32>) permutation = [1, 0]
  call @zeroed_epilogue__matmul0(%a, %bt, %bias, %c) : (memref<128x128xf32>, memref<128x1024xf32>, memref<1024xf32>, memref<128x1024xf32>) -> ()
  memref.dealloc %bt : memref<128x1024xf32>
  return
}
func.func private @zeroed_epilogue__matmul0(%a: memref<128x128xf32>, %b: memref<128x1024xf32>, %bias: memref<1024xf32>, %c: memref<128x1024xf32>) attributes {ms.kernel = "matmul"} {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<128x1024xf32>)
  linalg.matmul ins(%a, %b : memref<128x128xf32>, memref<128x1024xf32>) outs(%c : memref<128x1024xf32>)
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%bias : memref<1024xf32>) outs(%c : memref<128x1024xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %out, %in : f32
    %r = arith.maximumf %s, %zero : f32
    linalg.yield %r : f32
  }
  return
}
