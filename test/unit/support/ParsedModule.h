// A tg module parsed from source for unit tests, with its diagnostics
// collected (not printed) so a test can show them when it fails.
#ifndef TG_TEST_UNIT_SUPPORT_PARSEDMODULE_H
#define TG_TEST_UNIT_SUPPORT_PARSEDMODULE_H

#include "tg/IR/TgDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/Parser/Parser.h"

#include <string>

namespace tgtest {

struct ParsedModule {
  mlir::MLIRContext context;
  std::string diagnostics;
  mlir::OwningOpRef<mlir::ModuleOp> module;

  explicit ParsedModule(const std::string &source) {
    context.loadDialect<mlir::tg::TgDialect, mlir::func::FuncDialect>();
    context.printOpOnDiagnostic(false);
    context.getDiagEngine().registerHandler([this](mlir::Diagnostic &diag) {
      diagnostics += diag.str() + "\n";
    });
    module = mlir::parseSourceString<mlir::ModuleOp>(source, &context);
  }

  mlir::func::FuncOp func(llvm::StringRef name) {
    return module->lookupSymbol<mlir::func::FuncOp>(name);
  }
};

} // namespace tgtest

#endif
