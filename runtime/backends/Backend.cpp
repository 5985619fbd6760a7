// Picks the backend for a program's target.
#include "tg/runtime/Backend.h"

#ifdef TG_HAVE_CPU_BACKEND
#include "cpu/CpuBackend.h"
#endif
#ifdef TG_HAVE_CUDA_BACKEND
#include "cuda/CudaBackend.h"
#endif

namespace tg::runtime {

std::unique_ptr<Backend> createBackend(const tgx::Program &program,
                                       const std::string &sourceName,
                                       std::string &error) {
  for (int64_t d : *program.mesh()->shape())
    if (d != 1) {
      error = sourceName + ": the program is laid out for a multi-device mesh, which this "
                           "runtime cannot run yet; compile it for a single device";
      return nullptr;
    }
  switch (program.target()) {
  case tgx::Target_Cpu:
#ifdef TG_HAVE_CPU_BACKEND
    return createCpuBackend(program, sourceName, error);
#else
    error = sourceName + ": the program targets the CPU, but this runtime was built "
                         "without its CPU backend (no OpenBLAS at build time)";
    return nullptr;
#endif
  case tgx::Target_Cuda:
#ifdef TG_HAVE_CUDA_BACKEND
    return createCudaBackend(program, sourceName, error);
#else
    error = sourceName + ": the program was compiled for CUDA, but this runtime was "
                         "built without its CUDA backend (no CUDA headers at build "
                         "time): rebuild it on a machine with the CUDA toolkit, or "
                         "compile the model for the CPU (tgc compile ... --target cpu)";
    return nullptr;
#endif
  }
  error = sourceName + ": the program targets " + tgx::EnumNameTarget(program.target()) +
          ", which this runtime does not know";
  return nullptr;
}

#ifndef TG_HAVE_CPU_BACKEND
void setCpuThreads(int) {}
#endif

} // namespace tg::runtime
