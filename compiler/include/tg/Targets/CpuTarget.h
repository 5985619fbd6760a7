#ifndef TG_TARGETS_CPUTARGET_H
#define TG_TARGETS_CPUTARGET_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mlir {
class OpPassManager;
namespace tg {

/// A host shared object holding the compiled kernels.
struct HostKernels {
  std::vector<uint8_t> sharedObject;
  /// Exported symbols, in the order of the kernel names: each has the C type
  /// void(void **buffers), buffers[i] being the kernel's i-th memref.
  std::vector<std::string> symbols;
  std::string cpu; // the CPU the code was tuned for
};

/// Adds the passes taking a kernel module (func.func on memrefs with
/// linalg/scf/arith/math) to the LLVM dialect with bare-pointer kernels.
/// `pm` runs on the kernel module itself.
void addCpuKernelLoweringPasses(OpPassManager &pm);

/// Translates a kernel module in the LLVM dialect to LLVM IR, adds a
/// `NAME_packed(void **)` entry per kernel in `names`, optimizes it at O3 for
/// the host CPU and links a shared object with the system C compiler driver
/// (`cc`, or $TG_CC).
llvm::Expected<HostKernels> serializeHostKernels(ModuleOp llvmKernels,
                                                 ArrayRef<std::string> names);

/// Both of the above, for a kernel module on memrefs (used by tests).
llvm::Expected<HostKernels> compileHostKernels(ModuleOp kernels,
                                               ArrayRef<std::string> names);

} // namespace tg
} // namespace mlir

#endif
