// cpu_capability.cpp - see cpu_capability.h. Compiled for the baseline like all non-kernel code:
// it must run on every CPU, since it is what decides which kernels may run.
#include "runtime/cpu_capability.h"

#include <cctype>
#include <cstdlib>

namespace ember {
namespace {

// The variants setup.py compiled (it defines these for every file of the build).
#ifndef EMBER_CPU_HAVE_AVX2
#define EMBER_CPU_HAVE_AVX2 0
#endif
#ifndef EMBER_CPU_HAVE_AVX512
#define EMBER_CPU_HAVE_AVX512 0
#endif

CpuCapability detect() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
  // x86-64-v4 and -v3 as the compiler's -march levels define them.
  const bool v3 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                  __builtin_cpu_supports("bmi") && __builtin_cpu_supports("bmi2") &&
                  __builtin_cpu_supports("f16c") && __builtin_cpu_supports("movbe");
  const bool v4 = v3 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                  __builtin_cpu_supports("avx512cd") && __builtin_cpu_supports("avx512dq") &&
                  __builtin_cpu_supports("avx512vl");
  if (v4 && EMBER_CPU_HAVE_AVX512) return CpuCapability::AVX512;
  if (v3 && EMBER_CPU_HAVE_AVX2) return CpuCapability::AVX2;
#endif
  return CpuCapability::Default;
}

struct Choice {
  CpuCapability best = CpuCapability::Default;
  CpuCapability used = CpuCapability::Default;
  std::string note;
};

Choice choose() {
  Choice c;
  c.best = c.used = detect();
  const char* env = std::getenv("EMBER_CPU_CAPABILITY");
  if (!env || !*env) return c;
  std::string v;
  for (const char* p = env; *p; ++p) v += static_cast<char>(std::tolower(static_cast<unsigned char>(*p)));
  CpuCapability asked;
  if (v == "default" || v == "baseline") asked = CpuCapability::Default;
  else if (v == "avx2") asked = CpuCapability::AVX2;
  else if (v == "avx512") asked = CpuCapability::AVX512;
  else {
    c.note = "EMBER_CPU_CAPABILITY='" + std::string(env) +
             "' is not one of default, avx2, avx512: ignored, the kernels run at " +
             cpu_capability_name(c.best);
    return c;
  }
  // As ATen: a level the CPU (or this build) lacks falls back to the best one there is.
  if (static_cast<int>(asked) < static_cast<int>(c.best)) c.used = asked;
  return c;
}

const Choice& choice() {
  static const Choice c = choose();
  return c;
}

}  // namespace

CpuCapability cpu_capability() { return choice().used; }
CpuCapability best_cpu_capability() { return choice().best; }
std::string cpu_capability_note() { return choice().note; }

const char* cpu_capability_name(CpuCapability c) {
  switch (c) {
    case CpuCapability::AVX2: return "AVX2";
    case CpuCapability::AVX512: return "AVX512";
    case CpuCapability::Default: break;
  }
  return "DEFAULT";
}

}  // namespace ember
