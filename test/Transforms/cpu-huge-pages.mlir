// ms-cpu-huge-pages: a heap buffer of a static shape and at least min-bytes (4 MiB) is
// advised as transparent huge pages right after its allocation: madvise(MADV_HUGEPAGE = 14)
// on the 2 MiB pages wholly inside it, [round up(start), round down(start + bytes)).
// Smaller buffers, dynamic shapes and stack buffers stay as they were.
// RUN: ms-opt %s --ms-cpu-huge-pages --split-input-file | FileCheck %s
// RUN: ms-opt %s --ms-cpu-huge-pages=min-bytes=16777216 --split-input-file | FileCheck %s --check-prefix=LARGER
// RUN: not ms-opt %s --ms-cpu-huge-pages=min-bytes=4096 2>&1 | FileCheck %s --check-prefix=SMALL

// SMALL: error: bad option '--ms-cpu-huge-pages=min-bytes=4096': option 'min-bytes' of pass 'ms-cpu-huge-pages' is an integer from 4194304 to 4611686018427387904, not '4096'

// 8 MiB of f32 (2048 x 1024 x 4 bytes).
// CHECK:       func.func private @madvise(!llvm.ptr, i64, i32) -> i32
// CHECK-LABEL: func.func @large
// CHECK:         %[[BUF:.+]] = memref.alloc() {alignment = 64 : i64} : memref<2048x1024xf32>
// CHECK-NEXT:    %[[INDEX:.+]] = memref.extract_aligned_pointer_as_index %[[BUF]]
// CHECK-NEXT:    %[[START:.+]] = arith.index_cast %[[INDEX]] : index to i64
// CHECK-NEXT:    %[[MASK:.+]] = arith.constant -2097152 : i64
// CHECK-NEXT:    %[[PAGE_LESS_ONE:.+]] = arith.constant 2097151 : i64
// CHECK-NEXT:    %[[UP:.+]] = arith.addi %[[START]], %[[PAGE_LESS_ONE]] : i64
// CHECK-NEXT:    %[[FIRST:.+]] = arith.andi %[[UP]], %[[MASK]] : i64
// CHECK-NEXT:    %[[BYTES:.+]] = arith.constant 8388608 : i64
// CHECK-NEXT:    %[[PAST:.+]] = arith.addi %[[START]], %[[BYTES]] : i64
// CHECK-NEXT:    %[[END:.+]] = arith.andi %[[PAST]], %[[MASK]] : i64
// CHECK-NEXT:    %[[PTR:.+]] = llvm.inttoptr %[[FIRST]] : i64 to !llvm.ptr
// CHECK-NEXT:    %[[LENGTH:.+]] = arith.subi %[[END]], %[[FIRST]] : i64
// CHECK-NEXT:    %[[ADVICE:.+]] = arith.constant 14 : i32
// CHECK-NEXT:    call @madvise(%[[PTR]], %[[LENGTH]], %[[ADVICE]]) : (!llvm.ptr, i64, i32) -> i32
// CHECK-NEXT:    linalg.fill
// LARGER-LABEL: func.func @large
// LARGER-NEXT:    memref.alloc()
// LARGER-NEXT:    linalg.fill
func.func @large(%x: f32) -> memref<2048x1024xf32> {
  %buf = memref.alloc() {alignment = 64 : i64} : memref<2048x1024xf32>
  linalg.fill ins(%x : f32) outs(%buf : memref<2048x1024xf32>)
  return %buf : memref<2048x1024xf32>
}

// -----

// Inside a loop (each iteration's buffer), of f64: 1024 x 1024 x 8 bytes = 8 MiB; one
// declaration for both advices.
// CHECK-COUNT-1: func.func private @madvise
// CHECK-LABEL: func.func @in_loop
// CHECK:         scf.for
// CHECK:           memref.alloc() : memref<1024x1024xf64>
// CHECK:           arith.constant 8388608 : i64
// CHECK:           call @madvise
// CHECK:           memref.dealloc
// CHECK:         memref.alloc() : memref<4x1024x1024xf32>
// CHECK:         arith.constant 16777216 : i64
// CHECK:         call @madvise
// LARGER-LABEL: func.func @in_loop
// LARGER:         memref.alloc() : memref<1024x1024xf64>
// LARGER-NOT:     call @madvise
// LARGER:         memref.alloc() : memref<4x1024x1024xf32>
// LARGER-NEXT:    memref.extract_aligned_pointer_as_index
// LARGER:         call @madvise
func.func @in_loop(%n: index) -> memref<4x1024x1024xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %n step %c1 {
    %buf = memref.alloc() : memref<1024x1024xf64>
    memref.dealloc %buf : memref<1024x1024xf64>
  }
  %out = memref.alloc() : memref<4x1024x1024xf32>
  return %out : memref<4x1024x1024xf32>
}

// -----

// Under 4 MiB (1024 x 1023 floats), a dynamic shape, a stack buffer: nothing to advise, and
// no declaration.
// CHECK-LABEL: func.func @kept
// CHECK-NOT:     madvise
func.func @kept(%n: index) {
  %small = memref.alloc() : memref<1024x1023xf32>
  %dynamic = memref.alloc(%n) : memref<?x1048576xf32>
  %stack = memref.alloca() : memref<2048x1024xf32>
  memref.dealloc %small : memref<1024x1023xf32>
  memref.dealloc %dynamic : memref<?x1048576xf32>
  return
}
