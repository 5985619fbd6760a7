#ifndef TG_TARGETS_CPUTARGET_H
#define TG_TARGETS_CPUTARGET_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mlir::tg {

/// A host shared object holding the compiled kernels.
struct HostKernels {
  std::vector<uint8_t> sharedObject;
  /// Exported symbols, in the order of the kernel names: each has the C type
  /// void(void **buffers), buffers[i] being the kernel's i-th memref.
  std::vector<std::string> symbols;
  std::string cpu; // the CPU the code was tuned for
};

/// Lowers `kernels` (func.func on memrefs, linalg/scf/arith/math) to LLVM,
/// optimizes it at O3 for the host CPU and links a shared object with the
/// system C compiler driver (`cc`, or $TG_CC).
llvm::Expected<HostKernels> compileHostKernels(ModuleOp kernels,
                                               ArrayRef<std::string> names);

} // namespace mlir::tg

#endif
