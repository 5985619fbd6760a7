// A runtime built without MPI runs single-rank programs only, and says so
// when a launcher starts it as one of several ranks.
#include "tg/runtime/Collectives.h"

#include <cstdlib>

namespace tg::runtime {

bool joinRanks(RankPlacement &out, std::string &error) {
  out = RankPlacement{};
  for (const char *name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS"})
    if (const char *size = std::getenv(name); size && std::atoi(size) > 1) {
      error = std::string("the launcher started this process as one of several ranks (") +
              name + "=" + size +
              "), but this runtime was built without MPI: install Open MPI's development "
              "files (libopenmpi-dev) and rebuild it";
      return false;
    }
  return true;
}

void finishRanks(bool) {}

std::unique_ptr<Communicator> createMpiCommunicator(const tgx::Program &,
                                                    const std::string &sourceName,
                                                    std::string &error) {
  error = sourceName + ": the program runs on several ranks, but this runtime was built "
                       "without MPI: install Open MPI's development files "
                       "(libopenmpi-dev) and rebuild it";
  return nullptr;
}

} // namespace tg::runtime
