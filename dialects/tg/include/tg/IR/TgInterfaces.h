#ifndef TG_IR_TGINTERFACES_H
#define TG_IR_TGINTERFACES_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpDefinition.h"

#include "tg/IR/TgInterfaces.h.inc"

#endif
