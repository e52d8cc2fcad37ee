// allocator.h: the small allocator interface every storage goes through (after c10's
// Allocator). An allocation is a DataPtr: the address, an opaque context and the function that
// frees it, plus the device. Storages never call malloc/cudaMalloc themselves, so a shared-memory
// allocator (ember-mp) or the CUDA caching allocator plug in without touching the tensor code,
// and memory borrowed from NumPy/DLPack is released through its owner's deleter.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

namespace ember {

enum class DeviceType : int8_t { CPU = 0, CUDA = 1 };

struct Device {
  DeviceType type = DeviceType::CPU;
  int16_t index = -1;  // -1: the current device (CUDA) / unused (CPU)
  bool operator==(const Device& o) const { return type == o.type && index == o.index; }
  bool operator!=(const Device& o) const { return !(*this == o); }
  bool is_cpu() const { return type == DeviceType::CPU; }
  std::string str() const {
    if (type == DeviceType::CPU) return "cpu";
    return index < 0 ? "cuda" : "cuda:" + std::to_string(index);
  }
};

using DeleterFn = void (*)(void* ctx, void* ptr);

// Owning pointer to an allocation; move-only, frees on destruction.
class DataPtr {
 public:
  DataPtr() = default;
  DataPtr(void* ptr, void* ctx, DeleterFn deleter, Device device)
      : ptr_(ptr), ctx_(ctx), deleter_(deleter), device_(device) {}
  DataPtr(const DataPtr&) = delete;
  DataPtr& operator=(const DataPtr&) = delete;
  DataPtr(DataPtr&& o) noexcept { swap(o); }
  DataPtr& operator=(DataPtr&& o) noexcept {
    DataPtr tmp(std::move(o));
    swap(tmp);
    return *this;
  }
  ~DataPtr() { reset(); }
  void reset() {
    if (deleter_) deleter_(ctx_, ptr_);
    ptr_ = ctx_ = nullptr;
    deleter_ = nullptr;
  }
  void* get() const { return ptr_; }
  void* context() const { return ctx_; }
  DeleterFn deleter() const { return deleter_; }
  Device device() const { return device_; }

 private:
  void swap(DataPtr& o) noexcept {
    std::swap(ptr_, o.ptr_);
    std::swap(ctx_, o.ctx_);
    std::swap(deleter_, o.deleter_);
    std::swap(device_, o.device_);
  }
  void* ptr_ = nullptr;
  void* ctx_ = nullptr;
  DeleterFn deleter_ = nullptr;
  Device device_{};
};

class Allocator {
 public:
  virtual ~Allocator() = default;
  virtual DataPtr allocate(size_t nbytes) = 0;
  virtual const char* name() const = 0;
  // Copies n bytes between two of this allocator's blocks (resize_ growing a storage): memcpy on
  // the host; a device allocator queues a device copy on its current stream.
  virtual void copy_data(void* dst, const void* src, size_t n) const;
};

// 64-byte aligned host memory; large blocks are advised to use transparent huge pages.
Allocator* cpu_allocator();
// Lets a package (ember-mp, a user) replace the allocator new CPU storages come from.
void set_cpu_allocator(Allocator* allocator);
Allocator* default_cpu_allocator();
// The default CPU allocator's live bytes (requested sizes of blocks not yet freed) and their
// peak since the start or the last reset; blocks of a replacement allocator are not counted.
int64_t cpu_live_bytes();
int64_t cpu_peak_bytes();
void cpu_reset_peak_bytes();
// The default CPU allocator keeps freed blocks of 128 KiB to 32 MiB for reuse (core/allocator.cpp
// says why and how much): empty_cache returns them to malloc; the stats count them.
struct CpuCacheStats {
  int64_t cached_bytes, hits, misses;
  bool enabled;
  int64_t cap_bytes;
};
void cpu_empty_cache();
CpuCacheStats cpu_cache_stats();
// The allocator of new storages on `device`: cpu_allocator(), or the one the device backend
// registered (cuda/device_storage.cpp registers CUDA's caching allocators, which raise where no
// GPU is usable); raises where no backend is registered.
Allocator* allocator_for(Device device);
using DeviceAllocatorLookup = Allocator* (*)(Device device);
void register_device_allocators(DeviceAllocatorLookup lookup);

}  // namespace ember
