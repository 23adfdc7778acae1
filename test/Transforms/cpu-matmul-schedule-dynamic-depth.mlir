// ms-cpu-matmul-schedule on a kernel whose only dynamic size is its depth K (a weight
// gradient summing over a batch): tiled as a static kernel, only the loop over K's panels
// of 256 takes a run-time bound (memref.dim of B, the last panel cut by affine.min); the
// 8x32 register tile of C stays in registers across k (its eight rows the loop's iter_args),
// the epilogue runs once after the product. A kernel with a dynamic row count is not the schedule's.
// RUN: ms-opt %s --split-input-file --ms-cpu-matmul-schedule="vector-bits=512 l1d-bytes=49152 l1d-ways=12" | FileCheck %s
// RUN: ms-opt %s --split-input-file --ms-cpu-matmul-schedule="vector-bits=512 l1d-bytes=49152 l1d-ways=12" | ms-opt --split-input-file > /dev/null

// CHECK-LABEL: func.func private @depth__matmul0(
// CHECK-SAME:    %[[A:[^:]+]]: memref<64x?xf32>, %[[B:[^:]+]]: memref<?x256xf32>, %[[C:[^:]+]]: memref<64x256xf32>, %[[V:[^:]+]]: memref<64x256xf32>)
// CHECK:         %[[K:.+]] = memref.dim %[[A]], %{{.+}} : memref<64x?xf32>
// CHECK:         scf.for %[[P:.+]] = %{{.+}} to %[[K]] step %[[KC:.+]] {
// CHECK:             %[[PANEL:.+]] = affine.min #{{.+}}(%[[P]])[%[[K]]]
// CHECK:             scf.for
// CHECK:               scf.for
// CHECK:                 %{{.+}}:8 = scf.for %{{.+}} = %{{.+}} to %[[PANEL]] step %{{.+}} iter_args({{.+}}) -> (vector<32xf32>, vector<32xf32>, vector<32xf32>, vector<32xf32>, vector<32xf32>, vector<32xf32>, vector<32xf32>, vector<32xf32>) {
// CHECK:                   vector.fma {{.+}} : vector<32xf32>
// CHECK-NOT:       linalg.matmul
// CHECK:         %[[VR:.+]] = vector.load %[[V]]
// CHECK:         %[[CR:.+]] = vector.load %[[C]]
// CHECK:         arith.subf
// CHECK:         vector.store {{.+}}, %[[C]]
// CHECK:         return
func.func @depth(%a: memref<64x?xf32>, %b: memref<?x256xf32>, %c: memref<64x256xf32>, %v: memref<64x256xf32>) {
  func.call @depth__matmul0(%a, %b, %c, %v) : (memref<64x?xf32>, memref<?x256xf32>, memref<64x256xf32>, memref<64x256xf32>) -> ()
  return
}
func.func private @depth__matmul0(%a: memref<64x?xf32>, %b: memref<?x256xf32>, %c: memref<64x256xf32>, %v: memref<64x256xf32>) attributes {ms.kernel = "matmul"} {
  linalg.matmul ins(%a, %b : memref<64x?xf32>, memref<?x256xf32>) outs(%c : memref<64x256xf32>)
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%v : memref<64x256xf32>) outs(%c : memref<64x256xf32>) {
  ^bb0(%x: f32, %y: f32):
    %s = arith.subf %x, %y : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// CHECK-LABEL: func.func private @rows__matmul0(
// CHECK-NEXT:    linalg.matmul
// CHECK-NEXT:    return
func.func @rows(%a: memref<?x16xf32>, %b: memref<16x32xf32>, %c: memref<?x32xf32>) {
  func.call @rows__matmul0(%a, %b, %c) : (memref<?x16xf32>, memref<16x32xf32>, memref<?x32xf32>) -> ()
  return
}
func.func private @rows__matmul0(%a: memref<?x16xf32>, %b: memref<16x32xf32>, %c: memref<?x32xf32>) attributes {ms.kernel = "matmul"} {
  linalg.matmul ins(%a, %b : memref<?x16xf32>, memref<16x32xf32>) outs(%c : memref<?x32xf32>)
  return
}

// -----

// C zeroed at the kernel's entry (ms-cpu-kernel-zero-init) with a dynamic K: a tile starts
// from zeros in the first panel (tested at run time), but the fill stays, since with K = 0
// no tile runs and C must still be zeros.
// CHECK-LABEL: func.func private @zeroed_depth__matmul0(
// CHECK-SAME:    %{{[^:]+}}: memref<64x?xf32>, %{{[^:]+}}: memref<?x256xf32>, %[[C:[^:]+]]: memref<64x256xf32>)
// CHECK:         linalg.fill ins(%{{.+}} : f32) outs(%[[C]] : memref<64x256xf32>)
// CHECK:         scf.for %[[P:[^ ]+]] = %{{.+}} to %{{.+}} step %{{.+}} {
// CHECK:           arith.cmpi eq, %[[P]], %{{.+}} : index
// CHECK:           scf.if %{{.+}} -> (vector<32xf32>,
// CHECK:         return
func.func @zeroed_depth(%a: memref<64x?xf32>, %b: memref<?x256xf32>, %c: memref<64x256xf32>) {
  func.call @zeroed_depth__matmul0(%a, %b, %c) : (memref<64x?xf32>, memref<?x256xf32>, memref<64x256xf32>) -> ()
  return
}
func.func private @zeroed_depth__matmul0(%a: memref<64x?xf32>, %b: memref<?x256xf32>, %c: memref<64x256xf32>) attributes {ms.kernel = "matmul"} {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<64x256xf32>)
  linalg.matmul ins(%a, %b : memref<64x?xf32>, memref<?x256xf32>) outs(%c : memref<64x256xf32>)
  return
}
