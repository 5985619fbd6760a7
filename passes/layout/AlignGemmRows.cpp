// tg-align-gemm-rows: a library GEMM whose stored rows do not start on 16
// bytes gets zero-padded operands and a sliced product, so that cuBLASLt
// can run its tensor-core kernels (their TMA loads and stores need 16-byte
// aligned rows). GPT-2's vocabulary of 50257 is the case in point: the
// logits, their gradient and the tied embedding's gradient are the three
// largest products of a GPT-2-medium step, and ran at 95-148 TFLOP/s on an
// H200 against ~700 for the aligned ones (docs/gpu-validate-h200.md).
#include "tg/IR/ValueNames.h"
#include "tg/IR/TgOps.h"
#include "tg/Passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/MathExtras.h"

namespace mlir::tg {
#define GEN_PASS_DEF_TGALIGNGEMMROWS
#include "tg/Passes/Passes.h.inc"

namespace {

/// What cuBLASLt needs of a row's start.
constexpr int64_t kLibraryRowAlignment = 16;


struct AlignGemmRowsPass : impl::TgAlignGemmRowsBase<AlignGemmRowsPass> {
  using Base::Base;

  void runOnOperation() override {
    if (rowBytes < kLibraryRowAlignment || rowBytes % kLibraryRowAlignment) {
      getOperation().emitError()
          << "tg-align-gemm-rows: row-bytes " << int64_t(rowBytes)
          << " is not a positive multiple of " << kLibraryRowAlignment;
      return signalPassFailure();
    }
    pads.clear(); // the pass may run on several functions
    SmallVector<MatmulOp> products;
    getOperation().walk([&](MatmulOp op) { products.push_back(op); });
    for (MatmulOp op : products)
      align(op);
  }

private:
  /// `value` zero-padded at the end of each dim to `shape`, one tg.pad per
  /// tensor and shape. A reshape that keeps the last dim is looked through
  /// (the gradient of the logits feeds one product as [B, T, V] and another
  /// as [B x T, V]): its input is padded and the padded tensor reshaped.
  Value padTo(Value value, ArrayRef<int64_t> shape) {
    auto type = cast<RankedTensorType>(value.getType());
    if (type.getShape() == shape)
      return value;
    for (auto &[paddedShape, padded] : pads.lookup(value))
      if (ArrayRef<int64_t>(paddedShape) == shape)
        return padded;
    OpBuilder b(value.getContext());
    Value result;
    auto reshape = value.getDefiningOp<ReshapeOp>();
    bool lastDimOnly = llvm::equal(type.getShape().drop_back(), shape.drop_back());
    if (reshape && lastDimOnly &&
        reshape.getInput().getType().getShape().back() == type.getShape().back()) {
      auto inputShape = llvm::to_vector(reshape.getInput().getType().getShape());
      inputShape.back() = shape.back();
      Value padded = padTo(reshape.getInput(), inputShape);
      b.setInsertionPointAfterValue(padded);
      result = ReshapeOp::create(b, reshape.getLoc(),
                                 type.clone(shape), padded);
    } else {
      b.setInsertionPointAfterValue(value);
      SmallVector<int64_t> low(shape.size(), 0), high;
      for (auto [size, target] : llvm::zip(type.getShape(), shape))
        high.push_back(target - size);
      Location loc = value.getDefiningOp() ? value.getDefiningOp()->getLoc()
                                           : getOperation().getLoc();
      result = PadOp::create(b, derivedLoc(loc, valueName(value), "", "_aligned"),
                             value, low, high);
    }
    pads[value].push_back({SmallVector<int64_t>(shape), result});
    return result;
  }

  void align(MatmulOp op) {
    auto lhsType = op.getLhs().getType(), rhsType = op.getRhs().getType();
    auto resultType = op.getResult().getType();
    int64_t elementBytes =
        int64_t(llvm::divideCeil(resultType.getElementTypeBitWidth(), 8));
    int64_t rank = resultType.getRank();
    int64_t m = resultType.getDimSize(rank - 2), n = resultType.getDimSize(rank - 1);
    bool transposeLhs = op.getTransposeLhs(), transposeRhs = op.getTransposeRhs();
    int64_t k = lhsType.getDimSize(lhsType.getRank() - (transposeLhs ? 2 : 1));
    auto misaligned = [&](int64_t rowElements) {
      return rowElements * elementBytes % kLibraryRowAlignment != 0;
    };
    auto padded = [&](int64_t size) {
      return int64_t(llvm::alignTo(size * elementBytes, rowBytes)) / elementBytes;
    };
    // The lengths of the stored rows: c's is N; a's is K, or M when
    // transposed; b's is N, or K when transposed.
    int64_t newM = transposeLhs && misaligned(m) ? padded(m) : m;
    int64_t newK = (!transposeLhs || transposeRhs) && misaligned(k) ? padded(k) : k;
    int64_t newN = misaligned(n) ? padded(n) : n;
    if (newM == m && newK == k && newN == n)
      return;

    auto lhsShape = llvm::to_vector(lhsType.getShape());
    int64_t lhsRank = lhsType.getRank();
    lhsShape[lhsRank - (transposeLhs ? 1 : 2)] = newM;
    lhsShape[lhsRank - (transposeLhs ? 2 : 1)] = newK;
    auto rhsShape = llvm::to_vector(rhsType.getShape());
    int64_t rhsRank = rhsType.getRank();
    rhsShape[rhsRank - (transposeRhs ? 1 : 2)] = newK;
    rhsShape[rhsRank - (transposeRhs ? 2 : 1)] = newN;
    Value lhs = padTo(op.getLhs(), lhsShape);
    Value rhs = padTo(op.getRhs(), rhsShape);

    OpBuilder b(op);
    auto product = MatmulOp::create(b, op.getLoc(), lhs, rhs,
                                    op.getTransposeLhsAttr(),
                                    op.getTransposeRhsAttr());
    Value result = product.getResult();
    if (newM != m || newN != n)
      result = SliceOp::create(
          b, derivedLoc(op.getLoc(), valueName(op.getResult()), "", "_unaligned"),
          result, SmallVector<int64_t>(rank, 0), resultType.getShape());
    if (remarks)
      op.emitRemark() << "stored rows not 16-byte aligned (" << elementBytes
                      << "-byte elements): M x K x N " << m << " x " << k
                      << " x " << n << " padded with zeros to " << newM << " x "
                      << newK << " x " << newN
                      << (result != product.getResult() ? ", the product sliced back"
                                                         : "");
    op.getResult().replaceAllUsesWith(result);
    SmallVector<Value> operands(op->getOperands());
    op.erase();
    // A reshape looked through by padTo may now be dead.
    for (Value operand : operands)
      if (auto reshape = operand.getDefiningOp<ReshapeOp>())
        if (reshape->use_empty())
          reshape.erase();
  }

  /// The padded tensors made so far: for each tensor, its padded shapes.
  DenseMap<Value, SmallVector<std::pair<SmallVector<int64_t>, Value>, 1>> pads;
};

} // namespace
} // namespace mlir::tg
