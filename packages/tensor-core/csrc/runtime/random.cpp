// random.cpp - see random.h. Engine and distributions follow PyTorch's CPU generator so that
// seeded streams agree; the saved state is ember's own little-endian byte layout.
#include "runtime/random.h"

#include <vector>

#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <random>
#include <stdexcept>
#include <vector>

namespace ember {
namespace {

constexpr double kPi = 3.14159265358979323846;

// Saved-state layout: magic, version, initial seed, position, cached normal, engine words.
constexpr char kMagic[4] = {'E', 'R', 'N', 'G'};
constexpr uint32_t kVersion = 1;
constexpr size_t kStateBytes = 4 + 4 + 8 + 4 + 4 + 8 + 4 * Generator::kN;

void put_u32(std::string& s, uint32_t v) {
  for (int i = 0; i < 4; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}
void put_u64(std::string& s, uint64_t v) {
  for (int i = 0; i < 8; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}
uint32_t get_u32(const unsigned char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(p[i]) << (8 * i);
  return v;
}
uint64_t get_u64(const unsigned char* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return v;
}

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

uint64_t nondeterministic_seed() {
  uint64_t s;
  try {
    std::random_device rd;
    s = (static_cast<uint64_t>(rd()) << 32) | rd();
  } catch (...) {  // no entropy source: fall back to time, pid and an address
    static int anchor;
    s = splitmix64(static_cast<uint64_t>(
                       std::chrono::high_resolution_clock::now().time_since_epoch().count()) ^
                   (static_cast<uint64_t>(getpid()) << 32) ^
                   reinterpret_cast<uintptr_t>(&anchor));
  }
  return s & ((uint64_t(1) << 53) - 1);  // exactly representable as a Python float, like PyTorch
}

// PyTorch's vectorisable Box-Muller over 16 uniforms already in data[0..16).
template <class T>
void normal_fill_16(T* data, T mean, T std) {
  for (int j = 0; j < 8; ++j) {
    const T u1 = 1 - data[j];  // [0, 1) -> (0, 1] for the log
    const T u2 = data[j + 8];
    const T radius = std::sqrt(-2 * std::log(u1));
    const T theta = static_cast<T>(2.0 * kPi * u2);
    data[j] = radius * std::cos(theta) * std + mean;
    data[j + 8] = radius * std::sin(theta) * std + mean;
  }
}

template <class T>
T next_uniform01(Generator& g);
template <>
float next_uniform01<float>(Generator& g) { return g.next_float(); }
template <>
double next_uniform01<double>(Generator& g) { return g.next_double(); }

template <class T>
void fill_uniform_impl(Generator& gen, T* dst, int64_t n, double lo, double hi) {
  if (n <= 0) return;
  const T from = static_cast<T>(lo), span = static_cast<T>(hi) - static_cast<T>(lo);
  std::lock_guard<GilPinningMutex> lock(gen.mutex);
  for (int64_t i = 0; i < n; ++i) dst[i] = next_uniform01<T>(gen) * span + from;
}

template <class T>
void fill_normal_impl(Generator& gen, T* dst, int64_t n, double mean, double std) {
  if (n <= 0) return;
  std::lock_guard<GilPinningMutex> lock(gen.mutex);
  if (n < 16) {  // serial path: one (cached) Box-Muller draw per element
    for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<T>(gen.next_normal() * std + mean);
    return;
  }
  const T m = static_cast<T>(mean), s = static_cast<T>(std);
  for (int64_t i = 0; i < n; ++i) dst[i] = next_uniform01<T>(gen);
  for (int64_t i = 0; i + 16 <= n; i += 16) normal_fill_16(dst + i, m, s);
  if (n % 16 != 0) {  // redo the last 16 with fresh uniforms so the tail is a full block
    T* tail = dst + n - 16;
    for (int j = 0; j < 16; ++j) tail[j] = next_uniform01<T>(gen);
    normal_fill_16(tail, m, s);
  }
}

}  // namespace

Generator::Generator(uint64_t seed) { seed_engine(seed); }

void Generator::seed_engine(uint64_t seed) {
  initial_seed_ = seed;
  state_[0] = static_cast<uint32_t>(seed);  // the engine is 32-bit: low bits only, as PyTorch
  for (int i = 1; i < kN; ++i)
    state_[i] = 1812433253u * (state_[i - 1] ^ (state_[i - 1] >> 30)) + static_cast<uint32_t>(i);
  index_ = kN;
  has_next_normal_ = false;
  next_normal_ = 0.0;
}

void Generator::refill() {
  constexpr int kM = 397;
  constexpr uint32_t kUpper = 0x80000000u, kLower = 0x7FFFFFFFu, kMatrix = 0x9908B0DFu;
  int i = 0;
  for (; i < kN - kM; ++i) {
    uint32_t y = (state_[i] & kUpper) | (state_[i + 1] & kLower);
    state_[i] = state_[i + kM] ^ (y >> 1) ^ ((y & 1u) ? kMatrix : 0u);
  }
  for (; i < kN - 1; ++i) {
    uint32_t y = (state_[i] & kUpper) | (state_[i + 1] & kLower);
    state_[i] = state_[i + (kM - kN)] ^ (y >> 1) ^ ((y & 1u) ? kMatrix : 0u);
  }
  uint32_t y = (state_[kN - 1] & kUpper) | (state_[0] & kLower);
  state_[kN - 1] = state_[kM - 1] ^ (y >> 1) ^ ((y & 1u) ? kMatrix : 0u);
  index_ = 0;
}

void Generator::manual_seed(uint64_t seed) {
  std::lock_guard<GilPinningMutex> lock(mutex);
  seed_engine(seed);
}

uint64_t Generator::seed() {
  const uint64_t s = nondeterministic_seed();
  std::lock_guard<GilPinningMutex> lock(mutex);
  seed_engine(s);
  return s;
}

uint64_t Generator::initial_seed() {
  std::lock_guard<GilPinningMutex> lock(mutex);
  return initial_seed_;
}

double Generator::next_normal() {
  if (has_next_normal_) {
    has_next_normal_ = false;
    return next_normal_;
  }
  const double u1 = next_double();
  const double u2 = next_double();
  const double r = std::sqrt(-2.0 * std::log1p(-u2));  // 1 - u2 is in (0, 1]: log is finite
  const double theta = 2.0 * kPi * u1;
  next_normal_ = r * std::sin(theta);
  has_next_normal_ = true;
  return r * std::cos(theta);
}

std::string Generator::get_state() {
  std::lock_guard<GilPinningMutex> lock(mutex);
  std::string s;
  s.reserve(kStateBytes);
  s.append(kMagic, sizeof kMagic);
  put_u32(s, kVersion);
  put_u64(s, initial_seed_);
  put_u32(s, index_);
  put_u32(s, has_next_normal_ ? 1u : 0u);
  uint64_t nb;
  std::memcpy(&nb, &next_normal_, sizeof nb);
  put_u64(s, nb);
  for (int i = 0; i < kN; ++i) put_u32(s, state_[i]);
  return s;
}

// (RuntimeError for a bad state, as torch's)
void Generator::set_state(const std::string& state) {
  const std::string what = "ember.Generator.set_state: ";
  if (state.size() != kStateBytes)
    throw std::runtime_error(what + "expected a state of " + std::to_string(kStateBytes) +
                             " bytes (from get_state()), got " + std::to_string(state.size()));
  const auto* p = reinterpret_cast<const unsigned char*>(state.data());
  if (std::memcmp(p, kMagic, sizeof kMagic) != 0 || get_u32(p + 4) != kVersion)
    throw std::runtime_error(what + "the bytes are not a generator state (bad header)");
  const uint64_t seed = get_u64(p + 8);
  const uint32_t index = get_u32(p + 16);
  const uint32_t has_normal = get_u32(p + 20);
  const uint64_t nb = get_u64(p + 24);
  double normal;
  std::memcpy(&normal, &nb, sizeof normal);
  if (index > static_cast<uint32_t>(kN) || has_normal > 1 || !std::isfinite(normal))
    throw std::runtime_error(what + "corrupt generator state (bad position or cached normal)");
  uint32_t words[kN];
  uint32_t any = 0;
  for (int i = 0; i < kN; ++i) {
    words[i] = get_u32(p + 32 + 4 * i);
    any |= i == 0 ? (words[i] & 0x80000000u) : words[i];  // only the top bit of word 0 is used
  }
  if (!any) throw std::runtime_error(what + "corrupt generator state (all-zero engine)");

  std::lock_guard<GilPinningMutex> lock(mutex);
  std::memcpy(state_, words, sizeof words);
  index_ = index;
  initial_seed_ = seed;
  has_next_normal_ = has_normal != 0;
  next_normal_ = normal;
}

namespace {
// Atomic so the fork handlers, which may run on another thread, see the finished generator.
std::atomic<Generator*> g_default_gen{nullptr};
void lock_default() { g_default_gen.load(std::memory_order_acquire)->mutex.lock(); }
void unlock_default() { g_default_gen.load(std::memory_order_acquire)->mutex.unlock(); }
}  // namespace

Generator& default_generator() {
  static Generator* gen = [] {
    auto* g = new Generator(Generator::kDefaultSeed);  // never destroyed: usable during exit
    g_default_gen.store(g, std::memory_order_release);
    // Hold the lock across fork() so a child never inherits it locked by a vanished thread.
    pthread_atfork(lock_default, unlock_default, unlock_default);
    return g;
  }();
  return *gen;
}

namespace {
std::mutex g_cuda_gens_mutex;
std::vector<Generator*> g_cuda_gens;  // never destroyed, as the CPU default
uint64_t g_cuda_seed = Generator::kDefaultSeed;
}  // namespace

Generator& cuda_default_generator(int index) {
  std::lock_guard<std::mutex> g(g_cuda_gens_mutex);
  if (index >= static_cast<int>(g_cuda_gens.size())) g_cuda_gens.resize(index + 1, nullptr);
  if (!g_cuda_gens[index]) {
    g_cuda_gens[index] = new Generator(g_cuda_seed);
    g_cuda_gens[index]->cuda_index = index;
  }
  return *g_cuda_gens[index];
}

void seed_all_cuda_generators(uint64_t seed) {
  std::lock_guard<std::mutex> g(g_cuda_gens_mutex);
  g_cuda_seed = seed;
  for (Generator* gen : g_cuda_gens)
    if (gen) gen->manual_seed(seed);
}

void fill_uniform(Generator& gen, float* dst, int64_t n, double lo, double hi) {
  fill_uniform_impl(gen, dst, n, lo, hi);
}
void fill_uniform(Generator& gen, double* dst, int64_t n, double lo, double hi) {
  fill_uniform_impl(gen, dst, n, lo, hi);
}
void fill_normal(Generator& gen, float* dst, int64_t n, double mean, double std) {
  fill_normal_impl(gen, dst, n, mean, std);
}
void fill_normal(Generator& gen, double* dst, int64_t n, double mean, double std) {
  fill_normal_impl(gen, dst, n, mean, std);
}

}  // namespace ember
