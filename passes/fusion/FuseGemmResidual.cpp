// exec-fuse-gemm-residual: the residual stream's add after a projection,
// x + product where one GEMM writes the product and the add alone reads it,
// becomes the GEMM's addend (cuBLASLt's C operand with beta = 1 on CUDA, the
// bias epilogue's pass on the CPU): the GEMM writes the sum. The kernel that
// added, most often the next norm's with the add as its prologue
// (tg-fuse-into-rows), reads the sum in the product's place and no longer
// reads x or writes the sum: per residual add an activation-sized read and
// write fewer, against one more read by the GEMM.
#include "tg/Exec/IR/ExecOps.h"
#include "tg/IR/TgOps.h"
#include "tg/Passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/SetVector.h"

#include <map>
#include <tuple>

namespace mlir::tg {
#define GEN_PASS_DEF_EXECFUSEGEMMRESIDUAL
#include "tg/Passes/Passes.h.inc"

namespace {

/// An add in a kernel of two of its arguments, `product` and `addend`, of
/// the add's own type (no broadcast), where nothing else in the kernel
/// reads `product`: once the GEMM writing the product adds the addend, the
/// kernel may read the sum in the product's place.
struct KernelAdd {
  AddOp add;
  unsigned product, addend; // argument numbers
};

SmallVector<KernelAdd> kernelAdds(func::FuncOp kernel) {
  SmallVector<KernelAdd> adds;
  for (auto add : kernel.getBody().front().getOps<AddOp>()) {
    auto lhs = dyn_cast<BlockArgument>(add.getLhs());
    auto rhs = dyn_cast<BlockArgument>(add.getRhs());
    if (!lhs || !rhs || lhs == rhs || lhs.getType() != add.getType() ||
        rhs.getType() != add.getType())
      continue;
    for (auto [product, addend] : {std::pair{rhs, lhs}, std::pair{lhs, rhs}})
      if (product.hasOneUse())
        adds.push_back({add, product.getArgNumber(), addend.getArgNumber()});
  }
  return adds;
}

/// The result number at which `kernel` returns `value`; nullopt if it does
/// not, -1 if more than once.
std::optional<int> returnedAt(func::FuncOp kernel, Value value) {
  std::optional<int> at;
  for (OpOperand &use : value.getUses()) {
    if (!isa<func::ReturnOp>(use.getOwner()))
      continue;
    at = at ? -1 : int(use.getOperandNumber());
  }
  return at;
}

/// Whether a command strictly between `first` and `last` (one block)
/// writes bytes of `buffer`'s storage that `buffer` covers, or, with
/// `orReads`, reads them.
bool touchedBetween(Operation *first, Operation *last, Value buffer,
                    bool orReads) {
  exec::ResourceOp storage = exec::getStorage(buffer);
  exec::ByteRange range = exec::getByteRange(buffer);
  auto touches = [&](ArrayRef<Value> buffers) {
    return llvm::any_of(buffers, [&](Value other) {
      return exec::getStorage(other) == storage &&
             exec::getByteRange(other).overlaps(range);
    });
  };
  for (Operation *op = first->getNextNode(); op && op != last;
       op = op->getNextNode())
    if (exec::isCommand(op) && (touches(exec::getWrittenBuffers(op)) ||
                                (orReads && touches(exec::getReadBuffers(op)))))
      return true;
  return false;
}

struct FuseGemmResidualPass
    : impl::ExecFuseGemmResidualBase<FuseGemmResidualPass> {
  using Base::Base;

  void runOnOperation() override {
    SymbolTableCollection symbolTables;
    symbols = &symbolTables;
    replaced.clear();
    rewritten.clear();
    SmallVector<exec::DispatchOp> dispatches;
    getOperation().walk(
        [&](exec::DispatchOp dispatch) { dispatches.push_back(dispatch); });
    for (exec::DispatchOp dispatch : dispatches) {
      auto kernel = symbols->lookupNearestSymbolFrom<func::FuncOp>(
          dispatch, dispatch.getKernel());
      if (!kernel || kernel.isExternal() ||
          !exec::isKernelOnTensors(kernel.getFunctionType()))
        continue;
      // Each add is tried with either term as the product: a remark says
      // why not only where no add folds.
      std::string firstWhy;
      bool folded = false;
      for (KernelAdd add : kernelAdds(kernel)) {
        std::optional<std::string> why = tryFold(dispatch, kernel, add);
        folded = why && why->empty();
        if (folded)
          break;
        if (why && firstWhy.empty())
          firstWhy = *why;
      }
      if (!folded && remarks && !firstWhy.empty())
        dispatch.emitRemark()
            << "add of a GEMM's product not folded into the GEMM: " << firstWhy;
    }
    exec::eraseUndispatchedKernels(getOperation(), replaced.getArrayRef());
  }

private:
  /// Folds `add` of `dispatch`'s kernel into the GEMM writing its product:
  /// "" if it did, why not if not, nullopt where no GEMM writes the product.
  std::optional<std::string> tryFold(exec::DispatchOp dispatch,
                                     func::FuncOp kernel, KernelAdd add) {
    Value product = dispatch.getInputs()[add.product];
    Value addend = dispatch.getInputs()[add.addend];
    exec::GemmOp gemm =
        exec::getGemmWriter(product, dispatch, /*onlyReader=*/true);
    if (!gemm)
      return std::nullopt;
    std::optional<int> result = returnedAt(kernel, add.add.getResult());
    if (std::string why = refusal(gemm, dispatch, kernel, add, result);
        !why.empty())
      return why;
    Value sum = dispatch.getOutputs()[*result];
    // Nothing left of the kernel but the add: the sum was its one result
    // (its other ops, on tensors, computed nothing it returned).
    bool whole = kernel.getNumResults() == 1;
    // The kernel no longer reads the addend or writes the sum (nor reads
    // the product, where it goes); the GEMM reads the addend.
    int64_t bytes = exec::getByteSize(cast<MemRefType>(product.getType()));
    if (remarks)
      dispatch.emitRemark()
          << "add of a GEMM's product folded into the GEMM, which adds the "
             "other term as it writes the sum: "
          << (whole ? "the kernel goes, " : "the kernel moves ")
          << bytes * (whole ? 3 : 2) << " bytes fewer, the GEMM reads "
          << bytes << " more";
    // The sum's buffer is written where the GEMM runs; a resource declared
    // later (it has no operands) moves up to it, as may the addend's.
    for (Value v : {addend, sum})
      if (Operation *def = v.getDefiningOp();
          def->getBlock() == gemm->getBlock() && gemm->isBeforeInBlock(def))
        exec::moveBeforeInOrder(def, gemm);
    gemm.getCMutable().assign(sum);
    gemm.getAddendMutable().assign(addend);
    replaced.insert(kernel);
    if (whole) {
      dispatch.erase();
    } else {
      func::FuncOp rest = withoutAdd(kernel, add, *result);
      dispatch.getInputsMutable()[add.product].set(sum);
      dispatch.getInputsMutable().erase(add.addend);
      dispatch.getOutputsMutable().erase(*result);
      dispatch.setKernelAttr(
          SymbolRefAttr::get(dispatch.getKernel().getRootReference(),
                             {FlatSymbolRefAttr::get(rest.getSymNameAttr())}));
    }
    product.getDefiningOp()->erase(); // the dispatch was its last reader
    return std::string();
  }

  /// Why the GEMM writing `add`'s product cannot add the addend as it
  /// writes the sum, result `result` of `dispatch`'s `kernel`, in place of
  /// the add, or "".
  static std::string refusal(exec::GemmOp gemm, exec::DispatchOp dispatch,
                             func::FuncOp kernel, KernelAdd add,
                             std::optional<int> result) {
    // The kernel reads the sum where it read the product, so the fold pays
    // only where the kernel stops reading the addend and writing the sum:
    // the GEMM's read of the addend costs one of the two back.
    if (!result)
      return "the kernel does not store the sum, so it would move no fewer "
             "bytes than the GEMM's added read of the other term";
    if (*result < 0)
      return "the kernel returns the sum more than once";
    if (!kernel.getArgument(add.addend).hasOneUse())
      return "the kernel reads the other term again, so it would move no "
             "fewer bytes than the GEMM's added read of it";
    if (gemm.getActivation() != exec::GemmActivation::none || gemm.getAddend())
      return "the GEMM applies an activation or adds a matrix already";
    if (gemm.getBatch() != 1 ||
        !(gemm.getLdc() == 0 || int64_t(gemm.getLdc()) == int64_t(gemm.getN())))
      return "the GEMM is batched or writes a strided product";
    Value product = dispatch.getInputs()[add.product];
    Value addend = dispatch.getInputs()[add.addend];
    Value sum = dispatch.getOutputs()[*result];
    if (llvm::count(dispatch.getInputs(), product) != 1)
      return "the dispatch reads the product twice";
    if (addend.getType() != product.getType() ||
        sum.getType() != product.getType())
      return "the other term or the sum is not stored as the product is";
    if (!dispatch.getDone().use_empty())
      return "a command awaits the add";
    // The GEMM writes the sum as it reads a, b, the bias and the addend.
    exec::ResourceOp sumStorage = exec::getStorage(sum);
    for (Value read : exec::getReadBuffers(gemm))
      if (exec::getStorage(read) == sumStorage)
        return "the sum's buffer is one the GEMM reads";
    if (exec::getStorage(addend) == sumStorage)
      return "the other term and the sum share storage";
    // Both must exist where the GEMM runs, the addend with its value then.
    for (Value v : {addend, sum}) {
      Operation *def = v.getDefiningOp();
      if (!def || def->getBlock() != gemm->getBlock())
        return "the other term or the sum is not a buffer of the program's";
      if (gemm->isBeforeInBlock(def) &&
          !(isa<exec::ResourceOp>(def) && def->getNumOperands() == 0))
        return "the other term or the sum is made after the GEMM runs";
    }
    if (touchedBetween(gemm, dispatch, addend, /*orReads=*/false))
      return "a command between the GEMM and the add writes the other term";
    if (touchedBetween(gemm, dispatch, sum, /*orReads=*/true))
      return "a command between the GEMM and the add uses the sum's buffer";
    return "";
  }

  /// `kernel` without `add`, reading the sum at the product's argument,
  /// without the addend's argument and its result `result` (the sum). One
  /// copy for each (kernel, add) however many dispatches run it.
  func::FuncOp withoutAdd(func::FuncOp kernel, KernelAdd add, int result) {
    auto key = std::make_tuple(kernel.getOperation(), add.add.getOperation(),
                               add.product);
    if (auto it = rewritten.find(key); it != rewritten.end())
      return it->second;
    func::FuncOp rest = kernel.clone();
    Block &body = rest.getBody().front();
    auto at =
        std::distance(kernel.getBody().front().begin(), add.add->getIterator());
    auto copy = cast<AddOp>(*std::next(body.begin(), at));
    body.getTerminator()->eraseOperand(result);
    (void)rest.eraseResult(result);
    copy.getResult().replaceAllUsesWith(rest.getArgument(add.product));
    copy.erase();
    (void)rest.eraseArgument(add.addend);
    rest.setSymName(kernelName(kernel, rest));
    symbols->getSymbolTable(kernel->getParentOp())
        .insert(rest, kernel->getIterator());
    rewritten[key] = rest;
    return rest;
  }

  /// `kernel`'s number and the ops `rest` computes, as tg-lower-to-exec
  /// names kernels: k12_layer_norm for k12_add_to_layer_norm.
  static std::string kernelName(func::FuncOp kernel, func::FuncOp rest) {
    std::string name = kernel.getSymName().split('_').first.str();
    SmallVector<Operation *> computing;
    for (Operation &op : rest.getBody().front().without_terminator())
      if (!isa<ConstantOp>(op))
        computing.push_back(&op);
    if (!computing.empty())
      name += "_" + computing.front()->getName().stripDialect().str();
    if (computing.size() > 1)
      name += "_to_" + computing.back()->getName().stripDialect().str();
    return name;
  }

  SymbolTableCollection *symbols = nullptr;
  /// Kernels whose dispatches (some or all) now run a copy without the add.
  llvm::SetVector<Operation *> replaced;
  std::map<std::tuple<Operation *, Operation *, unsigned>, func::FuncOp>
      rewritten;
};

} // namespace
} // namespace mlir::tg
