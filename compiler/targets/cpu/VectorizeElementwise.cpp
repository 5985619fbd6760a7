// tg-cpu-vectorize-elementwise: an elementwise linalg.generic whose inputs
// are each either as large as the iteration space or a single element
// becomes an explicit vector loop over the flat buffers.
//
// Why not leave it to LLVM's loop vectorizer: it cannot prove that the
// buffers do not overlap, so it versions the loop on a runtime check, and a
// kernel updating state in place (the fused AdamW update writes the
// parameter and both moments over themselves) fails the check every time
// and runs the scalar loop: measured 1.5x slower than the same kernel out of
// place. Each vector iteration here reads all its inputs before it writes,
// and a generic reads and writes element i only in iteration i, so vectors
// are correct whether an output is an input's buffer or not.
#include "tg/Passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"

namespace mlir::tg {
#define GEN_PASS_DEF_TGCPUVECTORIZEELEMENTWISE
#include "tg/Passes/Passes.h.inc"

namespace {

/// A rank-1 view of a contiguous static memref.
Value flatView(OpBuilder &b, Location loc, Value memref) {
  auto type = cast<MemRefType>(memref.getType());
  if (type.getRank() == 1)
    return memref;
  ReassociationIndices all;
  for (int64_t d = 0; d < type.getRank(); ++d)
    all.push_back(d);
  if (type.getRank() == 0)
    return memref::ExpandShapeOp::create(
        b, loc, MemRefType::get({1}, type.getElementType()), memref,
        ArrayRef<ReassociationIndices>{});
  return memref::CollapseShapeOp::create(b, loc, memref,
                                         ArrayRef<ReassociationIndices>{all});
}

int64_t elementCount(Value memref) {
  return cast<MemRefType>(memref.getType()).getNumElements();
}

/// Whether `generic` is one this pass rewrites: static, all-parallel,
/// identity outputs, each input the whole space (identity) or one element,
/// a body of arith and math ops that does not read the outputs.
bool isFlatElementwise(linalg::GenericOp generic) {
  if (!generic.hasPureBufferSemantics() ||
      generic.getNumReductionLoops() != 0)
    return false;
  SmallVector<int64_t> ranges = generic.getStaticLoopRanges();
  int64_t space = 1;
  for (int64_t r : ranges) {
    if (ShapedType::isDynamic(r))
      return false;
    space *= r;
  }
  if (space < 2)
    return false;
  for (OpOperand &operand : generic->getOpOperands()) {
    auto type = dyn_cast<MemRefType>(operand.get().getType());
    if (!type || !type.hasStaticShape() || !type.getLayout().isIdentity())
      return false;
    AffineMap map = generic.getMatchingIndexingMap(&operand);
    bool whole = map.isIdentity() && type.getNumElements() == space;
    bool single = type.getNumElements() == 1;
    if (generic.isDpsInit(&operand) ? !whole : !(whole || single))
      return false;
  }
  for (BlockArgument out : generic.getRegionOutputArgs())
    if (!out.use_empty())
      return false;
  for (Operation &op : generic.getBody()->without_terminator())
    if (!isa<arith::ArithDialect, math::MathDialect>(op.getDialect()) ||
        op.getNumRegions() != 0)
      return false;
  return true;
}

class Vectorizer {
public:
  Vectorizer(linalg::GenericOp generic, int64_t lanes)
      : generic(generic), lanes(lanes), b(generic), loc(generic.getLoc()) {}

  void run() {
    int64_t space = elementCount(generic.getDpsInits()[0]);
    // Single-element inputs (scalars such as a learning rate) are read once.
    for (OpOperand *input : generic.getDpsInputOperands()) {
      Value flat = flatView(b, loc, input->get());
      if (elementCount(input->get()) == 1 && space != 1)
        scalars.push_back(
            memref::LoadOp::create(b, loc, flat, ValueRange{index(0)}));
      else
        scalars.push_back(Value());
      flats.push_back(flat);
    }
    for (Value output : generic.getDpsInits())
      outputs.push_back(flatView(b, loc, output));

    // Vectors of `lanes` elements, in any order: what tg-cpu-parallelize-
    // loops may split over threads.
    int64_t vectors = space / lanes;
    if (vectors > 0) {
      auto loop = scf::ParallelOp::create(b, loc, ValueRange{index(0)},
                                          ValueRange{index(vectors)},
                                          ValueRange{index(1)});
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(loop.getBody()->getTerminator());
      Value first = arith::MulIOp::create(b, loc, loop.getInductionVars()[0],
                                          index(lanes));
      emitIteration(first, /*vector=*/true);
    }
    // The remainder, one element at a time.
    if (space % lanes != 0) {
      auto loop = scf::ForOp::create(b, loc, index(vectors * lanes),
                                     index(space), index(1));
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(loop.getBody()->getTerminator());
      emitIteration(loop.getInductionVar(), /*vector=*/false);
    }
    generic.erase();
  }

private:
  Value index(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }

  VectorType vectorOf(Type element) {
    return VectorType::get({lanes}, element);
  }

  /// The generic's body at element `at` (vector: elements [at, at+lanes)).
  void emitIteration(Value at, bool vector) {
    Block *body = generic.getBody();
    IRMapping map;
    for (auto [i, arg] : llvm::enumerate(generic.getRegionInputArgs())) {
      Value value;
      if (scalars[i])
        value = scalars[i];
      else if (vector)
        value = vector::LoadOp::create(b, loc, vectorOf(arg.getType()),
                                       flats[i], ValueRange{at});
      else
        value = memref::LoadOp::create(b, loc, flats[i], ValueRange{at});
      map.map(arg, value);
    }
    for (Operation &op : body->without_terminator()) {
      bool anyVector = llvm::any_of(op.getOperands(), [&](Value v) {
        return isa<VectorType>(map.lookupOrDefault(v).getType());
      });
      if (!anyVector) {
        b.clone(op, map);
        continue;
      }
      OperationState state(loc, op.getName());
      for (Value v : op.getOperands())
        state.addOperands(widen(map.lookupOrDefault(v)));
      for (Type t : op.getResultTypes())
        state.addTypes(vectorOf(t));
      state.addAttributes(op.getAttrs());
      map.map(op.getResults(), b.create(state)->getResults());
    }
    for (auto [value, output] :
         llvm::zip(body->getTerminator()->getOperands(), outputs)) {
      Value result = map.lookupOrDefault(value);
      if (vector)
        vector::StoreOp::create(b, loc, widen(result), output, ValueRange{at});
      else
        memref::StoreOp::create(b, loc, result, output, ValueRange{at});
    }
  }

  /// `v` as a vector: scalars (inputs read once, constants) are broadcast.
  Value widen(Value v) {
    if (isa<VectorType>(v.getType()))
      return v;
    return vector::BroadcastOp::create(b, loc, vectorOf(v.getType()), v);
  }

  linalg::GenericOp generic;
  int64_t lanes;
  OpBuilder b;
  Location loc;
  SmallVector<Value> flats, scalars, outputs;
};

struct VectorizeElementwisePass
    : impl::TgCpuVectorizeElementwiseBase<VectorizeElementwisePass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<linalg::GenericOp> generics;
    getOperation().walk([&](linalg::GenericOp generic) {
      if (isFlatElementwise(generic))
        generics.push_back(generic);
    });
    for (linalg::GenericOp generic : generics)
      Vectorizer(generic, lanes).run();
  }
};

} // namespace
} // namespace mlir::tg
