/* Matrix products for the quick tier of a tiered compile (passes/tiering.py).
 *
 * The quick tier lowers a module without its matmul schedule (passes/pipeline.QUICK_STAGES)
 * and LLVM compiles it at -O0: there a matmul kernel's loops ran at ~0.2-0.5 G multiply-adds
 * per second, and LeNet5's training step spent ~0.1 s of its first call in them.
 * ms-cpu-matmul-calls makes each float32/float64 linalg.matmul a call of these instead:
 * compiled once, at install, vectorized for the widest vector unit the CPU has (GCC's and
 * Clang's target_clones pick the copy when the library loads).
 *
 * Contract (linalg.matmul on buffers whose rows are contiguous): C[m x n] += A[m x k] @
 * B[k x n], row i of A at a + i * lda, row p of B at b + p * ldb, row i of C at c + i * ldc
 * (element strides). The buffers do not overlap (a matmul's output is none of its inputs).
 *
 * A Python extension module only so that setup.py builds it beside the others; the JIT finds
 * the functions by name once runtime/quick_kernels.py has loaded it globally.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

#if defined(__x86_64__) && defined(__has_attribute)
#if __has_attribute(target_clones)
#define WIDEST_VECTORS __attribute__((target_clones("avx512f", "avx2", "default")))
#endif
#endif
#ifndef WIDEST_VECTORS
#define WIDEST_VECTORS
#endif

/* Four rows of C at a time: each row of B is loaded once for four of them. The inner loop
 * over j is what the compiler vectorizes. */
#define MATMUL(NAME, T)                                                                    \
    WIDEST_VECTORS void NAME(int64_t m, int64_t n, int64_t k, const T *a, int64_t lda,     \
                             const T *b, int64_t ldb, T *c, int64_t ldc) {                 \
        int64_t i = 0;                                                                     \
        for (; i + 4 <= m; i += 4) {                                                       \
            T *restrict c0 = c + i * ldc, *restrict c1 = c0 + ldc;                          \
            T *restrict c2 = c1 + ldc, *restrict c3 = c2 + ldc;                             \
            for (int64_t p = 0; p < k; p++) {                                              \
                const T *restrict row = b + p * ldb;                                       \
                T a0 = a[i * lda + p], a1 = a[(i + 1) * lda + p];                          \
                T a2 = a[(i + 2) * lda + p], a3 = a[(i + 3) * lda + p];                    \
                for (int64_t j = 0; j < n; j++) {                                          \
                    T bj = row[j];                                                         \
                    c0[j] += a0 * bj;                                                      \
                    c1[j] += a1 * bj;                                                      \
                    c2[j] += a2 * bj;                                                      \
                    c3[j] += a3 * bj;                                                      \
                }                                                                          \
            }                                                                              \
        }                                                                                  \
        for (; i < m; i++) {                                                               \
            T *restrict ci = c + i * ldc;                                                  \
            for (int64_t p = 0; p < k; p++) {                                              \
                const T *restrict row = b + p * ldb;                                       \
                T aip = a[i * lda + p];                                                    \
                for (int64_t j = 0; j < n; j++)                                            \
                    ci[j] += aip * row[j];                                                 \
            }                                                                              \
        }                                                                                  \
    }

MATMUL(mscc_quick_matmul_f32, float)
MATMUL(mscc_quick_matmul_f64, double)

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_quick_kernels",
                                    "the quick tier's matrix products (C functions)", -1,
                                    NULL};

PyMODINIT_FUNC PyInit__quick_kernels(void) { return PyModule_Create(&module); }
