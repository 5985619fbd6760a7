// The CUDA target: kernels on memrefs -> GPU kernels (tg-cuda-map-kernels)
// -> NVVM -> PTX for one chip -> an exec.binary (tg-cuda-serialize-kernels).
#ifndef TG_TARGETS_CUDATARGET_H
#define TG_TARGETS_CUDATARGET_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"

#include <cstdint>
#include <string>

namespace mlir {
class DialectRegistry;
class OpPassManager;
namespace tg {

struct CudaTargetOptions {
  std::string chip = "sm_90a";
  /// The PTX ISA version: sm_90a needs PTX 8.0 or later.
  std::string features = "+ptx80";
  int64_t smCount = 132; // H100 SXM
  bool approximateHalfMath = true; // tg-cuda-approximate-half-math
  /// Registers a thread of a row phase may use at most (0: what its block
  /// allows); tg-cuda-map-kernels' row-registers.
  int64_t rowRegisters = 0;
  /// The most terms a thread adds of a float64 sum in float32 (0: none);
  /// tg-cuda-map-kernels' f32-partial-terms.
  int64_t f32PartialTerms = 256;
  /// The fewest rows of a thread's share of a split column sum;
  /// tg-cuda-map-kernels' column-share.
  int64_t columnShare = 32;
  /// The last block of a split column sum's row group combines the group's
  /// partials, not a second launch; tg-cuda-map-kernels'
  /// last-block-combines.
  bool lastBlockCombines = false;
  /// A row phase and the column sums over its rows after it in one launch;
  /// tg-cuda-map-kernels' column-sums-in-row-pass.
  bool columnSumsInRowPass = false;
};

/// Registers what the CUDA target's passes need: the gpu, nvvm and vector
/// dialects, their lowerings to LLVM and the NVVM target (PTX writer).
void registerCudaTarget(DialectRegistry &registry);

/// Adds the passes that map a kernel module to GPU kernels and compile them
/// to PTX (a gpu.binary in the module). `pm` runs on the kernel module.
void addCudaKernelLoweringPasses(OpPassManager &pm,
                                 const CudaTargetOptions &options);

namespace cuda {

/// One GPU launch of a kernel: entry `symbol` on `grid` blocks of `block`
/// threads.
struct Launch {
  std::string symbol;
  int64_t grid = 1;
  int64_t block = 1;
  int64_t sharedBytes = 0;
};

/// The kernel module attribute listing, per kernel, its name, operand count
/// and launches (set by tg-cuda-map-kernels, read by the serializer).
inline constexpr llvm::StringLiteral kKernelsAttr = "tg.cuda_kernels";

DictionaryAttr kernelAttr(OpBuilder &b, StringRef name, int64_t operands,
                          ArrayRef<Launch> launches);

} // namespace cuda
} // namespace tg
} // namespace mlir

#endif
