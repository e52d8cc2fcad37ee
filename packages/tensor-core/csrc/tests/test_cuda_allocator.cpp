// test_cuda_allocator.cpp - standalone checks of the CUDA caching allocator over the host
// backend (no GPU needed), built with ASan/UBSan by the `sanitize` nox session. No framework:
// main() with checks, non-zero exit on failure. The Python tests (tests/test_cuda_allocator.py)
// cover the same behaviour through the bindings; this adds a randomized run whose invariants
// are checked after every step, and threads.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "cuda/caching_allocator.h"
#include "cuda/cudart_backend.h"
#include "cuda/host_backend.h"

#define CHECK(cond)                                                                  \
  do {                                                                               \
    if (!(cond)) {                                                                   \
      std::fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      std::exit(1);                                                                  \
    }                                                                                \
  } while (0)

template <class E, class F>
bool throws(F&& f, const char* needle = nullptr) {
  try {
    f();
  } catch (const E& e) {
    return !needle || std::strstr(e.what(), needle) != nullptr;
  } catch (...) {
    return false;
  }
  return false;
}

using namespace ember::cuda;
constexpr size_t MiB = 1 << 20;

static void test_sizes() {
  CHECK(round_size(1) == 512 && round_size(512) == 512 && round_size(513) == 1024);
  CHECK(allocation_size(512) == 2 * MiB && allocation_size(MiB) == 2 * MiB);
  CHECK(allocation_size(MiB + 512) == 20 * MiB && allocation_size(10 * MiB - 512) == 20 * MiB);
  CHECK(allocation_size(10 * MiB) == 10 * MiB && allocation_size(11 * MiB + 1) == 12 * MiB);
  CHECK(format_size(1024) == "1024 bytes" && format_size(20 * MiB) == "20.00 MiB");
}

static void test_config() {
  AllocatorConfig c = AllocatorConfig::parse(" max_split_size_mb:64 , garbage_collection_threshold:0.5");
  CHECK(c.max_split_size == 64 * MiB && c.garbage_collection_threshold == 0.5);
  CHECK(AllocatorConfig::parse("").max_split_size == std::numeric_limits<size_t>::max());
  CHECK(throws<std::runtime_error>([] { AllocatorConfig::parse("max_split_size_mb:20"); }, "too small"));
  CHECK(throws<std::runtime_error>([] { AllocatorConfig::parse("max_split_size_mb:x"); }));
  CHECK(throws<std::runtime_error>([] { AllocatorConfig::parse("garbage_collection_threshold:1"); }));
  CHECK(throws<std::runtime_error>([] { AllocatorConfig::parse("foo:1"); }, "unrecognized"));
  CHECK(throws<std::runtime_error>([] { AllocatorConfig::parse("max_split_size_mb"); }, "key:value"));
}

static void test_split_merge_reuse() {
  HostBackend be(1 << 30);
  CachingAllocator a(&be, 0);
  char* p = static_cast<char*>(a.malloc(1000, 0));
  char* q = static_cast<char*>(a.malloc(1000, 0));
  CHECK(q == p + 1024);  // carved from the same 2 MiB segment, next to each other
  CHECK(be.live_allocations() == 1 && be.bytes_in_use() == 2 * MiB);
  a.free(p);
  a.free(q);
  auto snap = a.snapshot();
  CHECK(snap.size() == 1 && snap[0].blocks.size() == 1 && snap[0].blocks[0].size == 2 * MiB);
  CHECK(a.malloc(4096, 0) == p);  // reused at once, no new device allocation
  CHECK(a.stats().num_device_alloc == 1);
}

static void test_record_stream() {
  HostBackend be(1 << 30);
  CachingAllocator a(&be, 0);
  StreamHandle s1 = be.stream_create(0, 0);
  void* p = a.malloc(MiB, 0);
  a.record_stream(p, s1);
  a.free(p);
  void* q = a.malloc(MiB, 0);
  CHECK(q != p);  // s1 may still be reading p
  be.stream_synchronize(0, s1);
  a.free(q);
  CHECK(a.malloc(MiB, 0) == p);  // the event completed: p is back in the pool
}

// Random mallocs and frees on three streams; after every step the bookkeeping must agree with
// itself: stats vs snapshot vs backend, no two live allocations overlap, blocks tile segments.
static void test_random_invariants(const char* conf, size_t capacity) {
  HostBackend be(capacity);
  CachingAllocator a(&be, 0, AllocatorConfig::parse(conf));
  std::vector<StreamHandle> streams = {0, be.stream_create(0, 0), be.stream_create(0, 0)};
  std::mt19937_64 rng(42);
  std::map<char*, std::pair<size_t, int>> live;  // ptr -> (size asked, stream index)
  const size_t sizes[] = {1, 511, 512, 4000, 65536, MiB, MiB + 1, 3 * MiB, 11 * MiB, 25 * MiB};
  for (int step = 0; step < 3000; ++step) {
    int op = rng() % 10;
    if (op < 5 || live.empty()) {
      size_t n = sizes[rng() % 10] + rng() % 300;
      int si = rng() % 3;
      try {
        char* p = static_cast<char*>(a.malloc(n, streams[si]));
        CHECK(p && reinterpret_cast<uintptr_t>(p) % 512 == 0);
        std::memset(p, step & 0xff, n);  // ASan: the block really holds n bytes
        CHECK(a.allocated_size(p) >= round_size(n) && a.allocated_size(p) % 512 == 0);
        live[p] = {n, si};
      } catch (const CudaOutOfMemoryError& e) {
        CHECK(std::strstr(e.what(), "Tried to allocate") != nullptr);
      }
    } else if (op < 9) {
      auto it = live.begin();
      std::advance(it, rng() % live.size());
      if (rng() % 4 == 0) a.record_stream(it->first, streams[rng() % 3]);
      a.free(it->first);
      live.erase(it);
    } else if (op == 9) {
      if (rng() % 2) be.device_synchronize(0);
      if (rng() % 8 == 0) a.empty_cache();
    }
    // invariants
    DeviceStats s = a.stats();
    size_t prev_end = 0;
    char* prev_ptr = nullptr;
    for (auto& [p, v] : live) {  // sorted by address: no overlap
      CHECK(!prev_ptr || reinterpret_cast<size_t>(p) >= prev_end);
      prev_ptr = p;
      prev_end = reinterpret_cast<size_t>(p) + v.first;
    }
    CHECK(s.allocation[kAggregate].current == int64_t(live.size()));
    CHECK(s.reserved_bytes[kAggregate].current == int64_t(be.bytes_in_use()));
    CHECK(s.allocation[kAggregate].current ==
          s.allocation[kSmallPool].current + s.allocation[kLargePool].current);
    int64_t allocated = 0, reserved = 0, inactive_split = 0, inactive_split_bytes = 0;
    for (const auto& seg : a.snapshot()) {
      reserved += seg.total_size;
      size_t expect = seg.address;
      for (const auto& b : seg.blocks) {
        CHECK(b.address == expect);  // blocks tile the segment in address order
        expect += b.size;
        if (std::strcmp(b.state, "active_allocated") == 0) allocated += b.size;
        if (std::strcmp(b.state, "inactive") == 0 && seg.blocks.size() > 1)
          ++inactive_split, inactive_split_bytes += b.size;
      }
      CHECK(expect == seg.address + seg.total_size);
      for (size_t i = 1; i < seg.blocks.size(); ++i)  // free neighbours were merged
        CHECK(!(std::strcmp(seg.blocks[i].state, "inactive") == 0 &&
                std::strcmp(seg.blocks[i - 1].state, "inactive") == 0));
    }
    CHECK(allocated == s.allocated_bytes[kAggregate].current);
    CHECK(reserved == s.reserved_bytes[kAggregate].current);
    CHECK(inactive_split == s.inactive_split[kAggregate].current);
    CHECK(inactive_split_bytes == s.inactive_split_bytes[kAggregate].current);
    CHECK(s.allocated_bytes[kAggregate].peak >= s.allocated_bytes[kAggregate].current);
  }
  if (capacity < (size_t(1) << 30)) {  // the tight run must have gone through the OOM paths
    CHECK(a.stats().num_ooms > 0 && a.stats().num_alloc_retries > 0);
  }
  for (auto& [p, v] : live) a.free(p);
  be.device_synchronize(0);
  a.empty_cache();
  CHECK(be.bytes_in_use() == 0 && a.stats().reserved_bytes[kAggregate].current == 0);
}

static void test_threads() {
  HostBackend be(size_t(4) << 30);
  CachingAllocator a(&be, 0);
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t)
    ts.emplace_back([&, t] {
      std::mt19937 rng(t);
      std::vector<void*> mine;
      for (int i = 0; i < 2000; ++i) {
        if (mine.size() < 16 && rng() % 2) {
          mine.push_back(a.malloc(512 + rng() % (2 * MiB), StreamHandle(t % 2)));
        } else if (!mine.empty()) {
          a.free(mine.back());
          mine.pop_back();
        }
      }
      for (void* p : mine) a.free(p);
    });
  for (auto& t : ts) t.join();
  CHECK(a.stats().allocation[kAggregate].current == 0);
  CHECK(a.stats().allocated_bytes[kAggregate].current == 0);
}

static void test_cudart_loader() {
  std::string why;
  auto b = load_cudart({"/nonexistent/libcudart.so"}, &why);
  if (b) {
    CHECK(b->device_count() > 0);
  } else {
    CHECK(!why.empty());
    CHECK(why.find("libcudart") != std::string::npos);
  }
}

int main() {
  test_sizes();
  test_config();
  test_split_merge_reuse();
  test_record_stream();
  test_random_invariants("", size_t(1) << 30);
  test_random_invariants("max_split_size_mb:24", 200 * MiB);  // tight: OOM and retries happen
  test_threads();
  test_cudart_loader();
  std::puts("test_cuda_allocator: all checks passed");
  return 0;
}
