// Each top-level loop nest of a function with at least min-loops of them moves into a
// function of its own: what it reads from the caller becomes arguments (constants are
// copied in), what the caller uses after it becomes results. ms-cpu-local-functions then
// makes such functions (and matmul kernels) internal and noinline. Arguments come in the
// order of their first uses in the nest (walk order, then operand), not of their definition.
// RUN: ms-opt %s --split-input-file --ms-cpu-outline-loops=min-loops=2 | FileCheck %s
// RUN: ms-opt %s --split-input-file --ms-cpu-outline-loops=min-loops=2 --ms-cpu-local-functions | FileCheck %s --check-prefix=LOCAL
// RUN: ms-opt %s --split-input-file --ms-cpu-outline-loops=min-loops=2 --ms-cpu-merge-loops | FileCheck %s --check-prefix=MERGE

// CHECK-LABEL: func.func @sum_then_scale(
// CHECK-SAME: %[[X:[a-z0-9]+]]: memref<8xf32>, %[[OUT:[a-z0-9]+]]: memref<8xf32>
// CHECK-NOT: scf.for
// CHECK: %[[SUM:.+]] = call @sum_then_scale__loop0(%[[X]]) : (memref<8xf32>) -> f32
// CHECK-NOT: scf.for
// CHECK: call @sum_then_scale__loop1(%[[X]], %[[SUM]], %[[OUT]]) : (memref<8xf32>, f32, memref<8xf32>) -> ()
// CHECK-NEXT: memref.store %[[SUM]], %[[OUT]]
// CHECK-NEXT: return
// CHECK: func.func private @sum_then_scale__loop0(%[[A:.+]]: memref<8xf32>) -> f32 attributes {ms.outlined_loop}
// CHECK-DAG: arith.constant 0 : index
// CHECK-DAG: arith.constant 8 : index
// CHECK: %[[S:.+]] = scf.for {{.+}} iter_args
// CHECK: memref.load %[[A]]
// CHECK: return %[[S]] : f32
// CHECK: func.func private @sum_then_scale__loop1(%[[B:[a-z0-9]+]]: memref<8xf32>, %[[T:[a-z0-9]+]]: f32, %[[O:[a-z0-9]+]]: memref<8xf32>)
// CHECK: scf.for
// CHECK: %[[V:.+]] = memref.load %[[B]]
// CHECK: arith.mulf %[[V]], %[[T]]
// CHECK: memref.store {{.+}}, %[[O]]
// LOCAL-LABEL: func.func @sum_then_scale(
// LOCAL: func.func private @sum_then_scale__loop0({{.+}} attributes {llvm.linkage = #llvm.linkage<internal>, ms.outlined_loop, passthrough = ["noinline"]}
// LOCAL: func.func private @sum_then_scale__loop1({{.+}} attributes {llvm.linkage = #llvm.linkage<internal>, ms.outlined_loop, passthrough = ["noinline"]}
func.func @sum_then_scale(%x: memref<8xf32>, %out: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %zero = arith.constant 0.0 : f32
  %sum = scf.for %i = %c0 to %c8 step %c1 iter_args(%acc = %zero) -> (f32) {
    %v = memref.load %x[%i] : memref<8xf32>
    %s = arith.addf %acc, %v : f32
    scf.yield %s : f32
  }
  scf.for %i = %c0 to %c8 step %c1 {
    %v = memref.load %x[%i] : memref<8xf32>
    %p = arith.mulf %v, %sum : f32
    memref.store %p, %out[%i] : memref<8xf32>
  }
  memref.store %sum, %out[%c0] : memref<8xf32>
  return
}

// -----

// One loop nest (below min-loops): nothing moves. A matmul kernel becomes internal.
// CHECK-LABEL: func.func @one_loop(
// CHECK: scf.for
// CHECK-NOT: call
// CHECK: return
// CHECK-NOT: ms.outlined_loop
// LOCAL-LABEL: func.func @one_loop(
// LOCAL: func.func private @kernel({{.+}} attributes {llvm.linkage = #llvm.linkage<internal>, ms.kernel = "matmul", passthrough = ["noinline"]}
func.func @one_loop(%x: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %one = arith.constant 1.0 : f32
  scf.for %i = %c0 to %c8 step %c1 {
    memref.store %one, %x[%i] : memref<8xf32>
  }
  return
}
func.func private @kernel(%a: memref<2x2xf32>, %b: memref<2x2xf32>, %c: memref<2x2xf32>) attributes {ms.kernel = "matmul"} {
  linalg.matmul ins(%a, %b : memref<2x2xf32>, memref<2x2xf32>) outs(%c : memref<2x2xf32>)
  return
}

// -----

// Two copies of one nest, one copying an argument into a buffer the function allocates, the
// other that buffer into an argument: each function takes what its nest loads first and
// what it stores into second, whatever the caller defined first, so the copies are one
// function for ms-cpu-merge-loops.
// CHECK-LABEL: func.func @copy_twice(
// CHECK-SAME: %[[X:[a-z0-9]+]]: memref<8xf32>, %[[OUT:[a-z0-9]+]]: memref<8xf32>
// CHECK: %[[T:.+]] = memref.alloc
// CHECK: call @copy_twice__loop0(%[[X]], %[[T]])
// CHECK: call @copy_twice__loop1(%[[T]], %[[OUT]])
// CHECK: func.func private @copy_twice__loop0(%[[FROM:[a-z0-9]+]]: memref<8xf32>, %[[TO:[a-z0-9]+]]: memref<8xf32>)
// CHECK: memref.load %[[FROM]]
// CHECK: memref.store {{.+}}, %[[TO]]
// CHECK: func.func private @copy_twice__loop1(%[[FROM1:[a-z0-9]+]]: memref<8xf32>, %[[TO1:[a-z0-9]+]]: memref<8xf32>)
// CHECK: memref.load %[[FROM1]]
// CHECK: memref.store {{.+}}, %[[TO1]]
// MERGE-LABEL: func.func @copy_twice(
// MERGE-SAME: %[[X:[a-z0-9]+]]: memref<8xf32>, %[[OUT:[a-z0-9]+]]: memref<8xf32>
// MERGE: %[[T:.+]] = memref.alloc
// MERGE: call @copy_twice__loop0(%[[X]], %[[T]])
// MERGE: call @copy_twice__loop0(%[[T]], %[[OUT]])
// MERGE: func.func private @copy_twice__loop0(
// MERGE-NOT: func.func
func.func @copy_twice(%x: memref<8xf32>, %out: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %t = memref.alloc() : memref<8xf32>
  scf.for %i = %c0 to %c8 step %c1 {
    %v = memref.load %x[%i] : memref<8xf32>
    memref.store %v, %t[%i] : memref<8xf32>
  }
  scf.for %i = %c0 to %c8 step %c1 {
    %v = memref.load %t[%i] : memref<8xf32>
    memref.store %v, %out[%i] : memref<8xf32>
  }
  memref.dealloc %t : memref<8xf32>
  return
}

// -----

// Two nests that load two buffers and store their difference, the second loading a buffer
// defined after the other (the first nest's result, then the argument): taken in the order
// the nest reads them, both functions load their first argument, then their second, and
// ms-cpu-merge-loops makes them one (in the order of definition the second function's
// arguments were swapped, and LLVM compiled the nest twice).
// CHECK-LABEL: func.func @differences(
// CHECK-SAME: %[[X:[a-z0-9]+]]: memref<8xf32>, %[[Y:[a-z0-9]+]]: memref<8xf32>, %[[OUT:[a-z0-9]+]]: memref<8xf32>
// CHECK: %[[T:.+]] = memref.alloc
// CHECK: call @differences__loop0(%[[X]], %[[Y]], %[[T]])
// CHECK: call @differences__loop1(%[[T]], %[[X]], %[[OUT]])
// MERGE-LABEL: func.func @differences(
// MERGE-SAME: %[[X:[a-z0-9]+]]: memref<8xf32>, %[[Y:[a-z0-9]+]]: memref<8xf32>, %[[OUT:[a-z0-9]+]]: memref<8xf32>
// MERGE: %[[T:.+]] = memref.alloc
// MERGE: call @differences__loop0(%[[X]], %[[Y]], %[[T]])
// MERGE: call @differences__loop0(%[[T]], %[[X]], %[[OUT]])
// MERGE: func.func private @differences__loop0(
// MERGE-NOT: func.func
func.func @differences(%x: memref<8xf32>, %y: memref<8xf32>, %out: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %t = memref.alloc() : memref<8xf32>
  scf.for %i = %c0 to %c8 step %c1 {
    %a = memref.load %x[%i] : memref<8xf32>
    %b = memref.load %y[%i] : memref<8xf32>
    %d = arith.subf %a, %b : f32
    memref.store %d, %t[%i] : memref<8xf32>
  }
  scf.for %i = %c0 to %c8 step %c1 {
    %a = memref.load %t[%i] : memref<8xf32>
    %b = memref.load %x[%i] : memref<8xf32>
    %d = arith.subf %a, %b : f32
    memref.store %d, %out[%i] : memref<8xf32>
  }
  memref.dealloc %t : memref<8xf32>
  return
}

// -----

// A symbol already named as an outlined nest would be (`clash__loop0`) keeps its name; the
// nest's function takes the first free one, and the module keeps one definition per name.
// CHECK-LABEL: func.func private @clash__loop0(
// CHECK-NOT: ms.outlined_loop
// CHECK-LABEL: func.func @clash(
// CHECK: call @clash__loop0_1(
// CHECK: call @clash__loop1(
// CHECK: call @clash__loop0(
// CHECK: func.func private @clash__loop0_1({{.+}} attributes {ms.outlined_loop}
// CHECK: func.func private @clash__loop1({{.+}} attributes {ms.outlined_loop}
// MERGE-LABEL: func.func private @clash__loop0(
// MERGE-LABEL: func.func @clash(
// MERGE: call @clash__loop0_1(
// MERGE: call @clash__loop0_1(
// MERGE: call @clash__loop0(
func.func private @clash__loop0(%x: memref<8xf32>) {
  return
}
func.func @clash(%x: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  scf.for %i = %c0 to %c8 step %c1 {
    %v = memref.load %x[%i] : memref<8xf32>
    memref.store %v, %x[%i] : memref<8xf32>
  }
  scf.for %i = %c0 to %c8 step %c1 {
    %v = memref.load %x[%i] : memref<8xf32>
    memref.store %v, %x[%i] : memref<8xf32>
  }
  call @clash__loop0(%x) : (memref<8xf32>) -> ()
  return
}

// -----

// A reshape of the caller's buffer inside a nest is hoisted before it: the outlined function
// takes the view the nest reads, so this nest and the next one, which reads a buffer of that
// shape directly (a depthwise forward and its input gradient), become one function.
// CHECK-LABEL: func.func @reshaped_weight(
// CHECK-SAME: %[[W4:[a-z0-9]+]]: memref<4x1x3xf32>, %[[W5:[a-z0-9]+]]: memref<4x1x1x3xf32>
// CHECK: %[[V:.+]] = memref.expand_shape %[[W4]]
// CHECK-NEXT: call @reshaped_weight__loop0(%[[V]], %{{.+}}) : (memref<4x1x1x3xf32>, memref<4xf32>) -> ()
// CHECK: call @reshaped_weight__loop1(%[[W5]], %{{.+}}) : (memref<4x1x1x3xf32>, memref<4xf32>) -> ()
// CHECK: func.func private @reshaped_weight__loop0(%{{.+}}: memref<4x1x1x3xf32>, %{{.+}}: memref<4xf32>)
// CHECK-NOT: expand_shape
// CHECK: return
// MERGE-LABEL: func.func @reshaped_weight(
// MERGE: call @reshaped_weight__loop0(
// MERGE: call @reshaped_weight__loop0(
// MERGE-NOT: func.func private @reshaped_weight__loop1
func.func @reshaped_weight(%w4: memref<4x1x3xf32>, %w5: memref<4x1x1x3xf32>, %o1: memref<4xf32>, %o2: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  scf.for %i = %c0 to %c4 step %c1 {
    %v = memref.expand_shape %w4 [[0], [1], [2, 3]] output_shape [4, 1, 1, 3] : memref<4x1x3xf32> into memref<4x1x1x3xf32>
    %x = memref.load %v[%i, %c0, %c0, %c1] : memref<4x1x1x3xf32>
    memref.store %x, %o1[%i] : memref<4xf32>
  }
  scf.for %i = %c0 to %c4 step %c1 {
    %x = memref.load %w5[%i, %c0, %c0, %c1] : memref<4x1x1x3xf32>
    memref.store %x, %o2[%i] : memref<4xf32>
  }
  return
}
