// ms-cpu-dynamic-matmul: a matmul kernel with a dynamic row count runs static clones of
// itself on blocks of 64, 8 and 1 rows, B packed first where its rows conflict in the L1
// cache. One with a dynamic depth only is left to the schedule (cpu-matmul-schedule-dynamic-
// depth.mlir); other dynamic kernels stay as they are. With threads, whether the blocks of 64
// rows run over them is decided at run time from the batch's size (THREADS).
// RUN: ms-opt %s --ms-cpu-dynamic-matmul="vector-bits=512 threads=1 l1d-bytes=49152 l1d-ways=12" --split-input-file | FileCheck %s
// RUN: ms-opt %s --ms-cpu-dynamic-matmul="vector-bits=512 threads=2 l1d-bytes=49152 l1d-ways=12" --split-input-file | FileCheck %s --check-prefix=THREADS
// The output is valid IR.
// RUN: ms-opt %s --ms-cpu-dynamic-matmul="vector-bits=512 threads=2 l1d-bytes=49152 l1d-ways=12" --split-input-file | ms-opt --split-input-file > /dev/null

// CHECK-LABEL: func.func @rows(
// CHECK-SAME:    %[[A:[^:]+]]: memref<?x16xf32>, %[[B:[^:]+]]: memref<16x32xf32>, %[[BIAS:[^:]+]]: memref<32xf32>, %[[C:[^:]+]]: memref<?x32xf32>)
// CHECK:         %[[M:.+]] = memref.dim %[[A]], %{{.+}} : memref<?x16xf32>
// CHECK:         scf.for %[[I:.+]] = %{{.+}} to %{{.+}} step %{{.+}} {
// CHECK:           %[[AV:.+]] = memref.subview %[[A]][%[[I]], 0] [64, 16] [1, 1] : memref<?x16xf32> to memref<64x16xf32, strided<[16, 1], offset: ?>>
// CHECK:           %[[CV:.+]] = memref.subview %[[C]][%[[I]], 0] [64, 32] [1, 1] : memref<?x32xf32> to memref<64x32xf32, strided<[32, 1], offset: ?>>
// CHECK:           func.call @rows__matmul0__64(%[[AV]], %[[B]], %[[CV]], %[[BIAS]])
// CHECK:         scf.for
// CHECK:           func.call @rows__matmul0__8(
// CHECK:         scf.for
// CHECK:           func.call @rows__matmul0__1(
// CHECK-NOT:     call @rows__matmul0(
// CHECK-LABEL: func.func private @rows__matmul0__64(
// CHECK-SAME:    memref<64x16xf32, strided<[16, 1], offset: ?>>, %{{.+}}: memref<16x32xf32>, %{{.+}}: memref<64x32xf32, strided<[32, 1], offset: ?>>, %{{.+}}: memref<32xf32>) attributes {ms.kernel = "matmul"}
// CHECK:         linalg.matmul
// CHECK:         linalg.generic
// CHECK-NOT:   func.func private @rows__matmul0(

// 64 rows of this product are 64 * 2 * 16 * 32 flops: 32 blocks or more go over the threads,
// fewer run in one loop of the clone the schedule threads by itself (variant t).
// THREADS-LABEL: func.func @rows(
// THREADS:         %[[M:.+]] = memref.dim
// THREADS:         %[[COUNT:.+]] = arith.divui %{{.+}}, %[[C64:.+]] : index
// THREADS-DAG:     %[[TWO:.+]] = arith.constant 2 : index
// THREADS-DAG:     %[[FEWER:.+]] = arith.cmpi ult, %[[COUNT]], %[[TWO]] : index
// THREADS-DAG:     %[[NEEDED:.+]] = arith.constant 32 : index
// THREADS-DAG:     %[[SMALL:.+]] = arith.cmpi ult, %[[COUNT]], %[[NEEDED]] : index
// THREADS:         %[[FEW:.+]] = arith.ori %[[FEWER]], %[[SMALL]] : i1
// THREADS:         scf.if %[[FEW]] {
// THREADS:           scf.for
// THREADS:             func.call @rows__matmul0__64t(
// THREADS:         } else {
// THREADS:           scf.forall
// THREADS:             func.call @rows__matmul0__64(
// THREADS:         }
// THREADS:         scf.for
// THREADS:           func.call @rows__matmul0__8(
func.func @rows(%a: memref<?x16xf32>, %b: memref<16x32xf32>, %bias: memref<32xf32>, %c: memref<?x32xf32>) {
  func.call @rows__matmul0(%a, %b, %c, %bias) : (memref<?x16xf32>, memref<16x32xf32>, memref<?x32xf32>, memref<32xf32>) -> ()
  return
}
func.func private @rows__matmul0(%a: memref<?x16xf32>, %b: memref<16x32xf32>, %c: memref<?x32xf32>, %bias: memref<32xf32>) attributes {ms.kernel = "matmul"} {
  linalg.matmul ins(%a, %b : memref<?x16xf32>, memref<16x32xf32>) outs(%c : memref<?x32xf32>)
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%bias : memref<32xf32>) outs(%c : memref<?x32xf32>) {
  ^bb0(%x: f32, %y: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  }
  return
}


// -----

// A dynamic depth only: the kernel is the schedule's, its call unchanged.
// CHECK-LABEL: func.func @depth(
// CHECK-SAME:    %[[A:[^:]+]]: memref<32x?xf32>, %[[B:[^:]+]]: memref<?x16xf32>, %[[C:[^:]+]]: memref<32x16xf32>, %[[V:[^:]+]]: memref<32x16xf32>)
// CHECK-NEXT:    call @depth__matmul0(%[[A]], %[[B]], %[[C]], %[[V]])
// CHECK-LABEL: func.func private @depth__matmul0(
// CHECK-SAME:    memref<32x?xf32>, %{{.+}}: memref<?x16xf32>
// CHECK-NEXT:    linalg.matmul
// CHECK-NEXT:    linalg.generic
func.func @depth(%a: memref<32x?xf32>, %b: memref<?x16xf32>, %c: memref<32x16xf32>, %v: memref<32x16xf32>) {
  func.call @depth__matmul0(%a, %b, %c, %v) : (memref<32x?xf32>, memref<?x16xf32>, memref<32x16xf32>, memref<32x16xf32>) -> ()
  return
}
func.func private @depth__matmul0(%a: memref<32x?xf32>, %b: memref<?x16xf32>, %c: memref<32x16xf32>, %v: memref<32x16xf32>) attributes {ms.kernel = "matmul"} {
  linalg.matmul ins(%a, %b : memref<32x?xf32>, memref<?x16xf32>) outs(%c : memref<32x16xf32>)
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%v : memref<32x16xf32>) outs(%c : memref<32x16xf32>) {
  ^bb0(%x: f32, %y: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  }
  return
}


// -----

// Dynamic rows and depth at once: left as it is (plain loops).
// CHECK-LABEL: func.func @both(
// CHECK:         call @both__matmul0(
// CHECK-LABEL: func.func private @both__matmul0(

func.func @both(%a: memref<?x?xf32>, %b: memref<?x16xf32>, %c: memref<?x16xf32>) {
  func.call @both__matmul0(%a, %b, %c) : (memref<?x?xf32>, memref<?x16xf32>, memref<?x16xf32>) -> ()
  return
}
func.func private @both__matmul0(%a: memref<?x?xf32>, %b: memref<?x16xf32>, %c: memref<?x16xf32>) attributes {ms.kernel = "matmul"} {
  linalg.matmul ins(%a, %b : memref<?x?xf32>, memref<?x16xf32>) outs(%c : memref<?x16xf32>)
  return
}


// -----

// B's rows are 4 KiB apart (1024 columns): a batch of 128 rows or more runs a copy of the
// kernel reading B packed once, before the rows are split (C passed as C[?][32][32] and
// viewed by blocks of it); a smaller batch runs the unpacked kernel's blocks.
// CHECK-LABEL: func.func @packed_rows(
// CHECK-SAME:    %[[A:[^:]+]]: memref<?x256xf32>, %[[B:[^:]+]]: memref<256x1024xf32>, %[[C:[^:]+]]: memref<?x1024xf32>)
// CHECK:         %[[ROWS:.+]] = memref.dim %[[A]]
// CHECK:         %[[LARGE:.+]] = arith.cmpi uge, %[[ROWS]], %{{.+}} : index
// CHECK:         scf.if %[[LARGE]] {
// CHECK:           %[[BP:.+]] = memref.alloc() {alignment = 64 : i64} : memref<32x256x32xf32>
// CHECK:           linalg.transpose ins(%{{.+}} : memref<256x32x32xf32>) outs(%[[BP]] : memref<32x256x32xf32>) permutation = [1, 0, 2]
// CHECK:           %[[M:.+]] = memref.dim %[[C]], %{{.+}} : memref<?x1024xf32>
// CHECK:           %[[CV:.+]] = memref.expand_shape %[[C]] {{\[}}[0], [1, 2]] output_shape [%[[M]], 32, 32] : memref<?x1024xf32> into memref<?x32x32xf32>
// CHECK:           scf.for %[[I:.+]] = %{{.+}} to %{{.+}} step %{{.+}} {
// CHECK:             %[[CB:.+]] = memref.subview %[[CV]][%[[I]], 0, 0] [64, 32, 32] [1, 1, 1] : memref<?x32x32xf32> to memref<64x32x32xf32, strided<[1024, 32, 1], offset: ?>>
// CHECK:             func.call @packed_rows__matmul0__64(%{{.+}}, %[[BP]], %[[CB]])
// CHECK:           func.call @packed_rows__matmul0__8(%{{.+}}, %[[BP]], %{{.+}})
// CHECK:           func.call @packed_rows__matmul0__1(%{{.+}}, %[[BP]], %{{.+}})
// CHECK:           memref.dealloc %[[BP]]
// CHECK:         } else {
// CHECK:           func.call @packed_rows__matmul0__small__64(%{{.+}}, %[[B]], %{{.+}})
// CHECK:           func.call @packed_rows__matmul0__small__8(%{{.+}}, %[[B]], %{{.+}})
// CHECK:           func.call @packed_rows__matmul0__small__1(%{{.+}}, %[[B]], %{{.+}})
// CHECK:         }
// CHECK-LABEL: func.func private @packed_rows__matmul0__64(
// CHECK-SAME:    memref<64x256xf32, strided<[256, 1], offset: ?>>, %{{.+}}: memref<32x256x32xf32>, %{{.+}}: memref<64x32x32xf32, strided<[1024, 32, 1], offset: ?>>)
// CHECK:         linalg.generic {{.+}} iterator_types = ["parallel", "parallel", "parallel", "reduction"]
// CHECK-LABEL: func.func private @packed_rows__matmul0__small__64(
// CHECK-SAME:    memref<64x256xf32, strided<[256, 1], offset: ?>>, %{{.+}}: memref<256x1024xf32>, %{{.+}}: memref<64x1024xf32, strided<[1024, 1], offset: ?>>)
// CHECK:         linalg.matmul
func.func @packed_rows(%a: memref<?x256xf32>, %b: memref<256x1024xf32>, %c: memref<?x1024xf32>) {
  func.call @packed_rows__matmul0(%a, %b, %c) : (memref<?x256xf32>, memref<256x1024xf32>, memref<?x1024xf32>) -> ()
  return
}
func.func private @packed_rows__matmul0(%a: memref<?x256xf32>, %b: memref<256x1024xf32>, %c: memref<?x1024xf32>) attributes {ms.kernel = "matmul"} {
  linalg.matmul ins(%a, %b : memref<?x256xf32>, memref<256x1024xf32>) outs(%c : memref<?x1024xf32>)
  return
}

// -----

// The same product with B = W^T materialized by the caller (x @ W.T): packing from W costs
// what the transpose did, so every batch size reads B packed (no branch on the batch) and
// W^T is never written.
// CHECK-LABEL: func.func @packed_from_transpose(
// CHECK-SAME:    %[[A:[^:]+]]: memref<?x256xf32>, %[[W:[^:]+]]: memref<1024x256xf32>, %[[C:[^:]+]]: memref<?x1024xf32>)
// CHECK-NOT:     scf.if
// CHECK:         %[[BP:.+]] = memref.alloc() {alignment = 64 : i64} : memref<32x256x32xf32>
// CHECK-NEXT:    scf.forall
// CHECK:           memref.subview %[[W]]
// CHECK:           linalg.transpose {{.*}} permutation = [1, 0]
// CHECK-NOT:     scf.if
// CHECK:         func.call @packed_from_transpose__matmul0__64(%{{.+}}, %[[BP]], %{{.+}})
// CHECK:         func.call @packed_from_transpose__matmul0__8(%{{.+}}, %[[BP]], %{{.+}})
// CHECK:         func.call @packed_from_transpose__matmul0__1(%{{.+}}, %[[BP]], %{{.+}})
// CHECK:         memref.dealloc %[[BP]]
// CHECK-NOT:     memref<256x1024xf32>
// CHECK-NOT:     __small
// CHECK-LABEL: func.func private @packed_from_transpose__matmul0__64(
func.func @packed_from_transpose(%a: memref<?x256xf32>, %w: memref<1024x256xf32>, %c: memref<?x1024xf32>) {
  %bt = memref.alloc() {alignment = 64 : i64} : memref<256x1024xf32>
  linalg.transpose ins(%w : memref<1024x256xf32>) outs(%bt : memref<256x1024xf32>) permutation = [1, 0]
  func.call @packed_from_transpose__matmul0(%a, %bt, %c) : (memref<?x256xf32>, memref<256x1024xf32>, memref<?x1024xf32>) -> ()
  memref.dealloc %bt : memref<256x1024xf32>
  return
}
func.func private @packed_from_transpose__matmul0(%a: memref<?x256xf32>, %b: memref<256x1024xf32>, %c: memref<?x1024xf32>) attributes {ms.kernel = "matmul"} {
  linalg.matmul ins(%a, %b : memref<?x256xf32>, memref<256x1024xf32>) outs(%c : memref<?x1024xf32>)
  return
}
