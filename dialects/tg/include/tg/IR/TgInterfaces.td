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
    InterfaceMethod<[{
        Whether this instance has a VJP (an op whose attributes select a
        non-differentiable variant, such as an all-reduce max, says no and
        is rejected like an op without the interface).
      }],
      "bool", "hasVjp", (ins), [{}], [{ return true; }]>,
  ];
}

//===----------------------------------------------------------------------===//
// Op kinds. A tg op states what kind of op it is here, once, in its trait
// list; passes ask `op->hasTrait<TgOpTrait::...>()` or the interface instead
// of keeping their own lists of op classes.
//===----------------------------------------------------------------------===//

class Tg_NativeOpTrait<string name> : NativeOpTrait<name> {
  let cppNamespace = "::mlir::tg::TgOpTrait";
}

// The CPU lowering emits loops for the op (passes/lowering/KernelBodies.cpp,
// one emitter per op). Ops without it are views (reshape), data (constant) or
// decomposed before lowering (attention, attention_grad).
def Tg_HasKernelBodyTrait : Tg_NativeOpTrait<"HasKernelBody">;
// Each result element is a function of the operand elements at the same
// index, operands read with numpy broadcasting (one linalg.generic, the op's
// scalar computation inside). Implies a kernel body.
def Tg_ElementwiseTrait : Tg_NativeOpTrait<"Elementwise">;

// What op definitions list.
def Tg_HasKernelBody : TraitList<[Tg_HasKernelBodyTrait]>;
def Tg_Elementwise : TraitList<[Tg_ElementwiseTrait, Tg_HasKernelBodyTrait]>;

def Tg_FlopCountOpInterface : OpInterface<"FlopCountOpInterface"> {
  let description = [{
    An op that does GEMM work (matmul, attention): it states its
    multiply-add FLOPs (2 per multiply-add) from its static shapes, so the
    FLOP count of a function is the sum over its ops.
  }];
  let cppNamespace = "::mlir::tg";
  let methods = [
    InterfaceMethod<[{
        The GEMM FLOPs of this op: 2 * (multiply-adds), from static shapes.
      }],
      "int64_t", "getFlops", (ins)>,
  ];
}

def Tg_FlopCount : DeclareOpInterfaceMethods<Tg_FlopCountOpInterface>;

#endif // TG_INTERFACES_TD
