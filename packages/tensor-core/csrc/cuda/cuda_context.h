// cuda_context.h: the process's CUDA state, shared by the Python bindings: the backend (libcudart
// loaded with dlopen on first use), one caching allocator per device, and each thread's current
// stream per device. Where no GPU is usable every call but is_available/device_count/
// unavailable_reason raises a RuntimeError that says why (no_gpu_error).
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "cuda/backend.h"
#include "cuda/caching_allocator.h"

namespace ember::cuda {

// Paths or sonames tried before the default libcudart names (ember.cuda passes the runtime of
// the nvidia-cuda-runtime wheel when one is installed). Takes effect at the next probe.
void set_runtime_candidates(std::vector<std::string> paths);

bool is_available();              // probes once; never throws
int device_count();               // 0 without a usable GPU
std::string unavailable_reason();  // empty when available
std::string runtime_version();     // the CUDA runtime's version ("13.0"); empty without a GPU
std::string backend_name();       // "cudart", "host" (tests) or "none"

// The message of the RuntimeError raised by CUDA calls where no GPU is usable.
std::string no_gpu_error(const std::string& what = "");

Backend& backend();                       // raises the no-GPU error
CachingAllocator& allocator(int device);  // created on first use from EMBER_CUDA_ALLOC_CONF
int current_device();
void set_device(int device);
int check_device_index(int device);  // -1 -> current device; raises for an invalid ordinal
StreamHandle current_stream(int device);
void set_current_stream(int device, StreamHandle stream);

// Tests: use the host backend (simulated devices of `capacity` bytes each) in place of the CUDA
// runtime, so the whole ember.cuda surface runs without a GPU; capacity 0 goes back to the
// runtime. Refused while memory is allocated.
void use_host_backend(size_t capacity, int devices);

}  // namespace ember::cuda
