// errors.h: exception types of the core. The Python binding layer maps each to the Python
// exception a PyTorch user expects (ValueError, TypeError, IndexError, RuntimeError,
// MemoryError, NotImplementedError); the core itself never includes Python.
#pragma once
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace ember {

struct TypeError : std::runtime_error { using std::runtime_error::runtime_error; };
struct ValueError : std::runtime_error { using std::runtime_error::runtime_error; };
struct IndexError : std::runtime_error { using std::runtime_error::runtime_error; };
struct NotImplementedError : std::runtime_error { using std::runtime_error::runtime_error; };
struct OutOfMemoryError : std::runtime_error { using std::runtime_error::runtime_error; };
struct OverflowError : std::runtime_error { using std::runtime_error::runtime_error; };
// RuntimeError is std::runtime_error itself.

namespace detail {
inline void append(std::ostringstream&) {}
template <typename T, typename... Rest>
void append(std::ostringstream& os, const T& v, const Rest&... rest) {
  os << v;
  append(os, rest...);
}
}  // namespace detail

template <typename... Args> std::string str_cat(const Args&... args) {
  std::ostringstream os;
  detail::append(os, args...);
  return os.str();
}

inline std::string shape_str(const std::vector<int64_t>& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

#define EMBER_CHECK(cond, ExcType, ...) \
  do {                                  \
    if (!(cond)) throw ExcType(::ember::str_cat(__VA_ARGS__)); \
  } while (0)

}  // namespace ember
