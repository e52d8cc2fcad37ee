// index_plan.h: the one loop machinery of the index ops (ops/indexing.cpp), as ElementwiseIter
// is for elementwise ops.
//
// A Plan is an iteration shape, a destination and a source (byte strides per dim; a scalar
// source has all strides 0) and int64 index operands. Each index value, wrapped when negative
// (the ops range-check every index before a plan runs), moves the source (a gather, OnDst=false)
// or the destination (a scatter, OnDst=true) by `step` bytes; the dim it replaces has stride 0
// in the operand it moves. run_plan coalesces dims, copies a contiguous inner run with memcpy
// when no index varies along it, splits gathers over the whole iteration space, and splits
// scatters only over a dim whose destination stride is nonzero: positions that differ there
// write different elements, so accumulation needs no atomics and duplicate targets are met by
// one thread in row-major order (the last write wins, as in NumPy).
#pragma once
#include <algorithm>
#include <cstring>
#include <vector>

#include "core/tensor.h"
#include "kernels/loops.h"
#include "runtime/parallel.h"

namespace ember {

// How scatter-like ops combine a source value into the destination (Mean runs as Sum; the op
// divides by the counts afterwards).
enum class IndexReduce { None, Sum, Prod, Mean, Max, Min };

namespace index_plan {

constexpr int64_t kIndexGrain = 32768;

struct IdxOperand {
  const int64_t* data;
  std::vector<int64_t> st;  // in elements, one per iteration dim
  int64_t size;             // size of the dim it indexes (negatives wrap against it)
  int64_t step;             // bytes one unit of index moves its operand
};

struct Plan {
  Shape shape;
  char* dst = nullptr;
  std::vector<int64_t> dst_st;  // bytes
  const char* src = nullptr;
  std::vector<int64_t> src_st;  // bytes
  std::vector<IdxOperand> idx;
  int64_t elsize = 0;
};

inline std::vector<int64_t> byte_strides(const Tensor& t) {
  std::vector<int64_t> s(t->strides);
  for (auto& v : s) v *= static_cast<int64_t>(t->element_size());
  return s;
}

// Drops size-1 dims and merges neighbours that are contiguous for every operand.
inline void coalesce(Plan& p) {
  const size_t nd = p.shape.size(), K = p.idx.size();
  Plan q;
  q.idx = p.idx;
  for (auto& o : q.idx) o.st.clear();
  for (size_t d = 0; d < nd; ++d) {
    if (p.shape[d] == 1) continue;
    if (!q.shape.empty()) {
      const size_t b = q.shape.size() - 1;
      const int64_t n = p.shape[d];
      bool ok = q.dst_st[b] == p.dst_st[d] * n && q.src_st[b] == p.src_st[d] * n;
      for (size_t k = 0; k < K && ok; ++k) ok = q.idx[k].st[b] == p.idx[k].st[d] * n;
      if (ok) {
        q.shape[b] *= n;
        q.dst_st[b] = p.dst_st[d];
        q.src_st[b] = p.src_st[d];
        for (size_t k = 0; k < K; ++k) q.idx[k].st[b] = p.idx[k].st[d];
        continue;
      }
    }
    q.shape.push_back(p.shape[d]);
    q.dst_st.push_back(p.dst_st[d]);
    q.src_st.push_back(p.src_st[d]);
    for (size_t k = 0; k < K; ++k) q.idx[k].st.push_back(p.idx[k].st[d]);
  }
  if (q.shape.empty()) {  // a single element
    q.shape.push_back(1);
    q.dst_st.push_back(0);
    q.src_st.push_back(0);
    for (auto& o : q.idx) o.st.push_back(0);
  }
  p.shape = std::move(q.shape);
  p.dst_st = std::move(q.dst_st);
  p.src_st = std::move(q.src_st);
  p.idx = std::move(q.idx);
}

inline void move_to_front(Plan& p, size_t d) {
  auto rot = [d](std::vector<int64_t>& v) { std::rotate(v.begin(), v.begin() + d, v.begin() + d + 1); };
  rot(p.shape);
  rot(p.dst_st);
  rot(p.src_st);
  for (auto& o : p.idx) rot(o.st);
}

inline int64_t wrap_index(int64_t v, int64_t size) { return v < 0 ? v + size : v; }

// Runs outer positions [ob, oe) (all dims but the last) over inner positions [ib, ie).
// OnDst: the indices move the destination (scatter) rather than the source (gather).
template <bool OnDst, class Elem>
void run_block(const Plan& p, int64_t ob, int64_t oe, int64_t ib, int64_t ie, const Elem& elem,
               bool plain_copy) {
  const int nd = static_cast<int>(p.shape.size());
  const int no = nd - 1;
  const int K = static_cast<int>(p.idx.size());
  const int64_t es = p.elsize, dst_in = p.dst_st[no], src_in = p.src_st[no];
  int64_t cnt[64];
  int64_t rem = ob;
  for (int d = no - 1; d >= 0; --d) {
    cnt[d] = rem % p.shape[d];
    rem /= p.shape[d];
  }
  char* dp = p.dst;
  const char* sp = p.src;
  std::vector<const int64_t*> ip(K);
  std::vector<int> fixed, vary;
  for (int k = 0; k < K; ++k) {
    ip[k] = p.idx[k].data;
    (p.idx[k].st[no] == 0 ? fixed : vary).push_back(k);
  }
  for (int d = 0; d < no; ++d) {
    dp += cnt[d] * p.dst_st[d];
    sp += cnt[d] * p.src_st[d];
    for (int k = 0; k < K; ++k) ip[k] += cnt[d] * p.idx[k].st[d];
  }
  const int64_t n = ie - ib;
  for (int64_t o = ob; o < oe; ++o) {
    int64_t off = 0;
    for (int k : fixed) off += wrap_index(*ip[k], p.idx[k].size) * p.idx[k].step;
    char* d = dp + ib * dst_in;
    const char* s = sp + ib * src_in;
    if constexpr (OnDst) d += off;
    else s += off;
    if (vary.empty()) {
      if (plain_copy && dst_in == es && src_in == es) {
        switch (n * es) {  // fixed sizes inline to a few moves (row gathers of short rows)
          case 16: std::memcpy(d, s, 16); break;
          case 32: std::memcpy(d, s, 32); break;
          case 64: std::memcpy(d, s, 64); break;
          case 128: std::memcpy(d, s, 128); break;
          default: std::memcpy(d, s, n * es);
        }
      } else {
        for (int64_t i = 0; i < n; ++i) elem(d + i * dst_in, s + i * src_in);
      }
    } else if (vary.size() == 1) {
      const IdxOperand& io = p.idx[vary[0]];
      const int64_t* q = ip[vary[0]] + ib * io.st[no];
      const int64_t qs = io.st[no], size = io.size, step = io.step;
      for (int64_t i = 0; i < n; ++i) {
        const int64_t v = wrap_index(q[i * qs], size) * step;
        if constexpr (OnDst) elem(d + i * dst_in + v, s + i * src_in);
        else elem(d + i * dst_in, s + i * src_in + v);
      }
    } else {
      for (int64_t i = 0; i < n; ++i) {
        int64_t v = 0;
        for (int k : vary)
          v += wrap_index(ip[k][(ib + i) * p.idx[k].st[no]], p.idx[k].size) * p.idx[k].step;
        if constexpr (OnDst) elem(d + i * dst_in + v, s + i * src_in);
        else elem(d + i * dst_in, s + i * src_in + v);
      }
    }
    for (int dd = no - 1; dd >= 0; --dd) {  // next outer position
      dp += p.dst_st[dd];
      sp += p.src_st[dd];
      for (int k = 0; k < K; ++k) ip[k] += p.idx[k].st[dd];
      if (++cnt[dd] < p.shape[dd]) break;
      cnt[dd] = 0;
      dp -= p.shape[dd] * p.dst_st[dd];
      sp -= p.shape[dd] * p.src_st[dd];
      for (int k = 0; k < K; ++k) ip[k] -= p.shape[dd] * p.idx[k].st[dd];
    }
  }
}

template <bool OnDst, class Elem> void run_plan(Plan p, const Elem& elem, bool plain_copy) {
  for (auto s : p.shape)
    if (s == 0) return;
  EMBER_CHECK(p.shape.size() <= 64, ValueError, "indexing: too many dimensions");
  coalesce(p);
  const size_t nd = p.shape.size();
  const int64_t n_in = p.shape.back();
  int64_t outer = 1;
  for (size_t d = 0; d + 1 < nd; ++d) outer *= p.shape[d];
  if constexpr (!OnDst) {  // gathers: every position writes its own output element
    if (outer == 1)
      parallel_for(0, n_in, kIndexGrain, [&](int64_t b, int64_t e) {
        run_block<OnDst>(p, 0, 1, b, e, elem, plain_copy);
      });
    else
      parallel_for(0, outer, std::max<int64_t>(1, kIndexGrain / n_in), [&](int64_t b, int64_t e) {
        run_block<OnDst>(p, b, e, 0, n_in, elem, plain_copy);
      });
    return;
  } else {
    // Scatters: split only over a dim with a nonzero destination stride. Indices are in range
    // and the destination does not overlap itself, so positions that differ in such a dim
    // write different elements; duplicates are then met by one thread, in order.
    int best = -1;
    for (size_t d = 0; d + 1 < nd; ++d)
      if (p.dst_st[d] != 0 && (best < 0 || p.shape[d] > p.shape[best])) best = static_cast<int>(d);
    if (best >= 0 && p.shape[best] > 1 && outer * n_in > kIndexGrain) {
      move_to_front(p, best);
      const int64_t per = outer / p.shape[0];
      parallel_for(0, p.shape[0], std::max<int64_t>(1, kIndexGrain / (per * n_in)),
                   [&](int64_t b, int64_t e) {
                     run_block<OnDst>(p, b * per, e * per, 0, n_in, elem, plain_copy);
                   });
    } else if (p.dst_st[nd - 1] != 0 && n_in >= 2048 && outer * n_in > kIndexGrain) {
      // only the inner dim is safe: split it in wide column blocks (little false sharing)
      parallel_for(0, n_in, 1024, [&](int64_t b, int64_t e) {
        run_block<OnDst>(p, 0, outer, b, e, elem, plain_copy);
      });
    } else {
      run_block<OnDst>(p, 0, outer, 0, n_in, elem, plain_copy);
    }
  }
}

template <typename T> struct CopyElem {
  void operator()(char* d, const char* s) const { std::memcpy(d, s, sizeof(T)); }
};

template <bool OnDst> void run_copy(const Plan& p) {
  switch (p.elsize) {
    case 1: return run_plan<OnDst>(p, CopyElem<uint8_t>{}, true);
    case 2: return run_plan<OnDst>(p, CopyElem<uint16_t>{}, true);
    case 4: return run_plan<OnDst>(p, CopyElem<uint32_t>{}, true);
    case 8: return run_plan<OnDst>(p, CopyElem<uint64_t>{}, true);
    case 16: return run_plan<OnDst>(p, CopyElem<Bytes16>{}, true);
    default: throw std::logic_error("index copy: unexpected element size");
  }
}

template <typename T, IndexReduce R> struct ReduceElem {
  using M = opmath_t<T>;
  M alpha;
  void operator()(char* d, const char* s) const {
    T* dp = reinterpret_cast<T*>(d);
    const M a = cast_to<M>(*dp), b = cast_to<M>(*reinterpret_cast<const T*>(s));
    if constexpr (std::is_same_v<T, bool>) {
      if constexpr (R == IndexReduce::Sum || R == IndexReduce::Mean || R == IndexReduce::Max)
        *dp = a || (b && alpha);
      else *dp = a && b;
    } else if constexpr (is_complex_v<T> && (R == IndexReduce::Max || R == IndexReduce::Min)) {
      throw std::logic_error("index reduce: complex values have no order");  // refused earlier
    } else if constexpr (R == IndexReduce::Sum || R == IndexReduce::Mean) {
      *dp = cast_to<T>(static_cast<M>(a + b * alpha));
    } else if constexpr (R == IndexReduce::Prod) {
      *dp = cast_to<T>(static_cast<M>(a * b));
    } else if constexpr (R == IndexReduce::Max) {
      if constexpr (!std::is_integral_v<M>) {
        if (b != b) { *dp = cast_to<T>(b); return; }
      }
      *dp = cast_to<T>(std::max(a, b));
    } else {
      if constexpr (!std::is_integral_v<M>) {
        if (b != b) { *dp = cast_to<T>(b); return; }
      }
      *dp = cast_to<T>(std::min(a, b));
    }
  }
};

// Complex values take the sums and products (torch's scatter_add, index_add, index_put_'s
// accumulate, scatter_reduce's sum/prod/mean); callers refuse amax/amin for them first.
inline void run_reduce(const Plan& p, ScalarType dt, IndexReduce r, Scalar alpha, const char* op) {
  dispatch_all_and_complex(dt, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using M = opmath_t<T>;
    const M a = alpha.to<M>();
    switch (r) {
      case IndexReduce::Sum:
      case IndexReduce::Mean: return run_plan<true>(p, ReduceElem<T, IndexReduce::Sum>{a}, false);
      case IndexReduce::Prod: return run_plan<true>(p, ReduceElem<T, IndexReduce::Prod>{a}, false);
      case IndexReduce::Max: return run_plan<true>(p, ReduceElem<T, IndexReduce::Max>{a}, false);
      case IndexReduce::Min: return run_plan<true>(p, ReduceElem<T, IndexReduce::Min>{a}, false);
      case IndexReduce::None: return run_plan<true>(p, CopyElem<T>{}, true);
    }
  });
}

}  // namespace index_plan
}  // namespace ember
