//===- CarryComputeCopies.cpp - tg-carry-compute-copies -------------------===//
//
// A mixed-precision step casts every f32 master to the compute type before
// the forward reads it. The cast of the master the step has just updated
// is the one the next step needs, so it moves to the end of the step, where
// tg-fuse-elementwise puts it into the update's kernel, and the rounded
// copy becomes state (#tg.state<compute, "NAME">) between steps.
//
//===----------------------------------------------------------------------===//

#include "tg/IR/TgDialect.h"
#include "tg/IR/TgOps.h"
#include "tg/IR/ValueNames.h"
#include "tg/Passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;
using namespace mlir::tg;

namespace mlir::tg {
#define GEN_PASS_DEF_TGCARRYCOMPUTECOPIES
#include "tg/Passes/Passes.h.inc"
} // namespace mlir::tg

namespace {

/// A parameter whose narrowing casts the step reads.
struct Carried {
  StringAttr name;
  unsigned update; // the result with the parameter's new value
  SmallVector<CastOp> casts;
};

bool isComputeType(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && isa<BFloat16Type, Float16Type>(tensor.getElementType());
}

/// The parameters of `func` to carry a copy of, in argument order: f32
/// masters whose narrowing casts are all to one type and whose new value an
/// elementwise op computes, so that the cast of it joins that op's kernel.
/// Not a new value that comes from elsewhere (ZeRO-1's all-gather of the
/// updated chunks): its cast would stay a kernel of its own, moving the
/// same bytes at the end of the step, and the copy would cost memory for
/// nothing.
SmallVector<Carried> findCarried(func::FuncOp func) {
  llvm::StringMap<unsigned> updateOf;
  for (unsigned i = 0; i < func.getNumResults(); ++i)
    if (auto state = func.getResultAttrOfType<StateAttr>(i, kUpdatesAttr);
        state && state.getKind() == StateKind::Param)
      updateOf[state.getName().getValue()] = i;
  llvm::StringSet<> carriedAlready;
  for (unsigned i = 0; i < func.getNumArguments(); ++i)
    if (auto state = func.getArgAttrOfType<StateAttr>(i, kStateAttr);
        state && state.getKind() == StateKind::Compute)
      carriedAlready.insert(state.getName().getValue());

  // The narrowing casts of each argument, in program order.
  DenseMap<Value, SmallVector<CastOp>> castsOf;
  func.walk([&](CastOp cast) {
    if (isa<BlockArgument>(cast.getInput()) && isComputeType(cast.getType()))
      castsOf[cast.getInput()].push_back(cast);
  });
  SmallVector<Carried> carried;
  for (unsigned i = 0; i < func.getNumArguments(); ++i) {
    auto name = func.getArgAttrOfType<StringAttr>(i, kParamAttr);
    if (!name || carriedAlready.contains(name.getValue()) ||
        !updateOf.contains(name.getValue()) ||
        !cast<RankedTensorType>(func.getArgument(i).getType())
             .getElementType()
             .isF32())
      continue;
    Operation *update = func.getBody()
                            .back()
                            .getTerminator()
                            ->getOperand(updateOf.lookup(name.getValue()))
                            .getDefiningOp();
    if (!update || !update->hasTrait<TgOpTrait::Elementwise>())
      continue;
    SmallVector<CastOp> casts = castsOf.lookup(func.getArgument(i));
    if (!casts.empty() && llvm::all_of(casts, [&](CastOp cast) {
          return cast.getType() == casts.front().getType();
        }))
      carried.push_back({name, updateOf.lookup(name.getValue()), casts});
  }
  return carried;
}

LogicalResult carry(func::FuncOp func) {
  SmallVector<Carried> carried = findCarried(func);
  if (carried.empty())
    return success();
  // The copies go after the other state: the last parameter or state
  // argument, the last result that updates state.
  unsigned argAt = 0, resultAt = 0;
  for (unsigned i = 0; i < func.getNumArguments(); ++i)
    if (func.getArgAttr(i, kParamAttr) || func.getArgAttr(i, kStateAttr))
      argAt = i + 1;
  for (unsigned i = 0; i < func.getNumResults(); ++i)
    if (func.getResultAttr(i, kUpdatesAttr))
      resultAt = i + 1;

  MLIRContext *ctx = func.getContext();
  auto ret = cast<func::ReturnOp>(func.getBody().back().getTerminator());
  OpBuilder b(ret);
  SmallVector<unsigned> argIndices, resultIndices;
  SmallVector<Type> types;
  SmallVector<DictionaryAttr> argAttrs, resultAttrs;
  SmallVector<Location> argLocs;
  SmallVector<Value> nextCopies;
  for (Carried &c : carried) {
    Type type = c.casts.front().getType();
    auto state = StateAttr::get(ctx, StateKind::Compute, c.name.getValue());
    argIndices.push_back(argAt);
    resultIndices.push_back(resultAt);
    types.push_back(type);
    argAttrs.push_back(
        DictionaryAttr::get(ctx, {NamedAttribute(kStateAttr, state)}));
    resultAttrs.push_back(
        DictionaryAttr::get(ctx, {NamedAttribute(kUpdatesAttr, state)}));
    argLocs.push_back(c.casts.front().getLoc());
    Value updated = ret.getOperand(c.update);
    nextCopies.push_back(CastOp::create(
        b, derivedLoc(updated.getLoc(), valueName(updated), "", "_compute"),
        type, updated));
  }
  if (failed(func.insertArguments(argIndices, types, argAttrs, argLocs)) ||
      failed(func.insertResults(resultIndices, types, resultAttrs)))
    return func.emitOpError("tg-carry-compute-copies: cannot add the compute "
                            "copies to the signature");
  SmallVector<Value> operands(ret.getOperands());
  operands.insert(operands.begin() + resultAt, nextCopies.begin(),
                  nextCopies.end());
  ret->setOperands(operands);
  for (auto [k, c] : llvm::enumerate(carried)) {
    Value copy = func.getArgument(argAt + k);
    for (CastOp cast : c.casts) {
      cast.replaceAllUsesWith(copy);
      cast.erase();
    }
  }
  return success();
}

struct CarryComputeCopiesPass
    : mlir::tg::impl::TgCarryComputeCopiesBase<CarryComputeCopiesPass> {
  void runOnOperation() override {
    for (auto func : getOperation().getOps<func::FuncOp>())
      if (!func.isExternal() && failed(carry(func)))
        return signalPassFailure();
  }
};
} // namespace
