// exec-fuse-gemm-activation: GELU (tanh approximation) after a GEMM, and its
// gradient after the GEMM that computes the gradient of its output, become
// the GEMMs' epilogues (cuBLASLt's GELU_AUX(_BIAS) and DGELU): the MLP's
// hidden activation is written once by the GEMM instead of written, read
// and written again by a kernel, forward and backward. The sums of GELU's
// gradient over the rows (the gradient of the bias before GELU) then come
// from that GEMM too (DGELU_BGRAD), instead of a kernel reading it again.
#include "tg/Exec/IR/ExecOps.h"
#include "tg/IR/TgOps.h"
#include "tg/Passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallPtrSet.h"

namespace mlir::tg {
#define GEN_PASS_DEF_EXECFUSEGEMMACTIVATION
#include "tg/Passes/Passes.h.inc"

namespace {

struct FuseGemmActivationPass
    : impl::ExecFuseGemmActivationBase<FuseGemmActivationPass> {
  using Base::Base;

  void runOnOperation() override {
    SymbolTableCollection symbolTables;
    symbols = &symbolTables;
    fusedKernels.clear();
    erased.clear();
    SmallVector<exec::DispatchOp> dispatches;
    getOperation().walk([&](exec::DispatchOp dispatch) { dispatches.push_back(dispatch); });
    for (exec::DispatchOp dispatch : dispatches) {
      if (erased.contains(dispatch))
        continue; // a bias gradient's sum, folded with the GEMM before it
      Operation *op = exec::getSoleKernelOp(dispatch, *symbols);
      if (auto gelu = dyn_cast_or_null<GeluOp>(op))
        foldGelu(dispatch, gelu);
      else if (auto grad = dyn_cast_or_null<GeluGradOp>(op))
        foldGeluGrad(dispatch, grad);
    }
    exec::eraseUndispatchedKernels(getOperation(), fusedKernels.getArrayRef());
  }

private:
  /// Why `gemm` (non-null) cannot take an activation epilogue writing `out`
  /// in place of `dispatch`, or "".
  std::string refusal(exec::GemmOp gemm, exec::DispatchOp dispatch, Value out,
                      GeluApproximation approximation) {
    if (approximation != GeluApproximation::tanh)
      return "it is the exact (erf) GELU; cuBLASLt's epilogues compute the tanh "
             "approximation";
    if (gemm.getActivation() != exec::GemmActivation::none)
      return "the GEMM has an activation epilogue already";
    if (gemm.getBatch() != 1 || !(gemm.getLdc() == 0 || gemm.getLdc() == gemm.getN()))
      return "the GEMM is batched or writes a strided product";
    if (gemm.getN() % 8 != 0)
      return "its rows of " + std::to_string(gemm.getN()) +
             " elements are no multiple of 8, which cuBLASLt's aux needs";
    if (!wide && !isa<BFloat16Type, Float16Type>(gemm.getC().getType().getElementType()))
      return "it is not a 16-bit product: on CUDA, f32 and f64 GELUs keep their kernels";
    if (out.getType() != gemm.getC().getType() || !dispatch.getDone().use_empty())
      return "its output is not the product's shape, or a command awaits it";
    // `out` gets written when the GEMM runs: it must exist there, and no
    // command between the two may touch it.
    Operation *def = out.getDefiningOp();
    if (def && def->getBlock() == gemm->getBlock() && gemm->isBeforeInBlock(def) &&
        !(isa<exec::ResourceOp>(def) && def->getNumOperands() == 0))
      return "its output is defined after the GEMM";
    for (Operation *user : out.getUsers())
      if (user != dispatch && user->getBlock() == gemm->getBlock() &&
          gemm->isBeforeInBlock(user) && user->isBeforeInBlock(dispatch))
        return "a command between the GEMM and it uses its output";
    return "";
  }

  /// The GEMM writes `out` instead of `dispatch`, with `activation` and
  /// `aux`.
  void fold(exec::GemmOp gemm, exec::DispatchOp dispatch, Value out, Value aux,
            exec::GemmActivation activation) {
    if (Operation *def = out.getDefiningOp())
      if (def->getBlock() == gemm->getBlock() && gemm->isBeforeInBlock(def))
        exec::moveBeforeInOrder(def, gemm);
    gemm.getCMutable().assign(out);
    gemm.getAuxMutable().assign(aux);
    gemm.setActivation(activation);
    fusedKernels.insert(symbols->lookupNearestSymbolFrom(dispatch, dispatch.getKernel()));
    dispatch.erase();
  }

  void report(exec::DispatchOp dispatch, StringRef op, const std::string &why) {
    if (remarks)
      dispatch.emitRemark() << op << " not folded into a GEMM epilogue: " << why;
  }

  /// out = gelu(product): the GEMM writes out, and the product (the
  /// gradient's input) as aux.
  void foldGelu(exec::DispatchOp dispatch, GeluOp gelu) {
    Value product = dispatch.getInputs()[0], out = dispatch.getOutputs()[0];
    // Others read the product too: the gradient reads it from aux.
    exec::GemmOp gemm =
        exec::getGemmWriter(product, dispatch, /*onlyReader=*/false);
    if (!gemm)
      return report(dispatch, "gelu", "its input is not written by one GEMM before it");
    if (std::string why = refusal(gemm, dispatch, out, gelu.getApproximate()); !why.empty())
      return report(dispatch, "gelu", why);
    if (remarks)
      dispatch.emitRemark() << "gelu folded into the GEMM's epilogue ("
                            << (gemm.getBias() ? "GELU_AUX_BIAS" : "GELU_AUX")
                            << "): the GEMM writes it, and keeps its input for the gradient";
    fold(gemm, dispatch, out, product, exec::GemmActivation::gelu_tanh);
  }

  /// out = gelu'(x) * product, the product read by nothing else: the GEMM
  /// applies the derivative at x (aux) and writes out.
  void foldGeluGrad(exec::DispatchOp dispatch, GeluGradOp grad) {
    Value x = dispatch.getInputs()[0], product = dispatch.getInputs()[1];
    Value out = dispatch.getOutputs()[0];
    exec::GemmOp gemm =
        exec::getGemmWriter(product, dispatch, /*onlyReader=*/true);
    if (!gemm)
      return report(dispatch, "gelu_grad",
                    "its input is not the product of one GEMM before it, read by it alone");
    std::string why = refusal(gemm, dispatch, out, grad.getApproximate());
    if (why.empty() && gemm.getBias())
      why = "the GEMM adds a bias, which DGELU does not";
    if (why.empty() && x.getType() != product.getType())
      why = "GELU's input is not the product's shape";
    // x must hold its value when the GEMM runs.
    if (why.empty())
      for (Operation *user : x.getUsers())
        if (user->getBlock() == gemm->getBlock() && gemm->isBeforeInBlock(user) &&
            user->isBeforeInBlock(dispatch) &&
            llvm::is_contained(exec::getWrittenBuffers(user), x))
          why = "a command between the GEMM and it writes GELU's input";
    if (!why.empty())
      return report(dispatch, "gelu_grad", why);
    if (remarks)
      dispatch.emitRemark() << "gelu_grad folded into the GEMM's epilogue (DGELU): "
                               "the GEMM's product is never stored";
    auto resource = product.getDefiningOp<exec::ResourceOp>();
    fold(gemm, dispatch, out, x, exec::GemmActivation::gelu_tanh_grad);
    resource.erase();
    if (biasGrad)
      foldColumnSum(gemm);
  }

  /// Whether `sum` adds up its input's rows: every axis but the last.
  static bool sumsRows(ReduceSumOp sum) {
    int64_t rank = cast<ShapedType>(sum.getInput().getType()).getRank();
    llvm::SmallDenseSet<int64_t> axes = sum.getReducedAxes();
    return rank >= 2 && int64_t(axes.size()) == rank - 1 && !axes.contains(rank - 1);
  }

  /// Why `dispatch`, which sums the rows of the DGELU GEMM's c, cannot
  /// become the GEMM's bias gradient, or "". Writes are told apart by the
  /// storage they land in (through views and packs).
  static std::string biasGradRefusal(exec::GemmOp gemm, exec::DispatchOp dispatch) {
    Value sums = dispatch.getOutputs()[0];
    auto resource = sums.getDefiningOp<exec::ResourceOp>();
    if (!resource || resource.getKind() != exec::ResourceKind::scratch || resource.getUpdates() ||
        resource.getPack())
      return "its sums are not a scratch buffer of their own";
    auto type = cast<MemRefType>(sums.getType());
    if (type.getElementType() != gemm.getC().getType().getElementType() ||
        type.getNumElements() != int64_t(gemm.getN()))
      return "its sums are not the GEMM's n elements in its element type";
    if (!dispatch.getDone().use_empty())
      return "a command awaits it";
    if (dispatch->getBlock() != gemm->getBlock() || !gemm->isBeforeInBlock(dispatch))
      return "it does not follow the GEMM";
    exec::ResourceOp product = exec::getStorage(gemm.getC());
    bool between = false;
    for (Operation &op : *gemm->getBlock()) {
      between = (between || &op == gemm.getOperation()) && &op != dispatch.getOperation();
      if (&op == gemm.getOperation() || &op == dispatch.getOperation() || !exec::isCommand(&op))
        continue;
      for (Value written : exec::getWrittenBuffers(&op)) {
        exec::ResourceOp storage = exec::getStorage(written);
        if (storage == resource)
          return "another command writes its sums";
        if (between && storage == product)
          return "a command between the GEMM and it writes the GEMM's product";
      }
    }
    return "";
  }

  /// The dispatch summing the rows of `gemm`'s c (GELU's gradient: the
  /// gradient of the bias before GELU), if any, becomes the GEMM's
  /// bias_grad: the GEMM writes the sums as it writes the rows.
  void foldColumnSum(exec::GemmOp gemm) {
    exec::DispatchOp fold;
    for (Operation *user : gemm.getC().getUsers()) {
      auto dispatch = dyn_cast<exec::DispatchOp>(user);
      if (!dispatch || dispatch.getInputs().size() != 1 || dispatch.getOutputs().size() != 1 ||
          dispatch.getInputs()[0] != gemm.getC())
        continue;
      auto sum = dyn_cast_or_null<ReduceSumOp>(exec::getSoleKernelOp(dispatch, *symbols));
      if (sum && sumsRows(sum) && (!fold || dispatch->isBeforeInBlock(fold)))
        fold = dispatch;
    }
    if (!fold)
      return;
    if (std::string why = biasGradRefusal(gemm, fold); !why.empty()) {
      if (remarks)
        fold.emitRemark() << "reduce_sum not folded into the GEMM's epilogue (DGELU_BGRAD): "
                          << why;
      return;
    }
    if (remarks)
      fold.emitRemark() << "reduce_sum folded into the GEMM's epilogue (DGELU_BGRAD): the "
                           "GEMM sums GELU's gradient over the rows as it writes them";
    Value sums = fold.getOutputs()[0];
    Operation *def = sums.getDefiningOp();
    if (gemm->isBeforeInBlock(def))
      exec::moveBeforeInOrder(def, gemm);
    gemm.getBiasGradMutable().assign(sums);
    fusedKernels.insert(symbols->lookupNearestSymbolFrom(fold, fold.getKernel()));
    erased.insert(fold);
    fold.erase();
  }

  SymbolTableCollection *symbols = nullptr;
  llvm::SetVector<Operation *> fusedKernels;
  /// Dispatches erased while the pass walks its list of them.
  llvm::SmallPtrSet<Operation *, 16> erased;
};

} // namespace
} // namespace mlir::tg
