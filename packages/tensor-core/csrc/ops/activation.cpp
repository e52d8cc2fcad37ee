// activation.cpp: GELU's entry points (see activation.h); the loops are ops/cpu/nn_rows.cpp,
// compiled per CPU capability. float16/bfloat16 run in float32 and round once at the end.
#include "ops/activation.h"

#include "ops/cpu_kernels.h"
#include "ops/elementwise.h"
#include "kernels/iterator.h"
#include "runtime/gil.h"

namespace ember {
namespace {

bool tanh_approximation(const std::string& approximate) {
  EMBER_CHECK(approximate == "none" || approximate == "tanh", std::runtime_error,
              "approximate argument must be either none or tanh.");
  return approximate == "tanh";
}

void check_floating(const Tensor& t, const char* kernel) {
  EMBER_CHECK(is_floating(t->dtype), NotImplementedError, "\"", kernel, "\" not implemented for '",
              torch_type_name(t->dtype), "'");
}

// The dtype the loops run in: float32 for the reduced floats.
ScalarType compute_dtype(ScalarType dt) { return is_reduced_float(dt) ? ScalarType::Float32 : dt; }

}  // namespace

Tensor gelu(const Tensor& input, const std::string& approximate) {
  const bool tanh_approx = tanh_approximation(approximate);
  check_floating(input, "GeluKernelImpl");
  GilRelease nogil(input->numel() > kGrainSize);
  const ScalarType ct = compute_dtype(input->dtype);
  Tensor x = contiguous(to_dtype(input, ct));
  Tensor out = empty(x->sizes, ct);
  cpu_kernels().gelu(x, out, tanh_approx);
  return ct == input->dtype ? out : to_dtype(out, input->dtype);
}

Tensor gelu_backward(const Tensor& grad_output, const Tensor& input, const std::string& approximate) {
  const bool tanh_approx = tanh_approximation(approximate);
  check_floating(input, "GeluBackwardKernelImpl");
  EMBER_CHECK(grad_output->sizes == input->sizes, std::runtime_error,
              "gelu_backward: expected grad_output of size ", shape_str(input->sizes), ", but got ",
              shape_str(grad_output->sizes));
  GilRelease nogil(input->numel() > kGrainSize);
  const ScalarType ct = compute_dtype(input->dtype);
  Tensor x = contiguous(to_dtype(input, ct)), g = contiguous(to_dtype(grad_output, ct));
  Tensor gi = empty(x->sizes, ct);
  cpu_kernels().gelu_backward(g, x, gi, tanh_approx);
  return ct == input->dtype ? gi : to_dtype(gi, input->dtype);
}

}  // namespace ember
