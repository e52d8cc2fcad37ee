// iterator.h: the one elementwise machinery (in the spirit of ATen's TensorIterator).
//
// Every unary/binary/ternary op, copy and cast runs through ElementwiseIter:
//   1. broadcast the operands to one shape (byte strides, 0 on broadcast dims);
//   2. allocate the output if the caller gave none, in the memory order of the inputs;
//   3. reorder the dims fastest-first by the output's strides, then coalesce dims that are
//      contiguous for every operand, so a contiguous op becomes one flat loop;
//   4. split the flat index range over the thread pool above a grain size and call the
//      kernel's inner loop `loop(char** data, const int64_t* strides, int64_t n)` on runs of the
//      innermost dim. Kernels give that loop a fast path for contiguous and scalar operands,
//      which the compiler vectorises (loops.h).
// Over CUDA tensors the iterator does steps 1-3 alone: the device's kernels take its shape and
// strides (cuda/device_elementwise.cpp), and for_each refuses to touch device memory.
#pragma once
#include <array>
#include <vector>

#include "core/tensor.h"
#include "runtime/parallel.h"

namespace ember {

constexpr int kMaxOperands = 5;

// Checks an out= (or in-place) tensor against the inputs' broadcast `shape` with torch's errors;
// true when out is an empty 0-d/1-d tensor that PyTorch resizes to the result's shape (an out=
// is `resizable`, an in-place op's self is not).
bool check_output_shape(const Tensor& out, const Shape& shape, const char* op_name,
                        bool resizable = true);

class ElementwiseIter {
 public:
  // `out` may be null: it is then allocated with dtype `out_dtype`. Inputs keep their dtypes
  // (kernels expect them already converted to the compute dtype).
  ElementwiseIter(Tensor out, ScalarType out_dtype, const std::vector<Tensor>& inputs,
                  const char* op_name);

  const Tensor& output() const { return out_; }
  int64_t numel() const { return numel_; }
  int ntensors() const { return ntensors_; }
  int ndim() const { return static_cast<int>(shape_.size()); }
  const Shape& shape() const { return shape_; }
  const std::vector<int64_t>& strides(int operand) const { return strides_[operand]; }
  char* data(int operand) const { return data_[operand]; }
  // The device of the output, which every input shares, except CPU 0-d tensors joining a CUDA
  // op as numbers (as in PyTorch): bit k of host_inputs() marks input k (0-based) as one.
  const Device& device() const { return device_; }
  unsigned host_inputs() const { return host_inputs_; }
  // Device memory that the host can address (ember.cuda's simulated devices in the tests): the
  // CPU kernels may then run over it.
  void allow_host_access() { host_access_ = true; }

  // for_each with the loop as a plain function and its context, compiled once (iterator.cpp):
  // run_elementwise goes through it, so that each (op, dtype) kernel instantiates its inner loop
  // only, not for_each's parallel split and odometer (half of the kernels' code, and of their
  // compile time, when each had its own copy).
  using LoopFn = void (*)(const void* ctx, char** data, const int64_t* strides, int64_t n);
  void for_each_fn(LoopFn loop, const void* ctx, int64_t grain = kGrainSize) const;

  // Runs loop over every element, in parallel chunks of at least `grain` elements.
  template <typename Loop> void for_each(Loop&& loop, int64_t grain = kGrainSize) const {
    if (numel_ == 0) return;
    if (__builtin_expect(!device_.is_cpu() && !host_access_, 0)) throw_device_memory();
    if (shape_.size() <= 1) {
      int64_t s[kMaxOperands];
      for (int k = 0; k < ntensors_; ++k) s[k] = shape_.empty() ? 0 : strides_[k][0];
      parallel_for(0, numel_, grain, [&](int64_t b, int64_t e) {
        char* ptrs[kMaxOperands];
        for (int k = 0; k < ntensors_; ++k) ptrs[k] = data_[k] + b * s[k];
        loop(ptrs, s, e - b);
      });
      return;
    }
    parallel_for(0, numel_, grain, [&](int64_t b, int64_t e) { serial_range(loop, b, e); });
  }

 private:
  template <typename Loop> void serial_range(Loop& loop, int64_t begin, int64_t end) const {
    const int nd = ndim();
    int64_t counter[64];
    int64_t rem = begin;
    for (int d = 0; d < nd; ++d) {
      counter[d] = rem % shape_[d];
      rem /= shape_[d];
    }
    int64_t inner[kMaxOperands];
    for (int k = 0; k < ntensors_; ++k) inner[k] = strides_[k][0];
    int64_t pos = begin;
    while (pos < end) {
      char* ptrs[kMaxOperands];
      for (int k = 0; k < ntensors_; ++k) {
        char* p = data_[k];
        for (int d = 0; d < nd; ++d) p += counter[d] * strides_[k][d];
        ptrs[k] = p;
      }
      int64_t n = std::min(shape_[0] - counter[0], end - pos);
      loop(ptrs, inner, n);
      pos += n;
      counter[0] += n;
      for (int d = 0; d < nd - 1 && counter[d] == shape_[d]; ++d) {
        counter[d] = 0;
        ++counter[d + 1];
      }
    }
  }

  [[noreturn]] void throw_device_memory() const;

  Tensor out_;
  Device device_;
  unsigned host_inputs_ = 0;
  bool host_access_ = false;
  int ntensors_ = 0;
  int64_t numel_ = 0;
  Shape shape_;                                          // fastest-first after coalescing
  std::array<std::vector<int64_t>, kMaxOperands> strides_;  // bytes, per operand
  std::array<char*, kMaxOperands> data_{};
};

}  // namespace ember
