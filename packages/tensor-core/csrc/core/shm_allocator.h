// shm_allocator.h: shared-memory segments for storages that cross process boundaries (ember-mp).
//
// A segment is an mmap'd file: an anonymous memfd for the file_descriptor strategy (it travels
// as a descriptor and has no name to leak), or a named POSIX shm object (/dev/shm/<name>) for the
// file_system strategy. The segment's DataPtr owns the mapping (and the descriptor, if kept):
// munmap/close run when the last storage referencing it goes, like any other allocation.
// Moving a storage into a segment swaps the StorageImpl's DataPtr, so every view sees the new bytes.
#pragma once
#include <string>
#include <utility>

#include "core/tensor.h"

namespace ember::shm {

struct Segment {
  int fd = -1;           // kept open for file_descriptor segments, -1 otherwise
  size_t size = 0;       // mapped bytes (>= 1 even for empty storages)
  std::string name;      // file_system segments: the shm name ("/ember_...")
};

// The segment behind a storage, or null when it is not in shared memory.
const Segment* segment_of(const StorageImpl& s);
bool is_shared(const StorageImpl& s);

// Moves the storage's bytes into a new fd segment (no-op when it already is shared).
void share_fd_(StorageImpl& s);
// Moves the storage's bytes into a new named segment called `name`.
void share_filename_(StorageImpl& s, const std::string& name);

// A storage over a received segment: maps the descriptor (duplicated; the caller keeps `fd`).
Storage from_fd(int fd, size_t nbytes);
// A storage over the named segment `name`.
Storage from_filename(const std::string& name, size_t nbytes);

}  // namespace ember::shm
