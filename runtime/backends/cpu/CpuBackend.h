// The CPU backend: native kernels from ELF shared objects, OpenBLAS for
// Gemm commands, memmove for Copy, MPI for Collective, over one host arena.
#ifndef TG_RUNTIME_CPU_CPUBACKEND_H
#define TG_RUNTIME_CPU_CPUBACKEND_H

#include "tg/runtime/Backend.h"
#include "tg/runtime/Collectives.h"

namespace tg::runtime {

/// `communicator` runs the program's collectives (null for one rank).
std::unique_ptr<Backend> createCpuBackend(const tgx::Program &program,
                                          const std::string &sourceName,
                                          std::unique_ptr<Communicator> communicator,
                                          std::string &error);

} // namespace tg::runtime

#endif
