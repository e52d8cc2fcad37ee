// cpu_kernels.cpp - the tables of ops/cpu_kernels.h, one per capability this build compiled.
#include "ops/cpu_kernels.h"

namespace ember {
namespace {

#define EMBER_CPU_KERNEL_DEFAULT(name, ret, ...) &cpu_default::name,
const CpuKernels kDefault{EMBER_CPU_KERNELS(EMBER_CPU_KERNEL_DEFAULT)};
#undef EMBER_CPU_KERNEL_DEFAULT

#if EMBER_CPU_HAVE_AVX2
#define EMBER_CPU_KERNEL_AVX2(name, ret, ...) &cpu_avx2::name,
const CpuKernels kAVX2{EMBER_CPU_KERNELS(EMBER_CPU_KERNEL_AVX2)};
#undef EMBER_CPU_KERNEL_AVX2
#endif

#if EMBER_CPU_HAVE_AVX512
#define EMBER_CPU_KERNEL_AVX512(name, ret, ...) &cpu_avx512::name,
const CpuKernels kAVX512{EMBER_CPU_KERNELS(EMBER_CPU_KERNEL_AVX512)};
#undef EMBER_CPU_KERNEL_AVX512
#endif

}  // namespace

const CpuKernels& cpu_kernels_for(CpuCapability c) {
#if EMBER_CPU_HAVE_AVX512
  if (c == CpuCapability::AVX512) return kAVX512;
#endif
#if EMBER_CPU_HAVE_AVX2
  if (c == CpuCapability::AVX2) return kAVX2;
#endif
  (void)c;
  return kDefault;
}

}  // namespace ember
