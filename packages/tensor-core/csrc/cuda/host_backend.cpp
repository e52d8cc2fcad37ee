#include "cuda/host_backend.h"

#include <chrono>
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "core/errors.h"

namespace ember::cuda {

namespace {
double now_ms() {
  using namespace std::chrono;
  return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}
}  // namespace

HostBackend::HostBackend(size_t capacity, int devices) : capacity_(capacity), devices_(devices) {
  streams_[0] = Stream{};
}

HostBackend::~HostBackend() {
  for (auto& [p, n] : allocations_) std::free(p);
  for (Event* e : events_) delete e;
}

void HostBackend::check_device(int device) const {
  EMBER_CHECK(device >= 0 && device < devices_, std::runtime_error,
              "host backend: invalid device ordinal ", device);
}

std::string HostBackend::device_name(int device) {
  check_device(device);
  return "ember host backend (simulated device)";
}

void HostBackend::device_attributes(int device, int* major, int* minor, int* multiprocessors) {
  check_device(device);
  *major = *minor = 0;  // no real architecture
  *multiprocessors = 1;
}

int HostBackend::current_device() {
  std::lock_guard<std::mutex> g(mu_);
  return current_;
}

void HostBackend::set_device(int device) {
  check_device(device);
  std::lock_guard<std::mutex> g(mu_);
  current_ = device;
}

void* HostBackend::raw_malloc(int device, size_t nbytes) {
  check_device(device);
  std::lock_guard<std::mutex> g(mu_);
  if (nbytes > capacity_ || used_ > capacity_ - nbytes) return nullptr;
  // 512: the alignment cudaMalloc guarantees (at least 256) and the allocator's block size.
  void* p = std::aligned_alloc(512, (nbytes + 511) / 512 * 512);
  if (!p) return nullptr;
  allocations_[p] = nbytes;
  used_ += nbytes;
  return p;
}

void HostBackend::raw_free(int device, void* ptr) {
  check_device(device);
  std::lock_guard<std::mutex> g(mu_);
  auto it = allocations_.find(ptr);
  EMBER_CHECK(it != allocations_.end(), std::runtime_error,
              "host backend: free of a pointer it did not allocate");
  used_ -= it->second;
  allocations_.erase(it);
  std::free(ptr);
}

void HostBackend::mem_get_info(int device, size_t* free_bytes, size_t* total_bytes) {
  check_device(device);
  std::lock_guard<std::mutex> g(mu_);
  *total_bytes = capacity_;
  *free_bytes = used_ < capacity_ ? capacity_ - used_ : 0;
}

void HostBackend::set_capacity(size_t capacity) {
  std::lock_guard<std::mutex> g(mu_);
  capacity_ = capacity;
}

size_t HostBackend::bytes_in_use() {
  std::lock_guard<std::mutex> g(mu_);
  return used_;
}

size_t HostBackend::live_allocations() {
  std::lock_guard<std::mutex> g(mu_);
  return allocations_.size();
}

size_t HostBackend::live_events() {
  std::lock_guard<std::mutex> g(mu_);
  return events_.size();
}

void HostBackend::device_synchronize(int device) {
  check_device(device);
  std::lock_guard<std::mutex> g(mu_);
  for (auto& [_, s] : streams_) s.completed = s.submitted;
}

HostBackend::HostBackend::Event* HostBackend::event_locked(EventHandle e) {
  auto* ev = static_cast<Event*>(e);
  EMBER_CHECK(events_.count(ev), std::runtime_error, "host backend: unknown event ", e);
  return ev;
}

HostBackend::Stream& HostBackend::stream_locked(StreamHandle s) {
  // cudaStreamLegacy (1) and cudaStreamPerThread (2): one default stream here (DLPack passes 1).
  if (s == 1 || s == 2) s = 0;
  auto it = streams_.find(s);
  EMBER_CHECK(it != streams_.end(), std::runtime_error, "host backend: unknown stream ", s);
  return it->second;
}

StreamHandle HostBackend::stream_create(int device, int /*priority*/) {
  check_device(device);
  std::lock_guard<std::mutex> g(mu_);
  StreamHandle h = next_stream_++;
  streams_[h] = Stream{};
  return h;
}

void HostBackend::stream_destroy(int device, StreamHandle stream) {
  check_device(device);
  std::lock_guard<std::mutex> g(mu_);
  if (stream != 0) streams_.erase(stream);
}

bool HostBackend::stream_query(int device, StreamHandle stream) {
  check_device(device);
  std::lock_guard<std::mutex> g(mu_);
  Stream& s = stream_locked(stream);
  return s.completed == s.submitted;
}

void HostBackend::stream_synchronize(int device, StreamHandle stream) {
  check_device(device);
  std::lock_guard<std::mutex> g(mu_);
  Stream& s = stream_locked(stream);
  s.completed = s.submitted;
}

void HostBackend::stream_wait_event(int device, StreamHandle stream, EventHandle) {
  check_device(device);
  std::lock_guard<std::mutex> g(mu_);
  stream_locked(stream);  // nothing runs, so there is nothing to order
}

EventHandle HostBackend::event_create(int device, bool enable_timing) {
  check_device(device);
  std::lock_guard<std::mutex> g(mu_);
  auto* e = new Event;
  e->timing = enable_timing;
  events_.insert(e);
  return e;
}

void HostBackend::event_destroy(int device, EventHandle event) {
  check_device(device);
  std::lock_guard<std::mutex> g(mu_);
  Event* e = event_locked(event);
  events_.erase(e);
  delete e;
}

void HostBackend::event_record(int device, EventHandle event, StreamHandle stream) {
  check_device(device);
  std::lock_guard<std::mutex> g(mu_);
  Event* e = event_locked(event);
  Stream& s = stream_locked(stream);
  e->stream = stream;
  e->tick = ++s.submitted;
  e->time_ms = now_ms();
}

bool HostBackend::event_query(int device, EventHandle event) {
  check_device(device);
  std::lock_guard<std::mutex> g(mu_);
  Event* e = event_locked(event);
  if (e->tick == 0) return true;
  auto it = streams_.find(e->stream);
  return it == streams_.end() || it->second.completed >= e->tick;
}

void HostBackend::event_synchronize(int device, EventHandle event) {
  check_device(device);
  std::lock_guard<std::mutex> g(mu_);
  Event* e = event_locked(event);
  auto it = streams_.find(e->stream);
  if (e->tick != 0 && it != streams_.end() && it->second.completed < e->tick)
    it->second.completed = e->tick;
}

float HostBackend::event_elapsed_ms(int device, EventHandle start, EventHandle end) {
  check_device(device);
  std::lock_guard<std::mutex> g(mu_);
  Event* a = event_locked(start);
  Event* b = event_locked(end);
  EMBER_CHECK(a->timing && b->timing, std::runtime_error,
              "Both events must be created with argument 'enable_timing=True'.");
  EMBER_CHECK(a->tick != 0 && b->tick != 0, std::runtime_error,
              "Both events must be recorded before calculating elapsed time.");
  return static_cast<float>(b->time_ms - a->time_ms);
}

void HostBackend::memcpy_async(int device, void* dst, const void* src, size_t nbytes,
                               StreamHandle) {
  check_device(device);
  if (nbytes) std::memmove(dst, src, nbytes);
}

void HostBackend::memset_async(int device, void* dst, int value, size_t nbytes, StreamHandle) {
  check_device(device);
  if (nbytes) std::memset(dst, value, nbytes);
}

void* HostBackend::host_alloc(size_t nbytes) {
  return std::aligned_alloc(64, (std::max<size_t>(nbytes, 1) + 63) / 64 * 64);
}

void HostBackend::host_free(void* ptr) { std::free(ptr); }

}  // namespace ember::cuda
