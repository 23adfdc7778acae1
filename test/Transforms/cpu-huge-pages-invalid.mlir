// ms-cpu-huge-pages calls libc's madvise, declared once. A module that has another symbol
// named madvise gets a located error at it (the calls did not match it: invalid IR reported
// at an allocation).
// RUN: ms-opt %s --ms-cpu-huge-pages --split-input-file --verify-diagnostics

// expected-error@+1 {{'madvise' is the C library function (!llvm.ptr, i64, i32) -> i32 that this compile calls; the module defines another symbol of that name}}
func.func private @madvise(%x: f32) -> f32 {
  return %x : f32
}
func.func @big() {
  %0 = memref.alloc() : memref<4096x1024xf32>
  memref.dealloc %0 : memref<4096x1024xf32>
  return
}

// -----

// A definition of that type is not the C library's either.
// expected-error@+1 {{'madvise' is the C library function}}
func.func @madvise(%p: !llvm.ptr, %n: i64, %a: i32) -> i32 {
  return %a : i32
}
func.func @big() {
  %0 = memref.alloc() : memref<4096x1024xf32>
  memref.dealloc %0 : memref<4096x1024xf32>
  return
}
