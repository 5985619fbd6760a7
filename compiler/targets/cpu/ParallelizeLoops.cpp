// tg-cpu-parallelize-loops: a kernel's large top-level scf.parallel loops are
// outlined over a range of their iterations and replaced by a call to a
// launch that the runtime's thread pool splits (ParallelLaunch.h).
#include "ParallelLaunch.h"
#include "tg/Passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/LoopLikeInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/Support/MathExtras.h"

#include <functional>
#include <limits>

namespace mlir::tg {
#define GEN_PASS_DEF_TGCPUPARALLELIZELOOPS
#include "tg/Passes/Passes.h.inc"

namespace {

/// A loop dimension with constant bounds.
struct StaticDim {
  int64_t lower, step;
  uint64_t trips;
};

std::optional<StaticDim> staticDim(Value lower, Value upper, Value step) {
  auto lb = getConstantIntValue(lower), ub = getConstantIntValue(upper),
       st = getConstantIntValue(step);
  if (!lb || !ub || !st || *st <= 0)
    return std::nullopt;
  uint64_t trips = *ub <= *lb ? 0 : llvm::divideCeil(*ub - *lb, *st);
  return StaticDim{*lb, *st, trips};
}

/// The iterations of a loop (1 where a bound is not a constant: the work
/// estimate is then a lower bound, and the loop more likely stays serial).
uint64_t staticIterations(Operation *op) {
  uint64_t iterations = 1;
  auto multiply = [&](Value lower, Value upper, Value step) {
    if (auto dim = staticDim(lower, upper, step))
      iterations = llvm::SaturatingMultiply(iterations, dim->trips);
  };
  if (auto loop = dyn_cast<scf::ForOp>(op))
    multiply(loop.getLowerBound(), loop.getUpperBound(), loop.getStep());
  else if (auto loop = dyn_cast<scf::ParallelOp>(op))
    for (auto [lower, upper, step] : llvm::zip_equal(
             loop.getLowerBound(), loop.getUpperBound(), loop.getStep()))
      multiply(lower, upper, step);
  return iterations;
}

/// The scalar operations of `op` itself: one, or one per lane of the
/// widest vector it reads or writes (tg-cpu-vectorize-elementwise's loops).
uint64_t lanesOf(Operation *op) {
  uint64_t lanes = 1;
  auto widen = [&](Type type) {
    if (auto vector = dyn_cast<VectorType>(type))
      lanes = std::max<uint64_t>(lanes, vector.getNumElements());
  };
  llvm::for_each(op->getOperandTypes(), widen);
  llvm::for_each(op->getResultTypes(), widen);
  return lanes;
}

/// The scalar operations one execution of `op` runs: its own, plus those
/// of its regions, a loop's body once per iteration.
uint64_t workOf(Operation *op) {
  uint64_t inner = 0;
  for (Region &region : op->getRegions())
    for (Operation &nested : region.getOps())
      inner = llvm::SaturatingAdd(inner, workOf(&nested));
  return llvm::SaturatingAdd(
      lanesOf(op), llvm::SaturatingMultiply(staticIterations(op), inner));
}

bool enclosedByLoop(Operation *op) {
  for (Operation *parent = op->getParentOp(); !isa<func::FuncOp>(parent);
       parent = parent->getParentOp())
    if (isa<LoopLikeOpInterface>(parent))
      return true;
  return false;
}

/// Values the outlined body recomputes instead of receiving: nothing is
/// read or written by them, so cloning them is free of ordering concerns
/// (constants, index arithmetic, memref views of the kernel's buffers).
bool recomputable(Value value) {
  Operation *def = value.getDefiningOp();
  return def && def->getNumRegions() == 0 && isMemoryEffectFree(def);
}

/// Stack scratch of a loop body (a memref.alloca of a static shape at its
/// top; the kernel bodies write it before they read it in each iteration).
/// It is allocated once per chunk of iterations, before their loop: in the
/// loop, LLVM would grow the stack by it every iteration.
bool isStackScratch(Operation *op) {
  auto alloca = dyn_cast<memref::AllocaOp>(op);
  return alloca && alloca->getNumOperands() == 0;
}

/// The bare-pointer calling convention of the lowering to LLVM passes only
/// memrefs with static shapes and the identity layout.
bool passable(Type type) {
  auto memref = dyn_cast<MemRefType>(type);
  return !memref || (memref.hasStaticShape() && memref.getLayout().isIdentity());
}

struct ParallelizeLoopsPass
    : impl::TgCpuParallelizeLoopsBase<ParallelizeLoopsPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<func::FuncOp> kernels;
    for (auto kernel : module.getOps<func::FuncOp>())
      if (!kernel.isExternal())
        kernels.push_back(kernel);
    for (func::FuncOp kernel : kernels) {
      SmallVector<scf::ParallelOp> loops;
      kernel.walk([&](scf::ParallelOp loop) {
        if (!enclosedByLoop(loop) && loop.getNumResults() == 0 &&
            workOf(loop) >= uint64_t(std::max<int64_t>(minWork, 0)))
          loops.push_back(loop);
      });
      unsigned outlined = 0;
      for (scf::ParallelOp loop : loops)
        if (outline(kernel, loop, outlined))
          ++outlined;
      // The loops left serial allocate their stack scratch once, before.
      kernel.walk([&](scf::ParallelOp loop) {
        for (Operation &op :
             llvm::make_early_inc_range(loop.getBody()->without_terminator()))
          if (isStackScratch(&op))
            op.moveBefore(loop);
      });
    }
  }

  /// Replaces `loop` by a launch of its body outlined as
  /// `@<kernel>_par<index>`; false (and nothing changed) where the loop
  /// has non-constant bounds, too few leading iterations to split, or
  /// captures a buffer the calling convention cannot pass.
  bool outline(func::FuncOp kernel, scf::ParallelOp loop, unsigned index) {
    SmallVector<StaticDim> dims;
    for (auto [lower, upper, step] : llvm::zip_equal(
             loop.getLowerBound(), loop.getUpperBound(), loop.getStep())) {
      auto dim = staticDim(lower, upper, step);
      if (!dim)
        return false;
      dims.push_back(*dim);
    }
    // The leading dimensions are flattened and split between threads; the
    // last one (of two or more) stays a whole inner loop in every chunk, so
    // that it vectorizes as before and the flat index is split into
    // coordinates once per row, not per element.
    size_t outerDims = dims.size() == 1 ? 1 : dims.size() - 1;
    uint64_t iterations = 1;
    for (size_t d = 0; d < outerDims; ++d)
      iterations = llvm::SaturatingMultiply(iterations, dims[d].trips);
    // The launch takes the count as a signed 64-bit index.
    if (iterations < 2 ||
        iterations > uint64_t(std::numeric_limits<int64_t>::max()))
      return false;

    SetVector<Value> captured;
    getUsedValuesDefinedAbove(loop.getRegion(), captured);
    MLIRContext *ctx = &getContext();
    Location loc = loop.getLoc();
    Type indexType = IndexType::get(ctx);
    std::string name =
        (kernel.getSymName() + "_par" + std::to_string(index)).str();

    OpBuilder moduleBuilder(kernel);
    moduleBuilder.setInsertionPointAfter(kernel);
    auto body = func::FuncOp::create(
        moduleBuilder, loc, name,
        FunctionType::get(ctx, {indexType, indexType}, {}));
    body.setPrivate();
    // Internal linkage: the body is not a kernel of the library (the
    // serializer lists externally visible definitions only), and LLVM may
    // inline it into its launch's trampoline.
    body->setAttr("llvm.linkage",
                  LLVM::LinkageAttr::get(ctx, LLVM::Linkage::Internal));
    Block *entry = body.addEntryBlock();
    OpBuilder b = OpBuilder::atBlockBegin(entry);

    IRMapping mapping;
    SmallVector<Value> passed;
    std::function<void(Value)> materialize = [&](Value value) {
      if (mapping.contains(value))
        return;
      if (recomputable(value)) {
        Operation *def = value.getDefiningOp();
        for (Value operand : def->getOperands())
          materialize(operand);
        b.clone(*def, mapping);
        return;
      }
      mapping.map(value, entry->addArgument(value.getType(), value.getLoc()));
      passed.push_back(value);
    };
    for (Value value : captured)
      materialize(value);
    if (!llvm::all_of(passed, [](Value v) { return passable(v.getType()); })) {
      body.erase();
      return false;
    }
    body.setType(FunctionType::get(ctx, entry->getArgumentTypes(), {}));

    // Index constants at the top of the body, out of the loops.
    auto constant = [&](int64_t v) -> Value {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(entry);
      return arith::ConstantIndexOp::create(b, loc, v);
    };
    auto flat = scf::ForOp::create(b, loc, entry->getArgument(0),
                                   entry->getArgument(1), constant(1));
    b.setInsertionPoint(flat.getBody()->getTerminator());
    // Coordinates of the flat index, row-major (the first dimension
    // slowest), each mapped back to its dimension's lower bound and step.
    SmallVector<Value> ivs(dims.size());
    Value rest = flat.getInductionVar();
    for (size_t d = outerDims; d-- > 0;) {
      Value position = rest;
      if (d > 0) {
        Value trips = constant(dims[d].trips);
        position = arith::RemUIOp::create(b, loc, rest, trips);
        rest = arith::DivUIOp::create(b, loc, rest, trips);
      }
      ivs[d] = position;
      if (dims[d].step != 1)
        ivs[d] = arith::MulIOp::create(b, loc, ivs[d], constant(dims[d].step));
      if (dims[d].lower != 0)
        ivs[d] = arith::AddIOp::create(b, loc, ivs[d], constant(dims[d].lower));
    }
    if (outerDims < dims.size()) {
      const StaticDim &last = dims.back();
      auto inner = scf::ForOp::create(
          b, loc, constant(last.lower),
          constant(last.lower + int64_t(last.trips) * last.step),
          constant(last.step));
      b.setInsertionPoint(inner.getBody()->getTerminator());
      ivs.back() = inner.getInductionVar();
    }
    for (auto [original, iv] : llvm::zip_equal(loop.getInductionVars(), ivs))
      mapping.map(original, iv);
    for (Operation &op : loop.getBody()->without_terminator()) {
      if (isStackScratch(&op)) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(entry);
        b.clone(op, mapping);
        continue;
      }
      b.clone(op, mapping);
    }
    b.setInsertionPointToEnd(entry);
    func::ReturnOp::create(b, loc);

    SmallVector<Type> launchInputs = {indexType};
    for (Value value : passed)
      launchInputs.push_back(value.getType());
    auto launch = func::FuncOp::create(
        moduleBuilder, loc, (name + kParallelLaunchSuffix).str(),
        FunctionType::get(ctx, launchInputs, {}));
    launch.setPrivate();

    OpBuilder caller(loop);
    SmallVector<Value> operands = {
        arith::ConstantIndexOp::create(caller, loc, int64_t(iterations))};
    operands.append(passed);
    func::CallOp::create(caller, loc, launch, operands);
    loop.erase();
    return true;
  }
};

} // namespace
} // namespace mlir::tg
