// exec-fuse-gemm-layouts: the slices, transposes and concatenations that
// only move a GEMM's operands or its product between layouts become the
// GEMM's strides. Attention is the case in point: q, k and v are sliced out
// of the fused projection and transposed to [batch, heads, tokens, head dim]
// before their products, and the heads' outputs (and the gradients of q, k
// and v, concatenated) are transposed back after them. A strided batched
// GEMM (lda/ldb/ldc and a two-level batch, as cuBLAS and BLAS take) reads
// and writes those layouts in place: no kernel, no pass over the activation.
// The runtime's flash attention (exec.attention) reads and writes its
// operands at any batch, head and row strides: its q, k, v and dO, its result
// and its gradients are folded the same way.
#include "tg/Exec/IR/ExecOps.h"
#include "tg/IR/TgOps.h"
#include "tg/Passes/Passes.h"
#include "tg/Passes/StridedLayout.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/SetVector.h"

#include <algorithm>
#include <functional>

namespace mlir::tg {
#define GEN_PASS_DEF_EXECFUSEGEMMLAYOUTS
#include "tg/Passes/Passes.h.inc"

namespace {

/// A stored GEMM matrix as strides: rows `ld` apart, and the batch as up to
/// two levels (count, stride), outer first.
struct GemmView {
  int64_t ld;
  SmallVector<std::pair<int64_t, int64_t>, 2> batch;
};

/// `layout` (of the operand's buffer type) as `batch` stored rows x cols
/// matrices with unit column stride, or nothing.
std::optional<GemmView> gemmViewOf(StridedLayout layout, int64_t batch,
                                   int64_t rows, int64_t cols) {
  ArrayRef<int64_t> shape = layout.shape;
  SmallVector<int64_t> target;
  if (shape.size() >= 2 && shape[shape.size() - 2] == rows && shape.back() == cols)
    target.assign(shape.begin(), shape.end());
  else
    target = {batch, rows, cols};
  if (!layout.reshape(target))
    return std::nullopt;
  size_t rank = target.size();
  if (cols > 1 && layout.strides[rank - 1] != 1)
    return std::nullopt;
  GemmView view{rows > 1 ? layout.strides[rank - 2] : cols, {}};
  if (view.ld < cols)
    return std::nullopt;
  int64_t count = 1;
  for (size_t d = 0; d + 2 < rank; ++d) {
    if (target[d] == 1)
      continue;
    count *= target[d];
    auto level = std::make_pair(target[d], layout.strides[d]);
    if (!view.batch.empty() &&
        view.batch.back().second == level.first * level.second)
      view.batch.back() = {view.batch.back().first * level.first, level.second};
    else
      view.batch.push_back(level);
  }
  if (count != batch || view.batch.size() > 2)
    return std::nullopt;
  return view;
}

/// The single tg.transpose, tg.slice or tg.concat that `dispatch`'s kernel
/// computes from its inputs in order, or null.
Operation *layoutOpOf(exec::DispatchOp dispatch, SymbolTableCollection &symbols) {
  Operation *op = exec::getSoleKernelOp(dispatch, symbols);
  return isa_and_nonnull<TransposeOp, SliceOp, ConcatOp>(op) ? op : nullptr;
}

/// The uses of `buffer` and of the views of it (without offsets, which
/// only reshape it); false where a view has an offset.
bool collectUses(Value buffer, SmallVectorImpl<OpOperand *> &uses) {
  for (OpOperand &use : buffer.getUses()) {
    if (auto view = dyn_cast<exec::ViewOp>(use.getOwner())) {
      if (view.getOffset() || !collectUses(view.getResult(), uses))
        return false;
      continue;
    }
    uses.push_back(&use);
  }
  return true;
}

/// A fresh scratch resource (not a view, not updating a state).
exec::ResourceOp freshScratch(Value buffer) {
  auto resource = buffer.getDefiningOp<exec::ResourceOp>();
  if (!resource || resource.getKind() != exec::ResourceKind::scratch ||
      resource.getUpdates() || resource->getNumOperands() != 0)
    return nullptr;
  return resource;
}

bool writes(Operation *op, OpOperand *use) {
  return llvm::is_contained(exec::getWrittenBuffers(op), use->get());
}

/// One layout kernel on the way: `dispatch` computes `op` and reads the
/// buffer before it as input `input`.
struct Step {
  exec::DispatchOp dispatch;
  Operation *op;
  unsigned input;
};

/// The buffer `step` writes.
Value resultOf(Step step) { return step.dispatch.getOutputs()[0]; }

/// How a remark names a layout kernel's op.
StringRef layoutName(Operation *op) {
  return isa<TransposeOp>(op) ? "transpose" : isa<SliceOp>(op) ? "slice" : "concatenation";
}

/// "the transpose and the slice": the ops of `steps`, in order.
std::string layoutNames(ArrayRef<Step> steps) {
  std::string names;
  for (size_t k = 0; k < steps.size(); ++k)
    names += (k == 0                  ? "the "
              : k + 1 == steps.size() ? " and the "
                                      : ", the ") +
             layoutName(steps[k].op).str();
  return names;
}

/// How a remark names operand `operand` of a GEMM or an exec.attention.
std::string commandOperandName(Operation *command, unsigned operand) {
  if (isa<exec::GemmOp>(command))
    return std::string(operand == 0 ? "GEMM's a" : operand == 1 ? "GEMM's b" : "GEMM's product");
  static constexpr const char *forward[] = {"query", "key", "value", "result", "log-sum-exp"};
  static constexpr const char *gradient[] = {
      "query",           "key",   "value",          "result",       "log-sum-exp",
      "result gradient", "delta", "query gradient", "key gradient", "value gradient"};
  bool isGradient = cast<exec::AttentionOp>(command).getGradient();
  return std::string("attention") + (isGradient ? " gradient" : "") + "'s " +
         (isGradient ? gradient[operand] : forward[operand]);
}

/// Why a GEMM or an exec.attention cannot take a layout.
StringRef unfitReason(Operation *command) {
  return isa<exec::GemmOp>(command)
             ? "a strided GEMM cannot take that layout (it needs unit column stride, rows at "
               "least their length apart and at most two batch levels)"
             : "the attention kernels need rows of contiguous elements at batch, head and row "
               "strides that are multiples of 8";
}

ArrayRef<int64_t> shapeOf(Value buffer) {
  return cast<MemRefType>(buffer.getType()).getShape();
}

class LayoutFolder {
public:
  LayoutFolder(exec::ProgramOp program, bool remarks) : program(program), remarks(remarks) {}

  void run() {
    SmallVector<exec::GemmOp> gemms(program.getBlock().getOps<exec::GemmOp>());
    foldOutputs(gemms);
    indexCommands();
    for (exec::GemmOp gemm : gemms)
      for (unsigned operand : {0u, 1u})
        foldOperand(gemm, operand);
    for (auto attention : program.getBlock().getOps<exec::AttentionOp>())
      for (unsigned operand : kFoldedAttentionInputs)
        if (operand < attention.getInputs().size())
          foldAttentionInput(attention, operand);
    eraseDeadLayoutKernels();
  }

  llvm::SetVector<Operation *> touchedKernels;

private:
  // ----- A library call's output written where the layout kernels after it
  // put it: a GEMM's product, the runtime attention's result and gradients.

  /// An output a library call may write at other strides: its command and
  /// buffer, and `take`, whether the command can write `layout` instead
  /// (with `apply`, it then does).
  struct Output {
    Operation *command;
    unsigned operand; // which of the command's operands (for remarks)
    Value buffer;
    std::function<bool(const StridedLayout &layout, bool apply)> take;
  };

  /// The outputs the pass folds: every packed GEMM product, and the
  /// result, dq, dk and dv of the runtime's attention at their packed
  /// strides (their log-sum-exp and delta are read by nothing but it).
  SmallVector<Output> foldableOutputs(ArrayRef<exec::GemmOp> gemms) {
    SmallVector<Output> outputs;
    for (exec::GemmOp gemm : gemms)
      if (packed(gemm, 2))
        outputs.push_back(
            {gemm, 2, gemm.getC(), [this, gemm](const StridedLayout &layout, bool apply) {
               std::optional<GemmView> view = fits(gemm, 2, layout);
               if (view && apply)
                 retarget(gemm, 2, layout, *view);
               return view.has_value();
             }});
    for (auto attention : program.getBlock().getOps<exec::AttentionOp>())
      for (unsigned i = attention.getInputs().size(); i < attention.getNumAttentionOperands(); ++i)
        if (attention.isTensorOperand(i) && attentionPacked(attention, i))
          outputs.push_back({attention, i, attention.getAttentionOperand(i),
                             [attention, i](const StridedLayout &layout, bool apply) {
                               return takeAttentionLayout(attention, i, layout, apply);
                             }});
    return outputs;
  }

  /// The layout kernels that move `output` on, each the only reader of the
  /// one before it and writing a fresh buffer of its own.
  SmallVector<Step> outputChain(const Output &output) {
    SmallVector<Step> chain;
    Operation *writer = output.command;
    Value buffer = output.buffer;
    while (true) {
      SmallVector<OpOperand *> uses;
      if (!freshScratch(buffer) || !collectUses(buffer, uses))
        break;
      OpOperand *read = nullptr;
      bool ok = true;
      for (OpOperand *use : uses) {
        if (use->getOwner() == writer && writes(writer, use))
          continue;
        ok &= !read;
        read = use;
      }
      auto dispatch = read ? dyn_cast<exec::DispatchOp>(read->getOwner()) : nullptr;
      if (!ok || !dispatch || !dispatch.getDone().use_empty() ||
          read->getOperandNumber() >= dispatch.getInputs().size())
        break;
      Operation *op = layoutOpOf(dispatch, symbols);
      if (!op || isa<SliceOp>(op) || !freshScratch(dispatch.getOutputs()[0]))
        break;
      chain.push_back({dispatch, op, read->getOperandNumber()});
      writer = dispatch;
      buffer = dispatch.getOutputs()[0];
    }
    return chain;
  }

  /// Where the output lands after the first `depth` steps of `chain`.
  std::optional<StridedLayout> outputLayout(const Output &output, ArrayRef<Step> chain,
                                            size_t depth) {
    StridedLayout layout = StridedLayout::packed(resultOf(chain[depth - 1]));
    for (size_t k = depth; k-- > 0;) {
      layout.applyViewBackward(chain[k].op, chain[k].input);
      Value before = k == 0 ? output.buffer : resultOf(chain[k - 1]);
      if (!layout.reshape(shapeOf(before)))
        return std::nullopt;
    }
    return layout;
  }

  /// Whether the output can be written where the first `depth` steps put it.
  bool outputFits(const Output &output, ArrayRef<Step> chain, size_t depth) {
    std::optional<StridedLayout> layout = outputLayout(output, chain, depth);
    return layout && output.take(*layout, /*apply=*/false);
  }

  void foldOutputs(ArrayRef<exec::GemmOp> gemms) {
    struct Candidate {
      Output output;
      SmallVector<Step> chain;
      size_t depth;    // steps that can be folded
      std::string why; // why not the whole chain
    };
    SmallVector<Candidate> candidates;
    for (Output &output : foldableOutputs(gemms)) {
      SmallVector<Step> chain = outputChain(output);
      size_t depth = chain.size();
      while (depth > 0 && !outputFits(output, chain, depth))
        --depth;
      std::string why = depth < chain.size() ? unfitReason(output.command).str() : "";
      if (!chain.empty())
        candidates.push_back({std::move(output), std::move(chain), depth, std::move(why)});
    }
    // A concatenation goes only where every one of its inputs is an output
    // folded into it; otherwise the chains through it stop before it.
    for (bool changed = true; changed;) {
      changed = false;
      DenseMap<Operation *, llvm::SmallDenseSet<unsigned>> reached;
      for (Candidate &c : candidates)
        for (size_t k = 0; k < c.depth; ++k)
          reached[c.chain[k].dispatch].insert(c.chain[k].input);
      for (Candidate &c : candidates)
        for (size_t k = 0; k < c.depth; ++k) {
          exec::DispatchOp dispatch = c.chain[k].dispatch;
          if (reached[dispatch].size() != dispatch.getInputs().size()) {
            c.depth = k;
            c.why = "the concatenation has an input that is not a library call's output "
                    "folded into it";
            changed = true;
            break;
          }
        }
      // A shorter chain must still fit the command.
      for (Candidate &c : candidates)
        while (c.depth > 0 && !outputFits(c.output, c.chain, c.depth)) {
          --c.depth;
          c.why = unfitReason(c.output.command);
          changed = true;
        }
    }
    if (remarks)
      for (Candidate &c : candidates)
        remarkFold(c.output.command, c.output.operand, c.chain, c.depth, c.why, /*output=*/true);
    // Outputs folded into one concatenation share its steps: each dispatch
    // and buffer is erased once.
    llvm::SetVector<Operation *> doomed;
    llvm::SetVector<Value> deadBuffers;
    for (Candidate &c : candidates) {
      if (c.depth == 0)
        continue;
      StridedLayout layout = *outputLayout(c.output, c.chain, c.depth);
      auto resource = layout.root.getDefiningOp<exec::ResourceOp>();
      if (c.output.command->isBeforeInBlock(resource))
        exec::moveBeforeInOrder(resource, c.output.command);
      c.output.take(layout, /*apply=*/true);
      deadBuffers.insert(c.output.buffer);
      for (size_t k = 0; k < c.depth; ++k) {
        doomed.insert(c.chain[k].dispatch);
        deadBuffers.insert(resultOf(c.chain[k]));
      }
    }
    for (Operation *dispatch : doomed)
      eraseDispatch(cast<exec::DispatchOp>(dispatch));
    for (Value buffer : deadBuffers)
      eraseIfUnused(buffer);
  }

  /// Says how far operand `operand` of `command`, an output (written) or an
  /// input (read), goes through the layout kernels of `chain` (nearest the
  /// command first; the first `depth`), and `why` not further.
  void remarkFold(Operation *command, unsigned operand, ArrayRef<Step> chain, size_t depth,
                  StringRef why, bool output) {
    const char *verb = output ? "written" : "read", *side = output ? "after" : "before";
    InFlightDiagnostic remark = command->emitRemark();
    remark << commandOperandName(command, operand);
    if (depth == 0) {
      remark << " not " << verb << " through " << layoutNames(chain.take_front()) << " " << side
             << " it: " << why;
      return;
    }
    // Named in program order: an input's layout kernels ran farthest first.
    SmallVector<Step> folded(chain.take_front(depth));
    if (!output)
      std::reverse(folded.begin(), folded.end());
    remark << " " << verb << ", as strides, where " << layoutNames(folded) << " " << side << " it "
           << (output ? "put" : "read") << " it";
    if (depth < chain.size())
      remark << "; not through " << layoutNames(chain.slice(depth, 1)) << " " << side
             << " that: " << why;
  }

  // ----- A GEMM's operand read where the layout kernels before it read it.

  /// Program order of the commands, and each storage's writers. A buffer
  /// that holds a state's new value (`updates`) may share the state's
  /// storage once planned: its writers count as the state's too.
  void indexCommands() {
    position.clear();
    writers.clear();
    int64_t i = 0;
    for (Operation &op : program.getBlock()) {
      position[&op] = i++;
      for (Value written : exec::getWrittenBuffers(&op)) {
        exec::ResourceOp storage = exec::getStorage(written);
        writers[storage].push_back(&op);
        if (storage && storage.getUpdates())
          writers[exec::getStorage(storage.getUpdates())].push_back(&op);
      }
    }
  }

  /// Whether a command between `from` and `to` writes `buffer`'s storage.
  bool writtenBetween(Value buffer, Operation *from, Operation *to) {
    auto written = writers.find(exec::getStorage(buffer));
    if (written == writers.end())
      return false;
    for (Operation *writer : written->second)
      if (position[writer] > position[from] && position[writer] < position[to])
        return true;
    return false;
  }

  /// The layout kernel that alone wrote the scratch buffer `buffer` is a
  /// reshaping view of, or null.
  exec::DispatchOp soleLayoutWriter(Value buffer) {
    while (auto view = buffer.getDefiningOp<exec::ViewOp>()) {
      if (view.getOffset())
        return nullptr;
      buffer = view.getSource();
    }
    exec::ResourceOp storage = freshScratch(buffer);
    if (!storage)
      return nullptr;
    auto written = writers.find(storage);
    auto dispatch = written != writers.end() && written->second.size() == 1
                        ? dyn_cast<exec::DispatchOp>(written->second[0])
                        : nullptr;
    if (!dispatch || dispatch.getOutputs()[0] != buffer)
      return nullptr;
    Operation *op = layoutOpOf(dispatch, symbols);
    return op && !isa<ConcatOp>(op) ? dispatch : nullptr;
  }

  void foldOperand(exec::GemmOp gemm, unsigned operand) {
    if (!packed(gemm, operand))
      return;
    foldInput(gemm.getOperandBuffer(operand), gemm, operand, [&](const StridedLayout &layout) {
      std::optional<GemmView> view = fits(gemm, operand, layout);
      if (view)
        retarget(gemm, operand, layout, *view);
      return view.has_value();
    });
  }

  /// Offers `take` the layouts of `operand` (operand `index` of `reader`) in
  /// the buffers the layout kernels that produced it read, the farthest
  /// first, until it takes one; a buffer that a command between that kernel
  /// and `reader` writes is not offered.
  void foldInput(Value operand, Operation *reader, unsigned index,
                 function_ref<bool(const StridedLayout &)> take) {
    // The layout kernels that produced the operand, nearest first.
    SmallVector<Step> chain;
    SmallVector<Value> inputs; // what each step reads
    Value buffer = operand;
    while (exec::DispatchOp producer = soleLayoutWriter(buffer)) {
      chain.push_back({producer, layoutOpOf(producer, symbols), 0});
      inputs.push_back(producer.getInputs()[0]);
      buffer = inputs.back();
    }
    std::string why; // why not the layout one step farther than the one taken
    for (size_t depth = chain.size(); depth > 0; --depth) {
      Value root = inputs[depth - 1];
      if (writtenBetween(root, chain[depth - 1].dispatch, reader)) {
        why = "a command between them writes what it reads";
        continue;
      }
      StridedLayout layout = StridedLayout::packed(root);
      bool ok = true;
      for (size_t k = depth; k-- > 0 && ok;) {
        layout.applyView(chain[k].op);
        ok = layout.reshape(shapeOf(k == 0 ? operand : inputs[k - 1]));
      }
      if (ok && take(layout)) {
        if (remarks)
          remarkFold(reader, index, chain, depth, why, /*output=*/false);
        return;
      }
      why = ok ? unfitReason(reader).str() : "its layout does not reshape to the operand's";
    }
    if (remarks && !chain.empty())
      remarkFold(reader, index, chain, 0, why, /*output=*/false);
  }

  // ----- The runtime attention's q, k, v and dO read where the layout
  // kernels before it read them.

  /// Operands of exec.attention (inputs, then outputs). The gradient's
  /// result is left: it is read in the tokens' layout the output projection
  /// keeps anyway, and reading the forward's result instead would keep that
  /// alive until the gradient.
  static constexpr unsigned kFoldedAttentionInputs[] = {0, 1, 2, 5};

  void foldAttentionInput(exec::AttentionOp op, unsigned operand) {
    if (!attentionPacked(op, operand))
      return;
    foldInput(op.getInputs()[operand], op, operand, [&](const StridedLayout &layout) {
      return takeAttentionLayout(op, operand, layout, /*apply=*/true);
    });
  }

  /// Whether a bf16 operand of `op` is still its buffer, packed [B, H, T, D]
  /// as tg-lower-to-exec made it.
  static bool attentionPacked(exec::AttentionOp op, unsigned operand) {
    SmallVector<int64_t, 4> shape = op.getTensorShape(operand);
    return op.getStrides().slice(op.getStridesStart(operand), 3) ==
               ArrayRef<int64_t>{shape[1] * shape[2] * shape[3], shape[2] * shape[3], shape[3]} &&
           cast<MemRefType>(op.getAttentionOperand(operand).getType()).getNumElements() ==
               shape[0] * shape[1] * shape[2] * shape[3];
  }

  /// Whether `op` can read or write operand `operand` at `layout`: rows of
  /// D contiguous elements, 16-byte aligned (strides and offset multiples
  /// of 8). With `apply` it then does, through a flat view of the root.
  static bool takeAttentionLayout(exec::AttentionOp op, unsigned operand,
                                  StridedLayout layout, bool apply) {
    if (!layout.reshape(op.getTensorShape(operand)) || layout.strides[3] != 1 || layout.offset % 8 != 0 ||
        llvm::any_of(ArrayRef(layout.strides).take_front(3),
                     [](int64_t s) { return s < 0 || s % 8 != 0; }))
      return false;
    if (!apply)
      return true;
    op->setOperand(operand, viewBefore(op, layout)); // inputs, then outputs
    SmallVector<int64_t> all(op.getStrides());
    llvm::copy(ArrayRef(layout.strides).take_front(3), all.begin() + op.getStridesStart(operand));
    op.setStrides(all);
    return true;
  }

  // ----- Shared.

  /// The elements `layout` reaches, as a flat view of its root made just
  /// before `command`.
  static Value viewBefore(Operation *command, const StridedLayout &layout) {
    OpBuilder b(command);
    auto type = cast<MemRefType>(layout.root.getType());
    return exec::ViewOp::create(
        b, command->getLoc(), MemRefType::get({layout.span()}, type.getElementType()),
        layout.root, b.getI64IntegerAttr(layout.offset));
  }

  /// Whether operand 0 (a), 1 (b) or 2 (c) of `gemm` is still the packed
  /// batch of matrices its buffer holds.
  static bool packed(exec::GemmOp gemm, unsigned operand) {
    exec::GemmOp::Operand o = gemm.getOperandLayout(operand);
    Value buffer = gemm.getOperandBuffer(operand);
    int64_t matrix = o.rows * o.cols, inner = gemm.getInnerBatch();
    bool batchPacked = inner == 1 ? gemm.getBatch() == 1 || o.stride == matrix
                                  : o.innerStride == matrix && o.stride == matrix * inner;
    return o.ld == o.cols && batchPacked &&
           cast<MemRefType>(buffer.getType()).getNumElements() == int64_t(gemm.getBatch()) * matrix;
  }

  /// `layout` as operand `operand` of `gemm`, if it fits the GEMM's batch
  /// as the other operands have it.
  std::optional<GemmView> fits(exec::GemmOp gemm, unsigned operand,
                               const StridedLayout &layout) {
    exec::GemmOp::Operand o = gemm.getOperandLayout(operand);
    std::optional<GemmView> view = gemmViewOf(layout, gemm.getBatch(), o.rows, o.cols);
    if (!view)
      return std::nullopt;
    int64_t inner = gemm.getInnerBatch();
    if (view->batch.size() == 2 && inner != 1 && view->batch[1].first != inner)
      return std::nullopt;
    return view;
  }

  /// Operand `operand` of `gemm` becomes `layout`, as `view` says; the
  /// others keep their matrices, restated for a two-level batch.
  void retarget(exec::GemmOp gemm, unsigned operand, const StridedLayout &layout,
                const GemmView &view) {
    Value buffer = viewBefore(gemm, layout);
    int64_t inner = view.batch.size() == 2 ? view.batch[1].first : int64_t(gemm.getInnerBatch());
    if (inner != int64_t(gemm.getInnerBatch())) {
      // Split the other operands' one-level batches: (batch / inner, inner).
      gemm.setInnerStrideA(gemm.getStrideA());
      gemm.setInnerStrideB(gemm.getStrideB());
      gemm.setInnerStrideC(gemm.getStrideC());
      gemm.setStrideA(gemm.getStrideA() * inner);
      gemm.setStrideB(gemm.getStrideB() * inner);
      gemm.setStrideC(gemm.getStrideC() * inner);
      gemm.setInnerBatch(inner);
    }
    int64_t stride = 0, innerStride = 0;
    if (view.batch.size() == 2) {
      stride = view.batch[0].second;
      innerStride = view.batch[1].second;
    } else if (view.batch.size() == 1) {
      stride = view.batch[0].second * inner;
      innerStride = view.batch[0].second;
    }
    if (inner == 1)
      innerStride = 0;
    gemm.setOperand(operand, buffer, view.ld, stride, innerStride);
  }

  /// Layout kernels whose results nothing reads any more, and then their
  /// inputs' producers, as far as they go.
  void eraseDeadLayoutKernels() {
    for (bool changed = true; changed;) {
      changed = false;
      for (auto dispatch :
           llvm::make_early_inc_range(program.getBlock().getOps<exec::DispatchOp>())) {
        if (!layoutOpOf(dispatch, symbols) || !dispatch.getDone().use_empty())
          continue;
        Value out = dispatch.getOutputs()[0];
        SmallVector<OpOperand *> uses;
        if (!freshScratch(out) || !collectUses(out, uses) || uses.size() != 1)
          continue;
        llvm::SetVector<Value> inputs(dispatch.getInputs().begin(), dispatch.getInputs().end());
        eraseDispatch(dispatch);
        eraseIfUnused(out);
        for (Value input : inputs)
          eraseIfUnused(input);
        changed = true;
      }
    }
  }

  void eraseDispatch(exec::DispatchOp dispatch) {
    touchedKernels.insert(symbols.lookupNearestSymbolFrom(dispatch, dispatch.getKernel()));
    dispatch.erase();
  }

  /// Erases the views of `buffer` (and theirs) that nothing uses.
  static void eraseUnusedViewsOf(Value buffer) {
    for (Operation *user : llvm::make_early_inc_range(buffer.getUsers()))
      if (auto view = dyn_cast<exec::ViewOp>(user)) {
        eraseUnusedViewsOf(view.getResult());
        if (view.getResult().use_empty())
          view.erase();
      }
  }

  /// Erases `buffer` (a scratch resource or a view of one, and then the
  /// view's source) when nothing but unused views of it is left.
  static void eraseIfUnused(Value buffer) {
    Operation *def = buffer.getDefiningOp();
    if (!def || !isa<exec::ResourceOp, exec::ViewOp>(def))
      return;
    if (auto resource = dyn_cast<exec::ResourceOp>(def);
        resource && resource.getKind() != exec::ResourceKind::scratch)
      return;
    eraseUnusedViewsOf(buffer);
    if (!buffer.use_empty())
      return;
    Value source = isa<exec::ViewOp>(def) ? cast<exec::ViewOp>(def).getSource() : Value();
    def->erase();
    if (source)
      eraseIfUnused(source);
  }

  exec::ProgramOp program;
  bool remarks;
  SymbolTableCollection symbols;
  DenseMap<Operation *, int64_t> position;
  DenseMap<exec::ResourceOp, SmallVector<Operation *>> writers;
};

struct FuseGemmLayoutsPass : impl::ExecFuseGemmLayoutsBase<FuseGemmLayoutsPass> {
  using ExecFuseGemmLayoutsBase::ExecFuseGemmLayoutsBase;

  void runOnOperation() override {
    llvm::SetVector<Operation *> touched;
    for (auto program : getOperation().getOps<exec::ProgramOp>()) {
      LayoutFolder folder(program, remarks);
      folder.run();
      touched.insert(folder.touchedKernels.begin(), folder.touchedKernels.end());
    }
    exec::eraseUndispatchedKernels(getOperation(), touched.getArrayRef());
  }
};

} // namespace
} // namespace mlir::tg
