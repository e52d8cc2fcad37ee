// onednn.h - float32 convolutions through oneDNN, an optional library loaded at run time.
//
// Why: ember's im2col + OpenBLAS GEMM convolution runs at 0.55-0.75x of torch's, which calls
// oneDNN's JIT-generated direct convolutions (blocked layouts, no column matrix). Writing kernels
// of that quality is oneDNN's whole job, so ember uses the library when it is installed
// (`pip install onednn-cpu-gomp`, the extra `ember-tensor[onednn]`) and keeps its own kernels
// otherwise: the build needs no oneDNN, and nothing changes for a user without it.
//
// Like OpenBLAS (runtime/blas.h), the library is dlopen()ed on first use from the paths the Python
// layer supplies at import, so `import ember` does not pay for it. Plans (primitive descriptors,
// primitives and the reorders between ember's plain layouts and the library's blocked ones) are
// built once per shape and kept.
#pragma once

#include <cstdint>
#include <string>

#include "ops/conv_geometry.h"

namespace ember {
namespace onednn {

// Candidate library paths, tried in order (a soname such as "libdnnl.so.3" goes through the normal
// search). Setting paths after a failed load allows a retry.
void set_library_paths(const std::string& colon_separated);

// ember.backends.mkldnn.enabled (and EMBER_ONEDNN=0, read once, which turns it off).
void set_enabled(bool enabled);
bool enabled();

// Loads the library (once); false if it cannot be loaded. load_error() says why.
bool available();
std::string load_error();
// "3.2.0 (...)" once loaded, "" otherwise.
std::string version();

// One pass of a convolution seen from its big and small sides (ops/conv.h), groups G, batch N,
// S/B channels on the small/big side:
//   Forward:  small = conv(big, W)            a = big,   b = W,   out = small
//   Adjoint:  big   = conv^T(small, W)        a = small, b = W,   out = big
//   Weight:   W     = grad_W(small, big)      a = small, b = big, out = W (overwritten)
// channels_last: the big and small sides are laid out (N, spatial..., C) (torch's channels_last
// memory format, no reorder needed); weights_channels_last (groups 1): W (and its gradient) is
// laid out (S, k..., B), as torch's channels_last weights, else (S, B/G, k...).
// Returns false, having written nothing, when oneDNN is disabled, unavailable or has no
// implementation for this geometry; the caller then runs its own kernels.
enum class Pass { Forward, Adjoint, Weight };
bool convolution(Pass pass, const ConvGeometry& g, int64_t N, int64_t S, int64_t B, int64_t G,
                 const float* a, const float* b, float* out, bool channels_last = false,
                 bool weights_channels_last = false);

// Passes oneDNN has run in this process: tests check which kernels a shape took.
int64_t calls();

}  // namespace onednn
}  // namespace ember
