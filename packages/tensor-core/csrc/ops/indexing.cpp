// indexing.cpp: every index op lowered onto one index plan (kernels/index_plan.h): checks
// first (dtypes, shapes, every index in range), then one run of the plan.
#include "ops/indexing.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <functional>
#include <limits>

#include "kernels/index_plan.h"
#include "kernels/iterator.h"
#include "ops/elementwise.h"
#include "runtime/gil.h"

namespace ember {
namespace {

using index_plan::byte_strides;
using index_plan::IdxOperand;
using index_plan::Plan;
using index_plan::run_copy;
using index_plan::run_reduce;

// ---------------------------------------------------------------------------------------------
// Index checks (run before anything is written)

Tensor as_long(const Tensor& idx) { return to_dtype(idx, ScalarType::Int64); }

// The first index value outside [-size, size) (or [0, size) when negatives are refused).
std::optional<int64_t> find_bad_index(const Tensor& idx64, int64_t size, bool allow_negative) {
  Tensor c = contiguous(idx64);
  const int64_t n = c->numel();
  if (n == 0) return std::nullopt;
  const int64_t* v = c->data_as<int64_t>();
  const int64_t lo = allow_negative ? -size : 0;
  std::atomic<int64_t> first_bad{n};
  parallel_for(0, n, 1 << 16, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i)
      if (v[i] < lo || v[i] >= size) {
        int64_t cur = first_bad.load();
        while (i < cur && !first_bad.compare_exchange_weak(cur, i)) {}
        return;
      }
  });
  const int64_t at = first_bad.load();
  if (at == n) return std::nullopt;
  return v[at];
}

void check_index_dtype_int(const Tensor& idx, const char* msg) {
  EMBER_CHECK(idx->dtype == ScalarType::Int64 || idx->dtype == ScalarType::Int32,
              std::runtime_error, msg);
}

// A tensor that may alias `self`'s memory is copied first, so writes cannot change it mid-op.
Tensor unalias(const Tensor& t, const Tensor& self) {
  return (t && t->storage == self->storage) ? clone(t) : t;
}

Tensor as_1d(const Tensor& t) { return t->dim() == 0 ? view(t, {1}) : t; }

// The 0-d tensor `value` in dtype `dt`, a source with zero strides; a value `dt` cannot hold
// raises, as PyTorch's fills do (uint8 masked_fill of -3.27 is an error, not 253).
Tensor scalar_source(Scalar value, ScalarType dt) {
  return scalar_tensor(value, dt, /*checked=*/true);
}

// ---------------------------------------------------------------------------------------------
// Advanced indexing

struct Advanced {
  Tensor self;                  // possibly permuted / unsqueezed view of the indexed tensor
  std::vector<Tensor> idx;      // int64, broadcast to `bshape`
  std::vector<int64_t> pos;     // dims of `self` they index, consecutive from `first`
  Shape bshape;
  int64_t first = 0;
  Shape result;
};

// `before_bounds` runs once the result's shape is known and before any index value is read:
// index_put_ checks the values there, as torch does before its kernel checks the bounds.
Advanced prepare_advanced(Tensor self, const std::vector<Tensor>& indices,
                          const std::function<void(const Advanced&)>& before_bounds = nullptr) {
  // 1. dtypes, masks -> int64 index tensors (a mask covering k dims becomes k of them).
  std::vector<Tensor> expanded;  // one per dim of self (null: whole dim)
  std::vector<bool> checked;     // from a mask: always in range
  for (const auto& ix : indices) {
    if (!ix) {
      expanded.push_back(nullptr);
      checked.push_back(true);
      continue;
    }
    const ScalarType dt = ix->dtype;
    EMBER_CHECK(dt == ScalarType::Int64 || dt == ScalarType::Int32 || dt == ScalarType::Bool ||
                    dt == ScalarType::UInt8,
                IndexError, "tensors used as indices must be long, int, byte or bool tensors");
    if (dt == ScalarType::Bool || dt == ScalarType::UInt8) {
      const int64_t at = static_cast<int64_t>(expanded.size());
      if (ix->dim() == 0) {  // x[True]: a new dim of size 1 (or 0)
        self = unsqueeze(self, at);
        bool on = to_dtype(ix, ScalarType::Bool)->data_as<bool>()[0];
        Tensor t = empty({on ? 1 : 0}, ScalarType::Int64);
        if (on) t->data_as<int64_t>()[0] = 0;
        expanded.push_back(t);
        checked.push_back(true);
        continue;
      }
      EMBER_CHECK(at + ix->dim() <= self->dim(), IndexError, "too many indices for tensor of dimension ",
                  self->dim());
      for (int64_t j = 0; j < ix->dim(); ++j)
        EMBER_CHECK(ix->sizes[j] == self->sizes[at + j], IndexError, "The shape of the mask ",
                    shape_str(ix->sizes), " at index ", j,
                    " does not match the shape of the indexed tensor ", shape_str(self->sizes),
                    " at index ", at + j);
      Tensor nz = nonzero(ix);
      for (int64_t j = 0; j < ix->dim(); ++j) {
        expanded.push_back(select(nz, 1, j));
        checked.push_back(true);
      }
    } else {
      expanded.push_back(as_long(ix));
      checked.push_back(false);
    }
  }
  EMBER_CHECK(static_cast<int64_t>(expanded.size()) <= self->dim(), IndexError,
              "too many indices for tensor of dimension ", self->dim());
  // 2. broadcast the index tensors together.
  Advanced a;
  std::vector<int64_t> pos;
  Shape b;
  bool first = true;
  try {
    for (size_t i = 0; i < expanded.size(); ++i)
      if (expanded[i]) {
        b = first ? expanded[i]->sizes : broadcast_shapes(b, expanded[i]->sizes);
        first = false;
        pos.push_back(static_cast<int64_t>(i));
      }
  } catch (const std::runtime_error&) {
    std::string shapes;
    for (auto& e : expanded)
      if (e) shapes += (shapes.empty() ? "" : ", ") + shape_str(e->sizes);
    throw IndexError("shape mismatch: indexing tensors could not be broadcast together with shapes " +
                     shapes);
  }
  const Shape indexed_sizes = self->sizes;  // before step 3 permutes `self`
  // 3. separated index tensors: their dims move to the front (NumPy's rule).
  const int64_t K = static_cast<int64_t>(pos.size());
  const bool adjacent = K == 0 || pos.back() - pos.front() == K - 1;
  if (!adjacent) {
    Shape perm;
    for (auto p : pos) perm.push_back(p);
    for (int64_t d = 0; d < self->dim(); ++d)
      if (std::find(pos.begin(), pos.end(), d) == pos.end()) perm.push_back(d);
    self = permute(self, perm);
    for (int64_t k = 0; k < K; ++k) pos[k] = k;
  }
  a.first = K ? pos.front() : 0;
  a.self = self;
  a.pos = pos;
  a.bshape = b;
  for (auto& e : expanded)
    if (e) a.idx.push_back(expand(e, b));
  for (int64_t d = 0; d < a.first; ++d) a.result.push_back(self->sizes[d]);
  for (auto s : b) a.result.push_back(s);
  for (int64_t d = a.first + K; d < self->dim(); ++d) a.result.push_back(self->sizes[d]);
  if (before_bounds) before_bounds(a);
  // 4. bounds, before anything reads through them.
  for (size_t k = 0; k < pos.size(); ++k) {
    if (checked[pos[k]]) continue;
    const int64_t size = indexed_sizes[pos[k]];
    if (auto bad = find_bad_index(expanded[pos[k]], size, true))
      throw IndexError(str_cat("index ", *bad, " is out of bounds for dimension ", k, " with size ",
                               size));
  }
  return a;
}

// Strides (bytes) of the indexed tensor over the result's dims (0 on the broadcast dims), and
// the index operands over the same dims.
void fill_advanced(const Advanced& a, std::vector<int64_t>& st, std::vector<IdxOperand>& ops) {
  const int64_t K = static_cast<int64_t>(a.pos.size()), nb = static_cast<int64_t>(a.bshape.size());
  const int64_t es = static_cast<int64_t>(a.self->element_size());
  const int64_t nd = static_cast<int64_t>(a.result.size());
  st.assign(nd, 0);
  for (int64_t d = 0; d < a.first; ++d) st[d] = a.self->strides[d] * es;
  for (int64_t d = a.first + K; d < a.self->dim(); ++d) st[d - K + nb] = a.self->strides[d] * es;
  for (int64_t k = 0; k < K; ++k) {
    IdxOperand o;
    o.data = a.idx[k]->data_as<int64_t>();
    o.st.assign(nd, 0);
    for (int64_t j = 0; j < nb; ++j) o.st[a.first + j] = a.idx[k]->strides[j];
    o.size = a.self->sizes[a.pos[k]];
    o.step = a.self->strides[a.pos[k]] * es;
    ops.push_back(std::move(o));
  }
}

}  // namespace

IndexReduce parse_index_reduce(const std::string& name, bool legacy) {
  if (legacy) {
    if (name == "add") return IndexReduce::Sum;
    if (name == "multiply") return IndexReduce::Prod;
    throw std::runtime_error("reduce argument must be either add or multiply.");
  }
  if (name == "sum") return IndexReduce::Sum;
  if (name == "prod") return IndexReduce::Prod;
  if (name == "mean") return IndexReduce::Mean;
  if (name == "amax") return IndexReduce::Max;
  if (name == "amin") return IndexReduce::Min;
  throw std::runtime_error(
      "reduce argument must be either sum, prod, mean, amax or amin, got " + name);
}

bool indices_have_byte_mask(const std::vector<Tensor>& indices) {
  for (auto& t : indices)
    if (t && t->dtype == ScalarType::UInt8) return true;
  return false;
}

Tensor index(const Tensor& self, const std::vector<Tensor>& indices) {
  Advanced a = prepare_advanced(self, indices);
  Tensor out = empty(a.result, self->dtype);
  Plan p;
  p.shape = a.result;
  p.elsize = static_cast<int64_t>(self->element_size());
  p.dst = out->data();
  p.dst_st = byte_strides(out);
  p.src = a.self->data();
  fill_advanced(a, p.src_st, p.idx);
  run_copy<false>(p);
  return out;
}

void index_put_(const Tensor& self, const std::vector<Tensor>& indices, const Tensor& values,
                bool accumulate) {
  GilRelease nogil(values->numel() + self->numel() > kGrainSize);
  std::vector<Tensor> idx;
  for (auto& t : indices) idx.push_back(unalias(t, self));
  // torch's order: the index dtypes, masks and broadcast (prepare_advanced), then the values'
  // dtype and shape, then the index bounds; a self with overlapping elements last.
  Shape vs = values->sizes;  // values broadcast to the result (leading size-1 dims may be dropped)
  Advanced a = prepare_advanced(self, idx, [&](const Advanced& a) {
    EMBER_CHECK(values->dtype == self->dtype, std::runtime_error,
                "Index put requires the source and destination dtypes match, got ",
                torch_type_name(self->dtype), " for the destination and ",
                torch_type_name(values->dtype), " for the source.");
    while (vs.size() > a.result.size() && vs.front() == 1) vs.erase(vs.begin());
    bool ok = vs.size() <= a.result.size();
    for (size_t i = 0; ok && i < vs.size(); ++i) {
      const int64_t want = a.result[a.result.size() - vs.size() + i];
      ok = vs[i] == want || vs[i] == 1;
    }
    EMBER_CHECK(ok, std::runtime_error, "shape mismatch: value tensor of shape ",
                shape_str(values->sizes), " cannot be broadcast to indexing result of shape ",
                shape_str(a.result));
  });
  check_inplace_writable(self, "index_put_");
  Tensor v = unalias(values, self);
  v = expand(view(v->is_contiguous() ? v : contiguous(v), vs), a.result);
  Plan p;
  p.shape = a.result;
  p.elsize = static_cast<int64_t>(self->element_size());
  p.dst = a.self->data();
  fill_advanced(a, p.dst_st, p.idx);
  p.src = v->data();
  p.src_st = byte_strides(v);
  if (accumulate) run_reduce(p, self->dtype, IndexReduce::Sum, Scalar::from_int(1), "index_put_");
  else run_copy<true>(p);
  self->bump_version();
}

// ---------------------------------------------------------------------------------------------
// dim-wise ops

// torch wraps `dim` before it checks the index (a bad dim is the IndexError it reports first).

Tensor index_select(const Tensor& self, int64_t dim, const Tensor& index) {
  dim = wrap_dim(dim, self->dim());
  EMBER_CHECK(index->dim() <= 1, IndexError, "index_select(): Index is supposed to be a vector");
  check_index_dtype_int(index, "index_select(): Expected dtype int32 or int64 for index");
  const Tensor s = as_1d(self);
  dim = wrap_dim(dim, self->dim());
  Tensor idx = as_long(as_1d(index));
  if (find_bad_index(idx, s->sizes[dim], false)) throw IndexError("index out of range in self");
  Shape rs = s->sizes;
  rs[dim] = idx->numel();
  Tensor out = empty(rs, self->dtype);
  Plan p;
  p.shape = rs;
  p.elsize = static_cast<int64_t>(self->element_size());
  p.dst = out->data();
  p.dst_st = byte_strides(out);
  p.src = s->data();
  p.src_st = byte_strides(s);
  p.src_st[dim] = 0;
  IdxOperand o{idx->data_as<int64_t>(), std::vector<int64_t>(rs.size(), 0), s->sizes[dim],
               p.elsize * s->strides[dim]};
  o.st[dim] = idx->strides[0];
  p.idx.push_back(o);
  run_copy<false>(p);
  return self->dim() == 0 ? view(out, {}) : out;
}

namespace {

// Shared checks of gather / scatter: index dims, sizes, dtype; returns the 1-d-ised views.
void check_gather_sizes(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                        const char* op, bool is_scatter) {
  const int64_t sd = std::max<int64_t>(self->dim(), 1), id = std::max<int64_t>(index->dim(), 1);
  if (index->numel() == 0) return;
  EMBER_CHECK(sd == id, std::runtime_error,
              "Index tensor must have the same number of dimensions as ",
              is_scatter ? "self" : "input", " tensor");
  if (src) {
    EMBER_CHECK(std::max<int64_t>(src->dim(), 1) == id, std::runtime_error,
                "Index tensor must have the same number of dimensions as src tensor");
  }
  const Tensor s1 = as_1d(self), i1 = as_1d(index);
  const Tensor r1 = src ? as_1d(src) : nullptr;
  for (int64_t d = 0; d < id; ++d) {
    bool ok = d == dim || i1->sizes[d] <= s1->sizes[d];
    if (is_scatter) {
      if (r1) ok = ok && i1->sizes[d] <= r1->sizes[d];
      EMBER_CHECK(ok, std::runtime_error, "Expected index ", shape_str(index->sizes),
                  " to be no larger than self ", shape_str(self->sizes), " apart from dimension ",
                  dim, r1 ? str_cat(" and to be no larger size than src ", shape_str(src->sizes)) : "");
    } else {
      EMBER_CHECK(ok, std::runtime_error, "Size does not match at dimension ", d, " expected index ",
                  shape_str(index->sizes), " to be no larger than self ", shape_str(self->sizes),
                  " apart from dimension ", dim);
    }
  }
  (void)op;
}

// uint16-64 have none of torch's scatter/gather/index kernels (it refuses them by the kernel's
// name, before the bounds of the indices are checked).
void refuse_wide_unsigned(const Tensor& self, const char* kernel) {
  EMBER_CHECK(!is_wide_unsigned(self->dtype), NotImplementedError, "\"", kernel,
              "\" not implemented for '", torch_type_name(self->dtype), "'");
}

Tensor gather_impl(const Tensor& self, int64_t dim, const Tensor& index, bool wrap_negative) {
  dim = wrap_dim(dim, self->dim());
  check_gather_sizes(self, dim, index, nullptr, "gather", false);
  Tensor out = empty(index->sizes, self->dtype);
  if (index->numel() == 0) return out;
  refuse_wide_unsigned(self, "scatter_gather_tensor_cpu");
  const Tensor s = as_1d(self);
  Tensor idx = as_long(as_1d(index));
  const int64_t size = s->sizes[dim];
  if (auto bad = find_bad_index(idx, size, wrap_negative))
    throw std::runtime_error(str_cat("index ", *bad, " is out of bounds for dimension ", dim,
                                     " with size ", size));
  Plan p;
  p.shape = idx->sizes;
  p.elsize = static_cast<int64_t>(self->element_size());
  Tensor o1 = as_1d(out);
  p.dst = o1->data();
  p.dst_st = byte_strides(o1);
  p.src = s->data();
  p.src_st = byte_strides(s);
  p.src_st[dim] = 0;
  p.idx.push_back({idx->data_as<int64_t>(), idx->strides, size, p.elsize * s->strides[dim]});
  run_copy<false>(p);
  return out;
}

}  // namespace

Tensor gather(const Tensor& self, int64_t dim, const Tensor& index) {
  dim = wrap_dim(dim, self->dim());
  check_index_dtype_int(index, "gather(): Expected dtype int32/int64 for index");
  return gather_impl(self, dim, index, false);
}

void scatter_(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src_in,
              Scalar value, IndexReduce reduce, const char* op) {
  GilRelease nogil(index->numel() > kGrainSize);
  dim = wrap_dim(dim, self->dim());
  check_index_dtype_int(index, str_cat(op, "(): Expected dtype int32/int64 for index").c_str());
  if (src_in)
    EMBER_CHECK(src_in->dtype == self->dtype, std::runtime_error, op,
                "(): Expected self.dtype to be equal to src.dtype");
  dim = wrap_dim(dim, self->dim());
  check_gather_sizes(self, dim, index, src_in, op, true);
  check_inplace_writable(self, op);
  if (index->numel() == 0) return;
  refuse_wide_unsigned(self, src_in ? "scatter_gather_tensor_cpu" : "scatter_gather_scalar_cpu");
  const Tensor s = as_1d(self);
  Tensor idx = unalias(as_long(as_1d(index)), self);
  const int64_t size = s->sizes[dim];
  if (auto bad = find_bad_index(idx, size, false))
    throw std::runtime_error(str_cat("index ", *bad, " is out of bounds for dimension ", dim,
                                     " with size ", size));
  Tensor src = src_in ? as_1d(unalias(src_in, self)) : scalar_source(value, self->dtype);
  Plan p;
  p.shape = idx->sizes;
  p.elsize = static_cast<int64_t>(self->element_size());
  p.dst = s->data();
  p.dst_st = byte_strides(s);
  p.dst_st[dim] = 0;
  p.src = src->data();
  p.src_st = src_in ? byte_strides(src) : std::vector<int64_t>(idx->dim(), 0);
  p.idx.push_back({idx->data_as<int64_t>(), idx->strides, size, p.elsize * s->strides[dim]});
  if (reduce == IndexReduce::None) run_copy<true>(p);
  else run_reduce(p, self->dtype, reduce, Scalar::from_int(1), op);
  self->bump_version();
}

void scatter_reduce_(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                     IndexReduce reduce, bool include_self) {
  GilRelease nogil(index->numel() > kGrainSize);
  dim = wrap_dim(dim, self->dim());
  if (reduce == IndexReduce::Mean && self->dtype == ScalarType::Bool)
    throw NotImplementedError(
        "\"scatter_gather_tensor_cpu_reduce_mean\" not implemented for 'Bool'");
  check_index_dtype_int(index, "scatter_reduce(): Expected dtype int32/int64 for index");
  EMBER_CHECK(src->dtype == self->dtype, std::runtime_error,
              "scatter_reduce(): Expected self.dtype to be equal to src.dtype");
  const int64_t d = wrap_dim(dim, self->dim());
  check_gather_sizes(self, d, index, src, "scatter_reduce", true);
  if (is_complex(self->dtype) && (reduce == IndexReduce::Max || reduce == IndexReduce::Min))
    throw NotImplementedError(str_cat("\"scatter_gather_tensor_cpu_reduce_",
                                      reduce == IndexReduce::Max ? "amax" : "amin",
                                      "\" not implemented for '", type_name(self->dtype), "'"));
  check_inplace_writable(self, "scatter_reduce_");
  if (index->numel() == 0) return;
  refuse_wide_unsigned(self, "scatter_gather_tensor_cpu");
  Tensor src_c = unalias(src, self);
  if (!include_self) {
    Scalar ident;
    switch (reduce) {
      case IndexReduce::Prod: ident = Scalar::from_int(1); break;
      case IndexReduce::Max:
      case IndexReduce::Min:
        ident = dispatch_all(self->dtype, "scatter_reduce", [&](auto tag) {
          using T = typename decltype(tag)::type;
          using M = opmath_t<T>;
          const bool mx = reduce == IndexReduce::Max;
          if constexpr (std::is_same_v<T, bool>) return Scalar::from_bool(!mx);
          else if constexpr (std::is_integral_v<T>)
            return Scalar::from_int(mx ? int64_t(std::numeric_limits<T>::lowest())
                                       : int64_t(std::numeric_limits<T>::max()));
          else
            return Scalar::from_double(mx ? -std::numeric_limits<M>::infinity()
                                          : std::numeric_limits<M>::infinity());
        });
        break;
      default: ident = Scalar::from_int(0);
    }
    scatter_(self, d, index, nullptr, ident, IndexReduce::None, "scatter_reduce");
  }
  scatter_(self, d, index, src_c, Scalar(), reduce == IndexReduce::Mean ? IndexReduce::Sum : reduce,
           "scatter_reduce");
  if (reduce != IndexReduce::Mean) return;
  Tensor count = empty(self->sizes, ScalarType::Int64);
  fill_(count, Scalar::from_int(include_self ? 1 : 0));
  scatter_(count, d, index, nullptr, Scalar::from_int(1), IndexReduce::Sum, "scatter_reduce");
  ElementwiseIter it(self, self->dtype, {count}, "scatter_reduce");
  dispatch_all_and_complex(self->dtype, "scatter_reduce", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using M = opmath_t<T>;
    it.for_each([&](char** data, const int64_t* st, int64_t n) {
      for (int64_t i = 0; i < n; ++i) {
        T* o = reinterpret_cast<T*>(data[0] + i * st[0]);
        int64_t c = *reinterpret_cast<const int64_t*>(data[1] + i * st[1]);
        if (c == 0) c = 1;
        const M v = cast_to<M>(*o);
        if constexpr (std::is_same_v<T, bool>) {
          (void)v;  // refused above
        } else if constexpr (is_complex_v<M>) {
          *o = v / static_cast<typename M::value_type>(c);
        } else if constexpr (std::is_integral_v<M>) {
          M q = static_cast<M>(v / static_cast<M>(c));
          if ((v % static_cast<M>(c) != 0) && ((v < 0) != (c < 0))) --q;
          *o = cast_to<T>(q);
        } else {
          *o = cast_to<T>(static_cast<M>(v / static_cast<M>(c)));
        }
      }
    });
  });
}

namespace {

// index_add / index_copy: the plan over `source`'s shape that writes self[..., index[i], ...].
Plan dim_put_plan(const Tensor& s, int64_t dim, const Tensor& idx, const Tensor& src) {
  Plan p;
  p.shape = src->sizes;
  p.elsize = static_cast<int64_t>(s->element_size());
  p.dst = s->data();
  p.dst_st = byte_strides(s);
  p.dst_st[dim] = 0;
  p.src = src->data();
  p.src_st = byte_strides(src);
  IdxOperand o{idx->data_as<int64_t>(), std::vector<int64_t>(src->dim(), 0), s->sizes[dim],
               p.elsize * s->strides[dim]};
  o.st[dim] = idx->strides[0];
  p.idx.push_back(o);
  return p;
}

}  // namespace

void index_add_(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                Scalar alpha) {
  GilRelease nogil(source->numel() > kGrainSize);
  dim = wrap_dim(dim, self->dim());
  EMBER_CHECK(index->dim() <= 1, IndexError,
              "index_add_(): Index is supposed to be a vector, but got dim: ", index->dim(),
              " with type: ", torch_type_name(index->dtype), " and size: ", shape_str(index->sizes));
  EMBER_CHECK(index->dtype == ScalarType::Int64 || index->dtype == ScalarType::Int32,
              std::runtime_error, "index_add_(): Expected dtype int32/int64 for index but got: ",
              torch_type_name(index->dtype));
  EMBER_CHECK(self->dtype == source->dtype, std::runtime_error, "index_add_(): self (",
              torch_type_name(self->dtype), ") and source (", torch_type_name(source->dtype),
              ") must have the same scalar type");
  const Tensor s = as_1d(self), src = as_1d(source);
  const int64_t src_dim_size = src->dim() > dim ? src->sizes[dim] : 1;
  EMBER_CHECK(index->numel() == src_dim_size, std::runtime_error,
              "index_add_(): Number of indices (", index->numel(),
              ") should be equal to source.size(dim): (", src_dim_size, "), for dim: ", dim);
  bool same = s->dim() == src->dim();
  for (int64_t d = 0; same && d < s->dim(); ++d) same = d == dim || s->sizes[d] == src->sizes[d];
  EMBER_CHECK(same, std::runtime_error,
              "source tensor shape must match self tensor shape, excluding the specified "
              "dimension. Got self.shape = ", shape_str(self->sizes), " source.shape = ",
              shape_str(source->sizes));
  check_inplace_writable(self, "index_add_");
  Tensor idx = unalias(as_long(as_1d(index)), self);
  if (auto bad = find_bad_index(idx, s->sizes[dim], false))  // IndexError, as torch's
    throw IndexError(str_cat("index_add_(): index ", *bad, " is out of bounds for dimension ",
                             dim, " with size ", s->sizes[dim]));
  Plan p = dim_put_plan(s, dim, idx, unalias(src, self));
  run_reduce(p, self->dtype, IndexReduce::Sum, alpha, "index_add_");
  self->bump_version();
}

void index_copy_(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source) {
  GilRelease nogil(source->numel() > kGrainSize);
  check_inplace_writable(self, "index_copy_");  // (torch's first check: an overlapping self)
  dim = wrap_dim(dim, self->dim());
  EMBER_CHECK(index->dim() <= 1, IndexError,
              "index_copy_(): Index should have dimension 1 or 0 (got ", index->dim(), ")");
  // (torch's order: the index's and the ranks' IndexErrors, then the dtypes)
  EMBER_CHECK(source->dim() != 0 || index->numel() == 1, IndexError,
              "index_copy_(): When source is scalar, index should have one element (got ",
              index->numel(), ")");
  EMBER_CHECK(self->dim() == source->dim() || self->dim() == 0 || source->dim() == 0, IndexError,
              "index_copy_(): When source and destination are not scalars, their dimensionality "
              "must match. Source dimensionality (", source->dim(), "), destination dimensionality (",
              self->dim(), ")");
  EMBER_CHECK(index->dtype == ScalarType::Int64, std::runtime_error,
              "index_copy_(): Expected a long tensor for index, but got ",
              torch_type_name(index->dtype));
  EMBER_CHECK(self->dtype == source->dtype, std::runtime_error,
              "index_copy_(): self and source expected to have the same dtype, but got (self) ",
              torch_type_name(self->dtype), " and (source) ", torch_type_name(source->dtype));
  const Tensor s = as_1d(self), src = as_1d(source);
  EMBER_CHECK(s->dim() == src->dim(), IndexError,
              "index_copy_(): When source and destination are not scalars, their dimensionality "
              "must match. Source dimensionality (", source->dim(), "), destination dimensionality (",
              self->dim(), ")");
  for (int64_t d = 0, j = 0; d < s->dim(); ++d) {
    if (d == dim) continue;
    EMBER_CHECK(s->sizes[d] == src->sizes[d], std::runtime_error,
                "index_copy_(): Source/destination tensor must have same slice shapes. "
                "Destination slice shape: ", s->sizes[d], " at dimension ", j,
                " and source slice shape: ", src->sizes[d], " at dimension ", j, ".");
    ++j;
  }
  EMBER_CHECK(index->numel() == src->sizes[dim], IndexError,
              "index_copy_(): Number of indices (", index->numel(),
              ") should be equal to source.size(dim) (", src->sizes[dim], ")");
  refuse_wide_unsigned(self, "index_copy_cpu");  // (even with no index: torch's kernel)
  Tensor idx = unalias(as_1d(index), self);
  if (auto bad = find_bad_index(idx, s->sizes[dim], false))
    throw IndexError(str_cat("index_copy_(): index ", *bad, " is out of bounds for dimension ",
                             dim, " with size ", s->sizes[dim]));
  Plan p = dim_put_plan(s, dim, idx, unalias(src, self));
  run_copy<true>(p);
  self->bump_version();
}

void index_fill_(const Tensor& self, int64_t dim, const Tensor& index, Scalar value) {
  GilRelease nogil(self->numel() > kGrainSize);
  dim = wrap_dim(dim, self->dim());
  EMBER_CHECK(index->dtype == ScalarType::Int64, IndexError,
              "index_fill_(): Expected dtype int64 for index.");
  EMBER_CHECK(index->dim() <= 1, std::runtime_error, "Index has to be a vector/scalar");
  check_inplace_writable(self, "index_fill_");
  refuse_wide_unsigned(self, "index_fill_cpu");  // (even with no index: torch's kernel)
  const Tensor s = as_1d(self);
  Tensor idx = unalias(as_1d(index), self);
  if (auto bad = find_bad_index(idx, s->sizes[dim], true))
    throw IndexError(str_cat("index ", *bad, " is out of bounds for dimension ", dim,
                             " with size ", s->sizes[dim]));
  Tensor v = scalar_source(value, self->dtype);
  Plan p;
  p.shape = s->sizes;
  p.shape[dim] = idx->numel();
  p.elsize = static_cast<int64_t>(self->element_size());
  p.dst = s->data();
  p.dst_st = byte_strides(s);
  p.dst_st[dim] = 0;
  p.src = v->data();
  p.src_st.assign(s->dim(), 0);
  IdxOperand o{idx->data_as<int64_t>(), std::vector<int64_t>(s->dim(), 0), s->sizes[dim],
               p.elsize * s->strides[dim]};
  o.st[dim] = idx->strides[0];
  p.idx.push_back(o);
  run_copy<true>(p);
  self->bump_version();
}

// ---------------------------------------------------------------------------------------------
// masks

void masked_fill_(const Tensor& self, const Tensor& mask, Scalar value) {
  GilRelease nogil(self->numel() > kGrainSize);
  const Shape b = broadcast_shapes(self->sizes, mask->sizes);
  EMBER_CHECK(b == self->sizes, std::runtime_error, "masked_fill_: output with shape ",
              shape_str(self->sizes), " doesn't match the broadcast shape ", shape_str(b));
  // (a self whose elements share memory, an expanded one, is filled too: torch deprecates it
  // with a warning, which the bindings give; every element of a location writes the one value)
  Tensor v = scalar_source(value, self->dtype);
  ElementwiseIter it(self, self->dtype, {expand(mask, self->sizes)}, "masked_fill_");
  auto run = [&](auto tag) {  // by element size: a select the compiler vectorises
    using U = typename decltype(tag)::type;
    U val;
    std::memcpy(&val, v->data(), sizeof(U));
    it.for_each([&](char** data, const int64_t* st, int64_t n) {
      if (st[0] == int64_t(sizeof(U)) && st[1] == 1) {
        U* __restrict__ o = reinterpret_cast<U*>(data[0]);
        const uint8_t* __restrict__ m = reinterpret_cast<const uint8_t*>(data[1]);
        for (int64_t i = 0; i < n; ++i) o[i] = m[i] ? val : o[i];
        return;
      }
      for (int64_t i = 0; i < n; ++i)
        if (*reinterpret_cast<const bool*>(data[1] + i * st[1]))
          *reinterpret_cast<U*>(data[0] + i * st[0]) = val;
    });
  };
  switch (self->element_size()) {
    case 1: run(TypeTag<uint8_t>{}); break;
    case 2: run(TypeTag<uint16_t>{}); break;
    case 4: run(TypeTag<uint32_t>{}); break;
    case 8: run(TypeTag<uint64_t>{}); break;
    default: run(TypeTag<Bytes16>{}); break;  // complex128
  }
  self->bump_version();
}

Tensor masked_select(const Tensor& self, const Tensor& mask) {
  GilRelease nogil(self->numel() > kGrainSize);
  const Shape b = broadcast_shapes(self->sizes, mask->sizes);
  return index(expand(self, b), {expand(mask, b)});
}

void masked_scatter_(const Tensor& self, const Tensor& mask, const Tensor& source) {
  GilRelease nogil(self->numel() > kGrainSize);
  EMBER_CHECK(!is_wide_unsigned(self->dtype), NotImplementedError,  // (torch's kernel has none)
              "\"masked_scatter\" not implemented for '", type_name(self->dtype), "'");
  Tensor s = self->dim() == 0 ? view(self, {1}) : self;
  Tensor m = expand(mask, self->sizes);
  if (self->dim() == 0) m = view(contiguous(m), {1});
  check_inplace_writable(self, "masked_scatter_");
  Tensor nz = nonzero(m);
  const int64_t n = nz->sizes[0];
  EMBER_CHECK(source->numel() >= n, std::runtime_error,
              "Number of elements of source < number of ones in mask");
  Tensor vals = narrow(reshape(unalias(source, self), {-1}), 0, 0, n);
  std::vector<Tensor> cols;
  for (int64_t j = 0; j < s->dim(); ++j) cols.push_back(select(nz, 1, j));
  index_put_(s, cols, vals, false);
}

// ---------------------------------------------------------------------------------------------
// flat and along-dim

Tensor take(const Tensor& self, const Tensor& index) {
  EMBER_CHECK(index->dtype == ScalarType::Int64, std::runtime_error,
              "take(): Expected a long tensor for index, but got ", torch_type_name(index->dtype));
  const int64_t n = self->numel();
  EMBER_CHECK(n > 0 || index->numel() == 0, IndexError, "take(): tried to take from an empty tensor");
  if (index->numel()) refuse_wide_unsigned(self, "take_cpu");
  if (auto bad = find_bad_index(index, n, true))
    throw IndexError(str_cat("out of range: tried to access index ", *bad, " on a tensor of ", n,
                             " elements."));
  Tensor flat = reshape(self, {-1});
  Tensor out = empty(index->sizes, self->dtype);
  Plan p;
  p.shape = index->sizes;
  p.elsize = static_cast<int64_t>(self->element_size());
  p.dst = out->data();
  p.dst_st = byte_strides(out);
  p.src = flat->data();
  p.src_st.assign(index->dim(), 0);
  p.idx.push_back({index->data_as<int64_t>(), index->strides, n, p.elsize * flat->strides[0]});
  run_copy<false>(p);
  return out;
}

Tensor take_along_dim(const Tensor& self, const Tensor& indices, std::optional<int64_t> dim) {
  // no dim: torch's gather of the flattened input, which refuses negative indices (along a
  // dim they count from the end) and takes int32 indices as gather does
  if (!dim) {
    EMBER_CHECK(indices->dtype == ScalarType::Int64 || indices->dtype == ScalarType::Int32,
                std::runtime_error, "gather(): Expected dtype int32/int64 for index");
    return gather_impl(reshape(self, {-1}), 0, reshape(indices, {-1}), false);
  }
  EMBER_CHECK(indices->dtype == ScalarType::Int64, std::runtime_error,
              "torch.take_along_dim(): dtype of indices should be Long but got ",
              torch_type_name(indices->dtype));
  EMBER_CHECK(self->dim() == indices->dim(), std::runtime_error,
              "torch.take_along_dim(): input and indices should have the same number of "
              "dimensions, but got ", self->dim(), " dimensions for input, and ", indices->dim(),
              " dimensions for indices");
  const int64_t d = wrap_dim(*dim, self->dim());
  Shape s = self->sizes;
  if (self->dim() > 0) s[d] = indices->sizes[d];
  const Shape b = broadcast_shapes(s, indices->sizes);
  Shape sb = b;
  if (self->dim() > 0) sb[d] = self->sizes[d];
  return gather_impl(expand(self, sb), d, expand(indices, b), true);
}

Tensor nonzero(const Tensor& self) {
  if (is_complex(self->dtype))  // either part nonzero
    return nonzero(binary(BinaryOp::ne, Operand(self), Operand(Scalar::from_int(0))));
  GilRelease nogil(self->numel() > kGrainSize);
  Tensor x = contiguous(self);
  const int64_t n = x->numel(), nd = x->dim();
  const int64_t nchunks = std::max<int64_t>(1, std::min<int64_t>(get_num_threads(), n / 65536));
  const int64_t per = (n + nchunks - 1) / std::max<int64_t>(nchunks, 1);
  std::vector<int64_t> counts(nchunks + 1, 0);
  Tensor out;
  dispatch_all(x->dtype, "nonzero", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* v = x->data_as<T>();
    auto nz = [](T e) {
      if constexpr (std::is_same_v<T, bool>) return e;
      else if constexpr (std::is_integral_v<T>) return e != 0;
      else return static_cast<opmath_t<T>>(e) != 0;
    };
    parallel_for(0, nchunks, 1, [&](int64_t b, int64_t e) {
      for (int64_t c = b; c < e; ++c) {
        int64_t k = 0;
        for (int64_t i = c * per, end = std::min(n, (c + 1) * per); i < end; ++i) k += nz(v[i]);
        counts[c + 1] = k;
      }
    });
    for (int64_t c = 0; c < nchunks; ++c) counts[c + 1] += counts[c];
    out = empty({counts[nchunks], nd}, ScalarType::Int64);
    int64_t* o = out->data_as<int64_t>();
    parallel_for(0, nchunks, 1, [&](int64_t b, int64_t e) {
      std::vector<int64_t> coord(nd);
      for (int64_t c = b; c < e; ++c) {
        const int64_t start = c * per, end = std::min(n, (c + 1) * per);
        if (start >= end) continue;
        int64_t rem = start;
        for (int64_t d = nd - 1; d >= 0; --d) {
          coord[d] = rem % x->sizes[d];
          rem /= x->sizes[d];
        }
        int64_t* w = o + counts[c] * nd;
        for (int64_t i = start; i < end; ++i) {
          if (nz(v[i])) {
            for (int64_t d = 0; d < nd; ++d) *w++ = coord[d];
          }
          for (int64_t d = nd - 1; d >= 0; --d) {
            if (++coord[d] < x->sizes[d]) break;
            coord[d] = 0;
          }
        }
      }
    });
  });
  return out;
}

}  // namespace ember
