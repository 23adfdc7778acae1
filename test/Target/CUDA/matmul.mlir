// A matmul tiled for shared memory by ms-gpu-matmul-schedule (transform dialect): a block
// per 128x128 tile of C, 16x16 threads, A and B tiles in workgroup memory, barriers around
// their use, C kept in registers as outer-product FMAs.
// RUN: mscc %s --target cuda --emit=gpu | FileCheck %s
// RUN: mscc %s --target cuda --emit=ptx | FileCheck %s --check-prefix=PTX

// CHECK-LABEL: func.func @mm
// CHECK-SAME: (%[[A:.+]]: memref<2048x512xf32>, %[[B:.+]]: memref<512x2048xf32>, %[[C:.+]]: memref<2048x2048xf32>)
// CHECK-DAG: %[[ONE:.+]] = arith.constant 1 : index
// CHECK-DAG: %[[TILES:.+]] = arith.constant 16 : index
// CHECK: gpu.launch_func @kernels::@{{.+}} args(%[[C]] : memref<2048x2048xf32>)
// CHECK: gpu.launch_func @kernels::@[[MM:[a-z_0-9]+]] blocks in (%[[TILES]], %[[TILES]], %[[ONE]]) threads in (%[[TILES]], %[[TILES]], %[[ONE]]) args(%[[C]] : memref<2048x2048xf32>, %[[A]] : memref<2048x512xf32>, %[[B]] : memref<512x2048xf32>)

// CHECK: gpu.func @[[MM]](
// CHECK-SAME: workgroup(%[[SA:.+]] : memref<8192xi8, #gpu.address_space<workgroup>>, %[[SB:.+]] : memref<8192xi8, #gpu.address_space<workgroup>>)
// CHECK-SAME: kernel attributes {known_block_size = array<i32: 16, 16, 1>, known_grid_size = array<i32: 16, 16, 1>}
// CHECK: %[[ACC:.+]] = scf.for {{.+}} iter_args(%{{.+}} = %{{.+}}) -> (vector<8x8xf32>)
// CHECK: memref.view %[[SA]]
// CHECK: vector.store {{.+}} #gpu.address_space<workgroup>
// CHECK: gpu.barrier
// CHECK: gpu.barrier
// CHECK: vector.load {{.+}} #gpu.address_space<workgroup>
// CHECK: vector.fma
// CHECK: gpu.barrier
// CHECK: scf.yield

// PTX: .entry mm_kernel_0(
// PTX: .maxntid 16, 16, 1
// PTX: .shared .align {{[0-9]+}} .b8 {{.+}}[8192];
// PTX: bar.sync
// PTX: ld.shared.v4
// PTX: fma.rn.f32
func.func @mm(%a: tensor<2048x512xf32>, %b: tensor<512x2048xf32>) -> tensor<2048x2048xf32> {
  %0 = "ms.matmul"(%a, %b) {transpose_a = false, transpose_b = false}
      : (tensor<2048x512xf32>, tensor<512x2048xf32>) -> tensor<2048x2048xf32>
  return %0 : tensor<2048x2048xf32>
}
