#include "tg/IR/TgDialect.h"
#include "tg/IR/TgOps.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/StringExtras.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tg;

#include "tg/IR/TgOpsDialect.cpp.inc"

void TgDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "tg/IR/TgOps.cpp.inc"
      >();
}

/// Accepts "zeros", "ones" and "normal:STD" with STD > 0.
static bool isValidInitRule(StringRef rule) {
  if (rule == "zeros" || rule == "ones")
    return true;
  double std = 0;
  return rule.consume_front("normal:") && !rule.getAsDouble(std) &&
         std::isfinite(std) && std > 0;
}

/// `tg.input` and `tg.output` must be non-empty strings.
static LogicalResult verifyName(Operation *op, StringRef what, unsigned index,
                                NamedAttribute attr) {
  auto name = dyn_cast<StringAttr>(attr.getValue());
  if (!name || name.getValue().empty())
    return op->emitOpError() << what << " #" << index << ": '"
                             << attr.getName().getValue()
                             << "' must be a non-empty string";
  return success();
}

LogicalResult TgDialect::verifyRegionArgAttribute(Operation *op,
                                                  unsigned regionIndex,
                                                  unsigned argIndex,
                                                  NamedAttribute attr) {
  if (attr.getName() == kParamAttr) {
    auto name = dyn_cast<StringAttr>(attr.getValue());
    if (!name || name.getValue().empty())
      return op->emitOpError() << "argument #" << argIndex << ": '"
                               << kParamAttr
                               << "' must be a non-empty string (the "
                                  "parameter's Hugging Face name)";
    return success();
  }
  if (attr.getName() == kInputAttr)
    return verifyName(op, "argument", argIndex, attr);
  if (attr.getName() == kInitAttr) {
    auto rule = dyn_cast<StringAttr>(attr.getValue());
    if (!rule || !isValidInitRule(rule.getValue()))
      return op->emitOpError()
             << "argument #" << argIndex << ": '" << kInitAttr
             << "' must be \"zeros\", \"ones\" or \"normal:STD\" with STD > 0";
    return success();
  }
  return op->emitOpError() << "unknown tg argument attribute '"
                           << attr.getName().getValue() << "'";
}

LogicalResult TgDialect::verifyRegionResultAttribute(Operation *op,
                                                     unsigned regionIndex,
                                                     unsigned resultIndex,
                                                     NamedAttribute attr) {
  if (attr.getName() == kOutputAttr)
    return verifyName(op, "result", resultIndex, attr);
  return op->emitOpError() << "unknown tg result attribute '"
                           << attr.getName().getValue() << "'";
}
