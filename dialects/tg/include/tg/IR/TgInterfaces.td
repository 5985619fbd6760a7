#ifndef TG_INTERFACES_TD
#define TG_INTERFACES_TD

include "mlir/IR/OpBase.td"

def Tg_DifferentiableOpInterface : OpInterface<"DifferentiableOpInterface"> {
  let description = [{
    An op that states its own vector-Jacobian product, so reverse-mode
    autodiff stays generic: a new op brings its gradient with it. Ops without
    this interface are rejected by the autodiff pass when they lie on the path
    from a parameter to the loss.
  }];
  let cppNamespace = "::mlir::tg";
  let methods = [
    InterfaceMethod<[{
        Emits ops computing the gradient of every operand from the gradients
        of the results (`resultGrads`, one per result, never null). Returns one
        value per operand: its gradient, shaped like the operand, or a null
        value for operands that carry no gradient (integer indices).
      }],
      "::llvm::SmallVector<::mlir::Value>", "buildVjp",
      (ins "::mlir::OpBuilder &":$builder, "::mlir::Location":$loc,
           "::mlir::ValueRange":$resultGrads)>,
  ];
}

#endif // TG_INTERFACES_TD
