// Copy with dtype conversion: one loop instantiated for every (dst, src) dtype pair.
#include "kernels/loops.h"
#include "ops/elementwise.h"

namespace ember {

void run_copy_kernel(const ElementwiseIter& it, ScalarType dst, ScalarType src) {
  dispatch_all(dst, "copy_", [&](auto dtag) {
    using D = typename decltype(dtag)::type;
    dispatch_all(src, "copy_", [&](auto stag) {
      using S = typename decltype(stag)::type;
      // cast_to converts each loaded value (loaded in S's compute type) to D.
      run_elementwise<D, S>(it, [](auto x) { return x; });
    });
  });
}

}  // namespace ember
