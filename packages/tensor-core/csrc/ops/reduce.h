// reduce.h: reductions (sum, mean, prod, max/min, arg-reductions, var/std, norm, logsumexp,
// all/any, count_nonzero), scans (cumsum/cumprod) and softmax/log_softmax, with PyTorch's dtype,
// empty-tensor, NaN and error rules.
//
// Every reduction runs through ONE machinery (the second half of this header), in the spirit of
// ATen's reduction TensorIterator:
//   1. the dims to reduce are normalised (wrapped, checked for duplicates) into a mask;
//   2. a ReducePlan splits the input's dims into kept dims (each with its input and output stride)
//      and reduced dims, drops size-1 dims, orders them by stride (unless the op reports indices,
//      which need the logical order) and coalesces neighbours that are contiguous;
//   3. the plan picks a path:
//        inner  the innermost reduced dim has stride 1 (sum(dim=-1), full reductions): each
//               output reduces contiguous runs, with many independent accumulators per run so
//               the compiler vectorises, and pairwise summation across blocks for accuracy;
//        outer  the innermost kept dim has stride 1 (sum(dim=0) of a matrix): a tile of outputs
//               accumulates whole input rows, vectorised along the kept dim, cascading blocks of
//               rows for accuracy;
//        else   the input is copied to a contiguous tensor with the reduced dims last (inner);
//   4. the work is cut into tasks that the pool's threads claim dynamically: blocks of outputs
//      when there are enough of them, else chunks of each output's reduction too, whose partial
//      results are combined in order (which keeps the first-index rule of argmax).
// An op is a small struct: in_t, acc_t, identity(), combine(a, b), reduce_run(ptr, n, index0)
// for a contiguous run, accumulate_rows(acc, row, n, index) for the outer path and write(i, acc)
// for output element i. MapReduceOp below (map, combine, project) serves the arithmetic
// reductions; reduce_minmax.cpp adds ExtremeOp (NaN-propagating max/min) and ArgOp (value and
// index). Scans, softmax and logsumexp (reduce_scan.cpp) use row kernels over [outer, D, inner].
#pragma once
#include <algorithm>
#include <atomic>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "core/tensor.h"
#include "kernels/loops.h"
#include "runtime/gil.h"
#include "runtime/parallel.h"

namespace ember {

// A dim argument: nullopt is dim=None; an empty list also means every dim, as in PyTorch.

// ---- reductions (ScalarType::Undefined for `dtype` means "not given") ----
Tensor sum(const Tensor& x, const OptDims& dim, bool keepdim, ScalarType dtype = ScalarType::Undefined);
Tensor nansum(const Tensor& x, const OptDims& dim, bool keepdim, ScalarType dtype = ScalarType::Undefined);
Tensor mean(const Tensor& x, const OptDims& dim, bool keepdim, ScalarType dtype = ScalarType::Undefined);
// mean's dtype rule: a dtype= must be floating or complex, else the input must be.
void check_mean_dtype(ScalarType input, ScalarType dtype);
Tensor nanmean(const Tensor& x, const OptDims& dim, bool keepdim, ScalarType dtype = ScalarType::Undefined);
Tensor prod(const Tensor& x, std::optional<int64_t> dim, bool keepdim,
            ScalarType dtype = ScalarType::Undefined);

Tensor amax(const Tensor& x, const OptDims& dim, bool keepdim);
Tensor amin(const Tensor& x, const OptDims& dim, bool keepdim);
Tensor max_all(const Tensor& x);  // torch.max(x)
Tensor min_all(const Tensor& x);
std::pair<Tensor, Tensor> max_dim(const Tensor& x, int64_t dim, bool keepdim);  // (values, indices)
std::pair<Tensor, Tensor> min_dim(const Tensor& x, int64_t dim, bool keepdim);
Tensor argmax(const Tensor& x, std::optional<int64_t> dim, bool keepdim);
Tensor argmin(const Tensor& x, std::optional<int64_t> dim, bool keepdim);

// var/std with Bessel's `correction` (1 = unbiased). take_sqrt selects std.
Tensor var(const Tensor& x, const OptDims& dim, double correction, bool keepdim, bool take_sqrt = false);
// (var or std, mean)
std::pair<Tensor, Tensor> var_mean(const Tensor& x, const OptDims& dim, double correction,
                                   bool keepdim, bool take_sqrt = false);

// Vector p-norm over `dim` (p = +-inf, 0, 1, 2 or any other real).
Tensor norm(const Tensor& x, double p, const OptDims& dim, bool keepdim,
            ScalarType dtype = ScalarType::Undefined);
Tensor logsumexp(const Tensor& x, const OptDims& dim, bool keepdim);

// all/any: dim=None reduces everything; an empty dim list reduces nothing (PyTorch's rule).
Tensor all(const Tensor& x, const OptDims& dim, bool keepdim);
Tensor any(const Tensor& x, const OptDims& dim, bool keepdim);
Tensor count_nonzero(const Tensor& x, const OptDims& dim);

// ---- scans and softmax ----
Tensor cumsum(const Tensor& x, int64_t dim, ScalarType dtype = ScalarType::Undefined);
Tensor cumprod(const Tensor& x, int64_t dim, ScalarType dtype = ScalarType::Undefined);
Tensor softmax(const Tensor& x, int64_t dim, ScalarType dtype = ScalarType::Undefined);
Tensor log_softmax(const Tensor& x, int64_t dim, ScalarType dtype = ScalarType::Undefined);
// Their backward kernels (ATen's _softmax_backward_data / _log_softmax_backward_data): from the
// forward's output, one pass per row; the result has input_dtype.
Tensor softmax_backward_data(const Tensor& grad_output, const Tensor& output, int64_t dim,
                             ScalarType input_dtype, bool log);

// ---- helpers shared with the bindings ----
// The mask of reduced dims (size x.dim()); throws PyTorch's errors for bad/duplicate dims.
std::vector<bool> reduction_mask(const Tensor& x, const OptDims& dim);
// Number of elements each output reduces (input numel / output numel).
int64_t reduced_numel(const Tensor& x, const std::vector<bool>& mask);
Shape reduced_shape(const Tensor& x, const std::vector<bool>& mask, bool keepdim);
// Throws NotImplementedError for tensors that do not live in host memory.
void require_cpu(const Tensor& x, const char* op);
// A contiguous copy in logical order (or x itself when it already is).
Tensor contiguous_copy(const Tensor& x);

// =============================================================================================
// The reduction machinery (used by reduce*.cpp).
namespace reduce_detail {

constexpr int kMaxDims = 64;

struct ReducePlan {
  // Outermost first, coalesced, size-1 dims dropped. Strides in elements.
  std::vector<int64_t> k_size, k_in, k_out;  // kept dims: size, input stride, output stride
  std::vector<int64_t> r_size, r_in;         // reduced dims: size, input stride
  int64_t out_numel = 1, red_numel = 1;
  bool inner() const { return !r_size.empty() && r_in.back() == 1; }
  bool outer() const { return !k_size.empty() && k_in.back() == 1 && !inner(); }
};

// Output strides are the contiguous strides of the kept dims in logical order.
ReducePlan make_plan(const TensorImpl& x, const std::vector<bool>& mask, bool keep_order);

// Makes the plan for x, copying x (reduced dims last, contiguous) when neither the inner nor
// the outer path applies. Returns the tensor the plan describes.
Tensor plan_input(const Tensor& x, const std::vector<bool>& mask, bool keep_order, ReducePlan& plan);

template <class Op> using acc_of = typename Op::acc_t;
template <class Op> using in_of = typename Op::in_t;

// Reduces the reduced-index range [rb, re) for the output whose input block starts at `base`
// (inner path: the last reduced dim is contiguous).
template <class Op>
acc_of<Op> reduce_range(const Op& op, const ReducePlan& p, const in_of<Op>* base, int64_t rb,
                        int64_t re) {
  const int nr = static_cast<int>(p.r_size.size());
  const int64_t L = nr ? p.r_size[nr - 1] : 1;
  int64_t ctr[kMaxDims];
  int64_t rem = rb / L, j = rb % L, off = 0;
  for (int d = nr - 2; d >= 0; --d) {
    ctr[d] = rem % p.r_size[d];
    rem /= p.r_size[d];
    off += ctr[d] * p.r_in[d];
  }
  acc_of<Op> acc = op.identity();
  int64_t pos = rb;
  bool first = true;
  while (pos < re) {
    const int64_t n = std::min(L - j, re - pos);
    if (first) acc = op.reduce_run(base + off + j, n, pos), first = false;
    else acc = op.combine(acc, op.reduce_run(base + off + j, n, pos));
    pos += n;
    j = 0;
    for (int d = nr - 2; d >= 0; --d) {
      off += p.r_in[d];
      if (++ctr[d] < p.r_size[d]) break;
      off -= ctr[d] * p.r_in[d];
      ctr[d] = 0;
    }
  }
  return acc;
}

// Input and output offsets (elements) of the kept-linear index o.
inline void kept_offsets(const ReducePlan& p, int64_t o, int64_t& in_off, int64_t& out_off) {
  in_off = out_off = 0;
  for (int d = static_cast<int>(p.k_size.size()) - 1; d >= 0; --d) {
    const int64_t i = o % p.k_size[d];
    o /= p.k_size[d];
    in_off += i * p.k_in[d];
    out_off += i * p.k_out[d];
  }
}

// Walks kept-linear indices from `o` upwards, keeping the input and output offsets current
// without a division per output.
struct KeptCursor {
  const ReducePlan& p;
  int64_t ctr[kMaxDims];
  int64_t in_off = 0, out_off = 0;
  KeptCursor(const ReducePlan& plan, int64_t o) : p(plan) {
    for (int d = static_cast<int>(p.k_size.size()) - 1; d >= 0; --d) {
      ctr[d] = o % p.k_size[d];
      o /= p.k_size[d];
      in_off += ctr[d] * p.k_in[d];
      out_off += ctr[d] * p.k_out[d];
    }
  }
  void next() {
    for (int d = static_cast<int>(p.k_size.size()) - 1; d >= 0; --d) {
      in_off += p.k_in[d];
      out_off += p.k_out[d];
      if (++ctr[d] < p.k_size[d]) return;
      in_off -= ctr[d] * p.k_in[d];
      out_off -= ctr[d] * p.k_out[d];
      ctr[d] = 0;
    }
  }
};

// Outer path: acc[0..n) accumulates the rows of the reduced range [rb, re); rows start at
// base + (reduced offset). Rows are gathered in blocks whose partial results are combined into
// acc (a two-level cascade that keeps float sums accurate).
template <class Op>
void accumulate_block_rows(const Op& op, const ReducePlan& p, const in_of<Op>* base, int64_t n,
                           int64_t rb, int64_t re, acc_of<Op>* acc, acc_of<Op>* tmp) {
  constexpr int64_t kRowBlock = 64;
  const int nr = static_cast<int>(p.r_size.size());
  int64_t ctr[kMaxDims];
  int64_t rem = rb, off = 0;
  for (int d = nr - 1; d >= 0; --d) {
    ctr[d] = rem % p.r_size[d];
    rem /= p.r_size[d];
    off += ctr[d] * p.r_in[d];
  }
  for (int64_t b = rb; b < re; b += kRowBlock) {
    const int64_t be = std::min(re, b + kRowBlock);
    for (int64_t i = 0; i < n; ++i) tmp[i] = op.identity();
    for (int64_t r = b; r < be; ++r) {
      op.accumulate_rows(tmp, base + off, n, r);
      for (int d = nr - 1; d >= 0; --d) {
        off += p.r_in[d];
        if (++ctr[d] < p.r_size[d]) break;
        off -= ctr[d] * p.r_in[d];
        ctr[d] = 0;
      }
    }
    for (int64_t i = 0; i < n; ++i) acc[i] = op.combine(acc[i], tmp[i]);
  }
}

// Runs f(task) for every task in [0, ntasks) on the thread pool. Tasks are claimed one by one
// from a shared counter rather than split statically, so a thread that is descheduled (a loaded
// machine) does not hold up the others: they simply take more tasks.
template <class F> void run_tasks(int64_t ntasks, int threads, const F& f) {
  if (ntasks <= 1 || threads <= 1) {
    for (int64_t t = 0; t < ntasks; ++t) f(t);
    return;
  }
  std::atomic<int64_t> next{0};
  parallel_for(0, std::min<int64_t>(threads, ntasks), 1, [&](int64_t, int64_t) {
    for (int64_t t = next.fetch_add(1, std::memory_order_relaxed); t < ntasks;
         t = next.fetch_add(1, std::memory_order_relaxed))
      f(t);
  });
}

// Runs `op` over the plan. `in` points at the input's first element; op.write(i, acc) stores
// output element i (contiguous offset, shared by all of the op's outputs).
template <class Op>
void run_reduce(const Op& op, const ReducePlan& p, const in_of<Op>* in) {
  using acc_t = acc_of<Op>;
  const int64_t N = p.out_numel, R = p.red_numel;
  if (N == 0) return;
  if (R == 0) {
    for (int64_t o = 0; o < N; ++o) {
      int64_t io, oo;
      kept_offsets(p, o, io, oo);
      op.write(oo, op.identity());
    }
    return;
  }
  const int threads = N * R <= kGrainSize || in_parallel_region() ? 1 : get_num_threads();
  GilRelease nogil(N * R > kGrainSize);  // also on one thread, where no parallel_for would
  // Aim for several tasks per thread (balance), each of at least ~kGrainSize elements.
  const int64_t want_tasks = 8 * static_cast<int64_t>(threads);

  if (!p.outer()) {
    // ---- inner path ----
    int64_t S = 1;  // reduction splits per output, when there are too few outputs to share
    if (threads > 1 && N < want_tasks)
      S = std::max<int64_t>(1, std::min<int64_t>((want_tasks + N - 1) / N, R / kGrainSize));
    if (S == 1) {
      const bool one_run = p.r_size.size() <= 1;  // each output reduces one contiguous run
      const int64_t per_task = threads == 1 ? N
          : std::max<int64_t>({1, kGrainSize / R, N / want_tasks});
      run_tasks((N + per_task - 1) / per_task, threads, [&](int64_t t) {
        const int64_t b = t * per_task, e = std::min(N, b + per_task);
        KeptCursor c(p, b);
        for (int64_t o = b; o < e; ++o, c.next()) {
          if (one_run) op.write(c.out_off, op.reduce_run(in + c.in_off, R, 0));
          else op.write(c.out_off, reduce_range(op, p, in + c.in_off, 0, R));
        }
      });
      return;
    }
    std::unique_ptr<acc_t[]> partial(new acc_t[N * S]);
    run_tasks(N * S, threads, [&](int64_t t) {
      const int64_t o = t / S, s = t % S;
      int64_t io, oo;
      kept_offsets(p, o, io, oo);
      partial[t] = reduce_range(op, p, in + io, R * s / S, R * (s + 1) / S);
    });
    for (int64_t o = 0; o < N; ++o) {  // partial results combined in order (first index wins)
      acc_t a = partial[o * S];
      for (int64_t s = 1; s < S; ++s) a = op.combine(a, partial[o * S + s]);
      int64_t io, oo;
      kept_offsets(p, o, io, oo);
      op.write(oo, a);
    }
    return;
  }

  // ---- outer path: the innermost kept dim (n0 outputs) is contiguous in the input ----
  constexpr int64_t kTileBytes = 16384;
  constexpr int64_t T = std::max<int64_t>(16, kTileBytes / static_cast<int64_t>(sizeof(acc_t)));
  const int64_t n0 = p.k_size.back();
  const int64_t M = N / n0, ntiles = (n0 + T - 1) / T, tiles = M * ntiles;
  int64_t S = 1;
  if (threads > 1 && tiles < want_tasks)
    S = std::max<int64_t>(1, std::min<int64_t>((want_tasks + tiles - 1) / tiles,
                                               R * std::min(n0, T) / kGrainSize));
  std::unique_ptr<acc_t[]> partial(S > 1 ? new acc_t[N * S] : nullptr);
  const int64_t per_task = threads == 1 ? tiles * S
      : std::max<int64_t>(1, kGrainSize / (R / S * std::min(n0, T) + 1));
  run_tasks((tiles * S + per_task - 1) / per_task, threads, [&](int64_t task) {
    std::unique_ptr<acc_t[]> acc(new acc_t[T]), tmp(new acc_t[T]);
    for (int64_t t = task * per_task, te = std::min(tiles * S, t + per_task); t < te; ++t) {
      const int64_t s = t % S, tile = t / S, m = tile / ntiles;
      const int64_t j0 = (tile % ntiles) * T, n = std::min(T, n0 - j0);
      int64_t io, oo;
      kept_offsets(p, m * n0, io, oo);
      for (int64_t i = 0; i < n; ++i) acc[i] = op.identity();
      accumulate_block_rows(op, p, in + io + j0, n, R * s / S, R * (s + 1) / S, acc.get(), tmp.get());
      if (S == 1) {
        const int64_t ostride = p.k_out.back();
        for (int64_t i = 0; i < n; ++i) op.write(oo + (j0 + i) * ostride, acc[i]);
      } else {
        std::copy(acc.get(), acc.get() + n, partial.get() + s * N + m * n0 + j0);
      }
    }
  });
  if (S > 1) {
    for (int64_t o = 0; o < N; ++o) {
      acc_t a = partial[o];
      for (int64_t s = 1; s < S; ++s) a = op.combine(a, partial[s * N + o]);
      int64_t io, oo;
      kept_offsets(p, o, io, oo);
      op.write(oo, a);
    }
  }
}

// ---- the common op: map each element, combine with a binary function, project the result ----
// reduce_run uses kLanes independent accumulators (vectorised) and pairwise combination of
// blocks, so float32 sums stay accurate over millions of elements.
template <typename In, typename Acc, typename Out, typename Map, typename Comb, typename Proj>
struct MapReduceOp {
  using in_t = In;
  using acc_t = Acc;
  static constexpr int kLanes = sizeof(Acc) >= 8 ? 16 : sizeof(Acc) == 4 ? 32 : 64;
  static constexpr int64_t kBlock = 16384;  // per lane: 512 sequential adds, then pairwise
  Acc init;
  Map map;
  Comb comb;
  Proj proj;
  Out* out;

  Acc identity() const { return init; }
  Acc combine(Acc a, Acc b) const { return comb(a, b); }
  // flatten, noinline (here and below): map and comb inlined into one copy of the loops, as
  // nary_loop_impl in kernels/loops.h.
  __attribute__((flatten, noinline)) Acc reduce_run(const In* p, int64_t n, int64_t) const {
    if (n < 2 * kLanes) {
      Acc a = init;
      for (int64_t i = 0; i < n; ++i) a = comb(a, map(p[i]));
      return a;
    }
    return pairwise(p, n);
  }
  __attribute__((flatten, noinline)) Acc pairwise(const In* __restrict__ p, int64_t n) const {
    if (n > kBlock) {
      const int64_t half = (n / 2) / kLanes * kLanes;
      return comb(pairwise(p, half), pairwise(p + half, n - half));
    }
    Acc a[kLanes];
    for (int l = 0; l < kLanes; ++l) a[l] = init;
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes)
      for (int l = 0; l < kLanes; ++l) a[l] = comb(a[l], map(p[i + l]));
    for (int l = 0; i < n && l < kLanes; ++i, ++l) a[l] = comb(a[l], map(p[i]));
    for (int w = kLanes / 2; w > 0; w /= 2)
      for (int l = 0; l < w; ++l) a[l] = comb(a[l], a[l + w]);
    return a[0];
  }
  __attribute__((flatten, noinline)) void accumulate_rows(Acc* __restrict__ acc,
                                                          const In* __restrict__ row, int64_t n,
                                                          int64_t) const {
    for (int64_t i = 0; i < n; ++i) acc[i] = comb(acc[i], map(row[i]));
  }
  void write(int64_t i, Acc a) const { out[i] = cast_to<Out>(proj(a)); }
};

template <typename In, typename Acc, typename Out, typename Map, typename Comb, typename Proj>
MapReduceOp<In, Acc, Out, Map, Comb, Proj> make_op(Acc init, Map map, Comb comb, Proj proj, Out* out) {
  return {init, map, comb, proj, out};
}

// Allocates the result (reduced shape, out_dtype), plans the reduction and calls
// kernel(plan, planned input, result): the planned input is x or its copy with the reduced dims
// last (plan_input). The arithmetic reductions pass a kernel of ops/cpu_kernels.h.
template <class Kernel>
Tensor reduce_planned(const Tensor& x, const std::vector<bool>& mask, bool keepdim,
                      ScalarType out_dtype, Kernel kernel, bool keep_order = false) {
  Tensor result = empty(reduced_shape(x, mask, keepdim), out_dtype, x->device());
  ReducePlan plan;
  Tensor in = plan_input(x, mask, keep_order, plan);
  kernel(static_cast<const ReducePlan&>(plan), in, result);
  return result;
}

// reduce_planned with the input's C++ type: body(tag, plan, typed input, result) (TypeTag<T>).
template <class Body>
Tensor reduce_with(const char* name, const Tensor& x, const std::vector<bool>& mask, bool keepdim,
                   ScalarType out_dtype, Body body, bool keep_order = false) {
  return reduce_planned(x, mask, keepdim, out_dtype,
                        [&](const ReducePlan& plan, const Tensor& in, const Tensor& result) {
    dispatch_all(in->dtype, name, [&](auto tag) {
      using T = typename decltype(tag)::type;
      body(tag, plan, in->template data_as<T>(), result);
    });
  }, keep_order);
}

struct Identity {
  template <typename T> T operator()(T v) const { return v; }
};

}  // namespace reduce_detail
}  // namespace ember
