// RUN: ms-opt %s --split-input-file --ms-cpu-prefetch-b="l1d-bytes=32768" | FileCheck %s
// RUN: ms-opt %s --split-input-file --ms-cpu-prefetch-b="l1d-bytes=49152" | FileCheck %s --check-prefix=L1-48K

// An unpacked B (rows 4096 floats apart): before each load of a row segment (32 floats, two
// 64-byte lines) the register loop prefetches both lines of the segment 32 rows ahead
// (32 KiB / (8 x 128 bytes)), the row clamped to B's last; 48 rows with a 48 KiB L1.
// CHECK-LABEL: func.func private @kernel(
// CHECK-SAME:    %{{.+}}: memref<8x64xf32>, %[[B:.+]]: memref<64x4096xf32>, %{{.+}}: memref<8x4096xf32>)
// CHECK:         scf.for %[[K:.+]] = {{.+}} iter_args(
// CHECK:           %[[AHEAD:.+]] = arith.constant 32 : index
// CHECK:           %[[NEXT:.+]] = arith.addi %[[K]], %[[AHEAD]] : index
// CHECK:           %[[LAST:.+]] = arith.constant 63 : index
// CHECK:           %[[ROW:.+]] = arith.minui %[[NEXT]], %[[LAST]] : index
// CHECK:           memref.prefetch %[[B]][%[[ROW]], %[[COL:.+]]], read, locality<3>, data
// CHECK:           %[[LINE:.+]] = arith.constant 16 : index
// CHECK:           %[[COL2:.+]] = arith.addi %[[COL]], %[[LINE]] : index
// CHECK:           memref.prefetch %[[B]][%[[ROW]], %[[COL2]]], read, locality<3>, data
// CHECK-NEXT:      vector.load %[[B]][%[[K]], %[[COL]]] : memref<64x4096xf32>, vector<32xf32>
// CHECK-NOT:       memref.prefetch
// CHECK:           scf.yield
// L1-48K-LABEL: func.func private @kernel(
// L1-48K:         arith.constant 48 : index
// L1-48K:         memref.prefetch
func.func private @kernel(%a: memref<8x64xf32>, %b: memref<64x4096xf32>, %c: memref<8x4096xf32>)
    attributes {ms.kernel = "matmul"} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %zero = arith.constant dense<0.0> : vector<32xf32>
  %acc = scf.for %k = %c0 to %c64 step %c1 iter_args(%s = %zero) -> (vector<32xf32>) {
    %x = vector.load %a[%c0, %k] : memref<8x64xf32>, vector<1xf32>
    %y = vector.load %b[%k, %c0] : memref<64x4096xf32>, vector<32xf32>
    %e = vector.extract %x[0] : f32 from vector<1xf32>
    %bx = vector.broadcast %e : f32 to vector<32xf32>
    %f = vector.fma %bx, %y, %s : vector<32xf32>
    scf.yield %f : vector<32xf32>
  }
  vector.store %acc, %c[%c0, %c0] : memref<8x4096xf32>, vector<32xf32>
  return
}

// -----

// A packed B (strips Bp[s][k][j], pack_b's layout: contiguous, streamed by the hardware's
// prefetchers) and a function that is not a matmul kernel get no prefetch.
// CHECK-LABEL: func.func private @packed(
// CHECK-NOT:     memref.prefetch
// CHECK:         return
// CHECK-LABEL: func.func private @not_a_kernel(
// CHECK-NOT:     memref.prefetch
// CHECK:         return
func.func private @packed(%a: memref<8x64xf32>, %b: memref<2x64x32xf32>, %c: memref<8x2x32xf32>)
    attributes {ms.kernel = "matmul"} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %zero = arith.constant dense<0.0> : vector<32xf32>
  %acc = scf.for %k = %c0 to %c64 step %c1 iter_args(%s = %zero) -> (vector<32xf32>) {
    %y = vector.load %b[%c0, %k, %c0] : memref<2x64x32xf32>, vector<32xf32>
    %f = arith.addf %y, %s : vector<32xf32>
    scf.yield %f : vector<32xf32>
  }
  vector.store %acc, %c[%c0, %c0, %c0] : memref<8x2x32xf32>, vector<32xf32>
  return
}
func.func private @not_a_kernel(%a: memref<8x64xf32>, %b: memref<64x4096xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %zero = arith.constant dense<0.0> : vector<32xf32>
  %acc = scf.for %k = %c0 to %c64 step %c1 iter_args(%s = %zero) -> (vector<32xf32>) {
    %y = vector.load %b[%k, %c0] : memref<64x4096xf32>, vector<32xf32>
    %f = arith.addf %y, %s : vector<32xf32>
    scf.yield %f : vector<32xf32>
  }
  vector.store %acc, %a[%c0, %c0] : memref<8x64xf32>, vector<32xf32>
  return
}
