// packed_gemm.cpp - C = A @ B for a few rows of A against a B packed once and reused: the
// recurrent product of ops/rnn_layer.cpp, h (batch x H) @ W_hh^T, repeated at every time step.
// OpenBLAS packs B again on every call (1 MiB for a 256-unit LSTM) for a product of only
// batch x H x 4H multiply-adds, and ran it at about 105 GFLOP/s (16 x 256 x 1024: 79 us); packed
// once per layer call into panels, the loop below runs it at about 250 (32 us) on an AVX-512
// core. Compiled once per CPU capability (kernel.h); the AVX-512 copy's register tile is 6 rows
// x 4 vectors of 16 floats (24 of the 32 vector registers, 64-column panels), the AVX2 copy's
// 6 rows x 2 vectors of 8 (12 of the 16, 16-column panels, fused multiply-adds: 159 -> 90 us
// for that product on a Zen 4 core without AVX-512); the default copy reports width 0 and
// ember keeps OpenBLAS there.
#include "ops/cpu/kernel.h"

#include <algorithm>
#include <cstring>

#if EMBER_CPU_LEVEL == 1
#include <immintrin.h>
#endif

#include "runtime/parallel.h"

namespace ember::EMBER_CPU_NS {
namespace {

constexpr bool kHasKernel = EMBER_CPU_LEVEL >= 1;

#if EMBER_CPU_LEVEL >= 2
constexpr int64_t kPanel = 64;  // columns per panel: 4 vectors of 16 floats

typedef float v16f __attribute__((vector_size(64), aligned(4), may_alias));

// C[0:R, 0:64] = A[0:R, 0:K] @ panel (K x 64, row-major).
template <int R>
inline void tile(const float* A, int64_t lda, const float* panel, int64_t K, float* C, int64_t ldc) {
  v16f acc[R][4];
  for (int r = 0; r < R; ++r)
    for (int j = 0; j < 4; ++j) acc[r][j] = v16f{};
  for (int64_t k = 0; k < K; ++k) {
    const v16f* b = reinterpret_cast<const v16f*>(panel + k * kPanel);
    const v16f b0 = b[0], b1 = b[1], b2 = b[2], b3 = b[3];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const float a = A[r * lda + k];
      acc[r][0] += a * b0;
      acc[r][1] += a * b1;
      acc[r][2] += a * b2;
      acc[r][3] += a * b3;
    }
  }
  for (int r = 0; r < R; ++r)
    for (int j = 0; j < 4; ++j) *reinterpret_cast<v16f*>(C + r * ldc + j * 16) = acc[r][j];
}
#else
constexpr int64_t kPanel = 16;  // columns per panel: 2 vectors of 8 floats (AVX2)

// C[0:R, 0:16] = A[0:R, 0:K] @ panel (K x 16, row-major); the default copy never calls it.
template <int R>
inline void tile(const float* A, int64_t lda, const float* panel, int64_t K, float* C, int64_t ldc) {
#if EMBER_CPU_LEVEL == 1
  __m256 acc[R][2];
  for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
  for (int64_t k = 0; k < K; ++k) {
    const __m256 b0 = _mm256_loadu_ps(panel + k * kPanel), b1 = _mm256_loadu_ps(panel + k * kPanel + 8);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m256 a = _mm256_broadcast_ss(A + r * lda + k);
      acc[r][0] = _mm256_fmadd_ps(a, b0, acc[r][0]);
      acc[r][1] = _mm256_fmadd_ps(a, b1, acc[r][1]);
    }
  }
  for (int r = 0; r < R; ++r) {
    _mm256_storeu_ps(C + r * ldc, acc[r][0]);
    _mm256_storeu_ps(C + r * ldc + 8, acc[r][1]);
  }
#else
  (void)A, (void)lda, (void)panel, (void)K, (void)C, (void)ldc;
#endif
}
#endif

// Rows [0, M) of one panel into C (ldc), in tiles of 6 rows and one of the rest.
void panel_rows(const float* A, int64_t lda, const float* panel, int64_t M, int64_t K, float* C,
                int64_t ldc) {
  int64_t m = 0;
  for (; m + 6 <= M; m += 6) tile<6>(A + m * lda, lda, panel, K, C + m * ldc, ldc);
  const float* a = A + m * lda;
  float* c = C + m * ldc;
  switch (M - m) {
    case 5: tile<5>(a, lda, panel, K, c, ldc); break;
    case 4: tile<4>(a, lda, panel, K, c, ldc); break;
    case 3: tile<3>(a, lda, panel, K, c, ldc); break;
    case 2: tile<2>(a, lda, panel, K, c, ldc); break;
    case 1: tile<1>(a, lda, panel, K, c, ldc); break;
    default: break;
  }
}

}  // namespace

int64_t packed_panel_width(ScalarType dtype) {
  return kHasKernel && dtype == ScalarType::Float32 ? kPanel : 0;
}

void pack_panels(const float* B, int64_t row_stride, int64_t col_stride, int64_t K, int64_t N,
                 float* panels) {
  const int64_t npanels = (N + kPanel - 1) / kPanel;
  parallel_for(0, npanels, 1, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      float* dst = panels + p * K * kPanel;
      const int64_t n0 = p * kPanel, width = std::min(kPanel, N - n0);
      for (int64_t k = 0; k < K; ++k) {
        float* row = dst + k * kPanel;
        const float* src = B + k * row_stride + n0 * col_stride;
        for (int64_t j = 0; j < width; ++j) row[j] = src[j * col_stride];
        std::fill(row + width, row + kPanel, 0.0f);  // the last panel's columns past N
      }
    }
  });
}

void packed_gemm(const float* A, int64_t lda, const float* panels, int64_t M, int64_t N, int64_t K,
                 float* C, int64_t ldc) {
  if constexpr (kHasKernel) {
    const int64_t npanels = (N + kPanel - 1) / kPanel;
    parallel_for(0, npanels, 1, [&](int64_t p0, int64_t p1) {
      float spill[6 * kPanel];  // the last panel's tile when N is not a multiple of 64
      for (int64_t p = p0; p < p1; ++p) {
        const float* panel = panels + p * K * kPanel;
        const int64_t n0 = p * kPanel, width = std::min(kPanel, N - n0);
        if (width == kPanel) {
          panel_rows(A, lda, panel, M, K, C + n0, ldc);
          continue;
        }
        for (int64_t m = 0; m < M; m += 6) {
          const int64_t rows = std::min<int64_t>(6, M - m);
          panel_rows(A + m * lda, lda, panel, rows, K, spill, kPanel);
          for (int64_t r = 0; r < rows; ++r)
            std::memcpy(C + (m + r) * ldc + n0, spill + r * kPanel, sizeof(float) * width);
        }
      }
    });
  }
}

}  // namespace ember::EMBER_CPU_NS
