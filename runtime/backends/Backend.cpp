// Picks the backend for a program's target.
#include "tg/runtime/Backend.h"

#include "cpu/CpuBackend.h"

namespace tg::runtime {

std::unique_ptr<Backend> createBackend(const tgx::Program &program,
                                       const std::string &sourceName,
                                       std::string &error) {
  switch (program.target()) {
  case tgx::Target_Cpu:
    return createCpuBackend(program, sourceName, error);
  case tgx::Target_Cuda:
    break;
  }
  error = sourceName + ": the program targets " +
          tgx::EnumNameTarget(program.target()) +
          ", which this runtime cannot run (it has the CPU backend only); "
          "compile the model for the CPU";
  return nullptr;
}

} // namespace tg::runtime
