// caching_allocator.h: the CUDA caching allocator (the design of PyTorch's
// c10/cuda/CUDACachingAllocator.cpp), over the Backend seam of backend.h.
//
// The long comment at the top of caching_allocator.cpp explains the design; in short: device
// memory is requested in segments (2 MiB for small requests, 20 MiB or a 2 MiB multiple for
// large ones), carved into blocks rounded to 512 bytes, and a freed block goes back to a pool of
// its stream, ready for the next request on that stream without any device call.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "cuda/backend.h"

namespace ember::cuda {

constexpr size_t kMinBlockSize = 512;        // every size is a multiple of this
constexpr size_t kSmallSize = 1 << 20;       // requests up to 1 MiB come from the small pool
constexpr size_t kSmallBuffer = 2 << 20;     // small-pool segments are 2 MiB
constexpr size_t kLargeBuffer = 20 << 20;    // large requests below 10 MiB get a 20 MiB segment
constexpr size_t kMinLargeAlloc = 10 << 20;  // from here, a segment is the request itself ...
constexpr size_t kRoundLarge = 2 << 20;      // ... rounded up to 2 MiB

size_t round_size(size_t size);        // a request rounded to a block size
size_t allocation_size(size_t size);   // the segment size for a rounded request

// EMBER_CUDA_ALLOC_CONF: "key:value,key:value" with PyTorch's keys where they apply.
struct AllocatorConfig {
  size_t max_split_size = std::numeric_limits<size_t>::max();  // blocks this large never split
  double garbage_collection_threshold = 0.0;                   // 0: off
  static AllocatorConfig parse(const std::string& conf);       // throws std::runtime_error
  static AllocatorConfig from_env();                           // parse(getenv(...) or "")
};

struct Stat {
  int64_t current = 0, peak = 0, allocated = 0, freed = 0;
  void update(int64_t delta);
};
enum StatType : int { kAggregate = 0, kSmallPool = 1, kLargePool = 2 };
using StatArray = std::array<Stat, 3>;

// torch.cuda.memory_stats' counters (the ones that apply: no private pools, no expandable
// segments).
struct DeviceStats {
  StatArray allocation, segment, active, inactive_split;
  StatArray allocated_bytes, reserved_bytes, active_bytes, inactive_split_bytes, requested_bytes;
  int64_t num_alloc_retries = 0, num_ooms = 0, num_sync_all_streams = 0;
  int64_t num_device_alloc = 0, num_device_free = 0;
  Stat oversize_allocations, oversize_segments;
  int64_t max_split_size = 0;
};

struct BlockInfo {
  uintptr_t address;
  size_t size, requested_size;
  const char* state;  // "active_allocated", "active_pending_free" or "inactive"
};
struct SegmentInfo {
  uintptr_t address;
  size_t total_size, allocated_size, active_size, requested_size;
  StreamHandle stream;
  bool is_large;
  std::vector<BlockInfo> blocks;
};

// Raised when a request cannot be met after the cache was emptied; `ember.cuda.OutOfMemoryError`
// (a RuntimeError, like torch.cuda.OutOfMemoryError) in Python.
struct CudaOutOfMemoryError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The allocator of one device. Thread-safe (one mutex).
class CachingAllocator {
 public:
  CachingAllocator(Backend* backend, int device, AllocatorConfig config = {});
  ~CachingAllocator();  // returns every segment to the backend
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  void* malloc(size_t size, StreamHandle stream);  // nullptr for size 0
  void free(void* ptr);
  // `ptr` is also used on `stream`: its block is reused only after the work queued on `stream`
  // when the block is freed has finished.
  void record_stream(void* ptr, StreamHandle stream);
  void empty_cache();  // returns the segments in which no block is in use
  void set_memory_fraction(double fraction);
  DeviceStats stats();
  void reset_peak_stats();
  void reset_accumulated_stats();
  std::vector<SegmentInfo> snapshot();
  size_t allocated_size(void* ptr);  // the block size behind a live allocation
  bool owns(void* ptr);              // ptr is a live allocation of this allocator
  const AllocatorConfig& config() const;
  Backend* backend() const;
  int device() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

std::string format_size(uint64_t bytes);  // as PyTorch prints sizes: "20.00 MiB"

}  // namespace ember::cuda
