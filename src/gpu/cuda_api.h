/* SPDX-License-Identifier: MIT */
/* The few CUDA driver API types, constants and entry points railwire uses,
 * written here from NVIDIA's documented driver API (cuda.h is not needed at
 * build time; the driver is loaded at run time, see cuda_driver.h).  Values
 * are those of the documented enums; symbol names are the ones the driver
 * library exports (the _v2 names where the API was revised). */
#ifndef RW_GPU_CUDA_API_H
#define RW_GPU_CUDA_API_H

#include <stddef.h>

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
/* A host function a stream runs once the work queued before it is done
 * (cuLaunchHostFunc); it must not call the driver. */
typedef void (*CUhostFn)(void *user_data);

/* CUresult values railwire tells apart. */
#define CUDA_SUCCESS 0
#define CUDA_ERROR_INVALID_VALUE 1
#define CUDA_ERROR_OUT_OF_MEMORY 2
#define CUDA_ERROR_NOT_INITIALIZED 3
#define CUDA_ERROR_NO_DEVICE 100
#define CUDA_ERROR_INVALID_DEVICE 101
#define CUDA_ERROR_INVALID_CONTEXT 201
#define CUDA_ERROR_INVALID_HANDLE 400
#define CUDA_ERROR_NOT_READY 600
#define CUDA_ERROR_NOT_SUPPORTED 801
#define CUDA_ERROR_UNKNOWN 999

/* CUdevice_attribute */
#define CU_DEVICE_ATTRIBUTE_PCI_BUS_ID 33
#define CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID 34
#define CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID 50
#define CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED 124

/* CUpointer_attribute */
#define CU_POINTER_ATTRIBUTE_MEMORY_TYPE 2
#define CU_POINTER_ATTRIBUTE_IS_MANAGED 8
#define CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL 9
#define CU_POINTER_ATTRIBUTE_RANGE_START_ADDR 11
#define CU_POINTER_ATTRIBUTE_RANGE_SIZE 12

/* CUmemorytype */
#define CU_MEMORYTYPE_HOST 1
#define CU_MEMORYTYPE_DEVICE 2
#define CU_MEMORYTYPE_ARRAY 3
#define CU_MEMORYTYPE_UNIFIED 4

#define CU_STREAM_NON_BLOCKING 0x1
#define CU_EVENT_DISABLE_TIMING 0x2
#define CU_MEMHOSTALLOC_PORTABLE 0x1
#define CU_MEMHOSTREGISTER_PORTABLE 0x1
/* CUmemRangeHandleType */
#define CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD 0x1

/* The entry points, as X(field name, exported symbol, parameter list).
 * RW_CUDA_REQUIRED: loading fails without them.  RW_CUDA_OPTIONAL: NULL when
 * the driver lacks them (older drivers: cuMemGetHandleForAddressRange came
 * with CUDA 11.7). */
#define RW_CUDA_REQUIRED(X)                                                              \
    X(Init, cuInit, (unsigned int flags))                                              \
    X(DriverGetVersion, cuDriverGetVersion, (int *version))                            \
    X(DeviceGet, cuDeviceGet, (CUdevice * dev, int ordinal))                           \
    X(DeviceGetCount, cuDeviceGetCount, (int *count))                                  \
    X(DeviceGetAttribute, cuDeviceGetAttribute, (int *pi, int attrib, CUdevice dev))   \
    X(PointerGetAttribute, cuPointerGetAttribute,                                      \
      (void *data, int attribute, CUdeviceptr ptr))                                      \
    X(CtxGetCurrent, cuCtxGetCurrent, (CUcontext * pctx))                              \
    X(CtxSetCurrent, cuCtxSetCurrent, (CUcontext ctx))                                 \
    X(DevicePrimaryCtxRetain, cuDevicePrimaryCtxRetain, (CUcontext * pctx, CUdevice dev)) \
    X(DevicePrimaryCtxRelease, cuDevicePrimaryCtxRelease_v2, (CUdevice dev))           \
    X(MemcpyHtoDAsync, cuMemcpyHtoDAsync_v2,                                           \
      (CUdeviceptr dst, const void *src, size_t bytes, CUstream stream))                 \
    X(MemcpyDtoHAsync, cuMemcpyDtoHAsync_v2,                                           \
      (void *dst, CUdeviceptr src, size_t bytes, CUstream stream))                       \
    X(StreamCreate, cuStreamCreate, (CUstream * stream, unsigned int flags))           \
    X(StreamDestroy, cuStreamDestroy_v2, (CUstream stream))                            \
    X(StreamSynchronize, cuStreamSynchronize, (CUstream stream))                       \
    X(StreamQuery, cuStreamQuery, (CUstream stream))                                   \
    X(EventCreate, cuEventCreate, (CUevent * ev, unsigned int flags))                  \
    X(EventRecord, cuEventRecord, (CUevent ev, CUstream stream))                       \
    X(EventQuery, cuEventQuery, (CUevent ev))                                          \
    X(EventSynchronize, cuEventSynchronize, (CUevent ev))                              \
    X(EventDestroy, cuEventDestroy_v2, (CUevent ev))                                   \
    X(MemHostAlloc, cuMemHostAlloc, (void **pp, size_t bytes, unsigned int flags))     \
    X(MemFreeHost, cuMemFreeHost, (void *p))                                           \
    X(MemHostRegister, cuMemHostRegister_v2, (void *p, size_t bytes, unsigned int flags)) \
    X(MemHostUnregister, cuMemHostUnregister, (void *p))                               \
    X(GetErrorName, cuGetErrorName, (CUresult err, const char **str))                  \
    X(GetErrorString, cuGetErrorString, (CUresult err, const char **str))

#define RW_CUDA_OPTIONAL(X)                                                              \
    X(MemGetHandleForAddressRange, cuMemGetHandleForAddressRange,                      \
      (void *handle, CUdeviceptr ptr, size_t size, int type, unsigned long long flags))  \
    X(MemAlloc, cuMemAlloc_v2, (CUdeviceptr * ptr, size_t bytes))                      \
    X(MemFree, cuMemFree_v2, (CUdeviceptr ptr))                                        \
    X(CtxGetDevice, cuCtxGetDevice, (CUdevice * device))                               \
    X(LaunchHostFunc, cuLaunchHostFunc, (CUstream stream, CUhostFn fn, void *user_data))

/* Declares every entry point under its exported name (the stand-in driver
 * in tests/gpu defines them; railwire itself only calls through pointers). */
#define RW_CUDA_DECLARE(name, sym, params) CUresult sym params;

#endif
