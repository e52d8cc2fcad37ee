// driver_api.h: run-time compiled kernels, launched from C++: NVRTC (libnvrtc) compiles CUDA
// source to a GPU binary once, the driver API (libcuda) loads it and launches it on ember's
// current stream. Both libraries are loaded with dlopen() on first use, as the runtime is
// (cudart_backend.h): ember links against no CUDA library.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "cuda/backend.h"

namespace ember::cuda {

// Paths or sonames of libnvrtc tried before the default names (ember passes those of the
// nvidia-cuda-nvrtc wheels, which CuPy uses too). Takes effect at the next probe.
void set_nvrtc_candidates(std::vector<std::string> paths);

// Whether kernels can be compiled and launched here (driver API and NVRTC loaded, a device
// present); probes once. `why` gets the reason when not.
bool compiled_kernels_available(std::string* why = nullptr);

// CUDA source -> a binary for compute capability major.minor: a CUBIN, or PTX for the newest
// architecture NVRTC knows when the device is newer than this NVRTC. Throws a RuntimeError with
// NVRTC's log when the source does not compile. Needs NVRTC only (no GPU). compile_kernel looks
// in the disk cache first and keeps what NVRTC makes there; compile_with_nvrtc always compiles.
std::string compile_kernel(const std::string& source, const std::string& kernel_name,
                           const std::vector<std::pair<std::string, std::string>>& headers,
                           int major, int minor);
std::string compile_with_nvrtc(const std::string& source, const std::string& kernel_name,
                               const std::vector<std::pair<std::string, std::string>>& headers,
                               int major, int minor);

// The disk cache of compiled kernels: $EMBER_KERNEL_CACHE (0: none), else
// $XDG_CACHE_HOME/ember/kernels, else ~/.cache/ember/kernels; and the file a kernel is kept in
// ("" without a cache).
std::string kernel_cache_dir();
std::string kernel_cache_file(const std::string& source, const std::string& kernel_name,
                              const std::vector<std::pair<std::string, std::string>>& headers,
                              int major, int minor);

using KernelFunction = void*;  // a CUfunction
// Loads `binary` (CUBIN or PTX) into `device`'s primary context and returns its kernel `name`.
KernelFunction load_kernel(int device, const std::string& binary, const std::string& name);
// Launches `fn` with one by-value parameter block on `stream` of `device`.
void launch_kernel(int device, KernelFunction fn, unsigned grid, unsigned block, void* params,
                   StreamHandle stream);

}  // namespace ember::cuda
