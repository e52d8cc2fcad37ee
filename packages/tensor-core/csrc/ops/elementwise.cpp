// elementwise.cpp: promotion, broadcasting and in-place/out= rules for the table's ops,
// plus copy_/fill_/to_dtype and the parametrised elementwise ops.
#include "ops/elementwise.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>

#include "kernels/iterator.h"
#include "kernels/loops.h"
#include "cuda/device_elementwise.h"
#include "kernels/math.h"
#include "kernels/vexp.h"
#include "ops/cpu_kernels.h"
#include "ops/shape_ops.h"
#include "runtime/parallel.h"

namespace ember {

// Atomic: kernels running without the GIL read it while another thread may set it.
static std::atomic<ScalarType> g_default_dtype{ScalarType::Float32};
ScalarType get_default_dtype() { return g_default_dtype.load(std::memory_order_relaxed); }
void set_default_dtype(ScalarType t) {
  EMBER_CHECK(t == ScalarType::Float32 || t == ScalarType::Float64 || t == ScalarType::Float16 ||
                  t == ScalarType::BFloat16,
              TypeError, "only floating-point types are supported as the default type");
  g_default_dtype.store(t, std::memory_order_relaxed);
}

// PyTorch's ResultTypeState: tensors with dims decide first, then zero-dim tensors, then
// Python numbers, each lower tier only able to raise the category (bool < int < float <
// complex). A lower tier's complex keeps a floating higher tier's precision (float64 tensor * 1j
// is complex128, float32's is complex64).
static ScalarType combine_categories(ScalarType higher, ScalarType lower) {
  if (higher == ScalarType::Undefined) return lower;
  if (is_complex(higher)) return higher;
  if (is_complex(lower)) return is_floating(higher) ? to_complex_type(higher) : lower;
  if (is_floating(higher)) return higher;
  if (higher == ScalarType::Bool || is_floating(lower)) return promote_types(higher, lower);
  return higher;
}

ScalarType result_type(const std::vector<Operand>& operands) {
  ScalarType dim_r = ScalarType::Undefined, zero_r = ScalarType::Undefined,
             wrapped_r = ScalarType::Undefined;
  for (auto& o : operands) {
    if (o.is_scalar) {
      wrapped_r = promote_types(wrapped_r, o.s.natural_dtype(get_default_dtype()));
    } else if (o.t->is_wrapped_number) {
      ScalarType cur = is_complex(o.t->dtype) ? to_complex_type(get_default_dtype())
                       : is_floating(o.t->dtype) ? get_default_dtype() : o.t->dtype;
      wrapped_r = promote_types(wrapped_r, cur);
    } else if (o.t->dim() == 0) {
      zero_r = promote_types(zero_r, o.t->dtype);
    } else {
      dim_r = promote_types(dim_r, o.t->dtype);
    }
  }
  return combine_categories(dim_r, combine_categories(zero_r, wrapped_r));
}

// ---------------------------------------------------------------------------------------------
// copy / cast / fill

namespace {
DeviceCopyFn g_device_copy = nullptr;
DeviceFillFn g_device_fill = nullptr;
[[noreturn]] void no_device_functions(const Tensor& t) {
  throw std::runtime_error(str_cat("ember: a tensor on ", t->device().str(),
                                   " needs ember.cuda's device functions, which are not loaded"));
}
}  // namespace

void set_device_copy_functions(DeviceCopyFn copy, DeviceFillFn fill) {
  g_device_copy = copy;
  g_device_fill = fill;
}

void copy_(const Tensor& dst, const Tensor& src) {
  if (dst == src || dst->numel() == 0) {  // nothing to move, but still a write to dst
    // (the shapes must still broadcast, as torch's iterator checks them before it sees no work)
    if (dst != src && dst->sizes != src->sizes)
      check_output_shape(dst, src->sizes, "copy_", /*resizable=*/false);
    dst->bump_version();
    return;
  }
  check_inplace_writable(dst, "copy_");
  if (!dst->device().is_cpu() || !src->device().is_cpu()) {
    if (!g_device_copy) no_device_functions(dst->device().is_cpu() ? src : dst);
    g_device_copy(dst, src);
    dst->bump_version();
    return;
  }
  Tensor s = src;
  // Overlapping source and destination (e.g. x[1:].copy_(x[:-1])): copy the source first.
  if (src->storage == dst->storage) s = clone(src);
  ElementwiseIter it(dst, dst->dtype, {s}, "copy_");
  run_copy_kernel(it, dst->dtype, s->dtype);
  dst->bump_version();
}

// Fills the new tensor `out` from `t`: the copy kernel on the CPU, the device functions (through
// copy_) for a CUDA tensor. `op` names the caller in the iterator's errors.
static Tensor fill_new(const Tensor& out, const Tensor& t, const char* op) {
  if (!t->device().is_cpu()) {
    copy_(out, t);
    return out;
  }
  ElementwiseIter it(out, out->dtype, {t}, op);
  run_copy_kernel(it, out->dtype, t->dtype);
  return out;
}

Tensor contiguous(const Tensor& t) {
  if (t->is_contiguous()) return t;
  // Not clone(): clone keeps a dense permuted layout, contiguous() must give C order.
  return fill_new(empty(t->sizes, t->dtype, t->device()), t, "contiguous");
}

Tensor clone(const Tensor& t) {
  Tensor out = empty_like(t);
  if (t->numel() == 0) return out;
  // Transposed 2-d copies go through a tiled kernel (see transpose_copy in copy_kernels).
  return fill_new(out, t, "clone");
}

Tensor to_dtype(const Tensor& t, ScalarType dtype, bool copy) {
  if (t->dtype == dtype && !copy) return t;
  return fill_new(empty_like(t, dtype), t, "to");
}

void fill_(const Tensor& dst_in, Scalar value) {
  // (a fill of one CPU element converts as scalar_tensor does; a fill of more elements checks)
  const bool unchecked = dst_in->numel() == 1 && dst_in->device().is_cpu() &&
                         converts_unchecked(value, dst_in->dtype);
  // Writing one value is defined on an expanded tensor too (torch allows it): fill the memory it
  // covers once, through a view without its stride-0 dims.
  Tensor dst = dst_in;
  if (has_internal_overlap(*dst_in)) {
    Shape sizes = dst_in->sizes;
    for (size_t d = 0; d < sizes.size(); ++d)
      if (dst_in->strides[d] == 0) sizes[d] = 1;
    dst = make_view(dst_in, sizes, dst_in->strides, dst_in->offset);
  }
  if (!unchecked) check_scalar_fits(value, dst->dtype);  // (torch's, even for an empty tensor)
  if (dst->numel() == 0) {  // else the iterator would resize it to the value's 0-d shape
    dst_in->bump_version();
    return;
  }
  if (!dst->device().is_cpu()) {
    if (!g_device_fill) no_device_functions(dst);
    g_device_fill(dst, value);
    dst_in->bump_version();
    return;
  }
  if (dst->is_contiguous()) {
    // a contiguous fill: typed loops (in parallel chunks when large), without the 0-d value
    // tensor and the iterator, which were most of a small fill's cost (zeros(4): 0.9 us against
    // torch's 0.4) and kept a large one at a third of torch's speed
    dispatch_every(dst->dtype, "fill_", [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T v = value.to<T>();
      // the value's bits as an unsigned integer of its size (a fill of Half structs stayed scalar)
      using Bits = math::bits_t<T>;
      Bits bits;
      std::memcpy(&bits, &v, sizeof(T));
      Bits* p = dst->data_as<Bits>();
      if (dst->numel() <= kGrainSize) return std::fill_n(p, dst->numel(), bits), void();
      parallel_for(0, dst->numel(), kGrainSize * 4,
                   [&](int64_t b, int64_t e) { std::fill_n(p + b, e - b, bits); });
    });
    dst_in->bump_version();
    return;
  }
  Tensor v = scalar_tensor(value, dst->dtype, /*checked=*/!unchecked);
  ElementwiseIter it(dst, dst->dtype, {v}, "fill_");
  run_copy_kernel(it, dst->dtype, dst->dtype);
  dst_in->bump_version();
}

// ---------------------------------------------------------------------------------------------

static Tensor as_tensor_operand(const Operand& o, ScalarType dtype) {
  if (o.is_scalar) return wrapped_scalar(o.s, dtype);
  return to_dtype(o.t, dtype);
}

static void check_out_dtype(const char* op, ScalarType result, const Tensor& out) {
  if (!can_cast(result, out->dtype))
    throw std::runtime_error(str_cat("result type ", type_name(result),
                                     " can't be cast to the desired output type ",
                                     type_name(out->dtype)));
  (void)op;
}

// Runs `kernel` writing into `out` (null: allocate `result_dtype`); when out's dtype differs
// from the compute result, compute into a temporary and cast it into out.
template <typename K>
static Tensor run_into(const char* op, const Tensor& out, ScalarType result_dtype,
                       const std::vector<Tensor>& inputs, K kernel) {
  if (out) {
    check_out_dtype(op, result_dtype, out);
    check_inplace_writable(out, op);
    if (out->dtype != result_dtype) {
      ElementwiseIter tmp_it(nullptr, result_dtype, inputs, op);
      kernel(tmp_it);
      copy_(out, tmp_it.output());
      return out;
    }
    // An input aliasing part of the output (not the whole of it) would be read after being
    // written: compute into a temporary instead.
    for (auto& in : inputs)
      if (in->storage == out->storage && !(in->offset == out->offset && in->strides == out->strides)) {
        ElementwiseIter tmp_it(nullptr, result_dtype, inputs, op);
        kernel(tmp_it);
        copy_(out, tmp_it.output());
        return out;
      }
  }
  ElementwiseIter it(out, result_dtype, inputs, op);
  kernel(it);
  if (out) out->bump_version();
  return it.output();
}

// r, a float16/bfloat16 op's float32 result, as the op's result: converted to `result`, or
// written into `out` under the op's own out= rules.
static Tensor finish_from_float32(const char* op, const Tensor& r, ScalarType result,
                                  const Tensor& out) {
  if (!out) return to_dtype(r, result);
  check_out_dtype(op, result, out);
  // a float16/bfloat16 result rounds to its own dtype before an out= of another takes it:
  // torch's kernel writes the op's dtype, then casts
  if (out->dtype != result) {
    check_inplace_writable(out, op);
    check_output_shape(out, r->sizes, op);
    copy_(out, to_dtype(r, result));
    return out;
  }
  return run_into(op, out, ScalarType::Float32, {r}, [](const ElementwiseIter& it) {
    run_elementwise<float, float>(it, [](float x) { return x; });  // copied into out
  });
}

// torch checks an op's operands in TensorIterator's order: the output's internal overlap, the
// shapes, whether the result type casts to the output's dtype, and only then whether a kernel
// exists for the dtype. A call with several mistakes then gets torch's error for the first one.
// `nominal` is the op's result type by its kind, before any refusal of the dtype.
static void check_operands_first(const char* op, const Shape& shape, const Tensor& out,
                                 ScalarType nominal, bool inplace = false) {
  if (!out) return;
  check_inplace_writable(out, op);
  check_output_shape(out, shape, op, /*resizable=*/!inplace);  // an in-place self never resizes
  check_out_dtype(op, nominal, out);
}

static ScalarType nominal_unary_result(UnaryOp op, ScalarType input) {
  if (is_complex(input)) {
    switch (complex_unary_result(op)) {
      case ComplexResult::Real: return to_real_type(input);
      case ComplexResult::Bool: return ScalarType::Bool;
      default: return input;
    }
  }
  switch (unary_info(op).kind) {
    case OpKind::FLOAT: return is_floating(input) ? input : get_default_dtype();
    case OpKind::PRED: return ScalarType::Bool;
    default: return input;
  }
}

static ScalarType nominal_binary_result(BinaryOp op, ScalarType common) {
  const OpKind kind = binary_info(op).kind;
  if (kind == OpKind::CMP || kind == OpKind::LOGICAL) return ScalarType::Bool;
  if (is_complex(common))
    return complex_binary_result(op) == ComplexResult::Bool ? ScalarType::Bool : common;
  if ((kind == OpKind::TRUEDIV || kind == OpKind::FLOAT2) && !is_floating(common))
    return get_default_dtype();
  return common;
}

static const Shape& operand_sizes(const Operand& o) {
  static const Shape kScalar;
  return o.is_scalar ? kScalar : o.t->sizes;
}

// torch's refusals of complex inputs for the ops without a complex kernel.
[[noreturn]] static void refuse_complex(const char* name, ScalarType t, bool binary) {
  const std::string op = name;
  if (op == "sign")
    throw NotImplementedError("Unlike NumPy, torch.sign is not intended to support complex "
                              "numbers. Please use torch.sgn instead.");
  if (op == "floor" || op == "ceil" || op == "trunc")
    throw NotImplementedError(str_cat(op, " is not supported for complex inputs"));
  if (op == "deg2rad" || op == "rad2deg")
    throw std::runtime_error(str_cat(op, " is not supported for complex tensors."));
  if (op == "signbit")
    throw NotImplementedError("signbit is not implemented for complex tensors.");
  if (op == "relu") throw NotImplementedError("clamp is not supported for complex types");
  if (op == "frac") binary = true;  // torch names its kernel "frac_cpu"
  if (op == "maximum" || op == "minimum" || op == "fmax" || op == "fmin")
    throw std::runtime_error(str_cat(op, " not implemented for complex tensors."));
  throw NotImplementedError(str_cat("\"", op, binary ? "_cpu" : "", "\" not implemented for '",
                                    type_name(t), "'"));
}

ElementwiseDtypes unary_dtypes(UnaryOp op, ScalarType input) {
  const OpInfoEntry& info = unary_info(op);
  ScalarType compute = input, result = input;
  if (is_wide_unsigned(input)) {  // the floating ops and the predicates, as torch's
    if (info.kind == OpKind::FLOAT) return {get_default_dtype(), get_default_dtype()};
    if (info.kind == OpKind::PRED && op != UnaryOp::logical_not)  // exact on float64's rounding
      return {ScalarType::Float64, ScalarType::Bool};
    throw NotImplementedError(str_cat("\"", info.name, "_cpu\" not implemented for '",
                                      type_name(input), "'"));
  }
  if (is_complex(input)) {
    switch (complex_unary_result(op)) {
      case ComplexResult::None: refuse_complex(info.name, input, false);
      case ComplexResult::Real: return {input, to_real_type(input)};
      case ComplexResult::Bool: return {input, ScalarType::Bool};
      case ComplexResult::Complex: return {input, input};
    }
  }
  switch (info.kind) {
    case OpKind::FLOAT:
      if (!is_floating(compute)) compute = result = get_default_dtype();
      break;
    case OpKind::FLOAT_ONLY:
    case OpKind::SAME:
      if (compute == ScalarType::Bool) {
        if (op == UnaryOp::neg)
          throw std::runtime_error(
              "Negation, the `-` operator, on a bool tensor is not supported. If you are trying "
              "to invert a mask, use the `~` or `logical_not()` operator instead.");
        if (op == UnaryOp::relu) throw std::runtime_error("Boolean inputs not supported for relu");
        throw NotImplementedError(str_cat("\"", info.name, "\" not implemented for 'Bool'"));
      }
      if (info.kind == OpKind::FLOAT_ONLY && !is_floating(compute))
        throw NotImplementedError(str_cat("\"", info.name, "\" not implemented for '",
                                          type_name(compute), "'"));
      break;
    case OpKind::PRED:
      result = ScalarType::Bool;
      if (is_reduced_float(compute)) compute = ScalarType::Float32;
      break;
    case OpKind::INTEGRAL:
      if (is_floating(compute))
        throw NotImplementedError(str_cat("\"", info.name, "\" not implemented for '",
                                          type_name(compute), "'"));
      break;
    default:
      break;
  }
  return {compute, result};
}

void check_unary_out(UnaryOp op, const Tensor& x, const Tensor& out) {
  // torch refuses a complex input to these in their meta functions, before any other check
  if (is_complex(x->dtype) && (op == UnaryOp::sign || op == UnaryOp::floor ||
                               op == UnaryOp::ceil || op == UnaryOp::trunc ||
                               op == UnaryOp::signbit))
    refuse_complex(unary_info(op).name, x->dtype, false);
  if (!out || out == x) return;
  // torch's out= rules of its own for these ops (logical_not's kernel is chosen by the input's
  // dtype and then out's: it has none for the wide unsigned types, an input's named first)
  if (op == UnaryOp::logical_not && is_wide_unsigned(out->dtype) && !is_wide_unsigned(x->dtype))
    throw NotImplementedError(
        str_cat("\"logical_not_cpu\" not implemented for '", type_name(out->dtype), "'"));
  if (op == UnaryOp::signbit && out->dtype != ScalarType::Bool)
    throw std::runtime_error("signbit does not support non-boolean outputs.");
  if (op == UnaryOp::abs && is_complex(x->dtype)) {
    // torch's abs of a complex input: a complex out= of the input's dtype takes the real
    // result (no other complex one); a real out= follows the usual cast rule
    if (is_complex(out->dtype) && out->dtype != x->dtype)
      throw std::runtime_error(str_cat("Found dtype ", type_name(out->dtype), " but expected ",
                                       type_name(x->dtype)));
  } else if (exact_out_dtype(op)) {
    const ScalarType nominal = nominal_unary_result(op, x->dtype);
    if (out->dtype != nominal)
      throw std::runtime_error(str_cat("Found dtype ", type_name(out->dtype), " but expected ",
                                       type_name(nominal)));
  }
}

Tensor unary(UnaryOp op, const Tensor& x, const Tensor& out) {
  const OpInfoEntry& info = unary_info(op);
  // torch's relu is clamp_min(x, 0), whose first check refuses a complex x
  EMBER_CHECK(op != UnaryOp::relu || !is_complex(x->dtype), NotImplementedError,
              "clamp is not supported for complex types");
  const ScalarType nominal = nominal_unary_result(op, x->dtype);
  check_unary_out(op, x, out);
  auto identity = [&] {  // the op's value is x itself
    check_operands_first(info.name, x->sizes, out, x->dtype);
    if (!out) return clone(x);
    if (out != x) copy_(out, x);
    else out->bump_version();  // an in-place op writes, as far as views and autograd know
    return out;
  };
  if (x->dtype == ScalarType::Bool) {  // torch's results for bool inputs
    if (op == UnaryOp::square)  // pow(x, 2): bool promotes to int64
      return unary(op, to_dtype(x, ScalarType::Int64), out);
    if (op == UnaryOp::sign) return identity();
  }
  if (is_wide_unsigned(x->dtype) &&
      (op == UnaryOp::floor || op == UnaryOp::ceil || op == UnaryOp::trunc))
    return identity();
  // (in-place abs/angle of a complex tensor gets torch's own message below)
  if (out != x || !is_complex(x->dtype) || is_complex(nominal))
    check_operands_first(info.name, x->sizes, out, nominal);
  const auto [compute, result] = unary_dtypes(op, x->dtype);
  Tensor in = to_dtype(x, compute);
  // (check_operands_first checked that the result casts to out; in place, a complex tensor
  // cannot take a real result, torch's own message, though it takes logical_not's bools)
  EMBER_CHECK(!(out && out == x && is_complex(x->dtype) && !is_complex(result) &&
                result != ScalarType::Bool),
              std::runtime_error, "In-place ", info.name, " is not supported for complex tensors.");
  // The kernel computes in `compute`; a bool-returning kernel writes bool, a complex kernel
  // its result type (abs of complex64 writes float32).
  ScalarType kernel_out = is_complex(compute)          ? result
                          : info.kind == OpKind::PRED ? ScalarType::Bool
                                                      : compute;
  return run_into(info.name, out, kernel_out, {in},
                  [&](const ElementwiseIter& it) { run_unary_kernel(op, it, compute); });
}

Tensor conj_physical(const Tensor& x) {
  if (!is_complex(x->dtype)) return clone(x);
  ElementwiseIter it(nullptr, x->dtype, {x}, "conj_physical");
  run_conj_kernel(it, x->dtype);
  return it.output();
}

bool is_integer_division(BinaryOp op) {
  return op == BinaryOp::floor_divide || op == BinaryOp::div_trunc ||
         op == BinaryOp::remainder || op == BinaryOp::fmod;
}

static void check_no_zero_divisor(const Tensor& b) {
  Tensor z = binary(BinaryOp::eq, Operand(b), Operand(Scalar::from_int(0)));
  const bool* p = z->data_as<bool>();  // freshly allocated, contiguous
  for (int64_t i = 0, n = z->numel(); i < n; ++i)
    if (p[i]) throw std::runtime_error("ZeroDivisionError");
}

// PyTorch refuses a bool operand (tensor or Python bool) on either side of a subtraction.
static void check_sub_operands(const Operand& a, const Operand& b) {
  auto is_bool = [](const Operand& o) {
    return o.is_scalar ? o.s.is_bool() : o.t->dtype == ScalarType::Bool;
  };
  if (is_bool(a) && is_bool(b))
    throw std::runtime_error(
        "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or "
        "`logical_xor()` operator instead.");
  if (is_bool(a) || is_bool(b))
    throw std::runtime_error(
        "Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to "
        "invert a mask, use the `~` or `logical_not()` operator instead.");
}

ElementwiseDtypes binary_dtypes(BinaryOp op, const Operand& other, ScalarType common) {
  const OpInfoEntry& info = binary_info(op);
  ScalarType compute = common, result = common;
  if (is_wide_unsigned(common)) {
    // torch's uint16/32/64 ops: these compute in int64, whose bits are the same modulo 2^64
    // (the result converts back, wrapping as unsigned arithmetic does); the floating ones in the
    // default float type; the rest refuse.
    switch (op) {
      case BinaryOp::mul:
      case BinaryOp::bitwise_and:
      case BinaryOp::bitwise_or:
      case BinaryOp::bitwise_xor: return {ScalarType::Int64, common};
      case BinaryOp::eq:
      case BinaryOp::ne: return {ScalarType::Int64, ScalarType::Bool};
      default:
        if (info.kind == OpKind::TRUEDIV || info.kind == OpKind::FLOAT2)
          return {get_default_dtype(), get_default_dtype()};
        throw NotImplementedError(str_cat("\"", info.name, "_cpu\" not implemented for '",
                                          type_name(common), "'"));
    }
  }
  if (is_complex(common)) {
    switch (complex_binary_result(op)) {
      case ComplexResult::Complex: return {common, common};
      case ComplexResult::Bool: return {common, ScalarType::Bool};
      default: refuse_complex(info.name, common, true);
    }
  }
  switch (info.kind) {
    case OpKind::TRUEDIV:
    case OpKind::FLOAT2:
      if (!is_floating(common)) compute = result = get_default_dtype();
      break;
    case OpKind::FLOAT_ONLY2:
      if (!is_floating(common))
        throw NotImplementedError(str_cat("\"", info.name, "_cpu\" not implemented for '",
                                          type_name(common), "'"));
      break;
    case OpKind::CMP:
    case OpKind::LOGICAL:
      result = ScalarType::Bool;
      if (is_reduced_float(compute)) compute = ScalarType::Float32;
      break;
    case OpKind::BITWISE:
      if (is_floating(common))
        throw NotImplementedError(str_cat("\"", info.name, "_cpu\" not implemented for '",
                                          type_name(common), "'"));
      break;
    case OpKind::SHIFT:
      if (!is_integral(common, false))
        throw NotImplementedError(str_cat("\"", info.name, "_cpu\" not implemented for '",
                                          type_name(common), "'"));
      break;
    default:
      break;
  }
  // float16/bfloat16 as torch's CPU kernels: multiplying or dividing (rounded division too) by a
  // number or a one-element tensor (torch's iter.is_scalar(2): any dims, broadcast over every
  // element) takes its value in float32 (original_scalar_value<opmath_t>) and rounds the result
  // once (x_bf16 * tensor([257]) multiplies by 257, not by bfloat16's 256); comparisons run in
  // float32 on operands converted to the common dtype (x_half < 0.1 compares with half(0.1)).
  if ((op == BinaryOp::mul || op == BinaryOp::div || op == BinaryOp::floor_divide ||
       op == BinaryOp::div_trunc) &&
      is_reduced_float(common) && (other.is_scalar || other.t->numel() == 1))
    compute = ScalarType::Float32;
  return {compute, result};
}

// x ** e (a Python-number exponent) where torch's pow kernel takes a shortcut; null where it
// does not. `common` is the result's dtype.
static Tensor pow_by_number(const Tensor& x, const Scalar& e_scalar, ScalarType common,
                            const Tensor& out, const char* name) {
  if (e_scalar.is_complex() && e_scalar.imag != 0) return Tensor();
  const double e = e_scalar.to_double();
  // out= takes the result's shape (checked and resized before anything is written)
  auto prepared_out = [&] {
    check_out_dtype(name, common, out);
    check_inplace_writable(out, name);
    resize_output(out, x->sizes);
    return out;
  };
  // torch fills ones for the exponent 0 and copies the base for 1, for every dtype (its kernel
  // is never reached: uint64.pow(1) works)
  if (e == 0 || e == 1) {
    Tensor r = out ? prepared_out() : empty(x->sizes, common, x->device());
    if (e == 0) fill_(r, Scalar::from_int(1));
    else if (r != x) copy_(r, x);
    if (out) out->bump_version();
    return r;
  }
  if (e_scalar.is_bool()) return Tensor();
  // sqrt, rsqrt and reciprocal for the exponents 0.5, -0.5 and -1 in float32, float64, bfloat16
  // and complex (sqrt(-inf) is NaN where C's pow gives inf; sqrt(-0) is -0)
  if ((e == 0.5 || e == -0.5 || e == -1.0) &&
      (common == ScalarType::Float32 || common == ScalarType::Float64 ||
       common == ScalarType::BFloat16 || is_complex(common)))
    return unary(e == 0.5 ? UnaryOp::sqrt : e == -0.5 ? UnaryOp::rsqrt : UnaryOp::reciprocal,
                 to_dtype(x, common), out);
  // products for the exponents 2, 3 and -2 in the floating dtypes, as its
  // pow_tensor_scalar_optimized_kernel: x * x, x * x * x, 1 / (x * x), each product rounded in
  // the dtype, except float16's, computed in float32 and rounded once (as torch's Half kernel).
  // (std::pow is a scalar call: x ** 2 ran at 1/60 of torch's speed)
  if ((e == 2.0 || e == 3.0 || e == -2.0) && is_floating(common)) {
    const bool widened = common == ScalarType::Float16;
    const Tensor base = to_dtype(x, widened ? ScalarType::Float32 : common);
    const Tensor into = widened ? Tensor() : out;
    Tensor r;
    if (e == 2.0) {
      r = binary(BinaryOp::mul, Operand(base), Operand(base), into);
    } else {
      const Tensor square = binary(BinaryOp::mul, Operand(base), Operand(base), Tensor());
      r = e == 3.0 ? binary(BinaryOp::mul, Operand(square), Operand(base), into)
                   : unary(UnaryOp::reciprocal, square, into);
    }
    if (!widened) return r;
    if (!out) return to_dtype(r, common);
    copy_(prepared_out(), to_dtype(r, common));  // (rounded to float16 first, then out's dtype)
    out->bump_version();
    return out;
  }
  return Tensor();
}

Tensor binary(BinaryOp op, const Operand& a, const Operand& b, const Tensor& out) {
  const OpInfoEntry& info = binary_info(op);
  if (op == BinaryOp::sub) check_sub_operands(a, b);
  const ScalarType common = result_type({a, b});
  if (out) {  // (no shape to build for the common case of equal shapes)
    const Shape &sa = operand_sizes(a), &sb = operand_sizes(b);
    const bool inplace = !a.is_scalar && a.t == out;
    const ScalarType nominal = nominal_binary_result(op, common);
    if (sa == sb) check_operands_first(info.name, sa, out, nominal, inplace);
    else check_operands_first(info.name, broadcast_shapes(sa, sb), out, nominal, inplace);
  }
  if (op == BinaryOp::pow && b.is_scalar && !a.is_scalar)
    if (Tensor r = pow_by_number(a.t, b.s, common, out, info.name)) return r;
  if (info.kind == OpKind::ARITH && common == ScalarType::Bool) {
    // PyTorch computes these on bool as their logical counterparts.
    switch (op) {
      case BinaryOp::add:
      case BinaryOp::maximum:
      case BinaryOp::fmax:
        return binary(BinaryOp::logical_or, a, b, out);
      case BinaryOp::mul:
      case BinaryOp::minimum:
      case BinaryOp::fmin:
        return binary(BinaryOp::logical_and, a, b, out);
      default:
        (void)broadcast_shapes(operand_sizes(a), operand_sizes(b));  // a shape error first
        throw NotImplementedError(str_cat("\"", info.name, "\" not implemented for 'Bool'"));
    }
  }
  // An integer base to a negative integer Python-number exponent has no integer result
  // (checked before whether a kernel exists, as torch's).
  if (op == BinaryOp::pow && is_integral(common, true) && b.is_scalar && b.s.is_int() &&
      b.s.to_int() < 0)
    throw std::runtime_error("Integers to negative integer powers are not allowed.");
  const auto [compute, result] = [&] {
    try {
      return binary_dtypes(op, b, common);
    } catch (const std::runtime_error&) {  // a refused dtype: a shape error first, as torch
      (void)broadcast_shapes(operand_sizes(a), operand_sizes(b));
      throw;
    }
  }();
  // torch's pow(Tensor, Scalar) converts the exponent into the result's dtype, checked, for
  // integer and reduced float results; float32/float64/complex kernels take it as a double
  // (x.pow(1e300) is inf, not an error)
  if (op == BinaryOp::pow && b.is_scalar && !a.is_scalar &&
      !(result == ScalarType::Float32 || result == ScalarType::Float64 || is_complex(result)))
    check_scalar_fits(b.s, result);
  // (a wide unsigned type's operands become that type first where the op computes in int64: a
  // number in uint64's upper half has no int64 value of its own; the floating ops convert a
  // number straight to their float type, as torch's: uint32 / -1 is -1, copysign(u, -1) < 0)
  const bool via_common = compute != common && (info.kind == OpKind::CMP ||
                                                info.kind == OpKind::LOGICAL ||
                                                (is_wide_unsigned(common) && !is_floating(compute)));
  Tensor ta = as_tensor_operand(a, via_common ? common : compute),
         tb = as_tensor_operand(b, via_common ? common : compute);
  if (via_common) ta = to_dtype(ta, compute), tb = to_dtype(tb, compute);
  // (an empty result divides nothing: an operand of no elements broadcasts to none)
  if (is_integer_division(op) && is_integral(compute, false) && ta->numel() && tb->numel())
    check_no_zero_divisor(tb);
  ScalarType kernel_out = result == ScalarType::Bool ? ScalarType::Bool : compute;
  auto kernel = [&](const ElementwiseIter& it) { run_binary_kernel(op, it, compute); };
  if (out && kernel_out != result && out->dtype != result)  // (bf16 / 3 into a float64 out=)
    return finish_from_float32(
        info.name, run_into(info.name, Tensor(), kernel_out, {ta, tb}, kernel), result, out);
  Tensor r = run_into(info.name, out, kernel_out, {ta, tb}, kernel);
  return out || r->dtype == result ? r : to_dtype(r, result);
}

Tensor add_alpha(BinaryOp op, const Operand& a, const Operand& b, Scalar alpha,
                 const Tensor& out) {
  if (op != BinaryOp::add && op != BinaryOp::sub) return nullptr;
  if (op == BinaryOp::sub) check_sub_operands(a, b);
  const ScalarType common = result_type({a, b});
  if (!is_floating(common)) return nullptr;
  const char* name = binary_info(op).name;
  // A number `other` enters rounded to the dtype, as a tensor would (torch's wrapped scalar).
  return run_into(name, out, common, {as_tensor_operand(a, common), as_tensor_operand(b, common)},
                  [&](const ElementwiseIter& it) {
    cpu_kernels().add_alpha(it, common, alpha.to_double(), op == BinaryOp::sub);
  });
}

bool fused_multiply_add() { return cpu_kernels().fused_multiply_add(); }

void run_unary_kernel(UnaryOp op, const ElementwiseIter& it, ScalarType compute) {
  if (is_complex(compute) && it.device().is_cpu()) return run_complex_unary_kernel(op, it, compute);
  if (!it.device().is_cpu())
    return cuda::run_elementwise(cuda::KernelFamily::Unary, static_cast<int>(op), it, compute);
  cpu_kernels().unary(op, it, compute);
}

void run_binary_kernel(BinaryOp op, const ElementwiseIter& it, ScalarType compute) {
  if (is_complex(compute) && it.device().is_cpu()) return run_complex_binary_kernel(op, it, compute);
  if (!it.device().is_cpu())
    return cuda::run_elementwise(cuda::KernelFamily::Binary, static_cast<int>(op), it, compute);
  cpu_kernels().binary(op, it, compute);
}

Tensor binary_inplace(BinaryOp op, const Tensor& self, const Operand& other) {
  return binary(op, Operand(self), other, self);
}

// ---------------------------------------------------------------------------------------------
// Ternary and parametrised ops

Tensor where(const Tensor& cond, const Operand& a, const Operand& b) {
  EMBER_CHECK(cond->dtype == ScalarType::Bool || cond->dtype == ScalarType::UInt8, std::runtime_error,
              "where expected condition to be a boolean tensor, but got a tensor with dtype ",
              type_name(cond->dtype));
  ScalarType dt = result_type({a, b});
  // a Python number is converted checked, as torch's (where(c, x, 1e300) into float32 refuses),
  // but into half and bfloat16 (rounded beyond their range to inf)
  for (const Operand* o : {&a, &b})
    if (o->is_scalar && !is_reduced_float(dt)) check_scalar_fits(o->s, dt);
  Tensor c = to_dtype(cond, ScalarType::Bool);
  Tensor ta = as_tensor_operand(a, dt), tb = as_tensor_operand(b, dt);
  ElementwiseIter it(nullptr, dt, {c, ta, tb}, "where");
  auto select = [&](auto tag) {
    using T = typename decltype(tag)::type;
    run_elementwise<T, bool, T, T>(it, [](bool m, T x, T y) { return m ? x : y; });
  };
  // a select (blend's bit masks are for the other types)
  if (is_complex(dt)) return dispatch_complex(dt, "where", select), it.output();
  if (is_wide_unsigned(dt)) return dispatch_wide_unsigned(dt, "where", select), it.output();
  dispatch_all(dt, "where", [&](auto tag) {
    using T = typename decltype(tag)::type;
    run_elementwise<T, bool, T, T>(it, [](bool m, auto x, auto y) { return math::blend(m, x, y); });
  });
  return it.output();
}

Tensor lerp(const Tensor& start, const Tensor& end, const Operand& weight, const Tensor& out) {
  EMBER_CHECK(start->dtype == end->dtype, std::runtime_error,
              "expected dtype ", cpp_type_name(start->dtype), " for `end` but got dtype ",
              cpp_type_name(end->dtype));
  // a 0-d weight tensor of another dtype takes part in type promotion, as torch's: it does not
  // widen the inputs' kind (a float64 one weighs float32 inputs in float32), a complex one makes
  // the result complex
  if (!weight.is_scalar && weight.t->dim() == 0 && weight.t->dtype != start->dtype) {
    const ScalarType r = result_type({Operand(start), Operand(end), weight});
    return lerp(to_dtype(start, r), to_dtype(end, r), Operand(to_dtype(weight.t, r)), out);
  }
  EMBER_CHECK(weight.is_scalar || weight.t->dtype == start->dtype, std::runtime_error,
              "expected dtype ", cpp_type_name(start->dtype), " for `weight` but got dtype ",
              cpp_type_name(weight.t->dtype));
  ScalarType dt = start->dtype;
  EMBER_CHECK(is_floating(dt) || is_complex(dt), NotImplementedError,
              "\"lerp_kernel_scalar\" not implemented for '", type_name(dt), "'");
  if (weight.is_scalar)  // converted to the opmath type, checked (torch's)
    check_scalar_fits(weight.s, is_reduced_float(dt) ? ScalarType::Float32 : dt);
  if (is_reduced_float(dt)) {  // torch's opmath: float32 throughout (a number weight at its own
    // value), one rounding at the end
    const ScalarType f = ScalarType::Float32;
    Tensor r = lerp(to_dtype(start, f), to_dtype(end, f),
                    weight.is_scalar ? weight : Operand(to_dtype(weight.t, f)));
    return finish_from_float32("lerp", r, dt, out);
  }
  Tensor w = as_tensor_operand(weight, dt);
  return run_into("lerp", out, dt, {start, end, w}, [&](const ElementwiseIter& it) {
    // from the nearer end (|weight| < 0.5: torch's rule, for complex weights too)
    auto kernel = [&](auto tag) {
      using T = typename decltype(tag)::type;
      run_elementwise<T, T, T, T>(it, [](auto s, auto e, auto wt) {
        using C = decltype(s);
        using R = decltype(std::abs(wt));
        return std::abs(wt) < R(0.5) ? s + wt * (e - s) : e - (e - s) * (C(1) - wt);
      });
    };
    if (is_complex(dt)) dispatch_complex(dt, "lerp", kernel);
    else dispatch_floating(dt, "lerp", kernel);
  });
}

// torch's two forms, checked in their order. With number bounds (clamp.Scalar, clamp_min and
// clamp_max with a number) a unary op on the result type: a complex input is refused first, an
// in-place integer self may not be promoted, an out= has the result's dtype. With tensor bounds
// a TensorIterator op (clamp.Tensor, whose one-sided forms are maximum / minimum): the written-to
// tensor's overlap, the shapes, the cast of the common dtype to it, then the kernel's dtypes.
Tensor clamp(const Tensor& x, const Operand* lo, const Operand* hi, const Tensor& out) {
  EMBER_CHECK(lo || hi, std::runtime_error, "torch.clamp: At least one of 'min' or 'max' must not be None");
  std::vector<Operand> ops{Operand(x)};
  if (lo) ops.push_back(*lo);
  if (hi) ops.push_back(*hi);
  const bool inplace = out && out == x;
  const bool tensor_bounds = (lo && !lo->is_scalar) || (hi && !hi->is_scalar);
  const char* complex_msg = "clamp is not supported for complex types";
  ScalarType dt;
  if (!tensor_bounds) {
    EMBER_CHECK(!is_complex(x->dtype), NotImplementedError, complex_msg);
    dt = is_floating(x->dtype) ? x->dtype : result_type(ops);
    EMBER_CHECK(!inplace || dt == x->dtype, std::runtime_error, "result type ", type_name(dt),
                " can't be cast to the desired output type ", cpp_type_name(x->dtype));
    EMBER_CHECK(!is_complex(dt), NotImplementedError, complex_msg);
    if (out) check_inplace_writable(out, "clamp");
    EMBER_CHECK(!out || out->dtype == dt, std::runtime_error, "Found dtype ", type_name(out->dtype),
                " but expected ", type_name(dt));
    EMBER_CHECK(dt != ScalarType::Bool, NotImplementedError, "\"",
                lo && hi ? "clamp_scalar_cpu" : lo ? "clamp_min_scalar_cpu" : "clamp_max_scalar_cpu",
                "\" not implemented for 'Bool'");
    for (const Operand* b : {lo, hi})  // the kernel's checked conversion of each bound
      if (b) scalar_tensor(b->s, dt, /*checked=*/true);
  } else {
    EMBER_CHECK(!(lo && hi) || !is_complex(x->dtype), NotImplementedError, complex_msg);
    dt = result_type(ops);
    Shape shape = x->sizes;
    for (size_t i = 1; i < ops.size(); ++i)
      if (!ops[i].is_scalar) shape = broadcast_shapes(shape, ops[i].t->sizes);
    check_operands_first("clamp", shape, out, dt, inplace);
    EMBER_CHECK(!is_complex(dt), NotImplementedError, "\"",
                lo && hi ? "clamp_cpu" : lo ? "maximum_cpu" : "minimum_cpu",
                "\" not implemented for '", type_name(dt), "'");
    EMBER_CHECK(!(lo && hi) || dt != ScalarType::Bool, NotImplementedError,
                "\"clamp_cpu\" not implemented for 'Bool'");
  }
  // Floating input, number bounds (ReLU6, hardtanh): one pass, and in place when out is x.
  if (is_floating(dt) && dt == x->dtype && !tensor_bounds && (!out || out->dtype == dt)) {
    return run_into("clamp", out, dt, {x}, [&](const ElementwiseIter& it) {
      cpu_kernels().clamp_scalar(it, dt, lo != nullptr, lo ? lo->s.to_double() : 0.0,
                                 hi != nullptr, hi ? hi->s.to_double() : 0.0);
    });
  }
  Tensor r = to_dtype(x, dt);
  if (lo) r = binary(BinaryOp::maximum, Operand(r), *lo);
  if (hi) r = binary(BinaryOp::minimum, Operand(r), *hi);
  if (!out) return r;
  copy_(out, r);
  return out;
}

// Checked as torch's: floating grad_output, self of the same dtype (else the op's error).
static void check_activation_backward(const char* op, const Tensor& grad_output, const Tensor& self) {
  EMBER_CHECK(is_floating(grad_output->dtype), NotImplementedError, "\"", op,
              "\" not implemented for '", torch_type_name(grad_output->dtype), "'");
  EMBER_CHECK(self->dtype == grad_output->dtype, std::runtime_error, op,
              ": expected self and grad_output to have the same dtype, but got self: ",
              torch_type_name(self->dtype), " and grad_output: ", torch_type_name(grad_output->dtype));
}

Tensor threshold_backward(const Tensor& grad_output, const Tensor& self, double threshold) {
  check_activation_backward("threshold_backward", grad_output, self);
  return run_into("threshold_backward", nullptr, grad_output->dtype, {grad_output, self},
                  [&](const ElementwiseIter& it) {
                    cpu_kernels().threshold_backward(it, grad_output->dtype, threshold);
                  });
}

Tensor hardtanh_backward(const Tensor& grad_output, const Tensor& self, double min_val,
                         double max_val) {
  check_activation_backward("hardtanh_backward", grad_output, self);
  return run_into("hardtanh_backward", nullptr, grad_output->dtype, {grad_output, self},
                  [&](const ElementwiseIter& it) {
                    cpu_kernels().hardtanh_backward(it, grad_output->dtype, min_val, max_val);
                  });
}

template <typename T> static double finite_max() {
  if constexpr (std::is_same_v<T, Half>) return 65504.0;
  else if constexpr (std::is_same_v<T, BFloat16>) return 3.3895313892515355e38;
  else return static_cast<double>(std::numeric_limits<T>::max());
}

Tensor nan_to_num(const Tensor& x, double nan, const double* posinf, const double* neginf,
                  const Tensor& out) {
  ScalarType dt = x->dtype;
  if (is_complex(dt)) {  // each part, as torch's
    Tensor r = nan_to_num(view_as_real(x), nan, posinf, neginf,
                          out ? view_as_real(out) : Tensor());
    return out ? out : view_as_complex(r);
  }
  if (!is_floating(dt)) {  // integers have no nan/inf: a copy
    if (out) {  // a copy, into an out= of the same dtype only (as torch)
      EMBER_CHECK(out->dtype == dt, std::runtime_error, "nan_to_num: dtype of out: ",
                  type_name(out->dtype), " should be same as input: ", type_name(dt));
      copy_(out, x);
      return out;
    }
    return clone(x);
  }
  return run_into("nan_to_num", out, dt, {x}, [&](const ElementwiseIter& it) {
    dispatch_floating(dt, "nan_to_num", [&](auto tag) {
      using T = typename decltype(tag)::type;
      using C = opmath_t<T>;
      // Defaults are the dtype's own finite extremes (float16's, not float32's).
      const C big = C(posinf ? *posinf : finite_max<T>());
      const C small = C(neginf ? *neginf : -finite_max<T>());
      const C nanv = C(nan);
      run_elementwise<T, T>(it, [=](auto v) {
        return std::isnan(v) ? nanv : std::isinf(v) ? (v > 0 ? big : small) : v;
      });
    });
  });
}

// torch.round(x, decimals=d): round half to even at 10^-d.
Tensor round_decimals(const Tensor& x, int64_t decimals, const Tensor& out) {
  ScalarType dt = x->dtype;
  EMBER_CHECK(!is_complex(dt) && dt != ScalarType::Bool, NotImplementedError,
              "\"round_vml_cpu\" not implemented for '",
              type_name(dt), "'");
  // an out= of the input's dtype only, for every dtype (torch's structured kernel)
  EMBER_CHECK(!out || out->dtype == dt, std::runtime_error, "Found dtype ",
              type_name(out->dtype), " but expected ", type_name(dt));
  if (!is_floating(dt)) {
    EMBER_CHECK(decimals == 0, NotImplementedError,
                "\"round_cpu\" not implemented for '", type_name(dt), "'");
    if (out) {  // a copy
      check_inplace_writable(out, "round");
      copy_(out, x);
      return out;
    }
    return clone(x);
  }
  return run_into("round", out, dt, {x}, [&](const ElementwiseIter& it) {
    dispatch_floating(dt, "round", [&](auto tag) {
      using T = typename decltype(tag)::type;
      using C = opmath_t<T>;
      if (decimals == 0) {
        run_elementwise<T, T>(it, [](auto v) { return std::nearbyint(v); });
        return;
      }
      const bool neg = decimals < 0;
      const C ten = std::pow(C(10), C(neg ? -decimals : decimals));
      run_elementwise<T, T>(it, [=](auto v) {
        return neg ? std::nearbyint(v / ten) * ten : std::nearbyint(v * ten) / ten;
      });
    });
  });
}

// torch.logit: integers promote to the default float dtype, as the table's FLOAT ops.
Tensor logit(const Tensor& x, const double* eps, const Tensor& out) {
  EMBER_CHECK(!is_complex(x->dtype), NotImplementedError, "\"logit_cpu\" not implemented for '",
              type_name(x->dtype), "'");
  const ScalarType dt = is_floating(x->dtype) ? x->dtype : get_default_dtype();
  if (out && out == x && dt != x->dtype) check_out_dtype("logit", dt, out);
  Tensor in = to_dtype(x, dt);
  const bool clamped = eps && *eps >= 0;  // a negative eps means none, as in PyTorch
  if (eps) check_scalar_fits(Scalar::from_double(*eps), dt);
  return run_into("logit", out, dt, {in}, [&](const ElementwiseIter& it) {
    dispatch_floating(dt, "logit", [&](auto tag) {
      using T = typename decltype(tag)::type;
      using C = opmath_t<T>;
      if (!clamped) {
        run_elementwise<T, T>(it, [](auto v) { return std::log(v / (C(1) - v)); });
        return;
      }
      // the bounds in the tensor's dtype (float16's eps is not float32's), as PyTorch's are;
      // its order of the two tests (which matters when eps > 0.5); NaN passes through
      const C lo = C(T(*eps)), hi = C(T(C(1) - lo));
      run_elementwise<T, T>(it, [=](auto v) {
        const C c = v < lo ? lo : (v > hi ? hi : v);
        return std::log(c / (C(1) - c));
      });
    });
  });
}

}  // namespace ember
