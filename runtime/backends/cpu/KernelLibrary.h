// A kernel module (an ELF shared object held in the artifact) loaded into the
// process, and the kernels resolved from it.
#ifndef TG_RUNTIME_CPU_KERNELLIBRARY_H
#define TG_RUNTIME_CPU_KERNELLIBRARY_H

#include "tg/runtime/Artifact.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tg::runtime {

/// The C type of every compiled CPU kernel.
using KernelFn = void (*)(void **buffers);

/// What a kernel's parallel loop calls to run body(ctx, begin, end) over
/// [0, n) (the type of the library's `tg_parallel_for_hook`).
using ParallelForFn = void (*)(int64_t n, void (*body)(void *ctx, int64_t begin, int64_t end),
                               void *ctx);

class KernelLibrary {
public:
  /// Loads `module` (format ElfSharedObject), resolves all its kernels and
  /// makes their parallel loops run through `parallelFor` (libraries
  /// compiled before the CPU target parallelized loops have no hook and
  /// run serially); `what` ("model.tgx: modules[0]") prefixes messages.
  static std::unique_ptr<KernelLibrary> load(const tgx::KernelModule &module,
                                             const std::string &what,
                                             ParallelForFn parallelFor,
                                             std::string &error);
  ~KernelLibrary();
  KernelLibrary(const KernelLibrary &) = delete;
  KernelLibrary &operator=(const KernelLibrary &) = delete;

  /// The kernels, in the module's order.
  const std::vector<KernelFn> &kernels() const { return fns; }

private:
  KernelLibrary() = default;
  void *handle = nullptr;
  int memfd = -1;         // when loaded from a memfd
  std::string memfdPath;  // its /proc/self/fd path
  std::vector<KernelFn> fns;
};

} // namespace tg::runtime

#endif
