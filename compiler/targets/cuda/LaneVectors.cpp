#include "LaneVectors.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::tg::cuda {
namespace {

/// Multiples are tracked up to this (a power of two, above any width).
constexpr int64_t kMostMultiple = 64;

/// The largest power of two, up to kMostMultiple, known to divide the index
/// value `v` (constants, and their sums and products).
int64_t knownMultiple(Value v) {
  if (std::optional<int64_t> c = getConstantIntValue(v))
    return *c == 0 ? kMostMultiple
                   : std::min<int64_t>(kMostMultiple, *c & -*c);
  Operation *def = v.getDefiningOp();
  if (auto add = dyn_cast_or_null<arith::AddIOp>(def))
    return std::min(knownMultiple(add.getLhs()), knownMultiple(add.getRhs()));
  if (auto mul = dyn_cast_or_null<arith::MulIOp>(def))
    return std::min(kMostMultiple,
                    knownMultiple(mul.getLhs()) * knownMultiple(mul.getRhs()));
  return 1;
}

/// What a loop body's values are with respect to its index i: `elements`
/// (index values i + u, u uniform: a flat buffer's element i at offset u)
/// with the multiple known of u, and `varying` values (depending on i,
/// vectors once vectorised). Everything else is uniform.
struct BodyShape {
  DenseMap<Value, int64_t> elements;
  DenseSet<Value> varying;
  int64_t widestBytes = 0;   // of the accesses at elements
  int64_t multiple = kMostMultiple; // of their offsets
};

bool dependsOnIndex(const BodyShape &shape, Value v) {
  return shape.varying.contains(v) || shape.elements.contains(v);
}

/// A flat (rank-1, identity layout) buffer of whole bytes accessed at an
/// element index: its element's bytes, recorded; false otherwise.
bool recordAccess(BodyShape &shape, MemRefType type, ValueRange indices) {
  unsigned bits = type.getElementTypeBitWidth();
  if (type.getRank() != 1 || !type.getLayout().isIdentity() || bits % 8 != 0 ||
      !shape.elements.contains(indices[0]))
    return false;
  shape.widestBytes = std::max<int64_t>(shape.widestBytes, bits / 8);
  shape.multiple = std::min(shape.multiple, shape.elements.lookup(indices[0]));
  return true;
}

std::optional<BodyShape> shapeOf(scf::ForOp loop) {
  BodyShape shape;
  shape.elements[loop.getInductionVar()] = kMostMultiple;
  shape.varying.insert(loop.getRegionIterArgs().begin(),
                       loop.getRegionIterArgs().end());
  for (Operation &op : loop.getBody()->without_terminator()) {
    bool depends = llvm::any_of(op.getOperands(), [&](Value v) {
      return dependsOnIndex(shape, v);
    });
    if (!depends) {
      // Run once for `width` iterations: only what has no effect but reads.
      if (!isMemoryEffectFree(&op) && !isa<memref::LoadOp>(op))
        return std::nullopt;
      continue;
    }
    if (auto load = dyn_cast<memref::LoadOp>(op)) {
      if (!recordAccess(shape, load.getMemRefType(), load.getIndices()))
        return std::nullopt;
      shape.varying.insert(load.getResult());
      continue;
    }
    if (auto store = dyn_cast<memref::StoreOp>(op)) {
      if (!recordAccess(shape, store.getMemRefType(), store.getIndices()))
        return std::nullopt;
      continue;
    }
    if (auto add = dyn_cast<arith::AddIOp>(op); add && add.getType().isIndex()) {
      Value lhs = add.getLhs(), rhs = add.getRhs();
      if (shape.elements.contains(rhs))
        std::swap(lhs, rhs);
      if (!shape.elements.contains(lhs) || dependsOnIndex(shape, rhs))
        return std::nullopt;
      shape.elements[add.getResult()] =
          std::min(shape.elements.lookup(lhs), knownMultiple(rhs));
      continue;
    }
    // Arithmetic on elements' values; the index used any other way (a
    // product, a comparison, a cast) keeps the loop scalar.
    bool scalars = llvm::all_of(op.getResultTypes(), [](Type t) {
      return isa<FloatType, IntegerType>(t);
    });
    bool indexOperand = llvm::any_of(op.getOperands(), [&](Value v) {
      return shape.elements.contains(v);
    });
    if (!OpTrait::hasElementwiseMappableTraits(&op) || op.getNumRegions() ||
        op.getNumResults() != 1 || !scalars || indexOperand)
      return std::nullopt;
    shape.varying.insert(op.getResult(0));
  }
  return shape;
}

/// Whether index values `a` and `b` are computed alike (the same pure ops
/// on alike operands): the kernel bodies recompute a row's offset for
/// each column of a block.
bool alike(Value a, Value b, int depth = 4) {
  if (a == b)
    return true;
  Operation *x = a.getDefiningOp(), *y = b.getDefiningOp();
  if (!x || !y || depth == 0 || x->getName() != y->getName() ||
      x->getNumRegions() || !isPure(x) || x->getAttrDictionary() != y->getAttrDictionary() ||
      x->getNumOperands() != y->getNumOperands())
    return false;
  return llvm::all_of(llvm::zip(x->getOperands(), y->getOperands()),
                      [&](auto pair) {
                        return alike(std::get<0>(pair), std::get<1>(pair),
                                     depth - 1);
                      });
}

/// An index as a sum of terms (what is not an add of index values) plus a
/// constant.
struct LinearIndex {
  SmallVector<Value> terms;
  int64_t constant = 0;
};

void addTerms(Value v, LinearIndex &form) {
  if (std::optional<int64_t> c = getConstantIntValue(v)) {
    form.constant += *c;
    return;
  }
  if (auto add = v.getDefiningOp<arith::AddIOp>()) {
    addTerms(add.getLhs(), form);
    addTerms(add.getRhs(), form);
    return;
  }
  form.terms.push_back(v);
}

bool sameTerms(ArrayRef<Value> a, ArrayRef<Value> b) {
  if (a.size() != b.size())
    return false;
  SmallVector<bool> used(b.size(), false);
  for (Value v : a) {
    auto match = llvm::find_if(llvm::enumerate(b), [&](auto candidate) {
      return !used[candidate.index()] && alike(v, candidate.value());
    });
    if (match == llvm::enumerate(b).end())
      return false;
    used[(*match).index()] = true;
  }
  return true;
}

void coalesceInBlock(Block &block) {
  struct Load {
    memref::LoadOp op;
    LinearIndex index;
  };
  SmallVector<Load> loads;
  for (Operation &op : block)
    if (auto load = dyn_cast<memref::LoadOp>(op)) {
      MemRefType type = load.getMemRefType();
      unsigned bits = type.getElementTypeBitWidth();
      if (type.getRank() != 1 || !type.getLayout().isIdentity() ||
          bits % 8 != 0)
        continue;
      Load entry{load, {}};
      addTerms(load.getIndices()[0], entry.index);
      loads.push_back(entry);
    }
  DenseSet<Operation *> done;
  for (Load &first : loads) {
    if (done.contains(first.op))
      continue;
    MemRefType type = first.op.getMemRefType();
    int64_t width = kVectorBytes / (type.getElementTypeBitWidth() / 8);
    int64_t multiple = kMostMultiple;
    for (Value term : first.index.terms)
      multiple = std::min(multiple, knownMultiple(term));
    if (width < 2 || multiple % width != 0 ||
        first.index.constant % width != 0)
      continue;
    // The loads of elements constant .. constant + width - 1 of the base.
    SmallVector<memref::LoadOp> run(width);
    for (Load &other : loads) {
      int64_t offset = other.index.constant - first.index.constant;
      if (offset >= 0 && offset < width && !run[offset] &&
          other.op.getMemRef() == first.op.getMemRef() &&
          !done.contains(other.op) &&
          sameTerms(first.index.terms, other.index.terms))
        run[offset] = other.op;
    }
    if (llvm::any_of(run, [](memref::LoadOp op) { return !op; }))
      continue;
    // Nothing between the loads may write: they all read before the first
    // of them is replaced.
    Operation *earliest = run[0];
    Operation *latest = run[0];
    for (memref::LoadOp op : run) {
      if (op->isBeforeInBlock(earliest))
        earliest = op;
      if (latest->isBeforeInBlock(op))
        latest = op;
    }
    if (earliest != run[0].getOperation())
      continue; // the base index is computed after the first load
    bool writes = false;
    for (Operation *op = earliest; op != latest; op = op->getNextNode())
      writes |= !isMemoryEffectFree(op) && !isa<memref::LoadOp>(op);
    if (writes)
      continue;
    OpBuilder b(earliest);
    auto vector = vector::LoadOp::create(
        b, earliest->getLoc(), VectorType::get({width}, type.getElementType()),
        run[0].getMemRef(), run[0].getIndices());
    vector.setAlignment(kVectorBytes);
    for (auto [j, op] : llvm::enumerate(run)) {
      OpBuilder at(op);
      op.replaceAllUsesWith(vector::ExtractOp::create(
                                at, op.getLoc(), vector.getResult(),
                                ArrayRef<int64_t>{(int64_t)j})
                                .getResult());
      done.insert(op);
    }
  }
  for (Operation *op : done)
    op->erase();
}

} // namespace

void coalesceConsecutiveLoads(Operation *root) {
  root->walk([](Block *block) { coalesceInBlock(*block); });
}

LaneVectors laneVectorsOf(scf::ForOp loop, int64_t startMultiple) {
  std::optional<int64_t> lower = getConstantIntValue(loop.getLowerBound());
  std::optional<int64_t> upper = getConstantIntValue(loop.getUpperBound());
  std::optional<int64_t> step = getConstantIntValue(loop.getStep());
  if (!lower || !upper || step != 1)
    return {};
  std::optional<BodyShape> shape = shapeOf(loop);
  if (!shape || shape->widestBytes == 0)
    return {};
  auto divides = [](int64_t w, int64_t n) { return n % w == 0; };
  int64_t range = *upper - *lower;
  auto widest = [&](bool wholeRange) {
    int64_t width = kVectorBytes / shape->widestBytes;
    while (width > 1 &&
           !(divides(width, shape->multiple) && divides(width, *lower) &&
             divides(width, startMultiple) && width <= range &&
             (!wholeRange || divides(width, range))))
      width /= 2;
    return width;
  };
  // Vectors that tile the range where they can; else the widest, with the
  // last iterations one at a time.
  if (int64_t width = widest(/*wholeRange=*/true); width > 1)
    return {width, false};
  int64_t width = widest(/*wholeRange=*/false);
  return {width, width > 1};
}

SmallVector<Value> cloneVectorBody(OpBuilder &b, scf::ForOp loop, int64_t width,
                                   IRMapping &map) {
  BodyShape shape = *shapeOf(loop);
  Location loc = loop.getLoc();
  auto vectorOf = [&](Type element) {
    return VectorType::get({width}, element);
  };
  auto asVector = [&](Value v) -> Value {
    Value mapped = map.lookupOrDefault(v);
    if (isa<VectorType>(mapped.getType()))
      return mapped;
    return vector::BroadcastOp::create(b, loc, vectorOf(mapped.getType()),
                                       mapped);
  };
  auto alignment = [&](MemRefType type) {
    return width * type.getElementTypeBitWidth() / 8;
  };
  for (Operation &op : loop.getBody()->without_terminator()) {
    bool depends = llvm::any_of(op.getOperands(), [&](Value v) {
      return dependsOnIndex(shape, v);
    });
    bool elementIndex =
        op.getNumResults() == 1 && shape.elements.contains(op.getResult(0));
    if (!depends || elementIndex) {
      // Uniform, or the index of element i: scalar, at the first of the
      // lane's `width` iterations.
      b.clone(op, map);
    } else if (auto load = dyn_cast<memref::LoadOp>(op)) {
      auto vector = vector::LoadOp::create(
          b, loc, vectorOf(load.getType()), map.lookupOrDefault(load.getMemRef()),
          map.lookupOrDefault(load.getIndices()[0]));
      vector.setAlignment(alignment(load.getMemRefType()));
      map.map(load.getResult(), vector.getResult());
    } else if (auto store = dyn_cast<memref::StoreOp>(op)) {
      auto vector = vector::StoreOp::create(
          b, loc, asVector(store.getValueToStore()),
          map.lookupOrDefault(store.getMemRef()),
          map.lookupOrDefault(store.getIndices()[0]));
      vector.setAlignment(alignment(store.getMemRefType()));
    } else {
      OperationState state(loc, op.getName());
      for (Value v : op.getOperands())
        state.addOperands(asVector(v));
      state.addTypes(vectorOf(op.getResult(0).getType()));
      state.addAttributes(op.getAttrs());
      map.map(op.getResult(0), b.create(state)->getResult(0));
    }
  }
  SmallVector<Value> yielded;
  for (Value v : loop.getBody()->getTerminator()->getOperands())
    yielded.push_back(asVector(v));
  return yielded;
}

} // namespace mlir::tg::cuda
