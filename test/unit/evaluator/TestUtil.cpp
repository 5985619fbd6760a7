#include "TestUtil.h"

#include "tg/IR/TgDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

namespace tgtest {

Program::Program(llvm::StringRef source) {
  context.loadDialect<mlir::tg::TgDialect, mlir::func::FuncDialect>();
  context.allowUnregisteredDialects();
  context.printOpOnDiagnostic(false);
  context.getDiagEngine().registerHandler([this](mlir::Diagnostic &diag) {
    messages += diag.str() + "\n";
  });
  module = mlir::parseSourceString<mlir::ModuleOp>(source, &context);
}

mlir::func::FuncOp Program::func(llvm::StringRef name) {
  return module->lookupSymbol<mlir::func::FuncOp>(name);
}

mlir::FailureOr<std::vector<Tensor>>
Program::run(llvm::StringRef name, llvm::ArrayRef<Tensor> args,
             Arithmetic arithmetic) {
  return mlir::tg::eval::evaluate(func(name), args, arithmetic);
}

Tensor randomTensor(std::vector<int64_t> shape, std::mt19937 &rng, double lo,
                    double hi) {
  Tensor t{std::move(shape), {}};
  std::uniform_real_distribution<double> dist(lo, hi);
  t.data.resize(t.numElements());
  for (double &v : t.data)
    v = dist(rng);
  return t;
}

void expectTensorNear(const Tensor &actual, const Tensor &expected,
                      double tolerance) {
  ASSERT_EQ(actual.shape, expected.shape);
  ASSERT_EQ(actual.data.size(), expected.data.size());
  for (size_t i = 0; i < actual.data.size(); ++i)
    EXPECT_NEAR(actual.data[i], expected.data[i], tolerance) << "element " << i;
}

} // namespace tgtest
