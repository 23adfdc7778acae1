llvm.func @zero_bits(%dst: !llvm.ptr, %i: i64) {
  %size = llvm.mlir.constant(4 : index) : i64
  %buf = llvm.alloca %size x i0 : (i64) -> !llvm.ptr
  llvm.store %i, %buf : i64, !llvm.ptr
  llvm.return
}
