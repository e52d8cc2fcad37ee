// backend.h: the seam under the CUDA caching allocator.
//
// The allocator's bookkeeping (pools, splitting, merging, events, statistics) never calls the CUDA
// runtime itself: it talks to a Backend, a handful of device operations. Two backends exist:
//   - cudart_backend.cpp: the CUDA runtime, loaded with dlopen() on first use, so that one build
//     of ember serves machines with and without a GPU and nothing links against CUDA;
//   - host_backend.cpp: host memory and simulated streams/events with a configurable "device
//     capacity", so that every machine (CI has no GPU) tests the same bookkeeping code.
// Streams and events are opaque handles (a cudaStream_t / cudaEvent_t on the CUDA runtime).
// Stream 0 is the device's default stream.
#pragma once
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace ember::cuda {

// An error the CUDA runtime or driver reported (a failed call: an illegal address, a launch
// failure, ...): `ember.AcceleratorError` in Python, a RuntimeError, as torch.AcceleratorError.
struct AcceleratorError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

using StreamHandle = uintptr_t;
using EventHandle = void*;

class Backend {
 public:
  virtual ~Backend() = default;
  virtual const char* name() const = 0;
  // The CUDA runtime's version ("13.0"); empty where there is none (the simulated devices).
  virtual std::string runtime_version() { return ""; }
  virtual int device_count() = 0;
  virtual std::string device_name(int device) = 0;
  // The compute capability and multiprocessor count (get_device_properties).
  virtual void device_attributes(int device, int* major, int* minor, int* multiprocessors) = 0;
  virtual int current_device() = 0;
  virtual void set_device(int device) = 0;

  // Device memory. raw_malloc returns nullptr when the device is out of memory (any other
  // failure throws); the caching allocator then frees cached blocks and retries.
  virtual void* raw_malloc(int device, size_t nbytes) = 0;
  virtual void raw_free(int device, void* ptr) = 0;
  virtual void mem_get_info(int device, size_t* free_bytes, size_t* total_bytes) = 0;
  virtual void device_synchronize(int device) = 0;

  virtual StreamHandle stream_create(int device, int priority) = 0;
  virtual void stream_destroy(int device, StreamHandle stream) = 0;
  virtual bool stream_query(int device, StreamHandle stream) = 0;  // true: all work done
  virtual void stream_synchronize(int device, StreamHandle stream) = 0;
  virtual void stream_wait_event(int device, StreamHandle stream, EventHandle event) = 0;

  virtual EventHandle event_create(int device, bool enable_timing) = 0;
  virtual void event_destroy(int device, EventHandle event) = 0;
  virtual void event_record(int device, EventHandle event, StreamHandle stream) = 0;
  virtual bool event_query(int device, EventHandle event) = 0;  // true: completed
  virtual void event_synchronize(int device, EventHandle event) = 0;
  virtual float event_elapsed_ms(int device, EventHandle start, EventHandle end) = 0;

  // Copies (any direction: the runtime tells host from device addresses) and fills, queued on
  // `stream`; the host backend runs them at once.
  virtual void memcpy_async(int device, void* dst, const void* src, size_t nbytes,
                            StreamHandle stream) = 0;
  virtual void memset_async(int device, void* dst, int value, size_t nbytes,
                            StreamHandle stream) = 0;
  // Page-locked host memory (pin_memory), so that host<->device copies can run asynchronously.
  // nullptr when none can be had.
  virtual void* host_alloc(size_t nbytes) = 0;
  virtual void host_free(void* ptr) = 0;
};

}  // namespace ember::cuda
