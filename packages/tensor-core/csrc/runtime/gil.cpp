// gil.cpp - see gil.h.
#include "runtime/gil.h"

#include <atomic>

namespace ember {
namespace {
std::atomic<void* (*)()> g_release{nullptr};
std::atomic<void (*)(void*)> g_restore{nullptr};
std::atomic<bool> g_enabled{true};
}  // namespace

namespace detail {
thread_local int tls_gil_pins = 0;

void* release_gil(bool even_if_disabled) {
  if (!even_if_disabled && !g_enabled.load(std::memory_order_relaxed)) return nullptr;
  auto release = g_release.load(std::memory_order_acquire);
  return release ? release() : nullptr;
}

void restore_gil(void* state) { g_restore.load(std::memory_order_acquire)(state); }
}  // namespace detail

void set_gil_hooks(GilHooks hooks) {
  // restore first: a scope that sees the new release hook must find its partner
  g_restore.store(hooks.restore, std::memory_order_release);
  g_release.store(hooks.release, std::memory_order_release);
}

void set_gil_release_enabled(bool on) { g_enabled.store(on, std::memory_order_relaxed); }
bool gil_release_enabled() { return g_enabled.load(std::memory_order_relaxed); }

}  // namespace ember
