/* Runtime support linked into every CPU artifact, so that it needs no MLIR libraries.
 *
 * memrefCopy: what `memref.copy` between strided (non-contiguous) memrefs lowers to; the
 * same contract as MLIR's CRunnerUtils (unranked descriptors of two equally shaped memrefs).
 */
#include <stdint.h>
#include <string.h>

typedef struct {
  int64_t rank;
  void *descriptor;
} UnrankedMemRef;

typedef struct {
  char *allocated;
  char *aligned;
  int64_t offset;
  int64_t sizes_and_strides[]; /* sizes[rank], then strides[rank] */
} MemRefDescriptor;

void memrefCopy(int64_t elem_size, UnrankedMemRef *src_arg, UnrankedMemRef *dst_arg) {
  int64_t rank = src_arg->rank;
  MemRefDescriptor *src = (MemRefDescriptor *)src_arg->descriptor;
  MemRefDescriptor *dst = (MemRefDescriptor *)dst_arg->descriptor;
  const int64_t *sizes = src->sizes_and_strides;
  const int64_t *src_strides = src->sizes_and_strides + rank;
  const int64_t *dst_strides = dst->sizes_and_strides + rank;
  char *src_ptr = src->aligned + src->offset * elem_size;
  char *dst_ptr = dst->aligned + dst->offset * elem_size;
  int64_t index[64] = {0};
  if (rank > 64)
    return;
  for (int64_t d = 0; d < rank; ++d)
    if (sizes[d] == 0)
      return;
  if (rank == 0) {
    memcpy(dst_ptr, src_ptr, (size_t)elem_size);
    return;
  }
  /* Odometer over all indices, innermost fastest. */
  for (;;) {
    memcpy(dst_ptr, src_ptr, (size_t)elem_size);
    int64_t d = rank - 1;
    for (; d >= 0; --d) {
      index[d]++;
      src_ptr += src_strides[d] * elem_size;
      dst_ptr += dst_strides[d] * elem_size;
      if (index[d] < sizes[d])
        break;
      src_ptr -= src_strides[d] * elem_size * sizes[d];
      dst_ptr -= dst_strides[d] * elem_size * sizes[d];
      index[d] = 0;
    }
    if (d < 0)
      return;
  }
}
