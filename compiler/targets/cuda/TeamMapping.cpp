#include "TeamMapping.h"
#include "LaneVectors.h"
#include "PartialSums.h"
#include "tg/Passes/KernelBodies.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Utils/Utils.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <limits>

namespace mlir::tg::cuda {

constexpr int64_t kWarpSize = 32;
/// A lane's share of a strided loop with at most this many iterations, the
/// same for every lane, runs as a loop of constant trip count, which LLVM
/// unrolls: the lane's loads are then issued together rather than one per
/// trip round the loop (a 1024-wide bf16 row is 4 vectors a lane).
constexpr int64_t kMaxUnrolledTrips = 8;
/// A lane's loop of other trip counts is unrolled (unrollForLoadsInFlight)
/// where some lane's loop makes kMinUnrolledTrips or more (of constant
/// bounds: the loss's rows, a vocabulary long), not in shorter rows, whose
/// loads are few enough in flight already.

FailureOr<scf::ForOp> unrollForLoadsInFlight(scf::ForOp loop) {
  constexpr uint64_t kFactor = kMinUnrolledTrips / 2;
  auto unrolled = loopUnrollByFactor(loop, kFactor);
  if (failed(unrolled) || !unrolled->epilogueLoopOp)
    return failure();
  return *unrolled->epilogueLoopOp;
}

StringRef foldCombiner(Value acc, Value yielded) {
  Operation *def = yielded.getDefiningOp();
  if (!def || def->getNumOperands() != 2 || !acc.hasOneUse())
    return "";
  if (def->getOperand(0) != acc && def->getOperand(1) != acc)
    return "";
  StringRef name = def->getName().getStringRef();
  for (StringRef known : {"arith.addf", "arith.mulf", "arith.maximumf",
                          "arith.minimumf", "arith.maxnumf", "arith.minnumf"})
    if (name == known)
      return known;
  return "";
}

Value combinerIdentity(OpBuilder &b, Location loc, StringRef combiner,
                       Type type) {
  double inf = std::numeric_limits<double>::infinity();
  double identity = combiner == "arith.addf"   ? 0.0
                    : combiner == "arith.mulf" ? 1.0
                    : combiner.contains("max") ? -inf
                                               : inf;
  return arith::ConstantOp::create(b, loc, type,
                                   b.getFloatAttr(type, identity));
}

Value combine(OpBuilder &b, Location loc, StringRef combiner, Value x,
              Value y) {
  OperationState state(loc, combiner);
  state.addOperands({x, y});
  state.addTypes(x.getType());
  return b.create(state)->getResult(0);
}

void TeamEmitter::clearBody(scf::ForOp loop) {
  // A loop without iter_args is created with its terminator; the clone
  // writes its own.
  if (!loop.getBody()->empty())
    loop.getBody()->getTerminator()->erase();
  b.setInsertionPointToEnd(loop.getBody());
}

void TeamEmitter::synchronize() {
  Location loc = func.getLoc();
  if (team.kind == Team::Kind::Warp)
    NVVM::SyncWarpOp::create(
        b, loc, arith::ConstantIntOp::create(b, loc, b.getI32Type(), -1));
  else
    gpu::BarrierOp::create(b, loc);
}

Value TeamEmitter::sharedScratch(Type element, int slot) {
  auto found = scratch.find({element, slot});
  if (found != scratch.end())
    return found->second;
  auto space = gpu::AddressSpaceAttr::get(b.getContext(),
                                          gpu::AddressSpace::Workgroup);
  auto type = MemRefType::get({kWarpSize}, element, MemRefLayoutAttrInterface(),
                              space);
  Value slots = func.addWorkgroupAttribution(type, func.getLoc());
  scratch[{element, slot}] = slots;
  return slots;
}

SmallVector<Value> TeamEmitter::joinAcrossTeam(ValueRange values,
                                               const Join &join) {
  Location loc = func.getLoc();
  SmallVector<Type> types(values.getTypes());
  // Shuffles move 32- and 64-bit values; narrower floats travel as f32.
  SmallVector<Value> parts(values);
  for (Value &part : parts)
    if (!part.getType().isF32() && !part.getType().isF64())
      part = arith::ExtFOp::create(b, loc, b.getF32Type(), part);
  Value width = arith::ConstantIntOp::create(b, loc, b.getI32Type(), kWarpSize);
  // A butterfly: every lane ends with the same values, since each step
  // joins the same two operands on both lanes of a pair (the joins are
  // symmetric).
  for (int64_t offset = kWarpSize / 2; offset >= 1; offset /= 2) {
    SmallVector<Value> other;
    for (Value part : parts)
      other.push_back(shuffleXor(part, offset, width));
    parts = join(parts, other);
  }
  if (team.kind == Team::Kind::Block) {
    // Warp totals through shared memory (a slot a warp for each value),
    // joined by every thread in warp order (deterministic); the second
    // barrier frees the slots for the next reduction.
    SmallVector<Value> slots;
    for (auto [k, part] : llvm::enumerate(parts))
      slots.push_back(sharedScratch(part.getType(), k));
    Value warpSize = arith::ConstantIndexOp::create(b, loc, kWarpSize);
    Value warp = arith::DivUIOp::create(b, loc, team.lane, warpSize);
    Value laneInWarp = arith::RemUIOp::create(b, loc, team.lane, warpSize);
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    Value first = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                        laneInWarp, zero);
    auto ifFirst = scf::IfOp::create(b, loc, first, /*withElse=*/false);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(ifFirst.thenBlock());
      for (auto [part, slot] : llvm::zip(parts, slots))
        memref::StoreOp::create(b, loc, part, slot, ValueRange{warp});
    }
    gpu::BarrierOp::create(b, loc);
    SmallVector<Value> totals;
    for (int64_t w = 0; w < team.size / kWarpSize; ++w) {
      Value at = arith::ConstantIndexOp::create(b, loc, w);
      SmallVector<Value> warpParts;
      for (Value slot : slots)
        warpParts.push_back(
            memref::LoadOp::create(b, loc, slot, ValueRange{at}));
      totals = totals.empty() ? warpParts : join(totals, warpParts);
    }
    gpu::BarrierOp::create(b, loc);
    parts = totals;
  }
  for (auto [part, type] : llvm::zip(parts, types))
    if (part.getType() != type)
      part = arith::TruncFOp::create(b, loc, type, part);
  return parts;
}

Value TeamEmitter::reduceAcrossTeam(Value value, StringRef combiner) {
  return joinAcrossTeam(value, [&](ValueRange x, ValueRange y) {
    return SmallVector<Value>{combine(b, value.getLoc(), combiner, x[0], y[0])};
  })[0];
}

std::pair<Value, Value> TeamEmitter::reduceMaxSumExpVectors(Value max,
                                                            Value sum) {
  Location loc = max.getLoc();
  int64_t width = cast<VectorType>(max.getType()).getNumElements();
  auto element = [&](Value vector, int64_t k) -> Value {
    return vector::ExtractOp::create(b, loc, vector, k);
  };
  // The lane's elements joined in order, as its scalar iterations would be.
  Value totalMax = element(max, 0), totalSum = element(sum, 0);
  for (int64_t k = 1; k < width; ++k)
    std::tie(totalMax, totalSum) = combineMaxSumExp(
        b, loc, totalMax, totalSum, element(max, k), element(sum, k));
  return {totalMax, totalSum};
}

std::pair<Value, Value> TeamEmitter::reduceMaxSumExpAcrossTeam(Value max,
                                                               Value sum) {
  SmallVector<Value> totals =
      joinAcrossTeam({max, sum}, [&](ValueRange x, ValueRange y) {
        auto [m, s] = combineMaxSumExp(b, max.getLoc(), x[0], x[1], y[0], y[1]);
        return SmallVector<Value>{m, s};
      });
  return {totals[0], totals[1]};
}

Value TeamEmitter::shuffleXor(Value value, int64_t offset, Value width) {
  Location loc = value.getLoc();
  Value distance = arith::ConstantIntOp::create(b, loc, b.getI32Type(), offset);
  return gpu::ShuffleOp::create(b, loc, value, distance, width,
                                gpu::ShuffleMode::XOR)
      .getShuffleResult();
}

/// The vector reduction combining lanes as `combiner` does.
vector::CombiningKind reductionKind(StringRef combiner) {
  return llvm::StringSwitch<vector::CombiningKind>(combiner)
      .Case("arith.addf", vector::CombiningKind::ADD)
      .Case("arith.mulf", vector::CombiningKind::MUL)
      .Case("arith.maximumf", vector::CombiningKind::MAXIMUMF)
      .Case("arith.minimumf", vector::CombiningKind::MINIMUMF)
      .Case("arith.maxnumf", vector::CombiningKind::MAXNUMF)
      .Case("arith.minnumf", vector::CombiningKind::MINNUMF);
}

FailureOr<SmallVector<Value>> TeamEmitter::foldOverTeam(
    scf::ForOp loop, Value lower, Value upper, int64_t startMultiple,
    std::optional<int64_t> mostIterations, IRMapping &map) {
  SmallVector<StringRef> combiners;
  auto laneParts = foldLanes(loop, lower, upper, startMultiple, mostIterations,
                             map, combiners);
  if (failed(laneParts))
    return failure();
  if (loop->hasAttr(kMaxSumExpAttr)) {
    auto [max, sum] =
        reduceMaxSumExpAcrossTeam((*laneParts)[0], (*laneParts)[1]);
    return SmallVector<Value>{max, sum};
  }
  SmallVector<Value> totals;
  for (auto [part, combiner] : llvm::zip(*laneParts, combiners))
    totals.push_back(reduceAcrossTeam(part, combiner));
  return totals;
}

FailureOr<TeamEmitter::HeldTotals> TeamEmitter::foldOverWarpHeld(
    scf::ForOp loop, Value lower, Value upper, int64_t startMultiple,
    std::optional<int64_t> mostIterations, IRMapping &map) {
  assert(team.kind == Team::Kind::Warp && "halving trades within a warp");
  assert(!loop->hasAttr(kMaxSumExpAttr) &&
         "a split fold's folds combine one op each (splitFoldOf)");
  Location loc = loop.getLoc();
  SmallVector<StringRef> combiners;
  auto laneParts = foldLanes(loop, lower, upper, startMultiple, mostIterations,
                             map, combiners);
  if (failed(laneParts))
    return failure();
  HeldTotals held;
  int64_t folds = laneParts->size();
  // Halving needs one combiner and one type for all (a lane combines
  // whichever half it keeps), and at most a fold a lane.
  bool halve = folds > 1 && folds <= kWarpSize && llvm::all_equal(combiners) &&
               llvm::all_equal(llvm::map_range(
                   *laneParts, [](Value v) { return v.getType(); }));
  if (!halve) {
    for (auto [part, combiner] : llvm::zip(*laneParts, combiners)) {
      held.totals.push_back(reduceAcrossTeam(part, combiner));
      held.holders.push_back(0);
    }
    return held;
  }
  StringRef combiner = combiners.front();
  Type type = laneParts->front().getType();
  // Shuffles move 32- and 64-bit values; narrower floats travel as f32.
  bool widen = !type.isF32() && !type.isF64();
  SmallVector<Value> values(*laneParts);
  if (widen)
    for (Value &v : values)
      v = arith::ExtFOp::create(b, loc, b.getF32Type(), v);
  // Padded with identities to a power of two.
  int64_t count = llvm::PowerOf2Ceil(folds);
  while (int64_t(values.size()) < count)
    values.push_back(
        combinerIdentity(b, loc, combiner, values.front().getType()));
  // At the step at `offset`, a lane whose bit `offset` is set keeps the
  // upper half of its folds, its partner the lower half: fold k ends on the
  // lanes whose bits 16, 8, ... are k's bits count/2, count/4, ...
  SmallVector<int64_t> holders;
  for (int64_t k = 0; k < folds; ++k) {
    int64_t lane = 0;
    for (int64_t half = count / 2, bit = kWarpSize / 2; half >= 1;
         half /= 2, bit /= 2)
      if (k & half)
        lane += bit;
    holders.push_back(lane);
  }
  int64_t offset = kWarpSize / 2;
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value width = arith::ConstantIntOp::create(b, loc, b.getI32Type(), kWarpSize);
  for (; count > 1; count /= 2, offset /= 2) {
    int64_t half = count / 2;
    Value upper = arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::ne,
        arith::AndIOp::create(b, loc, team.lane,
                              arith::ConstantIndexOp::create(b, loc, offset)),
        zero);
    SmallVector<Value> kept;
    for (int64_t j = 0; j < half; ++j) {
      Value lowerFold = values[j], upperFold = values[j + half];
      Value keep = arith::SelectOp::create(b, loc, upper, upperFold, lowerFold);
      Value give = arith::SelectOp::create(b, loc, upper, lowerFold, upperFold);
      kept.push_back(
          combine(b, loc, combiner, keep, shuffleXor(give, offset, width)));
    }
    values = kept;
  }
  // The lanes left holding the same fold (those that differ in the bits
  // below the last offset) combine it by a butterfly.
  Value total = values.front();
  for (; offset >= 1; offset /= 2)
    total = combine(b, loc, combiner, total, shuffleXor(total, offset, width));
  if (widen)
    total = arith::TruncFOp::create(b, loc, type, total);
  held.totals.assign(folds, total);
  held.holders = std::move(holders);
  return held;
}

std::optional<TeamEmitter::TeamRange>
TeamEmitter::teamRange(Value from, Value to, Value step, int64_t width) {
  std::optional<int64_t> lower = getConstantIntValue(from);
  std::optional<int64_t> upper = getConstantIntValue(to);
  std::optional<int64_t> by = getConstantIntValue(step);
  if (!lower || !upper || !by || *by <= 0 || *upper <= *lower)
    return std::nullopt;
  return TeamRange{*upper - *lower, *by * width * team.size};
}

std::optional<int64_t> TeamEmitter::uniformTrips(Value from, Value to,
                                                 Value step, int64_t width) {
  std::optional<TeamRange> range = teamRange(from, to, step, width);
  if (!range || range->span % range->perTrip != 0 ||
      range->span / range->perTrip > kMaxUnrolledTrips)
    return std::nullopt;
  return range->span / range->perTrip;
}

FailureOr<SmallVector<Value>>
TeamEmitter::foldLanes(scf::ForOp loop, Value lower, Value upper,
                       int64_t startMultiple,
                       std::optional<int64_t> mostIterations, IRMapping &map,
                       SmallVector<StringRef> &combiners) {
  Location loc = loop.getLoc();
  LaneVectors vectors = laneVectorsOf(loop, startMultiple);
  SmallVector<Value> identities;
  auto yield = cast<scf::YieldOp>(loop.getBody()->getTerminator());
  bool maxSumExp = loop->hasAttr(kMaxSumExpAttr);
  for (auto [k, acc, yielded] :
       llvm::enumerate(loop.getRegionIterArgs(), yield.getOperands())) {
    // A maximum (fold 0) and its sum of exponentials (fold 1) start from the
    // identities of a maximum and of a sum; they combine as a pair
    // (combineMaxSumExp).
    StringRef combiner = !maxSumExp ? foldCombiner(acc, yielded)
                         : k == 0   ? "arith.maximumf"
                                    : "arith.addf";
    if (combiner.empty())
      return loop.emitOpError("folds a value the CUDA target cannot combine "
                              "across the lanes of a warp (an add, mul, max "
                              "or min is needed)");
    combiners.push_back(combiner);
    identities.push_back(combinerIdentity(b, loc, combiner, acc.getType()));
  }
  Value step = map.lookupOrDefault(loop.getStep());
  // Iterations from + (k*width + j)*step, j < width, go to lane k mod size;
  // each lane starts from `inits` (vectors of `width` where it is more than
  // 1) and ends with its own folds (reduced to scalars).
  auto stridedOver = [&](Value from, Value to, int64_t width,
                         ValueRange inits) -> FailureOr<SmallVector<Value>> {
    Value laneStep = arith::MulIOp::create(
        b, loc, step, arith::ConstantIndexOp::create(b, loc, width));
    Value start = arith::AddIOp::create(
        b, loc, from, arith::MulIOp::create(b, loc, team.lane, laneStep));
    Value stride = arith::MulIOp::create(
        b, loc, laneStep, arith::ConstantIndexOp::create(b, loc, team.size));
    std::optional<int64_t> trips = uniformTrips(from, to, step, width);
    auto strided = trips
                       ? scf::ForOp::create(
                             b, loc, arith::ConstantIndexOp::create(b, loc, 0),
                             arith::ConstantIndexOp::create(b, loc, *trips),
                             arith::ConstantIndexOp::create(b, loc, 1), inits)
                       : scf::ForOp::create(b, loc, start, to, stride, inits);
    OpBuilder::InsertionGuard guard(b);
    clearBody(strided);
    // The same iterations in the same order either way: the same results.
    Value iteration =
        trips ? arith::AddIOp::create(
                    b, loc, start,
                    arith::MulIOp::create(b, loc, strided.getInductionVar(),
                                          stride))
              : strided.getInductionVar();
    map.map(loop.getInductionVar(), iteration);
    for (auto [from, to] :
         llvm::zip(loop.getRegionIterArgs(), strided.getRegionIterArgs()))
      map.map(from, to);
    SmallVector<Value> yielded;
    if (width > 1) {
      yielded = cloneVectorBody(b, loop, width, map);
    } else {
      for (Operation &inner : loop.getBody()->without_terminator())
        b.clone(inner, map);
      for (Value v : yield.getOperands())
        yielded.push_back(map.lookupOrDefault(v));
    }
    scf::YieldOp::create(b, loc, yielded);
    // The most trips a lane makes: known where the bounds are constants or
    // the range's iterations are bounded (a split fold's share).
    std::optional<TeamRange> range = teamRange(from, to, step, width);
    std::optional<int64_t> laneTrips = trips;
    if (!laneTrips && range)
      laneTrips = (range->span + range->perTrip - 1) / range->perTrip;
    else if (!laneTrips && mostIterations)
      laneTrips =
          (*mostIterations + width * team.size - 1) / (width * team.size);
    // A lane's float32 sums take its `width` terms a trip, the vector's
    // elements reduced together before they widen; one term gains nothing.
    std::optional<int64_t> laneTerms;
    if (laneTrips && *laneTrips * width > 1)
      laneTerms = *laneTrips * width;
    SmallVector<bool> narrowed =
        maxSumExp ? SmallVector<bool>{false, narrowMaxSumExp(strided, laneTerms,
                                                             f32Terms)}
                  : narrowPartialSums(strided, laneTerms, f32Terms);
    scf::ForOp last = strided;
    if (!trips && range && *laneTrips >= kMinUnrolledTrips) {
      // The lane's start depends on the lane, so its trips are not known
      // here: the leftover ones always get a loop of their own, which ends
      // with the lane's folds.
      FailureOr<scf::ForOp> unrolled = unrollForLoadsInFlight(strided);
      if (failed(unrolled))
        return loop.emitOpError("could not be unrolled for the lanes");
      last = *unrolled;
    }
    b.setInsertionPointAfter(last);
    SmallVector<Value> parts(last.getResults());
    if (width > 1 && maxSumExp)
      std::tie(parts[0], parts[1]) = reduceMaxSumExpVectors(parts[0], parts[1]);
    else if (width > 1)
      for (auto [part, combiner] : llvm::zip(parts, combiners))
        part =
            vector::ReductionOp::create(b, loc, reductionKind(combiner), part);
    return widenPartialSums(b, loc, parts, inits, narrowed);
  };
  SmallVector<Value> laneParts;
  if (vectors.width == 1) {
    auto parts = stridedOver(lower, upper, 1, identities);
    if (failed(parts))
      return failure();
    laneParts = *parts;
  } else {
    SmallVector<Value> vectorIdentities;
    for (Value identity : identities)
      vectorIdentities.push_back(vector::BroadcastOp::create(
          b, loc, VectorType::get({vectors.width}, identity.getType()),
          identity));
    // The vectors end at the last whole vector of the range (step 1).
    Value vectorsEnd = upper;
    if (vectors.remainder) {
      // Folded where the bounds are constants, so that the lanes' trips are
      // known (teamRange).
      Value width = arith::ConstantIndexOp::create(b, loc, vectors.width);
      Value whole = b.createOrFold<arith::MulIOp>(
          loc,
          b.createOrFold<arith::DivUIOp>(
              loc, b.createOrFold<arith::SubIOp>(loc, upper, lower), width),
          width);
      vectorsEnd = b.createOrFold<arith::AddIOp>(loc, lower, whole);
    }
    auto parts =
        stridedOver(lower, vectorsEnd, vectors.width, vectorIdentities);
    if (failed(parts))
      return failure();
    laneParts = *parts;
    if (vectors.remainder) {
      // Fewer iterations than a vector: at most one a lane, never unrolled.
      parts = stridedOver(vectorsEnd, upper, 1, laneParts);
      if (failed(parts))
        return failure();
      laneParts = *parts;
    }
  }
  return laneParts;
}

LogicalResult TeamEmitter::cloneStridedLoop(Operation *op, IRMapping &map) {
  auto loop = cast<scf::ForOp>(op);
  auto totals =
      foldOverTeam(loop, map.lookupOrDefault(loop.getLowerBound()),
                   map.lookupOrDefault(loop.getUpperBound()),
                   /*startMultiple=*/0, /*mostIterations=*/std::nullopt, map);
  if (failed(totals))
    return failure();
  auto yield = cast<scf::YieldOp>(loop.getBody()->getTerminator());
  if (loop->hasAttr(kMaxSumExpAttr)) {
    auto [max, sum] = combineMaxSumExp(
        b, loop.getLoc(), map.lookupOrDefault(loop.getInitArgs()[0]),
        map.lookupOrDefault(loop.getInitArgs()[1]), (*totals)[0], (*totals)[1]);
    map.map(loop.getResult(0), max);
    map.map(loop.getResult(1), sum);
    synchronize();
    return success();
  }
  for (auto [i, result] : llvm::enumerate(loop.getResults())) {
    StringRef combiner =
        foldCombiner(loop.getRegionIterArgs()[i], yield.getOperand(i));
    map.map(result, combine(b, loop.getLoc(), combiner,
                            map.lookupOrDefault(loop.getInitArgs()[i]),
                            (*totals)[i]));
  }
  // Later team-level code may read what other lanes wrote, or overwrite what
  // they read.
  synchronize();
  return success();
}

LogicalResult TeamEmitter::cloneTeamLevel(ArrayRef<Operation *> ops,
                                          IRMapping &map) {
  for (Operation *op : ops) {
    Location loc = op->getLoc();
    if (auto loop = dyn_cast<scf::ForOp>(op)) {
      if (failed(loop->hasAttr(kInOrderAttr) ? cloneInOrder(loop, map)
                                             : cloneStridedLoop(op, map)))
        return failure();
    } else if (isa<memref::StoreOp>(op)) {
      // One lane writes the team's scalar; the others see it after the
      // barrier.
      Value zero = arith::ConstantIndexOp::create(b, loc, 0);
      Value first = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                          team.lane, zero);
      auto ifFirst = scf::IfOp::create(b, loc, first, /*withElse=*/false);
      {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(ifFirst.thenBlock());
        b.clone(*op, map);
      }
      synchronize();
    } else if (op->getNumRegions() != 0 && !isMemoryEffectFree(op)) {
      return op->emitOpError(
          "has effects inside regions, which the CUDA target cannot spread "
          "over the lanes of a warp yet");
    } else {
      b.clone(*op, map);
    }
  }
  return success();
}

LogicalResult TeamEmitter::cloneSequential(ArrayRef<Operation *> ops,
                                           IRMapping &map) {
  for (Operation *op : ops) {
    auto loop = dyn_cast<scf::ForOp>(op);
    // A loop of loops runs in order, its inner loops over the team; a
    // single loop that only reads and folds (a sum over a whole tensor) is
    // itself spread over the team.
    bool innermostFold =
        loop && !loop.getBody()
                     ->walk([](Operation *inner) {
                       return isa<scf::ForOp, memref::StoreOp>(inner)
                                  ? WalkResult::interrupt()
                                  : WalkResult::advance();
                     })
                     .wasInterrupted();
    if (failed(!loop || innermostFold ? cloneTeamLevel({op}, map) : cloneInOrder(loop, map)))
      return failure();
  }
  return success();
}

LogicalResult TeamEmitter::cloneInOrder(scf::ForOp loop, IRMapping &map) {
  SmallVector<Value> inits;
  for (Value init : loop.getInitArgs())
    inits.push_back(map.lookupOrDefault(init));
  auto copy = scf::ForOp::create(b, loop.getLoc(), map.lookupOrDefault(loop.getLowerBound()),
                                 map.lookupOrDefault(loop.getUpperBound()),
                                 map.lookupOrDefault(loop.getStep()), inits);
  OpBuilder::InsertionGuard guard(b);
  clearBody(copy);
  map.map(loop.getInductionVar(), copy.getInductionVar());
  for (auto [from, to] : llvm::zip(loop.getRegionIterArgs(), copy.getRegionIterArgs()))
    map.map(from, to);
  SmallVector<Operation *> body;
  for (Operation &inner : loop.getBody()->without_terminator())
    body.push_back(&inner);
  if (failed(cloneTeamLevel(body, map)))
    return failure();
  SmallVector<Value> yielded;
  for (Value v : loop.getBody()->getTerminator()->getOperands())
    yielded.push_back(map.lookupOrDefault(v));
  scf::YieldOp::create(b, loop.getLoc(), yielded);
  b.setInsertionPointAfter(copy);
  for (auto [from, to] : llvm::zip(loop.getResults(), copy.getResults()))
    map.map(from, to);
  return success();
}

} // namespace mlir::tg::cuda
