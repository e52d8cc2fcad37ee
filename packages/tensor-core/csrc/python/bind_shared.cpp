// bind_shared.cpp: storages in shared memory (the core side of ember.multiprocessing).
//
//   Tensor.share_memory_() / UntypedStorage.share_memory_()   move the bytes into a segment, in
//                                  place (every view of the storage sees the new memory)
//   Tensor.is_shared() / UntypedStorage.is_shared()
//   UntypedStorage._share_fd_cpu_() -> (fd, nbytes, offset)   the storage's descriptor (kept open
//                                  by it) and where its data starts in the file
//   UntypedStorage._new_shared_fd_cpu(fd, nbytes, offset=0)   maps a received descriptor (dup'ed)
//   UntypedStorage._share_filename_cpu_(name) -> (name, nbytes)   moves into /dev/shm/<name>
//   UntypedStorage._new_shared_filename_cpu(name, nbytes, take=False)   maps a named segment
//   UntypedStorage._new_using_fd_cpu(nbytes) / _new_using_filename_cpu(nbytes, name)   fresh ones
//   UntypedStorage._shared_incref() / _shared_decref() / _shared_refcount()   a named segment's
//                                  count (messages in flight hold one; see shm_allocator.h)
//   UntypedStorage._shared_name() / _shared_id()              a segment's name / identity
//   _shm_group_sync(ctl, byte_offset, rank, world, epoch, value, timeout_s) -> [values]
//                                  the barrier under ember.distributed's shm backend
//
// Receiving a segment this process already maps returns the storage that maps it.
#include "core/shm_allocator.h"
#include "python/pyutils.h"

namespace ember::pyb {

void register_shared(py::module_& m) {
  auto st = py::reinterpret_borrow<py::class_<StorageImpl, std::shared_ptr<StorageImpl>>>(
      m.attr("UntypedStorage"));
  st.def("share_memory_", [](py::object self) {
      Storage s = self.cast<Storage>();
      if (!shm::is_shared(*s)) shm::share_fd_(s);
      return self;
    })
      .def("is_shared", [](const Storage& s) { return shm::is_shared(*s); })
      .def("_share_fd_cpu_", [](const Storage& s) {
        shm::share_fd_(s);
        const auto* seg = shm::segment_of(*s);
        return py::make_tuple(seg->fd, s->nbytes, seg->offset);
      })
      .def_static("_new_shared_fd_cpu", &shm::from_fd, py::arg("fd"), py::arg("nbytes"),
                  py::arg("offset") = 0)
      .def("_share_filename_cpu_", [](const Storage& s, const std::string& name) {
        if (const auto* seg = shm::segment_of(*s); seg && !seg->name.empty())
          return py::make_tuple(seg->name, s->nbytes);
        shm::share_filename_(s, name);
        return py::make_tuple(name, s->nbytes);
      }, py::arg("name"))
      .def_static("_new_shared_filename_cpu", &shm::from_filename, py::arg("name"),
                  py::arg("nbytes"), py::arg("take") = false)
      .def_static("_new_using_fd_cpu", &shm::new_fd, py::arg("nbytes"))
      .def_static("_new_using_filename_cpu", [](size_t nbytes, const std::string& name) {
        return shm::new_filename(name, nbytes);
      }, py::arg("nbytes"), py::arg("name"))
      .def("_shared_incref", [](const Storage& s) { shm::incref(*s); })
      .def("_shared_decref", [](py::object self) {
        shm::decref(*self.cast<Storage>());
        return self;
      })
      .def("_shared_refcount", [](const Storage& s) -> py::object {
        const int64_t c = shm::refcount(*s);
        if (c < 0) return py::none();
        return py::int_(c);
      })
      .def("_use_count", [](const Storage& s) { return s.use_count() - 1; })
      .def("_shared_name", [](const Storage& s) -> py::object {
        const auto* seg = shm::segment_of(*s);
        if (!seg || seg->name.empty()) return py::none();
        return py::str(seg->name);
      });

  m.def("_shm_group_sync", [](const Storage& ctl, size_t byte_offset, int rank, int world,
                              int64_t epoch, int64_t value, double timeout_s) {
    GilRelease nogil(GilRelease::Wait{});
    return shm::group_sync(*ctl, byte_offset, rank, world, epoch, value, timeout_s);
  }, py::arg("ctl"), py::arg("byte_offset"), py::arg("rank"), py::arg("world"), py::arg("epoch"),
        py::arg("value"), py::arg("timeout_s"));

  auto cls = py::reinterpret_borrow<py::class_<TensorImpl, std::shared_ptr<TensorImpl>>>(m.attr("Tensor"));
  cls.def("share_memory_", [](py::object self) {
       const Storage& s = self.cast<Tensor>()->storage;
       if (!shm::is_shared(*s)) shm::share_fd_(s);
       return self;
     })
      .def("is_shared", [](const Tensor& t) { return shm::is_shared(*t->storage); });
}

}  // namespace ember::pyb
