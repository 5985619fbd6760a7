// The interface between a session and the device that runs its program.
// A backend owns the arena (`Program.arena_bytes`, every slot at a fixed
// offset) and executes the command list over it. The session reaches the
// arena only through read/write, so a device-memory backend (CUDA) fits the
// same interface as the CPU one.
#ifndef TG_RUNTIME_BACKEND_H
#define TG_RUNTIME_BACKEND_H

#include "tg/runtime/Artifact.h"
#include "tg/runtime/Collectives.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tg::runtime {

class Backend {
public:
  virtual ~Backend() = default;

  /// Copies `size` bytes from `src` to arena offset `offset`; the range has
  /// been verified to lie in the arena.
  virtual bool write(uint64_t offset, const void *src, uint64_t size,
                     std::string &error) = 0;
  /// Copies `size` bytes at arena offset `offset` to `dst`.
  virtual bool read(uint64_t offset, void *dst, uint64_t size,
                    std::string &error) const = 0;
  /// Executes every command of the program in order.
  virtual bool run(std::string &error) = 0;
  /// run(), timing each command: `start[i]` and `seconds[i]` (both in
  /// seconds, starts relative to the first command's) for command i. Wall
  /// time on the CPU; device time from events on a GPU, where the commands
  /// of different streams may overlap.
  virtual bool runProfiled(std::vector<double> &start,
                           std::vector<double> &seconds,
                           std::string &error) = 0;
};

/// A backend for a verified `program` (which must outlive it), with a zeroed
/// arena holding the program's constants, run as `placement`'s rank: the
/// program's mesh must have as many devices as the run has ranks.
/// `sourceName` is used in messages.
std::unique_ptr<Backend> createBackend(const tgx::Program &program,
                                       const std::string &sourceName,
                                       const RankPlacement &placement,
                                       std::string &error);

/// Threads the CPU backend runs a step on, process-wide: one pool for the
/// generated kernels' parallel loops and the matrix products (OpenBLAS
/// single-threaded on blocks of them). Until this is called, as many as
/// OpenBLAS would have used itself (OPENBLAS_NUM_THREADS, or one per core).
void setCpuThreads(int threads);
/// The threads of that pool now (1 without the CPU backend).
int getCpuThreads();

/// The OpenBLAS core type (OPENBLAS_CORETYPE) this process should have
/// loaded OpenBLAS with, where OpenBLAS did not know this CPU and chose
/// kernels without AVX2 although it has AVX2 or AVX-512 (cpu/BlasCore.cpp);
/// empty where its choice is right, OPENBLAS_CORETYPE was set, or there is
/// no CPU backend.
std::string betterBlasCore();

} // namespace tg::runtime

#endif
