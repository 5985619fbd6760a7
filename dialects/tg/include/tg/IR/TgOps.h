#ifndef TG_IR_TGOPS_H
#define TG_IR_TGOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "tg/IR/Rope.h"
#include "tg/IR/TgDialect.h"
#include "tg/IR/TgInterfaces.h"
#include "llvm/ADT/DenseSet.h"

#include "tg/IR/TgOpsEnums.h.inc"

#define GET_OP_CLASSES
#include "tg/IR/TgOps.h.inc"

#endif
