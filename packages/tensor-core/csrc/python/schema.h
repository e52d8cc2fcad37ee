// schema.h: an op's Python signature written as torch writes its schemas, parsed once when the
// op is registered (python/registry.h). One schema string gives the binding's argument parsing,
// its TypeErrors, the hand-off to the autograd hook, the generated `_C.pyi` stub and the op
// reference page:
//
//   "sum(Tensor input, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None,
//        Tensor? out=None) -> Tensor"
//
// Types: Tensor, Tensor|Scalar (a tensor or a Python number), Tensor[] (a list or tuple of
// tensors), int, int[] / int[N] (a sequence of ints; with N, a single int is repeated N times), float, bool, Scalar (a Python number or 0-d tensor),
// ScalarType (an ember dtype or a Python type), Device, str, Any (no check), Generator (an
// ember.Generator), Layout (ember.strided). A `?` allows None;
// `*` starts the keyword-only parameters; defaults are Python literals (None, True, 1, -1.5,
// 'fro', [], [0, 1]). A schema whose only positional parameter is an int[] also takes the ints
// as separate arguments, as torch's: zeros(2, 3) == zeros((2, 3)).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ember::pyb {

// SymInt: torch's SymInt parameters (kthvalue's k, tril's diagonal, randperm's n), which take
// a one-element integer tensor of any shape where its int parameters take 0-d ones only.
enum class ArgType : uint8_t {
  Tensor, TensorList, Int, IntList, Float, Bool, Scalar, ScalarType, Device, String, Any,
  TensorOrScalar, Generator, Layout, SymInt
};

struct Param {
  std::string name;
  ArgType type = ArgType::Any;
  bool optional = false;      // `?`: None is allowed
  bool keyword_only = false;  // after `*`
  int list_size = 0;          // int[N]: a single int stands for N copies of it
  std::string default_text;   // the default as written ("None", "False", "[]"); empty: required
  bool required() const { return default_text.empty(); }
};

struct Schema {
  std::string name;
  std::vector<Param> params;
  std::string returns;  // as written: "Tensor", "(Tensor values, Tensor indices)", "bool", ...
  std::string text;     // the whole schema, for messages and stubs
  int out_index = -1;   // the `out` parameter's position, -1 when there is none
  int positional() const;  // the number of parameters before `*`
  int index_of(const std::string& param) const;  // -1 when absent
  // torch's Scalar-self overloads (remainder(Scalar self, Tensor other)) are functions only: a
  // method's self is its tensor
  bool function_only() const { return !params.empty() && params[0].type == ArgType::Scalar; }
};

// Parses one schema; throws std::invalid_argument naming the schema on a malformed one (a
// programming error, reported when the core's module is imported).
Schema parse_schema(const std::string& text);

// The name torch's messages give a type: "Tensor", "tuple of ints", "int", "float", "bool",
// "Number", "ember.dtype", "ember.device", "str", "tuple of Tensors".
const char* type_description(ArgType t);
// The type as written in a schema and as Python annotations spell it in the stub.
const char* type_in_schema(ArgType t);
const char* type_in_stub(ArgType t);

}  // namespace ember::pyb
