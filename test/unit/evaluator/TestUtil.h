// Helpers shared by the evaluator tests: parsing tg programs, random tensors
// and tensor comparisons.
#ifndef TG_TEST_UNIT_EVALUATOR_TESTUTIL_H
#define TG_TEST_UNIT_EVALUATOR_TESTUTIL_H

#include "tg/Evaluator/Evaluator.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"

#include <random>
#include <string>

namespace tgtest {
using mlir::tg::eval::Arithmetic;
using mlir::tg::eval::Tensor;

/// A parsed module of tg functions; diagnostics are collected, not printed.
class Program {
public:
  explicit Program(llvm::StringRef source);

  bool parsed() const { return static_cast<bool>(module); }
  /// The function @name.
  mlir::func::FuncOp func(llvm::StringRef name);
  mlir::FailureOr<std::vector<Tensor>>
  run(llvm::StringRef name, llvm::ArrayRef<Tensor> args,
      Arithmetic arithmetic = Arithmetic::Float64);
  /// Everything diagnosed so far, one message per line.
  const std::string &diagnostics() const { return messages; }

private:
  mlir::MLIRContext context;
  std::string messages;
  mlir::OwningOpRef<mlir::ModuleOp> module;
};

/// Uniform values in [lo, hi).
Tensor randomTensor(std::vector<int64_t> shape, std::mt19937 &rng,
                    double lo = -1, double hi = 1);

/// Expects equal shapes and |actual - expected| <= tolerance elementwise.
void expectTensorNear(const Tensor &actual, const Tensor &expected,
                      double tolerance = 1e-12);

} // namespace tgtest

#endif
