// An elementwise chain through the CUDA pipeline: fused into one kernel, outlined into the
// kernels module with its block size known, launched over the flattened space, 4 elements
// per thread with 128-bit loads and stores.
// RUN: mscc %s --target cuda --emit=gpu | FileCheck %s
// RUN: mscc %s --target cuda --emit=ptx | FileCheck %s --check-prefix=PTX

// CHECK-LABEL: func.func @chain
// CHECK-SAME: (%[[X:.+]]: memref<1024x1000xf32>, %[[Y:.+]]: memref<1000xf32>, %[[OUT:.+]]: memref<1024x1000xf32>)
// CHECK-DAG: %[[GRID:.+]] = arith.constant 1000 : index
// CHECK-DAG: %[[BLOCK:.+]] = arith.constant 256 : index
// CHECK-DAG: %[[ONE:.+]] = arith.constant 1 : index
// CHECK: gpu.launch_func @kernels::@[[K:[a-z_0-9]+]] blocks in (%[[GRID]], %[[ONE]], %[[ONE]]) threads in (%[[BLOCK]], %[[ONE]], %[[ONE]]) args(%[[X]] : memref<1024x1000xf32>, %[[Y]] : memref<1000xf32>, %[[OUT]] : memref<1024x1000xf32>)
// CHECK-NOT: gpu.launch_func
// CHECK: gpu.module @kernels
// CHECK: gpu.func @[[K]](
// CHECK-SAME: kernel attributes {known_block_size = array<i32: 256, 1, 1>, known_grid_size = array<i32: 1000, 1, 1>}
// CHECK: gpu.block_id x
// CHECK: gpu.thread_id x
// CHECK: vector.load {{.+}} {alignment = 16 : i64} : memref<1024x1000xf32>, vector<4xf32>
// CHECK: vector.load {{.+}} {alignment = 16 : i64} : memref<1000xf32>, vector<4xf32>
// CHECK: arith.mulf {{.+}} fastmath<contract>
// CHECK: arith.addf {{.+}} fastmath<contract>
// CHECK: arith.maximumf
// CHECK: vector.store {{.+}} {alignment = 16 : i64} : memref<1024x1000xf32>, vector<4xf32>

// PTX: .target sm_90
// PTX: .entry chain_kernel(
// PTX: .maxntid 256, 1, 1
// PTX: ld.global.v4.b32
// PTX: fma.rn.f32
// PTX: st.global.v4.b32
func.func @chain(%x: tensor<1024x1000xf32>, %y: tensor<1000xf32>) -> tensor<1024x1000xf32> {
  %0 = "ms.mul"(%x, %y) : (tensor<1024x1000xf32>, tensor<1000xf32>) -> tensor<1024x1000xf32>
  %1 = "ms.add"(%0, %x) : (tensor<1024x1000xf32>, tensor<1024x1000xf32>) -> tensor<1024x1000xf32>
  %2 = "ms.relu"(%1) : (tensor<1024x1000xf32>) -> tensor<1024x1000xf32>
  return %2 : tensor<1024x1000xf32>
}
