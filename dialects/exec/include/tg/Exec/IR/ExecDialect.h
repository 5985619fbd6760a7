#ifndef TG_EXEC_IR_EXECDIALECT_H
#define TG_EXEC_IR_EXECDIALECT_H

#include "mlir/IR/Dialect.h"

#include "tg/Exec/IR/ExecOpsDialect.h.inc"

#endif
