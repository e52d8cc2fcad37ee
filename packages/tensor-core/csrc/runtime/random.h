// random.h - ember's CPU random number generator.
//
// A 32-bit Mersenne Twister (mt19937), seeded and consumed the way PyTorch's CPU generator is:
// the seed's low 32 bits initialise the engine, floats take the low 24 bits of one draw, doubles
// the low 53 bits of two draws, and normals come from Box-Muller (the serial path caches the second
// value). So a seed gives the same uniform stream as torch.manual_seed does. The engine is our own
// (not std::mt19937) so its whole state can be saved and restored as bytes.
//
// Locking: manual_seed/seed/initial_seed/get_state/set_state lock `mutex` themselves. The next_*
// draws do not: hold `mutex` around a batch of draws (the fill_* helpers do this). Two threads
// may draw from one generator at once (long draws run without the GIL): each batch is whole.
// `mutex` pins the GIL (runtime/gil.h): a kernel that should draw without the GIL releases it
// before it locks the generator.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>

#include "runtime/gil.h"

namespace ember {

class Generator {
 public:
  static constexpr uint64_t kDefaultSeed = 67280421310721ULL;

  explicit Generator(uint64_t seed = kDefaultSeed);
  Generator(const Generator&) = delete;
  Generator& operator=(const Generator&) = delete;

  void manual_seed(uint64_t seed);
  // Seeds from a non-deterministic source and returns the seed (53 bits, so it survives a double).
  uint64_t seed();
  uint64_t initial_seed();

  // Opaque, versioned byte string holding the full state (engine, position, cached normal).
  std::string get_state();
  // Restores a state from get_state(); std::invalid_argument if the bytes are not one.
  void set_state(const std::string& state);

  uint32_t next_u32() {
    if (index_ >= kN) refill();
    uint32_t y = state_[index_++];
    y ^= y >> 11;
    y ^= (y << 7) & 0x9D2C5680u;
    y ^= (y << 15) & 0xEFC60000u;
    y ^= y >> 18;
    return y;
  }
  // First draw in the high half, as PyTorch does.
  uint64_t next_u64() {
    uint64_t hi = next_u32();
    return (hi << 32) | next_u32();
  }
  // Uniform in [0, 1) with 53 random bits.
  double next_double() {
    return static_cast<double>(next_u64() & ((uint64_t(1) << 53) - 1)) * (1.0 / 9007199254740992.0);
  }
  // Uniform in [0, 1) with 24 random bits.
  float next_float() {
    return static_cast<float>(next_u32() & ((1u << 24) - 1)) * (1.0f / 16777216.0f);
  }
  // Standard normal (Box-Muller); the second value of each pair is cached for the next call.
  double next_normal();

  GilPinningMutex mutex;

  // The CUDA device whose tensors this generator draws for (-1: the CPU). CUDA numbers are drawn
  // on the host and copied, so a CUDA generator is the same engine with another tag.
  int cuda_index = -1;

  static constexpr int kN = 624;

 private:
  void seed_engine(uint64_t seed);  // no locking
  void refill();

  uint32_t state_[kN];
  uint32_t index_ = kN;
  uint64_t initial_seed_ = 0;
  bool has_next_normal_ = false;
  double next_normal_ = 0.0;
};

// The process-wide generator behind ember.manual_seed & co. Seeded with kDefaultSeed; created on
// first use and never destroyed. A forked child inherits its state (reseed workers explicitly).
Generator& default_generator();

// The default generator of CUDA device `index` (torch.cuda.default_generators[index]): created on
// first use, seeded with kDefaultSeed or with the last seed_all_devices() seed, never destroyed.
Generator& cuda_default_generator(int index);
// Seeds every CUDA default generator, also those created later (ember.manual_seed seeds all
// devices, as torch.manual_seed does).
void seed_all_cuda_generators(uint64_t seed);

// Fill dst[0..n) with uniform values in [lo, hi) / normal values; they lock gen.mutex.
void fill_uniform(Generator& gen, float* dst, int64_t n, double lo, double hi);
void fill_uniform(Generator& gen, double* dst, int64_t n, double lo, double hi);
void fill_normal(Generator& gen, float* dst, int64_t n, double mean, double std);
void fill_normal(Generator& gen, double* dst, int64_t n, double mean, double std);

}  // namespace ember
