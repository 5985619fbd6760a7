// Liveness-based arena planning: one linear pass over the op order computes
// every buffer's last reader, then a first-fit free list assigns offsets.
#include "tg/Passes/BufferPlan.h"

#include "tg/IR/TgOps.h"
#include "tg/Passes/KernelBodies.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <map>

namespace mlir::tg {
namespace {

constexpr uint64_t kAlignment = 64;

uint64_t alignUp(uint64_t bytes) {
  return (bytes + kAlignment - 1) / kAlignment * kAlignment;
}

/// First-fit allocation with coalescing of freed neighbours.
class FreeListAllocator {
public:
  uint64_t allocate(uint64_t size) {
    size = alignUp(size);
    for (auto it = free.begin(); it != free.end(); ++it) {
      if (it->second < size)
        continue;
      uint64_t offset = it->first, remaining = it->second - size;
      free.erase(it);
      if (remaining)
        free[offset + size] = remaining;
      return offset;
    }
    // Grow the arena, reusing a free block that ends at the top.
    uint64_t offset = top;
    if (!free.empty()) {
      auto last = std::prev(free.end());
      if (last->first + last->second == top) {
        offset = last->first;
        free.erase(last);
      }
    }
    top = offset + size;
    return offset;
  }

  void release(uint64_t offset, uint64_t size) {
    size = alignUp(size);
    if (!size)
      return;
    auto next = free.lower_bound(offset);
    if (next != free.end() && offset + size == next->first) {
      size += next->second;
      next = free.erase(next);
    }
    if (next != free.begin()) {
      auto prev = std::prev(next);
      if (prev->first + prev->second == offset) {
        prev->second += size;
        return;
      }
    }
    free[offset] = size;
  }

  uint64_t peak() const { return top; }

private:
  std::map<uint64_t, uint64_t> free; // offset -> size
  uint64_t top = 0;
};

/// The value whose storage `v` uses (reshapes are views).
Value storageOf(Value v) {
  while (auto reshape = v.getDefiningOp<ReshapeOp>())
    v = reshape.getInput();
  return v;
}

} // namespace

uint64_t tensorBytes(Type type) {
  auto shaped = cast<ShapedType>(type);
  return shaped.getNumElements() *
         ((shaped.getElementTypeBitWidth() + 7) / 8);
}

BufferPlan planBuffers(func::FuncOp func,
                       ArrayRef<std::optional<unsigned>> updates) {
  Block &body = func.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  DenseMap<Operation *, int64_t> position;
  for (auto [i, op] : llvm::enumerate(body))
    position[&op] = i;

  // Last reader of each storage (aliases included); results live to the end.
  DenseMap<Value, int64_t> lastUse;
  for (Operation &op : body) {
    for (Value result : op.getResults())
      lastUse.try_emplace(storageOf(result), position[&op]);
    for (Value operand : op.getOperands()) {
      int64_t &last = lastUse[storageOf(operand)];
      last = std::max(last, position[&op]);
    }
  }

  BufferPlan plan;
  uint64_t stateTop = 0;
  auto placeState = [&](Value v) {
    plan.ranges[v] = {stateTop, tensorBytes(v.getType())};
    stateTop += alignUp(tensorBytes(v.getType()));
  };
  for (BlockArgument arg : func.getArguments())
    placeState(arg);
  for (Operation &op : body)
    if (isa<ConstantOp>(op))
      placeState(op.getResult(0));

  // Results: written over the argument they update when that is safe,
  // otherwise kept in the state region (and copied back if they update one).
  for (auto [i, result] : llvm::enumerate(ret.getOperands())) {
    Value storage = storageOf(result);
    if (plan.ranges.count(storage)) {
      if (updates[i] && storage != func.getArgument(*updates[i]))
        plan.copiesAtEnd.push_back({storage, func.getArgument(*updates[i])});
      continue;
    }
    if (updates[i]) {
      Value arg = func.getArgument(*updates[i]);
      Operation *def = storage.getDefiningOp();
      int64_t at = position[def];
      bool argDead = lastUse[arg] < at ||
                     (lastUse[arg] == at &&
                      llvm::is_contained(def->getOperands(), arg) &&
                      canRunInPlace(def, arg));
      if (argDead) {
        plan.ranges[storage] = plan.ranges[arg];
        continue;
      }
      plan.copiesAtEnd.push_back({storage, arg});
    }
    placeState(storage);
  }
  plan.stateBytes = stateTop;

  // Everything else: the working region, in op order.
  FreeListAllocator working;
  DenseMap<int64_t, SmallVector<Value>> dyingAt;
  for (auto &[storage, last] : lastUse)
    if (!plan.ranges.count(storage))
      dyingAt[last].push_back(storage);
  for (Operation &op : body) {
    if (isa<ReshapeOp>(op))
      continue;
    for (Value result : op.getResults()) {
      if (plan.ranges.count(result))
        continue;
      uint64_t size = tensorBytes(result.getType());
      plan.ranges[result] = {stateTop + working.allocate(size), size};
    }
    for (Value dead : dyingAt.lookup(position[&op]))
      working.release(plan.ranges[dead].offset - stateTop,
                      plan.ranges[dead].size);
  }
  // Views share their source's range.
  for (Operation &op : body)
    if (auto reshape = dyn_cast<ReshapeOp>(op))
      plan.ranges[reshape.getResult()] = plan.ranges[storageOf(reshape.getResult())];
  plan.workingBytes = working.peak();
  return plan;
}

} // namespace mlir::tg
