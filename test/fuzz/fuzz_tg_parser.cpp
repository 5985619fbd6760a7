// Fuzz target: the MLIR parser with the tg and func dialects, then the
// verifier (every op's verifier, the tg ones included). The input is a
// .mlir file's text. A fresh context per input, so that nothing one input
// creates (types, attributes, interned strings) grows across the run.
#include "tg/IR/TgDialect.h"
#include "tg/IR/TgOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"

#include "llvm/ADT/StringRef.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static mlir::DialectRegistry *registry = [] {
    auto *r = new mlir::DialectRegistry;
    r->insert<mlir::tg::TgDialect, mlir::func::FuncDialect>();
    return r;
  }();
  mlir::MLIRContext context(*registry, mlir::MLIRContext::Threading::DISABLED);
  context.loadAllAvailableDialects();
  // Diagnostics are expected (most inputs are invalid); keep them quiet.
  mlir::ScopedDiagnosticHandler quiet(&context, [](mlir::Diagnostic &) {
    return mlir::success();
  });
  // The MLIR lexer reads the byte after the last one and expects a NUL there
  // (files come through null-terminated MemoryBuffers); a std::string has it.
  std::string text(reinterpret_cast<const char *>(data), size);
  mlir::ParserConfig config(&context, /*verifyAfterParse=*/false);
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(text, config, "fuzz.mlir");
  if (!module)
    return 0;
  if (mlir::failed(mlir::verify(*module)))
    return 0;
  // A verified module prints, and what it prints parses and verifies again
  // (the custom assembly formats of the tg ops round-trip).
  std::string printed;
  llvm::raw_string_ostream os(printed);
  module->print(os);
  mlir::ParserConfig again(&context, /*verifyAfterParse=*/true);
  if (!mlir::parseSourceString<mlir::ModuleOp>(printed, again, "printed.mlir")) {
    std::fprintf(stderr, "printed module:\n%s\n", printed.c_str());
    std::fprintf(stderr, "tg fuzz: invariant violated: a verified module does not "
                         "parse again after printing\n");
    std::abort();
  }
  return 0;
}

// libMLIR.so is not instrumented, but LLVM's allocators are header templates
// that poison their free slab memory when compiled with AddressSanitizer: an
// instrumented copy that poisons, mixed with an uninstrumented one that does
// not unpoison, reports use-after-poison in correct code. User poisoning off.
extern "C" const char *__asan_default_options() { return "allow_user_poisoning=0"; }
