// tg-cuda-map-kernels: each kernel on memrefs becomes one or more GPU kernels
// (its phases, launched in order) with launch shapes chosen for the device:
//   - element-wise linalg ops: a grid-stride loop, 16-byte vector accesses
//     where every operand is contiguous or constant along the inner dim;
//   - reductions: a thread per output, or a block per output (warp shuffles,
//     then shared memory) when there are too few outputs to fill the device;
//   - row loops (scf.parallel from the kernel bodies): one row per warp, the
//     row's loops strided over the lanes and its folds shuffled together
//     (one row per block where rows are long: kLongRow);
//     but column sums (kThreadRowsAttr): a thread per block of up to 8
//     columns, the lanes of a warp on adjacent blocks;
//   - what is left (loops whose iterations depend on each other): one block,
//     the outer loop in order and the inner loops over its threads;
//   - a long fold of a phase with few teams (a bias gradient's columns, a
//     sum over a whole tensor): split into shares, a warp each (a thread
//     each for columns, a block's threads joining their shares first where
//     they can), whose partial folds a second launch combines in order
//     (SplitFold); with column-sums-in-row-pass, the column sums over a row
//     phase's rows are added by that phase's launch itself, a block's
//     threads taking the 8 rows its warps have just written
//     (emitRowsWithColumnSums).
// Buffers a kernel keeps between its ops become globals of the GPU module.
// Loads are made 16 bytes wide where a lane reads consecutive elements
// (LaneVectors.h).
#include "LaneVectors.h"
#include "PartialSums.h"
#include "TeamMapping.h"
#include "tg/Passes/KernelBodies.h"
#include "tg/Passes/Passes.h"
#include "tg/Targets/CudaTarget.h"

#include "mlir/Dialect/Affine/Utils.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/RegionUtils.h"

namespace mlir::tg {
#define GEN_PASS_DEF_TGCUDAMAPKERNELS
#include "tg/Passes/Passes.h.inc"

namespace {
using cuda::Team;
using cuda::TeamEmitter;

constexpr int64_t kWarpSize = 32;
/// 8 blocks of 256 threads fill an SM of sm_90 (2048 resident threads).
constexpr int64_t kBlocksPerSm = 8;
constexpr int64_t kBlock = 256;
// One block for work that cannot be spread over blocks: 512 threads leave
// each 128 registers (1024 would cap them at 64 and spill).
constexpr int64_t kSequentialBlock = 512;
using cuda::kVectorBytes;
/// A fold is split into shares of at least this many iterations (8 a lane).
constexpr int64_t kMinShare = 256;
/// A share's iterations, a multiple of this.
constexpr int64_t kShareMultiple = 16;
/// Fewer shares than this are not worth a second launch.
constexpr int64_t kMinShares = 4;
/// A sequential phase's block (kSequentialBlock threads) folds fewer
/// iterations than this (16 a thread) in less time than a second launch
/// takes: a small parameter's gradient norm (1024 to 4096 elements) stays
/// one launch.
constexpr int64_t kMinSequentialSplit = 16 * kSequentialBlock;
/// Local buffers of one kernel, as device globals, at most this many bytes.
constexpr int64_t kMaxLocalBytes = int64_t(64) << 20;
/// Registers of an SM, shared by the threads of its resident blocks.
constexpr int64_t kRegistersPerSm = 65536;
/// A row whose loops make this many iterations or more (the loss's rows, a
/// vocabulary long) gets a block of kLongRowBlock threads, not a warp. Its
/// passes read the row again and again: a warp a row keeps some 4,000 rows
/// in flight on the device (100 KB each for GPT-2's loss in bf16), far more
/// than the L2 holds, so every pass reads device memory; a block a row
/// keeps about 264 (two blocks an SM), whose later passes hit the L2.
constexpr int64_t kLongRow = 16384;
constexpr int64_t kLongRowBlock = 512;
/// Blocks an SM of a row phase that adds its rows' columns too
/// (column-sums-in-row-pass): a norm gradient's row pass (72 registers) and
/// the 24 column sums a thread keeps through it fit in 128 registers.
constexpr int64_t kRowPassBlocksPerSm = 2;
/// Blocks of such a row phase whose partials the last of them to finish
/// joins, so that the second launch combines at most a partial a lane
/// (32 groups of 8 of GPT-2 medium's 256 blocks): a lane folding 8 partials
/// of each of a norm gradient's 24 sums in turn would wait for its loads
/// 24 times.
constexpr int64_t kBlocksPerGroup = 8;

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

int64_t product(ArrayRef<int64_t> values) {
  int64_t p = 1;
  for (int64_t v : values)
    p *= v;
  return p;
}

/// A phase of a kernel: one GPU launch (two for a split fold).
struct Phase {
  enum class Kind { Linalg, Rows, Sequential } kind;
  SmallVector<Operation *> ops;
};

/// A fold too long for the teams of its phase (one block for a sequential
/// phase, a warp a row for a row loop of few rows), split into `shares`
/// ranges of `chunk` iterations per row. One launch gives each (row, share)
/// a warp (a thread for thread rows) and keeps its partial folds in device
/// globals, a partial a (row, share) or, where its block combines them, a
/// (row, kBlockShares shares); a second one combines each row's partials, in
/// the same order every run (a lane's in order, then the lanes' by a
/// butterfly), then runs the rest of the phase. `before` only reads, so both
/// launches run it.
struct SplitFold {
  scf::ForOp loop;
  Value row; // the row loop's induction variable; null in a sequential phase
  int64_t rows = 1, shares = 1, chunk = 1;
  bool threadRows = false; // a thread, not a warp, per (row, share)
  SmallVector<Operation *> before, after;
  /// Whether the shares are the blocks of the row phase before the fold,
  /// which add its rows' columns as they go (column-sums-in-row-pass): a
  /// partial a (row, group of kBlocksPerGroup blocks).
  bool inRowPass = false;

  /// Whether the first launch's blocks combine their threads' partials
  /// (threadRows): a block's warps take the same 32 rows, a share each of
  /// kBlockShares consecutive ones, so only one partial a block and row is
  /// stored. A thread's column block of 8 has 8 float64 partials a fold (a
  /// norm gradient's 3 folds 24) for a share of 32 rows of 16 bytes: a
  /// partial a (row, share) would store 8 MB for GPT-2 medium's MLP bias
  /// gradient, an eighth of what the shares read, and launch 2 read it back.
  bool blockCombines() const {
    return !inRowPass && threadRows && rows % kWarpSize == 0 &&
           shares % kBlockShares == 0;
  }
  /// How each of the loop's folds combines (cuda::foldCombiner).
  SmallVector<StringRef> combiners() const {
    scf::ForOp fold = loop;
    auto yield = cast<scf::YieldOp>(fold.getBody()->getTerminator());
    SmallVector<StringRef> all;
    for (auto [acc, yielded] :
         llvm::zip(fold.getRegionIterArgs(), yield.getOperands()))
      all.push_back(cuda::foldCombiner(acc, yielded));
    return all;
  }
  /// The partials launch 2 combines for each row.
  int64_t partialsPerRow() const {
    return blockCombines() ? shares / kBlockShares : shares;
  }
  static constexpr int64_t kBlockShares = kBlock / kWarpSize;
};

/// The GPU function of a kernel's `index`-th launch.
std::string launchSymbol(func::FuncOp kernel, size_t index) {
  return (kernel.getSymName() + "_" + Twine(index)).str();
}

/// Whether row loop `op` gives each row a thread (kThreadRowsAttr).
bool threadRows(Operation *op) { return op->hasAttr(kThreadRowsAttr); }

/// The most iterations a loop of constant bounds directly in row loop `op`
/// makes, of the loops a row's lanes share (not those run in order: the
/// embedding gradient's scan of the tokens is not a row of that length).
int64_t longestTrips(scf::ParallelOp op) {
  int64_t longest = 0;
  for (auto loop : op.getBody()->getOps<scf::ForOp>())
    if (std::optional<APInt> trips = loop.getStaticTripCount();
        trips && !loop->hasAttr(kInOrderAttr))
      longest = std::max(longest, trips->getSExtValue());
  return longest;
}

/// Whether `op` (or an op inside it) may write memory.
bool writesMemory(Operation *op) {
  return op
      ->walk([](Operation *inner) {
        auto effects = dyn_cast<MemoryEffectOpInterface>(inner);
        bool writes =
            effects ? effects.hasEffect<MemoryEffects::Write>()
                    : !inner->hasTrait<OpTrait::HasRecursiveMemoryEffects>();
        return writes ? WalkResult::interrupt() : WalkResult::advance();
      })
      .wasInterrupted();
}

class KernelMapper {
public:
  KernelMapper(gpu::GPUModuleOp gpuModule, int64_t smCount,
               int64_t rowRegisters, int64_t f32Terms, int64_t columnShare,
               bool lastBlockCombines, bool columnSumsInRowPass)
      : gpuModule(gpuModule), smCount(smCount), rowRegisters(rowRegisters),
        f32Terms(f32Terms), columnShare(columnShare),
        lastBlockCombines(lastBlockCombines),
        columnSumsInRowPass(columnSumsInRowPass), b(gpuModule.getContext()) {}

  /// Adds the GPU kernels of `kernel` and returns its launches.
  FailureOr<SmallVector<cuda::Launch>> map(func::FuncOp kernel);

private:
  gpu::GPUFuncOp startPhase(func::FuncOp kernel, StringRef name,
                            ArrayRef<Operation *> prologue, IRMapping &map);
  LogicalResult emitLinalg(linalg::LinalgOp op, gpu::GPUFuncOp func,
                           IRMapping &map, cuda::Launch &launch);
  LogicalResult emitElementwise(linalg::LinalgOp op, IRMapping &map,
                                cuda::Launch &launch);
  LogicalResult emitReduction(linalg::LinalgOp op, gpu::GPUFuncOp func,
                              IRMapping &map, cuda::Launch &launch);
  LogicalResult emitRows(scf::ParallelOp op, gpu::GPUFuncOp func,
                         IRMapping &map, cuda::Launch &launch);
  /// The phase's fold to split over more warps, if it has one worth it.
  std::optional<SplitFold> splitFoldOf(const Phase &phase);
  /// The two launches of a split fold.
  LogicalResult emitSplitFold(func::FuncOp kernel,
                              ArrayRef<Operation *> prologue,
                              const SplitFold &fold,
                              SmallVector<cuda::Launch> &launches);
  /// With column-sums-in-row-pass: the column sums of phase `columns` (a
  /// split fold of thread rows) as the row phase `rows` before it adds them
  /// (SplitFold::inRowPass), where they are over its rows, one after
  /// another, a block's threads can take every column block, and their
  /// folds read only row r at iteration r (kRowLocalColumnsAttr), so that a
  /// block may add a row's columns once its warp has written the row.
  std::optional<SplitFold> columnSumsOfRows(const Phase &rows,
                                            const Phase &columns);
  /// Row phase `rows` and its column sums `fold` (columnSumsOfRows) in one
  /// launch: each block takes groups of 8 rows in turn, a row a warp as
  /// emitRows runs them, then after a barrier its threads add those rows'
  /// columns (read again, from the L1) to the sums they keep over the
  /// block's groups, kBlock / columns threads a column block, each its
  /// slice of the group's rows. The slices join in order in shared memory
  /// and each block stores a partial a column block; launch 2 combines
  /// them (emitCombineLaunch).
  LogicalResult emitRowsWithColumnSums(func::FuncOp kernel,
                                       ArrayRef<Operation *> prologue,
                                       scf::ParallelOp rows, SplitFold fold,
                                       SmallVector<cuda::Launch> &launches);
  /// The identities of `loop`'s folds' `combiners`, at the insertion point.
  SmallVector<Value> identitiesOf(scf::ForOp loop,
                                  ArrayRef<StringRef> combiners);
  /// Fold `loop`'s body over [lower, upper) by `step` from `inits`, in a
  /// loop of its own at the insertion point (`map` maps what the body
  /// reads; it then maps the loop's iteration values too).
  scf::ForOp cloneFoldOver(scf::ForOp loop, Value lower, Value upper,
                           Value step, ValueRange inits, IRMapping &map);
  /// A global a fold of `fold`'s loop for its partials, a slot a (row,
  /// partial): the first launch's, named after `symbol`.
  SmallVector<memref::GlobalOp> addPartials(StringRef symbol,
                                            const SplitFold &fold);
  /// A split fold's second launch: each row's team folds its partials in
  /// share order into the loop's init, then runs the rest of the phase.
  LogicalResult emitCombineLaunch(func::FuncOp kernel,
                                  ArrayRef<Operation *> prologue,
                                  const SplitFold &fold,
                                  ArrayRef<memref::GlobalOp> partials,
                                  SmallVector<cuda::Launch> &launches);
  /// Row `row`'s partials folded in share order into the loop's init, then
  /// the rest of the phase, by `emitter`'s team: launch 2's work for a row,
  /// which the last block of a row group does instead with
  /// last-block-combines.
  LogicalResult combineRow(const SplitFold &fold,
                           ArrayRef<memref::GlobalOp> partials,
                           TeamEmitter &emitter, const Team &team, Value row,
                           IRMapping &map);
  /// With last-block-combines, in a split fold's launch 1 whose blocks join
  /// their shares: a block that has stored its partials counts itself in
  /// its row group's arrivals, and the group's last block combines the
  /// group's 32 rows (combineRow, each warp 4 of them in turn, each row as
  /// launch 2 combines it). Each storing thread has fenced its stores
  /// (`membar.gl`, fence.sc.gpu) before the count, and the last block fences
  /// again before it reads: the fences are ordered, so its plain loads see
  /// every block's partials. It resets the count for the next launch.
  LogicalResult combineInLastBlock(gpu::GPUFuncOp func, const SplitFold &fold,
                                   ArrayRef<memref::GlobalOp> partials,
                                   StringRef symbol, Value group, Value warp,
                                   Value lane, const IRMapping &phaseMap);
  /// Counts the block into `group`'s arrivals (a zeroed device global of
  /// `groups` counts named after `symbol`) once its threads have stored and
  /// fenced what they give the group: a barrier, then thread 0's atomic add.
  /// Returns whether the block is the group's last of `blocksPerGroup`,
  /// which has reset the count for the next launch; every thread of the
  /// block has the answer. The caller's last block fences before it reads
  /// what the others stored.
  Value countBlockIn(gpu::GPUFuncOp func, StringRef symbol, Value group,
                     int64_t groups, int64_t blocksPerGroup);
  /// Combines each of `totals` (its fold's `combiners`) over the `slices`
  /// slices of a block's threads (`sliceSize` consecutive threads each: its
  /// warps, for SplitFold::blockCombines), thread by thread in slice order
  /// through shared memory: the threads of slice 0 (`isFirstSlice`) get the
  /// totals of their rows (`position`, the thread's place in its slice).
  void combineBlockShares(gpu::GPUFuncOp func, SmallVector<Value> &totals,
                          ArrayRef<StringRef> combiners, Value isFirstSlice,
                          Value position, int64_t slices, int64_t sliceSize);
  /// The launch of a phase that is not split.
  LogicalResult emitPhase(const Phase &phase, gpu::GPUFuncOp func,
                          IRMapping &map, cuda::Launch &launch);
  /// Ends a phase's GPU function for `launch`.
  void finishPhase(gpu::GPUFuncOp func, const cuda::Launch &launch);
  /// Lets ptxas use every register one block of `launch` may have, but
  /// where the phase's emitter capped them lower. Left to itself it aims at
  /// more resident blocks and spilled: a split fold's partials (one per
  /// accumulator, 64 for a bias gradient's column block) at 128 registers,
  /// a softmax row's vectors at 40.
  void allowBlockRegisters(gpu::GPUFuncOp func, const cuda::Launch &launch);
  /// Caps the registers of a split fold's first launch whose shares a
  /// thread sums in float32 (a column block's share of a bias gradient) so that
  /// the device holds its whole grid at once, where that leaves 64 a thread
  /// or more: the shares are sized to half the device's threads, one wave,
  /// and ptxas, left to itself, took 76 registers for a bias gradient's
  /// float32 shares (3 blocks an SM of the 4 its grid needs), leaving a
  /// quarter of the grid to a second wave. Float64 shares keep what ptxas
  /// takes, and so does a grid needing fewer (GPT-3's norm gradients, at
  /// 48, spilled).
  void fitOneWave(gpu::GPUFuncOp func, const cuda::Launch &launch);
  /// Caps the registers a thread of `func` may use at `registers` (a long
  /// row's, row-registers), where it may use more.
  void capRegisters(gpu::GPUFuncOp func, int64_t registers);
  /// A new device global of the GPU module, of `type`: `initial`, or
  /// uninitialised.
  memref::GlobalOp addGlobal(StringRef name, MemRefType type,
                             Attribute initial = {});
  /// `global` as a memref, in the function being emitted.
  Value addressOf(memref::GlobalOp global) {
    return memref::GetGlobalOp::create(b, loc, global.getType(),
                                       global.getSymName());
  }

  /// A grid-stride loop giving each of `items` to one thread (blocks of 256,
  /// as many as fill the device).
  scf::ForOp threadPerItem(int64_t items, cuda::Launch &launch);
  /// A grid-stride loop giving each of `items` to one warp (8 a block of
  /// 256, as many blocks as fill the device); sets `lane` to the thread's
  /// lane in its warp.
  scf::ForOp warpPerItem(int64_t items, cuda::Launch &launch, Value &lane);
  /// A grid-stride loop giving each of `items` to one block of `threads`.
  scf::ForOp blockPerItem(int64_t items, int64_t threads, cuda::Launch &launch);
  /// The ivs of a static iteration space from a linear index (last fastest).
  SmallVector<Value> delinearize(Value linear, ArrayRef<int64_t> sizes);
  /// The linalg body at `ivs`, `width` consecutive inner elements at once.
  /// With `acc`, the init operand's block argument reads `acc` and the
  /// yielded value is returned instead of stored.
  FailureOr<Value> emitBodyAt(linalg::LinalgOp op, ArrayRef<Value> ivs,
                              int64_t width, IRMapping &map, Value acc = {});
  int64_t vectorWidth(linalg::LinalgOp op);
  /// The blocks of a row phase of `groups` groups of 8 rows that adds its
  /// rows' columns: two an SM, at most a group each, in whole groups of
  /// kBlocksPerGroup, and at most 32 such groups (launch 2 then folds a
  /// partial a lane).
  int64_t rowPassBlocks(int64_t groups) {
    return std::min({groups, smCount * kRowPassBlocksPerSm,
                     kWarpSize * kBlocksPerGroup}) /
           kBlocksPerGroup * kBlocksPerGroup;
  }
  int64_t gridFor(int64_t items, int64_t perBlock) {
    return std::clamp<int64_t>(ceilDiv(items, perBlock), 1,
                               smCount * kBlocksPerSm);
  }
  Value index(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }

  gpu::GPUModuleOp gpuModule;
  int64_t smCount;
  int64_t rowRegisters; // 0: no cap beyond the block's
  int64_t f32Terms;     // a thread's float32 share of a sum (PartialSums.h)
  int64_t columnShare;  // the fewest rows of a thread's share of a column fold
  bool lastBlockCombines;
  bool columnSumsInRowPass;
  OpBuilder b;
  Location loc = b.getUnknownLoc();
  Value threadId, blockId;
  /// The globals standing for the kernel's local buffers (memref.alloc and
  /// memref.alloca at its top level).
  DenseMap<Value, memref::GlobalOp> locals;
};

memref::GlobalOp KernelMapper::addGlobal(StringRef name, MemRefType type,
                                         Attribute initial) {
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(gpuModule.getBody());
  if (!initial)
    initial = b.getUnitAttr();
  return memref::GlobalOp::create(b, loc, name, b.getStringAttr("private"),
                                  type, initial, /*constant=*/false,
                                  /*alignment=*/b.getI64IntegerAttr(16));
}

gpu::GPUFuncOp KernelMapper::startPhase(func::FuncOp kernel, StringRef name,
                                        ArrayRef<Operation *> prologue,
                                        IRMapping &map) {
  b.setInsertionPointToEnd(gpuModule.getBody());
  loc = kernel.getLoc();
  auto func = gpu::GPUFuncOp::create(b, loc, name, kernel.getFunctionType());
  func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
  Block &entry = func.getBody().front();
  b.setInsertionPointToStart(&entry);
  for (auto [from, to] :
       llvm::zip(kernel.getArguments(), entry.getArguments()))
    map.map(from, to);
  for (Operation *op : prologue) {
    if (isa<memref::AllocOp, memref::AllocaOp>(op)) {
      map.map(op->getResult(0), addressOf(locals.lookup(op->getResult(0))));
    } else {
      b.clone(*op, map);
    }
  }
  threadId = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  blockId = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  return func;
}

SmallVector<Value> KernelMapper::delinearize(Value linear,
                                             ArrayRef<int64_t> sizes) {
  SmallVector<Value> ivs(sizes.size());
  for (int64_t d = sizes.size() - 1; d >= 0; --d) {
    Value size = index(sizes[d]);
    ivs[d] = d == 0 ? linear : arith::RemUIOp::create(b, loc, linear, size);
    if (d > 0)
      linear = arith::DivUIOp::create(b, loc, linear, size);
  }
  return ivs;
}

/// Whether `map` reads along loop dim `dim`.
bool usesDim(AffineMap map, unsigned dim) {
  return map.isFunctionOfDim(dim);
}

int64_t KernelMapper::vectorWidth(linalg::LinalgOp op) {
  if (op.getNumReductionLoops() != 0 || op.getNumLoops() == 0)
    return 1;
  // Constants stay scalars and are broadcast where a vector op uses them.
  for (Operation &inner : op.getBlock()->without_terminator())
    if (!inner.hasTrait<OpTrait::ConstantLike>() &&
        (!OpTrait::hasElementwiseMappableTraits(&inner) ||
         inner.getNumRegions() != 0))
      return 1;
  int64_t maxBytes = 1;
  for (OpOperand &operand : op->getOpOperands())
    if (auto type = dyn_cast<MemRefType>(operand.get().getType()))
      maxBytes = std::max<int64_t>(
          maxBytes, ceilDiv(type.getElementTypeBitWidth(), 8));
  int64_t width = kVectorBytes / maxBytes;
  unsigned inner = op.getNumLoops() - 1;
  if (width < 2 || op.getStaticLoopRanges()[inner] % width != 0)
    return 1;
  for (OpOperand &operand : op->getOpOperands()) {
    auto type = dyn_cast<MemRefType>(operand.get().getType());
    if (!type)
      continue;
    AffineMap map = op.getMatchingIndexingMap(&operand);
    if (!usesDim(map, inner))
      continue; // uniform along the vector: one scalar, broadcast
    // Contiguous along the vector and 16-byte aligned at its start (buffers
    // are at least 64-byte aligned in the arena).
    auto last = dyn_cast<AffineDimExpr>(map.getResults().back());
    if (!last || last.getPosition() != inner)
      return 1;
    for (AffineExpr expr : map.getResults().drop_back())
      if (expr.isFunctionOfDim(inner))
        return 1;
    SmallVector<int64_t> strides;
    int64_t offset;
    if (failed(type.getStridesAndOffset(strides, offset)) ||
        strides.back() != 1 || ShapedType::isDynamic(offset) ||
        offset % width != 0)
      return 1;
    for (int64_t stride : ArrayRef(strides).drop_back())
      if (ShapedType::isDynamic(stride) || stride % width != 0)
        return 1;
  }
  return width;
}

FailureOr<Value> KernelMapper::emitBodyAt(linalg::LinalgOp op,
                                          ArrayRef<Value> ivs, int64_t width,
                                          IRMapping &outer, Value acc) {
  IRMapping map = outer;
  unsigned inner = op.getNumLoops() - 1;
  auto indicesOf = [&](OpOperand &operand) {
    SmallVector<Value> indices;
    for (AffineExpr expr : op.getMatchingIndexingMap(&operand).getResults())
      indices.push_back(affine::expandAffineExpr(b, loc, expr, ivs, {}));
    return indices;
  };
  auto vectorOf = [&](Type element) {
    return VectorType::get({width}, element);
  };
  auto isVector = [](Value v) { return isa<VectorType>(v.getType()); };
  for (OpOperand &operand : op->getOpOperands()) {
    BlockArgument arg = op.getMatchingBlockArgument(&operand);
    if (acc && op.isDpsInit(&operand)) {
      map.map(arg, acc);
      continue;
    }
    if (arg.use_empty())
      continue;
    Value source = outer.lookupOrDefault(operand.get());
    auto type = dyn_cast<MemRefType>(source.getType());
    if (!type) {
      map.map(arg, source);
      continue;
    }
    SmallVector<Value> indices = indicesOf(operand);
    if (width > 1 && usesDim(op.getMatchingIndexingMap(&operand), inner)) {
      auto load = vector::LoadOp::create(
          b, loc, vectorOf(type.getElementType()), source, indices);
      load.setAlignment(width * type.getElementTypeBitWidth() / 8);
      map.map(arg, load);
    } else {
      map.map(arg, memref::LoadOp::create(b, loc, source, indices));
    }
  }
  for (Operation &bodyOp : op.getBlock()->without_terminator()) {
    bool anyVector = llvm::any_of(bodyOp.getOperands(), [&](Value v) {
      return isVector(map.lookupOrDefault(v));
    });
    if (!anyVector) {
      b.clone(bodyOp, map);
      continue;
    }
    SmallVector<Value> operands;
    for (Value v : bodyOp.getOperands()) {
      Value mapped = map.lookupOrDefault(v);
      if (!isVector(mapped))
        mapped = vector::BroadcastOp::create(b, loc, vectorOf(mapped.getType()),
                                             mapped);
      operands.push_back(mapped);
    }
    OperationState state(loc, bodyOp.getName());
    state.addOperands(operands);
    for (Type t : bodyOp.getResultTypes())
      state.addTypes(vectorOf(t));
    state.addAttributes(bodyOp.getAttrs());
    Operation *vectorOp = b.create(state);
    map.map(bodyOp.getResults(), vectorOp->getResults());
  }
  auto yield = op.getBlock()->getTerminator();
  if (acc)
    return map.lookupOrDefault(yield->getOperand(0));
  for (OpOperand &init : op.getDpsInitsMutable()) {
    Value value = map.lookupOrDefault(
        yield->getOperand(init.getOperandNumber() - op.getNumDpsInputs()));
    Value dest = outer.lookupOrDefault(init.get());
    SmallVector<Value> indices = indicesOf(init);
    if (width > 1) {
      if (!isVector(value))
        value = vector::BroadcastOp::create(b, loc, vectorOf(value.getType()),
                                            value);
      auto store = vector::StoreOp::create(b, loc, value, dest, indices);
      store.setAlignment(width *
                         cast<MemRefType>(dest.getType()).getElementTypeBitWidth() /
                         8);
    } else {
      memref::StoreOp::create(b, loc, value, dest, indices);
    }
  }
  return Value();
}

scf::ForOp KernelMapper::threadPerItem(int64_t items, cuda::Launch &launch) {
  launch.block = kBlock;
  launch.grid = gridFor(items, kBlock);
  Value first = arith::AddIOp::create(
      b, loc, arith::MulIOp::create(b, loc, blockId, index(kBlock)), threadId);
  return scf::ForOp::create(b, loc, first, index(items),
                            index(launch.grid * kBlock));
}

scf::ForOp KernelMapper::warpPerItem(int64_t items, cuda::Launch &launch,
                                     Value &lane) {
  constexpr int64_t warpsPerBlock = kBlock / kWarpSize;
  launch.block = kBlock;
  launch.grid = gridFor(items, warpsPerBlock);
  Value warp = arith::DivUIOp::create(b, loc, threadId, index(kWarpSize));
  lane = arith::RemUIOp::create(b, loc, threadId, index(kWarpSize));
  Value first = arith::AddIOp::create(
      b, loc, arith::MulIOp::create(b, loc, blockId, index(warpsPerBlock)),
      warp);
  return scf::ForOp::create(b, loc, first, index(items),
                            index(launch.grid * warpsPerBlock));
}

scf::ForOp KernelMapper::blockPerItem(int64_t items, int64_t threads,
                                      cuda::Launch &launch) {
  launch.block = threads;
  launch.grid = gridFor(items, 1);
  return scf::ForOp::create(b, loc, blockId, index(items), index(launch.grid));
}

LogicalResult KernelMapper::emitElementwise(linalg::LinalgOp op,
                                            IRMapping &map,
                                            cuda::Launch &launch) {
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  int64_t width = vectorWidth(op);
  int64_t items = product(ranges) / width;
  scf::ForOp loop = threadPerItem(items, launch);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(loop.getBody()->getTerminator());
  Value linear = arith::MulIOp::create(b, loc, loop.getInductionVar(),
                                       index(width));
  return emitBodyAt(op, delinearize(linear, ranges), width, map);
}

LogicalResult KernelMapper::emitReduction(linalg::LinalgOp op,
                                          gpu::GPUFuncOp func, IRMapping &map,
                                          cuda::Launch &launch) {
  if (op.getNumDpsInits() != 1)
    return op->emitOpError("reduces into ")
           << op.getNumDpsInits()
           << " outputs; the CUDA target maps reductions into one";
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  SmallVector<unsigned> parallel, reduction;
  op.getParallelDims(parallel);
  op.getReductionDims(reduction);
  SmallVector<int64_t> outSizes, reducedSizes;
  for (unsigned d : parallel)
    outSizes.push_back(ranges[d]);
  for (unsigned d : reduction)
    reducedSizes.push_back(ranges[d]);
  int64_t outputs = product(outSizes), reduced = product(reducedSizes);
  OpOperand *init = op.getDpsInitOperand(0);
  Value out = map.lookupOrDefault(init->get());
  auto yield = op.getBlock()->getTerminator();
  StringRef combiner =
      cuda::foldCombiner(op.getMatchingBlockArgument(init), yield->getOperand(0));
  bool blockPerOutput = !combiner.empty() && outputs < smCount * kWarpSize;

  auto ivsAt = [&](ArrayRef<Value> outIvs, ArrayRef<Value> reducedIvs) {
    SmallVector<Value> ivs(ranges.size());
    for (auto [d, v] : llvm::zip(parallel, outIvs))
      ivs[d] = v;
    for (auto [d, v] : llvm::zip(reduction, reducedIvs))
      ivs[d] = v;
    return ivs;
  };
  auto outIndices = [&](ArrayRef<Value> ivs) {
    SmallVector<Value> indices;
    for (AffineExpr expr : op.getMatchingIndexingMap(init).getResults())
      indices.push_back(affine::expandAffineExpr(b, loc, expr, ivs, {}));
    return indices;
  };
  // fold(acc) over reduced elements first, first + step, ... < reduced.
  auto foldReduced = [&](ArrayRef<Value> outIvs, Value acc, Value first,
                         Value step) -> FailureOr<Value> {
    auto loop = scf::ForOp::create(b, loc, first, index(reduced), step,
                                   ValueRange{acc});
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    SmallVector<Value> ivs =
        ivsAt(outIvs, delinearize(loop.getInductionVar(), reducedSizes));
    auto next = emitBodyAt(op, ivs, 1, map, loop.getRegionIterArgs()[0]);
    if (failed(next))
      return failure();
    scf::YieldOp::create(b, loc, *next);
    return loop.getResult(0);
  };

  Type element = cast<MemRefType>(out.getType()).getElementType();
  if (blockPerOutput) {
    launch.block = outputs == 1 ? kSequentialBlock : kBlock;
    launch.grid = std::min(outputs, smCount * kBlocksPerSm);
    auto loop = scf::ForOp::create(b, loc, blockId, index(outputs),
                                   index(launch.grid));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(loop.getBody()->getTerminator());
    SmallVector<Value> outIvs = delinearize(loop.getInductionVar(), outSizes);
    Value identity = cuda::combinerIdentity(b, loc, combiner, element);
    auto partial = foldReduced(outIvs, identity, threadId, index(launch.block));
    if (failed(partial))
      return failure();
    TeamEmitter team(b, func, {Team::Kind::Block, launch.block, threadId},
                     f32Terms);
    Value total = team.reduceAcrossTeam(*partial, combiner);
    Value isFirst = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                          threadId, index(0));
    auto ifFirst = scf::IfOp::create(b, loc, isFirst, /*withElse=*/false);
    b.setInsertionPointToStart(ifFirst.thenBlock());
    SmallVector<Value> indices =
        outIndices(ivsAt(outIvs, SmallVector<Value>(reduction.size(), index(0))));
    Value before = memref::LoadOp::create(b, loc, out, indices);
    memref::StoreOp::create(
        b, loc, cuda::combine(b, loc, combiner, before, total), out, indices);
    return success();
  }
  scf::ForOp loop = threadPerItem(outputs, launch);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(loop.getBody()->getTerminator());
  SmallVector<Value> outIvs = delinearize(loop.getInductionVar(), outSizes);
  SmallVector<Value> indices =
      outIndices(ivsAt(outIvs, SmallVector<Value>(reduction.size(), index(0))));
  Value before = memref::LoadOp::create(b, loc, out, indices);
  auto total = foldReduced(outIvs, before, index(0), index(1));
  if (failed(total))
    return failure();
  memref::StoreOp::create(b, loc, *total, out, indices);
  return success();
}

LogicalResult KernelMapper::emitLinalg(linalg::LinalgOp op,
                                       gpu::GPUFuncOp func, IRMapping &map,
                                       cuda::Launch &launch) {
  if (!op.hasPureBufferSemantics() ||
      llvm::any_of(op.getStaticLoopRanges(), ShapedType::isDynamic))
    return op->emitOpError("needs static shapes on buffers for the CUDA target");
  if (!op.getBlock()->getOps<linalg::IndexOp>().empty())
    return op->emitOpError("reads its loop indices, which the CUDA target "
                           "does not map yet");
  if (op.getNumReductionLoops() == 0)
    return emitElementwise(op, map, launch);
  return emitReduction(op, func, map, launch);
}

LogicalResult KernelMapper::emitRows(scf::ParallelOp op, gpu::GPUFuncOp func,
                                     IRMapping &map, cuda::Launch &launch) {
  std::optional<int64_t> lower = getConstantIntValue(op.getLowerBound()[0]);
  std::optional<int64_t> upper = getConstantIntValue(op.getUpperBound()[0]);
  std::optional<int64_t> step = getConstantIntValue(op.getStep()[0]);
  if (op.getNumLoops() != 1 || lower != 0 || step != 1 || !upper)
    return op.emitOpError("is not a row loop 0..n of the kernel bodies");
  SmallVector<Operation *> body;
  for (Operation &inner : op.getBody()->without_terminator())
    body.push_back(&inner);
  if (threadRows(op)) {
    scf::ForOp loop = threadPerItem(*upper, launch);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(loop.getBody()->getTerminator());
    map.map(op.getInductionVars()[0], loop.getInductionVar());
    for (Operation *inner : body)
      b.clone(*inner, map);
    return success();
  }
  Team team{Team::Kind::Warp, kWarpSize, Value()};
  scf::ForOp loop;
  if (longestTrips(op) >= kLongRow) {
    team = {Team::Kind::Block, kLongRowBlock, threadId};
    loop = blockPerItem(*upper, kLongRowBlock, launch);
    // Two blocks an SM.
    capRegisters(func, kRegistersPerSm / (2 * kLongRowBlock));
  } else {
    loop = warpPerItem(*upper, launch, team.lane);
  }
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(loop.getBody()->getTerminator());
  map.map(op.getInductionVars()[0], loop.getInductionVar());
  TeamEmitter emitter(b, func, team, f32Terms);
  return emitter.cloneTeamLevel(body, map);
}

std::optional<SplitFold> KernelMapper::splitFoldOf(const Phase &phase) {
  SplitFold fold;
  ArrayRef<Operation *> ops = phase.ops;
  SmallVector<Operation *> body;
  bool sequential = phase.kind == Phase::Kind::Sequential;
  if (phase.kind == Phase::Kind::Rows) {
    auto rows = cast<scf::ParallelOp>(ops[0]);
    std::optional<int64_t> upper = getConstantIntValue(rows.getUpperBound()[0]);
    if (rows.getNumLoops() != 1 || !upper)
      return std::nullopt;
    fold.rows = *upper;
    fold.row = rows.getInductionVars()[0];
    fold.threadRows = threadRows(rows);
    for (Operation &op : rows.getBody()->without_terminator())
      body.push_back(&op);
    ops = body;
  } else if (!sequential) {
    return std::nullopt;
  }
  for (auto [i, op] : llvm::enumerate(ops)) {
    auto loop = dyn_cast<scf::ForOp>(op);
    if (!loop || loop.getNumRegionIterArgs() == 0) {
      if (writesMemory(op))
        return std::nullopt;
      continue;
    }
    std::optional<int64_t> lower = getConstantIntValue(loop.getLowerBound());
    std::optional<int64_t> upper = getConstantIntValue(loop.getUpperBound());
    std::optional<int64_t> step = getConstantIntValue(loop.getStep());
    if (!lower || !upper || !step || *step <= 0 || *upper <= *lower ||
        writesMemory(loop))
      return std::nullopt;
    // One block runs a sequential phase's loop of loops in order (a row of
    // the loss at a time); only a plain fold is spread over warps there.
    if (sequential &&
        loop.getBody()->walk([](scf::ForOp) { return WalkResult::interrupt(); })
            .wasInterrupted())
      return std::nullopt;
    auto yield = cast<scf::YieldOp>(loop.getBody()->getTerminator());
    for (auto [acc, yielded] :
         llvm::zip(loop.getRegionIterArgs(), yield.getOperands()))
      if (cuda::foldCombiner(acc, yielded).empty())
        return std::nullopt;
    // Enough warps (threads, for columns) to keep half the device's
    // resident ones busy.
    int64_t teams = smCount * kBlocksPerSm *
                    (fold.threadRows ? kBlock : kBlock / kWarpSize) / 2;
    int64_t trips = ceilDiv(*upper - *lower, *step);
    int64_t shares =
        std::min(trips / (fold.threadRows ? columnShare : kMinShare),
                 ceilDiv(teams, std::max<int64_t>(fold.rows, 1)));
    if (shares < kMinShares || (sequential && trips < kMinSequentialSplit))
      return std::nullopt;
    fold.loop = loop;
    // Shares start at multiples of 16 iterations, so that a lane may take
    // its iterations as vectors (LaneVectors.h).
    fold.chunk = ceilDiv(ceilDiv(trips, shares), kShareMultiple) * kShareMultiple;
    fold.shares = ceilDiv(trips, fold.chunk);
    fold.before.assign(ops.begin(), ops.begin() + i);
    fold.after.assign(ops.begin() + i + 1, ops.end());
    return fold;
  }
  return std::nullopt;
}

LogicalResult KernelMapper::emitSplitFold(func::FuncOp kernel,
                                          ArrayRef<Operation *> prologue,
                                          const SplitFold &fold,
                                          SmallVector<cuda::Launch> &launches) {
  int64_t tasks = fold.rows * fold.shares;
  int64_t partialsPerRow = fold.partialsPerRow();
  scf::ForOp loop = fold.loop;
  Value step = loop.getStep(), lowerBound = loop.getLowerBound(),
        upperBound = loop.getUpperBound();

  // Launch 1: a warp (or a thread) per (row, share) folds the share's
  // iterations; partial k of (row, share) goes to slot row * shares + share
  // of global k (row * partialsPerRow + share / kBlockShares where a block
  // combines its shares first).
  cuda::Launch shares;
  shares.symbol = launchSymbol(kernel, launches.size());
  bool inLastBlock = lastBlockCombines && fold.blockCombines();
  SmallVector<memref::GlobalOp> partials = addPartials(shares.symbol, fold);
  // The iterations of `share`: [lower, upper).
  auto shareRange = [&](Value share, IRMapping &map) {
    Value span = arith::MulIOp::create(b, loc, index(fold.chunk),
                                       map.lookupOrDefault(step));
    Value lower =
        arith::AddIOp::create(b, loc, map.lookupOrDefault(lowerBound),
                              arith::MulIOp::create(b, loc, share, span));
    Value upper = arith::MinUIOp::create(
        b, loc, arith::AddIOp::create(b, loc, lower, span),
        map.lookupOrDefault(upperBound));
    return std::pair{lower, upper};
  };
  if (fold.threadRows) {
    IRMapping map;
    gpu::GPUFuncOp func = startPhase(kernel, shares.symbol, prologue, map);
    IRMapping phaseMap = map;
    OpBuilder::InsertionGuard guard(b);
    bool blockCombines = fold.blockCombines();
    // Adjacent threads take adjacent rows (columns) of one share: a warp's
    // loads at each iteration are adjacent. Where the block combines, its
    // warps take the same 32 rows, each its own share of the block's
    // kBlockShares.
    scf::ForOp tasksLoop;
    Value row, share, warp, lane, group;
    if (blockCombines) {
      int64_t rowGroups = fold.rows / kWarpSize;
      tasksLoop = blockPerItem(tasks / kBlock, kBlock, shares);
      b.setInsertionPoint(tasksLoop.getBody()->getTerminator());
      Value blockTask = tasksLoop.getInductionVar();
      warp = arith::DivUIOp::create(b, loc, threadId, index(kWarpSize));
      lane = arith::RemUIOp::create(b, loc, threadId, index(kWarpSize));
      group = arith::RemUIOp::create(b, loc, blockTask, index(rowGroups));
      row = arith::AddIOp::create(
          b, loc, arith::MulIOp::create(b, loc, group, index(kWarpSize)), lane);
      share = arith::AddIOp::create(
          b, loc,
          arith::MulIOp::create(
              b, loc,
              arith::DivUIOp::create(b, loc, blockTask, index(rowGroups)),
              index(SplitFold::kBlockShares)),
          warp);
    } else {
      tasksLoop = threadPerItem(tasks, shares);
      b.setInsertionPoint(tasksLoop.getBody()->getTerminator());
      Value task = tasksLoop.getInductionVar();
      row = arith::RemUIOp::create(b, loc, task, index(fold.rows));
      share = arith::DivUIOp::create(b, loc, task, index(fold.rows));
    }
    map.map(fold.row, row);
    for (Operation *op : fold.before)
      b.clone(*op, map);
    auto [lower, upper] = shareRange(share, map);
    // The share's iterations in order, from the combiners' identities (the
    // loop's init joins in launch 2).
    SmallVector<StringRef> combiners = fold.combiners();
    SmallVector<Value> identities = identitiesOf(loop, combiners);
    scf::ForOp partial = cloneFoldOver(loop, lower, upper,
                                       map.lookupOrDefault(step), identities, map);
    SmallVector<bool> narrowed =
        cuda::narrowPartialSums(partial, fold.chunk, f32Terms);
    // Unrolled, so that a thread's loads of several rows are in flight at
    // once: a trip's load is one vector of its column block, and LLVM does
    // not unroll a body that large (the last share may be shorter, so the
    // trips are not constant).
    scf::ForOp last = partial;
    if (fold.chunk >= cuda::kMinUnrolledTrips) {
      FailureOr<scf::ForOp> unrolled = cuda::unrollForLoadsInFlight(partial);
      if (failed(unrolled))
        return loop.emitOpError("could not be unrolled for a thread's share");
      last = *unrolled;
    }
    b.setInsertionPointAfter(last);
    SmallVector<Value> totals =
        cuda::widenPartialSums(b, loc, last.getResults(), identities, narrowed);
    Value isFirstWarp;
    if (blockCombines) {
      isFirstWarp = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                          warp, index(0));
      combineBlockShares(func, totals, combiners, isFirstWarp, lane,
                         SplitFold::kBlockShares, kWarpSize);
      share =
          arith::DivUIOp::create(b, loc, share, index(SplitFold::kBlockShares));
    }
    Value slot = arith::AddIOp::create(
        b, loc, arith::MulIOp::create(b, loc, row, index(partialsPerRow)),
        share);
    auto store = [&] {
      for (auto [global, total] : llvm::zip(partials, totals))
        memref::StoreOp::create(b, loc, total, addressOf(global),
                                ValueRange{slot});
    };
    if (blockCombines) {
      // The block's total is warp 0's.
      auto ifFirst = scf::IfOp::create(b, loc, isFirstWarp, /*withElse=*/false);
      {
        OpBuilder::InsertionGuard inFirst(b);
        b.setInsertionPointToStart(ifFirst.thenBlock());
        store();
        if (inLastBlock)
          NVVM::MembarOp::create(b, loc, NVVM::MemScopeKind::GPU);
      }
      if (inLastBlock &&
          failed(combineInLastBlock(func, fold, partials, shares.symbol, group,
                                    warp, lane, phaseMap)))
        return failure();
    } else {
      store();
    }
    b.setInsertionPointAfter(tasksLoop);
    finishPhase(func, shares);
    if (llvm::all_of(narrowed, [](bool f32) { return f32; }))
      fitOneWave(func, shares);
  } else {
    IRMapping map;
    gpu::GPUFuncOp func = startPhase(kernel, shares.symbol, prologue, map);
    Value lane;
    scf::ForOp tasksLoop = warpPerItem(tasks, shares, lane);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(tasksLoop.getBody()->getTerminator());
    Value task = tasksLoop.getInductionVar();
    Value share = arith::RemUIOp::create(b, loc, task, index(fold.shares));
    if (fold.row)
      map.map(fold.row,
              arith::DivUIOp::create(b, loc, task, index(fold.shares)));
    TeamEmitter team(b, func, {Team::Kind::Warp, kWarpSize, lane}, f32Terms);
    if (failed(team.cloneTeamLevel(fold.before, map)))
      return failure();
    auto [lower, upper] = shareRange(share, map);
    // Only the partials are stored, so a fold's total need only reach one
    // lane (its holder), which stores it.
    auto held =
        team.foldOverWarpHeld(loop, lower, upper, fold.chunk, fold.chunk, map);
    if (failed(held))
      return failure();
    for (auto [global, total, holder] :
         llvm::zip(partials, held->totals, held->holders)) {
      Value isHolder = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                             lane, index(holder));
      auto ifHolder = scf::IfOp::create(b, loc, isHolder, /*withElse=*/false);
      OpBuilder::InsertionGuard store(b);
      b.setInsertionPointToStart(ifHolder.thenBlock());
      memref::StoreOp::create(b, loc, total, addressOf(global),
                              ValueRange{task});
    }
    b.setInsertionPointAfter(tasksLoop);
    finishPhase(func, shares);
  }
  launches.push_back(shares);
  if (inLastBlock)
    return success();
  return emitCombineLaunch(kernel, prologue, fold, partials, launches);
}

SmallVector<Value> KernelMapper::identitiesOf(scf::ForOp loop,
                                             ArrayRef<StringRef> combiners) {
  SmallVector<Value> identities;
  for (auto [acc, combiner] : llvm::zip(loop.getRegionIterArgs(), combiners))
    identities.push_back(
        cuda::combinerIdentity(b, loc, combiner, acc.getType()));
  return identities;
}

scf::ForOp KernelMapper::cloneFoldOver(scf::ForOp loop, Value lower,
                                       Value upper, Value step,
                                       ValueRange inits, IRMapping &map) {
  auto fold = scf::ForOp::create(b, loc, lower, upper, step, inits);
  OpBuilder::InsertionGuard body(b);
  b.setInsertionPointToEnd(fold.getBody());
  map.map(loop.getInductionVar(), fold.getInductionVar());
  map.map(loop.getRegionIterArgs(), fold.getRegionIterArgs());
  for (Operation &op : loop.getBody()->without_terminator())
    b.clone(op, map);
  SmallVector<Value> yielded;
  for (Value v : loop.getBody()->getTerminator()->getOperands())
    yielded.push_back(map.lookupOrDefault(v));
  scf::YieldOp::create(b, loc, yielded);
  return fold;
}

SmallVector<memref::GlobalOp> KernelMapper::addPartials(StringRef symbol,
                                                        const SplitFold &fold) {
  SmallVector<memref::GlobalOp> partials;
  scf::ForOp loop = fold.loop;
  for (auto [k, acc] : llvm::enumerate(loop.getRegionIterArgs()))
    partials.push_back(addGlobal(
        (symbol + "_partials" + Twine(k)).str(),
        MemRefType::get({fold.rows * fold.partialsPerRow()}, acc.getType())));
  return partials;
}

std::optional<SplitFold> KernelMapper::columnSumsOfRows(const Phase &rows,
                                                        const Phase &columns) {
  if (!columnSumsInRowPass || rows.kind != Phase::Kind::Rows ||
      columns.kind != Phase::Kind::Rows)
    return std::nullopt;
  auto rowLoop = cast<scf::ParallelOp>(rows.ops[0]);
  std::optional<int64_t> upper =
      getConstantIntValue(rowLoop.getUpperBound()[0]);
  if (rowLoop.getNumLoops() != 1 || threadRows(rowLoop) || !upper ||
      getConstantIntValue(rowLoop.getLowerBound()[0]) != 0 ||
      getConstantIntValue(rowLoop.getStep()[0]) != 1 ||
      longestTrips(rowLoop) >= kLongRow || *upper % (kBlock / kWarpSize) != 0 ||
      rowPassBlocks(*upper / (kBlock / kWarpSize)) < kBlocksPerGroup ||
      splitFoldOf(rows)) // a row phase of few, long rows keeps its split
    return std::nullopt;
  std::optional<SplitFold> fold = splitFoldOf(columns);
  // The fold's `before` runs once, before any row is written: it may only
  // compute (the column block's indices), not read.
  if (!fold || !fold->threadRows ||
      !columns.ops[0]->hasAttr(kRowLocalColumnsAttr) ||
      !llvm::all_of(fold->before, isMemoryEffectFree) ||
      fold->rows % kWarpSize != 0 || kBlock % fold->rows != 0 ||
      getConstantIntValue(fold->loop.getLowerBound()) != 0 ||
      getConstantIntValue(fold->loop.getStep()) != 1 ||
      getConstantIntValue(fold->loop.getUpperBound()) != upper)
    return std::nullopt;
  fold->inRowPass = true;
  return fold;
}

LogicalResult KernelMapper::emitRowsWithColumnSums(
    func::FuncOp kernel, ArrayRef<Operation *> prologue, scf::ParallelOp rows,
    SplitFold fold, SmallVector<cuda::Launch> &launches) {
  constexpr int64_t rowsPerGroup = kBlock / kWarpSize; // a row a warp
  int64_t groups = *getConstantIntValue(rows.getUpperBound()[0]) / rowsPerGroup;
  // A column block's threads, and the rows of a group each takes.
  int64_t slices = kBlock / fold.rows, rowsPerSlice = rowsPerGroup / slices;
  int64_t blocks = rowPassBlocks(groups);
  fold.shares = blocks / kBlocksPerGroup;
  scf::ForOp loop = fold.loop;

  cuda::Launch launch;
  launch.symbol = launchSymbol(kernel, launches.size());
  launch.block = kBlock;
  launch.grid = blocks;
  // A partial a (column block, block), and one a (column block, group of
  // blocks) for launch 2.
  SmallVector<memref::GlobalOp> blockPartials;
  for (auto [k, acc] : llvm::enumerate(loop.getRegionIterArgs()))
    blockPartials.push_back(
        addGlobal((launch.symbol + "_block_partials" + Twine(k)).str(),
                  MemRefType::get({fold.rows * blocks}, acc.getType())));
  SmallVector<memref::GlobalOp> partials = addPartials(launch.symbol, fold);
  IRMapping map;
  gpu::GPUFuncOp func = startPhase(kernel, launch.symbol, prologue, map);
  OpBuilder::InsertionGuard guard(b);
  Value warp = arith::DivUIOp::create(b, loc, threadId, index(kWarpSize));
  Value lane = arith::RemUIOp::create(b, loc, threadId, index(kWarpSize));
  Value column = arith::RemUIOp::create(b, loc, threadId, index(fold.rows));
  Value slice = arith::DivUIOp::create(b, loc, threadId, index(fold.rows));
  map.map(fold.row, column);
  for (Operation *op : fold.before)
    b.clone(*op, map);
  SmallVector<StringRef> combiners = fold.combiners();
  SmallVector<Value> identities = identitiesOf(loop, combiners);
  // The block's groups in turn, the thread's sums carried through them.
  auto groupLoop = scf::ForOp::create(b, loc, blockId, index(groups),
                                      index(blocks), identities);
  scf::ForOp sliceLoop;
  {
    OpBuilder::InsertionGuard body(b);
    b.setInsertionPointToEnd(groupLoop.getBody());
    Value first = arith::MulIOp::create(b, loc, groupLoop.getInductionVar(),
                                        index(rowsPerGroup));
    IRMapping rowMap = map;
    rowMap.map(rows.getInductionVars()[0],
               arith::AddIOp::create(b, loc, first, warp));
    SmallVector<Operation *> rowBody;
    for (Operation &op : rows.getBody()->without_terminator())
      rowBody.push_back(&op);
    TeamEmitter rowTeam(b, func, {Team::Kind::Warp, kWarpSize, lane}, f32Terms);
    if (failed(rowTeam.cloneTeamLevel(rowBody, rowMap)))
      return failure();
    // The group's rows are written before any thread reads their columns.
    gpu::BarrierOp::create(b, loc);
    Value sliceFirst = arith::AddIOp::create(
        b, loc, first,
        arith::MulIOp::create(b, loc, slice, index(rowsPerSlice)));
    sliceLoop = cloneFoldOver(
        loop, sliceFirst,
        arith::AddIOp::create(b, loc, sliceFirst, index(rowsPerSlice)),
        index(1), groupLoop.getRegionIterArgs(), map);
    scf::YieldOp::create(b, loc, sliceLoop.getResults());
  }
  // A thread adds ceil(groups / blocks) * rowsPerSlice terms a sum: in
  // float32 where that is few enough, carried so from group to group.
  SmallVector<bool> narrowed = cuda::narrowPartialSums(
      sliceLoop, ceilDiv(groups, blocks) * rowsPerSlice, f32Terms);
  for (auto [k, isNarrowed] : llvm::enumerate(narrowed)) {
    if (!isNarrowed)
      continue;
    BlockArgument carried = groupLoop.getRegionIterArgs()[k];
    Type narrow = sliceLoop.getRegionIterArgs()[k].getType();
    Operation *zero = sliceLoop.getInitArgs()[k].getDefiningOp();
    carried.setType(narrow);
    groupLoop.getResult(k).setType(narrow);
    sliceLoop.getInitArgsMutable()[k].assign(carried);
    groupLoop.getInitArgsMutable()[k].assign(zero->getResult(0));
    zero->moveBefore(groupLoop);
  }
  b.setInsertionPointAfter(groupLoop);
  SmallVector<Value> totals = cuda::widenPartialSums(
      b, loc, groupLoop.getResults(), identities, narrowed);
  Value isFirstSlice =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, slice, index(0));
  if (slices > 1)
    combineBlockShares(func, totals, combiners, isFirstSlice, column, slices,
                       fold.rows);
  Value columnFirstSlot = arith::MulIOp::create(b, loc, column, index(blocks));
  {
    OpBuilder::InsertionGuard store(b);
    auto ifFirst = scf::IfOp::create(b, loc, isFirstSlice, /*withElse=*/false);
    b.setInsertionPointToStart(ifFirst.thenBlock());
    Value slot = arith::AddIOp::create(b, loc, columnFirstSlot, blockId);
    for (auto [global, total] : llvm::zip(blockPartials, totals))
      memref::StoreOp::create(b, loc, total, addressOf(global),
                              ValueRange{slot});
    NVVM::MembarOp::create(b, loc, NVVM::MemScopeKind::GPU);
  }
  // The group's last block joins its blocks' partials, in block order.
  Value group = arith::DivUIOp::create(b, loc, blockId, index(kBlocksPerGroup));
  Value isLast =
      countBlockIn(func, launch.symbol, group, fold.shares, kBlocksPerGroup);
  auto ifLast = scf::IfOp::create(
      b, loc, arith::AndIOp::create(b, loc, isLast, isFirstSlice),
      /*withElse=*/false);
  b.setInsertionPointToStart(ifLast.thenBlock());
  NVVM::MembarOp::create(b, loc, NVVM::MemScopeKind::GPU);
  Value firstOfGroup = arith::AddIOp::create(
      b, loc, columnFirstSlot,
      arith::MulIOp::create(b, loc, group, index(kBlocksPerGroup)));
  Value groupSlot = arith::AddIOp::create(
      b, loc, arith::MulIOp::create(b, loc, column, index(fold.shares)), group);
  for (auto [k, global] : llvm::enumerate(blockPartials)) {
    Value slots = addressOf(global);
    Value joined = cuda::combinerIdentity(
        b, loc, combiners[k], loop.getRegionIterArgs()[k].getType());
    for (int64_t j = 0; j < kBlocksPerGroup; ++j)
      joined = cuda::combine(
          b, loc, combiners[k], joined,
          memref::LoadOp::create(b, loc, slots,
                                 ValueRange{arith::AddIOp::create(
                                     b, loc, firstOfGroup, index(j))}));
    memref::StoreOp::create(b, loc, joined, addressOf(partials[k]),
                            ValueRange{groupSlot});
  }
  b.setInsertionPointAfter(ifLast);
  finishPhase(func, launch);
  capRegisters(func, kRegistersPerSm / (kRowPassBlocksPerSm * kBlock));
  if (rowRegisters > 0)
    capRegisters(func, rowRegisters);
  launches.push_back(launch);
  return emitCombineLaunch(kernel, prologue, fold, partials, launches);
}

LogicalResult KernelMapper::emitCombineLaunch(
    func::FuncOp kernel, ArrayRef<Operation *> prologue, const SplitFold &fold,
    ArrayRef<memref::GlobalOp> partials, SmallVector<cuda::Launch> &launches) {
  cuda::Launch rest;
  rest.symbol = launchSymbol(kernel, launches.size());
  IRMapping map;
  gpu::GPUFuncOp func = startPhase(kernel, rest.symbol, prologue, map);
  Team team{Team::Kind::Block, kSequentialBlock, threadId};
  Value row;
  std::optional<OpBuilder::InsertionGuard> guard;
  if (fold.row) {
    Value lane;
    scf::ForOp rowsLoop = warpPerItem(fold.rows, rest, lane);
    team = {Team::Kind::Warp, kWarpSize, lane};
    guard.emplace(b);
    b.setInsertionPoint(rowsLoop.getBody()->getTerminator());
    row = rowsLoop.getInductionVar();
    map.map(fold.row, row);
  } else {
    rest.block = kSequentialBlock;
    rest.grid = 1;
    row = index(0);
  }
  TeamEmitter emitter(b, func, team, f32Terms);
  if (failed(combineRow(fold, partials, emitter, team, row, map)))
    return failure();
  guard.reset();
  finishPhase(func, rest);
  launches.push_back(rest);
  return success();
}

LogicalResult KernelMapper::combineRow(const SplitFold &fold,
                                       ArrayRef<memref::GlobalOp> partials,
                                       TeamEmitter &emitter, const Team &team,
                                       Value row, IRMapping &map) {
  scf::ForOp loop = fold.loop;
  SmallVector<StringRef> combiners = fold.combiners();
  if (failed(fold.row ? emitter.cloneTeamLevel(fold.before, map)
                      : emitter.cloneSequential(fold.before, map)))
    return failure();
  int64_t partialsPerRow = fold.partialsPerRow();
  Value base = arith::MulIOp::create(b, loc, row, index(partialsPerRow));
  for (auto [k, global] : llvm::enumerate(partials)) {
    Value acc = loop.getRegionIterArgs()[k];
    StringRef combiner = combiners[k];
    Value slots = addressOf(global);
    Value start = arith::AddIOp::create(b, loc, base, team.lane);
    auto combineLoop = scf::ForOp::create(
        b, loc, start,
        arith::AddIOp::create(b, loc, base, index(partialsPerRow)),
        index(team.size),
        ValueRange{cuda::combinerIdentity(b, loc, combiner, acc.getType())});
    {
      OpBuilder::InsertionGuard inner(b);
      b.setInsertionPointToStart(combineLoop.getBody());
      Value part = memref::LoadOp::create(
          b, loc, slots, ValueRange{combineLoop.getInductionVar()});
      scf::YieldOp::create(
          b, loc,
          cuda::combine(b, loc, combiner, combineLoop.getRegionIterArgs()[0],
                        part));
    }
    Value total = emitter.reduceAcrossTeam(combineLoop.getResult(0), combiner);
    map.map(loop.getResult(k),
            cuda::combine(b, loc, combiner,
                          map.lookupOrDefault(loop.getInitArgs()[k]), total));
  }
  if (failed(fold.row ? emitter.cloneTeamLevel(fold.after, map)
                      : emitter.cloneSequential(fold.after, map)))
    return failure();
  return success();
}

LogicalResult
KernelMapper::combineInLastBlock(gpu::GPUFuncOp func, const SplitFold &fold,
                                 ArrayRef<memref::GlobalOp> partials,
                                 StringRef symbol, Value group, Value warp,
                                 Value lane, const IRMapping &phaseMap) {
  Value isLast = countBlockIn(func, symbol, group, fold.rows / kWarpSize,
                              fold.shares / SplitFold::kBlockShares);
  auto ifLast = scf::IfOp::create(b, loc, isLast, /*withElse=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(ifLast.thenBlock());
  NVVM::MembarOp::create(b, loc, NVVM::MemScopeKind::GPU);
  // Each warp takes 4 of the group's rows in turn, a row as launch 2's warps
  // take one.
  Team team{Team::Kind::Warp, kWarpSize, lane};
  TeamEmitter emitter(b, func, team, f32Terms);
  auto rows = scf::ForOp::create(b, loc, warp, index(kWarpSize),
                                 index(SplitFold::kBlockShares));
  b.setInsertionPoint(rows.getBody()->getTerminator());
  Value row = arith::AddIOp::create(
      b, loc, arith::MulIOp::create(b, loc, group, index(kWarpSize)),
      rows.getInductionVar());
  IRMapping map = phaseMap;
  map.map(fold.row, row);
  return combineRow(fold, partials, emitter, team, row, map);
}

Value KernelMapper::countBlockIn(gpu::GPUFuncOp func, StringRef symbol,
                                 Value group, int64_t groups,
                                 int64_t blocksPerGroup) {
  Type i32 = b.getI32Type();
  auto countsType = MemRefType::get({groups}, i32);
  memref::GlobalOp arrivals =
      addGlobal((symbol + "_arrivals").str(), countsType,
                DenseElementsAttr::get(RankedTensorType::get({groups}, i32),
                                       b.getI32IntegerAttr(0)));
  auto space =
      gpu::AddressSpaceAttr::get(b.getContext(), gpu::AddressSpace::Workgroup);
  Value lastFlag = func.addWorkgroupAttribution(
      MemRefType::get({1}, i32, MemRefLayoutAttrInterface(), space),
      func.getLoc());
  Value zero = index(0);
  // The block's partials are stored and fenced before thread 0 counts the
  // block in.
  gpu::BarrierOp::create(b, loc);
  Value isThread0 =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, threadId, zero);
  auto ifThread0 = scf::IfOp::create(b, loc, isThread0, /*withElse=*/false);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifThread0.thenBlock());
    Value counts = addressOf(arrivals);
    Value before = memref::AtomicRMWOp::create(
        b, loc, arith::AtomicRMWKind::addi,
        arith::ConstantIntOp::create(b, loc, i32, 1), counts,
        ValueRange{group});
    Value isLast = arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::eq, before,
        arith::ConstantIntOp::create(b, loc, i32, blocksPerGroup - 1));
    memref::StoreOp::create(b, loc, arith::ExtUIOp::create(b, loc, i32, isLast),
                            lastFlag, ValueRange{zero});
    // Every block of the group has counted itself: the next launch of this
    // kernel starts the count again from 0.
    auto ifLast = scf::IfOp::create(b, loc, isLast, /*withElse=*/false);
    b.setInsertionPointToStart(ifLast.thenBlock());
    memref::StoreOp::create(b, loc,
                            arith::ConstantIntOp::create(b, loc, i32, 0),
                            counts, ValueRange{group});
  }
  gpu::BarrierOp::create(b, loc);
  Value isLast = arith::CmpIOp::create(
      b, loc, arith::CmpIPredicate::ne,
      memref::LoadOp::create(b, loc, lastFlag, ValueRange{zero}),
      arith::ConstantIntOp::create(b, loc, i32, 0));
  // Where the caller counts in again (a block's next task of a split fold),
  // the flag is read before the next task's thread 0 writes it: that task's
  // barriers (its blocks' combine's, the first one above) come between.
  return isLast;
}

void KernelMapper::combineBlockShares(gpu::GPUFuncOp func,
                                      SmallVector<Value> &totals,
                                      ArrayRef<StringRef> combiners,
                                      Value isFirstSlice, Value position,
                                      int64_t slices, int64_t sliceSize) {
  auto space =
      gpu::AddressSpaceAttr::get(b.getContext(), gpu::AddressSpace::Workgroup);
  DenseMap<Type, Value> scratch; // a slot a thread, per element type
  for (auto [total, combiner] : llvm::zip(totals, combiners)) {
    Value &slots = scratch[total.getType()];
    if (!slots)
      slots = func.addWorkgroupAttribution(
          MemRefType::get({kBlock}, total.getType(),
                          MemRefLayoutAttrInterface(), space),
          func.getLoc());
    memref::StoreOp::create(b, loc, total, slots, ValueRange{threadId});
    gpu::BarrierOp::create(b, loc);
    // Slice 0 joins the slices' values in order (deterministic); the others
    // keep their own, which nothing stores.
    auto ifFirst = scf::IfOp::create(b, loc, total.getType(), isFirstSlice,
                                     /*withElseRegion=*/true);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(ifFirst.thenBlock());
      Value joined = total;
      for (int64_t w = 1; w < slices; ++w) {
        Value at =
            arith::AddIOp::create(b, loc, index(w * sliceSize), position);
        joined = cuda::combine(
            b, loc, combiner, joined,
            memref::LoadOp::create(b, loc, slots, ValueRange{at}));
      }
      scf::YieldOp::create(b, loc, joined);
      b.setInsertionPointToStart(ifFirst.elseBlock());
      scf::YieldOp::create(b, loc, total);
    }
    // The slots are free for the next fold's once slice 0 has read them.
    gpu::BarrierOp::create(b, loc);
    total = ifFirst.getResult(0);
  }
}

LogicalResult KernelMapper::emitPhase(const Phase &phase, gpu::GPUFuncOp func,
                                      IRMapping &map, cuda::Launch &launch) {
  switch (phase.kind) {
  case Phase::Kind::Linalg:
    return emitLinalg(cast<linalg::LinalgOp>(phase.ops[0]), func, map, launch);
  case Phase::Kind::Rows:
    return emitRows(cast<scf::ParallelOp>(phase.ops[0]), func, map, launch);
  case Phase::Kind::Sequential: {
    launch.grid = 1;
    launch.block = kSequentialBlock;
    TeamEmitter team(b, func, {Team::Kind::Block, kSequentialBlock, threadId},
                     f32Terms);
    return team.cloneSequential(phase.ops, map);
  }
  }
  llvm_unreachable("unknown phase kind");
}

void KernelMapper::allowBlockRegisters(gpu::GPUFuncOp func,
                                       const cuda::Launch &launch) {
  capRegisters(func, std::min<int64_t>(kRegistersPerSm / launch.block, 255));
}

void KernelMapper::fitOneWave(gpu::GPUFuncOp func, const cuda::Launch &launch) {
  // Registers go to a warp in units of 256, 8 a thread.
  int64_t registers =
      kRegistersPerSm / (launch.block * ceilDiv(launch.grid, smCount)) / 8 * 8;
  if (registers >= 64)
    capRegisters(func, std::min<int64_t>(registers, 255));
}

void KernelMapper::capRegisters(gpu::GPUFuncOp func, int64_t registers) {
  StringRef name = NVVM::NVVMDialect::getMaxnregAttrName();
  auto allowed = func->getAttrOfType<IntegerAttr>(name);
  if (!allowed || allowed.getInt() > registers)
    func->setAttr(name, b.getI32IntegerAttr(registers));
}

void KernelMapper::finishPhase(gpu::GPUFuncOp func,
                               const cuda::Launch &launch) {
  // The emitter chose the block size; ptxas sizes registers by it.
  func.setKnownBlockSizeAttr(
      b.getDenseI32ArrayAttr({(int32_t)launch.block, 1, 1}));
  allowBlockRegisters(func, launch);
  b.setInsertionPointToEnd(&func.getBody().front());
  gpu::ReturnOp::create(b, loc);
  // Drop the prologue's views and constants this phase does not use.
  for (Operation &op : llvm::make_early_inc_range(
           llvm::reverse(func.getBody().front().getOperations())))
    if (isOpTriviallyDead(&op))
      op.erase();
}

FailureOr<SmallVector<cuda::Launch>> KernelMapper::map(func::FuncOp kernel) {
  if (kernel.getBody().getBlocks().size() != 1)
    return kernel.emitOpError("has control flow the CUDA target cannot map");
  Block &body = kernel.getBody().front();
  cuda::coalesceConsecutiveLoads(kernel);
  // Buffers the kernel keeps between its ops (a loss's row losses) become
  // device globals: a kernel's launches run in order on one stream, and
  // kernels run on the compute stream alone (exec-schedule-collectives moves
  // only collectives), so no two launches of it ever share one at once.
  locals.clear();
  int64_t localBytes = 0;
  auto nested = kernel.walk([&](Operation *op) {
    if (!isa<memref::AllocOp, memref::AllocaOp>(op))
      return WalkResult::advance();
    auto type = cast<MemRefType>(op->getResult(0).getType());
    if (op->getBlock() != &body || !type.hasStaticShape() ||
        !type.getLayout().isIdentity() || type.getMemorySpace())
      return WalkResult::interrupt();
    localBytes += type.getNumElements() *
                  ceilDiv(type.getElementTypeBitWidth(), 8);
    locals[op->getResult(0)] = addGlobal(
        (kernel.getSymName() + "_local" + Twine(locals.size())).str(), type);
    return WalkResult::advance();
  });
  if (nested.wasInterrupted())
    return kernel.emitOpError(
        "allocates a buffer inside a loop or of a dynamic shape or layout; "
        "the CUDA target maps a kernel's local buffers, allocated at its top "
        "level, to device globals");
  if (localBytes > kMaxLocalBytes)
    return kernel.emitOpError("keeps ")
           << localBytes << " bytes of local buffers; the CUDA target holds "
           << "them as device globals of at most " << kMaxLocalBytes
           << " bytes a kernel";
  // Views, constants, local buffers and the loads of inputs are cloned into
  // every phase; linalg ops and row loops are phases of their own; runs of
  // anything else are run by one block in order.
  SmallVector<Operation *> prologue;
  SmallVector<Phase> phases;
  DenseSet<Value> available(kernel.getArguments().begin(),
                            kernel.getArguments().end());
  // Loads before the first phase read what the kernel was given, so every
  // phase may repeat them.
  auto readsInput = [&](Operation &op) {
    return isa<memref::LoadOp>(op) && phases.empty();
  };
  for (Operation &op : body.without_terminator()) {
    if (isa<memref::DeallocOp>(op))
      continue; // a global outlives the kernel
    if (isa<linalg::LinalgOp>(op) || isa<scf::ParallelOp>(op)) {
      phases.push_back({isa<scf::ParallelOp>(op) ? Phase::Kind::Rows
                                                 : Phase::Kind::Linalg,
                        {&op}});
    } else if ((isMemoryEffectFree(&op) || readsInput(op) ||
                isa<memref::AllocOp, memref::AllocaOp>(op)) &&
               llvm::all_of(op.getOperands(),
                            [&](Value v) { return available.contains(v); })) {
      prologue.push_back(&op);
      available.insert(op.getResults().begin(), op.getResults().end());
    } else {
      if (phases.empty() || phases.back().kind != Phase::Kind::Sequential)
        phases.push_back({Phase::Kind::Sequential, {}});
      phases.back().ops.push_back(&op);
    }
  }
  SmallVector<cuda::Launch> launches;
  for (auto [i, phase] : llvm::enumerate(phases)) {
    if (i > 0 && columnSumsOfRows(phases[i - 1], phase))
      continue; // emitted with the row phase before it
    if (std::optional<SplitFold> fold =
            i + 1 < phases.size() ? columnSumsOfRows(phase, phases[i + 1])
                                  : std::nullopt) {
      if (failed(emitRowsWithColumnSums(kernel, prologue,
                                        cast<scf::ParallelOp>(phase.ops[0]),
                                        *fold, launches)))
        return failure();
      continue;
    }
    if (std::optional<SplitFold> fold = splitFoldOf(phase)) {
      if (failed(emitSplitFold(kernel, prologue, *fold, launches)))
        return failure();
      continue;
    }
    cuda::Launch launch;
    launch.symbol = launchSymbol(kernel, launches.size());
    IRMapping map;
    gpu::GPUFuncOp func = startPhase(kernel, launch.symbol, prologue, map);
    if (failed(emitPhase(phase, func, map, launch)))
      return failure();
    finishPhase(func, launch);
    if (phase.kind == Phase::Kind::Rows && rowRegisters > 0)
      capRegisters(func, rowRegisters);
    launches.push_back(launch);
  }
  return launches;
}

struct MapKernelsPass : impl::TgCudaMapKernelsBase<MapKernelsPass> {
  using TgCudaMapKernelsBase::TgCudaMapKernelsBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    OpBuilder b(module.getContext());
    b.setInsertionPointToEnd(module.getBody());
    auto gpuModule = gpu::GPUModuleOp::create(
        b, module.getLoc(), module.getSymName().value_or("kernels"));
    module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                    b.getUnitAttr());
    KernelMapper mapper(gpuModule, smCount, rowRegisters, f32PartialTerms,
                        columnShare, lastBlockCombines, columnSumsInRowPass);
    SmallVector<Attribute> kernels;
    for (auto kernel :
         llvm::make_early_inc_range(module.getOps<func::FuncOp>())) {
      if (kernel.isExternal())
        continue;
      auto launches = mapper.map(kernel);
      if (failed(launches))
        return signalPassFailure();
      kernels.push_back(cuda::kernelAttr(
          b, kernel.getSymName(), kernel.getNumArguments(), *launches));
      kernel.erase();
    }
    module->setAttr(cuda::kKernelsAttr, b.getArrayAttr(kernels));
  }
};

} // namespace
} // namespace mlir::tg
