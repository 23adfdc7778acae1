// ms-bool-buffers-as-bytes: every memref of i1 (the ownership flags the deallocation
// pipeline keeps for loops and conditionals) becomes a memref of i8 of the same shape, in
// results, block arguments and function types; an i1 still loaded or stored goes through
// a byte (passes/destination_passing.py).
// RUN: ms-opt %s --ms-bool-buffers-as-bytes --split-input-file | FileCheck %s

// An allocated flag buffer: stored through extui, loaded through trunci.
// CHECK-LABEL: func.func @load_and_store
// CHECK-SAME: (%[[FLAG:.+]]: i1, %[[I:.+]]: index) -> i1
// CHECK: %[[BUF:.+]] = memref.alloc() : memref<4xi8>
// CHECK: %[[BYTE:.+]] = arith.extui %[[FLAG]] : i1 to i8
// CHECK: memref.store %[[BYTE]], %[[BUF]][%[[I]]] : memref<4xi8>
// CHECK: %[[READ:.+]] = memref.load %[[BUF]][%[[I]]] : memref<4xi8>
// CHECK: %[[BIT:.+]] = arith.trunci %[[READ]] : i8 to i1
// CHECK: memref.dealloc %[[BUF]] : memref<4xi8>
// CHECK: return %[[BIT]] : i1
func.func @load_and_store(%flag: i1, %i: index) -> i1 {
  %buf = memref.alloc() : memref<4xi1>
  memref.store %flag, %buf[%i] : memref<4xi1>
  %bit = memref.load %buf[%i] : memref<4xi1>
  memref.dealloc %buf : memref<4xi1>
  return %bit : i1
}

// -----

// A loop carrying a flag buffer (an iter_arg: a block argument and a result) and a
// function returning one; buffers of other element types stay as they are.
// CHECK-LABEL: func.func @carried
// CHECK-SAME: (%[[N:.+]]: index, %[[X:.+]]: memref<4xf32>) -> memref<2xi8>
// CHECK: %[[INIT:.+]] = memref.alloc() : memref<2xi8>
// CHECK: %[[OUT:.+]] = scf.for {{.*}} iter_args(%[[CARRY:.+]] = %[[INIT]]) -> (memref<2xi8>)
// CHECK: scf.yield %[[CARRY]] : memref<2xi8>
// CHECK: return %[[OUT]] : memref<2xi8>
func.func @carried(%n: index, %x: memref<4xf32>) -> memref<2xi1> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %init = memref.alloc() : memref<2xi1>
  %out = scf.for %i = %c0 to %n step %c1 iter_args(%carry = %init) -> (memref<2xi1>) {
    scf.yield %carry : memref<2xi1>
  }
  return %out : memref<2xi1>
}

// -----

// A declaration's arguments and results widen too (its callers pass bytes).
// CHECK-LABEL: func.func private @external(memref<3xi8>, memref<3xf32>) -> memref<3xi8>
func.func private @external(memref<3xi1>, memref<3xf32>) -> memref<3xi1>
