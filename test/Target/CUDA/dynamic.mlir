// Dynamic sizes on the CUDA target: kernels take a dynamically shaped memref as its 0-d base
// buffer and index scalars (ms-gpu-dynamic-kernel-params), grids are computed on the host from
// memref.dim, and the launch plan holds them as size expressions of the inputs' and outputs'
// dimensions, evaluated per call (runtime/plan.py).
// RUN: mscc %s --entry softmax --target cuda --emit=gpu | FileCheck %s
// RUN: mscc %s --entry softmax --target cuda --emit=plan | FileCheck %s --check-prefix=PLAN
// RUN: mscc %s --entry scale --target cuda --emit=plan | FileCheck %s --check-prefix=SCALE

// CHECK-LABEL: func.func @softmax
// CHECK-SAME: (%[[X:.+]]: memref<?x64xf32>, %[[OUT:.+]]: memref<?x64xf32>)
// CHECK: %[[ROWS:.+]] = memref.dim %[[X]], %{{.+}} : memref<?x64xf32>
// CHECK: memref.alloc(%[[ROWS]]) {{.+}} : memref<?xf32>
// CHECK: %[[MAX:[a-z_0-9]+]] = memref.alloc(%[[ROWS]]) {{.+}} : memref<?xf32>
// CHECK: %[[BLOCKS:.+]] = arith.ceildivui %[[ROWS]], %{{.+}} : index
// CHECK: %[[BASE:[a-z_0-9]+]], %[[OFFSET:[a-z_0-9]+]], %[[SIZE:[a-z_0-9]+]], %[[STRIDE:[a-z_0-9]+]] = memref.extract_strided_metadata %[[MAX]] : memref<?xf32> -> memref<f32>, index, index, index
// CHECK: gpu.launch_func @kernels::@[[FILL:[a-z_0-9]+]] blocks in (%[[BLOCKS]], %{{.+}}, %{{.+}}) threads in ({{.+}}) args(%[[BASE]] : memref<f32>, %[[SIZE]] : index, %[[ROWS]] : index)
// CHECK: gpu.launch_func @kernels::@[[ROW_MAX:[a-z_0-9]+]] blocks in (%[[ROWS]], {{.+}}) threads in ({{.+}}) args(%[[BASE]] : memref<f32>, %[[SIZE]] : index, %{{.+}} : memref<f32>, %{{.+}} : index)

// CHECK: gpu.func @[[FILL]](%[[P:.+]]: memref<f32>, %[[N:.+]]: index, %[[TOTAL:.+]]: index) kernel
// CHECK-NOT: known_grid_size
// CHECK: %[[VIEW:.+]] = memref.reinterpret_cast %[[P]] to offset: [0], sizes: [%[[N]]], strides: [1] : memref<f32> to memref<?xf32>
// CHECK: arith.cmpi ult, %{{.+}}, %[[TOTAL]] : index
// CHECK: memref.store %{{.+}}, %[[VIEW]][%{{.+}}] : memref<?xf32>
// CHECK: gpu.func @[[ROW_MAX]](
// CHECK: memref.reinterpret_cast %{{.+}} to offset: [0], sizes: [%{{.+}}, 64], strides: [64, 1] : memref<f32> to memref<?x64xf32>
// CHECK: gpu.all_reduce maxnumf

// PLAN-LABEL: plan @softmax
// PLAN-NEXT: in0: input float32[?, 64]
// PLAN-NEXT: out0: output float32[?, 64]
// PLAN-NEXT: tmp0: temp float32[dim(in0, 0)]
// PLAN: launch softmax_kernel grid [ceildiv(dim(in0, 0), 256), 1, 1] block [256, 1, 1] (tmp1, dim(in0, 0): int64, dim(in0, 0): int64)
// PLAN-NEXT: launch softmax_kernel_0 grid [dim(in0, 0), 1, 1] block [64, 1, 1] (tmp1, dim(in0, 0): int64, in0, dim(in0, 0): int64)
// The normalization: four elements per thread (the static 64 is a multiple of 4).
// PLAN: launch softmax_kernel_4 grid [ceildiv(floordiv(mul(dim(in0, 0), 64), 4), 256), 1, 1] block [256, 1, 1] (out0, dim(out0, 0): int64,
func.func @softmax(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %0 = "ms.softmax"(%x) {axis = -1 : i64} : (tensor<?x64xf32>) -> tensor<?x64xf32>
  return %0 : tensor<?x64xf32>
}

// Both sizes dynamic: the row stride is a parameter too (dimension 1).
// SCALE-LABEL: plan @scale
// SCALE-NEXT: in0: input float32[?, ?]
// SCALE-NEXT: in1: input float32[?, ?]
// SCALE-NEXT: out0: output float32[?, ?]
// SCALE-NEXT: launch scale_kernel grid [ceildiv(mul(dim(in0, 0), dim(in0, 1)), 256), 1, 1] block [256, 1, 1] (out0, dim(out0, 0): int64, dim(out0, 1): int64, dim(out0, 1): int64, in1,
func.func @scale(%x: tensor<?x?xf32>, %b: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %0 = "ms.mul"(%x, %b) : (tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}
