// onednn_api.h - the part of oneDNN's v3 C API (dnnl.h) that ember calls, declared here because
// the library is loaded at run time from a wheel that ships no headers (onednn-cpu-gomp). The
// numbers are those of oneDNN 3.x's dnnl_types.h, stable across the 3.x ABI; runtime/onednn.cpp
// refuses a library whose major version is not 3.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ember {
namespace dnnl {

struct Engine;
struct Stream;
struct MemoryDesc;
struct Memory;
struct PrimitiveDesc;
struct Primitive;
struct PrimitiveAttr;

using status_t = int;
using dims_t = int64_t[12];  // DNNL_MAX_NDIMS

constexpr status_t kSuccess = 0;
constexpr int kEngineCpu = 1;
constexpr unsigned kStreamDefaultFlags = 1;
constexpr int kF32 = 3;

// memory format tags
constexpr int kFormatAny = 1;
constexpr int kTag_a3 = 4, kTag_a4 = 5, kTag_a5 = 6, kTag_a6 = 7;  // abc, abcd, abcde, abcdef
// ncw/oiw, nchw/oihw/goiw, ncdhw/oidhw/goihw, goidhw: the plain row-major tags by rank
inline int plain_tag(int ndims) { return ndims == 3 ? kTag_a3 : ndims == 4 ? kTag_a4 : ndims == 5 ? kTag_a5 : kTag_a6; }
// nwc, nhwc, ndhwc: channels last (acb, acdb, acdeb)
constexpr int kTag_acb = 15, kTag_acdb = 22, kTag_acdeb = 33;
inline int channels_last_tag(int ndims) { return ndims == 3 ? kTag_acb : ndims == 4 ? kTag_acdb : kTag_acdeb; }

// propagation and algorithm kinds
constexpr int kForwardTraining = 64;
constexpr int kConvolutionDirect = 1;

// attributes: the scratchpad handed in by the caller (dnnl_scratchpad_mode_user)
constexpr int kScratchpadModeUser = 1;

// queries
constexpr int kQueryScratchpadMd = 136;
constexpr int kQuerySrcMd = 129, kQueryDiffSrcMd = 130, kQueryWeightsMd = 131,
              kQueryDiffWeightsMd = 132, kQueryDstMd = 133, kQueryDiffDstMd = 134;

// execution argument indices
constexpr int kArgScratchpad = 80;
constexpr int kArgSrc = 1, kArgDst = 17, kArgWeights = 33, kArgDiffSrc = 129, kArgDiffDst = 145,
              kArgDiffWeights = 161, kArgFrom = 1, kArgTo = 17;

struct ExecArg {
  int arg;
  Memory* memory;
};

struct Version {
  int major, minor, patch;
  const char* hash;
  unsigned cpu_runtime, gpu_runtime;
};

// Function types, named after the C functions without their dnnl_ prefix.
using version_fn = const Version* (*)();
using engine_create_fn = status_t (*)(Engine**, int kind, size_t index);
using stream_create_fn = status_t (*)(Stream**, Engine*, unsigned flags);
using stream_wait_fn = status_t (*)(Stream*);
using memory_desc_create_with_tag_fn = status_t (*)(MemoryDesc**, int ndims, const dims_t dims,
                                                    int data_type, int tag);
using memory_desc_destroy_fn = status_t (*)(MemoryDesc*);
using memory_desc_equal_fn = int (*)(const MemoryDesc*, const MemoryDesc*);
using memory_desc_get_size_fn = size_t (*)(const MemoryDesc*);
using memory_create_fn = status_t (*)(Memory**, const MemoryDesc*, Engine*, void* handle);
using memory_destroy_fn = status_t (*)(Memory*);
using conv_forward_pd_create_fn = status_t (*)(PrimitiveDesc**, Engine*, int prop_kind, int alg_kind,
                                               const MemoryDesc* src, const MemoryDesc* weights,
                                               const MemoryDesc* bias, const MemoryDesc* dst,
                                               const dims_t strides, const dims_t dilates,
                                               const dims_t padding_l, const dims_t padding_r,
                                               const PrimitiveAttr*);
using conv_backward_data_pd_create_fn = status_t (*)(PrimitiveDesc**, Engine*, int alg_kind,
                                                     const MemoryDesc* diff_src,
                                                     const MemoryDesc* weights,
                                                     const MemoryDesc* diff_dst, const dims_t strides,
                                                     const dims_t dilates, const dims_t padding_l,
                                                     const dims_t padding_r,
                                                     const PrimitiveDesc* hint_fwd,
                                                     const PrimitiveAttr*);
using conv_backward_weights_pd_create_fn = status_t (*)(PrimitiveDesc**, Engine*, int alg_kind,
                                                        const MemoryDesc* src,
                                                        const MemoryDesc* diff_weights,
                                                        const MemoryDesc* diff_bias,
                                                        const MemoryDesc* diff_dst,
                                                        const dims_t strides, const dims_t dilates,
                                                        const dims_t padding_l,
                                                        const dims_t padding_r,
                                                        const PrimitiveDesc* hint_fwd,
                                                        const PrimitiveAttr*);
using reorder_pd_create_fn = status_t (*)(PrimitiveDesc**, const MemoryDesc* src, Engine*,
                                          const MemoryDesc* dst, Engine*, const PrimitiveAttr*);
using primitive_desc_query_md_fn = const MemoryDesc* (*)(const PrimitiveDesc*, int what, int index);
using primitive_attr_create_fn = status_t (*)(PrimitiveAttr**);
using primitive_attr_destroy_fn = status_t (*)(PrimitiveAttr*);
using primitive_attr_set_scratchpad_mode_fn = status_t (*)(PrimitiveAttr*, int mode);
using primitive_desc_destroy_fn = status_t (*)(PrimitiveDesc*);
using primitive_create_fn = status_t (*)(Primitive**, const PrimitiveDesc*);
using primitive_execute_fn = status_t (*)(const Primitive*, Stream*, int nargs, const ExecArg* args);
using primitive_destroy_fn = status_t (*)(Primitive*);

}  // namespace dnnl
}  // namespace ember
