// bind_interop.cpp: zero-copy exchange of tensors with other array libraries.
//
//   from_numpy(ndarray)      a tensor over the array's memory; the storage's DataPtr owns a
//                            reference to the array (released with the GIL held)
//   Tensor.numpy()           an ndarray over the tensor's memory; its base is a capsule owning
//   Tensor.__array__           a reference to the storage
//   buffer protocol          memoryview(t), np.frombuffer(t): the Tensor type's bf_getbuffer
//   Tensor.__dlpack__        DLPack export, legacy ("dltensor") or versioned ("dltensor_versioned"),
//                            of CPU (kDLCPU) and CUDA (kDLCUDA) tensors
//   from_dlpack(obj)         DLPack import; the producer's deleter runs when the storage dies
//
// Nothing here copies unless asked to (copy=True) or a dtype conversion is requested.
#include <pybind11/numpy.h>

#include <utility>
#include <vector>

#include "cuda/cuda_context.h"
#include "python/dlpack.h"
#include "python/pyutils.h"

namespace ember::pyb {

namespace cu = ember::cuda;

namespace {

// ---------------------------------------------------------------------------------------------
// Releasing foreign memory. Storages can die on any thread, with or without the GIL, and also
// while the interpreter shuts down: in that last case the reference is leaked on purpose.

template <typename F> void with_gil(F&& f) {
  if (!Py_IsInitialized()) return;
  if (PyGILState_Check()) {
    f();
    return;
  }
  if (interpreter_finalizing()) return;
  PyGILState_STATE state = PyGILState_Ensure();
  f();
  PyGILState_Release(state);
}

// DataPtr deleter for memory owned by a Python object (ctx: a strong reference to it).
void release_pyobject(void* ctx, void* /*ptr*/) {
  with_gil([ctx] { Py_DECREF(static_cast<PyObject*>(ctx)); });
}

// Bytes of storage spanned by a strided view with non-negative strides (in elements).
size_t storage_extent(const Shape& sizes, const Shape& strides, size_t itemsize) {
  int64_t last = 0;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] == 0) return 0;
    last += (sizes[d] - 1) * strides[d];
  }
  return static_cast<size_t>(last + 1) * itemsize;
}

// ---------------------------------------------------------------------------------------------
// NumPy

const char* kUnsupportedNumpyTypes =
    ". The only supported types are: float64, float32, float16, complex64, complex128, int64, "
    "int32, int16, int8, uint64, uint32, uint16, uint8, and bool.";

ScalarType scalar_type_from_numpy(const py::dtype& dt) {
  const char kind = dt.kind();
  const auto size = dt.itemsize();
  ScalarType st = ScalarType::Undefined;
  if (kind == 'b' && size == 1) st = ScalarType::Bool;
  else if (kind == 'u' && size == 1) st = ScalarType::UInt8;
  else if (kind == 'u' && size == 2) st = ScalarType::UInt16;
  else if (kind == 'u' && size == 4) st = ScalarType::UInt32;
  else if (kind == 'u' && size == 8) st = ScalarType::UInt64;
  else if (kind == 'i' && size == 1) st = ScalarType::Int8;
  else if (kind == 'i' && size == 2) st = ScalarType::Int16;
  else if (kind == 'i' && size == 4) st = ScalarType::Int32;
  else if (kind == 'i' && size == 8) st = ScalarType::Int64;
  else if (kind == 'f' && size == 2) st = ScalarType::Float16;
  else if (kind == 'f' && size == 4) st = ScalarType::Float32;
  else if (kind == 'f' && size == 8) st = ScalarType::Float64;
  else if (kind == 'c' && size == 8) st = ScalarType::Complex64;
  else if (kind == 'c' && size == 16) st = ScalarType::Complex128;
  // Structured dtypes with fields have kind 'V' and never match above.
  if (st == ScalarType::Undefined) {
    py::object scalar_type = dt.attr("type");
    const char* name = reinterpret_cast<PyTypeObject*>(scalar_type.ptr())->tp_name;
    throw py::type_error(str_cat("can't convert np.ndarray of type ", name, kUnsupportedNumpyTypes));
  }
  return st;
}

const py::dtype& numpy_dtype(ScalarType t) {
  // Leaked on purpose: must outlive interpreter teardown.
  static auto* cache = new py::dtype[kNumScalarTypes];
  auto& slot = cache[static_cast<int>(t)];
  if (!slot) slot = py::dtype::from_args(py::str(dtype_name(t)));
  return slot;
}

Tensor tensor_from_numpy(py::handle obj, bool warn_not_writable) {
  if (!py::isinstance<py::array>(obj))
    throw py::type_error(str_cat("expected np.ndarray (got ", Py_TYPE(obj.ptr())->tp_name, ")"));
  auto arr = py::reinterpret_borrow<py::array>(obj);
  py::dtype dt = arr.dtype();
  ScalarType st = scalar_type_from_numpy(dt);
  if (!dt.attr("isnative").cast<bool>())
    throw py::value_error(
        "given numpy array has byte order different from the native byte order. Conversion "
        "between byte orders is currently not supported.");
  const int64_t itemsize = static_cast<int64_t>(dt.itemsize());
  const auto ndim = arr.ndim();
  Shape sizes(ndim), strides(ndim);
  bool empty = false;
  for (py::ssize_t d = 0; d < ndim; ++d) {
    sizes[d] = arr.shape(d);
    empty = empty || sizes[d] == 0;
  }
  int64_t expected = 1;  // contiguous stride, used where a stride cannot matter
  for (py::ssize_t d = ndim - 1; d >= 0; --d) {
    const int64_t bytes = arr.strides(d);
    if (empty || sizes[d] == 1) {
      strides[d] = expected;  // never used to address memory: any value NumPy gave is harmless
    } else {
      if (bytes < 0)
        throw py::value_error(
            "At least one stride in the given numpy array is negative, and tensors with negative "
            "strides are not currently supported. (You can probably work around this by making a "
            "copy of your array with array.copy().) ");
      if (bytes % itemsize != 0)
        throw py::value_error(
            "given numpy array strides not a multiple of the element byte size. Copy the numpy "
            "array to reallocate the memory.");
      strides[d] = bytes / itemsize;
    }
    expected *= std::max<int64_t>(sizes[d], 1);
  }
  // The kernels read through typed pointers: misaligned data would be undefined behaviour.
  if (!empty && reinterpret_cast<uintptr_t>(arr.data()) % static_cast<uintptr_t>(itemsize) != 0)
    throw py::value_error(
        "from_numpy: the array's data is not aligned to its element size; make an aligned copy "
        "first, e.g. np.require(arr, requirements='A') or arr.copy()");
  if (warn_not_writable && !arr.writeable())
    warn("The given NumPy array is not writable, and ember does not support non-writable "
         "tensors. This means writing to this tensor will result in undefined behavior. You may "
         "want to copy the array to protect its data or make it writable before converting it to "
         "a tensor.");
  const size_t nbytes = storage_extent(sizes, strides, static_cast<size_t>(itemsize));
  PyObject* owner = arr.ptr();
  Py_INCREF(owner);
  DataPtr data(const_cast<void*>(arr.data()), owner, &release_pyobject, Device{});
  auto storage = std::make_shared<StorageImpl>(std::move(data), nbytes, nullptr);
  return from_storage(std::move(storage), sizes, strides, 0, st);
}

void check_cpu(const Tensor& t, const char* what) {
  if (!t->device().is_cpu())
    throw py::type_error(str_cat("can't convert ", t->device().str(), " device type tensor to ",
                                 what, ". Use Tensor.cpu() to copy the tensor to host memory first."));
}

py::array tensor_to_numpy(const Tensor& t, bool force) {
  check_cpu(t, "numpy");
  if (t->requires_grad && !force)
    throw std::runtime_error(
        "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.");
  if (t->dtype == ScalarType::BFloat16) throw py::type_error("Got unsupported ScalarType BFloat16");
  const auto itemsize = static_cast<py::ssize_t>(t->element_size());
  std::vector<py::ssize_t> shape(t->sizes.begin(), t->sizes.end()), strides(t->strides.size());
  for (size_t d = 0; d < strides.size(); ++d) strides[d] = t->strides[d] * itemsize;
  // the capsule keeps the bytes alive and in place (resize_ cannot move pinned bytes)
  auto* owner = new PinnedStorage(t->storage);
  py::capsule base(owner, [](void* p) { delete static_cast<PinnedStorage*>(p); });
  return py::array(numpy_dtype(t->dtype), std::move(shape), std::move(strides), t->data(), base);
}

// Tensor.__array__(dtype=None, copy=None): NumPy 2's protocol (copy=False must not copy,
// copy=True must), also called by NumPy 1.x as __array__(dtype).
py::object tensor_array(const Tensor& self, py::object dtype, py::object copy) {
  const bool must_copy = !copy.is_none() && copy.cast<bool>();
  const bool never_copy = !copy.is_none() && !copy.cast<bool>();
  Tensor t = self;
  if (t->dtype == ScalarType::BFloat16 && !dtype.is_none() && !never_copy && !t->requires_grad)
    t = to_dtype(t, ScalarType::Float32);  // NumPy has no bfloat16: convert on the way
  py::object arr = tensor_to_numpy(t, false);
  if (!dtype.is_none()) {
    py::object want = py::module_::import("numpy").attr("dtype")(dtype);
    const bool same = want.equal(arr.attr("dtype"));
    if (!same && never_copy)
      throw py::value_error("Unable to avoid copy while creating an array as requested.");
    if (!same || must_copy) return arr.attr("astype")(want, py::arg("copy") = true);
    return arr;
  }
  if (must_copy) return arr.attr("copy")();
  return arr;
}

// ---------------------------------------------------------------------------------------------
// The buffer protocol

struct BufferExport {
  PinnedStorage pin;  // the bytes stay alive and in place even if the tensor is re-pointed
  std::vector<Py_ssize_t> shape, strides;
};

const char* buffer_format(ScalarType t) {
  switch (t) {
    case ScalarType::Bool: return "?";
    case ScalarType::UInt8: return "B";
    case ScalarType::Int8: return "b";
    case ScalarType::Int16: return "h";
    case ScalarType::Int32: return "i";
    case ScalarType::Int64: return sizeof(long) == 8 ? "l" : "q";
    case ScalarType::Float16: return "e";
    case ScalarType::Float32: return "f";
    case ScalarType::Float64: return "d";
    case ScalarType::Complex64: return "Zf";
    case ScalarType::Complex128: return "Zd";
    case ScalarType::UInt16: return "H";
    case ScalarType::UInt32: return "I";
    case ScalarType::UInt64: return sizeof(long) == 8 ? "L" : "Q";
    default: return nullptr;
  }
}

bool is_f_contiguous(const TensorImpl& t) {
  int64_t expected = 1;
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (t.sizes[d] == 1) continue;
    if (t.sizes[d] == 0) return true;
    if (t.strides[d] != expected) return false;
    expected *= t.sizes[d];
  }
  return true;
}

// The format of `t`'s elements; raises BufferError when `t` cannot export a buffer at all.
const char* exportable_format(const Tensor& t) {
  if (!t->device().is_cpu())
    throw py::buffer_error(str_cat("ember: a ", t->device().str(),
                                   " tensor cannot export a buffer; use Tensor.cpu() first"));
  if (t->requires_grad)
    throw py::buffer_error(
        "ember: a Tensor that requires grad cannot export a buffer; use tensor.detach() instead");
  const char* format = buffer_format(t->dtype);
  if (!format)
    throw py::buffer_error(str_cat("ember: ", dtype_name(t->dtype),
                                   " has no buffer-protocol format; convert it first (e.g. .float())"));
  return format;
}

int tensor_getbuffer(PyObject* self, Py_buffer* view, int flags) {
  view->obj = nullptr;
  try {
    Tensor t = py::handle(self).cast<Tensor>();
    const char* format = exportable_format(t);
    auto wants = [flags](int f) { return (flags & f) == f; };
    const bool c_contig = t->is_contiguous();
    const bool f_contig = is_f_contiguous(*t);
    if (wants(PyBUF_C_CONTIGUOUS) && !c_contig)
      throw py::buffer_error("ember: the tensor is not C-contiguous; call .contiguous() first");
    if (wants(PyBUF_F_CONTIGUOUS) && !f_contig)
      throw py::buffer_error("ember: the tensor is not Fortran-contiguous");
    if (wants(PyBUF_ANY_CONTIGUOUS) && !c_contig && !f_contig)
      throw py::buffer_error("ember: the tensor is not contiguous; call .contiguous() first");
    if (!wants(PyBUF_STRIDES) && !c_contig)
      throw py::buffer_error(
          "ember: the tensor is not contiguous and the consumer did not ask for strides; call "
          ".contiguous() first");
    const auto itemsize = static_cast<Py_ssize_t>(t->element_size());
    auto* info = new BufferExport{PinnedStorage(t->storage), {}, {}};
    info->shape.reserve(t->dim() + 1);
    info->strides.reserve(t->dim() + 1);
    for (int64_t d = 0; d < t->dim(); ++d) {
      info->shape.push_back(t->sizes[d]);
      info->strides.push_back(t->strides[d] * itemsize);
    }
    view->buf = t->data();
    view->obj = self;
    Py_INCREF(self);
    view->len = t->numel() * itemsize;
    view->readonly = 0;
    view->itemsize = itemsize;
    view->format = wants(PyBUF_FORMAT) ? const_cast<char*>(format) : nullptr;
    if (wants(PyBUF_ND)) {
      view->ndim = static_cast<int>(t->dim());
      view->shape = info->shape.data();
    } else {  // a flat run of bytes (the tensor is C-contiguous: checked above)
      view->ndim = 1;
      view->shape = nullptr;
    }
    view->strides = wants(PyBUF_STRIDES) && wants(PyBUF_ND) ? info->strides.data() : nullptr;
    view->suboffsets = nullptr;
    view->internal = info;
    return 0;
  } catch (...) {
    return buffer_error_from_current_exception();
  }
}

void tensor_releasebuffer(PyObject* /*self*/, Py_buffer* view) {
  delete static_cast<BufferExport*>(view->internal);
  view->internal = nullptr;
}

// pybind11's own buffer hook, for paths that reach pybind11's slot function instead of ours:
// from Python 3.12 on, subclasses defined in Python take their slot from the base type's
// `__buffer__` wrapper, which was made when the type was created.
py::buffer_info* pybind11_buffer(PyObject* self, void* /*data*/) {
  Tensor t = py::handle(self).cast<Tensor>();
  const char* format = exportable_format(t);
  const auto itemsize = static_cast<py::ssize_t>(t->element_size());
  std::vector<py::ssize_t> shape(t->sizes.begin(), t->sizes.end()), strides;
  for (auto s : t->strides) strides.push_back(s * itemsize);
  t->storage->resizable = false;  // no release hook here to unpin: pinned for good
  return new py::buffer_info(t->data(), itemsize, format, t->dim(), std::move(shape),
                             std::move(strides), /*readonly=*/false);
}

void install_buffer_protocol() {
  PyTypeObject* type = tensor_type();
  if (!type->tp_as_buffer) {
    // pybind11 types are heap types; their slot table lives in the heap type object.
    type->tp_as_buffer = &reinterpret_cast<PyHeapTypeObject*>(type)->as_buffer;
  }
  type->tp_as_buffer->bf_getbuffer = &tensor_getbuffer;
  type->tp_as_buffer->bf_releasebuffer = &tensor_releasebuffer;
  PyType_Modified(type);
  if (auto* tinfo = py::detail::get_type_info(typeid(TensorImpl))) {
    tinfo->get_buffer = &pybind11_buffer;
    tinfo->get_buffer_data = nullptr;
  }
}

// ---------------------------------------------------------------------------------------------
// DLPack

constexpr const char* kCapsuleLegacy = "dltensor";
constexpr const char* kCapsuleLegacyUsed = "used_dltensor";
constexpr const char* kCapsuleVersioned = "dltensor_versioned";
constexpr const char* kCapsuleVersionedUsed = "used_dltensor_versioned";

DLDataType to_dl_dtype(ScalarType t) {
  DLDataType d{kDLFloat, static_cast<uint8_t>(itemsize(t) * 8), 1};
  switch (t) {
    case ScalarType::Bool: d.code = kDLBool; break;
    case ScalarType::UInt8:
    case ScalarType::UInt16:
    case ScalarType::UInt32:
    case ScalarType::UInt64: d.code = kDLUInt; break;
    case ScalarType::Int8:
    case ScalarType::Int16:
    case ScalarType::Int32:
    case ScalarType::Int64: d.code = kDLInt; break;
    case ScalarType::BFloat16: d.code = kDLBfloat; break;
    case ScalarType::Complex64:
    case ScalarType::Complex128: d.code = kDLComplex; break;
    default: d.code = kDLFloat; break;
  }
  return d;
}

ScalarType from_dl_dtype(DLDataType d) {
  if (d.lanes == 1) {
    switch (d.code) {
      case kDLBool:
        if (d.bits == 8) return ScalarType::Bool;
        break;
      case kDLUInt:
        if (d.bits == 8) return ScalarType::UInt8;
        if (d.bits == 16) return ScalarType::UInt16;
        if (d.bits == 32) return ScalarType::UInt32;
        if (d.bits == 64) return ScalarType::UInt64;
        break;
      case kDLInt:
        if (d.bits == 8) return ScalarType::Int8;
        if (d.bits == 16) return ScalarType::Int16;
        if (d.bits == 32) return ScalarType::Int32;
        if (d.bits == 64) return ScalarType::Int64;
        break;
      case kDLFloat:
        if (d.bits == 16) return ScalarType::Float16;
        if (d.bits == 32) return ScalarType::Float32;
        if (d.bits == 64) return ScalarType::Float64;
        break;
      case kDLBfloat:
        if (d.bits == 16) return ScalarType::BFloat16;
        break;
      case kDLComplex:
        if (d.bits == 64) return ScalarType::Complex64;
        if (d.bits == 128) return ScalarType::Complex128;
        break;
      default: break;
    }
  }
  static const char* codes[] = {"Int", "UInt", "Float", "OpaqueHandle", "Bfloat", "Complex", "Bool"};
  std::string code = d.code < 7 ? codes[d.code] : std::to_string(d.code);
  throw py::buffer_error(str_cat("ember.from_dlpack: unsupported DLPack dtype (code=kDL", code,
                                 ", bits=", int(d.bits), ", lanes=", d.lanes, ")"));
}

// What an exported managed tensor owns: the storage and the shape/stride arrays it points to.
template <typename Managed> struct DLExport {
  Managed managed{};
  std::unique_ptr<PinnedStorage> pin;  // alive and in place until the consumer lets go
  std::vector<int64_t> shape, strides;
  static void deleter(Managed* self) { delete static_cast<DLExport*>(self->manager_ctx); }
};

template <typename Managed> Managed* make_managed(const Tensor& t) {
  auto* ctx = new DLExport<Managed>();
  ctx->pin = std::make_unique<PinnedStorage>(t->storage);
  ctx->shape.reserve(t->dim() + 1);  // never a null pointer, also for 0-d tensors
  ctx->strides.reserve(t->dim() + 1);
  ctx->shape.assign(t->sizes.begin(), t->sizes.end());
  ctx->strides.assign(t->strides.begin(), t->strides.end());
  Managed& m = ctx->managed;
  m.manager_ctx = ctx;
  m.deleter = &DLExport<Managed>::deleter;
  DLTensor& d = m.dl_tensor;
  if (t->device().is_cpu()) {
    d.data = t->data();
    d.device = DLDevice{kDLCPU, 0};
  } else {
    d.data = t->device_data();
    d.device = DLDevice{kDLCUDA, t->device().index};
  }
  d.ndim = static_cast<int32_t>(t->dim());
  d.dtype = to_dl_dtype(t->dtype);
  d.shape = ctx->shape.data();
  d.strides = ctx->strides.data();
  d.byte_offset = 0;
  return &m;
}

// Capsule destructors: free a managed tensor nobody consumed (a consumer renames the capsule).
template <typename Managed> void capsule_destructor(PyObject* capsule, const char* name,
                                                    const char* used) {
  if (PyCapsule_IsValid(capsule, used)) return;
  PyObject *type, *value, *traceback;
  PyErr_Fetch(&type, &value, &traceback);
  auto* m = static_cast<Managed*>(PyCapsule_GetPointer(capsule, name));
  if (m) {
    if (m->deleter) m->deleter(m);
  } else {
    PyErr_WriteUnraisable(capsule);
  }
  PyErr_Restore(type, value, traceback);
}
void legacy_capsule_destructor(PyObject* c) {
  capsule_destructor<DLManagedTensor>(c, kCapsuleLegacy, kCapsuleLegacyUsed);
}
void versioned_capsule_destructor(PyObject* c) {
  capsule_destructor<DLManagedTensorVersioned>(c, kCapsuleVersioned, kCapsuleVersionedUsed);
}

std::pair<int64_t, int64_t> int_pair(py::handle h, const char* what) {
  py::tuple tup;
  try {
    tup = py::tuple(py::reinterpret_borrow<py::object>(h));
  } catch (py::error_already_set&) {
    throw py::type_error(str_cat(what, " must be a tuple of two ints"));
  }
  if (tup.size() != 2) throw py::type_error(str_cat(what, " must be a tuple of two ints"));
  return {py::int_(tup[0]).cast<int64_t>(), py::int_(tup[1]).cast<int64_t>()};
}

// The DLPack device of a tensor: (kDLCPU, 0) or (kDLCUDA, index).
std::pair<int64_t, int64_t> dl_device_of(const Tensor& t) {
  if (t->device().is_cpu()) return {kDLCPU, 0};
  return {kDLCUDA, t->device().index};
}

// DLPack's stream handshake for a CUDA export: the consumer names the stream it will read on
// (1: the legacy default stream; -1: no synchronisation); unless that is the current stream, it
// waits on an event recorded on the current stream, so the export's pending writes come first.
void order_for_consumer(const Tensor& t, py::handle stream) {
  const int64_t s = stream.cast<int64_t>();
  if (s == -1) return;
  const int device = t->device().index;
  const cu::StreamHandle consumer = s == 1 ? 0 : static_cast<cu::StreamHandle>(s);
  const cu::StreamHandle producer = cu::current_stream(device);
  if (consumer == producer) return;
  cu::Backend& b = cu::backend();
  cu::EventHandle e = b.event_create(device, false);
  b.event_record(device, e, producer);
  b.stream_wait_event(device, consumer, e);
  b.event_destroy(device, e);  // CUDA releases it once the wait is done
}

py::object tensor_dlpack(const Tensor& self, py::object stream, py::object max_version,
                         py::object dl_device, py::object copy) {
  if (self->requires_grad)
    throw std::runtime_error("Can't export tensors that require gradient, use tensor.detach()");
  if (!stream.is_none() && !PyLong_Check(stream.ptr()))
    throw py::type_error("stream must be ``int`` or ``none``");
  const auto own = dl_device_of(self);
  if (!dl_device.is_none()) {
    auto dev = int_pair(dl_device, "dl_device");
    if (dev != own)
      throw py::buffer_error(str_cat("ember: cannot export a ", self->device().str(),
                                     " tensor to DLPack device (", dev.first, ", ", dev.second,
                                     "); export it where it is, (", own.first, ", ", own.second,
                                     "), or move it with .to() first"));
  }
  // CPU memory needs no stream synchronisation: a stream, if given, must only be well-formed.
  if (!self->device().is_cpu() && !stream.is_none()) order_for_consumer(self, stream);
  const bool do_copy = !copy.is_none() && copy.cast<bool>();
  bool versioned = false;
  if (!max_version.is_none()) versioned = int_pair(max_version, "max_version").first >= 1;
  Tensor t = do_copy ? clone(self) : self;
  if (versioned) {
    DLManagedTensorVersioned* m = make_managed<DLManagedTensorVersioned>(t);
    m->version = DLPackVersion{DLPACK_MAJOR_VERSION, DLPACK_MINOR_VERSION};
    m->flags = do_copy ? DLPACK_FLAG_BITMASK_IS_COPIED : 0;
    PyObject* cap = PyCapsule_New(m, kCapsuleVersioned, &versioned_capsule_destructor);
    if (!cap) {
      m->deleter(m);
      throw py::error_already_set();
    }
    return py::reinterpret_steal<py::object>(cap);
  }
  DLManagedTensor* m = make_managed<DLManagedTensor>(t);
  PyObject* cap = PyCapsule_New(m, kCapsuleLegacy, &legacy_capsule_destructor);
  if (!cap) {
    m->deleter(m);
    throw py::error_already_set();
  }
  return py::reinterpret_steal<py::object>(cap);
}

// DataPtr deleters for imported memory: hand the managed tensor back to its producer.
void release_dl_legacy(void* ctx, void* /*ptr*/) {
  auto* m = static_cast<DLManagedTensor*>(ctx);
  if (m->deleter) with_gil([m] { m->deleter(m); });
}
void release_dl_versioned(void* ctx, void* /*ptr*/) {
  auto* m = static_cast<DLManagedTensorVersioned*>(ctx);
  if (m->deleter) with_gil([m] { m->deleter(m); });
}

// The ember device of a DLPack device: the CPU, or a CUDA device this process can use.
Device import_device(int64_t type, int64_t index) {
  if (type == kDLCPU) return Device{};
  if (type != kDLCUDA)
    throw py::buffer_error(str_cat("ember.from_dlpack: unsupported DLPack device type ", type,
                                   " (ember supports kDLCPU=1 and kDLCUDA=2)"));
  return resolve_device(Device{DeviceType::CUDA, static_cast<int16_t>(index)},
                        str_cat("ember.from_dlpack of a cuda:", index, " tensor"));
}

// Builds a tensor over a capsule's DLTensor and takes ownership of it (renaming the capsule).
Tensor tensor_from_capsule(py::handle capsule) {
  PyObject* cap = capsule.ptr();
  const bool versioned = PyCapsule_IsValid(cap, kCapsuleVersioned);
  if (!versioned && !PyCapsule_IsValid(cap, kCapsuleLegacy)) {
    if (PyCapsule_IsValid(cap, kCapsuleLegacyUsed) || PyCapsule_IsValid(cap, kCapsuleVersionedUsed))
      throw py::value_error(
          "ember.from_dlpack: the DLPack capsule has already been consumed (a capsule can be "
          "used only once)");
    throw py::type_error(
        "ember.from_dlpack: expected a DLPack capsule named 'dltensor' or 'dltensor_versioned'");
  }
  void* managed = PyCapsule_GetPointer(cap, versioned ? kCapsuleVersioned : kCapsuleLegacy);
  if (!managed) throw py::error_already_set();
  DLTensor* dl;
  bool read_only = false;
  if (versioned) {
    auto* m = static_cast<DLManagedTensorVersioned*>(managed);
    if (m->version.major > DLPACK_MAJOR_VERSION)
      throw py::buffer_error(str_cat("ember.from_dlpack: unsupported DLPack version ",
                                     m->version.major, ".", m->version.minor,
                                     " (ember supports major version ", DLPACK_MAJOR_VERSION, ")"));
    read_only = (m->flags & DLPACK_FLAG_BITMASK_READ_ONLY) != 0;
    dl = &m->dl_tensor;
  } else {
    dl = &static_cast<DLManagedTensor*>(managed)->dl_tensor;
  }
  const Device device = import_device(dl->device.device_type, dl->device.device_id);
  const ScalarType st = from_dl_dtype(dl->dtype);
  if (dl->ndim < 0) throw py::value_error("ember.from_dlpack: negative ndim");
  Shape sizes(dl->shape, dl->shape + dl->ndim);
  Shape strides = dl->strides ? Shape(dl->strides, dl->strides + dl->ndim) : contiguous_strides(sizes);
  bool empty = false;
  for (auto s : sizes) {
    if (s < 0) throw py::value_error("ember.from_dlpack: negative size in the DLPack shape");
    empty = empty || s == 0;
  }
  int64_t expected = 1;  // contiguous stride, used where a stride cannot matter
  for (int32_t d = dl->ndim - 1; d >= 0; --d) {
    if (empty || sizes[d] == 1) {
      strides[d] = expected;  // never used to address memory
    } else if (strides[d] < 0) {
      throw py::value_error(
          "ember.from_dlpack: negative strides are not supported; make a copy in the producing "
          "library first");
    }
    expected *= std::max<int64_t>(sizes[d], 1);
  }
  if (read_only)
    warn("The given DLPack tensor is read-only, and ember does not support read-only tensors. "
         "This means writing to this tensor will result in undefined behavior. You may want to "
         "copy the data to protect it before writing to it.");
  char* data = static_cast<char*>(dl->data) + dl->byte_offset;
  // Refused before taking ownership, so the producer still frees the capsule.
  if (!empty && reinterpret_cast<uintptr_t>(data) % itemsize(st) != 0)
    throw py::value_error("ember.from_dlpack: the data is not aligned to its element size");
  const size_t nbytes = storage_extent(sizes, strides, itemsize(st));
  // Take ownership: from here on the storage's deleter hands the memory back.
  if (PyCapsule_SetName(cap, versioned ? kCapsuleVersionedUsed : kCapsuleLegacyUsed) != 0)
    throw py::error_already_set();
  DataPtr ptr(data, managed, versioned ? &release_dl_versioned : &release_dl_legacy, device);
  auto storage = std::make_shared<StorageImpl>(std::move(ptr), nbytes, nullptr);
  return from_storage(std::move(storage), sizes, strides, 0, st);
}

// torch.from_dlpack: a tensor sharing the producer's memory. A CUDA producer is asked to order its
// work before ember's current stream on that device. device= other than the producer's copies
// (refused with copy=False).
py::object from_dlpack(py::object obj, py::object device, py::object copy) {
  py::object capsule;
  if (PyCapsule_CheckExact(obj.ptr())) {
    capsule = obj;
  } else if (py::hasattr(obj, "__dlpack__")) {
    py::dict kwargs;  // a CPU producer is asked nothing about streams
    if (py::hasattr(obj, "__dlpack_device__")) {
      auto dev = int_pair(obj.attr("__dlpack_device__")(), "__dlpack_device__()");
      const Device d = import_device(dev.first, dev.second);
      if (!d.is_cpu()) {
        const cu::StreamHandle s = cu::current_stream(d.index);
        kwargs["stream"] = py::int_(s == 0 ? 1 : s);  // DLPack names the legacy default stream 1
      }
    }
    try {
      capsule = obj.attr("__dlpack__")(**kwargs, py::arg("max_version") = py::make_tuple(1, 0));
    } catch (py::error_already_set& e) {
      if (!e.matches(PyExc_TypeError)) throw;
      capsule = obj.attr("__dlpack__")(**kwargs);  // a producer older than DLPack 1.0
    }
  } else {
    throw py::type_error(str_cat("ember.from_dlpack: expected an object with __dlpack__ or a "
                                 "DLPack capsule, got ", Py_TYPE(obj.ptr())->tp_name));
  }
  Tensor t = tensor_from_capsule(capsule);
  const bool want_copy = !copy.is_none() && copy.cast<bool>();
  if (!device.is_none()) {
    Device target = to_device(device);
    if (!target.is_cpu()) target = resolve_device(target, "ember.from_dlpack(device=...)");
    if (target != t->device()) {
      if (!copy.is_none() && !copy.cast<bool>())
        throw py::buffer_error(str_cat("ember.from_dlpack: the tensor is on ", t->device().str(),
                                       " and copy=False forbids moving it to ", target.str()));
      return wrap(to_device_copy(t, target, false));
    }
  }
  if (want_copy) t = clone(t);
  return wrap(std::move(t));
}

}  // namespace

void register_interop(py::module_& m) {
  auto cls = py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(tensor_type()));
  auto defm = [&](const char* name, py::cpp_function f) { py::setattr(cls, name, f); };

  // ---- NumPy ----
  m.def("from_numpy", [](py::handle arr) { return wrap(tensor_from_numpy(arr, true)); },
        py::arg("ndarray"),
        "Creates a Tensor that shares memory with a NumPy array (writes are visible both ways; "
        "the array is kept alive by the tensor).");
  // For callers that copy right away (ember.tensor): no read-only warning.
  m.def("_from_numpy", [](py::handle arr, bool warn_not_writable) {
    return wrap(tensor_from_numpy(arr, warn_not_writable));
  }, py::arg("ndarray"), py::arg("warn_not_writable") = false);
  defm("numpy", py::cpp_function([](const Tensor& self, bool force) -> py::object {
    if (force && (self->requires_grad || !self->device().is_cpu()))
      return tensor_to_numpy(alias(self), false);  // detach() (and cpu() once there is CUDA)
    return tensor_to_numpy(self, force);
  }, py::is_method(cls), py::kw_only(), py::arg("force") = false,
     "Returns a NumPy array sharing this tensor's memory."));
  defm("__array__", py::cpp_function(&tensor_array, py::is_method(cls),
                                     py::arg("dtype") = py::none(), py::arg("copy") = py::none()));

  // ---- buffer protocol ----
  install_buffer_protocol();

  // ---- DLPack ----
  defm("__dlpack__", py::cpp_function(&tensor_dlpack, py::is_method(cls),
                                      py::arg("stream") = py::none(), py::kw_only(),
                                      py::arg("max_version") = py::none(),
                                      py::arg("dl_device") = py::none(),
                                      py::arg("copy") = py::none()));
  defm("__dlpack_device__", py::cpp_function([](const Tensor& self) {
    const auto dev = dl_device_of(self);
    return py::make_tuple(dev.first, dev.second);
  }, py::is_method(cls)));
  m.def("from_dlpack", &from_dlpack, py::arg("ext_tensor"), py::kw_only(),
        py::arg("device") = py::none(), py::arg("copy") = py::none(),
        "Creates a Tensor from an object supporting DLPack (or a DLPack capsule), sharing memory.");
  m.def("to_dlpack", [](const Tensor& t) {
    return tensor_dlpack(t, py::none(), py::none(), py::none(), py::none());
  }, py::arg("tensor"), "Returns a legacy 'dltensor' DLPack capsule sharing this tensor's memory.");
}

}  // namespace ember::pyb
