// shm_allocator.cpp: see shm_allocator.h.
#include "core/shm_allocator.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "core/errors.h"

namespace ember::shm {
namespace {

void free_segment(void* ctx, void* ptr) {
  auto* seg = static_cast<Segment*>(ctx);
  if (ptr) munmap(ptr, seg->size);
  if (seg->fd >= 0) close(seg->fd);
  delete seg;
}

[[noreturn]] void fail(const char* what, size_t nbytes, int err) {
  std::string hint;
  if (err == EMFILE || err == ENFILE)
    hint = "; too many open files: raise the limit (ulimit -n) or use the 'file_system' sharing "
           "strategy (ember.multiprocessing.set_sharing_strategy('file_system'))";
  else if (err == ENOSPC || err == ENOMEM || err == EFBIG)
    hint = "; out of shared memory: free some, or enlarge /dev/shm (e.g. docker --shm-size)";
  throw std::runtime_error(str_cat("share_memory_: ", what, " failed for ", nbytes, " bytes: ",
                                   std::strerror(err), hint));
}

void* map_fd(int fd, size_t size, size_t nbytes) {
  void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) fail("mmap", nbytes, errno);
  return p;
}

DataPtr make_fd_segment(size_t nbytes) {
  const size_t size = nbytes ? nbytes : 1;
  int fd = memfd_create("ember_shm", MFD_CLOEXEC);
  if (fd < 0) fail("memfd_create", nbytes, errno);
  if (ftruncate(fd, static_cast<off_t>(size)) != 0) {
    int e = errno;
    close(fd);
    fail("ftruncate", nbytes, e);
  }
  void* p;
  try {
    p = map_fd(fd, size, nbytes);
  } catch (...) {
    close(fd);
    throw;
  }
  return DataPtr(p, new Segment{fd, size, {}}, &free_segment, Device{});
}

void move_into(StorageImpl& s, DataPtr seg) {
  if (s.nbytes) std::memcpy(seg.get(), s.ptr(), s.nbytes);
  s.data = std::move(seg);  // the old block is freed here; every view now sees the segment
  s.allocator = nullptr;
  s.resizable = false;
}

void check_cpu(const StorageImpl& s) {
  if (!s.device().is_cpu())
    throw std::runtime_error(str_cat("share_memory_: a ", s.device().str(),
                                     " storage cannot be moved to host shared memory"));
}

}  // namespace

const Segment* segment_of(const StorageImpl& s) {
  return s.data.deleter() == &free_segment ? static_cast<const Segment*>(s.data.context()) : nullptr;
}

bool is_shared(const StorageImpl& s) { return segment_of(s) != nullptr; }

void share_fd_(StorageImpl& s) {
  check_cpu(s);
  if (const Segment* seg = segment_of(s)) {
    if (seg->fd >= 0) return;
    // a named segment: reopen it to get a descriptor
    int fd = shm_open(seg->name.c_str(), O_RDWR, 0600);
    if (fd < 0) fail("shm_open", s.nbytes, errno);
    const_cast<Segment*>(seg)->fd = fd;
    return;
  }
  move_into(s, make_fd_segment(s.nbytes));
}

void share_filename_(StorageImpl& s, const std::string& name) {
  check_cpu(s);
  const size_t size = s.nbytes ? s.nbytes : 1;
  int fd = shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
  if (fd < 0) fail("shm_open", s.nbytes, errno);
  if (ftruncate(fd, static_cast<off_t>(size)) != 0) {
    int e = errno;
    close(fd);
    shm_unlink(name.c_str());
    fail("ftruncate", s.nbytes, e);
  }
  void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  int e = errno;
  close(fd);
  if (p == MAP_FAILED) {
    shm_unlink(name.c_str());
    fail("mmap", s.nbytes, e);
  }
  move_into(s, DataPtr(p, new Segment{-1, size, name}, &free_segment, Device{}));
}

Storage from_fd(int fd, size_t nbytes) {
  struct stat st;
  if (fstat(fd, &st) != 0) fail("fstat", nbytes, errno);
  const size_t size = nbytes ? nbytes : 1;
  EMBER_CHECK(static_cast<size_t>(st.st_size) >= size, std::runtime_error,
              "_new_shared_fd_cpu: the segment has ", st.st_size, " bytes, expected ", size);
  int own = fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (own < 0) fail("dup", nbytes, errno);
  void* p;
  try {
    p = map_fd(own, size, nbytes);
  } catch (...) {
    close(own);
    throw;
  }
  return std::make_shared<StorageImpl>(DataPtr(p, new Segment{own, size, {}}, &free_segment, Device{}),
                                       nbytes, nullptr);
}

Storage from_filename(const std::string& name, size_t nbytes) {
  const size_t size = nbytes ? nbytes : 1;
  int fd = shm_open(name.c_str(), O_RDWR, 0600);
  if (fd < 0) fail("shm_open", nbytes, errno);
  void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  int e = errno;
  close(fd);
  if (p == MAP_FAILED) fail("mmap", nbytes, e);
  return std::make_shared<StorageImpl>(DataPtr(p, new Segment{-1, size, name}, &free_segment, Device{}),
                                       nbytes, nullptr);
}

}  // namespace ember::shm
