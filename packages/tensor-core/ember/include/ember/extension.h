// <ember/extension.h>: what a compiled extension (a pybind11 module) uses of ember.
//
// A header-only C++ layer over the core's C table (extension_abi.h): nothing here links against
// ember, so an extension builds with the system compiler and keeps working across ember
// releases with the same or a later ABI version. The whole interface:
//
//   ember::Tensor         a reference to an ember tensor: data_ptr<T>(), sizes(), strides(),
//                         size(d), stride(d), dim(), numel(), dtype(), device(), is_contiguous(),
//                         contiguous(); converts to and from Python through pybind11 (functions
//                         take and return ember::Tensor)
//   ember::empty/zeros    new tensors from the core's allocator (empty_like, zeros_like)
//   ember::parallel_for   the core's thread pool; get_num_threads()
//   EMBER_CHECK...        checks that raise torch's exception classes in Python:
//                         EMBER_CHECK (RuntimeError), EMBER_CHECK_VALUE (ValueError),
//                         EMBER_CHECK_TYPE (TypeError), EMBER_CHECK_INDEX (IndexError),
//                         EMBER_CHECK_NOT_IMPLEMENTED (NotImplementedError)
//   EMBER_DISPATCH_FLOATING_TYPES  runs a lambda with `scalar_t` bound to the tensor's C++ type
//
// Autograd is not here: register the function as an op in Python (ember.library.custom_op) and
// give it a gradient there. docs/extensions.md is the guide.
#pragma once

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>  // std::vector, std::tuple, std::optional arguments and results

#include <cstdint>
#include <exception>
#include <mutex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "ember/extension_abi.h"

#if defined(EMBER_CHECK)
#error "<ember/extension.h> is for extensions; it cannot share a file with the core's headers"
#endif

// Everything here is private to each extension's shared object, like pybind11's own namespace
// (whose classes these derive from and hold): two extensions in one process never share or
// clash over these types, and compilers without -fvisibility=hidden do not warn.
#if defined(__GNUC__) || defined(__clang__)
#define EMBER_EXTENSION_HIDDEN __attribute__((visibility("hidden")))
#else
#define EMBER_EXTENSION_HIDDEN
#endif

namespace ember EMBER_EXTENSION_HIDDEN {

// ---- dtypes and devices -------------------------------------------------------------------------

enum class ScalarType : int32_t {
  Bool = EMBER_BOOL, UInt8 = EMBER_UINT8, Int8 = EMBER_INT8, Int16 = EMBER_INT16,
  Int32 = EMBER_INT32, Int64 = EMBER_INT64, Float16 = EMBER_FLOAT16, BFloat16 = EMBER_BFLOAT16,
  Float32 = EMBER_FLOAT32, Float64 = EMBER_FLOAT64, Complex64 = EMBER_COMPLEX64,
  Complex128 = EMBER_COMPLEX128, UInt16 = EMBER_UINT16, UInt32 = EMBER_UINT32,
  UInt64 = EMBER_UINT64
};
constexpr ScalarType kBool = ScalarType::Bool, kUInt8 = ScalarType::UInt8,
                     kInt8 = ScalarType::Int8, kInt16 = ScalarType::Int16,
                     kInt32 = ScalarType::Int32, kInt64 = ScalarType::Int64,
                     kFloat16 = ScalarType::Float16, kBFloat16 = ScalarType::BFloat16,
                     kFloat32 = ScalarType::Float32, kFloat64 = ScalarType::Float64,
                     kComplex64 = ScalarType::Complex64, kComplex128 = ScalarType::Complex128,
                     kUInt16 = ScalarType::UInt16, kUInt32 = ScalarType::UInt32,
                     kUInt64 = ScalarType::UInt64;

// torch's names of the types in messages ("Float", "Double", ...).
inline const char* type_name(ScalarType t) {
  static const char* names[] = {"Bool",  "Byte",         "Char",          "Short",  "Int",
                                "Long",  "Half",         "BFloat16",      "Float",  "Double",
                                "ComplexFloat", "ComplexDouble", "UInt16", "UInt32", "UInt64"};
  const int i = static_cast<int>(t);
  return i >= 0 && i < 15 ? names[i] : "Undefined";
}

inline size_t element_size(ScalarType t) {
  static const size_t sizes[] = {1, 1, 1, 2, 4, 8, 2, 2, 4, 8, 8, 16, 2, 4, 8};
  const int i = static_cast<int>(t);
  return i >= 0 && i < 15 ? sizes[i] : 0;
}

// The C++ type of a dtype's elements, for data_ptr<T>() (float16/bfloat16 have none here: read
// them as uint16_t bits through data_ptr()).
template <typename T> struct dtype_of;
template <> struct dtype_of<bool> { static constexpr ScalarType value = kBool; };
template <> struct dtype_of<uint8_t> { static constexpr ScalarType value = kUInt8; };
template <> struct dtype_of<int8_t> { static constexpr ScalarType value = kInt8; };
template <> struct dtype_of<int16_t> { static constexpr ScalarType value = kInt16; };
template <> struct dtype_of<int32_t> { static constexpr ScalarType value = kInt32; };
template <> struct dtype_of<int64_t> { static constexpr ScalarType value = kInt64; };
template <> struct dtype_of<float> { static constexpr ScalarType value = kFloat32; };
template <> struct dtype_of<double> { static constexpr ScalarType value = kFloat64; };
template <> struct dtype_of<uint16_t> { static constexpr ScalarType value = kUInt16; };
template <> struct dtype_of<uint32_t> { static constexpr ScalarType value = kUInt32; };
template <> struct dtype_of<uint64_t> { static constexpr ScalarType value = kUInt64; };

enum class DeviceType : int32_t { CPU = EMBER_CPU, CUDA = EMBER_CUDA };

struct Device {
  DeviceType type = DeviceType::CPU;
  int32_t index = -1;  // -1: the CPU, or the current CUDA device
  bool is_cpu() const { return type == DeviceType::CPU; }
  bool is_cuda() const { return type == DeviceType::CUDA; }
  bool operator==(const Device& o) const { return type == o.type && index == o.index; }
  bool operator!=(const Device& o) const { return !(*this == o); }
  std::string str() const {
    if (is_cpu()) return "cpu";
    return index < 0 ? "cuda" : "cuda:" + std::to_string(index);
  }
};
const Device kCPU{DeviceType::CPU, -1};

// ---- errors -------------------------------------------------------------------------------------
// Thrown from an extension's function (also from inside parallel_for), they reach Python as the
// exception class torch raises for the same failure; anything else derived from std::exception
// follows pybind11's rules (std::runtime_error -> RuntimeError).

struct RuntimeError : pybind11::builtin_exception {
  using builtin_exception::builtin_exception;
  void set_error() const override { PyErr_SetString(PyExc_RuntimeError, what()); }
};
struct ValueError : pybind11::builtin_exception {
  using builtin_exception::builtin_exception;
  void set_error() const override { PyErr_SetString(PyExc_ValueError, what()); }
};
struct TypeError : pybind11::builtin_exception {
  using builtin_exception::builtin_exception;
  void set_error() const override { PyErr_SetString(PyExc_TypeError, what()); }
};
struct IndexError : pybind11::builtin_exception {
  using builtin_exception::builtin_exception;
  void set_error() const override { PyErr_SetString(PyExc_IndexError, what()); }
};
struct NotImplementedError : pybind11::builtin_exception {
  using builtin_exception::builtin_exception;
  void set_error() const override { PyErr_SetString(PyExc_NotImplementedError, what()); }
};

namespace detail {
inline void append(std::ostringstream&) {}
template <typename T, typename... Rest>
void append(std::ostringstream& os, const T& v, const Rest&... rest);
inline void append_one(std::ostringstream& os, const std::vector<int64_t>& shape) {
  os << '[';  // torch's spelling of a shape in messages: [2, 3]
  for (size_t i = 0; i < shape.size(); ++i) os << (i ? ", " : "") << shape[i];
  os << ']';
}
inline void append_one(std::ostringstream& os, ScalarType t) { os << type_name(t); }
inline void append_one(std::ostringstream& os, const Device& d) { os << d.str(); }
template <typename T> void append_one(std::ostringstream& os, const T& v) { os << v; }
template <typename T, typename... Rest>
void append(std::ostringstream& os, const T& v, const Rest&... rest) {
  append_one(os, v);
  append(os, rest...);
}
}  // namespace detail

// Concatenates its arguments into a message: numbers, strings, shapes ([2, 3]), dtypes (Float).
template <typename... Args> std::string str(const Args&... args) {
  std::ostringstream os;
  detail::append(os, args...);
  return os.str();
}

#define EMBER_CHECK_AS_(cond, Exc, ...)                                    \
  do {                                                                     \
    if (!(cond)) throw ::ember::Exc(::ember::str(__VA_ARGS__));            \
  } while (0)
#define EMBER_CHECK(cond, ...) EMBER_CHECK_AS_(cond, RuntimeError, __VA_ARGS__)
#define EMBER_CHECK_VALUE(cond, ...) EMBER_CHECK_AS_(cond, ValueError, __VA_ARGS__)
#define EMBER_CHECK_TYPE(cond, ...) EMBER_CHECK_AS_(cond, TypeError, __VA_ARGS__)
#define EMBER_CHECK_INDEX(cond, ...) EMBER_CHECK_AS_(cond, IndexError, __VA_ARGS__)
#define EMBER_CHECK_NOT_IMPLEMENTED(cond, ...) \
  EMBER_CHECK_AS_(cond, NotImplementedError, __VA_ARGS__)

// ---- the core's table ---------------------------------------------------------------------------

namespace detail {
// The core's C table, found on first use (with the GIL held). An extension built against a
// newer ABI than the installed core's gets an ImportError that says to rebuild or upgrade.
inline const EmberExtensionApi& api() {
  static const EmberExtensionApi* table = nullptr;
  if (table) return *table;
  auto* t = static_cast<const EmberExtensionApi*>(PyCapsule_Import(EMBER_EXTENSION_CAPSULE, 0));
  if (!t) throw pybind11::error_already_set();
  if (t->abi_version < EMBER_EXTENSION_ABI_VERSION) {
    PyErr_Format(PyExc_ImportError,
                 "this extension was built against ember's extension ABI %d, but the installed "
                 "ember provides ABI %d: upgrade ember or rebuild the extension",
                 EMBER_EXTENSION_ABI_VERSION, static_cast<int>(t->abi_version));
    throw pybind11::error_already_set();
  }
  table = t;
  return *table;
}
inline pybind11::object steal_or_throw(PyObject* obj) {
  if (!obj) throw pybind11::error_already_set();
  return pybind11::reinterpret_steal<pybind11::object>(obj);
}
}  // namespace detail

// Checks that the core's table is there and compatible: call it in PYBIND11_MODULE, so that an
// incompatible ember fails at import rather than at the first call.
inline void init_extension() { detail::api(); }

// ---- Tensor -------------------------------------------------------------------------------------

// A reference to an ember tensor (it keeps the Python object alive). Its shape, strides, dtype
// and address are read once, when it is made from the object.
class Tensor {
 public:
  Tensor() = default;
  // `obj` must be an ember.Tensor (else TypeError).
  explicit Tensor(pybind11::object obj) : obj_(std::move(obj)) {
    EmberTensorInfo info;
    if (detail::api().tensor_info(obj_.ptr(), &info) != 0) throw pybind11::error_already_set();
    read(info);
  }
  // `obj` with what the core's tensor_info said of it (the type caster has asked already).
  Tensor(pybind11::object obj, const EmberTensorInfo& info) : obj_(std::move(obj)) { read(info); }

  bool defined() const { return static_cast<bool>(obj_); }
  int64_t dim() const { return static_cast<int64_t>(sizes_.size()); }
  const std::vector<int64_t>& sizes() const { return sizes_; }
  const std::vector<int64_t>& strides() const { return strides_; }  // in elements
  int64_t size(int64_t d) const { return sizes_[wrap(d)]; }
  int64_t stride(int64_t d) const { return strides_[wrap(d)]; }
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t s : sizes_) n *= s;
    return n;
  }
  ScalarType dtype() const { return dtype_; }
  ScalarType scalar_type() const { return dtype_; }
  size_t element_size() const { return ::ember::element_size(dtype_); }
  Device device() const { return device_; }
  bool is_cuda() const { return device_.is_cuda(); }
  bool requires_grad() const { return requires_grad_; }
  // torch's rule: row-major strides, ignoring dims of size 1; an empty tensor is contiguous.
  bool is_contiguous() const {
    int64_t expected = 1;
    for (int64_t d = dim() - 1; d >= 0; --d) {
      if (sizes_[d] == 0) return true;
      if (sizes_[d] != 1 && strides_[d] != expected) return false;
      expected *= sizes_[d];
    }
    return true;
  }
  // The same values in row-major order: this tensor when it already is, else a copy.
  Tensor contiguous() const {
    if (is_contiguous()) return *this;
    return Tensor(obj_.attr("contiguous")());
  }

  // The address of the first element (device memory for a CUDA tensor).
  void* data_ptr() const { return data_; }
  // The same, typed: T must be the dtype's C++ type (float for float32, ...), else RuntimeError
  // with torch's message.
  template <typename T> T* data_ptr() const {
    if (dtype_of<T>::value != dtype_)
      throw RuntimeError(str("expected scalar type ", dtype_of<T>::value, " but found ", dtype_));
    return static_cast<T*>(data_);
  }

  const pybind11::object& object() const { return obj_; }  // the ember.Tensor itself

 private:
  void read(const EmberTensorInfo& info) {
    data_ = info.data;
    sizes_.assign(info.sizes, info.sizes + info.ndim);
    strides_.assign(info.strides, info.strides + info.ndim);
    dtype_ = static_cast<ScalarType>(info.dtype);
    device_ = Device{static_cast<DeviceType>(info.device_type), info.device_index};
    requires_grad_ = info.requires_grad != 0;
  }

  size_t wrap(int64_t d) const {
    const int64_t n = dim();
    if (d < -n || d >= n)
      throw IndexError(str("Dimension out of range (expected to be in range of [", -n, ", ",
                           n - 1, "], but got ", d, ")"));
    return static_cast<size_t>(d < 0 ? d + n : d);
  }

  pybind11::object obj_;
  void* data_ = nullptr;
  std::vector<int64_t> sizes_, strides_;
  ScalarType dtype_ = kFloat32;
  Device device_;
  bool requires_grad_ = false;
};

// ---- creating tensors ---------------------------------------------------------------------------

// A new contiguous tensor from the core's allocator, uninitialised; on `device` (a CUDA device
// needs a GPU and ember.cuda, else RuntimeError).
inline Tensor empty(const std::vector<int64_t>& sizes, ScalarType dtype = kFloat32,
                    Device device = kCPU) {
  return Tensor(detail::steal_or_throw(detail::api().empty(
      sizes.data(), static_cast<int64_t>(sizes.size()), static_cast<int32_t>(dtype),
      static_cast<int32_t>(device.type), device.index)));
}
inline Tensor zeros(const std::vector<int64_t>& sizes, ScalarType dtype = kFloat32,
                    Device device = kCPU) {
  return Tensor(detail::steal_or_throw(detail::api().zeros(
      sizes.data(), static_cast<int64_t>(sizes.size()), static_cast<int32_t>(dtype),
      static_cast<int32_t>(device.type), device.index)));
}
// Contiguous, of t's shape, dtype and device.
inline Tensor empty_like(const Tensor& t) { return empty(t.sizes(), t.dtype(), t.device()); }
inline Tensor zeros_like(const Tensor& t) { return zeros(t.sizes(), t.dtype(), t.device()); }

// ---- the thread pool ----------------------------------------------------------------------------

inline int get_num_threads() { return detail::api().get_num_threads(); }

// Runs f(chunk_begin, chunk_end) over [begin, end) split into chunks of at least `grain` on the
// core's threads (the caller runs one chunk; at most `grain` elements run inline). Above the
// grain the GIL is released while it runs, so `f` must not touch Python objects (Tensor's
// accessors are fine: they read what was copied when it was made). An exception thrown by a
// chunk is rethrown here after every chunk finished (the first one wins).
template <typename F> void parallel_for(int64_t begin, int64_t end, int64_t grain, const F& f) {
  if (begin >= end) return;
  if (end - begin <= grain) {
    f(begin, end);
    return;
  }
  struct Context {
    const F* f;
    std::mutex mutex;
    std::exception_ptr error;
  } ctx{&f, {}, nullptr};
  auto chunk = [](void* c, int64_t b, int64_t e) -> int {
    auto* context = static_cast<Context*>(c);
    try {
      (*context->f)(b, e);
      return 0;
    } catch (...) {  // no C++ exception crosses the C table
      std::lock_guard<std::mutex> lock(context->mutex);
      if (!context->error) context->error = std::current_exception();
      return 1;
    }
  };
  if (detail::api().parallel_for(begin, end, grain, chunk, &ctx) != 0) {
    if (ctx.error) std::rethrow_exception(ctx.error);
    throw pybind11::error_already_set();  // the pool failed; the core set the error
  }
}

// ---- dtype dispatch -----------------------------------------------------------------------------
// EMBER_DISPATCH_FLOATING_TYPES(t.dtype(), "my_op", [&] { ... scalar_t ... }) runs the lambda
// with `scalar_t` = float or double; other dtypes raise torch's NotImplementedError
// ("my_op" not implemented for 'Int').
#define EMBER_DISPATCH_CASE_(enum_value, type, ...) \
  case enum_value: {                                \
    using scalar_t = type;                          \
    return __VA_ARGS__();                           \
  }
#define EMBER_DISPATCH_FLOATING_TYPES(DTYPE, NAME, ...)                                       \
  [&] {                                                                                       \
    const ::ember::ScalarType dispatch_dtype_ = (DTYPE);                                      \
    switch (dispatch_dtype_) {                                                                \
      EMBER_DISPATCH_CASE_(::ember::ScalarType::Float32, float, __VA_ARGS__)                  \
      EMBER_DISPATCH_CASE_(::ember::ScalarType::Float64, double, __VA_ARGS__)                 \
      default:                                                                                \
        throw ::ember::NotImplementedError(                                                   \
            ::ember::str('"', NAME, "\" not implemented for '", dispatch_dtype_, "'"));       \
    }                                                                                         \
  }()

}  // namespace ember

// ---- pybind11: ember::Tensor <-> ember.Tensor ---------------------------------------------------

namespace pybind11 {
namespace detail {
template <> struct type_caster<ember::Tensor> {
  PYBIND11_TYPE_CASTER(ember::Tensor, const_name("ember.Tensor"));

  bool load(handle src, bool) {
    EmberTensorInfo info;
    if (!src || ember::detail::api().tensor_info(src.ptr(), &info) != 0) {
      PyErr_Clear();  // not a tensor: pybind11 tries the next overload or raises TypeError
      return false;
    }
    value = ember::Tensor(reinterpret_borrow<object>(src), info);
    return true;
  }
  static handle cast(const ember::Tensor& t, return_value_policy, handle) {
    if (!t.defined()) return none().release();
    return t.object().inc_ref();
  }
};
}  // namespace detail
}  // namespace pybind11
