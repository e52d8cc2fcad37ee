// kernel.h - included first by every file of ops/cpu/: the kernels that setup.py compiles once
// per CPU capability, each time with that capability's -march and with EMBER_CPU_NS naming the
// copy's namespace (cpu_default, cpu_avx2, cpu_avx512) and EMBER_CPU_LEVEL its rank (0 = default).
//
// Rules for these files (the default copy and a wider copy are linked into one library):
// - everything they define lives in namespace ember::EMBER_CPU_NS, so no two copies share a name;
// - no static objects with constructors or destructors (they would run, with the wide
//   instructions, on every CPU when the library loads; setup.py checks the objects for them);
// - only the default copy compiles every dtype: the wider ones compile float32 and float64
//   (kCompiled<T>, compiled(dtype)) and hand the others to cpu_default; float16/bfloat16 have
//   no loops of their own (every copy widens them into its float32 loops: widen.h).
// setup.py links the default copy and the rest of the core before the wider copies, so an inline
// function that several copies emit (a std:: or header template) resolves to the default code.
#pragma once

#if !defined(EMBER_CPU_NS) || !defined(EMBER_CPU_LEVEL)
#error "the files of ops/cpu/ are compiled by setup.py, once per CPU capability (EMBER_CPU_NS)"
#endif

#include <type_traits>

#include "core/dtype.h"
#include "ops/cpu_kernels.h"

namespace ember::EMBER_CPU_NS {

constexpr bool kDefaultCopy = EMBER_CPU_LEVEL == 0;

// The widest vectors of this copy, in bytes, for loops written with GCC/Clang vector extensions
// (wider ones are lowered through memory: 3x slower than the scalar loop)
constexpr int kVecBytes = EMBER_CPU_LEVEL >= 2 ? 64 : EMBER_CPU_LEVEL == 1 ? 32 : 16;

// Whether this copy has the kernels of dtype T (its C++ type) / of a ScalarType.
template <typename T>
constexpr bool kCompiled = kDefaultCopy || std::is_same_v<T, float> || std::is_same_v<T, double>;
inline bool compiled(ScalarType t) {
  return kDefaultCopy || t == ScalarType::Float32 || t == ScalarType::Float64;
}

}  // namespace ember::EMBER_CPU_NS
