#ifndef TG_RUNTIME_CUDA_CUDABACKEND_H
#define TG_RUNTIME_CUDA_CUDABACKEND_H

#include "tg/runtime/Backend.h"

namespace tg::runtime {

/// The CUDA backend: the arena in one device allocation, PTX kernels loaded
/// through the driver, GEMMs through cuBLASLt, the program's streams and
/// awaits as CUDA streams and events, and the step captured once into a
/// CUDA graph and replayed. Fails with a message (no GPU, no driver, a chip
/// the PTX was not compiled for) instead of crashing.
std::unique_ptr<Backend> createCudaBackend(const tgx::Program &program,
                                           const std::string &sourceName,
                                           std::string &error);

} // namespace tg::runtime

#endif
