// The contract between tg-cpu-parallelize-loops, which outlines a kernel's
// large loops and calls a declared `<body>_launch` for each, and the host
// code generator (HostKernels.cpp), which defines those launches over the
// runtime's thread pool. The runtime finds the pool's entry point by the
// hook's name (runtime/backends/cpu/KernelLibrary.cpp spells it too).
#ifndef TG_TARGETS_CPU_PARALLELLAUNCH_H
#define TG_TARGETS_CPU_PARALLELLAUNCH_H

#include "llvm/ADT/StringRef.h"

namespace mlir::tg {

/// `@<body>_launch(iterations, captured...)` runs `@<body>(begin, end,
/// captured...)` over [0, iterations), in chunks on the thread pool.
inline constexpr llvm::StringLiteral kParallelLaunchSuffix = "_launch";

/// The kernel library's exported global
///   void (*tg_parallel_for_hook)(int64_t n,
///                                void (*body)(void *ctx, int64_t begin,
///                                             int64_t end),
///                                void *ctx);
/// null until the runtime installs its thread pool (then launches run on
/// the calling thread).
inline constexpr llvm::StringLiteral kParallelForHook = "tg_parallel_for_hook";

} // namespace mlir::tg

#endif
