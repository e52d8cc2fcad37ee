// Copy with dtype conversion: one loop instantiated for every (dst, src) dtype pair but float32
// <-> float16/bfloat16 (a kernel per CPU capability, cpu_kernels.h), plus a tiled path for
// same-dtype 2-d transposes (x.t().contiguous()), where one side would otherwise be walked with a
// large stride and miss the cache on every element.
#include <cstring>

#include "kernels/loops.h"
#include "ops/cpu_kernels.h"
#include "ops/elementwise.h"

namespace ember {
namespace {

// One 8 x 8 block: its constant trip counts let the compiler unroll it fully and keep the
// addresses in registers (3x the speed of the loop over runtime bounds it replaced).
template <typename U>
inline void transpose_block8(U* out, const U* in, int64_t out_ld, int64_t in_ld) {
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 8; ++j) out[j * out_ld + i] = in[i * in_ld + j];
}

// out[a * out_ld + b] = in[b * in_ld + a], a along the iterator's dim 1, b along its dim 0, in
// tiles of 1 KiB square (256 x 256 floats: both sides' rows fit the L2 cache; 4096 x 4096
// floats 45 -> 24 ms against 32 x 32 tiles) walked in 8 x 8 blocks.
template <typename U>
void transpose_tiles(const ElementwiseIter& it) {
  constexpr int64_t kTile = std::max<int64_t>(64, 1024 / sizeof(U)), kBlock = 8;
  const int64_t n0 = it.shape()[0], n1 = it.shape()[1];
  const int64_t out_ld = it.strides(0)[1] / static_cast<int64_t>(sizeof(U));
  const int64_t in_ld = it.strides(1)[0] / static_cast<int64_t>(sizeof(U));
  U* out = reinterpret_cast<U*>(it.data(0));
  const U* in = reinterpret_cast<const U*>(it.data(1));
  auto edge = [&](int64_t a0, int64_t a1, int64_t b0, int64_t b1) {
    for (int64_t a = a0; a < a1; ++a)
      for (int64_t b = b0; b < b1; ++b) out[a * out_ld + b] = in[b * in_ld + a];
  };
  parallel_for(0, n1, std::max<int64_t>(kBlock, kGrainSize / std::max<int64_t>(n0, 1)),
               [&](int64_t ab, int64_t ae) {
    for (int64_t a0 = ab; a0 < ae; a0 += kTile) {
      const int64_t a1 = std::min(ae, a0 + kTile);
      for (int64_t b0 = 0; b0 < n0; b0 += kTile) {
        const int64_t b1 = std::min(n0, b0 + kTile);
        int64_t a = a0;
        for (; a + kBlock <= a1; a += kBlock) {
          int64_t b = b0;
          for (; b + kBlock <= b1; b += kBlock)
            transpose_block8(out + a * out_ld + b, in + b * in_ld + a, out_ld, in_ld);
          edge(a, a + kBlock, b, b1);
        }
        edge(a, a1, b0, b1);
      }
    }
  });
}

}  // namespace

void run_copy_kernel(const ElementwiseIter& it, ScalarType dst, ScalarType src) {
  const int64_t sz = static_cast<int64_t>(itemsize(dst));
  // Same dtype, both sides one contiguous run (the iterator coalesces): memcpy in parallel
  // chunks. glibc's copy uses the CPU's widest moves; the typed loop below, compiled for the
  // baseline, ran at 0.6x its speed (1 MiB: 49 us against torch's 31).
  if (dst == src && it.ndim() == 1 && it.strides(0)[0] == sz && it.strides(1)[0] == sz) {
    char* out = it.data(0);
    const char* in = it.data(1);
    parallel_for(0, it.numel(), kGrainSize * 4, [&](int64_t b, int64_t e) {
      std::memcpy(out + b * sz, in + b * sz, static_cast<size_t>((e - b) * sz));
    });
    return;
  }
  // Same dtype, rows contiguous on both sides (dim 0 is the iterator's fastest): a memcpy per
  // row of at least 256 bytes (a broadcast bias into Linear's output: 768 x 384 floats 63 ->
  // 23 us, torch 23; a slice of a wider matrix).
  if (dst == src && it.ndim() == 2 && it.strides(0)[0] == sz && it.strides(1)[0] == sz &&
      it.shape()[0] * sz >= 256) {
    const int64_t row_bytes = it.shape()[0] * sz;
    const int64_t out_stride = it.strides(0)[1], in_stride = it.strides(1)[1];
    char* out = it.data(0);
    const char* in = it.data(1);
    parallel_for(0, it.shape()[1], std::max<int64_t>(1, kGrainSize * 4 / it.shape()[0]),
                 [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r)
        std::memcpy(out + r * out_stride, in + r * in_stride, static_cast<size_t>(row_bytes));
    });
    return;
  }
  if (dst == src && it.ndim() == 2 && it.numel() >= 4096) {
    // Output contiguous along dim 0, input contiguous along dim 1: a transpose.
    if (it.strides(0)[0] == sz && it.strides(1)[1] == sz && it.strides(1)[0] != sz &&
        it.strides(1)[0] != 0) {
      switch (sz) {
        case 1: return transpose_tiles<uint8_t>(it);
        case 2: return transpose_tiles<uint16_t>(it);
        case 4: return transpose_tiles<uint32_t>(it);
        case 8: return transpose_tiles<uint64_t>(it);
        case 16: return transpose_tiles<Bytes16>(it);
      }
    }
  }
  // Any other same-dtype copy (strided, or a broadcast value: fill_, expand().contiguous()):
  // the bits, by element size. The typed loop loaded float16 as float32 and converted it back
  // (2.7 ns an element in the baseline's scalar conversion; a fill 7x slower than float32's).
  if (dst == src) {
    const auto bits = [](auto x) { return x; };
    switch (sz) {
      case 1: return run_elementwise<uint8_t, uint8_t>(it, bits);
      case 2: return run_elementwise<uint16_t, uint16_t>(it, bits);
      case 4: return run_elementwise<uint32_t, uint32_t>(it, bits);
      case 8: return run_elementwise<uint64_t, uint64_t>(it, bits);
    }
  }
  // float32/64 <-> float16/bfloat16: the CPU's widest copy converts (F16C, AVX-512); float64
  // through float32 (the baseline's scalar float16 conversion ran at 1/40 of torch's speed).
  const auto wide_float = [](ScalarType t) {
    return t == ScalarType::Float32 || t == ScalarType::Float64;
  };
  if ((wide_float(dst) && is_reduced_float(src)) || (wide_float(src) && is_reduced_float(dst)))
    return cpu_kernels().convert_reduced_float(it, dst, src);
  dispatch_every(dst, "copy_", [&](auto dtag) {
    using D = typename decltype(dtag)::type;
    dispatch_every(src, "copy_", [&](auto stag) {
      using S = typename decltype(stag)::type;
      constexpr bool reduced = std::is_same_v<D, Half> || std::is_same_v<D, BFloat16> ||
                               std::is_same_v<S, Half> || std::is_same_v<S, BFloat16>;
      constexpr bool with_wide = std::is_same_v<D, float> || std::is_same_v<S, float> ||
                                 std::is_same_v<D, double> || std::is_same_v<S, double>;
      // cast_to converts each loaded value (loaded in S's compute type) to D.
      if constexpr (!(reduced && with_wide)) run_elementwise<D, S>(it, [](auto x) { return x; });
    });
  });
}

}  // namespace ember
