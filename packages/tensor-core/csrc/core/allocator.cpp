#include "core/allocator.h"

#include <sys/mman.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>

namespace ember {
namespace {

constexpr size_t kAlignment = 64;
// Above this size, ask the kernel for transparent huge pages: far fewer page faults when a
// large tensor is touched for the first time (PyTorch leaves this off by default). Only above
// glibc's largest mmap threshold (32 MiB): smaller blocks come from malloc's heap, which reuses
// freed memory, where a fresh huge-page mapping per tensor made the kernel zero new pages on
// every allocation (a 5.5 MiB elementwise result cost twice the op itself in a training loop).
constexpr size_t kHugePageThreshold = size_t(32) << 20;

// Bytes of live blocks from this allocator (their requested sizes, carried in the DataPtr's
// context) and the peak since the last reset: ember.cpu.memory_allocated(), the CPU counterpart
// of torch.cuda.memory_allocated(), so that tests and benchmarks can see what autograd keeps
// without reading the process's RSS. Relaxed atomics: one add per allocation and per free.
std::atomic<int64_t> g_live_bytes{0};
std::atomic<int64_t> g_peak_bytes{0};

void count_alloc(int64_t n) {
  int64_t now = g_live_bytes.fetch_add(n, std::memory_order_relaxed) + n;
  int64_t peak = g_peak_bytes.load(std::memory_order_relaxed);
  while (now > peak &&
         !g_peak_bytes.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
}

void cpu_free(void* ctx, void* ptr) {
  g_live_bytes.fetch_sub(static_cast<int64_t>(reinterpret_cast<uintptr_t>(ctx)),
                         std::memory_order_relaxed);
  std::free(ptr);
}

class CPUAllocator final : public Allocator {
 public:
  DataPtr allocate(size_t nbytes) override {
    if (nbytes == 0) return DataPtr(nullptr, nullptr, nullptr, Device{});
    size_t rounded = (nbytes + kAlignment - 1) / kAlignment * kAlignment;
    void* p = nullptr;
    if (nbytes >= kHugePageThreshold) {
      // Align to 2 MiB so whole huge pages back the block.
      constexpr size_t kHuge = size_t(2) << 20;
      rounded = (nbytes + kHuge - 1) / kHuge * kHuge;
      if (posix_memalign(&p, kHuge, rounded) != 0) p = nullptr;
#ifdef MADV_HUGEPAGE
      if (p) madvise(p, rounded, MADV_HUGEPAGE);
#endif
    } else {
      p = std::aligned_alloc(kAlignment, rounded);
    }
    if (!p)
      throw std::bad_alloc();
    count_alloc(static_cast<int64_t>(nbytes));
    return DataPtr(p, reinterpret_cast<void*>(static_cast<uintptr_t>(nbytes)), &cpu_free,
                   Device{});
  }
  const char* name() const override { return "cpu"; }
};

CPUAllocator g_cpu_allocator;
std::atomic<DeviceAllocatorLookup> g_device_allocators{nullptr};  // constant-initialised
std::atomic<Allocator*> g_current{&g_cpu_allocator};

}  // namespace

void Allocator::copy_data(void* dst, const void* src, size_t n) const { std::memcpy(dst, src, n); }

Allocator* cpu_allocator() { return g_current.load(std::memory_order_relaxed); }
Allocator* default_cpu_allocator() { return &g_cpu_allocator; }

Allocator* allocator_for(Device device) {
  if (device.is_cpu()) return cpu_allocator();
  DeviceAllocatorLookup lookup = g_device_allocators.load(std::memory_order_acquire);
  if (!lookup)
    throw std::runtime_error("no allocator for device " + device.str() +
                             ": this build of ember has no device backend");
  return lookup(device);
}

void register_device_allocators(DeviceAllocatorLookup lookup) {
  g_device_allocators.store(lookup, std::memory_order_release);
}
void set_cpu_allocator(Allocator* a) { g_current.store(a ? a : &g_cpu_allocator); }

int64_t cpu_live_bytes() { return g_live_bytes.load(std::memory_order_relaxed); }
int64_t cpu_peak_bytes() { return g_peak_bytes.load(std::memory_order_relaxed); }
void cpu_reset_peak_bytes() {
  g_peak_bytes.store(g_live_bytes.load(std::memory_order_relaxed), std::memory_order_relaxed);
}

}  // namespace ember
