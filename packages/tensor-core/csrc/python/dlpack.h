// dlpack.h: the DLPack data structures (https://dmlc.github.io/dlpack/latest/), version 1.0,
// written out here so that the build needs no third-party header. Layouts and enumerator values
// follow the specification exactly: they are an ABI shared with every other DLPack library.
#pragma once
#include <cstdint>

extern "C" {

#define DLPACK_MAJOR_VERSION 1
#define DLPACK_MINOR_VERSION 0

// The version of the DLPack ABI a managed tensor follows.
typedef struct {
  uint32_t major;
  uint32_t minor;
} DLPackVersion;

typedef enum : int32_t {
  kDLCPU = 1,
  kDLCUDA = 2,
  kDLCUDAHost = 3,  // pinned host memory allocated through CUDA
  kDLOpenCL = 4,
  kDLVulkan = 7,
  kDLMetal = 8,
  kDLVPI = 9,
  kDLROCM = 10,
  kDLROCMHost = 11,
  kDLExtDev = 12,
  kDLCUDAManaged = 13,
  kDLOneAPI = 14,
  kDLWebGPU = 15,
  kDLHexagon = 16,
  kDLMAIA = 17,
} DLDeviceType;

typedef struct {
  DLDeviceType device_type;
  int32_t device_id;
} DLDevice;

typedef enum : uint8_t {
  kDLInt = 0U,
  kDLUInt = 1U,
  kDLFloat = 2U,
  kDLOpaqueHandle = 3U,
  kDLBfloat = 4U,
  kDLComplex = 5U,
  kDLBool = 6U,
} DLDataTypeCode;

typedef struct {
  uint8_t code;    // a DLDataTypeCode
  uint8_t bits;    // bits per lane
  uint16_t lanes;  // 1 for scalar element types
} DLDataType;

typedef struct {
  void* data;  // the element at index (0, ..., 0) is at (char*)data + byte_offset
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;    // ndim entries
  int64_t* strides;  // ndim entries, in elements; NULL means compact row-major
  uint64_t byte_offset;
} DLTensor;

// The legacy (unversioned) managed tensor, carried by a "dltensor" capsule.
typedef struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(struct DLManagedTensor* self);
} DLManagedTensor;

// Bits of DLManagedTensorVersioned::flags.
#define DLPACK_FLAG_BITMASK_READ_ONLY (1UL << 0UL)
#define DLPACK_FLAG_BITMASK_IS_COPIED (1UL << 1UL)

// The versioned managed tensor (DLPack >= 1.0), carried by a "dltensor_versioned" capsule.
typedef struct DLManagedTensorVersioned {
  DLPackVersion version;
  void* manager_ctx;
  void (*deleter)(struct DLManagedTensorVersioned* self);
  uint64_t flags;
  DLTensor dl_tensor;
} DLManagedTensorVersioned;

}  // extern "C"
