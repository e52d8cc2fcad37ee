// shape_ops.cpp: kernels of the joining and reshaping ops (see shape_ops.h).
//
// The core has no negative strides (views must stay non-negative so every kernel can assume
// them), but the elementwise machinery itself only adds byte strides to pointers. flip therefore
// builds a private, never-escaping TensorImpl whose flipped dims carry negative strides and whose
// offset points at the last element along them, and runs the ordinary copy kernel over it.
// roll and constant_pad_nd are a handful of block copies between narrowed views; cat and
// repeat_interleave are memcpy loops over (outer slice, input row) blocks when layouts allow.
#include "ops/shape_ops.h"

#include <algorithm>
#include <cstring>
#include <functional>

#include "kernels/iterator.h"
#include "ops/elementwise.h"
#include "runtime/gil.h"
#include "runtime/parallel.h"

namespace ember {
namespace {

bool is_legacy_empty(const Tensor& t) { return t->dim() == 1 && t->sizes[0] == 0; }

int64_t prod(const Shape& s, size_t b, size_t e) {
  int64_t n = 1;
  for (size_t i = b; i < e; ++i) n *= s[i];
  return n;
}

// memcpy for the short blocks of a cat along an inner dim (a few floats to a few hundred bytes):
// fixed-size copies the compiler inlines as vector moves, where a call to memcpy costs more than
// the copy itself.
inline void copy_block(char* __restrict__ dst, const char* __restrict__ src, int64_t bytes) {
  if (bytes >= 128) {
    std::memcpy(dst, src, static_cast<size_t>(bytes));
    return;
  }
  int64_t k = 0;
  for (; k + 8 <= bytes; k += 8) std::memcpy(dst + k, src + k, 8);
  for (; k < bytes; ++k) dst[k] = src[k];
}

// Runs task(o, i) for every o < outer and i < n (outer * n memcpy blocks, in that order) in
// parallel, each chunk of work holding at least ~64 KiB. The pairs are walked without a division
// per block: two 64-bit divisions cost as much as a 256-byte memcpy (a last-dim cat of two
// 1024 x 64 floats took twice torch's time).
template <typename Task>
void parallel_blocks(int64_t outer, int64_t n, int64_t total_bytes, const Task& task) {
  constexpr int64_t kBytesPerChunk = 1 << 16;
  const int64_t n_tasks = outer * n;
  if (n_tasks == 0) return;
  int64_t grain = total_bytes <= kBytesPerChunk * 2
                      ? n_tasks
                      : std::max<int64_t>(1, n_tasks * kBytesPerChunk / std::max<int64_t>(total_bytes, 1));
  parallel_for(0, n_tasks, grain, [&](int64_t b, int64_t e) {
    int64_t o = b / n, i = b % n;
    for (int64_t k = b; k < e; ++k) {
      task(o, i);
      if (++i == n) i = 0, ++o;
    }
  });
}

void check_no_overlap(const Tensor& out, const Tensor& in) {
  if (out->storage == in->storage && out->numel() > 0 && in->numel() > 0)
    throw std::runtime_error(
        "unsupported operation: some elements of the input tensor and the written-to tensor refer "
        "to a single memory location. Please clone() the tensor before performing the operation.");
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// cat

Shape cat_shape(const std::vector<Tensor>& tensors, int64_t dim, ScalarType* dtype,
                int64_t* wrapped_dim, ScalarType out_dtype) {
  auto check_cast = [&](ScalarType dt) {
    EMBER_CHECK(out_dtype == ScalarType::Undefined || can_cast(dt, out_dtype), TypeError,
                "torch.cat(): input types can't be cast to the desired output type ",
                torch_type_name(out_dtype));
  };
  if (tensors.empty()) throw ValueError("torch.cat(): expected a non-empty list of Tensors");
  ScalarType dt = ScalarType::Undefined;
  const Tensor* ref = nullptr;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    EMBER_CHECK(t->dim() > 0, std::runtime_error, "zero-dimensional tensor (at position ", i,
                ") cannot be concatenated");
    EMBER_CHECK(t->device() == tensors[0]->device(), std::runtime_error,
                "Expected all tensors to be on the same device, but found at least two devices, ",
                tensors[0]->device().str(), " and ", t->device().str(), "!");
    dt = promote_types(dt, t->dtype);
    if (!ref && !is_legacy_empty(t)) ref = &t;
  }
  if (dtype) *dtype = dt;
  if (!ref) {  // every input is a 1-d empty tensor: torch reads no dim then (any value goes)
    check_cast(dt);
    if (wrapped_dim) *wrapped_dim = 0;
    return {0};
  }
  const int64_t nd = (*ref)->dim();
  dim = wrap_dim(dim, nd);
  if (wrapped_dim) *wrapped_dim = dim;
  check_cast(dt);
  Shape shape = (*ref)->sizes;
  shape[dim] = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    if (is_legacy_empty(t)) continue;
    EMBER_CHECK(t->dim() == nd, std::runtime_error,
                "Tensors must have same number of dimensions: got ", nd, " and ", t->dim());
    for (int64_t d = 0; d < nd; ++d)
      if (d != dim && t->sizes[d] != shape[d])
        throw std::runtime_error(str_cat("Sizes of tensors must match except in dimension ", dim,
                                         ". Expected size ", shape[d], " but got size ",
                                         t->sizes[d], " for tensor number ", i, " in the list."));
    shape[dim] += t->sizes[dim];
  }
  return shape;
}

Tensor cat(const std::vector<Tensor>& tensors, int64_t dim_in, const Tensor& out_in) {
  ScalarType dt;
  int64_t dim;
  Shape shape = cat_shape(tensors, dim_in, &dt, &dim, out_in ? out_in->dtype : ScalarType::Undefined);
  Tensor out = out_in;
  if (out) {
    check_inplace_writable(out, "cat");
    resize_output(out, shape);  // first: an empty out may grow over an input's bytes
    for (auto& t : tensors) check_no_overlap(out, t);
  } else {
    out = empty(shape, dt, tensors[0]->device());
  }
  if (out->numel() == 0) return out;
  GilRelease nogil(out->numel() > kGrainSize);

  // Inputs that contribute, with their start along dim.
  std::vector<Tensor> parts;
  std::vector<int64_t> starts;
  int64_t pos = 0;
  bool fast = out->is_contiguous();
  for (auto& t : tensors) {
    if (is_legacy_empty(t) || t->sizes[dim] == 0) continue;
    parts.push_back(t);
    starts.push_back(pos);
    pos += t->sizes[dim];
    fast = fast && t->dtype == out->dtype && t->is_contiguous();
  }
  if (!fast) {
    for (size_t i = 0; i < parts.size(); ++i) {
      copy_(narrow(out, dim, starts[i], parts[i]->sizes[dim]), parts[i]);
    }
    return out;
  }
  // Contiguous, same dtype: for each outer slice, each input's block is one memcpy.
  const int64_t es = static_cast<int64_t>(out->element_size());
  const int64_t outer = prod(shape, 0, dim);
  const int64_t inner = prod(shape, dim + 1, shape.size()) * es;  // bytes per row along dim
  const int64_t out_row = shape[dim] * inner;                       // bytes per outer slice
  const int64_t n = static_cast<int64_t>(parts.size());
  char* dst = out->data();
  std::vector<const char*> src(parts.size());
  std::vector<int64_t> bytes(parts.size()), offset(parts.size());
  for (size_t i = 0; i < parts.size(); ++i) {
    src[i] = parts[i]->data();
    bytes[i] = parts[i]->sizes[dim] * inner;
    offset[i] = starts[i] * inner;
  }
  parallel_blocks(outer, n, outer * out_row, [&](int64_t o, int64_t i) {
    copy_block(dst + o * out_row + offset[i], src[i] + o * bytes[i], bytes[i]);
  });
  return out;
}

// ---------------------------------------------------------------------------------------------
// flip / roll

// flip with the last dim flipped, contiguous input: each output row is one input row reversed
// (a loop the compiler vectorises), the source row found by flipping the leading indices.
template <typename U>
static void reverse_rows(const Tensor& x, const std::vector<bool>& flipped, const Tensor& out) {
  const int64_t nd = x->dim(), n = x->sizes[nd - 1], rows = x->numel() / n;
  const U* src = reinterpret_cast<const U*>(x->data());
  U* dst = reinterpret_cast<U*>(out->data());
  parallel_for(0, rows, grain_for(n), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      int64_t rem = r, sr = 0, mul = 1;
      for (int64_t d = nd - 2; d >= 0; --d) {
        const int64_t size = x->sizes[d], i = rem % size;
        rem /= size;
        sr += (flipped[d] ? size - 1 - i : i) * mul;
        mul *= size;
      }
      const U* s = src + sr * n + (n - 1);
      U* o = dst + r * n;
      for (int64_t j = 0; j < n; ++j) o[j] = s[-j];
    }
  });
}

static void flip_rows(const Tensor& x, const std::vector<bool>& flipped, const Tensor& out) {
  switch (x->element_size()) {
    case 1: return reverse_rows<uint8_t>(x, flipped, out);
    case 2: return reverse_rows<uint16_t>(x, flipped, out);
    case 4: return reverse_rows<uint32_t>(x, flipped, out);
    case 8: return reverse_rows<uint64_t>(x, flipped, out);
    default: return reverse_rows<Bytes16>(x, flipped, out);  // complex128
  }
}

Tensor flip(const Tensor& x, const std::vector<int64_t>& dims_in) {
  GilRelease nogil(x->numel() > kGrainSize);
  const int64_t nd = x->dim();
  std::vector<bool> flipped(std::max<int64_t>(nd, 1), false);
  for (auto d : dims_in) {
    int64_t w = wrap_dim(d, nd);
    EMBER_CHECK(!flipped[w], std::runtime_error, "dim ", w, " appears multiple times in the list of dims");
    flipped[w] = true;
  }
  Tensor out = empty(x->sizes, x->dtype, x->device());
  if (out->numel() == 0) return out;
  if (nd > 0 && flipped[nd - 1] && x->sizes[nd - 1] > 1 && x->is_contiguous()) {
    flip_rows(x, flipped, out);
    return out;
  }
  // A private source view with negative strides on the flipped dims (never returned).
  auto src = std::make_shared<TensorImpl>(*x);
  src->base = nullptr;
  for (int64_t d = 0; d < nd; ++d)
    if (flipped[d] && x->sizes[d] > 1) {
      src->offset += (x->sizes[d] - 1) * x->strides[d];
      src->strides[d] = -x->strides[d];
    }
  ElementwiseIter it(out, out->dtype, {src}, "flip");
  run_copy_kernel(it, out->dtype, x->dtype);
  return out;
}

Tensor roll(const Tensor& x, const std::vector<int64_t>& shifts, const std::vector<int64_t>& dims) {
  GilRelease nogil(x->numel() > kGrainSize);
  EMBER_CHECK(!shifts.empty(), std::runtime_error, "`shifts` required");
  if (dims.empty()) {
    EMBER_CHECK(shifts.size() == 1, std::runtime_error, "shifts and dimensions must align. shifts: ",
                shifts.size(), ", dims:0");
    Tensor flat = roll(reshape(x, {x->numel()}), shifts, {0});
    return view(flat, x->sizes);
  }
  EMBER_CHECK(shifts.size() == dims.size(), std::runtime_error,
              "shifts and dimensions must align. shifts: ", shifts.size(), ", dims:", dims.size());
  if (x->numel() == 0 && x->dim() > 0) return clone(x);  // torch's, before it reads the dims
  const int64_t nd = x->dim();
  std::vector<int64_t> shift(std::max<int64_t>(nd, 1), 0);
  for (size_t i = 0; i < dims.size(); ++i) {
    int64_t d = wrap_dim(dims[i], nd, /*allow_scalar=*/false);  // (torch's IndexError for 0-d)
    int64_t n = x->sizes[d];
    if (n > 0) shift[d] = ((shift[d] + shifts[i]) % n + n) % n;
  }
  Tensor out = empty(x->sizes, x->dtype, x->device());
  if (out->numel() == 0 || nd == 0) {
    if (out->numel()) copy_(out, x);
    return out;
  }
  std::vector<int64_t> rolled;
  for (int64_t d = 0; d < nd; ++d)
    if (shift[d]) rolled.push_back(d);
  // Every combination of the two pieces along each rolled dim is one block copy:
  // out[s:n] = in[0:n-s] and out[0:s] = in[n-s:n].
  std::function<void(size_t, Tensor, Tensor)> go = [&](size_t k, Tensor o, Tensor i) {
    if (k == rolled.size()) {
      copy_(o, i);
      return;
    }
    const int64_t d = rolled[k], n = x->sizes[d], s = shift[d];
    go(k + 1, narrow(o, d, s, n - s), narrow(i, d, 0, n - s));
    go(k + 1, narrow(o, d, 0, s), narrow(i, d, n - s, s));
  };
  go(0, out, x);
  return out;
}

// ---------------------------------------------------------------------------------------------
// tril / triu

Tensor tril_triu(const Tensor& x, int64_t k, bool upper, bool inplace) {
  GilRelease nogil(x->numel() > kGrainSize);
  const char* name = upper ? "triu" : "tril";
  EMBER_CHECK(x->dim() >= 2, std::runtime_error, name,
              ": input tensor must have at least 2 dimensions");
  Tensor r;
  if (inplace) {
    check_inplace_writable(x, inplace ? (upper ? "triu_" : "tril_") : name);
    r = x;
  } else {
    r = empty(x->sizes, x->dtype, x->device());
    copy_(r, x);
  }
  const int64_t nd = r->dim(), rows = r->sizes[nd - 2], cols = r->sizes[nd - 1];
  if (r->numel() == 0) return r;
  // Any k beyond the matrix acts as the matrix's edge; clamping keeps i + k from overflowing.
  k = std::clamp<int64_t>(k, -(rows + cols), rows + cols);
  const int64_t batch = r->numel() / (rows * cols);
  const int64_t es = static_cast<int64_t>(r->element_size());
  const int64_t rs = r->strides[nd - 2] * es, cs = r->strides[nd - 1] * es;
  Shape bsizes(r->sizes.begin(), r->sizes.end() - 2), bstrides(r->strides.begin(), r->strides.end() - 2);
  char* base = r->data();
  // Every dtype's zero is all-zero bytes, so zeroing is a memset of the masked part of each row.
  parallel_for(0, batch * rows, grain_for(cols),
               [&](int64_t b, int64_t e) {
    for (int64_t idx = b; idx < e; ++idx) {
      int64_t bi = idx / rows, i = idx % rows;
      int64_t off = 0;
      for (int64_t d = static_cast<int64_t>(bsizes.size()) - 1; d >= 0; --d) {
        off += (bi % bsizes[d]) * bstrides[d];
        bi /= bsizes[d];
      }
      char* row = base + off * es + i * rs;
      // tril keeps j <= i + k; triu keeps j >= i + k.
      int64_t j0 = upper ? 0 : std::clamp<int64_t>(i + k + 1, 0, cols);
      int64_t j1 = upper ? std::clamp<int64_t>(i + k, 0, cols) : cols;
      if (j1 <= j0) continue;
      if (cs == es) std::memset(row + j0 * cs, 0, (j1 - j0) * es);
      else
        for (int64_t j = j0; j < j1; ++j) std::memset(row + j * cs, 0, es);
    }
  });
  if (inplace) r->bump_version();
  return r;
}

// ---------------------------------------------------------------------------------------------
// constant_pad_nd

Tensor constant_pad_nd(const Tensor& x, const std::vector<int64_t>& pad, Scalar value) {
  GilRelease nogil(x->numel() > kGrainSize);
  const int64_t n = static_cast<int64_t>(pad.size()), nd = x->dim();
  EMBER_CHECK(n % 2 == 0, std::runtime_error, "Length of pad must be even but instead it equals ", n);
  EMBER_CHECK(n / 2 <= nd, std::runtime_error,
              "Length of pad should be no more than twice the number of dimensions of the input. "
              "Pad length is ", n, " while the input has ", nd, " dimensions.");
  for (int64_t p : pad)  // the fill value is converted, checked, where there is padding
    if (p > 0) {
      check_scalar_fits(value, x->dtype);
      break;
    }
  Shape shape = x->sizes;
  Tensor src = x;
  std::vector<int64_t> lo(nd, 0);
  for (int64_t i = 0; i < n / 2; ++i) {
    const int64_t d = nd - 1 - i, l = pad[2 * i], r = pad[2 * i + 1];
    // Negative pads crop the input (PyTorch narrows it, with narrow's error).
    int64_t cur = x->sizes[d];
    if (l < 0) {
      EMBER_CHECK(cur + l >= 0, std::runtime_error, "narrow(): length must be non-negative.");
      src = narrow(src, d, -l, cur + l);
      cur += l;
    }
    if (r < 0) {
      EMBER_CHECK(cur + r >= 0, std::runtime_error, "narrow(): length must be non-negative.");
      src = narrow(src, d, 0, cur + r);
      cur += r;
    }
    const int64_t size = x->sizes[d] + l + r;
    EMBER_CHECK(size >= 0, std::runtime_error, "The input size ", x->sizes[d], ", plus negative padding ",
                l, " and ", r, " resulted in a negative output size, which is invalid. Check "
                "dimension ", d, " of your input.");
    shape[d] = size;
    lo[d] = std::max<int64_t>(l, 0);
  }
  Tensor out = empty(shape, x->dtype, x->device());
  if (src->numel() == 0) {
    fill_(out, value);
    return out;
  }
  // Fill only the border slabs (corners may be written twice), then copy the interior.
  for (int64_t d = 0; d < nd; ++d) {
    const int64_t hi = shape[d] - lo[d] - src->sizes[d];
    if (lo[d] > 0) fill_(narrow(out, d, 0, lo[d]), value);
    if (hi > 0) fill_(narrow(out, d, lo[d] + src->sizes[d], hi), value);
  }
  Tensor dst = out;
  for (int64_t d = 0; d < nd; ++d) dst = narrow(dst, d, lo[d], src->sizes[d]);
  copy_(dst, src);
  return out;
}

// ---------------------------------------------------------------------------------------------
// repeat_interleave / diag_embed / tri_indices

// starts[i + 1] = starts[i] + counts[i], refusing a total beyond int64 (signed overflow)
static int64_t checked_total(const std::vector<int64_t>& counts, std::vector<int64_t>* starts) {
  int64_t total = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    EMBER_CHECK(!__builtin_add_overflow(total, counts[i], &total), std::runtime_error,
                "repeat_interleave: the output's size overflows int64 (numel: integer "
                "multiplication overflow)");
    if (starts) (*starts)[i + 1] = total;
  }
  return total;
}

static std::vector<int64_t> read_counts(const Tensor& repeats) {
  EMBER_CHECK(repeats->dtype == ScalarType::Int64 || repeats->dtype == ScalarType::Int32,
              NotImplementedError, "\"repeat_interleave_cpu\" not implemented for '",
              torch_type_name(repeats->dtype), "'");
  Tensor c = contiguous(to_dtype(repeats, ScalarType::Int64));
  const int64_t* p = c->data_as<int64_t>();
  return std::vector<int64_t>(p, p + c->numel());
}

static void check_counts(const std::vector<int64_t>& counts) {
  for (auto v : counts) EMBER_CHECK(v >= 0, std::runtime_error, "repeats can not be negative");
}

Tensor repeat_interleave(const Tensor& x_in, const Tensor& repeats, int64_t repeat,
                         std::optional<int64_t> dim_opt, std::optional<int64_t> output_size) {
  GilRelease nogil(x_in->numel() > kGrainSize);
  Tensor x = dim_opt ? x_in : reshape(x_in, {x_in->numel()});
  const int64_t dim = dim_opt ? wrap_dim(*dim_opt, x->dim()) : 0;
  const int64_t n = x->dim() == 0 ? 1 : x->sizes[dim];
  std::vector<int64_t> counts;
  if (repeats) {
    EMBER_CHECK(repeats->dim() <= 1, std::runtime_error, "repeats must be 0-dim or 1-dim tensor");
    counts = read_counts(repeats);
    // (0-d or one element: broadcast along dim first, as torch, so that a negative one
    // repeating nothing along an empty dim is never read)
    if (counts.size() == 1) counts.assign(n, counts[0]);
    EMBER_CHECK(static_cast<int64_t>(counts.size()) == n, std::runtime_error,
                "repeats must have the same size as input along dim, but got repeats.size(0) = ",
                counts.size(), " and input.size(", dim, ") = ", n);
    check_counts(counts);
  } else {
    EMBER_CHECK(repeat >= 0, std::runtime_error, "Repeats must be non-negative");
    counts.assign(n, repeat);
  }
  std::vector<int64_t> starts(n + 1, 0);
  const int64_t total = checked_total(counts, &starts);
  EMBER_CHECK(!output_size || *output_size == total, std::runtime_error,
              "repeat_interleave: Invalid output_size, expected ", total, " but got ",
              *output_size);
  Shape shape = x->sizes;
  if (shape.empty()) shape = {1};
  shape[dim] = total;
  Tensor out = empty(shape, x->dtype, x->device());
  if (out->numel() == 0) return out;
  Tensor c = contiguous(x);
  const int64_t es = static_cast<int64_t>(c->element_size());
  const int64_t outer = prod(shape, 0, dim);
  const int64_t inner = prod(shape, dim + 1, shape.size()) * es;
  const char* src = c->data();
  char* dst = out->data();
  parallel_blocks(outer, n, out->numel() * es, [&](int64_t o, int64_t i) {
    const char* from = src + (o * n + i) * inner;
    char* to = dst + (o * total + starts[i]) * inner;
    for (int64_t r = 0; r < counts[i]; ++r) copy_block(to + r * inner, from, inner);
  });
  return out;
}

Tensor repeat_interleave_counts(const Tensor& repeats, std::optional<int64_t> output_size) {
  EMBER_CHECK(repeats->dim() == 1, std::runtime_error, "repeat_interleave only accept 1D vector as repeat");
  std::vector<int64_t> counts = read_counts(repeats);
  check_counts(counts);
  const int64_t total = checked_total(counts, nullptr);
  EMBER_CHECK(!output_size || *output_size == total, std::runtime_error,
              "repeat_interleave: Invalid output_size, expected ", total, " but got ",
              *output_size);
  Tensor out = empty({total}, repeats->dtype, repeats->device());
  int64_t pos = 0;
  dispatch_all(repeats->dtype, "repeat_interleave", [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = out->data_as<T>();
    for (size_t i = 0; i < counts.size(); ++i)
      for (int64_t r = 0; r < counts[i]; ++r) p[pos++] = static_cast<T>(i);
  });
  return out;
}

Tensor view_as_real(const Tensor& x) {
  EMBER_CHECK(is_complex(x->dtype), std::runtime_error,
              "view_as_real is only supported for complex tensors");
  Shape sizes = x->sizes, strides = x->strides;
  for (auto& st : strides) st *= 2;
  sizes.push_back(2);
  strides.push_back(1);
  Tensor v = make_view(x, sizes, strides, x->offset * 2);
  v->dtype = to_real_type(x->dtype);
  return v;
}

Tensor view_as_complex(const Tensor& x) {
  EMBER_CHECK(x->dtype == ScalarType::Float32 || x->dtype == ScalarType::Float64,
              std::runtime_error,
              "view_as_complex is only supported for float and double tensors, but got a tensor "
              "of scalar type: ", type_name(x->dtype));
  EMBER_CHECK(x->dim() != 0, std::runtime_error, "Input tensor must have one or more dimensions");
  EMBER_CHECK(x->sizes.back() == 2, std::runtime_error,
              "Tensor must have a last dimension of size 2");
  EMBER_CHECK(x->strides.back() == 1, std::runtime_error,
              "Tensor must have a last dimension with stride 1");
  Shape sizes(x->sizes.begin(), x->sizes.end() - 1), strides(x->strides.begin(), x->strides.end() - 1);
  for (auto& st : strides) {
    EMBER_CHECK(st % 2 == 0, std::runtime_error,
                "Tensor must have a stride divisible by 2 for all but last dimension");
    st /= 2;
  }
  EMBER_CHECK(x->offset % 2 == 0, std::runtime_error,
              "Tensor must have a storage_offset divisible by 2");
  Tensor v = make_view(x, sizes, strides, x->offset / 2);
  v->dtype = to_complex_type(x->dtype);
  return v;
}

Tensor diagonal(const Tensor& x, int64_t offset, int64_t dim1, int64_t dim2) {
  const int64_t nd = x->dim();
  dim1 = wrap_dim(dim1, nd);
  dim2 = wrap_dim(dim2, nd);
  EMBER_CHECK(dim1 != dim2, std::runtime_error, "diagonal dimensions cannot be identical ", dim1,
              ", ", dim2);
  const int64_t s1 = x->sizes[dim1], s2 = x->sizes[dim2];
  int64_t len = offset >= 0 ? std::min(s1, s2 - offset) : std::min(s1 + offset, s2);
  len = std::max<int64_t>(len, 0);
  int64_t off = x->offset;
  if (len > 0) off += offset >= 0 ? offset * x->strides[dim2] : -offset * x->strides[dim1];
  Shape sizes, strides;
  for (int64_t d = 0; d < nd; ++d)
    if (d != dim1 && d != dim2) {
      sizes.push_back(x->sizes[d]);
      strides.push_back(x->strides[d]);
    }
  sizes.push_back(len);
  strides.push_back(x->strides[dim1] + x->strides[dim2]);
  return make_view(x, sizes, strides, off);
}

Tensor diag_embed(const Tensor& x, int64_t offset, int64_t dim1, int64_t dim2) {
  GilRelease nogil(x->numel() > kGrainSize);
  const int64_t nd = x->dim() + 1;
  dim1 = wrap_dim(dim1, nd);
  dim2 = wrap_dim(dim2, nd);
  EMBER_CHECK(dim1 != dim2, std::runtime_error, "diagonal dimensions cannot be identical ", dim1,
              ", ", dim2);
  const int64_t n = x->dim() == 0 ? 1 : x->sizes.back();
  const int64_t m = n + (offset >= 0 ? offset : -offset);
  Shape rest = x->sizes;
  if (!rest.empty()) rest.pop_back();
  Shape shape;
  for (int64_t d = 0, r = 0; d < nd; ++d)
    shape.push_back(d == dim1 || d == dim2 ? m : rest[r++]);
  Tensor out = empty(shape, x->dtype, x->device());
  fill_(out, Scalar::from_int(0));
  Tensor diag = diagonal(out, offset, dim1, dim2);
  if (diag->numel()) copy_(diag, x->dim() == 0 ? reshape(x, {1}) : x);
  return out;
}

Tensor tri_indices(int64_t row, int64_t col, int64_t offset, bool upper, ScalarType dtype) {
  const char* name = upper ? "triu_indices" : "tril_indices";
  EMBER_CHECK(row >= 0, std::runtime_error, "row must be non-negative, got", row);
  EMBER_CHECK(col >= 0, std::runtime_error, "col must be non-negative, got", col);
  EMBER_CHECK(dtype == ScalarType::Int64 || dtype == ScalarType::Int32, NotImplementedError, "\"",
              name, "\" not implemented for '", torch_type_name(dtype), "'");
  // Offsets beyond the matrix act as its edge; clamped, i + offset cannot overflow.
  offset = std::clamp<int64_t>(offset, -row - 1, col);
  auto row_range = [&](int64_t i) {  // [j0, j1) of the kept columns in row i
    int64_t j0 = upper ? std::clamp<int64_t>(i + offset, 0, col) : 0;
    int64_t j1 = upper ? col : std::clamp<int64_t>(i + offset + 1, 0, col);
    return std::make_pair(j0, std::max(j0, j1));
  };
  // The count in closed form (a loop over 2**62 rows would hang): tril keeps
  // clamp(i + offset + 1, 0, col) of row i, triu col - clamp(i + offset, 0, col).
  using wide = __int128;
  auto kept_below = [&](wide n) -> wide {  // sum of clamp(x, 0, col) for x <= n
    if (n <= 0) return 0;
    if (n <= col) return n * (n + 1) / 2;
    return wide(col) * (col + 1) / 2 + (n - col) * wide(col);
  };
  const wide a = upper ? wide(offset) : wide(offset) + 1;
  const wide tril_like = kept_below(a + row - 1) - kept_below(a - 1);
  const wide kept = upper ? wide(row) * col - tril_like : tril_like;
  EMBER_CHECK(kept <= wide(INT64_MAX / 2), std::runtime_error,
              "Storage size calculation overflowed with sizes=[2, ", static_cast<double>(kept), "]");
  const int64_t total = static_cast<int64_t>(kept);
  // Only rows that keep something are visited: tril's start at the first i with i + offset >= 0,
  // triu's end before the first i with i + offset >= col.
  const int64_t first_row = upper ? 0 : std::clamp<int64_t>(-offset, 0, row);
  const int64_t end_row =
      upper ? static_cast<int64_t>(std::clamp<wide>(wide(col) - offset, 0, row)) : row;
  Tensor out = empty({2, total}, dtype);
  // (nothing kept, e.g. no columns: the rows below would be visited for nothing, 2**63 of them)
  if (total == 0) return out;
  dispatch_all(dtype, name, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* r = out->data_as<T>();
    T* c = r + total;
    for (int64_t i = first_row; i < end_row; ++i) {
      auto [j0, j1] = row_range(i);
      for (int64_t j = j0; j < j1; ++j) *r++ = static_cast<T>(i), *c++ = static_cast<T>(j);
    }
  });
  return out;
}

Tensor unfold(const Tensor& x, int64_t dimension, int64_t size, int64_t step) {
  const int64_t nd = x->dim();
  const int64_t d = wrap_dim(dimension, nd);
  const int64_t len = nd == 0 ? 1 : x->sizes[d];
  const int64_t st = nd == 0 ? 1 : x->strides[d];
  EMBER_CHECK(size <= len, std::runtime_error, "maximum size for tensor at dimension ", d, " is ",
              len, " but size is ", size);
  EMBER_CHECK(size >= 0, std::runtime_error, "size is ", size, " but must be >= 0");
  EMBER_CHECK(step > 0, std::runtime_error, "step is ", step, " but must be > 0");
  Shape sizes = x->sizes, strides = x->strides;
  if (nd == 0) {
    sizes = {size};
    strides = {1};
    return make_view(x, sizes, strides, x->offset);
  }
  sizes[d] = (len - size) / step + 1;
  strides[d] = st * step;
  sizes.push_back(size);
  strides.push_back(st);
  return make_view(x, sizes, strides, x->offset);
}

}  // namespace ember
