#include "kernels/iterator.h"

#include <algorithm>
#include <numeric>

namespace ember {

bool check_output_shape(const Tensor& out, const Shape& shape, const char* op_name,
                        bool resizable) {
  if (out->sizes == shape) return false;
  if (resizable && out->numel() == 0 && out->sizes.size() <= 1) return true;
  Shape b = broadcast_shapes(out->sizes, shape);  // raises on incompatible shapes
  if (b != out->sizes)
    throw std::runtime_error(str_cat(op_name, ": output with shape ", shape_str(out->sizes),
                                     " doesn't match the broadcast shape ", shape_str(b)));
  return false;
}

ElementwiseIter::ElementwiseIter(Tensor out, ScalarType out_dtype,
                                 const std::vector<Tensor>& inputs, const char* op_name) {
  ntensors_ = static_cast<int>(inputs.size()) + 1;
  EMBER_CHECK(ntensors_ <= kMaxOperands, std::logic_error, "too many operands");
  // 1. broadcast shape
  Shape shape;
  for (auto& t : inputs) shape = broadcast_shapes(shape, t->sizes);
  // an in-place op's self (an operand too) is never resized, an out= of no elements may be
  const bool inplace = out && std::any_of(inputs.begin(), inputs.end(),
                                          [&](const Tensor& t) { return t == out; });
  if (out && out->sizes != shape) {
    if (check_output_shape(out, shape, op_name, /*resizable=*/!inplace)) {
      auto fresh = empty(shape, out->dtype, out->device());
      out->storage = fresh->storage;
      out->sizes = fresh->sizes;
      out->strides = fresh->strides;
      out->offset = 0;
    } else {
      shape = out->sizes;  // in-place op whose input broadcasts to the output
    }
  }
  const int nd = static_cast<int>(shape.size());
  EMBER_CHECK(nd <= 64, ValueError, op_name, ": too many dimensions (", nd, " > 64)");

  // 2. allocate the output, following the first full-shape dense input's layout (contiguous
  // or not: `a + b.t()` is contiguous like a, as in PyTorch, and `a.t() + b` is transposed).
  if (!out) {
    Tensor like;
    for (auto& t : inputs)
      if (t->sizes == shape && is_non_overlapping_and_dense(*t)) {
        like = t;
        break;
      }
    Device dev;  // the first input not on the CPU (a CPU 0-d operand may come first: 2 - x)
    for (auto& t : inputs)
      if (!t->device().is_cpu()) {
        dev = t->device();
        break;
      }
    out = like && !like->is_contiguous() ? empty_strided(shape, like->strides, out_dtype, dev)
                                         : empty(shape, out_dtype, dev);
  }
  out_ = out;
  device_ = out->device();
  for (size_t k = 0; k < inputs.size(); ++k) {
    const Device& d = inputs[k]->device();
    if (d == device_) continue;
    if (d.is_cpu() && inputs[k]->dim() == 0) {
      host_inputs_ |= 1u << k;
      continue;
    }
    throw std::runtime_error(str_cat("Expected all tensors to be on the same device, but found at "
                                     "least two devices, ", device_.str(), " and ", d.str(), "!"));
  }
  numel_ = 1;
  for (auto s : shape) numel_ *= s;

  // Element strides in the broadcast shape, operand 0 = output.
  std::vector<const TensorImpl*> ops;
  ops.push_back(out.get());
  for (auto& t : inputs) ops.push_back(t.get());
  std::vector<std::vector<int64_t>> st(ntensors_, std::vector<int64_t>(nd, 0));
  for (int k = 0; k < ntensors_; ++k) {
    const TensorImpl* t = ops[k];
    int off = nd - static_cast<int>(t->sizes.size());
    for (int d = 0; d < static_cast<int>(t->sizes.size()); ++d)
      st[k][off + d] = t->sizes[d] == 1 ? 0 : t->strides[d] * static_cast<int64_t>(t->element_size());
    data_[k] = t->device_data();  // the CPU kernels' for_each refuses device memory
  }

  // 3. order dims fastest-first: by output stride, ties broken by the inputs' strides.
  std::vector<int> perm(nd);
  std::iota(perm.begin(), perm.end(), 0);
  std::reverse(perm.begin(), perm.end());  // C order is the default: last dim fastest
  std::stable_sort(perm.begin(), perm.end(), [&](int a, int b) {
    for (int k = 0; k < ntensors_; ++k) {
      int64_t sa = st[k][a], sb = st[k][b];
      if (sa == 0 || sb == 0) continue;
      if (sa != sb) return sa < sb;
    }
    return false;
  });
  shape_.clear();
  for (int k = 0; k < ntensors_; ++k) strides_[k].clear();
  for (int i = 0; i < nd; ++i) {
    int d = perm[i];
    if (shape[d] == 1) continue;  // size-1 dims carry no iteration
    // coalesce with the previous (faster) dim when contiguous for every operand
    if (!shape_.empty()) {
      bool can = true;
      for (int k = 0; k < ntensors_ && can; ++k)
        can = strides_[k].back() * shape_.back() == st[k][d];
      if (can) {
        shape_.back() *= shape[d];
        continue;
      }
    }
    shape_.push_back(shape[d]);
    for (int k = 0; k < ntensors_; ++k) strides_[k].push_back(st[k][d]);
  }
  if (numel_ == 0) shape_.assign(1, 0);
  if (shape_.empty() && numel_ == 1) {
    shape_.push_back(1);
    for (int k = 0; k < ntensors_; ++k) strides_[k].push_back(0);
  }
}

void ElementwiseIter::for_each_fn(LoopFn loop, const void* ctx, int64_t grain) const {
  for_each([&](char** data, const int64_t* strides, int64_t n) { loop(ctx, data, strides, n); },
           grain);
}

void ElementwiseIter::throw_device_memory() const {
  throw std::runtime_error(str_cat("ember: a CPU kernel was handed tensors on ", device_.str(),
                                   " (an op without a CUDA path reached the CPU kernels)"));
}

}  // namespace ember
