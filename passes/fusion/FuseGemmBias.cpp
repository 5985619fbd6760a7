// exec-fuse-gemm-bias: a GEMM whose product only feeds a bias add (a kernel
// that is one tg.add of the product and a vector along its last dim) writes
// the sum directly, with the bias as the GEMM's epilogue: one kernel, one
// pass over the activation and one scratch buffer fewer per biased linear.
#include "tg/Exec/IR/ExecOps.h"
#include "tg/IR/TgOps.h"
#include "tg/Passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::tg {
#define GEN_PASS_DEF_EXECFUSEGEMMBIAS
#include "tg/Passes/Passes.h.inc"

namespace {

/// The operand index (0 or 1) of the bias if `kernel` (on tensors) computes
/// exactly add(product, bias) or add(bias, product), with a rank-1 bias as
/// long as the product's last dim; -1 otherwise.
int biasOperandOf(func::FuncOp kernel) {
  Block &body = kernel.getBody().front();
  if (kernel.getNumArguments() != 2 || body.getOperations().size() != 2)
    return -1;
  auto add = dyn_cast<AddOp>(body.front());
  auto ret = dyn_cast<func::ReturnOp>(body.back());
  if (!add || !ret || ret.getNumOperands() != 1 ||
      ret.getOperand(0) != add.getResult())
    return -1;
  for (int bias : {1, 0}) {
    auto product = dyn_cast<BlockArgument>(add->getOperand(1 - bias));
    auto vector = dyn_cast<BlockArgument>(add->getOperand(bias));
    if (!product || !vector || product == vector)
      continue;
    auto productType = cast<RankedTensorType>(product.getType());
    auto vectorType = cast<RankedTensorType>(vector.getType());
    if (vectorType.getRank() == 1 && productType.getRank() >= 1 &&
        vectorType.getDimSize(0) == productType.getShape().back() &&
        productType == add.getResult().getType())
      return int(vector.getArgNumber());
  }
  return -1;
}

struct FuseGemmBiasPass : impl::ExecFuseGemmBiasBase<FuseGemmBiasPass> {
  using ExecFuseGemmBiasBase::ExecFuseGemmBiasBase;

  void runOnOperation() override {
    SymbolTableCollection symbols;
    llvm::SetVector<Operation *> fusedKernels;
    getOperation().walk([&](exec::DispatchOp dispatch) {
      if (dispatch.getInputs().size() != 2 || dispatch.getOutputs().size() != 1)
        return;
      auto kernel = symbols.lookupNearestSymbolFrom<func::FuncOp>(
          dispatch, dispatch.getKernel());
      if (!kernel || kernel.isExternal())
        return;
      int biasIndex = biasOperandOf(kernel);
      if (biasIndex < 0)
        return;
      std::string why = fuse(dispatch, biasIndex);
      if (why.empty())
        fusedKernels.insert(kernel);
      if (remarks && !why.empty())
        dispatch.emitRemark()
            << "bias add not fused into a GEMM's epilogue: " << why;
    });
    exec::eraseUndispatchedKernels(getOperation(), fusedKernels.getArrayRef());
  }

  /// Makes the GEMM that writes the bias add's product write the sum, with
  /// the bias as its epilogue, and erases the add; or says why not.
  std::string fuse(exec::DispatchOp dispatch, int biasIndex) {
    Value product = dispatch.getInputs()[1 - biasIndex];
    Value bias = dispatch.getInputs()[biasIndex];
    // The product must be the GEMM's alone: written by it, read by the add.
    exec::GemmOp gemm =
        exec::getGemmWriter(product, dispatch, /*onlyReader=*/true);
    if (!gemm || gemm.getBias())
      return "the product is not a scratch buffer written by one GEMM and read "
             "by the add alone";
    // Contiguous batches (bias rows follow each other in c); no timepoint
    // yet awaits the add (the pass runs before exec-insert-timepoints).
    Value out = dispatch.getOutputs()[0];
    if (out.getType() != product.getType() ||
        gemm.getStrideC() != gemm.getM() * gemm.getN() ||
        !dispatch.getDone().use_empty())
      return "the GEMM's output is not the add's output's layout, or is "
             "awaited";
    // The bias must hold its value when the GEMM runs: no command between
    // the two may write it (a bias computed after the GEMM, such as the
    // vocabulary mask of a tensor-parallel loss, stays a separate add).
    for (Operation *user : bias.getUsers())
      if (user != dispatch && user->getBlock() == gemm->getBlock() &&
          gemm->isBeforeInBlock(user) && user->isBeforeInBlock(dispatch))
        return "a command between the GEMM and the add writes the bias";
    // The add's operands and output must exist where the GEMM runs; a
    // resource declared later (it has no operands) moves up to it.
    SmallVector<Operation *> later;
    for (Value v : {bias, out}) {
      Operation *def = v.getDefiningOp();
      if (!def || def->getBlock() != gemm->getBlock() ||
          def->isBeforeInBlock(gemm))
        continue;
      if (!isa<exec::ResourceOp>(def) || def->getNumOperands() != 0)
        return "the bias or the output is made after the GEMM runs";
      later.push_back(def);
    }
    for (Operation *def : later)
      exec::moveBeforeInOrder(def, gemm);
    if (remarks)
      dispatch.emitRemark()
          << "bias add fused into the GEMM's epilogue: the GEMM writes the "
             "sum, and its product is never stored";
    gemm.getCMutable().assign(out);
    gemm.getBiasMutable().assign(bias);
    dispatch.erase();
    product.getDefiningOp()->erase();
    return "";
  }
};

} // namespace
} // namespace mlir::tg
