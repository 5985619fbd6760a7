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
                                       const RankPlacement &placement,
                                       std::string &error) {
  int64_t devices = meshDevices(*program.mesh());
  if (devices != placement.size) {
    std::string n = std::to_string(devices);
    error = sourceName + ": the program is compiled for " + n + " rank" +
            (devices > 1 ? "s" : "") + " (mesh " + meshText(*program.mesh()) + "), but this run has " +
            std::to_string(placement.size) + "; " +
            (devices > 1 ? "start it with tgrun -n " + n + " (or mpirun -n " + n +
                               ", srun --mpi=pmix -n " + n + ")"
                         : "start it as one process, or compile it for the run's ranks "
                           "(tgc compile ... --mesh dp=" + std::to_string(placement.size) + ")");
    return nullptr;
  }
  switch (program.target()) {
  case tgx::Target_Cpu: {
#ifdef TG_HAVE_CPU_BACKEND
    std::unique_ptr<Communicator> communicator;
    if (devices > 1 && !(communicator = createMpiCommunicator(program, sourceName, error)))
      return nullptr;
    return createCpuBackend(program, sourceName, std::move(communicator), error);
#else
    error = sourceName + ": the program targets the CPU, but this runtime was built "
                         "without its CPU backend (no OpenBLAS at build time)";
    return nullptr;
#endif
  }
  case tgx::Target_Cuda:
#ifdef TG_HAVE_CUDA_BACKEND
    if (devices > 1) {
      error = sourceName + ": the program runs on " + std::to_string(devices) +
              " GPUs, but the CUDA backend's collectives (NCCL) are not written yet; "
              "compile multi-rank programs for the CPU (--target cpu)";
      return nullptr;
    }
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
int getCpuThreads() { return 1; }
std::string betterBlasCore() { return ""; }
#endif

} // namespace tg::runtime
