#ifndef TG_PASSES_PROGRAM_H
#define TG_PASSES_PROGRAM_H

#include "mlir/IR/BuiltinOps.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mlir::func {
class FuncOp;
}

namespace mlir::tg {

/// A byte range of the program's arena.
struct ArenaRange {
  uint64_t offset = 0, size = 0;
};

/// A named tensor of the step's interface (a parameter, optimizer state, an
/// input or an output) and where it lives.
struct ProgramSlot {
  std::string name;
  Type elementType;
  SmallVector<int64_t> shape;
  ArenaRange range;
};

struct ProgramParameter {
  std::string name; // Hugging Face name
  std::string init; // "zeros" | "ones" | "normal:STD"
  unsigned slot = 0, adamMSlot = 0, adamVSlot = 0;
};

struct ProgramConstant {
  ArenaRange range;
  std::vector<uint8_t> bytes;
};

/// out[b] = op(a[b]) x op(b[b]); strides in elements, 0 = shared by batches.
struct GemmCall {
  Type elementType;
  bool transposeA = false, transposeB = false;
  int64_t m = 0, n = 0, k = 0, batch = 1;
  int64_t strideA = 0, strideB = 0, strideC = 0;
};

struct ProgramCommand {
  enum class Kind { Kernel, Gemm, Copy } kind;
  unsigned kernel = 0; // Kernel: index into Program::kernelNames
  GemmCall gemm;       // Gemm
  std::vector<ArenaRange> operands;
  std::string label; // the op it came from
};

/// A training step lowered to a flat command list over one arena: what the
/// artifact stores, before the kernels are compiled for a target.
struct Program {
  uint64_t arenaBytes = 0;
  uint64_t stateBytes = 0;      // parameters, optimizer state, I/O, constants
  uint64_t paramBytes = 0;      // trainable parameters
  uint64_t optimizerBytes = 0;  // AdamW moments
  uint64_t peakWorkingBytes = 0; // activations and temporaries at the peak
  std::vector<ProgramSlot> slots;
  std::vector<ProgramParameter> parameters;
  std::vector<ProgramConstant> constants;
  std::vector<ProgramCommand> commands;
  /// One func.func per distinct kernel, on memrefs (operands then results),
  /// named as in kernelNames.
  OwningOpRef<ModuleOp> kernels;
  std::vector<std::string> kernelNames;
  /// Buffers each kernel takes (its operands, then its results).
  std::vector<unsigned> kernelOperandCounts;
};

enum class GemmLowering { Library, Generated };

struct LoweringOptions {
  /// Library: matmuls become Gemm commands (BLAS / cuBLAS); Generated: loop
  /// kernels like every other op.
  GemmLowering gemm = GemmLowering::Library;
};

/// Lowers `@train_step` (after tg-decompose-attention) to a Program: plans the
/// arena (liveness-based, with reuse), updates state in place where it can,
/// and outlines every remaining op into a kernel, identical kernels shared.
/// Emits diagnostics and fails on ops it cannot lower.
FailureOr<Program> lowerToProgram(func::FuncOp step,
                                  const LoweringOptions &options);

} // namespace mlir::tg

#endif
