// loops.h: inner loops for ElementwiseIter. A kernel is a plain functor over "opmath" values
// (float for the 16-bit floats); these templates load each operand from its storage type,
// call the functor and store the result. The contiguous and scalar-operand paths are written
// as plain indexed loops over typed pointers so the compiler vectorises them.
#pragma once
#include <type_traits>
#include <utility>

#include "core/dtype.h"
#include "kernels/iterator.h"

namespace ember {

template <typename To, typename From> inline To cast_to(From v) {
  if constexpr (std::is_same_v<To, From>) return v;
  // complex -> real keeps the real part (torch warns about that in copy_); complex -> bool is
  // true when either part is nonzero; real -> complex has a zero imaginary part.
  else if constexpr (is_complex_v<From> && is_complex_v<To>) return To(v);
  else if constexpr (is_complex_v<From> && std::is_same_v<To, bool>)
    return v.real() != 0 || v.imag() != 0;
  else if constexpr (is_complex_v<From>) return cast_to<To>(v.real());
  else if constexpr (is_complex_v<To>)
    return To(static_cast<typename To::value_type>(cast_to<double>(v)), 0);
  else if constexpr (std::is_same_v<To, bool>) return static_cast<double>(v) != 0;
  else if constexpr (std::is_same_v<To, Half> || std::is_same_v<To, BFloat16>)
    return To(static_cast<float>(v));
  else if constexpr (std::is_unsigned_v<To> && sizeof(To) > 1 && !std::is_integral_v<From>)
    return unsigned_from_double<To>(static_cast<double>(v));  // (dtype.h: torch's conversion)
  else if constexpr (std::is_same_v<From, Half> || std::is_same_v<From, BFloat16>)
    return static_cast<To>(static_cast<float>(v));
  else return static_cast<To>(v);
}

// Out: storage type of the output; In...: storage types of the inputs; f takes opmath values.
// flatten: f and everything it calls are inlined into the loops, or they would not vectorise;
// GCC stops inlining on its own once a file of many kernels has grown by its unit-growth limit.
// noinline: one copy of the loops per kernel, called per run of the innermost dim from both of
// for_each's paths (inlined into each, they doubled the kernels' code and compile time).
template <typename Out, typename... In, typename F, size_t... I>
__attribute__((flatten, noinline)) void nary_loop_impl(char** data, const int64_t* s, int64_t n, F& f,
                           std::index_sequence<I...>) {
  constexpr int64_t out_size = sizeof(Out);
  const bool contiguous = s[0] == out_size && ((s[I + 1] == int64_t(sizeof(In))) && ...);
  if (contiguous) {
    Out* __restrict__ o = reinterpret_cast<Out*>(data[0]);
    std::tuple<const In*...> in{reinterpret_cast<const In*>(data[I + 1])...};
    for (int64_t i = 0; i < n; ++i)
      o[i] = cast_to<Out>(f(static_cast<opmath_t<In>>(std::get<I>(in)[i])...));
    return;
  }
  if constexpr (sizeof...(In) == 2) {
    using A = std::tuple_element_t<0, std::tuple<In...>>;
    using B = std::tuple_element_t<1, std::tuple<In...>>;
    if (s[0] == out_size) {
      Out* __restrict__ o = reinterpret_cast<Out*>(data[0]);
      if (s[1] == int64_t(sizeof(A)) && s[2] == 0) {  // tensor op scalar
        const A* a = reinterpret_cast<const A*>(data[1]);
        const auto b = static_cast<opmath_t<B>>(*reinterpret_cast<const B*>(data[2]));
        for (int64_t i = 0; i < n; ++i) o[i] = cast_to<Out>(f(static_cast<opmath_t<A>>(a[i]), b));
        return;
      }
      if (s[1] == 0 && s[2] == int64_t(sizeof(B))) {  // scalar op tensor
        const auto a = static_cast<opmath_t<A>>(*reinterpret_cast<const A*>(data[1]));
        const B* b = reinterpret_cast<const B*>(data[2]);
        for (int64_t i = 0; i < n; ++i) o[i] = cast_to<Out>(f(a, static_cast<opmath_t<B>>(b[i])));
        return;
      }
    }
  }
  if constexpr (sizeof...(In) == 3) {  // where(cond, x, scalar) and other ternaries with a scalar
    using A = std::tuple_element_t<0, std::tuple<In...>>;
    using B = std::tuple_element_t<1, std::tuple<In...>>;
    using C = std::tuple_element_t<2, std::tuple<In...>>;
    if (s[0] == out_size && s[1] == int64_t(sizeof(A)) && s[2] == int64_t(sizeof(B)) && s[3] == 0) {
      Out* __restrict__ o = reinterpret_cast<Out*>(data[0]);
      const A* a = reinterpret_cast<const A*>(data[1]);
      const B* b = reinterpret_cast<const B*>(data[2]);
      const auto c = static_cast<opmath_t<C>>(*reinterpret_cast<const C*>(data[3]));
      for (int64_t i = 0; i < n; ++i)
        o[i] = cast_to<Out>(f(static_cast<opmath_t<A>>(a[i]), static_cast<opmath_t<B>>(b[i]), c));
      return;
    }
  }
  char* o = data[0];
  std::array<char*, sizeof...(In)> in{data[I + 1]...};
  for (int64_t i = 0; i < n; ++i) {
    *reinterpret_cast<Out*>(o) =
        cast_to<Out>(f(static_cast<opmath_t<In>>(*reinterpret_cast<const In*>(in[I]))...));
    o += s[0];
    ((in[I] += s[I + 1]), ...);
  }
}

// nary_loop_impl as an ElementwiseIter::LoopFn (ctx: the functor).
template <typename F, typename Out, typename... In>
void nary_loop_fn(const void* f, char** data, const int64_t* strides, int64_t n) {
  nary_loop_impl<Out, In...>(data, strides, n, *const_cast<F*>(static_cast<const F*>(f)),
                             std::index_sequence_for<In...>{});
}

template <typename Out, typename... In, typename F>
void run_elementwise(const ElementwiseIter& it, F f, int64_t grain = kGrainSize) {
  it.for_each_fn(&nary_loop_fn<F, Out, In...>, &f, grain);
}

}  // namespace ember
