// bind_aliases.cpp: two kinds of registry rows whose work is done by other ops.
// - torch's alternative names of ops (arccos for acos, subtract for sub, fix for trunc, ...):
//   each takes its canonical op's signatures under its own name (so argument errors name the
//   alias, as torch's do) and passes the parsed call on to the canonical op, which does the
//   hand-off to the autograd and device hooks.
// - the compositions (addcmul, new_zeros, cdist, cov, polygamma, ...): the row parses and checks
//   the arguments against torch's signature and passes them to their Python body in
//   ember/_composite_ops/, written with public ops, so that autograd records the parts and
//   CUDA tensors run on the parts' device implementations.
// Registered after every other group, so that each canonical row exists.
#include <algorithm>
#include <cstring>

#include "python/pyutils.h"
#include "python/registry.h"

namespace ember::pyb {
namespace {


struct Alias {
  const char* name;
  const char* canonical;
  unsigned variants;
  // A signature of its own where torch's alias takes less than the canonical op ("" : the
  // canonical op's, renamed).
  const char* signature = "";
};

constexpr unsigned kBoth = kFunction | kMethod;
const Alias kAliases[] = {
    {"absolute", "abs", kBoth},           {"absolute_", "abs_", kMethod},
    {"arccos", "acos", kBoth},            {"arccos_", "acos_", kBoth},
    {"arcsin", "asin", kBoth},            {"arcsin_", "asin_", kBoth},
    {"arctan", "atan", kBoth},            {"arctan_", "atan_", kBoth},
    {"arccosh", "acosh", kBoth},          {"arccosh_", "acosh_", kBoth},
    {"arcsinh", "asinh", kBoth},          {"arcsinh_", "asinh_", kBoth},
    {"arctanh", "atanh", kBoth},          {"arctanh_", "atanh_", kBoth},
    {"arctan2", "atan2", kBoth},          {"arctan2_", "atan2_", kMethod},
    {"negative", "neg", kBoth},           {"negative_", "neg_", kBoth},
    {"fix", "trunc", kBoth},              {"fix_", "trunc_", kBoth},
    {"subtract", "sub", kBoth},           {"subtract_", "sub_", kMethod},
    {"multiply", "mul", kBoth},           {"multiply_", "mul_", kMethod},
    {"divide", "div", kBoth},             {"divide_", "div_", kMethod},
    {"true_divide", "div", kBoth,
     "true_divide(Tensor|Scalar input, Tensor|Scalar other, *, Tensor? out=None) -> Tensor"},
    {"true_divide_", "div_", kMethod, "true_divide_(Tensor input, Tensor|Scalar other) -> Tensor"},
    {"greater", "gt", kBoth},             {"greater_", "gt_", kMethod},
    {"greater_equal", "ge", kBoth},       {"greater_equal_", "ge_", kMethod},
    {"less", "lt", kBoth},                {"less_", "lt_", kMethod},
    {"less_equal", "le", kBoth},          {"less_equal_", "le_", kMethod},
    {"not_equal", "ne", kBoth},           {"not_equal_", "ne_", kMethod},
};

// The compositions: name, torch's signatures, variants, family, and the function of
// ember/_composite_ops/ that computes it ("" : the op's name).
struct Composite {
  const char* name;
  std::vector<std::string> signatures;
  unsigned variants;
  const char* family;
  const char* function = "";
  // signatures from this index on are torch's deprecated overloads (their parameters in
  // another order): the call warns as torch's does and passes its arguments by name
  int deprecated_from = -1;
};

std::string factory(const std::string& head) {
  return head + ", *, " + kFactoryParams + ") -> Tensor";
}

std::vector<Composite> composites() {
  const char* E = "elementwise";
  const char* R = "reduction";
  return {
      {"new_empty", {factory("new_empty(Tensor input, int[] size")}, kMethod, "creation"},
      {"new_zeros", {factory("new_zeros(Tensor input, int[] size")}, kMethod, "creation"},
      {"new_ones", {factory("new_ones(Tensor input, int[] size")}, kMethod, "creation"},
      {"new_full", {factory("new_full(Tensor input, int[] size, Scalar fill_value")}, kMethod,
       "creation"},
      {"new_empty_strided",
       {factory("new_empty_strided(Tensor input, int[] size, int[] stride")}, kMethod,
       "creation"},
      // torch's new_tensor takes no layout or pin_memory
      {"new_tensor", {"new_tensor(Tensor input, Any data, *, ScalarType? dtype=None, "
                      "Device? device=None, bool requires_grad=False) -> Tensor"},
       kMethod, "creation"},
      {"type_as", {"type_as(Tensor input, Tensor other) -> Tensor"}, kMethod, "creation"},
      // old programs' addcmul_(value, tensor1, tensor2) (Adam's exp_avg_sq): deprecated
      {"addcmul", {"addcmul(Tensor input, Tensor tensor1, Tensor tensor2, *, Scalar value=1, "
                   "Tensor? out=None) -> Tensor",
                   "addcmul(Tensor input, Scalar value, Tensor tensor1, Tensor tensor2, *, "
                   "Tensor? out=None) -> Tensor"}, kBoth, E, "", 1},
      {"addcmul_", {"addcmul_(Tensor input, Tensor tensor1, Tensor tensor2, *, Scalar value=1) "
                    "-> Tensor",
                    "addcmul_(Tensor input, Scalar value, Tensor tensor1, Tensor tensor2) "
                    "-> Tensor"}, kMethod, E, "", 1},
      {"addcdiv", {"addcdiv(Tensor input, Tensor tensor1, Tensor tensor2, *, Scalar value=1, "
                   "Tensor? out=None) -> Tensor",
                   "addcdiv(Tensor input, Scalar value, Tensor tensor1, Tensor tensor2, *, "
                   "Tensor? out=None) -> Tensor"}, kBoth, E, "", 1},
      {"addcdiv_", {"addcdiv_(Tensor input, Tensor tensor1, Tensor tensor2, *, Scalar value=1) "
                    "-> Tensor",
                    "addcdiv_(Tensor input, Scalar value, Tensor tensor1, Tensor tensor2) "
                    "-> Tensor"}, kMethod, E, "", 1},
      {"addr", {"addr(Tensor input, Tensor vec1, Tensor vec2, *, Scalar beta=1, Scalar alpha=1, "
                "Tensor? out=None) -> Tensor"}, kBoth, "linalg"},
      {"addr_", {"addr_(Tensor input, Tensor vec1, Tensor vec2, *, Scalar beta=1, "
                 "Scalar alpha=1) -> Tensor"}, kMethod, "linalg"},
      {"clamp_min", {"clamp_min(Tensor input, Tensor|Scalar min, *, Tensor? out=None) -> Tensor"},
       kBoth, E},
      {"clamp_min_", {"clamp_min_(Tensor input, Tensor|Scalar min) -> Tensor"}, kBoth, E},
      {"clamp_max", {"clamp_max(Tensor input, Tensor|Scalar max, *, Tensor? out=None) -> Tensor"},
       kBoth, E},
      {"clamp_max_", {"clamp_max_(Tensor input, Tensor|Scalar max) -> Tensor"}, kBoth, E},
      {"float_power", {"float_power(Tensor input, Tensor|Scalar exponent, *, "
                       "Tensor? out=None) -> Tensor",
                       "float_power(Scalar self, Tensor exponent, *, Tensor? out=None) -> Tensor"},
       kBoth, E},
      {"float_power_", {"float_power_(Tensor input, Tensor|Scalar exponent) -> Tensor"}, kMethod,
       E},
      {"ldexp", {"ldexp(Tensor input, Tensor other, *, Tensor? out=None) -> Tensor"}, kBoth, E},
      {"ldexp_", {"ldexp_(Tensor input, Tensor other) -> Tensor"}, kBoth, E},
      {"nextafter", {"nextafter(Tensor input, Tensor other, *, Tensor? out=None) -> Tensor"},
       kBoth, E},
      {"nextafter_", {"nextafter_(Tensor input, Tensor other) -> Tensor"}, kMethod, E},
      {"heaviside", {"heaviside(Tensor input, Tensor values, *, Tensor? out=None) -> Tensor"},
       kBoth, E},
      {"heaviside_", {"heaviside_(Tensor input, Tensor values) -> Tensor"}, kMethod, E},
      {"isneginf", {"isneginf(Tensor input, *, Tensor? out=None) -> Tensor"}, kBoth, E},
      {"isposinf", {"isposinf(Tensor input, *, Tensor? out=None) -> Tensor"}, kBoth, E},
      {"positive", {"positive(Tensor input) -> Tensor"}, kBoth, E},
      {"adjoint", {"adjoint(Tensor input) -> Tensor"}, kBoth, "shape"},
      {"polygamma", {"polygamma(int n, Tensor input, *, Tensor? out=None) -> Tensor"}, kFunction,
       E},
      {"polygamma", {"polygamma(Tensor input, int n) -> Tensor"}, kMethod, E,
       "polygamma_method"},
      {"polygamma_", {"polygamma_(Tensor input, int n) -> Tensor"}, kMethod, E},
      {"mvlgamma", {"mvlgamma(Tensor input, int p, *, Tensor? out=None) -> Tensor"}, kBoth, E},
      {"mvlgamma_", {"mvlgamma_(Tensor input, int p) -> Tensor"}, kMethod, E},
      {"aminmax", {"aminmax(Tensor input, *, int? dim=None, bool keepdim=False) -> "
                   "(Tensor min, Tensor max)"}, kBoth, R},
      {"logcumsumexp", {"logcumsumexp(Tensor input, int dim, *, Tensor? out=None) -> Tensor"},
       kBoth, R},
      {"hash_tensor", {"hash_tensor(Tensor input, int[1]? dim=None, *, bool keepdim=False, "
                       "int mode=0, Tensor? out=None) -> Tensor"}, kBoth, R},
      {"dist", {"dist(Tensor input, Tensor other, Scalar p=2) -> Tensor"}, kBoth, R},
      {"renorm", {"renorm(Tensor input, Scalar p, int dim, Scalar maxnorm, *, "
                  "Tensor? out=None) -> Tensor"}, kBoth, R},
      {"renorm_", {"renorm_(Tensor input, Scalar p, int dim, Scalar maxnorm) -> Tensor"},
       kMethod, R},
      {"cov", {"cov(Tensor input, *, int correction=1, Tensor? fweights=None, "
               "Tensor? aweights=None) -> Tensor"}, kBoth, R},
      {"corrcoef", {"corrcoef(Tensor input) -> Tensor"}, kBoth, R},
      {"sum_to_size", {"sum_to_size(Tensor input, int[] size) -> Tensor"}, kMethod, R},
      {"is_same_size", {"is_same_size(Tensor input, Tensor other) -> bool"}, kBoth, "creation"},
      {"is_nonzero", {"is_nonzero(Tensor input) -> bool"}, kBoth, "creation"},
      {"fill_diagonal_", {"fill_diagonal_(Tensor input, Scalar fill_value, bool wrap=False) -> "
                          "Tensor"}, kMethod, "indexing"},
      {"cdist", {"cdist(Tensor x1, Tensor x2, float p=2.0, "
                 "Any compute_mode='use_mm_for_euclid_dist_if_necessary') -> Tensor"},
       kFunction, "linalg"},
      {"trapezoid", {"trapezoid(Tensor y, Tensor x, *, int dim=-1) -> Tensor",
                     "trapezoid(Tensor y, *, Scalar dx=1, int dim=-1) -> Tensor"}, kFunction, R},
      {"trapz", {"trapz(Tensor y, Tensor x, *, int dim=-1) -> Tensor",
                 "trapz(Tensor y, *, float dx=1, int dim=-1) -> Tensor"}, kFunction, R,
       "trapezoid"},
      {"cumulative_trapezoid",
       {"cumulative_trapezoid(Tensor y, Tensor x, *, int dim=-1) -> Tensor",
        "cumulative_trapezoid(Tensor y, *, Scalar dx=1, int dim=-1) -> Tensor"}, kFunction, R},
      {"vander", {"vander(Tensor x, int? N=None, bool increasing=False) -> Tensor"}, kFunction,
       "creation"},
      {"combinations", {"combinations(Tensor input, int r=2, bool with_replacement=False) -> "
                        "Tensor"}, kFunction, "creation"},
      // torch's three forms: a number goes as `element` or `test_element`
      {"isin", {"isin(Tensor elements, Tensor test_elements, *, bool assume_unique=False, "
                "bool invert=False, Tensor? out=None) -> Tensor",
                "isin(Scalar element, Tensor test_elements, *, bool assume_unique=False, "
                "bool invert=False, Tensor? out=None) -> Tensor",
                "isin(Tensor elements, Scalar test_element, *, bool assume_unique=False, "
                "bool invert=False, Tensor? out=None) -> Tensor"},
       kFunction, "sort"},
      {"gcd", {"gcd(Tensor input, Tensor other, *, Tensor? out=None) -> Tensor"}, kBoth, E},
      {"gcd_", {"gcd_(Tensor input, Tensor other) -> Tensor"}, kBoth, E},
      {"lcm", {"lcm(Tensor input, Tensor other, *, Tensor? out=None) -> Tensor"}, kBoth, E},
      {"lcm_", {"lcm_(Tensor input, Tensor other) -> Tensor"}, kBoth, E},
      {"frexp", {"frexp(Tensor input, *, Tensor[]? out=None) -> (Tensor mantissa, Tensor exponent)"},
       kBoth, E},
      {"put_", {"put_(Tensor input, Tensor index, Tensor source, bool accumulate=False) -> "
                "Tensor"}, kMethod, "indexing"},
      {"put", {"put(Tensor input, Tensor index, Tensor source, bool accumulate=False) -> "
               "Tensor"}, kBoth, "indexing"},
      {"diagonal_scatter", {"diagonal_scatter(Tensor input, Tensor src, int offset=0, "
                            "int dim1=0, int dim2=1) -> Tensor"}, kBoth, "indexing"},
      {"select_scatter", {"select_scatter(Tensor input, Tensor src, int dim, SymInt index) -> "
                          "Tensor"}, kBoth, "indexing"},
      {"slice_scatter", {"slice_scatter(Tensor input, Tensor src, int dim=0, SymInt? start=None, "
                         "SymInt? end=None, SymInt step=1, *, Tensor? out=None) -> Tensor"}, kBoth,
       "indexing"},
      {"ravel", {"ravel(Tensor input) -> Tensor"}, kBoth, "shape"},
      {"resolve_neg", {"resolve_neg(Tensor input) -> Tensor"}, kBoth, "shape"},
      // complex numbers (_composite_ops/complex_numbers.py): real/imag are views of
      // view_as_real's pairs; conj writes the conjugate out (ember has no lazy conjugate bit);
      // sgn is sign for real tensors and x / |x| for complex ones
      {"conj", {"conj(Tensor input) -> Tensor"}, kBoth, "shape"},
      {"resolve_conj", {"resolve_conj(Tensor input) -> Tensor"}, kBoth, "shape"},
      {"real", {"real(Tensor input) -> Tensor"}, kFunction, "shape"},
      {"imag", {"imag(Tensor input) -> Tensor"}, kFunction, "shape"},
      {"isreal", {"isreal(Tensor input) -> Tensor"}, kBoth, E},
      {"is_complex", {"is_complex(Tensor input) -> bool"}, kBoth, "creation"},
      {"complex", {"complex(Tensor real, Tensor imag, *, Tensor? out=None) -> Tensor"}, kFunction, E},
      {"polar", {"polar(Tensor abs, Tensor angle, *, Tensor? out=None) -> Tensor"}, kFunction, E},
      {"sgn", {"sgn(Tensor input, *, Tensor? out=None) -> Tensor"}, kBoth, E},
      {"sgn_", {"sgn_(Tensor input) -> Tensor"}, kMethod, E},
      {"conj_physical_", {"conj_physical_(Tensor input) -> Tensor"}, kBoth, E},
      {"is_conj", {"is_conj(Tensor input) -> bool"}, kFunction, "creation"},
      {"is_neg", {"is_neg(Tensor input) -> bool"}, kBoth, "creation"},
      {"is_inference", {"is_inference(Tensor input) -> bool"}, kBoth, "creation"},
      {"hann_window", {factory("hann_window(int window_length, bool periodic=True")},
       kFunction, "creation"},
      // torch's overloads: alpha and beta only after the parameters before them (a TypeError
      // for hamming_window(n, beta=...) or kaiser_window(n, beta=...), as torch's parser gives)
      {"hamming_window", {factory("hamming_window(int window_length"),
                          factory("hamming_window(int window_length, bool periodic"),
                          factory("hamming_window(int window_length, bool periodic, float alpha"),
                          factory("hamming_window(int window_length, bool periodic, float alpha, "
                                  "float beta")}, kFunction, "creation"},
      {"blackman_window", {factory("blackman_window(int window_length, bool periodic=True")},
       kFunction, "creation"},
      {"bartlett_window", {factory("bartlett_window(int window_length, bool periodic=True")},
       kFunction, "creation"},
      {"kaiser_window", {factory("kaiser_window(int window_length"),
                         factory("kaiser_window(int window_length, bool periodic"),
                         factory("kaiser_window(int window_length, bool periodic, float beta")},
       kFunction, "creation"},
      {"transpose_", {"transpose_(Tensor input, int dim0, int dim1) -> Tensor"}, kMethod, "shape"},
      {"swapaxes_", {"swapaxes_(Tensor input, int axis0, int axis1) -> Tensor"}, kMethod, "shape",
       "transpose_"},
      {"swapdims_", {"swapdims_(Tensor input, int dim0, int dim1) -> Tensor"}, kMethod, "shape",
       "transpose_"},
      {"t_", {"t_(Tensor input) -> Tensor"}, kMethod, "shape"},
      {"squeeze_", {"squeeze_(Tensor input) -> Tensor", "squeeze_(Tensor input, int dim) -> Tensor",
                    "squeeze_(Tensor input, int[] dim) -> Tensor"}, kMethod, "shape"},
      {"unsqueeze_", {"unsqueeze_(Tensor input, int dim) -> Tensor"}, kMethod, "shape"},
      {"as_strided_", {"as_strided_(Tensor input, int[] size, int[] stride, "
                       "SymInt? storage_offset=None) -> Tensor"}, kBoth, "shape"},
      {"fill", {"fill(Tensor input, Tensor|Scalar value) -> Tensor"}, kFunction, "creation"},
      {"zero_", {"zero_(Tensor input) -> Tensor"}, kFunction, "creation", "zero_function"},
      {"detach_", {"detach_(Tensor input) -> Tensor"}, kFunction, "creation", "detach_function"},
      {"rsub", {"rsub(Tensor input, Tensor|Scalar other, *, Scalar alpha=1) -> Tensor",
                "rsub(Tensor input, Scalar other, Scalar alpha) -> Tensor"}, kFunction, E},
      {"hardshrink", {"hardshrink(Tensor input, Scalar lambd=0.5, *, Tensor? out=None) -> Tensor"}, kBoth, E},
      {"selu", {"selu(Tensor input) -> Tensor"}, kFunction, E},
      {"selu_", {"selu_(Tensor input) -> Tensor"}, kFunction, E},
      {"celu", {"celu(Tensor input, Scalar alpha=1.0) -> Tensor"}, kFunction, E},
      {"celu_", {"celu_(Tensor input, Scalar alpha=1.0) -> Tensor"}, kFunction, E},
      {"threshold", {"threshold(Tensor input, Scalar threshold, Scalar value, *, "
                     "Tensor? out=None) -> Tensor"},
       kFunction, E},
      {"threshold_", {"threshold_(Tensor input, Scalar threshold, Scalar value) -> Tensor"},
       kFunction, E},
      {"fill_", {"fill_(Tensor input, Tensor|Scalar value) -> Tensor"}, kFunction, "creation",
       "fill_function_"},
      // (torch's two forms: decimals absent, or an int; None is neither)
      {"round_", {"round_(Tensor input) -> Tensor",
                  "round_(Tensor input, *, int decimals) -> Tensor"}, kFunction, E,
       "round_function_"},
      {"get_device", {"get_device(Tensor input) -> int"}, kFunction, "creation"},
      {"cosine_similarity", {"cosine_similarity(Tensor x1, Tensor x2, int dim=1, float eps=1e-08) "
                             "-> Tensor"}, kFunction, "linalg"},
      {"pairwise_distance", {"pairwise_distance(Tensor x1, Tensor x2, float p=2.0, "
                             "float eps=1e-06, bool keepdim=False) -> Tensor"}, kFunction,
       "linalg"},
      {"pdist", {"pdist(Tensor input, float p=2.0) -> Tensor"}, kFunction, "linalg"},
      {"matrix_exp", {"matrix_exp(Tensor input) -> Tensor"}, kBoth, "linalg"},
      {"frobenius_norm", {"frobenius_norm(Tensor input, int[1] dim, bool keepdim=False, *, "
                          "Tensor? out=None) -> Tensor"}, kFunction, R},
      {"nuclear_norm", {"nuclear_norm(Tensor input, bool keepdim=False, *, Tensor? out=None) -> Tensor",
                        "nuclear_norm(Tensor input, int[2] dim, bool keepdim=False, *, "
                        "Tensor? out=None) -> Tensor"},
       kFunction, R, "nuclear_norm_row"},
      {"narrow_copy", {"narrow_copy(Tensor input, int dim, SymInt start, SymInt length, *, "
                       "Tensor? out=None) -> Tensor"}, kBoth, "shape"},
      {"as_strided_scatter", {"as_strided_scatter(Tensor input, Tensor src, int[] size, "
                              "int[] stride, SymInt? storage_offset=None) -> Tensor"}, kBoth,
       "shape"},
      {"nonzero_static", {"nonzero_static(Tensor input, *, SymInt size, int fill_value=-1, "
                          "Tensor? out=None) -> Tensor"}, kBoth, "indexing"},
      {"index_reduce", {"index_reduce(Tensor input, int dim, Tensor index, Tensor source, "
                        "str reduce, *, bool include_self=True, Tensor? out=None) -> Tensor"},
       kBoth, "indexing"},
      {"index_reduce_", {"index_reduce_(Tensor input, int dim, Tensor index, Tensor source, "
                         "str reduce, *, bool include_self=True) -> Tensor"}, kMethod,
       "indexing"},
      {"cholesky_inverse", {"cholesky_inverse(Tensor input, bool upper=False, *, "
                            "Tensor? out=None) -> Tensor"}, kBoth, "linalg"},
      {"empty_permuted", {factory("empty_permuted(int[] size, int[] physical_layout")},
       kFunction, "creation"},
      {"cauchy_", {"cauchy_(Tensor input, float median=0, float sigma=1, *, "
                   "Generator? generator=None) -> Tensor"}, kMethod, "random"},
      {"log_normal_", {"log_normal_(Tensor input, float mean=1, float std=2, *, "
                       "Generator? generator=None) -> Tensor"}, kMethod, "random"},
      {"geometric_", {"geometric_(Tensor input, float p, *, Generator? generator=None) -> "
                      "Tensor"}, kMethod, "random"},
      {"to_dense", {"to_dense(Tensor input, ScalarType? dtype=None, *, bool? masked_grad=None) "
                    "-> Tensor"}, kMethod, "creation"},
      {"dim_order", {"dim_order(Tensor input, *, Any ambiguity_check=False) -> Any"}, kMethod,
       "shape"},
      {"poisson", {"poisson(Tensor input, Generator? generator=None) -> Tensor"}, kFunction,
       "random"},
      {"binomial", {"binomial(Tensor count, Tensor prob, Generator? generator=None) -> Tensor"},
       kFunction, "random"},
      {"prelu", {"prelu(Tensor input, Tensor weight) -> Tensor"}, kMethod, E},
      {"lu_unpack", {"lu_unpack(Tensor LU_data, Tensor LU_pivots, bool unpack_data=True, "
                     "bool unpack_pivots=True) -> (Tensor P, Tensor L, Tensor U)"}, kFunction,
       "linalg"},
  };
}

// Whether a keyword argument reaches the Python body: given and not None (a None given for an
// `Any` parameter too: the body refuses it, as torch's, where it is not the default).
static bool forwarded(const Args& a, const Schema& s, int i) {
  return (a.given(i) || i == s.out_index) &&
         (!a.is_none(i) || (a.given(i) && s.params[i].type == ArgType::Any));
}

// Argument i as the Python body takes it: a 0-d tensor given for a Scalar is its number, as
// torch's parser reads it (threshold's bounds, addcmul's value, fill_diagonal_'s fill value),
// and a bool given for a float is that float (trapz's dx=True is 1.0; trapezoid's Scalar dx
// refuses a bool).
static py::object forwarded_value(const Args& a, const Schema& s, int i) {
  py::object v = py::reinterpret_borrow<py::object>(a[i]);
  if (s.params[i].type == ArgType::Float && PyBool_Check(v.ptr()))
    return py::float_(v.ptr() == Py_True ? 1.0 : 0.0);
  return s.params[i].type == ArgType::Scalar && is_tensor(v) ? v.attr("item")() : v;
}

// The call's arguments as the Python body takes them: the parameters before `*` by position,
// the keyword-only ones that were given by name (out= when not None).
py::object forward(const py::object& fn, const Args& a, int max_positional = Args::kMaxParams) {
  const Schema& s = a.schema();
  const int npos = std::min(s.positional(), max_positional);
  py::tuple args(npos);
  py::dict kwargs;
  for (int i = 0; i < static_cast<int>(s.params.size()); ++i) {
    py::object v = forwarded_value(a, s, i);
    if (i < npos) args[i] = v;
    else if (forwarded(a, s, i))
      kwargs[py::str(s.params[i].name)] = v;
  }
  return fn(*args, **kwargs);
}

// The same, every parameter after the first by name (a deprecated overload's order is not the
// function's).
py::object forward_by_name(const py::object& fn, const Args& a) {
  const Schema& s = a.schema();
  py::dict kwargs;
  for (int i = 1; i < static_cast<int>(s.params.size()); ++i)
    if (forwarded(a, s, i))
      kwargs[py::str(s.params[i].name)] = forwarded_value(a, s, i);
  return fn(py::reinterpret_borrow<py::object>(a[0]), **kwargs);
}

const OpDef& canonical_row(const char* name) {
  for (const OpDef* row : all_ops())
    if (row->name == name) return *row;
  throw std::invalid_argument(str_cat("alias of an unregistered op '", name, "'"));
}

// The canonical op's signature under the alias's name.
std::string renamed(const std::string& signature, const std::string& from, const std::string& to) {
  return to + signature.substr(from.size());
}

}  // namespace

void register_aliases(py::module_& m) {
  for (const Alias& alias : kAliases) {
    const OpDef& target = canonical_row(alias.canonical);
    std::vector<std::string> signatures;
    if (*alias.signature) signatures.push_back(alias.signature);
    else
      for (size_t k = 0; k < target.signatures.size(); ++k)
        if (!(target.deprecated & (1u << k)))  // (torch's aliases have no deprecated overloads)
          signatures.push_back(renamed(target.signatures[k], target.name, alias.name));
    const std::string canonical = alias.canonical;
    const bool as_function = target.variants & kFunction;
    // what the canonical op's first form takes by position; the rest go by name (subtract(x, 2,
    // 3)'s alpha is not sub's deprecated positional alpha)
    const int positional = target.schemas.front().positional();
    def_op(m, {.name = alias.name, .signatures = signatures, .family = target.family,
               .variants = alias.variants, .cuda = target.cuda, .hand_off = false,
               .doc = str_cat("Alias of ", canonical, "."),
               .impl = [canonical, as_function, positional](const Args& a) {
                 return forward(as_function ? core_fn(canonical.c_str())
                                            : py::reinterpret_borrow<py::object>(
                                                  reinterpret_cast<PyObject*>(tensor_type()))
                                                  .attr(canonical.c_str()),
                                a, positional);
               }});
  }
  for (const Composite& c : composites()) {
    const std::string function = *c.function ? c.function : c.name;
    const int deprecated_from = c.deprecated_from;
    const std::string name = c.name, current = c.signatures.front();
    def_op(m, {.name = c.name, .signatures = c.signatures, .family = c.family,
               .variants = c.variants, .hand_off = false,
               .doc = "A composition of ember's ops (ember/_composite_ops/).",
               .deprecated = deprecated_from < 0 ? 0u : ~0u << deprecated_from,
               .impl = [function, deprecated_from, name, current](const Args& a) {
                 static py::object* module = new py::object(  // leaked: outlives interpreter teardown
                     py::module_::import("ember._composite_ops"));
                 if (deprecated_from >= 0 && a.overload() >= deprecated_from) {
                   warn(str_cat("This overload of ", name, " is deprecated:\n\t",
                                a.schema().text, "\nConsider using one of the following "
                                "signatures instead:\n\t", current));
                   return forward_by_name(module->attr(function.c_str()), a);
                 }
                 return forward(module->attr(function.c_str()), a);
               }});
  }
}

}  // namespace ember::pyb
