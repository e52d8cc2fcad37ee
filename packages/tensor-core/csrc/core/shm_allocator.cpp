// shm_allocator.cpp: see shm_allocator.h.
#include "core/shm_allocator.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <chrono>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <unordered_map>

#include "core/errors.h"

namespace ember::shm {
namespace {

constexpr uint64_t kMagic = 0x31676573726562ULL;  // "bersg1": an ember named segment

struct Header {
  uint64_t magic;
  int64_t refcount;  // accessed only through __atomic builtins: it is shared between processes
  uint64_t nbytes;   // data bytes after the header
  uint64_t reserved[5];
};
static_assert(sizeof(Header) == kHeaderBytes, "the header keeps the data 64-byte aligned");

Header* header_of(const Segment& seg) {
  return seg.offset == kHeaderBytes ? static_cast<Header*>(seg.base) : nullptr;
}

void unlink_quietly(const std::string& name) {
  if (!name.empty()) shm_unlink(name.c_str());
}

// One count less; the process that brings it to zero removes the name.
void release_count(const Segment& seg) {
  Header* h = header_of(seg);
  if (h && __atomic_sub_fetch(&h->refcount, 1, __ATOMIC_ACQ_REL) == 0) unlink_quietly(seg.name);
}

void free_segment(void* ctx, void*) {
  auto* seg = static_cast<Segment*>(ctx);
  // A forked child inherits its parent's mappings but never counted them.
  if (seg->counted && seg->pid == getpid()) release_count(*seg);
  if (seg->base) munmap(seg->base, seg->size);
  if (seg->fd >= 0) close(seg->fd);
  delete seg;
}

std::string shm_free_note() {
  struct statvfs v;
  if (statvfs("/dev/shm", &v) != 0) return "";
  const double mib = static_cast<double>(v.f_bavail) * v.f_frsize / (1024.0 * 1024.0);
  return str_cat(" (/dev/shm has ", static_cast<int64_t>(mib), " MiB free)");
}

[[noreturn]] void fail(const char* what, size_t nbytes, int err, const std::string& name = "") {
  std::string hint;
  if (err == EMFILE || err == ENFILE)
    hint = "; too many open files: raise the limit (ulimit -n) or use the 'file_system' sharing "
           "strategy (ember.multiprocessing.set_sharing_strategy('file_system'))";
  else if (err == EFBIG)
    hint = "; the segment is larger than this process may make a file (raise ulimit -f)";
  else if (err == ENOSPC || err == ENOMEM)
    hint = str_cat("; out of shared memory", shm_free_note(),
                   ": free some shared tensors, share fewer or smaller ones, or enlarge /dev/shm "
                   "(mount -o remount,size=<N>G /dev/shm; in Docker, docker run --shm-size=<N>g)");
  else if (err == ENOENT && !name.empty())
    hint = "; the segment is gone: with the 'file_system' strategy a process must stay alive "
           "until every receiver has the tensors it sent (its segments are removed when it exits)";
  throw std::runtime_error(str_cat("share_memory_: ", what, name.empty() ? "" : " ", name,
                                   " failed for ", nbytes, " bytes: ", std::strerror(err), hint));
}

// Reserves the pages now, so that running out of shared memory is an error here rather than a
// SIGBUS at the first write (tmpfs files are sparse).
void reserve(int fd, size_t size, size_t nbytes) {
  if (ftruncate(fd, static_cast<off_t>(size)) != 0) fail("ftruncate", nbytes, errno);
  if (fallocate(fd, 0, 0, static_cast<off_t>(size)) != 0 && errno != EOPNOTSUPP && errno != ENOSYS)
    fail("fallocate", nbytes, errno);
}

void* map(int fd, size_t size, size_t nbytes, bool populate) {
  // A fresh segment is written whole at once: fault its pages in with one call.
  const int flags = MAP_SHARED | (populate ? MAP_POPULATE : 0);
  void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, flags, fd, 0);
  if (p == MAP_FAILED) fail("mmap", nbytes, errno);
  return p;
}

// ---- per-process map: segment identity -> the storage mapping it --------------------------
std::mutex g_mu;
auto& g_cache = *new std::unordered_map<std::string, std::weak_ptr<StorageImpl>>;  // leaked
size_t g_prune_at = 64;

Storage cache_get(const std::string& key) {
  std::lock_guard<std::mutex> lock(g_mu);
  auto it = g_cache.find(key);
  if (it == g_cache.end()) return nullptr;
  Storage s = it->second.lock();
  if (!s) g_cache.erase(it);
  return s;
}

void cache_put(const std::string& key, const Storage& s) {
  std::lock_guard<std::mutex> lock(g_mu);
  g_cache[key] = s;
  if (g_cache.size() >= g_prune_at) {
    for (auto it = g_cache.begin(); it != g_cache.end();)
      it = it->second.expired() ? g_cache.erase(it) : std::next(it);
    g_prune_at = 2 * g_cache.size() + 64;
  }
}

std::string fd_key(int fd) {
  struct stat st;
  if (fstat(fd, &st) != 0) return "";
  return str_cat("fd:", st.st_dev, ":", st.st_ino);
}

std::string name_key(const std::string& name) { return "name:" + name; }

DataPtr segment_ptr(Segment* seg) {
  return DataPtr(static_cast<char*>(seg->base) + seg->offset, seg, &free_segment, Device{});
}

// A new memfd segment of nbytes (zero-filled).
Segment* make_fd_segment(size_t nbytes) {
  const size_t size = nbytes ? nbytes : 1;
  int fd = memfd_create("ember_shm", MFD_CLOEXEC);
  if (fd < 0) fail("memfd_create", nbytes, errno);
  try {
    reserve(fd, size, nbytes);
    void* p = map(fd, size, nbytes, true);
    return new Segment{fd, p, size, 0, {}, false, getpid()};
  } catch (...) {
    close(fd);
    throw;
  }
}

// A new named segment of nbytes (zero-filled) with its header; count 1 (this mapping).
Segment* make_named_segment(const std::string& name, size_t nbytes) {
  const size_t size = kHeaderBytes + nbytes;
  int fd = shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
  if (fd < 0) fail("shm_open", nbytes, errno, name);
  void* p = nullptr;
  try {
    reserve(fd, size, nbytes);
    p = map(fd, size, nbytes, true);
  } catch (...) {
    close(fd);
    shm_unlink(name.c_str());
    throw;
  }
  close(fd);
  auto* h = static_cast<Header*>(p);
  h->nbytes = nbytes;
  h->magic = kMagic;
  __atomic_store_n(&h->refcount, 1, __ATOMIC_RELEASE);
  return new Segment{-1, p, size, kHeaderBytes, name, true, getpid()};
}

void move_into(StorageImpl& s, Segment* seg) {
  DataPtr d = segment_ptr(seg);
  if (s.nbytes) std::memcpy(d.get(), s.ptr(), s.nbytes);
  s.data = std::move(d);  // the old block is freed here; every view now sees the segment
  s.allocator = nullptr;
  s.resizable = false;
}

void check_cpu(const StorageImpl& s) {
  if (!s.device().is_cpu())
    throw std::runtime_error(str_cat("share_memory_: a ", s.device().str(),
                                     " storage cannot be moved to host shared memory"));
}

Storage wrap(Segment* seg, size_t nbytes) {
  return std::make_shared<StorageImpl>(segment_ptr(seg), nbytes, nullptr);
}

}  // namespace

const Segment* segment_of(const StorageImpl& s) {
  return s.data.deleter() == &free_segment ? static_cast<const Segment*>(s.data.context()) : nullptr;
}

bool is_shared(const StorageImpl& s) { return segment_of(s) != nullptr; }

void share_fd_(const Storage& s) {
  check_cpu(*s);
  if (const Segment* seg = segment_of(*s)) {
    if (seg->fd >= 0) return;
    if (!seg->name.empty()) {  // a named segment: reopen it to get a descriptor
      int fd = shm_open(seg->name.c_str(), O_RDWR | O_CLOEXEC, 0600);
      if (fd < 0) fail("shm_open", s->nbytes, errno, seg->name);
      const_cast<Segment*>(seg)->fd = fd;
      cache_put(fd_key(fd), s);
      return;
    }
    // a segment whose name was taken away: it cannot be reopened, so it moves like any storage
  }
  Segment* seg = make_fd_segment(s->nbytes);
  move_into(*s, seg);
  cache_put(fd_key(seg->fd), s);
}

void share_filename_(const Storage& s, const std::string& name) {
  check_cpu(*s);
  Segment* seg = make_named_segment(name, s->nbytes);
  move_into(*s, seg);
  cache_put(name_key(name), s);
}

Storage new_fd(size_t nbytes) {
  Segment* seg = make_fd_segment(nbytes);
  Storage s = wrap(seg, nbytes);
  cache_put(fd_key(seg->fd), s);
  return s;
}

Storage new_filename(const std::string& name, size_t nbytes) {
  Storage s = wrap(make_named_segment(name, nbytes), nbytes);
  cache_put(name_key(name), s);
  return s;
}

Storage from_fd(int fd, size_t nbytes, size_t offset) {
  const std::string key = fd_key(fd);
  if (key.empty()) fail("fstat", nbytes, errno);
  if (Storage s = cache_get(key)) return s;
  struct stat st;
  if (fstat(fd, &st) != 0) fail("fstat", nbytes, errno);
  const size_t size = offset + (nbytes ? nbytes : 1);
  EMBER_CHECK(offset == 0 || offset == kHeaderBytes, std::runtime_error,
              "_new_shared_fd_cpu: bad data offset ", offset);
  EMBER_CHECK(static_cast<size_t>(st.st_size) >= size, std::runtime_error,
              "_new_shared_fd_cpu: the segment has ", st.st_size, " bytes, expected ", size);
  int own = fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (own < 0) fail("dup", nbytes, errno);
  void* p;
  try {
    p = map(own, size, nbytes, false);
  } catch (...) {
    close(own);
    throw;
  }
  Storage s = wrap(new Segment{own, p, size, offset, {}, false, getpid()}, nbytes);
  cache_put(key, s);
  return s;
}

Storage from_filename(const std::string& name, size_t nbytes, bool take) {
  const std::string key = name_key(name);
  if (Storage s = cache_get(key)) {
    if (take) shm_unlink(name.c_str());
    return s;
  }
  const size_t size = kHeaderBytes + nbytes;
  int fd = shm_open(name.c_str(), O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0) fail("shm_open", nbytes, errno, name);
  struct stat st;
  if (fstat(fd, &st) != 0 || static_cast<size_t>(st.st_size) < size) {
    close(fd);
    throw std::runtime_error(str_cat("_new_shared_filename_cpu: ", name, " has ", st.st_size,
                                     " bytes, expected ", size));
  }
  void* p;
  try {
    p = map(fd, size, nbytes, false);
  } catch (...) {
    close(fd);
    throw;
  }
  close(fd);
  auto* seg = new Segment{-1, p, size, kHeaderBytes, take ? std::string() : name, !take, getpid()};
  auto* h = static_cast<Header*>(p);
  bool ok = h->magic == kMagic && h->nbytes >= nbytes;
  if (ok && !take) {  // one more count, unless the count already reached zero (being freed)
    int64_t c = __atomic_load_n(&h->refcount, __ATOMIC_ACQUIRE);
    while (c > 0 && !__atomic_compare_exchange_n(&h->refcount, &c, c + 1, false, __ATOMIC_ACQ_REL,
                                                 __ATOMIC_ACQUIRE)) {
    }
    if (c <= 0) {
      seg->counted = false;
      free_segment(seg, nullptr);
      fail("shm_open", nbytes, ENOENT, name);
    }
  }
  if (!ok) {
    seg->counted = false;
    free_segment(seg, nullptr);
    throw std::runtime_error(str_cat("_new_shared_filename_cpu: ", name,
                                     " is not an ember shared segment of ", nbytes, " bytes"));
  }
  if (take) shm_unlink(name.c_str());  // the mapping keeps the memory; the name goes at once
  Storage s = wrap(seg, nbytes);
  cache_put(key, s);
  return s;
}

int64_t refcount(const StorageImpl& s) {
  const Segment* seg = segment_of(s);
  const Header* h = seg ? header_of(*seg) : nullptr;
  return h && !seg->name.empty() ? __atomic_load_n(&h->refcount, __ATOMIC_ACQUIRE) : -1;
}

void incref(const StorageImpl& s) {
  const Segment* seg = segment_of(s);
  if (Header* h = seg && !seg->name.empty() ? header_of(*seg) : nullptr)
    __atomic_add_fetch(&h->refcount, 1, __ATOMIC_ACQ_REL);
}

void decref(const StorageImpl& s) {
  const Segment* seg = segment_of(s);
  if (seg && !seg->name.empty()) release_count(*seg);
}

// ---- group_sync ----------------------------------------------------------------------------
// Gone, or a zombie its parent has not reaped yet (kill(pid, 0) still succeeds on those).
static bool process_gone(pid_t pid) {
  if (kill(pid, 0) != 0) return errno == ESRCH;
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/stat", static_cast<int>(pid));
  FILE* f = std::fopen(path, "r");
  if (!f) return false;
  char buf[512];
  const size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  buf[n] = 0;
  const char* close_paren = std::strrchr(buf, ')');  // the state follows "pid (comm) "
  return close_paren && close_paren[1] == ' ' && (close_paren[2] == 'Z' || close_paren[2] == 'X');
}

std::vector<int64_t> group_sync(const StorageImpl& ctl, size_t byte_offset, int rank, int world,
                                int64_t epoch, int64_t value, double timeout_s) {
  EMBER_CHECK(world > 0 && rank >= 0 && rank < world, std::runtime_error, "group_sync: rank ",
              rank, " is not in [0, ", world, ")");
  EMBER_CHECK(byte_offset % 64 == 0 && byte_offset + 64 * static_cast<size_t>(world) <= ctl.nbytes,
              std::runtime_error, "group_sync: the control block is too small for ", world, " ranks");
  auto* base = reinterpret_cast<int64_t*>(static_cast<char*>(ctl.ptr()) + byte_offset);
  auto line = [&](int r) { return base + 8 * r; };  // {epoch, value[2], pid, ...}
  const int slot = 1 + static_cast<int>(epoch & 1);   // a rank may run one epoch ahead of us
  __atomic_store_n(line(rank) + slot, value, __ATOMIC_RELAXED);
  __atomic_store_n(line(rank) + 3, static_cast<int64_t>(getpid()), __ATOMIC_RELAXED);
  __atomic_store_n(line(rank), epoch, __ATOMIC_RELEASE);

  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  auto next_check = start + std::chrono::milliseconds(100);
  std::vector<int64_t> values(world);
  int spins = 0;
  for (int r = 0; r < world;) {
    if (__atomic_load_n(line(r), __ATOMIC_ACQUIRE) >= epoch) {
      values[r] = __atomic_load_n(line(r) + slot, __ATOMIC_RELAXED);
      ++r;
      continue;
    }
    // Spin briefly (collectives are short), then yield, then sleep.
    if (++spins < 200) continue;
    if (spins < 2000) {
      sched_yield();
      continue;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(spins < 20000 ? 20 : 200));
    const auto now = clock::now();
    if (now < next_check) continue;
    next_check = now + std::chrono::milliseconds(100);
    const int64_t pid = __atomic_load_n(line(r) + 3, __ATOMIC_RELAXED);
    if (pid > 0 && process_gone(static_cast<pid_t>(pid)))
      throw std::runtime_error(str_cat("ember.distributed: rank ", r, " (pid ", pid,
                                       ") exited while rank ", rank, " waited for it"));
    const double waited = std::chrono::duration<double>(now - start).count();
    if (waited > timeout_s)
      throw std::runtime_error(str_cat("ember.distributed: rank ", rank, " timed out after ",
                                       timeout_s, " s waiting for rank ", r,
                                       " (every rank must call the same collectives in the same "
                                       "order; the timeout is init_process_group's)"));
  }
  return values;
}

}  // namespace ember::shm
