// parallel.cpp - see parallel.h for the design.
//
// Hand-off protocol: the dispatcher writes the job, then stores a fresh epoch into each chosen
// worker's slot; a worker that sees its epoch change runs its chunk and decrements `remaining`.
// The dispatcher returns only when `remaining` is zero, so a job is never rewritten while a worker
// still reads it. Sleeping uses the "flag + mutex + condvar" pattern with seq_cst atomics on both
// sides (waiter: set sleeping, re-check; waker: publish, check sleeping), so no wake-up is lost and
// the waker touches the mutex only when someone really sleeps.
#include "runtime/parallel.h"

#include <pthread.h>
#include <signal.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include "runtime/gil.h"

namespace ember {
namespace {

// set_flush_denormal's mode (-1: never set), applied by each worker before its next chunk.
std::atomic<int> g_flush_denormal{-1};

// FTZ (flush results) and DAZ (read inputs as zero) in this thread's MXCSR; on aarch64 FPCR's FZ
// bit, which does both.
bool apply_flush_denormal(bool on) {
#if defined(__x86_64__) || (defined(__i386__) && defined(__SSE__))
  constexpr unsigned kBits = 0x8040;  // FTZ is bit 15, DAZ bit 6
  const unsigned csr = _mm_getcsr();
  _mm_setcsr(on ? (csr | kBits) : (csr & ~kBits));
  return true;
#elif defined(__aarch64__)
  constexpr uint64_t kFZ = uint64_t{1} << 24;
  uint64_t fpcr;
  asm volatile("mrs %0, fpcr" : "=r"(fpcr));
  fpcr = on ? (fpcr | kFZ) : (fpcr & ~kFZ);
  asm volatile("msr fpcr, %0" : : "r"(fpcr));
  return true;
#else
  (void)on;
  return false;
#endif
}

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

// How long an idle thread spins before it sleeps: covers the gap between small ops issued
// back-to-back from Python without burning a core for long when the process goes quiet.
constexpr int64_t kSpinNs = 100 * 1000;

thread_local bool tls_in_parallel = false;
thread_local int tls_thread_num = 0;

int parse_threads_env(const char* name) {
  const char* s = std::getenv(name);
  if (!s || !*s) return 0;
  char* endp = nullptr;
  long v = std::strtol(s, &endp, 10);  // OMP_NUM_THREADS may be a list ("4,2"): first entry counts
  if (endp == s || v < 1) return 0;
  return static_cast<int>(std::min<long>(v, 1 << 16));
}

int hardware_threads() {
#if defined(__linux__)
  cpu_set_t set;
  CPU_ZERO(&set);
  // Honour taskset / cgroup cpusets: hardware_concurrency() counts CPUs we may not run on.
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
#endif
  unsigned n = std::thread::hardware_concurrency();
  return n > 0 ? static_cast<int>(n) : 1;
}

int default_num_threads() {
  if (int n = parse_threads_env("EMBER_NUM_THREADS")) return n;
  if (int n = parse_threads_env("OMP_NUM_THREADS")) return n;
  return hardware_threads();
}

std::atomic<int> g_num_threads{0};  // 0: not yet decided (env is read lazily, not at load time)

// Waits for `ready`: a short burst of pause-spinning (hand-offs between busy threads take well
// under a microsecond), then spinning with sched_yield until spin_ns (so a peer that shares our
// core, e.g. on a loaded machine, gets to run), then sleeping on cv. See the protocol note above.
template <class Ready>
void spin_then_wait(const Ready& ready, int64_t spin_ns, std::atomic<bool>& sleeping,
                    std::mutex& mu, std::condition_variable& cv) {
  if (spin_ns > 0) {
    for (int i = 0; i < 256; ++i) {
      if (ready()) return;
      cpu_relax();
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::nanoseconds(spin_ns);
    for (uint32_t i = 1;; ++i) {
      if (ready()) return;
      std::this_thread::yield();
      if ((i & 7) == 0 && std::chrono::steady_clock::now() > deadline) break;
    }
  }
  std::unique_lock<std::mutex> lock(mu);
  sleeping.store(true);
  while (!ready()) cv.wait(lock);
  sleeping.store(false);
}

inline void wake(std::atomic<bool>& sleeping, std::mutex& mu, std::condition_variable& cv) {
  if (sleeping.load()) {
    { std::lock_guard<std::mutex> lock(mu); }  // orders us after the sleeper's predicate check
    cv.notify_one();
  }
}

struct alignas(64) Worker {
  std::atomic<uint64_t> epoch{0};  // a new value hands this worker chunk (index + 1) of the job
  std::atomic<bool> sleeping{false};
  std::mutex mu;
  std::condition_variable cv;
};

struct Job {
  detail::RangeFn fn{nullptr, nullptr};
  int64_t begin = 0, base = 0, extra = 0;  // chunk i: base elements, one more for i < extra
  std::atomic<bool> failed{false};
  std::exception_ptr error;

  void run_chunk(int64_t i) {
    int64_t b = begin + i * base + std::min(i, extra);
    int64_t e = b + base + (i < extra ? 1 : 0);
    tls_thread_num = static_cast<int>(i);
    try {
      fn.call(fn.ctx, b, e);
    } catch (...) {
      if (!failed.exchange(true)) error = std::current_exception();
    }
  }
};

struct Pool;
void worker_main(Pool* pool, Worker* w, int index);

struct Pool {
  std::mutex dispatch;  // held by the one caller currently using the pool
  std::vector<std::unique_ptr<Worker>> workers;
  uint64_t epoch = 0;
  Job job;
  std::atomic<int64_t> spin_ns{kSpinNs};
  const int64_t cores = hardware_threads();  // looked up once: it is a system call

  alignas(64) std::atomic<int64_t> remaining{0};
  std::atomic<bool> caller_sleeping{false};
  std::mutex done_mu;
  std::condition_variable done_cv;

  // Called with `dispatch` held. Returns how many workers are usable (may fall short if the
  // system refuses to create threads; we then just run with fewer).
  int64_t ensure_workers(int64_t want) {
    while (static_cast<int64_t>(workers.size()) < want) {
      auto w = std::make_unique<Worker>();
      try {
        std::thread(worker_main, this, w.get(), static_cast<int>(workers.size())).detach();
      } catch (const std::system_error&) {
        break;
      }
      workers.push_back(std::move(w));
    }
    // Spinning only pays when every thread has a core; oversubscribed, it steals from the others.
    spin_ns.store(want + 1 <= cores ? kSpinNs : 0, std::memory_order_relaxed);
    return std::min<int64_t>(want, static_cast<int64_t>(workers.size()));
  }
};

void worker_main(Pool* pool, Worker* w, int index) {
  // Leave asynchronous signals (SIGINT, SIGCHLD, ...) to the application's own threads.
  sigset_t set;
  sigfillset(&set);
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGABRT}) sigdelset(&set, sig);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);

  tls_in_parallel = true;  // a worker only ever runs chunks: nested parallel_for runs inline
  uint64_t seen = 0;
  int denormal_mode = -1;
  for (;;) {
    spin_then_wait([&] { return w->epoch.load() != seen; },
                   pool->spin_ns.load(std::memory_order_relaxed), w->sleeping, w->mu, w->cv);
    seen = w->epoch.load();
    const int want = g_flush_denormal.load(std::memory_order_relaxed);
    if (want != denormal_mode) {  // set_flush_denormal was called since this worker's last chunk
      apply_flush_denormal(want == 1);
      denormal_mode = want;
    }
    pool->job.run_chunk(index + 1);
    if (pool->remaining.fetch_sub(1) == 1)
      wake(pool->caller_sleeping, pool->done_mu, pool->done_cv);
  }
}

// The live pool. Never deleted: detached workers may still sleep inside it at exit, and in a
// forked child the old one is simply abandoned (its threads are gone, its mutexes may be locked).
std::atomic<Pool*> g_pool{nullptr};
std::mutex g_pool_mu;  // guards creation of g_pool; held across fork() so the child gets it unlocked

void atfork_prepare() { g_pool_mu.lock(); }
void atfork_parent() { g_pool_mu.unlock(); }
Pool* g_abandoned = nullptr;  // keeps a forked child's inherited pool reachable (leak checkers)

void atfork_child() {
  // Leak the parent's pool untouched (its threads are gone, its locks may be held) and make a
  // fresh one on first use.
  if (Pool* old = g_pool.load(std::memory_order_relaxed)) g_abandoned = old;
  g_pool.store(nullptr, std::memory_order_relaxed);
  g_pool_mu.unlock();
}

Pool* get_pool() {
  Pool* p = g_pool.load(std::memory_order_acquire);
  if (p) return p;
  static std::once_flag atfork_once;
  std::call_once(atfork_once, [] { pthread_atfork(atfork_prepare, atfork_parent, atfork_child); });
  std::lock_guard<std::mutex> lock(g_pool_mu);
  p = g_pool.load(std::memory_order_relaxed);
  if (!p) {
    p = new Pool();
    g_pool.store(p, std::memory_order_release);
  }
  return p;
}

struct RegionGuard {
  bool prev_in;
  int prev_num;
  RegionGuard() : prev_in(tls_in_parallel), prev_num(tls_thread_num) { tls_in_parallel = true; }
  ~RegionGuard() {
    tls_in_parallel = prev_in;
    tls_thread_num = prev_num;
  }
};

}  // namespace

bool set_flush_denormal(bool on) {
  if (!apply_flush_denormal(on)) return false;
  g_flush_denormal.store(on ? 1 : 0, std::memory_order_relaxed);
  return true;
}

int get_num_threads() {
  int n = g_num_threads.load(std::memory_order_relaxed);
  if (n > 0) return n;
  int expected = 0;
  g_num_threads.compare_exchange_strong(expected, default_num_threads());
  return g_num_threads.load(std::memory_order_relaxed);
}

void set_num_threads(int n) {
  if (n < 1)
    throw std::invalid_argument("ember.set_num_threads: expected a positive number of threads, got " +
                                std::to_string(n));
  g_num_threads.store(n, std::memory_order_relaxed);
}

bool in_parallel_region() { return tls_in_parallel; }

int get_thread_num() { return tls_in_parallel ? tls_thread_num : 0; }

namespace detail {

void parallel_run(int64_t begin, int64_t end, int64_t grain, RangeFn fn) {
  if (begin >= end) return;
  const int64_t n = end - begin;
  grain = std::max<int64_t>(grain, 1);
  if (n <= grain || tls_in_parallel) {  // small, or nested (the outer call decided about the GIL)
    fn.call(fn.ctx, begin, end);
    return;
  }
  // A range the caller found worth splitting over threads is long enough to let other Python
  // threads run meanwhile, also when it runs on this thread alone.
  GilRelease nogil;
  const int64_t nthreads = get_num_threads();
  if (nthreads <= 1) {
    fn.call(fn.ctx, begin, end);
    return;
  }
  // n / grain chunks at most, so that the balanced split gives every chunk >= grain elements.
  int64_t chunks = std::min(nthreads, n / grain);
  if (chunks <= 1) {
    fn.call(fn.ctx, begin, end);
    return;
  }

  Pool* pool = get_pool();
  std::unique_lock<std::mutex> busy(pool->dispatch, std::try_to_lock);
  if (!busy.owns_lock()) {  // another thread owns the pool: run serially rather than queue behind it
    fn.call(fn.ctx, begin, end);
    return;
  }
  chunks = std::min(chunks, pool->ensure_workers(nthreads - 1) + 1);
  if (chunks <= 1) {
    busy.unlock();
    fn.call(fn.ctx, begin, end);
    return;
  }

  Job& job = pool->job;
  job.fn = fn;
  job.begin = begin;
  job.base = n / chunks;
  job.extra = n % chunks;
  pool->remaining.store(chunks - 1, std::memory_order_relaxed);
  const uint64_t epoch = ++pool->epoch;
  for (int64_t i = 0; i + 1 < chunks; ++i) {
    Worker* w = pool->workers[i].get();
    w->epoch.store(epoch);  // seq_cst: publishes the job and pairs with the sleeping check
    wake(w->sleeping, w->mu, w->cv);
  }

  {
    RegionGuard guard;
    job.run_chunk(0);
  }
  spin_then_wait([pool] { return pool->remaining.load() == 0; },
                 pool->spin_ns.load(std::memory_order_relaxed), pool->caller_sleeping,
                 pool->done_mu, pool->done_cv);

  std::exception_ptr error;
  if (job.failed.load()) {
    error = std::move(job.error);
    job.error = nullptr;
    job.failed.store(false);
  }
  busy.unlock();
  if (error) std::rethrow_exception(error);
}

}  // namespace detail

void parallel_for(int64_t begin, int64_t end, int64_t grain,
                  const std::function<void(int64_t, int64_t)>& f) {
  if (begin >= end) return;
  detail::RangeFn fn{static_cast<const void*>(&f), [](const void* ctx, int64_t b, int64_t e) {
                       (*static_cast<const std::function<void(int64_t, int64_t)>*>(ctx))(b, e);
                     }};
  detail::parallel_run(begin, end, grain, fn);
}

}  // namespace ember
