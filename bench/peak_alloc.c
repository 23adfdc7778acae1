/* Peak heap bytes of a process, for bench/recompute.py: an LD_PRELOAD interposer of the
 * C allocation functions that keeps the live and the peak number of bytes (as
 * malloc_usable_size counts them). Resident-set figures (VmHWM) miss short peaks: the kernel
 * counts the pages other threads touch late. The bench reads and resets the counters
 * through ctypes (peak_alloc_reset, peak_alloc_bytes). Allocation goes to glibc's own
 * __libc_* functions, so no dlsym bootstrapping is needed. */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <stddef.h>
#include <string.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void __libc_free(void *);

static long live, peak;

static void *note_alloc(void *p) {
    if (p) {
        long now = __atomic_add_fetch(&live, (long)malloc_usable_size(p), __ATOMIC_RELAXED);
        long old = __atomic_load_n(&peak, __ATOMIC_RELAXED);
        while (now > old && !__atomic_compare_exchange_n(&peak, &old, now, 1,
                                                         __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
        }
    }
    return p;
}

static void note_free(void *p) {
    if (p) __atomic_sub_fetch(&live, (long)malloc_usable_size(p), __ATOMIC_RELAXED);
}

void *malloc(size_t n) { return note_alloc(__libc_malloc(n)); }
void *calloc(size_t n, size_t m) { return note_alloc(__libc_calloc(n, m)); }
void free(void *p) { note_free(p); __libc_free(p); }
void *realloc(void *p, size_t n) {
    long old = p ? (long)malloc_usable_size(p) : 0;
    void *q = __libc_realloc(p, n);
    if (q || n == 0) __atomic_sub_fetch(&live, old, __ATOMIC_RELAXED);
    return note_alloc(q);
}
void *memalign(size_t a, size_t n) { return note_alloc(__libc_memalign(a, n)); }
void *aligned_alloc(size_t a, size_t n) { return note_alloc(__libc_memalign(a, n)); }
int posix_memalign(void **out, size_t a, size_t n) {
    void *p = note_alloc(__libc_memalign(a, n));
    if (!p) return ENOMEM;
    *out = p;
    return 0;
}

/* The peak restarts from the bytes live now; returns nothing. */
void peak_alloc_reset(void) { __atomic_store_n(&peak, __atomic_load_n(&live, __ATOMIC_RELAXED), __ATOMIC_RELAXED); }
long peak_alloc_bytes(void) { return __atomic_load_n(&peak, __ATOMIC_RELAXED); }
long peak_alloc_live(void) { return __atomic_load_n(&live, __ATOMIC_RELAXED); }
