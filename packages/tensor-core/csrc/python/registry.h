// registry.h: THE table of ember's ops. Each op is declared once, as a row: its signatures
// (python/schema.h), family, variants (ember.<op> and/or Tensor.<op>), whether calls with an
// input that requires grad go to the autograd hook, how it runs on CUDA, and the function that
// runs it on the CPU. From the row follow: the bindings with torch's argument parsing and
// TypeErrors, the hand-off to the autograd and device hooks, out=, `ember._C._ops()` (read by the
// stub generator, the op reference, the op tests and the fuzzer) and the list of differentiable
// ops the autograd package checks its formulas against.
//
//   def_op(m, {.name = "amax",
//              .signatures = {"amax(Tensor input, int[1] dim=[], bool keepdim=False, *, "
//                             "Tensor? out=None) -> Tensor"},
//              .family = "reduction", .hooked = true,
//              .impl = [](const Args& a) {
//                return finish("amax", amax(a.tensor(0), a.opt_dims(1), a.flag(2)), a.out());
//              }});
//
// Ops whose binding is still written by hand are rows too, with `binding` saying where and why
// and no `impl`: they are listed by `_C._ops()` like the others.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "python/pyutils.h"
#include "python/schema.h"

namespace ember::pyb {

enum Variant : unsigned { kFunction = 1, kMethod = 2 };

// One call's arguments, matched to one of the op's schemas and type-checked: what an `impl`
// reads, by parameter position.
class Args {
 public:
  static constexpr int kMaxParams = 16;
  const Schema& schema() const { return *schema_; }
  int overload() const { return overload_; }  // which of the op's signatures matched
  py::handle operator[](int i) const { return values_[i]; }
  bool is_none(int i) const { return values_[i] == Py_None; }
  bool given(int i) const { return given_ & (1u << i); }
  Tensor tensor(int i) const { return to_tensor(values_[i]); }
  Tensor opt_tensor(int i) const { return is_none(i) ? Tensor() : tensor(i); }
  std::vector<Tensor> tensors(int i) const;
  int64_t integer(int i) const { return as_int(values_[i]); }
  std::optional<int64_t> opt_integer(int i) const;
  std::vector<int64_t> ints(int i) const;  // int[] (an int stands for list_size copies)
  OptDims opt_ints(int i) const;           // None -> nullopt
  double real(int i) const;
  bool flag(int i) const { return PyObject_IsTrue(values_[i]) == 1; }  // NumPy bools too
  Scalar scalar(int i) const { return to_scalar(values_[i]); }
  ScalarType dtype(int i) const { return to_dtype(values_[i]); }  // Undefined for None
  std::string str(int i) const { return py::str(values_[i]); }
  py::handle out() const;  // the `out` argument, or None

  // An object the call's arguments point into (the tuple packed from zeros(2, 3)'s or
  // x.flip(0, 1)'s ints).
  void keep(py::object o) { kept_ = std::move(o); }

  // Filled by parse_call.
  void bind(const Schema* schema, int overload, unsigned given, PyObject* const* values) {
    schema_ = schema, overload_ = overload, given_ = given;
    for (size_t i = 0; i < schema->params.size(); ++i) values_[i] = values[i];
  }

 private:
  const Schema* schema_ = nullptr;
  int overload_ = 0;
  unsigned given_ = 0;
  PyObject* values_[kMaxParams] = {};  // borrowed: the call's arguments or the schema's defaults
  py::object kept_;                    // owns what Args::keep was given
};

struct OpDef {
  std::string name;
  std::vector<std::string> signatures;  // overloads, tried in order
  std::string family;                   // "reduction", "sort", "shape", ... (the op reference)
  unsigned variants = kFunction | kMethod;
  // Differentiable: a call with an input that requires grad (grad mode on) goes to the autograd
  // hook as hook(name, ember._C.<name>, args, kwargs).
  bool hooked = false;
  // How the hook and the device hook get the arguments: the first `hook_positional` by position,
  // the others by keyword (out= never); -1: the leading tensor parameters by position. More than
  // a schema has: all of its parameters by position.
  int hook_positional = -1;
  // How a call with a CUDA tensor runs: "ember.cuda" (the device hook, ember/cuda's table),
  // "view" (`impl` on every device: views change metadata only) or "none" (CPU only: the core
  // raises its not-on-CPU error).
  std::string cuda = "ember.cuda";
  // True: this layer hands calls to the autograd and device hooks (the leading tensors by
  // position, the rest by keyword: dims as tuples, dtypes as ember dtypes). False: `impl` does,
  // for the ops whose hook arguments take another form (legacy forms folded, orders parsed).
  bool hand_off = true;
  // "" when the binding is generated from this row; else "manual: <file>: <why>".
  std::string binding;
  std::string doc;
  // bit k: signature k is one of torch's deprecated overloads (kept for old programs; an alias
  // of this op does not take it)
  unsigned deprecated = 0;
  // Checks of the signature's own rules (an argument combination torch's parser refuses) that
  // hold whichever path the call takes: run before the hand-off to the autograd, autocast or
  // device hooks, whose redispatch would not reach impl's checks. Optional.
  std::function<void(const Args&)> check;
  std::function<py::object(const Args&)> impl;
  // filled when registered
  std::vector<Schema> schemas;
  std::vector<std::vector<py::object>> defaults;  // per schema, per parameter (null: required)
  std::vector<std::vector<const char*>> names;    // per schema, the parameters' names
};

// Parses and checks a call's arguments against the op's schemas (`self`: the tensor a method is
// called on, else null), with torch's TypeErrors.
Args parse_call(const OpDef& op, PyObject* self, PyObject* const* args, Py_ssize_t nargs,
                PyObject* kwnames);

// Registers `op`: parses its signatures, binds ember.<name> (into `m`) and Tensor.<name> as its
// variants say (unless the binding is manual), and adds the row to the table.
void def_op(py::module_& m, OpDef op);
const std::vector<const OpDef*>& all_ops();

// `ember._C._ops()`: the table as a list of dicts.
void register_registry(py::module_& m);

}  // namespace ember::pyb

namespace ember::pyb {

// The factory keywords of a call (torch's dtype, layout, device, pin_memory, requires_grad,
// memory_format, out, generator), read by name from whichever of them the matched schema has. A layout
// other than ember.strided and any memory_format (ember's tensors are strided and dense) raise
// NotImplementedError rather than being ignored.
struct FactoryKeywords {
  ScalarType dtype = ScalarType::Undefined;
  Device device{};  // resolved (cuda -> cuda:<current>)
  bool device_given = false;
  bool requires_grad = false;
  bool pin_memory = false;
  py::handle out;        // None when not given
  py::handle generator{Py_None};  // the same; a Generator (the schema checked its type)
  // memory_format=: "" (none or preserve_format), "contiguous_format", "channels_last",
  // "channels_last_3d" (only empty and the empty/zeros/ones/full *_like take the last two)
  std::string memory_format;
};
// The device factories use when given none (ember.set_default_device); nullopt: the CPU.
void set_default_factory_device(std::optional<Device> d);
std::optional<Device> default_factory_device();
// pin_memory=True needs the CUDA runtime: checked here, before anything is allocated, unless
// the caller checks it later (tensor(): torch reads the data first), with check_pin_memory.
FactoryKeywords factory_keywords(const Args& a, const char* op, bool check_pin = true);
void check_pin_memory(const FactoryKeywords& f);
// The parameters that follow `*` in a factory's schema, as torch writes them.
inline constexpr const char* kFactoryParams =
    "ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=False, "
    "bool? requires_grad=False";

}  // namespace ember::pyb
