// bind_shared.cpp: storages in shared memory (the core side of ember.multiprocessing).
//
//   Tensor.share_memory_() / UntypedStorage.share_memory_()   move the bytes into a segment, in
//                                  place (every view of the storage sees the new memory)
//   Tensor.is_shared() / UntypedStorage.is_shared()
//   UntypedStorage._share_fd_cpu_() -> (fd, nbytes)          the storage's memfd (kept open by it)
//   UntypedStorage._new_shared_fd_cpu(fd, nbytes)            maps a received descriptor (dup'ed)
//   UntypedStorage._share_filename_cpu_(name) -> (name, nbytes)   moves into /dev/shm/<name>
//   UntypedStorage._new_shared_filename_cpu(name, nbytes)    maps a named segment
//   UntypedStorage._shared_id() -> str | None                 a segment's identity within a host
#include <sys/stat.h>

#include "core/shm_allocator.h"
#include "python/pyutils.h"

namespace ember::pyb {

void register_shared(py::module_& m) {
  auto st = py::reinterpret_borrow<py::class_<StorageImpl, std::shared_ptr<StorageImpl>>>(
      m.attr("UntypedStorage"));
  st.def("share_memory_", [](py::object self) {
      shm::share_fd_(*self.cast<Storage>());
      return self;
    })
      .def("is_shared", [](const Storage& s) { return shm::is_shared(*s); })
      .def("_share_fd_cpu_", [](const Storage& s) {
        shm::share_fd_(*s);
        return py::make_tuple(shm::segment_of(*s)->fd, s->nbytes);
      })
      .def_static("_new_shared_fd_cpu", [](int fd, size_t nbytes) { return shm::from_fd(fd, nbytes); },
                  py::arg("fd"), py::arg("nbytes"))
      .def("_share_filename_cpu_", [](const Storage& s, const std::string& name) {
        if (const auto* seg = shm::segment_of(*s); seg && !seg->name.empty())
          return py::make_tuple(seg->name, s->nbytes);
        shm::share_filename_(*s, name);
        return py::make_tuple(name, s->nbytes);
      }, py::arg("name"))
      .def_static("_new_shared_filename_cpu",
                  [](const std::string& name, size_t nbytes) { return shm::from_filename(name, nbytes); },
                  py::arg("name"), py::arg("nbytes"))
      .def("_use_count", [](const Storage& s) { return s.use_count() - 1; })
      .def("_shared_name", [](const Storage& s) -> py::object {
        const auto* seg = shm::segment_of(*s);
        if (!seg || seg->name.empty()) return py::none();
        return py::str(seg->name);
      })
      .def("_shared_id", [](const Storage& s) -> py::object {
        const auto* seg = shm::segment_of(*s);
        if (!seg) return py::none();
        if (!seg->name.empty()) return py::str("name:" + seg->name);
        struct stat sb;
        if (fstat(seg->fd, &sb) != 0) return py::none();
        return py::str(str_cat("fd:", sb.st_dev, ":", sb.st_ino));
      });

  auto cls = py::reinterpret_borrow<py::class_<TensorImpl, std::shared_ptr<TensorImpl>>>(m.attr("Tensor"));
  cls.def("share_memory_", [](py::object self) {
       shm::share_fd_(*self.cast<Tensor>()->storage);
       return self;
     })
      .def("is_shared", [](const Tensor& t) { return shm::is_shared(*t->storage); });
}

}  // namespace ember::pyb
