// The reference evaluator: interprets a func.func made of tg ops on host
// tensors. It is the golden model every compiler pass is checked against, so
// it is written for clarity, not speed.
#ifndef TG_EVALUATOR_EVALUATOR_H
#define TG_EVALUATOR_EVALUATOR_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Support/LLVM.h"

#include <cstdint>
#include <vector>

namespace mlir::tg::eval {

/// A dense row-major host tensor. Integer tensors hold their values as
/// doubles.
struct Tensor {
  std::vector<int64_t> shape;
  std::vector<double> data;

  int64_t numElements() const;
};

enum class Arithmetic {
  /// Every op computes in double, whatever the declared float types: the
  /// golden mode.
  Float64,
  /// Every op computes in double, then each float result (and each float
  /// argument on entry) is rounded to its declared element type, round to
  /// nearest even. This is how f32, bf16 and f16 programs evaluate.
  Declared,
};

/// Evaluates `func` on `args` (one per function argument, shapes as
/// declared). Errors (a wrong argument, an unsupported op, an out-of-range
/// index) are emitted as diagnostics on the function or the op at fault.
FailureOr<std::vector<Tensor>> evaluate(func::FuncOp func,
                                        ArrayRef<Tensor> args,
                                        Arithmetic arithmetic);

/// `value` rounded to the float type `type` (f16, bf16, f32 or f64); integer
/// types leave it unchanged.
double roundToType(double value, Type type);

} // namespace mlir::tg::eval

#endif
