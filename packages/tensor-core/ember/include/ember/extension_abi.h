/* extension_abi.h: the C interface between ember's core (ember._C) and compiled user extensions.
 *
 * The core exports no C++ symbols (csrc/exports.map), and its C++ classes are free to change
 * between releases. What an extension may use is this table of plain C functions, handed out
 * as the PyCapsule `ember._C._extension_api`. <ember/extension.h> wraps it in C++; extensions
 * include that header, not this one.
 *
 * Compatibility: EMBER_EXTENSION_ABI_VERSION grows by one whenever fields are appended to
 * EmberExtensionApi; fields are never removed, reordered or changed. An extension built against
 * version N runs on any core whose table has version >= N (the header checks this when the
 * extension first reaches the core). The dtype and device codes below are fixed forever.
 */
#ifndef EMBER_EXTENSION_ABI_H
#define EMBER_EXTENSION_ABI_H

#include <Python.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define EMBER_EXTENSION_ABI_VERSION 1
#define EMBER_EXTENSION_CAPSULE "ember._C._extension_api"

/* Scalar types: the values of ember's dtypes, in the core's order. */
enum EmberDType {
  EMBER_BOOL = 0,
  EMBER_UINT8 = 1,
  EMBER_INT8 = 2,
  EMBER_INT16 = 3,
  EMBER_INT32 = 4,
  EMBER_INT64 = 5,
  EMBER_FLOAT16 = 6,
  EMBER_BFLOAT16 = 7,
  EMBER_FLOAT32 = 8,
  EMBER_FLOAT64 = 9,
  EMBER_COMPLEX64 = 10,
  EMBER_COMPLEX128 = 11,
  EMBER_UINT16 = 12,
  EMBER_UINT32 = 13,
  EMBER_UINT64 = 14
};

enum EmberDeviceType { EMBER_CPU = 0, EMBER_CUDA = 1 };

/* What an extension sees of a tensor. `sizes` and `strides` (in elements) point into the
 * tensor and stay valid while the Python object lives and is not resized. */
typedef struct EmberTensorInfo {
  void* data;              /* the first element; device memory for a CUDA tensor */
  const int64_t* sizes;
  const int64_t* strides;
  int64_t ndim;
  int32_t dtype;           /* enum EmberDType */
  int32_t device_type;     /* enum EmberDeviceType */
  int32_t device_index;    /* -1 for the CPU */
  int32_t requires_grad;
} EmberTensorInfo;

/* One chunk of a parallel_for: returns 0, or nonzero to report a failure (the C++ header keeps
 * the exception and rethrows it in the calling thread). Runs without the GIL above the grain. */
typedef int (*EmberRangeFn)(void* ctx, int64_t begin, int64_t end);

typedef struct EmberExtensionApi {
  uint32_t abi_version;    /* EMBER_EXTENSION_ABI_VERSION of the core */
  uint32_t struct_size;    /* sizeof(EmberExtensionApi) in the core */

  /* All functions but parallel_for's chunks are called with the GIL held. Those returning a
   * PyObject* return a new reference, or NULL with a Python exception set. */

  /* Fills *info for an ember Tensor: 0; anything else: -1 with a TypeError set. */
  int (*tensor_info)(PyObject* obj, EmberTensorInfo* info);
  /* A new contiguous tensor from the core's allocator (uninitialised / zero-filled). */
  PyObject* (*empty)(const int64_t* sizes, int64_t ndim, int32_t dtype, int32_t device_type,
                     int32_t device_index);
  PyObject* (*zeros)(const int64_t* sizes, int64_t ndim, int32_t dtype, int32_t device_type,
                     int32_t device_index);
  /* The core's thread pool: splits [begin, end) into chunks of at least `grain` and calls
   * fn(ctx, chunk_begin, chunk_end) on its threads, the caller taking one chunk. Returns 0, or
   * the first nonzero value a chunk returned (the other chunks still ran), or -1 with a Python
   * exception set when the pool itself failed. */
  int (*parallel_for)(int64_t begin, int64_t end, int64_t grain, EmberRangeFn fn, void* ctx);
  int (*get_num_threads)(void);
} EmberExtensionApi;

#ifdef __cplusplus
}
#endif

#endif /* EMBER_EXTENSION_ABI_H */
