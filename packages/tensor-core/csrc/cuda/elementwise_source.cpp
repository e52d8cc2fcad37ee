#include "cuda/elementwise_source.h"

#include <cstddef>
#include <stdexcept>

#include "core/errors.h"
#include "ops/op_table.h"

namespace ember::cuda {

namespace {

// kernels/math.h and ops/op_table.h as text (kMathHeader, kOpTableHeader), written into the build
// folder by setup.py from the files the CPU kernels are compiled from.
#include "ember_device_sources.inc"

static_assert(offsetof(ElementwiseParams, data) == 16 + 8 * kKernelMaxDims * (kKernelMaxInputs + 2),
              "ElementwiseParams layout");

// What NVRTC lacks to compile math.h: no C++ library is available there, so the few std:: names
// it uses are declared here, over CUDA's device math functions.
constexpr const char* kPrelude = R"(
typedef signed char int8_t;
typedef short int16_t;
typedef int int32_t;
typedef long long int64_t;
typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;
namespace std {
template <class A, class B> struct is_same { static constexpr bool value = false; };
template <class A> struct is_same<A, A> { static constexpr bool value = true; };
template <class A, class B> inline constexpr bool is_same_v = is_same<A, B>::value;
template <class T> inline constexpr bool is_floating_point_v = is_same_v<T, float> || is_same_v<T, double>;
template <class T> inline constexpr bool is_unsigned_v = is_same_v<T, bool> || is_same_v<T, unsigned char> ||
    is_same_v<T, unsigned short> || is_same_v<T, unsigned int> || is_same_v<T, unsigned long long>;
template <class T> inline constexpr bool is_integral_v = is_unsigned_v<T> || is_same_v<T, signed char> ||
    is_same_v<T, char> || is_same_v<T, short> || is_same_v<T, int> || is_same_v<T, long long>;
template <class T> inline constexpr bool is_signed_v = is_floating_point_v<T> || (is_integral_v<T> && !is_unsigned_v<T>);
template <class T> inline constexpr bool is_arithmetic_v = is_integral_v<T> || is_floating_point_v<T>;
template <class T> struct make_unsigned { typedef T type; };
template <> struct make_unsigned<signed char> { typedef unsigned char type; };
template <> struct make_unsigned<char> { typedef unsigned char type; };
template <> struct make_unsigned<short> { typedef unsigned short type; };
template <> struct make_unsigned<int> { typedef unsigned int type; };
template <> struct make_unsigned<long long> { typedef unsigned long long type; };
template <class T> using make_unsigned_t = typename make_unsigned<T>::type;
template <class T> struct numeric_limits;
template <> struct numeric_limits<float> {
  __device__ static float quiet_NaN() { return __int_as_float(0x7fc00000); }
  __device__ static float infinity() { return __int_as_float(0x7f800000); }
};
template <> struct numeric_limits<double> {
  __device__ static double quiet_NaN() { return __longlong_as_double(0x7ff8000000000000LL); }
  __device__ static double infinity() { return __longlong_as_double(0x7ff0000000000000LL); }
};
using ::exp; using ::exp2; using ::expm1; using ::log; using ::log2; using ::log10;
using ::log1p; using ::sqrt; using ::sin; using ::cos; using ::tan; using ::asin; using ::acos;
using ::atan; using ::sinh; using ::cosh; using ::tanh; using ::asinh; using ::acosh; using ::atanh;
using ::erf; using ::erfc; using ::fabs; using ::fmod; using ::floor; using ::ceil; using ::trunc;
using ::nearbyint; using ::copysign; using ::pow; using ::atan2; using ::hypot; using ::isnan;
using ::isinf; using ::isfinite; using ::signbit;
using ::lgamma; using ::modf; using ::fma;
}  // namespace std
#include "kernels/math.h"
#include "ops/op_table.h"
namespace ember {
#define EMBER_DEVICE_UNARY(name, kind, expr) \
  struct unary_##name { template <typename T> __device__ static auto apply(T x) { return expr; } };
#define EMBER_DEVICE_BINARY(name, kind, expr) \
  struct binary_##name { template <typename T> __device__ static auto apply(T a, T b) { return expr; } };
EMBER_UNARY_OPS(EMBER_DEVICE_UNARY)
EMBER_BINARY_OPS(EMBER_DEVICE_BINARY)
}  // namespace ember
struct ElementwiseParams {
  long long numel, ndim;
  long long sizes[EMBER_MAX_DIMS];
  long long strides[EMBER_MAX_INPUTS + 1][EMBER_MAX_DIMS];
  unsigned long long data[EMBER_MAX_INPUTS + 1];
  unsigned long long values[EMBER_MAX_INPUTS];
};
static_assert(sizeof(ElementwiseParams) == EMBER_PARAMS_SIZE, "the host's layout");
template <typename T> __device__ __forceinline__ T from_bits(unsigned long long bits) {
  return *reinterpret_cast<const T*>(&bits);  // little-endian: the value's bytes come first
}
)";

const char* op_name(const ElementwiseKernelKey& key) {
  if (key.family == KernelFamily::Unary) {
    EMBER_CHECK(key.op >= 0 && key.op < num_unary_ops(), std::logic_error, "bad unary op");
    return unary_info(static_cast<UnaryOp>(key.op)).name;
  }
  EMBER_CHECK(key.op >= 0 && key.op < num_binary_ops(), std::logic_error, "bad binary op");
  return binary_info(static_cast<BinaryOp>(key.op)).name;
}

}  // namespace

const char* kernel_type_name(ScalarType t) {
  switch (t) {
    case ScalarType::Bool: return "bool";
    case ScalarType::UInt8: return "uint8_t";
    case ScalarType::Int8: return "int8_t";
    case ScalarType::Int16: return "int16_t";
    case ScalarType::Int32: return "int32_t";
    case ScalarType::Int64: return "int64_t";
    case ScalarType::Float32: return "float";
    case ScalarType::Float64: return "double";
    default: return nullptr;
  }
}

bool kernel_supports(ScalarType t) { return kernel_type_name(t) != nullptr; }

std::string kernel_name(const ElementwiseKernelKey& key) {
  std::string name = key.family == KernelFamily::Unary ? "ember_unary_" : "ember_binary_";
  name += op_name(key);
  name += std::string("_") + dtype_name(key.input) + "_" + dtype_name(key.output);
  name += key.flat ? "_flat" : "_strided";
  if (key.by_value) name += "_v" + std::to_string(int(key.by_value));
  return name;
}

std::string kernel_source(const ElementwiseKernelKey& key) {
  const char* in = kernel_type_name(key.input);
  const char* out = kernel_type_name(key.output);
  EMBER_CHECK(in && out, std::invalid_argument, "no CUDA kernel for ", dtype_name(key.input),
              " -> ", dtype_name(key.output));
  const int arity = key.arity();
  std::string s = "#define EMBER_MAX_DIMS " + std::to_string(kKernelMaxDims) +
                  "\n#define EMBER_MAX_INPUTS " + std::to_string(kKernelMaxInputs) +
                  "\n#define EMBER_PARAMS_SIZE " + std::to_string(sizeof(ElementwiseParams)) + "\n";
  s += kPrelude;
  s += "extern \"C\" __global__ void " + kernel_name(key) + "(const ElementwiseParams p) {\n";
  s += std::string("  typedef ") + in + " In;\n  typedef " + out + " Out;\n";
  s += "  const long long step = (long long)gridDim.x * blockDim.x;\n";
  s += "  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < p.numel; i += step) {\n";
  if (key.flat) {
    for (int k = 0; k <= arity; ++k)
      s += "    const long long o" + std::to_string(k) + " = i * p.strides[" + std::to_string(k) +
           "][0];\n";
  } else {
    s += "    long long rem = i";
    for (int k = 0; k <= arity; ++k) s += ", o" + std::to_string(k) + " = 0";
    s += ";\n    for (int d = 0; d < p.ndim; ++d) {\n";
    s += "      const long long c = rem % p.sizes[d];\n      rem /= p.sizes[d];\n";
    for (int k = 0; k <= arity; ++k)
      s += "      o" + std::to_string(k) + " += c * p.strides[" + std::to_string(k) + "][d];\n";
    s += "    }\n";
  }
  const char* names[] = {"a", "b"};
  for (int k = 0; k < arity; ++k) {
    const std::string idx = std::to_string(k);
    s += std::string("    const In ") + names[k] + " = ";
    if (key.by_value & (1 << k))
      s += "from_bits<In>(p.values[" + idx + "]);\n";
    else
      s += "*reinterpret_cast<const In*>(p.data[" + std::to_string(k + 1) + "] + o" +
           std::to_string(k + 1) + ");\n";
  }
  s += "    *reinterpret_cast<Out*>(p.data[0] + o0) = static_cast<Out>(ember::";
  s += key.family == KernelFamily::Unary ? "unary_" : "binary_";
  s += op_name(key);
  s += arity == 1 ? "::apply(a));\n" : "::apply(a, b));\n";
  s += "  }\n}\n";
  return s;
}

const std::vector<std::pair<std::string, std::string>>& kernel_headers() {
  static const auto* headers = new std::vector<std::pair<std::string, std::string>>{
      {"kernels/math.h", kMathHeader}, {"kernels/special_math.h", kSpecialMathHeader},
      {"ops/op_table.h", kOpTableHeader}};
  return *headers;
}

}  // namespace ember::cuda
