// A row softmax: the two reductions are tree reductions with a block per row (gpu.all_reduce),
// one reciprocal per row, and the normalization (a multiply) a thread per element.
// RUN: mscc %s --target cuda --emit=gpu | FileCheck %s

// CHECK-LABEL: func.func @softmax
// CHECK-SAME: (%[[X:.+]]: memref<512x2048xf32>, %[[OUT:.+]]: memref<512x2048xf32>)
// CHECK-DAG: %[[ROWS:.+]] = arith.constant 512 : index
// CHECK-DAG: %[[THREADS:.+]] = arith.constant 256 : index
// CHECK-DAG: %[[ONE:.+]] = arith.constant 1 : index
// CHECK: %[[INV:.+]] = memref.alloc() {{.+}} : memref<512xf32>
// CHECK: memref.alloc() {{.+}} : memref<512xf32>
// CHECK: gpu.launch_func @kernels::@{{.+}} args(%[[MAX:[a-z_0-9]+]] : memref<512xf32>)
// CHECK: gpu.launch_func @kernels::@[[ROW_MAX:[a-z_0-9]+]] blocks in (%[[ROWS]], %[[ONE]], %[[ONE]]) threads in (%[[THREADS]], %[[ONE]], %[[ONE]]) args(%[[X]] : memref<512x2048xf32>, %[[MAX]] : memref<512xf32>)
// CHECK: gpu.launch_func @kernels::@{{.+}} args(%[[SUM:[a-z_0-9]+]] : memref<512xf32>)
// CHECK: gpu.launch_func @kernels::@[[ROW_SUM:[a-z_0-9]+]] blocks in (%[[ROWS]], %[[ONE]], %[[ONE]]) threads in (%[[THREADS]], %[[ONE]], %[[ONE]]) args(%[[X]] : memref<512x2048xf32>, %[[MAX]] : memref<512xf32>, %[[SUM]] : memref<512xf32>)
// CHECK: gpu.launch_func @kernels::@[[RECIP:[a-z_0-9]+]] {{.+}} args(%[[SUM]] : memref<512xf32>, %[[INV]] : memref<512xf32>)
// CHECK: gpu.launch_func @kernels::@[[NORM:[a-z_0-9]+]] {{.+}} args(%[[X]] : memref<512x2048xf32>, %[[MAX]] : memref<512xf32>, %[[INV]] : memref<512xf32>, %[[OUT]] : memref<512x2048xf32>)

// CHECK: gpu.func @[[ROW_MAX]](
// CHECK-SAME: known_block_size = array<i32: 256, 1, 1>, known_grid_size = array<i32: 512, 1, 1>
// CHECK: scf.for
// CHECK: arith.maxnumf
// CHECK: gpu.all_reduce maxnumf %{{.+}} uniform
// CHECK: gpu.func @[[ROW_SUM]](
// CHECK: scf.for
// CHECK: math.exp
// CHECK: gpu.all_reduce add %{{.+}} uniform
// CHECK: gpu.func @[[RECIP]](
// CHECK: arith.divf
// CHECK: gpu.func @[[NORM]](
// CHECK-SAME: known_block_size = array<i32: 256, 1, 1>, known_grid_size = array<i32: 1024, 1, 1>
// CHECK-NOT: arith.divf
// CHECK: arith.mulf
func.func @softmax(%x: tensor<512x2048xf32>) -> tensor<512x2048xf32> {
  %0 = "ms.softmax"(%x) {axis = -1 : i64} : (tensor<512x2048xf32>) -> tensor<512x2048xf32>
  return %0 : tensor<512x2048xf32>
}
