//===- TgMicroBatches.cpp - tg.micro_batches ------------------------------===//

#include "tg/IR/TgOps.h"

using namespace mlir;
using namespace mlir::tg;

YieldOp MicroBatchesOp::getYield() {
  return cast<YieldOp>(getBody().front().getTerminator());
}

LogicalResult MicroBatchesOp::verifyRegions() {
  int64_t count = getCount();
  Block &body = getBody().front();
  size_t numSliced = getSliced().size();
  if (body.getNumArguments() != numSliced + getShared().size())
    return emitOpError() << "body takes " << body.getNumArguments()
                         << " arguments, expected " << numSliced
                         << " sliced + " << getShared().size() << " shared";
  for (auto [i, operand] : llvm::enumerate(getOperands())) {
    auto type = cast<RankedTensorType>(operand.getType());
    Type expected = type;
    if (i < numSliced) {
      if (type.getRank() == 0 || type.isDynamicDim(0) ||
          type.getDimSize(0) % count != 0)
        return emitOpError() << "sliced operand #" << i << " of type " << type
                             << ": dim 0 must be divisible by the count "
                             << count;
      SmallVector<int64_t> shape(type.getShape());
      shape[0] /= count;
      expected = type.clone(shape);
    }
    if (body.getArgument(i).getType() != expected)
      return emitOpError() << "body argument #" << i << " has type "
                           << body.getArgument(i).getType() << ", expected "
                           << expected
                           << (i < numSliced ? " (one micro-batch of sliced "
                                               "operand #" +
                                                   std::to_string(i) + ")"
                                             : " (the shared operand)");
  }
  auto yield = dyn_cast<YieldOp>(body.getTerminator());
  if (!yield)
    return emitOpError() << "body must end with tg.yield";
  if (yield.getValues().getTypes() != getResultTypes())
    return emitOpError() << "yields " << yield.getValues().getTypes()
                         << " but the results are " << getResultTypes();
  return success();
}
