// elementwise_source.h: the CUDA source of ember's elementwise kernels, generated from the op
// table (ops/op_table.h) and the scalar math (kernels/math.h) that the CPU kernels are compiled
// from, so that both devices compute each op by one formula. NVRTC compiles it at run time
// (cuda/driver_api.h); nothing here needs a GPU, so the CPU tests check the source and the
// argument packing.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/dtype.h"

namespace ember::cuda {

// The most dims an operand may have after the iterator coalesced them (ElementwiseIter).
constexpr int kKernelMaxDims = 16;
constexpr int kKernelMaxInputs = 2;

enum class KernelFamily : uint8_t { Unary, Binary };

// What one compiled kernel is specialised on (the kernel cache's key).
struct ElementwiseKernelKey {
  KernelFamily family = KernelFamily::Unary;
  int op = 0;                              // UnaryOp / BinaryOp index
  ScalarType input = ScalarType::Float32;  // every input's dtype (the op's compute dtype)
  ScalarType output = ScalarType::Float32;
  bool flat = false;         // one dim after coalescing: no index arithmetic
  uint8_t by_value = 0;      // bit k: input k is passed in the parameters (a CPU 0-d operand)

  uint64_t packed() const {
    return uint64_t(family) | uint64_t(op) << 8 | uint64_t(input) << 24 |
           uint64_t(output) << 32 | uint64_t(flat) << 40 | uint64_t(by_value) << 41;
  }
  int arity() const { return family == KernelFamily::Binary ? 2 : 1; }
};

// The kernel's only parameter, passed by value; the generated source declares the same struct
// (elementwise_source.cpp checks the two layouts agree with static_asserts on both sides).
struct ElementwiseParams {
  int64_t numel;
  int64_t ndim;
  int64_t sizes[kKernelMaxDims];                          // fastest-varying first
  int64_t strides[kKernelMaxInputs + 1][kKernelMaxDims];  // in bytes; operand 0 is the output
  uint64_t data[kKernelMaxInputs + 1];                    // device addresses
  uint64_t values[kKernelMaxInputs];                      // raw bits of by-value inputs
};

// The C type a dtype is in the kernel source; null for dtypes the generated kernels skip
// (float16/bfloat16 stay on the CuPy path for now).
const char* kernel_type_name(ScalarType t);
bool kernel_supports(ScalarType t);

std::string kernel_name(const ElementwiseKernelKey& key);
std::string kernel_source(const ElementwiseKernelKey& key);

// The headers the source includes (name, contents): the CPU's own op_table.h and math.h.
const std::vector<std::pair<std::string, std::string>>& kernel_headers();

}  // namespace ember::cuda
