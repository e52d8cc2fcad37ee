// cpu_capability.h - the instruction-set level the CPU kernels run at.
//
// The kernels in csrc/ops/cpu/ are compiled once per capability (setup.py): DEFAULT for the
// baseline that the whole core targets (x86-64-v2 on x86-64: SSE4.2, POPCNT), AVX2 for
// x86-64-v3 (AVX2, FMA, F16C, BMI2) and AVX512 for x86-64-v4 (AVX-512 F/BW/CD/DQ/VL). The level
// is fixed the first time it is asked for (when ember._C loads): the best one this build has and
// this CPU supports, as cpuid reports it through __builtin_cpu_supports (which also checks that the
// operating system saves the wide registers). EMBER_CPU_CAPABILITY=default|avx2|avx512, as
// PyTorch's ATEN_CPU_CAPABILITY, asks for a lower one; "baseline" is accepted for "default".
// Elsewhere (aarch64) there is only DEFAULT: the compiler's baseline, armv8-a with NEON.
#pragma once

#include <string>

namespace ember {

enum class CpuCapability : int { Default = 0, AVX2 = 1, AVX512 = 2 };

// The level the kernels run at, fixed for the process on the first call.
CpuCapability cpu_capability();

// The best level that this build has compiled and this CPU supports, whatever the variable says.
CpuCapability best_cpu_capability();

// PyTorch's names (torch.backends.cpu.get_cpu_capability()): "DEFAULT", "AVX2", "AVX512".
const char* cpu_capability_name(CpuCapability c);

// What is wrong with EMBER_CPU_CAPABILITY ("" when it is unset or one of the names; a level above
// the best one is not wrong: the best one runs, as in PyTorch).
std::string cpu_capability_note();

}  // namespace ember
