// ms-split-fresh-deallocs frees a bufferization.dealloc's unconditional buffers that this
// block allocated and that nothing else in the op can alias with memref.dealloc; the op keeps
// the rest (passes/split_deallocs.py).
// RUN: ms-opt %s --ms-split-fresh-deallocs --split-input-file | FileCheck %s

// Two fresh buffers freed unconditionally, nothing kept: the op is gone.
// CHECK-LABEL: func.func @all_fresh
// CHECK: %[[A:.+]] = memref.alloc()
// CHECK: %[[B:.+]] = memref.alloc()
// CHECK-DAG: memref.dealloc %[[A]]
// CHECK-DAG: memref.dealloc %[[B]]
// CHECK-NOT: bufferization.dealloc
// CHECK: return
func.func @all_fresh(%x: memref<8xf32>) {
  %true = arith.constant true
  %a = memref.alloc() : memref<8xf32>
  memref.copy %x, %a : memref<8xf32> to memref<8xf32>
  %b = memref.alloc() : memref<8xf32>
  memref.copy %a, %b : memref<8xf32> to memref<8xf32>
  bufferization.dealloc (%a, %b : memref<8xf32>, memref<8xf32>) if (%true, %true)
  return
}

// -----

// A buffer whose view is kept (returned) stays in the op, and so does one freed under a
// runtime condition and a function argument's base buffer; the op's ownership results
// come from the op that is left.
// CHECK-LABEL: func.func @kept_and_conditional
// CHECK-SAME: (%[[X:.+]]: memref<8xf32>, %[[C:.+]]: i1)
// CHECK: %[[A:.+]] = memref.alloc()
// CHECK: %[[V:.+]] = memref.subview %[[A]]
// CHECK: %[[B:.+]] = memref.alloc()
// CHECK: %[[D:.+]] = memref.alloc()
// CHECK: %[[BASE:.+]], %{{.+}}, %{{.+}}, %{{.+}} = memref.extract_strided_metadata %[[X]]
// CHECK: memref.dealloc %[[D]]
// CHECK-NEXT: %[[OWN:.+]] = bufferization.dealloc (%[[A]], %[[B]], %[[BASE]] : {{.*}}) if (%{{.+}}, %[[C]], %{{.+}}) retain (%[[V]] : {{.*}})
// CHECK-NEXT: return %[[V]], %[[OWN]]
func.func @kept_and_conditional(%x: memref<8xf32>, %c: i1) -> (memref<4xf32, strided<[1], offset: 2>>, i1) {
  %true = arith.constant true
  %a = memref.alloc() : memref<8xf32>
  %v = memref.subview %a[2] [4] [1] : memref<8xf32> to memref<4xf32, strided<[1], offset: 2>>
  %b = memref.alloc() : memref<8xf32>
  %d = memref.alloc() : memref<8xf32>
  %base, %offset, %size, %stride = memref.extract_strided_metadata %x : memref<8xf32> -> memref<f32>, index, index, index
  %own = bufferization.dealloc (%a, %b, %d, %base : memref<8xf32>, memref<8xf32>, memref<8xf32>, memref<f32>) if (%true, %c, %true, %true) retain (%v : memref<4xf32, strided<[1], offset: 2>>)
  return %v, %own : memref<4xf32, strided<[1], offset: 2>>, i1
}

// -----

// A buffer that another freed buffer may alias (the base buffer of its view) stays: the op
// frees the two once.
// CHECK-LABEL: func.func @aliased_in_the_list
// CHECK: %[[A:.+]] = memref.alloc()
// CHECK: %[[BASE:.+]], %{{.+}}, %{{.+}}, %{{.+}} = memref.extract_strided_metadata
// CHECK-NOT: memref.dealloc
// CHECK: bufferization.dealloc (%[[A]], %[[BASE]] : memref<8xf32>, memref<f32>)
func.func @aliased_in_the_list() {
  %true = arith.constant true
  %a = memref.alloc() : memref<8xf32>
  %v = memref.subview %a[2] [4] [1] : memref<8xf32> to memref<4xf32, strided<[1], offset: 2>>
  %base, %offset, %size, %stride = memref.extract_strided_metadata %v : memref<4xf32, strided<[1], offset: 2>> -> memref<f32>, index, index, index
  bufferization.dealloc (%a, %base : memref<8xf32>, memref<f32>) if (%true, %true)
  return
}

// -----

// A buffer allocated outside the dealloc's block (here: before the loop that frees it)
// stays in the op.
// CHECK-LABEL: func.func @outer_buffer
// CHECK: scf.for
// CHECK-NOT: memref.dealloc
// CHECK: bufferization.dealloc
func.func @outer_buffer(%n: index) {
  %true = arith.constant true
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %a = memref.alloc() : memref<8xf32>
  scf.for %i = %c0 to %n step %c1 {
    bufferization.dealloc (%a : memref<8xf32>) if (%true)
  }
  return
}

// -----

// A buffer a conditional yields aliases the conditional's result, whose base buffer the op
// frees under the conditional's ownership flag: it stays (the two may be one buffer).
// CHECK-LABEL: func.func @yielded_by_a_region
// CHECK: %[[A:.+]] = memref.alloc()
// CHECK: %[[R:.+]]:2 = scf.if
// CHECK: %[[BASE:.+]], %{{.+}}, %{{.+}}, %{{.+}} = memref.extract_strided_metadata %[[R]]#0
// CHECK-NOT: memref.dealloc
// CHECK: bufferization.dealloc (%[[A]], %[[BASE]] : memref<8xf32>, memref<f32>) if (%{{.+}}, %[[R]]#1)
func.func @yielded_by_a_region(%c: i1, %x: memref<8xf32>) {
  %true = arith.constant true
  %false = arith.constant false
  %a = memref.alloc() : memref<8xf32>
  %r:2 = scf.if %c -> (memref<8xf32>, i1) {
    scf.yield %a, %false : memref<8xf32>, i1
  } else {
    scf.yield %x, %false : memref<8xf32>, i1
  }
  %base, %offset, %size, %stride = memref.extract_strided_metadata %r#0 : memref<8xf32> -> memref<f32>, index, index, index
  bufferization.dealloc (%a, %base : memref<8xf32>, memref<f32>) if (%true, %r#1)
  return
}
