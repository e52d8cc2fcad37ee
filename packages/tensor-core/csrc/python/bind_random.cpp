// bind_random.cpp: random numbers for Python: the Generator class and the default generator's
// module functions (manual_seed, seed, initial_seed, get_rng_state, set_rng_state), bound by hand
// (they are no tensor ops); and, declared in the op registry with torch's signatures, the
// sampling factories (rand, randn, randint, randperm, *_like, normal, bernoulli, multinomial) and
// the in-place samplers (uniform_, normal_, random_, bernoulli_, exponential_). Every sampler
// takes `generator=`.
#include <cstring>
#include <map>
#include <optional>

#include "ops/linalg.h"  // resize_output
#include "cuda/cuda_context.h"
#include "ops/random_ops.h"
#include "python/pyutils.h"
#include "python/registry.h"

using namespace pybind11::literals;

namespace ember::pyb {
namespace {

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

// The registry checked the class name; this refuses another library's Generator.
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
  bool pin_memory = false;
  py::handle out = py::none();
  py::handle generator = py::none();
  Generator* gen = nullptr;
  Device device{};
};

// The factory keywords of a call (registry.h) and its generator. `like`: the input of a *_like
// function, whose device the draw is for unless device= is given. Numbers for another device are
// drawn on the CPU, then copied: the same seed gives the same numbers on every device.
Factory parse_factory(const Args& a, const char* op, const Tensor& like = nullptr) {
  const FactoryKeywords k = factory_keywords(a, op);
  Factory f;
  f.dtype = k.dtype, f.requires_grad = k.requires_grad, f.pin_memory = k.pin_memory;
  f.out = k.out, f.device = k.device, f.generator = k.generator;
  f.gen = generator_for(to_generator(f.generator, op),
                        like && !k.device_given ? like->device() : f.device);
  return f;
}

// The tensor a factory fills: `out` (dtype checked, resized) or a new one.
Tensor factory_target(const Factory& f, const Shape& shape, ScalarType default_dtype, const char* op) {
  if (!f.out.is_none()) {
    Tensor o = to_tensor(f.out);  // (factory_keywords checked dtype= against its dtype)
    check_out_no_grad(o, op);
    for (auto s : shape)
      EMBER_CHECK(s >= 0, std::runtime_error, "Trying to create tensor with negative dimension ", s, ": ",
                  shape_str(shape));
    resize_output(o, shape);
    return o;
  }
  return empty(shape, f.dtype == ScalarType::Undefined ? default_dtype : f.dtype);
}

py::object factory_result(const Factory& f, const Tensor& t) {
  if (!f.out.is_none()) {
    py::object r = py::reinterpret_borrow<py::object>(f.out);
    if (f.requires_grad) r.attr("requires_grad_")(true);  // on out, as torch's (ints refuse)
    return r;
  }
  py::object r = py::cast(f.device.is_cpu() ? t : to_device_copy(t, f.device, false));
  if (f.pin_memory) r = core_fn("_pin_memory")(r);  // needs CUDA, as torch's
  if (f.requires_grad) r.attr("requires_grad_")(true);
  return r;
}

// `*_like`: a tensor with input's shape and (unless dtype= says otherwise) dtype.
Tensor like_target(const Tensor& x, const Factory& f) {
  return empty_like(x, f.dtype == ScalarType::Undefined ? x->dtype : f.dtype);
}

// A `float` parameter's value (a number or a 0-d tensor), converted checked.
double to_double(py::handle h) { return real_value(h); }

// ---- in-place samplers: autograd sees them when self requires grad ----
template <typename Fn>
py::object inplace(const char* name, py::handle self, py::tuple args, py::dict kw, Fn&& run) {
  Tensor t = to_tensor(self);
  generator_for(to_generator(kw["generator"], name), t->device());  // torch's device check
  if (t->requires_grad && grad_enabled()) {
    std::string core = std::string("_") + name;
    return redispatch(name, core_fn(core.c_str()), args, kw);
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
                   const int64_t f = from.is_none() ? 0 : as_int(from);
                   std::optional<int64_t> hi;
                   if (!to.is_none()) hi = as_int(to);
                   random_(t, f, hi, g);
                 });
}

// ---- functional samplers ----
// A sampler's result written into out= as the CPU paths below do (resized and copied).
py::object sampled_out(const char* op, const Tensor& r, py::handle outh) {
  Tensor o = to_tensor(outh);
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
  Tensor x = to_tensor(input);
  Generator* g = generator_for(to_generator(gen, "bernoulli"), x->device());
  if (needs_dispatch(x) || (is_tensor(p) && needs_dispatch(to_tensor(p)))) {
    if (!outh.is_none() && (needs_grad(x) || (is_tensor(p) && needs_grad(to_tensor(p)))))
      throw std::runtime_error("bernoulli(): functions with out=... arguments don't support "
                               "automatic differentiation, but one of the arguments requires grad.");
    py::object r = redispatch("bernoulli", core_fn("bernoulli"),
                              p.is_none() ? py::tuple(py::make_tuple(input)) : py::tuple(py::make_tuple(input, p)),
                              py::dict("generator"_a = generator_arg(gen, g)));
    return outh.is_none() ? r : sampled_out("bernoulli", to_tensor(r), outh);
  }
  Tensor r = empty(x->sizes, x->dtype);
  if (p.is_none()) bernoulli_(r, x, g);
  else if (is_tensor(p)) bernoulli_(r, to_tensor(p), g);
  else bernoulli_(r, to_double(p), g);
  if (!outh.is_none()) {
    Tensor o = to_tensor(outh);
    check_out_no_grad(o, "bernoulli");
    resize_output(o, r->sizes);
    copy_(o, r);
    return py::reinterpret_borrow<py::object>(outh);
  }
  return wrap(r);
}

py::object multinomial_call(py::handle input, py::handle n, bool replacement, py::handle gen,
                            py::handle outh) {
  Tensor x = to_tensor(input);
  Generator* g = generator_for(to_generator(gen, "multinomial"), x->device());
  // out='s dtype first, as torch: before drawing (num_samples may ask for gigabytes)
  if (!outh.is_none())
    EMBER_CHECK(to_tensor(outh)->dtype == ScalarType::Int64, std::runtime_error,
                "multinomial expects Long tensor out, got: ", type_name(to_tensor(outh)->dtype));
  if (on_device(x)) {
    // Numbers for CUDA tensors are drawn on the host: the CPU kernel on a host copy of the (small)
    // probabilities, with the device's generator, so a seed gives the CPU's samples.
    Tensor r = multinomial(to_device_copy(x, Device{}, false), as_int(n),
                           replacement, g);
    r = to_device_copy(r, x->device(), false);
    if (outh.is_none()) return wrap(r);
    return sampled_out("multinomial", r, outh);
  }
  Tensor r = multinomial(x, as_int(n), replacement, g);
  if (!outh.is_none()) {
    Tensor o = to_tensor(outh);
    resize_output(o, r->sizes);
    copy_(o, r);
    return py::reinterpret_borrow<py::object>(outh);
  }
  return wrap(r);
}

// normal's four forms: (Tensor mean, Tensor std), (Tensor mean, float std=1), (float mean,
// Tensor std), and (float mean, float std, size) with the factory keywords.
py::object normal_sample(const Args& a) {
  py::handle mean = a[0], std = a[1];
  const bool mt = is_tensor(mean), st = is_tensor(std);
  // With tensor parameters the draw is for their device (the generator's default and check).
  Factory f = parse_factory(a, "normal", mt ? to_tensor(mean) : st ? to_tensor(std) : nullptr);
  if (a.overload() == 3) {  // two numbers and a size: a filled factory
    Tensor t = factory_target(f, a.ints(2), get_default_dtype(), "normal");
    normal_(t, to_double(mean), to_double(std), f.gen);
    return factory_result(f, t);
  }
  if ((mt && needs_dispatch(to_tensor(mean))) || (st && needs_dispatch(to_tensor(std)))) {
    if (!f.out.is_none() && ((mt && needs_grad(to_tensor(mean))) || (st && needs_grad(to_tensor(std)))))
      throw std::runtime_error("normal(): functions with out=... arguments don't support "
                               "automatic differentiation, but one of the arguments requires grad.");
    py::object r = redispatch("normal", core_fn("normal"), py::make_tuple(mean, std),
                              py::dict("generator"_a = generator_arg(f.generator, f.gen)));
    return f.out.is_none() ? r : sampled_out("normal", to_tensor(r), f.out);
  }
  // torch draws into a floating (or complex) out= in its dtype, whatever the parameters' dtype;
  // into a complex out= a complex draw scaled by a real std
  const ScalarType out_dt = f.out.is_none() ? ScalarType::Undefined : to_tensor(f.out)->dtype;
  const bool complex_out = is_complex(out_dt);
  auto param = [&](py::handle v, bool is_std) {
    const Tensor t = to_tensor(v);
    if (complex_out) return to_dtype(t, is_std ? to_real_type(out_dt) : out_dt);
    return is_floating(out_dt) ? to_dtype(t, out_dt) : t;
  };
  // (checked before std takes out's dtype, which would drop its imaginary parts)
  EMBER_CHECK(!st || !is_complex(to_tensor(std)->dtype), std::runtime_error,
              "normal expects standard deviation to be non-complex");
  // An integer or bool out=: torch draws into out with its floating-only kernel, then scales by
  // std and adds the mean in place, so only an empty draw gets as far as those two
  if (!f.out.is_none() && !is_floating(out_dt) && !is_complex(out_dt)) {
    const Shape shape = mt && st ? broadcast_shapes(to_tensor(mean)->sizes, to_tensor(std)->sizes)
                        : mt     ? to_tensor(mean)->sizes
                                 : to_tensor(std)->sizes;
    if (checked_numel(shape) > 0)
      throw NotImplementedError(str_cat("\"normal_kernel_cpu\" not implemented for '",
                                        type_name(out_dt), "'"));
    if (!mt) check_scalar_fits(Scalar::from_double(to_double(mean)), out_dt);
    if (st)
      throw std::runtime_error(str_cat("result type ", torch_type_name(to_tensor(std)->dtype),
                                       " can't be cast to the desired output type ",
                                       torch_type_name(out_dt)));
  }
  Tensor r;
  if (mt && st) r = normal(param(mean, false), param(std, true), f.gen);
  else if (mt) r = normal(param(mean, false), to_double(std), f.gen);
  else if (complex_out)  // (the mean as a complex 0-d tensor: the draw is complex)
    r = normal(scalar_tensor(Scalar::from_double(to_double(mean)), out_dt), param(std, true), f.gen);
  else r = normal(to_double(mean), param(std, false), f.gen);
  if (!f.out.is_none()) {
    Tensor o = to_tensor(f.out);
    check_out_no_grad(o, "normal");
    check_inplace_writable(o, "normal");  // (an expanded out: torch's overlap error)
    resize_output(o, r->sizes);
    copy_(o, r);
    return py::reinterpret_borrow<py::object>(f.out);
  }
  return wrap(r);
}

}  // namespace

void register_random(py::module_& m) {

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

  // ---- the sampling factories ----
  const char* R = "random";
  const std::string factory = kFactoryParams;
  const std::string gen = "Generator? generator=None";
  for (bool is_normal : {false, true}) {
    const std::string name = is_normal ? "randn" : "rand";
    def_op(m, {.name = name,
               .signatures = {name + "(int[] size, *, " + gen + ", Tensor? out=None, " + factory +
                              ") -> Tensor"},
               .family = R, .variants = kFunction, .hand_off = false,
               .impl = [is_normal, name](const Args& a) {
                 Factory f = parse_factory(a, name.c_str());
                 Tensor t = factory_target(f, a.ints(0), get_default_dtype(), name.c_str());
                 if (is_normal) normal_(t, 0.0, 1.0, f.gen);
                 else uniform_(t, 0.0, 1.0, f.gen);
                 return factory_result(f, t);
               }});
    const std::string like = name + "_like";
    def_op(m, {.name = like,
               .signatures = {like + "(Tensor input, *, " + gen + ", Any? memory_format=None, " +
                              factory + ") -> Tensor"},
               .family = R, .variants = kFunction, .hand_off = false,
               .impl = [is_normal, like](const Args& a) {
                 const Tensor x = a.tensor(0);
                 Factory f = parse_factory(a, like.c_str(), x);
                 Tensor t = like_target(x, f);
                 if (is_normal) normal_(t, 0.0, 1.0, f.gen);
                 else uniform_(t, 0.0, 1.0, f.gen);
                 return factory_result(f, t);
               }});
  }
  // randint(high, size) or randint(low, high, size)
  def_op(m, {.name = "randint",
             .signatures = {"randint(SymInt high, int[] size, *, " + gen + ", Tensor? out=None, " +
                                factory + ") -> Tensor",
                            "randint(SymInt low, SymInt high, int[] size, *, " + gen +
                                ", Tensor? out=None, " + factory + ") -> Tensor"},
             .family = R, .variants = kFunction, .hand_off = false,
             .impl = [](const Args& a) {
               const int k = a.overload();  // 1: low given
               Factory f = parse_factory(a, "randint");
               Tensor t = factory_target(f, a.ints(k + 1), ScalarType::Int64, "randint");
               random_(t, k ? a.integer(0) : 0, a.integer(k), f.gen);
               return factory_result(f, t);
             }});
  def_op(m, {.name = "randint_like",
             // torch's high as a tensor (a 0-d one of any dtype, read as int) comes first: a
             // one-element tensor of another shape is refused rather than read as a SymInt
             .signatures = {"randint_like(Tensor input, Tensor high, *, " + gen +
                                ", Any? memory_format=None, " + factory + ") -> Tensor",
                            "randint_like(Tensor input, SymInt high, *, " + gen +
                                ", Any? memory_format=None, " + factory + ") -> Tensor",
                            "randint_like(Tensor input, SymInt low, SymInt high, *, " + gen +
                                ", Any? memory_format=None, " + factory + ") -> Tensor"},
             .family = R, .variants = kFunction, .hand_off = false,
             .impl = [](const Args& a) {
               const int k = a.overload();
               const Tensor x = a.tensor(0);
               Factory f = parse_factory(a, "randint_like", x);  // (torch's parser checks first)
               int64_t low = 0, high;
               if (k == 0) {
                 const Tensor h = a.tensor(1);
                 EMBER_CHECK(h->dim() == 0 && h->device().is_cpu(), std::runtime_error,
                             "high must be a scalar tensor and on CPU");
                 high = to_scalar(a[1]).to_int();
               } else {
                 low = k == 2 ? a.integer(1) : 0, high = a.integer(k);
               }
               Tensor t = like_target(x, f);
               random_(t, low, high, f.gen);
               return factory_result(f, t);
             }});
  def_op(m, {.name = "randperm",
             .signatures = {"randperm(SymInt n, *, " + gen + ", Tensor? out=None, " + factory +
                            ") -> Tensor"},
             .family = R, .variants = kFunction, .hand_off = false,
             .impl = [](const Args& a) {
               Factory f = parse_factory(a, "randperm");
               ScalarType dt = f.dtype;  // int64 unless dtype= or out= says otherwise
               if (!f.out.is_none() && dt == ScalarType::Undefined) dt = to_tensor(f.out)->dtype;
               Tensor r = randperm(a.integer(0), dt == ScalarType::Undefined ? ScalarType::Int64 : dt,
                                   f.gen);
               if (!f.out.is_none()) copy_(factory_target(f, r->sizes, r->dtype, "randperm"), r);
               return factory_result(f, r);
             }});

  def_op(m, {.name = "normal",
             .signatures = {"normal(Tensor mean, Tensor std, *, " + gen + ", Tensor? out=None) -> Tensor",
                            "normal(Tensor mean, float std=1, *, " + gen + ", Tensor? out=None) -> Tensor",
                            "normal(float mean, Tensor std, *, " + gen + ", Tensor? out=None) -> Tensor",
                            "normal(float mean, float std, int[] size, *, " + gen +
                                ", Tensor? out=None, " + factory + ") -> Tensor"},
             .family = R, .variants = kFunction, .hooked = true, .hand_off = false,
             .impl = &normal_sample});
  // bernoulli(input): p = input's values; bernoulli(input, p): a number p
  def_op(m, {.name = "bernoulli",
             .signatures = {"bernoulli(Tensor input, *, " + gen + ", Tensor? out=None) -> Tensor",
                            "bernoulli(Tensor input, float p, *, " + gen + ") -> Tensor"},
             .family = R, .hooked = true, .hand_off = false,
             .impl = [](const Args& a) {
               if (a.overload() == 0) return bernoulli_call(a[0], py::none(), a[1], a.out());
               // p a float (a 0-d tensor too, as torch's parser reads it)
               return bernoulli_call(a[0], py::float_(a.real(1)), a[2], py::none());
             }});
  def_op(m, {.name = "multinomial",
             .signatures = {"multinomial(Tensor input, SymInt num_samples, bool replacement=False, *, " +
                            gen + ", Tensor? out=None) -> Tensor"},
             .family = R, .hand_off = false,
             .impl = [](const Args& a) {
               return multinomial_call(a[0], a[1], a.flag(2), a[3], a.out());
             }});

  // ---- the in-place samplers: Tensor.<name>_ and ember._C._<name>_, the function the autograd
  // hook reruns (it keeps the forms the hook is given: random_'s from/to may be None) ----
  auto sampler = [&](const std::string& name, std::vector<std::string> forms,
                     std::function<py::object(const Args&)> impl) {
    for (bool method : {true, false}) {
      std::vector<std::string> sigs;
      for (const auto& params : forms)
        sigs.push_back((method ? name : "_" + name) + "(Tensor input" + params + ", *, " + gen +
                       ") -> Tensor");
      def_op(m, {.name = method ? name : "_" + name, .signatures = sigs, .family = R,
                 .variants = method ? kMethod : kFunction, .hooked = true, .hand_off = false,
                 .impl = impl});
    }
  };
  sampler("uniform_", {", float from=0, float to=1"},
          [](const Args& a) { return uniform_call(a[0], a[1], a[2], a[3]); });
  sampler("normal_", {", float mean=0, float std=1"},
          [](const Args& a) { return normal_call(a[0], a[1], a[2], a[3]); });
  sampler("exponential_", {", float lambd=1"},
          [](const Args& a) { return exponential_call(a[0], a[1], a[2]); });
  sampler("bernoulli_", {", Tensor p", ", float p=0.5"},
          [](const Args& a) { return bernoulli_inplace_call(a[0], a[1], a[2]); });
  // random_(): the dtype's range; random_(to); random_(from, to) (to None: up to the dtype's max)
  for (bool method : {true, false}) {
    const std::string name = method ? "random_" : "_random_";
    const std::vector<std::string> sigs =
        method ? std::vector<std::string>{name + "(Tensor input, *, " + gen + ") -> Tensor",
                                          name + "(Tensor input, int from, int? to, *, " + gen + ") -> Tensor",
                                          name + "(Tensor input, int to, *, " + gen + ") -> Tensor"}
               : std::vector<std::string>{name + "(Tensor input, int? from=None, int? to=None, *, " +
                                          gen + ") -> Tensor"};
    def_op(m, {.name = name, .signatures = sigs, .family = R,
               .variants = method ? kMethod : kFunction, .hooked = true, .hand_off = false,
               .impl = [method](const Args& a) {
                 const py::handle none = py::none();
                 if (!method || a.overload() == 1) return random_call(a[0], a[1], a[2], a[3]);
                 if (a.overload() == 2) return random_call(a[0], none, a[1], a[2]);
                 return random_call(a[0], none, none, a[1]);
               }});
  }
}

}  // namespace ember::pyb
