llvm.func @f(%desc: !llvm.ptr) {
  %d = llvm.load %desc : !llvm.ptr -> !llvm.struct<(ptr, ptr, i64)>
  %x = llvm.extractvalue %d[4294967296] : !llvm.struct<(ptr, ptr, i64)>
  llvm.return
}
