// Mapping the work of a row (or of a sequential kernel) onto a team of GPU
// threads: a warp (one row per warp) or a whole block. The kernel bodies
// (passes/lowering/KernelBodies.cpp) promise that a row's inner loops touch
// element i at their own index i only, so an inner loop can be strided over
// the team's lanes, its folds combined across lanes, and the team synchronised
// only around the scalar stores that one lane makes for the team.
#ifndef TG_TARGETS_CUDA_TEAMMAPPING_H
#define TG_TARGETS_CUDA_TEAMMAPPING_H

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

namespace mlir::tg::cuda {

/// The lanes that share a row: `size` threads, this one being `lane`.
struct Team {
  enum class Kind { Warp, Block };
  Kind kind;
  int64_t size;
  Value lane; // index
};

/// Emits one team's copy of the ops of a kernel, strided over its lanes.
class TeamEmitter {
public:
  /// A lane adds at most `f32Terms` terms of a float64 sum in float32
  /// (PartialSums.h; 0: none).
  TeamEmitter(OpBuilder &b, gpu::GPUFuncOp func, Team team, int64_t f32Terms)
      : b(b), func(func), team(team), f32Terms(f32Terms) {}

  /// Clones `ops` (in order) for the team: `scf.for` loops directly among
  /// them are strided over the lanes and their folds reduced across the
  /// team, but for the loops marked kInOrderAttr, which run in order
  /// (cloneInOrder); stores among them are made by lane 0 between team
  /// barriers.
  LogicalResult cloneTeamLevel(ArrayRef<Operation *> ops, IRMapping &map);
  /// Clones `ops` run by every lane alike: `scf.for` loops among them that
  /// hold loops or stores stay sequential, the ops of their bodies cloned at
  /// team level; a loop that only reads and folds is strided like at team
  /// level.
  LogicalResult cloneSequential(ArrayRef<Operation *> ops, IRMapping &map);

  /// The fold combining `value` over the lanes of the team, available to
  /// every lane. `combiner` names the arith op (addf, maximumf, minimumf).
  Value reduceAcrossTeam(Value value, StringRef combiner);
  /// A row's maximum and sum of exponentials (kMaxSumExpAttr) over the
  /// lanes of the team, joined by combineMaxSumExp; every lane gets them.
  std::pair<Value, Value> reduceMaxSumExpAcrossTeam(Value max, Value sum);
  /// The folds of `loop`'s iterations from `lower` (inclusive) to `upper`
  /// (exclusive), strided over the lanes and combined across the team,
  /// each started from its combiner's identity rather than the loop's init:
  /// every lane gets the totals. `lower` is the loop's lower bound plus a
  /// multiple of `startMultiple` (0: the lower bound itself). A lane takes
  /// consecutive iterations as vectors where the body allows
  /// (laneVectorsOf), and the iterations after the last whole vector one at
  /// a time. `mostIterations`: how many iterations the range has at most,
  /// where its bounds are not constants.
  FailureOr<SmallVector<Value>>
  foldOverTeam(scf::ForOp loop, Value lower, Value upper, int64_t startMultiple,
               std::optional<int64_t> mostIterations, IRMapping &map);
  /// Totals of a warp's folds, each held by one lane (and maybe others).
  struct HeldTotals {
    SmallVector<Value> totals;
    SmallVector<int64_t> holders; // the lane whose totals[k] is the total
  };
  /// The folds of foldOverTeam for a warp whose totals one lane each is
  /// enough for (a split fold's partials). Several folds of one combiner
  /// are combined by halving: at each butterfly step a lane keeps half of
  /// its folds and trades the other half with its partner, so 16 folds take
  /// 8 + 4 + 2 + 1 + 1 shuffles where a butterfly per fold takes 16 x 5.
  FailureOr<HeldTotals> foldOverWarpHeld(scf::ForOp loop, Value lower,
                                         Value upper, int64_t startMultiple,
                                         std::optional<int64_t> mostIterations,
                                         IRMapping &map);

private:
  /// Each lane's own folds of foldOverTeam, not yet combined across the
  /// team; `combiners` gets each fold's combiner.
  FailureOr<SmallVector<Value>> foldLanes(scf::ForOp loop, Value lower,
                                          Value upper, int64_t startMultiple,
                                          std::optional<int64_t> mostIterations,
                                          IRMapping &map,
                                          SmallVector<StringRef> &combiners);
  /// The trips of each lane round a loop from `from` to `to` by `step`, its
  /// iterations taken `width` at a time by the lanes in turn, where every
  /// lane makes the same number, a constant of at most kMaxUnrolledTrips;
  /// none otherwise.
  std::optional<int64_t> uniformTrips(Value from, Value to, Value step,
                                      int64_t width);
  /// A loop of constant bounds from `from` to `to` by `step`: its span of
  /// indices, and how far the team's lanes go a trip, `width` iterations
  /// each.
  struct TeamRange {
    int64_t span, perTrip;
  };
  std::optional<TeamRange> teamRange(Value from, Value to, Value step,
                                     int64_t width);
  /// A warp shuffle of `value` (32 or 64 bits) with the lane `offset` away
  /// (xor); `width`: the warp size as an i32.
  Value shuffleXor(Value value, int64_t offset, Value width);
  LogicalResult cloneStridedLoop(Operation *loop, IRMapping &map);
  /// `loop` run by every lane alike, its body at team level.
  LogicalResult cloneInOrder(scf::ForOp loop, IRMapping &map);
  /// Joins folds that combine together (`join` of two lanes' values, in
  /// order, symmetric) over the lanes of the team: a butterfly of shuffles,
  /// then a block's warps through shared memory. Every lane gets the totals.
  using Join = llvm::function_ref<SmallVector<Value>(ValueRange, ValueRange)>;
  SmallVector<Value> joinAcrossTeam(ValueRange values, const Join &join);
  /// A lane's vectors of maxima and sums of exponentials joined into one
  /// pair, element by element in order.
  std::pair<Value, Value> reduceMaxSumExpVectors(Value max, Value sum);
  void synchronize();
  void clearBody(scf::ForOp loop);
  /// Shared memory of a slot a warp in `element`; `slot` tells apart the
  /// scratch of the folds one reduction combines together.
  Value sharedScratch(Type element, int slot = 0);

  OpBuilder &b;
  gpu::GPUFuncOp func;
  Team team;
  int64_t f32Terms;
  // Per element type and slot, one element per warp.
  DenseMap<std::pair<Type, int>, Value> scratch;
};

/// A loop of at least this many trips is worth unrolling by half of it
/// (unrollForLoadsInFlight).
inline constexpr int64_t kMinUnrolledTrips = 8;
/// `loop`, of bounds not known here, unrolled by 4 (the trips left over run
/// after it, in order): its loads, independent of its folds, are then
/// issued four at a time instead of one a trip. Returns the loop of the
/// leftover trips, whose results are the folds'.
FailureOr<scf::ForOp> unrollForLoadsInFlight(scf::ForOp loop);

/// The arith op that folds iteration values into the loop-carried `acc`
/// (yield = combiner(acc, x), acc used nowhere else), or "" if none.
StringRef foldCombiner(Value acc, Value yielded);
/// The identity of a combiner in `type`.
Value combinerIdentity(OpBuilder &b, Location loc, StringRef combiner,
                       Type type);
/// combiner(x, y) as an op.
Value combine(OpBuilder &b, Location loc, StringRef combiner, Value x,
              Value y);

} // namespace mlir::tg::cuda

#endif
