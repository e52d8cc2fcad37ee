// device_elementwise.h: the elementwise ops of the op table (ops/op_table.h) on CUDA tensors,
// launched from C++. ops/elementwise.cpp applies the same dtype rules, broadcasting and out=
// checks on every device and hands the CUDA iterators here: each op's kernel is generated from
// the table's formula (cuda/elementwise_source.h), compiled by NVRTC on first use, cached, and
// launched on the current stream. Over ember.cuda's simulated devices (host memory, the tests
// on machines without a GPU) the CPU kernels run instead, so the same path is tested everywhere.
#pragma once
#include <string>

#include "core/dtype.h"
#include "cuda/elementwise_source.h"

namespace ember {
class ElementwiseIter;
}

namespace ember::cuda {

// Whether CUDA tensors' elementwise ops take this path: a real GPU whose driver and NVRTC load,
// or the simulated devices; ember.cuda's CuPy path otherwise. `why` gets the reason when not.
bool native_elementwise_available(std::string* why = nullptr);
void set_native_elementwise(bool on);
// Whether `dtype` (a compute dtype) has generated kernels.
inline bool native_elementwise_dtype(ScalarType dtype) { return kernel_supports(dtype); }

void run_elementwise(KernelFamily family, int op, const ElementwiseIter& it, ScalarType compute);

// The kernel and the parameter block a launch over `it` uses (tests read them without a GPU).
ElementwiseKernelKey kernel_key(KernelFamily family, int op, const ElementwiseIter& it,
                                ScalarType compute);
ElementwiseParams pack_params(const ElementwiseIter& it, const ElementwiseKernelKey& key);

// Kernels compiled so far in this process (all devices).
int compiled_kernel_count();

}  // namespace ember::cuda
