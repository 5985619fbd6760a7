// Collectives among the ranks of a multi-rank run, behind one interface: a
// backend starts a program's Collective command and waits for it when a
// later command needs its result. The MPI implementation (mpi/) moves host
// memory between CPU ranks; a NCCL one moves device memory between GPUs.
//
// A wait never hangs: past the collective timeout it fails with a message
// naming the collective, the step, and the ranks that did not arrive.
#ifndef TG_RUNTIME_COLLECTIVES_H
#define TG_RUNTIME_COLLECTIVES_H

#include "tg/runtime/Artifact.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tg::runtime {

/// This process's place in the run: rank `rank` of `size`.
struct RankPlacement {
  int rank = 0;
  int size = 1;
};

/// Joins the run's ranks once per process (MPI_Init under mpirun, srun or
/// `tgrun -n`). A process started on its own is rank 0 of 1. Fails, with a
/// message, where the runtime was built without MPI and the launcher
/// started several ranks.
bool joinRanks(RankPlacement &out, std::string &error);

/// Ends this process's part in the run. After a clean run every rank
/// finishes together (MPI_Finalize); after a failure the process leaves at
/// once and the launcher stops the other ranks.
void finishRanks(bool clean);

/// Seconds a collective may wait for the other ranks before the run fails
/// (default 60).
void setCollectiveTimeout(double seconds);

/// The step being run (1-based), for messages about a collective that
/// waited too long or a rank stopped by its launcher.
void setCurrentStep(int64_t step);

/// A program's collectives on one rank.
class Communicator {
public:
  virtual ~Communicator() = default;
  /// Starts command `command` (a Collective) on `source` -> `target` (this
  /// rank's memory, sizes as verified).
  virtual bool start(uint32_t command, const void *source, void *target,
                     std::string &error) = 0;
  /// Completes started command `command`: returns once this rank's target
  /// holds its result, or fails after the collective timeout.
  virtual bool wait(uint32_t command, std::string &error) = 0;
  /// Lets started collectives advance while the caller computes.
  virtual void progress() = 0;
  /// Gathers `bytes` bytes from each rank along mesh axis `axis` that
  /// shares every other coordinate with rank 0 into `out` on rank 0 (axis
  /// size x `bytes`, in axis order): the pieces of a sharded tensor for the
  /// files rank 0 writes. Blocking. Every rank calls it, in the same order
  /// (on the others it only counts, so that every rank's collectives keep
  /// the same numbers for the watchdog); `out` is unused except on rank 0.
  /// `what` names the tensor in messages; fails after the collective
  /// timeout like `wait`.
  virtual bool gatherToRankZero(uint32_t axis, const void *data, uint64_t bytes, void *out,
                                const std::string &what, std::string &error) = 0;
  /// The same gather in every group of ranks along `axis`, each to its
  /// member with coordinate 0 on the axis (where `out` is used): the chunks
  /// of a ZeRO-1 moment, before its tensor-parallel shards go to rank 0.
  virtual bool gatherAlongAxis(uint32_t axis, const void *data, uint64_t bytes, void *out,
                               const std::string &what, std::string &error) = 0;
  /// Every rank of the run gives `mine` (as many words on every rank) and
  /// gets every rank's in `all`, in rank order: how the ranks agree that
  /// each wrote or read its part of a checkpoint. Blocking; fails like
  /// `wait`, after the collective timeout or 10 minutes, whichever is
  /// longer (one rank may take much longer over its part than another).
  virtual bool exchange(const std::vector<uint64_t> &mine, std::vector<uint64_t> &all,
                        const std::string &what, std::string &error) = 0;
};

/// Host-memory collectives over MPI for a verified `program` whose mesh has
/// as many devices as the run has ranks.
std::unique_ptr<Communicator> createMpiCommunicator(const tgx::Program &program,
                                                    const std::string &sourceName,
                                                    std::string &error);

} // namespace tg::runtime

#endif
