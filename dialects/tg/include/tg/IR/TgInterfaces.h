#ifndef TG_IR_TGINTERFACES_H
#define TG_IR_TGINTERFACES_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpDefinition.h"

/// The op-kind traits of TgInterfaces.td (Tg_HasKernelBody, Tg_Elementwise):
/// markers, queried with op->hasTrait<...>().
namespace mlir::tg::TgOpTrait {

/// The CPU lowering has a kernel body for the op (emitKernelBody).
template <typename ConcreteType>
class HasKernelBody
    : public ::mlir::OpTrait::TraitBase<ConcreteType, HasKernelBody> {};

/// Result element i is computed from the operand elements at index i (read
/// with numpy broadcasting) only.
template <typename ConcreteType>
class Elementwise
    : public ::mlir::OpTrait::TraitBase<ConcreteType, Elementwise> {};

} // namespace mlir::tg::TgOpTrait

#include "tg/IR/TgInterfaces.h.inc"

#endif
