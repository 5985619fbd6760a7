// The CPU backend: native kernels from ELF shared objects, OpenBLAS for
// Gemm commands, memmove for Copy, over one host arena.
#ifndef TG_RUNTIME_CPU_CPUBACKEND_H
#define TG_RUNTIME_CPU_CPUBACKEND_H

#include "tg/runtime/Backend.h"

namespace tg::runtime {

std::unique_ptr<Backend> createCpuBackend(const tgx::Program &program,
                                          const std::string &sourceName,
                                          std::string &error);

} // namespace tg::runtime

#endif
