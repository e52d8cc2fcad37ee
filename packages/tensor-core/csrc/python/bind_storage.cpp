// bind_storage.cpp: storages as Python objects, as torch.UntypedStorage.
//
//   ember.UntypedStorage(nbytes)       a new (uninitialised) CPU block of bytes
//   Tensor.untyped_storage()           the tensor's storage: a handle on the same bytes, not a copy
//   Tensor.set_(source, offset, size, stride)
//                                       re-points a tensor at a storage (or another tensor's),
//                                       bounds-checked against the storage's size
//
// A Python UntypedStorage holds the core's shared_ptr<StorageImpl>, so it keeps the bytes alive
// and two handles on one storage compare equal (and hash alike) whatever Python object they are.
// The bytes are reachable without copies through the buffer protocol (memoryview(s): writable,
// format 'B'). Serialization, safetensors and ember-mp build on this file, so it stays general:
// nothing here knows about files or processes.
#include <cstring>

#include "python/pyutils.h"

namespace ember::pyb {
namespace {

py::module_* g_mod = nullptr;

py::object device_obj(const Storage& s) { return device_object(s->device()); }

void check_cpu(const Storage& s, const char* what) {
  if (!s->device().is_cpu())
    throw std::runtime_error(str_cat("UntypedStorage.", what, ": a ", s->device().str(),
                                     " storage has no host bytes; copy it to the CPU first"));
}

Storage new_cpu_storage(int64_t nbytes) {
  EMBER_CHECK(nbytes >= 0, std::runtime_error,
              "UntypedStorage: the size must be non-negative, got ", nbytes);
  Allocator* a = cpu_allocator();
  auto s = std::make_shared<StorageImpl>(a->allocate(static_cast<size_t>(nbytes)),
                                         static_cast<size_t>(nbytes), a);
  s->resizable = true;
  return s;
}

// Memory borrowed from a Python buffer (a mmap, bytes, a NumPy array): the storage holds the
// Py_buffer and releases it, under the GIL, when the last tensor lets go.
// Storages die on any thread, with or without the GIL, also while the interpreter shuts down
// (then the buffer is leaked on purpose, as bind_interop.cpp does for NumPy arrays).
void release_buffer(void* ctx, void*) {
  auto* view = static_cast<Py_buffer*>(ctx);
  if (!Py_IsInitialized()) return;
  if (PyGILState_Check()) {
    PyBuffer_Release(view);
    delete view;
    return;
  }
#if PY_VERSION_HEX >= 0x030D0000
  if (Py_IsFinalizing()) return;
#else
  if (_Py_IsFinalizing()) return;
#endif
  PyGILState_STATE state = PyGILState_Ensure();
  PyBuffer_Release(view);
  PyGILState_Release(state);
  delete view;
}

Storage borrow_buffer(py::handle obj) {
  auto* view = new Py_buffer;
  // Writable only: ember has no read-only tensors, and a write through a read-only mapping
  // would crash the process (map files with mmap.ACCESS_COPY for private writable pages).
  if (PyObject_GetBuffer(obj.ptr(), view, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) != 0) {
    delete view;
    PyErr_Clear();
    throw py::value_error(str_cat("UntypedStorage._from_buffer: expected a writable, C-contiguous "
                                  "buffer, got ", Py_TYPE(obj.ptr())->tp_name,
                                  " (copy it, or map the file with mmap.ACCESS_COPY)"));
  }
  const auto n = static_cast<size_t>(view->len);
  DataPtr data(view->buf, view, &release_buffer, Device{});
  return std::make_shared<StorageImpl>(std::move(data), n, nullptr);
}

int64_t checked_index(const Storage& s, int64_t i) {
  const auto n = static_cast<int64_t>(s->nbytes);
  if (i < 0) i += n;
  if (i < 0 || i >= n)
    throw py::index_error(str_cat("index ", i, " out of range for storage of size ", n));
  return i;
}

// PyTorch's setStorage/as_strided checks, then re-points `self`.
void set_storage(const Tensor& self, Storage storage, int64_t offset, const Shape& sizes,
                 const Shape& strides) {
  check_in_storage(*storage, sizes, strides, offset, self->element_size());
  self->storage = std::move(storage);
  self->sizes = sizes;
  self->strides = strides;
  self->offset = offset;
  self->bump_version();
}

// The buffer protocol (memoryview(storage)): a writable run of bytes, format 'B'. The view pins
// the bytes in place until it is released (resize_ cannot move them meanwhile).
int storage_getbuffer(PyObject* self, Py_buffer* view, int flags) {
  view->obj = nullptr;
  try {
    Storage s = py::handle(self).cast<Storage>();
    if (!s->device().is_cpu())
      throw py::buffer_error(str_cat("a ", s->device().str(), " storage cannot export a buffer"));
    static uint8_t dummy = 0;  // a zero-length buffer still needs a non-null address
    void* p = s->ptr() ? s->ptr() : &dummy;
    auto* pin = new PinnedStorage(s);
    if (PyBuffer_FillInfo(view, self, p, static_cast<Py_ssize_t>(s->nbytes), 0, flags) != 0) {
      delete pin;
      return -1;
    }
    view->internal = pin;
    return 0;
  } catch (...) {
    return buffer_error_from_current_exception();
  }
}

void storage_releasebuffer(PyObject* /*self*/, Py_buffer* view) {
  delete static_cast<PinnedStorage*>(view->internal);
  view->internal = nullptr;
}

}  // namespace

void register_storage(py::module_& m) {
  g_mod = new py::module_(m);
  py::class_<StorageImpl, std::shared_ptr<StorageImpl>>(m, "UntypedStorage", py::buffer_protocol())
      // UntypedStorage(nbytes) or UntypedStorage(sequence of byte values), as torch's
      .def(py::init([](py::object size_or_bytes, py::object device) {
             if (!device.is_none()) {
               std::string d = py::str(device);
               EMBER_CHECK(d == "cpu", std::runtime_error, "UntypedStorage: device '", d,
                           "' is not available in this build");
             }
             // (a 0-d integer tensor is an int, as torch's parser reads one)
             if (is_int_like(size_or_bytes)) return new_cpu_storage(as_int(size_or_bytes));
             const std::string type = py::str(py::type::handle_of(size_or_bytes).attr("__name__"));
             EMBER_CHECK(PySequence_Check(size_or_bytes.ptr()) && !is_tensor(size_or_bytes),
                         std::runtime_error, "torch.UntypedStorage(): Expected a sequence type, "
                         "but got ", type);
             py::sequence values = py::reinterpret_borrow<py::sequence>(size_or_bytes);
             std::vector<uint8_t> bytes;
             for (py::handle v : values) {
               EMBER_CHECK(PyLong_Check(v.ptr()), std::runtime_error,
                           "torch.UntypedStorage(): tried to construct a storage from a sequence (",
                           type, "), but one of the items was of type ",
                           py::str(py::type::handle_of(v).attr("__name__")).cast<std::string>(),
                           " instead of int");
               // (wrapped to a byte, as torch's: -1 is 255)
               bytes.push_back(static_cast<uint8_t>(PyLong_AsUnsignedLongLongMask(v.ptr())));
             }
             Storage storage = new_cpu_storage(static_cast<int64_t>(bytes.size()));
             if (!bytes.empty()) std::memcpy(storage->ptr(), bytes.data(), bytes.size());
             return storage;
           }),
           py::arg("nbytes") = 0, py::kw_only(), py::arg("device") = py::none())
      .def_static("_from_buffer", &borrow_buffer, py::arg("buffer"),
                  "A storage over the bytes of a Python buffer (no copy; keeps it alive).")
      .def("nbytes", [](const Storage& s) { return s->nbytes; })
      .def("size", [](const Storage& s) { return s->nbytes; })
      .def("__len__", [](const Storage& s) { return s->nbytes; })
      .def("element_size", [](const Storage&) { return 1; })
      .def("data_ptr", [](const Storage& s) { return reinterpret_cast<uintptr_t>(s->ptr()); })
      .def("resizable", [](const Storage& s) { return s->resizable; })
      .def_property_readonly("device", &device_obj)
      .def_property_readonly("is_cuda", [](const Storage& s) { return !s->device().is_cpu(); })
      .def_property_readonly("_cdata", [](const Storage& s) { return reinterpret_cast<uintptr_t>(s.get()); })
      .def("__eq__", [](const Storage& a, py::object b) {
        return py::isinstance<StorageImpl>(b) && b.cast<Storage>().get() == a.get();
      })
      .def("__hash__", [](const Storage& s) { return std::hash<const void*>()(s.get()); })
      .def("__getitem__", [](const Storage& s, int64_t i) {
        check_cpu(s, "__getitem__");
        return static_cast<const uint8_t*>(s->ptr())[checked_index(s, i)];
      })
      .def("__setitem__", [](const Storage& s, int64_t i, int64_t v) {
        check_cpu(s, "__setitem__");
        EMBER_CHECK(v >= 0 && v < 256, ValueError, "byte must be in range(0, 256)");
        static_cast<uint8_t*>(s->ptr())[checked_index(s, i)] = static_cast<uint8_t>(v);
      })
      .def("fill_", [](py::object self, int64_t v) {
        Storage s = self.cast<Storage>();
        check_cpu(s, "fill_");
        if (s->nbytes) std::memset(s->ptr(), static_cast<int>(v & 0xff), s->nbytes);
        return self;
      })
      .def("copy_", [](py::object self, const Storage& src, bool) {
        Storage s = self.cast<Storage>();
        check_cpu(s, "copy_");
        check_cpu(src, "copy_");
        EMBER_CHECK(s->nbytes == src->nbytes, std::runtime_error, "size does not match, self was ",
                    s->nbytes, " bytes but src was ", src->nbytes, " bytes");
        if (s->nbytes) std::memmove(s->ptr(), src->ptr(), s->nbytes);
        return self;
      }, py::arg("src"), py::arg("non_blocking") = false)
      .def("clone", [](const Storage& s) {
        check_cpu(s, "clone");
        Storage c = new_cpu_storage(static_cast<int64_t>(s->nbytes));
        if (s->nbytes) std::memcpy(c->ptr(), s->ptr(), s->nbytes);
        return c;
      })
      .def("tolist", [](const Storage& s) {
        check_cpu(s, "tolist");
        py::list out;
        auto* p = static_cast<const uint8_t*>(s->ptr());
        for (size_t i = 0; i < s->nbytes; ++i) out.append(p[i]);
        return out;
      })
      .def("__repr__", [](const Storage& s) {
        return str_cat("ember.UntypedStorage(nbytes=", s->nbytes, ", device='", s->device().str(),
                       "')");
      });
  auto* st = reinterpret_cast<PyTypeObject*>(m.attr("UntypedStorage").ptr());
  st->tp_as_buffer->bf_getbuffer = &storage_getbuffer;
  st->tp_as_buffer->bf_releasebuffer = &storage_releasebuffer;
  PyType_Modified(st);

  auto cls = py::reinterpret_borrow<py::class_<TensorImpl, std::shared_ptr<TensorImpl>>>(m.attr("Tensor"));
  // set_'s "not given" for storage_offset and size: an object of its own, so that an explicit
  // None or Ellipsis (neither is one of torch's forms) is told apart from an absent argument
  // (leaked: outlives interpreter teardown)
  static py::object* absent = new py::object(py::module_::import("builtins").attr("object")());
  cls.def("untyped_storage", [](const Tensor& t) { return t->storage; })
      // torch's forms: set_(), set_(source) and set_(source, storage_offset, size, stride=[])
      // for a Tensor or an UntypedStorage source
      .def("set_", [](py::object self, py::object source, py::object offset_arg, py::object size,
                      py::object stride) {
        Tensor t = self.cast<Tensor>();
        const bool has_offset = !offset_arg.is(*absent), has_size = !size.is(*absent);
        const bool geometry = has_offset || has_size || !stride.is_none();
        const bool size_sequence = PyList_Check(size.ptr()) || PyTuple_Check(size.ptr());
        if (geometry && (source.is_none() || !has_offset || offset_arg.is_none() || !size_sequence))
          throw py::type_error(str_cat(
              "set_() received an invalid combination of arguments - got (", type_of(source),
              has_offset ? ", " + type_of(offset_arg) : "",
              has_size ? ", " + type_of(size) : "", "), but expected one of:\n * ()\n * "
              "(Storage source)\n * (Storage source, int storage_offset, tuple of ints size, "
              "tuple of ints stride = None)\n * (Tensor source)\n * (Tensor source, int "
              "storage_offset, tuple of ints size, tuple of ints stride = None)"));
        if (has_offset && !is_int_list_item(offset_arg))  // (a SymInt: one-element tensors)
          throw py::type_error(str_cat("set_(): argument 'storage_offset' must be int, not ",
                                       type_of(offset_arg)));
        const int64_t offset = has_offset ? as_int(offset_arg) : 0;
        if (needs_grad(t))  // under no_grad it is allowed, as in PyTorch
          throw std::runtime_error(
              "a leaf Variable that requires grad is being used in an in-place operation.");
        if (source.is_none()) {  // set_(): an empty tensor on a fresh storage, on its device
          set_storage(t, t->device().is_cpu() ? new_cpu_storage(0)
                                              : empty({0}, t->dtype, t->device())->storage,
                      0, {0}, {1});
          return self;
        }
        if (is_tensor(source)) {  // set_(tensor): share its storage (and geometry)
          Tensor src = to_tensor(source);
          if (geometry) {  // its untyped storage with the geometry given, as torch's (its
            EMBER_CHECK(src->is_contiguous(), std::runtime_error,  // bytes read as this dtype)
                        "passed in tensor to be used as storage must be contiguous");
            const Shape sz = to_shape(size);
            set_storage(t, src->storage, offset, sz,
                        stride.is_none() ? contiguous_strides(sz) : to_shape(stride));
            return self;
          }
          EMBER_CHECK(src->dtype == t->dtype, std::runtime_error,
                      "Could not set tensor of type ", dtype_name(src->dtype),
                      " to a tensor of type ", dtype_name(t->dtype));
          if (src.get() != t.get()) set_storage(t, src->storage, src->offset, src->sizes, src->strides);
          return self;
        }
        if (!py::isinstance<StorageImpl>(source))
          throw py::type_error(str_cat("set_(): argument 'source' must be UntypedStorage or "
                                       "Tensor, not ", type_of(source)));
        Storage s = source.cast<Storage>();
        Shape sz, st;
        if (!has_size) {
          sz = {static_cast<int64_t>(s->nbytes / t->element_size()) - offset};
          if (sz[0] < 0) sz[0] = 0;
        } else {
          sz = to_shape(size);
        }
        st = stride.is_none() ? contiguous_strides(sz) : to_shape(stride);
        set_storage(t, std::move(s), offset, sz, st);
        return self;
      }, py::arg("source") = py::none(), py::arg("storage_offset") = *absent,
         py::arg("size") = *absent, py::arg("stride") = py::none())
      // `t.data = src` (torch's Variable::set_data): this tensor takes src's storage, geometry
      // and dtype without copying, and keeps its identity and autograd state, so that
      // Module.to(dtype) and Module.to(device) keep their Parameter objects (and optimizers that
      // hold them) working. The device comes with the storage, so it changes too, as in torch.
      .def("_set_data", [](const Tensor& t, const Tensor& src) {
        t->storage = src->storage;
        t->sizes = src->sizes;
        t->strides = src->strides;
        t->offset = src->offset;
        t->dtype = src->dtype;
      }, py::arg("new_data"))
      // True for a view whose base nothing else holds (no Python object, no other view): the
      // autograd engine may then adopt the view as a .grad without copying it, as torch's
      // AccumulateGrad steals a gradient whose use_count says it is not shared.
      .def("_is_sole_view", [](const Tensor& t) { return t->base && t->base.use_count() == 1; })
      .def("is_set_to", [](const Tensor& a, const Tensor& b) {
        return a->storage == b->storage && a->offset == b->offset && a->sizes == b->sizes &&
               a->strides == b->strides;
      });
}

}  // namespace ember::pyb
