// bind_extension.cpp: the C table that compiled user extensions call (ember/include/ember/
// extension_abi.h), handed out as the capsule `ember._C._extension_api`.
//
// Why a C table and not exported C++: the core exports only PyInit__C (csrc/exports.map), so
// that no other library in the process binds to its copies of C++ library symbols, and its C++
// classes (TensorImpl, the allocator) can change without breaking extensions built against an
// older release. Each function here turns a C++ exception into the Python exception the core's
// translators give it (torch's classes) and returns the C error value; nothing C++ crosses.
#include <ember/extension_abi.h>

#include "python/pyutils.h"
#include "runtime/parallel.h"

namespace ember::pyb {
namespace {

static_assert(static_cast<int>(ScalarType::Bool) == EMBER_BOOL &&
                  static_cast<int>(ScalarType::UInt8) == EMBER_UINT8 &&
                  static_cast<int>(ScalarType::Int8) == EMBER_INT8 &&
                  static_cast<int>(ScalarType::Int16) == EMBER_INT16 &&
                  static_cast<int>(ScalarType::Int32) == EMBER_INT32 &&
                  static_cast<int>(ScalarType::Int64) == EMBER_INT64 &&
                  static_cast<int>(ScalarType::Float16) == EMBER_FLOAT16 &&
                  static_cast<int>(ScalarType::BFloat16) == EMBER_BFLOAT16 &&
                  static_cast<int>(ScalarType::Float32) == EMBER_FLOAT32 &&
                  static_cast<int>(ScalarType::Float64) == EMBER_FLOAT64 &&
                  static_cast<int>(ScalarType::Complex64) == EMBER_COMPLEX64 &&
                  static_cast<int>(ScalarType::Complex128) == EMBER_COMPLEX128 &&
                  static_cast<int>(ScalarType::UInt16) == EMBER_UINT16 &&
                  static_cast<int>(ScalarType::UInt32) == EMBER_UINT32 &&
                  static_cast<int>(ScalarType::UInt64) == EMBER_UINT64,
              "the extension ABI fixes the dtype codes: keep ScalarType's order");

// Sets the Python error of the exception being handled (inside `catch (...)`).
void set_python_error() {
  try {
    throw;
  } catch (py::error_already_set& e) {
    e.restore();
  } catch (...) {
    py::detail::try_translate_exceptions();
  }
}

int tensor_info(PyObject* obj, EmberTensorInfo* info) {
  if (!obj || !is_tensor(obj)) {
    PyErr_Format(PyExc_TypeError, "expected an ember.Tensor, got %s",
                 obj ? Py_TYPE(obj)->tp_name : "NULL");
    return -1;
  }
  try {
    const Tensor& t = py::handle(obj).cast<const Tensor&>();
    const Device device = t->device();
    info->data = t->device_data();
    info->sizes = t->sizes.data();
    info->strides = t->strides.data();
    info->ndim = t->dim();
    info->dtype = static_cast<int32_t>(t->dtype);
    info->device_type = device.is_cpu() ? EMBER_CPU : EMBER_CUDA;
    info->device_index = device.is_cpu() ? -1 : device.index;
    info->requires_grad = t->requires_grad ? 1 : 0;
    return 0;
  } catch (...) {
    set_python_error();
    return -1;
  }
}

PyObject* new_tensor(const int64_t* sizes, int64_t ndim, int32_t dtype, int32_t device_type,
                     int32_t device_index, bool zero) {
  try {
    EMBER_CHECK(ndim >= 0 && (ndim == 0 || sizes), ValueError,
                "ember extension: a shape needs ndim >= 0 sizes (got ndim=", ndim, ")");
    EMBER_CHECK(dtype >= 0 && dtype < kNumScalarTypes, ValueError,
                "ember extension: unknown dtype code ", dtype);
    EMBER_CHECK(device_type == EMBER_CPU || device_type == EMBER_CUDA, ValueError,
                "ember extension: unknown device type code ", device_type);
    Device device;
    if (device_type == EMBER_CUDA)
      device = resolve_device(Device{DeviceType::CUDA, static_cast<int16_t>(device_index)},
                              "an extension's empty()");
    Tensor t = empty(Shape(sizes, sizes + ndim), static_cast<ScalarType>(dtype), device);
    if (zero) fill_(t, Scalar());
    return py::cast(std::move(t)).release().ptr();
  } catch (...) {
    set_python_error();
    return nullptr;
  }
}

PyObject* api_empty(const int64_t* sizes, int64_t ndim, int32_t dtype, int32_t device_type,
                    int32_t device_index) {
  return new_tensor(sizes, ndim, dtype, device_type, device_index, false);
}

PyObject* api_zeros(const int64_t* sizes, int64_t ndim, int32_t dtype, int32_t device_type,
                    int32_t device_index) {
  return new_tensor(sizes, ndim, dtype, device_type, device_index, true);
}

// Carries a chunk's nonzero return code out of the pool as an exception (the pool rethrows the
// first one in the caller after every chunk finished).
struct ChunkFailed {
  int code;
};

int api_parallel_for(int64_t begin, int64_t end, int64_t grain, EmberRangeFn fn, void* ctx) {
  try {
    parallel_for(begin, end, grain < 1 ? 1 : grain, [fn, ctx](int64_t b, int64_t e) {
      if (int code = fn(ctx, b, e)) throw ChunkFailed{code};
    });
    return 0;
  } catch (const ChunkFailed& failed) {
    return failed.code;
  } catch (...) {  // the pool itself failed (no thread could be started): a Python error
    set_python_error();
    return -1;
  }
}

int api_get_num_threads() { return get_num_threads(); }

const EmberExtensionApi kApi = {
    EMBER_EXTENSION_ABI_VERSION,
    sizeof(EmberExtensionApi),
    &tensor_info,
    &api_empty,
    &api_zeros,
    &api_parallel_for,
    &api_get_num_threads,
};

}  // namespace

void register_extension_api(py::module_& m) {
  m.attr("_extension_api") =
      py::capsule(static_cast<const void*>(&kApi), EMBER_EXTENSION_CAPSULE);
  m.attr("_extension_abi_version") = EMBER_EXTENSION_ABI_VERSION;
}

}  // namespace ember::pyb
