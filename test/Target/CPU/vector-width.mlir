// The CPU code's vector width follows the target CPU (passes/cpu_target.py): 512-bit zmm
// registers for an AVX-512 CPU (LLVM's tuning for Skylake-SP alone would keep to ymm), 256-bit
// ymm for an AVX2-only one or when MSCC_VECTOR_BITS caps it; a CPU LLVM does not know is a
// usage error.
// RUN: env MSCC_CPU=skylake-avx512 mscc %s --emit asm | FileCheck %s --check-prefix=AVX512
// RUN: env MSCC_CPU=haswell mscc %s --emit asm | FileCheck %s --check-prefix=AVX2
// RUN: env MSCC_CPU=skylake-avx512 MSCC_VECTOR_BITS=256 mscc %s --emit asm | FileCheck %s --check-prefix=AVX2
// RUN: not env MSCC_CPU=nonesuch mscc %s --emit asm 2>&1 | FileCheck %s --check-prefix=BAD

// AVX512-LABEL: chain:
// AVX512:       vfmadd{{[0-9]+}}ps {{.*}}%zmm
// AVX512:       vmovups {{.*}}%zmm

// AVX2-NOT:     %zmm
// AVX2-LABEL:   chain:
// AVX2:         vfmadd{{[0-9]+}}ps {{.*}}%ymm
// AVX2-NOT:     %zmm

// BAD: mscc: error: MSCC_CPU='nonesuch' is not a CPU LLVM knows
func.func @chain(%x: tensor<4096xf32>, %a: tensor<4096xf32>) -> tensor<4096xf32> {
  %m = "ms.mul"(%x, %a) : (tensor<4096xf32>, tensor<4096xf32>) -> tensor<4096xf32>
  %s = "ms.add"(%m, %x) : (tensor<4096xf32>, tensor<4096xf32>) -> tensor<4096xf32>
  %t = "ms.tanh"(%s) : (tensor<4096xf32>) -> tensor<4096xf32>
  return %t : tensor<4096xf32>
}
