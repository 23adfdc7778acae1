// ms-cpu-cold-loops: an outlined loop function (ms.outlined_loop) whose loops execute at most
// max-ops operations per call of the program (constant trip counts, over all its call sites)
// is marked optnone and noinline (compiled without optimization); what it had in passthrough
// stays. A dynamic trip count, a call or a parallel loop in it, or a call site inside a loop
// or in a function that is itself called, leaves it optimized.
// RUN: ms-opt %s --ms-cpu-cold-loops=max-ops=100 --split-input-file | FileCheck %s

// 8 iterations of load, mul, store and yield (4 ops) plus the loop, the three constants and
// the return: 37 operations, called twice: 74 <= 100.
// CHECK-LABEL: func.func private @small(
// CHECK-SAME:    attributes {ms.outlined_loop, passthrough = ["noinline", "optnone"]}
// 32 iterations: 133 operations in its one call.
// CHECK-LABEL: func.func private @large(
// CHECK-SAME:    attributes {ms.outlined_loop}
// CHECK-LABEL: func.func private @not_outlined(
// CHECK-SAME:    attributes {ms.kernel = "matmul"}
func.func private @small(%x: memref<16xf32>) attributes {ms.outlined_loop} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  scf.for %i = %c0 to %c8 step %c1 {
    %v = memref.load %x[%i] : memref<16xf32>
    %w = arith.mulf %v, %v : f32
    memref.store %w, %x[%i] : memref<16xf32>
  }
  return
}
func.func private @large(%x: memref<32xf32>) attributes {ms.outlined_loop} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  scf.for %i = %c0 to %c32 step %c1 {
    %v = memref.load %x[%i] : memref<32xf32>
    %w = arith.mulf %v, %v : f32
    memref.store %w, %x[%i] : memref<32xf32>
  }
  return
}
func.func private @not_outlined(%x: memref<16xf32>) attributes {ms.kernel = "matmul"} {
  return
}
func.func @entry(%x: memref<16xf32>) {
  call @small(%x) : (memref<16xf32>) -> ()
  call @small(%x) : (memref<16xf32>) -> ()
  %y = memref.alloc() : memref<32xf32>
  call @large(%y) : (memref<32xf32>) -> ()
  memref.dealloc %y : memref<32xf32>
  call @not_outlined(%x) : (memref<16xf32>) -> ()
  return
}

// -----

// Three calls of the 37-operation nest: 111 > 100. Work inside a loop, a callee, or a
// function something calls is not counted here: those stay optimized.
// CHECK-LABEL: func.func private @thrice(
// CHECK-SAME:    attributes {ms.outlined_loop}
// CHECK-LABEL: func.func private @in_a_loop(
// CHECK-SAME:    attributes {ms.outlined_loop}
// CHECK-LABEL: func.func private @calls_out(
// CHECK-SAME:    attributes {ms.outlined_loop}
// CHECK-LABEL: func.func private @dynamic(
// CHECK-SAME:    attributes {ms.outlined_loop}
// CHECK-LABEL: func.func private @from_a_callee(
// CHECK-SAME:    attributes {ms.outlined_loop}
// The passthrough the function had is kept, noinline not repeated.
// CHECK-LABEL: func.func private @kept(
// CHECK-SAME:    attributes {ms.outlined_loop, passthrough = ["noinline", ["prefer-vector-width", "512"], "optnone"]}
func.func private @thrice(%x: memref<16xf32>) attributes {ms.outlined_loop} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  scf.for %i = %c0 to %c8 step %c1 {
    %v = memref.load %x[%i] : memref<16xf32>
    %w = arith.mulf %v, %v : f32
    memref.store %w, %x[%i] : memref<16xf32>
  }
  return
}
func.func private @in_a_loop(%x: memref<16xf32>) attributes {ms.outlined_loop} {
  return
}
func.func private @calls_out(%x: memref<16xf32>) attributes {ms.outlined_loop} {
  call @helper(%x) : (memref<16xf32>) -> ()
  return
}
func.func private @helper(%x: memref<16xf32>) {
  return
}
func.func private @dynamic(%x: memref<16xf32>, %n: index) attributes {ms.outlined_loop} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %n step %c1 {
    %v = memref.load %x[%i] : memref<16xf32>
    memref.store %v, %x[%i] : memref<16xf32>
  }
  return
}
func.func private @from_a_callee(%x: memref<16xf32>) attributes {ms.outlined_loop} {
  return
}
func.func private @callee(%x: memref<16xf32>) {
  call @from_a_callee(%x) : (memref<16xf32>) -> ()
  return
}
func.func private @kept(%x: memref<16xf32>) attributes {ms.outlined_loop, passthrough = ["noinline", ["prefer-vector-width", "512"]]} {
  return
}
func.func @entry(%x: memref<16xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  call @thrice(%x) : (memref<16xf32>) -> ()
  call @thrice(%x) : (memref<16xf32>) -> ()
  call @thrice(%x) : (memref<16xf32>) -> ()
  scf.for %i = %c0 to %c2 step %c1 {
    func.call @in_a_loop(%x) : (memref<16xf32>) -> ()
  }
  call @calls_out(%x) : (memref<16xf32>) -> ()
  call @dynamic(%x, %n) : (memref<16xf32>, index) -> ()
  call @callee(%x) : (memref<16xf32>) -> ()
  call @kept(%x) : (memref<16xf32>) -> ()
  return
}
