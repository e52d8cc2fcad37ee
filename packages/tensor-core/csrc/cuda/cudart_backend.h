// cudart_backend.h: the Backend over the CUDA runtime, loaded with dlopen() at run time.
//
// ember links against no CUDA library: the few cudart functions the allocator, streams and
// events need are looked up by name in libcudart, so one build serves machines with and without
// a GPU (and with CUDA 11, 12 or 13 runtimes). Where libcudart cannot be loaded, or it finds no
// device, load_cudart returns null and says why.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "cuda/backend.h"

namespace ember::cuda {

// The sonames tried after any explicit candidates, in order.
const std::vector<std::string>& default_cudart_names();

// The runtime from the first candidate that loads and reports at least one device; null and
// *why set otherwise (every candidate tried, with its dlopen or CUDA error).
std::unique_ptr<Backend> load_cudart(const std::vector<std::string>& candidates, std::string* why);

}  // namespace ember::cuda
