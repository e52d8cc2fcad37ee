// bind_random.cpp: random numbers for Python: the Generator class, the default generator's
// module functions (manual_seed, seed, initial_seed, get_rng_state, set_rng_state), the sampling
// factories (rand, randn, randint, randperm, *_like, normal, bernoulli, multinomial) with
// PyTorch's keyword arguments, and the in-place samplers (uniform_, normal_, random_, bernoulli_,
// exponential_) as Tensor methods. Every sampler takes `generator=`.
#include <cstring>
#include <map>
#include <optional>

#include "ops/linalg.h"  // resize_output
#include "cuda/cuda_context.h"
#include "ops/random_ops.h"
#include "python/pyutils.h"

using namespace pybind11::literals;

namespace ember::pyb {
namespace {

py::module_* g_m = nullptr;
using GenPtr = std::shared_ptr<Generator>;


std::string type_name(py::handle h) { return py::str(py::type::of(h).attr("__name__")); }

// A seed as PyTorch takes it: any int in [-2^63, 2^64); negative values wrap to uint64.
uint64_t to_seed(py::handle h, const char* op) {
  if (!PyLong_Check(h.ptr()) || PyBool_Check(h.ptr())) {
    if (!py::hasattr(h, "__index__"))
      throw std::runtime_error(str_cat(op, " expected a long, but got ", type_name(h)));
  }
  py::int_ v = py::reinterpret_steal<py::int_>(PyNumber_Index(h.ptr()));
  if (!v) throw py::error_already_set();
  unsigned long long u = PyLong_AsUnsignedLongLong(v.ptr());
  if (u == static_cast<unsigned long long>(-1) && PyErr_Occurred()) {
    PyErr_Clear();
    long long s = PyLong_AsLongLong(v.ptr());
    if (s == -1 && PyErr_Occurred()) {
      PyErr_Clear();
      throw py::value_error("Overflow when unpacking long long");
    }
    u = static_cast<unsigned long long>(s);
  }
  return static_cast<uint64_t>(u);
}

Tensor state_tensor(const std::string& s) {
  Tensor t = empty({static_cast<int64_t>(s.size())}, ScalarType::UInt8);
  if (!s.empty()) std::memcpy(t->data(), s.data(), s.size());
  return t;
}

std::string state_bytes(py::handle h) {
  if (!is_tensor(h))
    throw py::type_error(str_cat("RNG state must be an ember uint8 tensor, not ", type_name(h)));
  Tensor t = to_tensor(h);
  if (t->dtype != ScalarType::UInt8)
    throw py::type_error(str_cat("RNG state must be a uint8 tensor, got ", dtype_name(t->dtype)));
  Tensor c = contiguous(t);
  return std::string(static_cast<const char*>(static_cast<void*>(c->data())),
                     static_cast<size_t>(c->numel()));
}

Generator* to_generator(py::handle h, const char* op) {
  if (!h || h.is_none()) return nullptr;
  if (!py::isinstance<Generator>(h))
    throw py::type_error(str_cat(op, "(): argument 'generator' must be Generator, not ", type_name(h)));
  return h.cast<Generator*>();
}

// The generator a draw for a tensor on `target` uses: the one given, whose device type must be
// the target's (torch's error otherwise), or the target device's default generator.
Generator* generator_for(Generator* gen, const Device& target) {
  if (!gen) return target.is_cpu() ? nullptr : &cuda_default_generator(target.index);
  const bool gen_on_cuda = gen->cuda_index >= 0;
  if (gen_on_cuda == target.is_cpu())
    throw std::runtime_error(str_cat("Expected a '", target.is_cpu() ? "cpu" : "cuda",
                                     "' device type for generator but found '",
                                     gen_on_cuda ? "cuda" : "cpu", "'"));
  return gen;
}

// A generator object over one of the process-wide generators (never destroyed), created once per
// generator so that its identity is stable.
py::object borrowed_generator(Generator& gen) {
  static auto* objects = new std::map<Generator*, py::object>();  // leaked, as the generators
  auto it = objects->find(&gen);
  if (it == objects->end())
    it = objects->emplace(&gen, py::cast(GenPtr(&gen, [](Generator*) {}))).first;
  return it->second;
}

// ---- factory keyword arguments ----
struct Factory {
  ScalarType dtype = ScalarType::Undefined;
  bool requires_grad = false;
  py::object out = py::none();
  py::object generator = py::none();
  Generator* gen = nullptr;
  Device device{};
};

// `like`: the input of a *_like function, whose device the result takes unless device= is given.
Factory parse_factory(py::kwargs& kw, const char* op, const Tensor& like = nullptr) {
  Factory f;
  bool device_given = false;
  for (auto item : kw) {
    std::string k = py::str(item.first);
    py::handle v = item.second;
    if (k == "dtype") f.dtype = to_dtype(v);
    else if (k == "device") {
      // Drawn from the CPU generator, then copied: the same seed gives the same numbers on
      // every device.
      Device d = to_device(v);
      f.device = resolve_device(d, str_cat(op, "(): device '", d.str(), "'"));
      device_given = true;
    } else if (k == "requires_grad") f.requires_grad = v.cast<bool>();
    else if (k == "out") f.out = py::reinterpret_borrow<py::object>(v);
    else if (k == "generator") f.generator = py::reinterpret_borrow<py::object>(v);
    else if (k == "layout" || k == "pin_memory" || k == "memory_format") continue;
    else throw py::type_error(str_cat(op, "() got an unexpected keyword argument '", k, "'"));
  }
  f.gen = generator_for(to_generator(f.generator, op),
                        like && !device_given ? like->device() : f.device);
  return f;
}

// Pops a keyword argument (nullptr handle when absent).
py::object pop_kw(py::kwargs& kw, const char* name) {
  if (!kw.contains(name)) return py::object();
  py::object v = kw[name];
  PyDict_DelItemString(kw.ptr(), name);
  return v;
}

// The tensor a factory fills: `out` (dtype checked, resized) or a new one.
Tensor factory_target(const Factory& f, const Shape& shape, ScalarType default_dtype, const char* op) {
  if (!f.out.is_none()) {
    Tensor o = expect_tensor(f.out, op, "out");
    if (f.dtype != ScalarType::Undefined && f.dtype != o->dtype)
      throw std::runtime_error(str_cat("dtype ", dtype_name(f.dtype),
                                       " does not match dtype of out parameter (",
                                       dtype_name(o->dtype), ")"));
    check_out_no_grad(o, op);
    for (auto s : shape)
      EMBER_CHECK(s >= 0, ValueError, "Trying to create tensor with negative dimension ", s, ": ",
                  shape_str(shape));
    resize_output(o, shape);
    return o;
  }
  return empty(shape, f.dtype == ScalarType::Undefined ? default_dtype : f.dtype);
}

py::object factory_result(const Factory& f, const Tensor& t) {
  if (!f.out.is_none()) return f.out;
  py::object r = py::cast(f.device.is_cpu() ? t : to_device_copy(t, f.device, false));
  if (f.requires_grad) r.attr("requires_grad_")(true);
  return r;
}

// A size given as rand(2, 3), rand((2, 3)) or rand(size=(2, 3)).
Shape factory_shape(const py::args& args, py::kwargs& kw, const char* op) {
  py::object size = pop_kw(kw, "size");
  if (size) {
    if (args.size() != 0)
      throw py::type_error(str_cat(op, "() got multiple values for argument 'size'"));
    return to_shape(size);
  }
  if (args.size() == 0)
    throw py::type_error(str_cat(op, "() missing 1 required positional argument: 'size'"));
  return shape_from_args(args, op);
}

// `*_like`: a tensor with input's shape and (unless dtype= says otherwise) dtype.
Tensor like_target(const Tensor& x, const Factory& f) {
  return empty_like(x, f.dtype == ScalarType::Undefined ? x->dtype : f.dtype);
}

int64_t to_int(py::handle h, const char* op, const char* arg) {
  if (PyLong_Check(h.ptr()) || (!PyFloat_Check(h.ptr()) && py::hasattr(h, "__index__")))
    return py::int_(h.attr("__index__")()).cast<int64_t>();
  throw py::type_error(str_cat(op, "(): argument '", arg, "' must be int, not ", type_name(h)));
}

double to_double(py::handle h) { return to_scalar(h).to_double(); }

// ---- in-place samplers: autograd sees them when self requires grad ----
template <typename Fn>
py::object inplace(const char* name, py::handle self, py::tuple args, py::dict kw, Fn&& run) {
  Tensor t = expect_tensor(self, name, "self");
  generator_for(to_generator(kw["generator"], name), t->device());  // torch's device check
  if (t->requires_grad && grad_enabled()) {
    std::string core = std::string("_") + name;
    return redispatch(name, g_m->attr(core.c_str()), args, kw);
  }
  run(t);
  return py::reinterpret_borrow<py::object>(self);
}

py::object uniform_call(py::handle self, py::handle from, py::handle to, py::handle gen) {
  return inplace("uniform_", self, py::make_tuple(self, from, to), py::dict("generator"_a = gen),
                 [&](const Tensor& t) { uniform_(t, to_double(from), to_double(to), to_generator(gen, "uniform_")); });
}
py::object normal_call(py::handle self, py::handle mean, py::handle std, py::handle gen) {
  return inplace("normal_", self, py::make_tuple(self, mean, std), py::dict("generator"_a = gen),
                 [&](const Tensor& t) { normal_(t, to_double(mean), to_double(std), to_generator(gen, "normal_")); });
}
py::object exponential_call(py::handle self, py::handle lambd, py::handle gen) {
  return inplace("exponential_", self, py::make_tuple(self, lambd), py::dict("generator"_a = gen),
                 [&](const Tensor& t) { exponential_(t, to_double(lambd), to_generator(gen, "exponential_")); });
}
py::object bernoulli_inplace_call(py::handle self, py::handle p, py::handle gen) {
  return inplace("bernoulli_", self, py::make_tuple(self, p), py::dict("generator"_a = gen),
                 [&](const Tensor& t) {
                   Generator* g = to_generator(gen, "bernoulli_");
                   if (is_tensor(p)) bernoulli_(t, to_tensor(p), g);
                   else bernoulli_(t, to_double(p), g);
                 });
}
// random_(), random_(to), random_(from, to), random_(from=..., to=...)
py::object random_call(py::handle self, py::handle from, py::handle to, py::handle gen) {
  return inplace("random_", self, py::make_tuple(self, from, to), py::dict("generator"_a = gen),
                 [&](const Tensor& t) {
                   Generator* g = to_generator(gen, "random_");
                   if (from.is_none() && to.is_none()) return random_(t, g);
                   const int64_t f = from.is_none() ? 0 : to_int(from, "random_", "from");
                   std::optional<int64_t> hi;
                   if (!to.is_none()) hi = to_int(to, "random_", "to");
                   random_(t, f, hi, g);
                 });
}

// ---- functional samplers ----
// A sampler's result written into out= as the CPU paths below do (resized and copied).
py::object sampled_out(const char* op, const Tensor& r, py::handle outh) {
  Tensor o = expect_tensor(outh, op, "out");
  EMBER_CHECK(r->device() == o->device(), std::runtime_error,
              "Expected all tensors to be on the same device, but found at least two devices, ",
              r->device().str(), " and ", o->device().str(), "! (", op, ", out=)");
  check_out_no_grad(o, op);
  resize_output(o, r->sizes);
  copy_(o, r);
  return py::reinterpret_borrow<py::object>(outh);
}

// generator= for a call handed on (to the device hook or autograd): the one given, or the default
// that generator_for chose (None for the CPU's).
py::object generator_arg(py::handle given, Generator* chosen) {
  if (!given.is_none() || !chosen) return py::reinterpret_borrow<py::object>(given);
  return borrowed_generator(*chosen);
}

py::object bernoulli_call(py::handle input, py::handle p, py::handle gen, py::handle outh) {
  Tensor x = expect_tensor(input, "bernoulli", "input");
  Generator* g = generator_for(to_generator(gen, "bernoulli"), x->device());
  if (needs_dispatch(x) || (is_tensor(p) && needs_dispatch(to_tensor(p)))) {
    if (!outh.is_none() && (needs_grad(x) || (is_tensor(p) && needs_grad(to_tensor(p)))))
      throw std::runtime_error("bernoulli(): functions with out=... arguments don't support "
                               "automatic differentiation, but one of the arguments requires grad.");
    py::object r = redispatch("bernoulli", g_m->attr("bernoulli"), py::make_tuple(input, p),
                              py::dict("generator"_a = generator_arg(gen, g)));
    return outh.is_none() ? r : sampled_out("bernoulli", to_tensor(r), outh);
  }
  Tensor r = empty(x->sizes, x->dtype);
  if (p.is_none()) bernoulli_(r, x, g);
  else if (is_tensor(p)) bernoulli_(r, to_tensor(p), g);
  else bernoulli_(r, to_double(p), g);
  if (!outh.is_none()) {
    Tensor o = expect_tensor(outh, "bernoulli", "out");
    check_out_no_grad(o, "bernoulli");
    resize_output(o, r->sizes);
    copy_(o, r);
    return py::reinterpret_borrow<py::object>(outh);
  }
  return wrap(r);
}

py::object multinomial_call(py::handle input, py::handle n, bool replacement, py::handle gen,
                            py::handle outh) {
  Tensor x = expect_tensor(input, "multinomial", "input");
  Generator* g = generator_for(to_generator(gen, "multinomial"), x->device());
  if (on_device(x)) {
    // Numbers for CUDA tensors are drawn on the host: the CPU kernel on a host copy of the (small)
    // probabilities, with the device's generator, so a seed gives the CPU's samples.
    Tensor r = multinomial(to_device_copy(x, Device{}, false), to_int(n, "multinomial", "num_samples"),
                           replacement, g);
    r = to_device_copy(r, x->device(), false);
    if (outh.is_none()) return wrap(r);
    Tensor o = expect_tensor(outh, "multinomial", "out");
    EMBER_CHECK(o->dtype == ScalarType::Int64, std::runtime_error,
                "multinomial(): expected out tensor of dtype int64, but got ", dtype_name(o->dtype));
    return sampled_out("multinomial", r, outh);
  }
  Tensor r = multinomial(x, to_int(n, "multinomial", "num_samples"), replacement, g);
  if (!outh.is_none()) {
    Tensor o = expect_tensor(outh, "multinomial", "out");
    EMBER_CHECK(o->dtype == ScalarType::Int64, std::runtime_error,
                "multinomial(): expected out tensor of dtype int64, but got ", dtype_name(o->dtype));
    resize_output(o, r->sizes);
    copy_(o, r);
    return py::reinterpret_borrow<py::object>(outh);
  }
  return wrap(r);
}

[[noreturn]] void normal_signature_error(const char* got) {
  throw py::type_error(str_cat(
      "normal() received an invalid combination of arguments - got ", got,
      ", but expected one of:\n * (Tensor mean, Tensor std, *, Generator generator = None, "
      "Tensor out = None)\n * (Tensor mean, float std = 1, *, Generator generator = None, Tensor "
      "out = None)\n * (float mean, Tensor std, *, Generator generator = None, Tensor out = None)\n"
      " * (float mean, float std, tuple of ints size, *, Generator generator = None, Tensor out = "
      "None, dtype dtype = None, layout layout = None, device device = None, bool pin_memory = "
      "False, bool requires_grad = False)"));
}

py::object normal_fn(py::args args, py::kwargs kw) {
  py::object mean = pop_kw(kw, "mean"), std = pop_kw(kw, "std");
  py::object size = pop_kw(kw, "size");
  size_t k = 0;
  if (!mean && k < args.size()) mean = args[k++];
  if (!std && k < args.size()) std = args[k++];
  if (!size && k < args.size()) size = args[k++];
  if (k < args.size() || !mean) normal_signature_error("an unexpected number of arguments");
  const bool mt = is_tensor(mean), st = std && is_tensor(std);
  // With tensor parameters the draw is for their device (the generator's default and check).
  Factory f = parse_factory(kw, "normal", mt ? to_tensor(mean) : st ? to_tensor(std) : nullptr);
  if (!mt && !st) {  // two numbers and a size: a filled factory
    if (!std || !size || !is_number(mean) || !is_number(std))
      normal_signature_error("(float, float) without a size");
    Tensor t = factory_target(f, to_shape(size), get_default_dtype(), "normal");
    normal_(t, to_double(mean), to_double(std), f.gen);
    return factory_result(f, t);
  }
  if (size) normal_signature_error("tensor arguments and a size");
  if ((mt && needs_dispatch(to_tensor(mean))) || (st && needs_dispatch(to_tensor(std)))) {
    if (!f.out.is_none() && ((mt && needs_grad(to_tensor(mean))) || (st && needs_grad(to_tensor(std)))))
      throw std::runtime_error("normal(): functions with out=... arguments don't support "
                               "automatic differentiation, but one of the arguments requires grad.");
    py::object s = std ? std : py::float_(1.0);
    py::object r = redispatch("normal", g_m->attr("normal"), py::make_tuple(mean, s),
                              py::dict("generator"_a = generator_arg(f.generator, f.gen)));
    return f.out.is_none() ? r : sampled_out("normal", to_tensor(r), f.out);
  }
  Tensor r;
  if (mt && st) r = normal(to_tensor(mean), to_tensor(std), f.gen);
  else if (mt) r = normal(to_tensor(mean), std ? to_double(std) : 1.0, f.gen);
  else r = normal(to_double(mean), to_tensor(std), f.gen);
  if (!f.out.is_none()) {
    Tensor o = expect_tensor(f.out, "normal", "out");
    check_out_no_grad(o, "normal");
    resize_output(o, r->sizes);
    copy_(o, r);
    return f.out;
  }
  return wrap(r);
}

}  // namespace

void register_random(py::module_& m) {
  g_m = new py::module_(m);  // leaked: the bindings outlive interpreter teardown
  auto cls = py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(tensor_type()));
  auto defm = [&](const char* name, py::cpp_function f) { py::setattr(cls, name, f); };

  // ---- Generator ----
  py::class_<Generator, GenPtr>(m, "Generator", R"doc(
A random number generator (a Mersenne Twister seeded like PyTorch's CPU generator).
Pass it as ``generator=`` to any sampling function to draw from its own stream.)doc")
      .def(py::init([](py::handle device) {
             Device d = to_device(device.is_none() ? py::str("cpu") : device);
             auto gen = std::make_shared<Generator>();
             if (!d.is_cpu())  // draws on the host like the device's default (docs/cuda.md)
               gen->cuda_index = resolve_device(d, "Generator(device='" + d.str() + "')").index;
             return gen;
           }), py::arg("device") = "cpu")
      .def("manual_seed", [](py::object self, py::handle seed) {
        self.cast<Generator&>().manual_seed(to_seed(seed, "manual_seed"));
        return self;
      }, py::arg("seed"))
      .def("seed", [](Generator& g) { return g.seed(); })
      .def("initial_seed", [](Generator& g) { return g.initial_seed(); })
      .def("get_state", [](Generator& g) { return wrap(state_tensor(g.get_state())); })
      .def("set_state", [](py::object self, py::handle state) {
        self.cast<Generator&>().set_state(state_bytes(state));
        return self;
      }, py::arg("new_state"))
      .def_property_readonly("device", [](Generator& g) {
        py::object device = py::module_::import("ember").attr("device");
        return g.cuda_index < 0 ? device("cpu") : device("cuda", g.cuda_index);
      });

  m.attr("default_generator") = borrowed_generator(default_generator());
  m.def("manual_seed", [](py::handle seed) {
    // Like torch.manual_seed: int(seed), so floats are truncated.
    py::object s = py::reinterpret_borrow<py::object>(seed);
    if (PyFloat_Check(seed.ptr())) {
      s = py::reinterpret_steal<py::object>(PyNumber_Long(seed.ptr()));
      if (!s) throw py::error_already_set();
    }
    const uint64_t value = to_seed(s, "manual_seed");
    default_generator().manual_seed(value);
    seed_all_cuda_generators(value);  // every device, as torch.manual_seed
    return borrowed_generator(default_generator());
  }, py::arg("seed"), "Seeds the default generator and returns it.");
  m.def("seed", []() {
    const uint64_t value = default_generator().seed();
    seed_all_cuda_generators(value);
    return value;
  }, "Seeds the default generators of every device non-deterministically and returns the seed.");
  // ember.cuda's random functions (ember/cuda/random.py)
  m.def("_cuda_default_generator", [](int index) {
    return borrowed_generator(cuda_default_generator(cuda::check_device_index(index)));
  });
  m.def("_cuda_seed_all", [](py::handle seed) {
    seed_all_cuda_generators(to_seed(seed, "manual_seed_all"));
  });
  m.def("initial_seed", []() { return default_generator().initial_seed(); });
  m.def("get_rng_state", []() { return wrap(state_tensor(default_generator().get_state())); });
  m.def("set_rng_state", [](py::handle state) { default_generator().set_state(state_bytes(state)); },
        py::arg("new_state"));

  // ---- factories ----
  m.def("rand", [](py::args args, py::kwargs kw) {
    Shape s = factory_shape(args, kw, "rand");
    Factory f = parse_factory(kw, "rand");
    Tensor t = factory_target(f, s, get_default_dtype(), "rand");
    uniform_(t, 0.0, 1.0, f.gen);
    return factory_result(f, t);
  });
  m.def("randn", [](py::args args, py::kwargs kw) {
    Shape s = factory_shape(args, kw, "randn");
    Factory f = parse_factory(kw, "randn");
    Tensor t = factory_target(f, s, get_default_dtype(), "randn");
    normal_(t, 0.0, 1.0, f.gen);
    return factory_result(f, t);
  });
  m.def("randint", [](py::args args, py::kwargs kw) {
    // randint(high, size) or randint(low, high, size); any of them by keyword.
    py::object low = pop_kw(kw, "low"), high = pop_kw(kw, "high"), size = pop_kw(kw, "size");
    std::vector<py::object> pos;
    for (auto a : args) pos.push_back(py::reinterpret_borrow<py::object>(a));
    if (!size && !pos.empty()) size = pos.back(), pos.pop_back();
    if (pos.size() == 2 && !low && !high) low = pos[0], high = pos[1];
    else if (pos.size() == 1 && !high) high = pos[0];
    else if (pos.size() == 1 && high && !low) low = pos[0];
    else if (!pos.empty()) throw py::type_error("randint() received an invalid combination of arguments");
    if (!high || !size)
      throw py::type_error("randint() missing required arguments: expected randint(low=0, high, size)");
    Factory f = parse_factory(kw, "randint");
    const int64_t lo = low ? to_int(low, "randint", "low") : 0;
    const int64_t hi = to_int(high, "randint", "high");
    Tensor t = factory_target(f, to_shape(size), ScalarType::Int64, "randint");
    random_(t, lo, hi, f.gen);
    return factory_result(f, t);
  });
  m.def("randperm", [](py::handle n, py::kwargs kw) {
    Factory f = parse_factory(kw, "randperm");
    const int64_t nn = to_int(n, "randperm", "n");
    ScalarType dt = f.dtype;
    if (!f.out.is_none() && dt == ScalarType::Undefined) dt = expect_tensor(f.out, "randperm", "out")->dtype;
    Tensor r = randperm(nn, dt == ScalarType::Undefined ? ScalarType::Int64 : dt, f.gen);
    if (!f.out.is_none()) {
      Tensor o = factory_target(f, r->sizes, r->dtype, "randperm");
      copy_(o, r);
    }
    return factory_result(f, r);
  }, py::arg("n"));

  m.def("rand_like", [](const Tensor& x, py::kwargs kw) {
    Factory f = parse_factory(kw, "rand_like", x);
    Tensor t = like_target(x, f);
    uniform_(t, 0.0, 1.0, f.gen);
    return factory_result(f, t);
  }, py::arg("input"));
  m.def("randn_like", [](const Tensor& x, py::kwargs kw) {
    Factory f = parse_factory(kw, "randn_like", x);
    Tensor t = like_target(x, f);
    normal_(t, 0.0, 1.0, f.gen);
    return factory_result(f, t);
  }, py::arg("input"));
  m.def("randint_like", [](const Tensor& x, py::args args, py::kwargs kw) {
    py::object low = pop_kw(kw, "low"), high = pop_kw(kw, "high");
    if (args.size() == 2 && !low && !high) low = args[0], high = args[1];
    else if (args.size() == 1 && !high) high = args[0];
    else if (args.size() == 1 && high && !low) low = args[0];
    else if (args.size() != 0) throw py::type_error("randint_like() received an invalid combination of arguments");
    if (!high) throw py::type_error("randint_like() missing required argument 'high'");
    Factory f = parse_factory(kw, "randint_like", x);
    Tensor t = like_target(x, f);
    random_(t, low ? to_int(low, "randint_like", "low") : 0, to_int(high, "randint_like", "high"), f.gen);
    return factory_result(f, t);
  }, py::arg("input"));

  m.def("normal", &normal_fn);
  m.def("bernoulli", [](py::handle input, py::handle p, py::handle gen, py::handle out) {
    return bernoulli_call(input, p, gen, out);
  }, py::arg("input"), py::arg("p") = py::none(), py::kw_only(), py::arg("generator") = py::none(),
     py::arg("out") = py::none());
  m.def("multinomial", [](py::handle input, py::handle n, bool replacement, py::handle gen, py::handle out) {
    return multinomial_call(input, n, replacement, gen, out);
  }, py::arg("input"), py::arg("num_samples"), py::arg("replacement") = false, py::kw_only(),
     py::arg("generator") = py::none(), py::arg("out") = py::none());

  // ---- in-place samplers: the autograd hook's functions, then the Tensor methods ----
  m.def("_uniform_", &uniform_call, py::arg("input"), py::arg("from") = 0.0, py::arg("to") = 1.0,
        py::kw_only(), py::arg("generator") = py::none());
  m.def("_normal_", &normal_call, py::arg("input"), py::arg("mean") = 0.0, py::arg("std") = 1.0,
        py::kw_only(), py::arg("generator") = py::none());
  m.def("_random_", &random_call, py::arg("input"), py::arg("from") = py::none(),
        py::arg("to") = py::none(), py::kw_only(), py::arg("generator") = py::none());
  m.def("_bernoulli_", &bernoulli_inplace_call, py::arg("input"), py::arg("p") = 0.5, py::kw_only(),
        py::arg("generator") = py::none());
  m.def("_exponential_", &exponential_call, py::arg("input"), py::arg("lambd") = 1.0, py::kw_only(),
        py::arg("generator") = py::none());

  defm("uniform_", py::cpp_function(&uniform_call, py::name("uniform_"), py::is_method(cls),
                                    py::arg("from") = 0.0, py::arg("to") = 1.0, py::kw_only(),
                                    py::arg("generator") = py::none()));
  defm("normal_", py::cpp_function(&normal_call, py::name("normal_"), py::is_method(cls),
                                   py::arg("mean") = 0.0, py::arg("std") = 1.0, py::kw_only(),
                                   py::arg("generator") = py::none()));
  // random_(to) with one positional argument, like PyTorch.
  defm("random_", py::cpp_function([](py::handle self, py::args args, py::kwargs kw) {
    py::object from = pop_kw(kw, "from"), to = pop_kw(kw, "to"), gen = pop_kw(kw, "generator");
    if (kw.size() != 0)
      throw py::type_error(str_cat("random_() got an unexpected keyword argument '",
                                   std::string(py::str(kw.begin()->first)), "'"));
    if (args.size() == 1 && !from && !to) to = args[0];
    else if (args.size() == 1 && to && !from) from = args[0];
    else if (args.size() == 2 && !from && !to) from = args[0], to = args[1];
    else if (args.size() != 0) throw py::type_error("random_() received an invalid combination of arguments");
    return random_call(self, from ? from : py::none(), to ? to : py::none(), gen ? gen : py::none());
  }, py::name("random_"), py::is_method(cls)));
  defm("bernoulli_", py::cpp_function(&bernoulli_inplace_call, py::name("bernoulli_"),
                                      py::is_method(cls), py::arg("p") = 0.5, py::kw_only(),
                                      py::arg("generator") = py::none()));
  defm("exponential_", py::cpp_function(&exponential_call, py::name("exponential_"),
                                        py::is_method(cls), py::arg("lambd") = 1.0, py::kw_only(),
                                        py::arg("generator") = py::none()));
  defm("bernoulli", py::cpp_function([](py::handle self, py::handle p, py::handle gen) {
    return bernoulli_call(self, p, gen, py::none());
  }, py::name("bernoulli"), py::is_method(cls), py::arg("p") = py::none(), py::kw_only(),
     py::arg("generator") = py::none()));
  defm("multinomial", py::cpp_function([](py::handle self, py::handle n, bool replacement, py::handle gen) {
    return multinomial_call(self, n, replacement, gen, py::none());
  }, py::name("multinomial"), py::is_method(cls), py::arg("num_samples"),
     py::arg("replacement") = false, py::kw_only(), py::arg("generator") = py::none()));
}

}  // namespace ember::pyb
