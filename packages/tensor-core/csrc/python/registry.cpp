// registry.cpp: see registry.h. The generic binding of a registered op: parse and check the
// arguments against its schemas (torch's TypeErrors), hand the call to the autograd or device
// hook when an input requires grad or lives on a device, else run the row's `impl`.
#include "python/registry.h"

#include <array>
#include <cctype>
#include <cmath>
#include <cstring>
#include <deque>
#include <optional>
#include <set>
#include <string_view>
#include <unordered_map>
#include <utility>

namespace ember::pyb {
namespace {

std::deque<OpDef>& table() {
  // A deque: rows never move, the bindings hold pointers. Leaked: the rows hold Python objects
  // (their defaults), which must not be released after the interpreter has gone.
  static auto* ops = new std::deque<OpDef>();
  return *ops;
}
std::vector<const OpDef*>& rows() {
  static std::vector<const OpDef*> r;
  return r;
}

// ---- defaults: the Python literals a schema writes ----

py::object literal(const std::string& text, const std::string& schema) {
  const std::string t = text;
  if (t == "None") return py::none();
  if (t == "True") return py::bool_(true);
  if (t == "False") return py::bool_(false);
  if (t.size() >= 2 && (t[0] == '\'' || t[0] == '"') && t.back() == t[0])
    return py::str(t.substr(1, t.size() - 2));
  if (t.size() >= 2 && t[0] == '[' && t.back() == ']') {
    py::list items;
    std::string cur;
    for (char c : t.substr(1, t.size() - 2)) {
      if (c == ',') {
        items.append(literal(cur, schema));
        cur.clear();
      } else if (!std::isspace(static_cast<unsigned char>(c))) {
        cur += c;
      }
    }
    if (!cur.empty()) items.append(literal(cur, schema));
    return py::tuple(items);
  }
  try {
    size_t used = 0;
    if (t.find_first_of(".eEn") == std::string::npos) {
      const long long v = std::stoll(t, &used);
      if (used == t.size()) return py::int_(v);
    } else {
      if (t == "inf") return py::float_(INFINITY);
      if (t == "-inf") return py::float_(-INFINITY);
      const double v = std::stod(t, &used);
      if (used == t.size()) return py::float_(v);
    }
  } catch (const std::exception&) {
  }
  throw std::invalid_argument("malformed default '" + text + "' in op schema '" + schema + "'");
}

// ---- argument checks ----

bool is_dtype_like(py::handle h) {
  PyObject* p = h.ptr();
  if (p == reinterpret_cast<PyObject*>(&PyFloat_Type) ||
      p == reinterpret_cast<PyObject*>(&PyLong_Type) || p == reinterpret_cast<PyObject*>(&PyBool_Type))
    return true;
  if (py::isinstance<DType>(h)) return true;
  try {  // NumPy dtypes and scalar types
    return (py::hasattr(h, "dtype") || py::hasattr(h, "kind")) &&
           to_dtype(h) != ScalarType::Undefined;
  } catch (const std::exception&) {
    return false;
  }
}

// torch's parser type-checks an int list's first element (a bool is refused there) and then
// unpacks the others as Python ints, a bool among them (ember._shape._int_list does the same)
bool int_list_element(py::handle item, Py_ssize_t position) {
  return is_int_list_item(item) || (position > 0 && PyBool_Check(item.ptr()));
}

bool is_int_sequence(py::handle h) {
  PyObject* p = h.ptr();
  if (!PyList_Check(p) && !PyTuple_Check(p)) return false;
  Py_ssize_t j = 0;
  for (py::handle item : py::reinterpret_borrow<py::sequence>(h))
    if (!int_list_element(item, j++)) return false;
  return true;
}

bool matches(const Param& p, py::handle v) {
  PyObject* o = v.ptr();
  if (o == Py_None) return p.optional || p.type == ArgType::Any;
  switch (p.type) {
    case ArgType::Tensor: return is_tensor(v);
    case ArgType::TensorList: {
      if (!PyList_Check(o) && !PyTuple_Check(o)) return false;
      for (py::handle item : py::reinterpret_borrow<py::sequence>(v))
        if (!is_tensor(item)) return false;
      return true;
    }
    case ArgType::Int: return is_int_like(v);
    case ArgType::SymInt: return is_int_list_item(v);
    case ArgType::IntList: return (p.list_size > 0 && is_int_list_item(v)) || is_int_sequence(v);
    // torch's double: any Python number (bool included) or a 0-d tensor that needs no grad
    case ArgType::Float:
      return is_number(v) || is_int_like(v) ||
             (is_tensor(v) && to_tensor(v)->dim() == 0 && !to_tensor(v)->requires_grad);
    case ArgType::Bool: return PyBool_Check(o) || (is_number(v) && type_of(v) == "bool_");
    case ArgType::Scalar: return is_number(v) || (is_tensor(v) && to_tensor(v)->dim() == 0);
    case ArgType::ScalarType: return is_dtype_like(v);
    case ArgType::Device:
      return PyUnicode_Check(o) || (PyLong_Check(o) && !PyBool_Check(o)) || type_of(v) == "device";
    case ArgType::String: return PyUnicode_Check(o);
    case ArgType::Any: return true;
    case ArgType::TensorOrScalar: return is_tensor(v) || is_number(v);
    case ArgType::Generator: return type_of(v) == "Generator";
    case ArgType::Layout: return type_of(v) == "layout";  // ember.layout (ember.strided's type)
  }
  return false;
}

std::string positional_count_text(const Schema& s, bool method) {
  int lo = 0;
  for (const auto& p : s.params)
    if (!p.keyword_only && p.required()) ++lo;
  int hi = s.positional();
  if (method) lo = std::max(0, lo - 1), hi = std::max(0, hi - 1);
  if (lo == hi) return str_cat(hi, " positional argument", hi == 1 ? "" : "s");
  return str_cat("from ", lo, " to ", hi, " positional arguments");
}

// torch's NumPy spellings of some parameter names (sum(x, axis=0, keepdims=True)): used when the
// op has no parameter of that name and the parameter they stand for is not given otherwise.
const char* numpy_alias_of(const char* kname) {
  static const char* const kAliases[][2] = {
      {"axis", "dim"}, {"keepdims", "keepdim"}, {"x", "input"}, {"a", "input"}, {"x1", "input"},
      {"x2", "other"}};
  for (const auto& alias : kAliases)
    if (std::strcmp(alias[0], kname) == 0) return alias[1];
  return nullptr;
}

bool keyword_given(PyObject* kwnames, const char* name) {
  const Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
  for (Py_ssize_t j = 0; j < nkw; ++j)
    if (std::strcmp(PyUnicode_AsUTF8(PyTuple_GET_ITEM(kwnames, j)), name) == 0) return true;
  return false;
}

// torch's message for a list argument with an element of the wrong type; "" when the value is
// no list at all (the caller's "must be ..., not ..." message then).
std::string list_element_error(const OpDef& op, const Param& p, py::handle v, int position,
                               const std::string& where) {
  if (!PyList_Check(v.ptr()) && !PyTuple_Check(v.ptr())) return "";
  Py_ssize_t j = 0;
  for (py::handle item : py::reinterpret_borrow<py::sequence>(v)) {
    if (p.type == ArgType::TensorList && !is_tensor(item))
      return str_cat("expected Tensor as element ", j, " in argument ", position, ", but got ",
                     type_of(item));
    if (p.type == ArgType::IntList && !int_list_element(item, j))
      return str_cat(op.name, "(): argument '", p.name, "'", where,
                     " must be tuple of ints, but found element of type ", type_of(item),
                     " at pos ", j);
    ++j;
  }
  return "";
}

// Binds the call to schema `k`; on a mismatch returns false with torch's message in `*error`
// (when `error` is not null: an op with overloads reports them all instead, so a call that fails
// a form on its way to the next pays for no message).
namespace {
// Where a schema's factory keywords are (-1: absent), found once per schema: the lookup by name
// would otherwise cost a call a few hundred nanoseconds.
struct FactoryPositions {
  int dtype, layout, memory_format, device, requires_grad, pin_memory, generator;
};
const FactoryPositions& factory_positions(const Schema& s) {
  static auto* cache = new std::unordered_map<const Schema*, FactoryPositions>();  // leaked
  auto it = cache->find(&s);
  if (it == cache->end())
    it = cache->emplace(&s, FactoryPositions{s.index_of("dtype"), s.index_of("layout"),
                                             s.index_of("memory_format"), s.index_of("device"),
                                             s.index_of("requires_grad"), s.index_of("pin_memory"),
                                             s.index_of("generator")})
             .first;
  return it->second;
}
}  // namespace

namespace {
// The checks of the factory keywords that both factory_keywords and the parser's early pass make.
// (the schema's Any lets torch's TypeError for a memory_format of another type be ours)
void check_memory_format_type(std::string_view op, PyObject* format) {
  if (type_of(format) != "memory_format")
    throw py::type_error(str_cat(op, "(): argument 'memory_format' must be ember.memory_format, "
                                 "not ", Py_TYPE(format)->tp_name));
}

Device resolve_device_argument(std::string_view op, PyObject* device) {
  const Device d = to_device(device);
  return resolve_device(d, str_cat(op, "(): device '", d.str(), "'"));
}

void check_dtype_matches_out(ScalarType want, ScalarType out_dtype) {
  EMBER_CHECK(want == ScalarType::Undefined || want == out_dtype, std::runtime_error, "dtype ",
              torch_type_name(want), " does not match dtype of out parameter (",
              torch_type_name(out_dtype), ")");
}

// torch's parser refuses a memory_format of another type (a TypeError) and reads the device (its
// TensorOptions) before it converts its Scalars: their errors come before a Scalar's overflow.
void check_options_before_scalars(const Schema& s, PyObject* const* values, unsigned given) {
  const FactoryPositions& at = factory_positions(s);
  const auto present = [&](int i) { return i >= 0 && (given & (1u << i)) && values[i] != Py_None; };
  if (present(at.memory_format)) check_memory_format_type(s.name, values[at.memory_format]);
  if (present(at.device)) (void)resolve_device_argument(s.name, values[at.device]);
  if (present(at.dtype) && present(s.out_index) && is_tensor(values[s.out_index]))
    check_dtype_matches_out(to_dtype(values[at.dtype]), to_tensor(values[s.out_index])->dtype);
}
}  // namespace

bool bind_call(const OpDef& op, size_t k, PyObject* self, PyObject* const* args, Py_ssize_t nargs,
               PyObject* kwnames, Args& a, std::string* error) {
  const Schema& s = op.schemas[k];
  const int n = static_cast<int>(s.params.size());
  const int offset = self ? 1 : 0;
  const std::vector<const char*>& names = op.names[k];
  PyObject* values[Args::kMaxParams] = {};
  unsigned given = 0;
  // torch's var-args int list: x.flip(0, 1) for x.flip((0, 1)), where an int list is the only
  // positional parameter (after self) and None is not one of its values (x.var(0, 1) is
  // torch's TypeError, not var over dims 0 and 1)
  py::object varargs;
  if (nargs >= 1 && s.positional() - offset == 1 && s.params[offset].type == ArgType::IntList &&
      !s.params[offset].optional && is_int_list_item(args[0]) &&
      (nargs > 1 || s.params[offset].list_size == 0)) {
    varargs = py::tuple(nargs);
    for (Py_ssize_t i = 0; i < nargs; ++i)
      PyTuple_SET_ITEM(varargs.ptr(), i, py::reinterpret_borrow<py::object>(args[i]).release().ptr());
  }
  const Py_ssize_t npos = varargs ? 1 : nargs;
  if (npos + offset > s.positional()) {
    if (error)
      *error = str_cat(op.name, "() takes ", positional_count_text(s, self != nullptr), " but ",
                    nargs, " were given");
    return false;
  }
  if (self) values[0] = self, given = 1;
  for (Py_ssize_t i = 0; i < npos; ++i) {
    values[i + offset] = varargs ? varargs.ptr() : args[i];
    given |= 1u << (i + offset);
  }
  const Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
  for (Py_ssize_t j = 0; j < nkw; ++j) {
    {
      PyObject* value = args[nargs + j];
      const char* kname = PyUnicode_AsUTF8(PyTuple_GET_ITEM(kwnames, j));
      int idx = -1;
      for (int i = 0; i < n; ++i)
        if (std::strcmp(names[i], kname) == 0) idx = i;
      if (const char* canonical = idx < 0 ? numpy_alias_of(kname) : nullptr) {
        const int c = s.index_of(canonical);
        if (c >= 0 && !(given & (1u << c)) && !keyword_given(kwnames, canonical)) idx = c;
      }
      // methods take no out= (torch's Tensor methods have none)
      if (idx < 0 || (self && (idx == 0 || std::strcmp(kname, "out") == 0))) {
        if (error) *error = str_cat(op.name, "() got an unexpected keyword argument '", kname, "'");
        return false;
      }
      if (given & (1u << idx)) {
        if (error) *error = str_cat(op.name, "() got multiple values for argument '", kname, "'");
        return false;
      }
      values[idx] = value;
      given |= 1u << idx;
    }
  }
  for (int i = 0; i < n; ++i) {
    const Param& p = s.params[i];
    if (!(given & (1u << i))) {
      if (p.required()) {
        if (error)
          *error = str_cat(op.name, "() missing 1 required positional arguments: \"", p.name, "\"");
        return false;
      }
      values[i] = op.defaults[k][i].ptr();
      continue;
    }
    if (!matches(p, values[i])) {
      if (!error) return false;
      // torch names the position only of an argument given by position
      const std::string where =
          i < offset + npos ? str_cat(" (position ", i + 1 - offset, ")") : "";
      *error = list_element_error(op, p, values[i], i - offset, where);
      if (error->empty())
        *error = str_cat(op.name, "(): argument '", p.name, "'", where, " must be ",
                        type_description(p.type), ", not ", type_of(values[i]));
      return false;
    }
  }
  // torch's parser converts its Scalar arguments as it reads them: a Python int beyond int64
  // and uint64 is its OverflowError before the op checks anything (to_scalar raises it).
  bool options_checked = false;
  for (int i = 0; i < n; ++i) {
    const ArgType t = s.params[i].type;
    PyObject* v = values[i];
    if ((given & (1u << i)) && (t == ArgType::Scalar || t == ArgType::TensorOrScalar) &&
        PyLong_Check(v) && !PyBool_Check(v)) {
      if (!options_checked) check_options_before_scalars(s, values, given), options_checked = true;
      (void)to_scalar(v);
    }
  }
  a.bind(&s, static_cast<int>(k), given, values);
  a.keep(std::move(varargs));
  return true;
}

std::string signature_of(const Schema& s) {  // "(Tensor input, int dim, ...)" for messages
  std::string r = "(";
  bool star = false;
  for (size_t i = 0; i < s.params.size(); ++i) {
    const Param& p = s.params[i];
    if (p.keyword_only && !star) r += "*, ", star = true;
    r += str_cat(type_in_schema(p.type), p.optional ? "?" : "", " ", p.name,
                 p.required() ? "" : " = " + p.default_text, i + 1 < s.params.size() ? ", " : "");
  }
  return r + ")";
}

// The leading parameters the hooks get by position: by default, the leading tensor ones.
int hook_positional(const OpDef& op, const Schema& s) {
  if (op.hook_positional >= 0)  // at most the schema's parameters (an overload may have fewer)
    return std::min(op.hook_positional, static_cast<int>(s.params.size()));
  int n = 0;
  while (n < static_cast<int>(s.params.size()) && !s.params[n].keyword_only &&
         (s.params[n].type == ArgType::Tensor || s.params[n].type == ArgType::TensorList))
    ++n;
  return n;
}

// The number of results of a schema that returns a tuple ("(Tensor values, Tensor indices)":
// 2), else 0.
int tuple_returns(const Schema& s) {
  if (s.returns.empty() || s.returns.front() != '(') return 0;
  int n = 1, depth = 0;
  for (char c : s.returns) {
    if (c == '(' || c == '[') ++depth;
    else if (c == ')' || c == ']') --depth;
    else if (c == ',' && depth == 1) ++n;
  }
  return n;
}

// torch's parser: an out= for a tuple of results has one tensor for each (checked before the
// op looks at anything else).
void check_out_count(const Args& a) {
  const Schema& s = a.schema();
  if (s.out_index < 0 || a.is_none(s.out_index) || s.params[s.out_index].type != ArgType::TensorList)
    return;
  const int want = tuple_returns(s);
  const py::handle out = a[s.out_index];
  if (want > 0 && (py::isinstance<py::list>(out) || py::isinstance<py::tuple>(out)) &&
      static_cast<int>(py::len(out)) != want)
    throw py::type_error(str_cat("expected tuple of ", want, " elements but got ", py::len(out)));
}

py::object call(const OpDef& op, PyObject* self, PyObject* const* args, Py_ssize_t nargs,
                PyObject* kwnames) {
  if (profiling_active()) {  // one event, whatever path the call takes (see pyutils.h)
    const Py_ssize_t lead = self ? 1 : 0;
    py::tuple positional(lead + nargs);
    if (self) positional[0] = py::reinterpret_borrow<py::object>(self);
    for (Py_ssize_t i = 0; i < nargs; ++i)
      positional[lead + i] = py::reinterpret_borrow<py::object>(args[i]);
    return call_profiled(op.name.c_str(), positional,
                         [&] { return call(op, self, args, nargs, kwnames); });
  }
  Args a = parse_call(op, self, args, nargs, kwnames);
  const Schema& s = a.schema();
  check_out_count(a);
  if (op.check) op.check(a);
  if (!op.hand_off) return op.impl(a);
  bool grad = false, device = false;
  const int out_index = s.out_index;
  for (int i = 0; i < static_cast<int>(s.params.size()); ++i) {
    if (i == out_index || a.is_none(i)) continue;
    if (s.params[i].type == ArgType::Tensor ||
        (s.params[i].type == ArgType::TensorOrScalar && is_tensor(a[i]))) {
      const Tensor t = a.tensor(i);
      grad |= op.hooked && needs_grad(t);
      device |= on_device(t);
    } else if (s.params[i].type == ArgType::TensorList) {
      for (const Tensor& t : a.tensors(i)) {
        grad |= op.hooked && needs_grad(t);
        device |= on_device(t);
      }
    }
  }
  // Inside an autocast region the ops ember.amp lists go through redispatch, which casts them.
  const bool cast = autocast_active() && autocast_listed(op.name.c_str());
  if (!grad && !(device && op.cuda == "ember.cuda") && !cast) return op.impl(a);
  // To a hook: the leading arguments by position, the others by keyword, out= written after.
  const int npos = hook_positional(op, s);
  py::tuple pargs(npos);
  py::dict kw;
  for (int i = 0; i < static_cast<int>(s.params.size()); ++i) {
    if (i == out_index) continue;
    py::object v = py::reinterpret_borrow<py::object>(a[i]);
    if (!a.is_none(i) && s.params[i].type == ArgType::IntList) v = py::tuple(py::cast(a.ints(i)));
    if (!a.is_none(i) && (s.params[i].type == ArgType::Int || s.params[i].type == ArgType::SymInt))
      v = py::int_(a.integer(i));
    if (!a.is_none(i) && s.params[i].type == ArgType::ScalarType) v = dtype_object(a.dtype(i));
    if (i < npos) pargs[i] = v;
    else kw[py::str(s.params[i].name)] = v;
  }
  py::handle out = a.out();
  const char* name = op.name.c_str();
  py::object fn = core_fn(name);
  if (s.returns.rfind('(', 0) == 0) return redispatch_pair_out(name, fn, pargs, kw, out);
  if (grad && !out.is_none()) out_with_grad(name);
  return redispatch_out(name, fn, pargs, kw, out);
}

}  // namespace

// ---- Args ----

std::vector<Tensor> Args::tensors(int i) const {
  std::vector<Tensor> r;
  for (py::handle item : py::reinterpret_borrow<py::sequence>(values_[i])) r.push_back(to_tensor(item));
  return r;
}

std::optional<int64_t> Args::opt_integer(int i) const {
  if (is_none(i)) return std::nullopt;
  return integer(i);
}

std::vector<int64_t> Args::ints(int i) const {
  py::handle v = values_[i];
  if (is_int_list_item(v)) {
    const int copies = std::max(1, schema_->params[i].list_size);
    return std::vector<int64_t>(copies, as_int(v));
  }
  std::vector<int64_t> r;
  for (py::handle item : py::reinterpret_borrow<py::sequence>(v)) r.push_back(as_int(item));
  return r;
}

OptDims Args::opt_ints(int i) const {
  if (is_none(i)) return std::nullopt;
  return ints(i);
}

double Args::real(int i) const {
  const Scalar s = to_scalar(values_[i]);  // (a complex 0-d tensor: torch's conversion error)
  EMBER_CHECK(!s.is_complex() || s.imag == 0.0, std::runtime_error,
              "value cannot be converted to type double without overflow");
  return s.to_double();
}

py::handle Args::out() const {
  return schema_->out_index < 0 ? py::handle(Py_None) : values_[schema_->out_index];
}

// ---- the table ----

Args parse_call(const OpDef& op, PyObject* self, PyObject* const* args, Py_ssize_t nargs,
                PyObject* kwnames) {
  Args a;
  std::string error;
  if (op.schemas.size() == 1) {
    if (bind_call(op, 0, self, args, nargs, kwnames, a, &error)) return a;
    throw py::type_error(error);
  }
  for (size_t k = 0; k < op.schemas.size(); ++k)
    if (!(self && op.schemas[k].function_only()) &&
        bind_call(op, k, self, args, nargs, kwnames, a, nullptr))
      return a;
  // torch's message for overloads: what was given, and every form.
  std::string got = "(";
  for (Py_ssize_t i = 0; i < nargs; ++i) got += str_cat(i ? ", " : "", type_of(args[i]));
  const Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
  for (Py_ssize_t j = 0; j < nkw; ++j)
    got += str_cat(got.size() > 1 ? ", " : "", PyUnicode_AsUTF8(PyTuple_GET_ITEM(kwnames, j)), "=",
                   type_of(args[nargs + j]));
  std::string msg = str_cat(op.name, "() received an invalid combination of arguments - got ",
                            got, "), but expected one of:");
  for (const Schema& s : op.schemas)
    if (!(self && s.function_only())) msg += "\n * " + signature_of(s);
  throw py::type_error(msg);
}

// ---- the entry points: CPython vectorcall functions, one trampoline per table row ----
// A bound method needs its row without a data pointer (method descriptors have none), so each
// row gets its own instantiation of the entry templates, indexed by its place in the table.

constexpr size_t kMaxOps = 1024;
const OpDef* g_slots[kMaxOps] = {};

PyObject* run_entry(const OpDef* op, PyObject* self, PyObject* const* args, size_t nargsf,
                    PyObject* kwnames) {
  try {
    return call(*op, self, args, PyVectorcall_NARGS(nargsf), kwnames).release().ptr();
#ifdef __GLIBCXX__
  } catch (abi::__forced_unwind&) {  // a thread ended at interpreter exit: let it unwind, as
    throw;                           // pybind11's dispatcher does (swallowing it aborts)
#endif
  } catch (...) {
    py::detail::try_translate_exceptions();  // the module's translators: torch's classes
    return nullptr;
  }
}

template <size_t I>
PyObject* function_entry(PyObject*, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  return run_entry(g_slots[I], nullptr, args, nargs, kwnames);
}
template <size_t I>
PyObject* method_entry(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  return run_entry(g_slots[I], self, args, nargs, kwnames);
}
using Entry = PyObject* (*)(PyObject*, PyObject* const*, Py_ssize_t, PyObject*);
template <size_t... I>
constexpr std::array<Entry, sizeof...(I)> entries(bool method, std::index_sequence<I...>) {
  return method ? std::array<Entry, sizeof...(I)>{&method_entry<I>...}
                : std::array<Entry, sizeof...(I)>{&function_entry<I>...};
}
const auto kFunctionEntries = entries(false, std::make_index_sequence<kMaxOps>());
const auto kMethodEntries = entries(true, std::make_index_sequence<kMaxOps>());

PyMethodDef* method_def(const OpDef* row, Entry entry, const std::string& doc) {
  static std::deque<std::string> docs;  // the PyMethodDefs point into these for ever
  static std::deque<PyMethodDef> defs;
  docs.push_back(doc);
  defs.push_back({row->name.c_str(), reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(entry)),
                  METH_FASTCALL | METH_KEYWORDS, docs.back().c_str()});
  return &defs.back();
}

void def_op(py::module_& m, OpDef op) {
  for (const auto& text : op.signatures) {
    Schema s = parse_schema(text);
    if (s.name != op.name)
      throw std::invalid_argument("op '" + op.name + "' has a signature named '" + s.name + "'");
    if (s.params.size() > Args::kMaxParams)
      throw std::invalid_argument("op '" + op.name + "' has too many parameters");
    std::vector<py::object> defaults;
    for (const auto& p : s.params)
      defaults.push_back(p.required() ? py::object() : literal(p.default_text, text));
    op.defaults.push_back(std::move(defaults));
    op.schemas.push_back(std::move(s));
  }
  for (const auto& s : op.schemas) {  // after the pushes: the names point into the stored schemas
    std::vector<const char*> names;
    for (const auto& p : s.params) names.push_back(p.name.c_str());
    op.names.push_back(std::move(names));
  }
  table().push_back(std::move(op));
  const OpDef* row = &table().back();
  rows().push_back(row);
  if (!row->binding.empty()) return;  // bound by hand elsewhere; listed all the same
  if (!row->impl) throw std::invalid_argument("op '" + row->name + "' has no impl");
  const size_t slot = rows().size() - 1;
  if (slot >= kMaxOps) throw std::invalid_argument("more than kMaxOps registered ops");
  g_slots[slot] = row;
  std::string doc;
  for (const auto& s : row->schemas) doc += s.text + "\n";
  if (!row->doc.empty()) doc += "\n" + row->doc;
  if (row->variants & kFunction) {
    PyObject* f = PyCFunction_NewEx(method_def(row, kFunctionEntries[slot], doc), nullptr,
                                    m.attr("__name__").ptr());
    if (!f) throw py::error_already_set();
    py::setattr(m, row->name.c_str(), py::reinterpret_steal<py::object>(f));
  }
  if (row->variants & kMethod) {
    PyObject* d = PyDescr_NewMethod(tensor_type(), method_def(row, kMethodEntries[slot], doc));
    if (!d) throw py::error_already_set();
    py::setattr(py::handle(reinterpret_cast<PyObject*>(tensor_type())), row->name.c_str(),
                py::reinterpret_steal<py::object>(d));
  }
}

const std::vector<const OpDef*>& all_ops() { return rows(); }

void register_registry(py::module_& m) {
  m.def("_ops", []() {
    py::list out;
    for (const OpDef* op : rows()) {
      py::list sigs, variants;
      for (const auto& s : op->schemas) sigs.append(s.text);
      if (op->variants & kFunction) variants.append("function");
      if (op->variants & kMethod) variants.append("method");
      py::dict row;
      row["name"] = op->name;
      row["signatures"] = sigs;
      row["family"] = op->family;
      row["variants"] = variants;
      row["hooked"] = op->hooked;
      row["cuda"] = op->cuda;
      row["binding"] = op->binding.empty() ? std::string("generated") : op->binding;
      row["hand_off"] = op->hand_off;
      row["doc"] = op->doc;
      out.append(row);
    }
    return out;
  }, "Every registered op: name, signatures, family, variants, whether it goes through the "
     "autograd hook, how it runs on CUDA, and whether its binding is generated or by hand.");
}

}  // namespace ember::pyb

namespace ember::pyb {


// ember.set_default_device: the device of the factories called without device= (torch's
// DeviceContext); none set means the CPU. The *_like factories keep their input's device.
static std::optional<Device> g_default_factory_device;
void set_default_factory_device(std::optional<Device> d) { g_default_factory_device = d; }
std::optional<Device> default_factory_device() { return g_default_factory_device; }

static bool is_like_factory(std::string_view op) {
  constexpr std::string_view like = "_like";
  return op.size() >= like.size() && op.substr(op.size() - like.size()) == like;
}

void check_pin_memory(const FactoryKeywords& f) {
  if (f.pin_memory && f.out.is_none())  // (out= given: torch ignores pin_memory)
    (void)resolve_device(Device{DeviceType::CUDA, -1}, "pin_memory()");
}

FactoryKeywords factory_keywords(const Args& a, const char* op, bool check_pin) {
  const FactoryPositions& at = factory_positions(a.schema());
  FactoryKeywords f;
  f.out = a.out();
  int i = at.dtype;
  if (i >= 0) f.dtype = a.dtype(i);
  i = at.layout;
  if (i >= 0 && !a.is_none(i) && std::string(py::repr(a[i])) != "ember.strided")
    throw NotImplementedError(str_cat(op, "(): layout=", std::string(py::repr(a[i])),
                                      " is not supported: ember's tensors are strided"));
  i = at.memory_format;
  if (i >= 0 && !a.is_none(i)) {
    check_memory_format_type(op, a[i].ptr());
    const std::string format = py::repr(a[i]);
    static const std::set<std::string> laid_out = {"empty", "empty_like", "zeros_like",
                                                   "ones_like", "full_like"};
    if (format != "ember.contiguous_format" && format != "ember.preserve_format" &&
        !laid_out.count(op))
      throw NotImplementedError(str_cat(op, "(): memory_format=", format,
                                        " is not supported by this factory function: make the "
                                        "tensor, then .contiguous(memory_format=", format, ")"));
    EMBER_CHECK(!(format == "ember.preserve_format" && std::string_view(op) == "empty"),
                std::runtime_error, "unsupported memory format Preserve");
    if (format != "ember.preserve_format") f.memory_format = format.substr(6);  // ("ember.")
  }
  i = at.device;
  if (i >= 0 && !a.is_none(i)) {
    f.device = resolve_device_argument(op, a[i].ptr());
    f.device_given = true;
  } else if (i >= 0 && g_default_factory_device && !is_like_factory(op)) {
    const Device d = *g_default_factory_device;
    f.device = resolve_device(d, str_cat(op, "(): the default device '", d.str(), "'"));
    f.device_given = true;
  }
  i = at.requires_grad;
  if (i >= 0) f.requires_grad = a.flag(i);
  i = at.pin_memory;
  if (i >= 0) f.pin_memory = a.flag(i);
  // (pinning needs the CUDA runtime: refused before anything is allocated, as torch's)
  if (check_pin) check_pin_memory(f);
  if (at.generator >= 0) f.generator = a[at.generator];
  if (!f.out.is_none()) {  // a factory computes in out='s dtype, which dtype= must not contradict
    const ScalarType out_dtype = to_tensor(f.out)->dtype;
    check_dtype_matches_out(f.dtype, out_dtype);
    f.dtype = out_dtype;
  }
  return f;
}

}  // namespace ember::pyb
