// parallel.h - ember's intra-op thread pool.
//
// Design: a fixed set of worker threads, grown lazily to get_num_threads() - 1 (the calling thread
// always takes chunk 0). parallel_for splits a range statically into balanced contiguous chunks and
// hands chunk i to worker i-1 through a per-worker "epoch" word: no queue, no allocation per call.
// Workers spin briefly after each job (small back-to-back ops stay cheap), then sleep on a condition
// variable. We do not use OpenMP: GNU OpenMP's pool hangs in a child after fork(), which data-loader
// workers and ember.multiprocessing rely on. Here a pthread_atfork child handler simply forgets the
// parent's pool (its threads do not exist in the child) and a new one is created on first use.
// The pool is heap-allocated and never destroyed, so process exit cannot deadlock on it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>

namespace ember {

// The work worth a chunk of parallel_for: about this many elements (fewer and the hand-off to a
// worker costs more than the chunk).
constexpr int64_t kGrainSize = 32768;

// parallel_for's grain for items (rows, planes, positions) of `per_item` elements each: chunks of
// about kGrainSize elements, at least one item.
inline int64_t grain_for(int64_t per_item) {
  return std::max<int64_t>(1, kGrainSize / std::max<int64_t>(per_item, 1));
}

// Number of threads parallel_for may use (the caller included). Defaults to EMBER_NUM_THREADS, else
// OMP_NUM_THREADS, else the CPUs this process may run on; always >= 1.
int get_num_threads();

// Sets the thread count (n >= 1, else std::invalid_argument). Workers are created on the next
// parallel_for that needs them; surplus workers from a larger earlier setting just stay asleep.
void set_num_threads(int n);
// Flushes denormal floats to zero (results and inputs: MXCSR's FTZ and DAZ on x86-64, FPCR's FZ
// on aarch64) in the calling thread and in the pool's workers (each before its next chunk), as
// torch.set_flush_denormal; false (and nothing changed) where the CPU has no such mode.
bool set_flush_denormal(bool on);

// True while the current thread runs a chunk of a parallel_for that was dispatched to the pool.
bool in_parallel_region();

// Index of the chunk the current thread runs inside a parallel region, in [0, get_num_threads());
// 0 outside one. Lets reductions keep one accumulator per chunk without locking.
int get_thread_num();

namespace detail {
// Non-owning, allocation-free reference to a callable taking (begin, end).
struct RangeFn {
  const void* ctx;
  void (*call)(const void* ctx, int64_t begin, int64_t end);
};
void parallel_run(int64_t begin, int64_t end, int64_t grain, RangeFn fn);
}  // namespace detail

// Splits [begin, end) into at most get_num_threads() contiguous chunks of at least `grain`
// elements and runs f(chunk_begin, chunk_end) on the pool, the calling thread taking one chunk.
// Runs f(begin, end) inline when end - begin <= grain, when there is one thread, when already inside
// a parallel region (no nested parallelism), or when another thread is using the pool right now.
// Does nothing for an empty range. An exception thrown by any chunk is rethrown in the caller after
// all chunks have finished (the first one thrown wins). Above `grain` (the range is not run as one
// small piece), the calling thread gives up the GIL while the range runs (runtime/gil.h), so `f`
// must not touch Python. Several threads may call at once: one of them gets the pool, the others
// run their ranges on their own thread.
void parallel_for(int64_t begin, int64_t end, int64_t grain,
                  const std::function<void(int64_t, int64_t)>& f);

// Same, for any callable: avoids building a std::function (which may allocate for big lambdas).
template <class F>
inline void parallel_for(int64_t begin, int64_t end, int64_t grain, const F& f) {
  if (begin >= end) return;
  if (end - begin <= grain) {  // the common small-op case never leaves the header
    f(begin, end);
    return;
  }
  detail::RangeFn fn{static_cast<const void*>(&f), [](const void* ctx, int64_t b, int64_t e) {
                       (*static_cast<const F*>(ctx))(b, e);
                     }};
  detail::parallel_run(begin, end, grain, fn);
}

}  // namespace ember
