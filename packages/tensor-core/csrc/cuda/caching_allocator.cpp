// caching_allocator.cpp: the CUDA caching allocator.
//
// Why: cudaMalloc and cudaFree are slow (a cudaFree synchronizes the device), and a training
// step allocates and frees thousands of tensors. So device memory, once obtained, is kept: a
// freed block goes back to a pool and the next request of a fitting size takes it with no device
// call. This is PyTorch's design (c10/cuda/CUDACachingAllocator.cpp), kept to its essentials:
//
// - Sizes are rounded up to 512 bytes. Requests up to 1 MiB come from the *small* pool, whose
//   segments (one cudaMalloc each) are 2 MiB; larger ones from the *large* pool, whose segments
//   are 20 MiB for requests below 10 MiB and the request rounded up to 2 MiB above. Two pools
//   keep small, short-lived blocks from fragmenting the large segments.
// - A request takes the best fit: the smallest free block of its pool that is at least as large,
//   on the same stream. Pools are ordered sets keyed by (stream, size, address), so this is one
//   lower_bound. A block only ever serves one stream: the caller's work on that stream is ordered
//   after the previous user's, so the block can be reused the moment it is freed, with no event.
// - A block larger than the request is split; the rest stays free in the pool (small pool: when
//   at least 512 bytes remain; large pool: when more than 1 MiB remains). Blocks of one segment
//   form a doubly linked list in address order; a freed block merges with free neighbours.
// - `max_split_size_mb`: blocks of at least this size are never split, and a request below it
//   never takes one, so large cached blocks are not carved into unusable rests (fragmentation).
// - record_stream(ptr, s): when a block is used on another stream than the one it was
//   allocated on, its free records an event on each such stream and the block returns to the
//   pool only when all of them have completed (checked at the next malloc).
// - When a device allocation fails: free cached blocks of at least max_split_size that cover
//   the request (if a max_split_size is set), retry; then synchronize every pending event, return
//   every free segment to the device and retry once more (num_alloc_retries); then raise
//   CudaOutOfMemoryError saying what was asked, what is allocated and what is cached.
// - `set_per_process_memory_fraction` caps the bytes held in segments; with
//   `garbage_collection_threshold` set, the allocator frees the least recently reused free
//   segments once the reserved bytes pass that fraction of the cap, before asking the device.
// - Statistics follow torch.cuda.memory_stats: each counter has current/peak/allocated/freed
//   for all pools, the small pool and the large pool.
//
// What is left out of PyTorch's: expandable segments, private pools (CUDA graphs),
// roundup_power2_divisions, the cudaMallocAsync backend, allocation history recording.
#include "cuda/caching_allocator.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <unordered_map>

#include "core/errors.h"

namespace ember::cuda {

size_t round_size(size_t size) {
  if (size < kMinBlockSize) return kMinBlockSize;
  return kMinBlockSize * ((size + kMinBlockSize - 1) / kMinBlockSize);
}

size_t allocation_size(size_t size) {
  if (size <= kSmallSize) return kSmallBuffer;
  if (size < kMinLargeAlloc) return kLargeBuffer;
  return kRoundLarge * ((size + kRoundLarge - 1) / kRoundLarge);
}

std::string format_size(uint64_t size) {
  char buf[64];
  if (size <= 1024) std::snprintf(buf, sizeof buf, "%llu bytes", (unsigned long long)size);
  else if (size <= 1048576) std::snprintf(buf, sizeof buf, "%.2f KiB", size / 1024.0);
  else if (size <= 1073741824ULL) std::snprintf(buf, sizeof buf, "%.2f MiB", size / 1048576.0);
  else std::snprintf(buf, sizeof buf, "%.2f GiB", size / 1073741824.0);
  return buf;
}

// ---- configuration ----

namespace {
std::string trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

[[noreturn]] void conf_error(const std::string& msg) {
  throw std::runtime_error("EMBER_CUDA_ALLOC_CONF: " + msg);
}
}  // namespace

AllocatorConfig AllocatorConfig::parse(const std::string& conf) {
  AllocatorConfig c;
  size_t pos = 0;
  while (pos <= conf.size()) {
    size_t comma = conf.find(',', pos);
    if (comma == std::string::npos) comma = conf.size();
    std::string item = trim(conf.substr(pos, comma - pos));
    pos = comma + 1;
    if (item.empty()) continue;
    size_t colon = item.find(':');
    if (colon == std::string::npos)
      conf_error("expected key:value, got '" + item + "'");
    std::string key = trim(item.substr(0, colon)), value = trim(item.substr(colon + 1));
    if (key == "max_split_size_mb") {
      bool digits = !value.empty() && value.size() <= 12 &&
                    std::all_of(value.begin(), value.end(), [](char ch) { return std::isdigit(
                        static_cast<unsigned char>(ch)); });
      if (!digits) conf_error("max_split_size_mb must be a whole number of MiB, got '" + value + "'");
      size_t mb = std::stoull(value);
      if (mb <= kLargeBuffer / (1 << 20))
        conf_error("max_split_size_mb too small, must be > " + std::to_string(kLargeBuffer >> 20));
      c.max_split_size = mb << 20;
    } else if (key == "garbage_collection_threshold") {
      char* end = nullptr;
      double v = std::strtod(value.c_str(), &end);
      if (value.empty() || *end != '\0' || !std::isfinite(v))
        conf_error("garbage_collection_threshold must be a number, got '" + value + "'");
      if (v <= 0.0) conf_error("garbage_collection_threshold too small, set it 0.0~1.0");
      if (v >= 1.0) conf_error("garbage_collection_threshold too big, set it 0.0~1.0");
      c.garbage_collection_threshold = v;
    } else if (key == "backend") {
      if (value != "native")
        conf_error("backend '" + value + "' is not supported (ember has the native backend only)");
    } else if (key == "expandable_segments" || key == "roundup_power2_divisions" ||
               key == "release_lock_on_cudamalloc" || key == "pinned_use_cuda_host_register" ||
               key == "pinned_num_register_threads") {
      conf_error("'" + key + "' is a PyTorch option that ember does not implement; "
                 "ember supports max_split_size_mb and garbage_collection_threshold");
    } else {
      conf_error("unrecognized option '" + key + "' (ember supports max_split_size_mb and "
                 "garbage_collection_threshold)");
    }
  }
  return c;
}

AllocatorConfig AllocatorConfig::from_env() {
  const char* env = std::getenv("EMBER_CUDA_ALLOC_CONF");
  return parse(env ? env : "");
}

void Stat::update(int64_t delta) {
  current += delta;
  if (delta > 0) allocated += delta;
  else freed -= delta;
  peak = std::max(peak, current);
}

// ---- blocks and pools ----

namespace {

struct Block;
struct BlockComparator {
  bool operator()(const Block* a, const Block* b) const;
};
using BlockSet = std::set<Block*, BlockComparator>;

struct BlockPool {
  explicit BlockPool(bool small) : is_small(small) {}
  BlockSet blocks;
  const bool is_small;
};

struct Block {
  Block(StreamHandle s, size_t n, BlockPool* p, char* ptr_) : stream(s), size(n), pool(p), ptr(ptr_) {}
  StreamHandle stream;
  size_t size;
  size_t requested_size = 0;
  BlockPool* pool;
  char* ptr;
  bool allocated = false;
  Block* prev = nullptr;  // neighbours in the same segment, in address order
  Block* next = nullptr;
  int event_count = 0;                    // outstanding record_stream events
  std::vector<StreamHandle> stream_uses;  // streams it was used on besides its own
  int gc_count = 0;                       // mallocs since last reused (garbage collection age)
  bool is_split() const { return prev != nullptr || next != nullptr; }
};

bool BlockComparator::operator()(const Block* a, const Block* b) const {
  if (a->stream != b->stream) return a->stream < b->stream;
  if (a->size != b->size) return a->size < b->size;
  return reinterpret_cast<uintptr_t>(a->ptr) < reinterpret_cast<uintptr_t>(b->ptr);
}

struct AllocParams {
  StreamHandle stream;
  size_t size;        // the rounded request
  size_t alloc_size;  // the segment to ask for if no cached block fits
  BlockPool* pool;
  Block* block = nullptr;
};

}  // namespace

struct CachingAllocator::Impl {
  Backend* backend;
  int device;
  AllocatorConfig config;
  std::mutex mu;
  DeviceStats stats;
  BlockPool small{true}, large{false};
  std::unordered_map<void*, Block*> allocated;  // live allocations by address
  // record_stream events not yet known complete, per stream they were recorded on, in order.
  std::map<StreamHandle, std::deque<std::pair<EventHandle, Block*>>> pending;
  std::vector<EventHandle> spare_events;
  size_t total_reserved = 0;  // bytes in segments
  bool set_fraction = false;
  size_t allowed_max = 0;

  // Recycled Block objects and container nodes: a steady-state malloc+free pair then makes no
  // heap allocation (each would be a glibc malloc/free, a good part of the pair's cost).
  static constexpr size_t kSpareLimit = 64;
  std::vector<Block*> spare_blocks;
  std::vector<BlockSet::node_type> spare_set_nodes;
  std::vector<std::unordered_map<void*, Block*>::node_type> spare_map_nodes;

  ~Impl() {
    for (Block* b : spare_blocks) delete b;
  }

  Block* new_block(StreamHandle s, size_t n, BlockPool* pool, char* ptr) {
    if (spare_blocks.empty()) return new Block(s, n, pool, ptr);
    Block* b = spare_blocks.back();
    spare_blocks.pop_back();
    *b = Block(s, n, pool, ptr);
    return b;
  }
  void delete_block(Block* b) {
    if (spare_blocks.size() < kSpareLimit) spare_blocks.push_back(b);
    else delete b;
  }
  void pool_insert(BlockPool& pool, Block* b) {
    if (spare_set_nodes.empty()) {
      pool.blocks.insert(b);
      return;
    }
    BlockSet::node_type node = std::move(spare_set_nodes.back());
    spare_set_nodes.pop_back();
    node.value() = b;
    pool.blocks.insert(std::move(node));
  }
  void pool_erase(BlockPool& pool, BlockSet::iterator it) {
    BlockSet::node_type node = pool.blocks.extract(it);
    if (spare_set_nodes.size() < kSpareLimit) spare_set_nodes.push_back(std::move(node));
  }
  void pool_erase(BlockPool& pool, Block* b) { pool_erase(pool, pool.blocks.find(b)); }
  void track(Block* b) {
    if (spare_map_nodes.empty()) {
      allocated.emplace(b->ptr, b);
      return;
    }
    auto node = std::move(spare_map_nodes.back());
    spare_map_nodes.pop_back();
    node.key() = b->ptr;
    node.mapped() = b;
    allocated.insert(std::move(node));
  }
  Block* untrack(void* ptr) {  // null when ptr is not a live allocation
    auto node = allocated.extract(ptr);
    if (node.empty()) return nullptr;
    Block* b = node.mapped();
    if (spare_map_nodes.size() < kSpareLimit) spare_map_nodes.push_back(std::move(node));
    return b;
  }

  Impl(Backend* b, int d, AllocatorConfig c) : backend(b), device(d), config(c) {
    stats.max_split_size = config.max_split_size == std::numeric_limits<size_t>::max()
                               ? std::numeric_limits<int64_t>::max()
                               : static_cast<int64_t>(config.max_split_size);
  }

  template <class F> void each_stat(const BlockPool* pool, F&& f) {
    f(kAggregate);
    f(pool->is_small ? kSmallPool : kLargePool);
  }

  // -- finding and making blocks --

  bool get_free_block(AllocParams& p) {
    BlockPool& pool = *p.pool;
    if (set_fraction && config.garbage_collection_threshold > 0.0)
      for (Block* b : pool.blocks) ++b->gc_count;  // ages every cached block by one request
    Block key(p.stream, p.size, &pool, nullptr);
    auto it = pool.blocks.lower_bound(&key);
    if (it == pool.blocks.end() || (*it)->stream != p.stream) return false;
    // Do not hand an oversize block to a request below max_split_size ...
    if (p.size < config.max_split_size && (*it)->size >= config.max_split_size) return false;
    // ... and give an oversize request a larger block only within one large buffer of slack.
    if (p.size >= config.max_split_size && (*it)->size >= p.size + kLargeBuffer) return false;
    p.block = *it;
    p.block->gc_count = 0;
    pool_erase(pool, it);
    return true;
  }

  bool alloc_block(AllocParams& p, bool is_retry) {
    if (is_retry) ++stats.num_alloc_retries;
    size_t size = p.alloc_size;
    if (set_fraction && total_reserved + size > allowed_max) return false;
    void* ptr = backend->raw_malloc(device, size);
    if (!ptr) return false;
    total_reserved += size;
    ++stats.num_device_alloc;
    p.block = new_block(p.stream, size, p.pool, static_cast<char*>(ptr));
    each_stat(p.pool, [&](int t) {
      stats.segment[t].update(1);
      stats.reserved_bytes[t].update(static_cast<int64_t>(size));
    });
    if (size >= config.max_split_size) stats.oversize_segments.update(1);
    return true;
  }

  bool should_split(const Block* block, size_t size) const {
    size_t remaining = block->size - size;
    if (block->pool->is_small) return remaining >= kMinBlockSize;
    return size < config.max_split_size && remaining > kSmallSize;
  }

  void* alloc_found_block(AllocParams& p, size_t orig_size) {
    Block* block = p.block;
    BlockPool* pool = block->pool;
    const bool already_split = block->is_split();
    if (should_split(block, p.size)) {
      Block* remaining = block;
      block = new_block(p.stream, p.size, pool, remaining->ptr);
      block->prev = remaining->prev;
      if (block->prev) block->prev->next = block;
      block->next = remaining;
      remaining->prev = block;
      remaining->ptr += p.size;
      remaining->size -= p.size;
      pool_insert(*pool, remaining);
      if (already_split) {  // an inactive split block shrinks by the bytes handed out
        each_stat(pool, [&](int t) { stats.inactive_split_bytes[t].update(-int64_t(block->size)); });
      } else {  // a whole segment becomes split: its rest is a new inactive split block
        each_stat(pool, [&](int t) {
          stats.inactive_split_bytes[t].update(int64_t(remaining->size));
          stats.inactive_split[t].update(1);
        });
      }
    } else if (already_split) {  // an inactive split block becomes active as a whole
      each_stat(pool, [&](int t) {
        stats.inactive_split_bytes[t].update(-int64_t(block->size));
        stats.inactive_split[t].update(-1);
      });
    }
    block->allocated = true;
    block->requested_size = orig_size;
    track(block);
    each_stat(pool, [&](int t) {
      stats.allocation[t].update(1);
      stats.allocated_bytes[t].update(int64_t(block->size));
      stats.active[t].update(1);
      stats.active_bytes[t].update(int64_t(block->size));
      stats.requested_bytes[t].update(int64_t(orig_size));
    });
    if (block->size >= config.max_split_size) stats.oversize_allocations.update(1);
    return block->ptr;
  }

  // -- freeing --

  // Merges src into dst when src is free; returns the bytes taken over (0: no merge).
  size_t try_merge_blocks(Block* dst, Block* src, BlockPool& pool) {
    if (!src || src->allocated || src->event_count > 0 || !src->stream_uses.empty()) return 0;
    if (dst->prev == src) {
      dst->ptr = src->ptr;
      dst->prev = src->prev;
      if (dst->prev) dst->prev->next = dst;
    } else {
      dst->next = src->next;
      if (dst->next) dst->next->prev = dst;
    }
    size_t subsumed = src->size;
    dst->size += subsumed;
    pool_erase(pool, src);
    delete_block(src);
    return subsumed;
  }

  // A block nobody uses any more goes back to its pool, merged with free neighbours.
  void free_block(Block* block) {
    const size_t original_size = block->size;
    BlockPool& pool = *block->pool;
    int64_t net_inactive_split = 0, net_inactive_split_bytes = 0;
    for (Block* candidate : {block->prev, block->next}) {
      size_t subsumed = try_merge_blocks(block, candidate, pool);
      if (subsumed > 0) {
        net_inactive_split -= 1;
        net_inactive_split_bytes -= int64_t(subsumed);
      }
    }
    pool_insert(pool, block);
    if (block->is_split()) {
      net_inactive_split += 1;
      net_inactive_split_bytes += int64_t(block->size);
    }
    each_stat(&pool, [&](int t) {
      stats.inactive_split[t].update(net_inactive_split);
      stats.inactive_split_bytes[t].update(net_inactive_split_bytes);
      stats.active[t].update(-1);
      stats.active_bytes[t].update(-int64_t(original_size));
    });
  }

  EventHandle get_event() {
    if (!spare_events.empty()) {
      EventHandle e = spare_events.back();
      spare_events.pop_back();
      return e;
    }
    return backend->event_create(device, false);
  }

  void insert_events(Block* block) {
    std::vector<StreamHandle> streams;
    streams.swap(block->stream_uses);
    for (StreamHandle s : streams) {
      EventHandle e = get_event();
      backend->event_record(device, e, s);
      ++block->event_count;
      pending[s].emplace_back(e, block);
    }
  }

  // Blocks whose record_stream events have all completed go back to their pools.
  void process_events() {
    for (auto it = pending.begin(); it != pending.end();) {
      auto& queue = it->second;
      while (!queue.empty()) {
        auto [event, block] = queue.front();
        if (!backend->event_query(device, event)) break;
        spare_events.push_back(event);
        queue.pop_front();
        if (--block->event_count == 0) free_block(block);
      }
      it = queue.empty() ? pending.erase(it) : std::next(it);
    }
  }

  void synchronize_and_free_events() {
    ++stats.num_sync_all_streams;
    for (auto& [stream, queue] : pending)
      for (auto& [event, block] : queue) {
        backend->event_synchronize(device, event);
        spare_events.push_back(event);
        if (--block->event_count == 0) free_block(block);
      }
    pending.clear();
  }

  // -- returning memory to the device --

  void release_block(Block* block) {
    BlockPool* pool = block->pool;
    backend->raw_free(device, block->ptr);
    total_reserved -= block->size;
    ++stats.num_device_free;
    each_stat(pool, [&](int t) {
      stats.segment[t].update(-1);
      stats.reserved_bytes[t].update(-int64_t(block->size));
    });
    if (block->size >= config.max_split_size) stats.oversize_segments.update(-1);
    pool->blocks.erase(block);
    delete_block(block);
  }

  void release_blocks(BlockPool& pool) {
    for (auto it = pool.blocks.begin(); it != pool.blocks.end();) {
      Block* block = *it++;
      if (!block->is_split()) release_block(block);  // a whole free segment
    }
  }

  bool release_cached_blocks() {
    synchronize_and_free_events();
    release_blocks(large);
    release_blocks(small);
    return true;
  }

  // With max_split_size set: free cached oversize segments of this stream that together cover
  // the request (the smallest single one that does, else the largest ones first).
  bool release_available_cached_blocks(const AllocParams& p) {
    if (config.max_split_size == std::numeric_limits<size_t>::max()) return false;
    BlockPool& pool = *p.pool;
    Block key(p.stream, std::max(p.size, config.max_split_size), &pool, nullptr);
    auto it = pool.blocks.lower_bound(&key);
    if (it != pool.blocks.end() && (*it)->stream == p.stream && !(*it)->is_split()) {
      release_block(*it);
      return true;
    }
    if (it == pool.blocks.begin()) return false;
    size_t released = 0;
    --it;  // the largest block below the key
    while (released < key.size && (*it)->size >= config.max_split_size &&
           (*it)->stream == p.stream) {
      auto cur = it;
      bool first = cur == pool.blocks.begin();
      if (!first) --it;
      if (!(*cur)->is_split()) {
        released += (*cur)->size;
        release_block(*cur);
      }
      if (first) break;
    }
    return released >= key.size;
  }

  // garbage_collection_threshold: once the reserved bytes pass the threshold's share of the
  // allowed maximum, free whole cached large segments that were not reused for the longest,
  // until back under it.
  void garbage_collect_cached_blocks() {
    const size_t threshold = static_cast<size_t>(config.garbage_collection_threshold *
                                                 static_cast<double>(allowed_max));
    if (total_reserved <= threshold) return;
    const size_t target = total_reserved - threshold;
    size_t reclaimed = 0, total_age = 0, freeable = 0;
    for (Block* b : large.blocks)
      if (!b->is_split()) {
        total_age += b->gc_count;
        ++freeable;
      }
    if (freeable == 0) return;
    bool freed = true;
    while (reclaimed < target && freed && freeable > 0) {
      const double age_threshold = double(total_age) / double(freeable);
      freed = false;
      for (auto it = large.blocks.begin(); it != large.blocks.end();) {
        Block* b = *it++;
        if (!b->is_split() && b->gc_count >= age_threshold) {
          freed = true;
          reclaimed += b->size;
          total_age -= b->gc_count;
          --freeable;
          release_block(b);
        }
      }
    }
  }

  [[noreturn]] void raise_oom(size_t orig_size, const AllocParams& p) {
    ++stats.num_ooms;
    size_t dev_free = 0, dev_total = 0;
    backend->mem_get_info(device, &dev_free, &dev_total);
    const int64_t alloc = stats.allocated_bytes[kAggregate].current;
    const int64_t reserved = stats.reserved_bytes[kAggregate].current;
    const bool host = std::strcmp(backend->name(), "host") == 0;
    std::string what = str_cat("CUDA out of memory. Tried to allocate ", format_size(p.alloc_size),
                               " (a request of ", orig_size, " bytes). ",
                               host ? "Device " : "GPU ", device,
                               host ? " (ember host backend)" : "", " has a total capacity of ",
                               format_size(dev_total), " of which ", format_size(dev_free),
                               " is free. ");
    if (set_fraction)
      what += str_cat("This process is limited to ", format_size(allowed_max),
                      " by ember.cuda.set_per_process_memory_fraction. ");
    what += str_cat("Of the allocated memory ", format_size(alloc), " is allocated by ember, and ",
                    format_size(reserved - alloc),
                    " is reserved by ember but unallocated. If reserved but unallocated memory "
                    "is large try setting EMBER_CUDA_ALLOC_CONF=max_split_size_mb:<MB> to avoid "
                    "fragmentation; otherwise free the tensors you no longer need, call "
                    "ember.cuda.empty_cache() to return cached memory to the device, or use "
                    "smaller batches.");
    throw CudaOutOfMemoryError(what);
  }

  Block* block_of(void* ptr, const char* op) {
    auto it = allocated.find(ptr);
    if (it == allocated.end())
      throw std::runtime_error(str_cat(op, ": invalid device pointer ", ptr,
                                       " (not allocated by the caching allocator, or freed)"));
    return it->second;
  }
};

// ---- the public face ----

CachingAllocator::CachingAllocator(Backend* backend, int device, AllocatorConfig config)
    : impl_(new Impl(backend, device, config)) {}

CachingAllocator::~CachingAllocator() {
  Impl& m = *impl_;
  // Every block object goes; the memory of each segment goes back to the backend once.
  std::set<Block*> all(m.small.blocks.begin(), m.small.blocks.end());
  all.insert(m.large.blocks.begin(), m.large.blocks.end());
  for (auto& [ptr, b] : m.allocated) all.insert(b);
  for (auto& [s, q] : m.pending)
    for (auto& [e, b] : q) {
      all.insert(b);
      m.spare_events.push_back(e);
    }
  try {
    for (Block* b : all)
      if (!b->prev) m.backend->raw_free(m.device, b->ptr);
    for (EventHandle e : m.spare_events) m.backend->event_destroy(m.device, e);
  } catch (...) {  // a backend that is already gone (process exit): nothing left to give back
  }
  for (Block* b : all) delete b;
}

void* CachingAllocator::malloc(size_t orig_size, StreamHandle stream) {
  if (orig_size == 0) return nullptr;
  Impl& m = *impl_;
  std::lock_guard<std::mutex> g(m.mu);
  m.process_events();
  const size_t limit = size_t(1) << 62;  // keeps the rounding below from overflowing
  const size_t size = round_size(std::min(orig_size, limit));
  BlockPool* pool = size <= kSmallSize ? &m.small : &m.large;
  AllocParams p{stream, size, allocation_size(size), pool};
  bool found = orig_size < limit && m.get_free_block(p);
  if (!found && orig_size < limit) {
    if (m.set_fraction && m.config.garbage_collection_threshold > 0.0)
      m.garbage_collect_cached_blocks();
    found = m.alloc_block(p, false) ||
            (m.release_available_cached_blocks(p) && m.alloc_block(p, false)) ||
            (m.release_cached_blocks() && m.alloc_block(p, true));
  }
  if (!found) m.raise_oom(orig_size, p);
  return m.alloc_found_block(p, orig_size);
}

void CachingAllocator::free(void* ptr) {
  if (!ptr) return;
  Impl& m = *impl_;
  std::lock_guard<std::mutex> g(m.mu);
  Block* block = m.untrack(ptr);
  if (!block) m.block_of(ptr, "free");  // raises: not a live allocation
  block->allocated = false;
  m.each_stat(block->pool, [&](int t) {
    m.stats.allocation[t].update(-1);
    m.stats.allocated_bytes[t].update(-int64_t(block->size));
    m.stats.requested_bytes[t].update(-int64_t(block->requested_size));
  });
  if (block->size >= m.config.max_split_size) m.stats.oversize_allocations.update(-1);
  if (!block->stream_uses.empty()) m.insert_events(block);  // stays active until they complete
  else m.free_block(block);
}

void CachingAllocator::record_stream(void* ptr, StreamHandle stream) {
  Impl& m = *impl_;
  std::lock_guard<std::mutex> g(m.mu);
  Block* block = m.block_of(ptr, "record_stream");
  if (stream == block->stream) return;  // ordered with the block's own stream already
  auto& uses = block->stream_uses;
  if (std::find(uses.begin(), uses.end(), stream) == uses.end()) uses.push_back(stream);
}

void CachingAllocator::empty_cache() {
  Impl& m = *impl_;
  std::lock_guard<std::mutex> g(m.mu);
  m.release_cached_blocks();
}

void CachingAllocator::set_memory_fraction(double fraction) {
  EMBER_CHECK(fraction >= 0.0 && fraction <= 1.0, ValueError, "Invalid fraction value: ", fraction,
              ". Allowed range: 0~1");
  Impl& m = *impl_;
  std::lock_guard<std::mutex> g(m.mu);
  size_t dev_free = 0, dev_total = 0;
  m.backend->mem_get_info(m.device, &dev_free, &dev_total);
  m.allowed_max = static_cast<size_t>(fraction * static_cast<double>(dev_total));
  m.set_fraction = true;
}

DeviceStats CachingAllocator::stats() {
  std::lock_guard<std::mutex> g(impl_->mu);
  return impl_->stats;
}

void CachingAllocator::reset_peak_stats() {
  Impl& m = *impl_;
  std::lock_guard<std::mutex> g(m.mu);
  auto reset = [](Stat& s) { s.peak = s.current; };
  for (StatArray* a : {&m.stats.allocation, &m.stats.segment, &m.stats.active,
                       &m.stats.inactive_split, &m.stats.allocated_bytes, &m.stats.reserved_bytes,
                       &m.stats.active_bytes, &m.stats.inactive_split_bytes,
                       &m.stats.requested_bytes})
    for (Stat& s : *a) reset(s);
  reset(m.stats.oversize_allocations);
  reset(m.stats.oversize_segments);
}

void CachingAllocator::reset_accumulated_stats() {
  Impl& m = *impl_;
  std::lock_guard<std::mutex> g(m.mu);
  auto reset = [](Stat& s) { s.allocated = s.freed = 0; };
  for (StatArray* a : {&m.stats.allocation, &m.stats.segment, &m.stats.active,
                       &m.stats.inactive_split, &m.stats.allocated_bytes, &m.stats.reserved_bytes,
                       &m.stats.active_bytes, &m.stats.inactive_split_bytes,
                       &m.stats.requested_bytes})
    for (Stat& s : *a) reset(s);
  reset(m.stats.oversize_allocations);
  reset(m.stats.oversize_segments);
  m.stats.num_alloc_retries = m.stats.num_ooms = m.stats.num_sync_all_streams = 0;
  m.stats.num_device_alloc = m.stats.num_device_free = 0;
}

std::vector<SegmentInfo> CachingAllocator::snapshot() {
  Impl& m = *impl_;
  std::lock_guard<std::mutex> g(m.mu);
  std::set<Block*> all(m.small.blocks.begin(), m.small.blocks.end());
  all.insert(m.large.blocks.begin(), m.large.blocks.end());
  for (auto& [ptr, b] : m.allocated) all.insert(b);
  for (auto& [s, q] : m.pending)
    for (auto& [e, b] : q) all.insert(b);
  std::vector<Block*> heads;
  for (Block* b : all)
    if (!b->prev) heads.push_back(b);
  std::sort(heads.begin(), heads.end(), [](const Block* a, const Block* b) {
    return reinterpret_cast<uintptr_t>(a->ptr) < reinterpret_cast<uintptr_t>(b->ptr);
  });
  std::vector<SegmentInfo> out;
  for (Block* head : heads) {
    SegmentInfo seg{reinterpret_cast<uintptr_t>(head->ptr), 0, 0, 0, 0, head->stream,
                    !head->pool->is_small, {}};
    for (Block* b = head; b; b = b->next) {
      const bool pending = !b->allocated && (b->event_count > 0 || !b->stream_uses.empty());
      const char* state = b->allocated ? "active_allocated" : pending ? "active_pending_free"
                                                                      : "inactive";
      seg.blocks.push_back({reinterpret_cast<uintptr_t>(b->ptr), b->size,
                            b->allocated ? b->requested_size : 0, state});
      seg.total_size += b->size;
      if (b->allocated) seg.allocated_size += b->size, seg.requested_size += b->requested_size;
      if (b->allocated || pending) seg.active_size += b->size;
    }
    out.push_back(std::move(seg));
  }
  return out;
}

size_t CachingAllocator::allocated_size(void* ptr) {
  std::lock_guard<std::mutex> g(impl_->mu);
  return impl_->block_of(ptr, "allocated_size")->size;
}

bool CachingAllocator::owns(void* ptr) {
  std::lock_guard<std::mutex> g(impl_->mu);
  return impl_->allocated.count(ptr) != 0;
}

const AllocatorConfig& CachingAllocator::config() const { return impl_->config; }
Backend* CachingAllocator::backend() const { return impl_->backend; }
int CachingAllocator::device() const { return impl_->device; }

}  // namespace ember::cuda
