// host_backend.h: a Backend over host memory with simulated streams and events, so that the
// caching allocator's bookkeeping is tested on every machine (see backend.h).
//
// - "Device memory" is aligned host memory, limited by a configurable capacity: raw_malloc
//   returns nullptr when the bytes handed out would exceed it, so the allocator's out-of-memory
//   path (free cached blocks, retry, raise) is reachable. mem_get_info reports the capacity.
// - Copies and fills run at once (memcpy/memset); pinned host memory is aligned host memory.
// - Streams run nothing. An event recorded on a stream stays pending until that stream (or the
//   device, or the event itself) is synchronized: the conservative reading of "the work queued
//   before the event has not finished yet", which is what record_stream must wait for.
#pragma once
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>

#include "cuda/backend.h"

namespace ember::cuda {

class HostBackend final : public Backend {
 public:
  explicit HostBackend(size_t capacity, int devices = 1);
  ~HostBackend() override;
  const char* name() const override { return "host"; }
  int device_count() override { return devices_; }
  std::string device_name(int device) override;
  void device_attributes(int device, int* major, int* minor, int* multiprocessors) override;
  int current_device() override;
  void set_device(int device) override;

  void* raw_malloc(int device, size_t nbytes) override;
  void raw_free(int device, void* ptr) override;
  void mem_get_info(int device, size_t* free_bytes, size_t* total_bytes) override;
  void device_synchronize(int device) override;

  StreamHandle stream_create(int device, int priority) override;
  void stream_destroy(int device, StreamHandle stream) override;
  bool stream_query(int device, StreamHandle stream) override;
  void stream_synchronize(int device, StreamHandle stream) override;
  void stream_wait_event(int device, StreamHandle stream, EventHandle event) override;

  EventHandle event_create(int device, bool enable_timing) override;
  void event_destroy(int device, EventHandle event) override;
  void event_record(int device, EventHandle event, StreamHandle stream) override;
  bool event_query(int device, EventHandle event) override;
  void event_synchronize(int device, EventHandle event) override;
  float event_elapsed_ms(int device, EventHandle start, EventHandle end) override;

  void memcpy_async(int device, void* dst, const void* src, size_t nbytes,
                    StreamHandle stream) override;
  void memset_async(int device, void* dst, int value, size_t nbytes, StreamHandle stream) override;
  void* host_alloc(size_t nbytes) override;
  void host_free(void* ptr) override;

  // Introspection for tests.
  size_t capacity() const { return capacity_; }
  void set_capacity(size_t capacity);
  size_t bytes_in_use();
  size_t live_allocations();
  size_t live_events();

 private:
  struct Stream {
    uint64_t submitted = 0;  // events recorded so far
    uint64_t completed = 0;  // events known complete
  };
  struct Event {
    StreamHandle stream = 0;
    uint64_t tick = 0;  // 0: never recorded (complete, as for CUDA)
    double time_ms = 0;
    bool timing = false;
  };
  Stream& stream_locked(StreamHandle s);
  Event* event_locked(EventHandle e);
  void check_device(int device) const;

  std::mutex mu_;
  size_t capacity_;
  int devices_;
  int current_ = 0;
  size_t used_ = 0;
  std::map<void*, size_t> allocations_;
  std::map<StreamHandle, Stream> streams_;  // 0 (the default stream) always exists
  StreamHandle next_stream_ = 3;  // 1 and 2 name the default stream, as on the CUDA runtime
  std::set<Event*> events_;
};

}  // namespace ember::cuda
