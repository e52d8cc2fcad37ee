// device_storage.h: what CUDA tensors are made of: storages whose bytes come from a device's
// caching allocator, pinned host storages, and the raw copies between them. The tensor code
// reaches them through allocator_for(Device) (core/allocator.h); the element-wise work on CUDA
// tensors is done by CuPy, from Python (ember/cuda/_ops.py), over these bytes.
#pragma once
#include <cstddef>

#include "core/tensor.h"
#include "cuda/backend.h"

namespace ember::cuda {

// The allocator of CUDA storages on `device` (an index, not -1): caching_allocator(device) on
// the current stream. Its DataPtr carries Device{CUDA, device}.
Allocator* device_allocator(int device);

// Page-locked host memory for pin_memory(): CPU storages whose host<->device copies can be
// asynchronous. Uncached (one cudaHostAlloc per storage).
Allocator* pinned_allocator();
bool is_pinned(const StorageImpl& storage);

// Copies `src` into `dst`: same dtype, same number of elements, both contiguous, at least one of
// them on a CUDA device. Queued on the current stream of the CUDA side; unless `non_blocking`,
// waits for it, so the bytes are there when it returns (PyTorch's rule: a non_blocking copy to
// or from pageable memory is synchronous anyway).
void copy_contiguous(const Tensor& dst, const Tensor& src, bool non_blocking);

// Fills a CUDA tensor's bytes with `byte` (zeros: 0), queued on the current stream.
void memset_device(const Tensor& t, int byte);

}  // namespace ember::cuda
