//===- UnrollMicroBatches.cpp - tg.micro_batches -> one clone per batch ---===//
//
// Produces the op sequence buildTrainStep emitted before tg.micro_batches
// existed, so every numeric result stays bit-identical: per micro-batch k,
// `tg.slice` "<operand>_mb<k>" of each sliced operand (none when count is 1)
// and a clone of the body; the yielded values are summed in micro-batch
// order (tg.add "<name>_sum"), then multiplied by one 1/count constant per
// element type (tg.mul "<name>") when count > 1. <name> is the result's
// NameLoc: the op's location is a FusedLoc with one NameLoc per result.
//
//===----------------------------------------------------------------------===//

#include "tg/IR/ValueNames.h"
#include "tg/IR/TgOps.h"
#include "tg/Passes/Passes.h"
#include "tg/Passes/TrainStep.h"

#include "mlir/IR/IRMapping.h"

using namespace mlir;
using namespace mlir::tg;

namespace mlir::tg {
#define GEN_PASS_DEF_TGUNROLLMICROBATCHES
#include "tg/Passes/Passes.h.inc"
} // namespace mlir::tg

static void unrollOne(MicroBatchesOp op) {
  OpBuilder b(op);
  int64_t count = op.getCount();
  unsigned numResults = op.getNumResults();

  // Result names and the location the new ops' NameLocs wrap.
  Location base = op.getLoc();
  SmallVector<std::string> names(numResults);
  if (auto fused = dyn_cast<FusedLoc>(base);
      fused && fused.getLocations().size() == numResults &&
      llvm::all_of(fused.getLocations(), llvm::IsaPred<NameLoc>)) {
    for (auto [i, loc] : llvm::enumerate(fused.getLocations()))
      names[i] = cast<NameLoc>(loc).getName().str();
    base = cast<NameLoc>(fused.getLocations().front()).getChildLoc();
  } else if (auto name = dyn_cast<NameLoc>(base)) {
    if (numResults == 1)
      names[0] = name.getName().str();
    base = name.getChildLoc();
  }
  auto named = [&](StringRef name, StringRef suffix) {
    return derivedLoc(base, name, "", suffix);
  };

  Block &body = op.getBody().front();
  YieldOp yield = op.getYield();
  unsigned numSliced = op.getSliced().size();
  SmallVector<Value> acc(numResults);
  for (int64_t mb = 0; mb < count; ++mb) {
    IRMapping map;
    for (auto [i, operand] : llvm::enumerate(op.getSliced())) {
      Value slice = operand;
      if (count > 1) {
        auto type = cast<RankedTensorType>(operand.getType());
        int64_t micro = type.getDimSize(0) / count;
        SmallVector<int64_t> offsets(type.getRank(), 0), sizes(type.getShape());
        offsets[0] = mb * micro;
        sizes[0] = micro;
        std::string name = valueName(operand).str();
        if (name.empty())
          name = "sliced" + std::to_string(i);
        slice = SliceOp::create(b, named(name, "_mb" + std::to_string(mb)),
                                operand, offsets, sizes);
      }
      map.map(body.getArgument(i), slice);
    }
    for (auto [i, operand] : llvm::enumerate(op.getShared()))
      map.map(body.getArgument(numSliced + i), operand);
    for (Operation &inner : body.without_terminator())
      b.clone(inner, map);
    for (unsigned j = 0; j < numResults; ++j) {
      Value value = map.lookupOrDefault(yield.getValues()[j]);
      acc[j] = acc[j] ? AddOp::create(b, named(names[j], "_sum"), acc[j], value)
                            .getResult()
                      : value;
    }
  }
  if (count > 1) {
    llvm::DenseMap<Type, Value> inverse;
    for (unsigned j = 0; j < numResults; ++j) {
      Type element = cast<RankedTensorType>(acc[j].getType()).getElementType();
      Value &inv = inverse[element];
      if (!inv) {
        auto type = RankedTensorType::get({}, element);
        inv = ConstantOp::create(
            b, base,
            DenseElementsAttr::get(
                type, b.getFloatAttr(element, 1.0 / double(count))));
      }
      acc[j] = MulOp::create(b, named(names[j], ""), acc[j], inv);
    }
  }
  op.replaceAllUsesWith(acc);
  op.erase();
}

LogicalResult mlir::tg::unrollMicroBatches(Operation *root) {
  SmallVector<MicroBatchesOp> ops;
  root->walk([&](MicroBatchesOp op) { ops.push_back(op); });
  for (MicroBatchesOp op : ops)
    unrollOne(op);
  return success();
}

namespace {
struct UnrollMicroBatchesPass
    : mlir::tg::impl::TgUnrollMicroBatchesBase<UnrollMicroBatchesPass> {
  void runOnOperation() override {
    if (failed(unrollMicroBatches(getOperation())))
      signalPassFailure();
  }
};
} // namespace
