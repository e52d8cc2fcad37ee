// bind_cuda.cpp: the `_cuda_*` functions under ember.cuda (csrc/cuda/cuda_context.h), the
// OutOfMemoryError type, and `_cuda_host_allocator_testing`: one caching allocator over its own
// host backend, for tests that drive the allocator's bookkeeping directly on any machine.
#include <chrono>
#include <cstdlib>
#include <memory>

#include "cuda/caching_allocator.h"
#include "cuda/cuda_context.h"
#include "cuda/device_elementwise.h"
#include "cuda/device_storage.h"
#include "cuda/driver_api.h"
#include "cuda/host_backend.h"
#include "kernels/iterator.h"
#include "ops/op_table.h"
#include "python/pyutils.h"

namespace ember::pyb {

namespace cu = ember::cuda;
using namespace pybind11::literals;

namespace {

py::dict stats_dict(const cu::DeviceStats& s) {
  py::dict d;
  const char* pools[] = {"all", "small_pool", "large_pool"};
  auto put_stat = [&](const std::string& key, const cu::Stat& st) {
    d[py::str(key + ".current")] = st.current;
    d[py::str(key + ".peak")] = st.peak;
    d[py::str(key + ".allocated")] = st.allocated;
    d[py::str(key + ".freed")] = st.freed;
  };
  auto put_array = [&](const char* name, const cu::StatArray& a) {
    for (int i = 0; i < 3; ++i) put_stat(std::string(name) + "." + pools[i], a[i]);
  };
  put_array("allocation", s.allocation);
  put_array("segment", s.segment);
  put_array("active", s.active);
  put_array("inactive_split", s.inactive_split);
  put_array("allocated_bytes", s.allocated_bytes);
  put_array("reserved_bytes", s.reserved_bytes);
  put_array("active_bytes", s.active_bytes);
  put_array("inactive_split_bytes", s.inactive_split_bytes);
  put_array("requested_bytes", s.requested_bytes);
  put_stat("oversize_allocations", s.oversize_allocations);
  put_stat("oversize_segments", s.oversize_segments);
  d["num_alloc_retries"] = s.num_alloc_retries;
  d["num_ooms"] = s.num_ooms;
  d["num_sync_all_streams"] = s.num_sync_all_streams;
  d["num_device_alloc"] = s.num_device_alloc;
  d["num_device_free"] = s.num_device_free;
  d["max_split_size"] = s.max_split_size;
  return d;
}

// torch.cuda.memory_snapshot()'s segment records (the fields that apply).
py::list snapshot_list(cu::CachingAllocator& a) {
  py::list out;
  for (const auto& seg : a.snapshot()) {
    py::list blocks;
    for (const auto& b : seg.blocks) {
      py::dict bd;
      bd["address"] = b.address;
      bd["size"] = b.size;
      bd["requested_size"] = b.requested_size;
      bd["state"] = b.state;
      blocks.append(bd);
    }
    py::dict sd;
    sd["device"] = a.device();
    sd["address"] = seg.address;
    sd["total_size"] = seg.total_size;
    sd["allocated_size"] = seg.allocated_size;
    sd["active_size"] = seg.active_size;
    sd["requested_size"] = seg.requested_size;
    sd["stream"] = seg.stream;
    sd["segment_type"] = seg.is_large ? "large" : "small";
    sd["blocks"] = blocks;
    out.append(sd);
  }
  return out;
}

void* as_ptr(uintptr_t p) { return reinterpret_cast<void*>(p); }
uintptr_t address_int(const void* p) { return reinterpret_cast<uintptr_t>(p); }

// One allocator over a private host backend (destroyed before it: declaration order).
struct HostAllocatorTesting {
  HostAllocatorTesting(size_t capacity, const std::string& conf)
      : backend(std::make_unique<cu::HostBackend>(capacity)),
        alloc(std::make_unique<cu::CachingAllocator>(backend.get(), 0,
                                                     cu::AllocatorConfig::parse(conf))) {}
  std::unique_ptr<cu::HostBackend> backend;
  std::unique_ptr<cu::CachingAllocator> alloc;
};

cu::CachingAllocator& device_alloc(int device) {
  return cu::allocator(cu::check_device_index(device));
}

// benchmarks/bench_cuda_alloc.py: `iters` alloc+free pairs of `size` bytes in a C++ loop, so the
// allocator's own cost is timed, not Python's call overhead. Returns seconds.
template <class Alloc, class Free>
double time_pairs(int64_t iters, Alloc&& alloc, Free&& free_) {
  GilRelease nogil(GilRelease::Wait{});
  auto t0 = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < iters; ++i) {
    void* p = alloc();
    asm volatile("" : : "r"(p) : "memory");  // keeps the compiler from eliding a malloc/free pair
    free_(p);
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

Device resolve_device(const Device& device, const std::string& what) {
  if (device.is_cpu()) return device;
  if (!cu::is_available()) throw std::runtime_error(cu::no_gpu_error(what));
  return Device{DeviceType::CUDA, static_cast<int16_t>(cu::check_device_index(device.index))};
}

Tensor to_device_copy(const Tensor& t, const Device& device, bool non_blocking) {
  if (t->device() == device) return t;
  // Dense tensors keep their layout (as torch's preserve_format); others become contiguous.
  Tensor out = is_non_overlapping_and_dense(*t)
                   ? empty_strided(t->sizes, t->strides, t->dtype, device)
                   : empty(t->sizes, t->dtype, device);
  py::gil_scoped_acquire gil;
  call_device("_copy_from", py::make_tuple(out, t), py::dict("non_blocking"_a = non_blocking));
  return out;
}

namespace {

py::object scalar_object(const Scalar& v) {
  if (v.is_bool()) return py::bool_(v.to_int() != 0);
  if (v.is_float()) return py::float_(v.to_double());
  return py::int_(v.to_int());
}

// copy_/fill_ on CUDA tensors (core/tensor.h): ember.cuda's _copy_from and fill_ do the work.
void device_copy(const Tensor& dst, const Tensor& src) {
  py::gil_scoped_acquire gil;
  call_device("_copy_from", py::make_tuple(dst, src), py::dict());
}
void device_fill(const Tensor& dst, Scalar value) {
  py::gil_scoped_acquire gil;
  call_device("fill_", py::make_tuple(dst, scalar_object(value)), py::dict());
}

// torch's __cuda_array_interface__ (version 3) of a CUDA tensor: CuPy and Numba views of it.
py::dict array_interface(const Tensor& t, const char* typestr) {
  py::dict d;
  d["shape"] = py::tuple(py::cast(t->sizes));
  d["typestr"] = typestr;
  d["data"] = py::make_tuple(address_int(t->numel() ? t->device_data() : nullptr), false);
  if (t->is_contiguous()) {
    d["strides"] = py::none();
  } else {
    std::vector<int64_t> st(t->strides);
    for (auto& x : st) x *= int64_t(t->element_size());
    d["strides"] = py::tuple(py::cast(st));
  }
  d["version"] = 3;
  return d;
}

// The op table's op `name` as a kernel family and index.
std::pair<cu::KernelFamily, int> table_op(const std::string& name) {
  for (int i = 0; i < num_unary_ops(); ++i)
    if (name == unary_info(static_cast<UnaryOp>(i)).name) return {cu::KernelFamily::Unary, i};
  for (int i = 0; i < num_binary_ops(); ++i)
    if (name == binary_info(static_cast<BinaryOp>(i)).name) return {cu::KernelFamily::Binary, i};
  throw py::value_error("not an op of the elementwise table: " + name);
}

cu::ElementwiseKernelKey make_key(const std::string& op, py::handle input, py::handle output,
                                  bool flat, int by_value) {
  auto [family, index] = table_op(op);
  cu::ElementwiseKernelKey key;
  key.family = family;
  key.op = index;
  key.input = to_dtype(input);
  key.output = to_dtype(output);
  key.flat = flat;
  key.by_value = static_cast<uint8_t>(by_value);
  return key;
}

// The run-time compiled elementwise kernels (cuda/device_elementwise.h), and what the tests read
// of them without a GPU: the generated source, NVRTC's verdict on it, the launch parameters.
void register_compiled_kernels(py::module_& m) {
  m.def("_cuda_set_nvrtc_candidates", &cu::set_nvrtc_candidates);
  m.def("_cuda_kernel_headers", []() {
    py::dict d;
    for (const auto& [name, text] : cu::kernel_headers()) d[py::str(name)] = text;
    return d;
  });
  m.def("_cuda_set_compiled_kernels", &cu::set_native_elementwise);
  m.def("_cuda_native_elementwise", []() {
    std::string why;
    const bool on = cu::native_elementwise_available(&why);
    return py::dict("available"_a = on, "reason"_a = why,
                    "compiled_kernels"_a = cu::compiled_kernel_count());
  });
  m.def("_cuda_kernel_source", [](const std::string& op, py::handle input, py::handle output,
                                  bool flat, int by_value) {
    const cu::ElementwiseKernelKey key = make_key(op, input, output, flat, by_value);
    return py::make_tuple(cu::kernel_name(key), cu::kernel_source(key));
  }, py::arg("op"), py::arg("input"), py::arg("output"), py::arg("flat") = true,
     py::arg("by_value") = 0);
  // NVRTC only (no GPU): the binary's size, or NVRTC's log in a RuntimeError.
  m.def("_cuda_compile_kernel_source", [](const std::string& op, py::handle input,
                                          py::handle output, bool flat, int by_value, int major,
                                          int minor) {
    const cu::ElementwiseKernelKey key = make_key(op, input, output, flat, by_value);
    std::string source = cu::kernel_source(key), name = cu::kernel_name(key);
    GilRelease nogil;
    return cu::compile_kernel(source, name, cu::kernel_headers(), major, minor).size();
  }, py::arg("op"), py::arg("input"), py::arg("output"), py::arg("flat") = true,
     py::arg("by_value") = 0, py::arg("major") = 9, py::arg("minor") = 0);
  m.def("_cuda_kernel_cache_file", [](const std::string& op, py::handle input, py::handle output,
                                      bool flat, int by_value, int major, int minor) {
    const cu::ElementwiseKernelKey key = make_key(op, input, output, flat, by_value);
    return cu::kernel_cache_file(cu::kernel_source(key), cu::kernel_name(key), cu::kernel_headers(),
                                 major, minor);
  }, py::arg("op"), py::arg("input"), py::arg("output"), py::arg("flat") = true,
     py::arg("by_value") = 0, py::arg("major") = 9, py::arg("minor") = 0);
  // The kernel and parameter block a launch of table op `op` over these tensors (already in the
  // compute dtype; `out` may be None) would use.
  m.def("_cuda_elementwise_plan", [](const std::string& op, std::vector<Tensor> inputs,
                                     py::handle out_dtype, py::handle outh) {
    auto [family, index] = table_op(op);
    EMBER_CHECK(!inputs.empty(), py::value_error, "no inputs");
    Tensor out = outh.is_none() ? nullptr : outh.cast<Tensor>();
    ElementwiseIter it(out, to_dtype(out_dtype), inputs, op.c_str());
    const cu::ElementwiseKernelKey key = cu::kernel_key(family, index, it, inputs[0]->dtype);
    const cu::ElementwiseParams p = cu::pack_params(it, key);
    py::list sizes, strides, data, values;
    for (int d = 0; d < p.ndim; ++d) sizes.append(p.sizes[d]);
    for (int k = 0; k <= key.arity(); ++k) {
      py::list row;
      for (int d = 0; d < p.ndim; ++d) row.append(p.strides[k][d]);
      strides.append(row);
      data.append(p.data[k]);
    }
    for (int k = 0; k < key.arity(); ++k) values.append(p.values[k]);
    return py::dict("kernel"_a = cu::kernel_name(key), "numel"_a = p.numel, "sizes"_a = sizes,
                    "strides"_a = strides, "data"_a = data, "values"_a = values,
                    "out"_a = it.output());
  }, py::arg("op"), py::arg("inputs"), py::arg("out_dtype"), py::arg("out") = py::none());
}

}  // namespace

void register_cuda(py::module_& m) {
  set_device_copy_functions(&device_copy, &device_fill);

  // tensors on CUDA devices (the element-wise work is ember.cuda's, in Python over CuPy)
  m.def("_cuda_empty", [](const Shape& sizes, py::handle dtype, int d) {
    return empty(sizes, to_dtype(dtype),
                 Device{DeviceType::CUDA, static_cast<int16_t>(cu::check_device_index(d))});
  }, py::arg("sizes"), py::arg("dtype"), py::arg("device"));
  m.def("_cuda_copy_contiguous", [](const Tensor& dst, const Tensor& src, bool non_blocking) {
    cu::copy_contiguous(dst, src, non_blocking);
    dst->bump_version();
  });
  m.def("_cuda_memset", [](const Tensor& t, int byte) { cu::memset_device(t, byte); });
  m.def("_pin_memory", [](const Tensor& t) -> Tensor {
    EMBER_CHECK(t->device().is_cpu(), std::runtime_error, "cannot pin '", t->device().str(),
                "' memory: only dense CPU tensors can be pinned");
    if (cu::is_pinned(*t->storage)) return t;
    resolve_device(Device{DeviceType::CUDA, -1}, "pin_memory()");  // pinning needs the runtime
    Allocator* a = cu::pinned_allocator();
    const size_t nbytes = size_t(t->numel()) * t->element_size();
    auto storage = std::make_shared<StorageImpl>(a->allocate(nbytes), nbytes, a);
    Tensor out = from_storage(storage, t->sizes, contiguous_strides(t->sizes), 0, t->dtype);
    copy_(out, t);
    return out;
  });
  m.def("_cuda_is_pinned", [](const Tensor& t) { return t->device().is_cpu() && cu::is_pinned(*t->storage); });
  m.def("_cuda_array_interface", &array_interface);
  m.def("_tensor_record_stream", [](const Tensor& t, uintptr_t stream) {
    EMBER_CHECK(on_device(t), std::runtime_error, "record_stream: expected a CUDA tensor, got one on ",
                t->device().str());
    // Memory from another library (DLPack) is not the allocator's to hold back: as in torch,
    // nothing to do.
    if (t->storage->ptr() && t->storage->allocator)
      cu::allocator(t->device().index).record_stream(t->storage->ptr(), stream);
  });

  // Registered after the core's translator, so it is tried first.
  py::register_exception<cu::CudaOutOfMemoryError>(m, "OutOfMemoryError", PyExc_RuntimeError);
  py::register_exception<cu::AcceleratorError>(m, "AcceleratorError", PyExc_RuntimeError);

  m.def("_cuda_set_runtime_candidates", &cu::set_runtime_candidates);
  register_compiled_kernels(m);
  m.def("_cuda_is_available", &cu::is_available);
  m.def("_cuda_device_count", &cu::device_count);
  m.def("_cuda_unavailable_reason", &cu::unavailable_reason);
  m.def("_cuda_runtime_version", []() -> py::object {
    const std::string v = cu::runtime_version();
    return v.empty() ? py::object(py::none()) : py::object(py::str(v));
  });
  m.def("_cuda_backend_name", &cu::backend_name);
  m.def("_cuda_no_gpu_error", &cu::no_gpu_error, py::arg("what") = "");
  m.def("_cuda_use_host_backend", &cu::use_host_backend, py::arg("capacity"),
        py::arg("devices") = 1);

  m.def("_cuda_get_device", &cu::current_device);
  m.def("_cuda_set_device", &cu::set_device);
  m.def("_cuda_check_device", &cu::check_device_index);
  m.def("_cuda_get_device_name", [](int d) {
    return cu::backend().device_name(cu::check_device_index(d));
  });
  m.def("_cuda_device_properties", [](int d) {
    d = cu::check_device_index(d);
    cu::Backend& b = cu::backend();
    int major = 0, minor = 0, sms = 0;
    b.device_attributes(d, &major, &minor, &sms);
    size_t free_bytes = 0, total = 0;
    b.mem_get_info(d, &free_bytes, &total);
    return py::dict("name"_a = b.device_name(d), "major"_a = major, "minor"_a = minor,
                    "total_memory"_a = total, "multi_processor_count"_a = sms);
  });
  m.def("_cuda_synchronize", [](int d) {
    GilRelease nogil(GilRelease::Wait{});
    cu::backend().device_synchronize(cu::check_device_index(d));
  });
  m.def("_cuda_mem_get_info", [](int d) {
    size_t free_b = 0, total = 0;
    cu::backend().mem_get_info(cu::check_device_index(d), &free_b, &total);
    return py::make_tuple(free_b, total);
  });

  // memory
  m.def("_cuda_memory_stats", [](int d) { return stats_dict(device_alloc(d).stats()); });
  m.def("_cuda_reset_peak_memory_stats", [](int d) { device_alloc(d).reset_peak_stats(); });
  m.def("_cuda_reset_accumulated_memory_stats",
        [](int d) { device_alloc(d).reset_accumulated_stats(); });
  m.def("_cuda_empty_cache", []() {
    for (int d = 0, n = cu::backend().device_count(); d < n; ++d) cu::allocator(d).empty_cache();
  });
  m.def("_cuda_set_memory_fraction",
        [](double f, int d) { device_alloc(d).set_memory_fraction(f); });
  m.def("_cuda_memory_snapshot", []() {
    py::list out;
    for (int d = 0, n = cu::backend().device_count(); d < n; ++d)
      for (auto seg : snapshot_list(cu::allocator(d))) out.append(seg);
    return out;
  });
  m.def("_cuda_caching_allocator_alloc", [](size_t size, int d, uintptr_t stream) {
    return address_int(device_alloc(d).malloc(size, stream));
  });
  m.def("_cuda_caching_allocator_delete", [](uintptr_t ptr) {
    for (int d = 0, n = cu::backend().device_count(); d < n; ++d)
      if (cu::allocator(d).owns(as_ptr(ptr))) return cu::allocator(d).free(as_ptr(ptr));
    throw std::runtime_error("caching_allocator_delete: invalid device pointer " +
                             std::to_string(ptr));
  });
  m.def("_cuda_record_stream", [](uintptr_t ptr, uintptr_t stream, int d) {
    device_alloc(d).record_stream(as_ptr(ptr), stream);
  });
  m.def("_cuda_bench_alloc_free", [](size_t size, int64_t iters, bool raw, int d) {
    d = cu::check_device_index(d);
    cu::Backend& b = cu::backend();
    if (raw)
      return time_pairs(iters, [&] {
        void* p = b.raw_malloc(d, size);
        if (!p) throw std::runtime_error("cudaMalloc: out of memory");
        return p;
      }, [&](void* p) { b.raw_free(d, p); });
    cu::CachingAllocator& a = cu::allocator(d);
    cu::StreamHandle s = cu::current_stream(d);
    return time_pairs(iters, [&] { return a.malloc(size, s); }, [&](void* p) { a.free(p); });
  });
  m.def("_cuda_alloc_conf_check", [](const std::string& conf) {
    auto c = cu::AllocatorConfig::parse(conf);
    return py::make_tuple(c.max_split_size, c.garbage_collection_threshold);
  });

  // streams and events (handles are ints: a cudaStream_t / cudaEvent_t on the CUDA runtime)
  m.def("_cuda_current_stream", [](int d) { return cu::current_stream(d); });
  m.def("_cuda_set_stream", [](int d, uintptr_t s) { cu::set_current_stream(d, s); });
  m.def("_cuda_stream_create", [](int d, int priority) {
    return cu::backend().stream_create(cu::check_device_index(d), priority);
  });
  m.def("_cuda_stream_destroy",
        [](int d, uintptr_t s) { cu::backend().stream_destroy(d, s); });
  m.def("_cuda_stream_query", [](int d, uintptr_t s) { return cu::backend().stream_query(d, s); });
  m.def("_cuda_stream_synchronize", [](int d, uintptr_t s) {
    GilRelease nogil(GilRelease::Wait{});
    cu::backend().stream_synchronize(d, s);
  });
  m.def("_cuda_stream_wait_event", [](int d, uintptr_t s, uintptr_t e) {
    cu::backend().stream_wait_event(d, s, as_ptr(e));
  });
  m.def("_cuda_event_create", [](int d, bool timing) {
    return address_int(cu::backend().event_create(cu::check_device_index(d), timing));
  });
  m.def("_cuda_event_destroy",
        [](int d, uintptr_t e) { cu::backend().event_destroy(d, as_ptr(e)); });
  m.def("_cuda_event_record",
        [](int d, uintptr_t e, uintptr_t s) { cu::backend().event_record(d, as_ptr(e), s); });
  m.def("_cuda_event_query",
        [](int d, uintptr_t e) { return cu::backend().event_query(d, as_ptr(e)); });
  m.def("_cuda_event_synchronize", [](int d, uintptr_t e) {
    GilRelease nogil(GilRelease::Wait{});
    cu::backend().event_synchronize(d, as_ptr(e));
  });
  m.def("_cuda_event_elapsed_time", [](int d, uintptr_t a, uintptr_t b) {
    return cu::backend().event_elapsed_ms(d, as_ptr(a), as_ptr(b));
  });

  py::class_<HostAllocatorTesting>(m, "_cuda_host_allocator_testing",
                                   "The CUDA caching allocator over a host-memory backend of "
                                   "`capacity` bytes (tests and benchmarks only).")
      .def(py::init<size_t, const std::string&>(), py::arg("capacity") = size_t(1) << 30,
           py::arg("conf") = "")
      .def("malloc", [](HostAllocatorTesting& t, size_t size, uintptr_t stream) {
        return address_int(t.alloc->malloc(size, stream));
      }, py::arg("size"), py::arg("stream") = 0)
      .def("free", [](HostAllocatorTesting& t, uintptr_t p) { t.alloc->free(as_ptr(p)); })
      .def("record_stream", [](HostAllocatorTesting& t, uintptr_t p, uintptr_t s) {
        t.alloc->record_stream(as_ptr(p), s);
      })
      .def("stream_create", [](HostAllocatorTesting& t) { return t.backend->stream_create(0, 0); })
      .def("synchronize", [](HostAllocatorTesting& t, py::object stream) {
        if (stream.is_none()) t.backend->device_synchronize(0);
        else t.backend->stream_synchronize(0, stream.cast<uintptr_t>());
      }, py::arg("stream") = py::none())
      .def("memory_stats", [](HostAllocatorTesting& t) { return stats_dict(t.alloc->stats()); })
      .def("reset_peak_memory_stats", [](HostAllocatorTesting& t) { t.alloc->reset_peak_stats(); })
      .def("reset_accumulated_memory_stats",
           [](HostAllocatorTesting& t) { t.alloc->reset_accumulated_stats(); })
      .def("empty_cache", [](HostAllocatorTesting& t) { t.alloc->empty_cache(); })
      .def("set_memory_fraction",
           [](HostAllocatorTesting& t, double f) { t.alloc->set_memory_fraction(f); })
      .def("snapshot", [](HostAllocatorTesting& t) { return snapshot_list(*t.alloc); })
      .def("mem_get_info", [](HostAllocatorTesting& t) {
        size_t free_b = 0, total = 0;
        t.backend->mem_get_info(0, &free_b, &total);
        return py::make_tuple(free_b, total);
      })
      .def("_bench_alloc_free", [](HostAllocatorTesting& t, size_t size, int64_t iters, bool raw) {
        if (raw)  // plain aligned host memory, as the backend's segments are made
          return time_pairs(iters, [&] { return std::aligned_alloc(512, (size + 511) / 512 * 512); },
                            [](void* p) { std::free(p); });
        return time_pairs(iters, [&] { return t.alloc->malloc(size, 0); },
                          [&](void* p) { t.alloc->free(p); });
      }, py::arg("size"), py::arg("iters"), py::arg("raw") = false)
      .def("allocated_size",
           [](HostAllocatorTesting& t, uintptr_t p) { return t.alloc->allocated_size(as_ptr(p)); })
      .def_property("capacity", [](HostAllocatorTesting& t) { return t.backend->capacity(); },
                    [](HostAllocatorTesting& t, size_t c) { t.backend->set_capacity(c); })
      .def_property_readonly("backend_bytes_in_use",
                             [](HostAllocatorTesting& t) { return t.backend->bytes_in_use(); })
      .def_property_readonly("backend_live_allocations",
                             [](HostAllocatorTesting& t) { return t.backend->live_allocations(); })
      .def_property_readonly("backend_live_events",
                             [](HostAllocatorTesting& t) { return t.backend->live_events(); });
}

}  // namespace ember::pyb
