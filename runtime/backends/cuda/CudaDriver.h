// The CUDA driver API, loaded with dlopen: one runtime binary runs on
// machines without CUDA (CPU artifacts) and says clearly, for a CUDA
// artifact, that it needs a GPU. Only cuda.h's types and prototypes are used
// at build time; nothing links against libcuda.
#ifndef TG_RUNTIME_CUDA_CUDADRIVER_H
#define TG_RUNTIME_CUDA_CUDADRIVER_H

#include <cuda.h>

#include <string>

namespace tg::runtime::cuda {

// cuda.h maps some names to versioned entry points (cuMemAlloc ->
// cuMemAlloc_v2); the members and the dlsym'd names follow the same macros.
#define TG_CUDA_DRIVER_FUNCTIONS(X)                                             \
  X(cuInit) X(cuGetErrorName) X(cuGetErrorString) X(cuDeviceGet)               \
  X(cuDeviceGetCount) X(cuDeviceGetAttribute) X(cuDeviceGetName)               \
  X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease) X(cuCtxSetCurrent)  \
  X(cuModuleLoadDataEx) X(cuModuleUnload) X(cuModuleGetFunction)               \
  X(cuFuncSetAttribute)                                                        \
  X(cuMemAlloc) X(cuMemFree) X(cuMemAllocHost) X(cuMemFreeHost)                \
  X(cuMemcpyHtoD) X(cuMemcpyDtoH) X(cuMemcpyHtoDAsync) X(cuMemcpyDtoDAsync)    \
  X(cuMemsetD8) X(cuMemsetD32Async) X(cuLaunchKernel) X(cuStreamCreate) X(cuStreamDestroy)         \
  X(cuStreamSynchronize) X(cuStreamWaitEvent) X(cuStreamBeginCapture)          \
  X(cuStreamEndCapture) X(cuGraphInstantiate) X(cuGraphLaunch)                 \
  X(cuGraphDestroy) X(cuGraphExecDestroy) X(cuEventCreate) X(cuEventDestroy)   \
  X(cuEventRecord) X(cuEventSynchronize) X(cuEventElapsedTime)

/// One kernel launch: `block` threads a block over gridX x gridY blocks.
struct KernelLaunch {
  CUfunction function = nullptr;
  unsigned gridX = 1, gridY = 1, block = 1, sharedBytes = 0;
};

struct Driver {
#define TG_CUDA_DECLARE(name) decltype(&::name) name = nullptr;
  TG_CUDA_DRIVER_FUNCTIONS(TG_CUDA_DECLARE)
#undef TG_CUDA_DECLARE

  /// The process-wide driver, loaded on first use; null with `error` set
  /// when libcuda.so.1 or one of its entry points is missing.
  static const Driver *get(std::string &error);

  /// "CALL failed: CUDA_ERROR_NAME (description)".
  std::string errorText(const char *call, CUresult result) const;
};

} // namespace tg::runtime::cuda

#endif
