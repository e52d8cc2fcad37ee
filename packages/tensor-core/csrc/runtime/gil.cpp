// gil.cpp - see gil.h.
#include "runtime/gil.h"

#include <atomic>
#include <chrono>
#include <thread>

namespace ember {
namespace {
std::atomic<void* (*)()> g_release{nullptr};
std::atomic<void (*)(void*)> g_restore{nullptr};
std::atomic<bool> g_enabled{true};
std::atomic<int> g_kernels_outside_gil{0};
}  // namespace

namespace detail {
thread_local int tls_gil_pins = 0;

void* release_gil(bool even_if_disabled) {
  if (!even_if_disabled && !g_enabled.load(std::memory_order_relaxed)) return nullptr;
  auto release = g_release.load(std::memory_order_acquire);
  return release ? release() : nullptr;
}

void restore_gil(void* state) { g_restore.load(std::memory_order_acquire)(state); }

void kernel_started() { g_kernels_outside_gil.fetch_add(1, std::memory_order_relaxed); }
void kernel_finished() { g_kernels_outside_gil.fetch_sub(1, std::memory_order_release); }
}  // namespace detail

void set_gil_hooks(GilHooks hooks) {
  // restore first: a scope that sees the new release hook must find its partner
  g_restore.store(hooks.restore, std::memory_order_release);
  g_release.store(hooks.release, std::memory_order_release);
}

bool wait_for_kernels_outside_gil(double max_seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(max_seconds);
  while (g_kernels_outside_gil.load(std::memory_order_acquire) > 0) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

void set_gil_release_enabled(bool on) { g_enabled.store(on, std::memory_order_relaxed); }
bool gil_release_enabled() { return g_enabled.load(std::memory_order_relaxed); }

}  // namespace ember
