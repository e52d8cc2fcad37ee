#include "cuda/device_storage.h"

#include <new>

#include "core/errors.h"
#include "cuda/cuda_context.h"

namespace ember {
namespace {

Allocator* cuda_allocator_for(Device device) {
  return cuda::device_allocator(cuda::check_device_index(device.index));
}

// core/allocator.cpp's slot for device allocators, filled when the library loads.
const bool g_registered = (register_device_allocators(&cuda_allocator_for), true);

}  // namespace
}  // namespace ember

namespace ember::cuda {

namespace {

class DeviceAllocator final : public Allocator {
 public:
  explicit DeviceAllocator(int device) : device_(device) {}
  DataPtr allocate(size_t nbytes) override {
    void* p = allocator(device_).malloc(nbytes, current_stream(device_));
    // The context carries the device, so the deleter finds its allocator.
    return DataPtr(p, reinterpret_cast<void*>(intptr_t(device_)), &release,
                   Device{DeviceType::CUDA, static_cast<int16_t>(device_)});
  }
  const char* name() const override { return "cuda caching allocator"; }
  void copy_data(void* dst, const void* src, size_t n) const override {
    backend().memcpy_async(device_, dst, src, n, current_stream(device_));
  }

 private:
  static void release(void* ctx, void* ptr) {
    if (ptr) allocator(int(reinterpret_cast<intptr_t>(ctx))).free(ptr);
  }
  int device_;
};

class PinnedAllocator final : public Allocator {
 public:
  DataPtr allocate(size_t nbytes) override {
    void* p = backend().host_alloc(nbytes);
    if (!p) throw std::bad_alloc();
    return DataPtr(p, nullptr, &release, Device{});
  }
  const char* name() const override { return "cuda pinned host allocator"; }

 private:
  static void release(void*, void* ptr) { backend().host_free(ptr); }
};

}  // namespace

Allocator* device_allocator(int device) {
  static DeviceAllocator* allocators[64] = {};  // leaked: storages may outlive static teardown
  EMBER_CHECK(device >= 0 && device < 64, std::runtime_error, "CUDA error: invalid device ordinal ",
              device);
  if (!allocators[device]) allocators[device] = new DeviceAllocator(device);
  return allocators[device];
}

Allocator* pinned_allocator() {
  static PinnedAllocator* a = new PinnedAllocator;
  return a;
}

bool is_pinned(const StorageImpl& storage) { return storage.allocator == pinned_allocator(); }

void copy_contiguous(const Tensor& dst, const Tensor& src, bool non_blocking) {
  EMBER_CHECK(dst->dtype == src->dtype && dst->numel() == src->numel() && dst->is_contiguous() &&
                  src->is_contiguous(),
              std::runtime_error, "copy between devices: internal error: needs two contiguous "
              "tensors of one dtype and size");
  const Device cuda_side = dst->device().is_cpu() ? src->device() : dst->device();
  EMBER_CHECK(!cuda_side.is_cpu(), std::runtime_error,
              "copy between devices: internal error: both tensors are on the CPU");
  const size_t nbytes = size_t(src->numel()) * src->element_size();
  if (nbytes == 0) return;
  const int device = cuda_side.index;
  const StreamHandle stream = current_stream(device);
  backend().memcpy_async(device, dst->device_data(), src->device_data(), nbytes, stream);
  // Pageable host memory cannot take part in an asynchronous copy: wait, as torch does.
  const bool host_pinned = (dst->device().is_cpu() && is_pinned(*dst->storage)) ||
                           (src->device().is_cpu() && is_pinned(*src->storage)) ||
                           (!dst->device().is_cpu() && !src->device().is_cpu());
  if (!(non_blocking && host_pinned)) backend().stream_synchronize(device, stream);
}

void memset_device(const Tensor& t, int byte) {
  EMBER_CHECK(!t->device().is_cpu() && t->is_contiguous(), std::runtime_error,
              "memset_device: internal error: needs a contiguous CUDA tensor");
  const int device = t->device().index;
  backend().memset_async(device, t->device_data(), byte, size_t(t->numel()) * t->element_size(),
                         current_stream(device));
}

}  // namespace ember::cuda
