// gil.h - long kernels run without Python's global interpreter lock (the GIL).
//
// The core knows nothing of Python: the binding layer installs two hooks at import time
// (set_gil_hooks), and a GilRelease scope calls them. A scope releases the GIL only when all of
// these hold: the caller says the work is long (each kernel decides with the size from which it
// splits its work over threads, so a small op never pays for handing the GIL over), hooks are
// installed, release is enabled, the current thread holds the GIL, and it holds no
// GilPinningMutex. Otherwise it does nothing, so scopes nest freely and pool workers (which never
// hold the GIL) pass through them. parallel_for releases the GIL around every range it does not
// run inline as one small piece, which covers most kernels; the kernels that run long on one
// thread (products, reductions, sorting, random draws, ...) open a scope at their entry.
//
// Inside a scope, code must not touch Python: no Python objects, no Python callbacks, no Python
// errors or warnings. Core code never does; the few core paths that reach Python (the CUDA copy
// hooks, deleters of memory borrowed from NumPy or DLPack, the autograd slot's destructor) take
// the GIL themselves.
#pragma once

#include <mutex>

namespace ember {

// Installed by the binding layer: release() gives up the GIL and returns what restore() needs
// to take it back, or nullptr when this thread does not hold it (restore is then not called).
struct GilHooks {
  void* (*release)() = nullptr;
  void (*restore)(void* state) = nullptr;
};
void set_gil_hooks(GilHooks hooks);

// On by default. Off makes every scope a no-op (tests and benchmarks compare the two).
void set_gil_release_enabled(bool on);
bool gil_release_enabled();

namespace detail {
extern thread_local int tls_gil_pins;  // GilPinningMutex locks held by this thread
void* release_gil(bool even_if_disabled = false);  // the hook if installed (and enabled)
void restore_gil(void* state);
void kernel_started();   // a kernel scope gave up the GIL
void kernel_finished();  // ... and is about to take it back
}  // namespace detail

// Waits (at most `max_seconds`) until no kernel runs outside the GIL. Called once the interpreter
// is finalizing, before the process's exit handlers run: a daemon thread still inside a kernel
// would otherwise compute on while those handlers tear down what it uses (OpenBLAS frees its
// buffers in its own exit handler). Threads that leave their kernel then park in restore (see
// bind_runtime.cpp). Returns whether everything finished in time.
bool wait_for_kernels_outside_gil(double max_seconds);

// Releases the GIL for its lifetime when `long_work` (see above); takes it back on exit, also
// when an exception leaves the scope (C++ exceptions become Python ones after the GIL is back).
class GilRelease {
 public:
  explicit GilRelease(bool long_work = true) {
    if (long_work && detail::tls_gil_pins == 0) state_ = detail::release_gil();
    if (state_) {
      counted_ = true;
      detail::kernel_started();
    }
  }
  // For a wait on something outside the core (a device, another process): released even while
  // set_gil_release_enabled(false), which is about kernels.
  struct Wait {};
  explicit GilRelease(Wait) {
    if (detail::tls_gil_pins == 0) state_ = detail::release_gil(true);
  }
  ~GilRelease() {
    if (counted_) detail::kernel_finished();
    if (state_) detail::restore_gil(state_);
  }
  GilRelease(const GilRelease&) = delete;
  GilRelease& operator=(const GilRelease&) = delete;

 private:
  void* state_ = nullptr;
  bool counted_ = false;  // a kernel scope (not a Wait), counted for wait_for_kernels_outside_gil
};

// A mutex that threads may lock while they hold the GIL (the random generator's: Python code
// seeds it). While a thread holds one, GilRelease scopes on that thread do nothing: releasing
// would mean taking the GIL back with the mutex held, and a thread waiting for the mutex with
// the GIL held would then wait forever. So: release the GIL first, then lock (see random_ops).
class GilPinningMutex {
 public:
  void lock() {
    mu_.lock();
    ++detail::tls_gil_pins;
  }
  bool try_lock() {
    if (!mu_.try_lock()) return false;
    ++detail::tls_gil_pins;
    return true;
  }
  void unlock() {
    --detail::tls_gil_pins;
    mu_.unlock();
  }

 private:
  std::mutex mu_;
};

}  // namespace ember
