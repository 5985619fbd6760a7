#include "tg/Exec/IR/ExecDialect.h"
#include "tg/Exec/IR/ExecOps.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::tg::exec;

#include "tg/Exec/IR/ExecOpsDialect.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "tg/Exec/IR/ExecOpsTypes.cpp.inc"

void ExecDialect::initialize() {
  addTypes<
#define GET_TYPEDEF_LIST
#include "tg/Exec/IR/ExecOpsTypes.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "tg/Exec/IR/ExecOps.cpp.inc"
      >();
}
