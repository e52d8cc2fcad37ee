#include "core/allocator.h"

#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

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

// Medium blocks (the cached range below) are kept on free and handed to the next request of
// their size class (or of a class up to an octave below) instead of going back to malloc. glibc
// serves these sizes from its heap or from fresh mappings, and trims its heap's top as soon as a
// few megabytes are free there, so a loop that frees and re-allocates its activations every
// iteration touched new pages every time: a 4-layer LSTM's inference took 2,000 page faults
// (8 MiB zeroed by the kernel) per call, 10% of its time. Cached blocks keep their pages. At most
// the cap stays cached (64 MiB; the least recently used classes go back to malloc first);
// ember.cpu.empty_cache() returns everything; EMBER_CPU_CACHE=<MiB> sets the cap, 0 turns the
// cache off (and sanitizer builds have it off, so that ASan sees every use after free).
class BlockCache {
 public:
  static constexpr size_t kMinBytes = size_t(128) << 10;  // glibc's default mmap threshold
  static constexpr int kClassesPerOctave = 8;             // classes 1/8 of an octave apart
  static constexpr int kFirstOctave = 17;                 // 2^17 = kMinBytes
  static constexpr int kNumClasses = 8 * kClassesPerOctave + 1;  // 128 KiB .. 32 MiB
  // 64 MiB: a loop's temporaries fit (nanoGPT's inference: 7.5 MiB); the cache holds what
  // malloc would otherwise reuse for other sizes, so the cap is also what it may add to a peak
  // (one ResNet-50 training step: +20 MiB at this cap, +41 at 256)
  static constexpr size_t kDefaultCapMiB = 64;

  // The size class of a request in the cached range, or -1 outside it.
  static int class_of(size_t nbytes) {
    if (nbytes < kMinBytes || nbytes >= kHugePageThreshold) return -1;
    const int octave = 63 - __builtin_clzll(nbytes);  // 2^octave <= nbytes
    const size_t step = (size_t(1) << octave) / kClassesPerOctave;
    // (nbytes rounded up to a step) = (kClassesPerOctave + k) * step; k = kClassesPerOctave is
    // the next octave's first class
    const int k = static_cast<int>((nbytes + step - 1) / step) - kClassesPerOctave;
    return (octave - kFirstOctave) * kClassesPerOctave + k;
  }
  static size_t class_size(int c) {
    const int octave = kFirstOctave + c / kClassesPerOctave;
    return (size_t(1) << octave) / kClassesPerOctave * (kClassesPerOctave + c % kClassesPerOctave);
  }

  // Never destroyed: a storage freed by another static object's destructor at exit must still
  // find it (the cached blocks go back with the process).
  static BlockCache& instance() {
    static BlockCache* cache = new BlockCache();
    return *cache;
  }

  // A cached block of class c or of the smallest cached class up to an octave above it (its
  // class in *got), or nullptr: then the caller allocates a block of class c.
  void* take(int c, int* got) {
    *got = c;
    if (!enabled_) return nullptr;
    std::lock_guard<std::mutex> lock(mu_);
    for (int i = c; i < std::min(kNumClasses, c + kClassesPerOctave + 1); ++i) {
      Class& cls = classes_[i];
      if (cls.blocks.empty()) continue;
      void* p = cls.blocks.back();
      cls.blocks.pop_back();
      cls.last_use = ++clock_;
      cached_bytes_ -= class_size(i);
      ++hits_;
      *got = i;
      return p;
    }
    ++misses_;
    return nullptr;
  }

  // Keeps a freed block of class c (true), or leaves it to the caller to free (false).
  bool put(void* p, int c) {
    if (!enabled_) return false;
    std::vector<void*> released;
    {
      std::lock_guard<std::mutex> lock(mu_);
      Class& cls = classes_[c];
      cls.blocks.push_back(p);
      cls.last_use = ++clock_;
      cached_bytes_ += class_size(c);
      if (cached_bytes_ > cap_) evict_locked(cap_, released);
    }
    for (void* b : released) std::free(b);
    return true;
  }

  void empty() {
    std::vector<void*> released;
    {
      std::lock_guard<std::mutex> lock(mu_);
      evict_locked(0, released);
    }
    for (void* b : released) std::free(b);
  }

  CpuCacheStats stats() {
    std::lock_guard<std::mutex> lock(mu_);
    return {static_cast<int64_t>(cached_bytes_), hits_, misses_, enabled_,
            static_cast<int64_t>(cap_)};
  }

 private:
  size_t cap_ = kDefaultCapMiB << 20;
  struct Class {
    std::vector<void*> blocks;
    uint64_t last_use = 0;
  };

  BlockCache() {
    // EMBER_CPU_CACHE: the cap in MiB (0: off)
    if (const char* env = std::getenv("EMBER_CPU_CACHE")) {
      char* end = nullptr;
      const long long mib = std::strtoll(env, &end, 10);
      if (end != env && *end == '\0' && mib >= 0) cap_ = static_cast<size_t>(mib) << 20;
    }
    enabled_ = cap_ > 0;
#if defined(__SANITIZE_ADDRESS__)
    enabled_ = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
    enabled_ = false;
#endif
#endif
    // a fork while another thread holds the lock would leave the child's lock held forever
    pthread_atfork([] { instance().mu_.lock(); }, [] { instance().mu_.unlock(); },
                   [] { instance().mu_.unlock(); });
  }

  // Moves the blocks of the least recently used classes into `out` until at most `keep` bytes
  // stay cached.
  void evict_locked(size_t keep, std::vector<void*>& out) {
    while (cached_bytes_ > keep) {
      int oldest = -1;
      for (int i = 0; i < kNumClasses; ++i)
        if (!classes_[i].blocks.empty() &&
            (oldest < 0 || classes_[i].last_use < classes_[oldest].last_use))
          oldest = i;
      Class& cls = classes_[oldest];
      while (!cls.blocks.empty() && cached_bytes_ > keep) {
        out.push_back(cls.blocks.back());
        cls.blocks.pop_back();
        cached_bytes_ -= class_size(oldest);
      }
    }
  }

  std::mutex mu_;
  std::array<Class, kNumClasses> classes_{};
  size_t cached_bytes_ = 0;
  int64_t hits_ = 0, misses_ = 0;
  uint64_t clock_ = 0;
  bool enabled_ = true;
};

// A block's DataPtr context: its requested size (for the byte counters), and in the top byte
// 1 + its cache class where it has one.
constexpr int kClassShift = 56;
void* block_context(size_t nbytes, int cls) {
  return reinterpret_cast<void*>(static_cast<uintptr_t>(nbytes) |
                                 (static_cast<uintptr_t>(cls + 1) << kClassShift));
}

void cpu_free(void* ctx, void* ptr) {
  const uintptr_t bits = reinterpret_cast<uintptr_t>(ctx);
  const size_t nbytes = bits & ((uintptr_t(1) << kClassShift) - 1);
  const int cls = static_cast<int>(bits >> kClassShift) - 1;
  g_live_bytes.fetch_sub(static_cast<int64_t>(nbytes), std::memory_order_relaxed);
  if (cls >= 0 && BlockCache::instance().put(ptr, cls)) return;
  std::free(ptr);
}

class CPUAllocator final : public Allocator {
 public:
  DataPtr allocate(size_t nbytes) override {
    if (nbytes == 0) return DataPtr(nullptr, nullptr, nullptr, Device{});
    size_t rounded = (nbytes + kAlignment - 1) / kAlignment * kAlignment;
    void* p = nullptr;
    int cls = BlockCache::class_of(nbytes);  // -1: not a cached size
    if (nbytes >= kHugePageThreshold) {
      // Align to 2 MiB so whole huge pages back the block.
      constexpr size_t kHuge = size_t(2) << 20;
      rounded = (nbytes + kHuge - 1) / kHuge * kHuge;
      if (posix_memalign(&p, kHuge, rounded) != 0) p = nullptr;
#ifdef MADV_HUGEPAGE
      if (p) madvise(p, rounded, MADV_HUGEPAGE);
#endif
    } else if (cls >= 0) {
      p = BlockCache::instance().take(cls, &cls);  // (cls: the class of the block handed out)
      if (!p) p = std::aligned_alloc(kAlignment, BlockCache::class_size(cls));
    } else {
      p = std::aligned_alloc(kAlignment, rounded);
    }
    if (!p)
      throw std::bad_alloc();
    count_alloc(static_cast<int64_t>(nbytes));
    return DataPtr(p, block_context(nbytes, cls), &cpu_free, Device{});
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
void cpu_empty_cache() { BlockCache::instance().empty(); }
CpuCacheStats cpu_cache_stats() { return BlockCache::instance().stats(); }
void cpu_reset_peak_bytes() {
  g_peak_bytes.store(g_live_bytes.load(std::memory_order_relaxed), std::memory_order_relaxed);
}

}  // namespace ember
