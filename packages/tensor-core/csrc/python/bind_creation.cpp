// bind_creation.cpp: factory functions (empty/zeros/ones/full and *_like, tensor, as_tensor,
// arange, linspace, logspace, eye) with PyTorch's keyword arguments.
#include <cmath>

#include "kernels/loops.h"
#include "python/pyutils.h"

namespace ember::pyb {
namespace {

struct FactoryArgs {
  ScalarType dtype = ScalarType::Undefined;
  Device device{};
  bool device_given = false;
  bool requires_grad = false;
  py::object out = py::none();
};

FactoryArgs parse_factory(const py::kwargs& kw, const char* op) {
  FactoryArgs f;
  for (auto item : kw) {
    std::string k = py::str(item.first);
    py::handle v = item.second;
    if (k == "dtype") f.dtype = to_dtype(v);
    else if (k == "device") f.device = to_device(v), f.device_given = !v.is_none();
    else if (k == "requires_grad") f.requires_grad = v.cast<bool>();
    else if (k == "out") f.out = py::reinterpret_borrow<py::object>(v);
    else if (k == "layout" || k == "pin_memory" || k == "memory_format" || k == "generator") continue;
    else throw py::type_error(str_cat(op, "() got an unexpected keyword argument '", k, "'"));
  }
  f.device = resolve_device(f.device, str_cat(op, "(): device '", f.device.str(), "'"));
  return f;
}

py::object finish(Tensor t, const FactoryArgs& f) {
  // Built on the CPU (tensor(), arange, ...): moved to the device asked for.
  if (f.device_given && t->device() != f.device) t = to_device_copy(t, f.device, false);
  if (!f.out.is_none()) {
    Tensor o = expect_tensor(f.out, "factory", "out");
    if (o->numel() == 0 && o->sizes != t->sizes) {  // PyTorch resizes an empty out=
      Tensor fresh = empty(t->sizes, o->dtype, o->device());
      o->storage = fresh->storage;
      o->sizes = fresh->sizes;
      o->strides = fresh->strides;
      o->offset = 0;
    }
    copy_(o, t);
    return f.out;
  }
  t->version->value.store(0);  // a new tensor starts at version 0 (filling it is no user write)
  py::object r = py::cast(t);
  if (f.requires_grad) r.attr("requires_grad_")(true);
  return r;
}

Tensor filled(const Shape& shape, ScalarType dt, const Scalar* value, Device device = Device{}) {
  Tensor t = empty(shape, dt, device);
  if (value) fill_(t, *value);
  return t;
}

// A shape given as zeros(2, 3), zeros((2, 3)) or zeros(size=(2, 3)).
Shape factory_shape(const py::args& args, py::kwargs& kw, const char* op) {
  if (kw.contains("size")) {
    Shape s = to_shape(kw["size"]);
    PyDict_DelItemString(kw.ptr(), "size");
    return s;
  }
  if (args.size() == 0) return {};
  return shape_from_args(args, op);
}

template <typename Fill> Tensor make_range(int64_t n, ScalarType dt, Fill fill) {
  Tensor t = empty({n}, dt);
  dispatch_numeric(dt, "arange", [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = t->data_as<T>();
    for (int64_t i = 0; i < n; ++i) p[i] = cast_to<T>(fill(i));
  });
  return t;
}

}  // namespace

void register_creation(py::module_& m) {
  m.def("empty", [](py::args args, py::kwargs kw) {
    Shape s = factory_shape(args, kw, "empty");
    auto f = parse_factory(kw, "empty");
    return finish(filled(s, f.dtype == ScalarType::Undefined ? get_default_dtype() : f.dtype, nullptr, f.device), f);
  });
  m.def("zeros", [](py::args args, py::kwargs kw) {
    Shape s = factory_shape(args, kw, "zeros");
    auto f = parse_factory(kw, "zeros");
    Scalar z = Scalar::from_int(0);
    return finish(filled(s, f.dtype == ScalarType::Undefined ? get_default_dtype() : f.dtype, &z, f.device), f);
  });
  m.def("ones", [](py::args args, py::kwargs kw) {
    Shape s = factory_shape(args, kw, "ones");
    auto f = parse_factory(kw, "ones");
    Scalar o = Scalar::from_int(1);
    return finish(filled(s, f.dtype == ScalarType::Undefined ? get_default_dtype() : f.dtype, &o, f.device), f);
  });
  m.def("full", [](py::handle size, py::handle value, py::kwargs kw) {
    auto f = parse_factory(kw, "full");
    Scalar v = to_scalar(value);
    // PyTorch infers the dtype from the fill value.
    ScalarType dt = f.dtype != ScalarType::Undefined ? f.dtype : v.natural_dtype(get_default_dtype());
    return finish(filled(to_shape(size), dt, &v, f.device), f);
  }, py::arg("size"), py::arg("fill_value"));
  m.def("empty_strided", [](py::handle size, py::handle stride, py::kwargs kw) {
    auto f = parse_factory(kw, "empty_strided");
    ScalarType dt = f.dtype == ScalarType::Undefined ? get_default_dtype() : f.dtype;
    return finish(empty_strided(to_shape(size), to_shape(stride), dt, f.device), f);
  }, py::arg("size"), py::arg("stride"));

  auto like = [](const char* name, int which) {
    return [name, which](const Tensor& x, py::args rest, py::kwargs kw) {
      const size_t takes = which == 3 ? 2 : 1;  // full_like(input, fill_value)
      EMBER_CHECK(rest.size() + 1 <= takes, py::type_error, name, "() takes ", takes,
                  " positional argument", takes > 1 ? "s" : "", " but ", rest.size() + 1,
                  " were given");
      auto f = parse_factory(kw, name);
      ScalarType dt = f.dtype == ScalarType::Undefined ? x->dtype : f.dtype;
      Tensor t = f.device_given && f.device != x->device() ? empty(x->sizes, dt, f.device)
                                                            : empty_like(x, dt);
      if (which == 1) fill_(t, Scalar::from_int(0));
      if (which == 2) fill_(t, Scalar::from_int(1));
      if (which == 3) {
        EMBER_CHECK(rest.size() == 1, py::type_error, "full_like() missing required argument 'fill_value'");
        fill_(t, to_scalar(rest[0]));
      }
      return finish(t, f);
    };
  };
  m.def("empty_like", like("empty_like", 0), py::arg("input"));
  m.def("zeros_like", like("zeros_like", 1), py::arg("input"));
  m.def("ones_like", like("ones_like", 2), py::arg("input"));
  m.def("full_like", like("full_like", 3), py::arg("input"));

  m.def("tensor", [](py::handle data, py::kwargs kw) {
    auto f = parse_factory(kw, "tensor");
    if (is_tensor(data)) {  // a copy, on the source's device unless device= says otherwise
      warn("To copy construct from a tensor, it is recommended to use sourceTensor.detach()."
           "clone() or sourceTensor.detach().clone().requires_grad_(True), rather than "
           "ember.tensor(sourceTensor).");
      if (!f.device_given) f.device = to_tensor(data)->device(), f.device_given = true;
    }
    return finish(tensor_from_data(data, f.dtype), f);
  }, py::arg("data"));
  m.def("as_tensor", [](py::handle data, py::kwargs kw) -> py::object {
    auto f = parse_factory(kw, "as_tensor");
    if (is_tensor(data)) {  // the tensor itself when it already has the dtype and device
      py::object t = py::reinterpret_borrow<py::object>(data);
      py::dict to;
      if (f.dtype != ScalarType::Undefined) to["dtype"] = dtype_object(f.dtype);
      if (f.device_given) to["device"] = py::str(f.device.str());
      return to.empty() ? t : t.attr("to")(**to);
    }
    if (py::hasattr(data, "__array_interface__") && !is_number(data)) {
      py::object np_arr = py::reinterpret_borrow<py::object>(data);
      try {
        Tensor shared = py::module_::import("ember").attr("from_numpy")(np_arr).cast<Tensor>();
        if (f.dtype == ScalarType::Undefined || f.dtype == shared->dtype) return wrap(shared);
        return wrap(to_dtype(shared, f.dtype));
      } catch (py::error_already_set&) {
        // non-writeable / unsupported arrays fall through to a copy
      }
    }
    return wrap(tensor_from_data(data, f.dtype));
  }, py::arg("data"));

  m.def("arange", [](py::args args, py::kwargs kw) {
    py::object start = py::int_(0), end, step = py::int_(1);
    if (kw.contains("end")) { end = kw["end"]; PyDict_DelItemString(kw.ptr(), "end"); }
    if (kw.contains("start")) { start = kw["start"]; PyDict_DelItemString(kw.ptr(), "start"); }
    if (kw.contains("step")) { step = kw["step"]; PyDict_DelItemString(kw.ptr(), "step"); }
    if (args.size() == 1) end = args[0];
    else if (args.size() == 2) { start = args[0]; end = args[1]; }
    else if (args.size() == 3) { start = args[0]; end = args[1]; step = args[2]; }
    else if (args.size() > 3) throw py::type_error("arange() takes at most 3 positional arguments");
    if (!end) throw py::type_error("arange() missing required argument 'end'");
    auto f = parse_factory(kw, "arange");
    Scalar s0 = to_scalar(start), s1 = to_scalar(end), st = to_scalar(step);
    bool any_float = s0.is_float() || s1.is_float() || st.is_float();
    ScalarType dt = f.dtype != ScalarType::Undefined ? f.dtype
                    : any_float ? get_default_dtype() : ScalarType::Int64;
    double a = s0.to_double(), b = s1.to_double(), d = st.to_double();
    EMBER_CHECK(d != 0, std::runtime_error, "step must be nonzero");
    EMBER_CHECK(std::isfinite(a) && std::isfinite(b), std::runtime_error, "unsupported range: ", a, " -> ", b);
    EMBER_CHECK((d > 0 && b >= a) || (d < 0 && b <= a), std::runtime_error,
                "upper bound and larger bound inconsistent with step sign");
    int64_t n = static_cast<int64_t>(std::ceil((b - a) / d));
    Tensor t;
    if (!any_float && is_integral(dt, false)) {
      int64_t ia = s0.to_int(), id = st.to_int();
      t = make_range(n, dt, [=](int64_t i) { return ia + i * id; });
    } else {
      t = make_range(n, dt, [=](int64_t i) { return a + static_cast<double>(i) * d; });
    }
    return finish(t, f);
  });

  m.def("linspace", [](py::handle start, py::handle end, int64_t steps, py::kwargs kw) {
    auto f = parse_factory(kw, "linspace");
    EMBER_CHECK(steps >= 0, std::runtime_error, "number of steps must be non-negative");
    ScalarType dt = f.dtype == ScalarType::Undefined ? get_default_dtype() : f.dtype;
    double a = to_scalar(start).to_double(), b = to_scalar(end).to_double();
    double step = steps > 1 ? (b - a) / double(steps - 1) : 0.0;
    int64_t half = steps / 2;
    // PyTorch fills the second half backwards from `end` for symmetry (one step: `start`).
    Tensor t = make_range(steps, dt, [=](int64_t i) {
      return i < half || steps == 1 ? a + step * double(i) : b - step * double(steps - i - 1);
    });
    return finish(t, f);
  }, py::arg("start"), py::arg("end"), py::arg("steps"));
  m.def("logspace", [](py::handle start, py::handle end, int64_t steps, double base, py::kwargs kw) {
    auto f = parse_factory(kw, "logspace");
    EMBER_CHECK(steps >= 0, std::runtime_error, "number of steps must be non-negative");
    ScalarType dt = f.dtype == ScalarType::Undefined ? get_default_dtype() : f.dtype;
    double a = to_scalar(start).to_double(), b = to_scalar(end).to_double();
    double step = steps > 1 ? (b - a) / double(steps - 1) : 0.0;
    int64_t half = steps / 2;
    Tensor t = make_range(steps, dt, [=](int64_t i) {
      return std::pow(base, i < half || steps == 1 ? a + step * double(i)
                                                   : b - step * double(steps - i - 1));
    });
    return finish(t, f);
  }, py::arg("start"), py::arg("end"), py::arg("steps"), py::arg("base") = 10.0);
  m.def("eye", [](int64_t n, py::object mobj, py::kwargs kw) {
    auto f = parse_factory(kw, "eye");
    int64_t mm = mobj.is_none() ? n : mobj.cast<int64_t>();
    EMBER_CHECK(n >= 0, std::runtime_error, "n must be greater or equal to 0, got ", n);
    EMBER_CHECK(mm >= 0, std::runtime_error, "m must be greater or equal to 0, got ", mm);
    ScalarType dt = f.dtype == ScalarType::Undefined ? get_default_dtype() : f.dtype;
    Scalar zero = Scalar::from_int(0);
    Tensor t = filled({n, mm}, dt, &zero, f.device);
    int64_t k = std::min(n, mm);
    if (k > 0) fill_(as_strided(t, {k}, {mm + 1}, 0), Scalar::from_int(1));
    return finish(t, f);
  }, py::arg("n"), py::arg("m") = py::none());
  m.def("scalar_tensor", [](py::handle v, py::kwargs kw) {
    auto f = parse_factory(kw, "scalar_tensor");
    ScalarType dt = f.dtype == ScalarType::Undefined ? get_default_dtype() : f.dtype;
    return finish(scalar_tensor(to_scalar(v), dt), f);
  });
}

}  // namespace ember::pyb
