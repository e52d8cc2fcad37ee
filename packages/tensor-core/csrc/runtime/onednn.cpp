// onednn.cpp - see onednn.h. The library is loaded once (mutex, then an atomic status for the hot
// path, as runtime/blas.cpp); plans are cached per (pass, geometry) under a second mutex and are
// never freed while the process runs (a handful per model; the cache is cleared past 512).
#include "runtime/onednn.h"

#include <dlfcn.h>
#include <pthread.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <tuple>
#include <vector>

#include "runtime/onednn_api.h"
#include "runtime/parallel.h"

namespace ember {
namespace onednn {
namespace {

enum Status { kNotTried = 0, kLoaded = 1, kFailed = 2 };

struct Api {
  dnnl::version_fn version;
  dnnl::engine_create_fn engine_create;
  dnnl::stream_create_fn stream_create;
  dnnl::stream_wait_fn stream_wait;
  dnnl::memory_desc_create_with_tag_fn memory_desc_create_with_tag;
  dnnl::memory_desc_destroy_fn memory_desc_destroy;
  dnnl::memory_desc_equal_fn memory_desc_equal;
  dnnl::memory_desc_get_size_fn memory_desc_get_size;
  dnnl::memory_create_fn memory_create;
  dnnl::memory_destroy_fn memory_destroy;
  dnnl::conv_forward_pd_create_fn conv_forward_pd_create;
  dnnl::conv_backward_data_pd_create_fn conv_backward_data_pd_create;
  dnnl::conv_backward_weights_pd_create_fn conv_backward_weights_pd_create;
  dnnl::reorder_pd_create_fn reorder_pd_create;
  dnnl::primitive_desc_query_md_fn primitive_desc_query_md;
  dnnl::primitive_desc_destroy_fn primitive_desc_destroy;
  dnnl::primitive_attr_create_fn primitive_attr_create;
  dnnl::primitive_attr_destroy_fn primitive_attr_destroy;
  dnnl::primitive_attr_set_scratchpad_mode_fn primitive_attr_set_scratchpad_mode;
  dnnl::primitive_create_fn primitive_create;
  dnnl::primitive_execute_fn primitive_execute;
  dnnl::primitive_destroy_fn primitive_destroy;
  void (*omp_set_num_threads)(int);  // the library runs on GNU OpenMP's threads
};

// Never destroyed, so a thread still convolving while the process exits is safe.
struct State {
  std::mutex mu;  // guards loading; after kLoaded the fields below are read-only
  std::string paths = "libdnnl.so.3";
  std::string error, version;
  Api api{};
  dnnl::Engine* engine = nullptr;
};

std::atomic<int> g_status{kNotTried};
std::atomic<bool> g_enabled{[] {
  const char* e = std::getenv("EMBER_ONEDNN");
  return !(e && std::strcmp(e, "0") == 0);
}()};
// GNU OpenMP's worker threads do not survive fork(): a child of a process that ran a convolution on
// several threads would hang in its first parallel region, so such a child uses ember's kernels
// (the data loader's workers, ember.multiprocessing). One thread starts no OpenMP workers.
std::atomic<bool> g_omp_workers_started{false};
std::atomic<bool> g_forked_after_workers{false};
std::atomic<int64_t> g_calls{0};

State& st() {
  static State* s = new State();
  return *s;
}

template <class F> bool bind(void* h, const char* name, F& fn) {
  fn = reinterpret_cast<F>(dlsym(h, name));
  return fn != nullptr;
}

// Called with st().mu held.
void load_locked() {
  State& S = st();
  // The library's OpenMP workers should sleep between calls rather than spin (they would take the
  // CPU from ember's own pool): GNU OpenMP reads this once, when it is loaded. A value the user
  // set wins; so does an OpenMP runtime that something else loaded earlier.
  setenv("OMP_WAIT_POLICY", "PASSIVE", /*overwrite=*/0);
  std::string errors;
  void* h = nullptr;
  size_t begin = 0;
  while (begin <= S.paths.size() && !h) {
    size_t end = S.paths.find(':', begin);
    if (end == std::string::npos) end = S.paths.size();
    const std::string path = S.paths.substr(begin, end - begin);
    begin = end + 1;
    if (path.empty()) continue;
    dlerror();
    h = dlopen(path.c_str(), RTLD_LOCAL | RTLD_NOW);
    if (!h) {
      const char* err = dlerror();
      errors += (errors.empty() ? "" : "; ") + std::string(err ? err : path + ": not loaded");
    }
  }
  auto fail = [&](const std::string& why) {
    S.error = "ember: oneDNN is not used (convolutions run ember's own kernels): " + why;
    g_status.store(kFailed, std::memory_order_release);
  };
  if (!h) return fail(errors.empty() ? "no library path given" : errors);
  Api& a = S.api;
  const bool ok =
      bind(h, "dnnl_version", a.version) && bind(h, "dnnl_engine_create", a.engine_create) &&
      bind(h, "dnnl_stream_create", a.stream_create) && bind(h, "dnnl_stream_wait", a.stream_wait) &&
      bind(h, "dnnl_memory_desc_create_with_tag", a.memory_desc_create_with_tag) &&
      bind(h, "dnnl_memory_desc_destroy", a.memory_desc_destroy) &&
      bind(h, "dnnl_memory_desc_equal", a.memory_desc_equal) &&
      bind(h, "dnnl_memory_desc_get_size", a.memory_desc_get_size) &&
      bind(h, "dnnl_memory_create", a.memory_create) &&
      bind(h, "dnnl_memory_destroy", a.memory_destroy) &&
      bind(h, "dnnl_convolution_forward_primitive_desc_create", a.conv_forward_pd_create) &&
      bind(h, "dnnl_convolution_backward_data_primitive_desc_create",
           a.conv_backward_data_pd_create) &&
      bind(h, "dnnl_convolution_backward_weights_primitive_desc_create",
           a.conv_backward_weights_pd_create) &&
      bind(h, "dnnl_reorder_primitive_desc_create", a.reorder_pd_create) &&
      bind(h, "dnnl_primitive_desc_query_md", a.primitive_desc_query_md) &&
      bind(h, "dnnl_primitive_desc_destroy", a.primitive_desc_destroy) &&
      bind(h, "dnnl_primitive_attr_create", a.primitive_attr_create) &&
      bind(h, "dnnl_primitive_attr_destroy", a.primitive_attr_destroy) &&
      bind(h, "dnnl_primitive_attr_set_scratchpad_mode", a.primitive_attr_set_scratchpad_mode) &&
      bind(h, "dnnl_primitive_create", a.primitive_create) &&
      bind(h, "dnnl_primitive_execute", a.primitive_execute) &&
      bind(h, "dnnl_primitive_destroy", a.primitive_destroy);
  if (!ok) return fail("the library lacks a function of oneDNN 3's C API");
  const dnnl::Version* v = a.version();
  if (!v || v->major != 3)
    return fail("oneDNN 3.x is needed, the library is version " +
                (v ? std::to_string(v->major) + "." + std::to_string(v->minor) : std::string("?")));
  // The OpenMP runtime the library was linked against is loaded now; find its thread setter.
  void* omp = dlopen("libgomp.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (omp) bind(omp, "omp_set_num_threads", a.omp_set_num_threads);
  if (a.engine_create(&S.engine, dnnl::kEngineCpu, 0) != dnnl::kSuccess)
    return fail("no CPU engine could be created");
  S.version = std::to_string(v->major) + "." + std::to_string(v->minor) + "." +
              std::to_string(v->patch) + (v->hash && *v->hash ? std::string(" (") + v->hash + ")" : "");
  S.error.clear();
  g_status.store(kLoaded, std::memory_order_release);
}

bool ensure_loaded() {
  if (g_status.load(std::memory_order_acquire) == kLoaded) return true;
  std::lock_guard<std::mutex> lock(st().mu);
  if (g_status.load(std::memory_order_relaxed) == kNotTried) load_locked();
  return g_status.load(std::memory_order_relaxed) == kLoaded;
}

const Api& api() { return st().api; }

void check(dnnl::status_t s, const char* what) {
  if (s != dnnl::kSuccess)
    throw std::runtime_error(std::string("convolution (oneDNN): ") + what + " failed with status " +
                             std::to_string(s));
}

// ---- plans ----

struct MdDeleter {
  void operator()(dnnl::MemoryDesc* m) const { if (m) api().memory_desc_destroy(m); }
};
struct PdDeleter {
  void operator()(dnnl::PrimitiveDesc* p) const { if (p) api().primitive_desc_destroy(p); }
};
struct PrimDeleter {
  void operator()(dnnl::Primitive* p) const { if (p) api().primitive_destroy(p); }
};
using MdPtr = std::unique_ptr<dnnl::MemoryDesc, MdDeleter>;
using PdPtr = std::unique_ptr<dnnl::PrimitiveDesc, PdDeleter>;
using PrimPtr = std::unique_ptr<dnnl::Primitive, PrimDeleter>;

// One argument of the convolution primitive: ember's plain layout, the layout the primitive
// wants, and the reorder between them (null when they are the same).
struct Operand {
  int arg = 0;
  bool output = false;
  MdPtr plain;
  const dnnl::MemoryDesc* wanted = nullptr;  // owned by the plan's primitive descriptor
  PdPtr reorder_pd;
  PrimPtr reorder;
  size_t bytes = 0;  // of the blocked copy
};

struct Plan {
  PdPtr pd;
  PrimPtr prim;
  Operand ops[3];  // inputs a, b, then out
  const dnnl::MemoryDesc* scratchpad = nullptr;  // owned by pd; null when none is needed
  size_t scratchpad_bytes = 0;
};

// The plan's key: pass, batch, channels, groups and the geometry. `nsp` spatial dims are kept: a
// 2-d convolution stays 2-d in oneDNN (its 2-d kernels are the tuned ones), the leading size-1
// dims that ConvGeometry pads with are dropped.
struct Key {
  // pass, nsp, N, S, B, G, I, O, K, s, p, d (3 each), channels_last, weights_channels_last
  std::array<int64_t, 26> v;
  int pass() const { return static_cast<int>(v[0]); }
  int nsp() const { return static_cast<int>(v[1]); }
  int64_t N() const { return v[2]; }
  int64_t S() const { return v[3]; }
  int64_t B() const { return v[4]; }
  int64_t G() const { return v[5]; }
  // field f (0: I, 1: O, 2: K, 3: s, 4: p, 5: d) of spatial dim i
  int64_t at(int f, int i) const { return v[6 + 3 * f + i]; }
  bool channels_last() const { return v[24] != 0; }
  bool weights_channels_last() const { return v[25] != 0; }
  bool operator<(const Key& o) const { return v < o.v; }
};

Key make_key(Pass pass, const ConvGeometry& g, int64_t N, int64_t S, int64_t B, int64_t G,
             bool channels_last, bool weights_channels_last) {
  Key k{};
  int lead = 0;  // leading dims of size 1 with a trivial kernel, at most two (1-d stays 1-d)
  while (lead < 2 && g.I[lead] == 1 && g.O[lead] == 1 && g.K[lead] == 1 && g.p[lead] == 0) ++lead;
  k.v[0] = static_cast<int64_t>(pass);
  k.v[1] = 3 - lead;
  k.v[2] = N; k.v[3] = S; k.v[4] = B; k.v[5] = G;
  const int64_t* fields[6] = {g.I, g.O, g.K, g.s, g.p, g.d};
  for (int f = 0; f < 6; ++f)
    for (int i = 0; i < 3; ++i) k.v[6 + 3 * f + i] = fields[f][i];
  k.v[24] = channels_last;
  k.v[25] = weights_channels_last;
  return k;
}

// ember's layout of an operand: row-major, or channels last (N, spatial..., C) for activations.
MdPtr plain_md(const std::vector<int64_t>& dims, bool channels_last = false) {
  dnnl::dims_t d{};
  std::copy(dims.begin(), dims.end(), d);
  dnnl::MemoryDesc* m = nullptr;
  const int nd = static_cast<int>(dims.size());
  check(api().memory_desc_create_with_tag(
            &m, nd, d, dnnl::kF32,
            channels_last ? dnnl::channels_last_tag(nd) : dnnl::plain_tag(nd)),
        "memory_desc_create_with_tag");
  return MdPtr(m);
}

MdPtr any_md(const std::vector<int64_t>& dims) {
  dnnl::dims_t d{};
  std::copy(dims.begin(), dims.end(), d);
  dnnl::MemoryDesc* m = nullptr;
  check(api().memory_desc_create_with_tag(&m, static_cast<int>(dims.size()), d, dnnl::kF32,
                                          dnnl::kFormatAny),
        "memory_desc_create_with_tag");
  return MdPtr(m);
}

// Builds the plan, or returns null when oneDNN has no implementation for it.
std::unique_ptr<Plan> build_plan(const Key& k) {
  const Api& A = api();
  dnnl::Engine* eng = st().engine;
  const int off = 3 - k.nsp();
  const int64_t N = k.N(), S = k.S(), B = k.B(), G = k.G();
  std::vector<int64_t> big{N, B}, small{N, S}, w;
  if (G > 1) w = {G, S / G, B / G};
  else w = {S, B};
  dnnl::dims_t strides{}, dilates{}, pad_l{}, pad_r{};
  for (int i = off; i < 3; ++i) {
    const int64_t I = k.at(0, i), O = k.at(1, i), K = k.at(2, i), s = k.at(3, i), p = k.at(4, i),
                  d = k.at(5, i);
    big.push_back(I);
    small.push_back(O);
    w.push_back(K);
    const int j = i - off;
    strides[j] = s;
    dilates[j] = d - 1;  // oneDNN counts the gaps
    pad_l[j] = p;
    // The trailing padding that makes the small side exactly O long; rows of the big side past
    // the last window give a negative value, which is raised to 0 where that still yields O
    // (any value in [r, r + s - 1] does; a padded zero row is never read).
    const int64_t r = (O - 1) * s + (K - 1) * d + 1 - I - p;
    pad_r[j] = (r < 0 && r + s - 1 >= 0) ? 0 : r;
  }
  // The activations in a layout of oneDNN's choice (blocked), reordered from and to ember's
  // plain NCHW; channels_last activations are given as they are (nhwc), so that oneDNN picks
  // a kernel for them and no activation is reordered (with "any" it chose blocked ones again).
  MdPtr big_any = k.channels_last() ? plain_md(big, true) : any_md(big);
  MdPtr small_any = k.channels_last() ? plain_md(small, true) : any_md(small);
  MdPtr w_any = any_md(w);
  auto plan = std::make_unique<Plan>();
  // The primitives' scratchpads come from ember's per-thread buffers (execute): left to the
  // library, each call allocated its own and faulted its pages in (4-5 ms outliers per call).
  dnnl::PrimitiveAttr* attr_raw = nullptr;
  check(A.primitive_attr_create(&attr_raw), "primitive_attr_create");
  std::unique_ptr<dnnl::PrimitiveAttr, dnnl::primitive_attr_destroy_fn> attr(
      attr_raw, A.primitive_attr_destroy);
  check(A.primitive_attr_set_scratchpad_mode(attr.get(), dnnl::kScratchpadModeUser),
        "primitive_attr_set_scratchpad_mode");
  dnnl::PrimitiveDesc* fwd = nullptr;
  if (A.conv_forward_pd_create(&fwd, eng, dnnl::kForwardTraining, dnnl::kConvolutionDirect,
                               big_any.get(), w_any.get(), nullptr, small_any.get(), strides,
                               dilates, pad_l, pad_r, attr.get()) != dnnl::kSuccess)
    return nullptr;
  PdPtr fwd_pd(fwd);
  const Pass pass = static_cast<Pass>(k.pass());
  int qa, qb, qout, arg_a, arg_b, arg_out;
  std::vector<int64_t> da, db, dout;
  if (pass == Pass::Forward) {
    plan->pd = std::move(fwd_pd);
    qa = dnnl::kQuerySrcMd; qb = dnnl::kQueryWeightsMd; qout = dnnl::kQueryDstMd;
    arg_a = dnnl::kArgSrc; arg_b = dnnl::kArgWeights; arg_out = dnnl::kArgDst;
    da = big; db = w; dout = small;
  } else if (pass == Pass::Adjoint) {
    dnnl::PrimitiveDesc* pd = nullptr;
    if (A.conv_backward_data_pd_create(&pd, eng, dnnl::kConvolutionDirect, big_any.get(),
                                       w_any.get(), small_any.get(), strides, dilates, pad_l, pad_r,
                                       fwd_pd.get(), attr.get()) != dnnl::kSuccess)
      return nullptr;
    plan->pd.reset(pd);
    qa = dnnl::kQueryDiffDstMd; qb = dnnl::kQueryWeightsMd; qout = dnnl::kQueryDiffSrcMd;
    arg_a = dnnl::kArgDiffDst; arg_b = dnnl::kArgWeights; arg_out = dnnl::kArgDiffSrc;
    da = small; db = w; dout = big;
  } else {
    dnnl::PrimitiveDesc* pd = nullptr;
    if (A.conv_backward_weights_pd_create(&pd, eng, dnnl::kConvolutionDirect, big_any.get(),
                                          w_any.get(), nullptr, small_any.get(), strides, dilates,
                                          pad_l, pad_r, fwd_pd.get(), attr.get()) != dnnl::kSuccess)
      return nullptr;
    plan->pd.reset(pd);
    qa = dnnl::kQueryDiffDstMd; qb = dnnl::kQuerySrcMd; qout = dnnl::kQueryDiffWeightsMd;
    arg_a = dnnl::kArgDiffDst; arg_b = dnnl::kArgSrc; arg_out = dnnl::kArgDiffWeights;
    da = small; db = big; dout = w;
  }
  plan->scratchpad = A.primitive_desc_query_md(plan->pd.get(), dnnl::kQueryScratchpadMd, 0);
  plan->scratchpad_bytes = plan->scratchpad ? A.memory_desc_get_size(plan->scratchpad) : 0;
  dnnl::Primitive* prim = nullptr;
  check(A.primitive_create(&prim, plan->pd.get()), "primitive_create");
  plan->prim.reset(prim);
  const std::tuple<int, int, const std::vector<int64_t>*, bool> args[3] = {
      {qa, arg_a, &da, false}, {qb, arg_b, &db, false}, {qout, arg_out, &dout, true}};
  for (int i = 0; i < 3; ++i) {
    Operand& op = plan->ops[i];
    op.arg = std::get<1>(args[i]);
    op.output = std::get<3>(args[i]);
    const bool weights = pass == Pass::Weight ? i == 2 : i == 1;  // W: b, or the weight gradient
    op.plain = plain_md(*std::get<2>(args[i]),
                        weights ? k.weights_channels_last() : k.channels_last());
    op.wanted = A.primitive_desc_query_md(plan->pd.get(), std::get<0>(args[i]), 0);
    if (!op.wanted) return nullptr;
    if (A.memory_desc_equal(op.plain.get(), op.wanted)) continue;
    dnnl::PrimitiveDesc* rpd = nullptr;
    const dnnl::MemoryDesc* from = op.output ? op.wanted : op.plain.get();
    const dnnl::MemoryDesc* to = op.output ? op.plain.get() : op.wanted;
    if (A.reorder_pd_create(&rpd, from, eng, to, eng, nullptr) != dnnl::kSuccess) return nullptr;
    op.reorder_pd.reset(rpd);
    dnnl::Primitive* r = nullptr;
    check(A.primitive_create(&r, rpd), "primitive_create (reorder)");
    op.reorder.reset(r);
    op.bytes = A.memory_desc_get_size(op.wanted);
  }
  return plan;
}

struct PlanCache {
  std::mutex mu;
  std::map<Key, std::shared_ptr<Plan>> plans;  // null: oneDNN has no implementation
};

PlanCache& cache() {
  static PlanCache* c = new PlanCache();
  return *c;
}

std::shared_ptr<Plan> plan_for(const Key& k) {
  PlanCache& C = cache();
  std::lock_guard<std::mutex> lock(C.mu);
  auto it = C.plans.find(k);
  if (it != C.plans.end()) return it->second;
  if (C.plans.size() >= 512) C.plans.clear();  // shapes that keep changing: start over
  std::shared_ptr<Plan> p = build_plan(k);
  C.plans.emplace(k, p);
  return p;
}

struct MemoryHandle {
  dnnl::Memory* m = nullptr;
  MemoryHandle(const dnnl::MemoryDesc* md, void* data) {
    check(api().memory_create(&m, md, st().engine, data), "memory_create");
  }
  ~MemoryHandle() { if (m) api().memory_destroy(m); }
  MemoryHandle(const MemoryHandle&) = delete;
  MemoryHandle& operator=(const MemoryHandle&) = delete;
};

// The blocked copies of one call's operands, kept per thread from call to call: freeing them made
// glibc give the pages back to the kernel and fault them in again on the next call, which cost
// as much as the convolution (a 8 MiB output: 3.3 ms of page faults around a 0.5 ms kernel). A
// slot keeps the largest operand seen up to kKeepBytes (a layer's activations at training
// sizes); a larger copy is made for its call alone (`release` after it), so that a model run
// once at a large size does not leave gigabytes held. Released with its thread.
struct Scratch {
  static constexpr size_t kKeepBytes = size_t(64) << 20;
  struct Free {
    void operator()(void* p) const { std::free(p); }
  };
  std::unique_ptr<void, Free> slot[4];  // the three operands' blocked copies, the scratchpad
  size_t capacity[4] = {0, 0, 0, 0};
  void* get(int i, size_t bytes) {
    if (bytes > capacity[i]) {
      slot[i].reset();
      capacity[i] = 0;
      const size_t rounded = (bytes + 63) / 64 * 64;
      void* p = std::aligned_alloc(64, rounded);
      if (!p) throw std::bad_alloc();
      slot[i].reset(p);
      capacity[i] = rounded;
    }
    return slot[i].get();
  }
  // Frees the slots grown past kKeepBytes (after the call that needed them).
  void release_large() {
    for (int i = 0; i < 4; ++i)
      if (capacity[i] > kKeepBytes) {
        slot[i].reset();
        capacity[i] = 0;
      }
  }
};

dnnl::Stream* thread_stream() {
  // Streams are not thread-safe: one per calling thread (never freed: a few per process).
  thread_local dnnl::Stream* s = [] {
    dnnl::Stream* created = nullptr;
    check(api().stream_create(&created, st().engine, dnnl::kStreamDefaultFlags), "stream_create");
    return created;
  }();
  return s;
}

void execute(const Plan& plan, const float* a, const float* b, float* out) {
  const Api& A = api();
  dnnl::Stream* stream = thread_stream();
  const void* data[3] = {a, b, out};
  thread_local Scratch scratch;
  struct ReleaseLarge {  // also when a step throws
    Scratch& s;
    ~ReleaseLarge() { s.release_large(); }
  } release{scratch};
  std::unique_ptr<MemoryHandle> plain[3], blocked[3];
  dnnl::ExecArg args[3];
  for (int i = 0; i < 3; ++i) {
    const Operand& op = plan.ops[i];
    plain[i] = std::make_unique<MemoryHandle>(op.plain.get(), const_cast<void*>(data[i]));
    dnnl::Memory* used = plain[i]->m;
    if (op.reorder) {
      blocked[i] = std::make_unique<MemoryHandle>(op.wanted, scratch.get(i, std::max<size_t>(op.bytes, 64)));
      used = blocked[i]->m;
      if (!op.output) {
        const dnnl::ExecArg r[2] = {{dnnl::kArgFrom, plain[i]->m}, {dnnl::kArgTo, used}};
        check(A.primitive_execute(op.reorder.get(), stream, 2, r), "reorder");
      }
    }
    args[i] = {op.arg, used};
  }
  dnnl::ExecArg all[4] = {args[0], args[1], args[2], {dnnl::kArgScratchpad, nullptr}};
  std::unique_ptr<MemoryHandle> scratchpad;
  int nargs = 3;
  if (plan.scratchpad && plan.scratchpad_bytes) {
    scratchpad = std::make_unique<MemoryHandle>(plan.scratchpad, scratch.get(3, plan.scratchpad_bytes));
    all[3].memory = scratchpad->m;
    nargs = 4;
  }
  check(A.primitive_execute(plan.prim.get(), stream, nargs, all), "convolution");
  const Operand& o = plan.ops[2];
  if (o.reorder) {
    const dnnl::ExecArg r[2] = {{dnnl::kArgFrom, blocked[2]->m}, {dnnl::kArgTo, plain[2]->m}};
    check(A.primitive_execute(o.reorder.get(), stream, 2, r), "reorder");
  }
  check(A.stream_wait(stream), "stream_wait");
}

void after_fork_in_child() {
  if (g_omp_workers_started.load()) g_forked_after_workers.store(true);
}

}  // namespace

void set_library_paths(const std::string& colon_separated) {
  std::lock_guard<std::mutex> lock(st().mu);
  if (g_status.load() == kLoaded) return;  // a loaded library stays
  st().paths = colon_separated;
  g_status.store(kNotTried);
}

void set_enabled(bool on) { g_enabled.store(on); }
bool enabled() { return g_enabled.load(); }

bool available() { return ensure_loaded(); }

std::string load_error() {
  std::lock_guard<std::mutex> lock(st().mu);
  return st().error;
}

std::string version() {
  if (g_status.load(std::memory_order_acquire) != kLoaded) return "";
  return st().version;
}

bool convolution(Pass pass, const ConvGeometry& g, int64_t N, int64_t S, int64_t B, int64_t G,
                 const float* a, const float* b, float* out, bool channels_last,
                 bool weights_channels_last) {
  if (!g_enabled.load(std::memory_order_relaxed) ||
      g_forked_after_workers.load(std::memory_order_relaxed) || !ensure_loaded())
    return false;
  static const bool registered = [] {
    pthread_atfork(nullptr, nullptr, &after_fork_in_child);
    return true;
  }();
  (void)registered;
  std::shared_ptr<Plan> plan =
      plan_for(make_key(pass, g, N, S, B, G, channels_last, weights_channels_last));
  if (!plan) return false;
  // The library's threads follow ember's count; inside one of ember's parallel regions it runs on
  // the calling thread only (no nested parallelism, as parallel_for).
  const int nt = in_parallel_region() ? 1 : get_num_threads();
  if (api().omp_set_num_threads) api().omp_set_num_threads(nt);
  if (nt > 1) g_omp_workers_started.store(true, std::memory_order_relaxed);
  execute(*plan, a, b, out);
  g_calls.fetch_add(1, std::memory_order_relaxed);
  return true;
}

int64_t calls() { return g_calls.load(std::memory_order_relaxed); }

}  // namespace onednn
}  // namespace ember
