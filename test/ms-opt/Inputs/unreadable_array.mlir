llvm.func @copy(%p: !llvm.ptr) attributes {ms.distinct_pointers = array<ui32: 1, 6>} {
  llvm.return
}
