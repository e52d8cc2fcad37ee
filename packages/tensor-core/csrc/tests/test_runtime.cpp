// test_runtime.cpp - standalone checks of the runtime components (thread pool, Half/BFloat16,
// generator, run-time loaded BLAS). No framework: main() with checks, non-zero exit on failure.
// Usage: test_runtime [path/to/libscipy_openblas.so]   (BLAS products are checked only with a path)
// EMBER_TEST_NO_FORK=1 skips the fork tests (ThreadSanitizer cannot follow a multi-threaded fork).
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "core/half.h"
#include "runtime/blas.h"
#include "runtime/gil.h"
#include "runtime/onednn.h"
#include "runtime/parallel.h"
#include "runtime/random.h"

// A check that stays active under -DNDEBUG and reports where it failed.
#define CHECK(cond)                                                              \
  do {                                                                           \
    if (!(cond)) {                                                               \
      std::fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      std::exit(1);                                                              \
    }                                                                            \
  } while (0)

template <class E, class F>
bool throws(F&& f) {
  try {
    f();
  } catch (const E&) {
    return true;
  } catch (...) {
    return false;
  }
  return false;
}

using namespace ember;

// ---------------------------------------------------------------------------------------------
// parallel_for

static void test_parallel_basic() {
  CHECK(get_num_threads() >= 1);
  if (const char* env = std::getenv("EMBER_NUM_THREADS")) CHECK(get_num_threads() == std::atoi(env));
  CHECK(throws<std::invalid_argument>([] { set_num_threads(0); }));
  CHECK(throws<std::invalid_argument>([] { set_num_threads(-3); }));
  set_num_threads(4);  // more than the cores on small machines too: the pool must not care
  CHECK(get_num_threads() == 4);
  CHECK(!in_parallel_region());

  const int64_t n = 1000003;
  std::vector<std::atomic<int>> hits(n);
  std::atomic<int64_t> sum{0};
  std::atomic<int> calls{0};
  std::mutex mu;
  std::vector<std::pair<int64_t, int64_t>> chunks;
  std::set<std::thread::id> tids;
  parallel_for(0, n, 1000, [&](int64_t b, int64_t e) {
    CHECK(in_parallel_region());
    CHECK(get_thread_num() >= 0 && get_thread_num() < 4);
    int64_t s = 0;
    for (int64_t i = b; i < e; ++i) {
      s += i;
      hits[i].fetch_add(1, std::memory_order_relaxed);
    }
    sum += s;
    ++calls;
    std::lock_guard<std::mutex> g(mu);
    chunks.emplace_back(b, e);
    tids.insert(std::this_thread::get_id());
  });
  CHECK(!in_parallel_region());
  CHECK(sum.load() == n * (n - 1) / 2);
  for (int64_t i = 0; i < n; ++i) CHECK(hits[i].load() == 1);
  CHECK(calls.load() == 4);
  CHECK(tids.size() == 4);
  for (auto& c : chunks) CHECK(c.second - c.first >= 1000);

  // Offset range, and a range only slightly above the grain: chunks still >= grain.
  std::atomic<int64_t> cnt{0};
  parallel_for(10, 35, 10, [&](int64_t b, int64_t e) {
    CHECK(e - b >= 10);
    CHECK(b >= 10 && e <= 35);
    cnt += e - b;
  });
  CHECK(cnt.load() == 25);

  // Small range, one thread, grain covering all: inline on the caller, outside a region.
  auto me = std::this_thread::get_id();
  int inline_calls = 0;
  parallel_for(0, 100, 100, [&](int64_t b, int64_t e) {
    CHECK(b == 0 && e == 100);
    CHECK(std::this_thread::get_id() == me);
    ++inline_calls;
  });
  CHECK(inline_calls == 1);
  parallel_for(5, 5, 1, [&](int64_t, int64_t) { CHECK(false); });  // empty: not called
  set_num_threads(1);
  inline_calls = 0;
  parallel_for(0, 1 << 20, 1, [&](int64_t b, int64_t e) {
    CHECK(b == 0 && e == (1 << 20));
    ++inline_calls;
  });
  CHECK(inline_calls == 1);
  set_num_threads(4);

  // The std::function overload.
  std::atomic<int64_t> fsum{0};
  std::function<void(int64_t, int64_t)> fn = [&](int64_t b, int64_t e) { fsum += e - b; };
  parallel_for(0, 4096, 16, fn);
  CHECK(fsum.load() == 4096);
}

static void test_parallel_exceptions() {
  set_num_threads(4);
  for (int64_t thrower : {0, 3000}) {  // on the caller's chunk, then on a worker's chunk
    std::atomic<int> done{0};
    bool caught = false;
    try {
      parallel_for(0, 4000, 100, [&](int64_t b, int64_t e) {
        if (b <= thrower && thrower < e) throw std::runtime_error("chunk failed");
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        ++done;
      });
    } catch (const std::runtime_error& ex) {
      caught = std::string(ex.what()) == "chunk failed";
    }
    CHECK(caught);
    CHECK(done.load() == 3);  // the others all finished before the rethrow
  }
  // Every chunk throws: exactly one exception arrives, the pool stays usable.
  CHECK(throws<std::logic_error>(
      [] { parallel_for(0, 4000, 100, [](int64_t, int64_t) { throw std::logic_error("x"); }); }));
  std::atomic<int64_t> s{0};
  parallel_for(0, 4000, 100, [&](int64_t b, int64_t e) { s += e - b; });
  CHECK(s.load() == 4000);
}

static void test_parallel_nested() {
  set_num_threads(4);
  std::atomic<int> inner_calls{0};
  std::atomic<int64_t> inner_total{0};
  parallel_for(0, 4, 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      auto tid = std::this_thread::get_id();
      parallel_for(0, 100000, 10, [&](int64_t ib, int64_t ie) {
        CHECK(ib == 0 && ie == 100000);  // ran inline, in one piece, on this thread
        CHECK(std::this_thread::get_id() == tid);
        ++inner_calls;
        inner_total += ie - ib;
      });
    }
  });
  CHECK(inner_calls.load() == 4);
  CHECK(inner_total.load() == 400000);
}

static void test_parallel_stress() {
  set_num_threads(4);
  // Many tiny back-to-back jobs exercise the hand-off (spinning and sleeping both).
  std::vector<int64_t> out(64);
  for (int rep = 0; rep < 20000; ++rep) {
    parallel_for(0, 64, 16, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) out[i] = rep + i;
    });
    if (rep % 1000 == 0) std::this_thread::sleep_for(std::chrono::microseconds(300));  // let workers sleep
    for (int64_t i = 0; i < 64; i += 21) CHECK(out[i] == rep + i);
  }
  // Concurrent callers from several threads: each result must be complete and right.
  std::vector<std::thread> callers;
  std::atomic<int> bad{0};
  for (int t = 0; t < 4; ++t) {
    callers.emplace_back([&, t] {
      for (int rep = 0; rep < 500; ++rep) {
        std::atomic<int64_t> s{0};
        parallel_for(0, 10000 + t, 100, [&](int64_t b, int64_t e) { s += e - b; });
        if (s.load() != 10000 + t) ++bad;
      }
    });
  }
  for (auto& th : callers) th.join();
  CHECK(bad.load() == 0);

  // Rough dispatch cost, for information only (no assertion on time).
  for (int threads : {2, 4}) {
    set_num_threads(threads);
    const int reps = 20000;
    std::atomic<int64_t> sink{0};
    auto t0 = std::chrono::steady_clock::now();
    for (int rep = 0; rep < reps; ++rep)
      parallel_for(0, threads, 1,
                   [&](int64_t b, int64_t e) { sink.fetch_add(e - b, std::memory_order_relaxed); });
    auto us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    CHECK(sink.load() == int64_t(reps) * threads);
    std::printf("  parallel_for dispatch, %d threads on %u cpus: %.2f us per call\n", threads,
                std::thread::hardware_concurrency(), us / reps);
  }
  set_num_threads(4);
}

static void test_parallel_fork() {
  set_num_threads(4);
  std::atomic<int64_t> s{0};
  parallel_for(0, 100000, 100, [&](int64_t b, int64_t e) { s += e - b; });  // parent pool is live
  CHECK(s.load() == 100000);
  for (int round = 0; round < 3; ++round) {
    std::fflush(stdout);  // the child exits through exit(), which would flush our buffer again
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
      alarm(30);  // a hang becomes a failure instead of a stuck test
      std::atomic<int64_t> cs{0};
      std::mutex mu;
      std::set<std::thread::id> tids;
      parallel_for(0, 100000, 100, [&](int64_t b, int64_t e) {
        cs += e - b;
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        std::lock_guard<std::mutex> g(mu);
        tids.insert(std::this_thread::get_id());
      });
      if (cs.load() != 100000 || tids.size() != 4) _exit(3);
      // A grandchild as well: the child's fresh pool must survive fork too.
      std::fflush(stdout);
      pid_t gp = fork();
      if (gp == 0) {
        std::atomic<int64_t> gs{0};
        parallel_for(0, 5000, 10, [&](int64_t b, int64_t e) { gs += e - b; });
        std::exit(gs.load() == 5000 ? 0 : 4);
      }
      int gst = 0;
      if (gp < 0 || waitpid(gp, &gst, 0) != gp || !WIFEXITED(gst) || WEXITSTATUS(gst) != 0) _exit(5);
      std::exit(0);  // normal exit with live workers: static destructors must not hang
    }
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid);
    if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0))
      std::fprintf(stderr, "child status: exited=%d code=%d signaled=%d sig=%d\n", WIFEXITED(status),
                   WEXITSTATUS(status), WIFSIGNALED(status), WTERMSIG(status));
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    // The parent's pool still works after the fork.
    std::atomic<int64_t> ps{0};
    parallel_for(0, 100000, 100, [&](int64_t b, int64_t e) { ps += e - b; });
    CHECK(ps.load() == 100000);
  }
}

// fork() while another thread is inside parallel_for and holds the default generator's lock: the
// child must get a working pool and generator, not the parent's locked ones.
static void test_fork_while_busy() {
  set_num_threads(4);
  std::atomic<bool> stop{false};
  std::thread busy([&] {
    std::vector<float> buf(4096);
    while (!stop.load()) {
      parallel_for(0, 1 << 16, 256, [](int64_t, int64_t) {
        std::this_thread::sleep_for(std::chrono::microseconds(50));
      });
      fill_normal(default_generator(), buf.data(), 4096, 0.0, 1.0);
    }
  });
  for (int round = 0; round < 20; ++round) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    std::fflush(stdout);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
      alarm(30);
      std::atomic<int64_t> cs{0};
      parallel_for(0, 100000, 100, [&](int64_t b, int64_t e) { cs += e - b; });
      std::vector<double> v(100);
      fill_uniform(default_generator(), v.data(), 100, 0.0, 1.0);
      default_generator().manual_seed(1);
      _exit(cs.load() == 100000 ? 0 : 3);
    }
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  stop = true;
  busy.join();
}

// ---------------------------------------------------------------------------------------------
// GIL hooks (runtime/gil.h), with a mutex standing in for Python's lock

static std::mutex g_fake_gil;
static thread_local bool t_holds_fake_gil = false;
static std::atomic<int> g_releases{0}, g_restores{0};

static void* fake_release() {
  if (!t_holds_fake_gil) return nullptr;  // as the real hook: only the holder gives it up
  t_holds_fake_gil = false;
  ++g_releases;
  g_fake_gil.unlock();
  return &g_fake_gil;
}
static void fake_restore(void* state) {
  CHECK(state == &g_fake_gil);
  g_fake_gil.lock();
  t_holds_fake_gil = true;
  ++g_restores;
}

static void test_gil_release() {
  set_num_threads(4);
  set_gil_hooks({&fake_release, &fake_restore});
  g_fake_gil.lock();
  t_holds_fake_gil = true;
  auto counts = [] { return std::make_pair(g_releases.load(), g_restores.load()); };
  // Whether another thread could take the GIL now (asked from the caller or a pool worker).
  const auto caller = std::this_thread::get_id();
  auto gil_free = [caller] {
    if (std::this_thread::get_id() == caller) return !t_holds_fake_gil;
    if (!g_fake_gil.try_lock()) return false;
    g_fake_gil.unlock();
    return true;
  };

  // A range run as one small piece keeps the GIL; a longer one gives it up once (not per
  // chunk, not in workers, not again in a nested parallel_for), and takes it back.
  parallel_for(0, 100, 100, [&](int64_t, int64_t) { CHECK(!gil_free()); });
  CHECK(counts() == std::make_pair(0, 0));
  parallel_for(0, 4000, 100, [&](int64_t, int64_t) {
    CHECK(gil_free());
    parallel_for(0, 1000, 10, [](int64_t, int64_t) {});
  });
  CHECK(t_holds_fake_gil && counts() == std::make_pair(1, 1));
  // With one thread the range runs inline, still without the GIL.
  set_num_threads(1);
  parallel_for(0, 4000, 100, [&](int64_t, int64_t) { CHECK(gil_free()); });
  CHECK(counts() == std::make_pair(2, 2));
  set_num_threads(4);

  // Scopes: nested ones and short work do nothing; an exception leaves with the GIL taken back.
  {
    GilRelease outer;
    CHECK(!t_holds_fake_gil);
    GilRelease inner;
  }
  { GilRelease short_work(false); }
  CHECK(t_holds_fake_gil && counts() == std::make_pair(3, 3));
  CHECK(throws<std::logic_error>([] {
    parallel_for(0, 4000, 100, [](int64_t, int64_t) { throw std::logic_error("x"); });
  }));
  CHECK(t_holds_fake_gil && counts() == std::make_pair(4, 4));

  // Switched off, kernels keep the GIL; waits on the outside world still give it up.
  set_gil_release_enabled(false);
  CHECK(!gil_release_enabled());
  parallel_for(0, 4000, 100, [&](int64_t, int64_t) { CHECK(!gil_free()); });
  { GilRelease wait(GilRelease::Wait{}); CHECK(!t_holds_fake_gil); }
  set_gil_release_enabled(true);
  CHECK(counts() == std::make_pair(5, 5));

  // Under a GilPinningMutex (the generator's) nothing is released: taking the GIL back with the
  // mutex held could deadlock with a thread that waits for the mutex holding the GIL.
  {
    std::lock_guard<GilPinningMutex> lock(default_generator().mutex);
    parallel_for(0, 4000, 100, [&](int64_t, int64_t) { CHECK(!gil_free()); });
    GilRelease none;
    CHECK(t_holds_fake_gil);
  }
  CHECK(counts() == std::make_pair(5, 5));
  // ... and released first, then locked, it is: a second "Python thread" gets the GIL while
  // the first one draws with the generator locked.
  {
    GilRelease nogil;
    std::lock_guard<GilPinningMutex> lock(default_generator().mutex);
    std::thread other([] {
      g_fake_gil.lock();
      t_holds_fake_gil = true;
      t_holds_fake_gil = false;
      g_fake_gil.unlock();
    });
    other.join();
  }
  CHECK(t_holds_fake_gil && counts() == std::make_pair(6, 6));

  // Two "Python threads" running long ranges at once: both finish, each with its own result.
  g_fake_gil.unlock();
  t_holds_fake_gil = false;
  std::vector<std::thread> callers;
  std::atomic<int> bad{0};
  for (int t = 0; t < 2; ++t)
    callers.emplace_back([&, t] {
      g_fake_gil.lock();
      t_holds_fake_gil = true;
      for (int rep = 0; rep < 200; ++rep) {
        std::atomic<int64_t> sum{0};
        parallel_for(0, 20000 + t, 100, [&](int64_t b, int64_t e) { sum += e - b; });
        if (sum.load() != 20000 + t || !t_holds_fake_gil) ++bad;
      }
      t_holds_fake_gil = false;
      g_fake_gil.unlock();
    });
  for (auto& c : callers) c.join();
  CHECK(bad.load() == 0 && counts() == std::make_pair(406, 406));
  set_gil_hooks({});
}

// ---------------------------------------------------------------------------------------------
// Half / BFloat16

static uint16_t hb(float f) { return Half(f).bits; }
static uint16_t bb(float f) { return BFloat16(f).bits; }
static bool half_is_nan(uint16_t h) { return (h & 0x7C00) == 0x7C00 && (h & 0x3FF) != 0; }

static void test_half() {
  constexpr Half one = Half::from_bits(0x3C00);
  static_assert(one.bits == 0x3C00, "from_bits is constexpr");
  CHECK(float(one) == 1.0f);

  CHECK(hb(1.0f) == 0x3C00);
  CHECK(hb(-2.0f) == 0xC000);
  CHECK(hb(0.0f) == 0x0000);
  CHECK(hb(-0.0f) == 0x8000);
  CHECK(hb(65504.0f) == 0x7BFF);
  CHECK(hb(65519.0f) == 0x7BFF);  // just below the halfway point to 65536
  CHECK(hb(65520.0f) == 0x7C00);  // halfway, ties to even = inf
  CHECK(hb(1e10f) == 0x7C00);
  CHECK(hb(std::numeric_limits<float>::infinity()) == 0x7C00);
  CHECK(hb(-std::numeric_limits<float>::infinity()) == 0xFC00);
  uint16_t qn = hb(std::numeric_limits<float>::quiet_NaN());
  CHECK(half_is_nan(qn) && (qn & 0x200));
  uint16_t sn = hb(std::numeric_limits<float>::signaling_NaN());
  CHECK(half_is_nan(sn) && (sn & 0x200));  // quieted
  CHECK(std::isnan(float(Half::from_bits(0x7E00))));
  CHECK(float(Half::from_bits(0x7C00)) == std::numeric_limits<float>::infinity());
  CHECK(float(Half::from_bits(0x7BFF)) == 65504.0f);

  // Subnormals: smallest 2^-24, largest 1023 * 2^-24, smallest normal 2^-14.
  CHECK(hb(std::ldexp(1.0f, -24)) == 0x0001);
  CHECK(hb(std::ldexp(1023.0f, -24)) == 0x03FF);
  CHECK(hb(std::ldexp(1.0f, -14)) == 0x0400);
  CHECK(hb(std::ldexp(1.0f, -25)) == 0x0000);        // tie between 0 and 2^-24: even = 0
  CHECK(hb(std::ldexp(1.5f, -25)) == 0x0001);        // above the tie
  CHECK(hb(std::ldexp(3.0f, -25)) == 0x0002);        // 1.5 * 2^-24: tie, to even (2)
  CHECK(hb(std::ldexp(5.0f, -25)) == 0x0002);        // 2.5 * 2^-24: tie, to even (2)
  CHECK(hb(-std::ldexp(1.0f, -30)) == 0x8000);
  CHECK(float(Half::from_bits(0x0001)) == std::ldexp(1.0f, -24));
  CHECK(float(Half::from_bits(0x83FF)) == -std::ldexp(1023.0f, -24));

  // Ties to even on normals: 1 + 2^-11 sits halfway between 0x3C00 and 0x3C01.
  CHECK(hb(1.0f + std::ldexp(1.0f, -11)) == 0x3C00);
  CHECK(hb(1.0f + std::ldexp(3.0f, -11)) == 0x3C02);
  CHECK(hb(1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20)) == 0x3C01);
  CHECK(hb(2049.0f) == hb(2048.0f) && hb(2051.0f) == hb(2052.0f));
  CHECK(hb(std::ldexp(2047.0f, -25)) == 0x0400);  // rounds up into the smallest normal

  // From double: one rounding, not two (float would round 1 + 2^-11 + 2^-40 to the tie first).
  CHECK(Half(1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40)).bits == 0x3C01);
  CHECK(Half(1.0 + std::ldexp(1.0, -11)).bits == 0x3C00);
  CHECK(Half(1e300).bits == 0x7C00 && Half(-1e300).bits == 0xFC00);
  CHECK(Half(1e-300).bits == 0x0000 && Half(-1e-300).bits == 0x8000);
  CHECK(half_is_nan(Half(std::nan("")).bits));
  CHECK(Half(65504.0).bits == 0x7BFF);
  // From integers.
  CHECK(Half(1).bits == 0x3C00);
  CHECK(Half(int64_t(2049)).bits == Half(2048.0f).bits);
  CHECK(Half(int64_t(70000)).bits == 0x7C00);
  CHECK(Half(-3).bits == 0xC200);
  CHECK(Half(uint8_t(255)).bits == hb(255.0f));

  // Exhaustive: every half survives half -> float -> half, and both code paths agree.
  for (uint32_t u = 0; u < 0x10000; ++u) {
    const uint16_t h = static_cast<uint16_t>(u);
    const float f = float(Half::from_bits(h));
    const float fp = detail::half_bits_to_float_portable(h);
    CHECK(std::memcmp(&f, &fp, 4) == 0 || (std::isnan(f) && std::isnan(fp)));
    const uint16_t back = Half(f).bits;
    if (half_is_nan(h)) {
      CHECK(half_is_nan(back) && (back & 0x200));
    } else {
      CHECK(back == h);
      CHECK(detail::float_to_half_bits_portable(f) == h);
    }
  }
  // Float -> half on a spread of bit patterns: the F16C path (if compiled in) and the portable
  // path agree, and the result is the nearest half.
  for (uint64_t u = 0; u < (uint64_t(1) << 32); u += 257) {
    float f;
    uint32_t x = static_cast<uint32_t>(u);
    std::memcpy(&f, &x, 4);
    const uint16_t a = detail::float_to_half_bits(f), b = detail::float_to_half_bits_portable(f);
    if (std::isnan(f)) {
      CHECK(half_is_nan(a) && half_is_nan(b));
    } else {
      CHECK(a == b);
    }
  }

  // Arithmetic goes through float and rounds back.
  Half a(1.5f), b(2.25f);
  CHECK(float(a + b) == 3.75f && float(a - b) == -0.75f && float(a * b) == 3.375f);
  CHECK(float(Half(1.0f) / Half(3.0f)) == float(Half(1.0f / 3.0f)));
  CHECK((-a).bits == 0xBE00);
  a += b;
  CHECK(float(a) == 3.75f);
  CHECK(Half(1.0f) < Half(2.0f) && Half(2.0f) == Half(2.0f));
  float mixed = Half(0.5f) * 3.0f;  // mixed with float stays float
  CHECK(mixed == 1.5f);
  CHECK(float(Half(65504.0f) + Half(65504.0f)) == std::numeric_limits<float>::infinity());

  // Bulk converters match the scalar ones (odd lengths exercise the vector tails).
  std::vector<float> src(1037), dst(1037);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-70000.0f, 70000.0f);
  for (auto& v : src) v = dist(rng) * (rng() % 2 ? 1.0f : 1e-6f);
  src[3] = std::numeric_limits<float>::quiet_NaN();
  std::vector<Half> h(src.size());
  float_to_half(src.data(), h.data(), static_cast<int64_t>(src.size()));
  for (size_t i = 0; i < src.size(); ++i)
    CHECK(h[i].bits == Half(src[i]).bits || (half_is_nan(h[i].bits) && std::isnan(src[i])));
  half_to_float(h.data(), dst.data(), static_cast<int64_t>(h.size()));
  for (size_t i = 0; i < h.size(); ++i)
    CHECK(dst[i] == float(h[i]) || (std::isnan(dst[i]) && std::isnan(float(h[i]))));
}

static void test_bfloat16() {
  constexpr BFloat16 one = BFloat16::from_bits(0x3F80);
  static_assert(one.bits == 0x3F80, "from_bits is constexpr");
  CHECK(float(one) == 1.0f);
  CHECK(bb(1.0f) == 0x3F80);
  CHECK(bb(-2.0f) == 0xC000);
  CHECK(bb(std::numeric_limits<float>::infinity()) == 0x7F80);
  CHECK(bb(-std::numeric_limits<float>::infinity()) == 0xFF80);
  CHECK(bb(std::numeric_limits<float>::max()) == 0x7F80);  // rounds past the largest bfloat16
  CHECK(bb(3.3895313892515355e38f) == 0x7F7F);            // the largest bfloat16 itself
  uint16_t n = bb(std::numeric_limits<float>::quiet_NaN());
  CHECK((n & 0x7F80) == 0x7F80 && (n & 0x7F) && (n & 0x40));
  uint16_t sn = bb(std::numeric_limits<float>::signaling_NaN());
  CHECK((sn & 0x7F80) == 0x7F80 && (sn & 0x40));  // stays NaN, quieted (no rounding into inf)
  // Ties to even: 1 + 2^-8 is halfway between 0x3F80 and 0x3F81.
  CHECK(bb(1.0f + std::ldexp(1.0f, -8)) == 0x3F80);
  CHECK(bb(1.0f + std::ldexp(3.0f, -8)) == 0x3F82);
  CHECK(bb(1.0f + std::ldexp(1.0f, -8) + std::ldexp(1.0f, -20)) == 0x3F81);
  CHECK(bb(std::ldexp(1.0f, -133)) == 0x0001);  // a bfloat16 subnormal
  CHECK(float(BFloat16::from_bits(0x0001)) == std::ldexp(1.0f, -133));
  CHECK(BFloat16(1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -40)).bits == 0x3F81);
  CHECK(BFloat16(3).bits == 0x4040);
  // int64 -> bfloat16 rounds once: 2^62 + 2^54 + 1 is just above a tie (double would land on it).
  const int64_t big = (int64_t(1) << 62) + (int64_t(1) << 54) + 1;
  CHECK(float(BFloat16(big)) == std::ldexp(1.0f, 62) + std::ldexp(1.0f, 55));
  CHECK(float(BFloat16(-big)) == -(std::ldexp(1.0f, 62) + std::ldexp(1.0f, 55)));
  CHECK(float(BFloat16(std::numeric_limits<int64_t>::min())) == -std::ldexp(1.0f, 63));
  for (uint32_t u = 0; u < 0x10000; ++u) {  // every bfloat16 round-trips
    const uint16_t b = static_cast<uint16_t>(u);
    const uint16_t back = BFloat16(float(BFloat16::from_bits(b))).bits;
    if ((b & 0x7F80) == 0x7F80 && (b & 0x7F))
      CHECK((back & 0x7F80) == 0x7F80 && (back & 0x7F));
    else
      CHECK(back == b);
  }
  BFloat16 x(1.5f), y(2.0f);
  CHECK(float(x * y) == 3.0f && float(x + y) == 3.5f && (-x).bits == 0xBFC0);
  std::vector<float> src = {1.0f, -0.0f, 3.14159f, 1e-40f, 65504.0f, 1e38f, -7.5f};
  std::vector<BFloat16> b(src.size());
  std::vector<float> back(src.size());
  float_to_bfloat16(src.data(), b.data(), static_cast<int64_t>(src.size()));
  bfloat16_to_float(b.data(), back.data(), static_cast<int64_t>(b.size()));
  for (size_t i = 0; i < src.size(); ++i) {
    CHECK(b[i].bits == BFloat16(src[i]).bits);
    CHECK(back[i] == float(b[i]));
  }
}

// ---------------------------------------------------------------------------------------------
// Generator

static bool close(double a, double b, double tol) { return std::fabs(a - b) <= tol; }

static void test_generator() {
  // The engine is mt19937: same stream as the standard one, across several refills.
  for (uint32_t seed : {0u, 5489u, 12345u, 0xFFFFFFFFu}) {
    Generator g(seed);
    std::mt19937 ref(seed);
    for (int i = 0; i < 3000; ++i) CHECK(g.next_u32() == ref());
  }
  {
    Generator g(uint64_t(1) << 32);  // the engine takes the low 32 bits; the seed is kept whole
    Generator g0(0);
    CHECK(g.initial_seed() == (uint64_t(1) << 32));
    for (int i = 0; i < 10; ++i) CHECK(g.next_u32() == g0.next_u32());
  }

  CHECK(default_generator().initial_seed() == 67280421310721ULL);
  CHECK(&default_generator() == &default_generator());

  // Same values as PyTorch for the same seed (torch.manual_seed(0); torch.rand / randn).
  Generator g(0);
  std::vector<float> f(3);
  fill_uniform(g, f.data(), 3, 0.0, 1.0);
  CHECK(f[0] == 0.49625658988952637f && f[1] == 0.7682217955589294f && f[2] == 0.08847743272781372f);
  g.manual_seed(0);
  std::vector<double> d(3);
  fill_uniform(g, d.data(), 3, 0.0, 1.0);
  CHECK(d[0] == 0.9700530018065531 && d[1] == 0.707819864399788 && d[2] == 0.45938294312745087);
  g.manual_seed(0);
  fill_normal(g, d.data(), 3, 0.0, 1.0);  // serial Box-Muller path (n < 16)
  CHECK(close(d[0], 1.5409961082440433, 1e-15) && close(d[1], -0.2934289057609464, 1e-15) &&
        close(d[2], -2.1787893820745574, 1e-15));
  g.manual_seed(0);
  fill_normal(g, f.data(), 3, 0.0, 1.0);
  CHECK(f[0] == 1.5409960746765137f && f[1] == -0.293428897857666f && f[2] == -2.1787893772125244f);
  const double ref_d20[20] = {-2.310411800234176, -0.3732508612577643, -1.0608166785462863,
                              0.9995093547811761, -0.019964750907762653, 0.2102998901016947,
                              0.17718935139366584, -0.830510051008449, 0.23871805816817063,
                              0.7335283685272841, -1.3218818291421377, 1.3148113651971234,
                              -0.6870036940435463, 1.4880743158106724, -0.4484158047114511,
                              -0.8910030351707375, 0.6748575435940039, 1.0468653769814655,
                              0.15429517864658948, -0.7498915228391941};
  const float ref_f20[20] = {-1.1258398294448853f, -1.152360200881958f, -0.2505785822868347f,
                             -0.4338788092136383f, 0.5988394618034363f, -1.5550950765609741f,
                             -0.3413603901863098f, 1.85300612449646f, 0.46809640526771545f,
                             -0.1577124446630478f, 1.4436601400375366f, 0.26604941487312317f,
                             1.3893661499023438f, 1.586334228515625f, 0.946298360824585f,
                             -0.843676745891571f, 0.9318265914916992f, 1.2590092420578003f,
                             2.0049805641174316f, 0.05373690277338028f};
  std::vector<double> d20(20);
  std::vector<float> f20(20);
  g.manual_seed(0);
  fill_normal(g, d20.data(), 20, 0.0, 1.0);  // blocked path, with the recomputed tail block
  for (int i = 0; i < 20; ++i) CHECK(close(d20[i], ref_d20[i], 1e-13));
  g.manual_seed(0);
  fill_normal(g, f20.data(), 20, 0.0, 1.0);
  for (int i = 0; i < 20; ++i) CHECK(close(f20[i], ref_f20[i], 1e-5));
  g.manual_seed(0);
  std::vector<float> u5(5);
  fill_uniform(g, u5.data(), 5, -2.0, 3.0);
  const float ref_u5[5] = {0.48128294944763184f, 1.841109037399292f, -1.5576128959655762f,
                           -1.3398475646972656f, -0.46288591623306274f};
  for (int i = 0; i < 5; ++i) CHECK(close(u5[i], ref_u5[i], 1e-6));

  // Same seed, same stream; reseeding resets the cached normal.
  Generator a(42), b(42);
  for (int i = 0; i < 100; ++i) CHECK(a.next_u64() == b.next_u64());
  a.manual_seed(7);
  double first = a.next_normal();
  a.next_normal();
  a.next_normal();  // now a second value is cached
  a.manual_seed(7);
  CHECK(a.next_normal() == first);

  // get_state / set_state round trip, mid-stream and with a cached normal.
  Generator s(2024);
  for (int i = 0; i < 1000; ++i) s.next_u32();
  s.next_normal();  // leaves one cached
  const std::string st = s.get_state();
  std::vector<double> expect;
  for (int i = 0; i < 700; ++i) expect.push_back(i % 3 ? s.next_double() : s.next_normal());
  Generator r(1);
  r.set_state(st);
  CHECK(r.initial_seed() == 2024);
  CHECK(r.get_state() == st);
  for (int i = 0; i < 700; ++i) CHECK((i % 3 ? r.next_double() : r.next_normal()) == expect[i]);
  CHECK(throws<std::runtime_error>([&] { r.set_state(""); }));
  CHECK(throws<std::runtime_error>([&] { r.set_state(st.substr(1)); }));
  CHECK(throws<std::runtime_error>([&] { r.set_state(st + "x"); }));
  std::string bad = st;
  bad[0] = 'X';
  CHECK(throws<std::runtime_error>([&] { r.set_state(bad); }));
  std::string zeros = st;
  std::fill(zeros.begin() + 32, zeros.end(), '\0');
  CHECK(throws<std::runtime_error>([&] { r.set_state(zeros); }));

  // seed(): non-deterministic, 53 bits, becomes the initial seed.
  Generator n1, n2;
  uint64_t s1 = n1.seed(), s2 = n2.seed();
  CHECK(s1 < (uint64_t(1) << 53) && s2 < (uint64_t(1) << 53));
  CHECK(s1 != s2);
  CHECK(n1.initial_seed() == s1);

  // Ranges and moments.
  Generator m(3);
  const int64_t N = 200001;
  std::vector<double> big(N);
  fill_uniform(m, big.data(), N, -1.0, 2.0);
  double mean = 0;
  for (double v : big) {
    CHECK(v >= -1.0 && v < 2.0);
    mean += v;
  }
  CHECK(close(mean / N, 0.5, 0.02));
  std::vector<float> fbig(N);
  fill_uniform(m, fbig.data(), N, 0.0, 1.0);
  for (float v : fbig) CHECK(v >= 0.0f && v < 1.0f);
  fill_normal(m, big.data(), N, 3.0, 2.0);
  double mu = 0, var = 0;
  for (double v : big) mu += v;
  mu /= N;
  for (double v : big) var += (v - mu) * (v - mu);
  var /= N;
  CHECK(close(mu, 3.0, 0.03) && close(std::sqrt(var), 2.0, 0.03));
  fill_normal(m, fbig.data(), N, 0.0, 1.0);
  for (float v : fbig) CHECK(std::isfinite(v));
}

// ---------------------------------------------------------------------------------------------
// BLAS

template <class T>
static void naive_gemm(bool ta, bool tb, int M, int N, int K, T alpha, const T* A, int lda,
                       const T* B, int ldb, T beta, T* C, int ldc) {
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      double acc = 0;
      for (int k = 0; k < K; ++k)
        acc += double(ta ? A[k * lda + i] : A[i * lda + k]) * double(tb ? B[j * ldb + k] : B[k * ldb + j]);
      C[i * ldc + j] = static_cast<T>(alpha * acc + (beta == T(0) ? 0.0 : double(beta) * C[i * ldc + j]));
    }
}

template <class T, class Gemm>
static void check_gemm(Gemm gemm, double tol) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> dist(-1, 1);
  struct Case { int M, N, K; bool ta, tb; int pad; double alpha, beta; };
  const Case cases[] = {{1, 1, 1, false, false, 0, 1, 0},   {7, 5, 3, false, false, 0, 1, 0},
                        {64, 48, 33, true, false, 3, 0.5, 2}, {17, 65, 9, false, true, 1, -1, 0.25},
                        {33, 31, 129, true, true, 5, 2, 1}, {200, 150, 100, false, false, 0, 1, 1}};
  for (const Case& c : cases) {
    const int lda = (c.ta ? c.M : c.K) + c.pad, ldb = (c.tb ? c.K : c.N) + c.pad, ldc = c.N + c.pad;
    std::vector<T> A((c.ta ? c.K : c.M) * lda), B((c.tb ? c.N : c.K) * ldb), C(c.M * ldc), R;
    for (auto& v : A) v = static_cast<T>(dist(rng));
    for (auto& v : B) v = static_cast<T>(dist(rng));
    for (auto& v : C) v = static_cast<T>(dist(rng));
    R = C;
    gemm(c.ta, c.tb, c.M, c.N, c.K, T(c.alpha), A.data(), lda, B.data(), ldb, T(c.beta), C.data(), ldc);
    naive_gemm<T>(c.ta, c.tb, c.M, c.N, c.K, T(c.alpha), A.data(), lda, B.data(), ldb, T(c.beta), R.data(), ldc);
    for (int i = 0; i < c.M; ++i)
      for (int j = 0; j < c.N; ++j) CHECK(close(C[i * ldc + j], R[i * ldc + j], tol * (1 + c.K)));
  }
  // beta == 0 must not read C (NaN there must not leak through).
  std::vector<T> A(6, T(1)), B(6, T(1)), C(4, std::numeric_limits<T>::quiet_NaN());
  gemm(false, false, 2, 2, 3, T(1), A.data(), 3, B.data(), 2, T(0), C.data(), 2);
  for (T v : C) CHECK(v == T(3));
}

static void test_blas(const char* path) {
  // An unloadable path fails cleanly with the reason, and a later good path is still tried.
  blas::set_library_path("/nonexistent/libscipy_openblas.so");
  CHECK(!blas::available());
  const std::string err = blas::load_error();
  CHECK(err.find("ember: OpenBLAS could not be loaded from /nonexistent/libscipy_openblas.so: ") == 0);
  CHECK(err.find("Reinstall scipy-openblas32.") != std::string::npos);
  float a = 1, b = 1, c = 0;
  bool got = false;
  try {
    blas::sgemm(false, false, 1, 1, 1, 1.0f, &a, 1, &b, 1, 0.0f, &c, 1);
  } catch (const std::runtime_error& e) {
    got = std::string(e.what()) == err;
  }
  CHECK(got);
  CHECK(throws<std::runtime_error>([] { blas::symbol("cblas_sgemm"); }));

  // Argument checks and the library-free edge cases work without the library.
  CHECK(throws<std::invalid_argument>([] { blas::set_num_threads(0); }));
  CHECK(throws<std::invalid_argument>(
      [&] { blas::sgemm(false, false, -1, 1, 1, 1.0f, &a, 1, &b, 1, 0.0f, &c, 1); }));
  CHECK(throws<std::invalid_argument>(
      [&] { blas::sgemm(false, false, 2, 2, 2, 1.0f, &a, 1, &b, 2, 0.0f, &c, 2); }));  // lda < K
  bool msg_ok = false;
  try {
    blas::sgemm(false, false, int64_t(1) << 31, 1, 1, 1.0f, &a, 1, &b, 1, 0.0f, &c, 1);
  } catch (const std::invalid_argument& e) {
    msg_ok = std::string(e.what()).find("32-bit") != std::string::npos;
  }
  CHECK(msg_ok);
  CHECK(throws<std::invalid_argument>(
      [&] { blas::dgemm(false, false, 1, 1, 1, 1.0, nullptr, int64_t(3) << 30, nullptr, 1, 0.0, nullptr, 1); }));
  blas::sgemm(false, false, 0, 5, 5, 1.0f, nullptr, 5, nullptr, 5, 0.0f, nullptr, 5);  // empty: no-op
  std::vector<float> cz = {1, 2, 3, 4};
  blas::sgemm(false, false, 2, 2, 0, 1.0f, nullptr, 1, nullptr, 2, 0.5f, cz.data(), 2);  // K == 0
  CHECK(cz[0] == 0.5f && cz[3] == 2.0f);
  blas::set_num_threads(2);  // remembered until the library loads

  if (!path) {
    std::printf("  blas: no library path given, GEMM checks skipped\n");
    return;
  }
  blas::set_library_path(path);
  CHECK(blas::available());
  CHECK(blas::load_error().empty());
  CHECK(blas::symbol("cblas_sgemm") != nullptr);          // found through the scipy_ prefix
  CHECK(blas::symbol("openblas_get_config") != nullptr);
  CHECK(blas::symbol("LAPACKE_sgesv") != nullptr);
  CHECK(blas::symbol("no_such_routine_anywhere") == nullptr);
  auto get_threads = reinterpret_cast<int (*)()>(blas::symbol("openblas_get_num_threads"));
  CHECK(get_threads && get_threads() == 1);  // one thread by default: ember's pool parallelises
  check_gemm<float>(blas::sgemm, 1e-5);
  check_gemm<double>(blas::dgemm, 1e-12);
  {
    blas::Threaded threaded;  // the remembered count, for callers without parallelism of their own
    CHECK(get_threads() == 2);
    check_gemm<float>(blas::sgemm, 1e-5);
    {
      blas::SingleThreaded single;  // wins over Threaded
      CHECK(get_threads() == 1);
    }
    CHECK(get_threads() == 2);
    blas::set_num_threads(3);
    CHECK(get_threads() == 3);
  }
  CHECK(get_threads() == 1);
  blas::set_num_threads(1);
  CHECK(get_threads() == 1);
  check_gemm<float>(blas::sgemm, 1e-5);
  // Loading happens once: concurrent users all see the same loaded library.
  std::vector<std::thread> ts;
  std::atomic<int> ok{0};
  for (int t = 0; t < 4; ++t) ts.emplace_back([&] { ok += blas::available() ? 1 : 0; });
  for (auto& t : ts) t.join();
  CHECK(ok.load() == 4);
}

// oneDNN's loader without the library: every pass declines (the caller runs its own kernels)
// and the reason names the paths tried; a disabled switch declines before loading anything.
static void test_onednn_missing() {
  using namespace ember;
  onednn::set_library_paths("/nonexistent/libdnnl.so.3:/also/missing/libdnnl.so.3");
  ConvGeometry g{};
  for (int i = 0; i < 3; ++i) g.I[i] = g.O[i] = g.K[i] = g.s[i] = g.d[i] = 1, g.p[i] = 0;
  float a = 1, b = 2, c = 0;
  CHECK(!onednn::convolution(onednn::Pass::Forward, g, 1, 1, 1, 1, &a, &b, &c));
  CHECK(c == 0);
  CHECK(!onednn::available());
  const std::string err = onednn::load_error();
  CHECK(err.find("/nonexistent/libdnnl.so.3") != std::string::npos);
  CHECK(err.find("/also/missing/libdnnl.so.3") != std::string::npos);
  CHECK(onednn::version().empty());
  onednn::set_enabled(false);
  CHECK(!onednn::enabled());
  CHECK(!onednn::convolution(onednn::Pass::Weight, g, 1, 1, 1, 1, &a, &b, &c));
  onednn::set_enabled(true);
}

int main(int argc, char** argv) {
  std::printf("parallel\n");
  test_parallel_basic();
  test_parallel_exceptions();
  test_parallel_nested();
  test_parallel_stress();
  std::printf("gil\n");
  test_gil_release();
  if (!std::getenv("EMBER_TEST_NO_FORK")) {
    test_parallel_fork();
    test_fork_while_busy();
  }
  std::printf("half\n");
  test_half();
  std::printf("bfloat16\n");
  test_bfloat16();
  std::printf("generator\n");
  test_generator();
  std::printf("onednn (missing)\n");
  test_onednn_missing();
  std::printf("blas\n");
  test_blas(argc > 1 ? argv[1] : nullptr);
  std::printf("all runtime tests passed\n");
  return 0;  // exits with pool workers alive: must not hang
}
