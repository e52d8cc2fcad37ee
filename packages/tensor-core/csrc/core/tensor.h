// tensor.h: the data model.
//
//   StorageImpl  reference-counted bytes (a DataPtr from an Allocator) + size; freed the moment
//                the last Tensor or view referencing it goes (shared_ptr, no GC in the loop).
//   TensorImpl   a view of a storage: sizes, strides (in elements), storage offset, dtype, plus
//                the version counter that views share (in-place ops bump it, autograd checks it)
//                and the autograd slots (requires_grad flag + an opaque meta object that the
//                autograd package fills through the binding layer's hook).
//
// `Tensor` is a shared_ptr<TensorImpl>: the Python object owns one, views own another that
// points to the same storage.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "core/allocator.h"
#include "core/dtype.h"
#include "core/errors.h"
#include "core/scalar.h"

namespace ember {

using Shape = std::vector<int64_t>;

struct StorageImpl {
  DataPtr data;
  size_t nbytes = 0;
  Allocator* allocator = nullptr;  // null for memory borrowed from another library
  bool resizable = false;
  // Live exports of the bytes' address (an ndarray from numpy(), a buffer-protocol view, a
  // DLPack capsule): while any is alive, resize_ must not move the bytes they point into.
  std::atomic<int> exports{0};
  StorageImpl(DataPtr d, size_t n, Allocator* a) : data(std::move(d)), nbytes(n), allocator(a) {}
  void* ptr() const { return data.get(); }
  Device device() const { return data.device(); }
};
using Storage = std::shared_ptr<StorageImpl>;

// A storage reference that also pins the bytes in place (StorageImpl::exports), held by
// whatever hands their address out of ember.
struct PinnedStorage {
  Storage storage;
  explicit PinnedStorage(Storage s) : storage(std::move(s)) { storage->exports.fetch_add(1); }
  ~PinnedStorage() { storage->exports.fetch_sub(1); }
  PinnedStorage(const PinnedStorage&) = delete;
  PinnedStorage& operator=(const PinnedStorage&) = delete;
};

struct VersionCounter {
  std::atomic<int64_t> value{0};
};

// Opaque per-tensor autograd state; the autograd layer subclasses it (the core never looks in).
struct AutogradMeta {
  virtual ~AutogradMeta() = default;
};

struct TensorImpl {
  Storage storage;
  Shape sizes;
  Shape strides;  // in elements
  int64_t offset = 0;  // in elements
  ScalarType dtype = ScalarType::Float32;
  std::shared_ptr<VersionCounter> version;
  bool requires_grad = false;
  bool is_wrapped_number = false;  // a Python scalar turned into a 0-d tensor for an op
  std::shared_ptr<AutogradMeta> autograd_meta;
  std::shared_ptr<TensorImpl> base;  // the tensor this is a view of (null if not a view)

  int64_t dim() const { return static_cast<int64_t>(sizes.size()); }
  int64_t numel() const {
    int64_t n = 1;
    for (auto s : sizes) n *= s;
    return n;
  }
  size_t element_size() const { return itemsize(dtype); }
  Device device() const { return storage->device(); }
  // The address of the first element, for CPU code. The CPU kernels all reach memory through
  // here, so a CUDA tensor that got this far (an op with no CUDA implementation) raises instead
  // of being read from the host.
  char* data() const {
    if (__builtin_expect(!storage->device().is_cpu(), 0)) throw_not_on_cpu();
    return device_data();
  }
  // The same address on whatever device holds it (copies, DLPack, __cuda_array_interface__).
  char* device_data() const {
    return static_cast<char*>(storage->ptr()) + offset * static_cast<int64_t>(itemsize(dtype));
  }
  [[noreturn]] void throw_not_on_cpu() const;
  template <typename T> T* data_as() const { return reinterpret_cast<T*>(data()); }
  bool is_contiguous() const;
  void bump_version() { version->value.fetch_add(1, std::memory_order_relaxed); }
};
using Tensor = std::shared_ptr<TensorImpl>;

// ---- construction ----
Shape contiguous_strides(const Shape& sizes);
// Reduction dims: nullopt means all of them.
using OptDims = std::optional<std::vector<int64_t>>;
Tensor empty(const Shape& sizes, ScalarType dtype, Device device = Device{});
Tensor empty_strided(const Shape& sizes, const Shape& strides, ScalarType dtype, Device device = Device{});
Tensor empty_like(const Tensor& t, ScalarType dtype = ScalarType::Undefined);
// PyTorch's resize_: gives `t` the shape `shape` with contiguous strides (a tensor that already
// has that shape keeps its strides unless `restride`). A storage too small for the new extent
// grows in place (its bytes copied, so every view of it follows); one that ember's allocators
// did not make (borrowed from NumPy, a buffer, shared memory) cannot grow and raises.
void resize_(const Tensor& t, const Shape& shape, bool restride = false);
// PyTorch's resize_output for out= tensors: resize_ when the shape differs.
void resize_output(const Tensor& out, const Shape& shape);
Tensor from_storage(Storage storage, const Shape& sizes, const Shape& strides, int64_t offset, ScalarType dtype);
// 0-d tensor holding s; `checked` refuses values the dtype cannot hold, as PyTorch's fills
// (fill_, full, masked_fill, index_fill, scatter with a value).
Tensor scalar_tensor(Scalar s, ScalarType dtype, bool checked = false);
// torch's checked conversion of a number into the dtype a kernel computes in (c10's
// checked_convert in Scalar::to<T>): a value the dtype cannot hold is a RuntimeError ("value
// cannot be converted to type float without overflow"), even when there is nothing to compute.
void check_scalar_fits(const Scalar& s, ScalarType dtype);
// torch's scalar_tensor and its fill of one CPU element (scalar_fill) convert a Python float or
// int into half and bfloat16 unchecked, rounding beyond their range to inf; every other
// conversion of a fill is checked.
inline bool converts_unchecked(const Scalar& s, ScalarType dtype) {
  return is_reduced_float(dtype) && (s.kind == Scalar::Kind::Float || s.kind == Scalar::Kind::Int);
}
Tensor wrapped_scalar(Scalar s, ScalarType dtype);  // same, marked as a wrapped Python number

// ---- views (share storage and version counter) ----
Tensor make_view(const Tensor& base, const Shape& sizes, const Shape& strides, int64_t offset);
Tensor as_strided(const Tensor& t, const Shape& sizes, const Shape& strides, int64_t offset);
Tensor view(const Tensor& t, Shape sizes);
Tensor reshape(const Tensor& t, Shape sizes);
Tensor transpose(const Tensor& t, int64_t d0, int64_t d1);
Tensor t_(const Tensor& t);  // .t(): 0-d/1-d unchanged, 2-d transposed
Tensor permute(const Tensor& t, const Shape& dims);
Tensor squeeze(const Tensor& t);
Tensor squeeze_dims(const Tensor& t, const Shape& dims);
Tensor unsqueeze(const Tensor& t, int64_t d);
Tensor expand(const Tensor& t, const Shape& sizes);
Tensor flatten(const Tensor& t, int64_t start, int64_t end);
Tensor unflatten(const Tensor& t, int64_t d, const Shape& sizes);
Tensor narrow(const Tensor& t, int64_t d, int64_t start, int64_t length);
Tensor select(const Tensor& t, int64_t d, int64_t index);
Tensor slice(const Tensor& t, int64_t d, int64_t start, int64_t stop, int64_t step);  // normalised bounds
Tensor alias(const Tensor& t);  // detach(): same data, no autograd state

// ---- copies ----
Tensor contiguous(const Tensor& t);
Tensor clone(const Tensor& t);
Tensor to_dtype(const Tensor& t, ScalarType dtype, bool copy = false);
void copy_(const Tensor& dst, const Tensor& src);  // broadcasts src, converts dtype
void fill_(const Tensor& dst, Scalar value);
// A copy or fill that involves a CUDA tensor is no CPU work: copy_/fill_ hand it to these, which
// the binding layer registers (ember.cuda's CuPy code, python/bind_cuda.cpp). So contiguous(),
// clone(), to_dtype() and every copy the core makes work on CUDA tensors too.
using DeviceCopyFn = void (*)(const Tensor& dst, const Tensor& src);
using DeviceFillFn = void (*)(const Tensor& dst, Scalar value);
void set_device_copy_functions(DeviceCopyFn copy, DeviceFillFn fill);

// ---- checked shape arithmetic (c10's safe_numerics) ----
// Every size, stride and byte count that a caller can choose goes through these, so a hostile
// shape raises PyTorch's error instead of wrapping around into a small extent that passes a
// bounds check. Views check their numel (make_view, from_storage); storages their byte size.
// numel of `sizes`: "Trying to create tensor with negative dimension" / "numel: integer
// multiplication overflow".
int64_t checked_numel(const Shape& sizes);
// Bytes of a contiguous tensor of `sizes`: "Storage size calculation overflowed with sizes=...".
size_t contiguous_nbytes(const Shape& sizes, size_t itemsize);
// Bytes of storage that (sizes, strides, offset) reaches: 0 when it has no element, else
// (offset + 1 + sum((size - 1) * stride)) * itemsize; "Storage size calculation overflowed with
// sizes=... and strides=..." when that does not fit an int64. Refuses negative sizes/strides.
size_t strided_nbytes(const Shape& sizes, const Shape& strides, int64_t offset, size_t itemsize);
// PyTorch's setStorage check: the geometry lies inside `storage` (as_strided, set_, rebuilds).
void check_in_storage(const StorageImpl& storage, const Shape& sizes, const Shape& strides,
                      int64_t offset, size_t itemsize);

// ---- shape helpers ----
int64_t wrap_dim(int64_t d, int64_t ndim, bool allow_scalar = true);
Shape broadcast_shapes(const Shape& a, const Shape& b);
Shape infer_size(Shape sizes, int64_t numel);  // resolves a -1
bool is_non_overlapping_and_dense(const TensorImpl& t);
// True when writing through `t` could write one memory location twice (e.g. an expanded tensor).
bool has_internal_overlap(const TensorImpl& t);
void check_inplace_writable(const Tensor& t, const char* op);

}  // namespace ember
