// tg-fuse-attention: tg.attention and its gradient as flash attention
// kernels (tg.flash_attention, tg.flash_attention_grad) where the
// decomposition into batched GEMMs and passes over the [T, S] score matrices
// (what tg-decompose-attention does to the rest) would hold score matrices
// over the memory budget, or is estimated slower.
#include "tg/IR/AttentionVisibility.h"
#include "tg/IR/FlashAttentionLimits.h"
#include "tg/IR/TgOps.h"
#include "tg/IR/ValueNames.h"
#include "tg/Passes/Decompose.h"
#include "tg/Passes/Interface.h"
#include "tg/Passes/KernelBodies.h"
#include "tg/Passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>

namespace mlir::tg {
#define GEN_PASS_DEF_TGFUSEATTENTION
#include "tg/Passes/Passes.h.inc"

namespace {

/// The work of one attention op (and of its gradient, when it has one) done
/// both ways, from which the decision follows.
struct AttentionCost {
  /// Query heads x batch, the (query, key) pairs of one head with and
  /// without the masked ones, the pairs the kernels compute (blocks of
  /// query rows by whole tiles of keys), the head dim and the element size.
  int64_t planes, allPairs, visiblePairs, tiledPairs, dim, elementBytes;
  bool withGradient;

  /// Whether the decomposed gradient reuses the forward's probabilities
  /// (tg-decompose-attention's default rule) instead of recomputing them.
  bool keepsProbabilities;

  /// Score-matrix passes of the decomposition, counted in elements read or
  /// written per score: forward the product written (1) and the softmax
  /// with the scale and mask as its prologue (tg-fuse-into-rows: the
  /// product read, max, exponentials, sum, division: 5); the gradient
  /// recomputes those (6) unless it keeps them, and adds dP written (1) and
  /// the softmax gradient with the scale as its epilogue (its row dot and
  /// the result: 5).
  static constexpr int64_t kForwardPasses = 6, kGradientPasses = 6;
  /// GEMMs of 2 * pairs * dim FLOPs: forward QK^T and PV; the gradient dV,
  /// dP, dQ and dK, and QK^T again unless it keeps the probabilities.
  static constexpr int64_t kForwardGemms = 2, kGradientGemms = 4;
  /// FLOPs per visible pair and head-dim element in the flash kernels:
  /// forward q.k and p v (2 x 2); the gradient q.k and dO.v twice (key rows,
  /// then query rows: 8) and the three accumulations (6).
  static constexpr int64_t kFlashForward = 4, kFlashGradient = 14;

  int64_t gradientGemms() const {
    return kGradientGemms + (keepsProbabilities ? 0 : 1);
  }
  int64_t gradientPasses() const {
    return kGradientPasses + (keepsProbabilities ? 0 : kForwardPasses);
  }

  double decomposedFlops() const {
    return 2.0 * planes * allPairs * dim *
           (kForwardGemms + (withGradient ? gradientGemms() : 0));
  }
  double decomposedBytes() const {
    return double(planes) * allPairs * elementBytes *
           (kForwardPasses + (withGradient ? gradientPasses() : 0));
  }
  double flashFlops() const {
    return double(planes) * tiledPairs * dim *
           (kFlashForward + (withGradient ? kFlashGradient : 0));
  }
  /// The flash kernels' pairs, each costing a fixed time per kernel besides
  /// its head-dim work (its exponential, its share of the tile's maximum,
  /// sums and masks): once forward, again in the gradient.
  double flashKernelPairs() const {
    return double(planes) * tiledPairs * (withGradient ? 2 : 1);
  }
  /// One [T, S] score matrix of every head, the unit of the decomposition's
  /// scratch (several are live at once).
  double scoreMatrixBytes() const {
    return double(planes) * allPairs * elementBytes;
  }
};

AttentionCost costOf(AttentionOp op, bool withGradient) {
  auto q = op.getQuery().getType().getShape();
  int64_t keys = op.getKey().getType().getShape()[2];
  int64_t queries = q[2], window = op.getWindow();
  int64_t visible = 0, tiled = 0;
  for (int64_t t = 0; t < queries; ++t) {
    auto [first, end] = visibleKeyRange(t, keys, op.getCausal(), window);
    visible += std::max<int64_t>(0, end - first);
  }
  // The kernels take blocks of query rows, each over the keys any of its
  // rows sees (from its first row's first to its last row's end), in whole
  // tiles.
  for (int64_t t = 0; t < queries; t += kFlashAttentionLanes) {
    int64_t last = std::min(t + kFlashAttentionLanes, queries) - 1;
    int64_t first = visibleKeyRange(t, keys, op.getCausal(), window).first;
    int64_t end = visibleKeyRange(last, keys, op.getCausal(), window).second;
    tiled += kFlashAttentionLanes *
             int64_t(llvm::alignTo(std::max<int64_t>(0, end - first),
                                   kFlashForwardTile));
  }
  int64_t bytes = int64_t(
      llvm::divideCeil(op.getQuery().getType().getElementTypeBitWidth(), 8));
  return {q[0] * q[1], queries * keys, visible, tiled, q[3], bytes,
          withGradient, keepsProbabilities(keys, q[3], DecomposeAttentionOptions{})};
}

/// The attention_grad of `op` (same query, key, value and attributes) in
/// its function, if there is one.
AttentionGradOp gradientOf(AttentionOp op) {
  for (Operation *user : op.getQuery().getUsers())
    if (auto grad = dyn_cast<AttentionGradOp>(user))
      if (grad.getKey() == op.getKey() && grad.getValue() == op.getValue() &&
          grad.getScale() == op.getScale() &&
          grad.getCausal() == op.getCausal() &&
          grad.getWindow() == op.getWindow() &&
          grad->getBlock() == op->getBlock() && op->isBeforeInBlock(grad))
        return grad;
  return nullptr;
}

/// The rotary position embeddings around an attention op and its gradient
/// that its flash kernels can apply themselves: the tg.rope of its query
/// and of its key (same frequencies, read by nothing but the attention op
/// and its gradient), and the gradient's rotations back of the query and
/// key gradients (each its result's only reader).
struct RotationsAround {
  RopeOp query, key, queryGrad, keyGrad;
  RopeFrequencies frequencies;
};

/// The inverse tg.rope of `frequencies` that is the only reader of `grad`.
RopeOp rotationBack(Value grad, const RopeFrequencies &frequencies) {
  if (!grad.hasOneUse())
    return nullptr;
  auto rope = dyn_cast<RopeOp>(*grad.getUsers().begin());
  return rope && rope.getInverse() && rope.getFrequencies() == frequencies
             ? rope
             : nullptr;
}

/// The rotations around `op` (and `grad`), or why they stay outside (a
/// non-empty `why`); none and no reason where its query and key are not
/// both rotated.
std::optional<RotationsAround>
rotationsAround(AttentionOp op, AttentionGradOp grad, std::string &why) {
  RotationsAround r;
  r.query = op.getQuery().getDefiningOp<RopeOp>();
  r.key = op.getKey().getDefiningOp<RopeOp>();
  if (!r.query || !r.key || r.query == r.key || r.query.getInverse() ||
      r.key.getInverse())
    return std::nullopt;
  r.frequencies = r.query.getFrequencies();
  if (!(r.key.getFrequencies() == r.frequencies)) {
    why = "its query and key are rotated by different frequencies";
    return std::nullopt;
  }
  for (RopeOp rope : {r.query, r.key})
    for (Operation *user : rope->getUsers())
      if (user != op && user != grad) {
        why = "its rotated queries or keys are read by other ops too";
        return std::nullopt;
      }
  if (grad) {
    r.queryGrad = rotationBack(grad.getQueryGrad(), r.frequencies);
    r.keyGrad = rotationBack(grad.getKeyGrad(), r.frequencies);
    if (!r.queryGrad || !r.keyGrad) {
      why = "its query or key gradient is read by more than its rotation "
            "back";
      return std::nullopt;
    }
  }
  return r;
}

struct FuseAttentionPass : impl::TgFuseAttentionBase<FuseAttentionPass> {
  using Base::Base;

  void runOnOperation() override {
    // One instance of the pass runs on several functions (the step, the
    // evaluation step, the logits): each function's plan is its own.
    plan.clear();
    SmallVector<AttentionOp> ops;
    getOperation().walk([&](AttentionOp op) { ops.push_back(op); });
    DenseSet<Operation *> paired;
    for (AttentionOp op : ops) {
      AttentionGradOp grad = gradientOf(op);
      if (grad)
        paired.insert(grad);
      decide(op, grad);
    }
    getOperation().walk([&](AttentionGradOp grad) {
      if (paired.contains(grad))
        return;
      StringRef why = "no tg.attention of the same query, key and value "
                      "precedes it in its block";
      record(grad.getQueryGrad(), "decomposed", why);
      if (remarks)
        grad.emitRemark() << "not fused: " << why << "; it is decomposed";
    });
    getOperation()->setAttr(kAttentionPlanAttr,
                            ArrayAttr::get(&getContext(), plan));
  }

private:
  /// How the attention op computing `result` is computed (`kernel`), and
  /// why, for tgc --stats (kAttentionPlanAttr).
  void record(Value result, StringRef kernel, const Twine &why) {
    Builder b(&getContext());
    StringRef name = valueName(result);
    plan.push_back(b.getDictionaryAttr(
        {b.getNamedAttr("op", b.getStringAttr(name.empty() ? "attention" : name)),
         b.getNamedAttr("kernel", b.getStringAttr(kernel)),
         b.getNamedAttr("reason", b.getStringAttr(why))}));
  }

  SmallVector<Attribute> plan;

  void decide(AttentionOp op, AttentionGradOp grad) {
    AttentionCost cost = costOf(op, bool(grad));
    double decomposedMs = 1e-6 * (cost.decomposedFlops() / gemmGflops +
                                  cost.decomposedBytes() / bandwidthGbs);
    double flashMs = 1e-6 * cost.flashFlops() / flashGflops +
                     1e-6 * cost.flashKernelPairs() * flashPairNs;
    double scoreMib = cost.scoreMatrixBytes() / (1 << 20);
    std::string estimate = llvm::formatv(
        "{0:f3} ms estimated for the flash kernels ({1} of {2} (query, key) "
        "pairs visible) against {3:f3} ms decomposed, whose score matrices "
        "take {4:f1} MiB each",
        flashMs, cost.visiblePairs, cost.allPairs, decomposedMs, scoreMib);
    std::string comparison =
        llvm::formatv("{0:f3} ms estimated against {1:f3} ms decomposed",
                      flashMs, decomposedMs);
    // Why the op is computed as it is: for tgc --stats (short) and as a
    // remark (with the estimates).
    std::string why;
    std::string ropeWhy;
    std::optional<RotationsAround> rotations;
    // cuDNN's graph (the CUDA runtime's, with library-kernels) has no
    // rotation: it stays outside where cuDNN takes the op.
    const bool viaCudnn =
        libraryKernels && cudnn && libraryRefusal(op, cost).empty();
    if (viaCudnn && isRotated(op))
      ropeWhy = "cuDNN's fused attention cannot rotate them";
    else if (rope)
      rotations = rotationsAround(op, grad, ropeWhy);
    else if (isRotated(op))
      ropeWhy = libraryKernels
                    ? "its rope fusion is off (on CUDA unless "
                      "--fuse=attention-rope: the runtime's kernels rotate "
                      "each tile once per block that loads it, 2.2x slower "
                      "forward at head dim 128 on an H200, docs/perf.md)"
                    : "its rope fusion is off (--no-fuse=attention-rope)";
    std::string ropeRemark =
        rotations ? "; the kernels apply the rotary position embedding of "
                    "its queries and keys"
        : ropeWhy.empty()
            ? ""
            : "; its rotary position embedding stays outside: " + ropeWhy;
    if (libraryKernels) {
      std::string refusal = libraryRefusal(op, cost);
      why = !refusal.empty() ? refusal
            : viaCudnn ? "cuDNN's fused attention (--cuda-attention=cudnn, "
                         "the CUDA default since it ran faster than the "
                         "runtime's flash kernels at every shape measured, "
                         "docs/perf.md)"
                       : "the runtime's flash kernels (--cuda-attention=flash)";
      if (refusal.empty() && rotations)
        why += "; RoPE inside";
      record(op.getResult(),
             !refusal.empty() ? "decomposed"
             : viaCudnn       ? "cudnn"
                              : "flash",
             why);
      if (remarks)
        op.emitRemark() << (refusal.empty() ? "fused into flash attention: "
                                            : "not fused: ")
                        << why << (refusal.empty() ? ropeRemark : "");
      if (refusal.empty())
        fuse(op, grad, rotations, viaCudnn);
      return;
    }
    if (cost.dim > kFlashAttentionMaxHeadDim) {
      why = llvm::formatv("its head dim {0} is above the flash kernels' {1}",
                          cost.dim, kFlashAttentionMaxHeadDim);
      record(op.getResult(), "decomposed", why);
      if (remarks)
        op.emitRemark() << "not fused: " << why
                        << " (a task holds 16 x D elements on the stack)";
      return;
    }
    if (!flashKernels || (scoreMib <= maxScoreMib && flashMs > decomposedMs)) {
      why = flashKernels ? "estimated slower: " + comparison
                         : "the target's flash kernels are off (on CUDA: "
                           "--cuda-attention=decomposed)";
      record(op.getResult(), "decomposed", why);
      if (remarks)
        op.emitRemark() << "not fused: " << (flashKernels ? estimate : why);
      return;
    }
    why = scoreMib > maxScoreMib
              ? llvm::formatv("its score matrices would take {0:f1} MiB each, "
                              "more than max-score-mib ({1:f1})",
                              scoreMib, double(maxScoreMib))
                    .str()
              : "estimated faster: " + comparison;
    if (rotations)
      why += "; RoPE inside";
    record(op.getResult(), "flash", why);
    if (remarks)
      op.emitRemark() << "fused into flash attention"
                      << (grad ? " with its gradient" : "") << ": "
                      << (scoreMib > maxScoreMib ? why + "; "
                                                 : "estimated faster; ")
                      << estimate << ropeRemark;
    fuse(op, grad, rotations, /*viaCudnn=*/false);
  }

  /// Whether the query and key of `op` are both tg.rope results.
  static bool isRotated(AttentionOp op) {
    return op.getQuery().getDefiningOp<RopeOp>() &&
           op.getKey().getDefiningOp<RopeOp>();
  }

  /// Why the CUDA runtime's flash kernels cannot compute `op` (empty if
  /// they can).
  static std::string libraryRefusal(AttentionOp op, const AttentionCost &cost) {
    auto q = op.getQuery().getType();
    if (!q.getElementType().isBF16())
      return "the runtime's flash kernels take bf16 (compile with "
             "--dtype=bf16)";
    if (cost.dim != 64 && cost.dim != 128)
      return llvm::formatv("its head dim {0} is not the runtime's flash "
                           "kernels' 64 or 128", cost.dim);
    if (cost.planes > 65535)
      return llvm::formatv("its {0} (batch row, head) pairs are above the "
                           "runtime's flash kernels' 65535", cost.planes);
    return "";
  }

  /// Replaces `op` (and its gradient `grad`, if any) by flash attention,
  /// which applies `rotations` itself where given (computed by cuDNN's
  /// fused attention with `viaCudnn`).
  void fuse(AttentionOp op, AttentionGradOp grad,
            std::optional<RotationsAround> rotations, bool viaCudnn) {
    OpBuilder b(op);
    Value query = rotations ? rotations->query.getInput() : op.getQuery();
    Value key = rotations ? rotations->key.getInput() : op.getKey();
    UnitAttr cudnnAttr = viaCudnn ? b.getUnitAttr() : UnitAttr();
    auto flash = FlashAttentionOp::create(
        b, op.getLoc(), query, key, op.getValue(), op.getScaleAttr(),
        op.getCausalAttr(), op.getWindowAttr(), cudnnAttr, FloatAttr(),
        FloatAttr(), FloatAttr(), FloatAttr(), FloatAttr());
    if (rotations)
      flash.setRope(rotations->frequencies);
    op.getResult().replaceAllUsesWith(flash.getResult());
    op.erase();
    if (grad)
      fuseGradient(flash, grad, query, key, rotations);
    if (rotations)
      for (RopeOp rope : {rotations->query, rotations->key})
        rope.erase();
  }

  /// Replaces `grad` by the gradient of `flash`, over its query and key.
  void fuseGradient(FlashAttentionOp flash, AttentionGradOp grad, Value query,
                    Value key, std::optional<RotationsAround> rotations) {
    OpBuilder b(grad);
    // The gradient reads the result's rows. When the forward transposes it
    // to [B, T, Hq, D] for the output projection (which keeps that copy for
    // its own gradient), the gradient reads the copy, so that the result
    // itself is not kept until the backward pass.
    Value result = flash.getResult();
    bool tokens = false;
    for (Operation *user : result.getUsers())
      if (auto transpose = dyn_cast<TransposeOp>(user))
        if (transpose.getPermutation() == ArrayRef<int64_t>{0, 2, 1, 3} &&
            transpose->getBlock() == grad->getBlock() &&
            transpose->isBeforeInBlock(grad)) {
          result = transpose.getResult();
          tokens = true;
          break;
        }
    auto flashGrad = FlashAttentionGradOp::create(
        b, grad.getLoc(), query, key, grad.getValue(), result,
        flash.getLogsumexp(), grad.getResultGrad(), grad.getScaleAttr(),
        grad.getCausalAttr(), grad.getWindowAttr(),
        tokens ? b.getUnitAttr() : UnitAttr(), flash.getCudnnAttr(),
        FloatAttr(), FloatAttr(), FloatAttr(), FloatAttr(), FloatAttr());
    grad.replaceAllUsesWith(flashGrad.getResults());
    grad.erase();
    if (!rotations)
      return;
    flashGrad.setRope(rotations->frequencies);
    // Its query and key gradients are already rotated back.
    for (RopeOp back : {rotations->queryGrad, rotations->keyGrad}) {
      back.getResult().replaceAllUsesWith(back.getInput());
      back.erase();
    }
  }
};

} // namespace
} // namespace mlir::tg
