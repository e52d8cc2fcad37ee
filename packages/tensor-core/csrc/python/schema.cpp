// schema.cpp: see schema.h.
#include "python/schema.h"

#include <cctype>
#include <stdexcept>

namespace ember::pyb {
namespace {

struct TypeName {
  const char* schema;
  const char* stub;
  const char* description;
};
// Indexed by ArgType.
const TypeName kTypeNames[] = {
    {"Tensor", "Tensor", "Tensor"},
    {"Tensor[]", "Sequence[Tensor]", "tuple of Tensors"},
    {"int", "int", "int"},
    {"int[]", "int | Sequence[int]", "tuple of ints"},
    {"float", "float", "float"},
    {"bool", "bool", "bool"},
    {"Scalar", "Number", "Number"},
    {"ScalarType", "dtype", "ember.dtype"},
    {"Device", "device | str | int", "ember.device"},
    {"str", "str", "str"},
    {"Any", "Any", "object"},
    {"Tensor|Scalar", "Tensor | Number", "Tensor or Number"},
    {"Generator", "Generator", "ember.Generator"},
    {"Layout", "layout", "ember.layout"},
    {"SymInt", "int", "int"},
};

std::string trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

// Splits at the commas that are not inside brackets or quotes.
std::vector<std::string> split_params(const std::string& s) {
  std::vector<std::string> out;
  int depth = 0;
  char quote = 0;
  std::string cur;
  for (char c : s) {
    if (quote) {
      if (c == quote) quote = 0;
    } else if (c == '\'' || c == '"') {
      quote = c;
    } else if (c == '[' || c == '(') {
      ++depth;
    } else if (c == ']' || c == ')') {
      --depth;
    } else if (c == ',' && depth == 0) {
      out.push_back(trim(cur));
      cur.clear();
      continue;
    }
    cur += c;
  }
  if (!trim(cur).empty()) out.push_back(trim(cur));
  return out;
}

[[noreturn]] void malformed(const std::string& text, const std::string& why) {
  throw std::invalid_argument("malformed op schema '" + text + "': " + why);
}

Param parse_param(const std::string& text, const std::string& whole, bool keyword_only) {
  Param p;
  p.keyword_only = keyword_only;
  std::string decl = text;
  const size_t eq = text.find('=');
  if (eq != std::string::npos) {
    p.default_text = trim(text.substr(eq + 1));
    decl = trim(text.substr(0, eq));
    if (p.default_text.empty()) malformed(whole, "empty default in '" + text + "'");
  }
  const size_t space = decl.rfind(' ');
  if (space == std::string::npos) malformed(whole, "no name in '" + text + "'");
  std::string type = trim(decl.substr(0, space));
  p.name = trim(decl.substr(space + 1));
  if (!type.empty() && type.back() == '?') {
    p.optional = true;
    type.pop_back();
  }
  if (type.size() > 2 && type.compare(0, 4, "int[") == 0 && type.back() == ']') {
    const std::string n = type.substr(4, type.size() - 5);
    p.list_size = n.empty() ? 0 : std::stoi(n);
    type = "int[]";
  }
  for (size_t i = 0; i < sizeof(kTypeNames) / sizeof(kTypeNames[0]); ++i)
    if (type == kTypeNames[i].schema) {
      p.type = static_cast<ArgType>(i);
      if (p.default_text == "None" && !p.optional)
        malformed(whole, "'" + p.name + "' defaults to None but its type has no '?'");
      return p;
    }
  malformed(whole, "unknown type '" + type + "'");
}

}  // namespace

int Schema::positional() const {
  int n = 0;
  for (const auto& p : params) n += !p.keyword_only;
  return n;
}

int Schema::index_of(const std::string& param) const {
  for (size_t i = 0; i < params.size(); ++i)
    if (params[i].name == param) return static_cast<int>(i);
  return -1;
}

Schema parse_schema(const std::string& text) {
  Schema s;
  s.text = text;
  const size_t open = text.find('('), arrow = text.rfind("->");
  if (open == std::string::npos || arrow == std::string::npos || arrow < open)
    malformed(text, "expected 'name(params) -> returns'");
  const size_t close = text.rfind(')', arrow);
  if (close == std::string::npos || close < open) malformed(text, "unbalanced parentheses");
  s.name = trim(text.substr(0, open));
  s.returns = trim(text.substr(arrow + 2));
  bool keyword_only = false;
  for (const auto& part : split_params(text.substr(open + 1, close - open - 1))) {
    if (part == "*") {
      keyword_only = true;
      continue;
    }
    s.params.push_back(parse_param(part, text, keyword_only));
  }
  s.out_index = s.index_of("out");
  bool seen_default = false;
  for (const auto& p : s.params) {
    if (p.keyword_only) break;
    if (!p.required()) seen_default = true;
    else if (seen_default) malformed(text, "'" + p.name + "' has no default after one that has");
  }
  return s;
}

const char* type_description(ArgType t) { return kTypeNames[static_cast<int>(t)].description; }
const char* type_in_schema(ArgType t) { return kTypeNames[static_cast<int>(t)].schema; }
const char* type_in_stub(ArgType t) { return kTypeNames[static_cast<int>(t)].stub; }

}  // namespace ember::pyb
