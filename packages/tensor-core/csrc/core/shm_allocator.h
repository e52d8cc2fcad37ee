// shm_allocator.h: shared-memory segments for storages that cross process boundaries (ember-mp).
//
// A segment is an mmap'd file, of one of two kinds:
//
// - fd segments: an anonymous memfd (file_descriptor strategy). It travels as a descriptor, has
//   no name that could leak, and is freed by the kernel when the last mapping and descriptor go.
// - named segments: a POSIX shm object /dev/shm/<name> (file_system strategy). A name outlives
//   its processes unless someone unlinks it, so the segment starts with a 64-byte header holding
//   a reference count shared by every process (after PyTorch's THRefcountedMapAllocator): each
//   mapping holds one count, each message in flight holds one (the sender's incref, consumed by
//   the receiver's decref), and whoever brings the count to zero unlinks the name. The data
//   starts right after the header, so it stays 64-byte aligned and tensors never see the header.
//   Processes killed with SIGKILL never decrement: ember-mp's watchdog unlinks the names a dead
//   creator left (see packages/mp).
//
// The segment's DataPtr owns the mapping (and the descriptor, if kept): munmap/close (and the
// decrement) run when the last storage referencing it goes, like any other allocation. Moving a
// storage into a segment swaps the StorageImpl's DataPtr, so every view sees the new bytes.
//
// Each process keeps a weak map from segment identity (a name, or the device and inode of a
// memfd) to the storage mapping it: a segment received twice, or received by its own creator,
// maps once, and views that share a storage in the sender share one in the receiver.
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace ember::shm {

constexpr size_t kHeaderBytes = 64;  // named segments: refcount header before the data

struct Segment {
  int fd = -1;           // kept open for fd segments, -1 otherwise
  void* base = nullptr;  // the start of the mapping (the header of a named segment)
  size_t size = 0;       // mapped bytes, header included
  size_t offset = 0;     // where the data starts in the mapping (0, or kHeaderBytes)
  std::string name;      // named segments: the shm name ("/ember_..."); empty once taken
  bool counted = false;  // this mapping holds one count in the header
  pid_t pid = 0;         // the process that mapped it (a forked child inherits, but holds no count)
};

// The segment behind a storage, or null when it is not in shared memory.
const Segment* segment_of(const StorageImpl& s);
bool is_shared(const StorageImpl& s);

// Moves the storage's bytes into a new fd segment (no-op when it already has a descriptor).
void share_fd_(const Storage& s);
// Moves the storage's bytes into a new named segment called `name`.
void share_filename_(const Storage& s, const std::string& name);
// Fresh (zero-filled) segments of nbytes.
Storage new_fd(size_t nbytes);
Storage new_filename(const std::string& name, size_t nbytes);

// A storage over a received descriptor (duplicated; the caller keeps `fd`) whose data starts at
// `offset`; the storage already mapping that segment in this process, if there is one.
Storage from_fd(int fd, size_t nbytes, size_t offset);
// A storage over the named segment `name` (one more count), or the one already mapping it.
// take=true: the caller is the segment's only receiver: the name is unlinked at once and no
// count is kept (the mapping lives on without a name).
Storage from_filename(const std::string& name, size_t nbytes, bool take);

// The count in a named segment's header (-1 for other storages); incref/decref for messages
// in flight. decref unlinks the name when the count reaches zero.
int64_t refcount(const StorageImpl& s);
void incref(const StorageImpl& s);
void decref(const StorageImpl& s);

// A barrier over a control block in shared memory: `world` lines of 64 bytes at `byte_offset`
// of `ctl`, line r = {epoch, value[2], pid}. Rank `rank` publishes `value` for `epoch` and waits
// (without the GIL) until every rank has reached `epoch`; returns every rank's value. Throws
// when a rank's process is gone or after timeout_s.
std::vector<int64_t> group_sync(const StorageImpl& ctl, size_t byte_offset, int rank, int world,
                                int64_t epoch, int64_t value, double timeout_s);

}  // namespace ember::shm
