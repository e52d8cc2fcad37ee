// tensor.cpp: construction and view operations (pure metadata; no kernels here).
#include "core/tensor.h"

#include <algorithm>
#include <cstring>
#include <optional>

namespace ember {

bool TensorImpl::is_contiguous() const {
  for (auto s : sizes)
    if (s == 0) return true;  // no element: contiguous whatever the strides (torch)
  int64_t expected = 1;
  for (int64_t d = dim() - 1; d >= 0; --d) {
    if (sizes[d] == 1) continue;
    if (strides[d] != expected) return false;
    expected *= sizes[d];
  }
  return true;
}

Shape contiguous_strides(const Shape& sizes) {
  Shape strides(sizes.size());
  int64_t s = 1;
  for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
    strides[d] = s;
    // (an empty tensor's strides may still overflow: torch refuses those sizes too)
    if (d > 0 && __builtin_mul_overflow(s, std::max<int64_t>(sizes[d], 1), &s))
      throw std::runtime_error("Stride calculation overflowed");
  }
  return strides;
}

int64_t checked_numel(const Shape& sizes) {
  uint64_t n = 1;
  bool overflow = false;
  for (auto s : sizes) {
    EMBER_CHECK(s >= 0, std::runtime_error, "Trying to create tensor with negative dimension ", s,
                ": ", shape_str(sizes));
    overflow |= __builtin_mul_overflow(n, static_cast<uint64_t>(s), &n);
  }
  EMBER_CHECK(!overflow && n <= uint64_t(INT64_MAX), std::runtime_error,
              "numel: integer multiplication overflow");
  return static_cast<int64_t>(n);
}

// PyTorch's storage_max: a byte count must fit an int64 (and so a ptrdiff_t).
static void check_storage_size(bool overflow, uint64_t nbytes, const Shape& sizes,
                               const Shape* strides) {
  if (!overflow && nbytes <= uint64_t(INT64_MAX)) return;
  throw std::runtime_error(str_cat("Storage size calculation overflowed with sizes=",
                                   shape_str(sizes),
                                   strides ? " and strides=" + shape_str(*strides) : ""));
}

size_t contiguous_nbytes(const Shape& sizes, size_t itemsize) {
  uint64_t n = 1;
  bool overflow = false;
  for (auto s : sizes) {
    EMBER_CHECK(s >= 0, std::runtime_error, "Trying to create tensor with negative dimension ", s,
                ": ", shape_str(sizes));
    overflow |= __builtin_mul_overflow(n, static_cast<uint64_t>(s), &n);
  }
  overflow |= __builtin_mul_overflow(n, static_cast<uint64_t>(itemsize), &n);
  check_storage_size(overflow, n, sizes, nullptr);
  return static_cast<size_t>(n);
}

size_t strided_nbytes(const Shape& sizes, const Shape& strides, int64_t offset, size_t itemsize) {
  EMBER_CHECK(sizes.size() == strides.size(), std::runtime_error, "mismatch in length of strides (",
              strides.size(), ") and shape (", sizes.size(), ")");
  EMBER_CHECK(offset >= 0, std::runtime_error, "Tensor: invalid storage offset ", offset);
  for (size_t i = 0; i < sizes.size(); ++i) {
    EMBER_CHECK(sizes[i] >= 0, std::runtime_error,
                "Trying to create tensor with negative dimension ", sizes[i], ": ",
                shape_str(sizes));
    EMBER_CHECK(strides[i] >= 0, std::runtime_error,
                "as_strided: Negative strides are not supported at the moment, got strides: ",
                shape_str(strides));
  }
  for (auto s : sizes)
    if (s == 0) return 0;  // no element: no byte is reached, whatever the strides
  uint64_t n = static_cast<uint64_t>(offset) + 1;
  bool overflow = false;
  for (size_t i = 0; i < sizes.size(); ++i) {
    uint64_t span;
    overflow |= __builtin_mul_overflow(static_cast<uint64_t>(strides[i]),
                                       static_cast<uint64_t>(sizes[i] - 1), &span);
    overflow |= __builtin_add_overflow(n, span, &n);
  }
  overflow |= __builtin_mul_overflow(n, static_cast<uint64_t>(itemsize), &n);
  check_storage_size(overflow, n, sizes, &strides);
  return static_cast<size_t>(n);
}

void TensorImpl::throw_not_on_cpu() const {
  throw std::runtime_error(str_cat(
      "ember: this operation has no CUDA implementation yet, and one of its tensors is on ",
      device().str(), " (", type_name(dtype), ", shape ", shape_str(sizes),
      "). Move it to the CPU with .cpu() first; docs/cuda.md lists the ops that run on CUDA."));
}

static Storage new_storage(size_t nbytes, Device device) {
  Allocator* a = allocator_for(device);
  DataPtr p;
  try {
    p = a->allocate(nbytes);
  } catch (const std::bad_alloc&) {
    throw OutOfMemoryError(str_cat("ember: CPU allocator '", a->name(),
                                   "': not enough memory: you tried to allocate ", nbytes,
                                   " bytes."));
  }
  auto s = std::make_shared<StorageImpl>(std::move(p), nbytes, a);
  s->resizable = true;  // made by an allocator: resize_ may grow it (Allocator::copy_data)
  return s;
}

Tensor from_storage(Storage storage, const Shape& sizes, const Shape& strides, int64_t offset,
                    ScalarType dtype) {
  checked_numel(sizes);
  auto t = std::make_shared<TensorImpl>();
  t->storage = std::move(storage);
  t->sizes = sizes;
  t->strides = strides;
  t->offset = offset;
  t->dtype = dtype;
  t->version = std::make_shared<VersionCounter>();
  return t;
}

Tensor empty(const Shape& sizes, ScalarType dtype, Device device) {
  return from_storage(new_storage(contiguous_nbytes(sizes, itemsize(dtype)), device), sizes,
                      contiguous_strides(sizes), 0, dtype);
}

Tensor empty_strided(const Shape& sizes, const Shape& strides, ScalarType dtype, Device device) {
  EMBER_CHECK(sizes.size() == strides.size(), std::runtime_error,
              "empty_strided: mismatch in length of strides (", strides.size(), ") and shape (",
              sizes.size(), ")");
  const size_t nbytes = strided_nbytes(sizes, strides, 0, itemsize(dtype));
  checked_numel(sizes);  // before allocating: stride-0 dims may hold more elements than bytes
  return from_storage(new_storage(nbytes, device), sizes, strides, 0, dtype);
}

Tensor empty_like(const Tensor& t, ScalarType dtype) {
  ScalarType dt = dtype == ScalarType::Undefined ? t->dtype : dtype;
  // Keep the layout of a dense permuted tensor (PyTorch's preserve_format), else contiguous.
  if (!t->is_contiguous() && is_non_overlapping_and_dense(*t))
    return empty_strided(t->sizes, t->strides, dt, t->device());
  return empty(t->sizes, dt, t->device());
}

// Grows a storage to `nbytes`, keeping its bytes: the StorageImpl stays, its DataPtr changes.
static void grow_storage(StorageImpl& s, size_t nbytes) {
  if (!s.resizable || !s.allocator)
    throw std::runtime_error("Trying to resize storage that is not resizable");
  if (s.exports.load() > 0)  // PyTorch lets it, leaving an ndarray over freed memory
    throw std::runtime_error(
        "Trying to resize storage whose memory is exported (to a NumPy array, a memoryview or "
        "a DLPack consumer that is still alive); resize a copy (clone()) instead");
  DataPtr p;
  try {
    p = s.allocator->allocate(nbytes);
  } catch (const std::bad_alloc&) {
    throw OutOfMemoryError(str_cat("ember: CPU allocator '", s.allocator->name(),
                                   "': not enough memory: you tried to allocate ", nbytes,
                                   " bytes."));
  }
  // A device copy is queued on the current stream, which orders it before the old block's reuse
  // there (as torch's resize on CUDA).
  if (s.nbytes) s.allocator->copy_data(p.get(), s.ptr(), std::min(s.nbytes, nbytes));
  s.data = std::move(p);  // the old block is freed here
  s.nbytes = nbytes;
}

void resize_(const Tensor& t, const Shape& shape, bool restride) {
  if (t->sizes == shape && !restride) return;
  Shape strides = contiguous_strides(shape);
  // An empty tensor needs no bytes, wherever its offset points.
  const size_t need = strided_nbytes(shape, strides, t->offset, t->element_size());
  checked_numel(shape);
  if (t->storage->nbytes < need) grow_storage(*t->storage, need);
  t->sizes = shape;
  t->strides = std::move(strides);
}

void resize_output(const Tensor& out, const Shape& shape) {
  if (out->sizes != shape) resize_(out, shape);
}

Tensor scalar_tensor(Scalar s, ScalarType dtype, bool checked) {
  Tensor t = empty({}, dtype);
  dispatch_every(dtype, "scalar_tensor", [&](auto tag) {
    using T = typename decltype(tag)::type;
    *t->data_as<T>() = checked ? s.to_checked<T>(/*float_range=*/true) : s.to<T>();
  });
  return t;
}

void check_scalar_fits(const Scalar& s, ScalarType dtype) {
  dispatch_every(dtype, "check_scalar_fits", [&](auto tag) {
    (void)s.to_checked<typename decltype(tag)::type>(/*float_range=*/true);
  });
}

Tensor wrapped_scalar(Scalar s, ScalarType dtype) {
  Tensor t = scalar_tensor(s, dtype);
  t->is_wrapped_number = true;
  return t;
}

// ---------------------------------------------------------------------------------------------
// Views

int64_t wrap_dim(int64_t d, int64_t ndim, bool allow_scalar) {
  if (ndim == 0 && allow_scalar) ndim = 1;
  if (ndim <= 0)
    throw IndexError(str_cat("Dimension specified as ", d, " but tensor has no dimensions"));
  if (d < -ndim || d >= ndim)
    throw IndexError(str_cat("Dimension out of range (expected to be in range of [", -ndim, ", ",
                             ndim - 1, "], but got ", d, ")"));
  return d < 0 ? d + ndim : d;
}

// Every view must stay inside its storage: checked here, before anyone touches memory.
void check_in_storage(const StorageImpl& storage, const Shape& sizes, const Shape& strides,
                      int64_t offset, size_t itemsize) {
  const size_t need = strided_nbytes(sizes, strides, offset, itemsize);
  if (need > storage.nbytes)
    throw std::runtime_error(str_cat("setStorage: sizes ", shape_str(sizes), ", strides ",
                                     shape_str(strides), ", storage offset ", offset,
                                     ", and itemsize ", itemsize, " requiring a storage size of ",
                                     need, " are out of bounds for storage of size ",
                                     storage.nbytes));
}

Tensor make_view(const Tensor& base, const Shape& sizes, const Shape& strides, int64_t offset) {
  checked_numel(sizes);  // expand() and friends may ask for more elements than an int64 holds
  auto v = std::make_shared<TensorImpl>();
  v->storage = base->storage;
  v->sizes = sizes;
  v->strides = strides;
  v->offset = offset;
  v->dtype = base->dtype;
  v->version = base->version;
  v->base = base->base ? base->base : base;
  return v;
}

Tensor as_strided(const Tensor& t, const Shape& sizes, const Shape& strides, int64_t offset) {
  check_in_storage(*t->storage, sizes, strides, offset, t->element_size());
  return make_view(t, sizes, strides, offset);
}

Tensor alias(const Tensor& t) {
  auto v = std::make_shared<TensorImpl>();
  v->storage = t->storage;
  v->sizes = t->sizes;
  v->strides = t->strides;
  v->offset = t->offset;
  v->dtype = t->dtype;
  v->version = t->version;
  return v;
}

Shape infer_size(Shape sizes, int64_t numel) {
  int64_t known = 1, infer = -1;
  bool overflow = false;  // the product of the sizes given does not fit: no numel can match it
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == -1) {
      EMBER_CHECK(infer < 0, std::runtime_error, "only one dimension can be inferred");
      infer = static_cast<int64_t>(i);
    } else {
      EMBER_CHECK(sizes[i] >= 0, std::runtime_error, "invalid shape dimension ", sizes[i]);
      overflow |= __builtin_mul_overflow(known, sizes[i], &known);
    }
  }
  const bool fits = !overflow && (numel == known || (infer >= 0 && known > 0 && numel % known == 0));
  if (fits && infer >= 0) {
    EMBER_CHECK(known != 0, std::runtime_error, "cannot reshape tensor of ", numel,
                " elements into shape ", shape_str(sizes),
                " because the unspecified dimension size -1 can be any value and is ambiguous");
    sizes[infer] = numel / known;
  }
  if (!fits) {
    throw std::runtime_error(str_cat("shape '", shape_str(sizes), "' is invalid for input of size ",
                                     numel));
  }
  return sizes;
}

// ATen's computeStride: the strides of a view of `sizes` over (old_sizes, old_strides), or
// nothing when the view would have to span two non-contiguous chunks.
static std::optional<Shape> compute_view_strides(const Shape& old_sizes, const Shape& old_strides,
                                                 const Shape& sizes) {
  Shape strides(sizes.size());
  if (old_sizes.empty()) {
    for (auto& s : strides) s = 1;
    return strides;
  }
  int64_t numel = 1;
  for (auto s : old_sizes) numel *= s;
  if (numel == 0) {
    if (old_sizes == sizes) return old_strides;
    return contiguous_strides(sizes);
  }
  int64_t view_d = static_cast<int64_t>(sizes.size()) - 1;
  int64_t chunk_base_stride = old_strides.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t tensor_d = static_cast<int64_t>(old_sizes.size()) - 1; tensor_d >= 0; --tensor_d) {
    tensor_numel *= old_sizes[tensor_d];
    if (tensor_d == 0 || (old_sizes[tensor_d - 1] != 1 &&
                          old_strides[tensor_d - 1] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || sizes[view_d] == 1)) {
        strides[view_d] = view_numel * chunk_base_stride;
        view_numel *= sizes[view_d];
        --view_d;
      }
      if (view_numel != tensor_numel) return std::nullopt;
      if (tensor_d > 0) {
        chunk_base_stride = old_strides[tensor_d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (view_d != -1) return std::nullopt;
  return strides;
}

Tensor view(const Tensor& t, Shape sizes) {
  sizes = infer_size(std::move(sizes), t->numel());
  auto strides = compute_view_strides(t->sizes, t->strides, sizes);
  if (!strides)
    throw std::runtime_error(
        "view size is not compatible with input tensor's size and stride (at least one dimension "
        "spans across two contiguous subspaces). Use .reshape(...) instead.");
  return make_view(t, sizes, *strides, t->offset);
}

Tensor reshape(const Tensor& t, Shape sizes) {
  sizes = infer_size(std::move(sizes), t->numel());
  auto strides = compute_view_strides(t->sizes, t->strides, sizes);
  if (strides) return make_view(t, sizes, *strides, t->offset);
  return view(contiguous(t), sizes);
}

Tensor transpose(const Tensor& t, int64_t d0, int64_t d1) {
  int64_t n = t->dim();
  d0 = wrap_dim(d0, n);
  d1 = wrap_dim(d1, n);
  if (n == 0) return make_view(t, t->sizes, t->strides, t->offset);
  Shape sizes = t->sizes, strides = t->strides;
  std::swap(sizes[d0], sizes[d1]);
  std::swap(strides[d0], strides[d1]);
  return make_view(t, sizes, strides, t->offset);
}

Tensor t_(const Tensor& t) {
  EMBER_CHECK(t->dim() <= 2, std::runtime_error,
              "t() expects a tensor with <= 2 dimensions, but self is ", t->dim(), "D");
  return t->dim() < 2 ? make_view(t, t->sizes, t->strides, t->offset) : transpose(t, 0, 1);
}

Tensor permute(const Tensor& t, const Shape& dims) {
  int64_t n = t->dim();
  EMBER_CHECK(static_cast<int64_t>(dims.size()) == n, std::runtime_error,
              "permute(sparse_coo): number of dimensions in the tensor input does not match the "
              "length of the desired ordering of dimensions i.e. input.dim() = ", n,
              " is not equal to len(dims) = ", dims.size());
  Shape sizes(n), strides(n);
  std::vector<bool> seen(n, false);
  for (int64_t i = 0; i < n; ++i) {
    int64_t d = wrap_dim(dims[i], n);
    EMBER_CHECK(!seen[d], std::runtime_error, "permute(): duplicate dims are not allowed.");
    seen[d] = true;
    sizes[i] = t->sizes[d];
    strides[i] = t->strides[d];
  }
  return make_view(t, sizes, strides, t->offset);
}

Tensor squeeze(const Tensor& t) {
  Shape sizes, strides;
  for (int64_t d = 0; d < t->dim(); ++d)
    if (t->sizes[d] != 1) {
      sizes.push_back(t->sizes[d]);
      strides.push_back(t->strides[d]);
    }
  return make_view(t, sizes, strides, t->offset);
}

Tensor squeeze_dims(const Tensor& t, const Shape& dims) {
  int64_t n = t->dim();
  std::vector<bool> drop(std::max<int64_t>(n, 1), false), seen(drop.size(), false);
  for (auto d : dims) {
    int64_t w = wrap_dim(d, n);
    EMBER_CHECK(!seen[w], std::runtime_error, "dim ", w, " appears multiple times in the list of dims");
    seen[w] = true;
    if (n > 0 && t->sizes[w] == 1) drop[w] = true;
  }
  Shape sizes, strides;
  for (int64_t d = 0; d < n; ++d)
    if (!drop[d]) {
      sizes.push_back(t->sizes[d]);
      strides.push_back(t->strides[d]);
    }
  return make_view(t, sizes, strides, t->offset);
}

Tensor unsqueeze(const Tensor& t, int64_t d) {
  int64_t n = t->dim();
  d = wrap_dim(d, n + 1);
  Shape sizes = t->sizes, strides = t->strides;
  int64_t stride = d < n ? sizes[d] * strides[d] : 1;
  sizes.insert(sizes.begin() + d, 1);
  strides.insert(strides.begin() + d, stride);
  return make_view(t, sizes, strides, t->offset);
}

Tensor expand(const Tensor& t, const Shape& sizes) {
  int64_t n = static_cast<int64_t>(sizes.size()), tn = t->dim();
  EMBER_CHECK(n >= tn, std::runtime_error, "expand(", dtype_name(t->dtype), "{",
              shape_str(t->sizes).substr(1, shape_str(t->sizes).size() - 2),
              "}, size=", shape_str(sizes),
              "): the number of sizes provided (", n,
              ") must be greater or equal to the number of dimensions in the tensor (", tn, ")");
  Shape out_sizes(n), out_strides(n);
  for (int64_t i = n - 1; i >= 0; --i) {
    int64_t off = n - 1 - i, td = tn - 1 - off;
    int64_t want = sizes[i];
    if (td >= 0) {
      int64_t have = t->sizes[td];
      if (want == -1) want = have;
      if (have == want) {
        out_sizes[i] = have;
        out_strides[i] = t->strides[td];
      } else {
        EMBER_CHECK(have == 1, std::runtime_error, "The expanded size of the tensor (", want,
                    ") must match the existing size (", have, ") at non-singleton dimension ", i,
                    ".  Target sizes: ", shape_str(sizes), ".  Tensor sizes: ",
                    shape_str(t->sizes));
        out_sizes[i] = want;
        out_strides[i] = 0;
      }
    } else {
      EMBER_CHECK(want >= 0, std::runtime_error, "The expanded size of the tensor (", want,
                  ") isn't allowed in a leading, non-existing dimension ", i);
      out_sizes[i] = want;
      out_strides[i] = 0;
    }
  }
  return make_view(t, out_sizes, out_strides, t->offset);
}

Tensor flatten(const Tensor& t, int64_t start, int64_t end) {
  int64_t n = t->dim();
  start = wrap_dim(start, n);
  end = wrap_dim(end, n);
  EMBER_CHECK(start <= end, std::runtime_error,
              "flatten() has invalid args: start_dim cannot come after end_dim");
  if (n == 0) return reshape(t, {1});
  if (start == end) return make_view(t, t->sizes, t->strides, t->offset);
  Shape sizes(t->sizes.begin(), t->sizes.begin() + start);
  int64_t prod = 1;
  for (int64_t d = start; d <= end; ++d) prod *= t->sizes[d];
  sizes.push_back(prod);
  sizes.insert(sizes.end(), t->sizes.begin() + end + 1, t->sizes.end());
  return reshape(t, sizes);
}

Tensor unflatten(const Tensor& t, int64_t d, const Shape& sizes) {
  int64_t n = t->dim();
  // torch's order: the sizes, then the dim; a 0-d input's size lookup fails inside its
  // handler, which reports it as a RuntimeError
  EMBER_CHECK(!sizes.empty(), std::runtime_error, "unflatten: sizes must be non-empty");
  if (n == 0) {
    wrap_dim(d, 0, /*allow_scalar=*/true);
    throw std::runtime_error(
        "unflatten got an unexpected error:\nDimension specified as 0 but tensor has no dimensions");
  }
  d = wrap_dim(d, n, /*allow_scalar=*/false);
  Shape inferred;
  try {
    inferred = infer_size(sizes, t->sizes[d]);
  } catch (const std::runtime_error& e) {  // PyTorch's handle_unflatten_exception wording
    if (std::string(e.what()).find("can be any value") != std::string::npos)
      throw std::runtime_error(str_cat(
          "unflatten: Provided size ", shape_str(sizes), " for dim ", d,
          " is ambiguous: the unspecified dimension size -1 can be any value"));
    throw std::runtime_error(str_cat("unflatten: Provided sizes ", shape_str(sizes),
                                     " don't multiply up to the size of dim ", d, " (",
                                     t->sizes[d], ") in the input tensor"));
  }
  Shape out(t->sizes.begin(), t->sizes.begin() + d);
  out.insert(out.end(), inferred.begin(), inferred.end());
  out.insert(out.end(), t->sizes.begin() + d + 1, t->sizes.end());
  return view(t, out);
}

Tensor narrow(const Tensor& t, int64_t d, int64_t start, int64_t length) {
  EMBER_CHECK(t->dim() > 0, std::runtime_error, "narrow() cannot be applied to a 0-dim tensor.");
  d = wrap_dim(d, t->dim());
  int64_t size = t->sizes[d];
  EMBER_CHECK(start >= -size && start <= size, IndexError, "start out of range (expected to be in range of [",
              -size, ", ", size, "], but got ", start, ")");
  if (start < 0) start += size;
  EMBER_CHECK(length >= 0 && start <= size - length, std::runtime_error, "start (", start,
              ") + length (", length, ") exceeds dimension size (", size, ").");
  return slice(t, d, start, start + length, 1);
}

Tensor select(const Tensor& t, int64_t d, int64_t index) {
  EMBER_CHECK(t->dim() > 0, IndexError, "select() cannot be applied to a 0-dim tensor.");
  d = wrap_dim(d, t->dim());
  int64_t size = t->sizes[d];
  if (index < -size || index >= size)
    throw IndexError(str_cat("index ", index, " is out of bounds for dimension ", d,
                             " with size ", size));
  if (index < 0) index += size;
  Shape sizes = t->sizes, strides = t->strides;
  int64_t offset = t->offset + index * strides[d];
  sizes.erase(sizes.begin() + d);
  strides.erase(strides.begin() + d);
  return make_view(t, sizes, strides, offset);
}

Tensor slice(const Tensor& t, int64_t d, int64_t start, int64_t stop, int64_t step) {
  d = wrap_dim(d, t->dim());
  EMBER_CHECK(step > 0, ValueError, "slice step must be positive");
  int64_t size = t->sizes[d];
  // Python slice semantics: clamp into [0, size].
  if (start < 0) start += size;
  if (stop < 0) stop += size;
  start = std::clamp<int64_t>(start, 0, size);
  stop = std::clamp<int64_t>(stop, start, size);
  int64_t len = (stop - start + step - 1) / step;
  Shape sizes = t->sizes, strides = t->strides;
  int64_t offset = t->offset + (len > 0 ? start * strides[d] : 0);
  sizes[d] = len;
  strides[d] *= step;
  return make_view(t, sizes, strides, offset);
}

// ---------------------------------------------------------------------------------------------

Shape broadcast_shapes(const Shape& a, const Shape& b) {
  size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da == db || db == 1) out[i] = da;
    else if (da == 1) out[i] = db;
    else
      throw std::runtime_error(str_cat("The size of tensor a (", da,
                                       ") must match the size of tensor b (", db,
                                       ") at non-singleton dimension ", i));
  }
  return out;
}

bool is_non_overlapping_and_dense(const TensorImpl& t) {
  int64_t n = t.dim();
  if (n == 1) return t.sizes[0] < 2 || t.strides[0] == 1;
  std::vector<int64_t> perm(n);
  for (int64_t i = 0; i < n; ++i) perm[i] = i;
  std::sort(perm.begin(), perm.end(), [&](int64_t a, int64_t b) {
    if (t.sizes[a] < 2) return false;
    if (t.sizes[b] < 2) return true;
    return t.strides[a] < t.strides[b];
  });
  int64_t require = 1;
  for (int64_t i = 0; i < n; ++i) {
    int64_t s = t.sizes[perm[i]];
    if (s < 2) return true;
    if (t.strides[perm[i]] != require) return false;
    require *= s;
  }
  return true;
}

bool has_internal_overlap(const TensorImpl& t) {
  if (t.numel() == 0) return false;  // nothing is written
  for (int64_t d = 0; d < t.dim(); ++d)
    if (t.sizes[d] > 1 && t.strides[d] == 0) return true;
  return false;
}

void check_inplace_writable(const Tensor& t, const char* op) {
  if (has_internal_overlap(*t))
    throw std::runtime_error(str_cat(
        op, ": unsupported operation: more than one element of the written-to tensor refers to a "
            "single memory location. Please clone() the tensor before performing the operation."));
}

}  // namespace ember
